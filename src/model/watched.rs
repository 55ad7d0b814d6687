//! An ActionSet as a watch or a list delivers it: decoded, or kept with its
//! metadata and the reason it does not decode. A typed list fails as a whole
//! when one item does not decode (a `status.state` Kanister does not know, a
//! field of the wrong type), which would stop every watcher of ActionSets in
//! the cluster; with this type only that one ActionSet is set aside.

use kube::core::ObjectMeta;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{ActionSet, State};

#[derive(Clone, Debug)]
pub enum WatchedActionSet {
    Valid(Box<ActionSet>),
    Invalid {
        metadata: Box<ObjectMeta>,
        /// What is wrong and where, e.g. `status.state: "paused" is not an
        /// ActionSet state (pending, running, failed, complete)`.
        error: String,
    },
}

impl WatchedActionSet {
    pub fn valid(self) -> Option<ActionSet> {
        match self {
            WatchedActionSet::Valid(a) => Some(*a),
            WatchedActionSet::Invalid { .. } => None,
        }
    }

    /// Decodes one raw ActionSet.
    pub fn decode(raw: Value) -> WatchedActionSet {
        match serde_json::from_value::<ActionSet>(raw.clone()) {
            Ok(a) => WatchedActionSet::Valid(Box::new(a)),
            Err(e) => {
                let metadata = raw
                    .get("metadata")
                    .and_then(|m| ObjectMeta::deserialize(m).ok())
                    .unwrap_or_default();
                let error = match bad_states(&raw).into_iter().next() {
                    Some((path, value)) => format!(
                        "{path}: {value:?} is not an ActionSet state (pending, running, failed, complete)"
                    ),
                    None => e.to_string(),
                };
                WatchedActionSet::Invalid {
                    metadata: Box::new(metadata),
                    error,
                }
            }
        }
    }
}

impl<'de> Deserialize<'de> for WatchedActionSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(WatchedActionSet::decode(Value::deserialize(d)?))
    }
}

impl kube::Resource for WatchedActionSet {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        ActionSet::kind(dt)
    }
    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        ActionSet::group(dt)
    }
    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        ActionSet::version(dt)
    }
    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        ActionSet::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            WatchedActionSet::Valid(a) => &a.metadata,
            WatchedActionSet::Invalid { metadata, .. } => metadata,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            WatchedActionSet::Valid(a) => &mut a.metadata,
            WatchedActionSet::Invalid { metadata, .. } => metadata,
        }
    }
}

/// The state fields of a raw ActionSet that hold no known state, as
/// (JSON path, value): `status.state`, `status.actions[i].phases[j].state`,
/// `status.actions[i].deferPhase.state`.
pub fn bad_states(raw: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut check = |path: String, v: Option<&Value>| {
        if let Some(v) = v
            && v.as_str().and_then(State::parse).is_none()
        {
            let text = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            out.push((path, text));
        }
    };
    let Some(status) = raw.get("status") else {
        return out;
    };
    check("status.state".into(), status.get("state"));
    let actions = status.get("actions").and_then(Value::as_array);
    for (i, a) in actions.into_iter().flatten().enumerate() {
        let phases = a.get("phases").and_then(Value::as_array);
        for (j, p) in phases.into_iter().flatten().enumerate() {
            check(
                format!("status.actions[{i}].phases[{j}].state"),
                p.get("state"),
            );
        }
        check(
            format!("status.actions[{i}].deferPhase.state"),
            a.get("deferPhase").and_then(|d| d.get("state")),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(name: &str, state: Value) -> Value {
        json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp"}]},
            "status": {"state": state, "actions": [{"name": "backup",
                "phases": [{"name": "one", "state": "complete"}],
                "deferPhase": {"name": "", "state": ""}}]},
        })
    }

    #[test]
    fn one_bad_state_does_not_fail_the_list() {
        let list = json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSetList",
            "metadata": {"resourceVersion": "7"},
            "items": [raw("good", json!("running")), raw("bad", json!("paused"))],
        });
        // A typed list of ActionSets fails as a whole ...
        assert!(serde_json::from_value::<kube::core::ObjectList<ActionSet>>(list.clone()).is_err());
        // ... a list of WatchedActionSet keeps the good one and names the bad one.
        let l: kube::core::ObjectList<WatchedActionSet> = serde_json::from_value(list).unwrap();
        let [good, bad] = &l.items[..] else {
            panic!("two items expected")
        };
        assert!(matches!(good, WatchedActionSet::Valid(a) if a.state() == Some(State::Running)));
        match bad {
            WatchedActionSet::Invalid { metadata, error } => {
                assert_eq!(metadata.name.as_deref(), Some("bad"));
                assert_eq!(metadata.uid.as_deref(), Some("u-bad"));
                assert_eq!(
                    error,
                    "status.state: \"paused\" is not an ActionSet state (pending, running, failed, complete)"
                );
            }
            WatchedActionSet::Valid(_) => panic!("bad state decoded"),
        }
    }

    #[test]
    fn names_the_phase_whose_state_is_unknown() {
        let mut r = raw("x", json!("running"));
        r["status"]["actions"][0]["phases"][0]["state"] = json!(3);
        let WatchedActionSet::Invalid { error, .. } = WatchedActionSet::decode(r) else {
            panic!("decoded")
        };
        assert!(
            error.starts_with("status.actions[0].phases[0].state: \"3\" is not"),
            "{error}"
        );
    }

    #[test]
    fn other_decode_errors_keep_serde_message() {
        let mut r = raw("x", json!("running"));
        r["spec"]["actions"][0]["options"] = json!({"a": 1});
        let WatchedActionSet::Invalid { error, metadata } = WatchedActionSet::decode(r) else {
            panic!("decoded")
        };
        assert_eq!(metadata.name.as_deref(), Some("x"));
        assert!(error.contains("expected a string"), "{error}");
    }
}
