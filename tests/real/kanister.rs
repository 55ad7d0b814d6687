//! Kanister's own controller beside ours, installed as Kanister's users install it: its Helm
//! chart (`helm/kanister-operator` of Kanister's source, defaults: its Blueprint validating
//! webhook with the certificate the chart generates, and its CRDs rewritten by its controller at
//! every start) as release `kanister` in namespace `kanister`, running the image
//! `ghcr.io/kanisterio/controller:0.119.0` that tools/images/build.sh assembles from the binary
//! tools/kanister/build.sh builds from Kanister's source. Ours is the kustomize install of
//! [`crate::install`].
//!
//! Kanister's webhook judges every Blueprint of the cluster, so each test uninstalls Kanister
//! again when it ends ([`Installed`]) and the other tests of the tier run without it.

use std::path::PathBuf;
use std::process::Command;

use blueprint_operator::kanister_crd::{self, Plan};
use blueprint_operator::model::labels::{ANNOTATION_CLAIMED, ANNOTATION_EXECUTOR_RECORD};
use futures::TryStreamExt as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::helm::helm;
use crate::install::{self, apply_yaml};
use crate::real::{self, get_json, kubectl, tools_image};
use crate::support;

/// Kanister's namespace, where its users keep their ActionSets and Blueprints.
pub const NS: &str = "kanister";
const RELEASE: &str = "kanister";
/// The chart's name of its Deployment and Service (`<release>-kanister-operator`).
const DEPLOYMENT: &str = "kanister-kanister-operator";
const IMAGE: &str = "ghcr.io/kanisterio/controller:0.119.0";
/// The source component of the Events Kanister's controller records.
pub const KANISTER_COMPONENT: &str = "Kanister Controller";
/// What our executor and webhook write on ActionSets: annotations, labels and finalizers.
const OUR_PREFIX: &str = "blueprint-operator.io/";

/// Kanister's chart, copied (the source is read-only in CI). Its `crds/` are git symlinks into
/// `pkg/customresource/`, which this copy of the source holds as files naming their target:
/// they are replaced by the target's text, as in the chart Kanister publishes.
fn chart() -> PathBuf {
    let src = std::env::var_os("KANISTER_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::repo_root().join("../shared/kanister-src"))
        .join("helm/kanister-operator");
    assert!(
        src.join("Chart.yaml").is_file(),
        "Kanister's chart is not at {} (KANISTER_SRC)",
        src.display()
    );
    let copy = std::env::temp_dir().join(format!("bpo-kanister-chart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    support::run_ok(
        Command::new("cp").arg("-rL").arg(&src).arg(&copy),
        "copy Kanister's chart",
    );
    for entry in std::fs::read_dir(copy.join("crds")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains('\n') && text.ends_with(".yaml") {
            let target = src.join("crds").join(text.trim());
            std::fs::write(&path, std::fs::read(&target).unwrap()).unwrap();
        }
    }
    copy
}

/// Kanister's release, uninstalled (with its namespace) when dropped.
pub struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        // No --wait (see crate::helm): deleting the namespace waits for its pods.
        let _ = helm(&["uninstall", RELEASE, "--namespace", NS]);
        let _ = kubectl(&[
            "delete",
            "namespace",
            NS,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=180s",
        ]);
    }
}

/// Installs ours ([`install::install`]) and Kanister's chart, and waits until Kanister's
/// controller rewrote its CRDs and ours relaxed the deferPhase node again.
pub async fn install() -> Installed {
    install::install().await;
    let client = real::client().await;
    let version = relaxed_version(&client).await;
    if helm(&["status", RELEASE, "--namespace", NS]).is_err() {
        let chart = chart();
        helm(&[
            "install",
            RELEASE,
            chart.to_str().unwrap(),
            "--namespace",
            NS,
            "--create-namespace",
            // Kanister's CRDs are already here (kubectl-applied by our install): Helm 4's
            // server-side apply of the chart's crds/ conflicts with them, its client-side
            // install leaves CRDs that exist alone, as Helm 3 did.
            "--server-side=false",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_dir_all(&chart).unwrap();
        rewritten_then_relaxed(&client, &version).await;
    }
    // Kanister's chart no longer binds `edit` cluster-wide: its users grant the controller
    // `edit` in each application's namespace (Kanister's docs/rbac.rst), here its own.
    apply_yaml(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: kanister-edit, namespace: {NS}}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}\n\
         subjects: [{{kind: ServiceAccount, name: {DEPLOYMENT}, namespace: {NS}}}]\n"
    ))
    .expect("the RoleBinding for Kanister's controller");
    let pod = kanister_pod(None).await;
    let images = kubectl(&[
        "get",
        "pod",
        "-n",
        NS,
        &pod,
        "-o",
        "jsonpath={.spec.containers[*].image}",
    ])
    .unwrap();
    assert_eq!(images, IMAGE, "the chart runs the image built here");
    Installed
}

