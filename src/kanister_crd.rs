//! Keeps `actions.<name>.deferPhase` of Kanister's Blueprint CRD open to any JSON value.
//!
//! Kanister's CRD (`blueprints.cr.kanister.io`, a structural schema) types `deferPhase` as an
//! object. The API server prunes and checks fields against the schema *before* admission
//! webhooks run, so a `deferPhase` written as a list never reaches our webhook: with strict
//! field validation (kubectl's default) it is refused with "strict decoding error: unknown field
//! actions.backup.deferPhase[0].args", otherwise its phases are pruned to `{}`. Replacing that
//! one schema node by `x-kubernetes-preserve-unknown-fields: true` (no `type`, no `properties`)
//! lets the list through; the mutating webhook then turns a one-element list into the object
//! and the validating webhook refuses longer lists, so what is stored stays Kanister's object
//! form, which Kanister's controller and a later revert of the schema read as before.
//!
//! Kanister's controller rewrites its CRDs (a full Update) every time it starts, and users may
//! re-apply Kanister's YAML; [`run`] watches the CRD and relaxes the node again each time it
//! finds it typed. The change is a JSON patch of that node alone, guarded by `test` operations
//! on the version's name and on the node's current value, so it never overwrites anything it
//! did not read, and it is sent with our own field manager ([`FIELD_MANAGER`]).

use std::future::Future;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use crate::kube_error::Describe;

/// Kanister's Blueprint CRD.
pub const CRD_NAME: &str = "blueprints.cr.kanister.io";

/// Field manager of our patch (shown in the CRD's managedFields).
pub const FIELD_MANAGER: &str = "blueprint-operator-kanister-crd";

/// The controller flag that turns [`run`] on or off (for messages).
pub const FLAG: &str = "--relax-kanister-deferphase-schema";

/// Keys, below a version's `openAPIV3Schema`, of the node that is relaxed.
const NODE_PATH: [&str; 5] = [
    "properties",
    "actions",
    "additionalProperties",
    "properties",
    "deferPhase",
];

/// The relaxed node: any JSON value, nothing pruned inside.
pub fn relaxed_node() -> Value {
    json!({
        "description": "Kanister's phase object. Relaxed by blueprint-operator to accept any value so that a one-element list reaches its admission webhook, which stores the phase object itself and refuses longer lists.",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// True when `node` accepts any JSON value and prunes nothing: preserve-unknown-fields and no
/// keyword that types, structures or restricts the value (a description is fine).
pub fn is_relaxed(node: &Value) -> bool {
    let Some(map) = node.as_object() else {
        return false;
    };
    map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && map
            .keys()
            .all(|k| k == "x-kubernetes-preserve-unknown-fields" || k == "description")
}

/// What [`plan`] found in a CRD.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Every served version's `deferPhase` already accepts any value.
    Relaxed,
    /// The JSON patch (RFC 6902 operations) that relaxes the typed nodes.
    Patch(Vec<Value>),
    /// The schema is not shaped as expected (another Kanister version, someone else's CRD):
    /// left alone, with the reason.
    Unsupported(String),
}

/// JSON pointer escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Decides what to do with the CRD document `crd` (the whole object as JSON).
pub fn plan(crd: &Value) -> Plan {
    let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) else {
        return Plan::Unsupported("the CRD has no spec.versions".into());
    };
    let mut ops = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        let name = version.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
            return Plan::Unsupported(format!("version {name:?} has no openAPIV3Schema"));
        };
        let node_pointer: String = NODE_PATH
            .iter()
            .map(|k| format!("/{}", escape(k)))
            .collect();
        let Some(node) = schema.pointer(&node_pointer) else {
            return Plan::Unsupported(format!(
                "version {name:?} has no schema at actions.<name>.deferPhase (a Kanister version this operator does not know)"
            ));
        };
        if is_relaxed(node) {
            continue;
        }
        let path = format!("/spec/versions/{i}/schema/openAPIV3Schema{node_pointer}");
        ops.push(json!({"op": "test", "path": format!("/spec/versions/{i}/name"), "value": name}));
        ops.push(json!({"op": "test", "path": path, "value": node}));
        ops.push(json!({"op": "replace", "path": path, "value": relaxed_node()}));
    }
    if ops.is_empty() {
        Plan::Relaxed
    } else {
        Plan::Patch(ops)
    }
}

