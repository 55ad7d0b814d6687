//! KubeExecAll (Kanister `pkg/function/kube_exec_all.go`): run `command` in
//! every container of `containers` of every pod of `pods` (both
//! space-separated strings, lists accepted too) concurrently; the phase
//! output merges the protocol lines of all execs (in pod, container order,
//! later keys overwrite). Any failing exec fails the phase, reporting all
//! failures.

use futures::future::join_all;

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::exec;

const NAME: &str = "KubeExecAll";

/// `a b  c` or `[a, b, c]` → `[a, b, c]`.
pub fn fields(a: &Args, name: &str) -> Result<Vec<String>, FunctionError> {
    let list: Vec<String> = a
        .string_list(name)?
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    if list.is_empty() {
        return Err(FunctionError::arg(NAME, name, "must name at least one"));
    }
    Ok(list)
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let namespace = a.string("namespace")?;
    let pods = fields(a, "pods")?;
    let containers = fields(a, "containers")?;
    let command = a.string_list("command")?;
    let jobs = pods
        .iter()
        .flat_map(|p| containers.iter().map(move |c| (p, c)));
    let results = join_all(jobs.map(|(p, c)| {
        let command = &command;
        let namespace = &namespace;
        async move { exec(&ctx.client, NAME, namespace, p, Some(c), command, None).await }
    }))
    .await;
    let mut out = Output::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(r) => out.extend(r.phase_output(NAME)?),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(FunctionError::failed(NAME, errors.join("\n")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_and_containers_are_space_separated() {
        let m = json!({"pods": " a  b\tc ", "containers": ["x y", "z"], "empty": "  "});
        let a = Args::new(NAME, m.as_object().unwrap());
        assert_eq!(fields(&a, "pods").unwrap(), vec!["a", "b", "c"]);
        assert_eq!(fields(&a, "containers").unwrap(), vec!["x", "y", "z"]);
        assert!(fields(&a, "empty").is_err());
        assert!(fields(&a, "missing").is_err());
    }
}
