//! Which ActionSets the executor runs, with the controller as it
//! is deployed: all namespaces, executor and scheduler. This file has one test
//! so that its controller is the only one in this test binary's cluster.
//! Opted in: the label `blueprint-operator.io/executor=blueprint-operator`
//! (ActionSchedule runs carry it) or a namespace of `--run-namespaces`. An
//! opted-in ActionSet that is already `running` without our markers
//! (Kanister started it) is never resumed.

mod support;

use std::time::Duration;

use blueprint_operator::model::{
    ActionSet, Blueprint, EXECUTOR_LABEL_VALUE, LABEL_EXECUTOR, State,
};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use support::controller::{Controller, setup};

const FINISH: Duration = Duration::from_secs(180);

fn blueprint(ns: &str) -> Blueprint {
    serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "bp", "namespace": ns},
        "actions": {"backup": {"phases": [{
            "func": "KubeTask", "name": "one",
            "args": {"image": "busybox:stable", "command": ["sh", "-c", "echo"],
                "podAnnotations": support::kwok_annotations(0, "ok")},
        }]}},
    }))
    .expect("blueprint")
}

fn object(ns: &str) -> Value {
    json!({"apiVersion": "v1", "resource": "namespaces", "kind": "Namespace", "name": ns, "namespace": ns})
}

/// An ActionSet of action `backup` of Blueprint `bp`, with `extra` merged in
/// at the top (labels, a status).
async fn create(client: &Client, ns: &str, name: &str, extra: Value) -> anyhow::Result<()> {
    let mut v = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"actions": [{"name": "backup", "blueprint": "bp", "object": object(ns)}]},
    });
    json_patch::merge(&mut v, &extra);
    let a: ActionSet = serde_json::from_value(v)?;
    Api::<ActionSet>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &a)
        .await?;
    Ok(())
}

fn labelled() -> Value {
    json!({"metadata": {"labels": {LABEL_EXECUTOR: EXECUTOR_LABEL_VALUE}}})
}

async fn complete(client: &Client, ns: &str, name: &str) -> anyhow::Result<ActionSet> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let a = support::wait_for(&api, name, FINISH, |a| {
        a.state().is_some_and(State::is_terminal)
    })
    .await?;
    assert_eq!(a.state(), Some(State::Complete), "{ns}/{name}");
    Ok(a)
}

#[tokio::test]
async fn only_opted_in_actionsets_run_and_foreign_runs_are_never_resumed() -> anyhow::Result<()> {
    let Some((client, labels_ns)) = setup("own-label").await else {
        return Ok(());
    };
    let whole_ns = support::namespace(&client, "own-ns").await;
    for ns in [&labels_ns, &whole_ns] {
        Api::<Blueprint>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &blueprint(ns))
            .await?;
    }
    // Before the controller starts: an ActionSet for someone else, and one
    // that Kanister started (running, labelled, but none of our markers).
    create(&client, &labels_ns, "plain", json!({})).await?;
    let mut foreign = labelled();
    foreign["status"] = json!({"state": "running", "actions": [{
        "name": "backup", "blueprint": "bp", "object": object(&labels_ns),
        "phases": [{"name": "one", "state": "running"}],
        "deferPhase": {"name": "", "state": ""},
    }]});
    create(&client, &labels_ns, "foreign", foreign).await?;

    // As deployed: all namespaces, executor and scheduler.
    let _controller = Controller::spawn(&["--run-namespaces", &whole_ns], &[]);

    create(&client, &labels_ns, "labelled", labelled()).await?;
    create(&client, &whole_ns, "plain", json!({})).await?;
    support::create_run_now_schedule(&client, &labels_ns).await?;

    complete(&client, &labels_ns, "labelled").await?;
    complete(&client, &whole_ns, "plain").await?;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &labels_ns);
    let run = support::kanister::first_run(&client, &labels_ns, "nightly", FINISH).await?;
    assert_eq!(run.labels()[LABEL_EXECUTOR], EXECUTOR_LABEL_VALUE);
    complete(&client, &labels_ns, &run.name_any()).await?;

    // Not opted in: untouched.
    let plain = api.get("plain").await?;
    assert!(plain.status.is_none(), "{:?}", plain.status);
    assert!(plain.finalizers().is_empty());
    // Started elsewhere: not resumed, and told why.
    let foreign = api.get("foreign").await?;
    let st = foreign.status.as_ref().expect("status");
    assert_eq!(st.state, State::Running);
    assert_eq!(st.actions[0].phases[0].state, State::Running);
    assert!(foreign.finalizers().is_empty());
    assert!(foreign.annotations().is_empty());
    let ev = support::poll(support::WAIT, || {
        let client = client.clone();
        let ns = labels_ns.clone();
        async move {
            Api::<Event>::namespaced(client, &ns)
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("foreign"))
        }
    })
    .await?;
    assert_eq!(ev.reason.as_deref(), Some("ActionSetNotResumed"));
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert!(
        ev.note
            .as_deref()
            .is_some_and(|n| n.contains("another controller, such as Kanister, runs it")),
        "{:?}",
        ev.note
    );
    Ok(())
}
