//! Size budgets for what the executor records in an ActionSet,
//! as pure code. Kanister's CRD has no status subresource, so the status is
//! written with the whole object, which etcd refuses above ~1.5 MiB, and
//! the executor's record annotation counts against the API server's 256 KiB
//! limit for all annotations. A write refused for its size would stop the
//! action before its deferPhase, so nothing unbounded reaches the object:
//!
//! - errors (a phase's, the deferPhase's, a launch or artifact error) are cut
//!   to a per-error budget that shrinks with the number of actions, keeping
//!   the head and the tail around a "... N bytes cut ..." marker, and
//!   `status.error.message` is cut to [`MESSAGE_MAX`];
//! - phase outputs are *not* cut: a cut value would reach later phases and
//!   output artifacts as if it were real (a truncated backup ID or
//!   manifest). An output over [`OUTPUT_PHASE_MAX`] per phase, or one that
//!   would take all outputs of the ActionSet over [`OUTPUT_TOTAL_MAX`], fails
//!   the phase with a message that says how large it was and what to do;
//! - rendered output artifacts over [`ARTIFACTS_MAX`] fail the action the
//!   same way.
//!
//! Worst case this adds about 0.8 MiB (outputs 512 KiB, artifacts 128 KiB,
//! errors in status and record 32 + 96 KiB) to the spec and phase names.

use serde_json::{Map, Value};

use crate::model::ActionSetStatus;

/// One recorded error, with one action (fewer with more actions).
pub const ERROR_MAX: usize = 8 * 1024;
/// All errors recorded in the record annotation together.
pub const ERRORS_TOTAL: usize = 96 * 1024;
/// The smallest per-error budget, however many actions there are.
pub const ERROR_MIN: usize = 512;
/// `status.error.message`.
pub const MESSAGE_MAX: usize = 32 * 1024;
/// One phase's output (as JSON).
pub const OUTPUT_PHASE_MAX: usize = 128 * 1024;
/// All phase outputs of the ActionSet together (as JSON).
pub const OUTPUT_TOTAL_MAX: usize = 512 * 1024;
/// One action's rendered output artifacts (as JSON).
pub const ARTIFACTS_MAX: usize = 128 * 1024;

/// `text` if it fits in `max` bytes, else its head and tail around a
/// marker saying how many bytes were cut: at most `max` bytes, cut on
/// character boundaries (a budget smaller than the marker gets the marker).
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    // The marker's length depends on the number it prints; size it for the
    // largest possible count (all of `text`).
    let marker_len = marker(text.len()).len();
    let keep = max.saturating_sub(marker_len);
    let head_len = floor_boundary(text, keep / 2);
    let tail_start = ceil_boundary(text, text.len() - (keep - keep / 2));
    let head = &text[..head_len];
    let tail = &text[tail_start.max(head_len)..];
    let removed = text.len() - head.len() - tail.len();
    format!("{head}{}{tail}", marker(removed))
}

fn marker(n: usize) -> String {
    format!("\n... {n} bytes cut ...\n")
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The budget of one recorded error in an ActionSet with `actions` actions
/// (each can record a main, a deferPhase and an artifacts error).
pub fn error_budget(actions: usize) -> usize {
    (ERRORS_TOTAL / (3 * actions.max(1))).clamp(ERROR_MIN, ERROR_MAX)
}

fn json_len(v: &Map<String, Value>) -> usize {
    if v.is_empty() {
        return 0;
    }
    serde_json::to_string(v)
        .map(|s| s.len())
        .unwrap_or(usize::MAX)
}

fn kib(n: usize) -> String {
    if n >= 1024 * 1024 {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    } else if n >= 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} bytes")
    }
}

/// What does not fit the ActionSet status: sizes in bytes, each message saying what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    /// `largest`: " (key <k>: <size>)" for the largest key, or empty.
    #[error(
        "the output of {name} is {}{largest}, more than the {} a phase may record in the ActionSet status; it was not recorded: {OUTPUT_ADVICE}",
        kib(*size),
        kib(OUTPUT_PHASE_MAX)
    )]
    PhaseOutput {
        name: String,
        size: usize,
        largest: String,
    },
    #[error(
        "the output of {name} is {}{largest}; with the {} the other phases recorded it exceeds the {} all phases of an ActionSet may record in its status; it was not recorded: {OUTPUT_ADVICE}",
        kib(*size),
        kib(*others),
        kib(OUTPUT_TOTAL_MAX)
    )]
    TotalOutput {
        name: String,
        size: usize,
        largest: String,
        others: usize,
    },
    #[error(
        "the rendered output artifacts are {}, more than the {} an action may record in the ActionSet status; they were not recorded: keep large values out of outputArtifacts",
        kib(*size),
        kib(ARTIFACTS_MAX)
    )]
    Artifacts { size: usize },
}

const OUTPUT_ADVICE: &str =
    "store large data in object storage (or a ConfigMap/Secret) and output its location instead";

/// Checks that `output`, recorded for phase `phase` (`None`: the
/// deferPhase) of action `action`, fits the output budgets; the error says
/// how large it is and what to do instead.
pub fn check_output(
    status: &ActionSetStatus,
    action: usize,
    phase: Option<usize>,
    name: &str,
    output: &Map<String, Value>,
) -> Result<(), TooLarge> {
    let size = json_len(output);
    if size == 0 {
        return Ok(());
    }
    let largest = output
        .iter()
        .map(|(k, v)| (k, v.to_string().len()))
        .max_by_key(|(_, n)| *n)
        .map(|(k, n)| format!(" (key {k}: {})", kib(n)))
        .unwrap_or_default();
    if size > OUTPUT_PHASE_MAX {
        return Err(TooLarge::PhaseOutput {
            name: name.into(),
            size,
            largest,
        });
    }
    let others: usize = status
        .actions
        .iter()
        .enumerate()
        .flat_map(|(a, st)| {
            let defer = (a != action || phase.is_some()).then_some(&st.defer_phase);
            st.phases
                .iter()
                .enumerate()
                .filter(move |(p, _)| a != action || Some(*p) != phase)
                .map(|(_, p)| p)
                .chain(defer)
        })
        .map(|p| json_len(&p.output))
        .sum();
    if others + size > OUTPUT_TOTAL_MAX {
        return Err(TooLarge::TotalOutput {
            name: name.into(),
            size,
            largest,
            others,
        });
    }
    Ok(())
}

