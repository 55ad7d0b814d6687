//! The admission webhook through a real kube-apiserver (tools/control-plane).
//!
//! One webhook server per test binary runs in-process on 127.0.0.1:<free port> (its own thread
//! and runtime, so it outlives each test's runtime), with certificates from the `certs` code.
//! The webhook configurations use `url: https://127.0.0.1:<port>/...` and the caBundle, and a
//! namespaceSelector on a label that only this binary's namespaces carry.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use blueprint_operator::webhook::certs;
use blueprint_operator::webhook::server::{self, ServerConfig};
use blueprint_operator::webhook::tls::CertFiles;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Error};
use serde_json::{Value, json};

/// Label that routes a namespace to this binary's webhook.
const SELECT_LABEL: &str = "blueprint-operator.io/e2e-webhook";

struct Webhook {
    port: u16,
    ca_bundle: String,
}

/// Starts the webhook once for this binary (on its own thread with its own runtime).
fn webhook() -> &'static Webhook {
    static HOOK: OnceLock<Webhook> = OnceLock::new();
    HOOK.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("bpo-e2e-webhook-{}", std::process::id()));
        let dev = certs::generate(&["127.0.0.1".into(), "localhost".into()], 2).expect("certs");
        certs::write(&dev, &dir, true).expect("write certs");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(async move {
                let client = support::try_client().await.ok();
                let running = server::start(ServerConfig {
                    listen: "127.0.0.1:0".parse().unwrap(),
                    probe_listen: None,
                    tls: CertFiles {
                        cert: dir.join("tls.crt"),
                        key: dir.join("tls.key"),
                    },
                    tls_reload_interval: Duration::from_secs(5),
                    shutdown_delay: Duration::ZERO,
                    shutdown_grace: Duration::from_secs(1),
                    client,
                    lookup_timeout: Duration::from_secs(5),
                    limits: Default::default(),
                })
                .await
                .expect("webhook server starts");
                tx.send(running.addr.port()).unwrap();
                // Serve until the test binary exits.
                std::future::pending::<()>().await;
                drop(running);
            });
        });
        let port = rx.recv().expect("webhook port");
        Webhook {
            port,
            ca_bundle: dev.ca_bundle(),
        }
    })
}

fn tag() -> String {
    format!("p{}", std::process::id())
}

fn selector() -> Value {
    json!({"matchLabels": {SELECT_LABEL: tag()}})
}

fn hook(name: &str, path: &str, group: &str, resource: &str) -> Value {
    let w = webhook();
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "failurePolicy": "Fail",
        "clientConfig": {"url": format!("https://127.0.0.1:{}{path}", w.port), "caBundle": w.ca_bundle},
        "rules": [{"apiGroups": [group], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"], "resources": [resource], "scope": "Namespaced"}],
        "namespaceSelector": selector(),
    })
}

/// Registers the webhook configurations (idempotent: server-side apply).
async fn register(client: &Client) -> anyhow::Result<()> {
    let name = format!("bpo-e2e-{}", tag());
    let pp = PatchParams::apply("e2e-webhook").force();
    let mut mutating = hook(
        "mutate.blueprints.e2e.blueprint-operator.io",
        "/mutate/blueprint",
        "cr.kanister.io",
        "blueprints",
    );
    mutating["reinvocationPolicy"] = json!("IfNeeded");
    let mwc: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [mutating],
    }))?;
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(&name, &pp, &Patch::Apply(&mwc))
        .await?;
    let vwc: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            hook("validate.blueprints.e2e.blueprint-operator.io", "/validate/blueprint", "cr.kanister.io", "blueprints"),
            hook("validate.actionschedules.e2e.blueprint-operator.io", "/validate/actionschedule", "blueprint-operator.io", "actionschedules"),
        ],
    }))?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(&name, &pp, &Patch::Apply(&vwc))
        .await?;
    Ok(())
}

fn blueprint_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Blueprint"),
        "blueprints",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

