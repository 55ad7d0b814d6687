//! Read: the schedule as it is now, its ActionSets as [`RunRecord`]s, and the
//! inputs [`plan`](super::plan) takes from them. Nothing here writes or decides.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::ctx::{Ctx, Error};
use super::gate::Priority;
use super::plan::{self, PlanSettings, RunRecord};
use super::status::from_time;
use super::summary::RunSummary;
use super::window::{self, Window};
use crate::model::{
    ANNOTATION_RUN_NOW, ActionSchedule, ActionScheduleStatus, ActionSet, LABEL_SCHEDULE,
    WatchedActionSet,
};

/// The schedule at its newest version, or `None` when it is gone. The watch
/// cache may be older than our own last status write: the cached object is
/// used only at the version this controller last read or wrote, and at the
/// version just before our own last write, that write's result is used.
/// Otherwise it is read from the API server, before any other request waiting
/// (a create may follow it); see [`fresher`] for what is kept of that read.
pub(super) async fn current(
    ctx: &Ctx,
    api: &Api<ActionSchedule>,
    obj: &Arc<ActionSchedule>,
    ns: &str,
) -> Result<Option<Arc<ActionSchedule>>, Error> {
    let name = obj.name_any();
    let key = (ns.to_string(), name.clone());
    let remembered = ctx.known().get_mut(&key).and_then(|k| k.newest(obj));
    if remembered.is_some() {
        return Ok(remembered);
    }
    let fresh = ctx
        .send(Priority::Create, || api.get_opt(&name))
        .await
        .result?;
    if fresh.is_none() {
        ctx.known().remove(&key);
    }
    Ok(fresh.map(|f| fresher(obj, f)))
}

/// The schedule read afresh, `fresh`, as kept while its reconcile and settle hold it: the
/// cached copy when the cache holds that version already (as when a schedule is first taken
/// up), so that thousands of reconciles waiting at once do not each hold a second copy; else
/// `fresh` without its managedFields, as the cache keeps it.
fn fresher(cached: &Arc<ActionSchedule>, mut fresh: ActionSchedule) -> Arc<ActionSchedule> {
    let version = fresh.resource_version();
    if version.is_some() && version == cached.resource_version() {
        return cached.clone();
    }
    fresh.managed_fields_mut().clear();
    Arc::new(fresh)
}

/// The ActionSets labelled with one schedule, as found.
pub(super) struct Found {
    pub listed: Vec<Arc<RunSummary>>,
    /// One per listed ActionSet (only those with `ours` are the schedule's runs).
    pub records: Vec<RunRecord>,
}

impl Found {
    pub fn by_name(&self) -> BTreeMap<String, &RunSummary> {
        by_name(&self.listed)
    }
}

/// The listed ActionSets by name.
pub(super) fn by_name(listed: &[Arc<RunSummary>]) -> BTreeMap<String, &RunSummary> {
    listed
        .iter()
        .map(|a| (a.name().to_string(), a.as_ref()))
        .collect()
}

/// The ActionSets labelled with the schedule `name` in `ns`, with their records.
pub(super) async fn runs(ctx: &Ctx, ns: &str, name: &str) -> Result<Found, Error> {
    let listed = list_runs(ctx, ns, name).await?;
    let records = listed.iter().map(|a| a.record(name)).collect();
    Ok(Found { listed, records })
}

/// The ActionSets labelled with the schedule `name` (the caller tells which are
/// its runs: [`RunSummary::record`]).
async fn list_runs(ctx: &Ctx, ns: &str, name: &str) -> Result<Vec<Arc<RunSummary>>, Error> {
    let label = plan::schedule_label_value(name);
    Ok(match ctx.runs.runs(ns, &label) {
        Some(runs) => runs,
        // The ActionSet watch has not finished its first list yet.
        // Decoded one by one, as the watch does: a run that does not decode
        // is left out instead of failing the list.
        None => {
            let api = Api::<WatchedActionSet>::namespaced(ctx.client.clone(), ns);
            let lp = ListParams::default().labels(&format!("{LABEL_SCHEDULE}={label}"));
            ctx.request(|| api.list(&lp))
                .await?
                .items
                .into_iter()
                .filter_map(WatchedActionSet::valid)
                .map(|a| Arc::new(RunSummary::of(&a)))
                .collect()
        }
    })
}

