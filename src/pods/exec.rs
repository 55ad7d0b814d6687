//! Exec in a pod's container through the API server's `pods/exec` (Kanister's
//! `pkg/kube/exec.go`): stdout and stderr read in bounded memory, the phase output parsed from
//! stdout as it streams, the exit status from the status channel.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::PodError;
use crate::phase_output as output;
use crate::phase_output::Output;

/// What a finished exec produced, read in bounded memory: the last
/// [`output::TAIL_BYTES`] of stdout and stderr, and the phase output parsed
/// from all of stdout as it streamed.
#[derive(Debug, Clone, Default)]
pub struct ExecResult {
    pub stdout: String,
    pub stderr: String,
    output: Output,
    output_error: Option<output::LineError>,
}

impl ExecResult {
    /// The phase output of stdout (an invalid `###Phase-output###:` line is an error).
    pub fn phase_output(&self, function: &'static str) -> Result<Output, PodError> {
        match &self.output_error {
            Some(e) => Err(PodError::Output {
                function,
                message: e.to_string(),
            }),
            None => Ok(self.output.clone()),
        }
    }
}

/// Reads `r` to its end into a tail (and the phase-output scanner).
async fn drain(
    r: Option<&mut (impl tokio::io::AsyncRead + Unpin)>,
    mut scanner: Option<&mut output::Scanner>,
) -> output::Tail {
    let mut tail = output::Tail::default();
    let Some(r) = r else { return tail };
    let mut buf = vec![0u8; 64 * 1024];
    // A read error ends the stream; the status (or its absence) says what happened.
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.push(&buf[..n]);
        if let Some(sc) = scanner.as_deref_mut() {
            sc.feed(&buf[..n]);
        }
    }
    tail
}

/// Why an exec failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecFailure {
    #[error("command terminated with exit code {0}")]
    ExitCode(String),
    #[error("command failed: {reason} {message}")]
    Failed { reason: String, message: String },
    #[error("exec stream failed: {0}")]
    Stream(String),
    #[error(
        "the exec stream ended without a status: the connection to the pod was lost, so whether the command finished, and how, is unknown"
    )]
    NoStatus,
}

/// How an exec ended, from its status (channel 3) and the stream: `Err`
/// says why it failed. A stream that closed without any status is a
/// failure: the connection was lost, the command's result is unknown.
pub fn outcome(
    status: Option<&Status>,
    stream: Result<(), impl std::fmt::Display>,
) -> Result<(), ExecFailure> {
    match status {
        Some(st) if st.status.as_deref() == Some("Failure") => {
            let code = st
                .details
                .as_ref()
                .and_then(|d| d.causes.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
                .and_then(|c| c.message.clone());
            Err(match code {
                Some(c) => ExecFailure::ExitCode(c),
                None => ExecFailure::Failed {
                    reason: st.reason.clone().unwrap_or_default(),
                    message: st.message.clone().unwrap_or_default(),
                },
            })
        }
        Some(_) => stream.map_err(|e| ExecFailure::Stream(e.to_string())),
        None => Err(match stream {
            Err(e) => ExecFailure::Stream(e.to_string()),
            Ok(()) => ExecFailure::NoStatus,
        }),
    }
}

/// Exec `command` in `pod` (container: the given one, else the pod's first); with `stdin`,
/// writes it to the command's standard input, then closes it: for what must not be on the
/// command line (visible in the API server's audit log and the node's process list),
/// credentials.
pub async fn exec(
    client: &kube::Client,
    function: &'static str,
    namespace: &str,
    pod: &str,
    container: Option<&str>,
    command: &[String],
    stdin: Option<&[u8]>,
) -> Result<ExecResult, PodError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let container = match container {
        Some(c) => c.to_string(),
        None => {
            let p = api.get(pod).await.map_err(|e| {
                PodError::kube(function, format!("getting pod {namespace}/{pod}"), e)
            })?;
            p.spec
                .and_then(|s| s.containers.first().map(|c| c.name.clone()))
                .ok_or_else(|| {
                    PodError::failed(function, format!("pod {namespace}/{pod} has no containers"))
                })?
        }
    };
    let place = format!("pod {namespace}/{pod} container {container}");
    let ap = AttachParams::default()
        .container(container.clone())
        .stdin(stdin.is_some())
        .stdout(true)
        .stderr(true);
    let mut attached = api
        .exec(pod, command.to_vec(), &ap)
        .await
        .map_err(|e| PodError::kube(function, format!("Failed to exec command in {place}"), e))?;
    let mut in_w = attached.stdin();
    let write_in = async {
        if let (Some(w), Some(data)) = (in_w.as_mut(), stdin) {
            // A command that exits without reading is not an error here.
            let _ = w.write_all(data).await;
            let _ = w.shutdown().await;
        }
    };
    let mut out_r = attached.stdout();
    let mut err_r = attached.stderr();
    let status = attached.take_status();
    let mut scanner = output::Scanner::default();
    let ((), out_tail, err_tail) = tokio::join!(
        write_in,
        drain(out_r.as_mut(), Some(&mut scanner)),
        drain(err_r.as_mut(), None)
    );
    drop(in_w);
    let status = match status {
        Some(f) => f.await,
        None => None,
    };
    let joined = attached.join().await;
    let (output, output_error) = match scanner.finish() {
        Ok(o) => (o, None),
        Err(e) => (Output::new(), Some(e)),
    };
    let result = ExecResult {
        stdout: out_tail.text(),
        stderr: err_tail.text(),
        output,
        output_error,
    };
    match outcome(status.as_ref(), joined) {
        Ok(()) => Ok(result),
        Err(what) => Err(PodError::failed(
            function,
            failure_message(&place, &what.to_string(), &result),
        )),
    }
}

