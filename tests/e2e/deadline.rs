//! Phase and action deadlines and status size budgets end to end: the real
//! `blueprint-operator controller` binary against the test control plane,
//! where kwok runs the pods. A KubeTask pod without an exit annotation stays
//! Running forever: a hung phase.

use crate::support;

use std::time::Duration;

use crate::support::controller::Controller;
use crate::support::kanister::{self, events, kube_task, namespace_object, reasons, states};
use blueprint_operator::model::{ActionSet, State};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

/// Bound for an ActionSet to finish (pods on kwok take a few seconds each).
const FINISH: Duration = Duration::from_secs(180);

/// [`support::controller::setup`], where the controller may create ConfigMaps.
async fn setup(prefix: &str) -> Option<(Client, String)> {
    let (client, ns) = support::controller::setup(prefix).await?;
    // The controller runs as its ServiceAccount; the KubeOps phases create ConfigMaps, which
    // the shipped role does not grant: granted as the README says.
    support::rbac::grant_configmap_create(&client)
        .await
        .expect("grant KubeOps ConfigMaps");
    Some((client, ns))
}

/// A KubeTask phase whose pod runs until deleted.
fn hung(name: &str) -> Value {
    kube_task(name, json!({}))
}

/// A KubeOps phase creating ConfigMap `cm` (fast: no pod).
fn create_cm(name: &str, ns: &str, cm: &str) -> Value {
    json!({"func": "KubeOps", "name": name, "args": {
        "operation": "create", "namespace": ns,
        "spec": format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {cm}\n  namespace: {ns}\n"),
    }})
}

async fn create_blueprint(client: &Client, ns: &str, name: &str, action: Value) {
    create_blueprint_with(client, ns, json!({"name": name}), action).await
}

/// Blueprint of the one action `backup`.
async fn create_blueprint_with(client: &Client, ns: &str, metadata: Value, action: Value) {
    kanister::create_blueprint_with(client, ns, metadata, json!({"backup": action}))
        .await
        .expect("create Blueprint");
}

/// ActionSet `name`: action `backup` of Blueprint `blueprint` on the namespace.
async fn create_actionset(client: &Client, ns: &str, name: &str, blueprint: &str, options: Value) {
    let action = json!({
        "name": "backup", "blueprint": blueprint, "options": options,
        "object": namespace_object(ns),
    });
    kanister::create_actionset(client, ns, name, action)
        .await
        .expect("create ActionSet");
}

/// Asserts that the deferPhase ran: it creates ConfigMap `cm`.
async fn assert_defer_ran(client: &Client, ns: &str, cm: &str) {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    assert!(
        cms.get_opt(cm).await.ok().flatten().is_some(),
        "deferPhase did not run"
    );
}

/// The Events about ActionSet `name`, asserted to say that its phase failed and then its
/// deferPhase ran.
async fn failed_then_deferred_events(client: &Client, ns: &str, name: &str) -> Vec<String> {
    let evs = events(client, ns, name, 5).await.expect("Events");
    assert_eq!(
        reasons(&evs),
        [
            "Started Action",
            "Started Phase",
            "ActionSetFailed Action: backup",
            "Started deferPhase",
            "Ended deferPhase",
        ],
        "{evs:?}"
    );
    evs
}

