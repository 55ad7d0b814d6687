//! End-to-end tests of the ActionSchedule controller on the test control plane.
//! The controller runs in-process; no executor runs, so the tests play the
//! executor by writing `status.state` of the ActionSets themselves (Kanister's
//! CRD has no status subresource). Waits are bounded by generous deadlines;
//! nothing asserts on durations.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use blueprint_operator::app::leader::{self, LeaseConfig};
use blueprint_operator::executor::claim;
use blueprint_operator::model::labels::ANNOTATION_CLAIMED;
use blueprint_operator::model::{
    ANNOTATION_RUN_NOW, ANNOTATION_SCHEDULE, ANNOTATION_SCHEDULED_TIME, ANNOTATION_VERIFIED_BY,
    ActionSchedule, ActionScheduleStatus, ActionSet, FINALIZER_DELETE_RUNS, LABEL_SCHEDULE,
    LABEL_TRIGGER, LABEL_VERIFIED, LABEL_VERIFY_FOR,
};
use blueprint_operator::scheduler::{self, SchedulerOptions, plan, verify};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The controller's one Lease (`--lease-name`), under which the scheduler runs.
const LEASE: &str = "blueprint-operator-executor";
const LONG: Duration = Duration::from_secs(90);

struct Running {
    task: JoinHandle<anyhow::Result<()>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    /// Graceful stop.
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(20), &mut self.task).await;
        self.task.abort();
    }
    /// Crash: the task is dropped wherever it is.
    fn kill(self) {
        self.task.abort();
    }
}

fn start(client: &Client, ns: &str, le: Option<LeaseConfig>) -> Running {
    let opts = SchedulerOptions {
        namespace: Some(ns.to_string()),
        ..Default::default()
    };
    let Some(lease) = le else {
        return start_with(client, opts);
    };
    // As the controller runs it: only while this replica holds the Lease.
    let (tx, rx) = oneshot::channel::<()>();
    let client = client.clone();
    let task = tokio::spawn(async move {
        use futures::FutureExt as _;
        let stop = rx.shared();
        let Some(mut lead) = leader::acquire(&client, &lease, stop.clone()).await? else {
            return Ok(());
        };
        tokio::select! {
            r = scheduler::run(client.clone(), opts, stop) => r?,
            _ = lead.lost() => {}
        }
        lead.release().await;
        Ok(())
    });
    Running {
        task,
        stop: Some(tx),
    }
}

fn start_with(client: &Client, opts: SchedulerOptions) -> Running {
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(scheduler::run(client.clone(), opts, async move {
        let _ = rx.await;
    }));
    Running {
        task,
        stop: Some(tx),
    }
}

async fn setup(prefix: &str) -> anyhow::Result<(Client, String)> {
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, prefix).await;
    Ok((client, ns))
}

async fn create_schedule(
    client: &Client,
    ns: &str,
    name: &str,
    spec: serde_json::Value,
) -> anyhow::Result<ActionSchedule> {
    create_schedule_meta(client, ns, json!({"name": name}), spec).await
}

/// [`create_schedule`] with more metadata (annotations, finalizers).
async fn create_schedule_meta(
    client: &Client,
    ns: &str,
    metadata: serde_json::Value,
    spec: serde_json::Value,
) -> anyhow::Result<ActionSchedule> {
    let mut metadata = metadata;
    metadata["namespace"] = json!(ns);
    let mut spec = spec;
    spec["actionSetTemplate"] = json!({
        "actions": [{
            "name": "backup",
            "blueprint": "demo-bp",
            "object": {"kind": "Deployment", "name": "app", "namespace": ns},
        }]
    });
    let s: ActionSchedule = serde_json::from_value(json!({
        "apiVersion": "blueprint-operator.io/v1alpha1",
        "kind": "ActionSchedule",
        "metadata": metadata,
        "spec": spec,
    }))?;
    let api: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
    Ok(api.create(&PostParams::default(), &s).await?)
}

async fn runs(client: &Client, ns: &str, schedule: &str) -> anyhow::Result<Vec<ActionSet>> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let mut v = api
        .list(&ListParams::default().labels(&format!("{LABEL_SCHEDULE}={schedule}")))
        .await?
        .items;
    v.sort_by_key(|a| {
        a.annotations()
            .get(ANNOTATION_SCHEDULED_TIME)
            .cloned()
            .unwrap_or_default()
    });
    Ok(v)
}

fn scheduled(v: &[ActionSet]) -> Vec<&ActionSet> {
    v.iter()
        .filter(|a| a.labels().get(LABEL_TRIGGER).map(String::as_str) == Some("scheduled"))
        .collect()
}

async fn set_state(client: &Client, ns: &str, name: &str, state: &str) -> anyhow::Result<()> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    // Decided by hand: no longer a claimed run waiting for the executor.
    let status = json!({"metadata": {"annotations": {ANNOTATION_CLAIMED: null}}, "status": {"state": state, "actions": [{
        "name": "backup", "blueprint": "demo-bp",
        "object": {"kind": "Deployment", "name": "app", "namespace": ns},
        "artifacts": {"snap": {"keyValue": {"id": format!("id-{name}")}}},
        "deferPhase": {"name": "", "state": ""},
    }]}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

async fn patch_schedule(
    client: &Client,
    ns: &str,
    name: &str,
    patch: serde_json::Value,
) -> anyhow::Result<()> {
    let api: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn get_schedule(client: &Client, ns: &str, name: &str) -> anyhow::Result<ActionSchedule> {
    let api: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
    Ok(api.get(name).await?)
}

async fn event_reasons(client: &Client, ns: &str) -> anyhow::Result<BTreeSet<String>> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect())
}

/// Ticks of the scheduled runs, asserted to be unique and each a run of the
/// schedule `name` (label and annotation, no ownerReference).
fn assert_one_run_per_tick(v: &[ActionSet], name: &str) -> Vec<String> {
    let ticks: Vec<String> = scheduled(v)
        .iter()
        .map(|a| a.annotations()[ANNOTATION_SCHEDULED_TIME].clone())
        .collect();
    let unique: BTreeSet<&String> = ticks.iter().collect();
    assert_eq!(
        unique.len(),
        ticks.len(),
        "two ActionSets for one tick: {ticks:?}"
    );
    for a in v {
        assert_run_of(a, name);
    }
    ticks
}

/// `a` is a run of the schedule `name` that its deletion cannot take along.
fn assert_run_of(a: &ActionSet, name: &str) {
    assert_eq!(
        a.labels().get(LABEL_SCHEDULE).map(String::as_str),
        Some(name),
        "{}",
        a.name_any()
    );
    assert_eq!(
        a.annotations().get(ANNOTATION_SCHEDULE).map(String::as_str),
        Some(name),
        "{}",
        a.name_any()
    );
    assert!(
        a.owner_references().is_empty(),
        "{} has ownerReferences: {:?}",
        a.name_any(),
        a.owner_references()
    );
}

/// Delete the schedule and wait until it is gone.
async fn delete_schedule(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let api: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
    api.delete(name, &DeleteParams::background()).await?;
    support::poll(LONG, || async {
        matches!(api.get_opt(name).await, Ok(None)).then_some(())
    })
    .await
}

/// Wait until the garbage collector has processed ActionSets in `ns`: an
/// ActionSet owned by a ConfigMap is collected after that ConfigMap is
/// deleted. A run that the collector would take is gone by then too.
async fn gc_settled(client: &Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let owner = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"generateName": "gc-canary-owner-"}}))?,
        )
        .await?;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let canary: ActionSet = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"generateName": "gc-canary-", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap",
            "name": owner.name_any(), "uid": owner.uid().unwrap_or_default(),
        }]},
        "spec": {"actions": []},
    }))?;
    let canary = sets
        .create(&PostParams::default(), &canary)
        .await?
        .name_any();
    cms.delete(&owner.name_any(), &DeleteParams::background())
        .await?;
    support::poll(LONG, || async {
        matches!(sets.get_opt(&canary).await, Ok(None)).then_some(())
    })
    .await
}

