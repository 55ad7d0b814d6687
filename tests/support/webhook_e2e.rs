//! The admission webhook through a real kube-apiserver, under either
//! Blueprint CRD a cluster may have ([`Crds`]): the cases are written once here and instantiated
//! by `tests/e2e/webhook.rs` (our manifests' CRDs) and `tests/e2e_webhook_kanister.rs` (Kanister's
//! own CRDs, relaxed by the controller; a binary and cluster of its own, since it replaces the
//! Blueprint CRD every other test uses) with [`admission_cases!`]. Included at the crate root with
//! `#[path = ".../support/webhook_e2e.rs"] mod webhook_e2e;` next to `mod support;`.
//!
//! One webhook server per test binary runs in-process on 127.0.0.1:<free port> (its own thread
//! and runtime, so it outlives each test's runtime), with certificates from the `certs` code.
//! The webhook configurations use `url: https://127.0.0.1:<port>/...` and the caBundle, and a
//! namespaceSelector on a label that only this binary's namespaces carry.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use blueprint_operator::kanister_crd;
use blueprint_operator::webhook::certs;
use blueprint_operator::webhook::server::{self, ServerConfig};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Error};
use serde_json::{Value, json};
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::support;
use crate::support::controller::Controller;
use crate::support::{CrdInstall, repo_root};

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
                    shutdown_grace: Duration::from_secs(1),
                    client,
                    lookup_timeout: Duration::from_secs(5),
                    ..ServerConfig::local(&dir)
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

pub fn blueprint_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Blueprint"),
        "blueprints",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

pub fn schedule_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("blueprint-operator.io", "v1alpha1", "ActionSchedule"),
        "actionschedules",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// Which Blueprint CRD the cluster has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crds {
    /// Ours: manifests/crds and manifests/kanister-crds (Kanister's, deferPhase already relaxed).
    Manifests,
    /// Kanister's own, from the corpus (`crds/`, as its Helm chart installs them), typed
    /// `deferPhase` included; the controller relaxes it. Plus our ActionSchedule CRD.
    Kanister,
}

/// Kanister's CRD files of the corpus (`None`: no corpus, the test skips).
pub fn kanister_crd_files() -> Option<Vec<PathBuf>> {
    let dir = support::corpus::dir()?;
    Some(support::yaml_files(&dir.join("crds")).expect("corpus crds/"))
}

/// Kanister's Blueprint CRD as its chart ships it.
pub fn kanister_blueprint_crd() -> Option<CustomResourceDefinition> {
    let path = support::corpus::dir()?.join("crds/blueprint.yaml");
    let text = std::fs::read_to_string(&path).expect("corpus crds/blueprint.yaml");
    let mut crd: CustomResourceDefinition = serde_yaml::from_str(&text).expect("a CRD");
    crd.status = None;
    Some(crd)
}

/// Installs the CRDs of `crds`. Kanister's are only created when absent: re-applying them would
/// undo the controller's relaxation under the feet of the other tests of the binary.
async fn install(client: &Client, crds: Crds) -> anyhow::Result<bool> {
    match crds {
        Crds::Manifests => {
            support::install_crds(client).await?;
        }
        Crds::Kanister => {
            let Some(kanister) = kanister_crd_files() else {
                return Ok(false);
            };
            let mut files = support::yaml_files(&repo_root().join("manifests/crds"))?;
            files.extend(kanister);
            support::install_crd_files(client, &files, CrdInstall::CreateIfAbsent).await?;
        }
    }
    Ok(true)
}

/// Tests that replace the Blueprint CRD take this exclusively ([`exclusive`]); the admission
/// cases share it, so no case sees the CRD reverted half-way.
static CRD_LOCK: RwLock<()> = RwLock::const_new(());

pub async fn shared() -> RwLockReadGuard<'static, ()> {
    CRD_LOCK.read().await
}

pub async fn exclusive() -> RwLockWriteGuard<'static, ()> {
    CRD_LOCK.write().await
}

/// A test's cluster, namespace, and (for Kanister's CRDs) the controller that relaxes them.
pub struct Ctx {
    pub client: Client,
    pub ns: String,
    pub controller: Option<Controller>,
}

/// The CRDs of `crds` and a fresh namespace served by the webhook; waits until the API server
/// calls it. No controller is started. `None`: skipped (no Kanister corpus).
pub async fn prepare(prefix: &str, crds: Crds) -> anyhow::Result<Option<Ctx>> {
    let client = support::client().await;
    if !install(&client, crds).await? {
        return Ok(None);
    }
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
    Ok(Some(Ctx {
        client,
        ns,
        controller: None,
    }))
}

