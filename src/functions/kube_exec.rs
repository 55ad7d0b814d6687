//! KubeExec (Kanister `pkg/function/kube_exec.go`): run `command` in a
//! container of an existing pod through the API server's `pods/exec`
//! (websocket), parse the phase output from stdout. A non-zero exit fails the
//! phase with the exit code and the tail of stderr/stdout.
//!
//! Test cluster: kwok serves `pods/exec` only for pods matched by a
//! `ClusterExec`/`Exec` resource; without one (the current
//! tools/control-plane config) the exec reaches kwok and fails with
//! "no exec found for container", which `tests/e2e/functions.rs` accepts.
//! Adding a `ClusterExec` with `execs: [{local: {}}]` to the kwok config
//! would run the command on the test machine and exercise the output path.

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::exec;

const NAME: &str = "KubeExec";

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let namespace = a.string("namespace")?;
    let pod = a.string("pod")?;
    let container = a.opt_string("container")?.filter(|c| !c.is_empty());
    let command = a.string_list("command")?;
    let (ns, container) = (&namespace, container.as_deref());
    let r = exec(&ctx.client, NAME, ns, &pod, container, &command, None).await?;
    Ok(r.phase_output(NAME)?)
}
