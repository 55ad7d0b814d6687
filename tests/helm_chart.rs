//! charts/blueprint-operator against manifests/: `helm lint`, and `helm template` with default
//! and non-default values compared with `kubectl kustomize` of the corresponding overlay, as
//! parsed objects (the same objects where the same choices are made). Helm's own labels and
//! annotations may be added to the kustomize ones; generated certificate data is compared by
//! what it certifies, not byte for byte. No cluster: helm (tools/helm/build.sh) and kubectl
//! (tools/control-plane/build.sh) are the binaries `tools/test.sh` builds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser as _;
use serde::Deserialize as _;
use serde_json::Value;

#[path = "support/manifests.rs"]
mod manifests;
use manifests::{Cli, Cmd};

const CHART: &str = "charts/blueprint-operator";
const NS: &str = "blueprint-operator";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The binary `name` that `script --print` names; fails with how to build it.
fn tool(script: &str, name: &str) -> PathBuf {
    let out = Command::new(repo().join(script))
        .arg("--print")
        .output()
        .unwrap_or_else(|e| panic!("{script} --print: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{script} --print names no {name}: {text}"));
    assert!(
        path.is_file(),
        "{} is missing: run {script} (tools/test.sh does) to build {name}",
        path.display()
    );
    path
}

fn helm() -> PathBuf {
    tool("tools/helm/build.sh", "helm")
}

