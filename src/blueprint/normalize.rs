//! Normalization: default phase names and a one-element `deferPhase` list
//! becomes the object. Idempotent and deterministic; anything it does not
//! understand is left untouched for the validator to report, including a list
//! whose phases are all empty ([`is_pruned_list`]).

use std::collections::HashSet;

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

fn normalize_action(action: &mut Map<String, Value>) {
    match action.get("deferPhase") {
        Some(Value::Array(list)) if list.len() == 1 && !is_pruned_list(list) => {
            let only = list[0].clone();
            action.insert("deferPhase".into(), only);
        }
        // An empty list means "no deferPhase"; Kanister could not decode it.
        Some(Value::Array(list)) if list.is_empty() => {
            action.remove("deferPhase");
        }
        _ => {}
    }

    // Names already written by the user are reserved first, so a default
    // never collides with a later explicit name.
    let mut taken: HashSet<String> = HashSet::new();
    let phases = action.get("phases").and_then(Value::as_array);
    let defer = action.get("deferPhase").filter(|d| d.is_object());
    for phase in phases.into_iter().flatten().chain(defer) {
        if let Some(name) = explicit_name(phase) {
            taken.insert(name.to_owned());
        }
    }

    if let Some(phases) = action.get_mut("phases").and_then(Value::as_array_mut) {
        for (i, phase) in phases.iter_mut().enumerate() {
            if let Some(obj) = phase
                .as_object_mut()
                .filter(|p| explicit_name_of(p).is_none())
            {
                let name = unique(&format!("phase{i}"), &mut taken);
                obj.insert("name".into(), Value::String(name));
            }
        }
    }
    if let Some(obj) = action
        .get_mut("deferPhase")
        .and_then(Value::as_object_mut)
        .filter(|p| explicit_name_of(p).is_none())
    {
        let name = unique(DEFER_PHASE_NAME, &mut taken);
        obj.insert("name".into(), Value::String(name));
    }
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
    use serde_json::json;

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