/// A hung main phase is cancelled at its phase timeout (ActionSet option)
/// or its action timeout (controller flag), its pod is deleted, the
/// deferPhase runs and the ActionSet ends failed with the timeout in its
/// error and Events; a hung deferPhase is cancelled at its own timeout so
/// the ActionSet still ends.
#[tokio::test]
async fn hung_phases_time_out_and_the_defer_phase_runs() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-deadline").await else {
        return Ok(());
    };
    create_blueprint(
        &client,
        &ns,
        "hangs",
        json!({"phases": [hung("stuck")], "deferPhase": create_cm("cleanup", &ns, "cleaned")}),
    )
    .await;
    create_blueprint(
        &client,
        &ns,
        "defer-hangs",
        json!({"phases": [create_cm("main", &ns, "main-ran")], "deferPhase": hung("stuckCleanup")}),
    )
    .await;
    // Generous defaults that the options below override; the action
    // timeout of the flag applies where no option says otherwise.
    let _ctl = Controller::start(&ns, &["--phase-timeout", "1h", "--action-timeout", "6s"]);
    create_actionset(
        &client,
        &ns,
        "by-option",
        "hangs",
        json!({"phaseTimeout": "5s", "actionTimeout": "0"}),
    )
    .await;

    let a = support::wait_actionset_done(&client, &ns, "by-option", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(states(&a), (vec![State::Failed], State::Complete));
    assert!(
        s.error.message.starts_with(
            "phase stuck exceeded its 5s timeout (set by the ActionSet option phaseTimeout) and was cancelled; raise it with the ActionSet option spec.actions[].options.phaseTimeout"
        ),
        "{}",
        s.error.message
    );
    assert_defer_ran(&client, &ns, "cleaned").await;
    let evs = failed_then_deferred_events(&client, &ns, "by-option").await;
    assert!(evs[2].contains("exceeded its 5s timeout"), "{}", evs[2]);
    // The cancelled phase's pod is deleted.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    support::poll(FINISH, || async {
        let left = pods.list(&ListParams::default()).await.ok()?.items;
        left.iter()
            .all(|p| p.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await?;

    // The controller's action timeout, no option.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.delete("cleaned", &Default::default()).await?;
    create_actionset(&client, &ns, "by-flag", "hangs", json!({})).await;
    let a = support::wait_actionset_done(&client, &ns, "by-flag", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(states(&a), (vec![State::Failed], State::Complete));
    assert!(
        s.error.message.starts_with(
            "action backup exceeded its 6s timeout (set by the controller flag --action-timeout) while phase stuck was running, which was cancelled"
        ),
        "{}",
        s.error.message
    );
    assert_defer_ran(&client, &ns, "cleaned").await;

    // A hung deferPhase is bounded by the phase timeout; the action timeout
    // (disabled here) never cuts it.
    create_actionset(
        &client,
        &ns,
        "defer-hangs",
        "defer-hangs",
        json!({"phaseTimeout": "8s", "actionTimeout": "0"}),
    )
    .await;
    let a = support::wait_actionset_done(&client, &ns, "defer-hangs", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert_eq!(states(&a), (vec![State::Complete], State::Failed));
    assert!(
        s.error
            .message
            .starts_with("deferPhase stuckCleanup exceeded its 8s timeout (set by the ActionSet option phaseTimeout)"),
        "{}",
        s.error.message
    );
    let evs = events(&client, &ns, "defer-hangs", 5).await?;
    assert_eq!(
        reasons(&evs),
        [
            "Started Action",
            "Started Phase",
            "Ended Phase",
            "Started deferPhase",
            "ActionSetFailed Action: backup",
        ],
        "{evs:?}"
    );

    // A timeout option that is not a duration fails the action at launch,
    // with the fix in the message; the deferPhase runs.
    cms.delete("cleaned", &Default::default()).await?;
    create_actionset(
        &client,
        &ns,
        "bad-option",
        "hangs",
        json!({"phaseTimeout": "ten minutes"}),
    )
    .await;
    let a = support::wait_actionset_done(&client, &ns, "bad-option", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(states(&a), (vec![State::Failed], State::Complete));
    assert!(
        s.error
            .message
            .contains("ActionSet option phaseTimeout \"ten minutes\" is not a duration"),
        "{}",
        s.error.message
    );
    assert_defer_ran(&client, &ns, "cleaned").await;

    // A Blueprint annotation sets one phase's timeout, over the ActionSet's.
    cms.delete("cleaned", &Default::default()).await?;
    create_blueprint_with(
        &client,
        &ns,
        json!({"name": "annotated", "annotations": {
            "blueprint-operator.io/phase-timeouts": r#"{"backup": {"stuck": "4s"}}"#,
        }}),
        json!({"phases": [hung("stuck")], "deferPhase": create_cm("cleanup", &ns, "cleaned")}),
    )
    .await;
    create_actionset(
        &client,
        &ns,
        "by-blueprint",
        "annotated",
        json!({"phaseTimeout": "1h", "actionTimeout": "0"}),
    )
    .await;
    let a = support::wait_actionset_done(&client, &ns, "by-blueprint", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(states(&a), (vec![State::Failed], State::Complete));
    assert!(
        s.error.message.starts_with(
            "phase stuck exceeded its 4s timeout (set by the Blueprint annotation blueprint-operator.io/phase-timeouts)"
        ),
        "{}",
        s.error.message
    );
    assert_defer_ran(&client, &ns, "cleaned").await;
    Ok(())
}

/// For a phase its timeout cancels: its pod's last log lines stay on the ActionSet
/// (the failed phase's output and a PodLogKept Event about the pod) and the pod is deleted
/// after. Before, the cancelled phase's pod guard deleted the pod before they were read.
#[tokio::test]
async fn a_phase_cancelled_by_its_timeout_keeps_its_pods_last_log_lines() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-tolog").await else {
        return Ok(());
    };
    let log: String = (1..=25)
        .map(|i| format!("waiting for the table lock ({i})"))
        .collect::<Vec<_>>()
        .join("\n");
    // No exit annotation: the pod runs until it is deleted; kwok serves `log` as its log.
    create_blueprint(
        &client,
        &ns,
        "hangs-logging",
        json!({"phases": [kube_task("stuck", json!({support::kwok::LOG: log}))]}),
    )
    .await;
    let _ctl = Controller::start(&ns, &[]);
    create_actionset(
        &client,
        &ns,
        "timed-out",
        "hangs-logging",
        json!({"phaseTimeout": "20s", "actionTimeout": "0"}),
    )
    .await;
    // The pod's log is served (the cluster's log agent marks it) before the timeout.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod = support::poll(FINISH, || async {
        let items = pods.list(&ListParams::default()).await.ok()?.items;
        items.into_iter().find(|p| {
            p.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(support::kwok::LOG_READY))
        })
    })
    .await?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let running = sets.get("timed-out").await?;
    assert_eq!(
        running.state(),
        Some(State::Running),
        "the phase timed out before kwok served the pod's log; this test needs a less loaded machine"
    );

    let a = support::wait_actionset_done(&client, &ns, "timed-out", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(s.state, State::Failed);
    assert!(
        s.error
            .message
            .starts_with("phase stuck exceeded its 20s timeout"),
        "{}",
        s.error.message
    );
    let key = format!("{ns}/{pod_name}");
    let kept = &s.actions[0].phases[0].output["blueprint-operator.io/podLogs"][&key];
    let lines = kept
        .as_object()
        .and_then(|c| c.values().next())
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no log lines kept for {key}: {:#?}", s.actions[0].phases[0]));
    assert_eq!(lines.lines().count(), 20, "{lines}");
    assert!(
        lines.starts_with("waiting for the table lock (6)")
            && lines.ends_with("waiting for the table lock (25)"),
        "{lines}"
    );
    // A Warning Event about the pod says the same; the pod is then deleted.
    let evs: Api<Event> = Api::namespaced(client.clone(), &ns);
    let kept = |e: &Event| {
        e.reason.as_deref() == Some("PodLogKept")
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(&pod_name)
            && e.note.is_some()
    };
    let event = support::first_listed(&evs, &ListParams::default(), kept, support::WAIT).await?;
    let note = event.note.unwrap_or_default();
    assert!(
        note.starts_with(&format!("phase stuck failed; last log lines of pod {key}")),
        "{note}"
    );
    support::poll(FINISH, || async {
        pods.get_opt(&pod_name)
            .await
            .ok()?
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await?;
    Ok(())
}

/// A phase whose error or output is megabytes long: the status write still
/// succeeds (the error is cut, the output refused with its size), the
/// deferPhase runs and the ActionSet ends failed.
#[tokio::test]
async fn huge_errors_and_outputs_still_end_with_the_defer_phase() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("exec-size").await else {
        return Ok(());
    };
    // A 2 MB error: the template's `fail`.
    create_blueprint(
        &client,
        &ns,
        "big-error",
        json!({
            "phases": [{"func": "KubeTask", "name": "render", "args": {
                "image": "busybox:stable",
                "command": ["{{ fail (repeat 2000000 \"e\") }}"],
            }}],
            "deferPhase": create_cm("cleanup", &ns, "cleaned-error"),
        }),
    )
    .await;
    // A 2 MB phase output: 64 `kando output` lines of 32,000 bytes each.
    let dir = std::env::temp_dir().join(format!("bpo-{ns}"));
    std::fs::create_dir_all(&dir)?;
    let log_file = dir.join("big-output.log");
    let mut log = String::from("starting\n");
    for k in 0..64 {
        log.push_str(&format!(
            "###Phase-output###: {{\"key\":\"k{k}\",\"value\":\"{}\"}}\n",
            "o".repeat(32_000)
        ));
    }
    std::fs::write(&log_file, log)?;
    let ann = json!({
        support::kwok::EXIT: "0",
        support::kwok::LOG_FILE: log_file.to_string_lossy(),
    });
    create_blueprint(
        &client,
        &ns,
        "big-output",
        json!({
            "phases": [kube_task("dump", ann)],
            "deferPhase": create_cm("cleanup", &ns, "cleaned-output"),
        }),
    )
    .await;
    let _ctl = Controller::start(&ns, &[]);
    create_actionset(&client, &ns, "big-error", "big-error", json!({})).await;
    create_actionset(&client, &ns, "big-output", "big-output", json!({})).await;

    let a = support::wait_actionset_done(&client, &ns, "big-error", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(states(&a), (vec![State::Failed], State::Complete));
    assert!(
        s.error.message.len() <= 8 * 1024,
        "{}",
        s.error.message.len()
    );
    assert!(
        s.error.message.contains(" bytes cut ...\n"),
        "{}",
        s.error.message
    );
    assert!(s.error.message.contains("eeee"), "{}", s.error.message);
    assert_defer_ran(&client, &ns, "cleaned-error").await;
    failed_then_deferred_events(&client, &ns, "big-error").await;

    let a = support::wait_actionset_done(&client, &ns, "big-output", FINISH).await?;
    let s = a.status.as_ref().unwrap();
    assert_eq!(states(&a), (vec![State::Failed], State::Complete));
    assert!(
        a.status.as_ref().unwrap().actions[0].phases[0]
            .output
            .is_empty()
    );
    assert!(
        s.error.message.starts_with("the output of phase dump is ")
            && s.error.message.contains("MiB (key k"),
        "{}",
        s.error.message
    );
    assert_defer_ran(&client, &ns, "cleaned-output").await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
