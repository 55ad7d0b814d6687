//! The install manifests are accepted by a real API server: every overlay
//! builds with kustomize, and the self-signed overlay plus Kanister's CRDs
//! applies (CRDs, RBAC, webhook configurations with the generated caBundle).

mod support;

use std::process::Command;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use kube::Api;

#[tokio::test]
async fn overlays_build_and_apply_on_a_real_api_server() {
    let client = support::client().await;
    let Some(kubectl) = support::require_kubectl() else {
        return;
    };
    let root = support::cluster::repo_root();

    // A development certificate for the self-signed overlay (git-ignored).
    let certs = root.join("manifests/overlays/self-signed/certs");
    let status = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["certs", "--force", "--out", certs.to_str().unwrap()])
        .args([
            "--dns-name",
            "blueprint-operator-webhook.blueprint-operator.svc",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    let base = support::kustomize(&kubectl, "manifests");
    assert!(base.contains("kind: MutatingWebhookConfiguration"));
    assert!(
        !base.contains("cr.kanister.io\n  names:\n    kind: Blueprint"),
        "Kanister CRDs only when asked"
    );
    let cm = support::kustomize(&kubectl, "manifests/overlays/cert-manager");
    assert!(cm.contains("cert-manager.io/inject-ca-from"));
    let kanister = support::kustomize(&kubectl, "manifests/overlays/with-kanister-crds");
    assert_eq!(
        kanister.matches("kind: CustomResourceDefinition").count(),
        4
    );

    for overlay in [
        "manifests/overlays/with-kanister-crds",
        "manifests/overlays/self-signed",
    ] {
        support::kubectl_apply(&kubectl, &["-k", overlay]);
    }
    // The CA made by `certs` reached the caBundle of every webhook.
    let ca = std::fs::read(certs.join("ca.crt")).unwrap();
    let hooks: Api<MutatingWebhookConfiguration> = Api::all(client);
    let cfg = hooks.get("blueprint-operator").await.unwrap();
    for w in cfg.webhooks.unwrap() {
        assert_eq!(
            w.client_config.ca_bundle.map(|b| b.0),
            Some(ca.clone()),
            "{}",
            w.name
        );
    }
}