/// [`prepare`], and for Kanister's CRDs a controller (as its ServiceAccount, manifests' RBAC)
/// running until the test ends; returns once the API server lets a deferPhase list through.
pub async fn setup(prefix: &str, crds: Crds) -> anyhow::Result<Option<Ctx>> {
    let Some(mut cx) = prepare(prefix, crds).await? else {
        return Ok(None);
    };
    if crds == Crds::Kanister {
        cx.controller = Some(Controller::start(&cx.ns, &[]));
        wait_relaxed(&cx.client).await?;
        wait_list_admitted(&cx.client, &cx.ns).await?;
    }
    Ok(Some(cx))
}

/// Waits until the stored Blueprint CRD's deferPhase accepts any value; returns the CRD.
pub async fn wait_relaxed(client: &Client) -> anyhow::Result<CustomResourceDefinition> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    support::wait_for(&api, kanister_crd::CRD_NAME, support::WAIT, |crd| {
        kanister_crd::plan(&serde_json::to_value(crd).unwrap()) == kanister_crd::Plan::Relaxed
    })
    .await
    .context("the controller did not relax Kanister's Blueprint CRD")
}

/// `kubectl create --dry-run=server` (strict field validation, as every kubectl write) of a
/// Blueprint with a one-element deferPhase list: the object the API server would store, or
/// kubectl's error text.
fn strict_dry_run_list(ns: &str) -> Result<Value, String> {
    let bp = blueprint(
        "probe-list",
        json!({"backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("cleanup"))]}}),
    );
    let out = kubectl(
        &[
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            "-",
            "-n",
            ns,
        ],
        &bp,
    );
    if out.status.success() {
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
    } else {
        Err(text(&out.stderr))
    }
}

/// Waits until the API server serves a schema that lets a deferPhase list reach the webhook
/// (a CRD change reaches the request handlers a little after it is stored).
pub async fn wait_list_admitted(client: &Client, ns: &str) -> anyhow::Result<()> {
    let _ = client;
    support::poll(support::WAIT, || async {
        strict_dry_run_list(ns)
            .ok()
            .filter(|v| v["actions"]["backup"]["deferPhase"]["func"] == "KubeTask")
    })
    .await
    .context("a one-element deferPhase list is still refused or pruned")?;
    Ok(())
}

/// Waits until the API server refuses a deferPhase list by its schema (Kanister's typed
/// `deferPhase` in force); returns its message.
pub async fn wait_list_refused_by_schema(client: &Client, ns: &str) -> anyhow::Result<String> {
    let _ = client;
    support::poll(support::WAIT, || async {
        strict_dry_run_list(ns)
            .err()
            .filter(|e| e.contains("strict decoding error"))
    })
    .await
    .context("Kanister's typed deferPhase is not in force")
}

pub fn blueprint(name: &str, actions: Value) -> Value {
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "Blueprint",
        "metadata": {"name": name},
        "actions": actions,
    })
}

pub fn kubetask(name: Option<&str>) -> Value {
    let mut p = json!({"func": "KubeTask", "args": {"image": "busybox", "command": ["sh", "-c", "echo hi"]}});
    if let Some(n) = name {
        p["name"] = json!(n);
    }
    p
}

pub fn kubectl_path() -> PathBuf {
    support::cluster()
        .kubectl
        .clone()
        .unwrap_or_else(|| PathBuf::from("kubectl"))
}

/// `kubectl apply` of `m` in `ns`, plainly and with `--dry-run=server`: both must be refused;
/// kubectl's error text of each.
fn kubectl_apply_refused(ns: &str, m: &Value) -> [String; 2] {
    [&[][..], &["--dry-run=server"][..]].map(|extra| {
        let args: Vec<&str> = ["apply", "-f", "-", "-n", ns]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let out = kubectl(&args, m);
        assert!(
            !out.status.success(),
            "{extra:?}: accepted: {}",
            text(&out.stdout)
        );
        text(&out.stderr)
    })
}

