//! Apply: a schedule deleted with `retention.onDelete: Delete`. Its runs are
//! removed through the rotation path ([`Remover`]); the pure rule of what to
//! remove, wait for or keep is [`finalize`](super::finalize).

use std::time::Duration;

use chrono::Utc;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use tracing::info;

use super::apply::{publish, set_finalizer, write_status};
use super::ctx::{Ctx, DELETE_POLL, Error};
use super::finalize::{self, Kept};
use super::metrics::Labels;
use super::plan;
use super::read::Found;
use super::rotate::{Remover, Step};
use super::status::{condition, delete_failed_before, from_time};
use crate::model::{ActionSchedule, ActionSet, RotationEntry};

/// The schedule is being deleted with `retention.onDelete: Delete`: remove
/// its runs through the rotation path, keep those that cannot be removed
/// (Event `RunsKept`, condition), then remove the finalizer. Bounded by
/// `ctx.finalize_timeout` from the first pass (see [`finalize`]).
pub(super) async fn finalize_runs(
    ctx: &Ctx,
    api: &Api<ActionSchedule>,
    actionsets: &Api<ActionSet>,
    s: &ActionSchedule,
    found: &Found,
    labels: &Labels,
) -> Result<Action, Error> {
    let name = s.name_any();
    let now = Utc::now();
    let runs = &found.records;
    let by_name = found.by_name();
    let old = s.status.clone().unwrap_or_default();
    // The time limit counts from the first pass (the controller may have
    // been down when the delete was requested).
    let first_pass = old
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.reason == "Deleting")
        .and_then(|c| from_time(&c.last_transition_time));
    let pass = finalize::select(runs, first_pass.unwrap_or(now), now, ctx.finalize_timeout);
    let remover = Remover::new(
        ctx.client.clone(),
        s,
        actionsets,
        labels,
        &ctx.metrics,
        &by_name,
        runs,
    );
    if first_pass.is_none() {
        let how = match remover.delete_action {
            Some(d) => format!("through delete action {d:?}"),
            None => "(no deleteAction: only the ActionSets)".into(),
        };
        publish(
            ctx,
            s,
            false,
            "DeletingRuns",
            "Delete",
            format!(
                "schedule deleted with retention.onDelete: Delete: removing {} finished run(s) {how}, waiting for {} active run(s), until {} at most",
                pass.remove.len(),
                pass.active.len(),
                pass.deadline.to_rfc3339()
            ),
        )
        .await;
    }
    let reason = "schedule deleted (retention.onDelete: Delete)";
    let entry = |run: &str, progress: String| RotationEntry {
        name: run.to_string(),
        reason: reason.into(),
        progress: Some(progress),
    };
    let mut removing = Vec::new();
    let mut kept: Vec<(String, Kept)> = Vec::new();
    for r in &pass.remove {
        let Some(a) = by_name.get(&r.name) else {
            continue;
        };
        match remover.step(a, r.state, !pass.expired, now).await? {
            Step::Removed(after) => {
                let how = after
                    .map(|d| format!(" after delete action {d} completed"))
                    .unwrap_or_default();
                publish(
                    ctx,
                    s,
                    false,
                    "RunDeleted",
                    "Delete",
                    format!("deleted ActionSet {}{how}: {reason}", r.name),
                )
                .await;
            }
            Step::Started(d) => {
                publish(ctx, s, false, "DeleteActionStarted", "Delete", format!("{reason}: created ActionSet {d} running the delete action with the artifacts of {}", r.name)).await;
                removing.push(entry(&r.name, "WaitingForDeleteAction".into()));
            }
            Step::Waiting(d) if pass.expired => {
                kept.push((r.name.clone(), Kept::DeleteActionUnfinished(d)))
            }
            Step::Waiting(_) => removing.push(entry(&r.name, "WaitingForDeleteAction".into())),
            Step::NotStarted => kept.push((r.name.clone(), Kept::NotStarted)),
            Step::DeleteFailed(d) => {
                if !delete_failed_before(&old, &r.name) {
                    publish(
                        ctx,
                        s,
                        true,
                        "DeleteActionFailed",
                        "Delete",
                        format!(
                            "delete action {d} for {} failed; the run is kept ({reason})",
                            r.name
                        ),
                    )
                    .await;
                }
                removing.push(entry(
                    &r.name,
                    format!("DeleteActionFailed: ActionSet {d} failed; the run is kept"),
                ));
                kept.push((r.name.clone(), Kept::DeleteActionFailed(d)));
            }
        }
    }
    for r in &pass.active {
        if pass.expired {
            kept.push((r.name.clone(), Kept::StillActive(r.state)));
        } else {
            removing.push(entry(&r.name, "WaitingForRun".into()));
        }
    }
    remover.remove_orphan_deletes().await?;
    let in_progress = removing
        .iter()
        .filter(|e| {
            e.progress
                .as_deref()
                .is_some_and(|p| p.starts_with("Waiting"))
        })
        .count();
    let mut status = old.clone();
    status.next_schedule_time = None;
    status.retention.removing = removing;
    status.retention.next_rotation = Vec::new();
    let label = plan::schedule_label_value(&name);
    if in_progress > 0 {
        status.conditions = vec![condition(
            false,
            "Deleting",
            format!(
                "removing the runs before the schedule goes (retention.onDelete: Delete): {in_progress} in progress, until {} at most",
                pass.deadline.to_rfc3339()
            ),
            s.metadata.generation,
            &old.conditions,
        )];
        write_status(ctx, api, s, status).await?;
        let left = (pass.deadline - now).to_std().unwrap_or_default();
        return Ok(Action::requeue(
            DELETE_POLL.min(left + Duration::from_millis(100)),
        ));
    }
    let (reason, msg) = if kept.is_empty() {
        ("Deleting", "every run was removed".to_string())
    } else {
        let msg = finalize::kept_message(&name, &label, &kept);
        publish(ctx, s, true, "RunsKept", "Delete", msg.clone()).await;
        ("RunsKept", msg)
    };
    status.conditions = vec![condition(
        false,
        reason,
        msg,
        s.metadata.generation,
        &old.conditions,
    )];
    let version = write_status(ctx, api, s, status).await?;
    set_finalizer(api, s, false, version).await?;
    info!(schedule = %name, namespace = %s.namespace().unwrap_or_default(), kept = kept.len(), "runs of the deleted schedule handled; finalizer removed");
    Ok(Action::await_change())
}
