//! What an ActionSet may reach and the template parameters the
//! controller builds from the references it is allowed,
//! with the real `blueprint-operator controller` binary against the test
//! control plane (kwok runs the pods; the ActionSet's podAnnotations tell
//! every pod to exit 0 with a phase-output log).

use crate::support;

use std::time::Duration;

use crate::support::controller::{Controller, setup};
use crate::support::kanister::{self, create_actionset, create_blueprint, out_line};
use blueprint_operator::model::{ActionSet, State};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const FINISH: Duration = Duration::from_secs(180);

/// ActionSet podAnnotations: every pod exits 0 printing `log`.
fn pods_succeed(log: &str) -> Value {
    json!(support::kwok_annotations(0, log))
}

async fn create_secret(client: &Client, ns: &str, name: &str, data: Value) -> anyhow::Result<()> {
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let s: Secret = serde_json::from_value(json!({
        "metadata": {"name": name}, "stringData": data,
    }))?;
    api.create(&PostParams::default(), &s).await?;
    Ok(())
}

/// The Secret `keys` with both keys a keyPair Profile names.
async fn create_keys_secret(client: &Client, ns: &str) -> anyhow::Result<()> {
    let keys = json!({"access_key_id": "AKID", "secret_access_key": "SK"});
    create_secret(client, ns, "keys", keys).await
}

async fn create_profile(
    client: &Client,
    ns: &str,
    name: &str,
    endpoint: &str,
    secret: &str,
) -> anyhow::Result<()> {
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Profile"),
        "profiles",
    );
    let api: Api<kube::core::DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let p: kube::core::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Profile",
        "metadata": {"name": name, "namespace": ns},
        "location": {"type": "s3Compliant", "bucket": "bkt", "endpoint": endpoint, "region": "us-east-1"},
        "credential": {"type": "keyPair", "keyPair": {
            "idField": "access_key_id", "secretField": "secret_access_key",
            "secret": {"apiVersion": "v1", "kind": "Secret", "name": secret, "namespace": ns},
        }},
    }))?;
    api.create(&PostParams::default(), &p).await?;
    Ok(())
}

/// Action `action` of Blueprint `blueprint` on the namespace, every pod exiting 0; `extra` is
/// merged into it.
fn ns_action(ns: &str, blueprint: &str, action: &str, extra: Value) -> Value {
    let object = json!({"kind": "Namespace", "name": ns, "namespace": ns});
    let base = kanister::action(action, blueprint, object);
    let base = kanister::merged(base, json!({"podAnnotations": pods_succeed("done")}));
    kanister::merged(base, extra)
}

fn summary(a: &ActionSet) -> (State, String, State) {
    let st = a.status.as_ref().expect("status");
    (
        st.state,
        st.error.message.clone(),
        st.actions[0].defer_phase.state,
    )
}

/// A Blueprint whose action reads `.Secrets.s` in a KubeTask and always
/// runs a deferPhase.
fn secret_reader() -> Value {
    backup_with_cleanup(json!({"func": "KubeTask", "name": "read", "args": {
        "image": "busybox:stable",
        "command": ["sh", "-c", "echo {{ .Secrets.s.Data.k | toString }}"],
    }}))
}

/// Blueprint actions: `backup` runs `phase`, then a deferPhase KubeTask `cleanup`.
fn backup_with_cleanup(phase: Value) -> Value {
    json!({"backup": {
        "phases": [phase],
        "deferPhase": {"func": "KubeTask", "name": "cleanup", "args": {
            "image": "busybox:stable", "command": ["true"],
        }},
    }})
}

/// Two fresh namespaces: `<prefix>-b`, another tenant's, and `<prefix>-admin`, for a trusted
/// controller.
async fn other_and_trusted(client: &Client, prefix: &str) -> (String, String) {
    (
        support::namespace(client, &format!("{prefix}-b")).await,
        support::namespace(client, &format!("{prefix}-admin")).await,
    )
}

