//! Exclusive runs per application: ActionSets on one object that ask with the
//! annotation `blueprint-operator.io/exclusive` never run at the same time; the later ones
//! stay `pending`, name the run they wait for (annotation and Event), start one at a time in
//! creation order, or fail at their wait timeout naming it. The controller binary against the
//! test control plane; a phase's kwok pod runs until the test annotates it to exit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blueprint_operator::executor::claim;
use blueprint_operator::model::{ActionSchedule, ActionSet, Blueprint, State};
use blueprint_operator::scheduler::plan;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::ctl::{ctl, json_of, text};
use crate::support;
use crate::support::controller::Controller;

const FINISH: Duration = Duration::from_secs(180);
const EXCLUSIVE: &str = "blueprint-operator.io/exclusive";
const WAIT_TIMEOUT: &str = "blueprint-operator.io/exclusive-wait-timeout";
const WAITING_FOR: &str = "blueprint-operator.io/waiting-for";

/// Blueprint `name` whose one KubeTask phase's pod runs until the test lets it exit.
async fn held_blueprint(client: &Client, ns: &str, name: &str) {
    let api: Api<Blueprint> = Api::namespaced(client.clone(), ns);
    let bp: Blueprint = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint", "metadata": {"name": name},
        "actions": {"backup": {"phases": [{"func": "KubeTask", "name": "work", "args": {
            "image": "busybox:stable", "command": ["sh", "-c", "true"]}}]}}}))
    .expect("Blueprint");
    api.create(&PostParams::default(), &bp)
        .await
        .expect("create Blueprint");
}

/// ActionSet `name` running `backup` of Blueprint `bp` on `object` with `annotations`.
async fn actionset(
    client: &Client,
    ns: &str,
    name: &str,
    bp: &str,
    object: Value,
    annotations: Value,
) {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let a: ActionSet = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"actions": [{"name": "backup", "blueprint": bp, "object": object}]}}))
    .expect("ActionSet");
    api.create(&PostParams::default(), &a)
        .await
        .expect("create ActionSet");
}

fn namespace_object(ns: &str) -> Value {
    json!({"apiVersion": "v1", "resource": "namespaces", "kind": "Namespace", "name": ns, "namespace": ns})
}

async fn wait_state(client: &Client, ns: &str, name: &str, state: State) -> ActionSet {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    support::wait_for(&api, name, FINISH, |a| a.state() == Some(state))
        .await
        .unwrap_or_else(|e| panic!("{name} never {state:?}: {e}"))
}

/// Waits until `name` has started (`running`, and no longer only claimed).
async fn wait_started(client: &Client, ns: &str, name: &str) -> ActionSet {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    support::wait_for(&api, name, FINISH, |a| {
        a.state() == Some(State::Running) && !claim::not_started(a)
    })
    .await
    .unwrap_or_else(|e| panic!("{name} never started: {e}"))
}

/// Waits until `name` waits, not started (`pending`, or `running` as claimed at creation), and
/// names `blocker` as the run it waits for.
async fn wait_waiting_for(client: &Client, ns: &str, name: &str, blocker: &str) -> ActionSet {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let want = format!("{ns}/{blocker}");
    support::wait_for(&api, name, FINISH, |a| {
        claim::not_started(a) && a.annotations().get(WAITING_FOR) == Some(&want)
    })
    .await
    .unwrap_or_else(|e| panic!("{name} never waited for {blocker}: {e}"))
}

