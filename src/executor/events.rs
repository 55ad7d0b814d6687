//! Kanister's Event reasons and messages (`pkg/controller/controller.go`),
//! as values the pure state machine returns and the runtime publishes in
//! order.

use crate::events::Kind;
use crate::model::State;

/// One Event to publish about the ActionSet (and, for failures, the
/// Blueprint too, as Kanister does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub kind: Kind,
    pub reason: String,
    pub message: String,
    /// Also post the Event to this Blueprint (same namespace).
    pub blueprint: Option<String>,
}

impl EventSpec {
    fn normal(reason: impl Into<String>, message: impl Into<String>) -> Self {
        EventSpec {
            kind: Kind::Normal,
            reason: reason.into(),
            message: message.into(),
            blueprint: None,
        }
    }

    fn warning(reason: impl Into<String>, message: impl Into<String>, bp: Option<&str>) -> Self {
        EventSpec {
            kind: Kind::Warning,
            reason: reason.into(),
            message: message.into(),
            blueprint: bp.filter(|b| !b.is_empty()).map(str::to_string),
        }
    }
}

impl EventSpec {
    /// The Event as the one publisher takes it (the executor's action is always "Execute").
    pub fn note(&self) -> crate::events::Note<'_> {
        crate::events::Note {
            kind: self.kind,
            reason: &self.reason,
            action: "Execute",
            note: &self.message,
        }
    }
}

/// Reason of every failure event about an action.
pub fn failed_reason(action: &str) -> String {
    format!("ActionSetFailed Action: {action}")
}

/// Kanister prints the status `Phase` with Go's `%#v`; we print the part
/// that identifies it, in the same notation.
fn phase_dump(name: &str, state: State) -> String {
    format!(
        "v1alpha1.Phase{{Name:{name:?}, State:{:?}}}",
        state.as_str()
    )
}

pub fn started_action(action: &str) -> EventSpec {
    EventSpec::normal("Started Action", format!("Executing action {action}"))
}

pub fn started_phase(phase: &str) -> EventSpec {
    EventSpec::normal("Started Phase", format!("Executing phase {phase}"))
}

/// A phase (or deferPhase) found running after a controller restart goes on.
pub fn resumed(phase: &str, defer: bool, how: super::resume::How) -> EventSpec {
    use super::resume::How;
    let what = if defer { "deferPhase" } else { "phase" };
    let reason = if defer {
        "Resumed deferPhase"
    } else {
        "Resumed Phase"
    };
    let message = match how {
        How::Reattach => format!(
            "Controller restarted while {what} {phase} was running; re-attached to its pod (the phase was not re-run)"
        ),
        How::Reenter => format!(
            "Controller restarted while {what} {phase} was running; entered it again (its function drives a desired state)"
        ),
        How::Rerun => format!(
            "Controller restarted while {what} {phase} was running; re-running it once, as the Blueprint annotation blueprint-operator.io/rerun-on-restart allows"
        ),
    };
    EventSpec::normal(reason, message)
}

pub fn ended_phase(phase: &str) -> EventSpec {
    EventSpec::normal("Ended Phase", format!("Completed phase {phase}"))
}

pub fn started_defer(phase: &str) -> EventSpec {
    EventSpec::normal(
        "Started deferPhase",
        format!("Executing deferPhase {phase}"),
    )
}

pub fn ended_defer(phase: &str) -> EventSpec {
    EventSpec::normal("Ended deferPhase", format!("Completed deferPhase {phase}"))
}

pub fn phase_failed(action: &str, phase: &str, blueprint: &str, err: &str) -> EventSpec {
    EventSpec::warning(
        failed_reason(action),
        format!(
            "Failed to execute phase: {}: {err}",
            phase_dump(phase, State::Running)
        ),
        Some(blueprint),
    )
}

pub fn defer_failed(action: &str, phase: &str, blueprint: &str, err: &str) -> EventSpec {
    EventSpec::warning(
        failed_reason(action),
        format!(
            "Failed to execute defer phase: {}: {err}",
            phase_dump(phase, State::Running)
        ),
        Some(blueprint),
    )
}

pub fn launch_failed(action: &str, actionset: &str, blueprint: &str, err: &str) -> EventSpec {
    EventSpec::warning(
        failed_reason(action),
        format!("Failed to launch Action {actionset}: {err}"),
        Some(blueprint),
    )
}

pub fn render_artifacts_failed(action: &str, blueprint: &str, err: &str) -> EventSpec {
    EventSpec::warning(
        failed_reason(action),
        format!("Failed to render output artifacts {err}"),
        Some(blueprint),
    )
}

pub fn update_complete(actionset: &str) -> EventSpec {
    EventSpec::normal(
        "Update Complete",
        format!("Updated ActionSet '{actionset}' Status->complete"),
    )
}

pub fn blueprint_not_specified(action: &str) -> EventSpec {
    EventSpec::warning(
        "Blueprint not specified",
        format!("Could not get blueprint: Blueprint not specified for action {action}"),
        None,
    )
}

pub fn blueprint_not_found(blueprint: &str, err: &str) -> EventSpec {
    EventSpec::warning(
        "Error",
        format!("Could not get blueprint: Failed to query blueprint {blueprint}: {err}"),
        None,
    )
}

pub fn action_not_found(action: &str, kind: &str, blueprint: &str) -> EventSpec {
    EventSpec::warning(
        failed_reason(action),
        format!(
            "Could not get initial action: Action {action} for object kind {kind} not found in blueprint {blueprint}"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kanister_reasons_and_messages() {
        assert_eq!(started_action("backup").reason, "Started Action");
        assert_eq!(started_action("backup").message, "Executing action backup");
        assert_eq!(ended_defer("d").message, "Completed deferPhase d");
        let f = phase_failed("backup", "two", "bp", "boom");
        assert_eq!(f.reason, "ActionSetFailed Action: backup");
        assert_eq!(f.kind, Kind::Warning);
        assert!(
            f.message.starts_with("Failed to execute phase: "),
            "{}",
            f.message
        );
        assert!(f.message.ends_with(": boom"));
        assert_eq!(f.blueprint.as_deref(), Some("bp"));
        assert!(
            defer_failed("a", "d", "bp", "x")
                .message
                .starts_with("Failed to execute defer phase: ")
        );
    }
}
