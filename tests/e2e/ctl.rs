//! `blueprint-operator ctl` (and `kubectl bpo` through a link) end to end: the binary as a
//! user runs it, with the test cluster's kubeconfig, against the real controller (executor
//! and scheduler, one namespace) with kwok running the pods.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use crate::support::controller::{Controller, setup};
use crate::support::kanister::{create_blueprint, out_line};
use blueprint_operator::model::{ActionSchedule, ActionSet, Blueprint, Profile};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

/// `blueprint-operator ctl -n NS ARGS...` as the cluster's admin, through `$KUBECONFIG`.
pub(crate) fn ctl(ns: &str, args: &[&str]) -> Output {
    run(
        Path::new(env!("CARGO_BIN_EXE_blueprint-operator")),
        &[&["ctl", "-n", ns], args].concat(),
    )
}

fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env("KUBECONFIG", &support::cluster().kubeconfig)
        .env_remove("BPO_KUBECONFIG")
        .output()
        .expect("run blueprint-operator")
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub(crate) fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

/// The name in `actionset NAME created...`.
fn created_name(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    out.lines()
        .find_map(|l| {
            l.strip_prefix("actionset ")?
                .split_once(" created")
                .map(|(n, _)| n.to_string())
        })
        .unwrap_or_else(|| panic!("no `actionset NAME created` line: {}", text(o)))
}

/// A KubeTask phase whose pod prints `log` and exits `exit` (kwok reads the annotations,
/// which are rendered like every argument, so a phase's output can echo a template).
fn task(name: &str, exit: i32, log: &str) -> Value {
    json!({"func": "KubeTask", "name": name, "args": {
        "image": "busybox:stable", "command": ["sh", "-c", "true"],
        "podAnnotations": support::kwok_annotations(exit, log)}})
}

/// backup: outputs a path that becomes the artifact `cloudObject.path`; restore: outputs the
/// path it was given as input artifact; broken: fails, its deferPhase runs.
fn backup_blueprint() -> Value {
    json!({
        "backup": {
            "phases": [task("dump", 0, &out_line("path", "/backups/{{ .Options.tag }}"))],
            "deferPhase": task("scaleUp", 0, "scaled up"),
            "outputArtifacts": {"cloudObject": {"keyValue": {"path": "{{ .Phases.dump.Output.path }}"}}},
        },
        "restore": {
            "inputArtifactNames": ["cloudObject"],
            "phases": [task("pull", 0, &out_line("restored", "{{ .ArtifactsIn.cloudObject.KeyValue.path }}"))],
        },
        "broken": {
            "phases": [task("fail", 3, "disk full")],
            "deferPhase": task("cleanup", 0, "cleaned"),
        },
    })
}

async fn actionsets(client: &Client, ns: &str) -> anyhow::Result<Vec<ActionSet>> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    Ok(api.list(&ListParams::default()).await?.items)
}

