//! Exec in a pod's container through the API server's `pods/exec` (Kanister's
//! `pkg/kube/exec.go`): stdout and stderr read in bounded memory, the phase output parsed from
//! stdout as it streams, the exit status from the status channel.

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{PodError, exec_end};
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

/// Reads `r` to its end into `tail` (and the phase-output scanner).
async fn drain(
    r: Option<&mut (impl tokio::io::AsyncRead + Unpin)>,
    tail: &mut output::Tail,
    mut scanner: Option<&mut output::Scanner>,
) {
    let Some(r) = r else { return };
    let mut buf = vec![0u8; 64 * 1024];
    // A read error ends the stream; the status (or its absence) says what happened.
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        keep(&buf[..n], tail, scanner.as_deref_mut());
    }
}

/// Reads what `r` already holds, without waiting for more: the rest of a stream whose
/// connection has ended (kube's stream task does not close its pipes when the connection
/// fails, so their end would never come).
fn drain_buffered(
    r: Option<&mut (impl tokio::io::AsyncRead + Unpin)>,
    tail: &mut output::Tail,
    mut scanner: Option<&mut output::Scanner>,
) {
    let Some(r) = r else { return };
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(Ok(n)) = r.read(&mut buf).now_or_never() {
        if n == 0 {
            break;
        }
        keep(&buf[..n], tail, scanner.as_deref_mut());
    }
}

fn keep(bytes: &[u8], tail: &mut output::Tail, scanner: Option<&mut output::Scanner>) {
    tail.push(bytes);
    if let Some(sc) = scanner {
        sc.feed(bytes);
    }
}

/// Why an exec failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecFailure {
    #[error("command terminated with exit code {0}")]
    ExitCode(String),
    #[error("command failed: {reason} {message}")]
    Failed { reason: String, message: String },
    #[error(
        "exec stream failed ({0}): the connection to the pod was lost, so whether the command finished, and how, is unknown"
    )]
    Stream(String),
    #[error(
        "the exec stream ended without a status: the connection to the pod was lost, so whether the command finished, and how, is unknown"
    )]
    NoStatus,
    #[error(
        "the exec stream ended before the command did (Kubernetes reported success, but the command's shell never reported its end): the connection to the pod was lost, so whether the command finished, and how, is unknown"
    )]
    Cut,
}