/// Play the executor for the scheduled runs of `schedule` until `states` were
/// given out in tick order; returns the runs and their states.
async fn decide_runs(
    client: &Client,
    ns: &str,
    schedule: &str,
    states: &[&'static str],
) -> anyhow::Result<BTreeMap<String, &'static str>> {
    let mut decided: BTreeMap<String, &'static str> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + LONG;
    while decided.len() < states.len() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "only {} runs within {LONG:?}",
            decided.len()
        );
        for a in scheduled(&runs(client, ns, schedule).await?) {
            let n = a.name_any();
            if claim::not_started(a) && !decided.contains_key(&n) && decided.len() < states.len() {
                let state = states[decided.len()];
                set_state(client, ns, &n, state).await?;
                decided.insert(n, state);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(decided)
}

/// Suspend the schedule and wait until the controller skipped a tick for it;
/// then complete the runs made before it saw the suspend. Returns those.
async fn suspend(client: &Client, ns: &str, name: &str) -> anyhow::Result<Vec<String>> {
    patch_schedule(client, ns, name, json!({"spec": {"suspend": true}})).await?;
    support::poll(LONG, || async {
        let st = get_schedule(client, ns, name).await.ok()?.status?;
        st.recent_skips
            .iter()
            .any(|s| s.reason == "Suspended")
            .then_some(())
    })
    .await?;
    let mut late = Vec::new();
    for a in scheduled(&runs(client, ns, name).await?) {
        if claim::not_started(a) {
            set_state(client, ns, &a.name_any(), "complete").await?;
            late.push(a.name_any());
        }
    }
    Ok(late)
}

fn names(v: &[ActionSet]) -> BTreeSet<String> {
    v.iter().map(|a| a.name_any()).collect()
}

#[tokio::test]
async fn runs_on_time_and_rotation_keeps_n_complete_and_last_2_failed() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-rotate").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(
        &client,
        &ns,
        "rot",
        json!({"schedule": "@every 2s", "retention": {"keepLast": 2}}),
    )
    .await?;
    // Play the executor: alternate complete / failed in tick order, 10 runs.
    let mut decided: BTreeMap<String, &str> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + LONG;
    while decided.len() < 10 {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "only {} runs within {LONG:?}",
            decided.len()
        );
        let v = runs(&client, &ns, "rot").await?;
        for a in scheduled(&v) {
            let n = a.name_any();
            if claim::not_started(a) && !decided.contains_key(&n) {
                let state = if decided.len().is_multiple_of(2) {
                    "complete"
                } else {
                    "failed"
                };
                set_state(&client, &ns, &n, state).await?;
                decided.insert(n, state);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    patch_schedule(&client, &ns, "rot", json!({"spec": {"suspend": true}})).await?;
    // Runs created after the suspend was seen, if any, are decided too; then
    // wait for rotation to settle at exactly 2 complete + 2 failed.
    let kept = support::poll(LONG, || async {
        let v = runs(&client, &ns, "rot").await.ok()?;
        for a in scheduled(&v) {
            if claim::not_started(a) {
                set_state(&client, &ns, &a.name_any(), "complete")
                    .await
                    .ok()?;
                return None;
            }
        }
        let count = |st: &str| {
            scheduled(&v)
                .iter()
                .filter(|a| a.status.as_ref().is_some_and(|s| s.state.as_str() == st))
                .count()
        };
        (count("complete") == 2 && count("failed") == 2).then_some(v)
    })
    .await?;
    assert_one_run_per_tick(&kept, "rot");
    // The kept ones are the newest of each kind.
    let all_decided: Vec<(&String, &&str)> = decided.iter().collect();
    let newest = |st: &str| {
        let mut v: Vec<&String> = all_decided
            .iter()
            .filter(|(_, s)| **s == st)
            .map(|(n, _)| *n)
            .collect();
        v.sort();
        v.into_iter()
            .rev()
            .take(2)
            .cloned()
            .collect::<BTreeSet<String>>()
    };
    let kept_failed: BTreeSet<String> = kept
        .iter()
        .filter(|a| {
            a.status
                .as_ref()
                .is_some_and(|s| s.state.as_str() == "failed")
        })
        .map(|a| a.name_any())
        .collect();
    assert_eq!(kept_failed, newest("failed"));
    // Runs were created for ticks of the 2 s grid (nominal times; names derive from them), and a
    // tick without a run was counted missed (a scheduler late by more than a tick runs only the
    // latest one: on a busy machine that happens, and is no failure).
    let mut ticks: Vec<chrono::DateTime<chrono::Utc>> = decided
        .keys()
        .map(|n| {
            chrono::NaiveDateTime::parse_from_str(&n[n.len() - 14..], "%Y%m%d%H%M%S")
                .unwrap()
                .and_utc()
        })
        .collect();
    ticks.sort();
    let mut without_run = 0;
    for w in ticks.windows(2) {
        let gap = (w[1] - w[0]).num_seconds();
        assert!(gap > 0 && gap % 2 == 0, "ticks {ticks:?}");
        without_run += gap / 2 - 1;
    }
    let st = get_schedule(&client, &ns, "rot")
        .await?
        .status
        .unwrap_or_default();
    assert!(
        without_run.unsigned_abs() <= st.missed_runs,
        "{without_run} ticks without a run, {} counted missed: {ticks:?}",
        st.missed_runs
    );
    assert!(st.last_schedule_time.is_some() && st.last_successful_time.is_some());
    let reasons = event_reasons(&client, &ns).await?;
    assert!(
        reasons.contains("Created") && reasons.contains("Rotated"),
        "{reasons:?}"
    );
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn restarts_and_two_replicas_never_duplicate_a_tick() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-restart").await?;
    create_schedule(
        &client,
        &ns,
        "rs",
        json!({"schedule": "@every 2s", "retention": {"keepLast": 50}}),
    )
    .await?;
    // Crash the controller right after it creates a run (before or while it writes status).
    for round in 0..4 {
        let before = scheduled(&runs(&client, &ns, "rs").await?).len();
        let ctl = start(&client, &ns, None);
        support::poll(LONG, || async {
            (scheduled(&runs(&client, &ns, "rs").await.ok()?).len() > before).then_some(())
        })
        .await?;
        ctl.kill();
        let v = runs(&client, &ns, "rs").await?;
        assert_one_run_per_tick(&v, "rs");
        eprintln!("round {round}: {} runs", v.len());
    }
    // Two replicas at once, no leader election: the names still make each tick unique.
    let a = start(&client, &ns, None);
    let b = start(&client, &ns, None);
    let before = scheduled(&runs(&client, &ns, "rs").await?).len();
    support::poll(LONG, || async {
        (scheduled(&runs(&client, &ns, "rs").await.ok()?).len() >= before + 4).then_some(())
    })
    .await?;
    a.stop().await;
    b.stop().await;
    let v = runs(&client, &ns, "rs").await?;
    let ticks = assert_one_run_per_tick(&v, "rs");
    assert!(ticks.len() >= 8);

    // Two replicas with leader election: one leads; kill it, the other takes over.
    let le = |id: &str| {
        let mut l = LeaseConfig::new(LEASE, ns.clone(), id);
        l.lease_seconds = 4;
        l.grace_seconds = 2;
        l.retry_seconds = 1;
        Some(l)
    };
    let a = start(&client, &ns, le("replica-a"));
    let b = start(&client, &ns, le("replica-b"));
    let before = scheduled(&runs(&client, &ns, "rs").await?).len();
    support::poll(LONG, || async {
        (scheduled(&runs(&client, &ns, "rs").await.ok()?).len() >= before + 2).then_some(())
    })
    .await?;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), &ns);
    let holder = leases
        .get(LEASE)
        .await?
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    let survivor = if holder == "replica-a" {
        a.kill();
        b
    } else {
        b.kill();
        a
    };
    let before = scheduled(&runs(&client, &ns, "rs").await?).len();
    support::poll(LONG, || async {
        (scheduled(&runs(&client, &ns, "rs").await.ok()?).len() >= before + 2).then_some(())
    })
    .await?;
    survivor.stop().await;
    assert_one_run_per_tick(&runs(&client, &ns, "rs").await?, "rs");
    Ok(())
}

