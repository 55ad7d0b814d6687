//! The operator in a cluster run by Flux: Flux's source-controller and kustomize-controller
//! (tools/flux/build.sh, host processes with the cluster's kubeconfig) reconcile, every 10 s with
//! server-side apply and `prune: true`, a `Bucket` on the test object store that holds the
//! operator's install (`manifests/`, the self-signed overlay with the certificate already in the
//! cluster), Kanister's CRDs as `manifests/kanister-crds` carries them (deferPhase relaxed),
//! corpus Blueprints, Blueprints the mutating webhook rewrites, and an ActionSchedule; then a bad
//! Blueprint, an unreadable Bucket, a pruned schedule and an image-tag upgrade. A second test
//! gives Flux Kanister's own Blueprint CRD file instead of the relaxed copy. Assertions are on
//! Flux's own status, Events, inventory and metrics (docs/gitops.md).

use std::path::Path;

use base64::Engine as _;
use blueprint_operator::kanister_crd;
use blueprint_operator::scheduler::plan::run_now_name;
use serde_json::{Value, json};

use crate::databases::{corpus_blueprint, keys};
use crate::functions::{schedule_runs, start_spec, wait_end, wait_until};
use crate::install::{self, installed_namespace};
use crate::real::{self, get_json, kubectl, tools_image};
use crate::support;
use crate::support::data_plane::{self, Store};
use crate::support::server::Watched;

/// The bucket Flux reads (the "repository").
const SOURCE: &str = "bpo-real-flux";
/// The bucket the schedule's runs write their backups to.
const DATA: &str = "bpo-real-flux-data";
/// Flux's field manager (server-side apply).
const MANAGER: &str = "kustomize-controller";
const SCHEDULE: &str = "nightly";
/// The Kustomizations: Kanister's CRDs, the operator, the Blueprints and the schedule.
const KUSTOMIZATIONS: [&str; 3] = ["kanister-crds", "operator", "apps"];
/// Corpus Blueprints carried unmodified, and the name each gets.
const CORPUS: [(&str, &str); 3] = [
    (crate::databases::PG_BLUEPRINT, "postgres-bp"),
    ("kanister-examples/maria/maria-blueprint.yaml", "maria-bp"),
    ("kanister-examples/mysql/mysql-blueprint.yaml", "mysql-bp"),
];

/// The two Flux controllers, stopped when dropped (so nothing reconciles during later tests).
struct Flux {
    source: Watched,
    kustomize: Watched,
    /// kustomize-controller's metrics port.
    metrics: u16,
}

impl Drop for Flux {
    fn drop(&mut self) {
        self.source.stop();
        self.kustomize.stop();
    }
}

/// Flux's CRDs applied, then both controllers started for namespace `ns` (no leader election,
/// every listener on 127.0.0.1), once both answer /readyz.
fn start_flux(ns: &str) -> Flux {
    let [source, kustomize, crds]: [std::path::PathBuf; 3] = support::server::built_tools(
        "tools/flux/build.sh",
        &["source-controller", "kustomize-controller", "crds"],
    )
    .unwrap_or_else(|e| panic!("Flux: {e}"))
    .try_into()
    .unwrap();
    kubectl(&["apply", "--server-side", "-f", crds.to_str().unwrap()]).expect("Flux's CRDs");
    for crd in [
        "buckets.source.toolkit.fluxcd.io",
        "kustomizations.kustomize.toolkit.fluxcd.io",
    ] {
        kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            &format!("crd/{crd}"),
        ])
        .unwrap();
    }
    let storage = std::env::temp_dir().join(format!("bpo-flux-storage-{}", std::process::id()));
    std::fs::create_dir_all(&storage).unwrap();
    let port = support::http::free_port;
    let storage_addr = format!("127.0.0.1:{}", port());
    let kubeconfig = format!("KUBECONFIG={}", support::cluster().kubeconfig.display());
    let runtime_ns = format!("RUNTIME_NAMESPACE={ns}");
    let spawn = |name: &str, bin: &Path, extra: &[String]| {
        let (metrics, health) = (port(), port());
        let mut args: Vec<String> = vec![
            kubeconfig.clone(),
            runtime_ns.clone(),
            bin.display().to_string(),
            "--watch-all-namespaces=false".into(),
            "--enable-leader-election=false".into(),
            format!("--metrics-addr=127.0.0.1:{metrics}"),
            format!("--health-addr=127.0.0.1:{health}"),
        ];
        args.extend_from_slice(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let health_addr = format!("127.0.0.1:{health}");
        let w =
            support::server::spawn_watched(name, Path::new("/usr/bin/env"), &args, &health_addr)
                .unwrap();
        w.wait_ready(real::WAIT, std::time::Duration::from_millis(200), || {
            support::http::http_get(health, "/readyz").is_ok_and(|(s, _)| s == 200)
        })
        .unwrap();
        (w, metrics)
    };
    let (source, _) = spawn(
        "flux-source-controller",
        &source,
        &[
            format!("--storage-path={}", storage.display()),
            format!("--storage-addr={storage_addr}"),
            format!("--storage-adv-addr={storage_addr}"),
        ],
    );
    let (kustomize, metrics) = spawn(
        "flux-kustomize-controller",
        &kustomize,
        &["--no-remote-bases=true".into()],
    );
    Flux {
        source,
        kustomize,
        metrics,
    }
}