/// Kanister's controller pod once it is Ready (and is not `old`).
async fn kanister_pod(old: Option<&str>) -> String {
    let ready = support::poll(real::WAIT, || async {
        let pods = get_json(&["get", "pods", "-n", NS, "-l", "app=kanister-operator"]);
        pods["items"].as_array()?.iter().find_map(|p| {
            let name = p["metadata"]["name"].as_str()?;
            let is_ready = p["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (is_ready && Some(name) != old && p["metadata"]["deletionTimestamp"].is_null())
                .then(|| name.to_string())
        })
    })
    .await;
    ready.unwrap_or_else(|e| {
        let pods = kubectl(&["get", "pods", "-n", NS, "-o", "wide"]).unwrap_or_default();
        let events = kubectl(&["get", "events", "-n", NS]).unwrap_or_default();
        let logs =
            kubectl(&["logs", "-n", NS, &format!("deployment/{DEPLOYMENT}")]).unwrap_or_default();
        panic!("Kanister's controller is not Ready: {e}\n{pods}\n{events}\n{logs}")
    })
}

fn plan(crd: &CustomResourceDefinition) -> Plan {
    kanister_crd::plan(&serde_json::to_value(crd).unwrap())
}

/// Waits until Kanister's Blueprint CRD has the relaxed deferPhase node; its resourceVersion.
async fn relaxed_version(client: &Client) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = support::wait_for(&crds, kanister_crd::CRD_NAME, real::WAIT, |crd| {
        plan(crd) == Plan::Relaxed
    })
    .await
    .expect("our controller relaxes Kanister's Blueprint CRD");
    crd.metadata.resource_version.unwrap()
}

/// Watches Kanister's Blueprint CRD from `version` (relaxed) until Kanister's controller has
/// written it typed again and ours has relaxed it after that.
async fn rewritten_then_relaxed(client: &Client, version: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params =
        WatchParams::default().fields(&format!("metadata.name={}", kanister_crd::CRD_NAME));
    let mut typed = false;
    let seen = tokio::time::timeout(real::WAIT, async {
        let mut events = Box::pin(crds.watch(&params, version).await.expect("watch the CRD"));
        while let Some(event) = events.try_next().await.expect("a CRD watch event") {
            match event {
                WatchEvent::Modified(crd) if plan(&crd) == Plan::Relaxed && typed => return,
                WatchEvent::Modified(crd) if plan(&crd) != Plan::Relaxed => typed = true,
                WatchEvent::Error(e) => panic!("watching the CRD: {e:?}"),
                _ => {}
            }
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "{}",
        if typed {
            "Kanister's controller rewrote its Blueprint CRD, ours did not relax it again"
        } else {
            "Kanister's controller did not rewrite its Blueprint CRD"
        }
    );
}

/// A PVC of the node's default StorageClass (a hostPath volume on this machine).
async fn pvc(client: &Client, name: &str) -> PathBuf {
    apply_yaml(&format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}, namespace: {NS}}}\n\
         spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Mi}}}}}}\n"
    ))
    .unwrap();
    let pvcs: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), NS);
    let bound = support::wait_for(&pvcs, name, real::WAIT, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    })
    .await
    .expect("the PVC is bound");
    let pv = bound.spec.unwrap().volume_name.unwrap();
    let pv = get_json(&["get", "pv", &pv]);
    PathBuf::from(pv["spec"]["hostPath"]["path"].as_str().unwrap())
}

