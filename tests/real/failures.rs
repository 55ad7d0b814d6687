//! What users see when a pod cannot do its work: the pod's own reason (ErrImagePull, OOMKilled,
//! CrashLoopBackOff, the exit code) in the ActionSet's status and Events, and the deferPhase runs
//! all the same.

use serde_json::{Value, json};

use crate::functions::{app_with_volume, run_action};
use crate::install::apply_yaml;
use crate::real::{kubectl, tools_image};

/// A KubeTask phase of the tools image shaped by `task_args`.
fn kube_task(task_args: Value) -> Value {
    let mut args = json!({"image": tools_image(), "command": ["bash", "-c", "true"]});
    args.as_object_mut()
        .unwrap()
        .extend(task_args.as_object().unwrap().clone());
    json!({"func": "KubeTask", "name": "task", "args": args})
}

/// A Blueprint whose `backup` runs `phase` and a deferPhase that leaves a mark (a file on the
/// application's volume), so the test sees it ran.
fn blueprint(ns: &str, phase: Value) -> String {
    format!(
        r#"apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {{name: fails, namespace: {ns}}}
actions:
  backup:
    phases:
    - {phase}
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

/// Runs the Blueprint of `phase` in `ns` (of [`app_with_volume`]), returns the ended ActionSet
/// after checking that it failed, that the deferPhase ran, and that the error and an Event name
/// `reason`.
async fn fails_with(ns: &str, phase: Value, reason: &str) -> Value {
    let ns = ns.to_string();
    apply_yaml(&blueprint(&ns, phase)).unwrap();
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
        &app_with_volume("noimage").await,
        kube_task(json!({"image": "registry.invalid/blueprint-operator/missing:1"})),
        "ErrImagePull",
    )
    .await;
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_container_killed_for_memory_fails_the_phase_with_oomkilled_and_runs_the_defer_phase() {
    fails_with(
        &app_with_volume("oom").await,
        kube_task(json!({
            // bash grows a string until the 32 MiB limit kills the container.
            "command": ["bash", "-c", "x=x; while true; do x=$x$x; done"],
            "podOverride": {"containers": [{"name": "container",
                "resources": {"limits": {"memory": "32Mi"}, "requests": {"memory": "32Mi"}}}]},
        })),
        "OOMKilled",
    )
    .await;
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_failing_command_fails_the_phase_with_its_exit_code_and_runs_the_defer_phase() {
    fails_with(
        &app_with_volume("exit").await,
        kube_task(json!({"command": ["bash", "-c", "echo disk full >&2; exit 7"]})),
        "exited with code 7",
    )
    .await;
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn scaling_up_a_crashing_deployment_fails_with_crashloopbackoff_and_runs_the_defer_phase() {
    let ns = app_with_volume("crash").await;
    // Scaled down, as an application after a quiesce; its container exits at once when started.
    apply_yaml(&format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: crasher, namespace: {ns}}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: crasher}}}}
  template:
    metadata: {{labels: {{app: crasher}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: server
        image: {image}
        imagePullPolicy: IfNotPresent
        command: [bash, -c, "echo no configuration found >&2; exit 3"]
        terminationMessagePolicy: FallbackToLogsOnError
"#,
        image = tools_image()
    ))
    .unwrap();
    let phase = json!({"func": "ScaleWorkload", "name": "resume", "args": {
        "kind": "Deployment", "name": "crasher", "namespace": ns, "replicas": 1}});
    let done = fails_with(&ns, phase, "CrashLoopBackOff").await;
    let error = done["status"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    // The workload, its pod and container, and why the container ended.
    for part in [
        &format!("Deployment {ns}/crasher will not become ready"),
        "pod crasher-",
        "container \"server\"",
        "last exit code 3 (Error): no configuration found",
    ] {
        assert!(error.contains(part), "error without {part:?}: {done:#}");
    }
}