/// Runs kubectl with the test kubeconfig and `stdin` as the manifest.
pub fn kubectl(args: &[&str], stdin: &Value) -> Output {
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

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub async fn get(api: &Api<DynamicObject>, name: &str) -> Value {
    serde_json::to_value(api.get(name).await.expect("get")).unwrap()
}

impl Ctx {
    /// The Blueprints of the test's namespace.
    pub fn blueprints(&self) -> Api<DynamicObject> {
        blueprint_api(&self.client, &self.ns)
    }

    /// Creates the Blueprint manifest `m` through the API (`dry_run`: the server only says what
    /// it would store).
    pub async fn create(&self, m: &Value, dry_run: bool) -> kube::Result<DynamicObject> {
        let obj: DynamicObject = serde_json::from_value(m.clone()).expect("a Blueprint manifest");
        let pp = PostParams {
            dry_run,
            ..Default::default()
        };
        self.blueprints().create(&pp, &obj).await
    }

    /// kubectl `args` with `m` as the manifest, in the test's namespace, asserted to succeed.
    pub fn kubectl_ok(&self, args: &[&str], m: &Value) -> Output {
        let args: Vec<&str> = args.iter().copied().chain(["-n", &self.ns]).collect();
        let out = kubectl(&args, m);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        out
    }
}

pub async fn apply_stores_defaulted_names_and_reapply_changes_nothing(
    crds: Crds,
) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-apply", crds).await? else {
        return Ok(());
    };
    let api = cx.blueprints();
    let manifest = blueprint(
        "names",
        json!({
            "backup": {"phases": [kubetask(None), kubetask(Some("upload")), kubetask(None)], "deferPhase": kubetask(None)},
        }),
    );

    for (mode, name) in [
        (&["apply", "-f", "-"][..], "names"),
        (&["apply", "--server-side", "-f", "-"][..], "names-ssa"),
    ] {
        let mut m = manifest.clone();
        m["metadata"]["name"] = json!(name);
        cx.kubectl_ok(mode, &m);
        let stored = get(&api, name).await;
        let action = &stored["actions"]["backup"];
        assert_eq!(action["phases"][0]["name"], "phase0", "{stored}");
        assert_eq!(action["phases"][1]["name"], "upload");
        assert_eq!(action["phases"][2]["name"], "phase2");
        assert_eq!(action["deferPhase"]["name"], "deferPhase");
        let rv = stored["metadata"]["resourceVersion"].clone();

        // GitOps re-apply of the same manifest: no change at all.
        cx.kubectl_ok(mode, &m);
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
pub async fn defer_phase_list_of_two_is_denied_with_our_message(crds: Crds) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-defer", crds).await? else {
        return Ok(());
    };
    let m = blueprint(
        "two-defers",
        json!({
            "backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("a")), kubetask(Some("b"))]},
        }),
    );
    // Plain `kubectl apply` (strict field validation): the CRD's deferPhase accepts any value
    // (ours as shipped, Kanister's once the controller relaxed it), so the list reaches the
    // webhook, which denies it with our explanation rather than the API server's
    // "strict decoding error: unknown field".
    for err in kubectl_apply_refused(&cx.ns, &m) {
        assert!(err.contains("actions.backup.deferPhase"), "{err}");
        assert!(
            err.contains("deferPhase takes exactly one phase, found a list of 2"),
            "{err}"
        );
        assert!(!err.contains("strict decoding error"), "{err}");
    }
    for dry_run in [false, true] {
        let err = cx
            .create(&m, dry_run)
            .await
            .expect_err("denied")
            .to_string();
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
    assert!(cx.blueprints().get_opt("two-defers").await?.is_none());
    Ok(())
}

pub async fn missing_required_argument_is_denied_with_its_location(
    crds: Crds,
) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-args", crds).await? else {
        return Ok(());
    };
    let m = blueprint(
        "no-command",
        json!({
            "backup": {"phases": [{"name": "dump", "func": "KubeTask", "args": {"image": "busybox"}}]},
        }),
    );
    for err in kubectl_apply_refused(&cx.ns, &m) {
        assert!(
            err.contains("The Blueprint \"no-command\" is invalid"),
            "{err}"
        );
        assert!(
            err.contains("actions.backup.phases[0].args.command: required argument 'command' of KubeTask is missing"),
            "{err}"
        );
    }
    let err = cx.create(&m, false).await.expect_err("denied").to_string();
    assert!(
        err.contains("validate.blueprints.e2e.blueprint-operator.io\" denied the request"),
        "{err}"
    );
    assert!(cx.blueprints().get_opt("no-command").await?.is_none());
    Ok(())
}

pub async fn server_dry_run_gives_the_same_mutation_and_stores_nothing(
    crds: Crds,
) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-dry", crds).await? else {
        return Ok(());
    };
    let m = blueprint("dry", json!({"backup": {"phases": [kubetask(None)]}}));
    let out = cx.kubectl_ok(&["apply", "--dry-run=server", "-o", "json", "-f", "-"], &m);
    let shown: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        shown["actions"]["backup"]["phases"][0]["name"], "phase0",
        "{shown}"
    );
    assert!(
        cx.blueprints().get_opt("dry").await?.is_none(),
        "dry-run stored the object"
    );
    Ok(())
}

