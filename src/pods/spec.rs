//! Building a pod as Kanister's `pkg/kube` does: a default spec with the phase's `podOverride`
//! applied, Kanister's `createdBy` label, and labels and annotations merged from the Blueprint
//! and the ActionSet.
//!
//! `podOverride` (the Blueprint's merged with the ActionSet's by JSON merge patch, ActionSet
//! wins) is applied to the pod spec with a *subset* of strategic merge: objects merge
//! recursively, `null` deletes a key, lists whose elements all carry a `name` (containers,
//! volumes, env, …) merge element by element on that name, other lists are replaced.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};

use crate::model::labels::LABEL_CREATED_BY;

/// Name of the container a single-container pod runs in (Kanister's `container`).
pub const CONTAINER: &str = "container";

/// Pod labels/annotations as Kanister's `MergeBPLabels`/`MergeBPAnnotations`
/// merge them for every function that creates a pod: the ActionSet's map
/// overlaid with the Blueprint's, so a key set by both keeps the Blueprint's
/// value (selectors a Blueprint relies on cannot be overridden per run).
pub fn merge_labels(
    bp: Option<BTreeMap<String, String>>,
    actionset: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut m = actionset.clone();
    m.extend(bp.unwrap_or_default());
    m
}

/// The Blueprint's `podOverride` merged with the ActionSet's (JSON merge patch, ActionSet wins).
pub fn merge_overrides(
    bp: Option<Map<String, Value>>,
    actionset: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    match (bp, actionset) {
        (None, None) => None,
        (Some(b), None) => Some(b),
        (None, Some(a)) => Some(a.clone()),
        (Some(b), Some(a)) => {
            let mut base = Value::Object(b);
            json_merge(&mut base, &Value::Object(a.clone()));
            match base {
                Value::Object(m) => Some(m),
                _ => None,
            }
        }
    }
}

/// RFC 7386 JSON merge patch.
pub fn json_merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, pv) in p {
                if pv.is_null() {
                    b.remove(k);
                } else {
                    json_merge(b.entry(k.clone()).or_insert(Value::Null), pv);
                }
            }
        }
        (b, Value::Object(p)) => {
            let mut fresh = Value::Object(Map::new());
            json_merge(&mut fresh, &Value::Object(p.clone()));
            *b = fresh;
        }
        (b, p) => *b = p.clone(),
    }
}

/// The subset of strategic merge used for `podOverride` (see module docs).
pub fn strategic_merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, pv) in p {
                if pv.is_null() {
                    b.remove(k);
                } else if let Some(bv) = b.get_mut(k) {
                    strategic_merge(bv, pv);
                } else {
                    b.insert(k.clone(), pv.clone());
                }
            }
        }
        (Value::Array(b), Value::Array(p)) if named(b) && named(p) => {
            for pe in p {
                let name = pe.get("name");
                match b.iter_mut().find(|be| be.get("name") == name) {
                    Some(be) => strategic_merge(be, pe),
                    None => b.push(pe.clone()),
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

fn named(list: &[Value]) -> bool {
    list.iter()
        .all(|e| e.get("name").is_some_and(|n| n.is_string()))
}

/// The pod a function would create does not decode as a Pod, most often a `podOverride` field
/// of the wrong type (the caller says which argument).
#[derive(Debug, thiserror::Error)]
#[error("the merged pod spec is not a valid Pod: {0}")]
pub struct InvalidPod(#[source] serde_json::Error);

/// A pod from a default `spec` with `podOverride` applied (see the module docs),
/// named `<generate_name><random>`, with Kanister's `createdBy: kanister` label.
pub fn build_pod(
    namespace: &str,
    generate_name: &str,
    mut spec: Value,
    mut labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pod_override: Option<&Map<String, Value>>,
) -> Result<Pod, InvalidPod> {
    labels.insert(LABEL_CREATED_BY.0.into(), LABEL_CREATED_BY.1.into());
    if let Some(o) = pod_override {
        strategic_merge(&mut spec, &Value::Object(o.clone()));
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": generate_name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    });
    serde_json::from_value(pod).map_err(InvalidPod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blueprint_labels_win_over_the_actionsets() {
        let aset = BTreeMap::from([("a".into(), "as".into()), ("b".into(), "as".into())]);
        let bp = BTreeMap::from([("a".to_string(), "bp".to_string())]);
        let merged = merge_labels(Some(bp), &aset);
        assert_eq!(merged["a"], "bp");
        assert_eq!(merged["b"], "as");
        assert_eq!(merge_labels(None, &aset), aset);
    }

    #[test]
    fn json_merge_follows_rfc7386() {
        let mut a = json!({"a": [1, 2], "b": {"c": 1, "d": 2}});
        json_merge(&mut a, &json!({"a": [3], "b": {"c": null, "e": 3}}));
        assert_eq!(a, json!({"a": [3], "b": {"d": 2, "e": 3}}));
    }
}