fn schedule_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("blueprint-operator.io", "v1alpha1", "ActionSchedule"),
        "actionschedules",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// A fresh namespace served by the webhook; waits until the API server calls it.
async fn setup(prefix: &str) -> anyhow::Result<(Client, String)> {
    let client = support::client().await;
    support::install_crds(&client).await?;
    register(&client).await?;
    let ns = support::namespace(&client, prefix).await;
    Api::<Namespace>::all(client.clone())
        .patch(
            &ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {SELECT_LABEL: tag()}}})),
        )
        .await?;
    // The API server picks new webhook configurations up asynchronously: wait until an invalid
    // Blueprint is denied by our webhook.
    let api = blueprint_api(&client, &ns);
    let probe: DynamicObject = serde_json::from_value(blueprint(
        "probe",
        json!({
            "a": {"phases": [{"name": "p", "func": "NoSuchFunction"}]}
        }),
    ))?;
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    support::poll(Duration::from_secs(60), || async {
        match api.create(&dry, &probe).await {
            Err(Error::Api(e)) if e.message.contains("NoSuchFunction") => Some(()),
            _ => None,
        }
    })
    .await
    .context("the webhook is not called by the API server")?;
    Ok((client, ns))
}

fn blueprint(name: &str, actions: Value) -> Value {
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "Blueprint",
        "metadata": {"name": name},
        "actions": actions,
    })
}

fn kubetask(name: Option<&str>) -> Value {
    let mut p = json!({"func": "KubeTask", "args": {"image": "busybox", "command": ["sh", "-c", "echo hi"]}});
    if let Some(n) = name {
        p["name"] = json!(n);
    }
    p
}

fn kubectl_path() -> PathBuf {
    support::cluster()
        .kubectl
        .clone()
        .unwrap_or_else(|| PathBuf::from("kubectl"))
}

/// Runs kubectl with the test kubeconfig and `stdin` as the manifest.
fn kubectl(args: &[&str], stdin: &Value) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&support::cluster().kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let yaml = serde_yaml::to_string(stdin).unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn get(api: &Api<DynamicObject>, name: &str) -> Value {
    serde_json::to_value(api.get(name).await.expect("get")).unwrap()
}

#[tokio::test]
async fn apply_stores_defaulted_names_and_reapply_changes_nothing() -> anyhow::Result<()> {
    let (client, ns) = setup("wh-apply").await?;
    let api = blueprint_api(&client, &ns);
    let manifest = blueprint(
        "names",
        json!({
            "backup": {"phases": [kubetask(None), kubetask(Some("upload")), kubetask(None)], "deferPhase": kubetask(None)},
        }),
    );

    for mode in [
        &["apply", "-f", "-"][..],
        &["apply", "--server-side", "-f", "-"][..],
    ] {
        let name = if mode.len() == 3 {
            "names"
        } else {
            "names-ssa"
        };
        let mut m = manifest.clone();
        m["metadata"]["name"] = json!(name);
        let args: Vec<&str> = mode.iter().copied().chain(["-n", &ns]).collect();
        let out = kubectl(&args, &m);
        assert!(out.status.success(), "{mode:?}: {}", text(&out.stderr));
        let stored = get(&api, name).await;
        let action = &stored["actions"]["backup"];
        assert_eq!(action["phases"][0]["name"], "phase0", "{stored}");
        assert_eq!(action["phases"][1]["name"], "upload");
        assert_eq!(action["phases"][2]["name"], "phase2");
        assert_eq!(action["deferPhase"]["name"], "deferPhase");
        let rv = stored["metadata"]["resourceVersion"].clone();

        // GitOps re-apply of the same manifest: no change at all.
        let out = kubectl(&args, &m);
        assert!(out.status.success(), "{mode:?}: {}", text(&out.stderr));
        let again = get(&api, name).await;
        assert_eq!(
            again["metadata"]["resourceVersion"], rv,
            "{mode:?} re-apply changed the object"
        );
        assert_eq!(again["actions"], stored["actions"]);
    }
    Ok(())
}

