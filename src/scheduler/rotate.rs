//! Apply rotation: remove the runs [`retention`](super::retention) selected,
//! each through `retention.deleteAction` when set (see [`Remover`]), and say
//! how far each got. The deleted schedule's path ([`deleting`](super::deleting))
//! removes its runs with the same [`Remover`].

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

use super::apply::{delete_owned, publish, rotated};
use super::ctx::{Ctx, Error};
use super::delete_action::{delete_spec, effective_kind};
use super::identity::new_action_set;
use super::metrics::{Labels, Metrics, with};
use super::plan::{self, NewRun, RunRecord, RunState, Trigger};
use super::retention::RetentionPlan;
use super::status::delete_failed_before;
use super::summary::RunSummary;
use crate::model::{ActionSchedule, ActionScheduleStatus, ActionSet, Blueprint, RotationEntry};

/// How far removing one run got.
#[derive(Debug)]
pub(super) enum Step {
    /// Its ActionSet is deleted (after this delete action completed, if any).
    Removed(Option<String>),
    /// Its delete action was just created.
    Started(String),
    /// Its delete action is pending or running.
    Waiting(String),
    /// Its delete action failed: the run is kept.
    DeleteFailed(String),
    /// It needs a delete action, and starting one was not allowed.
    NotStarted,
}

/// Removes finished runs of one schedule, for rotation and for the
/// schedule's deletion alike: a complete run through `deleteAction` when set
/// (create it with the run's artifacts, wait, then delete both), anything else
/// at once.
pub(super) struct Remover<'a> {
    s: &'a ActionSchedule,
    api: &'a Api<ActionSet>,
    labels: &'a Labels,
    metrics: &'a Metrics,
    by_name: &'a BTreeMap<String, &'a RunSummary>,
    pub delete_action: Option<&'a str>,
    /// `retention.deleteActionKind`.
    delete_kind: Option<&'a str>,
    /// Where the template's Blueprints are (the schedule's namespace).
    blueprints: Api<Blueprint>,
    /// Delete-action ActionSets of this schedule, by the run they are for.
    deletes: BTreeMap<&'a str, &'a RunRecord>,
    /// Verification ActionSets of this schedule.
    verifications: Vec<&'a RunRecord>,
}

impl<'a> Remover<'a> {
    pub fn new(
        client: Client,
        s: &'a ActionSchedule,
        api: &'a Api<ActionSet>,
        labels: &'a Labels,
        metrics: &'a Metrics,
        by_name: &'a BTreeMap<String, &'a RunSummary>,
        runs: &'a [RunRecord],
    ) -> Self {
        let namespace = s.namespace().unwrap_or_default();
        Remover {
            blueprints: Api::namespaced(client, &namespace),
            delete_kind: s.spec.retention.delete_action_kind.as_deref(),
            s,
            api,
            labels,
            metrics,
            by_name,
            delete_action: s
                .spec
                .retention
                .delete_action
                .as_deref()
                .filter(|d| !d.is_empty()),
            deletes: runs
                .iter()
                .filter(|r| r.trigger == Trigger::Delete && r.ours)
                .filter_map(|r| r.delete_for.as_deref().map(|f| (f, r)))
                .collect(),
            verifications: runs
                .iter()
                .filter(|r| r.ours && r.trigger.is_verification())
                .collect(),
        }
    }

    /// One step towards removing the finished run `run`; `may_start`: a
    /// delete action may be created.
    pub async fn step(
        &self,
        run: &RunSummary,
        state: RunState,
        may_start: bool,
        now: DateTime<Utc>,
    ) -> Result<Step, Error> {
        // A verification holds no backup of its own: no delete action for it.
        let verification = self.verifications.iter().any(|v| v.name == run.name());
        let (Some(action), RunState::Complete, false) = (self.delete_action, state, verification)
        else {
            delete_owned(self.api, run).await?;
            return Ok(Step::Removed(None));
        };
        let name = run.name().to_string();
        let Some(d) = self.deletes.get(name.as_str()) else {
            if !may_start {
                return Ok(Step::NotStarted);
            }
            // Its artifacts are in its status, which the summary does not keep.
            let Some(full) = self
                .api
                .get_opt(&name)
                .await?
                .filter(|a| a.uid() == run.uid)
            else {
                // Deleted meanwhile: nothing left to remove.
                return Ok(Step::Removed(None));
            };
            let dname = plan::delete_name(&name);
            let new = NewRun {
                name: dname.clone(),
                scheduled_time: now,
                trigger: Trigger::Delete,
            };
            let kinds = self.kinds(action).await?;
            let namespace = self.s.namespace().unwrap_or_default();
            let template = &self.s.spec.action_set_template;
            let spec = delete_spec(template, action, &full, &kinds, &namespace);
            let da = new_action_set(self.s, &new, spec, Some(&name));
            match self.api.create(&PostParams::default(), &da).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
            self.metrics
                .runs_created
                .get_or_create(&with(self.labels.clone(), "trigger", "delete"))
                .inc();
            return Ok(Step::Started(dname));
        };
        Ok(match d.state {
            RunState::Complete => {
                delete_owned(self.api, run).await?;
                if let Some(da) = self.by_name.get(&d.name) {
                    delete_owned(self.api, da).await?;
                }
                Step::Removed(Some(d.name.clone()))
            }
            RunState::Failed => Step::DeleteFailed(d.name.clone()),
            _ => Step::Waiting(d.name.clone()),
        })
    }

