//! `ctl verify RUN`: verify one complete backup run of an ActionSchedule now, with the
//! schedule's `spec.verify`. It creates the same verification ActionSet the scheduler would
//! ([`crate::scheduler::verify::verification`]); the scheduler then runs the check action, if
//! any, and records the outcome on the run and in the schedule's status.

use chrono::Utc;
use clap::Args;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};

use super::connect::Conn;
use super::output::Format;
use super::{CtlError, Done};
use crate::model::{ActionSchedule, ActionSet, LABEL_SCHEDULE, LABEL_VERIFIED};
use crate::scheduler::{identity, plan, read, verify};

#[derive(Clone, Debug, Args)]
pub struct VerifyArgs {
    /// The backup run (an ActionSet an ActionSchedule created) to verify.
    pub run: String,
    /// Follow the verification ActionSet (the restore) until it ends (exit 1 when it failed).
    #[arg(long)]
    pub watch: bool,
}

pub async fn run(conn: &Conn, args: &VerifyArgs, format: Format) -> Result<Done, CtlError> {
    let ns = &conn.namespace;
    let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), ns);
    let backup = api.get(&args.run).await.map_err(CtlError::kube(format!(
        "cannot read ActionSet {ns}/{}",
        args.run
    )))?;
    let Some(schedule) = identity::schedule_of(&backup.metadata).map(str::to_owned) else {
        return Err(CtlError::Input(format!(
            "ActionSet {} is not a run of an ActionSchedule: only a schedule's runs are verified \
             (restore any ActionSet by hand with `ctl create --from {} --action restore`)",
            args.run, args.run
        )));
    };
    if !read::record(&backup, &schedule).is_backup() {
        return Err(CtlError::Input(format!(
            "ActionSet {} is a {} ActionSet of schedule {schedule}, not a backup run",
            args.run,
            read::record(&backup, &schedule).trigger.as_str()
        )));
    }
    let scheds: Api<ActionSchedule> = Api::namespaced(conn.client.clone(), ns);
    let s = scheds.get(&schedule).await.map_err(CtlError::kube(format!(
        "cannot read ActionSchedule {ns}/{schedule}"
    )))?;
    let Some(v) = &s.spec.verify else {
        return Err(CtlError::Input(format!(
            "ActionSchedule {ns}/{schedule} has no spec.verify: set verify.action (e.g. restore) \
             and verify.object (the scratch target) to say how its runs are verified"
        )));
    };
    // One verification at a time: they restore into the same scratch object.
    let lp = ListParams::default().labels(&format!(
        "{LABEL_SCHEDULE}={}",
        plan::schedule_label_value(&schedule)
    ));
    let all = api.list(&lp).await.map_err(CtlError::kube(format!(
        "cannot list the runs of {ns}/{schedule}"
    )))?;
    let records: Vec<_> = all
        .items
        .iter()
        .map(|a| read::record(a, &schedule))
        .collect();
    if let Some(busy) = records
        .iter()
        .find(|r| r.ours && r.trigger.is_verification() && r.is_active())
    {
        return Err(CtlError::Input(format!(
            "verification {} of schedule {schedule} is {}: it restores into the same object; \
             verify {} once it ended",
            busy.name,
            busy.state.as_str(),
            args.run
        )));
    }
    let name = verify::verify_name(&args.run);
    if let Some(old) = all.items.iter().find(|a| a.name_any() == name) {
        let check = verify::check_name(&args.run);
        return Err(CtlError::Input(format!(
            "{} was verified by {} already ({}); delete it (and {check}, if present) to verify it again",
            args.run,
            name,
            old.state().map(|s| s.as_str()).unwrap_or("pending")
        )));
    }
    let a = verify::verification(&s, v, &backup, false, Utc::now())
        .map_err(|e| CtlError::Input(e.to_string()))?;
    if backup.labels().contains_key(LABEL_VERIFIED) {
        // Its old outcome goes: the scheduler records the new one.
        let patch = verify::clear_patch();
        api.patch_metadata(&args.run, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(CtlError::kube(format!(
                "cannot update ActionSet {ns}/{}",
                args.run
            )))?;
    }
    let created = api
        .create(&PostParams::default(), &a)
        .await
        .map_err(CtlError::kube(format!(
            "cannot create ActionSet {ns}/{name}"
        )))?;
    let target = [v.object.namespace.as_str(), v.object.name.as_str()]
        .iter()
        .filter(|x| !x.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    let line = format!(
        "actionset {name} created: verifying {} into {} {target}",
        args.run, v.object.kind
    );
    super::create::report_created(conn, &created, &line, format, args.watch).await
}
