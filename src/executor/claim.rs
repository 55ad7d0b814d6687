//! Claiming an ActionSet before any controller sees it.
//!
//! Kanister's controller acts on every ActionSet of its namespace and knows no label: on add it
//! writes a `pending` status when there is none and starts every ActionSet that is `pending`.
//! An ActionSet meant for this executor is therefore created already claimed: `running`, each
//! spec action listed with no phase yet (Kanister's validation accepts that, its controller
//! neither starts it nor marks it complete), with the [`ANNOTATION_CLAIMED`] annotation. It
//! gets our finalizer when it starts, not before: deleted before it started, it ran nothing, so
//! nothing has to hold its deletion (and none is left behind where no executor runs). The mutating webhook claims at admission; the scheduler
//! and `ctl create` create their ActionSets claimed, so they are safe while the webhook is down.
//! The executor starts a claimed ActionSet exactly as a `pending` one.
//!
//! The rule at admission (CREATE only): an ActionSet that is ours (the label, or a namespace the
//! controller runs whole) and has no status, or a `pending` or empty state, is claimed; one
//! that comes with any other state is left as it is (a `running` one is then never resumed,
//! see [`super::ownership`]).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation};
use kube::core::ObjectMeta;
use serde_json::{Value, json};

use super::ownership::Ownership;
use crate::model::labels::{ANNOTATION_CLAIMED, ANNOTATION_EXECUTOR_RECORD};
use crate::model::{ActionSet, ActionSetSpec, ActionSetStatus, ActionStatus, State};

/// Who claimed an ActionSet: the value of [`ANNOTATION_CLAIMED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Admission,
    Schedule,
    Ctl,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Admission => "admission",
            By::Schedule => "schedule",
            By::Ctl => "ctl",
        }
    }
}

/// The claimed status: `running`, every spec action listed, no phase yet.
pub fn status(spec: Option<&ActionSetSpec>) -> ActionSetStatus {
    ActionSetStatus {
        state: State::Running,
        actions: spec
            .iter()
            .flat_map(|s| &s.actions)
            .map(|a| ActionStatus {
                name: a.name.clone(),
                object: a.object.clone(),
                blueprint: a.blueprint.clone(),
                ..ActionStatus::default()
            })
            .collect(),
        ..ActionSetStatus::default()
    }
}

/// Claims a new ActionSet that is about to be created.
pub fn claim(a: &mut ActionSet, by: By) {
    a.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(ANNOTATION_CLAIMED.into(), by.as_str().into());
    a.status = Some(status(a.spec.as_ref()));
}

fn annotated(meta: &ObjectMeta, key: &str) -> bool {
    meta.annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(key))
}

/// Claimed and not started yet: the executor has not written its record.
pub fn claimed_not_started(meta: &ObjectMeta) -> bool {
    annotated(meta, ANNOTATION_CLAIMED) && !annotated(meta, ANNOTATION_EXECUTOR_RECORD)
}

/// Not started by any controller yet: no status, `pending`, or claimed and waiting to start
/// (`running`; a claimed ActionSet someone marked failed or complete is over).
pub fn not_started(a: &ActionSet) -> bool {
    match a.state() {
        None | Some(State::Unset | State::Pending) => true,
        Some(State::Running) => claimed_not_started(&a.metadata),
        Some(State::Failed | State::Complete) => false,
    }
}

/// Whether the webhook claims the ActionSet `obj` (as received, in `namespace`) on CREATE.
pub fn at_admission(ownership: &Ownership, namespace: &str, obj: &Value) -> bool {
    let Ok(mut meta) =
        serde_json::from_value::<ObjectMeta>(obj.get("metadata").cloned().unwrap_or(Value::Null))
    else {
        return false;
    };
    if meta.namespace.as_deref().is_none_or(str::is_empty) {
        meta.namespace = Some(namespace.to_string());
    }
    if !ownership.opted_in(&meta) || Ownership::started_here(&meta) {
        return false;
    }
    match obj.get("status") {
        None | Some(Value::Null) => true,
        Some(Value::Object(s)) => match s.get("state") {
            None | Some(Value::Null) => true,
            Some(Value::String(st)) => st.is_empty() || st == State::Pending.as_str(),
            Some(_) => false,
        },
        Some(_) => false,
    }
}