    /// For each Blueprint of the template, the kind its delete action runs on
    /// (see [`effective_kind`]); absent: the run's object.
    async fn kinds(&self, action: &str) -> Result<BTreeMap<String, String>, Error> {
        let mut kinds = BTreeMap::new();
        for a in &self.s.spec.action_set_template.actions {
            if kinds.contains_key(&a.blueprint) {
                continue;
            }
            let declared = match self.delete_kind {
                Some(_) => None,
                None => self.declared_kind(&a.blueprint, action).await?,
            };
            if let Some(k) = effective_kind(self.delete_kind, declared.as_deref()) {
                kinds.insert(a.blueprint.clone(), k.to_string());
            }
        }
        Ok(kinds)
    }

    /// The `kind` the Blueprint `blueprint` declares for `action`.
    async fn declared_kind(&self, blueprint: &str, action: &str) -> Result<Option<String>, Error> {
        match self.blueprints.get_opt(blueprint).await {
            Ok(bp) => Ok(bp.and_then(|b| b.actions.get(action).map(|a| a.kind.clone()))),
            // Missing or unreadable: it declares nothing; the delete action
            // itself then fails and says why.
            Err(kube::Error::SerdeError(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Delete actions and verifications whose run is gone (rotated, or deleted by hand) and
    /// that have finished: they go with their run.
    pub async fn remove_orphan_deletes(&self) -> Result<(), Error> {
        let orphans = self.deletes.iter().map(|(run, d)| (*run, *d)).chain(
            self.verifications
                .iter()
                .filter_map(|v| v.verify_for.as_deref().map(|run| (run, *v))),
        );
        for (run_name, d) in orphans {
            if !self.by_name.contains_key(run_name)
                && !d.is_active()
                && let Some(a) = self.by_name.get(&d.name)
            {
                delete_owned(self.api, a).await?;
            }
        }
        Ok(())
    }
}

/// What one rotation did.
pub(super) struct Rotation {
    /// `status.retention.removing`: runs selected but not gone yet.
    pub removing: Vec<RotationEntry>,
    /// Runs whose ActionSet is gone now.
    pub removed: Vec<String>,
    /// A delete action is pending or running: look again soon.
    pub waiting: bool,
}

/// Remove what `selected` says, one [`Step`] per run, with Events and metrics.
pub(super) async fn rotate(
    ctx: &Ctx,
    remover: &Remover<'_>,
    selected: &RetentionPlan,
    old: &ActionScheduleStatus,
    now: DateTime<Utc>,
) -> Result<Rotation, Error> {
    let (s, labels) = (remover.s, remover.labels);
    let mut removing = Vec::new();
    let mut waiting = false;
    for rm in &selected.remove {
        let Some(a) = remover.by_name.get(&rm.name) else {
            continue;
        };
        let entry = |progress: String| RotationEntry {
            name: rm.name.clone(),
            reason: rm.reason.clone(),
            progress: Some(progress),
        };
        match remover.step(a, rm.state, true, now).await? {
            Step::Removed(after) => {
                let note = match after {
                    Some(d) => format!(
                        "deleted ActionSet {} after delete action {d} completed ({})",
                        rm.name, rm.reason
                    ),
                    None => format!("deleted ActionSet {}: {}", rm.name, rm.reason),
                };
                rotated(ctx, s, labels, rm.state, note).await;
            }
            Step::Started(dname) => {
                let action = remover.delete_action.unwrap_or_default();
                publish(ctx, s, false, "DeleteActionStarted", "Rotate", format!("rotating {} ({}): created ActionSet {dname} running action {action:?} with its artifacts", rm.name, rm.reason)).await;
                waiting = true;
                removing.push(entry("WaitingForDeleteAction".into()));
            }
            Step::Waiting(_) | Step::NotStarted => {
                waiting = true;
                removing.push(entry("WaitingForDeleteAction".into()));
            }
            Step::DeleteFailed(dname) => {
                removing.push(entry(format!("DeleteActionFailed: ActionSet {dname} failed; the run is kept. Delete {dname} to retry.")));
                if !delete_failed_before(old, &rm.name) {
                    publish(ctx, s, true, "DeleteActionFailed", "Rotate", format!("delete action {dname} for {} failed; the run is kept. Delete {dname} to retry.", rm.name)).await;
                }
            }
        }
    }
    remover.remove_orphan_deletes().await?;
    let removed = selected
        .remove
        .iter()
        .filter(|r| !removing.iter().any(|e| e.name == r.name))
        .map(|r| r.name.clone())
        .collect();
    Ok(Rotation {
        removing,
        removed,
        waiting,
    })
}