/// Our denials carry code 422 with field causes: kubectl prints them as
/// `The Blueprint "<name>" is invalid: <path>: <message>`; API clients get the whole message,
/// prefixed by `admission webhook "<name>" denied the request`.
#[tokio::test]
async fn defer_phase_list_of_two_is_denied_with_our_message() -> anyhow::Result<()> {
    let (client, ns) = setup("wh-defer").await?;
    let m = blueprint(
        "two-defers",
        json!({
            "backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("a")), kubetask(Some("b"))]},
        }),
    );
    // Plain `kubectl apply` (strict field validation): our CRD leaves deferPhase untyped, so
    // the list reaches the webhook, which denies it with our explanation.
    for extra in [&[][..], &["--dry-run=server"][..]] {
        let args: Vec<&str> = ["apply", "-f", "-", "-n", &ns]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let out = kubectl(&args, &m);
        let err = text(&out.stderr);
        assert!(
            !out.status.success(),
            "{extra:?}: accepted: {}",
            text(&out.stdout)
        );
        assert!(err.contains("actions.backup.deferPhase"), "{err}");
        assert!(
            err.contains("deferPhase takes exactly one phase, found a list of 2"),
            "{err}"
        );
    }
    let api = blueprint_api(&client, &ns);
    let obj: DynamicObject = serde_json::from_value(m)?;
    for dry_run in [false, true] {
        let pp = PostParams {
            dry_run,
            ..Default::default()
        };
        let err = api.create(&pp, &obj).await.expect_err("denied").to_string();
        assert!(
            err.contains("admission webhook \"mutate.blueprints.e2e.blueprint-operator.io\" denied the request"),
            "{err}"
        );
        assert!(err.contains("deferPhase takes exactly one phase"), "{err}");
        assert!(
            err.contains("into the main phases, or into a separate action"),
            "{err}"
        );
    }
    assert!(api.get_opt("two-defers").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn missing_required_argument_is_denied_with_its_location() -> anyhow::Result<()> {
    let (client, ns) = setup("wh-args").await?;
    let m = blueprint(
        "no-command",
        json!({
            "backup": {"phases": [{"name": "dump", "func": "KubeTask", "args": {"image": "busybox"}}]},
        }),
    );
    for extra in [&[][..], &["--dry-run=server"][..]] {
        let args: Vec<&str> = ["apply", "-f", "-", "-n", &ns]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let out = kubectl(&args, &m);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "accepted: {}", text(&out.stdout));
        assert!(
            err.contains("The Blueprint \"no-command\" is invalid"),
            "{err}"
        );
        assert!(
            err.contains("actions.backup.phases[0].args.command: required argument 'command' of KubeTask is missing"),
            "{err}"
        );
    }
    let api = blueprint_api(&client, &ns);
    let obj: DynamicObject = serde_json::from_value(m)?;
    let err = api
        .create(&PostParams::default(), &obj)
        .await
        .expect_err("denied")
        .to_string();
    assert!(
        err.contains("validate.blueprints.e2e.blueprint-operator.io\" denied the request"),
        "{err}"
    );
    assert!(api.get_opt("no-command").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn server_dry_run_gives_the_same_mutation_and_stores_nothing() -> anyhow::Result<()> {
    let (client, ns) = setup("wh-dry").await?;
    let m = blueprint("dry", json!({"backup": {"phases": [kubetask(None)]}}));
    let out = kubectl(
        &[
            "apply",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            "-",
            "-n",
            &ns,
        ],
        &m,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        shown["actions"]["backup"]["phases"][0]["name"], "phase0",
        "{shown}"
    );
    assert!(
        blueprint_api(&client, &ns).get_opt("dry").await?.is_none(),
        "dry-run stored the object"
    );
    Ok(())
}

/// A one-element deferPhase list reaches the webhook intact (our Blueprint CRD leaves
/// `deferPhase` untyped; a typed `object` schema would prune the element to `{}` before
/// admission) and is stored as the phase itself.
#[tokio::test]
async fn one_element_defer_phase_list_becomes_the_phase() -> anyhow::Result<()> {
    let (client, ns) = setup("wh-one").await?;
    let m = blueprint(
        "one-defer",
        json!({
            "backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("cleanup"))]},
        }),
    );
    let obj: DynamicObject = serde_json::from_value(m)?;
    let api = blueprint_api(&client, &ns);
    api.create(&PostParams::default(), &obj).await?;
    let stored = get(&api, "one-defer").await;
    let defer = &stored["actions"]["backup"]["deferPhase"];
    assert!(defer.is_object(), "{stored}");
    assert_eq!(defer["name"], "cleanup", "{stored}");
    assert_eq!(defer["func"], "KubeTask", "{stored}");
    Ok(())
}

#[tokio::test]
async fn every_corpus_blueprint_is_accepted_through_the_api_server() -> anyhow::Result<()> {
    let docs = support::corpus::blueprints();
    if docs.is_empty() {
        return Ok(());
    }
    let (client, ns) = setup("wh-corpus").await?;
    let api = blueprint_api(&client, &ns);
    let mut failures = Vec::new();
    for (i, (path, doc)) in docs.iter().enumerate() {
        let mut doc = doc.clone();
        // Names repeat across the two corpus folders.
        let name = format!("corpus-{i}");
        doc["metadata"] = json!({"name": name});
        let obj: DynamicObject = serde_json::from_value(doc)?;
        match api.create(&PostParams::default(), &obj).await {
            Ok(created) => {
                let v = serde_json::to_value(created)?;
                for (action, a) in v["actions"].as_object().into_iter().flatten() {
                    for p in a["phases"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .chain(a.get("deferPhase"))
                    {
                        if p["name"].as_str().is_none_or(str::is_empty) {
                            failures.push(format!(
                                "{}: {action}: phase without a name",
                                path.display()
                            ));
                        }
                    }
                }
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} refused:\n{}",
        failures.len(),
        docs.len(),
        failures.join("\n")
    );
    Ok(())
}

#[tokio::test]
async fn action_schedule_must_name_an_existing_action() -> anyhow::Result<()> {
    let (client, ns) = setup("wh-sched").await?;
    let bp: DynamicObject = serde_json::from_value(blueprint(
        "bp",
        json!({"backup": {"phases": [kubetask(Some("dump"))]}}),
    ))?;
    blueprint_api(&client, &ns)
        .create(&PostParams::default(), &bp)
        .await?;
    let api = schedule_api(&client, &ns);
    let sched = |name: &str, schedule: &str, action: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "blueprint-operator.io/v1alpha1",
            "kind": "ActionSchedule",
            "metadata": {"name": name},
            "spec": {
                "schedule": schedule,
                "actionSetTemplate": {"actions": [{"name": action, "blueprint": "bp",
                    "object": {"kind": "Deployment", "name": "app", "namespace": ns}}]}
            }
        }))
        .unwrap()
    };
    let err = api
        .create(&PostParams::default(), &sched("wrong", "@daily", "bakcup"))
        .await
        .expect_err("a schedule naming a missing action is denied");
    let msg = err.to_string();
    assert!(
        msg.contains("has no action \"bakcup\" (it has: backup)"),
        "{msg}"
    );
    let err = api
        .create(
            &PostParams::default(),
            &sched("bad-cron", "0 3 * *", "backup"),
        )
        .await
        .expect_err("a bad cron spec is denied");
    assert!(err.to_string().contains("spec.schedule"), "{err}");
    api.create(
        &PostParams::default(),
        &sched("good", "0 3 * * *", "backup"),
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn warnings_reach_kubectl() -> anyhow::Result<()> {
    let (_client, ns) = setup("wh-warn").await?;
    let m = blueprint(
        "warned",
        json!({"backup": {"phases": [kubetask(Some("my-phase"))]}}),
    );
    let out = kubectl(&["apply", "-f", "-", "-n", &ns], &m);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Warning: actions.backup.phases[0].name: phase name 'my-phase' is not a Go template identifier"), "{err}");
    Ok(())
}
