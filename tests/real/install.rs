//! The operator installed from its image exactly as the README says ("Install", "With kustomize",
//! Kanister already installed: Kanister's own CRDs, the self-signed overlay), then the README's
//! examples run to completion on the real node.

use std::path::Path;
use std::process::Command;

use crate::real::{self, get_json, kubectl};
use crate::support;

/// The operator's namespace (manifests/base).
pub const NS: &str = "blueprint-operator";

/// Installs the operator once per cluster (later calls only check that it is running):
/// [`install`], then a fresh namespace named after `prefix`.
pub async fn installed_namespace(prefix: &str) -> String {
    install().await;
    support::namespace(&real::client().await, prefix).await
}

/// Kanister's released CRDs, a webhook certificate from `blueprint-operator certs`, and
/// `kubectl apply -k manifests/overlays/self-signed` from a copy of `manifests/`.
pub async fn install() {
    let _ = real::client().await;
    if kubectl(&["get", "deployment", "-n", NS, "blueprint-operator-webhook"]).is_err() {
        real::kanister_crds();
        // A copy: the certificates are written beside the overlay, as the README does.
        let manifests =
            std::env::temp_dir().join(format!("bpo-real-manifests-{}", std::process::id()));
        copy_dir(&support::repo_root().join("manifests"), &manifests);
        let certs = manifests.join("overlays/self-signed/certs");
        support::run_ok(
            Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
                // --force: a checkout where tests/e2e_manifests ran has certs/ in the copy already.
                .args(["certs", "--force", "--out", certs.to_str().unwrap()])
                .args([
                    "--dns-name",
                    "blueprint-operator-webhook.blueprint-operator.svc",
                ]),
            "certs",
        );
        kubectl(&[
            "apply",
            "-k",
            manifests.join("overlays/self-signed").to_str().unwrap(),
        ])
        .expect("kubectl apply -k manifests/overlays/self-signed");
        std::fs::remove_dir_all(&manifests).unwrap();
    }
    for deploy in [
        "blueprint-operator-webhook",
        "blueprint-operator-controller",
    ] {
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
        // The pods run the image built here, at the crate's version.
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
        assert_eq!(images, real::operator_image());
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// kubectl apply of a YAML text; stdout or the error (stderr) text.
pub fn apply_yaml(yaml: &str) -> Result<String, String> {
    kubectl_stdin(&["apply", "-f", "-"], yaml)
}

/// kubectl `args` with `yaml` on stdin; stdout or the error (stderr) text.
fn kubectl_stdin(args: &[&str], yaml: &str) -> Result<String, String> {
    let mut child = Command::new(real::kubectl_path())
        .arg("--kubeconfig")
        .arg(&support::cluster().kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn webhook_pod_normalizes_and_refuses_blueprints_through_its_service() {
    let ns = installed_namespace("admission").await;
    // Unnamed phases get names from the webhook running in its pod (the API server reaches it
    // through the Service the manifests create).
    apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: unnamed, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - func: KubeTask\n      args: {{image: x, command: [sh, -c, 'true']}}\n"
    ))
    .expect("a valid Blueprint is admitted");
    let stored = get_json(&["get", "blueprints.cr.kanister.io", "-n", &ns, "unnamed"]);
    assert_eq!(
        stored["actions"]["backup"]["phases"][0]["name"], "phase0",
        "{stored}"
    );
    // Every error listed and located, from our webhook (not the API server's schema check).
    let err = apply_yaml(&format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: bad, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - func: NoSuchFunction\n      name: a\n    - func: KubeTask\n      name: a\n      args: {{}}\n"
    ))
    .expect_err("a bad Blueprint is refused");
    for expected in [
        "actions.backup.phases[0].func: unknown function 'NoSuchFunction'",
        "actions.backup.phases[1].name: duplicate phase name 'a'",
        "actions.backup.phases[1].args.image: required argument 'image' of KubeTask is missing",
    ] {
        assert!(err.contains(expected), "{expected:?} not in {err}");
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn under_kanisters_crds_a_one_element_defer_phase_list_is_stored_as_the_object() {
    let ns = installed_namespace("deferlist").await;
    // The installed controller keeps the deferPhase node of Kanister's CRD open to a list; until
    // it has, the API server itself refuses the list (strict decoding).
    let one = format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: one, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - {{func: KubeTask, name: main, args: {{image: x, command: [sh]}}}}\n\
         \x20   deferPhase:\n    - {{func: KubeTask, name: cleanup, args: {{image: x, command: [sh]}}}}\n"
    );
    support::poll(real::WAIT, || async { apply_yaml(&one).ok() })
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", apply_yaml(&one).unwrap_err()));
    let stored = get_json(&["get", "blueprints.cr.kanister.io", "-n", &ns, "one"]);
    assert_eq!(
        stored["actions"]["backup"]["deferPhase"]["name"], "cleanup",
        "stored in Kanister's object form: {stored}"
    );
    let two = one.replace("name: one", "name: two").replace(
        "deferPhase:\n",
        "deferPhase:\n    - {func: KubeTask, name: second, args: {image: x, command: [sh]}}\n",
    );
    let err = apply_yaml(&two).expect_err("two deferPhases are refused");
    assert!(err.contains("deferPhase"), "{err}");
    assert!(
        !err.contains("strict decoding"),
        "refused by our webhook, not the schema: {err}"
    );
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn readme_example_actionset_and_actionschedule_run_to_completion() {
    install().await;
    let client = real::client().await;
    let examples = support::repo_root().join("examples");
    for f in ["namespace.yaml", "deployment.yaml", "blueprint.yaml"] {
        kubectl(&["apply", "-f", examples.join(f).to_str().unwrap()]).unwrap();
    }
    kubectl(&[
        "rollout",
        "status",
        "-n",
        "blueprint-demo",
        "deployment/demo-app",
        "--timeout=120s",
    ])
    .unwrap();
    let replicas =
        get_json(&["get", "deployment", "-n", "blueprint-demo", "demo-app"])["spec"]["replicas"]
            .as_i64()
            .unwrap();
    let name = kubectl(&[
        "create",
        "-f",
        examples.join("actionset.yaml").to_str().unwrap(),
        "-o",
        "jsonpath={.metadata.name}",
    ])
    .unwrap();
    let done = support::poll(real::WAIT * 2, || async {
        let a = get_json(&[
            "get",
            "actionsets.cr.kanister.io",
            "-n",
            "blueprint-demo",
            &name,
        ]);
        let state = a["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (state == "complete" || state == "failed").then_some(a)
    })
    .await
    .unwrap_or_else(|e| panic!("ActionSet {name} did not end: {e}"));
    assert_eq!(done["status"]["state"], "complete", "{done:#}");
    let artifact = &done["status"]["actions"][0]["artifacts"]["snapshot"]["keyValue"];
    assert!(
        artifact["id"]
            .as_str()
            .unwrap_or_default()
            .starts_with("snap-"),
        "the KubeTask's output, read from its container's log: {artifact}"
    );
    assert_eq!(artifact["replicasDuringCopy"], "0", "{artifact}");
    // The deferPhase scaled the application back.
    let after = get_json(&["get", "deployment", "-n", "blueprint-demo", "demo-app"]);
    assert_eq!(
        after["spec"]["replicas"].as_i64(),
        Some(replicas),
        "{after}"
    );

    kubectl(&[
        "apply",
        "-f",
        examples.join("actionschedule.yaml").to_str().unwrap(),
    ])
    .unwrap();
    let schedule = support::poll(real::WAIT * 2, || async {
        let s = get_json(&[
            "get",
            "actionschedules",
            "-n",
            "blueprint-demo",
            "demo-backup",
        ]);
        s["status"]["lastSuccessfulTime"]
            .as_str()
            .is_some()
            .then_some(s)
    })
    .await
    .unwrap_or_else(|e| panic!("no scheduled run completed: {e}"));
    kubectl(&[
        "delete",
        "-f",
        examples.join("actionschedule.yaml").to_str().unwrap(),
    ])
    .unwrap();
    assert!(
        schedule["status"]["lastScheduleTime"].is_string(),
        "{schedule:#}"
    );
    let _ = client;
}

/// Sets a Deployment of the operator back to its replica count when dropped, whatever the test
/// that scaled it does (later tests need the operator; `install` waits for its rollout).
struct RestoreReplicas {
    deploy: &'static str,
    replicas: String,
}

impl Drop for RestoreReplicas {
    fn drop(&mut self) {
        let to = format!("--replicas={}", self.replicas);
        if let Err(e) = kubectl(&["scale", "-n", NS, self.deploy, &to]) {
            eprintln!(
                "could not scale {} back to {}: {e:#}",
                self.deploy, self.replicas
            );
        }
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn with_no_webhook_pod_ready_blueprints_are_refused_naming_the_webhook_until_it_is_back() {
    let ns = installed_namespace("nowebhook").await;
    let blueprint = format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: waits, namespace: {ns}}}\n\
         actions:\n  backup:\n    phases:\n    - {{func: KubeTask, name: a, args: {{image: x, command: [sh]}}}}\n"
    );
    let webhook = "deployment/blueprint-operator-webhook";
    let replicas = kubectl(&["get", "-n", NS, webhook, "-o", "jsonpath={.spec.replicas}"]).unwrap();
    let restore = RestoreReplicas {
        deploy: webhook,
        replicas: replicas.trim().to_string(),
    };
    kubectl(&["scale", "-n", NS, webhook, "--replicas=0"]).unwrap();
    // failurePolicy Fail: once no webhook pod is ready (its endpoints gone), the API server
    // refuses, saying which webhook. Each try is a server-side dry run, which calls the webhooks
    // (sideEffects: None) and stores nothing: a `kubectl apply` would send nothing at all once
    // an early try had stored the Blueprint (it skips an unchanged object), and never be refused.
    let dry_run = ["create", "--dry-run=server", "-f", "-"];
    let err = support::poll(real::WAIT, || async {
        kubectl_stdin(&dry_run, &blueprint).err()
    })
    .await
    .unwrap_or_else(|e| {
        let pods = kubectl(&["get", "pods", "-n", NS, "-o", "wide"]).unwrap_or_default();
        let endpoints = kubectl(&["get", "endpointslices", "-n", NS]).unwrap_or_default();
        panic!("a Blueprint with no webhook pod ready was not refused: {e}\n{pods}\n{endpoints}")
    });
    assert!(err.contains("failed calling webhook"), "{err}");
    assert!(err.contains("blueprint-operator-webhook"), "{err}");
    let err = kubectl_stdin(&["create", "-f", "-"], &blueprint)
        .expect_err("a Blueprint created with no webhook pod ready is refused");
    assert!(err.contains("blueprint-operator-webhook"), "{err}");
    assert!(
        kubectl(&["get", "blueprints.cr.kanister.io", "-n", &ns, "waits"]).is_err(),
        "nothing was stored without admission"
    );

    drop(restore);
    kubectl(&["rollout", "status", "-n", NS, webhook, "--timeout=180s"]).unwrap();
    support::poll(real::WAIT, || async { apply_yaml(&blueprint).ok() })
        .await
        .expect("admitted once the webhook is back");
    let stored = get_json(&["get", "blueprints.cr.kanister.io", "-n", &ns, "waits"]);
    assert_eq!(stored["actions"]["backup"]["phases"][0]["name"], "a");
}
