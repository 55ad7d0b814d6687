//! The ActionSet executor end to end: the real `blueprint-operator controller`
//! binary (a child process, one per test, watching the test's namespace)
//! against the test control plane, where kwok runs pods and the pod
//! annotations from `support::kwok_annotations` choose exit code and log.
//! The controller runs as its ServiceAccount of manifests/ (support::rbac).

use crate::support;

use std::time::Duration;

use crate::support::controller::{Controller, setup};
use crate::support::kanister::{
    self, action, create_actionset, create_blueprint, deployment_object, events, kube_task,
    list_events, merged, namespace_object, out_line, reasons, states,
};
use blueprint_operator::model::{ActionSet, State};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// Bound for an ActionSet to finish (pods on kwok take a few seconds each).
const FINISH: Duration = Duration::from_secs(180);

/// The controller for `ns` (see [`Controller::start_with`]); a deleted ActionSet's deferPhase
/// gets 120 s, not the default 600, so that a deletion that waits it out ends within `FINISH`.
fn controller(ns: &str, extra: &[&str], env: &[(&str, &str)]) -> Controller {
    Controller::start_with(ns, &[&["--deletion-timeout", "120"], extra].concat(), env)
}

/// A KubeTask phase whose pod exits with `exit` after printing `log`
/// (optionally staying Running for `duration`, a Go duration).
fn task(name: &str, exit: i32, log: &str, duration: Option<&str>) -> Value {
    let mut ann = json!(support::kwok_annotations(exit, log));
    if let Some(d) = duration {
        ann[support::kwok::DURATION] = json!(d);
    }
    kube_task(name, ann)
}

/// A phase that prints `kando output value <v>`.
fn output(name: &str, v: &str) -> Value {
    task(name, 0, &out_line("value", v), None)
}

/// deferPhase `cleanup`: KubeOps creates ConfigMap `cm` with `data` (YAML lines at the end of
/// its manifest), as the controller's ServiceAccount (`support::rbac::grant_configmap_create`).
fn create_cm_defer(ns: &str, cm: &str, data: &str) -> Value {
    let spec = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {cm}\n  namespace: {ns}\n{data}"
    );
    json!({"func": "KubeOps", "name": "cleanup",
        "args": {"operation": "create", "namespace": ns, "spec": spec}})
}

fn fail(name: &str) -> Value {
    task(name, 1, "exit 1", None)
}

/// Waits until phase `phase` of the first action of ActionSet `as` runs.
async fn wait_phase_running(api: &Api<ActionSet>, phase: usize) -> anyhow::Result<()> {
    support::wait_for(api, "as", FINISH, |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.actions[0].phases[phase].state == State::Running)
    })
    .await?;
    Ok(())
}

/// Creates ActionSet `as` (action `backup` of Blueprint `bp` on the namespace) and waits until
/// its phase `phase` runs.
async fn start_backup_until_phase_runs(
    client: &Client,
    ns: &str,
    phase: usize,
) -> anyhow::Result<Api<ActionSet>> {
    create_actionset(
        client,
        ns,
        "as",
        action("backup", "bp", namespace_object(ns)),
    )
    .await?;
    let api = Api::namespaced(client.clone(), ns);
    wait_phase_running(&api, phase).await?;
    Ok(api)
}

/// The four outcomes of main phases x deferPhase, with status and Events.
#[tokio::test]
async fn defer_scenarios_status_and_events() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-defer").await else {
        return Ok(());
    };
    let arts = json!({
        "mainOut": {"keyValue": {"op": "{{ .Phases.backupPhaseOne.Output.value }}"}},
        "deferOut": {"keyValue": {"op": "{{ .DeferPhase.Output.value }}"}},
    });
    let mk = |two: Value, defer: Value| {
        json!({"backup": {
            "phases": [output("backupPhaseOne", "mainValue"), two],
            "deferPhase": defer,
            "outputArtifacts": arts,
        }})
    };
    // The deferPhase of "ok-ok" stays Running a little, to observe that the
    // ActionSet is still running while its deferPhase runs.
    let slow_defer = task(
        "deferPhase",
        0,
        &out_line("value", "deferValue"),
        Some("4s"),
    );
    create_blueprint(
        &client,
        &ns,
        "ok-ok",
        mk(output("backupPhaseTwo", "mainValueTwo"), slow_defer),
    )
    .await?;
    create_blueprint(
        &client,
        &ns,
        "err-ok",
        mk(fail("backupPhaseTwo"), output("deferPhase", "deferValue")),
    )
    .await?;
    create_blueprint(
        &client,
        &ns,
        "ok-err",
        mk(output("backupPhaseTwo", "mainValueTwo"), fail("deferPhase")),
    )
    .await?;
    create_blueprint(
        &client,
        &ns,
        "err-err",
        mk(fail("backupPhaseTwo"), fail("deferPhase")),
    )
    .await?;
    let _ctl = controller(&ns, &[], &[]);
    for bp in ["ok-ok", "err-ok", "ok-err", "err-err"] {
        create_actionset(
            &client,
            &ns,
            bp,
            action("backup", bp, namespace_object(&ns)),
        )
        .await?;
    }

    // While the deferPhase runs, it shows running and the ActionSet is still running.
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    support::wait_for(&api, "ok-ok", FINISH, |a| {
        a.state() == Some(State::Running)
            && a.status.as_ref().is_some_and(|s| {
                s.actions[0].defer_phase.state == State::Running
                    && s.progress.running_phase == "deferPhase"
            })
    })
    .await?;

    // main ok, defer ok
    let a = support::wait_actionset_done(&client, &ns, "ok-ok", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(s.error.message, "");
    assert_eq!(states(&a), (vec![State::Complete; 2], State::Complete));
    assert_eq!(
        s.actions[0].artifacts["mainOut"].key_value["op"],
        "mainValue"
    );
    assert_eq!(
        s.actions[0].artifacts["deferOut"].key_value["op"],
        "deferValue"
    );
    assert_eq!(s.actions[0].defer_phase.output["value"], "deferValue");
    assert!(
        !a.metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f.contains("defer-phase"))
    );
    let evs = events(&client, &ns, "ok-ok", 8).await?;
    assert_eq!(
        evs,
        [
            "Started Action|Executing action backup",
            "Started Phase|Executing phase backupPhaseOne",
            "Ended Phase|Completed phase backupPhaseOne",
            "Started Phase|Executing phase backupPhaseTwo",
            "Ended Phase|Completed phase backupPhaseTwo",
            "Started deferPhase|Executing deferPhase deferPhase",
            "Ended deferPhase|Completed deferPhase deferPhase",
            "Update Complete|Updated ActionSet 'ok-ok' Status->complete",
        ]
    );

    // main fails, defer ok
    let a = support::wait_actionset_done(&client, &ns, "err-ok", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(
        states(&a),
        (vec![State::Complete, State::Failed], State::Complete)
    );
    assert!(s.error.message.contains("exit"), "{}", s.error.message);
    assert!(
        !s.error.message.contains("deferPhase"),
        "{}",
        s.error.message
    );
    // Not rendered on failure (Kanister #1393).
    assert_eq!(
        s.actions[0].artifacts["deferOut"].key_value["op"],
        "{{ .DeferPhase.Output.value }}"
    );
    let evs = events(&client, &ns, "err-ok", 7).await?;
    assert_eq!(
        reasons(&evs),
        [
            "Started Action",
            "Started Phase",
            "Ended Phase",
            "Started Phase",
            "ActionSetFailed Action: backup",
            "Started deferPhase",
            "Ended deferPhase",
        ]
    );
    assert!(evs[4].contains("|Failed to execute phase: "), "{}", evs[4]);

    // main ok, defer fails
    let a = support::wait_actionset_done(&client, &ns, "ok-err", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(states(&a), (vec![State::Complete; 2], State::Failed));
    let evs = events(&client, &ns, "ok-err", 7).await?;
    assert_eq!(
        reasons(&evs),
        [
            "Started Action",
            "Started Phase",
            "Ended Phase",
            "Started Phase",
            "Ended Phase",
            "Started deferPhase",
            "ActionSetFailed Action: backup",
        ]
    );
    assert!(
        evs[6].contains("|Failed to execute defer phase: "),
        "{}",
        evs[6]
    );

    // both fail: the message keeps the main error and the defer error.
    let a = support::wait_actionset_done(&client, &ns, "err-err", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(
        states(&a),
        (vec![State::Complete, State::Failed], State::Failed)
    );
    assert!(
        s.error
            .message
            .contains("; deferPhase deferPhase also failed: "),
        "{}",
        s.error.message
    );
    let evs = events(&client, &ns, "err-err", 7).await?;
    assert_eq!(
        reasons(&evs),
        [
            "Started Action",
            "Started Phase",
            "Ended Phase",
            "Started Phase",
            "ActionSetFailed Action: backup",
            "Started deferPhase",
            "ActionSetFailed Action: backup",
        ]
    );
    Ok(())
}

/// Kanister's TestDeferPhase: deferPhase output as an artifact, consumed by
/// a restore ActionSet.
#[tokio::test]
async fn defer_output_artifact_consumed_by_restore() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-artifact").await else {
        return Ok(());
    };
    support::create_deployment(&client, &ns, "app", 1).await?;
    let consume = task(
        "restorePhase",
        0,
        &format!(
            "{}\n{}\n{}",
            out_line("one", "{{ .ArtifactsIn.mainPhaseOutputOne.KeyValue.op }}"),
            out_line("two", "{{ .ArtifactsIn.mainPhaseOutputTwo.KeyValue.op }}"),
            out_line("defer", "{{ .ArtifactsIn.deferPhaseOutput.KeyValue.op }}"),
        ),
        None,
    );
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({
            "backup": {
                "phases": [output("backupPhaseOne", "mainValue"), output("backupPhaseTwo", "mainValueTwo")],
                "deferPhase": output("deferPhase", "deferValue"),
                "outputArtifacts": {
                    "mainPhaseOutputOne": {"keyValue": {"op": "{{ .Phases.backupPhaseOne.Output.value }}"}},
                    "mainPhaseOutputTwo": {"keyValue": {"op": "{{ .Phases.backupPhaseTwo.Output.value }}"}},
                    "deferPhaseOutput": {"keyValue": {"op": "{{ .DeferPhase.Output.value }}"}},
                },
            },
            "restore": {
                "inputArtifactNames": ["mainPhaseOutputOne", "mainPhaseOutputTwo", "deferPhaseOutput"],
                "phases": [consume],
            },
        }),
    )
    .await?;
    let _ctl = controller(&ns, &[], &[]);
    create_actionset(
        &client,
        &ns,
        "backup",
        action("backup", "bp", deployment_object(&ns, "app")),
    )
    .await?;
    let backup = support::wait_actionset_done(&client, &ns, "backup", FINISH).await?;
    let s = backup.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{:?}", s.error);
    let arts = s.actions[0].artifacts.clone();
    assert_eq!(arts["mainPhaseOutputOne"].key_value["op"], "mainValue");
    assert_eq!(arts["mainPhaseOutputTwo"].key_value["op"], "mainValueTwo");
    assert_eq!(arts["deferPhaseOutput"].key_value["op"], "deferValue");

    create_actionset(
        &client,
        &ns,
        "restore",
        merged(
            action("restore", "bp", deployment_object(&ns, "app")),
            json!({"artifacts": json!(arts)}),
        ),
    )
    .await?;
    let restore = support::wait_actionset_done(&client, &ns, "restore", FINISH).await?;
    let s = restore.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{:?}", s.error);
    let out = &s.actions[0].phases[0].output;
    assert_eq!(
        Value::Object(out.clone()),
        json!({"one": "mainValue", "two": "mainValueTwo", "defer": "deferValue"})
    );
    Ok(())
}

