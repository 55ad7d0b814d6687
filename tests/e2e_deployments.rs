//! The install manifests, run "as pods" as far as this machine allows without a container
//! engine: `kubectl kustomize manifests` (the base) is applied to the test API server, then each
//! Deployment's container is started as a local process exactly as its spec says (the image's
//! ENTRYPOINT is our binary, the container's args and env; fieldRef env from the Deployment's
//! real pods, which kwok runs; the Secret volume written out as the kubelet would; container
//! ports mapped to free ports on 127.0.0.1), one process per replica, each authenticated with a
//! token of the Deployment's ServiceAccount (TokenRequest, as a projected token would be). So
//! the RBAC of manifests/controller/rbac.yaml and manifests/webhook/rbac.yaml is what allows or
//! forbids every call: the controller creates an ActionSet from an ActionSchedule, runs it
//! (KubeTask pod, its log, ScaleWorkload, deferPhase) and writes status and Events while
//! holding its Leases; the webhook answers its probes on the manifest's probe port and path and
//! the API server's admission reviews (its configurations are the manifest's, with
//! `clientConfig.service` replaced by the URL of the local process). Nothing logs a forbidden
//! request, and what the roles do not grant stays forbidden.

mod support;

use support::http::{free_port, http_get};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use blueprint_operator::model::{ActionSchedule, ActionSet, LABEL_SCHEDULE};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, ResourceExt};
use serde::Deserialize as _;
use serde_json::{Value, json};

const NS: &str = "blueprint-operator";
const LONG: Duration = Duration::from_secs(120);

fn yaml_docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the manifests"))
}

/// A Deployment's container running as a local process.
struct Replica {
    deployment: String,
    pod: String,
    child: Child,
    log: PathBuf,
    /// containerPort -> local port
    ports: BTreeMap<u64, u16>,
}

impl Replica {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- {} ({}) log ---\n{}",
                self.deployment,
                self.pod,
                self.log()
            );
        }
    }
}

/// The container port a probe or annotation names (by name or number).
fn container_port(container: &Value, port: &Value) -> u64 {
    if let Some(n) = port.as_u64() {
        return n;
    }
    let p = port.as_str().unwrap();
    if let Ok(n) = p.parse() {
        return n;
    }
    container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|cp| cp["name"] == p)
        .unwrap_or_else(|| panic!("no container port named {p}"))["containerPort"]
        .as_u64()
        .unwrap()
}

/// `fieldRef.fieldPath` of a pod (the downward API's dotted paths).
fn field(pod: &Value, path: &str) -> String {
    let mut v = pod;
    for seg in path.split('.') {
        assert!(
            !seg.contains('['),
            "fieldPath {path} not supported by this test"
        );
        v = &v[seg];
    }
    v.as_str()
        .unwrap_or_else(|| panic!("fieldPath {path} not set in the pod"))
        .to_string()
}

