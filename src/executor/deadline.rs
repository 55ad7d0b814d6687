//! Phase and action deadlines, as pure code: which timeouts
//! apply to an action, when a phase or the deferPhase must have ended, and
//! the message that says so. Deadlines are computed from the start times
//! recorded in the ActionSet (a phase's `progress.lastTransitionTime` when it
//! turned `running`, the action's `.Time`), never from in-memory timers, so
//! a restarted controller keeps them.
//!
//! - every main phase and the deferPhase get the phase timeout, counted from
//!   their own start;
//! - the main phases together get the action timeout, counted from the
//!   action's start; the deferPhase is outside it (it must still run when the
//!   action ran out of time) and has only its own phase timeout;
//! - a timeout of `0` means none.
//!
//! Where the values come from, most specific first: for one phase, the
//! Blueprint annotation [`ANNOTATION_PHASE_TIMEOUTS`]
//! (`{"<action>": {"<phase>": "2h"}}`: annotations survive Kanister's CRD,
//! which prunes unknown phase fields); then the ActionSet's
//! `spec.actions[].options` `phaseTimeout` / `actionTimeout`; then the
//! controller flags `--phase-timeout` / `--action-timeout`. Values use Go
//! duration syntax, as `kubectl` and Kanister's own flags take them.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// ActionSet option (`spec.actions[].options`) overriding the phase timeout.
pub const PHASE_OPTION: &str = "phaseTimeout";
/// ActionSet option overriding the action timeout.
pub const ACTION_OPTION: &str = "actionTimeout";
use crate::duration;
use crate::model::labels::ANNOTATION_PHASE_TIMEOUTS;
/// Controller flag giving the default phase timeout.
pub const PHASE_FLAG: &str = "--phase-timeout";
/// Controller flag giving the default action timeout.
pub const ACTION_FLAG: &str = "--action-timeout";

/// The controller's defaults (`Duration::ZERO`: no timeout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    pub phase: Duration,
    pub action: Duration,
}

impl Default for Defaults {
    /// 4h per phase (Velero's default for its data-mover operations: long
    /// enough for a restic backup of several hundred GB, short enough that a
    /// hung phase does not leave an application scaled down for a day); no
    /// action timeout (the phase timeout already bounds every action).
    fn default() -> Self {
        Defaults {
            phase: Duration::from_secs(4 * 3600),
            action: Duration::ZERO,
        }
    }
}

/// Where a timeout was set, for the message that reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The controller flag (`--phase-timeout`, `--action-timeout`).
    Flag,
    /// The ActionSet option (`phaseTimeout`, `actionTimeout`).
    ActionSet,
    /// The Blueprint annotation [`ANNOTATION_PHASE_TIMEOUTS`] (one phase).
    Blueprint,
}

/// One timeout in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub after: Duration,
    pub source: Source,
}

/// The timeouts of one action (`None`: no timeout).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// Every phase and the deferPhase, unless `phases` names it.
    pub phase: Option<Limit>,
    pub action: Option<Limit>,
    /// Per phase name, from the Blueprint annotation (`None`: disabled).
    pub phases: BTreeMap<String, Option<Limit>>,
}

impl Timeouts {
    /// The timeout of the phase (or deferPhase) called `name`.
    pub fn phase_limit(&self, name: &str) -> Option<&Limit> {
        match self.phases.get(name) {
            Some(own) => own.as_ref(),
            None => self.phase.as_ref(),
        }
    }
}

