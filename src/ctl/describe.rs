//! `ctl describe ACTIONSET`: what a run did, from its status, the executor's
//! record (annotation `blueprint-operator.io/executor`) and its Events:
//! each action's phases with state, time and output, the error, and the
//! deferPhase's outcome (which of the four: after success or failure, itself
//! complete or failed).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use clap::Args;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use serde::Serialize;
use serde_json::{Map, Value};

use super::cells::{self, time_cell};
use super::connect::Conn;
use super::output::{self, Format};
use super::{CtlError, Done};
use crate::executor::machine::{ActionRecord, outcome};
use crate::model::labels::OUTPUT_POD_LOGS as POD_LOGS;
use crate::model::{
    ANNOTATION_SCHEDULE, ActionSet, ActionStatus, Artifact, LABEL_TRIGGER, ObjectReference, Phase,
    State,
};

#[derive(Clone, Debug, Args)]
pub struct DescribeArgs {
    /// The ActionSet.
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    pub name: String,
    pub namespace: String,
    pub state: String,
    #[serde(serialize_with = "cells::ser_time")]
    pub started: Option<DateTime<Utc>>,
    #[serde(serialize_with = "cells::ser_time")]
    pub ended: Option<DateTime<Utc>>,
    pub duration_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trigger: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<String>,
    /// A backup run's verification (`verified at T by X`, `failed at T: X`), or what a
    /// verification ActionSet verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<String>,
    /// A pending exclusive run: `<namespace>/<name>` of the run it waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    pub error: String,
    pub actions: Vec<ActionView>,
    pub events: Vec<EventRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionView {
    pub name: String,
    pub blueprint: String,
    pub object: String,
    pub phases: Vec<PhaseView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defer_phase: Option<DeferView>,
    pub input_artifacts: BTreeMap<String, Artifact>,
    pub artifacts: BTreeMap<String, Artifact>,
    /// The main error ("" when the main phases succeeded).
    pub error: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub failed_phase: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseView {
    pub name: String,
    pub state: String,
    pub changed: Option<String>,
    pub output: Map<String, Value>,
    /// Last log lines of a failed step's pods, by pod and container (kept
    /// by the executor before it deleted them).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub pod_logs: Map<String, Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeferView {
    #[serde(flatten)]
    pub phase: PhaseView,
    /// When and how it ran, in words.
    pub outcome: String,
    pub error: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    pub time: Option<String>,
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub note: String,
}

pub fn object_text(o: &ObjectReference) -> String {
    let kind = if o.kind.is_empty() {
        [
            o.group.as_str(),
            o.api_version.as_str(),
            o.resource.as_str(),
        ]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("/")
    } else {
        o.kind.clone()
    };
    if o.namespace.is_empty() || o.kind.eq_ignore_ascii_case("namespace") {
        format!("{kind} {}", o.name)
    } else {
        format!("{kind} {}/{}", o.namespace, o.name)
    }
}

fn phase_view(p: &Phase) -> PhaseView {
    let mut output = p.output.clone();
    let pod_logs = match output.remove(POD_LOGS) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    PhaseView {
        pod_logs,
        name: p.name.clone(),
        state: if p.state == State::Unset {
            "pending".into()
        } else {
            p.state.as_str().into()
        },
        changed: p.progress.last_transition_time.clone(),
        output,
    }
}

/// The deferPhase's outcome in words.
pub fn defer_outcome(st: &ActionStatus, rec: &ActionRecord) -> String {
    let o = outcome(st, rec);
    let after = if o.state == "complete" {
        "after the phases succeeded".to_string()
    } else if o.failed_phase.is_empty() {
        "after the action failed before its phases ran".to_string()
    } else {
        format!("after phase {} failed", o.failed_phase)
    };
    match st.defer_phase.state {
        State::Complete => format!("complete, ran {after}"),
        State::Failed => format!("failed, ran {after}"),
        State::Running => format!("running {after}"),
        _ => "not run yet: it runs after the phases end".into(),
    }
}

pub fn describe(a: &ActionSet, events: Vec<EventRow>, now: DateTime<Utc>) -> Description {
    let rec = cells::record(a);
    let specs = a
        .spec
        .as_ref()
        .map(|s| s.actions.as_slice())
        .unwrap_or_default();
    let actions = a
        .status
        .iter()
        .flat_map(|s| s.actions.iter())
        .enumerate()
        .map(|(i, st)| {
            let r = rec.actions.get(i).cloned().unwrap_or_default();
            let defer_phase = (!st.defer_phase.name.is_empty()).then(|| DeferView {
                phase: phase_view(&st.defer_phase),
                outcome: defer_outcome(st, &r),
                error: r.defer_error.clone(),
            });
            ActionView {
                name: st.name.clone(),
                blueprint: st.blueprint.clone(),
                object: object_text(&st.object),
                phases: st.phases.iter().map(phase_view).collect(),
                defer_phase,
                input_artifacts: specs
                    .iter()
                    .find(|s| s.name == st.name && s.object == st.object)
                    .or(specs.get(i))
                    .map(|s| s.artifacts.clone())
                    .unwrap_or_default(),
                artifacts: st.artifacts.clone(),
                error: r.error.clone(),
                failed_phase: r.failed_phase.clone(),
            }
        })
        .collect();
    let labels = a.metadata.labels.clone().unwrap_or_default();
    let annotations = a.metadata.annotations.clone().unwrap_or_default();
    Description {
        name: a.metadata.name.clone().unwrap_or_default(),
        namespace: a.metadata.namespace.clone().unwrap_or_default(),
        state: cells::state_text(a),
        started: cells::started(a),
        ended: cells::ended(a),
        duration_seconds: cells::duration_seconds(a, now),
        schedule: annotations.get(ANNOTATION_SCHEDULE).cloned(),
        trigger: labels.get(LABEL_TRIGGER).cloned().unwrap_or_default(),
        restored_from: annotations
            .get(crate::model::labels::ANNOTATION_RESTORED_FROM)
            .cloned(),
        verification: verification_text(a),
        waiting_for: annotations
            .get(crate::model::labels::ANNOTATION_WAITING_FOR)
            .filter(|_| !a.state().is_some_and(|s| s.is_terminal()))
            .cloned(),
        error: a
            .status
            .as_ref()
            .map(|s| s.error.message.clone())
            .unwrap_or_default(),
        actions,
        events,
    }
}

/// [`Description::verification`].
fn verification_text(a: &ActionSet) -> Option<String> {
    if let Some(v) = crate::scheduler::verify::Verified::from_meta(&a.metadata) {
        let what = if v.passed {
            "verified"
        } else {
            "verification failed"
        };
        return Some(format!("{what} at {} by {}", v.at.to_rfc3339(), v.by));
    }
    let labels = a.metadata.labels.as_ref()?;
    labels
        .get(crate::model::LABEL_VERIFY_FOR)
        .map(|b| format!("verifies backup run {b}"))
}

fn kv_cell(m: &Map<String, Value>) -> String {
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn artifacts_text(arts: &BTreeMap<String, Artifact>) -> String {
    cells::artifacts_cell(&BTreeMap::from([(String::new(), arts.clone())]))
}

/// The table form.
pub fn text(d: &Description) -> String {
    let mut out = String::new();
    let mut field = |k: &str, v: &str| out.push_str(&format!("{:<15}{v}\n", format!("{k}:")));
    field("Name", &d.name);
    field("Namespace", &d.namespace);
    field("State", &d.state);
    field("Started", &time_cell(d.started));
    if d.ended.is_some() {
        field("Ended", &time_cell(d.ended));
    }
    if let Some(s) = d.duration_seconds {
        field("Duration", &output::duration(s));
    }
    if let Some(s) = &d.schedule {
        field("Schedule", &format!("{s} (trigger {})", d.trigger));
    }
    if let Some(f) = &d.restored_from {
        field("Restored from", f);
    }
    if let Some(v) = &d.verification {
        field("Verification", v);
    }
    if let Some(w) = &d.waiting_for {
        field(
            "Waiting for",
            &format!("{w} (exclusive run on the same object)"),
        );
    }
    if !d.error.is_empty() {
        field("Error", &d.error);
    }
    for a in &d.actions {
        out.push_str(&format!(
            "\nAction {} (Blueprint {}, {})\n",
            a.name, a.blueprint, a.object
        ));
        if !a.input_artifacts.is_empty() {
            out.push_str(&format!(
                "  Input artifacts: {}\n",
                artifacts_text(&a.input_artifacts)
            ));
        }
        let mut rows: Vec<Vec<String>> = a
            .phases
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    p.state.clone(),
                    p.changed.clone().unwrap_or_else(|| "-".into()),
                    output::cell(&kv_cell(&p.output), 80),
                ]
            })
            .collect();
        if let Some(dp) = &a.defer_phase {
            rows.push(vec![
                format!("{} (deferPhase)", dp.phase.name),
                dp.phase.state.clone(),
                dp.phase.changed.clone().unwrap_or_else(|| "-".into()),
                output::cell(&kv_cell(&dp.phase.output), 80),
            ]);
        }
        for line in output::table(&["PHASE", "STATE", "CHANGED", "OUTPUT"], &rows).lines() {
            out.push_str(&format!("  {line}\n"));
        }
        if !a.error.is_empty() {
            out.push_str(&format!("  Error: {}\n", a.error));
        }
        let steps = a
            .phases
            .iter()
            .chain(a.defer_phase.iter().map(|d| &d.phase));
        for p in steps {
            for (pod, containers) in &p.pod_logs {
                for (c, text) in containers.as_object().into_iter().flatten() {
                    out.push_str(&format!(
                        "  Last log lines of {} (pod {pod}, container {c}):\n",
                        p.name
                    ));
                    out.push_str(&indent(text.as_str().unwrap_or_default()));
                }
            }
        }
        if let Some(dp) = &a.defer_phase {
            out.push_str(&format!("  deferPhase {}: {}\n", dp.phase.name, dp.outcome));
            if !dp.error.is_empty() {
                out.push_str(&format!("  deferPhase error: {}\n", dp.error));
            }
        }
        if !a.artifacts.is_empty() {
            out.push_str(&format!(
                "  Output artifacts: {}\n",
                artifacts_text(&a.artifacts)
            ));
        }
    }
    if !d.events.is_empty() {
        out.push_str("\nEvents:\n");
        let rows: Vec<Vec<String>> = d
            .events
            .iter()
            .map(|e| {
                vec![
                    e.time.clone().unwrap_or_else(|| "-".into()),
                    e.type_.clone(),
                    e.reason.clone(),
                    e.note.clone(),
                ]
            })
            .collect();
        for line in output::table(&["TIME", "TYPE", "REASON", "NOTE"], &rows).lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// The Events about ActionSet `name` (uid `uid`), oldest first.
pub async fn events(conn: &Conn, name: &str, uid: Option<&str>) -> Result<Vec<EventRow>, CtlError> {
    let api: Api<Event> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(CtlError::kube(format!(
            "cannot list Events in {}",
            conn.namespace
        )))?;
    let mut rows: Vec<(String, EventRow)> = list
        .items
        .into_iter()
        .filter(|e| {
            // About the ActionSet, or about a pod of one of its phases (kept log lines).
            [e.regarding.as_ref(), e.related.as_ref()]
                .into_iter()
                .flatten()
                .any(|r| {
                    r.kind.as_deref() == Some("ActionSet")
                        && r.name.as_deref() == Some(name)
                        && (uid.is_none() || r.uid.is_none() || r.uid.as_deref() == uid)
                })
        })
        .map(|e| {
            let time = e
                .event_time
                .as_ref()
                .map(|t| t.0.to_string())
                .or_else(|| {
                    e.deprecated_last_timestamp
                        .as_ref()
                        .map(|t| t.0.to_string())
                })
                .or_else(|| {
                    e.metadata
                        .creation_timestamp
                        .as_ref()
                        .map(|t| t.0.to_string())
                });
            let key = format!(
                "{}{}",
                time.clone().unwrap_or_default(),
                e.metadata.name.clone().unwrap_or_default()
            );
            (
                key,
                EventRow {
                    time,
                    type_: e.type_.unwrap_or_default(),
                    reason: e.reason.unwrap_or_default(),
                    note: e.note.unwrap_or_default(),
                },
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

pub async fn run(conn: &Conn, args: &DescribeArgs, format: Format) -> Result<Done, CtlError> {
    let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let a = api.get(&args.name).await.map_err(CtlError::kube(format!(
        "cannot read ActionSet {}/{}",
        conn.namespace, args.name
    )))?;
    let evs = events(conn, &args.name, a.metadata.uid.as_deref()).await?;
    let d = describe(&a, evs, Utc::now());
    let shown = match format {
        Format::Table => text(&d),
        f => output::structured(f, &d)?,
    };
    output::print(&shown)?;
    Ok(Done::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failed_run() -> ActionSet {
        serde_json::from_value(json!({
            "metadata": {"name": "b-1", "namespace": "prod", "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {ANNOTATION_SCHEDULE: "nightly",
                    "blueprint-operator.io/executor": "{\"actions\":[{\"time\":\"2026-01-01T00:00:01Z\",\"error\":\"exit 1\",\"failedPhase\":\"upload\",\"finished\":true}]}"},
                "labels": {LABEL_TRIGGER: "scheduled"}},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "deployment", "name": "app", "namespace": "prod"}}]},
            "status": {"state": "failed", "error": {"message": "exit 1"},
                "progress": {"lastTransitionTime": "2026-01-01T00:00:31Z"},
                "actions": [{"name": "backup", "blueprint": "bp",
                    "object": {"kind": "deployment", "name": "app", "namespace": "prod"},
                    "phases": [
                        {"name": "dump", "state": "complete", "output": {"path": "/x"},
                         "progress": {"lastTransitionTime": "2026-01-01T00:00:10Z"}},
                        {"name": "upload", "state": "failed", "progress": {},
                         "output": {POD_LOGS: {"prod/upload-x": {"main": "no space left\nexit 1"}}}},
                        {"name": "verify", "state": "pending", "progress": {}}],
                    "deferPhase": {"name": "scaleUp", "state": "complete", "progress": {}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_failed_run_reads_phase_by_phase_with_the_defer_outcome() {
        let d = describe(&failed_run(), vec![], Utc::now());
        assert_eq!(d.state, "failed");
        assert_eq!(d.duration_seconds, Some(30));
        assert_eq!(d.schedule.as_deref(), Some("nightly"));
        let a = &d.actions[0];
        assert_eq!(a.failed_phase, "upload");
        assert_eq!(a.phases[0].output["path"], "/x");
        assert_eq!(
            a.defer_phase.as_ref().unwrap().outcome,
            "complete, ran after phase upload failed"
        );
        let t = text(&d);
        assert!(
            t.contains("Schedule:      nightly (trigger scheduled)"),
            "{t}"
        );
        let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert!(
            t.lines()
                .any(|l| words(l) == ["dump", "complete", "2026-01-01T00:00:10Z", "path=/x"]),
            "{t}"
        );
        assert!(t.contains("path=/x"), "{t}");
        assert!(t.contains("scaleUp (deferPhase)"), "{t}");
        assert!(
            t.contains("deferPhase scaleUp: complete, ran after phase upload failed"),
            "{t}"
        );
        assert!(t.contains("Error:         exit 1"), "{t}");
        assert_eq!(
            a.phases[1].pod_logs["prod/upload-x"]["main"],
            "no space left\nexit 1"
        );
        assert!(a.phases[1].output.is_empty());
        assert!(
            t.contains("  Last log lines of upload (pod prod/upload-x, container main):\n    no space left\n    exit 1\n"),
            "{t}"
        );
    }

    #[test]
    fn objects_read_as_kind_and_name() {
        let o = ObjectReference {
            kind: "deployment".into(),
            name: "app".into(),
            namespace: "prod".into(),
            ..ObjectReference::default()
        };
        assert_eq!(object_text(&o), "deployment prod/app");
        let n = ObjectReference {
            kind: "namespace".into(),
            name: "prod".into(),
            namespace: "prod".into(),
            ..ObjectReference::default()
        };
        assert_eq!(object_text(&n), "namespace prod");
    }
}
