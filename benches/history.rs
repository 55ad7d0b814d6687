//! Controller memory with a realistic history, beside kube-controller-manager.
//!
//! `cargo bench --bench history [-- 10000]` measures, on the test control plane:
//! - the peer: kube-controller-manager's resident memory growth while one namespace fills
//!   with N CronJobs and 5N Jobs owned by them (3 complete and 2 failed each: the CronJob
//!   defaults `successfulJobsHistoryLimit: 3`, `failedJobsHistoryLimit: 2`). The Jobs name a
//!   `spec.managedBy` nobody runs, so the Job controller starts no pod and their statuses
//!   are written here; the CronJob, Job and garbage collector controllers still hold them;
//! - ours: the `blueprint-operator controller` binary's (executor and scheduler, as shipped)
//!   resident memory growth while another namespace fills with N ActionSchedules and 5N of
//!   their runs (3 complete, 2 failed: the defaults `keepLast: 3`, `keepFailed: 2`), until
//!   it has taken every schedule up.
//!
//! Both kinds of schedule are due on 1 January, so nothing runs or rotates while measuring.
//! Growth is the peak over the fill and a settling minute, less the idle resident memory just
//! before the fill.
//!
//! `--features dhat-heap`: the controller runs in this process instead, and dhat-heap.json
//! tells which stacks held its bytes at the peak (`tools/dhat-top.py`; the peer is skipped).

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::time::{Duration, Instant};

use blueprint_operator::model::{
    ANNOTATION_CLAIMED, ANNOTATION_SCHEDULE, ANNOTATION_SCHEDULED_TIME, ActionSchedule, ActionSet,
    EXECUTOR_LABEL_VALUE, LABEL_EXECUTOR, LABEL_SCHEDULE, LABEL_TRIGGER,
};
use chrono::DateTime;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use common::{loadavg, proc_rss_kib};

/// Once a year: no tick while the bench runs (unless it runs over New Year).
const SCHEDULE: &str = "0 0 1 1 *";
/// A history of five runs: the three newest complete, two failed before them.
const HISTORY: [(&str, bool); 5] = [
    ("2025-01-01T00:00:00Z", true),
    ("2024-01-01T00:00:00Z", true),
    ("2023-01-01T00:00:00Z", true),
    ("2022-01-01T00:00:00Z", false),
    ("2021-01-01T00:00:00Z", false),
];
const CREATORS: usize = 32;

#[cfg(feature = "dhat-heap")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The controller under test for namespace `ns`, as the binary (killed when dropped) and
/// its pid for /proc.
#[cfg(not(feature = "dhat-heap"))]
fn start_controller(ns: &str) -> (String, Box<dyn std::any::Any>) {
    let ctl = support::controller::Controller::spawn(&["--namespace", ns], &[]);
    (
        ctl.pid().map(|p| p.to_string()).unwrap_or_default(),
        Box::new(ctl),
    )
}

/// The controller's own code in this process (aborted when dropped), for dhat.
#[cfg(feature = "dhat-heap")]
fn start_controller(ns: &str) -> (String, Box<dyn std::any::Any>) {
    use blueprint_operator::app::controller::{ControllerArgs, run};
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ControllerArgs,
    }
    let flags = ["controller", "--namespace", ns, "--no-leader-election"];
    let cli =
        Cli::parse_from(
            flags
                .into_iter()
                .chain(["--metrics-addr", "off", "--log-level", "warn"]),
        );
    // SAFETY: no other thread reads the environment while the bench sets it, before the start.
    unsafe { std::env::set_var("KUBECONFIG", support::rbac::controller_kubeconfig()) };
    struct Abort(tokio::task::JoinHandle<()>);
    impl Drop for Abort {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let task = tokio::spawn(async move {
        if let Err(e) = run(cli.args).await {
            eprintln!("controller: {e:#}");
        }
    });
    ("self".to_string(), Box::new(Abort(task)))
}