impl Flux {
    /// How many reconciles of Kustomization `name` kustomize-controller has finished (its
    /// `gotk_reconcile_duration_seconds` histogram).
    fn reconciles(&self, name: &str) -> u64 {
        let (status, body) = support::http::http_get(self.metrics, "/metrics").unwrap();
        assert_eq!(status, 200, "{body}");
        body.lines()
            .filter(|l| l.starts_with("gotk_reconcile_duration_seconds_count{"))
            .filter(|l| {
                l.contains("kind=\"Kustomization\"") && l.contains(&format!("name=\"{name}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .next()
            .unwrap_or(0)
    }

    fn logs(&self) -> String {
        [&self.source, &self.kustomize]
            .iter()
            .map(|w| std::fs::read_to_string(w.log()).unwrap_or_default())
            .map(|l| l.lines().rev().take(40).collect::<Vec<_>>().join("\n"))
            .collect::<Vec<_>>()
            .join("\n----\n")
    }
}

/// PutObject of `key` in the source bucket.
fn put(key: &str, body: &[u8]) {
    let target = format!("/{SOURCE}/{key}");
    let answer = data_plane::signed_exchange(
        Store::GoFakeS3,
        "PUT",
        &target,
        Some(body.len()),
        body,
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        support::http::status(&answer),
        200,
        "PUT {target}: {answer}"
    );
}

/// DeleteObject of `key` in the source bucket.
fn remove(key: &str) {
    let target = format!("/{SOURCE}/{key}");
    let answer =
        data_plane::signed_exchange(Store::GoFakeS3, "DELETE", &target, Some(0), b"", None, None)
            .unwrap();
    assert_eq!(
        support::http::status(&answer),
        204,
        "DELETE {target}: {answer}"
    );
}

/// Every file under `dir`, as (path relative to `dir`, bytes).
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            out.extend(
                files(&path)
                    .into_iter()
                    .map(|(p, b)| (format!("{name}/{p}"), b)),
            );
        } else {
            out.push((name, std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// The webhook certificate the cluster already has (tls.crt, tls.key, ca.crt), so that Flux
/// applies the same Secret and caBundles the install made.
fn installed_certs() -> Vec<(String, Vec<u8>)> {
    let secret = get_json(&[
        "get",
        "secret",
        "-n",
        install::NS,
        "blueprint-operator-webhook-tls",
    ]);
    ["tls.crt", "tls.key", "ca.crt"]
        .iter()
        .map(|k| {
            let b64 = secret["data"][k]
                .as_str()
                .unwrap_or_else(|| panic!("{k} in {secret}"));
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            (format!("manifests/overlays/self-signed/certs/{k}"), bytes)
        })
        .collect()
}

/// The operator's Kustomization source: the self-signed overlay at the image tag `tag`.
fn operator_kustomization(tag: &str) -> String {
    format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
         resources: [../manifests/overlays/self-signed]\n\
         images: [{{name: blueprint-operator, newTag: \"{tag}\"}}]\n"
    )
}

/// A Blueprint `name` with one KubeTask `push` that runs `before`, then writes a small backup
/// under `prefix`/<its pod's name> with kando into the Profile's bucket and reports where.
fn push_blueprint(name: &str, before: &str, prefix: &str) -> String {
    let script = format!(
        "{before}\npath={prefix}/$HOSTNAME\necho \"backup by $HOSTNAME\" | \
         kando location push --profile '{{{{ toJson .Profile }}}}' --path \"$path\" -\n\
         kando output path \"$path\"\n"
    );
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": name},
        "actions": {"backup": {
            "outputArtifacts": {"data": {"keyValue": {"path": "{{ .Phases.push.Output.path }}"}}},
            "phases": [{"func": "KubeTask", "name": "push", "args": {
                "image": tools_image(),
                "command": ["bash", "-o", "errexit", "-o", "pipefail", "-c", script],
            }}],
        }},
    })
    .to_string()
}

/// Written with a one-element deferPhase list (the mutating webhook stores Kanister's object).
const DEFER_LIST: &str = "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\n\
    metadata: {name: defer-list}\nactions:\n  backup:\n    phases:\n\
    \x20   - {func: KubeTask, name: main, args: {image: x, command: [sh]}}\n    deferPhase:\n\
    \x20   - {func: KubeTask, name: cleanup, args: {image: x, command: [sh]}}\n";

/// Phases without names (the mutating webhook names them phase0, phase1).
const UNNAMED: &str = "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\n\
    metadata: {name: unnamed}\nactions:\n  backup:\n    phases:\n\
    \x20   - {func: KubeTask, args: {image: x, command: [sh, -c, 'true']}}\n\
    \x20   - {func: KubeTask, args: {image: x, command: [sh, -c, 'true']}}\n";

/// Tags the operator image of the real node's containerd as `tag` too (the same image under a
/// second name, as a registry would serve a new release).
fn tag_operator_image(tag: &str) {
    let dir = std::env::var("BPO_CLUSTER_DIR").expect("BPO_CLUSTER_DIR of tools/test.sh --real");
    let socket = format!("{dir}/real-node/run/containerd.sock");
    let image = |t: &str| format!("docker.io/library/blueprint-operator:{t}");
    support::run_ok(
        std::process::Command::new("ctr")
            .args(["-a", &socket, "-n", "k8s.io", "images", "tag", "--force"])
            .args([image(env!("CARGO_PKG_VERSION")), image(tag)]),
        "ctr images tag",
    );
}

/// Sets the operator's image tag in the source and waits until Flux applied it and both
/// Deployments rolled out with it.
async fn upgrade_operator(flux: &Flux, ns: &str, tag: &str) {
    put(
        "operator/kustomization.yaml",
        operator_kustomization(tag).as_bytes(),
    );
    let want = format!("blueprint-operator:{tag}");
    for deploy in [
        "blueprint-operator-controller",
        "blueprint-operator-webhook",
    ] {
        support::poll(real::WAIT * 2, || async {
            let images = kubectl(&[
                "get",
                "deployment",
                "-n",
                install::NS,
                deploy,
                "-o",
                "jsonpath={.spec.template.spec.containers[*].image}",
            ])
            .ok()?;
            (images == want).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("Flux did not set {want} on {deploy}: {e}\n{}", flux.logs()));
        kubectl(&[
            "rollout",
            "status",
            "-n",
            install::NS,
            &format!("deployment/{deploy}"),
            "--timeout=180s",
        ])
        .unwrap();
    }
    wait_kustomization(flux, ns, "operator", true, "Applied revision").await;
}

/// Refused by the validating webhook: an unknown function.
const BAD: &str = "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\n\
    metadata: {name: late}\nactions:\n  backup:\n    phases:\n\
    \x20   - {func: NoSuchFunction, name: a, args: {}}\n";

fn schedule(ns: &str) -> String {
    json!({
        "apiVersion": "blueprint-operator.io/v1alpha1",
        "kind": "ActionSchedule",
        "metadata": {"name": SCHEDULE},
        "spec": {
            // Runs come from run-now tokens: the test decides when.
            "schedule": "0 0 1 1 *",
            "actionSetTemplate": {"actions": [{
                "name": "backup",
                "blueprint": "backup-bp",
                "object": {"kind": "Namespace", "name": ns, "namespace": ns},
                "profile": {"name": "s3", "namespace": ns}
            }]}
        }
    })
    .to_string()
}

/// Flux's objects in `ns`: the Bucket's credentials, the Bucket, and a Kustomization of each
/// (name, path) (all but `apps` orphan their objects if deleted: later tests need them).
fn flux_objects(ns: &str, kustomizations: &[(&str, &str)]) -> String {
    let store = data_plane::object_store();
    let endpoint = store.endpoint.trim_start_matches("http://");
    let mut docs = vec![
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "bucket-creds", "namespace": ns},
               "stringData": {"accesskey": store.access_key, "secretkey": store.secret_key}}),
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "Bucket",
               "metadata": {"name": "gitops", "namespace": ns},
               "spec": {"provider": "generic", "bucketName": SOURCE, "endpoint": endpoint,
                        "insecure": true, "region": store.region, "interval": "10s",
                        "secretRef": {"name": "bucket-creds"}}}),
    ];
    for (name, path) in kustomizations {
        let mut spec = json!({
            "interval": "10s", "retryInterval": "10s", "timeout": "2m", "prune": true,
            "path": path, "sourceRef": {"kind": "Bucket", "name": "gitops"},
        });
        if *name == "apps" {
            spec["targetNamespace"] = json!(ns);
        } else {
            spec["deletionPolicy"] = json!("Orphan");
        }
        docs.push(
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                         "metadata": {"name": name, "namespace": ns}, "spec": spec}),
        );
    }
    docs.iter().map(|d| format!("---\n{d}\n")).collect()
}

