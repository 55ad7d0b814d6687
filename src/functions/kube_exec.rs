//! KubeExec (Kanister `pkg/function/kube_exec.go`): run `command` in a
//! container of an existing pod through the API server's `pods/exec`
//! (websocket), parse the phase output from stdout. A non-zero exit fails the
//! phase with the exit code and the tail of stderr/stdout.
//!
//! Test cluster: kwok serves `pods/exec` only for pods matched by a
//! `ClusterExec`/`Exec` resource; without one (the current
//! tools/control-plane config) the exec reaches kwok and fails with
//! "no exec found for container", which `tests/e2e_functions.rs` accepts.
//! Adding a `ClusterExec` with `execs: [{local: {}}]` to the kwok config
//! would run the command on the test machine and exercise the output path.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;

use super::args::Args;
use super::{Context, FunctionError, Output, output};

const NAME: &str = "KubeExec";
const ARGS: &[&str] = &["namespace", "pod", "container", "command"];

/// What a finished exec produced.
#[derive(Debug, Clone, Default)]
pub struct ExecResult {
    pub stdout: String,
    pub stderr: String,
}

pub async fn run(ctx: &Context, args: &Map<String, Value>) -> Result<Output, FunctionError> {
    let a = Args::new(NAME, args);
    a.check_supported(ARGS)?;
    let namespace = a.string("namespace")?;
    let pod = a.string("pod")?;
    let container = a.opt_string("container")?.filter(|c| !c.is_empty());
    let command = a.string_list("command")?;
    let r = exec(ctx, NAME, &namespace, &pod, container.as_deref(), &command).await?;
    output::parse(NAME, &r.stdout)
}

/// Exec `command` in `pod` (container: the given one, else the pod's first).
pub async fn exec(
    ctx: &Context,
    function: &'static str,
    namespace: &str,
    pod: &str,
    container: Option<&str>,
    command: &[String],
) -> Result<ExecResult, FunctionError> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let container = match container {
        Some(c) => c.to_string(),
        None => {
            let p = api.get(pod).await.map_err(|e| {
                FunctionError::kube(function, format!("getting pod {namespace}/{pod}"), e)
            })?;
            p.spec
                .and_then(|s| s.containers.first().map(|c| c.name.clone()))
                .ok_or_else(|| {
                    FunctionError::failed(
                        function,
                        format!("pod {namespace}/{pod} has no containers"),
                    )
                })?
        }
    };
    let place = format!("pod {namespace}/{pod} container {container}");
    let ap = AttachParams::default()
        .container(container.clone())
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut attached = api.exec(pod, command.to_vec(), &ap).await.map_err(|e| {
        FunctionError::kube(function, format!("Failed to exec command in {place}"), e)
    })?;
    let mut out_r = attached.stdout();
    let mut err_r = attached.stderr();
    let status = attached.take_status();
    let read_out = async {
        let mut s = Vec::new();
        if let Some(r) = out_r.as_mut() {
            let _ = r.read_to_end(&mut s).await;
        }
        String::from_utf8_lossy(&s).into_owned()
    };
    let read_err = async {
        let mut s = Vec::new();
        if let Some(r) = err_r.as_mut() {
            let _ = r.read_to_end(&mut s).await;
        }
        String::from_utf8_lossy(&s).into_owned()
    };
    let (stdout, stderr) = tokio::join!(read_out, read_err);
    let status = match status {
        Some(f) => f.await,
        None => None,
    };
    let joined = attached.join().await;
    let result = ExecResult { stdout, stderr };
    if let Some(st) = status
        && st.status.as_deref() == Some("Failure")
    {
        let code = st
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.clone());
        let what = match code {
            Some(c) => format!("command terminated with exit code {c}"),
            None => format!(
                "command failed: {} {}",
                st.reason.as_deref().unwrap_or(""),
                st.message.as_deref().unwrap_or("")
            ),
        };
        return Err(FunctionError::failed(
            function,
            failure_message(&place, &what, &result),
        ));
    }
    if let Err(e) = joined {
        return Err(FunctionError::failed(
            function,
            failure_message(&place, &format!("exec stream failed: {e}"), &result),
        ));
    }
    Ok(result)
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

    #[test]
    fn stdout_phase_output_is_parsed() {
        let stdout = "backing up\n###Phase-output###: {\"key\":\"size\",\"value\":\"10\"}\n";
        let out = output::parse(NAME, stdout).unwrap();
        assert_eq!(out["size"], "10");
    }
}