/// Lets the held pod of ActionSet `name` exit 0.
async fn release(client: &Client, ns: &str, name: &str) {
    let uid = Api::<ActionSet>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("ActionSet")
        .uid()
        .unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let sel = format!("blueprint-operator.io/actionset-uid={uid}");
    let pod = support::first_listed(&pods, &ListParams::default().labels(&sel), |_| true, FINISH)
        .await
        .unwrap_or_else(|e| panic!("no pod of {name}: {e}"));
    let patch = json!({"metadata": {"annotations": {support::kwok::EXIT: "0"}}});
    pods.patch(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .expect("annotate pod");
}

/// Watches the namespace's ActionSets and records every moment two of `watched` ran at once.
fn overlap_watch(client: &Client, ns: &str, watched: &[&str]) -> Arc<Mutex<Vec<String>>> {
    let overlaps = Arc::new(Mutex::new(Vec::new()));
    let (api, watched) = (
        Api::<ActionSet>::namespaced(client.clone(), ns),
        watched
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
    );
    let out = overlaps.clone();
    tokio::spawn(async move {
        // Started and not ended (a claimed run is `running` before it starts).
        let mut states: BTreeMap<String, bool> = BTreeMap::new();
        let stream = watcher(api, watcher::Config::default()).applied_objects();
        futures::pin_mut!(stream);
        while let Ok(Some(a)) = stream.try_next().await {
            if !watched.contains(&a.name_any()) {
                continue;
            }
            let started = a.state() == Some(State::Running) && !claim::not_started(&a);
            states.insert(a.name_any(), started);
            let running: Vec<&String> = states
                .iter()
                .filter(|(_, started)| **started)
                .map(|(n, _)| n)
                .collect();
            if running.len() > 1 {
                out.lock().unwrap().push(format!("{running:?}"));
            }
        }
    });
    overlaps
}

async fn events_about(client: &Client, ns: &str, name: &str, reason: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
        })
        .filter_map(|e| e.note)
        .collect()
}

/// A running exclusive backup holds a one-off restore (that did not ask) and a second
/// exclusive backup of the same namespace; they start one at a time in creation order as
/// each run ends, never two at once; a run with a wait timeout fails naming the run it waited
/// for; a run on another object does not wait.
#[tokio::test]
async fn runs_on_one_object_wait_in_creation_order_and_a_wait_timeout_names_the_run()
-> anyhow::Result<()> {
    let Some((client, ns)) = support::controller::setup("exclusive").await else {
        return Ok(());
    };
    held_blueprint(&client, &ns, "held").await;
    let _ctl = Controller::start(&ns, &[]);
    let object = namespace_object(&ns);
    let exclusive = json!({EXCLUSIVE: "true"});
    let overlaps = overlap_watch(&client, &ns, &["first", "restore", "second"]);

    actionset(
        &client,
        &ns,
        "first",
        "held",
        object.clone(),
        exclusive.clone(),
    )
    .await;
    wait_started(&client, &ns, "first").await;
    actionset(&client, &ns, "restore", "held", object.clone(), json!({})).await;
    // The second exclusive backup from the command line.
    let o = ctl(
        &ns,
        &[
            "create",
            "--blueprint",
            "held",
            "--action",
            "backup",
            "--object",
            &format!("namespace/{ns}"),
            "--name",
            "second",
            "--exclusive",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    wait_waiting_for(&client, &ns, "restore", "first").await;
    wait_waiting_for(&client, &ns, "second", "first").await;
    let d = json_of(&ctl(&ns, &["describe", "second", "-o", "json"]));
    assert_eq!(d["waitingFor"], format!("{ns}/first"), "{d:#}");
    // Claimed by `ctl create`, it stays `running` while it waits: Kanister's controller starts
    // `pending` ones.
    assert_eq!(d["state"], "running", "{d:#}");
    // Said in an Event: the run, the object, why.
    let key = format!("namespace/{ns}/{ns}");
    let notes = support::poll(support::WAIT, || async {
        let n = events_about(&client, &ns, "restore", "WaitingForExclusiveRun").await;
        (!n.is_empty()).then_some(n)
    })
    .await?;
    assert!(
        notes[0].starts_with(&format!(
            "Waiting for ActionSet {ns}/first on {key} (which is running)"
        )),
        "{notes:?}"
    );

    // With a wait timeout it fails, naming the run it waited for; nothing ran.
    actionset(
        &client,
        &ns,
        "impatient",
        "held",
        object.clone(),
        json!({EXCLUSIVE: "true", WAIT_TIMEOUT: "3s"}),
    )
    .await;
    let a = support::wait_actionset_done(&client, &ns, "impatient", FINISH).await?;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Failed);
    assert_eq!(
        st.error.message,
        format!(
            "not started: waited 3s (blueprint-operator.io/exclusive-wait-timeout) for ActionSet {ns}/first, which is running on {key}"
        )
    );
    assert!(st.actions.is_empty(), "nothing ran: {st:?}");

    // Another object: no wait.
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "other"}}))?;
    Api::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &cm)
        .await?;
    let other = json!({"apiVersion": "v1", "resource": "configmaps", "kind": "ConfigMap", "name": "other", "namespace": ns});
    actionset(&client, &ns, "elsewhere", "held", other, exclusive.clone()).await;
    wait_started(&client, &ns, "elsewhere").await;

    // first ends: restore (created first) starts, second now waits for it.
    release(&client, &ns, "first").await;
    wait_state(&client, &ns, "first", State::Complete).await;
    let r = wait_started(&client, &ns, "restore").await;
    assert!(
        !r.annotations().contains_key(WAITING_FOR),
        "the annotation goes when it starts: {:?}",
        r.annotations()
    );
    wait_waiting_for(&client, &ns, "second", "restore").await;
    release(&client, &ns, "restore").await;
    wait_started(&client, &ns, "second").await;
    release(&client, &ns, "second").await;
    wait_state(&client, &ns, "second", State::Complete).await;
    release(&client, &ns, "elsewhere").await;
    assert_eq!(
        support::wait_actionset_done(&client, &ns, "restore", FINISH)
            .await?
            .state(),
        Some(State::Complete)
    );
    assert!(
        overlaps.lock().unwrap().is_empty(),
        "runs on one object overlapped: {:?}",
        overlaps.lock().unwrap()
    );
    Ok(())
}

