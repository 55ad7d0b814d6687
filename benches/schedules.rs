//! Scale benchmark of the ActionSchedule controller on the real API server.
//!
//! `cargo bench --bench schedules [-- 1000 10000]` creates N ActionSchedules
//! with `* * * * *` (all tick at the same minute boundary), runs the
//! controller in-process, waits for the first full round of ActionSets and
//! reports the tick-to-create lag (ActionSet creationTimestamp minus the
//! nominal tick; API timestamps have 1 s resolution) at p50/p99/max, and the
//! resident memory the controller added to this process.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use blueprint_operator::model::{
    ANNOTATION_SCHEDULED_TIME, ActionSchedule, ActionSet, LABEL_TRIGGER,
};
use blueprint_operator::scheduler::{self, SchedulerOptions};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn run_size(client: &Client, n: usize) -> anyhow::Result<()> {
    let ns = support::namespace(client, &format!("bench-{n}")).await;
    let api: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    let t0 = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let ns = ns.clone();
            async move {
                let s: ActionSchedule = serde_json::from_value(json!({
                    "apiVersion": "blueprint-operator.io/v1alpha1",
                    "kind": "ActionSchedule",
                    "metadata": {"name": format!("s{i:05}"), "namespace": ns},
                    "spec": {
                        "schedule": "* * * * *",
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
        "[{n}] created {n} ActionSchedules in {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    let rss_before = rss_kib();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let opts = SchedulerOptions {
        namespace: Some(ns.clone()),
        ..Default::default()
    };
    let ctl = tokio::spawn(scheduler::run(client.clone(), opts, async move {
        let _ = rx.await;
    }));
    // Wait until the controller has seen every schedule once (status.nextScheduleTime),
    // then measure the first full minute boundary after that.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let mut lp = ListParams::default().limit(2000);
        let mut ready = 0;
        loop {
            let page = api.list(&lp).await?;
            ready += page
                .items
                .iter()
                .filter(|s| {
                    s.status
                        .as_ref()
                        .is_some_and(|st| st.next_schedule_time.is_some())
                })
                .count();
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
                _ => break,
            }
        }
        if ready >= n || Instant::now() > deadline {
            eprintln!("[{n}] controller initialised {ready} schedules");
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let start = Utc::now();
    let first_tick =
        DateTime::from_timestamp((start.timestamp() / 60 + 1) * 60, 0).unwrap_or(start);
    let as_api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut peak_rss = rss_kib();
    // Per schedule, its first run for a tick at or after `first_tick`: a
    // schedule reconciled after the following tick gets a run for that later
    // tick (earlier ticks count as missed), so its lag is still measured
    // from `first_tick`. Runs are read from a watch: listing every ActionSet
    // every few seconds would load the API server we are measuring.
    let mut first_run: std::collections::BTreeMap<String, (DateTime<Utc>, i64)> =
        Default::default();
    let runs = watcher(
        as_api,
        watcher::Config::default().labels(&format!("{LABEL_TRIGGER}=scheduled")),
    )
    .applied_objects();
    futures::pin_mut!(runs);
    let mut report = tokio::time::interval(Duration::from_secs(5));
    while first_run.len() < n && Instant::now() < deadline {
        let a = tokio::select! {
            a = runs.next() => match a {
                Some(Ok(a)) => a,
                Some(Err(e)) => { eprintln!("[{n}] watch: {e}"); continue; }
                None => break,
            },
            _ = report.tick() => {
                peak_rss = peak_rss.max(rss_kib());
                eprintln!("[{n}] {} of {n} schedules ran for tick {first_tick} or later", first_run.len());
                continue;
            }
        };
        let Some(tick) = a
            .annotations()
            .get(ANNOTATION_SCHEDULED_TIME)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .filter(|t| *t >= first_tick)
        else {
            continue;
        };
        let Some(created) = a
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|c| c.0.as_second())
        else {
            continue;
        };
        let owner = a
            .labels()
            .get(blueprint_operator::model::LABEL_SCHEDULE)
            .cloned()
            .unwrap_or_default();
        let e = first_run.entry(owner).or_insert((tick, created));
        if tick < e.0 {
            *e = (tick, created);
        }
    }
    peak_rss = peak_rss.max(rss_kib());
    let late_ticks = first_run.values().filter(|(t, _)| *t > first_tick).count();
    let mut lags: Vec<f64> = first_run
        .values()
        .map(|(_, c)| (c - first_tick.timestamp()) as f64)
        .collect();
    lags.sort_by(|a, b| a.total_cmp(b));
    let _ = tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), ctl).await;
    println!(
        "schedules={n} runs={} (of which {late_ticks} for a later tick) lag_p50={:.0}s lag_p99={:.0}s lag_max={:.0}s controller_rss_delta={:.1}MiB (peak process RSS {:.1}MiB)",
        first_run.len(),
        pct(&lags, 0.5),
        pct(&lags, 0.99),
        lags.last().copied().unwrap_or(f64::NAN),
        (peak_rss.saturating_sub(rss_before)) as f64 / 1024.0,
        peak_rss as f64 / 1024.0
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1000, 10_000]
    } else {
        sizes
    };
    let client = support::client().await;
    support::install_crds(&client).await?;
    for n in sizes {
        run_size(&client, n).await?;
    }
    Ok(())
}
