//! Which ActionSets this executor runs. Kanister's own controller runs every
//! ActionSet it sees; beside it, this executor must run only what was meant
//! for it, and never take over a run that another controller started.
//!
//! An ActionSet is opted in when it carries the label
//! `blueprint-operator.io/executor=blueprint-operator` (ActionSchedule runs get
//! it) or lives in a namespace the controller runs whole (`--namespace`,
//! `--run-namespaces`). One that we started (our record annotation or our
//! finalizer is on it, or it was claimed, see [`super::claim`]) stays ours
//! whatever happens to the label, so it is always finished. One that is
//! `running` without any marker was started by someone else and is never
//! resumed. An opted-in ActionSet that was not claimed at creation is not
//! started in a namespace where Kanister's controller runs: that controller
//! starts it too ([`not_claimed_event`]).

use std::collections::BTreeSet;

use kube::core::ObjectMeta;

use super::events::EventSpec;
use crate::events::Kind;
use crate::model::labels::{ANNOTATION_CLAIMED, ANNOTATION_EXECUTOR_RECORD, FINALIZER_DEFER_PHASE};
use crate::model::{EXECUTOR_LABEL_VALUE, LABEL_EXECUTOR, State};

/// The namespaces whose every ActionSet is opted in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ownership {
    namespaces: BTreeSet<String>,
}

/// What the executor does with an ActionSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Ours: start, resume or finish it.
    Run,
    /// Not meant for this executor (or over and never ours): leave it alone.
    Ignore,
    /// Opted in, but already `running` without our markers: another
    /// controller started it; it is not resumed.
    StartedElsewhere,
}

impl Ownership {
    /// `namespace` is the controller's `--namespace` (it runs that namespace
    /// whole, as before the label existed); `run_namespaces` are more.
    pub fn new(namespace: Option<&str>, run_namespaces: &[String]) -> Ownership {
        let namespaces = namespace
            .into_iter()
            .map(str::to_string)
            .chain(run_namespaces.iter().cloned())
            .filter(|n| !n.is_empty())
            .collect();
        Ownership { namespaces }
    }

    /// This executor claimed or initialised the ActionSet.
    pub fn started_here(meta: &ObjectMeta) -> bool {
        meta.annotations.as_ref().is_some_and(|a| {
            a.contains_key(ANNOTATION_EXECUTOR_RECORD) || a.contains_key(ANNOTATION_CLAIMED)
        }) || meta
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == FINALIZER_DEFER_PHASE))
    }

    /// The label or the namespace opts the ActionSet in.
    pub fn opted_in(&self, meta: &ObjectMeta) -> bool {
        let labelled = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_EXECUTOR))
            .is_some_and(|v| v == EXECUTOR_LABEL_VALUE);
        labelled
            || meta
                .namespace
                .as_ref()
                .is_some_and(|n| self.namespaces.contains(n))
    }

    /// Whether the executor has anything to say about this ActionSet.
    pub fn concerns(&self, meta: &ObjectMeta) -> bool {
        Self::started_here(meta) || self.opted_in(meta)
    }

    pub fn decide(&self, meta: &ObjectMeta, state: Option<State>) -> Decision {
        if Self::started_here(meta) {
            return Decision::Run;
        }
        if !self.opted_in(meta) {
            return Decision::Ignore;
        }
        match state {
            None | Some(State::Unset | State::Pending) => Decision::Run,
            Some(State::Running) => Decision::StartedElsewhere,
            Some(State::Failed | State::Complete) => Decision::Ignore,
        }
    }
}

/// Warning on an opted-in ActionSet that another controller started.
pub fn started_elsewhere_event() -> EventSpec {
    EventSpec {
        kind: Kind::Warning,
        reason: "ActionSetNotResumed".into(),
        message: format!(
            "ActionSet is running but blueprint-operator did not start it (no {ANNOTATION_EXECUTOR_RECORD} annotation or {FINALIZER_DEFER_PHASE} finalizer): another controller, such as Kanister, runs it, so this executor does not resume it; create a new ActionSet to run it here"
        ),
        blueprint: None,
    }
}