/// A one-element deferPhase list reaches the webhook intact (the CRD's deferPhase accepts any
/// value; Kanister's typed `object` schema would refuse it under strict validation, or prune
/// the element to `{}` before admission) and is stored as the phase itself: by a plain create
/// and by `kubectl apply` (strict field validation).
pub async fn one_element_defer_phase_list_becomes_the_phase(crds: Crds) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-one", crds).await? else {
        return Ok(());
    };
    let m = blueprint(
        "one-defer",
        json!({
            "backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("cleanup"))]},
        }),
    );
    cx.create(&m, false).await?;
    let mut applied = m;
    applied["metadata"]["name"] = json!("one-defer-kubectl");
    cx.kubectl_ok(&["apply", "-f", "-"], &applied);
    let api = cx.blueprints();
    for name in ["one-defer", "one-defer-kubectl"] {
        let stored = get(&api, name).await;
        let defer = &stored["actions"]["backup"]["deferPhase"];
        assert!(defer.is_object(), "{stored}");
        assert_eq!(defer["name"], "cleanup", "{stored}");
        assert_eq!(defer["func"], "KubeTask", "{stored}");
        assert_eq!(defer["args"], kubetask(None)["args"], "{stored}");
    }
    Ok(())
}

/// Normalization changes nothing in a Blueprint that has nothing to normalize.
pub async fn blueprint_without_defer_phase_is_stored_as_written(crds: Crds) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-plain", crds).await? else {
        return Ok(());
    };
    let actions = json!({
        "backup": {"kind": "Deployment", "phases": [kubetask(Some("dump")), kubetask(Some("upload"))]},
        "restore": {"phases": [kubetask(Some("load"))], "secretNames": ["creds"]},
    });
    cx.create(&blueprint("plain", actions.clone()), false)
        .await?;
    cx.kubectl_ok(
        &["apply", "-f", "-"],
        &blueprint("plain-kubectl", actions.clone()),
    );
    let api = cx.blueprints();
    for name in ["plain", "plain-kubectl"] {
        let stored = get(&api, name).await;
        assert_eq!(stored["actions"], actions, "{name}");
    }
    Ok(())
}

pub async fn every_corpus_blueprint_is_accepted_through_the_api_server(
    crds: Crds,
) -> anyhow::Result<()> {
    let docs = support::corpus::blueprints();
    if docs.is_empty() {
        return Ok(());
    }
    let Some(cx) = setup("wh-corpus", crds).await? else {
        return Ok(());
    };
    let mut failures = Vec::new();
    for (i, (path, doc)) in docs.iter().enumerate() {
        let mut doc = doc.clone();
        // Names repeat across the two corpus folders.
        let name = format!("corpus-{i}");
        doc["metadata"] = json!({"name": name});
        match cx.create(&doc, false).await {
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

pub async fn action_schedule_must_name_an_existing_action(crds: Crds) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-sched", crds).await? else {
        return Ok(());
    };
    let bp = blueprint(
        "bp",
        json!({"backup": {"phases": [kubetask(Some("dump"))]}}),
    );
    cx.create(&bp, false).await?;
    let api = schedule_api(&cx.client, &cx.ns);
    let ns = &cx.ns;
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

pub async fn warnings_reach_kubectl(crds: Crds) -> anyhow::Result<()> {
    let Some(cx) = setup("wh-warn", crds).await? else {
        return Ok(());
    };
    let m = blueprint(
        "warned",
        json!({"backup": {"phases": [kubetask(Some("my-phase"))]}}),
    );
    let err = text(&cx.kubectl_ok(&["apply", "-f", "-"], &m).stderr);
    assert!(err.contains("Warning: actions.backup.phases[0].name: phase name 'my-phase' is not a Go template identifier"), "{err}");
    Ok(())
}

/// `#[tokio::test]`s in the including binary, one per admission case, run under `$crds`
/// (each holds [`shared`] for its duration).
macro_rules! admission_cases {
    ($crds:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() -> anyhow::Result<()> {
                let _crd = $crate::webhook_e2e::shared().await;
                $crate::webhook_e2e::$case($crds).await
            }
        )*
    };
    ($crds:expr) => {
        $crate::webhook_e2e::admission_cases!(
            $crds;
            apply_stores_defaulted_names_and_reapply_changes_nothing,
            defer_phase_list_of_two_is_denied_with_our_message,
            missing_required_argument_is_denied_with_its_location,
            server_dry_run_gives_the_same_mutation_and_stores_nothing,
            one_element_defer_phase_list_becomes_the_phase,
            blueprint_without_defer_phase_is_stored_as_written,
            every_corpus_blueprint_is_accepted_through_the_api_server,
            action_schedule_must_name_an_existing_action,
            warnings_reach_kubectl,
        );
    };
}
pub(crate) use admission_cases;
