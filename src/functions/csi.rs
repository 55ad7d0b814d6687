//! The VolumeSnapshot API the CSI snapshot functions share (`snapshot.storage.k8s.io/v1`):
//! its resources, the API of a namespace's VolumeSnapshots, waiting for one to be ready, and
//! the output Kanister's CSI functions give. Like Kanister, the wait for readiness has no
//! timeout of its own (the phase ends it); a warning is logged every minute while it lasts.

use std::time::Duration;

use kube::api::Api;
use kube::core::{ApiResource, DynamicObject};
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;

/// Status errors of this text are retried (Kanister's `isTransientError`).
const TRANSIENT: &str =
    "the object has been modified; please apply your changes to the latest version and try again";
const TRANSIENT_RETRIES: u32 = 100;

/// The snapshot API group and version used.
pub const GROUP: &str = "snapshot.storage.k8s.io";

pub const VERSION: &str = "v1";

pub const KIND: &str = "VolumeSnapshot";

/// `ApiResource` of `volumesnapshots.snapshot.storage.k8s.io/v1`.
pub fn volume_snapshot_resource() -> ApiResource {
    resource(KIND, "volumesnapshots")
}

/// A function's `namespace` argument; `default` (the ActionSet's) when it is empty.
pub(crate) fn namespace_arg(a: &Args, default: &str) -> Result<String, FunctionError> {
    let ns = a.string("namespace")?;
    Ok(if ns.is_empty() {
        default.to_string()
    } else {
        ns
    })
}

/// The VolumeSnapshot API in `namespace`, after checking that the server serves it.
pub(crate) async fn snapshot_api(
    ctx: &Context,
    function: &'static str,
    namespace: &str,
) -> Result<Api<DynamicObject>, FunctionError> {
    let gv = format!("{GROUP}/{VERSION}");
    let served = match ctx.client.list_api_group_resources(&gv).await {
        Ok(list) => list.resources.iter().any(|r| r.name == "volumesnapshots"),
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(e) => {
            return Err(FunctionError::kube(
                function,
                "Failed to call discovery APIs",
                e,
            ));
        }
    };
    if !served {
        return Err(FunctionError::failed(
            function,
            format!(
                "Snapshot resources not supported: the API server does not serve volumesnapshots.{gv}; install the external-snapshotter CRDs and a snapshot controller with a CSI driver that supports snapshots"
            ),
        ));
    }
    Ok(Api::namespaced_with(
        ctx.client.clone(),
        namespace,
        &volume_snapshot_resource(),
    ))
}

/// CreateCSISnapshot's output from the ready VolumeSnapshot's data.
pub fn create_output(name: &str, pvc: &str, namespace: &str, data: &Value) -> Output {
    let status = &data["status"];
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let mut out = Output::new();
    out.insert("name".into(), json!(name));
    out.insert("pvc".into(), json!(pvc));
    out.insert("namespace".into(), json!(namespace));
    out.insert("restoreSize".into(), json!(text(&status["restoreSize"])));
    out.insert(
        "snapshotContent".into(),
        json!(text(&status["boundVolumeSnapshotContentName"])),
    );
    out
}

/// A VolumeSnapshot's `status.error`: its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SnapshotError(pub String);

/// Readiness as Kanister's `isReadyToUse`: `Ok(true)` when `readyToUse` and
/// `creationTime` are set, `Err` when the status has an error.
pub fn ready_state(data: &Value) -> Result<bool, SnapshotError> {
    let Some(status) = data.get("status").filter(|s| s.is_object()) else {
        return Ok(false);
    };
    if let Some(err) = status.get("error").filter(|e| !e.is_null()) {
        let msg = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(the error has no message)");
        return Err(SnapshotError(msg.to_string()));
    }
    Ok(status.get("readyToUse") == Some(&Value::Bool(true))
        && status.get("creationTime").is_some_and(|t| !t.is_null()))
}

pub(crate) async fn wait_ready(
    api: &Api<DynamicObject>,
    function: &'static str,
    name: &str,
    namespace: &str,
) -> Result<DynamicObject, FunctionError> {
    let start = tokio::time::Instant::now();
    let mut next_warning = start + Duration::from_secs(60);
    let mut delay = Duration::from_millis(100);
    let mut transient = 0;
    loop {
        let snap = api.get(name).await.map_err(|e| {
            FunctionError::kube(
                function,
                format!("Failed to get VolumeSnapshot {namespace}/{name}"),
                e,
            )
        })?;
        match ready_state(&snap.data) {
            Ok(true) => return Ok(snap),
            Ok(false) => {}
            Err(SnapshotError(msg)) if msg.contains(TRANSIENT) && transient < TRANSIENT_RETRIES => {
                transient += 1;
            }
            Err(msg) => {
                return Err(FunctionError::failed(
                    function,
                    format!("VolumeSnapshot {namespace}/{name} failed: {msg}"),
                ));
            }
        }
        if tokio::time::Instant::now() >= next_warning {
            tracing::warn!(
                snapshot = name,
                namespace,
                waited = ?start.elapsed(),
                "VolumeSnapshot is not ready to use yet; is a snapshot controller running and does the CSI driver support snapshots?"
            );
            next_warning += Duration::from_secs(60);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

pub const CONTENT_KIND: &str = "VolumeSnapshotContent";

pub const CLASS_KIND: &str = "VolumeSnapshotClass";

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// `ApiResource` of `volumesnapshotcontents.snapshot.storage.k8s.io/v1` (cluster-scoped).
pub fn volume_snapshot_content_resource() -> ApiResource {
    resource(CONTENT_KIND, "volumesnapshotcontents")
}

/// `ApiResource` of `volumesnapshotclasses.snapshot.storage.k8s.io/v1` (cluster-scoped).
pub fn volume_snapshot_class_resource() -> ApiResource {
    resource(CLASS_KIND, "volumesnapshotclasses")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_needs_ready_to_use_and_creation_time() {
        assert_eq!(ready_state(&json!({})), Ok(false));
        assert_eq!(
            ready_state(&json!({"status": {"readyToUse": true}})),
            Ok(false)
        );
        assert_eq!(
            ready_state(&json!({"status": {"readyToUse": false, "creationTime": 5}})),
            Ok(false)
        );
        assert_eq!(
            ready_state(&json!({"status": {"readyToUse": true, "creationTime": 5}})),
            Ok(true)
        );
        assert_eq!(
            ready_state(&json!({"status": {"error": {"message": "no space", "time": "x"}}})),
            Err(SnapshotError("no space".into()))
        );
    }
}
