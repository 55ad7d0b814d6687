//! Beside Kanister's controller, which starts every ActionSet of its namespace that has no
//! status or a `pending` one: ours are claimed at creation (by the webhook, the scheduler) and
//! run by this executor alone; a labelled ActionSet that was not claimed is not run where a
//! Kanister controller pod runs, and says why. With the controller as deployed (all namespaces,
//! executor and scheduler); one test, so that its controller is the only one in this test
//! binary's cluster. Kanister's real controller beside ours is the real tier's
//! (tests/real/kanister.rs); here a pod with its label stands for it.

mod support;

use std::time::Duration;

use blueprint_operator::model::labels::{ANNOTATION_CLAIMED, ANNOTATION_EXECUTOR_RECORD};
use blueprint_operator::model::{ActionSet, EXECUTOR_LABEL_VALUE, LABEL_EXECUTOR, State};
use blueprint_operator::webhook::certs;
use blueprint_operator::webhook::server::{self, ServerConfig};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use support::controller::{Controller, setup};
use support::kanister::create_blueprint;

const FINISH: Duration = Duration::from_secs(180);

fn object(ns: &str) -> Value {
    json!({"apiVersion": "v1", "resource": "namespaces", "kind": "Namespace", "name": ns, "namespace": ns})
}

fn actionset(ns: &str, name: &str, extra: Value) -> anyhow::Result<ActionSet> {
    let mut v = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"actions": [{"name": "backup", "blueprint": "bp", "object": object(ns)}]},
    });
    json_patch::merge(&mut v, &extra);
    Ok(serde_json::from_value(v)?)
}

async fn create(client: &Client, a: &ActionSet) -> anyhow::Result<ActionSet> {
    let ns = a.namespace().unwrap_or_default();
    Ok(Api::<ActionSet>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), a)
        .await?)
}

fn labelled() -> Value {
    json!({"metadata": {"labels": {LABEL_EXECUTOR: EXECUTOR_LABEL_VALUE}}})
}

/// Waits until `name` is complete and checks that this executor ran it.
async fn run_here(client: &Client, ns: &str, name: &str) -> anyhow::Result<ActionSet> {
    let a = support::wait_actionset_done(client, ns, name, FINISH).await?;
    assert_eq!(a.state(), Some(State::Complete), "{ns}/{name}");
    assert!(
        a.annotations().contains_key(ANNOTATION_EXECUTOR_RECORD),
        "{ns}/{name} was not run by blueprint-operator: {:?}",
        a.annotations()
    );
    Ok(a)
}

/// A pod labelled as Kanister's chart labels its controller, running on the kwok node.
async fn kanister_controller_pod(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "kanister-kanister-operator-0", "labels": {"app": "kanister-operator"}},
        "spec": {"containers": [{"name": "kanister-operator", "image": "ghcr.io/kanisterio/controller:0.119.0"}]},
    }))?;
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), &pod).await?;
    support::wait_for(&api, "kanister-kanister-operator-0", support::WAIT, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await?;
    Ok(())
}

/// Our webhook server, in this process, registered for labelled ActionSets created in `ns`.
async fn webhook_for(client: &Client, ns: &str) -> anyhow::Result<server::Running> {
    let dir = std::env::temp_dir().join(format!("bpo-e2e-claim-{}", std::process::id()));
    let dev = certs::generate(&["127.0.0.1".into()], 2)?;
    certs::write(&dev, &dir, true)?;
    let running = server::start(ServerConfig {
        shutdown_grace: Duration::from_secs(1),
        ..ServerConfig::local(&dir)
    })
    .await?;
    // As the manifests register it, with the test's namespace only.
    let config: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": format!("bpo-e2e-claim-{ns}")},
        "webhooks": [{
            "name": "claim.actionsets.blueprint-operator.io",
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": 10,
            "failurePolicy": "Fail", "reinvocationPolicy": "Never",
            "clientConfig": {
                "url": format!("https://127.0.0.1:{}/mutate/actionset", running.addr.port()),
                "caBundle": dev.ca_bundle(),
            },
            "rules": [{"apiGroups": ["cr.kanister.io"], "apiVersions": ["v1alpha1"],
                "operations": ["CREATE"], "resources": ["actionsets"], "scope": "Namespaced"}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "objectSelector": {"matchLabels": {LABEL_EXECUTOR: EXECUTOR_LABEL_VALUE}},
        }],
    }))?;
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &config)
        .await?;
    Ok(running)
}

async fn events_about(client: &Client, ns: &str, name: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
}