/// Restore use case: scale to 0, a failing restore phase, the deferPhase
/// scales back to the original replicas.
#[tokio::test]
async fn failed_restore_scales_the_deployment_back() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-restore").await else {
        return Ok(());
    };
    support::create_deployment(&client, &ns, "db", 2).await?;
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"restore": {
            "phases": [
                {"func": "ScaleWorkload", "name": "scaleDown", "args": {"replicas": 0}},
                fail("restoreData"),
            ],
            "deferPhase": {"func": "ScaleWorkload", "name": "scaleUp",
                "args": {"replicas": "{{ .Phases.scaleDown.Output.originalReplicaCount }}"}},
        }}),
    )
    .await?;
    let _ctl = controller(&ns, &[], &[]);
    create_actionset(
        &client,
        &ns,
        "restore",
        action("restore", "bp", deployment_object(&ns, "db")),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "restore", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(
        states(&a),
        (vec![State::Complete, State::Failed], State::Complete)
    );
    assert_eq!(
        s.actions[0].phases[0].output["originalReplicaCount"],
        json!(2)
    );
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let d = deploys.get("db").await?;
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(2));
    Ok(())
}

/// Names of the pods ever created in `ns` with label `selector`, collected by a watch from now
/// until the returned task is aborted (a pod created and deleted between two polls counts too).
async fn pods_created(
    client: &Client,
    ns: &str,
    selector: &str,
) -> anyhow::Result<(
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    tokio::task::JoinHandle<()>,
)> {
    use futures::StreamExt as _;
    use kube::runtime::watcher;
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let s = seen.clone();
    let labels = selector.to_string();
    let task = tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        let mut stream = watcher(api, watcher::Config::default().labels(&labels)).boxed();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::InitDone) => {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => {
                    s.lock()
                        .unwrap()
                        .insert(p.metadata.name.clone().unwrap_or_default());
                }
                _ => {}
            }
        }
    });
    tokio::time::timeout(support::WAIT, ready_rx).await??;
    Ok((seen, task))
}

/// SIGKILL the controller while a KubeTask phase's pod runs; a new controller re-attaches to
/// that pod: the phase completes with the pod's output, the pod is created once, the
/// later phase and the deferPhase run once, and the ActionSet completes.
#[tokio::test]
async fn controller_killed_mid_phase_reattaches_to_its_pod() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill").await else {
        return Ok(());
    };
    // KubeOps creates what the shipped RBAC does not grant: granted as the README says.
    support::rbac::grant_configmap_create(&client).await?;
    // The deferPhase creates a ConfigMap: a second run would fail (AlreadyExists).
    let data = "data:\n  first: '{{ .Phases.first.Output.value }}'\n  slow: '{{ .Phases.slow.Output.value }}'\n  state: '{{ .Outcome.State }}'\n";
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [
                output("first", "v1"),
                task("slow", 0, &out_line("value", "slow-out"), Some("15s")),
                output("after", "x"),
            ],
            "deferPhase": create_cm_defer(&ns, "defer-ran", data),
        }}),
    )
    .await?;
    let (slow_pods, watch) = pods_created(&client, &ns, "blueprint-operator.io/phase=0.1").await?;
    let ctl = controller(&ns, &[], &[]);
    let api = start_backup_until_phase_runs(&client, &ns, 1).await?;
    let uid = api.get("as").await?.metadata.uid.unwrap_or_default();
    // The slow phase's pod, recorded in the ActionSet.
    let slow = support::recorded_phase_pod(&client, &ns, "as", 1).await?;
    ctl.kill().await;
    let a = api.get("as").await?;
    assert_eq!(a.state(), Some(State::Running));
    let _ctl2 = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(states(&a), (vec![State::Complete; 3], State::Complete));
    assert_eq!(s.actions[0].phases[1].output["value"], json!("slow-out"));
    watch.abort();
    assert_eq!(
        *slow_pods.lock().unwrap(),
        std::collections::BTreeSet::from([slow.clone()]),
        "the slow phase's pod was created once"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    // The deferPhase saw the main phases' output and their outcome.
    let data = cms.get("defer-ran").await?.data.unwrap_or_default();
    assert_eq!(data["first"], "v1");
    assert_eq!(data["slow"], "slow-out");
    assert_eq!(data["state"], "complete");
    let evs = events(&client, &ns, "as", 10).await?;
    let r = reasons(&evs);
    let count = |reason: &str| r.iter().filter(|x| **x == reason).count();
    assert_eq!(count("Started deferPhase"), 1, "{evs:?}");
    assert_eq!(count("Started Phase"), 3, "{evs:?}");
    assert_eq!(count("Resumed Phase"), 1, "{evs:?}");
    assert!(
        evs.iter()
            .any(|e| e.contains("phase slow was running; re-attached to its pod")),
        "{evs:?}"
    );
    // Every pod of the run is deleted.
    support::poll(support::WAIT, || async {
        actionset_pods(&client, &ns, &uid)
            .await
            .is_empty()
            .then_some(())
    })
    .await?;
    Ok(())
}