/// Resident memory of `pid` above `idle` KiB while `fill` runs: sampled every 2 s until `fill`
/// is over and no new peak came for `quiet`; returns (peak, last) growth in KiB.
async fn growth(
    pid: &str,
    idle: u64,
    quiet: Duration,
    fill: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<(u64, u64)> {
    let mut peak = idle;
    let mut peak_at = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    futures::pin_mut!(fill);
    let mut filled = false;
    loop {
        tokio::select! {
            r = &mut fill, if !filled => { r?; filled = true; peak_at = Instant::now(); }
            _ = tick.tick() => {
                let now = proc_rss_kib(pid);
                anyhow::ensure!(now > 0, "process {pid} is gone");
                if now > peak {
                    peak = now;
                    peak_at = Instant::now();
                }
                if filled && peak_at.elapsed() >= quiet {
                    return Ok((peak.saturating_sub(idle), now.saturating_sub(idle)));
                }
            }
        }
    }
}

/// `make(i)` for i in 0..n, `CREATORS` at a time.
async fn for_each<F, Fut>(n: usize, make: F) -> anyhow::Result<()>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    futures::stream::iter(0..n)
        .map(make)
        .buffer_unordered(CREATORS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Minutes since the epoch: the name suffix CronJob and the scheduler give a run.
fn minutes(t: &str) -> i64 {
    DateTime::parse_from_rfc3339(t).map_or(0, |t| t.timestamp() / 60)
}

async fn fill_cronjobs(client: &Client, ns: &str, n: usize) -> anyhow::Result<()> {
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), ns);
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let job_spec = json!({
        "managedBy": "bench.blueprint-operator.io/nobody",
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "backup",
            "image": "kanisterio/kanister-tools:0.119.0", "command": ["sh", "-c", "backup"]}]}}
    });
    for_each(n, |i| {
        let (cronjobs, jobs, job_spec) = (cronjobs.clone(), jobs.clone(), job_spec.clone());
        async move {
            let name = format!("s{i:05}");
            let cj: CronJob = serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"schedule": SCHEDULE, "jobTemplate": {"spec": job_spec}}
            }))?;
            let cj = cronjobs.create(&PostParams::default(), &cj).await?;
            for (at, ok) in HISTORY {
                let job: Job = serde_json::from_value(json!({
                    "metadata": {"name": format!("{name}-{}", minutes(at)),
                        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                            "name": name, "uid": cj.uid(), "controller": true,
                            "blockOwnerDeletion": true}]},
                    "spec": job_spec
                }))?;
                let job = jobs.create(&PostParams::default(), &job).await?;
                let end =
                    (DateTime::parse_from_rfc3339(at)? + chrono::Duration::minutes(5)).to_rfc3339();
                let status = if ok {
                    json!({"startTime": at, "completionTime": end, "succeeded": 1, "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": end},
                        {"type": "Complete", "status": "True", "lastTransitionTime": end}]})
                } else {
                    json!({"startTime": at, "failed": 1, "conditions": [
                        {"type": "FailureTarget", "status": "True", "lastTransitionTime": end,
                            "reason": "BackoffLimitExceeded"},
                        {"type": "Failed", "status": "True", "lastTransitionTime": end,
                            "reason": "BackoffLimitExceeded"}]})
                };
                jobs.patch_status(
                    &job.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status })),
                )
                .await?;
            }
            anyhow::Ok(())
        }
    })
    .await
}

/// A finished run of schedule `name` as the scheduler makes one and the executor leaves it.
fn run(ns: &str, name: &str, at: &str, ok: bool) -> Value {
    let state = if ok { "complete" } else { "failed" };
    let object = json!({"kind": "StatefulSet", "name": "db", "namespace": ns});
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "ActionSet",
        "metadata": {
            "name": format!("{name}-{}", minutes(at)),
            "labels": {LABEL_SCHEDULE: name, LABEL_TRIGGER: "scheduled",
                LABEL_EXECUTOR: EXECUTOR_LABEL_VALUE},
            "annotations": {ANNOTATION_SCHEDULED_TIME: at, ANNOTATION_SCHEDULE: name,
                ANNOTATION_CLAIMED: "schedule"},
        },
        "spec": {"actions": [{"name": "backup", "blueprint": "postgres-bp", "object": object,
            "profile": {"kind": "Profile", "name": "s3", "namespace": ns}}]},
        "status": {"state": state, "progress": {"percentCompleted": "100.00"},
            "actions": [{"name": "backup", "blueprint": "postgres-bp", "object": object,
                "phases": [{"name": "dump", "state": state}],
                "artifacts": {"cloudObject": {"keyValue": {
                    "path": format!("/postgres-backups/{ns}/{name}/{at}/dump.gz")}}}}]}
    })
}

