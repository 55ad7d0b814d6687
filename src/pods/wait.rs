//! Waiting for a pod (Kanister's `WaitForPodReady` / `WaitForPodCompletion`): until it is
//! ready (a helper pod that takes exec'd commands) or has finished (a task pod), failing early
//! when a container waits for a reason that will not resolve by itself, and after
//! `TIMEOUT_WORKER_POD_READY` minutes of Pending.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use super::PodError;
use crate::kube_error::{API_OUTAGE_LIMIT, Outage};

/// How long a task pod may stay Pending (Kanister: `TIMEOUT_WORKER_POD_READY`, minutes, default 15).
pub fn ready_timeout() -> Duration {
    let minutes = std::env::var("TIMEOUT_WORKER_POD_READY")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(15);
    Duration::from_secs(minutes * 60)
}

/// Container waiting reasons that will not resolve by themselves.
pub const FATAL_WAITING: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// Wait until the pod has ended (`Succeeded` or `Failed`) and return it.
pub async fn wait_finished(
    api: &Api<Pod>,
    function: &'static str,
    namespace: &str,
    name: &str,
) -> Result<Pod, PodError> {
    let ready_deadline = tokio::time::Instant::now() + ready_timeout();
    let mut delay = Duration::from_millis(100);
    // The pod runs on without the API server for a while.
    let mut outage = Outage::default();
    loop {
        let pod = match api.get(name).await {
            Ok(pod) => pod,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                return Err(PodError::failed(
                    function,
                    format!(
                        "Failed while waiting for Pod {namespace}/{name} to complete: the pod is gone (deleted while the phase ran)"
                    ),
                ));
            }
            // A 401/403 too: an API server that just started refuses until its authorizer has
            // read the RBAC objects, and this pod was created with the very permission.
            Err(e) if outage.rides_out(&e, Instant::now()) => {
                tracing::warn!(pod = name, namespace, error = %e, "reading the pod failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => {
                let action = if outage.ran_out(Instant::now()) {
                    format!(
                        "getting pod {namespace}/{name} (failing for {}s)",
                        API_OUTAGE_LIMIT.as_secs()
                    )
                } else {
                    format!("getting pod {namespace}/{name}")
                };
                return Err(PodError::kube(function, action, e));
            }
        };
        outage.over();
        let status = pod.status.clone().unwrap_or_default();
        match status.phase.as_deref() {
            Some("Succeeded" | "Failed") => return Ok(pod),
            Some("Running") => {}
            _ => {
                for cs in status.container_statuses.iter().flatten() {
                    if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref())
                        && let Some(reason) = w.reason.as_deref()
                        && FATAL_WAITING.contains(&reason)
                    {
                        return Err(PodError::failed(
                            function,
                            format!(
                                "Failed while waiting for Pod {namespace}/{name} to be ready: container {:?} is waiting: {reason}: {}",
                                cs.name,
                                w.message.as_deref().unwrap_or("")
                            ),
                        ));
                    }
                }
                if tokio::time::Instant::now() >= ready_deadline {
                    return Err(PodError::failed(
                        function,
                        format!(
                            "Failed while waiting for Pod {namespace}/{name} to be ready: still {} after {:?} (set TIMEOUT_WORKER_POD_READY, in minutes, to wait longer)",
                            status.phase.as_deref().unwrap_or("without a phase"),
                            ready_timeout()
                        ),
                    ));
                }
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// Why a helper pod will not become ready.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error("the pod ended (phase {0}) instead of waiting for commands")]
    Ended(String),
    #[error("container {container:?} is waiting: {reason}: {message}")]
    Waiting {
        container: String,
        reason: String,
        message: String,
    },
    #[error("getting the pod: {}", crate::kube_error::Describe(.0))]
    Get(#[source] kube::Error),
    #[error(
        "still {phase} after {timeout:?} (set TIMEOUT_WORKER_POD_READY, in minutes, to wait longer)"
    )]
    Timeout { phase: String, timeout: Duration },
}

/// Is the pod Running with condition Ready=True? `Err` when it never will be.
pub fn readiness(pod: &Pod) -> Result<bool, NotReady> {
    let Some(st) = &pod.status else {
        return Ok(false);
    };
    match st.phase.as_deref() {
        Some("Running") => Ok(st
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")),
        Some(p @ ("Succeeded" | "Failed")) => Err(NotReady::Ended(p.to_string())),
        _ => {
            for cs in st.container_statuses.iter().flatten() {
                if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref())
                    && let Some(reason) = w.reason.as_deref()
                    && FATAL_WAITING.contains(&reason)
                {
                    return Err(NotReady::Waiting {
                        container: cs.name.clone(),
                        reason: reason.to_string(),
                        message: w.message.clone().unwrap_or_default(),
                    });
                }
            }
            Ok(false)
        }
    }
}

/// Wait until [`readiness`] says ready, at most [`ready_timeout`].
pub async fn wait_ready(api: &Api<Pod>, name: &str) -> Result<(), NotReady> {
    let timeout = ready_timeout();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    loop {
        let pod = api.get(name).await.map_err(NotReady::Get)?;
        if readiness(&pod)? {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "without a phase".into());
            return Err(NotReady::Timeout { phase, timeout });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn readiness_of_pod_states() {
        let pod = |v: Value| -> Pod { serde_json::from_value(v).unwrap() };
        assert!(!readiness(&pod(json!({}))).unwrap());
        assert!(
            readiness(&pod(json!({"status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}})))
            .unwrap()
        );
        assert!(
            !readiness(&pod(json!({"status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}]}})))
            .unwrap()
        );
        let e = readiness(&pod(json!({"status": {"phase": "Failed"}}))).unwrap_err();
        assert!(e.to_string().contains("phase Failed"), "{e}");
        let e = readiness(&pod(
            json!({"status": {"phase": "Pending", "containerStatuses": [{
            "name": "container", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImagePull", "message": "no such image"}}}]}}),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("ErrImagePull: no such image"), "{e}");
    }
}