/// SIGKILL the controller while a KubeTask deferPhase's pod runs: the new controller re-attaches
/// to it; the deferPhase starts once, ends with its output, and the ActionSet completes.
#[tokio::test]
async fn controller_killed_mid_defer_phase_reattaches_to_its_pod() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-defer").await else {
        return Ok(());
    };
    let defer = task("cleanup", 0, &out_line("value", "cleaned"), Some("15s"));
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {"phases": [output("first", "v1")], "deferPhase": defer}}),
    )
    .await?;
    let (defer_pods, watch) =
        pods_created(&client, &ns, "blueprint-operator.io/phase=0.defer").await?;
    let ctl = controller(&ns, &[], &[]);
    create_actionset(
        &client,
        &ns,
        "as",
        action("backup", "bp", namespace_object(&ns)),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    support::wait_for(&api, "as", FINISH, |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.actions[0].defer_phase.state == State::Running)
    })
    .await?;
    support::poll(support::WAIT, || async {
        raw_actionset(&client, &ns, "as").await.ok()?["metadata"]["annotations"]
            ["blueprint-operator.io/executor"]
            .as_str()
            .is_some_and(|r| r.contains("\"pods\""))
            .then_some(())
    })
    .await?;
    ctl.kill().await;
    let _ctl2 = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(s.actions[0].defer_phase.output["value"], json!("cleaned"));
    watch.abort();
    assert_eq!(
        defer_pods.lock().unwrap().len(),
        1,
        "the deferPhase's pod was created once"
    );
    let evs = events(&client, &ns, "as", 7).await?;
    let r = reasons(&evs);
    let count = |reason: &str| r.iter().filter(|x| **x == reason).count();
    assert_eq!(count("Started deferPhase"), 1, "{evs:?}");
    assert_eq!(count("Resumed deferPhase"), 1, "{evs:?}");
    assert_eq!(count("Ended deferPhase"), 1, "{evs:?}");
    Ok(())
}

/// The restart soak: an ActionSchedule ticks while the controller (executor and scheduler)
/// is SIGKILLed again and again, each time while a run's phase or deferPhase pod runs, and
/// restarted. Every run completes, and each run's phase pod and deferPhase pod are created
/// exactly once.
#[tokio::test]
async fn schedule_runs_complete_while_the_controller_is_killed_repeatedly() -> anyhow::Result<()> {
    use std::collections::BTreeMap;
    let Some((client, ns)) = setup("exec-soak").await else {
        return Ok(());
    };
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [task("dump", 0, &out_line("value", "d"), Some("4s"))],
            "deferPhase": task("cleanup", 0, "ok", Some("2s")),
        }}),
    )
    .await?;
    // Pod name -> (ActionSet UID, step) of every pod the runs create.
    let (seen, watch) = {
        use futures::StreamExt as _;
        use kube::runtime::watcher;
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let s = seen.clone();
        let task = tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            let cfg = watcher::Config::default().labels("blueprint-operator.io/phase");
            let mut stream = watcher(api, cfg).boxed();
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => {
                        let l = p.metadata.labels.clone().unwrap_or_default();
                        let key = (
                            l.get("blueprint-operator.io/actionset-uid").cloned(),
                            l.get("blueprint-operator.io/phase").cloned(),
                        );
                        s.lock()
                            .unwrap()
                            .insert(p.metadata.name.clone().unwrap_or_default(), key);
                    }
                    _ => {}
                }
            }
        });
        tokio::time::timeout(support::WAIT, ready_rx).await??;
        (seen, task)
    };
    let schedules: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "blueprint-operator.io",
            "v1alpha1",
            "ActionSchedule",
        )),
    );
    let schedule: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
        "metadata": {"name": "soak", "namespace": ns},
        "spec": {
            "schedule": "@every 5s",
            "actionSetTemplate": {"actions": [{
                "name": "backup", "blueprint": "bp", "object": namespace_object(&ns),
            }]},
            "retention": {"keepLast": 100, "keepFailed": 100},
        },
    }))?;
    schedules.create(&PostParams::default(), &schedule).await?;
    let runs = || async {
        let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
        api.list(&ListParams::default().labels("blueprint-operator.io/schedule=soak"))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    };
    let spawn = || Controller::spawn(&["--namespace", &ns, "--deletion-timeout", "120"], &[]);
    let mut ctl = spawn();
    // Each kill while another step's pod runs (recorded in its ActionSet): kills spread over
    // phases and deferPhases of several runs.
    let mut killed_during: Vec<String> = Vec::new();
    while killed_during.len() < 5 {
        let pod = support::poll(FINISH, || async {
            runs().await.iter().find_map(|a| {
                let record: Value =
                    serde_json::from_str(a.annotations().get("blueprint-operator.io/executor")?)
                        .ok()?;
                let pod = record["actions"][0]["pods"][0].as_str()?.to_string();
                (a.state() == Some(State::Running) && !killed_during.contains(&pod)).then_some(pod)
            })
        })
        .await?;
        ctl.kill().await;
        killed_during.push(pod);
        ctl = spawn();
    }
    schedules
        .patch(
            "soak",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await?;
    // Every run (a tick may land right before the suspend) ends.
    let all = support::poll(FINISH, || async {
        let v = runs().await;
        v.iter()
            .all(|a| a.state().is_some_and(State::is_terminal))
            .then_some(v)
    })
    .await?;
    drop(ctl);
    watch.abort();
    let failed: Vec<String> = all
        .iter()
        .filter(|a| a.state() != Some(State::Complete))
        .map(|a| {
            format!(
                "{}: {:?}",
                a.name_any(),
                a.status.as_ref().map(|s| &s.error.message)
            )
        })
        .collect();
    assert!(failed.is_empty(), "runs not complete: {failed:?}");
    assert!(all.len() >= 3, "{} runs", all.len());
    let seen = seen.lock().unwrap().clone();
    for a in &all {
        let uid = a.metadata.uid.clone();
        for step in ["0.0", "0.defer"] {
            let pods: Vec<&String> = seen
                .iter()
                .filter(|(_, (u, p))| *u == uid && p.as_deref() == Some(step))
                .map(|(n, _)| n)
                .collect();
            assert_eq!(
                pods.len(),
                1,
                "run {} step {step}: pods {pods:?}",
                a.name_any()
            );
        }
    }
    Ok(())
}

/// The ActionSet is deleted while no controller runs, its KubeTask phase's pod still running:
/// the new controller holds the deletion (finalizer), cancels the phase, deletes its pod, runs
/// the deferPhase once and lets the deletion finish.
#[tokio::test]
async fn deleted_while_the_controller_was_down_still_runs_defer() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-delete").await else {
        return Ok(());
    };
    slow_backup_with_cleanup(&client, &ns, "600s").await?;
    let ctl = controller(&ns, &[], &[]);
    let api = start_backup_until_phase_runs(&client, &ns, 0).await?;
    let uid = api.get("as").await?.metadata.uid.unwrap_or_default();
    support::poll(support::WAIT, || async {
        actionset_pods(&client, &ns, &uid).await.into_iter().next()
    })
    .await?;
    ctl.kill().await;
    api.delete("as", &DeleteParams::default()).await?;
    let _ctl2 = controller(&ns, &[], &[]);
    gone_after_cleanup(&client, &ns, &api).await?;
    support::poll(support::WAIT, || async {
        actionset_pods(&client, &ns, &uid)
            .await
            .is_empty()
            .then_some(())
    })
    .await?;
    let evs = events(&client, &ns, "as", 6).await?;
    let r = reasons(&evs);
    assert_eq!(
        r.iter().filter(|x| **x == "Started deferPhase").count(),
        1,
        "{evs:?}"
    );
    assert!(
        evs.iter()
            .any(|e| e.contains("execution cancelled: the ActionSet is being deleted")),
        "{evs:?}"
    );
    Ok(())
}

