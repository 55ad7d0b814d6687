//! What a restarted controller (or a new leader) does with a phase it finds
//! recorded `running`, by the phase's function ([`after_restart`]):
//!
//! - **re-attach**: the work runs in a pod the phase created; the pod is the
//!   phase. The phase runs again with its pod found, not created
//!   (`functions::pod::find_resumed`), so its exit status, log and
//!   phase output are taken as if nothing had happened. A pod the ActionSet
//!   records but that is gone fails the phase with that reason;
//! - **re-enter**: the function's effect is a desired state or a wait
//!   (ScaleWorkload, Wait, WaitV2, the CSI snapshot functions but
//!   CreateCSISnapshotStatic, a KubeOps patch):
//!   running it again reaches the same state (outputs known before the
//!   effect, such as ScaleWorkload's `originalReplicaCount`, are recorded
//!   by the first run and reused);
//! - **at most once**: the work streamed through an exec into a pod (KubeExec,
//!   the restic data movers) or created something a second run would
//!   duplicate or trip over: the phase fails ("controller restarted while
//!   phase X was running …"), unless the Blueprint lists it in the annotation
//!   [`ANNOTATION_RERUN_ON_RESTART`]; then it is re-run once (a second restart during
//!   the re-run fails it).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::labels::ANNOTATION_RERUN_ON_RESTART;

/// What happens to a function's phase found running after a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    Reattach,
    Reenter,
    AtMostOnce,
}

/// Functions whose work is the pod they create (the shared pod runner,
/// `functions::pod::run_pod`).
const REATTACH: &[&str] = &["KubeTask", "MultiContainerRun", "PrepareData"];
/// Functions whose second run reaches the same state as the first.
const REENTER: &[&str] = &[
    "ScaleWorkload",
    "Wait",
    "WaitV2",
    "CreateCSISnapshot",
    "RestoreCSISnapshot",
    "DeleteCSISnapshot",
    "DeleteCSISnapshotContent",
];

/// The restart behaviour of function `func` with its (unrendered) `args`.
pub fn after_restart(func: &str, args: Option<&Map<String, Value>>) -> Restart {
    if REATTACH.contains(&func) {
        return Restart::Reattach;
    }
    if REENTER.contains(&func) {
        return Restart::Reenter;
    }
    // A merge patch applied twice is the patch applied once; create and
    // delete fail the second time (AlreadyExists, NotFound) as in Kanister.
    let op = args
        .and_then(|a| a.get("operation"))
        .and_then(Value::as_str);
    if func == "KubeOps" && op.is_some_and(|o| o.eq_ignore_ascii_case("patch")) {
        return Restart::Reenter;
    }
    Restart::AtMostOnce
}

/// The phase names of [`ANNOTATION_RERUN_ON_RESTART`] (empty without it).
pub fn rerun_phases(annotations: Option<&BTreeMap<String, String>>) -> Vec<String> {
    annotations
        .and_then(|a| a.get(ANNOTATION_RERUN_ON_RESTART))
        .map(|v| parse_rerun(v))
        .unwrap_or_default()
}

/// `a, b,,c` → `[a, b, c]`.
pub fn parse_rerun(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// How a running phase is resumed, or `None`: it is failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Reattach,
    Reenter,
    Rerun,
}

/// The decision for phase `phase` of function `func` found running:
/// `already_rerun` says it was re-run once after an earlier restart.
pub fn decide(
    func: &str,
    args: Option<&Map<String, Value>>,
    phase: &str,
    rerun: &[String],
    already_rerun: bool,
) -> Option<How> {
    match after_restart(func, args) {
        Restart::Reattach => Some(How::Reattach),
        Restart::Reenter => Some(How::Reenter),
        Restart::AtMostOnce if rerun.iter().any(|r| r == phase) && !already_rerun => {
            Some(How::Rerun)
        }
        Restart::AtMostOnce => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn functions_by_restart_behaviour() {
        for f in ["KubeTask", "MultiContainerRun", "PrepareData"] {
            assert_eq!(after_restart(f, None), Restart::Reattach, "{f}");
        }
        for f in [
            "ScaleWorkload",
            "Wait",
            "WaitV2",
            "CreateCSISnapshot",
            "RestoreCSISnapshot",
            "DeleteCSISnapshot",
        ] {
            assert_eq!(after_restart(f, None), Restart::Reenter, "{f}");
        }
        for f in [
            "KubeExec",
            "KubeExecAll",
            "BackupData",
            "CreateCSISnapshotStatic",
        ] {
            assert_eq!(after_restart(f, None), Restart::AtMostOnce, "{f}");
        }
        let ops = |op: &str| json!({"operation": op}).as_object().cloned();
        assert_eq!(
            after_restart("KubeOps", ops("Patch").as_ref()),
            Restart::Reenter
        );
        assert_eq!(
            after_restart("KubeOps", ops("create").as_ref()),
            Restart::AtMostOnce
        );
        assert_eq!(
            after_restart("KubeOps", ops("{{ .Options.op }}").as_ref()),
            Restart::AtMostOnce
        );
    }

    #[test]
    fn rerun_is_declared_per_phase_and_happens_once() {
        let ann = BTreeMap::from([(
            ANNOTATION_RERUN_ON_RESTART.to_string(),
            " dump, ,flush".to_string(),
        )]);
        let r = rerun_phases(Some(&ann));
        assert_eq!(r, ["dump", "flush"]);
        assert_eq!(
            decide("KubeExec", None, "dump", &r, false),
            Some(How::Rerun)
        );
        assert_eq!(decide("KubeExec", None, "dump", &r, true), None);
        assert_eq!(decide("KubeExec", None, "other", &r, false), None);
        assert_eq!(
            decide("KubeTask", None, "other", &r, true),
            Some(How::Reattach)
        );
        assert!(rerun_phases(None).is_empty());
    }
}