/// The whole ActionSet `run` as it is now, for the steps that need more than its summary
/// (a delete action takes its artifacts, a verification its spec); `None` when it is gone
/// or is another object of the same name.
pub(super) async fn actionset(
    ctx: &Ctx,
    api: &Api<ActionSet>,
    run: &RunSummary,
) -> Result<Option<ActionSet>, Error> {
    let a = ctx.request(|| api.get_opt(run.name())).await?;
    Ok(a.filter(|a| a.uid() == run.uid))
}

/// The scheduler's view of an ActionSet labelled with a schedule, for the
/// schedule named `schedule`.
pub fn record(a: &ActionSet, schedule: &str) -> RunRecord {
    RunSummary::of(a).record(schedule)
}

/// Ticks after this and up to now are due: the latest of
/// `status.lastScheduleTime`, `status.lastSkippedTime` and the schedule's
/// creation time.
pub(super) fn window_start(
    s: &ActionSchedule,
    old: &ActionScheduleStatus,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    let created_at = s
        .metadata
        .creation_timestamp
        .as_ref()
        .and_then(from_time)
        .unwrap_or(now);
    [
        old.last_schedule_time.as_ref().and_then(from_time),
        old.last_skipped_time.as_ref().and_then(from_time),
        Some(created_at),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(now)
}

/// A run-now token not handled yet.
pub(super) fn run_now_token(s: &ActionSchedule, old: &ActionScheduleStatus) -> Option<String> {
    s.annotations()
        .get(ANNOTATION_RUN_NOW)
        .filter(|t| !t.is_empty() && old.last_run_now_token.as_ref() != Some(*t))
        .cloned()
}

/// What planning takes from the spec of `s`, whose runs failed `failures` times in a row.
/// A `jitter` or `window` that does not parse (the webhook refuses them) is the error, naming
/// the field.
pub(super) fn plan_settings(s: &ActionSchedule, failures: u32) -> Result<PlanSettings, String> {
    let spec = &s.spec;
    let jitter = match &spec.jitter {
        None => 0,
        Some(j) => window::parse_jitter(j)
            .map_err(|e| format!("spec.jitter: {j:?} is not a Go duration ({e})"))?,
    };
    let ns = s.namespace().unwrap_or_default();
    let run_window = match &spec.window {
        None => None,
        Some(w) => Some(Window::parse(w).map_err(|e| format!("spec.window.{}: {e}", e.field()))?),
    };
    Ok(PlanSettings {
        suspend: spec.suspend,
        concurrency_policy: spec.concurrency_policy,
        starting_deadline_seconds: spec.starting_deadline_seconds,
        missed_run_policy: spec.missed_run_policy,
        jitter_offset: window::jitter_offset(&ns, &s.name_any(), jitter),
        window: run_window,
        too_many_failures: window::breaker(spec.suspend_after_failures, failures),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ANNOTATION_SCHEDULED_TIME, LABEL_DELETE_FOR, LABEL_TRIGGER};
    use crate::scheduler::ctx::Known;
    use crate::scheduler::plan::{RunState, Trigger};
    use serde_json::{Value, json};

    fn actionset(v: Value) -> ActionSet {
        serde_json::from_value(v).unwrap()
    }

    fn schedule_at(version: &str, suspend: bool) -> ActionSchedule {
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns", "resourceVersion": version},
            "spec": {"schedule": "* * * * *", "suspend": suspend, "actionSetTemplate": {"actions": []}},
        }))
        .unwrap()
    }

    #[test]
    fn the_newest_schedule_is_the_cache_at_our_version_or_our_write_over_the_one_before() {
        let ours = Arc::new(schedule_at("3", true));
        let schedule_at = |v: &str, suspend: bool| Arc::new(schedule_at(v, suspend));
        let mut k = Known {
            version: "3".into(),
            ahead: Some(("2".into(), ours)),
        };
        // The cache still holds the version our write was made from: our write's result.
        let got = k.newest(&schedule_at("2", false)).unwrap();
        assert_eq!(got.resource_version().as_deref(), Some("3"));
        assert!(got.spec.suspend);
        // Another version (someone else's change, or an older one): read afresh.
        assert!(k.newest(&schedule_at("1", false)).is_none());
        assert!(k.newest(&schedule_at("4", false)).is_none());
        // Caught up: the cached object, and our copy is dropped.
        let got = k.newest(&schedule_at("3", true)).unwrap();
        assert_eq!(got.resource_version().as_deref(), Some("3"));
        assert!(k.ahead.is_none());
        assert!(k.newest(&schedule_at("2", false)).is_none());
        // Without a version nothing is known about it.
        let mut plain = Known::at("5".into());
        let mut unversioned = schedule_at("5", false);
        Arc::make_mut(&mut unversioned).metadata.resource_version = None;
        assert!(plain.newest(&unversioned).is_none());
        assert!(plain.newest(&schedule_at("5", false)).is_some());
    }

    #[test]
    fn a_fresh_read_at_the_cached_version_is_the_cached_copy() {
        let cached = Arc::new(schedule_at("3", false));
        let with_managed_fields = |v: &str, suspend: bool| {
            let mut s = schedule_at(v, suspend);
            s.metadata.managed_fields = Some(vec![Default::default()]);
            s
        };
        let kept = fresher(&cached, with_managed_fields("3", false));
        assert!(Arc::ptr_eq(&kept, &cached), "shared, not a second copy");
        // Newer than the cache: the read, without managedFields.
        let kept = fresher(&cached, with_managed_fields("4", true));
        assert_eq!(kept.resource_version().as_deref(), Some("4"));
        assert!(kept.spec.suspend);
        assert!(kept.managed_fields().is_empty());
        // Without a version nothing tells they are the same.
        let mut unversioned = with_managed_fields("3", true);
        unversioned.metadata.resource_version = None;
        assert!(fresher(&cached, unversioned).spec.suspend);
    }

    #[test]
    fn our_written_copy_is_dropped_once_the_cache_holds_its_version() {
        let mut k = Known {
            version: "3".into(),
            ahead: Some(("2".into(), Arc::new(schedule_at("3", true)))),
        };
        k.caught_up(&schedule_at("2", false));
        assert!(
            k.ahead.is_some(),
            "the cache still holds the version before our write"
        );
        k.caught_up(&schedule_at("4", false));
        assert!(
            k.ahead.is_some(),
            "a version that is not ours tells nothing"
        );
        k.caught_up(&schedule_at("3", true));
        assert!(k.ahead.is_none());
        assert_eq!(k.version, "3");
    }

    #[test]
    fn record_reads_labels_annotations_time_and_defer_state() {
        let a = actionset(json!({
            "metadata": {
                "name": "db-20260601000000",
                "labels": {LABEL_SCHEDULE: "db", LABEL_TRIGGER: "scheduled"},
                "annotations": {ANNOTATION_SCHEDULED_TIME: "2026-06-01T00:00:00+00:00", crate::model::ANNOTATION_SCHEDULE: "db"},
            },
            "status": {"state": "complete", "actions": [
                {"name": "backup", "deferPhase": {"name": "cleanup", "state": "running"}}
            ]}
        }));
        let r = record(&a, "db");
        assert!(r.ours);
        assert_eq!(r.state, RunState::Complete);
        assert_eq!(r.defer_state, Some(RunState::Running));
        assert!(r.is_active(), "a running deferPhase keeps the run active");
        assert_eq!(r.scheduled_time.to_rfc3339(), "2026-06-01T00:00:00+00:00");
        assert!(!record(&a, "other").ours);
        // No status yet: pending; empty deferPhase (Kanister's placeholder) is ignored.
        let b = actionset(
            json!({"metadata": {"name": "x", "labels": {LABEL_TRIGGER: "delete", LABEL_DELETE_FOR: "y"}},
            "status": {"state": "failed", "actions": [{"name": "a", "deferPhase": {"name": "", "state": ""}}]}}),
        );
        let r = record(&b, "db");
        assert_eq!(
            (r.state, r.defer_state, r.trigger),
            (RunState::Failed, None, Trigger::Delete)
        );
        assert_eq!(r.delete_for.as_deref(), Some("y"));
        assert_eq!(
            record(&actionset(json!({"metadata": {"name": "z"}})), "db").state,
            RunState::Pending
        );
    }
}