/// Watches the runs of the namespace's schedules and records each one deleted while it was
/// pending, running, or the newest complete run.
fn rotation_watch(client: &Client, ns: &str) -> Arc<Mutex<Vec<String>>> {
    let bad = Arc::new(Mutex::new(Vec::new()));
    let api = Api::<ActionSet>::namespaced(client.clone(), ns);
    let out = bad.clone();
    tokio::spawn(async move {
        // name -> (scheduled time, last state seen)
        let mut seen: BTreeMap<String, (String, Option<State>)> = BTreeMap::new();
        let cfg = watcher::Config::default().labels("blueprint-operator.io/schedule");
        let stream = watcher(api, cfg);
        futures::pin_mut!(stream);
        while let Ok(Some(ev)) = stream.try_next().await {
            match ev {
                watcher::Event::Apply(a) | watcher::Event::InitApply(a) => {
                    let t = a
                        .annotations()
                        .get("blueprint-operator.io/scheduled-time")
                        .cloned()
                        .unwrap_or_default();
                    seen.insert(a.name_any(), (t, a.state()));
                }
                watcher::Event::Delete(a) => {
                    let name = a.name_any();
                    let Some((t, state)) = seen.remove(&name) else {
                        continue;
                    };
                    let newer_complete = seen
                        .values()
                        .any(|(t2, s)| *s == Some(State::Complete) && *t2 >= t);
                    if state != Some(State::Complete) && state != Some(State::Failed) {
                        out.lock()
                            .unwrap()
                            .push(format!("{name} deleted while {state:?}"));
                    } else if state == Some(State::Complete) && !newer_complete {
                        out.lock()
                            .unwrap()
                            .push(format!("{name} deleted while the newest complete run"));
                    }
                }
                _ => {}
            }
        }
    });
    bad
}

