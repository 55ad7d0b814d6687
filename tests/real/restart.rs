//! The installed controller survives its own restart: the pod that holds the
//! executor Lease is deleted while a KubeTask phase's container sleeps; the other replica takes
//! the Lease, re-attaches to the phase's pod and the ActionSet completes with the phase's output.

use serde_json::{Value, json};

use crate::functions::run_action;
use crate::install::{NS, apply_yaml, installed_namespace};
use crate::real::{self, kubectl, tools_image};
use crate::support;

/// The executor Lease's holder (a controller pod name), if any.
pub fn leader() -> Option<String> {
    kubectl(&[
        "get",
        "lease",
        "-n",
        NS,
        "blueprint-operator-executor",
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ])
    .ok()
    .filter(|h| !h.is_empty())
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn deleting_the_leader_pod_mid_phase_does_not_fail_the_run() {
    let ns = installed_namespace("restart").await;
    // Sleeps past the leader's deletion and the Lease handover, then prints the phase output.
    let script = r#"sleep 40; echo '###Phase-output###: {"key":"size","value":"42"}'"#;
    apply_yaml(&format!(
        r#"apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {{name: slow, namespace: {ns}}}
actions:
  backup:
    phases:
    - func: KubeTask
      name: dump
      args:
        image: {image}
        command: [bash, -c, {script}]
"#,
        image = tools_image(),
        script = serde_json::to_string(script).unwrap()
    ))
    .unwrap();
    // The ActionSet runs in the background; meanwhile the leader is deleted.
    let run = {
        let ns = ns.clone();
        tokio::spawn(async move {
            let extra = json!({"object": {"apiVersion": "v1", "resource": "namespaces",
                                          "kind": "Namespace", "name": ns, "namespace": ns}});
            run_action(&ns, "slow", "backup", extra).await
        })
    };
    // The phase's container runs (its pod carries the phase label).
    support::poll(real::WAIT, || async {
        let out = kubectl(&[
            "get",
            "pods",
            "-n",
            &ns,
            "-l",
            "blueprint-operator.io/phase=0.0",
            "-o",
            "jsonpath={range .items[?(@.status.phase==\"Running\")]}{.metadata.name}{end}",
        ])
        .ok()?;
        (!out.is_empty()).then_some(out)
    })
    .await
    .expect("the phase's pod runs");
    let old = leader().expect("a controller holds the executor Lease");
    kubectl(&["delete", "pod", "-n", NS, &old, "--wait=false"]).unwrap();
    let done: Value = run.await.unwrap();
    assert_eq!(done["status"]["state"], "complete", "{done:#}");
    let phase = &done["status"]["actions"][0]["phases"][0];
    assert_eq!(phase["output"]["size"], "42", "{done:#}");
    let new = leader().expect("a controller holds the executor Lease");
    assert_ne!(new, old, "another replica took over");
    // The same pod ran the phase: the new leader re-attached to it (its Event says so).
    let events = kubectl(&["get", "events", "-n", &ns, "-o", "json"]).unwrap();
    let events: Value = serde_json::from_str(&events).unwrap();
    let notes: Vec<&str> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["note"].as_str().or(e["message"].as_str()))
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("phase dump was running; re-attached to its pod")),
        "{notes:?}"
    );
    let started = notes
        .iter()
        .filter(|n| **n == "Executing phase dump")
        .count();
    assert_eq!(started, 1, "{notes:?}");
}