#[tokio::test]
async fn forbid_skips_while_a_run_is_active() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-forbid").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(
        &client,
        &ns,
        "fb",
        json!({"schedule": "@every 2s", "concurrencyPolicy": "Forbid"}),
    )
    .await?;
    let first = support::poll(LONG, || async {
        runs(&client, &ns, "fb")
            .await
            .ok()?
            .first()
            .map(|a| a.name_any())
    })
    .await?;
    set_state(&client, &ns, &first, "running").await?;
    let st = support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "fb").await.ok()?.status?;
        (st.skipped_runs >= 2).then_some(st)
    })
    .await?;
    assert_eq!(
        runs(&client, &ns, "fb").await?.len(),
        1,
        "a run was started while one was active"
    );
    assert_eq!(st.active.len(), 1);
    assert!(
        st.recent_skips
            .iter()
            .any(|s| s.reason == "ConcurrencyForbid"),
        "{:?}",
        st.recent_skips
    );
    assert!(
        event_reasons(&client, &ns)
            .await?
            .contains("SkippedConcurrency")
    );
    // Once it finishes, the next tick runs.
    set_state(&client, &ns, &first, "complete").await?;
    support::poll(LONG, || async {
        (runs(&client, &ns, "fb").await.ok()?.len() >= 2).then_some(())
    })
    .await?;
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn suspend_stops_runs_and_run_now_still_works() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-suspend").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(&client, &ns, "sp", json!({"schedule": "@every 2s"})).await?;
    support::poll(LONG, || async {
        (!runs(&client, &ns, "sp").await.ok()?.is_empty()).then_some(())
    })
    .await?;
    patch_schedule(&client, &ns, "sp", json!({"spec": {"suspend": true}})).await?;
    // The suspend is in effect once a tick is recorded as skipped for it.
    support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "sp").await.ok()?.status?;
        st.recent_skips
            .iter()
            .any(|s| s.reason == "Suspended")
            .then_some(())
    })
    .await?;
    let count = runs(&client, &ns, "sp").await?.len();
    let skipped = get_schedule(&client, &ns, "sp")
        .await?
        .status
        .unwrap_or_default()
        .skipped_runs;
    support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "sp").await.ok()?.status?;
        (st.skipped_runs >= skipped + 3).then_some(())
    })
    .await?;
    assert_eq!(
        runs(&client, &ns, "sp").await?.len(),
        count,
        "runs created while suspended"
    );
    // run-now works while suspended, once per token.
    patch_schedule(
        &client,
        &ns,
        "sp",
        json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: "t1"}}}),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let name = plan::run_now_name("sp", "t1");
    support::wait_for(&api, &name, LONG, |_| true).await?;
    support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "sp").await.ok()?.status?;
        (st.last_run_now_token.as_deref() == Some("t1")).then_some(())
    })
    .await?;
    assert_eq!(runs(&client, &ns, "sp").await?.len(), count + 1);
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn delete_action_runs_before_a_rotated_run_is_removed() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-delete").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(
        &client,
        &ns,
        "da",
        json!({"schedule": "@every 2s", "concurrencyPolicy": "Forbid", "retention": {"keepLast": 1, "deleteAction": "delete"}}),
    )
    .await?;
    // Two complete runs: the older is rotated through a delete action.
    let mut done: Vec<String> = Vec::new();
    let deadline = tokio::time::Instant::now() + LONG;
    while done.len() < 2 {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "only {} runs within {LONG:?}",
            done.len()
        );
        let v = runs(&client, &ns, "da").await?;
        for a in scheduled(&v) {
            if claim::not_started(a) && done.len() < 2 {
                set_state(&client, &ns, &a.name_any(), "complete").await?;
                done.push(a.name_any());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    patch_schedule(&client, &ns, "da", json!({"spec": {"suspend": true}})).await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let del_name = plan::delete_name(&done[0]);
    let del = support::wait_for(&api, &del_name, LONG, |_| true).await?;
    let action = &del.spec.as_ref().unwrap().actions[0];
    assert_eq!(action.name, "delete");
    assert_eq!(
        action.artifacts["snap"].key_value["id"],
        format!("id-{}", done[0])
    );
    // The rotated run stays until the delete action completes.
    let st = get_schedule(&client, &ns, "da")
        .await?
        .status
        .unwrap_or_default();
    assert!(
        st.retention.removing.iter().any(|e| e.name == done[0]),
        "{:?}",
        st.retention
    );
    assert!(api.get_opt(&done[0]).await?.is_some());
    set_state(&client, &ns, &del_name, "complete").await?;
    support::poll(LONG, || async {
        (api.get_opt(&done[0]).await.ok()?.is_none()
            && api.get_opt(&del_name).await.ok()?.is_none())
        .then_some(())
    })
    .await?;
    assert!(
        api.get_opt(&done[1]).await?.is_some(),
        "newest complete run must stay"
    );
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn deleting_a_schedule_keeps_its_runs() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-keep").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(&client, &ns, "keep", json!({"schedule": "@every 2s"})).await?;
    decide_runs(&client, &ns, "keep", &["complete", "failed"]).await?;
    let before = runs(&client, &ns, "keep").await?;
    for a in &before {
        assert_run_of(a, "keep");
    }
    delete_schedule(&client, &ns, "keep").await?;
    gc_settled(&client, &ns).await?;
    let after = names(&runs(&client, &ns, "keep").await?);
    assert!(
        names(&before).is_subset(&after),
        "runs lost with their schedule: before {:?}, after {after:?}",
        names(&before)
    );
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn on_delete_delete_runs_the_delete_action_and_keeps_what_it_cannot_delete()
-> anyhow::Result<()> {
    let (client, ns) = setup("sched-ondelete").await?;
    let ctl = start(&client, &ns, None);
    // A second finalizer holds the object after ours is removed, so that the
    // final condition can be read.
    const HOLD: &str = "blueprint-operator.io/test-hold";
    create_schedule_meta(
        &client,
        &ns,
        json!({"name": "od", "finalizers": [HOLD]}),
        json!({"schedule": "@every 2s", "retention": {
            "keepLast": 20, "keepFailed": 20, "deleteAction": "delete", "onDelete": "Delete"}}),
    )
    .await?;
    let mut decided = decide_runs(&client, &ns, "od", &["complete", "complete", "failed"]).await?;
    for late in suspend(&client, &ns, "od").await? {
        decided.insert(late, "complete");
    }
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    support::wait_for(&schedules, "od", LONG, |s| {
        s.finalizers().iter().any(|f| f == FINALIZER_DELETE_RUNS)
    })
    .await?;
    schedules.delete("od", &DeleteParams::background()).await?;
    // The oldest complete run's delete action fails; the others complete.
    let complete: Vec<&String> = decided
        .iter()
        .filter(|(_, s)| **s == "complete")
        .map(|(n, _)| n)
        .collect();
    let failed_run: Vec<&String> = decided
        .iter()
        .filter(|(_, s)| **s == "failed")
        .map(|(n, _)| n)
        .collect();
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    for (i, run) in complete.iter().enumerate() {
        let d = support::wait_for(&sets, &plan::delete_name(run), LONG, |_| true).await?;
        let action = &d.spec.as_ref().unwrap().actions[0];
        assert_eq!(action.name, "delete");
        assert_eq!(
            action.artifacts["snap"].key_value["id"],
            format!("id-{run}")
        );
        let state = if i == 0 { "failed" } else { "complete" };
        set_state(&client, &ns, &d.name_any(), state).await?;
    }
    // Our finalizer goes once every run is handled.
    let s = support::wait_for(&schedules, "od", LONG, |s| {
        s.finalizers() == [HOLD.to_string()]
    })
    .await?;
    let present = names(&sets.list(&ListParams::default()).await?.items);
    let kept = complete[0];
    assert!(present.contains(kept.as_str()), "{present:?}");
    assert!(present.contains(&plan::delete_name(kept)), "{present:?}");
    for gone in complete[1..].iter().chain(&failed_run) {
        assert!(
            !present.contains(gone.as_str()),
            "{gone} not removed: {present:?}"
        );
        assert!(!present.contains(&plan::delete_name(gone)), "{present:?}");
    }
    let cond = &s.status.unwrap_or_default().conditions;
    assert!(
        cond.iter()
            .any(|c| c.reason == "RunsKept" && c.message.contains(kept.as_str())),
        "{cond:?}"
    );
    let reasons = event_reasons(&client, &ns).await?;
    for r in [
        "DeletingRuns",
        "RunDeleted",
        "DeleteActionFailed",
        "RunsKept",
    ] {
        assert!(reasons.contains(r), "no {r} Event: {reasons:?}");
    }
    patch_schedule(
        &client,
        &ns,
        "od",
        json!({"metadata": {"finalizers": null}}),
    )
    .await?;
    support::poll(LONG, || async {
        matches!(schedules.get_opt("od").await, Ok(None)).then_some(())
    })
    .await?;
    gc_settled(&client, &ns).await?;
    assert!(sets.get_opt(kept).await?.is_some(), "kept run lost");
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_recreated_schedule_adopts_its_runs() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-adopt").await?;
    let ctl = start(&client, &ns, None);
    let meta = json!({"name": "re", "annotations": {ANNOTATION_RUN_NOW: "tok"}});
    create_schedule_meta(
        &client,
        &ns,
        meta.clone(),
        json!({"schedule": "@every 2s", "retention": {"keepLast": 20}}),
    )
    .await?;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let now_run = plan::run_now_name("re", "tok");
    support::wait_for(&sets, &now_run, LONG, |_| true).await?;
    set_state(&client, &ns, &now_run, "complete").await?;
    decide_runs(&client, &ns, "re", &["complete", "complete", "complete"]).await?;
    suspend(&client, &ns, "re").await?;
    delete_schedule(&client, &ns, "re").await?;
    let old = runs(&client, &ns, "re").await?;
    assert!(old.len() >= 4, "{:?}", names(&old));
    // Re-created as a GitOps tool would: same name, same run-now token,
    // fewer runs to keep.
    create_schedule_meta(
        &client,
        &ns,
        meta,
        json!({"schedule": "@every 2s", "suspend": true, "retention": {"keepLast": 2}}),
    )
    .await?;
    // The old runs count toward keepLast: only the 2 newest stay.
    let mut by_time: Vec<(String, String)> = old
        .iter()
        .map(|a| {
            (
                a.annotations()[ANNOTATION_SCHEDULED_TIME].clone(),
                a.name_any(),
            )
        })
        .collect();
    by_time.sort();
    let newest: BTreeSet<String> = by_time
        .iter()
        .rev()
        .take(2)
        .map(|(_, n)| n.clone())
        .collect();
    let left = support::poll(LONG, || async {
        let v = runs(&client, &ns, "re").await.ok()?;
        (names(&v) == newest).then_some(v)
    })
    .await?;
    for a in &left {
        assert_run_of(a, "re");
    }
    // The run-now request was already handled by the earlier schedule: adopted, not re-run.
    let st = support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "re").await.ok()?.status?;
        (st.last_run_now_token.as_deref() == Some("tok")).then_some(st)
    })
    .await?;
    assert!(st.retention.removing.is_empty(), "{:?}", st.retention);
    let reasons = event_reasons(&client, &ns).await?;
    assert!(!reasons.contains("NameConflict"), "{reasons:?}");
    assert!(reasons.contains("Rotated"), "{reasons:?}");
    // Now unsuspended: new ticks come, one ActionSet each, beside the adopted ones.
    patch_schedule(&client, &ns, "re", json!({"spec": {"suspend": false}})).await?;
    decide_runs(&client, &ns, "re", &["complete", "complete"]).await?;
    assert_one_run_per_tick(&runs(&client, &ns, "re").await?, "re");
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn rotation_spares_running_and_newest_runs_and_the_preview_says_so() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-preview").await?;
    let ctl = start(&client, &ns, None);
    // No tick during the test; runs come from run-now requests.
    create_schedule(
        &client,
        &ns,
        "pv",
        json!({"schedule": "@every 1h", "retention": {"keepLast": 0, "keepFailed": 0}}),
    )
    .await?;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let mut made = Vec::new();
    for (token, state) in [("t1", "running"), ("t2", "complete"), ("t3", "complete")] {
        patch_schedule(
            &client,
            &ns,
            "pv",
            json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: token}}}),
        )
        .await?;
        let name = plan::run_now_name("pv", token);
        let a = support::wait_for(&sets, &name, LONG, |_| true).await?;
        set_state(&client, &ns, &name, state).await?;
        made.push((a.annotations()[ANNOTATION_SCHEDULED_TIME].clone(), name));
    }
    let running = made[0].1.clone();
    let mut complete = made[1..].to_vec();
    complete.sort();
    let (older, newest) = (complete[0].1.clone(), complete[1].1.clone());
    // keepLast 0: the older complete run goes; the running one and the
    // newest complete one stay. The preview lists what the next completed
    // run rotates: the newest complete one, never the running one.
    let st = support::poll(LONG, || async {
        let present = names(&runs(&client, &ns, "pv").await.ok()?);
        let st = get_schedule(&client, &ns, "pv").await.ok()?.status?;
        let preview: Vec<&str> = st
            .retention
            .next_rotation
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        (!present.contains(&older) && preview == [newest.as_str()]).then_some(st)
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}; expected preview [{newest}] and {older} rotated"))?;
    let present = names(&runs(&client, &ns, "pv").await?);
    assert_eq!(present, BTreeSet::from([running.clone(), newest.clone()]));
    assert!(
        st.active.iter().any(|r| r.name == running),
        "{:?}",
        st.active
    );
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn on_delete_delete_lets_the_schedule_go_at_the_time_limit() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-limit").await?;
    let ctl = start_with(
        &client,
        SchedulerOptions {
            namespace: Some(ns.clone()),
            finalize_timeout: Duration::from_secs(3),
            ..Default::default()
        },
    );
    create_schedule(
        &client,
        &ns,
        "tl",
        json!({"schedule": "@every 2s", "retention": {
            "keepLast": 20, "deleteAction": "delete", "onDelete": "Delete"}}),
    )
    .await?;
    let decided = decide_runs(&client, &ns, "tl", &["running", "complete"]).await?;
    let mut complete: Vec<String> = suspend(&client, &ns, "tl").await?;
    complete.extend(
        decided
            .iter()
            .filter(|(_, s)| **s == "complete")
            .map(|(n, _)| n.clone()),
    );
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    support::wait_for(&schedules, "tl", LONG, |s| {
        s.finalizers().iter().any(|f| f == FINALIZER_DELETE_RUNS)
    })
    .await?;
    // Nobody runs the delete actions, and the running run never ends: the
    // schedule still goes once the time limit has passed, and keeps them.
    delete_schedule(&client, &ns, "tl").await?;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    for run in &complete {
        let d = sets.get_opt(&plan::delete_name(run)).await?;
        assert!(
            d.is_some_and(|d| claim::not_started(&d)),
            "{run}: its delete action was started and never ran"
        );
    }
    assert_eq!(
        names(
            &scheduled(&runs(&client, &ns, "tl").await?)
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        ),
        decided
            .keys()
            .cloned()
            .chain(complete.iter().cloned())
            .collect(),
        "every run kept"
    );
    let reasons = event_reasons(&client, &ns).await?;
    assert!(reasons.contains("RunsKept"), "{reasons:?}");
    ctl.stop().await;
    Ok(())
}

