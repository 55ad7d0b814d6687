//! KubeExec (Kanister `pkg/function/kube_exec.go`): run `command` in a
//! container of an existing pod through the API server's `pods/exec`
//! (websocket), parse the phase output from stdout. A non-zero exit fails the
//! phase with the exit code and the tail of stderr/stdout; so does a pod
//! deleted while the command ran, which the message then says (its exit code
//! alone, 137, or a lost stream would not).
//!
//! Test cluster: kwok serves `pods/exec` only for pods matched by a
//! `ClusterExec`/`Exec` resource; without one (the current
//! tools/control-plane config) the exec reaches kwok and fails with
//! "no exec found for container", which `tests/e2e/functions.rs` accepts.
//! Adding a `ClusterExec` with `execs: [{local: {}}]` to the kwok config
//! would run the command on the test machine and exercise the output path.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::{PodError, exec};

const NAME: &str = "KubeExec";

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let namespace = a.string("namespace")?;
    let pod = a.string("pod")?;
    let container = a.opt_string("container")?.filter(|c| !c.is_empty());
    let command = a.string_list("command")?;
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &namespace);
    // Which pod the command runs in: a StatefulSet's pod deleted under it comes back by the
    // same name at once. Unknown when the API server does not answer; the exec then says why.
    let uid = look(&pods, &pod)
        .await
        .ok()
        .flatten()
        .and_then(|p| p.metadata.uid);
    let (ns, container) = (&namespace, container.as_deref());
    match exec(&ctx.client, NAME, ns, &pod, container, &command, None).await {
        Ok(r) => Ok(r.phase_output(NAME)?),
        Err(PodError::Failed { function, message }) => {
            // What the pod is now says whether it was deleted under the command; an API server
            // that does not answer leaves the message as it is.
            let message = match look(&pods, &pod).await {
                Ok(now) => with_deletion(message, uid.as_deref(), now.as_ref()),
                Err(_) => message,
            };
            Err(PodError::Failed { function, message }.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The pod `name`, if the API server answers within [`LOOK_TIMEOUT`]: a look that only adds to
/// a message must not hold the phase up (an API server that is starting may accept a connection
/// long before it answers).
async fn look(pods: &Api<Pod>, name: &str) -> Result<Option<Pod>, ()> {
    match tokio::time::timeout(LOOK_TIMEOUT, pods.get_opt(name)).await {
        Ok(Ok(p)) => Ok(p),
        _ => Err(()),
    }
}

const LOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// `message` with, at the end of its first line, what the pod's deletion did: `uid` is the
/// pod's before the exec, `now` the pod after it failed (`None`: it is gone).
fn with_deletion(message: String, uid: Option<&str>, now: Option<&Pod>) -> String {
    let note = match now {
        None => " (the pod is gone: it was deleted while the command ran)",
        Some(p) if p.metadata.deletion_timestamp.is_some() => {
            " (the pod was deleted while the command ran)"
        }
        Some(p) if uid.is_some() && p.metadata.uid.as_deref() != uid => {
            " (the pod was deleted while the command ran, and created again)"
        }
        Some(_) => return message,
    };
    match message.split_once('\n') {
        Some((first, rest)) => format!("{first}{note}\n{rest}"),
        None => format!("{message}{note}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_pod_is_named_after_the_exec_failure() {
        let failed = "Failed to exec command in pod a/b container c: command terminated with exit code 137\nstderr (last lines):\nx".to_string();
        let mut deleting = Pod::default();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ));
        assert_eq!(
            with_deletion(failed.clone(), None, Some(&deleting)),
            "Failed to exec command in pod a/b container c: command terminated with exit code 137 (the pod was deleted while the command ran)\nstderr (last lines):\nx"
        );
        assert!(
            with_deletion("lost".into(), Some("u1"), None)
                .ends_with("lost (the pod is gone: it was deleted while the command ran)")
        );
        let mut same = Pod::default();
        same.metadata.uid = Some("u1".into());
        assert_eq!(
            with_deletion(failed.clone(), Some("u1"), Some(&same)),
            failed
        );
        assert_eq!(with_deletion(failed.clone(), None, Some(&same)), failed);
        assert!(
            with_deletion(failed.clone(), Some("u0"), Some(&same)).contains(
                "exit code 137 (the pod was deleted while the command ran, and created again)\n"
            )
        );
    }
}
