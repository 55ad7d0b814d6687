//! Apply restore verification: record the outcomes [`verify::plan`] found on their backup
//! runs, create the checks and the next verification, with Events. Decisions are in
//! [`verify`](super::verify).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tracing::warn;

use super::apply::publish;
use super::cron::Schedule;
use super::ctx::{Ctx, Error};
use super::gate::Priority;
use super::plan::{RunRecord, RunState};
use super::read;
use super::status::from_time;
use super::summary::RunSummary;
use super::verify::{self, Cadence, Outcome, Verified};
use crate::model::{ActionSchedule, ActionSet, Verify};

/// When `s` verifies: every Nth complete run, or at the ticks of `verify.schedule` (an
/// unparsable one, which the webhook refuses, verifies nothing); and its next tick.
pub(super) fn cadence(
    s: &ActionSchedule,
    verify: &Verify,
    runs: &[RunRecord],
    now: DateTime<Utc>,
) -> (Cadence, Option<DateTime<Utc>>) {
    let Some(cron) = verify.schedule.as_deref().filter(|c| !c.is_empty()) else {
        return (Cadence::Every(verify.every.unwrap_or(1)), None);
    };
    let Ok(schedule) = Schedule::parse(cron, s.spec.time_zone.as_deref()) else {
        return (Cadence::Tick(None), None);
    };
    let created = s
        .metadata
        .creation_timestamp
        .as_ref()
        .and_then(from_time)
        .unwrap_or(now);
    let since = verify::ticks_since(runs, created);
    let next = verify::next_tick(&schedule, since, now);
    (Cadence::Tick(verify::due_tick(&schedule, since, now)), next)
}

/// One verification step of `s`; `runs` gain the outcomes recorded and the ActionSets created.
pub(super) async fn verify(
    ctx: &Ctx,
    s: &ActionSchedule,
    api: &Api<ActionSet>,
    by_name: &BTreeMap<String, &RunSummary>,
    runs: &mut Vec<RunRecord>,
    counted: &verify::Counted,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let Some(v) = &s.spec.verify else {
        return Ok(());
    };
    // Whole seconds, as the other times on runs.
    let now = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
    let (cadence, _) = cadence(s, v, runs, now);
    let p = verify::plan(runs, cadence, v.check_action.is_some(), now);
    for outcome in &p.record {
        let at = verify::record_time(runs, counted, now);
        if !record(ctx, s, api, by_name, outcome, at).await? {
            continue;
        }
        if let Some(r) = runs.iter_mut().find(|r| r.name == outcome.run) {
            r.verified = Some(Verified {
                passed: outcome.passed,
                at,
                by: outcome.by.clone(),
            });
        }
    }
    for backup in &p.check {
        start(ctx, s, v, api, by_name, backup, true, now, runs).await?;
    }
    if let Some((backup, at)) = &p.start {
        start(ctx, s, v, api, by_name, backup, false, *at, runs).await?;
    }
    Ok(())
}

/// Write `outcome` on its backup run, and announce it; false when the run changed since it
/// was read (its watch event brings another reconcile) or is gone.
async fn record(
    ctx: &Ctx,
    s: &ActionSchedule,
    api: &Api<ActionSet>,
    by_name: &BTreeMap<String, &RunSummary>,
    outcome: &Outcome,
    at: DateTime<Utc>,
) -> Result<bool, Error> {
    let Some(backup) = by_name.get(&outcome.run) else {
        return Ok(false);
    };
    let mut patch = verify::record_patch(outcome, at);
    // Only over the version read: a view older than an outcome already written must not
    // write (and announce) it again.
    patch["metadata"]["resourceVersion"] = backup.resource_version.clone().into();
    let (pp, patch) = (PatchParams::default(), Patch::Merge(&patch));
    match ctx
        .request(|| api.patch_metadata(&outcome.run, &pp, &patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    let (run, by) = (&outcome.run, &outcome.by);
    if outcome.passed {
        let note = format!("backup run {run} verified: {by} restored it and passed");
        publish(ctx, s, false, "Verified", "Verify", note).await;
    } else {
        let why = by_name
            .get(by)
            .and_then(|a| a.error.as_deref())
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        let note = format!("backup run {run} is unverified: verification {by} failed{why}");
        publish(ctx, s, true, "VerificationFailed", "Verify", note).await;
    }
    Ok(true)
}

/// Create the restore (or, `check`, the check) of `backup`'s verification.
#[allow(clippy::too_many_arguments)]
async fn start(
    ctx: &Ctx,
    s: &ActionSchedule,
    v: &Verify,
    api: &Api<ActionSet>,
    by_name: &BTreeMap<String, &RunSummary>,
    backup: &str,
    check: bool,
    at: DateTime<Utc>,
    runs: &mut Vec<RunRecord>,
) -> Result<(), Error> {
    let Some(b) = by_name.get(backup) else {
        return Ok(());
    };
    // The verification takes the run's spec and artifacts, which its summary does not keep.
    let Some(b) = read::actionset(ctx, api, b).await? else {
        return Ok(());
    };
    let a = match verify::verification(s, v, &b, check, at) {
        Ok(a) => a,
        Err(e) => {
            warn!(schedule = %s.name_any(), run = %backup, error = %e, "cannot verify");
            return Ok(());
        }
    };
    let name = a.name_any();
    let pp = PostParams::default();
    let sent = ctx.send(Priority::Create, || api.create(&pp, &a)).await;
    match sent.result {
        Ok(_) => {
            let what = if check { "check" } else { "restore" };
            let o = &v.object;
            let note = format!(
                "verifying backup run {backup}: created ActionSet {name} ({what}, action {:?} on {} {}/{})",
                a.spec
                    .as_ref()
                    .and_then(|x| x.actions.first())
                    .map(|x| x.name.as_str())
                    .unwrap_or(""),
                o.kind,
                o.namespace,
                o.name
            );
            publish(ctx, s, false, "VerificationStarted", "Verify", note).await;
        }
        // Made by an earlier reconcile (a restart, a stale view): the same verification.
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    if !runs.iter().any(|r| r.name == name) {
        let mut r = read::record(&a, &s.name_any());
        r.state = RunState::Pending;
        runs.push(r);
    }
    Ok(())
}