/// The pod of a running phase is deleted while no controller runs: the new controller fails the
/// phase with that reason instead of re-creating the pod, and runs the deferPhase.
#[tokio::test]
async fn pod_deleted_while_the_controller_was_down_fails_the_phase() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-gone").await else {
        return Ok(());
    };
    support::rbac::grant_configmap_create(&client).await?;
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [task("slow", 0, "done", Some("60s")), output("never", "x")],
            "deferPhase": create_cm_defer(&ns, "defer-ran", "data:\n  state: '{{ .Outcome.State }}'\n"),
        }}),
    )
    .await?;
    let ctl = controller(&ns, &[], &[]);
    let api = start_backup_until_phase_runs(&client, &ns, 0).await?;
    let uid = api.get("as").await?.metadata.uid.unwrap_or_default();
    let slow = support::recorded_phase_pod(&client, &ns, "as", 0).await?;
    ctl.kill().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.delete(&slow, &DeleteParams::default().grace_period(0))
        .await?;
    support::poll(support::WAIT, || async {
        pods.get_opt(&slow).await.ok()?.is_none().then_some(())
    })
    .await?;
    let _ctl2 = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(
        states(&a),
        (vec![State::Failed, State::Pending], State::Complete)
    );
    assert!(
        s.error.message.contains(&format!(
            "the controller restarted while this phase ran, and its pod {ns}/{slow} is gone"
        )),
        "{}",
        s.error.message
    );
    assert!(
        actionset_pods(&client, &ns, &uid).await.is_empty(),
        "not re-created"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let data = cms.get("defer-ran").await?.data.unwrap_or_default();
    assert_eq!(data["state"], "failed");
    Ok(())
}

/// A KubeExec phase (an exec stream: nothing to re-attach to) interrupted by a controller kill
/// fails clearly; the same phase in a Blueprint that declares it safe to re-run
/// (`blueprint-operator.io/rerun-on-restart`) is re-run once and the ActionSet completes.
#[tokio::test]
async fn controller_killed_mid_exec_fails_it_or_reruns_it_as_declared() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-exec").await else {
        return Ok(());
    };
    let target = support::running_deployment_pod(&client, &ns, "target").await?;
    // kwok runs exec'd commands on this machine (kwok-config.yaml.in): each run appends a line.
    let runs = |bp: &str| std::env::temp_dir().join(format!("bpo-{ns}-{bp}.runs"));
    for (bp, annotations) in [
        ("plain", json!({})),
        (
            "declared",
            json!({"blueprint-operator.io/rerun-on-restart": "other, dump"}),
        ),
    ] {
        let script = format!(
            "echo run >> {}; sleep 6; echo '{}'",
            runs(bp).display(),
            out_line("value", "dumped")
        );
        let actions = json!({"backup": {"phases": [{
            "func": "KubeExec", "name": "dump",
            "args": {"namespace": ns, "pod": target, "command": ["sh", "-c", script]},
        }]}});
        let metadata = json!({"name": bp, "annotations": annotations});
        kanister::create_blueprint_with(&client, &ns, metadata, actions).await?;
    }
    let ctl = controller(&ns, &[], &[]);
    for bp in ["plain", "declared"] {
        create_actionset(
            &client,
            &ns,
            bp,
            action("backup", bp, namespace_object(&ns)),
        )
        .await?;
    }
    let lines = |bp: &str| {
        std::fs::read_to_string(runs(bp))
            .unwrap_or_default()
            .lines()
            .count()
    };
    support::poll(support::WAIT, || async {
        (lines("plain") == 1 && lines("declared") == 1).then_some(())
    })
    .await?;
    ctl.kill().await;
    let _ctl2 = controller(&ns, &[], &[]);
    let plain = support::wait_actionset_done(&client, &ns, "plain", FINISH).await?;
    let s = plain.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(
        s.error.message,
        "controller restarted while phase dump was running; it was not re-run because it may not be idempotent"
    );
    let declared = support::wait_actionset_done(&client, &ns, "declared", FINISH).await?;
    let s = declared.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(s.actions[0].phases[0].output["value"], json!("dumped"));
    assert_eq!(lines("declared"), 2, "re-run exactly once");
    assert_eq!(lines("plain"), 1, "not re-run");
    for bp in ["plain", "declared"] {
        let _ = std::fs::remove_file(runs(bp));
    }
    let record = &raw_actionset(&client, &ns, "declared").await?["metadata"]["annotations"]["blueprint-operator.io/executor"];
    assert!(
        record
            .as_str()
            .unwrap_or_default()
            .contains("\"rerun\":[\"dump\"]"),
        "{record}"
    );
    // The killed controller's own Events may be lost with it: wait for the new one's three.
    let evs = events(&client, &ns, "declared", 3).await?;
    assert!(
        evs.iter().any(|e| e.starts_with(
            "Resumed Phase|Controller restarted while phase dump was running; re-running it once"
        )),
        "{evs:?}"
    );
    Ok(())
}

/// Deleting a running ActionSet cancels its phase, still runs the
/// deferPhase, then lets the deletion finish.
#[tokio::test]
async fn deleting_a_running_actionset_still_runs_defer() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-delete").await else {
        return Ok(());
    };
    slow_backup_with_cleanup(&client, &ns, "120s").await?;
    let _ctl = controller(&ns, &[], &[]);
    let api = start_backup_until_phase_runs(&client, &ns, 0).await?;
    api.delete("as", &DeleteParams::default()).await?;
    gone_after_cleanup(&client, &ns, &api).await?;
    let evs = events(&client, &ns, "as", 5).await?;
    let r = reasons(&evs);
    assert_eq!(
        r,
        [
            "Started Action",
            "Started Phase",
            "ActionSetFailed Action: backup",
            "Started deferPhase",
            "Ended deferPhase",
        ],
        "{evs:?}"
    );
    assert!(evs[2].contains("being deleted"), "{}", evs[2]);
    Ok(())
}

/// Blueprint `bp`: its backup phase is a KubeTask pod running for `duration`, its deferPhase
/// creates ConfigMap `cleaned` (KubeOps: granted as the README says, the shipped RBAC does not).
async fn slow_backup_with_cleanup(client: &Client, ns: &str, duration: &str) -> anyhow::Result<()> {
    support::rbac::grant_configmap_create(client).await?;
    create_blueprint(
        client,
        ns,
        "bp",
        json!({"backup": {
            "phases": [task("slow", 0, "done", Some(duration))],
            "deferPhase": create_cm_defer(ns, "cleaned", ""),
        }}),
    )
    .await
}