/// How an exec ended, from its status (channel 3), the stream, and whether the command's shell
/// reported its end (`None`: not asked, see [`super::exec_end`]): `Err` says why it failed. A
/// stream that closed without any status, or with a success but without the end report, is a
/// failure: the connection was lost, the command's result is unknown.
pub fn outcome(
    status: Option<&Status>,
    stream: Result<(), impl std::fmt::Display>,
    end_reported: Option<bool>,
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
        Some(_) => {
            stream.map_err(|e| ExecFailure::Stream(e.to_string()))?;
            match end_reported {
                Some(false) => Err(ExecFailure::Cut),
                _ => Ok(()),
            }
        }
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
    let wrapped = exec_end::wrap(command);
    let mut attached = api
        .exec(pod, wrapped.as_deref().unwrap_or(command).to_vec(), &ap)
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
    // The stream task ends with the connection. When the connection fails (the API server or
    // the kubelet restarted) the pipes are left open, so the reads below would wait forever:
    // they are raced against the task's end.
    let ended = attached.join();
    tokio::pin!(ended);
    let (mut out_tail, mut err_tail) = (output::Tail::default(), output::Tail::default());
    let mut scanner = output::Scanner::default();
    let reading = async {
        tokio::join!(
            write_in,
            drain(out_r.as_mut(), &mut out_tail, Some(&mut scanner)),
            drain(err_r.as_mut(), &mut err_tail, None)
        )
    };
    let joined = tokio::select! {
        _ = reading => None,
        joined = &mut ended => Some(joined),
    };
    drop(in_w);
    let joined = match joined {
        Some(joined) => {
            drain_buffered(out_r.as_mut(), &mut out_tail, Some(&mut scanner));
            drain_buffered(err_r.as_mut(), &mut err_tail, None);
            joined
        }
        None => ended.await,
    };
    let status = match status {
        Some(f) => f.await,
        None => None,
    };
    let (output, output_error) = match scanner.finish() {
        Ok(o) => (o, None),
        Err(e) => (Output::new(), Some(e)),
    };
    let mut stderr = err_tail.text();
    let end_reported = wrapped.map(|_| exec_end::take_report(&mut stderr));
    let result = ExecResult {
        stdout: out_tail.text(),
        stderr,
        output,
        output_error,
    };
    match outcome(status.as_ref(), joined, end_reported) {
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
        let e = outcome(None, Ok::<(), String>(()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ended without a status"), "{e}");
        assert!(e.contains("connection to the pod was lost"), "{e}");
        let e = outcome(None, Err("reset by peer"), None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "exec stream failed (reset by peer): the connection to the pod was lost"
            ),
            "{e}"
        );
    }

    #[test]
    fn success_and_failure_statuses() {
        assert!(
            outcome(
                Some(&status(serde_json::json!({"status": "Success"}))),
                Ok::<(), String>(()),
                Some(true)
            )
            .is_ok()
        );
        let failed = status(
            serde_json::json!({"status": "Failure", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}),
        );
        assert_eq!(
            outcome(Some(&failed), Ok::<(), String>(()), Some(false))
                .unwrap_err()
                .to_string(),
            "command terminated with exit code 3"
        );
        let e = outcome(
            Some(&status(serde_json::json!({"status": "Success"}))),
            Err("x"),
            None,
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .starts_with("exec stream failed (x): ")
        );
    }

    /// An API server's `pods/exec` on 127.0.0.1 that sends `frames` on the exec stream, then
    /// closes it cleanly (`close`) or drops the connection as a process killed does.
    async fn exec_against(
        command: &[&str],
        frames: Vec<Vec<u8>>,
        close: bool,
    ) -> Result<ExecResult, PodError> {
        use futures::SinkExt;
        use tokio_tungstenite::tungstenite::Message;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_hdr_async(tcp, v4_protocol)
                .await
                .unwrap();
            for f in frames {
                ws.send(Message::binary(f)).await.unwrap();
            }
            if close {
                let _ = ws.close(None).await;
            }
        });
        let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
        let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        let r = exec(
            &client,
            "KubeExec",
            "ns",
            "db-0",
            Some("db"),
            &command,
            None,
        );
        // A guard, not a measurement: the defect this catches is an exec that never returns.
        let r = tokio::time::timeout(std::time::Duration::from_secs(120), r)
            .await
            .expect("the exec returned after its stream ended");
        server.await.unwrap();
        r
    }

    use tokio_tungstenite::tungstenite::handshake::server;

    // The signature is tungstenite's handshake callback.
    #[allow(clippy::result_large_err)]
    fn v4_protocol(
        _: &server::Request,
        mut resp: server::Response,
    ) -> Result<server::Response, server::ErrorResponse> {
        let v4 = http::HeaderValue::from_static("v4.channel.k8s.io");
        resp.headers_mut().insert("Sec-WebSocket-Protocol", v4);
        Ok(resp)
    }

    fn frame(channel: u8, bytes: &[u8]) -> Vec<u8> {
        [&[channel][..], bytes].concat()
    }

    #[tokio::test]
    async fn a_finished_exec_gives_its_output() {
        let success = serde_json::to_vec(&serde_json::json!({"status": "Success"})).unwrap();
        let frames = vec![
            frame(
                1,
                b"###Phase-output###: {\"key\":\"rows\",\"value\":\"7\"}\n",
            ),
            frame(2, b"warning\n"),
            frame(3, &success),
        ];
        let r = exec_against(&["count"], frames, true).await.unwrap();
        assert_eq!(r.stderr, "warning\n");
        let out = r.phase_output("KubeExec").unwrap();
        assert_eq!(
            out.get("rows").and_then(|v| v.as_str()),
            Some("7"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn a_connection_cut_mid_command_fails_the_exec_with_what_it_printed() {
        let frames = vec![frame(1, b"started\n"), frame(2, b"half way\n")];
        let e = exec_against(&["count"], frames, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Failed to exec command in pod ns/db-0 container db: exec stream failed ("),
            "{e}"
        );
        assert!(e.contains("stderr (last lines):\nhalf way"), "{e}");
        assert!(e.contains("stdout (last lines):\nstarted"), "{e}");
    }

    /// Kubernetes says success for a stream cut between the kubelet and containerd; only the
    /// shell's end report tells a finished command from that.
    #[tokio::test]
    async fn a_success_without_the_shells_end_report_is_a_cut_stream() {
        let success = serde_json::to_vec(&serde_json::json!({"status": "Success"})).unwrap();
        let command = ["bash", "-c", "count"];
        let cut = vec![frame(1, b"before the restart\n"), frame(3, &success)];
        let e = exec_against(&command, cut, true).await.unwrap_err();
        assert!(
            e.to_string().contains("Kubernetes reported success, but"),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("stdout (last lines):\nbefore the restart"),
            "{e}"
        );

        let report = format!(
            "oops\n\n{} 0\n",
            "blueprint-operator: exec ended with status"
        );
        let ended = vec![frame(2, report.as_bytes()), frame(3, &success)];
        let r = exec_against(&command, ended, true).await.unwrap();
        assert_eq!(r.stderr, "oops\n");
    }
}
