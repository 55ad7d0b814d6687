//! Kanister objects as the e2e tests write them (Blueprints, ActionSets, their phases) and what
//! the executor says back (its Events, the phases' states): one place, so that every test module
//! builds and reads them the same way.

use anyhow::Context as _;
use blueprint_operator::model::{ActionSet, Blueprint, State};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

/// Creates Blueprint `name` with `actions` (a map action name → action).
pub async fn create_blueprint(
    client: &Client,
    ns: &str,
    name: &str,
    actions: Value,
) -> anyhow::Result<()> {
    create_blueprint_with(client, ns, json!({"name": name}), actions).await
}

/// [`create_blueprint`] with the whole `metadata` (labels, annotations).
pub async fn create_blueprint_with(
    client: &Client,
    ns: &str,
    metadata: Value,
    actions: Value,
) -> anyhow::Result<()> {
    let api: Api<Blueprint> = Api::namespaced(client.clone(), ns);
    let bp: Blueprint = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": metadata, "actions": actions,
    }))?;
    api.create(&PostParams::default(), &bp).await?;
    Ok(())
}

/// Creates the Blueprint of the YAML `file` (a corpus Blueprint, unmodified); returns its name.
pub async fn create_file_blueprint(
    client: &Client,
    ns: &str,
    file: &std::path::Path,
) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
    let bp: Value = serde_yaml::from_str(&text)?;
    let bp: Blueprint = serde_json::from_value(bp)?;
    let name = bp.metadata.name.clone().unwrap_or_default();
    let api: Api<Blueprint> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), &bp).await?;
    Ok(name)
}

/// ActionSet `name` of the one action `action` (name, blueprint, object, ... as JSON).
pub fn actionset(name: &str, action: Value) -> anyhow::Result<ActionSet> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": name}, "spec": {"actions": [action]},
    }))?)
}

/// Creates ActionSet `name` of the one action `action` (see [`actionset`]).
pub async fn create_actionset(
    client: &Client,
    ns: &str,
    name: &str,
    action: Value,
) -> anyhow::Result<()> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), &actionset(name, action)?)
        .await?;
    Ok(())
}

/// Action `name` of Blueprint `blueprint` on `object`: an entry of an ActionSet's spec.actions.
pub fn action(name: &str, blueprint: &str, object: Value) -> Value {
    json!({"name": name, "blueprint": blueprint, "object": object})
}

/// `base` with the keys of the JSON object `extra` added (or replaced).
pub fn merged(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    base
}

/// Creates, in `ns`, Secret `name` of type `secret_type` holding `data` (its stringData).
pub async fn create_secret(
    client: &Client,
    ns: &str,
    name: &str,
    secret_type: &str,
    data: Value,
) -> anyhow::Result<()> {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": secret_type, "stringData": data,
    });
    super::create::<Secret>(client, ns, secret)
        .await
        .with_context(|| format!("creating Secret {ns}/{name}"))?;
    Ok(())
}

/// Creates, in `ns`, Kanister Profile `name` of `spec` (its `location`, `credential`,
/// `skipSSLVerify`).
pub async fn create_profile(
    client: &Client,
    ns: &str,
    name: &str,
    spec: Value,
) -> anyhow::Result<()> {
    let gvk = GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Profile");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "profiles");
    let head = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Profile",
        "metadata": {"name": name, "namespace": ns},
    });
    let profile: DynamicObject = serde_json::from_value(merged(head, spec))?;
    Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar)
        .create(&PostParams::default(), &profile)
        .await
        .with_context(|| format!("creating Profile {ns}/{name} (Kanister CRDs installed?)"))?;
    Ok(())
}

/// A Profile's keyPair credential: fields `id_field` and `secret_field` of Secret `secret` in
/// `ns`.
pub fn key_pair_credential(id_field: &str, secret_field: &str, secret: &str, ns: &str) -> Value {
    json!({
        "type": "keyPair",
        "keyPair": {
            "idField": id_field, "secretField": secret_field,
            "secret": {"apiVersion": "v1", "kind": "Secret", "name": secret, "namespace": ns},
        },
    })
}

/// The Namespace `ns` as an action's object.
pub fn namespace_object(ns: &str) -> Value {
    json!({"apiVersion": "v1", "resource": "namespaces", "kind": "Namespace", "name": ns, "namespace": ns})
}

/// Deployment `name` of namespace `ns` as an action's object.
pub fn deployment_object(ns: &str, name: &str) -> Value {
    json!({"kind": "Deployment", "name": name, "namespace": ns})
}

/// A KubeTask phase (busybox, `echo task`) whose pod gets `annotations` (kwok's behaviour:
/// [`super::kwok`]).
pub fn kube_task(name: &str, annotations: Value) -> Value {
    json!({
        "func": "KubeTask",
        "name": name,
        "args": {
            "image": "busybox:stable",
            "command": ["sh", "-c", "echo task"],
            "podAnnotations": annotations,
        }
    })
}

/// The log line by which a phase outputs `key` = `value` (what `kando output` prints).
pub fn out_line(key: &str, value: &str) -> String {
    format!("###Phase-output###: {{\"key\":\"{key}\",\"value\":\"{value}\"}}")
}

/// The executor's Events about ActionSet `name`, oldest first, as "reason|message", once there
/// are at least `n` (Events are published right after the status write that caused them, so
/// they may trail the status a little). The error lists those seen.
pub async fn events(
    client: &Client,
    ns: &str,
    name: &str,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    let got = super::poll(super::WAIT, || async {
        let evs = list_events(client, ns, name).await.ok()?;
        (evs.len() >= n).then_some(evs)
    })
    .await;
    match got {
        Ok(evs) => Ok(evs),
        Err(_) => {
            let last = list_events(client, ns, name).await?;
            anyhow::bail!("expected at least {n} Events about {name}, got {last:?}")
        }
    }
}

/// The executor's Events about ActionSet `name` now, oldest first, as "reason|message".
pub async fn list_events(client: &Client, ns: &str, name: &str) -> anyhow::Result<Vec<String>> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let mut evs: Vec<Event> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.reporting_controller.as_deref() == Some("blueprint-operator.io/executor")
                && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("ActionSet")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
        })
        .collect();
    evs.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    Ok(evs
        .into_iter()
        .map(|e| {
            format!(
                "{}|{}",
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default()
            )
        })
        .collect())
}

/// The reasons of [`events`].
pub fn reasons(evs: &[String]) -> Vec<&str> {
    evs.iter()
        .map(|e| e.split('|').next().unwrap_or(""))
        .collect()
}

/// The states of the first action's phases and of its deferPhase.
pub fn states(a: &ActionSet) -> (Vec<State>, State) {
    let st = &a.status.as_ref().expect("status").actions[0];
    (
        st.phases.iter().map(|p| p.state).collect(),
        st.defer_phase.state,
    )
}

/// The first ActionSet schedule `schedule` created in `ns`, once there is one.
pub async fn first_run(
    client: &Client,
    ns: &str,
    schedule: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<ActionSet> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let selector = format!("{}={schedule}", blueprint_operator::model::LABEL_SCHEDULE);
    super::poll(timeout, || {
        let (api, lp) = (api.clone(), ListParams::default().labels(&selector));
        async move { api.list(&lp).await.ok()?.items.into_iter().next() }
    })
    .await
}