/// Rotation's delete action runs where a Kanister user runs it: the corpus' PostgreSQL delete
/// action renders `{{ .Namespace.Name }}` and declares no kind, so `deleteActionKind: Namespace`
/// runs it on the namespace of the runs' StatefulSet (as `kanctl --namespacetargets`); a
/// Blueprint whose delete action declares `kind: Namespace` gets the same without it; with
/// neither, the run's own object, as before.
#[tokio::test]
async fn delete_action_runs_on_the_kind_the_schedule_or_blueprint_names() -> anyhow::Result<()> {
    use blueprint_operator::model::Blueprint;
    let (client, ns) = setup("sched-delkind").await?;
    let blueprints: Api<Blueprint> = Api::namespaced(client.clone(), &ns);
    let corpus = support::corpus::dir().expect("the Kanister corpus (KANISTER_CORPUS)");
    let text = std::fs::read_to_string(
        corpus.join("kanister-examples/postgresql/postgres-blueprint.yaml"),
    )?;
    let mut pg: Blueprint = serde_yaml::from_str(&text)?;
    assert!(
        pg.actions["delete"].kind.is_empty(),
        "unmodified corpus Blueprint"
    );
    pg.metadata.namespace = Some(ns.clone());
    blueprints.create(&PostParams::default(), &pg).await?;
    let declared: Blueprint = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "declares-namespace", "namespace": ns},
        "actions": {"backup": {"kind": "StatefulSet", "phases": []},
                    "delete": {"kind": "Namespace", "phases": []}},
    }))?;
    blueprints.create(&PostParams::default(), &declared).await?;
    let ctl = start(&client, &ns, None);
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let sts = json!({"kind": "StatefulSet", "name": "shop-postgresql", "namespace": ns});
    let namespace = json!({"kind": "Namespace", "name": ns, "namespace": ns});
    for (name, bp, kind, want) in [
        ("ovr", "postgres-bp", Some("Namespace"), &namespace),
        ("decl", "declares-namespace", None, &namespace),
        ("own", "postgres-bp", None, &sts),
    ] {
        let mut retention = json!({"keepLast": 1, "deleteAction": "delete"});
        if let Some(k) = kind {
            retention["deleteActionKind"] = json!(k);
        }
        let s: ActionSchedule = serde_json::from_value(json!({
            "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"schedule": "@every 1h", "retention": retention,
                "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": bp,
                    "object": sts, "profile": {"name": "s3", "namespace": ns}}]}},
        }))?;
        schedules.create(&PostParams::default(), &s).await?;
        // Two complete runs (run-now): keepLast 1 rotates the older through the delete action.
        let mut made = Vec::new();
        for token in ["t1", "t2"] {
            patch_schedule(
                &client,
                &ns,
                name,
                json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: token}}}),
            )
            .await?;
            let run = plan::run_now_name(name, token);
            let a = support::wait_for(&sets, &run, LONG, |_| true).await?;
            set_state(&client, &ns, &run, "complete").await?;
            made.push((a.annotations()[ANNOTATION_SCHEDULED_TIME].clone(), run));
        }
        made.sort();
        let older = &made[0].1;
        let del = support::wait_for(&sets, &plan::delete_name(older), LONG, |_| true).await?;
        let action = &del.spec.as_ref().unwrap().actions[0];
        assert_eq!(
            (action.name.as_str(), action.blueprint.as_str()),
            ("delete", bp)
        );
        let o = &action.object;
        assert_eq!(
            json!({"kind": o.kind, "name": o.name, "namespace": o.namespace}),
            *want,
            "schedule {name}"
        );
        assert_eq!(
            action.artifacts["snap"].key_value["id"],
            format!("id-{older}")
        );
        assert_eq!(action.profile.as_ref().unwrap().name, "s3");
    }
    ctl.stop().await;
    Ok(())
}

