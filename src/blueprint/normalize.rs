//! Normalization: default phase names and a one-element `deferPhase` list
//! becomes the object. Idempotent and deterministic; anything it does not
//! understand is left untouched for the validator to report, including a list
//! whose phases are all empty ([`is_pruned_list`]).

use std::collections::HashSet;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::{Map, Value};

/// Name given to an unnamed deferPhase (made unique within its action).
pub const DEFER_PHASE_NAME: &str = "deferPhase";

/// Returns the normalized copy of a Blueprint document.
pub fn normalize(doc: &Value) -> Value {
    let mut out = doc.clone();
    if let Some(actions) = out.get_mut("actions").and_then(Value::as_object_mut) {
        for action in actions.values_mut().filter_map(Value::as_object_mut) {
            normalize_action(action);
        }
    }
    out
}

/// A deferPhase list whose every phase is `{}`: what the API server leaves of a list when the
/// Blueprint CRD's schema types deferPhase as one object (Kanister's CRD, not relaxed) and prunes
/// the fields of its elements before admission. Never normalized: the phase is lost.
pub fn is_pruned_list(list: &[Value]) -> bool {
    !list.is_empty()
        && list
            .iter()
            .all(|p| p.as_object().is_some_and(|m| m.is_empty()))
}

/// What normalization does to one action: computed from the action as it is, then applied
/// ([`normalize`]) or written as patch operations ([`patch`]).
struct Plan {
    defer: DeferChange,
    /// `(index, name)` of each phase given a default name.
    phases: Vec<(usize, String)>,
    /// The default name given to the deferPhase (as it is once unwrapped).
    defer_name: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DeferChange {
    Keep,
    /// A one-element list becomes its element.
    Unwrap,
    /// An empty list means "no deferPhase"; Kanister could not decode it.
    Remove,
}

impl Plan {
    fn is_empty(&self) -> bool {
        self.defer == DeferChange::Keep && self.phases.is_empty() && self.defer_name.is_none()
    }
}

fn plan(action: &Map<String, Value>) -> Plan {
    let (defer_change, defer) = match action.get("deferPhase") {
        Some(Value::Array(list)) if list.len() == 1 && !is_pruned_list(list) => {
            (DeferChange::Unwrap, list.first())
        }
        Some(Value::Array(list)) if list.is_empty() => (DeferChange::Remove, None),
        d => (DeferChange::Keep, d),
    };
    let defer = defer.filter(|d| d.is_object());

    // Names already written by the user are reserved first, so a default
    // never collides with a later explicit name.
    let mut taken: HashSet<String> = HashSet::new();
    let phases = action.get("phases").and_then(Value::as_array);
    for phase in phases.into_iter().flatten().chain(defer) {
        if let Some(name) = explicit_name(phase) {
            taken.insert(name.to_owned());
        }
    }
    let mut names = Vec::new();
    for (i, phase) in phases.into_iter().flatten().enumerate() {
        if phase
            .as_object()
            .is_some_and(|p| explicit_name_of(p).is_none())
        {
            names.push((i, unique(&format!("phase{i}"), &mut taken)));
        }
    }
    let defer_name = defer
        .and_then(Value::as_object)
        .filter(|p| explicit_name_of(p).is_none())
        .map(|_| unique(DEFER_PHASE_NAME, &mut taken));
    Plan {
        defer: defer_change,
        phases: names,
        defer_name,
    }
}

fn normalize_action(action: &mut Map<String, Value>) {
    let plan = plan(action);
    match plan.defer {
        DeferChange::Unwrap => {
            if let Some(Value::Array(list)) = action.get_mut("deferPhase")
                && let Some(only) = list.pop()
            {
                action.insert("deferPhase".into(), only);
            }
        }
        DeferChange::Remove => {
            action.remove("deferPhase");
        }
        DeferChange::Keep => {}
    }
    if let Some(phases) = action.get_mut("phases").and_then(Value::as_array_mut) {
        for (i, name) in plan.phases {
            if let Some(obj) = phases.get_mut(i).and_then(Value::as_object_mut) {
                obj.insert("name".into(), Value::String(name));
            }
        }
    }
    if let Some(name) = plan.defer_name
        && let Some(obj) = action.get_mut("deferPhase").and_then(Value::as_object_mut)
    {
        obj.insert("name".into(), Value::String(name));
    }
}

/// The JSON patch from `doc` to [`normalize`]`(doc)`: operation for operation what
/// `json_patch::diff(doc, &normalize(doc))` gives (same order, paths and values), without
/// copying the document and comparing the copies, which cost the mutating webhook more than
/// the rest of a review. `None` for a one-element deferPhase list whose element is not a
/// phase object (the caller diffs then).
pub fn patch(doc: &Value) -> Option<Patch> {
    let mut ops = Vec::new();
    let actions = doc.get("actions").and_then(Value::as_object);
    for (a, action) in actions.into_iter().flatten() {
        let Some(action) = action.as_object() else {
            continue;
        };
        let plan = plan(action);
        if plan.is_empty() {
            continue;
        }
        let at = |tokens: &[&str]| {
            let mut p = PointerBuf::new();
            p.push_back("actions");
            p.push_back(a.as_str());
            for t in tokens {
                p.push_back(*t);
            }
            p
        };
        // A name added to an object, or replacing a value that was no name (diff compares
        // the key's old value with the new name: never equal).
        let name_op = |path: PointerBuf, phase: &Map<String, Value>, name: &str| {
            let value = Value::String(name.to_owned());
            if phase.contains_key("name") {
                PatchOperation::Replace(ReplaceOperation { path, value })
            } else {
                PatchOperation::Add(AddOperation { path, value })
            }
        };
        // In the action's key order, as diff walks it (normalization keeps that order; a
        // removed deferPhase comes after, as diff lists removals after the other keys).
        for (key, value) in action {
            match key.as_str() {
                "phases" if !plan.phases.is_empty() => {
                    let list = value.as_array()?;
                    for (i, name) in &plan.phases {
                        let phase = list.get(*i).and_then(Value::as_object)?;
                        let mut path = at(&["phases"]);
                        path.push_back(*i);
                        path.push_back("name");
                        ops.push(name_op(path, phase, name));
                    }
                }
                "deferPhase" => match plan.defer {
                    DeferChange::Unwrap => {
                        let mut only = value.as_array()?.first()?.as_object()?.clone();
                        if let Some(name) = &plan.defer_name {
                            only.insert("name".into(), Value::String(name.clone()));
                        }
                        ops.push(PatchOperation::Replace(ReplaceOperation {
                            path: at(&["deferPhase"]),
                            value: Value::Object(only),
                        }));
                    }
                    DeferChange::Keep => {
                        if let Some(name) = &plan.defer_name {
                            let defer = value.as_object()?;
                            ops.push(name_op(at(&["deferPhase", "name"]), defer, name));
                        }
                    }
                    DeferChange::Remove => {}
                },
                _ => {}
            }
        }
        if plan.defer == DeferChange::Remove {
            ops.push(PatchOperation::Remove(RemoveOperation {
                path: at(&["deferPhase"]),
            }));
        }
    }
    Some(Patch(ops))
}

fn explicit_name(phase: &Value) -> Option<&str> {
    phase.as_object().and_then(explicit_name_of)
}

/// A phase's name if it has a non-empty string one.
fn explicit_name_of(phase: &Map<String, Value>) -> Option<&str> {
    phase
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// `base`, or `base_1`, `base_2`, ... whichever is free; marks it taken.
/// Underscores keep the result a valid Go template identifier.
fn unique(base: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = base.to_owned();
    let mut n = 1;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn arb_name() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            Just(Some(json!(""))),
            Just(Some(json!("phase0"))),
            Just(Some(json!("phase1"))),
            Just(Some(json!("deferPhase"))),
            Just(Some(json!("a/b~c"))),
            Just(Some(json!(7))),
            Just(Some(json!({"x": 1}))),
        ]
    }