/// Starts every replica of `dep` the way its pod template says. `pods` are its kwok pods (for
/// the fieldRef values), `ports` the local port of each containerPort per replica.
async fn start_replicas(
    client: &Client,
    dep: &Value,
    pods: &[Pod],
    ports: &[BTreeMap<u64, u16>],
    tmp: &Path,
) -> Vec<Replica> {
    let name = dep["metadata"]["name"].as_str().unwrap();
    let pod_spec = &dep["spec"]["template"]["spec"];
    let containers = pod_spec["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "{name}: one container");
    let c = &containers[0];
    // The image's ENTRYPOINT (tests/dockerfile.rs checks it is the binary) runs the args.
    assert!(
        c.get("command").is_none(),
        "{name}: command overrides the ENTRYPOINT"
    );
    let sa = pod_spec["serviceAccountName"].as_str().unwrap();
    assert_ne!(
        pod_spec["automountServiceAccountToken"],
        json!(false),
        "{name}: needs its token"
    );
    let token = support::rbac::service_account_token(client, NS, sa)
        .await
        .unwrap();
    let kubeconfig = tmp.join(format!("{name}.kubeconfig"));
    support::rbac::token_kubeconfig(&support::cluster().kubeconfig, &token, NS, &kubeconfig)
        .unwrap();

    // Volumes: Secrets written out as the kubelet projects them (one file per key).
    let mut mounts: Vec<(String, PathBuf)> = Vec::new();
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        let vname = m["name"].as_str().unwrap();
        let vol = pod_spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == vname)
            .unwrap();
        let secret_name = vol["secret"]["secretName"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: volume {vname}: only Secret volumes here"));
        let secret = Api::<Secret>::namespaced(client.clone(), NS)
            .get(secret_name)
            .await
            .unwrap_or_else(|e| panic!("{name}: Secret {secret_name}: {e}"));
        let dir = tmp.join(format!("{name}-{vname}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (k, v) in secret.data.unwrap_or_default() {
            std::fs::write(dir.join(k), v.0).unwrap();
        }
        mounts.push((m["mountPath"].as_str().unwrap().to_string(), dir));
    }

    let mut replicas = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        let pod_json = serde_json::to_value(pod).unwrap();
        let mut args = Vec::new();
        for a in c["args"].as_array().unwrap() {
            let mut a = a.as_str().unwrap().to_string();
            for (path, dir) in &mounts {
                a = a.replace(path.as_str(), dir.to_str().unwrap());
            }
            for (cp, local) in &ports[i] {
                a = a.replace(&format!("0.0.0.0:{cp}"), &format!("127.0.0.1:{local}"));
            }
            // Anything still on 0.0.0.0 listens on a port the container does not declare.
            assert!(
                !a.contains("0.0.0.0"),
                "{name}: {a}: undeclared container port"
            );
            args.push(a);
        }
        let log = tmp.join(format!("{name}-{i}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"));
        cmd.args(&args)
            .env_clear()
            .env("KUBECONFIG", &kubeconfig)
            .current_dir(tmp)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        for e in c["env"].as_array().into_iter().flatten() {
            let key = e["name"].as_str().unwrap();
            let value = match (&e["value"], &e["valueFrom"]["fieldRef"]["fieldPath"]) {
                (Value::String(v), _) => v.clone(),
                (_, Value::String(p)) => field(&pod_json, p),
                _ => panic!("{name}: env {key}: only value and fieldRef here"),
            };
            cmd.env(key, value);
        }
        replicas.push(Replica {
            deployment: name.to_string(),
            pod: pod.name_any(),
            child: cmd.spawn().unwrap(),
            log,
            ports: ports[i].clone(),
        });
    }
    replicas
}

/// The Running kwok pods of a Deployment (one per replica).
async fn deployment_pods(client: &Client, dep: &Value) -> Vec<Pod> {
    let replicas = dep["spec"]["replicas"].as_u64().unwrap() as usize;
    let selector = dep["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
        .collect::<Vec<_>>()
        .join(",");
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    support::poll(LONG, || {
        let api = api.clone();
        let selector = selector.clone();
        async move {
            let mut pods: Vec<Pod> = api
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?
                .items
                .into_iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .collect();
            pods.sort_by_key(|p| p.name_any());
            (pods.len() == replicas).then_some(pods)
        }
    })
    .await
    .unwrap_or_else(|e| panic!("pods of {}: {e}", dep["metadata"]["name"]))
}

fn is_forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(ref e)) if e.code == 403)
}

fn blueprint_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Blueprint"),
        "blueprints",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// examples/<file>, moved to namespace `ns`.
fn example(file: &str, ns: &str) -> Value {
    let text = std::fs::read_to_string(support::repo_root().join("examples").join(file)).unwrap();
    let text = text.replace("namespace: blueprint-demo", &format!("namespace: {ns}"));
    yaml_docs(&text).remove(0)
}