/// Warning on an opted-in ActionSet that was not claimed at creation, in a namespace where
/// Kanister's controller runs (`pods` of it found): left to that controller, which starts
/// every ActionSet there, instead of both running it.
pub fn not_claimed_event(ns: &str, pods: &str) -> EventSpec {
    EventSpec {
        kind: Kind::Warning,
        reason: "ActionSetNotClaimed".into(),
        message: format!(
            "ActionSet was not claimed at creation ({ANNOTATION_CLAIMED}) and Kanister's controller runs in namespace {ns} (pod {pods}), which starts every ActionSet there: blueprint-operator does not run it, so it is not run twice. Install blueprint-operator's webhook (it claims ActionSets at admission), create the ActionSet with `blueprint-operator ctl create` or from an ActionSchedule, or use a namespace Kanister's controller does not watch"
        ),
        blueprint: None,
    }
}

/// Warning on an ActionSet that does not decode.
pub fn invalid_event(name: &str, ns: &str, error: &str) -> EventSpec {
    EventSpec {
        kind: Kind::Warning,
        reason: "ActionSetInvalid".into(),
        message: format!(
            "ActionSet cannot be read: {error}; the executor skips it until it is fixed (kubectl edit actionset {name} -n {ns}) or deleted"
        ),
        blueprint: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn meta(ns: &str, label: Option<&str>, ours: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some("a".into()),
            namespace: Some(ns.into()),
            labels: label.map(|v| BTreeMap::from([(LABEL_EXECUTOR.to_string(), v.to_string())])),
            annotations: ours.then(|| {
                BTreeMap::from([(ANNOTATION_EXECUTOR_RECORD.to_string(), "{}".to_string())])
            }),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn label_or_namespace_opts_in() {
        let o = Ownership::new(None, &["team".into()]);
        let fresh = None;
        assert_eq!(o.decide(&meta("x", None, false), fresh), Decision::Ignore);
        assert_eq!(
            o.decide(&meta("x", Some("kanister"), false), fresh),
            Decision::Ignore,
            "another value is not ours"
        );
        assert_eq!(
            o.decide(&meta("x", Some(EXECUTOR_LABEL_VALUE), false), fresh),
            Decision::Run
        );
        assert_eq!(o.decide(&meta("team", None, false), fresh), Decision::Run);
        assert_eq!(
            o.decide(&meta("x", None, false), Some(State::Pending)),
            Decision::Ignore
        );
    }

    #[test]
    fn namespace_flag_runs_its_namespace_whole() {
        let o = Ownership::new(Some("ns"), &[]);
        assert_eq!(o.decide(&meta("ns", None, false), None), Decision::Run);
        assert_eq!(
            o.decide(&meta("other", None, false), None),
            Decision::Ignore
        );
        assert!(Ownership::new(None, &[String::new()]).namespaces.is_empty());
    }

    #[test]
    fn running_without_our_markers_is_never_resumed() {
        let o = Ownership::new(Some("ns"), &[]);
        let running = Some(State::Running);
        assert_eq!(
            o.decide(&meta("ns", Some(EXECUTOR_LABEL_VALUE), false), running),
            Decision::StartedElsewhere
        );
        assert_eq!(
            o.decide(&meta("other", None, false), running),
            Decision::Ignore
        );
        assert_eq!(
            o.decide(&meta("ns", None, false), Some(State::Complete)),
            Decision::Ignore
        );
        // Ours stays ours, label or not: it is resumed and finished.
        assert_eq!(o.decide(&meta("other", None, true), running), Decision::Run);
        let mut m = meta("other", None, false);
        m.finalizers = Some(vec![FINALIZER_DEFER_PHASE.into()]);
        assert_eq!(o.decide(&m, running), Decision::Run);
        assert!(o.concerns(&m));
        assert!(!o.concerns(&meta("other", None, false)));
    }
}
