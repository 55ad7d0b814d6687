//! Scale benchmark of the ActionSchedule controller on the real API server.
//!
//! `cargo bench --bench schedules [-- 1000 10000]` creates N ActionSchedules
//! that all tick at one minute of the hour (`M * * * *`, M a few minutes
//! ahead: time for the controller to take every schedule up first, and no
//! second tick during the measurement), runs the controller in-process with
//! its defaults, and reports how long it took to take the schedules up, the
//! tick-to-create lag (ActionSet creationTimestamp minus the nominal tick;
//! API timestamps have 1 s resolution) at p50/p99/max, and the resident
//! memory the controller added to this process. Progress is read from
//! watches, not lists, so the bench adds little load to the API server.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use blueprint_operator::model::{
    ANNOTATION_SCHEDULED_TIME, ActionSchedule, ActionSet, LABEL_SCHEDULE, LABEL_TRIGGER,
};
use blueprint_operator::scheduler::{self, SchedulerOptions};
use chrono::{DateTime, Timelike, Utc};
use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;

use common::{cpu_secs, loadavg, malloc_kib, pct, rss_kib};

// `--features dhat-heap`: every allocation recorded with its call stack (several times slower);
// dhat-heap.json then tells which stacks held the bytes at the peak (`tools/dhat-top.py`).
#[cfg(feature = "dhat-heap")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The API server's create limit: `n` ActionSets shaped like the scheduler's, sent by 16
/// concurrent clients as fast as they are answered. Returns each create's completion time
/// from the start, in ms, sorted.
async fn create_limit(client: &Client, n: usize) -> anyhow::Result<Vec<f64>> {
    let ns = support::namespace(client, &format!("bench-limit-{n}")).await;
    let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let t0 = Instant::now();
    let mut done = futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let ns = ns.clone();
            async move {
                let a: ActionSet = serde_json::from_value(json!({
                    "apiVersion": "cr.kanister.io/v1alpha1",
                    "kind": "ActionSet",
                    "metadata": {
                        "name": format!("s{i:05}-29000000"),
                        "namespace": ns,
                        "labels": {LABEL_SCHEDULE: format!("s{i:05}"), LABEL_TRIGGER: "limit"},
                        "annotations": {ANNOTATION_SCHEDULED_TIME: "2026-01-01T00:00:00Z"},
                    },
                    "spec": {"actions": [{"name": "backup", "blueprint": "bp",
                        "object": {"kind": "Deployment", "name": "app", "namespace": ns}}]}
                }))?;
                api.create(&PostParams::default(), &a).await?;
                anyhow::Ok(t0.elapsed().as_secs_f64() * 1000.0)
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<f64>>>()?;
    done.sort_by(|a, b| a.total_cmp(b));
    Ok(done)
}

async fn run_size(client: &Client, n: usize) -> anyhow::Result<()> {
    let load_start = loadavg();
    let limit = create_limit(client, n).await?;
    eprintln!(
        "[{n}] API server: {n} ActionSet creates by 16 clients in {:.2}s (p50 {:.0} ms, p99 {:.0} ms)",
        limit.last().copied().unwrap_or(0.0) / 1000.0,
        pct(&limit, 0.5),
        pct(&limit, 0.99)
    );
    let ns = support::namespace(client, &format!("bench-{n}")).await;
    let api: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    // The tick: a whole minute at least 90 s + 30 ms per schedule from now.
    let lead = chrono::Duration::milliseconds(90_000 + 30 * n as i64);
    let at = Utc::now() + lead;
    let tick = DateTime::from_timestamp((at.timestamp() / 60 + 1) * 60, 0).unwrap_or(at);
    let schedule = format!("{} * * * *", tick.minute());
    let t0 = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let ns = ns.clone();
            let schedule = schedule.clone();
            async move {
                let s: ActionSchedule = serde_json::from_value(json!({
                    "apiVersion": "blueprint-operator.io/v1alpha1",
                    "kind": "ActionSchedule",
                    "metadata": {"name": format!("s{i:05}"), "namespace": ns},
                    "spec": {
                        "schedule": schedule,
                        "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp",
                            "object": {"kind": "Deployment", "name": "app", "namespace": ns}}]}
                    }
                }))?;
                api.create(&PostParams::default(), &s).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;
    eprintln!(
        "[{n}] created {n} ActionSchedules ({schedule:?}, tick {tick}) in {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    let schedules = watcher(api, watcher::Config::default()).applied_objects();
    let runs = watcher(
        Api::<ActionSet>::namespaced(client.clone(), &ns),
        watcher::Config::default().labels(&format!("{LABEL_TRIGGER}=scheduled")),
    )
    .applied_objects();
    futures::pin_mut!(schedules, runs);

    let rss_before = rss_kib();
    let heap_before = malloc_kib();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut opts = SchedulerOptions {
        namespace: Some(ns.clone()),
        ..Default::default()
    };
    // The controller's --schedule-concurrency (default: no limit).
    if let Some(c) = std::env::var("BENCH_CONCURRENCY")
        .ok()
        .and_then(|c| c.parse().ok())
    {
        opts.concurrency = c;
    }
    let started = Instant::now();
    let ctl = tokio::spawn(scheduler::run(client.clone(), opts, async move {
        let _ = rx.await;
    }));
    let deadline = Instant::now() + Duration::from_secs(1800);
    let tick_instant =
        tokio::time::Instant::now() + (tick - Utc::now()).to_std().unwrap_or(Duration::ZERO);
    // Sampled every second: RSS, and malloc's bytes in use at their highest (what the
    // program held at once; RSS also keeps what malloc freed but did not give back).
    let mut peak_rss = rss_kib();
    let mut peak_heap = malloc_kib();
    let mut sample = || {
        peak_rss = peak_rss.max(rss_kib());
        let heap = malloc_kib();
        if heap.0 > peak_heap.0 {
            peak_heap = heap;
        }
    };
    let mut every_second = tokio::time::interval(Duration::from_secs(1));
    let mut taken_up = BTreeSet::new();
    let mut take_up_time = None;
    // When the watch delivered each schedule's run for `tick`: ms after the tick.
    let mut created: BTreeMap<String, f64> = BTreeMap::new();
    let mut cpu_at_tick = None;
    let mut report = tokio::time::interval(Duration::from_secs(10));
    while created.len() < n && Instant::now() < deadline {
        tokio::select! {
            s = schedules.next() => match s {
                Some(Ok(s)) => {
                    if s.status.as_ref().is_some_and(|st| st.next_schedule_time.is_some()) {
                        taken_up.insert(s.name_any());
                        if taken_up.len() == n && take_up_time.is_none() {
                            take_up_time = Some(started.elapsed());
                            eprintln!("[{n}] controller took up {n} schedules in {:.1}s (tick in {:.0}s)",
                                started.elapsed().as_secs_f64(), (tick - Utc::now()).as_seconds_f64());
                        }
                    }
                }
                Some(Err(e)) => eprintln!("[{n}] schedule watch: {e}"),
                None => break,
            },
            a = runs.next() => match a {
                Some(Ok(a)) => {
                    let for_tick = a
                        .annotations()
                        .get(ANNOTATION_SCHEDULED_TIME)
                        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                        .is_some_and(|t| t == tick);
                    if let (true, Some(owner)) = (for_tick, a.labels().get(LABEL_SCHEDULE)) {
                        let lag = (Utc::now() - tick).num_microseconds().unwrap_or(0) as f64 / 1000.0;
                        created.entry(owner.clone()).or_insert(lag);
                    }
                }
                Some(Err(e)) => eprintln!("[{n}] run watch: {e}"),
                None => break,
            },
            _ = tokio::time::sleep_until(tick_instant), if cpu_at_tick.is_none() => {
                cpu_at_tick = Some(cpu_secs());
            }
            _ = every_second.tick() => sample(),
            _ = report.tick() => {
                eprintln!("[{n}] {} taken up, {} of {n} runs for tick {tick} created", taken_up.len(), created.len());
            }
        }
    }
    sample();
    let cpu = cpu_secs() - cpu_at_tick.unwrap_or_else(cpu_secs);
    let mut lags: Vec<f64> = created.values().copied().collect();
    lags.sort_by(|a, b| a.total_cmp(b));
    let _ = tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), ctl).await;
    let take_up = take_up_time.map_or("not all".into(), |d| format!("{:.1}s", d.as_secs_f64()));
    let rss_delta = peak_rss.saturating_sub(rss_before);
    let lag_p99 = pct(&lags, 0.99);
    println!(
        "schedules={n} load_avg=[{load_start}]..[{}] api_create_limit: {n} creates in {:.2}s (p50 {:.0} ms, p99 {:.0} ms); scheduler: take_up={take_up} runs={} lag_p50={:.0}ms lag_p99={lag_p99:.0}ms lag_max={:.0}ms ratio_p99={:.2}; process CPU from the tick to the last run {:.2}s ({:.0} us per run, controller and bench watches); controller_rss_delta={:.1}MiB ({:.0} bytes per schedule, peak process RSS {:.1}MiB; malloc in use at most +{:.1}MiB, then holding +{:.1}MiB)",
        loadavg(),
        limit.last().copied().unwrap_or(f64::NAN) / 1000.0,
        pct(&limit, 0.5),
        pct(&limit, 0.99),
        created.len(),
        pct(&lags, 0.5),
        lags.last().copied().unwrap_or(f64::NAN),
        lag_p99 / pct(&limit, 0.99),
        cpu,
        cpu * 1e6 / created.len().max(1) as f64,
        rss_delta as f64 / 1024.0,
        rss_delta as f64 * 1024.0 / n as f64,
        peak_rss as f64 / 1024.0,
        peak_heap.0.saturating_sub(heap_before.0) as f64 / 1024.0,
        peak_heap.1.saturating_sub(heap_before.1) as f64 / 1024.0
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let sizes = common::sizes(&[1000, 10_000]);
    #[cfg(feature = "dhat-heap")]
    let _profiler = dhat::Profiler::new_heap();
    let client = support::client().await;
    support::install_crds(&client).await?;
    for n in sizes {
        run_size(&client, n).await?;
    }
    Ok(())
}