/// While suspended no tick comes, but an active run still completes and rotates: the preview
/// says what that rotation removes. A run that has not started (pending: how a run waiting for
/// its turn looks), a running one and the newest complete one are never rotated.
#[tokio::test]
async fn a_suspended_schedules_preview_lists_what_its_active_runs_rotate() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-preview-susp").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(
        &client,
        &ns,
        "ps",
        json!({"schedule": "@every 1h", "suspend": true,
               "retention": {"keepLast": 0, "keepFailed": 0}}),
    )
    .await?;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    // Four runs (run-now works while suspended), then states by their order in time.
    let mut made = Vec::new();
    for token in ["t1", "t2", "t3", "t4"] {
        patch_schedule(
            &client,
            &ns,
            "ps",
            json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: token}}}),
        )
        .await?;
        let name = plan::run_now_name("ps", token);
        let a = support::wait_for(&sets, &name, LONG, |_| true).await?;
        made.push((a.annotations()[ANNOTATION_SCHEDULED_TIME].clone(), name));
    }
    made.sort();
    let [oldest, newest_complete, running, pending] =
        <[String; 4]>::try_from(made.into_iter().map(|(_, n)| n).collect::<Vec<_>>()).unwrap();
    set_state(&client, &ns, &running, "running").await?;
    set_state(&client, &ns, &oldest, "complete").await?;
    set_state(&client, &ns, &newest_complete, "complete").await?;
    // keepLast 0: the older complete run goes now. Once the running and the pending run
    // complete, the newest complete one is no longer newest: the preview lists it, and never
    // the two active runs.
    let st = support::poll(LONG, || async {
        let present = names(&runs(&client, &ns, "ps").await.ok()?);
        let st = get_schedule(&client, &ns, "ps").await.ok()?.status?;
        let preview: Vec<&str> = st
            .retention
            .next_rotation
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        (!present.contains(&oldest) && preview == [newest_complete.as_str()]).then_some(st)
    })
    .await
    .map_err(|e| {
        anyhow::anyhow!("{e}; expected preview [{newest_complete}] and {oldest} rotated")
    })?;
    let present = names(&runs(&client, &ns, "ps").await?);
    assert_eq!(
        present,
        BTreeSet::from([newest_complete.clone(), running.clone(), pending.clone()])
    );
    let active: BTreeSet<&str> = st.active.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(active, BTreeSet::from([running.as_str(), pending.as_str()]));
    ctl.stop().await;
    Ok(())
}

