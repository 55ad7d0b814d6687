//! Static checks of manifests/webhook: the configurations point at routes the server has, the
//! Deployment's arguments parse with the real CLI, and the safety settings are in place.

use std::path::Path;

use blueprint_operator::webhook::Route;
use clap::Parser as _;
use serde::Deserialize as _;
use serde_json::Value;

#[path = "support/manifests.rs"]
mod manifests;
use manifests::{Cli, Cmd};

fn docs(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/webhook")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

#[test]
fn webhook_configurations_are_safe_and_match_the_routes() {
    let configs = docs("webhookconfigurations.yaml");
    assert_eq!(configs.len(), 2);
    let mut paths = Vec::new();
    for c in &configs {
        for w in c["webhooks"].as_array().unwrap() {
            let name = w["name"].as_str().unwrap();
            assert_eq!(w["sideEffects"], "None", "{name}");
            assert_eq!(w["failurePolicy"], "Fail", "{name}");
            assert_eq!(
                w["admissionReviewVersions"],
                serde_json::json!(["v1"]),
                "{name}"
            );
            let timeout = w["timeoutSeconds"].as_i64().unwrap();
            assert!((1..=30).contains(&timeout), "{name}");
            let exprs = w["namespaceSelector"]["matchExpressions"]
                .as_array()
                .unwrap();
            let excluded = exprs
                .iter()
                .find(|e| e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn")
                .unwrap_or_else(|| panic!("{name}: no namespace exclusion"));
            for ns in ["kube-system", "blueprint-operator"] {
                assert!(
                    excluded["values"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|v| v == ns),
                    "{name} does not exclude {ns}"
                );
            }
            let svc = &w["clientConfig"]["service"];
            assert_eq!(svc["name"], "blueprint-operator-webhook");
            let path = svc["path"].as_str().unwrap();
            let route = Route::from_path(path).unwrap_or_else(|| panic!("{name}: no route {path}"));
            let mutates = matches!(route, Route::MutateBlueprint | Route::MutateActionSet);
            assert_eq!(
                mutates,
                c["kind"] == "MutatingWebhookConfiguration",
                "{name}: {path} in a {}",
                c["kind"]
            );
            paths.push(path.to_owned());
        }
    }
    paths.sort();
    let mut all: Vec<String> = Route::ALL.iter().map(|r| r.path().to_owned()).collect();
    all.sort();
    assert_eq!(paths, all, "every route is registered exactly once");
}

#[test]
fn deployment_is_hardened_and_its_args_parse() {
    let dep = &docs("deployment.yaml")[0];
    assert_eq!(dep["spec"]["replicas"], 2);
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert!(c["resources"]["requests"].is_object() && c["resources"]["limits"].is_object());
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");

    let args = manifests::strings(&c["args"]);
    let cli = Cli::try_parse_from(std::iter::once("blueprint-operator".to_owned()).chain(args))
        .unwrap_or_else(|e| panic!("Deployment args do not parse: {e}"));
    let Cmd::Webhook(args) = cli.cmd else {
        panic!("Deployment args are not the webhook's")
    };
    // The certificate comes from the mounted Secret directory (not a subPath mount).
    let mount = &c["volumeMounts"][0];
    assert!(mount.get("subPath").is_none());
    let dir = mount["mountPath"].as_str().unwrap();
    assert!(args.tls_cert_file.starts_with(dir) && args.tls_key_file.starts_with(dir));
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        "blueprint-operator-webhook-tls"
    );
    // Probes go to the plain-HTTP probe port, admission to the HTTPS port behind the Service.
    let ports = c["ports"].as_array().unwrap();
    let port_of = |name: &str| {
        ports.iter().find(|p| p["name"] == name).unwrap()["containerPort"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(u64::from(args.listen.port()), port_of("https"));
    assert!(
        args.probe_listen
            .ends_with(&format!(":{}", port_of("probes")))
    );
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], "probes");
    let svc = &docs("service.yaml")[0];
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "https");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    // Shutdown fits in the grace period.
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(args.shutdown_delay + args.shutdown_grace < grace);
}

#[test]
fn rbac_only_reads_blueprints() {
    let rbac = docs("rbac.yaml");
    let role = rbac.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": ["cr.kanister.io"], "resources": ["blueprints"], "verbs": ["get"]}])
    );
    let binding = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRoleBinding")
        .unwrap();
    assert_eq!(binding["subjects"][0]["name"], "blueprint-operator-webhook");
    let dep = &docs("deployment.yaml")[0];
    assert_eq!(
        dep["spec"]["template"]["spec"]["serviceAccountName"],
        "blueprint-operator-webhook"
    );
}