async fn fill_schedules(client: &Client, ns: &str, n: usize) -> anyhow::Result<()> {
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
    let runs: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    for_each(n, |i| {
        let (schedules, runs) = (schedules.clone(), runs.clone());
        let ns = ns.to_string();
        async move {
            let name = format!("s{i:05}");
            let s: ActionSchedule = serde_json::from_value(json!({
                "apiVersion": "blueprint-operator.io/v1alpha1",
                "kind": "ActionSchedule",
                "metadata": {"name": name},
                "spec": {"schedule": SCHEDULE, "actionSetTemplate": {"actions": [{
                    "name": "backup", "blueprint": "postgres-bp",
                    "object": {"kind": "StatefulSet", "name": "db", "namespace": ns},
                    "profile": {"kind": "Profile", "name": "s3"}}]}}
            }))?;
            schedules.create(&PostParams::default(), &s).await?;
            for (at, ok) in HISTORY {
                let a: ActionSet = serde_json::from_value(run(&ns, &name, at, ok))?;
                runs.create(&PostParams::default(), &a).await?;
            }
            anyhow::Ok(())
        }
    })
    .await?;
    // Taken up: every schedule has its next tick in its status.
    let mut seen = std::collections::BTreeSet::new();
    let events = watcher(schedules, watcher::Config::default()).applied_objects();
    futures::pin_mut!(events);
    while seen.len() < n {
        let s = events
            .try_next()
            .await?
            .ok_or_else(|| anyhow::anyhow!("watch ended"))?;
        if s.status
            .as_ref()
            .is_some_and(|st| st.next_schedule_time.is_some())
        {
            seen.insert(s.name_any());
        }
    }
    Ok(())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

async fn run_size(client: &Client, n: usize) -> anyhow::Result<()> {
    let objects = n * (1 + HISTORY.len());
    let quiet = Duration::from_secs(60);
    let load_start = loadavg();
    let kcm = support::cluster::cluster()
        .dir
        .as_ref()
        .filter(|_| !cfg!(feature = "dhat-heap"));
    let peer = match kcm {
        Some(dir) => {
            let pid = std::fs::read_to_string(dir.join("pids/kube-controller-manager"))?;
            let pid = pid.trim().to_string();
            let ns = support::namespace(client, &format!("bench-kcm-{n}")).await;
            let idle = proc_rss_kib(&pid);
            let t0 = Instant::now();
            let (peak, last) = growth(&pid, idle, quiet, fill_cronjobs(client, &ns, n)).await?;
            eprintln!(
                "[{n}] kube-controller-manager: {n} CronJobs + {} Jobs in {:.0}s, +{:.1} MiB peak, +{:.1} MiB after settling (idle {:.1} MiB)",
                n * HISTORY.len(),
                t0.elapsed().as_secs_f64() - quiet.as_secs_f64(),
                mib(peak),
                mib(last),
                mib(idle)
            );
            Some((peak, last))
        }
        None => {
            eprintln!("[{n}] kube-controller-manager not measured (an existing cluster, or dhat)");
            None
        }
    };

    let ns = support::namespace(client, &format!("bench-history-{n}")).await;
    let (pid, ctl) = start_controller(&ns);
    // Started and listed its (empty) namespace.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle = proc_rss_kib(&pid);
    let t0 = Instant::now();
    let (peak, last) = growth(&pid, idle, quiet, fill_schedules(client, &ns, n)).await?;
    let fill = t0.elapsed().as_secs_f64() - quiet.as_secs_f64();
    drop(ctl);
    let per = |kib: u64| kib as f64 * 1024.0 / n as f64;
    let peer_text = peer.map_or("not measured".into(), |(p, l)| {
        format!(
            "+{:.1} MiB peak ({:.0} B per CronJob), +{:.1} MiB settled; ratio ours/peer peak {:.2}",
            mib(p),
            per(p),
            mib(l),
            peak as f64 / p.max(1) as f64
        )
    });
    println!(
        "history schedules={n} objects_each_side={objects} load_avg=[{load_start}]..[{}] controller: +{:.1} MiB peak ({:.0} B per schedule with 5 runs), +{:.1} MiB settled, idle {:.1} MiB, filled and taken up in {fill:.0}s; kube-controller-manager: {peer_text}",
        loadavg(),
        mib(peak),
        per(peak),
        mib(last),
        mib(idle),
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let sizes = common::sizes(&[10_000]);
    #[cfg(feature = "dhat-heap")]
    let _profiler = dhat::Profiler::new_heap();
    let client = support::client().await;
    support::install_crds(&client).await?;
    for n in sizes {
        run_size(&client, n).await?;
    }
    Ok(())
}
