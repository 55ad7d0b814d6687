//! Running a pod to its end (Kanister's `PodRunner`): create it (or re-attach to the one a
//! resumed phase created), wait until it has finished, read its log as a stream in bounded
//! memory (the phase output parsed from all of it, only its tail kept), and delete it.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use super::{PodEnv, PodError, create, find_resumed, wait_finished};
use crate::phase_output as output;
use crate::phase_output::Output;

/// Create `pod`, wait until it has finished, read the log of its first
/// container (streamed: [`PodLog`]), delete it (in a phase: the executor
/// deletes it once the result is recorded). This is where every
/// pod-based phase survives a controller restart: a resumed phase
/// ([`super::find_resumed`]) waits for the pod it created before
/// instead of creating one. Returns the log and the finished pod; a failed pod
/// is an error "Failed while waiting for Pod to complete".
pub async fn run_pod(
    env: PodEnv<'_>,
    function: &'static str,
    namespace: &str,
    pod: Pod,
) -> Result<(PodLog, Pod), PodError> {
    run_pod_to_end(env, function, namespace, pod, true).await
}

/// [`run_pod`], where a failed pod is an error only if `fail_on_error`
/// (otherwise its log and the pod are returned as for a successful one).
pub async fn run_pod_to_end(
    env: PodEnv<'_>,
    function: &'static str,
    namespace: &str,
    pod: Pod,
    fail_on_error: bool,
) -> Result<(PodLog, Pod), PodError> {
    let (api, name, guard) = match find_resumed(env, function, namespace).await? {
        Some(found) => found,
        None => create(env, function, namespace, pod).await?,
    };
    let result = finish(&api, function, namespace, &name, fail_on_error).await;
    if env.phase().is_some() {
        // The executor deletes it once the phase's result is recorded: a
        // restart in between re-attaches to it instead of finding it gone.
        guard.keep();
    } else {
        guard.delete().await;
    }
    result
}

/// A finished pod's log, read as a stream in bounded memory: the phase
/// output parsed from all of it, and its last [`output::TAIL_BYTES`].
#[derive(Debug)]
pub struct PodLog {
    pub tail: String,
    output: Result<Output, output::LineError>,
}

impl PodLog {
    /// The phase output (an invalid `###Phase-output###:` line is an error).
    pub fn output(self, function: &'static str) -> Result<Output, PodError> {
        self.output.map_err(|e| PodError::Output {
            function,
            message: e.to_string(),
        })
    }
}

/// Why a pod's log could not be read.
#[derive(Debug, thiserror::Error)]
enum LogError {
    #[error("{0}")]
    Open(kube::Error),
    #[error("{0}")]
    Read(std::io::Error),
}

async fn read_log(api: &Api<Pod>, name: &str, container: &str) -> Result<PodLog, LogError> {
    use futures::AsyncReadExt;
    let lp = LogParams {
        container: Some(container.to_string()),
        ..LogParams::default()
    };
    let stream = api.log_stream(name, &lp).await.map_err(LogError::Open)?;
    futures::pin_mut!(stream);
    let (mut tail, mut scanner) = (output::Tail::default(), output::Scanner::default());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buf).await.map_err(LogError::Read)?;
        if n == 0 {
            break;
        }
        tail.push(&buf[..n]);
        scanner.feed(&buf[..n]);
    }
    Ok(PodLog {
        tail: tail.text(),
        output: scanner.finish(),
    })
}

async fn finish(
    api: &Api<Pod>,
    function: &'static str,
    namespace: &str,
    name: &str,
    fail_on_error: bool,
) -> Result<(PodLog, Pod), PodError> {
    let pod = wait_finished(api, function, namespace, name).await?;
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| c.name.clone())
        .unwrap_or_else(|| super::CONTAINER.to_string());
    let log = read_log(api, name, &container).await;
    let failed = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
    if failed && fail_on_error {
        let mut msg = format!(
            "Failed while waiting for Pod to complete: pod {namespace}/{name} failed: {}",
            termination(&pod)
        );
        if pod.metadata.deletion_timestamp.is_some() {
            msg.push_str(" (the pod was deleted while it ran)");
        }
        if let Ok(log) = &log {
            let lines: Vec<&str> = log.tail.lines().collect();
            if !lines.is_empty() {
                let tail = &lines[lines.len().saturating_sub(10)..];
                msg.push_str(&format!("; last log lines:\n{}", tail.join("\n")));
            }
        }
        return Err(PodError::failed(function, msg));
    }
    let log = log.map_err(|e| {
        PodError::failed(
            function,
            format!("reading the log of pod {namespace}/{name} container {container}: {e}"),
        )
    })?;
    Ok((log, pod))
}

/// "container "x" exited with code 1 (Error): message" for every terminated container.
fn termination(pod: &Pod) -> String {
    let mut parts = Vec::new();
    if let Some(st) = &pod.status {
        for cs in st.container_statuses.iter().flatten() {
            if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) {
                let mut p = format!("container {:?} exited with code {}", cs.name, t.exit_code);
                if let Some(r) = &t.reason {
                    p.push_str(&format!(" ({r})"));
                }
                if let Some(m) = t.message.as_ref().filter(|m| !m.is_empty()) {
                    p.push_str(&format!(": {m}"));
                }
                parts.push(p);
            }
        }
        if parts.is_empty() {
            if let Some(r) = &st.reason {
                parts.push(r.clone());
            }
            if let Some(m) = &st.message {
                parts.push(m.clone());
            }
        }
    }
    if parts.is_empty() {
        "phase Failed".into()
    } else {
        parts.join("; ")
    }
}