#[tokio::test]
async fn claimed_actionsets_run_here_and_unclaimed_ones_are_left_to_kanister() -> anyhow::Result<()>
{
    let Some((client, hooked)) = setup("claim-hook").await else {
        return Ok(());
    };
    // `hooked`: Kanister's controller and our webhook. `bare`: Kanister's controller, no
    // webhook. `free`: neither.
    let bare = support::namespace(&client, "claim-bare").await;
    let free = support::namespace(&client, "claim-free").await;
    let phase = json!({"backup": {"phases": [{
        "func": "KubeTask", "name": "one",
        "args": {"image": "busybox:stable", "command": ["sh", "-c", "echo"],
            "podAnnotations": support::kwok_annotations(0, "ok")},
    }]}});
    for ns in [&hooked, &bare, &free] {
        create_blueprint(&client, ns, "bp", phase.clone()).await?;
    }
    for ns in [&hooked, &bare] {
        kanister_controller_pod(&client, ns).await?;
    }
    let webhook = webhook_for(&client, &hooked).await?;

    let sets_bare: Api<ActionSet> = Api::namespaced(client.clone(), &bare);
    let _controller = Controller::spawn(&[], &[]);

    // Through the webhook: stored claimed, then run here.
    let stored = create(&client, &actionset(&hooked, "through-webhook", labelled())?).await?;
    assert_eq!(
        stored
            .annotations()
            .get(ANNOTATION_CLAIMED)
            .map(String::as_str),
        Some("admission")
    );
    let st = stored.status.as_ref().expect("a claimed status");
    assert_eq!(st.state, State::Running);
    assert_eq!(st.actions.len(), 1, "as many actions as the spec: {st:?}");
    // Written `pending` by hand: claimed all the same. Written `running`: left alone, and
    // never resumed (someone else started it).
    let pending = labelled_with_status(&hooked, "pending-by-hand", "pending")?;
    let stored = create(&client, &pending).await?;
    assert_eq!(stored.state(), Some(State::Running));
    let running = labelled_with_status(&hooked, "running-by-hand", "running")?;
    let stored = create(&client, &running).await?;
    assert!(!stored.annotations().contains_key(ANNOTATION_CLAIMED));
    // Not labelled: Kanister's, not sent to our webhook, untouched.
    let stored = create(&client, &actionset(&hooked, "kanisters", json!({}))?).await?;
    assert!(stored.status.is_none() && stored.annotations().is_empty());

    // No webhook: a schedule's run is created claimed, and runs here.
    support::create_run_now_schedule(&client, &bare).await?;
    // No webhook, a labelled ActionSet not claimed: not run beside Kanister's controller ...
    create(&client, &actionset(&bare, "unclaimed", labelled())?).await?;
    // ... and run where no Kanister controller runs.
    create(&client, &actionset(&free, "unclaimed", labelled())?).await?;

    run_here(&client, &hooked, "through-webhook").await?;
    run_here(&client, &hooked, "pending-by-hand").await?;
    run_here(&client, &free, "unclaimed").await?;
    let run = support::kanister::first_run(&client, &bare, "nightly", FINISH).await?;
    let run = run_here(&client, &bare, &run.name_any()).await?;
    assert_eq!(
        run.annotations()
            .get(ANNOTATION_CLAIMED)
            .map(String::as_str),
        Some("schedule")
    );

    let ev = support::poll(support::WAIT, || {
        let client = client.clone();
        let bare = bare.clone();
        async move {
            events_about(&client, &bare, "unclaimed")
                .await
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("ActionSetNotClaimed"))
        }
    })
    .await?;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    let note = ev.note.unwrap_or_default();
    assert!(
        note.contains("kanister-kanister-operator-0") && note.contains("webhook"),
        "{note}"
    );
    let unclaimed = sets_bare.get("unclaimed").await?;
    assert!(unclaimed.status.is_none(), "{:?}", unclaimed.status);
    assert!(unclaimed.finalizers().is_empty());

    let sets_hooked: Api<ActionSet> = Api::namespaced(client.clone(), &hooked);
    let running = sets_hooked.get("running-by-hand").await?;
    assert!(
        !running
            .annotations()
            .contains_key(ANNOTATION_EXECUTOR_RECORD)
    );
    let kanisters = sets_hooked.get("kanisters").await?;
    assert!(kanisters.status.is_none(), "{:?}", kanisters.status);

    // The webhook down: a labelled ActionSet is refused, and the error names the webhook.
    webhook.shutdown().await?;
    let refused = create(&client, &actionset(&hooked, "while-down", labelled())?).await;
    let error = refused.expect_err("created unclaimed while the webhook was down");
    assert!(
        error
            .to_string()
            .contains("claim.actionsets.blueprint-operator.io"),
        "{error}"
    );
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .delete(&format!("bpo-e2e-claim-{hooked}"), &DeleteParams::default())
        .await?;
    Ok(())
}

fn labelled_with_status(ns: &str, name: &str, state: &str) -> anyhow::Result<ActionSet> {
    let mut extra = labelled();
    extra["status"] = json!({"state": state, "actions": [{
        "name": "backup", "blueprint": "bp", "object": object(ns),
        "deferPhase": {"name": "", "state": ""},
    }]});
    actionset(ns, name, extra)
}