/// "Failed to exec command in <place>: <what>; stderr: …; stdout: …" with the last lines only.
pub fn failure_message(place: &str, what: &str, r: &ExecResult) -> String {
    let mut m = format!("Failed to exec command in {place}: {what}");
    for (name, text) in [("stderr", &r.stderr), ("stdout", &r.stdout)] {
        let lines: Vec<&str> = text.lines().collect();
        if !lines.is_empty() {
            let tail = &lines[lines.len().saturating_sub(10)..];
            m.push_str(&format!("\n{name} (last lines):\n{}", tail.join("\n")));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_message_shows_code_and_tails() {
        let r = ExecResult {
            stdout: (1..=20).map(|i| format!("line {i}\n")).collect(),
            stderr: "oops\n".into(),
            ..ExecResult::default()
        };
        let m = failure_message(
            "pod a/b container c",
            "command terminated with exit code 2",
            &r,
        );
        assert!(
            m.starts_with(
                "Failed to exec command in pod a/b container c: command terminated with exit code 2"
            ),
            "{m}"
        );
        assert!(m.contains("stderr (last lines):\noops"), "{m}");
        assert!(m.contains("line 20") && !m.contains("line 10\n"), "{m}");
    }

    fn status(v: serde_json::Value) -> Status {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn an_exec_without_a_status_failed() {
        let e = outcome(None, Ok::<(), String>(())).unwrap_err().to_string();
        assert!(e.contains("ended without a status"), "{e}");
        assert!(e.contains("connection to the pod was lost"), "{e}");
        let e = outcome(None, Err("reset by peer")).unwrap_err();
        assert_eq!(e.to_string(), "exec stream failed: reset by peer");
    }

    #[test]
    fn success_and_failure_statuses() {
        assert!(
            outcome(
                Some(&status(serde_json::json!({"status": "Success"}))),
                Ok::<(), String>(())
            )
            .is_ok()
        );
        let failed = status(
            serde_json::json!({"status": "Failure", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}),
        );
        assert_eq!(
            outcome(Some(&failed), Ok::<(), String>(()))
                .unwrap_err()
                .to_string(),
            "command terminated with exit code 3"
        );
        let e = outcome(
            Some(&status(serde_json::json!({"status": "Success"}))),
            Err("x"),
        );
        assert_eq!(e.unwrap_err().to_string(), "exec stream failed: x");
    }
}
