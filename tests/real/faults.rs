//! Faults a production cluster has, injected on the real node while a real backup runs: the
//! corpus PostgreSQL Blueprint's dump phase (a KubeTask: `pg_dumpall | kando location push`)
//! between a ScaleWorkload that stops the application and a deferPhase that scales it back.
//!
//! For every fault the run completes, or fails with a reason that names the fault; the deferPhase
//! runs exactly once and the application is back; no dump is written twice and a failed run
//! writes none; no pod of the run is left; and every complete run later restores exactly the rows
//! it backed up. docs/faults.md has the table this test asserts.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::databases::{
    PG_BLUEPRINT, PG_SELECT, corpus_blueprint, create_shop, keys, pg_action, postgres_in, psql,
};
use crate::functions::{app_with_volume, run_spec, start_spec, wait_end};
use crate::install::{NS, apply_yaml};
use crate::real::{self, get_json, kubectl};
use crate::support;

const BUCKET: &str = "bpo-real-faults";
const BLUEPRINT: &str = "faults";

/// A fault, injected while a phase runs (here: while the dump phase's pod runs, before it
/// dumps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    Nothing,
    ApiServerKilled,
    EtcdKilled,
    KubeletRestarted,
    ContainerdRestarted,
    PodDeleted,
    ScratchFull,
    StoreSlowDown,
    StoreGone,
    /// The controller pod that holds the executor Lease deleted (the other replica leads).
    LeaderDeleted,
}

/// No fault, then the faults of the cluster and of the phase's pod, in the order run.
pub const CLUSTER: [Fault; 6] = [
    Fault::Nothing,
    Fault::ApiServerKilled,
    Fault::EtcdKilled,
    Fault::KubeletRestarted,
    Fault::ContainerdRestarted,
    Fault::PodDeleted,
];