/// The JSON patch that claims `obj`, written from the object as received (nothing else in it
/// changes; a status given with it is replaced).
pub fn patch(obj: &Value, by: By) -> Patch {
    let spec: Option<ActionSetSpec> = obj
        .get("spec")
        .and_then(|s| serde_json::from_value(s.clone()).ok());
    let status = serde_json::to_value(status(spec.as_ref())).unwrap_or_else(|_| json!({}));
    let meta = obj.get("metadata");
    let mut ops = Vec::new();
    let mut add = |path: PointerBuf, value: Value| {
        ops.push(PatchOperation::Add(AddOperation { path, value }));
    };
    match meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        Some(_) => add(
            PointerBuf::from_tokens(["metadata", "annotations", ANNOTATION_CLAIMED]),
            by.as_str().into(),
        ),
        None => add(
            PointerBuf::from_tokens(["metadata", "annotations"]),
            json!({ ANNOTATION_CLAIMED: by.as_str() }),
        ),
    }
    add(PointerBuf::from_tokens(["status"]), status);
    Patch(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EXECUTOR_LABEL_VALUE, LABEL_EXECUTOR};

    fn actionset(labelled: bool, status: Option<Value>) -> Value {
        let mut a = json!({
            "apiVersion": "cr.kanister.io/v1alpha1",
            "kind": "ActionSet",
            "metadata": {"generateName": "backup-", "namespace": "kanister"},
            "spec": {"actions": [
                {"name": "backup", "blueprint": "bp", "object": {"kind": "StatefulSet", "name": "db", "namespace": "app"}},
                {"name": "check", "blueprint": "bp", "object": {"kind": "Namespace", "name": "app"}}
            ]}
        });
        if labelled {
            a["metadata"]["labels"] = json!({ LABEL_EXECUTOR: EXECUTOR_LABEL_VALUE });
        }
        if let Some(s) = status {
            a["status"] = s;
        }
        a
    }

    fn claimed(obj: &Value) -> ActionSet {
        let mut v = obj.clone();
        json_patch::patch(&mut v, &patch(obj, By::Admission)).expect("the patch applies");
        serde_json::from_value(v).expect("a claimed ActionSet reads")
    }

    #[test]
    fn ours_without_a_status_or_pending_is_claimed_others_are_left_alone() {
        let o = Ownership::new(None, &["team".into()]);
        assert!(at_admission(&o, "kanister", &actionset(true, None)));
        assert!(at_admission(
            &o,
            "kanister",
            &actionset(true, Some(Value::Null))
        ));
        for st in ["pending", ""] {
            let s = Some(json!({ "state": st }));
            assert!(at_admission(&o, "kanister", &actionset(true, s)), "{st:?}");
        }
        for st in [
            json!("running"),
            json!("complete"),
            json!("failed"),
            json!("garbage"),
            json!(3),
        ] {
            let s = Some(json!({ "state": st }));
            assert!(!at_admission(&o, "kanister", &actionset(true, s)), "{st}");
        }
        assert!(!at_admission(
            &o,
            "kanister",
            &actionset(true, Some(json!([])))
        ));
        assert!(
            !at_admission(&o, "kanister", &actionset(false, None)),
            "unlabelled: Kanister's"
        );
        // A namespace run whole: the request's namespace counts when the object has none.
        let mut in_team = actionset(false, None);
        in_team["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        assert!(at_admission(&o, "team", &in_team));
        assert!(!at_admission(&o, "kanister", &in_team));
    }

    #[test]
    fn an_actionset_already_ours_is_not_claimed_again() {
        let o = Ownership::new(None, &[]);
        let first = serde_json::to_value(claimed(&actionset(true, None))).unwrap();
        assert!(!at_admission(&o, "kanister", &first));
    }

    #[test]
    fn the_claim_is_running_with_every_action_and_our_markers() {
        let a = claimed(&actionset(
            true,
            Some(json!({"state": "pending", "actions": []})),
        ));
        let st = a.status.as_ref().unwrap();
        assert_eq!(st.state, State::Running);
        let names: Vec<&str> = st.actions.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            ["backup", "check"],
            "as many as the spec: Kanister validates that"
        );
        assert_eq!(st.actions[0].object.name, "db");
        assert!(st.actions.iter().all(|x| x.phases.is_empty()));
        assert_eq!(
            a.metadata.annotations.as_ref().unwrap()[ANNOTATION_CLAIMED],
            "admission"
        );
        assert!(a.metadata.finalizers.is_none(), "ours once it starts");
        assert!(claimed_not_started(&a.metadata) && not_started(&a));
        assert!(Ownership::started_here(&a.metadata));
    }

    #[test]
    fn the_patch_keeps_what_the_user_wrote() {
        let mut obj = actionset(true, None);
        obj["metadata"]["annotations"] = json!({"team": "db"});
        obj["metadata"]["finalizers"] = json!(["example.com/keep"]);
        obj["spec"]["unknownField"] = json!(1);
        let mut v = obj.clone();
        json_patch::patch(&mut v, &patch(&obj, By::Admission)).unwrap();
        assert_eq!(v["metadata"]["annotations"]["team"], "db");
        assert_eq!(
            v["metadata"]["annotations"][ANNOTATION_CLAIMED],
            "admission"
        );
        assert_eq!(v["metadata"]["finalizers"], json!(["example.com/keep"]));
        assert_eq!(v["spec"], obj["spec"]);
    }

    #[test]
    fn the_typed_claim_equals_the_patch() {
        let obj = actionset(true, None);
        let mut typed: ActionSet = serde_json::from_value(obj.clone()).unwrap();
        claim(&mut typed, By::Admission);
        assert_eq!(typed, claimed(&obj));
    }

    #[test]
    fn a_started_actionset_is_no_longer_waiting_to_start() {
        let mut a = claimed(&actionset(true, None));
        a.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ANNOTATION_EXECUTOR_RECORD.into(), "{}".into());
        assert!(!claimed_not_started(&a.metadata) && !not_started(&a));
    }

    #[test]
    fn a_claimed_actionset_marked_over_by_hand_is_not_started_again() {
        let mut a = claimed(&actionset(true, None));
        for st in [State::Complete, State::Failed] {
            a.status.as_mut().unwrap().state = st;
            assert!(!not_started(&a), "{st}");
        }
    }
}
