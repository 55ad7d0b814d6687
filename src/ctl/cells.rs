//! What one run reads as in `ctl runs`, `describe` and `watch`: its record, state text,
//! start, end and duration, and its artifacts and times as table cells (pure).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::executor::machine::Record;
use crate::model::labels::ANNOTATION_EXECUTOR_RECORD;
use crate::model::{ActionSet, Artifact};

/// RFC 3339 in UTC (chrono's serde support is not enabled).
pub fn ser_time<S: serde::Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        None => s.serialize_none(),
    }
}

pub fn parse(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// When the ActionSet's actions started (the executor records each action's
/// `.Time`), else when it was created.
pub fn started(a: &ActionSet) -> Option<DateTime<Utc>> {
    record(a)
        .actions
        .iter()
        .filter_map(|r| parse(&r.time))
        .min()
        .or_else(|| {
            a.metadata
                .creation_timestamp
                .as_ref()
                .and_then(|t| parse(&t.0.to_string()))
        })
}

/// The executor's record of the ActionSet (empty before it started it).
pub fn record(a: &ActionSet) -> Record {
    a.metadata
        .annotations
        .as_ref()
        .and_then(|m| m.get(ANNOTATION_EXECUTOR_RECORD))
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

/// When it ended (its last transition, once `complete` or `failed`).
pub fn ended(a: &ActionSet) -> Option<DateTime<Utc>> {
    let st = a.status.as_ref().filter(|s| s.state.is_terminal())?;
    st.progress.last_transition_time.as_deref().and_then(parse)
}

pub fn duration_seconds(a: &ActionSet, now: DateTime<Utc>) -> Option<i64> {
    let start = started(a)?;
    let end = match a.state() {
        Some(s) if s.is_terminal() => ended(a)?,
        Some(_) => now,
        None => return None,
    };
    Some((end - start).num_seconds().max(0))
}

pub fn state_text(a: &ActionSet) -> String {
    match a.state().map(|s| s.as_str()) {
        None | Some("") => "pending".into(),
        Some(s) => s.into(),
    }
}

/// `name.key=value` of each output artifact (the kopia snapshot as `name=<id>`).
pub fn artifacts_cell(arts: &BTreeMap<String, BTreeMap<String, Artifact>>) -> String {
    let mut parts = Vec::new();
    for by_name in arts.values() {
        for (name, a) in by_name {
            for (k, v) in &a.key_value {
                parts.push(format!("{name}.{k}={v}"));
            }
            if !a.kopia_snapshot.is_empty() {
                parts.push(format!("{name}={}", a.kopia_snapshot));
            }
        }
    }
    parts.join(",")
}

pub fn time_cell(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "-".into())
}