/// What one [`ensure`] call did.
#[derive(Debug, Clone)]
pub enum Outcome {
    AlreadyRelaxed,
    Patched,
    Unsupported(String),
    /// The CRD changed since it was read (another replica relaxed it first, or someone
    /// re-applied it): nothing written; here is the current version.
    Changed(Box<DynamicObject>),
}

fn api(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(client, &ApiResource::erase::<CustomResourceDefinition>(&()))
}

/// Relaxes `crd` (as last seen) if needed.
pub async fn ensure(api: &Api<DynamicObject>, crd: &DynamicObject) -> Result<Outcome, kube::Error> {
    let doc = serde_json::to_value(crd).map_err(kube::Error::SerdeError)?;
    match plan(&doc) {
        Plan::Relaxed => Ok(Outcome::AlreadyRelaxed),
        Plan::Unsupported(why) => Ok(Outcome::Unsupported(why)),
        Plan::Patch(ops) => {
            let patch: json_patch::Patch =
                serde_json::from_value(Value::Array(ops)).map_err(kube::Error::SerdeError)?;
            let pp = PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            };
            match api.patch(CRD_NAME, &pp, &Patch::Json::<()>(patch)).await {
                Ok(_) => Ok(Outcome::Patched),
                // A failed `test` operation is answered 422 Invalid: tell it from a refused
                // schema by whether the CRD moved on.
                Err(kube::Error::Api(e)) if e.code == 422 => {
                    let now = api.get(CRD_NAME).await?;
                    if now.metadata.resource_version != crd.metadata.resource_version {
                        Ok(Outcome::Changed(Box::new(now)))
                    } else {
                        Err(kube::Error::Api(e))
                    }
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// Longest pause before retrying a patch the API server refused.
const MAX_RETRY: Duration = Duration::from_secs(300);

/// Watches [`CRD_NAME`] and relaxes its `deferPhase` node whenever it is typed, until
/// `shutdown` completes. Needs get/list/watch/patch on that one CRD (resourceNames); errors are
/// logged and retried, never fatal: without the relaxation only one-element and longer
/// `deferPhase` lists lose their admission behaviour.
pub async fn run(client: kube::Client, shutdown: impl Future<Output = ()>) {
    let api = api(client);
    let config = watcher::Config::default().fields(&format!("metadata.name={CRD_NAME}"));
    let mut events = watcher(api.clone(), config)
        .default_backoff()
        .applied_objects()
        .boxed();
    tokio::pin!(shutdown);
    let mut latest: Option<DynamicObject> = None;
    let mut retry: Option<tokio::time::Instant> = None;
    let mut backoff = Duration::from_secs(1);
    let mut unsupported_logged: Option<String> = None;
    info!(
        crd = CRD_NAME,
        flag = FLAG,
        "keeping Kanister's deferPhase schema relaxed"
    );
    loop {
        let due = retry.unwrap_or_else(|| tokio::time::Instant::now() + MAX_RETRY);
        tokio::select! {
            _ = &mut shutdown => return,
            event = events.next() => match event {
                Some(Ok(crd)) => {
                    latest = Some(crd);
                    backoff = Duration::from_secs(1);
                    retry = Some(tokio::time::Instant::now());
                }
                Some(Err(e)) => {
                    warn!(crd = CRD_NAME, error = %e,
                        "cannot watch Kanister's Blueprint CRD; the controller needs get/list/watch/patch on customresourcedefinitions {CRD_NAME} (or run it with {FLAG}=false)");
                    continue;
                }
                None => return,
            },
            _ = tokio::time::sleep_until(due), if retry.is_some() => {
                retry = None;
                let Some(crd) = &latest else { continue };
                match ensure(&api, crd).await {
                    Ok(Outcome::AlreadyRelaxed) => {
                        debug!(crd = CRD_NAME, "deferPhase schema accepts a list");
                    }
                    Ok(Outcome::Patched) => info!(crd = CRD_NAME,
                        "relaxed actions.<name>.deferPhase of Kanister's Blueprint CRD so that deferPhase lists reach the admission webhook"),
                    Ok(Outcome::Changed(now)) => {
                        debug!(crd = CRD_NAME, "changed while being relaxed; looking again");
                        latest = Some(*now);
                        retry = Some(tokio::time::Instant::now());
                    }
                    Ok(Outcome::Unsupported(why)) => {
                        if unsupported_logged.as_deref() != Some(&why) {
                            warn!(crd = CRD_NAME, reason = %why,
                                "left Kanister's Blueprint CRD unchanged: its schema is not the one this operator relaxes");
                            unsupported_logged = Some(why);
                        }
                    }
                    Err(e) => {
                        warn!(crd = CRD_NAME, error = %Describe(&e), retry_in = ?backoff,
                            "could not relax the deferPhase schema of Kanister's Blueprint CRD");
                        retry = Some(tokio::time::Instant::now() + backoff);
                        backoff = (backoff * 2).min(MAX_RETRY);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kanister_like() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": CRD_NAME},
            "spec": {"versions": [{"name": "v1alpha1", "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"actions": {"type": "object", "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "deferPhase": {"type": "object", "properties": {"func": {"type": "string"}}},
                        "phases": {"type": "array", "items": {"type": "object"}}
                    }
                }}}
            }}}]}
        })
    }

    fn apply(doc: &Value, ops: Vec<Value>) -> Value {
        let mut out = doc.clone();
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
        json_patch::patch(&mut out, &patch).unwrap();
        out
    }

    #[test]
    fn typed_node_is_replaced_and_nothing_else() {
        let doc = kanister_like();
        let Plan::Patch(ops) = plan(&doc) else {
            panic!("{:?}", plan(&doc))
        };
        let patched = apply(&doc, ops);
        let pointer = "/spec/versions/0/schema/openAPIV3Schema/properties/actions/additionalProperties/properties/deferPhase";
        assert_eq!(patched.pointer(pointer), Some(&relaxed_node()));
        let mut restored = patched.clone();
        *restored.pointer_mut(pointer).unwrap() = doc.pointer(pointer).unwrap().clone();
        assert_eq!(restored, doc);
        assert_eq!(plan(&patched), Plan::Relaxed, "idempotent");
    }

    #[test]
    fn patch_fails_when_the_node_changed_since_it_was_read() {
        let doc = kanister_like();
        let Plan::Patch(ops) = plan(&doc) else {
            panic!()
        };
        let mut changed = doc.clone();
        changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["actions"]["additionalProperties"]
            ["properties"]["deferPhase"]["properties"]["name"] = json!({"type": "string"});
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
        assert!(json_patch::patch(&mut changed, &patch).is_err());
    }

    #[test]
    fn relaxed_means_any_value_and_nothing_pruned() {
        assert!(is_relaxed(&relaxed_node()));
        assert!(is_relaxed(
            &json!({"x-kubernetes-preserve-unknown-fields": true})
        ));
        assert!(!is_relaxed(
            &json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        ));
        assert!(!is_relaxed(
            &json!({"x-kubernetes-preserve-unknown-fields": true, "properties": {}})
        ));
        assert!(!is_relaxed(&json!({"type": "object"})));
        assert!(!is_relaxed(&json!(true)));
    }

    #[test]
    fn unknown_shapes_are_left_alone() {
        let mut doc = kanister_like();
        doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["actions"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert!(matches!(plan(&doc), Plan::Unsupported(w) if w.contains("deferPhase")));
        assert!(matches!(plan(&json!({"spec": {}})), Plan::Unsupported(_)));
    }

    #[test]
    fn every_version_is_relaxed() {
        let mut doc = kanister_like();
        let mut v2 = doc["spec"]["versions"][0].clone();
        v2["name"] = json!("v1beta1");
        doc["spec"]["versions"].as_array_mut().unwrap().push(v2);
        let Plan::Patch(ops) = plan(&doc) else {
            panic!()
        };
        assert_eq!(ops.len(), 6);
        assert_eq!(plan(&apply(&doc, ops)), Plan::Relaxed);
    }
}