/// Many schedules due at one tick against an API server that lets one write through
/// at a time (and refuses the rest with 429, as without API Priority and Fairness): the
/// scheduler backs off and sends the same creates again, and every schedule's run for the
/// tick exists exactly once, under its tick's name, with the tick recorded in its status.
#[tokio::test]
async fn a_throttling_api_server_gets_every_run_of_a_tick_exactly_once() -> anyhow::Result<()> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};

    const N: usize = 40;
    // system:masters is never throttled: the test's own requests (and the control plane's)
    // pass, the scheduler's (a ServiceAccount) are limited.
    let own = tokio::task::spawn_blocking(|| {
        support::cluster::OwnCluster::start(
            "--enable-priority-and-fairness=false --max-requests-inflight=2 \
             --max-mutating-requests-inflight=1",
        )
    })
    .await??;
    let admin_kc = own.cluster.kubeconfig.clone();
    let admin = support::rbac::client_from(&admin_kc).await?;
    support::install_crds(&admin).await?;
    let ns = support::namespace(&admin, "sched-429").await;

    // The scheduler as a ServiceAccount bound to cluster-admin (RBAC is not what is tested).
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(admin.clone(), &ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "scheduler"}}))?,
    )
    .await?;
    let crbs: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(admin.clone());
    crbs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": format!("{ns}-scheduler")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "scheduler", "namespace": ns}],
        }))?,
    )
    .await?;
    let token = support::rbac::service_account_token(&admin, &ns, "scheduler").await?;
    // In the cluster's state directory: removed with it.
    let kc = own
        .cluster
        .dir
        .as_ref()
        .expect("a cluster the test started")
        .join("scheduler.kubeconfig");
    support::rbac::token_kubeconfig(&admin_kc, &token, &ns, &kc)?;
    // As the controller makes it: kube's own per-request retry off, the scheduler backs off.
    let mut config = support::rbac::config_from(&kc).await?;
    config.default_retry = false;
    let client = Client::try_from(config)?;

    // One tick, at least 40 s ahead: every schedule is taken up before it, and hourly, so no
    // second tick comes while the test runs.
    let at = chrono::Utc::now() + chrono::Duration::seconds(40);
    let tick = chrono::DateTime::from_timestamp((at.timestamp() / 60 + 1) * 60, 0).unwrap();
    let cron = format!("{} * * * *", chrono::Timelike::minute(&tick));
    let names: Vec<String> = (0..N).map(|i| format!("s{i:02}")).collect();
    for name in &names {
        create_schedule(&admin, &ns, name, json!({"schedule": cron})).await?;
    }
    let expected: BTreeSet<String> = names.iter().map(|n| plan::run_name(n, tick)).collect();

    let metrics = scheduler::Metrics::unregistered();
    let ctl = start_with(
        &client,
        SchedulerOptions {
            namespace: Some(ns.clone()),
            metrics: metrics.clone(),
            // More creates at once than the API server takes: it must throttle them.
            max_in_flight: 32,
            concurrency: 64,
            ..Default::default()
        },
    );

    // Every schedule taken up (its next tick in its status) first: the take-up's status
    // writes, throttled too, would otherwise hold the scheduler's places in flight at the
    // tick and let the creates through one by one, never meeting each other.
    let schedules: Api<ActionSchedule> = Api::namespaced(admin.clone(), &ns);
    let next_is_tick = |s: &ActionSchedule| {
        s.status
            .as_ref()
            .and_then(|st| st.next_schedule_time.as_ref())
            .is_some_and(|t| t.0.as_second() == tick.timestamp())
    };
    let statuses = watcher(schedules.clone(), watcher::Config::default()).applied_objects();
    futures::pin_mut!(statuses);
    let mut taken_up = BTreeSet::new();
    tokio::time::timeout((tick - chrono::Utc::now()).to_std()?, async {
        while taken_up.len() < N {
            if let Some(Ok(s)) = statuses.next().await
                && next_is_tick(&s)
            {
                taken_up.insert(s.name_any());
            }
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("taken up before the tick: {} of {N}", taken_up.len()))?;

    // Every run of the tick seen, then every schedule's status saying so.
    let sets: Api<ActionSet> = Api::namespaced(admin.clone(), &ns);
    let mut seen = BTreeSet::new();
    let watch = watcher(sets.clone(), watcher::Config::default()).applied_objects();
    futures::pin_mut!(watch);
    let wait = Duration::from_secs(300) + (tick - chrono::Utc::now()).to_std()?;
    tokio::time::timeout(wait, async {
        while seen.len() < N {
            if let Some(Ok(a)) = watch.next().await {
                seen.insert(a.name_any());
            }
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("runs seen by the deadline: {} of {N}: {seen:?}", seen.len()))?;
    let recorded = |s: &ActionSchedule| {
        s.status
            .as_ref()
            .and_then(|st| st.last_schedule_time.as_ref())
            .is_some_and(|t| t.0.as_second() == tick.timestamp())
    };
    let statuses = watcher(schedules.clone(), watcher::Config::default()).applied_objects();
    futures::pin_mut!(statuses);
    let mut done = BTreeSet::new();
    tokio::time::timeout(Duration::from_secs(300), async {
        while done.len() < N {
            if let Some(Ok(s)) = statuses.next().await
                && recorded(&s)
            {
                done.insert(s.name_any());
            }
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("statuses with the tick: {} of {N}", done.len()))?;
    ctl.stop().await;

    // Exactly one run per schedule, named for the tick; none lost, none twice.
    let all = sets.list(&ListParams::default()).await?.items;
    let got: Vec<String> = all.iter().map(|a| a.name_any()).collect();
    assert_eq!(got.len(), N, "{got:?}");
    assert_eq!(got.iter().cloned().collect::<BTreeSet<_>>(), expected);
    for a in &all {
        let owner = a.annotations()[ANNOTATION_SCHEDULE].clone();
        assert_eq!(a.name_any(), plan::run_name(&owner, tick));
        assert_eq!(a.labels()[LABEL_TRIGGER], "scheduled");
    }
    for s in schedules.list(&ListParams::default()).await?.items {
        let st = s.status.clone().unwrap_or_default();
        assert!(recorded(&s), "{}: {st:?}", s.name_any());
        assert_eq!(
            st.missed_runs + st.skipped_runs,
            0,
            "{}: {st:?}",
            s.name_any()
        );
    }
    fn counted<L>(
        family: &prometheus_client::metrics::family::Family<
            L,
            prometheus_client::metrics::counter::Counter,
        >,
        key: &str,
        value: &str,
    ) -> u64
    where
        L: prometheus_client::encoding::EncodeLabelSet
            + Clone
            + std::hash::Hash
            + Eq
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let mut text = String::new();
        let mut reg = prometheus_client::registry::Registry::default();
        reg.register("m", "", family.clone());
        prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
        text.lines()
            .filter(|l| l.starts_with("m_total{") && l.contains(&format!("{key}=\"{value}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>()
    }
    // Each run counted as created once, by the scheduler.
    assert_eq!(
        counted(&metrics.runs_created, "trigger", "scheduled"),
        N as u64
    );
    // The API server did throttle the creates: the back-off was exercised.
    let throttled = counted(&metrics.throttled, "request", "create");
    eprintln!(
        "creates throttled and sent again: {throttled}; other requests: {}",
        counted(&metrics.throttled, "request", "other")
    );
    assert!(
        throttled > 0,
        "no create was throttled: the test shows nothing"
    );
    drop(own);
    Ok(())
}

/// The `Ready` condition's reason of the schedule, if it has one.
fn ready_reason(s: &ActionSchedule) -> Option<String> {
    s.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.reason.clone())
}

#[tokio::test]
async fn the_breaker_opens_after_n_failed_runs_and_a_completed_run_now_closes_it()
-> anyhow::Result<()> {
    let (client, ns) = setup("sched-breaker").await?;
    let ctl = start(&client, &ns, None);
    create_schedule(
        &client,
        &ns,
        "br",
        json!({"schedule": "@every 2s", "suspendAfterFailures": 2, "retention": {"keepFailed": 5}}),
    )
    .await?;
    decide_runs(&client, &ns, "br", &["failed", "failed"]).await?;
    // Open: not ready, said once by a Warning Event, and ticks are skipped with the reason.
    support::poll(LONG, || async {
        let s = get_schedule(&client, &ns, "br").await.ok()?;
        let st = s.status.as_ref()?;
        (ready_reason(&s).as_deref() == Some("TooManyFailures")
            && st
                .recent_skips
                .iter()
                .any(|k| k.reason == "TooManyFailures"))
        .then_some(())
    })
    .await?;
    let s = get_schedule(&client, &ns, "br").await?;
    let st = s.status.clone().unwrap_or_default();
    assert!(st.consecutive_failures >= 2, "{st:?}");
    assert!(!s.spec.suspend, "the breaker must not write the spec");
    let open_runs = scheduled(&runs(&client, &ns, "br").await?).len();
    support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "br").await.ok()?.status?;
        (st.skipped_runs >= st_skipped(&s) + 3).then_some(())
    })
    .await?;
    assert_eq!(
        scheduled(&runs(&client, &ns, "br").await?).len(),
        open_runs,
        "scheduled runs created while the breaker was open"
    );
    let reasons = event_reasons(&client, &ns).await?;
    assert!(
        reasons.contains("TooManyFailures") && reasons.contains("SkippedTooManyFailures"),
        "{reasons:?}"
    );
    // run-now still runs while it is open; once it completes the breaker closes.
    patch_schedule(
        &client,
        &ns,
        "br",
        json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: "fix-1"}}}),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let now_run = plan::run_now_name("br", "fix-1");
    support::wait_for(&api, &now_run, LONG, |_| true).await?;
    set_state(&client, &ns, &now_run, "complete").await?;
    support::poll(LONG, || async {
        let s = get_schedule(&client, &ns, "br").await.ok()?;
        let st = s.status.as_ref()?;
        (ready_reason(&s).as_deref() == Some("Scheduled") && st.consecutive_failures == 0)
            .then_some(())
    })
    .await?;
    // Scheduled runs start again.
    support::poll(LONG, || async {
        let n = scheduled(&runs(&client, &ns, "br").await.ok()?).len();
        (n > open_runs).then_some(())
    })
    .await?;
    assert!(event_reasons(&client, &ns).await?.contains("Resumed"));
    ctl.stop().await;
    Ok(())
}

fn st_skipped(s: &ActionSchedule) -> u64 {
    s.status.as_ref().map(|st| st.skipped_runs).unwrap_or(0)
}

#[tokio::test]
async fn a_jittered_run_is_created_after_its_tick_by_the_offset_next_schedule_time_says()
-> anyhow::Result<()> {
    use blueprint_operator::scheduler::window::jitter_offset;
    let (client, ns) = setup("sched-jitter").await?;
    // A name whose offset is not 0 in this (randomly named) namespace.
    let name = (0..100)
        .map(|i| format!("jt{i}"))
        .find(|n| jitter_offset(&ns, n, 15) >= 3)
        .expect("an offset of 3 s or more among 100 names");
    let offset = chrono::Duration::seconds(jitter_offset(&ns, &name, 15));
    let ctl = start(&client, &ns, None);
    let s = create_schedule(
        &client,
        &ns,
        &name,
        json!({"schedule": "@every 20s", "jitter": "15s"}),
    )
    .await?;
    let created = s
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .unwrap_or_default();
    let tick = chrono::DateTime::from_timestamp(created + 20, 0).unwrap();
    let next = |s: &ActionSchedule| {
        s.status
            .as_ref()
            .and_then(|st| st.next_schedule_time.as_ref())
            .map(|t| t.0.as_second())
    };
    // Before the first run: the next run is the first tick plus the offset.
    let first_next = support::poll(LONG, || async {
        next(&get_schedule(&client, &ns, &name).await.ok()?)
    })
    .await?;
    assert_eq!(first_next, (tick + offset).timestamp());
    // The run keeps the nominal tick's name and time, and was created no earlier than
    // tick + offset.
    let run = support::poll(LONG, || async {
        runs(&client, &ns, &name).await.ok()?.into_iter().next()
    })
    .await?;
    assert_eq!(run.name_any(), plan::run_name(&name, tick));
    assert_eq!(
        run.annotations()[ANNOTATION_SCHEDULED_TIME],
        tick.to_rfc3339()
    );
    let run_created = run
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .unwrap_or_default();
    assert!(
        run_created >= (tick + offset).timestamp(),
        "created at {run_created}, tick {tick} + offset {offset}"
    );
    // Then the next tick plus the offset.
    let second = (tick + chrono::Duration::seconds(20) + offset).timestamp();
    support::poll(LONG, || async {
        let n = next(&get_schedule(&client, &ns, &name).await.ok()?)?;
        (n >= second).then_some(n)
    })
    .await
    .map(|n| assert_eq!((n - second) % 20, 0, "{n} is not a tick plus the offset"))?;
    ctl.stop().await;
    Ok(())
}