/// Runs action `backup` of Blueprint `bp` (`extra` merged into the action) as ActionSet `as`
/// in the confined namespace `ns` and in `trusted` (each with its own controller, the latter's
/// trusting it); returns both once done.
async fn run_confined_and_trusted(
    client: &Client,
    ns: &str,
    trusted: &str,
    bp: Value,
    extra: Value,
) -> anyhow::Result<(ActionSet, ActionSet)> {
    let _c1 = Controller::start(ns, &[]);
    let _c2 = Controller::start(trusted, &["--trusted-namespace", trusted]);
    for n in [ns, trusted] {
        create_blueprint(client, n, "bp", bp.clone()).await?;
        create_actionset(client, n, "as", ns_action(n, "bp", "backup", extra.clone())).await?;
    }
    Ok((
        support::wait_actionset_done(client, ns, "as", FINISH).await?,
        support::wait_actionset_done(client, trusted, "as", FINISH).await?,
    ))
}

/// Default: a Secret of another namespace is refused with a clear error on
/// the ActionSet, and the deferPhase still runs. A trusted namespace
/// (`--trusted-namespace`) keeps Kanister's behaviour.
#[tokio::test]
async fn cross_namespace_secret_is_refused_unless_trusted() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("ten-a").await else {
        return Ok(());
    };
    let (other, trusted) = other_and_trusted(&client, "ten").await;
    create_secret(&client, &other, "theirs", json!({"k": "their-value"})).await?;
    let (a, b) = run_confined_and_trusted(
        &client,
        &ns,
        &trusted,
        secret_reader(),
        json!({"secrets": {"s": {"name": "theirs", "namespace": other}}}),
    )
    .await?;
    let (state, msg, defer) = summary(&a);
    assert_eq!(state, State::Failed, "{msg}");
    assert!(
        msg.contains(&format!(
            "Secret {other}/theirs (secrets.s) is in another namespace than the ActionSet ({ns}); \
             cross-namespace references are off"
        )),
        "{msg}"
    );
    assert!(msg.contains("--trusted-namespace"), "{msg}");
    assert!(!msg.contains("their-value"), "{msg}");
    assert_eq!(defer, State::Complete, "the deferPhase still runs");
    let (state, msg, defer) = summary(&b);
    assert_eq!(
        (state, defer),
        (State::Complete, State::Complete),
        "trusted: {msg}"
    );
    Ok(())
}

/// Functions of a confined ActionSet get a client that stays in its
/// namespace: a KubeTask aimed at another namespace fails before any pod is
/// created there; the same Blueprint from a trusted namespace runs there.
#[tokio::test]
async fn functions_stay_in_the_actionset_namespace() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("ten-fn").await else {
        return Ok(());
    };
    let (other, trusted) = other_and_trusted(&client, "ten-fn").await;
    let bp = backup_with_cleanup(json!({"func": "KubeTask", "name": "elsewhere", "args": {
        "namespace": other, "image": "busybox:stable", "command": ["true"],
    }}));
    let (a, b) = run_confined_and_trusted(&client, &ns, &trusted, bp, json!({})).await?;
    let (state, msg, defer) = summary(&a);
    assert_eq!(state, State::Failed, "{msg}");
    assert!(
        msg.contains(&format!(
            "namespace {other} is outside the ActionSet's namespace {ns}"
        )),
        "{msg}"
    );
    assert_eq!(defer, State::Complete);
    let (state, msg, _) = summary(&b);
    assert_eq!(state, State::Complete, "trusted: {msg}");
    Ok(())
}