/// Rotation with exclusive runs: a schedule's run that waits for its turn (behind another
/// run of the same schedule), the running one and the newest complete one are never rotated
/// (keepLast 0, keepFailed 0); `status.retention.nextRotation` lists exactly what the next
/// rotation deletes, and it does.
#[tokio::test]
async fn waiting_running_and_newest_complete_runs_are_never_rotated() -> anyhow::Result<()> {
    let Some((client, ns)) = support::controller::setup("exclusive-rot").await else {
        return Ok(());
    };
    held_blueprint(&client, &ns, "held").await;
    let bad = rotation_watch(&client, &ns);
    // Executor and scheduler.
    let _ctl = Controller::spawn(&["--namespace", &ns], &[]);
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    let s: ActionSchedule = serde_json::from_value(json!({
        "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
        "metadata": {"name": "db"},
        "spec": {"schedule": "0 0 1 1 *", "exclusive": true,
            "retention": {"keepLast": 0, "keepFailed": 0},
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "held",
                "object": namespace_object(&ns)}]}}}))?;
    schedules.create(&PostParams::default(), &s).await?;
    let run_now = |token: &'static str| {
        let schedules = schedules.clone();
        async move {
            let p = json!({"metadata": {"annotations": {"blueprint-operator.io/run-now": token}}});
            schedules
                .patch("db", &PatchParams::default(), &Patch::Merge(&p))
                .await
                .expect("run now");
            plan::run_now_name("db", token)
        }
    };
    let r1 = run_now("t1").await;
    wait_started(&client, &ns, &r1).await;
    release(&client, &ns, &r1).await;
    wait_state(&client, &ns, &r1, State::Complete).await;
    let r2 = run_now("t2").await;
    let a2 = wait_started(&client, &ns, &r2).await;
    assert_eq!(
        a2.annotations().get(EXCLUSIVE).map(String::as_str),
        Some("true")
    );
    let r3 = run_now("t3").await;
    wait_waiting_for(&client, &ns, &r3, &r2).await;

    // r1 is the newest complete run, r2 runs, r3 waits: none goes. The preview says r1 goes
    // at the next rotation (once r2 or r3 completes), never r2 or r3.
    let preview = |want: Vec<String>| {
        let schedules = schedules.clone();
        async move {
            support::poll(FINISH, || async {
                let st = schedules.get("db").await.ok()?.status?;
                let names: Vec<String> = st
                    .retention
                    .next_rotation
                    .iter()
                    .map(|e| e.name.clone())
                    .collect();
                (names == want).then_some(())
            })
            .await
            .unwrap_or_else(|e| panic!("nextRotation never {want:?}: {e}"));
        }
    };
    preview(vec![r1.clone()]).await;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let present = |names: &[&String]| {
        let sets = sets.clone();
        let want: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        async move {
            support::poll(FINISH, || async {
                let have: BTreeSet<String> = sets
                    .list(&ListParams::default().labels("blueprint-operator.io/schedule=db"))
                    .await
                    .ok()?
                    .items
                    .iter()
                    .map(|a| a.name_any())
                    .collect();
                (have == want).then_some(())
            })
            .await
            .unwrap_or_else(|e| panic!("runs never exactly {want:?}: {e}"));
        }
    };
    present(&[&r1, &r2, &r3]).await;

    // r2 completes: r1 goes (no longer the newest); r3 starts; the preview names r2.
    release(&client, &ns, &r2).await;
    wait_started(&client, &ns, &r3).await;
    present(&[&r2, &r3]).await;
    preview(vec![r2.clone()]).await;
    // r3 completes: r2 goes, r3 stays.
    release(&client, &ns, &r3).await;
    wait_state(&client, &ns, &r3, State::Complete).await;
    present(&[&r3]).await;
    assert!(
        bad.lock().unwrap().is_empty(),
        "rotated what must stay: {:?}",
        bad.lock().unwrap()
    );
    Ok(())
}