/// A schedule whose runs come only from run-now, verified into the Deployment `scratch`.
async fn verified_schedule(
    client: &Client,
    ns: &str,
    name: &str,
    verify: serde_json::Value,
    retention: serde_json::Value,
) -> anyhow::Result<()> {
    let mut verify = verify;
    verify["action"] = json!("restore");
    verify["object"] = json!({"kind": "Deployment", "name": "scratch", "namespace": ns});
    create_schedule(
        client,
        ns,
        name,
        json!({"schedule": "0 0 1 1 *", "verify": verify, "retention": retention}),
    )
    .await?;
    Ok(())
}

/// Ask `schedule` for a run now and complete it (as the executor would, with the artifact
/// `snap: {id: id-<run>}`); its name.
async fn complete_run_now(
    client: &Client,
    ns: &str,
    schedule: &str,
    token: &str,
) -> anyhow::Result<String> {
    // A run-now run is timed to the second, and runs of one second have no order between them
    // (retention would take them by name): start in a second of its own.
    let ms = chrono::Utc::now().timestamp_subsec_millis();
    tokio::time::sleep(Duration::from_millis(u64::from(1010 - ms.min(1000)))).await;
    patch_schedule(
        client,
        ns,
        schedule,
        json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: token}}}),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let name = plan::run_now_name(schedule, token);
    support::wait_for(&api, &name, LONG, |_| true).await?;
    set_state(client, ns, &name, "complete").await?;
    Ok(name)
}

/// Wait for the ActionSet `name` to exist, then give it `state`; returns it as created.
async fn decide(client: &Client, ns: &str, name: &str, state: &str) -> anyhow::Result<ActionSet> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let a = match support::wait_for(&api, name, LONG, |_| true).await {
        Ok(a) => a,
        Err(e) => {
            let v: Vec<_> = api
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .map(|a| {
                    (
                        a.name_any(),
                        a.metadata.labels,
                        a.metadata.annotations,
                        a.status.map(|s| s.state),
                    )
                })
                .collect();
            let s: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
            let st: Vec<_> = s
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .map(|x| x.status)
                .collect();
            anyhow::bail!("{e}\nActionSets: {v:#?}\nschedules: {st:#?}");
        }
    };
    set_state(client, ns, name, state).await?;
    Ok(a)
}

/// Wait until the run `name` records its verification; `(verified, by)`.
async fn verified_label(client: &Client, ns: &str, name: &str) -> anyhow::Result<(String, String)> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let a = support::wait_for(&api, name, LONG, |a| {
        a.labels().contains_key(LABEL_VERIFIED)
    })
    .await?;
    Ok((
        a.labels()[LABEL_VERIFIED].clone(),
        a.annotations()
            .get(ANNOTATION_VERIFIED_BY)
            .cloned()
            .unwrap_or_default(),
    ))
}

/// The status of `schedule` once `cond` holds (else an error showing it and the runs).
async fn status_until(
    client: &Client,
    ns: &str,
    schedule: &str,
    cond: impl Fn(&ActionScheduleStatus) -> bool,
) -> anyhow::Result<ActionScheduleStatus> {
    let cond = &cond;
    let seen = support::poll(LONG, || async move {
        let st = get_schedule(client, ns, schedule).await.ok()?.status?;
        cond(&st).then_some(st)
    })
    .await;
    if seen.is_err() {
        let st = get_schedule(client, ns, schedule).await?.status;
        let v: Vec<_> = runs(client, ns, schedule)
            .await?
            .into_iter()
            .map(|a| {
                (
                    a.name_any(),
                    a.metadata.labels,
                    a.metadata.annotations,
                    a.status.map(|s| s.state),
                )
            })
            .collect();
        anyhow::bail!("status not reached: {st:#?}\nruns: {v:#?}");
    }
    seen
}

/// The verification ActionSets (restores and checks) of `schedule`.
async fn verifications(
    client: &Client,
    ns: &str,
    schedule: &str,
) -> anyhow::Result<BTreeSet<String>> {
    Ok(runs(client, ns, schedule)
        .await?
        .iter()
        .filter(|a| a.labels().contains_key(LABEL_VERIFY_FOR))
        .map(|a| a.name_any())
        .collect())
}

#[tokio::test]
async fn a_complete_backup_is_verified_with_its_artifacts_and_a_failed_check_counts()
-> anyhow::Result<()> {
    let (client, ns) = setup("sched-verify").await?;
    let ctl = start(&client, &ns, None);
    verified_schedule(
        &client,
        &ns,
        "ver",
        json!({"checkAction": "count"}),
        json!({"keepLast": 1}),
    )
    .await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);

    // The first backup: restored with its artifacts into the scratch object, then checked.
    let r1 = complete_run_now(&client, &ns, "ver", "a").await?;
    let restore = decide(&client, &ns, &verify::verify_name(&r1), "complete").await?;
    let action = &restore.spec.as_ref().unwrap().actions[0];
    assert_eq!(
        (action.name.as_str(), action.blueprint.as_str()),
        ("restore", "demo-bp")
    );
    assert_eq!(action.object.name, "scratch");
    assert_eq!(action.artifacts["snap"].key_value["id"], format!("id-{r1}"));
    assert_eq!(restore.labels()[LABEL_VERIFY_FOR], r1);
    assert_eq!(restore.labels()[LABEL_TRIGGER], "verify");
    let check = decide(&client, &ns, &verify::check_name(&r1), "complete").await?;
    assert_eq!(check.spec.as_ref().unwrap().actions[0].name, "count");
    assert_eq!(
        verified_label(&client, &ns, &r1).await?,
        ("true".to_string(), verify::check_name(&r1))
    );
    support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "ver").await.ok()?.status?;
        (st.last_verified_run.as_deref() == Some(r1.as_str()) && st.last_verified_time.is_some())
            .then_some(())
    })
    .await?;

    // The second: its check fails. Unverified, counted; keepLast 1 keeps it (newest) and the
    // first (newest verified) beyond keepLast.
    let r2 = complete_run_now(&client, &ns, "ver", "b").await?;
    decide(&client, &ns, &verify::verify_name(&r2), "complete").await?;
    decide(&client, &ns, &verify::check_name(&r2), "failed").await?;
    assert_eq!(verified_label(&client, &ns, &r2).await?.0, "false");
    let st = support::poll(LONG, || async {
        let st = get_schedule(&client, &ns, "ver").await.ok()?.status?;
        (st.consecutive_verification_failures == 1).then_some(st)
    })
    .await?;
    assert_eq!(st.last_verified_run.as_deref(), Some(r1.as_str()));
    assert_eq!(
        st.consecutive_failures, 0,
        "a failed verification is no failed run"
    );
    assert!(
        api.get_opt(&r1).await?.is_some(),
        "the newest verified run is kept"
    );
    let reasons = event_reasons(&client, &ns).await?;
    assert!(
        reasons.contains("Verified") && reasons.contains("VerificationFailed"),
        "{reasons:?}"
    );

    // The third passes: the first (an older verified run) and the second (unverified, older
    // than the newest verified) rotate, each with its verification ActionSets.
    let r3 = complete_run_now(&client, &ns, "ver", "c").await?;
    decide(&client, &ns, &verify::verify_name(&r3), "complete").await?;
    decide(&client, &ns, &verify::check_name(&r3), "complete").await?;
    assert_eq!(verified_label(&client, &ns, &r3).await?.0, "true");
    let left = support::poll(LONG, || async {
        let left = names(&runs(&client, &ns, "ver").await.ok()?);
        (!left.contains(&r1) && !left.contains(&r2) && left.len() == 3).then_some(left)
    })
    .await?;
    let want: BTreeSet<String> = [
        r3.clone(),
        verify::verify_name(&r3),
        verify::check_name(&r3),
    ]
    .into_iter()
    .collect();
    assert_eq!(left, want);
    let st = get_schedule(&client, &ns, "ver")
        .await?
        .status
        .unwrap_or_default();
    assert_eq!(
        (
            st.last_verified_run.as_deref(),
            st.consecutive_verification_failures
        ),
        (Some(r3.as_str()), 0)
    );
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_restarted_controller_never_starts_a_second_verification() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-verify-restart").await?;
    let ctl = start(&client, &ns, None);
    verified_schedule(&client, &ns, "vr", json!({}), json!({"keepLast": 3})).await?;
    let r1 = complete_run_now(&client, &ns, "vr", "a").await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    support::wait_for(&api, &verify::verify_name(&r1), LONG, |_| true).await?;
    // Crash while the verification runs; it completes meanwhile.
    ctl.kill();
    set_state(&client, &ns, &verify::verify_name(&r1), "complete").await?;
    let ctl = start(&client, &ns, None);
    assert_eq!(verified_label(&client, &ns, &r1).await?.0, "true");
    // A later failed backup is never verified; once the status shows it, nothing more was
    // started for the first.
    let failed = "vr-fail";
    patch_schedule(
        &client,
        &ns,
        "vr",
        json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: failed}}}),
    )
    .await?;
    let r2 = plan::run_now_name("vr", failed);
    decide(&client, &ns, &r2, "failed").await?;
    // (Run-now runs are timed to the second: failure counts of runs in one second are not
    // what this test is about, so it waits for the run-now token and no active run instead.)
    status_until(&client, &ns, "vr", |st| {
        st.last_run_now_token.as_deref() == Some(failed)
            && st.active_count == 0
            && st.last_verified_run.as_deref() == Some(r1.as_str())
    })
    .await?;
    // A second restart, after the outcome was recorded.
    ctl.stop().await;
    let ctl = start(&client, &ns, None);
    patch_schedule(
        &client,
        &ns,
        "vr",
        json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: "again"}}}),
    )
    .await?;
    decide(&client, &ns, &plan::run_now_name("vr", "again"), "failed").await?;
    status_until(&client, &ns, "vr", |st| {
        st.last_run_now_token.as_deref() == Some("again") && st.active_count == 0
    })
    .await?;
    assert_eq!(
        verifications(&client, &ns, "vr").await?,
        BTreeSet::from([verify::verify_name(&r1)])
    );
    let st = get_schedule(&client, &ns, "vr")
        .await?
        .status
        .unwrap_or_default();
    assert_eq!(st.consecutive_verification_failures, 0);
    ctl.stop().await;
    Ok(())
}

