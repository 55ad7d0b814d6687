//! The ActionSchedule controller's reconcile, in three steps: read the
//! schedule and its runs ([`read`](super::read)), decide what to do (the pure
//! [`plan`](super::plan), [`retention`](super::retention) and
//! [`status`](super::status)), and do it: the creates in the reconcile
//! ([`apply`](super::apply)), then, after it has returned, Events, rotation
//! ([`rotate`](super::rotate)) and the status write ([`settle`](super::settle));
//! [`deleting`](super::deleting) for a deleted schedule.
//!
//! Exactly-once per tick: an ActionSet's name is derived from the schedule and
//! the nominal tick, so `AlreadyExists` after a restart, a stale cache or a
//! second replica means "already done". Status is written after the ActionSet,
//! and the schedule is re-read from the API at the start of every reconcile.
//!
//! Runs carry no ownerReference to the schedule (see
//! [`identity`](super::identity)): deleting a schedule keeps them, unless
//! `retention.onDelete: Delete` puts a finalizer on it, which removes them
//! through the rotation path first (see [`finalize`](super::finalize)).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tracing::warn;

use super::apply::{self, publish, set_finalizer, write_status};
use super::cron::Schedule;
use super::ctx::{Ctx, DELETE_POLL, Error};
use super::metrics::{Labels, schedule_labels, with};
use super::plan::{self, NewRun, RunRecord};
use super::retention::{self, Policy};
use super::rotate::{self, Remover};
use super::status::{self, condition, from_time};
use super::summary::RunSummary;
use super::{deleting, freshness, read, verify, verifying, window};
use crate::model::{
    ActionSchedule, ActionScheduleStatus, ActionSet, FINALIZER_DELETE_RUNS, OnDelete,
};

/// Longest sleep between reconciles of a healthy schedule.
const MAX_REQUEUE: Duration = Duration::from_secs(3600);
/// How long after a failed reconcile it is tried again.
const RETRY: Duration = Duration::from_secs(5);