/// `kubectl get kind name -n ns -o json`.
fn get_in(ns: &str, kind: &str, name: &str) -> Value {
    get_json(&["get", kind, "-n", ns, name])
}

/// The Kustomization `name`.
fn kustomization(ns: &str, name: &str) -> Value {
    get_in(ns, "kustomizations.kustomize.toolkit.fluxcd.io", name)
}

/// The Ready condition of `obj`: (status, message).
fn ready(obj: &Value) -> (String, String) {
    let c = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready");
    let field = |k: &str| {
        c.and_then(|c| c[k].as_str())
            .unwrap_or_default()
            .to_string()
    };
    (field("status"), field("message"))
}

/// Waits until Kustomization `name` is Ready (`true`) or not Ready with `message` in its
/// message; returns it.
async fn wait_kustomization(flux: &Flux, ns: &str, name: &str, ok: bool, message: &str) -> Value {
    let want = if ok { "True" } else { "False" };
    support::poll(real::WAIT * 2, || async {
        let k = kustomization(ns, name);
        let (status, msg) = ready(&k);
        (status == want && msg.contains(message)).then_some(k)
    })
    .await
    .unwrap_or_else(|e| {
        let k = kustomization(ns, name);
        let bucket = get_in(ns, "buckets.source.toolkit.fluxcd.io", "gitops");
        panic!(
            "Kustomization {name} not Ready={want} with {message:?}: {e}\n{:#}\n{:#}\n{}",
            k["status"],
            bucket["status"],
            flux.logs()
        )
    })
}

