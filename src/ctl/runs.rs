//! `ctl runs SCHEDULE` (a schedule's runs, oldest first) and `ctl run-now
//! SCHEDULE` (the schedule's own run-now path: a new token in its
//! `blueprint-operator.io/run-now` annotation; the scheduler creates the run
//! `<schedule>-now-<hash>`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use clap::Args;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde::Serialize;
use serde_json::json;

use super::cells::{
    artifacts_cell, duration_seconds, parse, ser_time, started, state_text, time_cell,
};
use super::connect::Conn;
use super::output::{self, Format};
use super::{CtlError, Done};
use crate::model::{
    ANNOTATION_RUN_NOW, ANNOTATION_SCHEDULED_TIME, ActionSchedule, ActionSet, Artifact,
    LABEL_SCHEDULE, LABEL_TRIGGER,
};
use crate::scheduler::{identity, plan, read, verify};

#[derive(Clone, Debug, Args)]
pub struct RunsArgs {
    /// The ActionSchedule.
    pub schedule: String,
}

#[derive(Clone, Debug, Args)]
pub struct RunNowArgs {
    /// The ActionSchedule.
    pub schedule: String,
    /// Follow the run until it ends (exit 1 when it failed).
    #[arg(long)]
    pub watch: bool,
}

/// One run, as `runs` prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRow {
    pub name: String,
    /// `scheduled`, `run-now`, `delete` (a retention delete action), or "" (unknown).
    pub trigger: String,
    /// When the run started (the executor's record, else its creation).
    #[serde(serialize_with = "ser_time")]
    pub started: Option<DateTime<Utc>>,
    /// The tick it was scheduled for.
    #[serde(serialize_with = "ser_time")]
    pub scheduled: Option<DateTime<Utc>>,
    /// `pending` until the executor picked it up.
    pub state: String,
    /// Seconds from start to end (to now while it runs).
    pub duration_seconds: Option<i64>,
    /// Output artifacts by action.
    pub artifacts: BTreeMap<String, BTreeMap<String, Artifact>>,
    pub error: String,
    /// Of a backup run: `yes`, `failed` (its verification failed), `pending` (being
    /// verified) or `no`; "" for other ActionSets (delete actions, verifications).
    pub verified: String,
}

pub fn row(a: &ActionSet, now: DateTime<Utc>) -> RunRow {
    let labels = a.metadata.labels.clone().unwrap_or_default();
    let annotations = a.metadata.annotations.clone().unwrap_or_default();
    let artifacts = a
        .status
        .iter()
        .flat_map(|s| s.actions.iter())
        .filter(|x| !x.artifacts.is_empty())
        .map(|x| (x.name.clone(), x.artifacts.clone()))
        .collect();
    RunRow {
        name: a.metadata.name.clone().unwrap_or_default(),
        trigger: labels.get(LABEL_TRIGGER).cloned().unwrap_or_default(),
        started: started(a),
        scheduled: annotations
            .get(ANNOTATION_SCHEDULED_TIME)
            .and_then(|t| parse(t)),
        state: state_text(a),
        duration_seconds: duration_seconds(a, now),
        artifacts,
        error: a
            .status
            .as_ref()
            .map(|s| s.error.message.clone())
            .unwrap_or_default(),
        verified: String::new(),
    }
}

/// The VERIFIED cell of each run of `schedule` (see [`RunRow::verified`]), from the runs and
/// their verification ActionSets.
pub fn verification_cells(runs: &[ActionSet], schedule: &str) -> Vec<String> {
    let records: Vec<_> = runs.iter().map(|a| read::record(a, schedule)).collect();
    records
        .iter()
        .map(|r| {
            if !r.trigger.is_backup() {
                return String::new();
            }
            match (&r.verified, verify::progress(&r.name, &records, false)) {
                (Some(v), _) => if v.passed { "yes" } else { "failed" }.into(),
                (None, verify::Progress::NotStarted) => "no".into(),
                (None, _) => "pending".into(),
            }
        })
        .collect()
}