fn requeue(next: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Action {
    let d = next
        .map(|n| (n - now).to_std().unwrap_or_default() + Duration::from_millis(100))
        .unwrap_or(MAX_REQUEUE)
        .min(MAX_REQUEUE);
    Action::requeue(d)
}

pub async fn reconcile(obj: Arc<ActionSchedule>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = obj.name_any();
    let ns = obj
        .namespace()
        .ok_or_else(|| Error::Metadata(name.clone(), "namespace"))?;
    if ctx.settling.defer(&(ns.clone(), name.clone())) {
        // Run again once its previous reconcile has settled.
        return Ok(Action::await_change());
    }
    let api: Api<ActionSchedule> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(mut s) = read::current(&ctx, &api, &obj, &ns).await? else {
        return Ok(Action::await_change());
    };
    let labels = schedule_labels(&ns, &name);
    let actionsets: Api<ActionSet> = Api::namespaced(ctx.client.clone(), &ns);
    let has_finalizer = s.finalizers().iter().any(|f| f == FINALIZER_DELETE_RUNS);
    let delete_runs = s.spec.retention.on_delete == OnDelete::Delete;
    if s.metadata.deletion_timestamp.is_some() {
        if has_finalizer && delete_runs {
            let found = read::runs(&ctx, &ns, &name).await?;
            return deleting::finalize_runs(&ctx, &api, &actionsets, &s, &found, &labels).await;
        }
        if has_finalizer {
            // Switched to Retain while being deleted: the runs stay.
            set_finalizer(&api, &s, false, s.resource_version()).await?;
        }
        return Ok(Action::await_change());
    }
    if has_finalizer != delete_runs {
        s = Arc::new(set_finalizer(&api, &s, delete_runs, s.resource_version()).await?);
    }
    let old = s.status.clone().unwrap_or_default();
    let now = Utc::now();
    let schedule = match Schedule::parse(&s.spec.schedule, s.spec.time_zone.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            let mut status = old.clone();
            status.observed_generation = s.metadata.generation;
            let msg = format!("{e}; fix spec.schedule/spec.timeZone");
            return invalid_schedule(&ctx, &api, &s, status, msg).await;
        }
    };

    // Read.
    let mut found = read::runs(&ctx, &ns, &name).await?;
    let mut runs = std::mem::take(&mut found.records);
    // The breaker looks at the runs as they are now: a run that just completed closes it.
    let failures = plan::summarize(&runs, &status::counted(&old)).consecutive_failures;
    let settings = match read::plan_settings(&s, failures) {
        Ok(x) => x,
        Err(msg) => {
            let mut status = old.clone();
            status.observed_generation = s.metadata.generation;
            return invalid_schedule(&ctx, &api, &s, status, msg).await;
        }
    };

    // Plan the ticks, then create the runs; the rest settles after this reconcile.
    let mut plan = plan::plan(
        &name,
        &schedule,
        &settings,
        read::window_start(&s, &old, now),
        now,
        &runs,
        read::run_now_token(&s, &old).as_deref(),
    );
    apply::replace(
        &ctx,
        &s,
        &actionsets,
        &found.by_name(),
        &plan.replace,
        &mut runs,
    )
    .await?;
    let created =
        apply::create_runs(&ctx, &s, &actionsets, &labels, &plan.create, &mut runs).await?;
    // A verification tick wakes the schedule too.
    let next_verify = s
        .spec
        .verify
        .as_ref()
        .and_then(|v| verifying::cadence(&s, v, &runs, now).1);
    let next = [plan.next, next_verify].into_iter().flatten().min();
    // Done with; the rest of the plan is the settle's.
    (plan.create, plan.replace) = Default::default();
    runs.shrink_to_fit();
    let rest = Rest {
        policy: Policy::from_spec(&s.spec.retention, schedule.time_zone()),
        s,
        labels,
        plan,
        listed: found.listed,
        runs,
        created,
    };
    let settling = ctx.settling.clone();
    settling.start(ObjectRef::from_obj(obj.as_ref()), move || async move {
        match settle(&ctx, rest).await {
            Ok(waiting) => waiting.then_some(DELETE_POLL),
            Err(e) => {
                count_error(&ctx, &ns, &name, &e);
                Some(RETRY)
            }
        }
    });
    Ok(requeue(next, Utc::now()))
}

/// What a reconcile leaves to [`settle`]: the schedule as read (shared with the
/// watch cache when read from there), its plan and its runs with those just created.
///
/// Thousands wait at a tick, so it holds no more than the settle reads: no API handles (made
/// again from the client), no second copy of the runs or the status.
struct Rest {
    s: Arc<ActionSchedule>,
    labels: Labels,
    plan: plan::Plan,
    policy: Policy,
    /// The ActionSets listed before the creates.
    listed: Vec<Arc<RunSummary>>,
    runs: Vec<RunRecord>,
    created: Vec<NewRun>,
}