    fn arb_phase() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => (arb_name(), any::<bool>(), any::<bool>()).prop_map(|(name, name_first, func)| {
                let mut m = Map::new();
                if name_first && let Some(n) = &name {
                    m.insert("name".into(), n.clone());
                }
                if func {
                    m.insert("func".into(), json!("KubeTask"));
                }
                m.insert("args".into(), json!({"image": "x", "command": ["a"]}));
                if !name_first && let Some(n) = name {
                    m.insert("name".into(), n);
                }
                Value::Object(m)
            }),
            1 => Just(json!({})),
            1 => Just(json!("text")),
            1 => Just(json!([1, {"name": ""}])),
        ]
    }

    fn arb_action() -> impl Strategy<Value = Value> {
        let defer = prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            Just(Some(json!([]))),
            arb_phase().prop_map(|p| Some(json!([p]))),
            arb_phase().prop_map(Some),
            (arb_phase(), arb_phase()).prop_map(|(a, b)| Some(json!([a, b]))),
        ];
        let phases = prop_oneof![
            4 => prop::collection::vec(arb_phase(), 0..4).prop_map(|l| Some(Value::Array(l))),
            1 => Just(None),
            1 => Just(Some(json!({"not": "a list"}))),
        ];
        (defer, phases, 0..6usize).prop_map(|(defer, phases, order)| {
            let mut parts: Vec<(&str, Value)> = vec![("outputArtifacts", json!({"a": {}}))];
            if let Some(d) = defer {
                parts.push(("deferPhase", d));
            }
            if let Some(p) = phases {
                parts.push(("phases", p));
            }
            let n = parts.len();
            parts.rotate_left(order % n);
            if order % 2 == 1 {
                parts.reverse();
            }
            Value::Object(parts.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        })
    }

    proptest! {
        /// The patch written from the plan is, operation for operation, json_patch's diff of the
        /// document and its normal form.
        #[test]
        fn patch_is_the_diff_to_the_normal_form(
            actions in prop::collection::vec(("[ab/~]{1,2}", arb_action()), 0..4),
        ) {
            let actions: Map<String, Value> = actions.into_iter().collect();
            let doc = json!({"metadata": {"name": "b"}, "actions": actions});
            let diff = json_patch::diff(&doc, &normalize(&doc));
            match patch(&doc) {
                Some(p) => prop_assert_eq!(
                    serde_json::to_string(&p).unwrap(),
                    serde_json::to_string(&diff).unwrap()
                ),
                // Only for a one-element deferPhase list of something other than an object.
                None => prop_assert!(actions.values().any(|a| matches!(
                    a.get("deferPhase"),
                    Some(Value::Array(l)) if l.len() == 1 && !l[0].is_object()
                ))),
            }
        }
    }

    #[test]
    fn patch_of_documents_without_actions_is_empty() {
        for doc in [
            json!("text"),
            json!({}),
            json!({"actions": 3}),
            json!({"actions": {"a": 1}}),
        ] {
            assert_eq!(patch(&doc).map(|p| p.0.len()), Some(0), "{doc}");
        }
    }

    #[test]
    fn defaults_names_unique_within_action() {
        let doc = json!({"actions": {"backup": {
            "phases": [{"func": "KubeTask"}, {"func": "KubeTask", "name": "phase0"}, {"func": "KubeTask", "name": ""}],
            "deferPhase": [{"func": "KubeOps"}]
        }}});
        let out = normalize(&doc);
        let action = &out["actions"]["backup"];
        assert_eq!(action["phases"][0]["name"], "phase0_1");
        assert_eq!(action["phases"][1]["name"], "phase0");
        assert_eq!(action["phases"][2]["name"], "phase2");
        assert_eq!(action["deferPhase"]["name"], "deferPhase");
        assert_eq!(action["deferPhase"]["func"], "KubeOps");
    }

    #[test]
    fn defer_name_avoids_existing_phase_named_defer_phase() {
        let doc = json!({"actions": {"a": {
            "phases": [{"name": "deferPhase", "func": "KubeTask"}],
            "deferPhase": {"func": "KubeOps"}
        }}});
        assert_eq!(
            normalize(&doc)["actions"]["a"]["deferPhase"]["name"],
            "deferPhase_1"
        );
    }

    #[test]
    fn idempotent_and_keeps_unknown_fields() {
        let doc = json!({"x-custom": 1, "actions": {"a": {"future": true,
            "phases": [{"func": "KubeTask", "extra": {"k": "v"}}], "deferPhase": [{"func": "KubeOps"}]}}});
        let once = normalize(&doc);
        assert_eq!(normalize(&once), once);
        assert_eq!(once["x-custom"], 1);
        assert_eq!(once["actions"]["a"]["future"], true);
        assert_eq!(once["actions"]["a"]["phases"][0]["extra"]["k"], "v");
    }

    #[test]
    fn leaves_long_defer_list_and_garbage_alone() {
        let doc = json!({"actions": {"a": {"deferPhase": [{"func": "A"}, {"func": "B"}]}, "b": 7}});
        let out = normalize(&doc);
        assert_eq!(
            out["actions"]["a"]["deferPhase"].as_array().unwrap().len(),
            2
        );
        assert_eq!(out["actions"]["b"], 7);
        assert_eq!(normalize(&json!("text")), json!("text"));
    }

    #[test]
    fn pruned_one_element_list_is_left_for_the_validator() {
        let doc = json!({"actions": {"a": {"deferPhase": [{}]}}});
        assert_eq!(normalize(&doc), doc);
        assert!(is_pruned_list(&[json!({}), json!({})]));
        assert!(!is_pruned_list(&[json!({}), json!({"func": "KubeTask"})]));
        assert!(!is_pruned_list(&[]));
    }

    #[test]
    fn empty_defer_list_is_removed() {
        let out = normalize(&json!({"actions": {"a": {"deferPhase": []}}}));
        assert!(out["actions"]["a"].get("deferPhase").is_none());
    }
}