/// The timeouts of action `action` from the controller defaults, the
/// action's options and its Blueprint's annotations. A value that is not a
/// duration is reported (the action should fail with it) and the next
/// source is used in its place, so the deferPhase still has a bound.
pub fn resolve(
    defaults: Defaults,
    options: &BTreeMap<String, String>,
    blueprint_annotations: Option<&BTreeMap<String, String>>,
    action: &str,
) -> (Timeouts, Option<String>) {
    let mut problems = Vec::new();
    let mut pick = |option: &str, default: Duration| -> Option<Limit> {
        let from_flag = (!default.is_zero()).then_some(Limit {
            after: default,
            source: Source::Flag,
        });
        let Some(text) = options.get(option) else {
            return from_flag;
        };
        match duration::parse_timeout(text) {
            Ok(d) if d.is_zero() => None,
            Ok(d) => Some(Limit {
                after: d,
                source: Source::ActionSet,
            }),
            Err(e) => {
                problems.push(format!(
                    "ActionSet option {option} {text:?} is not a duration ({e}): write a Go duration such as 30m, 2h or 1h30m (0 disables the timeout)"
                ));
                from_flag
            }
        }
    };
    let mut t = Timeouts {
        phase: pick(PHASE_OPTION, defaults.phase),
        action: pick(ACTION_OPTION, defaults.action),
        phases: BTreeMap::new(),
    };
    if let Some(text) = blueprint_annotations.and_then(|a| a.get(ANNOTATION_PHASE_TIMEOUTS)) {
        match blueprint_phases(text, action) {
            Ok(phases) => t.phases = phases,
            Err(e) => problems.push(format!(
                "Blueprint annotation {ANNOTATION_PHASE_TIMEOUTS}: {e}; write {{\"<action>\": {{\"<phase>\": \"2h\"}}}} with Go durations (0 disables the timeout)"
            )),
        }
    }
    let problem = (!problems.is_empty()).then(|| problems.join("; "));
    (t, problem)
}

/// What is wrong with the Blueprint's per-phase timeouts annotation.
#[derive(Debug, thiserror::Error)]
enum AnnotationError {
    #[error("not a JSON object ({0})")]
    Json(#[source] serde_json::Error),
    #[error("the value of {0:?} is not an object of phase names")]
    NotAnObject(String),
    #[error("{action}.{phase} is not a string")]
    NotAString { action: String, phase: String },
    #[error("{action}.{phase} {text:?} is not a duration ({error})")]
    Duration {
        action: String,
        phase: String,
        text: String,
        error: duration::DurationError,
    },
}

/// The per-phase timeouts of `action` in the Blueprint annotation (other
/// actions' entries are not checked here: their own ActionSets report them).
fn blueprint_phases(
    text: &str,
    action: &str,
) -> Result<BTreeMap<String, Option<Limit>>, AnnotationError> {
    let all: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(text).map_err(AnnotationError::Json)?;
    let Some(entry) = all.get(action) else {
        return Ok(BTreeMap::new());
    };
    let phases = entry
        .as_object()
        .ok_or_else(|| AnnotationError::NotAnObject(action.to_string()))?;
    let mut out = BTreeMap::new();
    for (phase, v) in phases {
        let text = v.as_str().ok_or_else(|| AnnotationError::NotAString {
            action: action.to_string(),
            phase: phase.clone(),
        })?;
        let d = duration::parse_timeout(text).map_err(|error| AnnotationError::Duration {
            action: action.to_string(),
            phase: phase.clone(),
            text: text.to_string(),
            error,
        })?;
        let limit = (!d.is_zero()).then_some(Limit {
            after: d,
            source: Source::Blueprint,
        });
        out.insert(phase.clone(), limit);
    }
    Ok(out)
}

/// When something must have ended, and what to record if it did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadline {
    pub at: DateTime<Utc>,
    pub message: String,
}