/// Below the table: the schedule's verification summary and what the next rotation removes.
pub fn schedule_footer(s: &ActionSchedule) -> String {
    let st = s.status.clone().unwrap_or_default();
    let mut out = String::new();
    if s.spec.verify.is_some() || st.last_verified_run.is_some() {
        let last = match (&st.last_verified_run, &st.last_verified_time) {
            (Some(r), Some(t)) => format!("{r} at {}", t.0),
            (Some(r), None) => r.clone(),
            _ => "none yet".into(),
        };
        out.push_str(&format!(
            "Verified: newest {last}; {} consecutive failed verification(s)\n",
            st.consecutive_verification_failures
        ));
    }
    if !st.retention.next_rotation.is_empty() {
        let next: Vec<String> = st
            .retention
            .next_rotation
            .iter()
            .map(|e| format!("{} ({})", e.name, e.reason))
            .collect();
        out.push_str(&format!("Next rotation removes: {}\n", next.join("; ")));
    }
    out
}

pub fn runs_table(rows: &[RunRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                time_cell(r.started),
                if r.trigger.is_empty() {
                    "-".into()
                } else {
                    r.trigger.clone()
                },
                r.state.clone(),
                r.duration_seconds
                    .map(output::duration)
                    .unwrap_or_else(|| "-".into()),
                if r.verified.is_empty() {
                    "-".into()
                } else {
                    r.verified.clone()
                },
                output::cell(&artifacts_cell(&r.artifacts), 80),
                output::cell(&r.error, 60),
            ]
        })
        .collect();
    output::table(
        &[
            "NAME",
            "STARTED",
            "TRIGGER",
            "STATE",
            "DURATION",
            "VERIFIED",
            "ARTIFACTS",
            "ERROR",
        ],
        &cells,
    )
}

/// The runs of `schedule` in the namespace, oldest first.
pub async fn fetch(conn: &Conn, schedule: &str) -> Result<Vec<ActionSet>, CtlError> {
    let ns = &conn.namespace;
    let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), ns);
    let lp = ListParams::default().labels(&format!(
        "{LABEL_SCHEDULE}={}",
        plan::schedule_label_value(schedule)
    ));
    let list = api
        .list(&lp)
        .await
        .map_err(CtlError::kube(format!("cannot list ActionSets in {ns}")))?;
    let mut runs: Vec<ActionSet> = list
        .items
        .into_iter()
        .filter(|a| identity::is_run_of(&a.metadata, schedule))
        .collect();
    runs.sort_by_key(|a| (started(a), a.metadata.name.clone()));
    Ok(runs)
}

pub async fn list(conn: &Conn, args: &RunsArgs, format: Format) -> Result<Done, CtlError> {
    let runs = fetch(conn, &args.schedule).await?;
    let scheds: Api<ActionSchedule> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let schedule = scheds
        .get_opt(&args.schedule)
        .await
        .map_err(CtlError::kube("cannot read the ActionSchedule"))?;
    if runs.is_empty() && schedule.is_none() {
        // A typo in the schedule's name should not read as "no runs yet".
        eprintln!(
            "no ActionSchedule {}/{} (and no runs of one by that name)",
            conn.namespace, args.schedule
        );
    }
    let now = Utc::now();
    let mut rows: Vec<RunRow> = runs.iter().map(|a| row(a, now)).collect();
    for (r, v) in rows
        .iter_mut()
        .zip(verification_cells(&runs, &args.schedule))
    {
        r.verified = v;
    }
    let footer = schedule.as_ref().map(schedule_footer).unwrap_or_default();
    let text = match format {
        Format::Table if rows.is_empty() => {
            format!(
                "No runs of {} in {}.\n{footer}",
                args.schedule, conn.namespace
            )
        }
        Format::Table => format!("{}{footer}", runs_table(&rows)),
        f => output::structured(f, &rows)?,
    };
    output::print(&text)?;
    Ok(Done::Ok)
}

/// A token the schedule has not seen: the time, to the nanosecond.
fn new_token(now: DateTime<Utc>) -> String {
    format!("ctl-{}", now.format("%Y%m%dT%H%M%S%.9fZ"))
}

