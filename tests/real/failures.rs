//! What users see when a pod cannot do its work: the pod's own reason (ErrImagePull, OOMKilled,
//! the exit code) in the ActionSet's status and Events, and the deferPhase runs all the same.

use serde_json::{Value, json};

use crate::functions::{app_with_volume, run_action};
use crate::install::apply_yaml;
use crate::real::{kubectl, tools_image};

/// A Blueprint whose `backup` runs one KubeTask shaped by `task_args` and a deferPhase that leaves
/// a mark (a file on the application's volume), so the test sees it ran.
fn blueprint(ns: &str, task_args: Value) -> String {
    let mut args = json!({"image": tools_image(), "command": ["bash", "-c", "true"]});
    args.as_object_mut()
        .unwrap()
        .extend(task_args.as_object().unwrap().clone());
    format!(
        r#"apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {{name: fails, namespace: {ns}}}
actions:
  backup:
    phases:
    - func: KubeTask
      name: task
      args: {args}
    deferPhase:
      func: KubeExec
      name: cleanup
      args:
        namespace: "{{{{ .Deployment.Namespace }}}}"
        pod: "{{{{ index .Deployment.Pods 0 }}}}"
        container: app
        command: [bash, -c, 'echo "{{{{ .Outcome.State }}}}" > /data/defer-ran']
"#
    )
}

/// Runs the Blueprint, returns the ended ActionSet after checking that it failed, that the
/// deferPhase ran, and that the error and an Event name `reason`.
async fn fails_with(prefix: &str, task_args: Value, reason: &str) -> Value {
    let ns = app_with_volume(prefix).await;
    apply_yaml(&blueprint(&ns, task_args)).unwrap();
    let done = run_action(&ns, "fails", "backup", json!({})).await;
    assert_eq!(done["status"]["state"], "failed", "{done:#}");
    let error = done["status"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains(reason),
        "status error without {reason}: {done:#}"
    );
    assert_eq!(
        done["status"]["actions"][0]["deferPhase"]["state"], "complete",
        "{done:#}"
    );
    let mark = kubectl(&[
        "exec",
        "-n",
        &ns,
        "deploy/app",
        "--",
        "cat",
        "/data/defer-ran",
    ])
    .unwrap();
    assert_eq!(
        mark.trim(),
        "failed",
        "the deferPhase saw the failed outcome"
    );
    let name = done["metadata"]["name"].as_str().unwrap();
    let events = kubectl(&[
        "get",
        "events",
        "-n",
        &ns,
        "--field-selector",
        &format!("involvedObject.name={name}"),
        "-o",
        "jsonpath={.items[*].message}",
    ])
    .unwrap();
    assert!(events.contains(reason), "no Event names {reason}: {events}");
    done
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn an_image_missing_on_the_node_fails_the_phase_with_errimagepull_and_runs_the_defer_phase() {
    // No registry is reachable from the test node: the pull fails at once.
    fails_with(
        "noimage",
        json!({"image": "registry.invalid/blueprint-operator/missing:1"}),
        "ErrImagePull",
    )
    .await;
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_container_killed_for_memory_fails_the_phase_with_oomkilled_and_runs_the_defer_phase() {
    fails_with(
        "oom",
        json!({
            // bash grows a string until the 32 MiB limit kills the container.
            "command": ["bash", "-c", "x=x; while true; do x=$x$x; done"],
            "podOverride": {"containers": [{"name": "container",
                "resources": {"limits": {"memory": "32Mi"}, "requests": {"memory": "32Mi"}}}]},
        }),
        "OOMKilled",
    )
    .await;
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_failing_command_fails_the_phase_with_its_exit_code_and_runs_the_defer_phase() {
    fails_with(
        "exit",
        json!({"command": ["bash", "-c", "echo disk full >&2; exit 7"]}),
        "exited with code 7",
    )
    .await;
}