/// A Profile endpoint in the metadata range is refused before anything
/// connects; a keyPair Secret without the named key is
/// Kanister's error. Both fail the action; the deferPhase runs.
#[tokio::test]
async fn profile_endpoint_and_credential_keys_are_checked() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("ten-prof").await else {
        return Ok(());
    };
    let _c = Controller::start(&ns, &[]);
    create_keys_secret(&client, &ns).await?;
    create_secret(&client, &ns, "half", json!({"access_key_id": "AKID"})).await?;
    create_profile(&client, &ns, "metadata", "http://169.254.169.254", "keys").await?;
    create_profile(&client, &ns, "halfkeys", "http://127.0.0.1:1", "half").await?;
    create_profile(&client, &ns, "good", "http://127.0.0.1:1", "keys").await?;
    create_blueprint(
        &client,
        &ns,
        "bp",
        backup_with_cleanup(json!({"func": "KubeTask", "name": "use", "args": {
            "image": "busybox:stable",
            "command": ["sh", "-c", "echo {{ .Profile.Location.Endpoint }} {{ .Profile.Credential.KeyPair.ID }}"],
        }})),
    )
    .await?;
    for p in ["metadata", "halfkeys", "good"] {
        create_actionset(
            &client,
            &ns,
            p,
            ns_action(
                &ns,
                "bp",
                "backup",
                json!({"profile": {"name": p, "namespace": ns}}),
            ),
        )
        .await?;
    }
    // Each refused ActionSet fails with every one of its texts; its deferPhase runs.
    for (name, texts) in [
        (
            "metadata",
            vec![
                format!(
                    "Profile {ns}/metadata: location.endpoint \"http://169.254.169.254\" is in the link-local range 169.254.0.0/16"
                ),
                "refused before connecting".to_string(),
            ],
        ),
        (
            "halfkeys",
            vec![format!(
                "Value 'secret_access_key' not found in secret '{ns}:half'"
            )],
        ),
    ] {
        let (state, msg, defer) =
            summary(&support::wait_actionset_done(&client, &ns, name, FINISH).await?);
        assert_eq!((state, defer), (State::Failed, State::Complete), "{msg}");
        assert!(texts.iter().all(|t| msg.contains(t)), "{msg}");
    }
    let (state, msg, _) =
        summary(&support::wait_actionset_done(&client, &ns, "good", FINISH).await?);
    assert_eq!(state, State::Complete, "{msg}");
    Ok(())
}

/// Corpus Blueprints that read `.Phases.<earlier phase>.Secrets`
/// run through the controller: mongodb-atlas `restore` (the Secret named by
/// the input artifact, read again by the next phase) and
/// elasticsearch-incremental `delete`.
#[tokio::test]
async fn corpus_blueprints_read_earlier_phase_secrets() -> anyhow::Result<()> {
    let Some(dir) = support::corpus::dir() else {
        return Ok(());
    };
    let Some((client, ns)) = setup("ten-corpus").await else {
        return Ok(());
    };
    let _c = Controller::start(&ns, &[]);
    let load = |path: &str| -> anyhow::Result<Value> {
        let text = std::fs::read_to_string(dir.join(path))?;
        Ok(serde_yaml::from_str(&text)?)
    };
    let atlas = load("blueprints/mongodb-atlas/mongodb-atlas-blueprint.yaml")?;
    let es = load("blueprints/elasticsearch-incremental/elasticsearch-incremental-blueprint.yaml")?;
    create_blueprint(&client, &ns, "atlas", atlas["actions"].clone()).await?;
    create_blueprint(&client, &ns, "es", es["actions"].clone()).await?;
    create_secret(
        &client,
        &ns,
        "atlas-creds",
        json!({"orgid": "o", "privatekey": "p", "projectid": "pr", "publickey": "pu", "clustername": "c"}),
    )
    .await?;
    create_secret(
        &client,
        &ns,
        "es1-es-elastic-user",
        json!({"elastic": "pw"}),
    )
    .await?;
    create_keys_secret(&client, &ns).await?;
    create_profile(&client, &ns, "prof", "http://127.0.0.1:1", "keys").await?;
    create_actionset(
        &client,
        &ns,
        "atlas-restore",
        ns_action(
            &ns,
            "atlas",
            "restore",
            json!({
                "podAnnotations": pods_succeed(&out_line("restoreId", "r1")),
                "artifacts": {"backupOutput": {"keyValue": {
                    "snapshotId": "s1", "appNamespace": ns, "secretName": "atlas-creds",
                }}},
            }),
        ),
    )
    .await?;
    create_actionset(
        &client,
        &ns,
        "es-delete",
        ns_action(
            &ns,
            "es",
            "delete",
            json!({
                "profile": {"name": "prof", "namespace": ns},
                "artifacts": {"s3Snap": {"keyValue": {
                    "esClusterName": "es1", "esClusterNamespace": ns,
                    "repoPath": "repo", "snapshotName": "snap",
                }}},
            }),
        ),
    )
    .await?;
    for name in ["atlas-restore", "es-delete"] {
        let (state, msg, _) =
            summary(&support::wait_actionset_done(&client, &ns, name, FINISH).await?);
        assert_eq!(state, State::Complete, "{name}: {msg}");
    }
    Ok(())
}