/// The rest of a reconcile, after its creates: their Events, the skipped
/// ticks, rotation, the summary and the status write. Whether a delete action
/// is pending or running (look again soon).
async fn settle(ctx: &Ctx, rest: Rest) -> Result<bool, Error> {
    let Rest {
        s,
        labels,
        plan: p,
        policy,
        listed,
        mut runs,
        created,
    } = rest;
    let ns = s.namespace().unwrap_or_default();
    let api: Api<ActionSchedule> = Api::namespaced(ctx.client.clone(), &ns);
    let actionsets: Api<ActionSet> = Api::namespaced(ctx.client.clone(), &ns);
    // `status` as read (not handed over: a copy per waiting settle at a tick).
    let old = s.status.clone().unwrap_or_default();
    let now = Utc::now();
    Box::pin(apply::announce_created(ctx, &s, &created)).await;
    Box::pin(apply::announce_skips(ctx, &s, &labels, &p.skips)).await;
    let mut status = old.clone();
    status.observed_generation = s.metadata.generation;
    status::record_plan(&mut status, &p);
    let by_name = read::by_name(&listed);
    // Outcomes are recorded before retention looks at them.
    let counted = status::verification_counted(&old);
    let verifying = verifying::verify(ctx, &s, &actionsets, &by_name, &mut runs, &counted, now);
    Box::pin(verifying).await?;
    // Summarized before rotation, so a run that failed is counted before it is rotated away.
    let sum = plan::summarize(&runs, &status::counted(&old));
    let verified = verify::summarize(&runs, &counted);

    // Select what to rotate, then rotate it.
    let selected = retention::select(&runs, &policy);
    let remover = Remover::new(
        ctx.client.clone(),
        &s,
        &actionsets,
        &labels,
        &ctx.metrics,
        &by_name,
        &runs,
    );
    // Boxed, as the Events' and the status write's futures: thousands of settles wait at
    // a tick, each as big as its largest step.
    let rotation = Box::pin(rotate::rotate(ctx, &remover, &selected, &old, now)).await?;
    runs.retain(|r| !rotation.removed.contains(&r.name));
    let breaker = window::breaker(s.spec.suspend_after_failures, sum.consecutive_failures);
    // A suspended schedule starts no tick, but its active runs still complete.
    let next_tick = p.next.filter(|_| !s.spec.suspend && breaker.is_none());
    status.retention.next_rotation =
        status::next_rotation(&runs, &policy, next_tick, &rotation.removing);
    status.retention.removing = rotation.removing;

    // Summary.
    if sum.consecutive_failures > old.consecutive_failures {
        Box::pin(publish(
            ctx,
            &s,
            true,
            "RunFailed",
            "Observe",
            format!("{} consecutive failed run(s)", sum.consecutive_failures),
        ))
        .await;
    }
    ctx.metrics
        .consecutive_failures
        .get_or_create(&labels)
        .set(i64::from(sum.consecutive_failures));
    ctx.metrics
        .suspended_by_failures
        .get_or_create(&labels)
        .set(i64::from(breaker.is_some()));
    status::record_summary(&mut status, &sum);
    status::record_verification(&mut status, &verified);
    Box::pin(announce_breaker(ctx, &s, &old, breaker)).await;
    status.conditions = vec![status::ready(
        s.spec.suspend,
        breaker,
        p.next,
        s.metadata.generation,
        &old.conditions,
    )];
    Box::pin(write_status(ctx, &api, &s, status)).await?;
    Ok(rotation.waiting)
}

/// A Warning Event when `suspendAfterFailures` opens the breaker, a Normal one when it
/// closes (a run completed, or the limit was raised or removed); once each, as the `Ready`
/// condition of the previous status tells.
async fn announce_breaker(
    ctx: &Ctx,
    s: &ActionSchedule,
    old: &ActionScheduleStatus,
    breaker: Option<(u32, u32)>,
) {
    if s.spec.suspend {
        // `Ready` says Suspended meanwhile; the breaker is announced once the suspend ends.
        return;
    }
    let was_open = old
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.reason == status::TOO_MANY_FAILURES);
    match breaker {
        Some((failures, limit)) if !was_open => {
            let note = format!(
                "{failures} consecutive failed runs (suspendAfterFailures: {limit}): scheduled runs stop until a run completes (run-now still runs) or the limit is raised or removed"
            );
            publish(ctx, s, true, status::TOO_MANY_FAILURES, "Suspend", note).await;
        }
        None if was_open => {
            let note = "scheduled runs resume: fewer consecutive failed runs than suspendAfterFailures (or the limit removed)".to_string();
            publish(ctx, s, false, "Resumed", "Resume", note).await;
        }
        _ => {}
    }
}