/// Waits until the deleted ActionSet `as` is gone; asserts its deferPhase ran (ConfigMap `cleaned`).
async fn gone_after_cleanup(client: &Client, ns: &str, api: &Api<ActionSet>) -> anyhow::Result<()> {
    support::poll(FINISH, || async {
        api.get_opt("as")
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    assert!(
        cms.get_opt("cleaned").await?.is_some(),
        "deferPhase did not run"
    );
    Ok(())
}

/// Pods (not being deleted) labelled with the ActionSet UID `uid`.
async fn actionset_pods(client: &Client, ns: &str, uid: &str) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let lp = ListParams::default().labels(&format!("blueprint-operator.io/actionset-uid={uid}"));
    match pods.list(&lp).await {
        Ok(l) => l
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.name)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A pod that runs until deleted, linked to ActionSet `as_ns/as_name` with `uid`.
async fn linked_pod(
    client: &Client,
    ns: &str,
    name: &str,
    uid: &str,
    as_ns: &str,
    as_name: &str,
) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {
                "createdBy": "kanister",
                "blueprint-operator.io/actionset-uid": uid,
                "blueprint-operator.io/actionset-namespace": as_ns,
            },
            "annotations": {"blueprint-operator.io/actionset": format!("{as_ns}/{as_name}")},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox:stable"}]},
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    Ok(())
}

async fn pod_exists(client: &Client, ns: &str, name: &str) -> bool {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    matches!(pods.get_opt(name).await, Ok(Some(p)) if p.metadata.deletion_timestamp.is_none())
}

/// Pods linked to an ActionSet are swept at start and then
/// periodically (ActionSet gone or ended), never those of a running ActionSet
/// (a resumed phase re-attaches to its pod) nor those of another
/// controller's scope.
#[tokio::test]
async fn leftover_pods_are_swept_at_start_and_periodically() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-sweep").await else {
        return Ok(());
    };
    linked_pod(&client, &ns, "left-at-start", "uid-1", &ns, "old").await?;
    // Linked to an ActionSet of another namespace: another controller's.
    linked_pod(&client, &ns, "other-scope", "uid-2", "elsewhere", "x").await?;
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {"phases": [task("slow", 0, "done", Some("600s"))]}}),
    )
    .await?;
    let _ctl = controller(&ns, &["--pod-sweep-interval", "1"], &[]);
    support::poll(FINISH, || async {
        (!pod_exists(&client, &ns, "left-at-start").await).then_some(())
    })
    .await
    .map_err(|e| anyhow::anyhow!("the start sweep did not delete left-at-start: {e}"))?;

    create_actionset(
        &client,
        &ns,
        "as",
        action("backup", "bp", namespace_object(&ns)),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let a = support::wait_for(&api, "as", FINISH, |a| a.state() == Some(State::Running)).await?;
    let uid = a.metadata.uid.unwrap_or_default();
    linked_pod(&client, &ns, "of-running", &uid, &ns, "as").await?;
    linked_pod(&client, &ns, "of-gone", "uid-3", &ns, "gone").await?;
    linked_pod(&client, &ns, "of-recreated", "uid-4", &ns, "as").await?;
    // Once the periodic sweep removed these two, it has seen the others too.
    support::poll(FINISH, || async {
        (!pod_exists(&client, &ns, "of-gone").await
            && !pod_exists(&client, &ns, "of-recreated").await)
            .then_some(())
    })
    .await
    .map_err(|e| anyhow::anyhow!("the periodic sweep did not delete of-gone/of-recreated: {e}"))?;
    assert!(
        pod_exists(&client, &ns, "of-running").await,
        "a running ActionSet's pod was swept"
    );
    assert!(
        pod_exists(&client, &ns, "other-scope").await,
        "another scope's pod was swept"
    );
    // Once the ActionSet has ended, its pods go too.
    api.delete("as", &DeleteParams::default()).await?;
    support::poll(FINISH, || async {
        (!pod_exists(&client, &ns, "of-running").await).then_some(())
    })
    .await
    .map_err(|e| anyhow::anyhow!("the ended ActionSet's pod stays: {e}"))?;
    Ok(())
}

/// `.Deployment.Pods` are the pods of the Deployment's current
/// ReplicaSet (owner references, as Kanister), also mid-rollout when the old
/// ReplicaSet's pods still run and match the selector, and with a selector
/// written as matchExpressions only.
#[tokio::test]
async fn deployment_pods_come_from_the_current_replica_set() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-rs").await else {
        return Ok(());
    };
    let deps: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    // minReadySeconds keeps new pods unavailable, so the rollout stalls with
    // the old ReplicaSet's pod still running (maxUnavailable 0).
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "minReadySeconds": 3600,
            "progressDeadlineSeconds": 7200,
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:stable"}]},
            },
        },
    }))?;
    deps.create(&PostParams::default(), &d).await?;
    let running = || support::running_pods(&client, &ns, "app=web");
    let first = support::poll(FINISH, || async {
        running().await.filter(|n| n.len() == 1)
    })
    .await?
    .remove(0);
    // A new revision: a second ReplicaSet, whose pod runs beside the first.
    deps.patch(
        "web",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            json!({"spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}}),
        ),
    )
    .await?;
    let both = support::poll(FINISH, || async {
        running().await.filter(|n| n.len() == 2)
    })
    .await?;
    support::wait_for(&deps, "web", FINISH, |d| {
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            == Some(&"2".to_string())
    })
    .await?;
    let new: Vec<&String> = both.iter().filter(|n| **n != first).collect();
    assert_eq!(new.len(), 1, "{both:?}");

    let cm = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pods\n  namespace: {ns}\ndata:\n  pods: '{{{{ range .Deployment.Pods }}}}{{{{ . }}}} {{{{ end }}}}'\n"
    );
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"list": {"phases": [{"func": "KubeOps", "name": "record",
            "args": {"operation": "create", "namespace": ns, "spec": cm}}]}}),
    )
    .await?;
    let _ctl = controller(&ns, &[], &[]);
    create_actionset(
        &client,
        &ns,
        "as",
        action("list", "bp", deployment_object(&ns, "web")),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    assert_eq!(a.state(), Some(State::Complete), "{:?}", a.status);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let data = cms.get("pods").await?.data.unwrap_or_default();
    assert_eq!(
        data["pods"].split_whitespace().collect::<Vec<_>>(),
        [new[0].as_str()],
        "only the current ReplicaSet's pod, not the old one ({first})"
    );
    Ok(())
}

/// A KubeTask pod in the controller's
/// namespace runs as the ServiceAccount from POD_SERVICE_ACCOUNT, else as
/// the one of the controller's own pod (POD_NAME), as Kanister finds it.
#[tokio::test]
async fn task_pods_in_the_controller_namespace_run_as_its_service_account() -> anyhow::Result<()> {
    use futures::StreamExt;
    use kube::runtime::watcher;
    let Some((client, ns)) = setup("exec-sa").await else {
        return Ok(());
    };
    for sa in ["env-sa", "pod-sa"] {
        let manifest = json!({"metadata": {"name": sa}});
        support::create::<k8s_openapi::api::core::v1::ServiceAccount>(&client, &ns, manifest)
            .await?;
    }
    // Stands for the controller's own pod.
    let pod = json!({
        "metadata": {"name": "controller-0"},
        "spec": {"serviceAccountName": "pod-sa",
            "containers": [{"name": "c", "image": "blueprint-operator"}]},
    });
    support::create::<Pod>(&client, &ns, pod).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    // Records the ServiceAccount of every task pod as it appears.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let rec = {
        let (seen, pods) = (seen.clone(), pods.clone());
        tokio::spawn(async move {
            let cfg = watcher::Config::default().labels("createdBy=kanister");
            let mut stream = watcher(pods, cfg).boxed();
            while let Some(ev) = stream.next().await {
                if let Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = ev {
                    let sa = p
                        .spec
                        .and_then(|s| s.service_account_name)
                        .unwrap_or_default();
                    let name = p.metadata.name.unwrap_or_default();
                    let mut s = seen.lock().unwrap();
                    if !s.iter().any(|e| e.starts_with(&format!("{name}="))) {
                        s.push(format!("{name}={sa}"));
                    }
                }
            }
        })
    };
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"run": {"phases": [output("task", "ok")]}}),
    )
    .await?;
    let sa_of_run = |n: usize| {
        let seen = seen.clone();
        async move {
            support::poll(support::WAIT, || {
                let seen = seen.clone();
                async move {
                    let s = seen.lock().unwrap();
                    (s.len() >= n).then(|| s[n - 1].split('=').nth(1).unwrap_or("").to_string())
                }
            })
            .await
        }
    };

    let ctl = controller(
        &ns,
        &[],
        &[
            ("POD_NAMESPACE", ns.as_str()),
            ("POD_SERVICE_ACCOUNT", "env-sa"),
        ],
    );
    create_actionset(
        &client,
        &ns,
        "as1",
        action("run", "bp", namespace_object(&ns)),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "as1", FINISH).await?;
    assert_eq!(a.state(), Some(State::Complete), "{:?}", a.status);
    assert_eq!(sa_of_run(1).await?, "env-sa");
    ctl.kill().await;

    let _ctl = controller(
        &ns,
        &[],
        &[("POD_NAMESPACE", ns.as_str()), ("POD_NAME", "controller-0")],
    );
    create_actionset(
        &client,
        &ns,
        "as2",
        action("run", "bp", namespace_object(&ns)),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "as2", FINISH).await?;
    assert_eq!(a.state(), Some(State::Complete), "{:?}", a.status);
    assert_eq!(sa_of_run(2).await?, "pod-sa");
    rec.abort();
    Ok(())
}