pub async fn run_now(conn: &Conn, args: &RunNowArgs, format: Format) -> Result<Done, CtlError> {
    let ns = &conn.namespace;
    let name = &args.schedule;
    let api: Api<ActionSchedule> = Api::namespaced(conn.client.clone(), ns);
    api.get(name).await.map_err(CtlError::kube(format!(
        "cannot read ActionSchedule {ns}/{name}"
    )))?;
    let token = new_token(Utc::now());
    let patch = json!({"metadata": {"annotations": {ANNOTATION_RUN_NOW: token}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(CtlError::kube(format!(
            "cannot annotate ActionSchedule {ns}/{name}"
        )))?;
    let run = plan::run_now_name(name, &token);
    let line = format!("actionschedule {name} runs now: actionset {run}\n");
    match format {
        Format::Table => output::print(&line)?,
        f if !args.watch => output::print(&output::structured(
            f,
            &json!({"schedule": name, "token": token, "actionSet": run}),
        )?)?,
        _ => eprint!("{line}"),
    }
    if args.watch {
        // The scheduler creates the run; give it a minute to appear.
        return super::watch::follow(conn, &run, format, Some(std::time::Duration::from_secs(60)))
            .await;
    }
    Ok(Done::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: serde_json::Value) -> ActionSet {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_row_has_time_trigger_state_duration_and_artifacts() {
        let a = run(json!({
            "metadata": {"name": "db-20260101000000", "creationTimestamp": "2026-01-01T00:00:01Z",
                "labels": {LABEL_TRIGGER: "scheduled"},
                "annotations": {
                    ANNOTATION_SCHEDULED_TIME: "2026-01-01T00:00:00+00:00",
                    "blueprint-operator.io/executor": "{\"actions\":[{\"time\":\"2026-01-01T00:00:02Z\",\"finished\":true}]}"}},
            "status": {"state": "complete", "error": {"message": ""},
                "progress": {"lastTransitionTime": "2026-01-01T00:01:07Z"},
                "actions": [{"name": "backup", "blueprint": "bp", "object": {"kind": "deployment", "name": "a"},
                    "artifacts": {"cloudObject": {"keyValue": {"path": "/b/1"}}},
                    "deferPhase": {"name": "", "state": ""}}]}
        }));
        let now = parse("2026-01-02T00:00:00Z").unwrap();
        let r = row(&a, now);
        assert_eq!(r.trigger, "scheduled");
        assert_eq!(r.state, "complete");
        assert_eq!(r.started, parse("2026-01-01T00:00:02Z"));
        assert_eq!(r.duration_seconds, Some(65));
        assert_eq!(artifacts_cell(&r.artifacts), "cloudObject.path=/b/1");
        let t = runs_table(&[r]);
        assert!(
            t.contains("2026-01-01T00:00:02Z   scheduled   complete   1m5s       -"),
            "{t}"
        );
        // Not picked up yet: pending, no duration; running: up to now.
        let p =
            run(json!({"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}}));
        assert_eq!(
            (row(&p, now).state.as_str(), row(&p, now).duration_seconds),
            ("pending", None)
        );
        let mut running = a.clone();
        running.status.as_mut().unwrap().state = crate::model::State::Running;
        assert_eq!(row(&running, now).duration_seconds, Some(86398));
    }

    #[test]
    fn the_verified_column_says_yes_failed_pending_or_no() {
        use crate::model::{ANNOTATION_SCHEDULE, LABEL_SCHEDULE, LABEL_VERIFIED, LABEL_VERIFY_FOR};
        let a = |name: &str, trigger: &str, extra: serde_json::Value| {
            let mut v = json!({"metadata": {"name": name,
                "labels": {LABEL_SCHEDULE: "db", LABEL_TRIGGER: trigger},
                "annotations": {ANNOTATION_SCHEDULE: "db"}},
                "status": {"state": "complete"}});
            json_patch_merge(&mut v, extra);
            run(v)
        };
        let runs = [
            a(
                "db-1",
                "scheduled",
                json!({"metadata": {"labels": {LABEL_VERIFIED: "true"}}}),
            ),
            a(
                "db-2",
                "scheduled",
                json!({"metadata": {"labels": {LABEL_VERIFIED: "false"}}}),
            ),
            a("db-3", "run-now", json!({})),
            a(
                "db-3-verify",
                "verify",
                json!({"metadata": {"labels": {LABEL_VERIFY_FOR: "db-3"}},
                "status": {"state": "running"}}),
            ),
            a("db-4", "scheduled", json!({})),
        ];
        assert_eq!(
            verification_cells(&runs, "db"),
            ["yes", "failed", "pending", "", "no"]
        );
    }

    fn json_patch_merge(v: &mut serde_json::Value, patch: serde_json::Value) {
        match (v, patch) {
            (serde_json::Value::Object(m), serde_json::Value::Object(p)) => {
                for (k, pv) in p {
                    json_patch_merge(m.entry(k).or_insert(serde_json::Value::Null), pv);
                }
            }
            (v, p) => *v = p,
        }
    }

    #[test]
    fn run_now_tokens_are_new_each_time() {
        let t = parse("2026-01-01T00:00:00Z").unwrap();
        assert_ne!(
            new_token(t),
            new_token(t + chrono::Duration::nanoseconds(1))
        );
    }
}