fn kubectl() -> PathBuf {
    tool("tools/control-plane/build.sh", "kubectl")
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .current_dir(repo())
        // Helm keeps its caches and configuration here, never in the user's home.
        .env(
            "HELM_CACHE_HOME",
            std::env::temp_dir().join("bpo-helm-cache"),
        )
        .env(
            "HELM_CONFIG_HOME",
            std::env::temp_dir().join("bpo-helm-config"),
        )
        .env("HELM_DATA_HOME", std::env::temp_dir().join("bpo-helm-data"))
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("UTF-8"))
    } else {
        Err(format!(
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn yaml_docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

/// `helm template` of the chart as release `release` in namespace `ns`, with `--set` values.
fn try_template(release: &str, ns: &str, set: &[&str]) -> Result<Vec<Value>, String> {
    let mut cmd = Command::new(helm());
    cmd.args([
        "template",
        release,
        CHART,
        "--namespace",
        ns,
        "--include-crds",
    ]);
    for s in set {
        cmd.args(["--set", s]);
    }
    run(&mut cmd, &format!("helm template {}", set.join(" "))).map(|t| yaml_docs(&t))
}

fn template(set: &[&str]) -> Vec<Value> {
    try_template(NS, NS, set).unwrap_or_else(|e| panic!("{e}"))
}

/// `kubectl kustomize DIR` of a copy of manifests/ with a self-signed certificate written where
/// the self-signed overlay reads it (as the README's install does).
fn kustomize(dir: &str) -> Vec<Value> {
    let tmp = std::env::temp_dir().join(format!(
        "bpo-helm-chart-{}-{}",
        std::process::id(),
        dir.replace('/', "-")
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(&repo().join("manifests"), &tmp.join("manifests"));
    let certs = tmp.join("manifests/overlays/self-signed/certs");
    run(
        Command::new(env!("CARGO_BIN_EXE_blueprint-operator")).args([
            "certs",
            "--force",
            "--out",
            certs.to_str().unwrap(),
            "--dns-name",
            "blueprint-operator-webhook.blueprint-operator.svc",
        ]),
        "blueprint-operator certs",
    )
    .unwrap();
    let text = run(
        Command::new(kubectl()).args(["kustomize", tmp.join(dir).to_str().unwrap()]),
        &format!("kubectl kustomize {dir}"),
    )
    .unwrap();
    std::fs::remove_dir_all(&tmp).unwrap();
    yaml_docs(&text)
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

fn key(o: &Value) -> String {
    format!(
        "{} {}/{}",
        o["kind"].as_str().unwrap_or("?"),
        o["metadata"]["namespace"].as_str().unwrap_or(""),
        o["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// Removes every `metadata.labels` and `metadata.annotations` (at any depth) from `helm` and
/// `kustomize`, after checking that kustomize's are among Helm's (Helm adds its own).
fn strip_metadata(helm: &mut Value, kustomize: &mut Value, at: &str) {
    match (helm, kustomize) {
        (Value::Object(h), Value::Object(k)) => {
            if let (Some(Value::Object(hm)), Some(Value::Object(km))) =
                (h.get_mut("metadata"), k.get_mut("metadata"))
            {
                for field in ["labels", "annotations"] {
                    let hv = hm.remove(field).unwrap_or(Value::Null);
                    let kv = km.remove(field).unwrap_or(Value::Null);
                    for (name, value) in kv.as_object().into_iter().flatten() {
                        assert_eq!(
                            hv.get(name),
                            Some(value),
                            "{at}: metadata.{field}.{name}: kustomize has {value}, helm {hv}"
                        );
                    }
                }
            }
            for (name, kv) in k.iter_mut() {
                if let Some(hv) = h.get_mut(name) {
                    strip_metadata(hv, kv, &format!("{at}.{name}"));
                }
            }
        }
        (Value::Array(h), Value::Array(k)) => {
            for (i, (hv, kv)) in h.iter_mut().zip(k.iter_mut()).enumerate() {
                strip_metadata(hv, kv, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

/// Certificate bytes are made anew by each tool: keep which keys a Secret has and drop
/// `caBundle` (checked by [`generated_certificate_serves_the_service_and_matches_ca_bundle`]).
fn strip_cert_data(o: &mut Value) {
    if o["kind"] == "Secret"
        && o["type"] == "kubernetes.io/tls"
        && let Some(data) = o["data"].as_object_mut()
    {
        for v in data.values_mut() {
            *v = Value::String("<certificate data>".into());
        }
    }
    for w in o["webhooks"].as_array_mut().into_iter().flatten() {
        if let Some(c) = w["clientConfig"].as_object_mut() {
            c.remove("caBundle");
        }
    }
}

/// Every kustomize object (but the Namespace, which `helm install --create-namespace` makes)
/// is in Helm's output and equal to it; Helm's output has no other objects than `helm_only`.
fn assert_same_objects(helm: &[Value], kustomize: &[Value], helm_only: &[&str]) {
    let mut h: BTreeMap<String, Value> = helm.iter().map(|o| (key(o), o.clone())).collect();
    for k in kustomize {
        if k["kind"] == "Namespace" {
            continue;
        }
        let id = key(k);
        let mut hv = h
            .remove(&id)
            .unwrap_or_else(|| panic!("{id}: in the kustomize output, not in the chart's"));
        let mut kv = k.clone();
        strip_metadata(&mut hv, &mut kv, &id);
        strip_cert_data(&mut hv);
        strip_cert_data(&mut kv);
        normalize_numbers(&mut hv);
        normalize_numbers(&mut kv);
        if let Some(d) = first_difference(&hv, &kv, "") {
            panic!("{id} differs at {d}");
        }
    }
    let extra: Vec<&String> = h
        .keys()
        .filter(|k| !helm_only.contains(&k.as_str()))
        .collect();
    assert!(extra.is_empty(), "only in the chart's output: {extra:?}");
}

/// `0.0` and `0` are the same number to the API server (YAML writers differ).
fn normalize_numbers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15) {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalize_numbers),
        Value::Object(o) => o.values_mut().for_each(normalize_numbers),
        _ => {}
    }
}

/// The path of the first difference, with both values.
fn first_difference(helm: &Value, kustomize: &Value, at: &str) -> Option<String> {
    match (helm, kustomize) {
        (Value::Object(h), Value::Object(k)) => {
            let keys: std::collections::BTreeSet<&String> = h.keys().chain(k.keys()).collect();
            keys.into_iter().find_map(|key| {
                first_difference(
                    h.get(key).unwrap_or(&Value::Null),
                    k.get(key).unwrap_or(&Value::Null),
                    &format!("{at}.{key}"),
                )
            })
        }
        (Value::Array(h), Value::Array(k)) if h.len() == k.len() => h
            .iter()
            .zip(k)
            .enumerate()
            .find_map(|(i, (hv, kv))| first_difference(hv, kv, &format!("{at}[{i}]"))),
        _ if helm == kustomize => None,
        _ => Some(format!(
            "{at}:\n  helm:      {helm}\n  kustomize: {kustomize}"
        )),
    }
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn container<'a>(docs: &'a [Value], deployment: &str) -> &'a Value {
    &find(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]
}

#[test]
fn chart_lints_with_default_and_other_values() {
    let helm = helm();
    run(
        Command::new(&helm).args(["lint", "--strict", CHART]),
        "helm lint",
    )
    .unwrap();
    run(
        Command::new(&helm).args([
            "lint",
            "--strict",
            CHART,
            "--set",
            "webhook.certificates.mode=cert-manager,crds.installKanister=true",
            "--set",
            "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true",
            "--set",
            "metrics.grafanaDashboard.enabled=true",
        ]),
        "helm lint (cert-manager, Kanister's CRDs, monitoring)",
    )
    .unwrap();
}

#[test]
fn chart_version_is_the_crate_version() {
    let chart: Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join(CHART).join("Chart.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(chart["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn defaults_make_the_self_signed_overlay() {
    let helm = template(&[]);
    let kustomize = kustomize("manifests/overlays/self-signed");
    // The chart keeps its CA (with its key) to sign later serving certificates.
    assert_same_objects(
        &helm,
        &kustomize,
        &["Secret blueprint-operator/blueprint-operator-webhook-ca"],
    );
    // The image: the chart's appVersion, never pulled when present.
    let c = container(&helm, "blueprint-operator-controller");
    assert_eq!(
        c["image"],
        format!("blueprint-operator:{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
}

#[test]
fn cert_manager_mode_makes_the_cert_manager_overlay() {
    let helm = template(&["webhook.certificates.mode=cert-manager"]);
    assert_same_objects(&helm, &kustomize("manifests/overlays/cert-manager"), &[]);
}

#[test]
fn kanister_crds_only_when_asked_and_kept_on_uninstall() {
    let defaults = template(&[]);
    assert!(
        !defaults
            .iter()
            .any(|o| o["kind"] == "CustomResourceDefinition"
                && o["spec"]["group"] == "cr.kanister.io"),
        "Kanister's CRDs are never installed by default"
    );
    // With a Secret of the user's: the with-kanister-crds overlay has no certificate either.
    let helm = template(&[
        "crds.installKanister=true",
        "webhook.certificates.mode=secret",
        "webhook.certificates.secretName=blueprint-operator-webhook-tls",
        "webhook.certificates.caBundle=Cg==",
    ]);
    assert_same_objects(
        &helm,
        &kustomize("manifests/overlays/with-kanister-crds"),
        &[],
    );
    for crd in ["blueprints", "actionsets", "profiles"] {
        let o = find(
            &helm,
            "CustomResourceDefinition",
            &format!("{crd}.cr.kanister.io"),
        );
        assert_eq!(
            o["metadata"]["annotations"]["helm.sh/resource-policy"],
            "keep"
        );
    }
}

#[test]
fn monitoring_values_make_manifests_monitoring() {
    let helm = template(&[
        "metrics.serviceMonitor.enabled=true",
        "metrics.prometheusRule.enabled=true",
        "metrics.grafanaDashboard.enabled=true",
    ]);
    let monitoring: Vec<Value> = helm
        .iter()
        .filter(|o| o["metadata"]["labels"]["app.kubernetes.io/component"] == "monitoring")
        .cloned()
        .collect();
    assert_eq!(
        monitoring.len(),
        3,
        "ServiceMonitor, PrometheusRule, dashboard ConfigMap"
    );
    assert_same_objects(&monitoring, &kustomize("manifests/monitoring"), &[]);
    // Off by default: prometheus-operator's CRDs may not exist.
    assert!(template(&[]).iter().all(|o| {
        !o["apiVersion"]
            .as_str()
            .unwrap()
            .starts_with("monitoring.coreos.com")
    }),);
    // The ServiceMonitor finds both metrics Services, on a port named as it says.
    let sm = find(&helm, "ServiceMonitor", "blueprint-operator");
    let selector = sm["spec"]["selector"]["matchLabels"].as_object().unwrap();
    let port = &sm["spec"]["endpoints"][0]["port"];
    for svc in [
        "blueprint-operator-controller-metrics",
        "blueprint-operator-webhook-metrics",
    ] {
        let s = find(&helm, "Service", svc);
        for (k, v) in selector {
            assert_eq!(&s["metadata"]["labels"][k], v, "{svc}: label {k}");
        }
        assert!(
            s["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| &p["name"] == port),
            "{svc}: no port {port}"
        );
    }
}

#[test]
fn other_values_reach_the_objects() {
    let ns = "backup-system";
    let docs = try_template(
        "bpo",
        ns,
        &[
            "image.repository=registry.example/blueprint-operator",
            "image.tag=9.9.9",
            "image.pullPolicy=Always",
            "controller.replicas=1",
            "controller.leaderElection.enabled=false",
            "controller.watchNamespace=apps",
            "controller.runNamespaces={apps,db}",
            "controller.trustedNamespaces={kanister,ops}",
            "controller.scheduler=false",
            "controller.relaxKanisterDeferPhaseSchema=false",
            "controller.phaseTimeout=30m",
            "controller.logLevel=debug",
            "controller.resources.limits.memory=1Gi",
            "controller.nodeSelector.pool=system",
            "controller.tolerations[0].key=dedicated,controller.tolerations[0].operator=Exists",
            "webhook.replicas=3",
            "webhook.failurePolicy=Ignore",
            "webhook.timeoutSeconds=10",
            "webhook.skipNamespaces={legacy}",
            "webhook.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
            "webhook.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
            "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let full = "bpo-blueprint-operator";
    for o in &docs {
        let name = o["metadata"]["name"].as_str().unwrap();
        if o["kind"] != "CustomResourceDefinition" {
            assert!(
                name.starts_with(full),
                "{}: named after the release",
                key(o)
            );
        }
        if !o["metadata"]["namespace"].is_null() {
            assert_eq!(o["metadata"]["namespace"], ns, "{}", key(o));
        }
    }
    let ctl = find(&docs, "Deployment", &format!("{full}-controller"));
    assert_eq!(ctl["spec"]["replicas"], 1);
    let pod = &ctl["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"]["pool"], "system");
    assert_eq!(pod["tolerations"][0]["key"], "dedicated");
    assert_eq!(pod["serviceAccountName"], format!("{full}-controller"));
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example/blueprint-operator:9.9.9");
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["resources"]["limits"]["memory"], "1Gi");
    // The flags parse with the controller's own CLI and say what the values asked.
    let a = manifests::strings(&c["args"]);
    let Cmd::Controller(parsed) =
        Cli::try_parse_from(std::iter::once("bpo".into()).chain(a.clone()))
            .unwrap_or_else(|e| panic!("{a:?}: {e}"))
            .cmd
    else {
        panic!("not the controller: {a:?}")
    };
    assert_eq!(parsed.namespace.as_deref(), Some("apps"));
    assert_eq!(parsed.run_namespaces, ["apps", "db"]);
    assert_eq!(parsed.trusted_namespaces, ["kanister", "ops"]);
    assert!(parsed.no_scheduler && parsed.no_leader_election, "{a:?}");
    assert!(!parsed.relax_kanister_deferphase_schema, "{a:?}");
    assert_eq!(parsed.phase_timeout, std::time::Duration::from_secs(1800));
    assert_eq!(parsed.log_level, "debug");
    assert_eq!(parsed.metrics_addr, "0.0.0.0:9090");

    let hook = find(&docs, "Deployment", &format!("{full}-webhook"));
    assert_eq!(hook["spec"]["replicas"], 3);
    let hpod = &hook["spec"]["template"]["spec"];
    assert_eq!(
        hpod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "pool"
    );
    assert!(
        hpod["affinity"]["podAntiAffinity"].is_null(),
        "the value replaces the default"
    );
    let wa = manifests::strings(&hpod["containers"][0]["args"]);
    assert!(
        matches!(
            Cli::try_parse_from(std::iter::once("bpo".into()).chain(wa.clone())).map(|c| c.cmd),
            Ok(Cmd::Webhook(_))
        ),
        "{wa:?}"
    );
    assert_eq!(
        hpod["volumes"][0]["secret"]["secretName"],
        format!("{full}-webhook-tls")
    );
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        for w in find(&docs, kind, full)["webhooks"].as_array().unwrap() {
            assert_eq!(w["failurePolicy"], "Ignore");
            assert_eq!(w["timeoutSeconds"], 10);
            assert_eq!(
                w["clientConfig"]["service"]["name"],
                format!("{full}-webhook")
            );
            assert_eq!(w["clientConfig"]["service"]["namespace"], ns);
            assert_eq!(
                w["namespaceSelector"]["matchExpressions"][0]["values"],
                serde_json::json!(["kube-system", ns, "legacy"])
            );
        }
    }
    // The namespaces the controller runs whole: the webhook claims every ActionSet there.
    let claim = find(&docs, "MutatingWebhookConfiguration", full)["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "claim.namespaces.blueprint-operator.io")
        .cloned()
        .expect("a claim webhook for the namespaces run whole");
    assert_eq!(
        claim["clientConfig"]["service"]["path"],
        "/mutate/actionset"
    );
    assert_eq!(
        claim["namespaceSelector"]["matchExpressions"][2],
        serde_json::json!({"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["apps", "db"]})
    );
    assert!(
        wa.contains(&"--run-namespaces=apps,db".to_string()),
        "{wa:?}"
    );
    // Bindings name the ServiceAccounts and roles of this release.
    for b in docs
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
    {
        let role = b["roleRef"]["name"].as_str().unwrap();
        assert!(
            docs.iter()
                .any(|o| o["kind"] == b["roleRef"]["kind"] && o["metadata"]["name"] == role),
            "{}",
            key(b)
        );
        let sa = b["subjects"][0]["name"].as_str().unwrap();
        find(&docs, "ServiceAccount", sa);
        assert_eq!(b["subjects"][0]["namespace"], ns);
    }
    // Prometheus may scrape both pods' metrics ports, from where the value says.
    for (policy, port) in [("controller", 9090), ("webhook", 8080)] {
        let np = find(&docs, "NetworkPolicy", &format!("{full}-{policy}"));
        let rule = np["spec"]["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ports"][0]["port"] == port)
            .unwrap_or_else(|| panic!("{policy}: port {port} closed"));
        assert_eq!(
            rule["from"][0]["namespaceSelector"]["matchLabels"]["team"],
            "monitoring"
        );
    }
}

#[test]
fn wrong_values_are_refused_with_what_to_write() {
    let err = try_template(NS, NS, &["controller.leaderElection.enabled=false"]).unwrap_err();
    assert!(err.contains("set controller.replicas to 1"), "{err}");
    let err = try_template(NS, NS, &["webhook.certificates.mode=manual"]).unwrap_err();
    assert!(
        err.contains("write generate, cert-manager or secret"),
        "{err}"
    );
    let err = try_template(NS, NS, &["webhook.certificates.mode=secret"]).unwrap_err();
    assert!(err.contains("secretName is required"), "{err}");
    let err = try_template(NS, NS, &["webhook.failurePolicy=fail"]).unwrap_err();
    assert!(err.contains("write Fail or Ignore"), "{err}");
}

#[test]
fn generated_certificate_serves_the_service_and_matches_ca_bundle() {
    let docs = template(&[]);
    let secret = find(&docs, "Secret", "blueprint-operator-webhook-tls");
    let ca_secret = find(&docs, "Secret", "blueprint-operator-webhook-ca");
    let b64 = |v: &Value| v.as_str().unwrap().to_string();
    assert_eq!(secret["data"]["ca.crt"], ca_secret["data"]["tls.crt"]);
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        for w in find(&docs, kind, "blueprint-operator")["webhooks"]
            .as_array()
            .unwrap()
        {
            assert_eq!(
                b64(&w["clientConfig"]["caBundle"]),
                b64(&secret["data"]["ca.crt"])
            );
        }
    }
    let dir = std::env::temp_dir().join(format!("bpo-helm-certs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, v) in [
        ("ca.crt", &secret["data"]["ca.crt"]),
        ("tls.crt", &secret["data"]["tls.crt"]),
    ] {
        let pem = run(
            Command::new("openssl")
                .args(["base64", "-d", "-A"])
                .arg("-in")
                .arg({
                    let p = dir.join(format!("{file}.b64"));
                    std::fs::write(&p, b64(v)).unwrap();
                    p
                }),
            "base64 -d",
        )
        .unwrap();
        std::fs::write(dir.join(file), pem).unwrap();
    }
    // Signed by the CA in caBundle, for the Service's DNS name, as a TLS server.
    run(
        Command::new("openssl")
            .args(["verify", "-purpose", "sslserver", "-CAfile"])
            .arg(dir.join("ca.crt"))
            .arg(dir.join("tls.crt")),
        "openssl verify",
    )
    .unwrap();
    let text = run(
        Command::new("openssl")
            .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
            .arg(dir.join("tls.crt")),
        "openssl x509",
    )
    .unwrap();
    assert!(
        text.contains("DNS:blueprint-operator-webhook.blueprint-operator.svc"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
