//! Pure: the spec of the ActionSet that runs `retention.deleteAction` for a
//! rotated run, and the object it runs on.
//!
//! A Kanister user runs a delete action with `kanctl create actionset
//! --action delete --from <backup> --namespacetargets <ns>`: on a namespace,
//! not on the backed-up workload, and the corpus' delete actions are written
//! for that (`{{ .Namespace.Name }}`, set only for a namespace object). So the
//! delete action runs on the kind `retention.deleteActionKind` names, else
//! the kind the Blueprint's delete action declares (`kind:`), else the run's
//! own object.

use std::collections::BTreeMap;

use crate::model::{ActionSet, ActionSetSpec, Artifact, ObjectReference};

/// Kanister's kind of a namespace object (`param.NamespaceKind`), any case.
pub fn is_namespace(kind: &str) -> bool {
    kind.eq_ignore_ascii_case("namespace")
}

/// The kind the delete action runs on: the schedule's `deleteActionKind`,
/// else what the Blueprint's delete action declares (`None`: the run's object).
pub fn effective_kind<'a>(
    schedule_kind: Option<&'a str>,
    declared: Option<&'a str>,
) -> Option<&'a str> {
    schedule_kind
        .filter(|k| !k.is_empty())
        .or(declared.filter(|k| !k.is_empty()))
}

/// The object a delete action of `kind` runs on, for a run whose action ran
/// on `object`; `namespace`: the ActionSet's (an object without one is in it).
/// `Namespace` gives the namespace object as kanctl's `--namespacetargets`
/// writes it (name and namespace both the namespace); any other kind gives
/// the run's object (the webhook admits only its kind there).
pub fn delete_object(
    object: &ObjectReference,
    kind: Option<&str>,
    namespace: &str,
) -> ObjectReference {
    match kind {
        Some(k) if is_namespace(k) && !is_namespace(&object.kind) => {
            let ns = if object.namespace.is_empty() {
                namespace
            } else {
                object.namespace.as_str()
            };
            ObjectReference {
                kind: "Namespace".into(),
                name: ns.into(),
                namespace: ns.into(),
                ..ObjectReference::default()
            }
        }
        _ => object.clone(),
    }
}

/// The delete-action ActionSet's spec: the template's actions renamed to
/// `delete_action`, each with the artifacts the rotated run produced, on the
/// object of the kind `kinds` gives for its Blueprint (see [`delete_object`]).
pub fn delete_spec(
    template: &ActionSetSpec,
    delete_action: &str,
    run: &ActionSet,
    kinds: &BTreeMap<String, String>,
    namespace: &str,
) -> ActionSetSpec {
    let statuses = run
        .status
        .as_ref()
        .map(|s| s.actions.as_slice())
        .unwrap_or_default();
    let all: BTreeMap<String, Artifact> =
        statuses.iter().flat_map(|a| a.artifacts.clone()).collect();
    let actions = template
        .actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut a = a.clone();
            a.name = delete_action.to_string();
            a.object = delete_object(
                &a.object,
                kinds.get(&a.blueprint).map(String::as_str),
                namespace,
            );
            a.artifacts = statuses
                .get(i)
                .map(|s| s.artifacts.clone())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| all.clone());
            a
        })
        .collect();
    ActionSetSpec {
        actions,
        extra: template.extra.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(kind: &str, namespace: &str) -> ActionSetSpec {
        serde_json::from_value(json!({"actions": [
            {"name": "backup", "blueprint": "bp", "object": {"kind": kind, "name": "app", "namespace": namespace}, "profile": {"name": "p", "namespace": "ns"}}
        ]}))
        .unwrap()
    }

    fn run() -> ActionSet {
        serde_json::from_value(
            json!({"metadata": {"name": "r"}, "status": {"state": "complete", "actions": [
                {"name": "backup", "artifacts": {"snap": {"keyValue": {"path": "/b/1"}}}}
            ]}}),
        )
        .unwrap()
    }

    #[test]
    fn delete_spec_carries_the_runs_artifacts() {
        let spec = delete_spec(
            &template("Deployment", "ns"),
            "delete",
            &run(),
            &BTreeMap::new(),
            "ns",
        );
        assert_eq!(spec.actions.len(), 1);
        assert_eq!(spec.actions[0].name, "delete");
        assert_eq!(spec.actions[0].blueprint, "bp");
        assert_eq!(spec.actions[0].artifacts["snap"].key_value["path"], "/b/1");
        assert!(spec.actions[0].profile.is_some());
        // No kind from anywhere: the run's own object.
        assert_eq!(spec.actions[0].object.kind, "Deployment");
        assert_eq!(spec.actions[0].object.name, "app");
    }

    #[test]
    fn a_namespace_delete_action_runs_on_the_namespace_of_the_runs_object() {
        let kinds = BTreeMap::from([("bp".to_string(), "namespace".to_string())]);
        let spec = delete_spec(
            &template("StatefulSet", "db"),
            "delete",
            &run(),
            &kinds,
            "ns",
        );
        let o = &spec.actions[0].object;
        assert_eq!(
            (o.kind.as_str(), o.name.as_str(), o.namespace.as_str()),
            ("Namespace", "db", "db"),
            "as kanctl --namespacetargets db writes it"
        );
        // An object without a namespace is in the ActionSet's.
        let spec = delete_spec(&template("StatefulSet", ""), "delete", &run(), &kinds, "ns");
        assert_eq!(spec.actions[0].object.name, "ns");
        // A Blueprint of another name gets the run's object.
        let other = BTreeMap::from([("other".to_string(), "Namespace".to_string())]);
        let spec = delete_spec(
            &template("StatefulSet", "db"),
            "delete",
            &run(),
            &other,
            "ns",
        );
        assert_eq!(spec.actions[0].object.kind, "StatefulSet");
    }

    #[test]
    fn the_schedule_overrides_what_the_blueprint_declares() {
        assert_eq!(
            effective_kind(Some("Namespace"), Some("StatefulSet")),
            Some("Namespace")
        );
        assert_eq!(
            effective_kind(Some("StatefulSet"), Some("Namespace")),
            Some("StatefulSet")
        );
        assert_eq!(effective_kind(None, Some("Namespace")), Some("Namespace"));
        assert_eq!(effective_kind(Some(""), Some("")), None);
        assert_eq!(effective_kind(None, None), None);
        // The run's own kind (any case) keeps the run's object.
        let sts = ObjectReference {
            kind: "StatefulSet".into(),
            name: "db".into(),
            namespace: "ns".into(),
            ..Default::default()
        };
        assert_eq!(delete_object(&sts, Some("statefulset"), "ns"), sts);
        // A namespace run keeps its own object.
        let ns = ObjectReference {
            kind: "namespace".into(),
            name: "ns".into(),
            ..Default::default()
        };
        assert_eq!(delete_object(&ns, Some("Namespace"), "x"), ns);
    }
}
