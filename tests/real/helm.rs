//! The Helm chart on the real node, as a user installs it beside Kanister's CRDs:
//! `helm install`, the webhook answering, an ActionSchedule whose runs keep completing across
//! `helm upgrade` (a changed value rolls the controller), and `helm uninstall` leaving the
//! users' Blueprints, ActionSets and ActionSchedules in place.
//!
//! The kustomize install of [`crate::install`] may already be in the cluster from an earlier
//! test of the run. Two controllers would run the same ActionSets, so this test removes it first
//! (everything of `manifests/base` but the CRDs and the namespace) and installs the release
//! `blueprint-operator` in the same namespace, with the same object names, as a user moving to
//! the chart would. After `helm uninstall` the operator is gone: a later test's
//! [`crate::install::install`] installs the kustomize one again.

use std::path::PathBuf;
use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;

use crate::install::{NS, apply_yaml};
use crate::real::{self, get_json, kanister_crds, kubectl, tools_image};
use crate::support;

const RELEASE: &str = "blueprint-operator";

pub fn helm_path() -> PathBuf {
    let out = Command::new(support::repo_root().join("tools/helm/build.sh"))
        .arg("--print")
        .output()
        .expect("tools/helm/build.sh --print");
    let text = String::from_utf8_lossy(&out.stdout);
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("helm="))
        .map(PathBuf::from)
        .expect("helm= from tools/helm/build.sh --print");
    assert!(
        path.is_file(),
        "{} is missing: tools/helm/build.sh builds it (tools/test.sh --real does)",
        path.display()
    );
    path
}

