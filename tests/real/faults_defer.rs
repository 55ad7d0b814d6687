//! Faults during the deferPhase itself: a ScaleWorkload deferPhase that brings an application
//! back waits for it to be ready, and the application is kept from being ready by the test
//! (its readiness probe asks a server of the test's) until the fault is over. So every fault
//! happens while the deferPhase waits, and the ActionSet must still be `running` then: the
//! deferPhase runs to its end exactly once and the final state is written after it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::faults::{
    Fault, defer_started, deployment_back, events, healthy, inject, quiesce_and_resume,
};
use crate::functions::{start_spec, wait_end, wait_until};
use crate::install::{apply_yaml, installed_namespace};
use crate::real::{self, get_json, kubectl};
use crate::support;

const BLUEPRINT: &str = "faults-defer";
/// The application the run stops and its deferPhase brings back.
const APP: &str = "gated";

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_defer_phase_hit_by_a_fault_runs_to_its_end_once_before_the_final_state() {
    let ns = installed_namespace("faults-defer").await;
    let gate = Gate::start();
    apply_yaml(&gated_app(&ns, gate.port)).unwrap();
    deployment_back(&ns, APP);
    let (quiesce, resume) = quiesce_and_resume(&ns, APP);
    let bp = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": BLUEPRINT, "namespace": ns},
        "actions": {"backup": {"phases": [quiesce], "deferPhase": resume}},
    });
    apply_yaml(&bp.to_string()).unwrap();

    let matrix = [
        Fault::ApiServerKilled,
        Fault::EtcdKilled,
        Fault::KubeletRestarted,
        Fault::LeaderDeleted,
    ];
    let mut table = Vec::new();
    for fault in matrix {
        gate.ready(false);
        let name = start_spec(
            &ns,
            json!({"name": "backup", "blueprint": BLUEPRINT,
                   "object": {"kind": "Deployment", "name": APP, "namespace": ns}}),
        );
        wait_until(&ns, &name, "the deferPhase did not start", |a| {
            a["status"]["actions"][0]["deferPhase"]["state"] == "running"
        })
        .await;
        app_pod_running(&ns).await;
        inject(fault, &ns, "", None);
        healthy().await;
        // The application cannot be ready yet: the deferPhase still waits for it.
        let during = get_json(&["get", "actionsets.cr.kanister.io", "-n", &ns, &name]);
        assert_eq!(
            during["status"]["state"], "running",
            "{fault:?}: {during:#}"
        );
        let defer = &during["status"]["actions"][0]["deferPhase"];
        assert_eq!(defer["state"], "running", "{fault:?}: {during:#}");

        gate.ready(true);
        let done = wait_end(&ns, &name).await;
        assert_eq!(done["status"]["state"], "complete", "{fault:?}: {done:#}");
        let defer = &done["status"]["actions"][0]["deferPhase"];
        assert_eq!(defer["state"], "complete", "{fault:?}: {done:#}");
        for reason in ["Started deferPhase", "Ended deferPhase", "Update Complete"] {
            let n = if reason == "Started deferPhase" {
                defer_started(&ns, &name).await
            } else {
                events(&ns, &name, reason).await
            };
            assert_eq!(n, 1, "{fault:?}: {n} Events {reason:?}");
        }
        if fault == Fault::LeaderDeleted {
            // The new leader entered the waiting deferPhase again, it did not start it anew.
            let resumed = events(&ns, &name, "Resumed deferPhase").await;
            assert_eq!(
                resumed, 1,
                "{fault:?}: {resumed} Events \"Resumed deferPhase\""
            );
        }
        deployment_back(&ns, APP);
        table.push(format!("| {fault:?} | complete |"));
    }
    eprintln!(
        "| fault in the deferPhase | run |\n| --- | --- |\n{}",
        table.join("\n")
    );
}

/// The Deployment [`APP`], ready only while the test's gate on port `port` says so.
fn gated_app(ns: &str, port: u16) -> String {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": APP, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": APP}},
            "template": {
                "metadata": {"labels": {"app": APP}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "app", "image": real::tools_image(),
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sleep", "infinity"],
                        "readinessProbe": {
                            "httpGet": {"host": real::NODE_IP, "port": port, "path": "/ready"},
                            "periodSeconds": 1, "failureThreshold": 1,
                        },
                    }],
                },
            },
        },
    })
    .to_string()
}

/// Waits until the pod the deferPhase started runs (not ready: the gate is closed).
async fn app_pod_running(ns: &str) {
    support::poll(real::WAIT, || async {
        let pods = kubectl(&["get", "pods", "-n", ns, "-l", "app=gated", "-o", "json"]).ok()?;
        let pods: Value = serde_json::from_str(&pods).ok()?;
        pods["items"]
            .as_array()?
            .iter()
            .any(|p| {
                p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
            })
            .then_some(())
    })
    .await
    .expect("the application's pod runs again");
}

/// The readiness the application's probe reads: an HTTP server on the node IP answering
/// `200` while ready and `503` while not.
struct Gate {
    port: u16,
    ready: Arc<AtomicBool>,
}

impl Gate {
    fn start() -> Gate {
        let listener = TcpListener::bind((real::NODE_IP, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let ready = Arc::new(AtomicBool::new(true));
        let r = ready.clone();
        std::thread::spawn(move || {
            for mut client in listener.incoming().flatten() {
                let _ = client.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = [0u8; 1024];
                let _ = client.read(&mut head);
                let status = if r.load(Ordering::SeqCst) {
                    "200 OK"
                } else {
                    "503 Service Unavailable"
                };
                let _ = write!(
                    client,
                    "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            }
        });
        Gate { port, ready }
    }

    fn ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }
}