/// An ActionSet as stored, read without our model (so that fields it lacks
/// show, and one it cannot decode can be read).
async fn raw_actionset(client: &Client, ns: &str, name: &str) -> anyhow::Result<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &actionset_resource());
    Ok(serde_json::to_value(api.get(name).await?)?)
}

fn actionset_resource() -> ApiResource {
    ApiResource::erase::<ActionSet>(&())
}

async fn json_patch(client: &Client, ns: &str, name: &str, ops: Value) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &actionset_resource());
    let patch: json_patch::Patch = serde_json::from_value(ops)?;
    api.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await?;
    Ok(())
}

/// One ActionSet whose `status.state` our model does not know: it is
/// reported (Event) and skipped, every other ActionSet still runs (a typed
/// list used to fail as a whole), and once fixed it runs too.
#[tokio::test]
async fn unreadable_actionset_is_reported_and_others_still_run() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-invalid").await else {
        return Ok(());
    };
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {"phases": [output("one", "v")]}}),
    )
    .await?;
    // In place before the controller starts: its first list holds it.
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &actionset_resource());
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": "bad"},
        "spec": {"actions": [{"name": "backup", "blueprint": "bp", "object": namespace_object(&ns)}]},
        "status": {"state": "paused"},
    }))?;
    api.create(&PostParams::default(), &bad).await?;
    let _ctl = controller(&ns, &[], &[]);
    create_actionset(
        &client,
        &ns,
        "good",
        action("backup", "bp", namespace_object(&ns)),
    )
    .await?;
    let good = support::wait_actionset_done(&client, &ns, "good", FINISH).await?;
    assert_eq!(good.state(), Some(State::Complete));
    let evs = events(&client, &ns, "bad", 1).await?;
    assert_eq!(
        evs[0],
        format!(
            "ActionSetInvalid|ActionSet cannot be read: status.state: \"paused\" is not an ActionSet state (pending, running, failed, complete); the executor skips it until it is fixed (kubectl edit actionset bad -n {ns}) or deleted"
        )
    );
    assert_eq!(
        raw_actionset(&client, &ns, "bad").await?["status"]["state"],
        "paused"
    );
    // One that holds our finalizer is not kept from being deleted: its
    // deferPhase cannot run from a status we cannot read.
    let mut held = bad.clone();
    held.metadata.name = Some("held".into());
    held.metadata.finalizers = Some(vec!["blueprint-operator.io/defer-phase".into()]);
    api.create(&PostParams::default(), &held).await?;
    events(&client, &ns, "held", 1).await?;
    api.delete("held", &DeleteParams::default()).await?;
    support::poll(FINISH, || async {
        api.get_opt("held")
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await?;
    // Fixed (status removed): it runs.
    json_patch(
        &client,
        &ns,
        "bad",
        json!([{"op": "remove", "path": "/status"}]),
    )
    .await?;
    let fixed = support::wait_actionset_done(&client, &ns, "bad", FINISH).await?;
    assert_eq!(fixed.state(), Some(State::Complete));
    Ok(())
}

/// Blueprint `bp` of the removed-action tests: action `backup` runs `backup_phases`, then a
/// deferPhase that creates ConfigMap `defer-ran` with `cm_data` ([`create_cm_defer`]); action
/// `check` runs `check_phase`.
async fn removable_actions_blueprint(
    client: &Client,
    ns: &str,
    backup_phases: Value,
    cm_data: &str,
    check_phase: Value,
) -> anyhow::Result<()> {
    support::rbac::grant_configmap_create(client).await?;
    create_blueprint(
        client,
        ns,
        "bp",
        json!({
            "backup": {
                "phases": backup_phases,
                "deferPhase": create_cm_defer(ns, "defer-ran", cm_data),
            },
            "check": {"phases": [check_phase]},
        }),
    )
    .await
}

/// ActionSet `as` running `actions` of Blueprint `bp` on the namespace, in this order.
async fn create_two_action_set(
    client: &Client,
    ns: &str,
    actions: [&str; 2],
) -> anyhow::Result<Api<ActionSet>> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let a: ActionSet = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": "as"},
        "spec": {"actions": actions.map(|name| {
            json!({"name": name, "blueprint": "bp", "object": namespace_object(ns)})
        })},
    }))?;
    api.create(&PostParams::default(), &a).await?;
    Ok(api)
}

/// Removes the first entry of ActionSet `as`'s spec.actions, which must be action `name`.
async fn remove_first_action(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    json_patch(
        client,
        ns,
        "as",
        json!([
            {"op": "test", "path": "/spec/actions/0/name", "value": name},
            {"op": "remove", "path": "/spec/actions/0"},
        ]),
    )
    .await
}

/// Two actions; the first one's spec entry is removed while its phase runs:
/// its later phases do not run, its deferPhase does, the second action
/// (now first in the spec) finishes, and the ActionSet fails saying why.
#[tokio::test]
async fn action_removed_from_spec_while_running_stops_and_runs_defer() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-removed").await else {
        return Ok(());
    };
    removable_actions_blueprint(
        &client,
        &ns,
        json!([task("slow", 0, "done", Some("15s")), output("never", "x")]),
        "data:\n  state: '{{ .Outcome.State }}'\n",
        task("wait", 0, "done", Some("20s")),
    )
    .await?;
    let _ctl = controller(&ns, &[], &[]);
    let api = create_two_action_set(&client, &ns, ["backup", "check"]).await?;
    wait_phase_running(&api, 0).await?;
    remove_first_action(&client, &ns, "backup").await?;
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    let backup = &s.actions[0];
    assert_eq!(
        backup.phases.iter().map(|p| p.state).collect::<Vec<_>>(),
        [State::Complete, State::Pending],
        "the phase after the removal did not run"
    );
    assert_eq!(backup.defer_phase.state, State::Complete);
    let check = &s.actions[1];
    assert_eq!(check.phases[0].state, State::Complete);
    assert!(
        s.error
            .message
            .starts_with("action backup: action backup (Blueprint bp, Namespace ")
            && s.error
                .message
                .contains("was removed from spec.actions while the ActionSet was running"),
        "{}",
        s.error.message
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let data = cms.get("defer-ran").await?.data.unwrap_or_default();
    assert_eq!(data["state"], "failed");
    Ok(())
}

/// The controller dies while both actions run; an action's entry is removed
/// from the spec meanwhile. The new controller does not panic: both
/// actions are settled (their running phases re-attached to their pods and
/// ended, deferPhase run) and the ActionSet ends.
#[tokio::test]
async fn resume_after_an_action_was_removed_from_spec_settles_every_action() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-removed-resume").await else {
        return Ok(());
    };
    removable_actions_blueprint(
        &client,
        &ns,
        json!([task("slow", 0, "done", Some("15s"))]),
        "",
        task("wait", 0, "done", Some("15s")),
    )
    .await?;
    let ctl = controller(&ns, &[], &[]);
    let api = create_two_action_set(&client, &ns, ["check", "backup"]).await?;
    support::wait_for(&api, "as", FINISH, |a| {
        a.status.as_ref().is_some_and(|s| {
            s.actions
                .iter()
                .all(|x| x.phases[0].state == State::Running)
        })
    })
    .await?;
    ctl.kill().await;
    remove_first_action(&client, &ns, "check").await?;
    let _ctl2 = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    // The removed action had no phase left after its running one.
    assert_eq!(s.state, State::Complete, "{s:?}");
    for x in &s.actions {
        assert_eq!(x.phases[0].state, State::Complete, "action {}", x.name);
    }
    assert_eq!(s.actions[1].defer_phase.state, State::Complete);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    assert!(
        cms.get_opt("defer-ran").await?.is_some(),
        "deferPhase did not run"
    );
    Ok(())
}