#[tokio::test]
async fn create_watch_describe_restore_run_now_and_runs_from_the_command_line() -> anyhow::Result<()>
{
    let Some((client, ns)) = setup("ctl").await else {
        return Ok(());
    };
    let _controller = Controller::spawn(&["--namespace", &ns], &[]);
    create_blueprint(&client, &ns, "bp", backup_blueprint()).await?;
    let object = format!("namespace/{ns}");

    // create --watch: progress lines, then complete, exit 0.
    let o = ctl(
        &ns,
        &[
            "create",
            "--blueprint",
            "bp",
            "--action",
            "backup",
            "--object",
            &object,
            "--options",
            "tag=t1",
            "--watch",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let backup = created_name(&o);
    assert!(backup.starts_with("backup-"), "{backup}");
    let out = String::from_utf8_lossy(&o.stdout);
    for line in [
        "backup/dump running",
        "backup/dump complete",
        "backup/scaleUp (deferPhase) complete",
        &format!("actionset {backup} complete"),
    ] {
        assert!(out.contains(line), "missing {line:?}: {}", text(&o));
    }

    // describe -o json: phases, outputs, the artifact, the deferPhase outcome, Events.
    let d = json_of(&ctl(&ns, &["describe", &backup, "-o", "json"]));
    assert_eq!(d["state"], "complete", "{d:#}");
    let a = &d["actions"][0];
    assert_eq!(a["phases"][0]["output"]["path"], "/backups/t1", "{d:#}");
    assert_eq!(
        a["artifacts"]["cloudObject"]["keyValue"]["path"], "/backups/t1",
        "{d:#}"
    );
    assert_eq!(
        a["deferPhase"]["outcome"], "complete, ran after the phases succeeded",
        "{d:#}"
    );
    let reasons: Vec<&str> = d["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("Started Action")),
        "{reasons:?}"
    );
    // The table form says the same.
    let t = ctl(&ns, &["describe", &backup]);
    let t = String::from_utf8_lossy(&t.stdout);
    assert!(
        t.contains("deferPhase scaleUp: complete, ran after the phases succeeded"),
        "{t}"
    );
    assert!(
        t.contains("Output artifacts: cloudObject.path=/backups/t1"),
        "{t}"
    );

    // Restore from the run: its output artifact is the restore's input artifact.
    let o = ctl(
        &ns,
        &[
            "create", "--from", &backup, "--action", "restore", "--watch",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let restore = created_name(&o);
    assert!(
        restore.starts_with(&format!("restore-{backup}-")),
        "{restore}"
    );
    let d = json_of(&ctl(&ns, &["describe", &restore, "-o", "json"]));
    assert_eq!(d["restoredFrom"], backup.as_str(), "{d:#}");
    assert_eq!(
        d["actions"][0]["inputArtifacts"]["cloudObject"]["keyValue"]["path"], "/backups/t1",
        "{d:#}"
    );
    assert_eq!(
        d["actions"][0]["phases"][0]["output"]["restored"], "/backups/t1",
        "{d:#}"
    );
    assert_eq!(
        d["actions"][0]["object"],
        format!("namespace {ns}"),
        "{d:#}"
    );

    // A failed run: exit 1 with the error; describe names the failed phase and the defer outcome.
    let o = ctl(
        &ns,
        &[
            "create",
            "--blueprint",
            "bp",
            "--action",
            "broken",
            "--object",
            &object,
            "--watch",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let broken = created_name(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("actionset {broken} failed")),
        "{}",
        text(&o)
    );
    let d = json_of(&ctl(&ns, &["describe", &broken, "-o", "json"]));
    assert_eq!(d["actions"][0]["failedPhase"], "fail", "{d:#}");
    assert_eq!(
        d["actions"][0]["deferPhase"]["outcome"], "complete, ran after phase fail failed",
        "{d:#}"
    );
    assert!(
        d["error"]
            .as_str()
            .unwrap_or_default()
            .contains("disk full"),
        "{d:#}"
    );
    // A failed run is nothing to restore from.
    let o = ctl(&ns, &["create", "--from", &broken, "--action", "restore"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is failed, not complete"), "{}", text(&o));

    // Bad input says what and how, and creates nothing.
    let before = actionsets(&client, &ns).await?.len();
    let o = ctl(
        &ns,
        &[
            "create",
            "--blueprint",
            "bp",
            "--action",
            "nope",
            "--object",
            &object,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("has no action \"nope\"; it has: backup, broken, restore"),
        "{}",
        text(&o)
    );
    let o = ctl(
        &ns,
        &[
            "create",
            "--blueprint",
            "bp",
            "--action",
            "backup",
            "--object",
            "pod/x/y",
        ],
    );
    assert!(
        text(&o).contains("unknown kind \"pod\"") && o.status.code() == Some(2),
        "{}",
        text(&o)
    );
    assert_eq!(actionsets(&client, &ns).await?.len(), before);

    // A schedule run now, watched; then its runs listed, with trigger, state and artifacts.
    let sched: ActionSchedule = serde_json::from_value(json!({
        "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
        "metadata": {"name": "nightly", "namespace": ns},
        "spec": {"schedule": "0 0 1 1 *", "actionSetTemplate": {"actions": [{
            "name": "backup", "blueprint": "bp", "options": {"tag": "sched"},
            "object": {"kind": "namespace", "name": ns, "namespace": ns}}]}}}))?;
    Api::<ActionSchedule>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &sched)
        .await?;
    let o = ctl(&ns, &["run-now", "nightly", "--watch"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("actionschedule nightly runs now: actionset nightly-now-"),
        "{}",
        text(&o)
    );
    let rows = json_of(&ctl(&ns, &["runs", "nightly", "-o", "json"]));
    let rows = rows.as_array().expect("a list");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["trigger"], "run-now");
    assert_eq!(rows[0]["state"], "complete");
    assert!(rows[0]["durationSeconds"].as_i64().is_some(), "{rows:?}");
    assert_eq!(
        rows[0]["artifacts"]["backup"]["cloudObject"]["keyValue"]["path"],
        "/backups/sched"
    );
    let run_name = rows[0]["name"].as_str().unwrap().to_string();

    // Restore from the schedule's newest complete run (Velero's --from-schedule).
    let o = ctl(
        &ns,
        &[
            "create",
            "--from-schedule",
            "nightly",
            "--action",
            "restore",
            "--dry-run",
            "-o",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dry = json_of(&o);
    assert_eq!(
        dry["metadata"]["annotations"]["blueprint-operator.io/restored-from"],
        run_name.as_str()
    );
    assert_eq!(
        dry["spec"]["actions"][0]["artifacts"]["cloudObject"]["keyValue"]["path"],
        "/backups/sched"
    );

    // kubectl bpo: the same binary through a link named kubectl-bpo.
    let dir = tempdir()?;
    let link = dir.join("kubectl-bpo");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_blueprint-operator"), &link)?;
    let plugin = run(&link, &["-n", &ns, "runs", "nightly"]);
    assert_eq!(plugin.status.code(), Some(0), "{}", text(&plugin));
    let table = String::from_utf8_lossy(&plugin.stdout);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "STARTED",
            "TRIGGER",
            "STATE",
            "DURATION",
            "VERIFIED",
            "ARTIFACTS",
            "ERROR"
        ],
        "{table}"
    );
    assert!(
        table.contains(&run_name) && table.contains("cloudObject.path=/backups/sched"),
        "{table}"
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn tempdir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "bpo-ctl-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .subsec_nanos()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `render` prints every phase's arguments, the deferPhase and the output artifacts as the
/// executor renders them (object, Options, Profile), locates template errors, hides
/// credentials, and creates nothing: no ActionSet, no pod.
#[tokio::test]
async fn render_shows_what_an_actionset_would_run_and_creates_nothing() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("render").await else {
        return Ok(());
    };
    // A keyPair Profile whose secret must not be printed.
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "s3-creds"},
        "stringData": {"id": "AKIDRENDER", "key": "sup3r-s3cret"}}))?;
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await?;
    let profile: Profile = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Profile", "metadata": {"name": "s3"},
        "location": {"type": "s3Compliant", "bucket": "b", "endpoint": "http://127.0.0.1:9", "prefix": "p"},
        "credential": {"type": "keyPair", "keyPair": {"idField": "id", "secretField": "key",
            "secret": {"name": "s3-creds", "namespace": ns}}}}))?;
    Api::<Profile>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &profile)
        .await?;
    create_blueprint(&client, &ns, "bp", json!({
        "backup": {
            "phases": [
                {"func": "KubeTask", "name": "dump", "args": {"image": "tools",
                    "command": ["dump", "--ns", "{{ .Namespace.Name }}", "--tag", "{{ .Options.tag }}",
                        "--bucket", "{{ .Profile.Location.Bucket }}", "--key", "{{ .Profile.Credential.KeyPair.Secret }}"]}},
                {"func": "KubeTask", "name": "upload", "args": {"image": "tools",
                    "command": ["upload", "{{ .Phases.dump.Output.file }}"]}}],
            "deferPhase": {"func": "KubeTask", "name": "report", "args": {"image": "tools",
                "command": ["echo", "{{ .Outcome.State }}"]}},
            "outputArtifacts": {"cloudObject": {"keyValue": {"path": "{{ .Phases.upload.Output.path }}"}}},
        },
        "bad": {"phases": [{"func": "KubeTask", "name": "oops", "args": {"image": "tools",
            "command": ["sh", "-c", "echo {{ .Options.missing }}"]}}]},
    })).await?;
    let object = format!("namespace/{ns}");
    let base = [
        "render",
        "--blueprint",
        "bp",
        "--object",
        &object,
        "--profile",
        "s3",
        "--options",
        "tag=v1",
    ];

    let o = ctl(
        &ns,
        &[&base[..], &["--action", "backup", "-o", "json"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan = json_of(&o);
    let a = &plan["actions"][0];
    assert_eq!(
        a["phases"][0]["args"]["command"],
        json!([
            "dump",
            "--ns",
            ns,
            "--tag",
            "v1",
            "--bucket",
            "b",
            "--key",
            "<redacted>"
        ]),
        "{plan:#}"
    );
    assert_eq!(
        a["phases"][1]["args"]["command"],
        json!(["upload", "<Phases.dump.Output.file>"])
    );
    assert_eq!(
        a["deferPhase"]["args"]["command"],
        json!(["echo", "complete"])
    );
    assert_eq!(
        a["outputArtifacts"]["cloudObject"]["keyValue"]["path"],
        "<Phases.upload.Output.path>"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("sup3r-s3cret"));
    // --show-secrets shows it.
    let o = ctl(
        &ns,
        &[
            &base[..],
            &["--action", "backup", "--show-secrets", "-o", "json"],
        ]
        .concat(),
    );
    assert_eq!(
        json_of(&o)["actions"][0]["phases"][0]["args"]["command"][8],
        "sup3r-s3cret"
    );

    // A template error: exit 1, located at action/phase and argument.
    let o = ctl(&ns, &[&base[..], &["--action", "bad"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "error at bad/oops args.command[2]: Failed to render template: \"missing\" not found"
        ),
        "{}",
        text(&o)
    );

    // The same Blueprint from a file (-f) renders the same way.
    let dir = tempdir()?;
    let file = dir.join("bp.yaml");
    let bp = Api::<Blueprint>::namespaced(client.clone(), &ns)
        .get("bp")
        .await?;
    std::fs::write(&file, serde_yaml::to_string(&bp)?)?;
    let o = ctl(
        &ns,
        &[
            "render",
            "-f",
            file.to_str().unwrap(),
            "--action",
            "backup",
            "--object",
            &object,
            "--profile",
            "s3",
            "--options",
            "tag=v2",
            "-o",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        json_of(&o)["actions"][0]["phases"][0]["args"]["command"][4],
        "v2"
    );
    std::fs::remove_dir_all(&dir)?;

    // Nothing was created.
    assert!(actionsets(&client, &ns).await?.is_empty());
    assert!(
        Api::<Pod>::namespaced(client.clone(), &ns)
            .list(&ListParams::default())
            .await?
            .items
            .is_empty()
    );
    Ok(())
}

/// The pod of a failed phase is deleted, and its last log lines stay on the
/// ActionSet (the failed phase's output and a Warning Event), with the Profile's credentials
/// redacted; `ctl describe` shows them.
#[tokio::test]
async fn a_failed_phase_keeps_its_pods_last_log_lines_with_credentials_redacted()
-> anyhow::Result<()> {
    let Some((client, ns)) = setup("podlog").await else {
        return Ok(());
    };
    let _controller = Controller::start(&ns, &[]);
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "s3-creds"},
        "stringData": {"id": "AKIDPODLOG", "key": "pod-l0g-s3cret"}}))?;
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await?;
    let profile: Profile = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Profile", "metadata": {"name": "s3"},
        "location": {"type": "s3Compliant", "bucket": "b", "endpoint": "http://127.0.0.1:9"},
        "credential": {"type": "keyPair", "keyPair": {"idField": "id", "secretField": "key",
            "secret": {"name": "s3-creds", "namespace": ns}}}}))?;
    Api::<Profile>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &profile)
        .await?;
    let log: String = (1..=30)
        .map(|i| format!("step {i}"))
        .chain([
            "uploading with key pod-l0g-s3cret".to_string(),
            "error: bucket b: access denied".to_string(),
        ])
        .collect::<Vec<_>>()
        .join("\n");
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
        "phases": [task("upload", 2, &log)],
        "deferPhase": task("cleanup", 0, "done")}}),
    )
    .await?;
    let o = ctl(
        &ns,
        &[
            "create",
            "--blueprint",
            "bp",
            "--action",
            "backup",
            "--object",
            &format!("namespace/{ns}"),
            "--profile",
            "s3",
            "--watch",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let name = created_name(&o);

    // The phase's pod is gone; its last lines are on the ActionSet.
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let a = api.get(&name).await?;
    let st = &a.status.as_ref().expect("status").actions[0];
    let kept = &st.phases[0].output["blueprint-operator.io/podLogs"];
    let (pod, containers) = kept
        .as_object()
        .and_then(|m| m.iter().next())
        .expect("a pod's lines");
    let lines = containers
        .as_object()
        .and_then(|c| c.values().next())
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        lines.ends_with("uploading with key <redacted>\nerror: bucket b: access denied"),
        "{lines}"
    );
    assert_eq!(lines.lines().count(), 20, "{lines}");
    assert!(
        !serde_json::to_string(&a)?.contains("pod-l0g-s3cret"),
        "a credential is in {a:?}"
    );
    let pods = Api::<Pod>::namespaced(client.clone(), &ns);
    let pod_name = pod.split_once('/').map(|(_, n)| n).unwrap_or_default();
    support::poll(support::WAIT, || async {
        pods.get_opt(pod_name)
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await?;
    // A Warning Event says it, and describe shows it.
    let d = json_of(&ctl(&ns, &["describe", &name, "-o", "json"]));
    let ev = support::manifests::find(&d["events"], "reason", "PodLogKept");
    let ev = ev.unwrap_or_else(|| panic!("no PodLogKept Event: {d:#}"));
    assert_eq!(ev["type"], "Warning");
    assert!(
        ev["note"]
            .as_str()
            .unwrap_or_default()
            .contains("access denied"),
        "{ev}"
    );
    let t = ctl(&ns, &["describe", &name]);
    let t = String::from_utf8_lossy(&t.stdout);
    assert!(
        t.contains(&format!("Last log lines of upload (pod {pod}, container ")),
        "{t}"
    );
    assert!(t.contains("    error: bucket b: access denied"), "{t}");
    Ok(())
}