#[tokio::test]
async fn deployments_run_as_their_service_accounts_with_least_privilege() {
    let client = support::client().await;
    let Some(kubectl) = support::require_kubectl() else {
        return;
    };
    if !support::require_kwok(&client).await {
        return;
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    // Removed at the end, also when a check fails (after the processes, which are dropped first).
    struct TempDir(PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let tmp_dir = TempDir(
        std::env::temp_dir().join(format!("bpo-deployments-{}-{nanos}", std::process::id())),
    );
    let tmp = tmp_dir.0.clone();
    std::fs::create_dir_all(&tmp).unwrap();
    support::install_crds(&client).await.unwrap();

    let mut docs = yaml_docs(&support::kustomize(&kubectl, "manifests"));
    let controller = find(&docs, "Deployment", "blueprint-operator-controller").clone();
    let webhook = find(&docs, "Deployment", "blueprint-operator-webhook").clone();
    // Local ports for every containerPort of every replica.
    let plan = |dep: &Value| -> Vec<BTreeMap<u64, u16>> {
        let c = &dep["spec"]["template"]["spec"]["containers"][0];
        (0..dep["spec"]["replicas"].as_u64().unwrap())
            .map(|_| {
                c["ports"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| (p["containerPort"].as_u64().unwrap(), free_port()))
                    .collect()
            })
            .collect()
    };
    let controller_ports = plan(&controller);
    let webhook_ports = plan(&webhook);

    // The serving certificate (for 127.0.0.1, where the API server reaches the local process).
    let certs = tmp.join("certs");
    let out = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args([
            "certs",
            "--out",
            certs.to_str().unwrap(),
            "--dns-name",
            "127.0.0.1",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ca_bundle = String::from_utf8(out.stdout).unwrap().trim().to_string();

    // The webhook configurations as the manifests have them, except that clientConfig.service
    // (Service port -> targetPort -> container port) becomes the URL of replica 0.
    let service = find(&docs, "Service", "blueprint-operator-webhook").clone();
    for d in docs.iter_mut().filter(|d| {
        d["kind"] == "MutatingWebhookConfiguration" || d["kind"] == "ValidatingWebhookConfiguration"
    }) {
        for w in d["webhooks"].as_array_mut().unwrap() {
            let svc = w["clientConfig"]["service"].take();
            assert_eq!(svc["name"], service["metadata"]["name"]);
            assert_eq!(svc["namespace"], NS);
            let sp = service["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["port"] == svc["port"])
                .unwrap_or_else(|| panic!("Service has no port {}", svc["port"]));
            let cp = container_port(
                &webhook["spec"]["template"]["spec"]["containers"][0],
                &sp["targetPort"],
            );
            let local = webhook_ports[0][&cp];
            w["clientConfig"] = json!({
                "url": format!("https://127.0.0.1:{local}{}", svc["path"].as_str().unwrap()),
                "caBundle": ca_bundle,
            });
        }
    }
    let rendered = tmp.join("manifests.yaml");
    std::fs::write(
        &rendered,
        docs.iter()
            .map(|d| serde_yaml::to_string(d).unwrap())
            .collect::<Vec<_>>()
            .join("---\n"),
    )
    .unwrap();
    support::kubectl_apply(&kubectl, &["-f", rendered.to_str().unwrap()]);
    // The Secret the webhook mounts, made as the README says (kubectl create secret tls).
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "blueprint-operator-webhook-tls", "namespace": NS},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": std::fs::read_to_string(certs.join("tls.crt")).unwrap(),
            "tls.key": std::fs::read_to_string(certs.join("tls.key")).unwrap(),
        },
    }))
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    // The core ClusterRole is bound directly: nothing to wait for from the controller-manager.

    let controller_pods = deployment_pods(&client, &controller).await;
    let webhook_pods = deployment_pods(&client, &webhook).await;
    let mut processes =
        start_replicas(&client, &webhook, &webhook_pods, &webhook_ports, &tmp).await;
    processes.extend(
        start_replicas(
            &client,
            &controller,
            &controller_pods,
            &controller_ports,
            &tmp,
        )
        .await,
    );

    // --- the webhook: probes on the manifest's port and paths, metrics where Prometheus looks.
    let wc = &webhook["spec"]["template"]["spec"]["containers"][0];
    let wanno = &webhook["spec"]["template"]["metadata"]["annotations"];
    for r in processes
        .iter()
        .filter(|r| r.deployment == "blueprint-operator-webhook")
    {
        for probe in ["livenessProbe", "readinessProbe"] {
            let get = &wc[probe]["httpGet"];
            let port = r.ports[&container_port(wc, &get["port"])];
            let path = get["path"].as_str().unwrap().to_string();
            support::poll(LONG, || {
                let path = path.clone();
                async move { matches!(http_get(port, &path), Ok((200, _))).then_some(()) }
            })
            .await
            .unwrap_or_else(|e| panic!("{} {probe} {path}: {e}\n{}", r.pod, r.log()));
        }
        let port = r.ports[&container_port(wc, &wanno["prometheus.io/port"])];
        let (code, body) = http_get(port, wanno["prometheus.io/path"].as_str().unwrap()).unwrap();
        assert_eq!(code, 200);
        assert!(body.contains("blueprint_operator_webhook"), "{body}");
    }

    // --- admission through the API server, in a namespace the webhooks apply to.
    let ns = support::namespace(&client, "deploy").await;
    let bps = blueprint_api(&client, &ns);
    let mut two_defer = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "two-defer", "namespace": ns},
        "actions": {"backup": {
            "phases": [{"func": "KubeTask", "name": "a", "args": {"image": "x", "command": ["x"]}}],
            "deferPhase": [
                {"func": "KubeTask", "args": {"image": "x", "command": ["x"]}},
                {"func": "KubeTask", "args": {"image": "x", "command": ["y"]}},
            ],
        }},
    });
    let err = bps
        .create(
            &PostParams::default(),
            &serde_json::from_value(two_defer.clone()).unwrap(),
        )
        .await
        .expect_err("two deferPhases are refused");
    assert!(err.to_string().contains("deferPhase"), "{err}");
    // A one-element list is turned into the object by the mutating webhook.
    two_defer["metadata"]["name"] = json!("one-defer");
    two_defer["actions"]["backup"]["deferPhase"]
        .as_array_mut()
        .unwrap()
        .pop();
    let stored = bps
        .create(
            &PostParams::default(),
            &serde_json::from_value(two_defer).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        stored.data["actions"]["backup"]["deferPhase"]["name"], "deferPhase",
        "{:?}",
        stored.data
    );

    // --- the controller: a schedule's run, executed.
    support::create_deployment(&client, &ns, "demo-app", 2)
        .await
        .unwrap();
    bps.create(
        &PostParams::default(),
        &serde_json::from_value(example("blueprint.yaml", &ns)).unwrap(),
    )
    .await
    .unwrap();
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    // The webhook looks the Blueprint up as its ServiceAccount: a missing action is refused.
    let mut bad = example("actionschedule.yaml", &ns);
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["actionSetTemplate"]["actions"][0]["name"] = json!("bakup");
    let err = schedules
        .create(
            &PostParams::default(),
            &serde_json::from_value(bad).unwrap(),
        )
        .await
        .expect_err("an action the Blueprint does not have is refused");
    assert!(err.to_string().contains("has no action"), "{err}");
    let mut schedule = example("actionschedule.yaml", &ns);
    schedule["metadata"]["annotations"] =
        json!({"blueprint-operator.io/run-now": "e2e-deployments"});
    schedules
        .create(
            &PostParams::default(),
            &serde_json::from_value(schedule).unwrap(),
        )
        .await
        .unwrap();
    let actionsets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    // The first run that ends (a refused call fails its phase: the status says which).
    let done = support::poll(LONG, || {
        let actionsets = actionsets.clone();
        async move {
            let list = actionsets
                .list(&ListParams::default().labels(&format!("{LABEL_SCHEDULE}=demo-backup")))
                .await
                .ok()?;
            list.items.into_iter().find(|a| {
                let v = serde_json::to_value(a).unwrap();
                matches!(v["status"]["state"].as_str(), Some("complete" | "failed"))
                    && matches!(
                        v["status"]["actions"][0]["deferPhase"]["state"].as_str(),
                        Some("complete" | "failed")
                    )
            })
        }
    })
    .await
    .unwrap_or_else(|e| {
        let logs: Vec<String> = processes.iter().map(|r| r.log()).collect();
        panic!("no scheduled run ended: {e}\n{}", logs.join("\n"))
    });
    let v = serde_json::to_value(&done).unwrap();
    assert_eq!(v["status"]["state"], "complete", "{:#}", v["status"]);
    assert_eq!(
        v["status"]["actions"][0]["deferPhase"]["state"], "complete",
        "{:#}",
        v["status"]
    );
    let art = &v["status"]["actions"][0]["artifacts"]["snapshot"]["keyValue"];
    assert_eq!(art["id"], "snap-demo", "KubeTask's log was read: {art}");
    // ScaleWorkload ran twice: quiesce found 2 replicas, the deferPhase found 0 and restored 2.
    assert_eq!(art["replicas"], "2", "{art}");
    assert_eq!(art["replicasDuringCopy"], "0", "{art}");
    // A run of the schedule, which deleting the schedule does not take along.
    assert_eq!(
        done.annotations()
            .get(blueprint_operator::model::ANNOTATION_SCHEDULE)
            .map(String::as_str),
        Some("demo-backup")
    );
    assert!(done.owner_references().is_empty());
    // The schedule's status was written (status subresource).
    support::wait_for(&schedules, "demo-backup", LONG, |s| {
        s.status.as_ref().is_some_and(|st| {
            st.last_run_now_token.as_deref() == Some("e2e-deployments")
                && st.next_schedule_time.is_some()
        })
    })
    .await
    .unwrap();

    // The Lease: held by one of the controller's pods, in the operator's namespace; the
    // scheduler runs under it too (no Lease of its own).
    let pod_names: Vec<String> = controller_pods.iter().map(|p| p.name_any()).collect();
    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
    let mut holders = BTreeMap::new();
    for lease in ["blueprint-operator-executor"] {
        let l = support::wait_for(&leases, lease, LONG, |l| {
            l.spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_ref())
                .is_some_and(|h| pod_names.contains(h))
        })
        .await
        .unwrap();
        holders.insert(lease, l.spec.unwrap().holder_identity.unwrap());
    }
    assert!(
        leases
            .get_opt("blueprint-operator-scheduler")
            .await
            .unwrap()
            .is_none(),
        "a second Lease for the scheduler"
    );
    // Events: the executor's (reportingInstance = the pod holding the executor Lease) and the
    // scheduler's.
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let run_name = done.name_any();
    let executor_holder = holders["blueprint-operator-executor"].clone();
    let evs = support::poll(LONG, || {
        let events = events.clone();
        let (run_name, executor_holder) = (run_name.clone(), executor_holder.clone());
        async move {
            let evs = events.list(&ListParams::default()).await.ok()?.items;
            let executor = evs.iter().any(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(run_name.as_str())
                    && e.reporting_instance.as_deref() == Some(executor_holder.as_str())
            });
            let scheduler = evs.iter().any(|e| {
                e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("ActionSchedule")
            });
            (executor && scheduler).then_some(evs)
        }
    })
    .await
    .unwrap_or_else(|e| panic!("Events of the executor and the scheduler: {e}"));
    assert!(!evs.is_empty());
    // Both controller replicas serve metrics where the annotations say.
    let cc = &controller["spec"]["template"]["spec"]["containers"][0];
    let canno = &controller["spec"]["template"]["metadata"]["annotations"];
    for r in processes
        .iter()
        .filter(|r| r.deployment == "blueprint-operator-controller")
    {
        let port = r.ports[&container_port(cc, &canno["prometheus.io/port"])];
        let (code, _) = http_get(port, "/metrics").unwrap();
        assert_eq!(code, 200, "{}", r.pod);
    }

    // --- what the roles do not grant stays forbidden.
    let kubeconfig_of = |name: &str| tmp.join(format!("{name}.kubeconfig"));
    let hook = support::rbac::client_from(&kubeconfig_of("blueprint-operator-webhook"))
        .await
        .unwrap();
    let ctl = support::rbac::client_from(&kubeconfig_of("blueprint-operator-controller"))
        .await
        .unwrap();
    assert!(is_forbidden(
        Api::<Secret>::all(hook.clone())
            .list(&ListParams::default())
            .await
    ));
    assert!(is_forbidden(
        Api::<Secret>::namespaced(hook.clone(), &ns)
            .get("any")
            .await
    ));
    assert!(is_forbidden(
        blueprint_api(&hook, &ns).list(&ListParams::default()).await
    ));
    assert!(is_forbidden(
        Api::<ConfigMap>::namespaced(hook.clone(), &ns)
            .create(&PostParams::default(), &ConfigMap::default())
            .await
    ));
    let ctl_secrets = Api::<Secret>::namespaced(ctl.clone(), &ns);
    assert!(is_forbidden(ctl_secrets.list(&ListParams::default()).await));
    assert!(is_forbidden(
        ctl_secrets
            .create(&PostParams::default(), &Secret::default())
            .await
    ));
    assert!(is_forbidden(
        Api::<Deployment>::namespaced(ctl.clone(), &ns)
            .delete("demo-app", &DeleteParams::default())
            .await
    ));
    // (The controller may patch a schedule: its `onDelete: Delete` finalizer. It never deletes one.)
    assert!(is_forbidden(
        Api::<ActionSchedule>::namespaced(ctl.clone(), &ns)
            .delete("demo-backup", &DeleteParams::default())
            .await
    ));
    assert!(is_forbidden(
        Api::<Lease>::namespaced(ctl.clone(), "default")
            .get("x")
            .await
    ));
    // ... while what they grant works with the same clients.
    blueprint_api(&hook, &ns).get("demo-backup").await.unwrap();
    blueprint_api(&ctl, &ns).get("demo-backup").await.unwrap();

    // No process was refused anything, and all of them still run.
    for r in &mut processes {
        let log = r.log();
        assert!(
            !log.to_ascii_lowercase().contains("forbidden"),
            "{} ({}) was refused something:\n{log}",
            r.deployment,
            r.pod
        );
        assert!(r.running(), "{} ({}) exited:\n{log}", r.deployment, r.pod);
    }
    drop(processes);
    drop(tmp_dir);
}