/// Fields of Kanister's status that our model lacks (progress sizes), written
/// by someone else while the ActionSet runs, survive our status writes.
#[tokio::test]
async fn status_fields_our_model_lacks_survive_the_run() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-unknown").await else {
        return Ok(());
    };
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {"phases": [task("slow", 0, "done", Some("10s")), output("two", "v")]}}),
    )
    .await?;
    let _ctl = controller(&ns, &[], &[]);
    start_backup_until_phase_runs(&client, &ns, 0).await?;
    json_patch(
        &client,
        &ns,
        "as",
        json!([
            {"op": "add", "path": "/status/progress/sizeUploadedB", "value": 123},
            {"op": "add", "path": "/status/progress/estimatedUploadSizeB", "value": 456},
            {"op": "add", "path": "/status/actions/0/phases/0/progress/sizeDownloadedB", "value": 77},
        ]),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    assert_eq!(a.state(), Some(State::Complete));
    let raw = raw_actionset(&client, &ns, "as").await?;
    let st = &raw["status"];
    assert_eq!(st["progress"]["sizeUploadedB"], 123, "{st}");
    assert_eq!(st["progress"]["estimatedUploadSizeB"], 456, "{st}");
    assert_eq!(
        st["actions"][0]["phases"][0]["progress"]["sizeDownloadedB"], 77,
        "{st}"
    );
    assert_eq!(st["actions"][0]["phases"][1]["state"], "complete");
    Ok(())
}

/// MultiContainerRun and PrepareData run their work in a pod, like KubeTask: the controller is
/// SIGKILLed during each of them in turn and every new controller re-attaches to the running
/// pod: each pod is created once, each phase's output is its pod's, and the
/// deferPhase runs once after both.
#[tokio::test]
async fn controller_killed_during_multicontainerrun_and_preparedata_reattaches_to_their_pods()
-> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-pods").await else {
        return Ok(());
    };
    support::rbac::grant_configmap_create(&client).await?;
    support::bound_pvc(&client, &ns, "data", "ReadWriteOnce").await?;
    let slow = |value: &str| {
        let mut ann = json!(support::kwok_annotations(0, &out_line("value", value)));
        ann[support::kwok::DURATION] = json!("15s");
        ann
    };
    let data = "data:\n  mcr: '{{ .Phases.mcr.Output.value }}'\n  prep: '{{ .Phases.prep.Output.value }}'\n";
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [
                {"func": "MultiContainerRun", "name": "mcr", "args": {
                    "namespace": ns,
                    "backgroundImage": "busybox:stable", "backgroundCommand": ["sh", "-c", "sleep 1"],
                    "outputImage": "busybox:stable", "outputCommand": ["sh", "-c", "echo out"],
                    "podAnnotations": slow("mcr-out"),
                }},
                {"func": "PrepareData", "name": "prep", "args": {
                    "namespace": ns, "image": "busybox:stable", "command": ["sh", "-c", "echo prep"],
                    "volumes": {"data": "/data"}, "podAnnotations": slow("prep-out"),
                }},
            ],
            "deferPhase": create_cm_defer(&ns, "defer-ran", data),
        }}),
    )
    .await?;
    let (created, watch) =
        pods_created(&client, &ns, "blueprint-operator.io/actionset-namespace").await?;
    let first = controller(&ns, &[], &[]);
    let api = start_backup_until_phase_runs(&client, &ns, 0).await?;
    let mcr_pod = support::recorded_phase_pod(&client, &ns, "as", 0).await?;
    first.kill().await;
    let second = controller(&ns, &[], &[]);
    wait_phase_running(&api, 1).await?;
    let prep_pod = support::recorded_phase_pod(&client, &ns, "as", 1).await?;
    second.kill().await;
    let _third = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(s.actions[0].phases[0].output["value"], json!("mcr-out"));
    assert_eq!(s.actions[0].phases[1].output["value"], json!("prep-out"));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let data = cms.get("defer-ran").await?.data.unwrap_or_default();
    assert_eq!(
        (data["mcr"].as_str(), data["prep"].as_str()),
        ("mcr-out", "prep-out")
    );
    watch.abort();
    let created = created.lock().unwrap().clone();
    assert!(
        created.contains(&mcr_pod) && created.contains(&prep_pod),
        "{created:?}"
    );
    // Two phase pods and the deferPhase's none (KubeOps): nothing was created a second time.
    assert_eq!(
        created.len(),
        2,
        "each phase's pod was created once: {created:?}"
    );
    let evs = events(&client, &ns, "as", 8).await?;
    for phase in ["mcr", "prep"] {
        let resumed = format!(
            "Resumed Phase|Controller restarted while phase {phase} was running; re-attached to its pod (the phase was not re-run)"
        );
        assert_eq!(
            evs.iter().filter(|e| **e == resumed).count(),
            1,
            "{phase}: {evs:?}"
        );
    }
    assert_eq!(
        reasons(&evs)
            .iter()
            .filter(|r| **r == "Started deferPhase")
            .count(),
        1,
        "{evs:?}"
    );
    Ok(())
}

/// ScaleWorkload found running after a restart is entered again: the
/// controller is SIGKILLed while the phase waits for a Deployment scaled from 1 to 3 whose pods
/// cannot be scheduled; once they can, the new controller scales to the same count, waits, and
/// outputs the `originalReplicaCount` the first run recorded (1), not the count it finds (3).
#[tokio::test]
async fn controller_killed_during_scaleworkload_enters_it_again_with_the_recorded_count()
-> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-scale").await else {
        return Ok(());
    };
    support::rbac::grant_configmap_create(&client).await?;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    support::create_deployment(&client, &ns, "db", 1).await?;
    // Pods that no node accepts: the Deployment never becomes ready until this is removed.
    deploys
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {
                "nodeSelector": {"blueprint-operator.io/test": "no-such-node"}}}}})),
        )
        .await?;
    let data = "data:\n  original: '{{ .Phases.scale.Output.originalReplicaCount }}'\n";
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [{"func": "ScaleWorkload", "name": "scale", "args": {
                "kind": "Deployment", "name": "db", "namespace": ns,
                "replicas": 3, "waitForReady": true,
            }}],
            "deferPhase": create_cm_defer(&ns, "defer-ran", data),
        }}),
    )
    .await?;
    let first = controller(&ns, &[], &[]);
    create_actionset(
        &client,
        &ns,
        "as",
        action("backup", "bp", deployment_object(&ns, "db")),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    wait_phase_running(&api, 0).await?;
    support::wait_for(&deploys, "db", FINISH, |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(3)
    })
    .await?;
    first.kill().await;
    assert_eq!(api.get("as").await?.state(), Some(State::Running));
    deploys
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"nodeSelector": null}}}})),
        )
        .await?;
    let _second = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(
        s.actions[0].phases[0].output["originalReplicaCount"]
            .to_string()
            .trim_matches('"'),
        "1",
        "{s:?}"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let data = cms.get("defer-ran").await?.data.unwrap_or_default();
    assert_eq!(data["original"], "1");
    let d = deploys.get("db").await?;
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(3));
    let evs = events(&client, &ns, "as", 4).await?;
    assert!(
        evs.iter().any(|e| e
            == "Resumed Phase|Controller restarted while phase scale was running; entered it again (its function drives a desired state)"),
        "{evs:?}"
    );
    Ok(())
}