/// `spec.schedule`, `spec.timeZone`, `spec.jitter` or `spec.window` does not parse: say so
/// (`msg`, once) and wait for an edit.
async fn invalid_schedule(
    ctx: &Ctx,
    api: &Api<ActionSchedule>,
    s: &ActionSchedule,
    mut status: ActionScheduleStatus,
    msg: String,
) -> Result<Action, Error> {
    let old = s.status.clone().unwrap_or_default();
    let was = old
        .conditions
        .iter()
        .any(|c| c.reason == "InvalidSchedule" && c.message == msg);
    if !was {
        publish(ctx, s, true, "InvalidSchedule", "Parse", msg.clone()).await;
    }
    status.next_schedule_time = None;
    status.conditions = vec![condition(
        false,
        "InvalidSchedule",
        msg,
        s.metadata.generation,
        &old.conditions,
    )];
    write_status(ctx, api, s, status).await?;
    Ok(Action::await_change())
}

pub fn error_policy(obj: Arc<ActionSchedule>, err: &Error, ctx: Arc<Ctx>) -> Action {
    count_error(
        &ctx,
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
        err,
    );
    Action::requeue(RETRY)
}

/// Count and log a failed reconcile (or settle); it is retried after [`RETRY`].
fn count_error(ctx: &Ctx, ns: &str, name: &str, err: &Error) {
    let labels = with(schedule_labels(ns, name), "kind", err.metric_label());
    ctx.metrics.reconcile_errors.get_or_create(&labels).inc();
    warn!(schedule = %name, namespace = %ns, error = %err, "reconcile failed; retrying");
}

/// Every few seconds: set each schedule's overdue and freshness gauges, and forget the
/// gauges and remembered versions of schedules that are gone (deletions
/// trigger no reconcile), so a deleted schedule cannot keep an alert firing.
pub fn housekeeping(
    ctx: &Ctx,
    schedules: &[Arc<ActionSchedule>],
    now: DateTime<Utc>,
    tracked: &mut HashMap<(String, String), Tracked>,
) {
    housekeeping_within(ctx, schedules, now, tracked, MEASURE_BUDGET);
}

/// [`housekeeping`], measuring intervals for at most `budget`.
fn housekeeping_within(
    ctx: &Ctx,
    schedules: &[Arc<ActionSchedule>],
    now: DateTime<Utc>,
    tracked: &mut HashMap<(String, String), Tracked>,
    budget: Duration,
) {
    let mut present = HashSet::with_capacity(schedules.len());
    let measure_until = std::time::Instant::now() + budget;
    for s in schedules {
        let key = (s.namespace().unwrap_or_default(), s.name_any());
        let labels = schedule_labels(&key.0, &key.1);
        let overdue = match (
            &s.spec.suspend,
            s.status
                .as_ref()
                .and_then(|st| st.next_schedule_time.as_ref()),
        ) {
            (false, Some(next)) => from_time(next)
                .map(|n| (now - n).as_seconds_f64().max(0.0))
                .unwrap_or(0.0),
            _ => 0.0,
        };
        ctx.metrics.overdue.get_or_create(&labels).set(overdue);
        if let Some(k) = ctx.known().get_mut(&key) {
            k.caught_up(s);
        }
        // Intervals walk the schedule's ticks (up to a millisecond each): measured again only
        // when the spec changes, or a day later (a month's length differs from the next), and
        // for at most MEASURE_BUDGET a pass, so that thousands of schedules at start-up do not
        // hold a runtime thread; the rest (and stale values meanwhile) wait for later passes.
        let generation = s.metadata.generation;
        let old = tracked.get(&key).copied();
        let current = old.filter(|t| {
            t.generation == generation
                && t.at.is_some_and(|at| now - at < chrono::Duration::days(1))
        });
        let t = match current {
            Some(t) => t,
            None if std::time::Instant::now() < measure_until => Tracked {
                generation,
                at: Some(now),
                intervals: freshness::intervals(&s.spec, now),
            },
            None => old.unwrap_or(Tracked {
                generation,
                at: None,
                intervals: freshness::Intervals::default(),
            }),
        };
        let f = freshness::freshness(&s.spec, s.status.as_ref(), t.intervals);
        let m = &ctx.metrics;
        set_or_remove(&m.last_complete, &labels, f.last_complete);
        set_or_remove(&m.last_verified, &labels, f.last_verified);
        set_or_remove(&m.verification_failures, &labels, f.verification_failures);
        set_or_remove(&m.interval, &labels, f.intervals.interval);
        set_or_remove(&m.verify_interval, &labels, f.intervals.verify);
        tracked.insert(key.clone(), t);
        present.insert(key);
    }
    tracked.retain(|key, _| {
        if present.contains(key) {
            return true;
        }
        let labels = schedule_labels(&key.0, &key.1);
        let m = &ctx.metrics;
        m.overdue.remove(&labels);
        m.consecutive_failures.remove(&labels);
        m.suspended_by_failures.remove(&labels);
        for family in [
            &m.last_complete,
            &m.last_verified,
            &m.verification_failures,
            &m.interval,
            &m.verify_interval,
        ] {
            family.remove(&labels);
        }
        false
    });
    ctx.known().retain(|k, _| present.contains(k));
}