/// Checks the rendered output artifacts of one action against
/// [`ARTIFACTS_MAX`].
pub fn check_artifacts<T: serde::Serialize>(artifacts: &T) -> Result<(), TooLarge> {
    let size = serde_json::to_string(artifacts)
        .map(|s| s.len())
        .unwrap_or(usize::MAX);
    if size > ARTIFACTS_MAX {
        return Err(TooLarge::Artifacts { size });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ActionStatus, Phase};
    use serde_json::json;

    #[test]
    fn short_text_is_kept() {
        assert_eq!(cut("boom", 100), "boom");
        assert_eq!(cut("", 0), "");
    }

    #[test]
    fn long_text_keeps_head_and_tail_within_the_budget() {
        let text = format!("HEAD{}TAIL", "x".repeat(1_000_000));
        let c = cut(&text, 1000);
        assert!(c.len() <= 1000, "{}", c.len());
        assert!(c.starts_with("HEAD"), "{c}");
        assert!(c.ends_with("TAIL"), "{c}");
        let (head, rest) = c.split_once("\n... ").unwrap();
        let (n, tail) = rest.split_once(" bytes cut ...\n").unwrap();
        let n: usize = n.parse().unwrap();
        assert_eq!(head.len() + n + tail.len(), text.len());
        // Nearly all of the budget is used.
        assert!(c.len() > 990, "{}", c.len());
    }

    #[test]
    fn cutting_respects_character_boundaries() {
        let text = "é".repeat(5000) + &"ü".repeat(5000);
        for max in [100, 101, 102, 103, 999] {
            let c = cut(&text, max);
            assert!(c.len() <= max, "{max}: {}", c.len());
            assert!(c.starts_with('é') && c.ends_with('ü'), "{c}");
        }
    }

    #[test]
    fn tiny_budgets_still_say_what_was_cut() {
        let c = cut(&"y".repeat(100), 5);
        assert!(c.contains("bytes cut"), "{c}");
    }

    #[test]
    fn error_budget_shrinks_with_actions_within_bounds() {
        assert_eq!(error_budget(0), ERROR_MAX);
        assert_eq!(error_budget(1), ERROR_MAX);
        assert!(error_budget(10) < ERROR_MAX);
        assert_eq!(error_budget(10_000), ERROR_MIN);
        for n in [1, 4, 10, 64] {
            assert!(3 * n * error_budget(n) <= ERRORS_TOTAL.max(3 * n * ERROR_MIN));
        }
    }

    fn status_with(outputs: &[usize]) -> ActionSetStatus {
        let phases = outputs
            .iter()
            .enumerate()
            .map(|(i, n)| Phase {
                name: format!("p{i}"),
                output: json!({"v": "x".repeat(*n)}).as_object().cloned().unwrap(),
                ..Phase::default()
            })
            .collect();
        ActionSetStatus {
            actions: vec![ActionStatus {
                name: "backup".into(),
                phases,
                ..ActionStatus::default()
            }],
            ..ActionSetStatus::default()
        }
    }

    fn out(n: usize) -> Map<String, Value> {
        json!({"big": "x".repeat(n)}).as_object().cloned().unwrap()
    }

    #[test]
    fn outputs_within_budget_pass() {
        let st = status_with(&[10, 0]);
        assert_eq!(
            check_output(&st, 0, Some(1), "phase p1", &out(1000)),
            Ok(())
        );
        assert_eq!(
            check_output(&st, 0, None, "deferPhase d", &Map::new()),
            Ok(())
        );
    }

    #[test]
    fn a_phase_output_over_its_budget_fails_with_its_size() {
        let st = status_with(&[0]);
        let e = check_output(&st, 0, Some(0), "phase p0", &out(2 * 1024 * 1024))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "the output of phase p0 is 2.0 MiB (key big: 2.0 MiB), more than the 128.0 KiB"
            ),
            "{e}"
        );
        assert!(e.contains("object storage"), "{e}");
    }

    #[test]
    fn outputs_of_all_phases_share_a_total_budget() {
        // Four earlier phases of 120 KiB each: a fifth of 100 KiB does not fit.
        let st = status_with(&[120 * 1024; 5]);
        let e = check_output(&st, 0, Some(4), "phase p4", &out(100 * 1024))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exceeds the 512.0 KiB all phases"), "{e}");
        // The phase's own previous output (not yet replaced) is not counted twice.
        let st = status_with(&[120 * 1024, 120 * 1024, 120 * 1024, 100 * 1024]);
        assert_eq!(
            check_output(&st, 0, Some(3), "phase p3", &out(100 * 1024)),
            Ok(())
        );
    }

    #[test]
    fn artifacts_over_budget_fail() {
        assert!(check_artifacts(&json!({"a": {"keyValue": {"k": "v"}}})).is_ok());
        let e = check_artifacts(&json!({"a": {"keyValue": {"k": "x".repeat(200_000)}}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the 128.0 KiB"), "{e}");
    }
}