impl Fault {
    /// `None`: the run completes; else it fails and its status says this.
    fn fails_with(self) -> Option<&'static str> {
        match self {
            Fault::PodDeleted => Some("deleted"),
            Fault::ScratchFull => Some("No space left on device"),
            Fault::StoreSlowDown => Some("SlowDown"),
            Fault::StoreGone => Some("connect"),
            _ => None,
        }
    }

    /// Seconds the dump phase waits before it dumps: the window the fault is injected in.
    fn hold(self) -> u32 {
        match self {
            Fault::ApiServerKilled | Fault::EtcdKilled => 15,
            Fault::KubeletRestarted | Fault::ContainerdRestarted => 15,
            Fault::PodDeleted => 60,
            _ => 1,
        }
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_backup_survives_control_plane_node_and_store_faults_or_fails_naming_them() {
    let ns = app_with_volume("faults").await;
    postgres_in(&ns, BUCKET).await;
    create_shop(&ns);
    let proxy = StoreProxy::start();
    // `s3` goes through the proxy the store faults are made in; `direct` restores past it.
    let client = real::client().await;
    support::data_plane::s3_profile(&client, &ns, "direct", BUCKET)
        .await
        .unwrap();
    let endpoint = json!({"location": {"endpoint": format!("http://{}", proxy.addr)}});
    kubectl(&[
        "patch",
        "-n",
        &ns,
        "profiles.cr.kanister.io",
        "s3",
        "--type",
        "merge",
        "-p",
        &endpoint.to_string(),
    ])
    .unwrap();
    apply_yaml(&blueprint(&ns)).unwrap();

    let matrix = CLUSTER.into_iter().chain([
        Fault::ScratchFull,
        Fault::StoreSlowDown,
        // The window is over: the same store serves the next run again.
        Fault::Nothing,
        Fault::StoreGone,
    ]);
    let prefix = format!("pg_backups/{ns}/");
    let mut complete: Vec<(Fault, Value, String)> = Vec::new();
    let mut table = Vec::new();
    for (i, fault) in matrix.enumerate() {
        proxy.wait_while_slowing_down();
        psql(
            &ns,
            &format!(
                "INSERT INTO items VALUES ({}, 'before {fault:?}', 1.00, NULL)",
                10_000 + i
            ),
        );
        let rows = psql(&ns, PG_SELECT);
        let action = if fault == Fault::ScratchFull {
            "backup-scratch"
        } else {
            "backup"
        };
        let spec = pg_action(
            &ns,
            action,
            BLUEPRINT,
            json!({"options": {"hold": fault.hold().to_string()}}),
        );
        let name = start_spec(&ns, spec);
        let uid = uid(&ns, &name);
        let pod = running_pod(&ns, &uid).await;
        inject(fault, &ns, &pod, Some(&proxy));
        let done = wait_end(&ns, &name).await;
        healthy().await;

        let (state, error) = ended_as(
            fault,
            &done,
            fault.fails_with().is_none(),
            fault.fails_with().as_slice(),
            &ns,
        )
        .await;
        if state == "complete" {
            let artifact = done["status"]["actions"][0]["artifacts"]["cloudObject"].clone();
            complete.push((fault, artifact, rows));
        }
        // One dump per complete run: a run re-done after a fault would have written a second.
        let written = keys(BUCKET, &prefix).await;
        assert_eq!(written.len(), complete.len(), "{fault:?}: {written:?}");
        no_pods_left(&ns, &uid).await;
        table.push(format!(
            "| {fault:?} | {state} | {} |",
            error.lines().next().unwrap_or_default()
        ));
    }

    for (fault, artifact, rows) in &complete {
        psql(&ns, "DROP TABLE items");
        let extra = json!({"artifacts": {"cloudObject": artifact},
                           "profile": {"name": "direct", "namespace": ns}});
        let restore = run_spec(&ns, pg_action(&ns, "restore", BLUEPRINT, extra)).await;
        assert_eq!(restore["status"]["state"], "complete", "{restore:#}");
        assert_eq!(
            &psql(&ns, PG_SELECT),
            rows,
            "the rows the run after {fault:?} backed up"
        );
    }
    eprintln!(
        "| fault | run | error |\n| --- | --- | --- |\n{}",
        table.join("\n")
    );
}

/// Asserts how the run `done` under `fault` ended: complete (if `may_complete`), or failed with
/// one of the texts `fails_with` in the status (if there are any); its deferPhase complete and
/// started exactly once; the application back. Returns its state and error message.
pub async fn ended_as(
    fault: Fault,
    done: &Value,
    may_complete: bool,
    fails_with: &[&str],
    ns: &str,
) -> (String, String) {
    let state = done["status"]["state"].as_str().unwrap_or_default();
    let error = done["status"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    let may_fail = !fails_with.is_empty();
    if state == "complete" {
        assert!(may_complete, "{fault:?} should have failed: {done:#}");
    } else {
        assert!(
            may_fail && state == "failed",
            "{fault:?}: {state}: {done:#}"
        );
        let status = done["status"].to_string();
        assert!(
            fails_with.iter().any(|t| status.contains(t)),
            "{fault:?} not named (one of {fails_with:?}): {done:#}"
        );
    }
    let defer = &done["status"]["actions"][0]["deferPhase"];
    assert_eq!(defer["state"], "complete", "{fault:?}: {done:#}");
    let name = done["metadata"]["name"].as_str().unwrap_or_default();
    let started = defer_started(ns, name).await;
    assert_eq!(
        started, 1,
        "{fault:?}: the deferPhase started {started} times"
    );
    app_back(ns);
    (state.to_string(), error.to_string())
}

/// The corpus PostgreSQL Blueprint's backup phase as written, after a pause of `options.hold`
/// seconds, between a ScaleWorkload of the Deployment `app` to 0 and a deferPhase that scales it
/// back; `backup-scratch` writes the dump to a 4 KiB emptyDir first; `restore` is the corpus'.
fn blueprint(ns: &str) -> String {
    let corpus: Value = serde_yaml::from_str(&corpus_blueprint(PG_BLUEPRINT)).unwrap();
    let mut dump = corpus["actions"]["backup"]["phases"][0].clone();
    let script = dump["args"]["command"][6].as_str().unwrap().to_string();
    dump["args"]["command"][6] = json!(format!("sleep {{{{ .Options.hold }}}}\n{script}"));
    let mut scratch = dump.clone();
    let to_disk = script.replace(
        "pg_dumpall --clean -U $PGUSER | gzip -c | kando",
        "pg_dumpall --clean -U $PGUSER | gzip -c > /scratch/dump.gz\n          kando",
    );
    assert_ne!(to_disk, script, "the corpus dump line changed");
    scratch["args"]["command"][6] = json!(to_disk.replace(" -\n", " /scratch/dump.gz\n"));
    scratch["args"]["podOverride"] = json!({
        "volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "4Ki"}}],
        "containers": [{"name": "container", "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}],
    });
    let (quiesce, resume) = quiesce_and_resume(ns, "app");
    let backup = |phase: Value| {
        let mut a = corpus["actions"]["backup"].clone();
        a["phases"] = json!([quiesce, phase]);
        a["deferPhase"] = resume.clone();
        a
    };
    let bp = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": BLUEPRINT, "namespace": ns},
        "actions": {
            "backup": backup(dump),
            "backup-scratch": backup(scratch),
            "restore": corpus["actions"]["restore"],
        },
    });
    bp.to_string()
}

/// A ScaleWorkload phase `quiesce` that scales the Deployment `deployment` to 0, and a
/// deferPhase `resume` that scales it back.
pub fn quiesce_and_resume(ns: &str, deployment: &str) -> (Value, Value) {
    let scale = |name: &str, replicas: Value| {
        json!({"func": "ScaleWorkload", "name": name,
               "args": {"namespace": ns, "kind": "Deployment", "name": deployment, "replicas": replicas}})
    };
    (
        scale("quiesce", json!(0)),
        scale(
            "resume",
            json!("{{ .Phases.quiesce.Output.originalReplicaCount }}"),
        ),
    )
}

/// The UID of ActionSet `ns/name`.
pub fn uid(ns: &str, name: &str) -> String {
    kubectl(&[
        "get",
        "-n",
        ns,
        "actionsets.cr.kanister.io",
        name,
        "-o",
        "jsonpath={.metadata.uid}",
    ])
    .unwrap()
}

/// The run's pod (the dump phase's: the only phase with one) once it runs.
async fn running_pod(ns: &str, uid: &str) -> String {
    let selector = format!("blueprint-operator.io/actionset-uid={uid}");
    support::poll(real::WAIT, || async {
        let pods = kubectl(&["get", "pods", "-n", ns, "-l", &selector, "-o", "json"]).ok()?;
        let pods: Value = serde_json::from_str(&pods).ok()?;
        pods["items"]
            .as_array()?
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .find_map(|p| p["metadata"]["name"].as_str().map(String::from))
    })
    .await
    .unwrap_or_else(|e| panic!("the dump pod of {uid} did not run: {e}"))
}

/// Makes `fault` happen now (`pod`: the one to delete; `proxy`: where the store's faults are made).
pub fn inject(fault: Fault, ns: &str, pod: &str, proxy: Option<&StoreProxy>) {
    let restart = |args: &[&str]| {
        support::run_ok(
            std::process::Command::new(support::repo_root().join("tools/control-plane/cluster.sh"))
                .arg("restart")
                .args(args),
            &format!("cluster.sh restart {args:?}"),
        );
    };
    match fault {
        Fault::Nothing | Fault::ScratchFull => {}
        Fault::ApiServerKilled => restart(&["kube-apiserver", "--kill", "--down", "3"]),
        Fault::EtcdKilled => restart(&["etcd", "--kill", "--down", "3"]),
        Fault::KubeletRestarted => restart(&["kubelet"]),
        Fault::ContainerdRestarted => restart(&["containerd"]),
        Fault::PodDeleted => {
            kubectl(&["delete", "pod", "-n", ns, pod, "--wait=false"]).unwrap();
        }
        Fault::StoreSlowDown => proxy
            .expect("a store proxy")
            .slow_down_for(Duration::from_secs(30)),
        Fault::StoreGone => proxy.expect("a store proxy").gone(),
        Fault::LeaderDeleted => {
            let leader = crate::restart::leader().expect("the executor Lease has a holder");
            kubectl(&["delete", "pod", "-n", NS, &leader, "--wait=false"]).unwrap();
        }
    }
}

/// Waits until the API server answers, the node is Ready and the operator's controller runs.
pub async fn healthy() {
    support::poll(real::WAIT, || async {
        kubectl(&["get", "--raw", "/readyz"]).ok()?;
        let node = kubectl(&["get", "node", real::NODE, "-o", "json"]).ok()?;
        let node: Value = serde_json::from_str(&node).ok()?;
        let ready = node["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ready.then_some(())
    })
    .await
    .expect("the cluster is healthy again");
    kubectl(&[
        "rollout",
        "status",
        "-n",
        NS,
        "deployment/blueprint-operator-controller",
        "--timeout=180s",
    ])
    .unwrap();
}

/// How many times the run's deferPhase started (its Events).
pub async fn defer_started(ns: &str, name: &str) -> usize {
    events(ns, name, "Started deferPhase").await
}

/// How many Events of `reason` ActionSet `name` has (once it has one).
pub async fn events(ns: &str, name: &str, reason: &str) -> usize {
    let count = || {
        let evs = get_json(&["get", "events.events.k8s.io", "-n", ns]);
        evs["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["regarding"]["name"] == name && e["reason"] == reason)
            .count()
    };
    // Events are published after the status: wait for the first.
    let _ = support::poll(real::WAIT, || async { (count() > 0).then_some(()) }).await;
    count()
}

/// The application the run scaled to 0 runs again.
fn app_back(ns: &str) {
    deployment_back(ns, "app");
}

/// The Deployment `name` runs again, at 1 replica.
pub fn deployment_back(ns: &str, name: &str) {
    kubectl(&[
        "rollout",
        "status",
        "-n",
        ns,
        &format!("deployment/{name}"),
        "--timeout=120s",
    ])
    .unwrap();
    let d = get_json(&["get", "deployment", "-n", ns, name]);
    assert_eq!(d["spec"]["replicas"], 1, "{d:#}");
}

/// Every pod of the run goes.
pub async fn no_pods_left(ns: &str, uid: &str) {
    let selector = format!("blueprint-operator.io/actionset-uid={uid}");
    support::poll(real::WAIT, || async {
        let pods = kubectl(&["get", "pods", "-n", ns, "-l", &selector, "-o", "name"]).ok()?;
        pods.trim().is_empty().then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("pods of {uid} left behind: {e}"));
}

const PASS: u8 = 0;
const SLOW_DOWN: u8 = 1;
const GONE: u8 = 2;

/// A TCP proxy on the node IP in front of the test object store, where the store's faults are
/// made: AWS S3's `503 SlowDown` for a while, or nothing listening any more.
pub struct StoreProxy {
    addr: String,
    mode: Arc<AtomicU8>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl StoreProxy {
    fn start() -> StoreProxy {
        let upstream = support::data_plane::object_store()
            .endpoint
            .trim_start_matches("http://")
            .to_string();
        let listener = TcpListener::bind((real::NODE_IP, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let mode = Arc::new(AtomicU8::new(PASS));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (m, o) = (mode.clone(), open.clone());
        std::thread::spawn(move || {
            while m.load(Ordering::SeqCst) != GONE {
                match listener.accept() {
                    Ok((client, _)) => serve(client, &upstream, &m, &o),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
            // The listener is dropped here: connections are refused from now on.
        });
        StoreProxy { addr, mode, open }
    }

    /// Answers every request with 503 SlowDown for `window`, then passes them again.
    fn slow_down_for(&self, window: Duration) {
        self.mode.store(SLOW_DOWN, Ordering::SeqCst);
        self.cut();
        let mode = self.mode.clone();
        std::thread::spawn(move || {
            std::thread::sleep(window);
            let _ = mode.compare_exchange(SLOW_DOWN, PASS, Ordering::SeqCst, Ordering::SeqCst);
        });
    }

    fn wait_while_slowing_down(&self) {
        while self.mode.load(Ordering::SeqCst) == SLOW_DOWN {
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Closes every connection and the listening socket, for good.
    fn gone(&self) {
        self.mode.store(GONE, Ordering::SeqCst);
        self.cut();
    }

    fn cut(&self) {
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// One accepted connection: piped to `upstream`, or answered 503 SlowDown.
fn serve(client: TcpStream, upstream: &str, mode: &AtomicU8, open: &Mutex<Vec<TcpStream>>) {
    let _ = client.set_nonblocking(false);
    if mode.load(Ordering::SeqCst) == SLOW_DOWN {
        std::thread::spawn(move || slow_down(client));
        return;
    }
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let pipe = |mut from: TcpStream, mut to: TcpStream| {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        });
    };
    let mut o = open.lock().unwrap();
    for s in [&client, &server] {
        if let Ok(c) = s.try_clone() {
            o.push(c);
        }
    }
    if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
        pipe(c, s);
        pipe(server, client);
    }
}

/// Reads one request's head and answers it as AWS S3 does when throttling.
fn slow_down(mut client: TcpStream) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                <Message>Please reduce your request rate.</Message></Error>";
    let _ = write!(
        client,
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.shutdown(Shutdown::Both);
}