/// Time a housekeeping pass may spend measuring intervals.
const MEASURE_BUDGET: Duration = Duration::from_millis(50);

/// What housekeeping remembers of a schedule between passes.
#[derive(Clone, Copy, Debug)]
pub struct Tracked {
    /// The generation the intervals were measured for.
    generation: Option<i64>,
    /// When they were measured; `None`: not yet.
    at: Option<DateTime<Utc>>,
    intervals: freshness::Intervals,
}

fn set_or_remove(family: &Family<Labels, Gauge>, labels: &Labels, value: Option<i64>) {
    match value {
        Some(v) => {
            family.get_or_create(labels).set(v);
        }
        None => {
            family.remove(labels);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Publisher;
    use crate::scheduler::ctx::Known;
    use kube::Client;
    use serde_json::json;

    fn schedule(ns: &str, name: &str, next: &str) -> Arc<ActionSchedule> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"schedule": "* * * * *", "actionSetTemplate": {"actions": []}},
                "status": {"nextScheduleTime": next},
            }))
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn housekeeping_sets_overdue_and_forgets_deleted_schedules() {
        // A client that is never called: housekeeping touches no API.
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let events = Publisher::new(client.clone(), "test", "test");
        let (ctx, _) = Ctx::new(client, events, Arc::default());
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:01:30Z")
            .unwrap()
            .to_utc();
        let (a, b) = (("hk", "a"), ("hk", "b"));
        for (ns, n) in [a, b] {
            ctx.known()
                .insert((ns.into(), n.into()), Known::at("1".into()));
        }
        ctx.metrics
            .consecutive_failures
            .get_or_create(&schedule_labels("hk", "b"))
            .set(3);
        let mut tracked = HashMap::new();
        let both = [
            schedule("hk", "a", "2026-01-01T00:01:00Z"),
            schedule("hk", "b", "2026-01-01T00:02:00Z"),
        ];
        housekeeping(&ctx, &both, now, &mut tracked);
        let overdue = |n: &str| {
            ctx.metrics
                .overdue
                .get(&schedule_labels("hk", n))
                .map(|g| g.get())
        };
        assert_eq!(overdue("a"), Some(30.0));
        assert_eq!(overdue("b"), Some(0.0), "not yet due");
        // b is deleted.
        housekeeping(&ctx, &both[..1], now, &mut tracked);
        assert_eq!(overdue("b"), None);
        assert!(
            ctx.metrics
                .consecutive_failures
                .get(&schedule_labels("hk", "b"))
                .is_none()
        );
        assert_eq!(overdue("a"), Some(30.0));
        assert!(ctx.known().contains_key(&("hk".into(), "a".into())));
        assert!(!ctx.known().contains_key(&("hk".into(), "b".into())));
    }

    #[tokio::test]
    async fn housekeeping_sets_freshness_gauges_and_forgets_them_with_the_schedule() {
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let events = Publisher::new(client.clone(), "test", "test");
        let (ctx, _) = Ctx::new(client, events, Arc::default());
        let now = DateTime::parse_from_rfc3339("2026-01-07T12:00:00Z")
            .unwrap()
            .to_utc();
        let make = |name: &str, verify: bool, status: serde_json::Value| -> Arc<ActionSchedule> {
            let mut spec = json!({"schedule": "0 2 * * *", "actionSetTemplate": {"actions": []}});
            if verify {
                spec["verify"] = json!({"every": 3, "action": "restore",
                    "object": {"kind": "StatefulSet", "name": "scratch", "namespace": "fr"}});
            }
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
                    "metadata": {"name": name, "namespace": "fr", "generation": 1},
                    "spec": spec, "status": status,
                }))
                .unwrap(),
            )
        };
        let verified = make(
            "v",
            true,
            json!({"lastSuccessfulTime": "2026-01-07T02:00:00Z",
                   "lastVerifiedTime": "2026-01-06T03:00:00Z",
                   "consecutiveVerificationFailures": 1}),
        );
        let plain = make("p", false, json!({}));
        let mut tracked = HashMap::new();
        let m = &ctx.metrics;
        let get =
            |f: &Family<Labels, Gauge>, n: &str| f.get(&schedule_labels("fr", n)).map(|g| g.get());
        // A pass out of time to measure intervals sets the rest; a later one measures them.
        let both = [verified, plain.clone()];
        housekeeping_within(&ctx, &both, now, &mut tracked, Duration::ZERO);
        assert_eq!(get(&m.last_complete, "v"), Some(1_767_751_200));
        assert_eq!(get(&m.interval, "v"), None);
        assert_eq!(get(&m.verify_interval, "v"), None);
        housekeeping(&ctx, &both, now, &mut tracked);
        assert_eq!(get(&m.last_complete, "v"), Some(1_767_751_200));
        assert_eq!(get(&m.last_verified, "v"), Some(1_767_668_400));
        assert_eq!(get(&m.verification_failures, "v"), Some(1));
        assert_eq!(get(&m.interval, "v"), Some(86_400));
        assert_eq!(get(&m.verify_interval, "v"), Some(3 * 86_400));
        // Nothing complete or verified yet, no verify: only the interval.
        assert_eq!(get(&m.last_complete, "p"), None);
        assert_eq!(get(&m.last_verified, "p"), None);
        assert_eq!(get(&m.verification_failures, "p"), None);
        assert_eq!(get(&m.verify_interval, "p"), None);
        assert_eq!(get(&m.interval, "p"), Some(86_400));
        // v is deleted; p's first run completes.
        let plain_done = make(
            "p",
            false,
            json!({"lastSuccessfulTime": "2026-01-08T02:00:00Z"}),
        );
        housekeeping(&ctx, &[plain_done], now, &mut tracked);
        for f in [
            &m.last_complete,
            &m.last_verified,
            &m.verification_failures,
            &m.interval,
            &m.verify_interval,
        ] {
            assert_eq!(get(f, "v"), None);
        }
        assert_eq!(get(&m.last_complete, "p"), Some(1_767_837_600));
        assert_eq!(tracked.len(), 1);
    }

    #[test]
    fn requeue_waits_until_just_after_the_next_tick() {
        let now = DateTime::from_timestamp(1_000, 0).unwrap();
        let next = DateTime::from_timestamp(1_010, 0);
        assert_eq!(
            requeue(next, now),
            Action::requeue(Duration::from_millis(10_100))
        );
        assert_eq!(requeue(None, now), Action::requeue(MAX_REQUEUE));
    }
}