#[tokio::test]
async fn ctl_verify_verifies_one_run_now_with_the_schedules_builder() -> anyhow::Result<()> {
    use crate::ctl::{ctl, text};
    let (client, ns) = setup("sched-ctl-verify").await?;
    let ctl_task = start(&client, &ns, None);
    // Verification ticks only once a year: nothing is verified unless asked.
    verified_schedule(
        &client,
        &ns,
        "cv",
        json!({"schedule": "0 0 1 1 *"}),
        json!({}),
    )
    .await?;
    let r1 = complete_run_now(&client, &ns, "cv", "a").await?;
    let out = ctl(&ns, &["verify", &r1]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let restore = decide(&client, &ns, &verify::verify_name(&r1), "complete").await?;
    let action = &restore.spec.as_ref().unwrap().actions[0];
    assert_eq!(action.artifacts["snap"].key_value["id"], format!("id-{r1}"));
    assert_eq!(verified_label(&client, &ns, &r1).await?.0, "true");
    // Once verified, asking again says how to verify again instead of starting a second one.
    let again = ctl(&ns, &["verify", &r1]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("delete it"), "{}", text(&again));
    // A verification ActionSet is not a backup run.
    let not = ctl(&ns, &["verify", &verify::verify_name(&r1)]);
    assert_eq!(not.status.code(), Some(2), "{}", text(&not));
    status_until(&client, &ns, "cv", |st| {
        st.last_verified_run.as_deref() == Some(r1.as_str())
    })
    .await?;
    let runs_out = ctl(&ns, &["runs", "cv"]);
    let table = String::from_utf8_lossy(&runs_out.stdout).to_string();
    let row = table
        .lines()
        .find(|l| l.starts_with(&format!("{r1} ")))
        .unwrap_or_default();
    assert!(row.split_whitespace().any(|c| c == "yes"), "{table}");
    assert!(table.contains(&format!("Verified: newest {r1}")), "{table}");
    ctl_task.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_verify_schedule_tick_verifies_the_newest_complete_run_once() -> anyhow::Result<()> {
    let (client, ns) = setup("sched-verify-tick").await?;
    let ctl = start(&client, &ns, None);
    // No verification tick for a year while the two backups complete.
    verified_schedule(
        &client,
        &ns,
        "vt",
        json!({"schedule": "0 0 1 1 *"}),
        json!({"keepLast": 5}),
    )
    .await?;
    let r1 = complete_run_now(&client, &ns, "vt", "a").await?;
    let r2 = complete_run_now(&client, &ns, "vt", "b").await?;
    // The controller has seen both complete before it ticks.
    status_until(&client, &ns, "vt", |st| {
        st.last_run_now_token.as_deref() == Some("b") && st.active_count == 0
    })
    .await?;
    // Ticks every 5 s from the schedule's creation (no verification yet): one is due now.
    patch_schedule(
        &client,
        &ns,
        "vt",
        json!({"spec": {"verify": {"schedule": "@every 5s"}}}),
    )
    .await?;
    let created = get_schedule(&client, &ns, "vt")
        .await?
        .metadata
        .creation_timestamp
        .map(|t| t.0.as_second())
        .unwrap_or_default();

    // One verification, of the newest complete run, scheduled at a tick.
    let restore = decide(&client, &ns, &verify::verify_name(&r2), "complete").await?;
    assert_eq!(restore.labels()[LABEL_VERIFY_FOR], r2);
    assert_eq!(restore.labels()[LABEL_TRIGGER], "verify");
    let tick =
        chrono::DateTime::parse_from_rfc3339(&restore.annotations()[ANNOTATION_SCHEDULED_TIME])?
            .timestamp();
    assert_eq!((tick - created) % 5, 0, "{tick} is not a verify tick");
    assert_eq!(
        verified_label(&client, &ns, &r2).await?,
        ("true".to_string(), verify::verify_name(&r2))
    );
    status_until(&client, &ns, "vt", |st| {
        st.last_verified_run.as_deref() == Some(r2.as_str()) && st.last_verified_time.is_some()
    })
    .await?;

    // Two more ticks pass with no new complete run: nothing more is verified, the older run
    // (older than the newest verified) included.
    let after = tick + 11;
    let wait = (after - chrono::Utc::now().timestamp()).max(0);
    tokio::time::sleep(Duration::from_secs(u64::try_from(wait).unwrap_or(0))).await;
    assert_eq!(
        verifications(&client, &ns, "vt").await?,
        BTreeSet::from([verify::verify_name(&r2)])
    );

    // The ticks go on: a new complete run is verified at a later one; the older never is.
    let r3 = complete_run_now(&client, &ns, "vt", "c").await?;
    let restore3 = decide(&client, &ns, &verify::verify_name(&r3), "complete").await?;
    let tick3 =
        chrono::DateTime::parse_from_rfc3339(&restore3.annotations()[ANNOTATION_SCHEDULED_TIME])?
            .timestamp();
    assert!(
        tick3 > tick && (tick3 - tick) % 5 == 0,
        "{tick3} after {tick}"
    );
    status_until(&client, &ns, "vt", |st| {
        st.last_verified_run.as_deref() == Some(r3.as_str())
    })
    .await?;
    assert_eq!(
        verifications(&client, &ns, "vt").await?,
        BTreeSet::from([verify::verify_name(&r2), verify::verify_name(&r3)])
    );
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    assert!(!api.get(&r1).await?.labels().contains_key(LABEL_VERIFIED));
    ctl.stop().await;
    Ok(())
}
