//! What the executor's store keeps of each ActionSet it watches (pure).
//!
//! The store holds every ActionSet in scope, most of them finished. Of a finished one
//! (complete or failed) the executor reads only its metadata and state: its reconcile
//! removes a leftover finalizer and stops, and the exclusive gate counts only runs that
//! have not ended. Its spec and the rest of its status (phases, artifacts, outputs) are
//! what makes an ActionSet big, and the API server has them for whoever reads them.
//! managedFields are never read.

use kube::ResourceExt;

use crate::model::{ActionSetStatus, WatchedActionSet};

/// `w` as the store keeps it: without managedFields, and, once finished, without its spec
/// and without its status but for its state.
pub fn slim(w: &mut WatchedActionSet) {
    w.managed_fields_mut().clear();
    let WatchedActionSet::Valid(a) = w else {
        return;
    };
    let Some(state) = a.state().filter(|s| s.is_terminal()) else {
        return;
    };
    a.spec = None;
    a.status = Some(ActionSetStatus {
        state,
        ..ActionSetStatus::default()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::claim;
    use crate::executor::ownership::Ownership;
    use crate::model::{ActionSet, State};
    use serde_json::json;

    fn watched(state: &str) -> WatchedActionSet {
        WatchedActionSet::decode(json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u",
                "labels": {crate::model::LABEL_EXECUTOR: crate::model::EXECUTOR_LABEL_VALUE},
                "finalizers": [crate::model::labels::FINALIZER_DEFER_PHASE],
                "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "Deployment", "name": "app", "namespace": "ns"}}]},
            "status": {"state": state, "error": {"message": "boom"}, "actions": [{"name": "backup",
                "phases": [{"name": "dump", "state": state}],
                "artifacts": {"snap": {"keyValue": {"path": "/b/1"}}}}]},
        }))
    }

    fn valid(w: &WatchedActionSet) -> &ActionSet {
        match w {
            WatchedActionSet::Valid(a) => a,
            WatchedActionSet::Invalid { error, .. } => panic!("does not decode: {error}"),
        }
    }

    #[test]
    fn a_finished_actionset_keeps_its_metadata_and_state_only() {
        for (state, expected) in [("complete", State::Complete), ("failed", State::Failed)] {
            let before = watched(state);
            let mut w = before.clone();
            slim(&mut w);
            let (a, b) = (valid(&w), valid(&before));
            assert!(a.spec.is_none(), "{state}");
            assert_eq!(a.state(), Some(expected));
            assert!(a.status.as_ref().unwrap().actions.is_empty(), "{state}");
            assert!(a.metadata.managed_fields.as_ref().is_none_or(Vec::is_empty));
            // What the reconcile of a finished ActionSet reads is unchanged.
            let unmanaged = |m: &kube::core::ObjectMeta| kube::core::ObjectMeta {
                managed_fields: None,
                ..m.clone()
            };
            assert_eq!(unmanaged(&a.metadata), unmanaged(&b.metadata));
            assert_eq!(claim::not_started(a), claim::not_started(b));
            let own = Ownership::new(None, &[]);
            assert_eq!(
                own.decide(&a.metadata, a.state()),
                own.decide(&b.metadata, b.state())
            );
        }
    }

    #[test]
    fn an_actionset_not_finished_keeps_everything_but_managed_fields() {
        for state in ["", "pending", "running"] {
            let before = watched(state);
            let mut w = before.clone();
            slim(&mut w);
            let expected = valid(&before);
            let got = valid(&w);
            assert!(
                got.metadata
                    .managed_fields
                    .as_ref()
                    .is_none_or(Vec::is_empty)
            );
            assert_eq!(got.spec, expected.spec, "{state:?}");
            assert_eq!(got.status, expected.status, "{state:?}");
        }
    }

    #[test]
    fn one_that_does_not_decode_keeps_its_metadata() {
        let mut w = watched("paused");
        assert!(matches!(w, WatchedActionSet::Invalid { .. }));
        slim(&mut w);
        assert_eq!(w.name_any(), "a");
        assert_eq!(w.finalizers().len(), 1);
    }
}