/// The lines of `file` in the volume at `dir` (the node is this machine).
fn lines(dir: &std::path::Path, file: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A Blueprint in Kanister's namespace whose `backup` appends `<options.line> phase <pod>` and
/// then, in its deferPhase, `<options.line> defer <pod>` to `/data/lines` on the PVC `claim`
/// (the pod's name makes every line written distinct, a phase run twice included).
fn appending_blueprint(name: &str, claim: &str) -> String {
    let phase = |name: &str, word: &str| {
        json!({
            "func": "KubeTask",
            "name": name,
            "args": {
                "namespace": NS,
                "image": tools_image(),
                "command": ["bash", "-c", format!("echo \"{{{{ .Options.line }}}} {word} $HOSTNAME\" >> /data/lines")],
                "podOverride": {
                    "containers": [{"name": "container", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
                },
            },
        })
    };
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "Blueprint",
        "metadata": {"name": name, "namespace": NS},
        "actions": {"backup": {"phases": [phase("append", "phase")], "deferPhase": phase("defer", "defer")}},
    })
    .to_string()
}

/// An ActionSet of `blueprint`'s backup whose line is its own name; labelled ours or not.
fn actionset(name: &str, blueprint: &str, ours: bool) -> Value {
    let mut a = json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "ActionSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"actions": [{
            "name": "backup", "blueprint": blueprint,
            "object": {"kind": "Namespace", "name": NS},
            "options": {"line": name},
        }]},
    });
    if ours {
        a["metadata"]["labels"] = json!({"blueprint-operator.io/executor": "blueprint-operator"});
    }
    a
}

/// Creates every object of `objects` with one `kubectl create`.
fn create_all(objects: &[Value]) {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let file = std::env::temp_dir().join(format!("bpo-real-kanister-{}.json", std::process::id()));
    std::fs::write(&file, list.to_string()).unwrap();
    kubectl(&["create", "-f", file.to_str().unwrap()]).expect("create the ActionSets");
    std::fs::remove_file(&file).unwrap();
}

/// Waits until every ActionSet of `names` is complete or failed; returns them by name.
async fn ended(names: &[String]) -> Vec<Value> {
    let done = support::poll(real::WAIT * 3, || async {
        let all = get_json(&["get", "actionsets.cr.kanister.io", "-n", NS]);
        let mine: Vec<Value> = all["items"]
            .as_array()?
            .iter()
            .filter(|a| names.iter().any(|n| a["metadata"]["name"] == n.as_str()))
            .cloned()
            .collect();
        let over = |a: &Value| matches!(a["status"]["state"].as_str(), Some("complete" | "failed"));
        (mine.len() == names.len() && mine.iter().all(over)).then_some(mine)
    })
    .await;
    done.unwrap_or_else(|e| {
        let list = kubectl(&["get", "actionsets.cr.kanister.io", "-n", NS]).unwrap_or_default();
        panic!("the ActionSets did not end: {e}\n{list}")
    })
}

/// The Events of Kanister's namespace, by the ActionSet they are about: (component, reason).
fn events_by_actionset() -> std::collections::BTreeMap<String, Vec<(String, String)>> {
    let events = get_json(&["get", "events", "-n", NS]);
    let mut by = std::collections::BTreeMap::<String, Vec<(String, String)>>::new();
    for e in events["items"].as_array().into_iter().flatten() {
        if e["involvedObject"]["kind"] != "ActionSet" {
            continue;
        }
        let component = e["source"]["component"]
            .as_str()
            .filter(|c| !c.is_empty())
            .or(e["reportingComponent"].as_str())
            .unwrap_or_default();
        by.entry(
            e["involvedObject"]["name"]
                .as_str()
                .unwrap_or_default()
                .into(),
        )
        .or_default()
        .push((
            component.into(),
            e["reason"].as_str().unwrap_or_default().into(),
        ));
    }
    by
}

/// The phase names (deferPhases' too) that a Blueprint uses more than once, across its actions.
fn repeated_phase_names(bp: &Value) -> Vec<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for a in bp["actions"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, a)| a)
    {
        let phases = a["phases"].as_array().into_iter().flatten();
        for p in phases.chain(a.get("deferPhase").filter(|d| d.is_object())) {
            *seen
                .entry(p["name"].as_str().unwrap_or_default().to_string())
                .or_default() += 1;
        }
    }
    seen.into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(k, _)| k)
        .collect()
}