/// The changes Flux's Events on Kustomizations in `ns` reported, one line per object and verb
/// ("Blueprint/<ns>/unnamed created"), with the count of the Event that said it.
fn changes(ns: &str) -> Vec<(String, i64)> {
    let events = get_json(&[
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        "involvedObject.kind=Kustomization",
    ]);
    let mut out: Vec<(String, i64)> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| {
            let count = e["count"].as_i64().unwrap_or(1);
            e["message"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .filter(|l| {
                    [" created", " configured", " deleted"]
                        .iter()
                        .any(|v| l.ends_with(v))
                })
                .map(|l| (l.to_string(), count))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

/// The managedFields entry of Flux's field manager on `kind` `name` in `ns`.
fn flux_fields(ns: &str, kind: &str, name: &str) -> Value {
    let obj = get_json(&["get", "--show-managed-fields", kind, "-n", ns, name]);
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["manager"] == MANAGER)
        .cloned()
        .unwrap_or_else(|| panic!("no managedFields entry of {MANAGER}: {obj:#}"))
}

/// The objects of the `apps` Kustomization: (kubectl kind, name).
fn app_objects() -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&str, &str)> = CORPUS
        .iter()
        .map(|(_, name)| ("blueprints.cr.kanister.io", *name))
        .collect();
    v.extend([
        ("blueprints.cr.kanister.io", "defer-list"),
        ("blueprints.cr.kanister.io", "unnamed"),
        ("blueprints.cr.kanister.io", "backup-bp"),
        ("actionschedules.blueprint-operator.io", SCHEDULE),
    ]);
    v
}

/// Each app object's Flux managedFields entry, and a Blueprint's resourceVersion (nothing but
/// Flux writes them; the schedule's changes with its status and run-now annotations).
fn app_state(ns: &str) -> Vec<(String, Value)> {
    app_objects()
        .into_iter()
        .map(|(kind, name)| {
            let obj = get_in(ns, kind, name);
            let version = match obj["kind"].as_str() {
                Some("Blueprint") => obj["metadata"]["resourceVersion"].clone(),
                _ => Value::Null,
            };
            (
                format!("{kind}/{name}@{version}"),
                flux_fields(ns, kind, name),
            )
        })
        .collect()
}

