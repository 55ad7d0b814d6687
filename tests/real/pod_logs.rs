//! On the real node: a failed phase's pod is deleted, and the last lines of its
//! container log (from the kubelet) stay on the ActionSet, with the credentials the action
//! reads redacted, in the failed phase's output and a Warning Event about the pod; `ctl
//! describe` shows them without the pod.

use std::process::Command;

use serde_json::{Value, json};

use crate::functions::{app_with_volume, run_action};
use crate::install::apply_yaml;
use crate::real::{get_json, tools_image};
use crate::support;

const PASSWORD: &str = "r3al-pa55word";

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_failed_phase_leaves_its_last_log_lines_redacted_after_its_pod_is_deleted() {
    // The script writes stderr into stdout's pipe (`exec 2>&1`): containerd copies the two
    // streams into the log by separate goroutines, so under load an stderr line can land before
    // stdout lines written earlier, and "the last 20 lines" would not be the last ones written.
    let ns = app_with_volume("podlog").await;
    apply_yaml(&format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: db, namespace: {ns}}}
stringData: {{password: {PASSWORD}}}
---
apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {{name: podlog, namespace: {ns}}}
actions:
  backup:
    phases:
    - func: KubeTask
      name: dump
      args:
        image: {image}
        command:
        - bash
        - -c
        - |
          exec 2>&1
          for i in $(seq 1 40); do echo "line $i"; done
          echo 'connecting with {{{{ index .Secrets.db.Data "password" | toString }}}}'
          echo "fatal: disk full" >&2
          exit 5
"#,
        image = tools_image()
    ))
    .unwrap();
    let done = run_action(
        &ns,
        "podlog",
        "backup",
        json!({"secrets": {"db": {"name": "db", "namespace": ns}}}),
    )
    .await;
    assert_eq!(done["status"]["state"], "failed", "{done:#}");
    assert!(
        !done.to_string().contains(PASSWORD),
        "a credential in the ActionSet: {done:#}"
    );
    let kept =
        &done["status"]["actions"][0]["phases"][0]["output"]["blueprint-operator.io/podLogs"];
    let (pod, containers) = kept
        .as_object()
        .and_then(|m| m.iter().next())
        .unwrap_or_else(|| panic!("no kept log lines: {done:#}"));
    let lines = containers
        .as_object()
        .and_then(|c| c.values().next())
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert_eq!(lines.lines().count(), 20, "{lines}");
    assert!(
        lines.ends_with("line 40\nconnecting with <redacted>\nfatal: disk full"),
        "{lines}"
    );

    // The pod is gone; the Event about it, related to the ActionSet, says the same.
    let name = done["metadata"]["name"].as_str().unwrap().to_string();
    let pod_name = pod
        .split_once('/')
        .map(|(_, n)| n)
        .unwrap_or_default()
        .to_string();
    let client = crate::real::client().await;
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(client, &ns);
    support::poll(crate::real::WAIT, || async {
        pods.get_opt(&pod_name)
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await
    .expect("the phase's pod is deleted");
    let events = get_json(&["get", "events.events.k8s.io", "-n", &ns]);
    let ev = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["reason"] == "PodLogKept" && e["related"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no PodLogKept Event: {events:#}"));
    assert_eq!(ev["regarding"]["name"], pod_name.as_str(), "{ev:#}");
    assert!(
        ev["note"]
            .as_str()
            .unwrap_or_default()
            .contains("fatal: disk full"),
        "{ev:#}"
    );

    // ctl describe shows them without the pod.
    let out = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["ctl", "-n", &ns, "describe", &name])
        .env("KUBECONFIG", &support::cluster().kubeconfig)
        .output()
        .expect("run ctl describe");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Last log lines of dump (pod "), "{text}");
    assert!(text.contains("    fatal: disk full"), "{text}");
    assert!(text.contains("PodLogKept"), "{text}");
}