/// Runs helm against the test cluster; stdout, or the error with stderr.
pub fn helm(args: &[&str]) -> Result<String, String> {
    let tmp = std::env::temp_dir();
    let out = Command::new(helm_path())
        .arg("--kubeconfig")
        .arg(&support::cluster().kubeconfig)
        .args(args)
        .current_dir(support::repo_root())
        .env("HELM_CACHE_HOME", tmp.join("bpo-helm-cache"))
        .env("HELM_CONFIG_HOME", tmp.join("bpo-helm-config"))
        .env("HELM_DATA_HOME", tmp.join("bpo-helm-data"))
        .output()
        .map_err(|e| format!("helm: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "helm {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Removes the kustomize install of `manifests/base` (a self-signed overlay's Secret too), but
/// not the CRDs (users' objects) nor the namespace; waits until its pods are gone.
fn remove_kustomize_install() {
    let kubectl_bin = real::kubectl_path();
    let base = support::kustomize(&kubectl_bin, "manifests/base");
    let docs: Vec<String> = base
        .split("\n---\n")
        .filter(|d| {
            !d.contains("kind: CustomResourceDefinition") && !d.contains("kind: Namespace\n")
        })
        .map(str::to_string)
        .collect();
    let file = std::env::temp_dir().join(format!("bpo-real-helm-{}.yaml", std::process::id()));
    std::fs::write(&file, docs.join("\n---\n")).unwrap();
    kubectl(&[
        "delete",
        "--ignore-not-found",
        "--wait=true",
        "-f",
        file.to_str().unwrap(),
    ])
    .expect("delete the kustomize install");
    std::fs::remove_file(&file).unwrap();
    kubectl(&[
        "delete",
        "secret",
        "--ignore-not-found",
        "-n",
        NS,
        "blueprint-operator-webhook-tls",
    ])
    .unwrap();
}

/// Waits until no pod of the operator is left in its namespace.
async fn operator_pods_gone() {
    support::poll(real::WAIT, || async {
        real::pod_names(NS, "app.kubernetes.io/name=blueprint-operator")
            .ok()
            .filter(Vec::is_empty)
    })
    .await
    .unwrap_or_else(|e| panic!("the operator's pods did not end: {e}"));
}

/// Waits until no object of the release's `manifest` (`helm get manifest`) is left: Deployments,
/// Services, webhook configurations, ClusterRoles and their bindings, ...; the error lists what
/// is still there.
async fn release_objects_gone(manifest: &str) {
    let file =
        std::env::temp_dir().join(format!("bpo-real-helm-release-{}.yaml", std::process::id()));
    std::fs::write(&file, manifest).unwrap();
    let path = file.to_str().unwrap();
    let left = || {
        kubectl(&[
            "get",
            "-f",
            path,
            "-n",
            NS,
            "--ignore-not-found",
            "-o",
            "name",
        ])
    };
    let gone = support::poll(real::WAIT, || async {
        left().ok().filter(|names| names.trim().is_empty())
    })
    .await;
    if let Err(e) = gone {
        let still = left().unwrap_or_else(|e| format!("{e:#}"));
        panic!(
            "objects of the release {RELEASE} are still there after helm uninstall: {e}\n{still}"
        );
    }
    std::fs::remove_file(&file).unwrap();
}

fn rollout(deploy: &str) {
    if let Err(e) = kubectl(&[
        "rollout",
        "status",
        "-n",
        NS,
        &format!("deployment/{deploy}"),
        "--timeout=180s",
    ]) {
        let pods = kubectl(&["get", "pods", "-n", NS, "-o", "wide"]).unwrap_or_default();
        let events = kubectl(&["get", "events", "-n", NS]).unwrap_or_default();
        panic!("{deploy} did not roll out: {e}\n{pods}\n{events}");
    }
}

/// The newest `status.lastSuccessfulTime` of the schedule, once it is after `after`.
async fn completes_after(ns: &str, schedule: &str, after: &str) -> Value {
    support::poll(real::WAIT * 2, || async {
        let s = get_json(&["get", "actionschedules", "-n", ns, schedule]);
        let last = s["status"]["lastSuccessfulTime"]
            .as_str()
            .unwrap_or_default();
        (!last.is_empty() && last > after).then_some(s)
    })
    .await
    .unwrap_or_else(|e| {
        let s = kubectl(&["get", "actionschedules", "-n", ns, schedule, "-o", "yaml"])
            .unwrap_or_default();
        let runs = kubectl(&["get", "actionsets.cr.kanister.io", "-n", ns]).unwrap_or_default();
        let pods = kubectl(&["get", "pods", "-n", NS, "-o", "wide"]).unwrap_or_default();
        panic!("no run of {schedule} completed after {after}: {e}\n{s}\n{runs}\n{pods}")
    })
}

/// Suspends the schedule and waits until its runs are settled: the suspension observed, no run
/// active, and no more complete (3) or failed (2) runs than its retention keeps, so the controller
/// has nothing left to create or rotate. Returns the names of the runs.
async fn settled_runs(ns: &str, schedule: &str) -> Vec<String> {
    kubectl(&[
        "patch",
        "actionschedules",
        "-n",
        ns,
        schedule,
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ])
    .unwrap();
    let settled = support::poll(real::WAIT, || async {
        let s: Value = serde_json::from_str(
            &kubectl(&["get", "actionschedules", "-n", ns, schedule, "-o", "json"]).ok()?,
        )
        .ok()?;
        let observed = s["status"]["observedGeneration"] == s["metadata"]["generation"];
        if !(observed && s["status"]["activeCount"].as_u64() == Some(0)) {
            return None;
        }
        let runs: Value = serde_json::from_str(
            &kubectl(&["get", "actionsets.cr.kanister.io", "-n", ns, "-o", "json"]).ok()?,
        )
        .ok()?;
        let runs = runs["items"].as_array()?.clone();
        let count = |state: &str| {
            runs.iter()
                .filter(|a| a["status"]["state"] == state)
                .count()
        };
        let (complete, failed) = (count("complete"), count("failed"));
        (complete + failed == runs.len() && complete <= 3 && failed <= 2).then(|| {
            runs.iter()
                .map(|a| {
                    a["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
    })
    .await;
    settled.unwrap_or_else(|e| {
        let s = kubectl(&["get", "actionschedules", "-n", ns, schedule, "-o", "yaml"])
            .unwrap_or_default();
        let runs = kubectl(&["get", "actionsets.cr.kanister.io", "-n", ns]).unwrap_or_default();
        panic!("the runs of {schedule} did not settle after suspending it: {e}\n{s}\n{runs}")
    })
}

fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn helm_install_upgrade_uninstall_beside_kanister_crds() {
    let client = real::client().await;
    kanister_crds();
    remove_kustomize_install();
    operator_pods_gone().await;

    // --- install
    helm(&[
        "install",
        RELEASE,
        "charts/blueprint-operator",
        "--namespace",
        NS,
        "--create-namespace",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    for deploy in [
        "blueprint-operator-webhook",
        "blueprint-operator-controller",
    ] {
        rollout(deploy);
        let images = kubectl(&[
            "get",
            "deployment",
            "-n",
            NS,
            deploy,
            "-o",
            "jsonpath={.spec.template.spec.containers[*].image}",
        ])
        .unwrap();
        assert_eq!(
            images,
            real::operator_image(),
            "the chart's appVersion is the image built here"
        );
    }
    let status = helm(&["status", RELEASE, "-n", NS, "-o", "json"]).unwrap();
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["info"]["status"], "deployed", "{status:#}");

    // --- the webhook answers through its Service: an unnamed phase is stored named.
    let ns = support::namespace(&client, "helm").await;
    let image = tools_image();
    apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: tick, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - func: KubeTask\n      args:\n        image: {image}\n        command: [bash, -c, 'echo tick']\n"
    ))
    .expect("a valid Blueprint is admitted");
    let stored = get_json(&["get", "blueprints.cr.kanister.io", "-n", &ns, "tick"]);
    assert_eq!(
        stored["actions"]["backup"]["phases"][0]["name"], "phase0",
        "{stored}"
    );
    let refused = apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: bad, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - func: NoSuchFunction\n      name: a\n"
    ))
    .expect_err("a bad Blueprint is refused");
    assert!(
        // the webhook's own text, located (not the API server's schema check)
        refused.contains("actions.backup.phases[0].func: unknown function 'NoSuchFunction'"),
        "{refused}"
    );

    // --- a schedule whose runs complete before and after an upgrade.
    apply_yaml(&format!(
        "apiVersion: blueprint-operator.io/v1alpha1\nkind: ActionSchedule\nmetadata: {{name: tick, namespace: {ns}}}\n\
         spec:\n  schedule: '@every 10s'\n  concurrencyPolicy: Forbid\n  actionSetTemplate:\n    actions:\n    - name: backup\n      blueprint: tick\n      object: {{kind: Namespace, name: {ns}}}\n  retention: {{keepLast: 3, keepFailed: 2}}\n"
    ))
    .expect("the ActionSchedule is admitted");
    completes_after(&ns, "tick", "").await;
    let tls_before = get_json(&["get", "secret", "-n", NS, "blueprint-operator-webhook-tls"]);

    let upgraded_at = now_rfc3339();
    helm(&[
        "upgrade",
        RELEASE,
        "charts/blueprint-operator",
        "--namespace",
        NS,
        "--reuse-values",
        "--set",
        "controller.logLevel=debug",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    rollout("blueprint-operator-controller");
    let args = kubectl(&[
        "get",
        "deployment",
        "-n",
        NS,
        "blueprint-operator-controller",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].args}",
    ])
    .unwrap();
    assert!(args.contains("--log-level=debug"), "{args}");
    // The new controller pods (a new Lease holder) keep the schedule running.
    let after = completes_after(&ns, "tick", &upgraded_at).await;
    assert!(
        after["status"]["lastScheduleTime"]
            .as_str()
            .unwrap_or_default()
            > upgraded_at.as_str(),
        "{after:#}"
    );
    // The generated certificate was looked up and kept, not made anew.
    let tls_after = get_json(&["get", "secret", "-n", NS, "blueprint-operator-webhook-tls"]);
    assert_eq!(
        tls_before["data"], tls_after["data"],
        "the upgrade kept the serving certificate"
    );
    // Renewal: with renewBeforeDays beyond the serving certificate's 365 days of validity, an
    // upgrade makes a new one signed by the kept CA (caBundle unchanged), which the webhook
    // loads from the updated Secret and serves.
    helm(&[
        "upgrade",
        RELEASE,
        "charts/blueprint-operator",
        "--namespace",
        NS,
        "--reuse-values",
        "--set",
        "webhook.certificates.generate.renewBeforeDays=400",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let renewed = get_json(&["get", "secret", "-n", NS, "blueprint-operator-webhook-tls"]);
    assert_ne!(
        renewed["data"]["tls.crt"], tls_before["data"]["tls.crt"],
        "the serving certificate was renewed"
    );
    assert_eq!(
        renewed["data"]["ca.crt"], tls_before["data"]["ca.crt"],
        "the CA was kept"
    );
    let bundle = kubectl(&[
        "get",
        "validatingwebhookconfiguration",
        "blueprint-operator",
        "-o",
        "jsonpath={.webhooks[0].clientConfig.caBundle}",
    ])
    .unwrap();
    assert_eq!(Some(bundle.as_str()), renewed["data"]["ca.crt"].as_str());
    // Every webhook pod loads the new certificate from the updated Secret (the kubelet syncs it
    // within its period; the server counts a reload only when the files change), then serves it.
    let pods = kubectl(&[
        "get",
        "pods",
        "-n",
        NS,
        "-l",
        "app.kubernetes.io/component=webhook",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])
    .unwrap();
    for pod in pods.split_whitespace() {
        let path = format!("/api/v1/namespaces/{NS}/pods/{pod}:8080/proxy/metrics");
        support::poll(real::WAIT, || {
            let path = path.clone();
            async move {
                kubectl(&["get", "--raw", &path]).ok().filter(|m| {
                    m.contains("blueprint_operator_webhook_tls_reloads_total{result=\"success\"} 1")
                })
            }
        })
        .await
        .unwrap_or_else(|e| panic!("{pod} did not reload the renewed certificate: {e}"));
    }
    apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: renewed, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - func: KubeTask\n      args: {{image: x, command: [sh, -c, 'true']}}\n"
    ))
    .expect("admitted through the renewed certificate");
    let b = get_json(&["get", "blueprints.cr.kanister.io", "-n", &ns, "renewed"]);
    assert_eq!(b["actions"]["backup"]["phases"][0]["name"], "phase0", "{b}");
    let history: Value =
        serde_json::from_str(&helm(&["history", RELEASE, "-n", NS, "-o", "json"]).unwrap())
            .unwrap();
    assert_eq!(history.as_array().map(Vec::len), Some(3), "{history:#}");

    // --- uninstall: the operator goes, the users' objects stay.
    let run_names = settled_runs(&ns, "tick").await;
    assert!(!run_names.is_empty());
    let manifest = helm(&["get", "manifest", RELEASE, "-n", NS]).unwrap_or_else(|e| panic!("{e}"));
    // Helm's default (no --wait): Helm 4.3's kstatus wait for deletion counts an object its
    // informer has not listed yet as deleted and can then report a late stale list of it
    // ("ClusterRole//... still exists. status: Current") under a loaded API server. The test
    // waits itself, on the objects of the release's own manifest.
    helm(&["uninstall", RELEASE, "--namespace", NS]).unwrap_or_else(|e| panic!("{e}"));
    release_objects_gone(&manifest).await;
    operator_pods_gone().await;
    for deploy in [
        "blueprint-operator-webhook",
        "blueprint-operator-controller",
    ] {
        assert!(
            kubectl(&["get", "deployment", "-n", NS, deploy]).is_err(),
            "{deploy} is gone after uninstall"
        );
    }
    assert!(kubectl(&["get", "mutatingwebhookconfiguration", "blueprint-operator"]).is_err());
    get_json(&["get", "blueprints.cr.kanister.io", "-n", &ns, "tick"]);
    get_json(&["get", "actionschedules", "-n", &ns, "tick"]);
    get_json(&["get", "crd", "actionschedules.blueprint-operator.io"]);
    for run in &run_names {
        // Every run seen before uninstall is still there (none was due for rotation).
        get_json(&["get", "actionsets.cr.kanister.io", "-n", &ns, run]);
    }
    kubectl(&[
        "delete",
        "actionschedules",
        "-n",
        &ns,
        "tick",
        "--wait=true",
    ])
    .unwrap();
}
