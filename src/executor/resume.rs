//! What a restarted controller (or a new leader) does with a phase it finds
//! recorded `running`, by the phase's function (the function registry's [`after_restart`]):
//!
//! - **re-attach**: the work runs in a pod the phase created; the pod is the
//!   phase. The phase runs again with its pod found, not created
//!   (`pods::find_resumed`), so its exit status, log and
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

use crate::functions::registry::{Restart, after_restart};
use crate::model::labels::{ANNOTATION_RERUN_ON_RESTART, parse_rerun_on_restart};

/// The phase names of [`ANNOTATION_RERUN_ON_RESTART`] (empty without it).
pub fn rerun_phases(annotations: Option<&BTreeMap<String, String>>) -> Vec<String> {
    annotations
        .and_then(|a| a.get(ANNOTATION_RERUN_ON_RESTART))
        .map(|v| parse_rerun_on_restart(v))
        .unwrap_or_default()
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