/// Reads a recorded RFC 3339 time; `None` if missing or unreadable.
pub fn parse_time(t: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn set_by(limit: &Limit, option: &str, flag: &str) -> String {
    match limit.source {
        Source::Flag => format!("set by the controller flag {flag}"),
        Source::ActionSet => format!("set by the ActionSet option {option}"),
        Source::Blueprint => format!("set by the Blueprint annotation {ANNOTATION_PHASE_TIMEOUTS}"),
    }
}

fn raise_with(limit: &Limit, option: &str, flag: &str) -> String {
    match limit.source {
        Source::Blueprint => {
            "raise it in that annotation of the Blueprint (a Go duration such as 2h; 0 disables it)"
                .into()
        }
        _ => format!(
            "raise it with the ActionSet option spec.actions[].options.{option} (a Go duration such as 2h; 0 disables it) or the controller flag {flag}"
        ),
    }
}

fn add(start: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| start.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn phase_deadline(limit: &Limit, what: &str, name: &str, start: DateTime<Utc>) -> Deadline {
    Deadline {
        at: add(start, limit.after),
        message: format!(
            "{what} {name} exceeded its {} timeout ({}) and was cancelled; {}",
            duration::format(limit.after),
            set_by(limit, PHASE_OPTION, PHASE_FLAG),
            raise_with(limit, PHASE_OPTION, PHASE_FLAG)
        ),
    }
}

fn action_deadline(
    t: &Timeouts,
    action: &str,
    action_start: DateTime<Utc>,
    what: String,
) -> Option<Deadline> {
    let limit = t.action.as_ref()?;
    Some(Deadline {
        at: add(action_start, limit.after),
        message: format!(
            "action {action} exceeded its {} timeout ({}) {what}; {}",
            duration::format(limit.after),
            set_by(limit, ACTION_OPTION, ACTION_FLAG),
            raise_with(limit, ACTION_OPTION, ACTION_FLAG)
        ),
    })
}

/// The deadline of main phase `phase` of `action`: the earlier of its own
/// (from `phase_start`) and the action's (from `action_start`). A missing
/// start time counts from `now`.
pub fn for_phase(
    t: &Timeouts,
    action: &str,
    action_start: Option<DateTime<Utc>>,
    phase: &str,
    phase_start: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Deadline> {
    let own = t
        .phase_limit(phase)
        .map(|l| phase_deadline(l, "phase", phase, phase_start.unwrap_or(now)));
    let whole = action_deadline(
        t,
        action,
        action_start.unwrap_or(now),
        format!("while phase {phase} was running, which was cancelled"),
    );
    match (own, whole) {
        (Some(a), Some(b)) => Some(if b.at < a.at { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The deadline of the deferPhase: its own phase timeout only (the action
/// timeout does not cut the cleanup short).
pub fn for_defer(
    t: &Timeouts,
    defer: &str,
    defer_start: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Deadline> {
    t.phase_limit(defer)
        .map(|l| phase_deadline(l, "deferPhase", defer, defer_start.unwrap_or(now)))
}

/// Before main phase `next` starts: the message to stop the action with if
/// its timeout has already passed.
pub fn action_expired(
    t: &Timeouts,
    action: &str,
    action_start: Option<DateTime<Utc>>,
    next: &str,
    now: DateTime<Utc>,
) -> Option<String> {
    let d = action_deadline(
        t,
        action,
        action_start.unwrap_or(now),
        format!("before phase {next} started; it and the phases after it were not run"),
    )?;
    (d.at <= now).then_some(d.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        parse_time(Some(s)).unwrap()
    }

    fn res(d: Defaults, o: &BTreeMap<String, String>) -> (Timeouts, Option<String>) {
        resolve(d, o, None, "backup")
    }

    fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_override_flags_and_zero_disables() {
        let d = Defaults {
            phase: Duration::from_secs(3600),
            action: Duration::ZERO,
        };
        let (t, p) = res(d, &BTreeMap::new());
        assert_eq!(p, None);
        assert_eq!(
            t.phase,
            Some(Limit {
                after: Duration::from_secs(3600),
                source: Source::Flag
            })
        );
        assert_eq!(t.action, None);

        let (t, p) = res(d, &opts(&[("phaseTimeout", "0"), ("actionTimeout", "2h")]));
        assert_eq!(p, None);
        assert_eq!(t.phase, None);
        assert_eq!(
            t.action,
            Some(Limit {
                after: Duration::from_secs(7200),
                source: Source::ActionSet
            })
        );
    }

    #[test]
    fn a_bad_option_is_reported_and_the_default_kept() {
        let (t, p) = res(
            Defaults::default(),
            &opts(&[("phaseTimeout", "10 minutes")]),
        );
        let p = p.expect("problem reported");
        assert!(
            p.contains("ActionSet option phaseTimeout \"10 minutes\""),
            "{p}"
        );
        assert!(p.contains("such as 30m"), "{p}");
        // The deferPhase keeps a bound.
        assert_eq!(
            t.phase.map(|l| l.after),
            Some(Duration::from_secs(4 * 3600))
        );
    }

    #[test]
    fn phase_deadline_counts_from_the_recorded_start() {
        let (t, _) = res(Defaults::default(), &opts(&[("phaseTimeout", "30m")]));
        let now = at("2026-01-01T12:00:00Z");
        // Started 10 minutes ago (e.g. before a controller restart): 20 left.
        let d = for_phase(
            &t,
            "backup",
            Some(at("2026-01-01T11:00:00Z")),
            "dump",
            Some(at("2026-01-01T11:50:00Z")),
            now,
        )
        .unwrap();
        assert_eq!(d.at, at("2026-01-01T12:20:00Z"));
        assert_eq!(
            d.message,
            "phase dump exceeded its 30m timeout (set by the ActionSet option phaseTimeout) and was cancelled; raise it with the ActionSet option spec.actions[].options.phaseTimeout (a Go duration such as 2h; 0 disables it) or the controller flag --phase-timeout"
        );
        // No recorded start: counted from now.
        let d = for_phase(&t, "backup", None, "dump", None, now).unwrap();
        assert_eq!(d.at, at("2026-01-01T12:30:00Z"));
    }

    #[test]
    fn the_earlier_of_phase_and_action_deadline_wins() {
        let d = Defaults {
            phase: Duration::from_secs(3600),
            action: Duration::from_secs(2 * 3600),
        };
        let (t, _) = res(d, &BTreeMap::new());
        let now = at("2026-01-01T12:00:00Z");
        let action_start = Some(at("2026-01-01T10:30:00Z"));
        let dl = for_phase(
            &t,
            "backup",
            action_start,
            "copy",
            Some(at("2026-01-01T11:45:00Z")),
            now,
        )
        .unwrap();
        assert_eq!(dl.at, at("2026-01-01T12:30:00Z"));
        assert!(
            dl.message.starts_with(
                "action backup exceeded its 2h timeout (set by the controller flag --action-timeout) while phase copy was running"
            ),
            "{}",
            dl.message
        );
        // A phase started early enough ends on its own deadline.
        let dl = for_phase(
            &t,
            "backup",
            action_start,
            "copy",
            Some(at("2026-01-01T10:40:00Z")),
            now,
        )
        .unwrap();
        assert_eq!(dl.at, at("2026-01-01T11:40:00Z"));
        assert!(dl.message.starts_with(
            "phase copy exceeded its 1h timeout (set by the controller flag --phase-timeout)"
        ));
        // No timeouts at all: no deadline.
        let none = Timeouts::default();
        assert_eq!(
            for_phase(&none, "backup", action_start, "copy", None, now),
            None
        );
    }

    #[test]
    fn the_defer_phase_is_outside_the_action_timeout() {
        let d = Defaults {
            phase: Duration::from_secs(600),
            action: Duration::from_secs(60),
        };
        let (t, _) = res(d, &BTreeMap::new());
        let now = at("2026-01-01T12:00:00Z");
        let dl = for_defer(&t, "cleanup", Some(at("2026-01-01T11:59:00Z")), now).unwrap();
        assert_eq!(dl.at, at("2026-01-01T12:09:00Z"));
        assert!(
            dl.message
                .starts_with("deferPhase cleanup exceeded its 10m timeout"),
            "{}",
            dl.message
        );
        let (t, _) = res(d, &opts(&[("phaseTimeout", "0")]));
        assert_eq!(for_defer(&t, "cleanup", None, now), None);
    }

    #[test]
    fn an_expired_action_stops_before_the_next_phase() {
        let (t, _) = res(Defaults::default(), &opts(&[("actionTimeout", "1h")]));
        let start = Some(at("2026-01-01T11:00:00Z"));
        assert_eq!(
            action_expired(&t, "backup", start, "upload", at("2026-01-01T11:59:59Z")),
            None
        );
        let m = action_expired(&t, "backup", start, "upload", at("2026-01-01T12:00:00Z")).unwrap();
        assert!(
            m.starts_with("action backup exceeded its 1h timeout (set by the ActionSet option actionTimeout) before phase upload started; it and the phases after it were not run; raise it with the ActionSet option spec.actions[].options.actionTimeout"),
            "{m}"
        );
        assert_eq!(
            action_expired(
                &Timeouts::default(),
                "backup",
                start,
                "upload",
                at("2030-01-01T00:00:00Z")
            ),
            None
        );
    }

    fn bp_annotation(v: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(ANNOTATION_PHASE_TIMEOUTS.to_string(), v.to_string())])
    }

    #[test]
    fn the_blueprint_annotation_sets_one_phase_over_options_and_flags() {
        let ann =
            bp_annotation(r#"{"backup": {"dump": "6h", "quick": "0"}, "restore": {"x": "bad"}}"#);
        let (t, p) = resolve(
            Defaults::default(),
            &opts(&[("phaseTimeout", "30m")]),
            Some(&ann),
            "backup",
        );
        assert_eq!(
            p, None,
            "another action's entry is not this action's problem"
        );
        assert_eq!(
            t.phase_limit("dump"),
            Some(&Limit {
                after: Duration::from_secs(6 * 3600),
                source: Source::Blueprint
            })
        );
        assert_eq!(t.phase_limit("quick"), None);
        assert_eq!(
            t.phase_limit("other").map(|l| l.source),
            Some(Source::ActionSet)
        );
        let now = at("2026-01-01T12:00:00Z");
        let d = for_phase(&t, "backup", None, "dump", Some(now), now).unwrap();
        assert_eq!(d.at, at("2026-01-01T18:00:00Z"));
        assert_eq!(
            d.message,
            "phase dump exceeded its 6h timeout (set by the Blueprint annotation blueprint-operator.io/phase-timeouts) and was cancelled; raise it in that annotation of the Blueprint (a Go duration such as 2h; 0 disables it)"
        );
        // The deferPhase is named there too.
        let ann = bp_annotation(r#"{"backup": {"cleanup": "5m"}}"#);
        let (t, _) = resolve(Defaults::default(), &BTreeMap::new(), Some(&ann), "backup");
        let d = for_defer(&t, "cleanup", Some(now), now).unwrap();
        assert_eq!(d.at, at("2026-01-01T12:05:00Z"));
    }

    #[test]
    fn a_bad_blueprint_annotation_is_reported() {
        for (text, want) in [
            ("not json", "not a JSON object"),
            (r#"{"backup": ["dump"]}"#, "not an object of phase names"),
            (r#"{"backup": {"dump": 5}}"#, "backup.dump is not a string"),
            (
                r#"{"backup": {"dump": "5 hours"}}"#,
                "backup.dump \"5 hours\" is not a duration",
            ),
        ] {
            let (t, p) = resolve(
                Defaults::default(),
                &BTreeMap::new(),
                Some(&bp_annotation(text)),
                "backup",
            );
            let p = p.unwrap_or_else(|| panic!("{text}: no problem reported"));
            assert!(
                p.starts_with("Blueprint annotation blueprint-operator.io/phase-timeouts: "),
                "{p}"
            );
            assert!(p.contains(want), "{text}: {p}");
            assert_eq!(t.phase_limit("dump").map(|l| l.source), Some(Source::Flag));
        }
    }
}