/// A KubeOps `patch` phase found running after a restart is entered again:
/// a patch applied twice is the patch applied once. A patch is too quick to kill the controller
/// during it, so the state a kill leaves is made this way: the phase `patch` is first a slow
/// KubeTask, the controller is SIGKILLed while it runs, and the Blueprint (read again by the next
/// controller, as after any restart) then says `patch` is KubeOps patch.
#[tokio::test]
async fn kubeops_patch_found_running_after_a_restart_is_entered_again() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-kill-patch").await else {
        return Ok(());
    };
    support::rbac::grant_controller(
        &client,
        "e2e-kubeops-configmaps-patch",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "patch"]}]),
    )
    .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "target"}, "data": {"state": "before"}
    }))?;
    cms.create(&PostParams::default(), &cm).await?;
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {"phases": [task("patch", 0, "", Some("60s"))]}}),
    )
    .await?;
    let first = controller(&ns, &[], &[]);
    let api = start_backup_until_phase_runs(&client, &ns, 0).await?;
    support::recorded_phase_pod(&client, &ns, "as", 0).await?;
    first.kill().await;
    let bps: Api<blueprint_operator::model::Blueprint> = Api::namespaced(client.clone(), &ns);
    bps.patch(
        "bp",
        &PatchParams::default(),
        &Patch::Merge(json!({"actions": {"backup": {"phases": [{
            "func": "KubeOps", "name": "patch", "args": {
                "operation": "patch", "namespace": ns,
                "objectReference": {"apiVersion": "v1", "resource": "configmaps", "name": "target", "namespace": ns},
                "spec": "data:\n  state: patched\n",
            }}]}}})),
    )
    .await?;
    let _second = controller(&ns, &[], &[]);
    let a = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Complete, "{s:?}");
    assert_eq!(s.actions[0].phases[0].output["name"], json!("target"));
    let data = cms.get("target").await?.data.unwrap_or_default();
    assert_eq!(data["state"], "patched");
    assert_eq!(api.get("as").await?.state(), Some(State::Complete));
    let evs = events(&client, &ns, "as", 3).await?;
    assert!(
        evs.iter().any(|e| e
            == "Resumed Phase|Controller restarted while phase patch was running; entered it again (its function drives a desired state)"),
        "{evs:?}"
    );
    Ok(())
}

/// `--deletion-timeout` running out: a deleted ActionSet whose deferPhase outlasts it is let go
/// (the finalizer removed) with the deferPhase failed for the timeout; without the timeout the
/// ActionSet would wait for its 600 s deferPhase pod.
#[tokio::test]
async fn a_deferphase_past_the_deletion_timeout_is_cut_and_the_actionset_goes() -> anyhow::Result<()>
{
    let Some((client, ns)) = setup("exec-deltimeout").await else {
        return Ok(());
    };
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [task("slow", 0, "done", Some("600s"))],
            "deferPhase": task("cleanup", 0, "cleaned", Some("600s")),
        }}),
    )
    .await?;
    let _ctl = Controller::start(&ns, &["--deletion-timeout", "5"]);
    let api = start_backup_until_phase_runs(&client, &ns, 0).await?;
    api.delete("as", &DeleteParams::default()).await?;
    support::poll(FINISH, || async {
        api.get_opt("as")
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await?;
    // The deferPhase was cut (or, had the timeout passed before it could start, not started).
    let evs = support::poll(support::WAIT, || async {
        let evs = list_events(&client, &ns, "as").await.ok()?;
        evs.iter()
            .any(|e| {
                e.starts_with("ActionSetFailed Action: backup|")
                    && e.contains("the ActionSet was deleted and the deletion timeout (5s) elapsed")
            })
            .then_some(evs)
    })
    .await;
    assert!(
        evs.is_ok(),
        "no deferPhase failure for the deletion timeout: {:?}",
        list_events(&client, &ns, "as").await?
    );
    Ok(())
}

/// Plain-HTTP GET of `path` on 127.0.0.1:`port`: the body, or `None` while nothing answers.
async fn http_body(port: u16, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    out.starts_with("HTTP/1.1 200").then_some(out)
}

/// A replica without the Lease runs nothing. While a holder that is not this process keeps the
/// Lease, a controller (executor and scheduler) waiting for it starts no ActionSet, creates no
/// run of a due schedule and writes no status, while an executor without leader election,
/// watching the same namespace, runs an ActionSet to its end (so the waiting one saw the same
/// changes and had the time to act). Once the Lease is free it takes it and schedules.
#[tokio::test]
async fn a_controller_without_the_lease_runs_nothing() -> anyhow::Result<()> {
    use blueprint_operator::model::ActionSchedule;
    use k8s_openapi::api::coordination::v1::Lease;
    let Some((client, ns)) = setup("exec-standby").await else {
        return Ok(());
    };
    // The Lease, held by a leader that is not a controller: this test renews it every second
    // (a 5 s Lease) until `release` is dropped.
    let now = || {
        chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string()
    };
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "held"},
        "spec": {"holderIdentity": "elsewhere", "leaseDurationSeconds": 5,
                 "acquireTime": now(), "renewTime": now()},
    }))?;
    leases.create(&PostParams::default(), &lease).await?;
    let (release, mut released) = tokio::sync::oneshot::channel::<()>();
    let renewer = {
        let leases = leases.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = &mut released => return,
                    _ = tick.tick() => {}
                }
                let renew = json!({"spec": {"renewTime": now()}});
                let _ = leases
                    .patch("held", &PatchParams::default(), &Patch::Merge(&renew))
                    .await;
            }
        })
    };
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {"phases": [output("one", "v")]}}),
    )
    .await?;

    // The standby: executor and scheduler, leader election on that Lease (admin credentials:
    // the shipped Role grants Leases in the operator's namespace only).
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut standby = tokio::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["controller", "--namespace", &ns, "--lease-name", "held"])
        .args(["--lease-namespace", &ns, "--instance", "standby"])
        .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
        .args(["--log-level", "warn"])
        .env("KUBECONFIG", &support::cluster().kubeconfig)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let metrics = support::poll(support::WAIT, || http_body(metrics_port, "/metrics")).await?;
    assert!(
        metrics.contains("blueprint_operator_actionschedule_leader 0"),
        "{metrics}"
    );

    // A schedule due every second, and an ActionSet that the other executor runs.
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    let s: ActionSchedule = serde_json::from_value(json!({
        "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
        "metadata": {"name": "every-second", "namespace": ns},
        "spec": {"schedule": "@every 1s", "actionSetTemplate": {"actions": [{
            "name": "backup", "blueprint": "bp", "object": namespace_object(&ns)}]}},
    }))?;
    schedules.create(&PostParams::default(), &s).await?;
    let ctl = Controller::start(&ns, &[]);
    create_actionset(
        &client,
        &ns,
        "as",
        action("backup", "bp", namespace_object(&ns)),
    )
    .await?;
    let done = support::wait_actionset_done(&client, &ns, "as", FINISH).await?;
    assert_eq!(done.state(), Some(State::Complete));

    // Nothing of the standby's: no Event, no run, no schedule status, nothing counted.
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let from_standby: Vec<String> = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reporting_instance.as_deref() == Some("standby"))
        .map(|e| format!("{:?}: {:?}", e.reason, e.note))
        .collect();
    assert!(from_standby.is_empty(), "{from_standby:?}");
    let actionsets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let names: Vec<String> = actionsets
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|a| a.name_any())
        .collect();
    assert_eq!(names, ["as"], "runs created without the Lease");
    let s = schedules.get("every-second").await?;
    assert!(
        s.status.is_none(),
        "status written without the Lease: {:?}",
        s.status
    );
    let metrics = http_body(metrics_port, "/metrics")
        .await
        .expect("the standby's /metrics");
    assert!(
        metrics.contains("blueprint_operator_actionschedule_leader 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("blueprint_operator_actionsets_total{outcome=\"complete\"} 0"),
        "{metrics}"
    );

    // Its holder stops renewing the Lease: the standby takes it once it runs out, and schedules
    // (it was able to all along).
    ctl.kill().await;
    drop(release);
    renewer.await?;
    support::poll(FINISH, || async {
        let l = leases.get_opt("held").await.ok().flatten()?;
        (l.spec?.holder_identity.as_deref() == Some("standby")).then_some(())
    })
    .await?;
    support::poll(FINISH, || async {
        let list = actionsets.list(&ListParams::default()).await.ok()?;
        (list.items.len() > 1).then_some(())
    })
    .await?;
    standby.start_kill()?;
    let _ = standby.wait().await;
    Ok(())
}