/// The keys of our annotations, labels and finalizers on the ActionSet `a`.
fn our_markers(a: &Value) -> Vec<String> {
    let meta = &a["metadata"];
    let keys = ["annotations", "labels"].iter().flat_map(|m| {
        meta[m]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
    });
    let finalizers = meta["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_string));
    keys.chain(finalizers)
        .filter(|k| k.starts_with(OUR_PREFIX))
        .collect()
}

/// Asserts that Kanister's controller alone ran each ActionSet of `names` to completion:
/// Kanister's `Started Action`, no Event of ours and none of our markers.
fn run_by_kanister_alone(names: &[String], actionsets: &[Value]) {
    let events = events_by_actionset();
    for a in actionsets {
        let name = a["metadata"]["name"].as_str().unwrap();
        assert_eq!(a["status"]["state"], "complete", "{name}: {a:#}");
        assert!(our_markers(a).is_empty(), "{name}: {:?}", our_markers(a));
        let seen = events.get(name).cloned().unwrap_or_default();
        assert!(
            seen.iter()
                .any(|(c, r)| c == KANISTER_COMPONENT && r == "Started Action"),
            "{name}: {seen:?}"
        );
        assert!(
            seen.iter().all(|(c, _)| c == KANISTER_COMPONENT),
            "{name}: an Event not from Kanister's controller: {seen:?}"
        );
    }
    assert_eq!(actionsets.len(), names.len());
}

/// Asserts that the file's lines are those of `runs` (an options line and how many ActionSets
/// ran with it): each ActionSet's phase line and deferPhase line once, and every line distinct.
fn every_line_once(dir: &std::path::Path, runs: &[(String, usize)]) {
    let found = lines(dir, "lines");
    let distinct: std::collections::BTreeSet<&String> = found.iter().collect();
    assert_eq!(distinct.len(), found.len(), "a line twice: {found:#?}");
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for l in &found {
        // `<options.line> <phase|defer> <pod>`
        let key = l.rsplit_once(' ').map_or(l.as_str(), |(k, _)| k);
        *counts.entry(key.to_string()).or_default() += 1;
    }
    let expected: std::collections::BTreeMap<String, usize> = runs
        .iter()
        .flat_map(|(line, n)| [(format!("{line} phase"), *n), (format!("{line} defer"), *n)])
        .collect();
    assert_eq!(counts, expected, "the file's lines: {found:#?}");
    for (line, n) in runs {
        if *n == 1 {
            let at = |word: &str| {
                found
                    .iter()
                    .position(|f| f.starts_with(&format!("{line} {word} ")))
            };
            assert!(
                at("phase") < at("defer"),
                "{line}: the deferPhase ran before the phase: {found:#?}"
            );
        }
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn kanister_alone_runs_the_unlabelled_actionsets_of_its_namespace() {
    let _kanister = install().await;
    let client = real::client().await;
    let dir = pvc(&client, "lines-alone").await;
    apply_yaml(&appending_blueprint("append-alone", "lines-alone"))
        .expect("the Blueprint is admitted by both webhooks");
    let names: Vec<String> = (0..10).map(|i| format!("alone-{i}")).collect();
    let sets: Vec<Value> = names
        .iter()
        .map(|n| actionset(n, "append-alone", false))
        .collect();
    create_all(&sets);
    let done = ended(&names).await;
    run_by_kanister_alone(&names, &done);
    let runs: Vec<(String, usize)> = names.iter().map(|n| (n.clone(), 1)).collect();
    every_line_once(&dir, &runs);
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn after_kanister_restarts_ours_relaxes_its_rewritten_crd_again() {
    let _kanister = install().await;
    let client = real::client().await;
    let version = relaxed_version(&client).await;
    let old = kanister_pod(None).await;
    kubectl(&["delete", "pod", "-n", NS, &old, "--wait=false"]).unwrap();
    // The new pod rewrites Kanister's CRDs as it starts (controller.updateCRDs).
    rewritten_then_relaxed(&client, &version).await;
    kanister_pod(Some(&old)).await;
    // A deferPhase written as a one-element list passes the API server's schema and both
    // webhooks (Kanister's answers from the new pod) and is stored as Kanister's object.
    let image = tools_image();
    apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: after-restart, namespace: {NS}}}\n\
         actions:\n  backup:\n    phases:\n    - {{func: KubeTask, name: dump, args: {{image: {image}, command: [bash, -c, 'true']}}}}\n    \
         deferPhase:\n    - {{func: KubeTask, name: cleanup, args: {{image: {image}, command: [bash, -c, 'true']}}}}\n"
    ))
    .unwrap_or_else(|e| panic!("a Blueprint with a deferPhase is refused: {e}"));
    let stored = get_json(&[
        "get",
        "blueprints.cr.kanister.io",
        "-n",
        NS,
        "after-restart",
    ]);
    assert_eq!(
        stored["actions"]["backup"]["deferPhase"]["name"], "cleanup",
        "{stored:#}"
    );
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn every_corpus_blueprint_passes_ours_and_kanisters_webhooks() {
    let _kanister = install().await;
    let client = real::client().await;
    // Kanister's webhook judges every Blueprint of the cluster (no namespace selector; the
    // API's default failure policy, Fail) ...
    let hook = get_json(&[
        "get",
        "validatingwebhookconfiguration",
        "blueprints.cr.kanister.io",
    ]);
    let hook = &hook["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail", "{hook:#}");
    assert!(
        hook["namespaceSelector"]
            .as_object()
            .is_none_or(|s| s.is_empty()),
        "{hook:#}"
    );
    // ... and answers: where ours is told to skip, Kanister's alone refuses an unknown function.
    let skipped = support::namespace(&client, "kanister-only").await;
    kubectl(&[
        "label",
        "namespace",
        &skipped,
        "blueprint-operator.io/webhook=skip",
    ])
    .unwrap();
    let refused = apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: bad, namespace: {skipped}}}\n\
         actions:\n  backup:\n    phases:\n    - {{func: NoSuchFunction, name: a}}\n"
    ))
    .expect_err("Kanister's webhook refuses an unknown function");
    assert!(
        refused.contains("blueprints.cr.kanister.io") && refused.contains("Invalid blueprint"),
        "{refused}"
    );

    // Every corpus Blueprint, as kubectl applies it (strict field validation), in Kanister's
    // namespace, where both webhooks judge it, and where Kanister's judges it alone. Kanister's
    // webhook refuses a phase name used twice in a Blueprint, across its actions too, which
    // two corpus Blueprints do (in both corpus folders); ours adds no refusal.
    let mut docs: Vec<Value> = support::corpus::blueprints()
        .into_iter()
        .enumerate()
        .map(|(i, (_, mut doc))| {
            // Names repeat across the corpus folders.
            doc["metadata"] = json!({"name": format!("corpus-{i}"), "namespace": NS});
            doc
        })
        .collect();
    assert!(docs.len() > 50, "the corpus has {} Blueprints", docs.len());
    let mut differ = Vec::new();
    let mut refused = Vec::new();
    for doc in &docs {
        let name = doc["metadata"]["name"].as_str().unwrap().to_string();
        let both = apply_yaml(&doc.to_string());
        let mut alone = doc.clone();
        alone["metadata"]["namespace"] = json!(skipped);
        let kanister_alone = apply_yaml(&alone.to_string());
        if both.is_ok() != kanister_alone.is_ok() {
            differ.push(format!(
                "{name}: with ours {both:?}, Kanister's alone {kanister_alone:?}"
            ));
        }
        let repeated = repeated_phase_names(doc);
        match both {
            Ok(_) => assert!(
                repeated.is_empty(),
                "{name}: accepted with {repeated:?} repeated"
            ),
            Err(e) => {
                assert!(
                    !repeated.is_empty() && e.contains("Duplicated phase name is not allowed"),
                    "{name}: {e}"
                );
                refused.push(name);
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert_eq!(refused.len(), 4, "{refused:?}");
    docs.retain(|d| !refused.iter().any(|r| d["metadata"]["name"] == r.as_str()));
    kubectl(&["delete", "namespace", &skipped, "--wait=false"]).unwrap();

    // A deferPhase written as a one-element list and phases without names, which ours stores
    // in its normalized form.
    let image = tools_image();
    let task = |name: Option<&str>| {
        let mut p = json!({"func": "KubeTask", "args": {"image": image, "command": ["bash", "-c", "true"]}});
        if let Some(n) = name {
            p["name"] = json!(n);
        }
        p
    };
    let bp = |name: &str, backup: Value| {
        json!({"apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
               "metadata": {"name": name, "namespace": NS}, "actions": {"backup": backup}})
    };
    docs.push(bp(
        "defer-list",
        json!({"phases": [task(Some("dump"))], "deferPhase": [task(Some("cleanup"))]}),
    ));
    docs.push(bp(
        "unnamed",
        json!({"phases": [task(None), task(None)], "deferPhase": task(None)}),
    ));
    for doc in &docs[docs.len() - 2..] {
        apply_yaml(&doc.to_string()).unwrap_or_else(|e| panic!("{}: {e}", doc["metadata"]["name"]));
    }
    let stored = get_json(&["get", "blueprints.cr.kanister.io", "-n", NS]);
    let stored = stored["items"].as_array().unwrap();
    for doc in &docs {
        let name = &doc["metadata"]["name"];
        let b = stored
            .iter()
            .find(|b| b["metadata"]["name"] == *name)
            .unwrap_or_else(|| panic!("{name} is not stored"));
        for (action, a) in b["actions"].as_object().unwrap() {
            for p in a["phases"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(a.get("deferPhase"))
            {
                assert!(
                    p["name"].as_str().is_some_and(|n| !n.is_empty()),
                    "{name}: {action}: a phase without a name: {p}"
                );
            }
        }
    }
    let find = |name: &str| {
        stored
            .iter()
            .find(|b| b["metadata"]["name"] == name)
            .unwrap()
    };
    let list = &find("defer-list")["actions"]["backup"];
    assert_eq!(list["deferPhase"]["name"], "cleanup", "{list:#}");
    let unnamed = &find("unnamed")["actions"]["backup"];
    assert_eq!(unnamed["phases"][0]["name"], "phase0", "{unnamed:#}");
    assert_eq!(unnamed["phases"][1]["name"], "phase1", "{unnamed:#}");
    assert_eq!(unnamed["deferPhase"]["name"], "deferPhase", "{unnamed:#}");
}

/// Asserts that ours alone ran each ActionSet of `actionsets`, claimed `by` (the admission
/// webhook or the scheduler): our claim and record annotations, and no `Started Action` or
/// `Started Phase` of Kanister's (its controller still records `Update Complete` on any
/// ActionSet of its namespace that turns complete).
fn run_by_ours(actionsets: &[Value], by: &str) {
    let events = events_by_actionset();
    for a in actionsets {
        let name = a["metadata"]["name"].as_str().unwrap();
        assert_eq!(a["status"]["state"], "complete", "{name}: {a:#}");
        let annotations = &a["metadata"]["annotations"];
        assert_eq!(
            annotations[ANNOTATION_CLAIMED], by,
            "{name}: {annotations:#}"
        );
        assert!(
            annotations[ANNOTATION_EXECUTOR_RECORD].is_string(),
            "{name}: no record of ours: {annotations:#}"
        );
        let seen = events.get(name).cloned().unwrap_or_default();
        assert!(
            !seen
                .iter()
                .any(|(c, r)| c == KANISTER_COMPONENT
                    && (r == "Started Action" || r == "Started Phase")),
            "{name}: Kanister's controller ran it too: {seen:?}"
        );
    }
}

/// At least `runs` runs of an ActionSchedule every 2 s, with 20 labelled and 10 unlabelled
/// ActionSets of the same Blueprint created among them, in Kanister's namespace; with `restart`
/// the leader of our controllers is deleted as they start.
async fn ours_and_kanisters_side_by_side(tag: &str, runs: usize, restart: bool) {
    let _kanister = install().await;
    let client = real::client().await;
    let claim = format!("lines-{tag}");
    let blueprint = format!("append-{tag}");
    let dir = pvc(&client, &claim).await;
    apply_yaml(&appending_blueprint(&blueprint, &claim)).unwrap();
    let schedule = format!("every-{tag}");
    apply_yaml(&format!(
        "apiVersion: blueprint-operator.io/v1alpha1\nkind: ActionSchedule\nmetadata: {{name: {schedule}, namespace: {NS}}}\n\
         spec:\n  schedule: '@every 2s'\n  actionSetTemplate:\n    actions:\n    - name: backup\n      blueprint: {blueprint}\n      \
         object: {{kind: Namespace, name: {NS}}}\n      options: {{line: {schedule}}}\n  \
         retention: {{keepLast: 1000, keepFailed: 1000}}\n"
    ))
    .expect("the ActionSchedule is admitted");
    let runs_of = || {
        let list = get_json(&[
            "get",
            "actionsets.cr.kanister.io",
            "-n",
            NS,
            "-l",
            &format!("blueprint-operator.io/schedule={schedule}"),
        ]);
        list["items"].as_array().cloned().unwrap_or_default()
    };
    let at_least = |n: usize| {
        let runs_of = &runs_of;
        support::poll(real::WAIT * 5, move || async move {
            (runs_of().len() >= n).then_some(())
        })
    };
    // Halfway through the runs, the ActionSets, and with `restart` the deletion of our
    // executor's leader while they and the schedule's runs are under way.
    at_least(runs / 2).await.expect("half the runs");
    let ours: Vec<String> = (0..20).map(|i| format!("{tag}-ours-{i}")).collect();
    let theirs: Vec<String> = (0..10).map(|i| format!("{tag}-theirs-{i}")).collect();
    let sets: Vec<Value> = ours
        .iter()
        .map(|n| actionset(n, &blueprint, true))
        .chain(theirs.iter().map(|n| actionset(n, &blueprint, false)))
        .collect();
    create_all(&sets);
    let old_leader = restart.then(|| {
        let old = crate::restart::leader().expect("a controller of ours holds the executor Lease");
        kubectl(&["delete", "pod", "-n", install::NS, &old, "--wait=false"]).unwrap();
        old
    });
    at_least(runs).await.expect("the runs");
    kubectl(&[
        "patch",
        "actionschedules",
        "-n",
        NS,
        &schedule,
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ])
    .unwrap();
    // Suspended: the runs made so far are all there will be, once the suspension is observed.
    support::poll(real::WAIT, || async {
        let s = get_json(&["get", "actionschedules", "-n", NS, &schedule]);
        (s["status"]["observedGeneration"] == s["metadata"]["generation"]).then_some(())
    })
    .await
    .expect("the suspension is observed");
    let scheduled: Vec<String> = runs_of()
        .iter()
        .map(|a| a["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(scheduled.len() >= runs, "{scheduled:?}");
    let all: Vec<String> = scheduled
        .iter()
        .chain(&ours)
        .chain(&theirs)
        .cloned()
        .collect();
    let done = ended(&all).await;
    let named = |names: &[String]| -> Vec<Value> {
        done.iter()
            .filter(|a| names.iter().any(|n| a["metadata"]["name"] == n.as_str()))
            .cloned()
            .collect()
    };
    run_by_ours(&named(&scheduled), "schedule");
    run_by_ours(&named(&ours), "admission");
    run_by_kanister_alone(&theirs, &named(&theirs));
    if let Some(old) = old_leader {
        let new = crate::restart::leader().expect("a controller of ours holds the executor Lease");
        assert_ne!(new, old, "another replica of ours took over");
    }
    let mut lines: Vec<(String, usize)> =
        ours.iter().chain(&theirs).map(|n| (n.clone(), 1)).collect();
    lines.push((schedule.clone(), scheduled.len()));
    every_line_once(&dir, &lines);
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn ours_and_kanisters_actionsets_each_run_once_by_their_controller() {
    ours_and_kanisters_side_by_side("mixed", 50, false).await;
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn ours_and_kanisters_actionsets_each_run_once_across_a_restart_of_ours() {
    ours_and_kanisters_side_by_side("restart", 50, true).await;
}