/// The Blueprint CRD: its resourceVersion, and whether its deferPhase node is relaxed.
fn blueprint_crd() -> (String, bool) {
    let crd = get_json(&["get", "crd", kanister_crd::CRD_NAME]);
    let node = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["actions"]["additionalProperties"]
        ["properties"]["deferPhase"];
    (
        crd["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string(),
        kanister_crd::is_relaxed(node),
    )
}

/// A run of the schedule started with `blueprint-operator ctl run-now`, to its end. Its field
/// manager is not kubectl's, so Flux leaves the run-now annotation alone.
async fn ctl_run_now(ns: &str) -> Value {
    let out = real::ctl(ns, &["run-now", SCHEDULE]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = text
        .trim()
        .rsplit_once("actionset ")
        .unwrap_or_else(|| panic!("no run named in {text:?}"))
        .1;
    wait_end(ns, run).await
}

/// A run of the schedule started with `kubectl annotate`, to its end. Flux takes what a manager
/// named kubectl* wrote for its own and undoes it at its next reconcile.
async fn kubectl_run_now(ns: &str, token: &str) -> Value {
    kubectl(&[
        "annotate",
        "--overwrite",
        "-n",
        ns,
        "actionschedules.blueprint-operator.io",
        SCHEDULE,
        &format!("blueprint-operator.io/run-now={token}"),
    ])
    .unwrap();
    wait_end(ns, &run_now_name(SCHEDULE, token)).await
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn flux_reconciles_the_operator_blueprints_and_a_schedule_without_drift_and_prunes_safely() {
    let ns = installed_namespace("flux").await;
    let client = real::client().await;
    data_plane::s3_profile(&client, &ns, "s3", DATA)
        .await
        .unwrap();
    data_plane::create_bucket(SOURCE).unwrap();

    // The "repository": manifests/ with the cluster's certificate, the operator at the image
    // the real tier built, and the apps.
    for (path, bytes) in files(&support::repo_root().join("manifests")) {
        if !path.starts_with("overlays/self-signed/certs/") {
            put(&format!("manifests/{path}"), &bytes);
        }
    }
    for (path, bytes) in installed_certs() {
        put(&path, &bytes);
    }
    put(
        "operator/kustomization.yaml",
        operator_kustomization(env!("CARGO_PKG_VERSION")).as_bytes(),
    );
    for (rel, name) in CORPUS {
        let mut bp: Value = serde_yaml::from_str(&corpus_blueprint(rel)).unwrap();
        bp["metadata"]["name"] = json!(name);
        put(
            &format!("apps/{name}.yaml"),
            serde_yaml::to_string(&bp).unwrap().as_bytes(),
        );
    }
    put("apps/defer-list.yaml", DEFER_LIST.as_bytes());
    put("apps/unnamed.yaml", UNNAMED.as_bytes());
    put(
        "apps/backup-bp.yaml",
        push_blueprint("backup-bp", "true", "flux-runs").as_bytes(),
    );
    put("apps/schedule.yaml", schedule(&ns).as_bytes());

    let flux = start_flux(&ns);
    let kustomizations = [
        ("kanister-crds", "./manifests/kanister-crds"),
        ("operator", "./operator"),
        ("apps", "./apps"),
    ];
    install::apply_yaml(&flux_objects(&ns, &kustomizations))
        .expect("Flux's Bucket and Kustomizations");
    for name in KUSTOMIZATIONS {
        wait_kustomization(&flux, &ns, name, true, "Applied revision").await;
    }

    // a. The first apply created the apps; the webhook normalized two of them. (Events are
    // sent in the background: read them once they stopped changing.)
    let created = format!("Blueprint/{ns}/unnamed created");
    let first = support::poll(real::WAIT, || async {
        let seen = changes(&ns);
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        (seen.iter().any(|(l, _)| *l == created) && seen == changes(&ns)).then_some(seen)
    })
    .await
    .unwrap_or_else(|e| panic!("no Event {created:?}: {e}: {:?}", changes(&ns)));
    for name in ["unnamed", "defer-list", "postgres-bp"] {
        let line = format!("Blueprint/{ns}/{name} created");
        assert!(
            first.iter().any(|(l, _)| *l == line),
            "{line:?} not in {first:?}"
        );
    }
    let unnamed = get_in(&ns, "blueprints.cr.kanister.io", "unnamed");
    assert_eq!(
        unnamed["actions"]["backup"]["phases"][1]["name"], "phase1",
        "{unnamed}"
    );
    let defer = get_in(&ns, "blueprints.cr.kanister.io", "defer-list");
    assert_eq!(
        defer["actions"]["backup"]["deferPhase"]["name"], "cleanup",
        "{defer}"
    );
    let apps = kustomization(&ns, "apps");
    let inventory = apps["status"]["inventory"]["entries"].to_string();
    for id in [
        format!("{ns}_unnamed_cr.kanister.io_Blueprint"),
        format!("{ns}_{SCHEDULE}_blueprint-operator.io_ActionSchedule"),
    ] {
        assert!(
            inventory.contains(&id),
            "{id} not in the inventory {inventory}"
        );
    }
    let crd = blueprint_crd();
    assert!(
        crd.1,
        "Kanister's Blueprint CRD as carried in the source is relaxed"
    );
    let before = app_state(&ns);
    let counts: Vec<u64> = KUSTOMIZATIONS.iter().map(|k| flux.reconciles(k)).collect();

    // Our controller writes the schedule's status (two runs) while Flux keeps reconciling.
    for _ in 0..2 {
        let run = ctl_run_now(&ns).await;
        assert_eq!(run["status"]["state"], "complete", "{run:#}");
    }
    for (name, count) in KUSTOMIZATIONS.iter().zip(&counts) {
        support::poll(real::WAIT * 2, || async {
            (flux.reconciles(name) >= count + 5).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("Kustomization {name}: fewer than 5 reconciles: {e}"));
    }
    for name in KUSTOMIZATIONS {
        let k = wait_kustomization(&flux, &ns, name, true, "Applied revision").await;
        assert_eq!(
            k["status"]["lastAppliedRevision"],
            k["status"]["lastAttemptedRevision"]
        );
    }
    assert_eq!(
        changes(&ns),
        first,
        "Flux changed something after its first apply"
    );
    assert_eq!(app_state(&ns), before, "an app object was rewritten");
    assert_eq!(
        blueprint_crd(),
        crd,
        "Flux and our controller fought over the CRD"
    );
    let schedule = get_in(&ns, "actionschedules.blueprint-operator.io", SCHEDULE);
    assert!(
        schedule["status"]["lastSuccessfulTime"].is_string(),
        "{schedule:#}"
    );

    // A run started with `kubectl annotate`: Flux undoes kubectl's edits of its objects, so it
    // removes the annotation at its next reconcile (one "configured"); the run is not repeated.
    let run = kubectl_run_now(&ns, "flux-kubectl").await;
    assert_eq!(run["status"]["state"], "complete", "{run:#}");
    let configured = format!("ActionSchedule/{ns}/{SCHEDULE} configured");
    support::poll(real::WAIT, || async {
        let s = get_in(&ns, "actionschedules.blueprint-operator.io", SCHEDULE);
        let gone = s["metadata"]["annotations"]["blueprint-operator.io/run-now"].is_null();
        (gone && changes(&ns).iter().any(|(l, _)| *l == configured)).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "Flux did not undo the kubectl annotation: {e}: {:?}",
            changes(&ns)
        )
    });
    let runs = schedule_runs(&ns, SCHEDULE);
    assert_eq!(runs.lines().count(), 3, "three runs, none repeated: {runs}");
    // Flux's own managedFields entry of the schedule changed with that; the new baseline.
    let before = app_state(&ns);

    // b. A bad Blueprint: the apply fails as a whole with the webhook's located error, nothing
    // else is touched; fixing the file heals it.
    put("apps/late.yaml", BAD.as_bytes());
    let k = wait_kustomization(&flux, &ns, "apps", false, "NoSuchFunction").await;
    let (_, message) = ready(&k);
    assert!(
        message.contains("actions.backup.phases[0].func: unknown function 'NoSuchFunction'"),
        "{message}"
    );
    assert!(kubectl(&["get", "blueprints.cr.kanister.io", "-n", &ns, "late"]).is_err());
    assert_eq!(
        app_state(&ns),
        before,
        "a failed apply touched other objects"
    );
    put(
        "apps/late.yaml",
        BAD.replace("NoSuchFunction", "KubeTask")
            .replace("args: {}", "args: {image: x, command: [sh]}")
            .as_bytes(),
    );
    wait_kustomization(&flux, &ns, "apps", true, "Applied revision").await;
    let late = get_in(&ns, "blueprints.cr.kanister.io", "late");
    assert_eq!(
        late["actions"]["backup"]["phases"][0]["func"], "KubeTask",
        "{late}"
    );
    assert_eq!(app_state(&ns), before, "healing touched other objects");

    // Bad input: a Bucket Flux cannot read (a store that checks signatures, a wrong secret key):
    // Flux says so on the Bucket, the Kustomizations keep the last revision, nothing of ours is
    // changed or deleted; the right key heals it.
    data_plane::create_bucket_in(Store::Moto, SOURCE).unwrap();
    let moto = Store::Moto.get();
    let wrong = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "wrong-creds", "namespace": ns},
        "stringData": {"accesskey": moto.access_key, "secretkey": "not-the-secret-key"}});
    install::apply_yaml(&wrong.to_string()).unwrap();
    let bucket_spec = |endpoint: &str, secret: &str| {
        json!({"spec": {"endpoint": endpoint.trim_start_matches("http://"),
                        "secretRef": {"name": secret}}})
        .to_string()
    };
    let bucket = [
        "patch",
        "buckets.source.toolkit.fluxcd.io",
        "gitops",
        "-n",
        &ns,
        "--type=merge",
        "-p",
    ];
    let state = app_state(&ns);
    let applied = kustomization(&ns, "apps")["status"]["lastAppliedRevision"].clone();
    kubectl(
        &[
            &bucket[..],
            &[bucket_spec(&moto.endpoint, "wrong-creds").as_str()],
        ]
        .concat(),
    )
    .unwrap();
    let refused = format!("failed to confirm existence of '{SOURCE}' bucket");
    let b = support::poll(real::WAIT, || async {
        let b = get_in(&ns, "buckets.source.toolkit.fluxcd.io", "gitops");
        let (status, message) = ready(&b);
        (status == "False" && message.contains(&refused)).then_some(b)
    })
    .await
    .unwrap_or_else(|e| panic!("no read error on the Bucket: {e}\n{}", flux.logs()));
    eprintln!("the Bucket with a wrong key: {}", ready(&b).1);
    let from = flux.reconciles("apps");
    support::poll(real::WAIT, || async {
        (flux.reconciles("apps") >= from + 2).then_some(())
    })
    .await
    .unwrap();
    let apps = wait_kustomization(&flux, &ns, "apps", true, "Applied revision").await;
    assert_eq!(
        apps["status"]["lastAppliedRevision"], applied,
        "the last revision kept"
    );
    assert_eq!(
        app_state(&ns),
        state,
        "a Bucket Flux cannot read changed nothing"
    );
    assert_eq!(schedule_runs(&ns, SCHEDULE).lines().count(), 3);
    let store = data_plane::object_store();
    kubectl(
        &[
            &bucket[..],
            &[bucket_spec(&store.endpoint, "bucket-creds").as_str()],
        ]
        .concat(),
    )
    .unwrap();
    support::poll(real::WAIT, || async {
        let b = get_in(&ns, "buckets.source.toolkit.fluxcd.io", "gitops");
        (ready(&b).0 == "True").then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("the Bucket did not heal: {e}\n{}", flux.logs()));

    // c. The schedule removed from the source: Flux prunes it; its runs and backups stay.
    let runs_before = schedule_runs(&ns, SCHEDULE);
    assert_eq!(runs_before.lines().count(), 3, "{runs_before}");
    let data = keys(DATA, "flux-runs/").await;
    assert_eq!(data.len(), 3, "{data:?}");
    remove("apps/schedule.yaml");
    support::poll(real::WAIT * 2, || async {
        kubectl(&[
            "get",
            "actionschedules.blueprint-operator.io",
            "-n",
            &ns,
            SCHEDULE,
        ])
        .is_err()
        .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("Flux did not prune the schedule: {e}\n{}", flux.logs()));
    let deleted = format!("ActionSchedule/{ns}/{SCHEDULE} deleted");
    support::poll(real::WAIT, || async {
        changes(&ns)
            .iter()
            .any(|(l, _)| *l == deleted)
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{deleted:?} not in Flux's Events {:?}: {e}", changes(&ns)));
    let runs_after = schedule_runs(&ns, SCHEDULE);
    assert_eq!(runs_after, runs_before, "the runs stay");
    assert_eq!(keys(DATA, "flux-runs/").await, data, "the backups stay");
    wait_kustomization(&flux, &ns, "apps", true, "Applied revision").await;

    // d. The operator upgraded by its image tag in the source while a run is in flight: the new
    // controller takes the run over, its phase runs once.
    // One key per pod that ran the phase.
    put(
        "apps/slow-bp.yaml",
        push_blueprint("slow-bp", "sleep 120", "flux-upgrade").as_bytes(),
    );
    support::poll(real::WAIT * 2, || async {
        kubectl(&["get", "blueprints.cr.kanister.io", "-n", &ns, "slow-bp"]).ok()
    })
    .await
    .unwrap_or_else(|e| panic!("Flux did not apply slow-bp: {e}\n{}", flux.logs()));
    let upgraded = format!("{}-flux", env!("CARGO_PKG_VERSION"));
    tag_operator_image(&upgraded);
    let run = start_spec(
        &ns,
        json!({"name": "backup", "blueprint": "slow-bp",
               "object": {"kind": "Namespace", "name": ns, "namespace": ns},
               "profile": {"name": "s3", "namespace": ns}}),
    );
    wait_until(&ns, &run, "the slow phase did not start", |a| {
        a["status"]["actions"][0]["phases"][0]["state"] == "running"
    })
    .await;
    let controller_before =
        real::pod_names(install::NS, "app.kubernetes.io/component=controller").unwrap();
    upgrade_operator(&flux, &ns, &upgraded).await;
    // Rolled out with the phase still running: what ends the run is the new controller.
    let now = get_in(&ns, "actionsets.cr.kanister.io", &run);
    assert_eq!(now["status"]["state"], "running", "{now:#}");
    let done = wait_end(&ns, &run).await;
    assert_eq!(done["status"]["state"], "complete", "{done:#}");
    let pushed = keys(DATA, "flux-upgrade/").await;
    assert_eq!(pushed.len(), 1, "the phase ran once: {pushed:?}");
    assert_ne!(
        real::pod_names(install::NS, "app.kubernetes.io/component=controller").unwrap(),
        controller_before,
        "new controller pods"
    );
    // Back to the image the other tests expect (install::install checks it).
    upgrade_operator(&flux, &ns, env!("CARGO_PKG_VERSION")).await;
    drop(flux);
}

/// The count of Flux's Event saying `line` (0: none).
fn said(ns: &str, line: &str) -> i64 {
    changes(ns)
        .into_iter()
        .filter(|(l, _)| l == line)
        .map(|(_, n)| n)
        .sum()
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn flux_applying_kanisters_own_blueprint_crd_rewrites_it_every_interval_and_the_relaxed_copy_does_not()
 {
    let ns = installed_namespace("flux-crd").await;
    data_plane::create_bucket(SOURCE).unwrap();
    let upstream = support::corpus::dir()
        .expect("the Kanister corpus (KANISTER_CORPUS)")
        .join("crds/blueprint.yaml");
    put(
        "upstream-crd/blueprint.yaml",
        &std::fs::read(upstream).unwrap(),
    );
    let flux = start_flux(&ns);
    install::apply_yaml(&flux_objects(&ns, &[("kanister-crds", "./upstream-crd")]))
        .expect("Flux's Bucket and Kustomization");
    wait_kustomization(&flux, &ns, "kanister-crds", true, "Applied revision").await;

    // Kanister's file: Flux types the node, our controller relaxes it, Flux types it again at its
    // next interval, and so on: the same Event again and again, a new CRD version each time.
    let line = format!(
        "CustomResourceDefinition/{} configured",
        kanister_crd::CRD_NAME
    );
    let (version, _) = blueprint_crd();
    support::poll(real::WAIT * 2, || async {
        (said(&ns, &line) >= 3).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{line:?} not said 3 times: {e}: {:?}", changes(&ns)));
    assert_ne!(blueprint_crd().0, version, "rewritten");

    // The relaxed copy (manifests/kanister-crds) in its place: one last apply, then nothing.
    let relaxed = support::repo_root().join("manifests/kanister-crds/kanister-blueprints.yaml");
    put(
        "upstream-crd/blueprint.yaml",
        &std::fs::read(relaxed).unwrap(),
    );
    let revision = |k: &Value| k["status"]["lastAppliedRevision"].clone();
    let old = revision(&kustomization(&ns, "kanister-crds"));
    support::poll(real::WAIT * 2, || async {
        let k = kustomization(&ns, "kanister-crds");
        (revision(&k) != old && ready(&k).0 == "True").then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("Flux did not apply the relaxed copy: {e}\n{}", flux.logs()));
    // A reconcile that may still race the controller's last patch, then a quiet window.
    let settle = flux.reconciles("kanister-crds") + 1;
    support::poll(real::WAIT, || async {
        (flux.reconciles("kanister-crds") > settle).then_some(())
    })
    .await
    .unwrap();
    let (count, crd) = (said(&ns, &line), blueprint_crd());
    assert!(crd.1, "relaxed");
    let from = flux.reconciles("kanister-crds");
    support::poll(real::WAIT * 2, || async {
        (flux.reconciles("kanister-crds") >= from + 4).then_some(())
    })
    .await
    .unwrap();
    assert_eq!(said(&ns, &line), count, "Flux configured the CRD again");
    assert_eq!(blueprint_crd(), crd, "the CRD was rewritten");
    drop(flux);
}
