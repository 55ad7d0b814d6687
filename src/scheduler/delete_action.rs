//! Pure: the spec of the ActionSet that runs `retention.deleteAction` for a
//! rotated run.

use std::collections::BTreeMap;

use crate::model::{ActionSet, ActionSetSpec, Artifact};

/// The delete-action ActionSet's spec: the template's actions renamed to
/// `delete_action`, each with the artifacts the rotated run produced.
pub fn delete_spec(
    template: &ActionSetSpec,
    delete_action: &str,
    run: &ActionSet,
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

    #[test]
    fn delete_spec_carries_the_runs_artifacts() {
        let template: ActionSetSpec = serde_json::from_value(json!({"actions": [
            {"name": "backup", "blueprint": "bp", "object": {"kind": "Deployment", "name": "app", "namespace": "ns"}, "profile": {"name": "p", "namespace": "ns"}}
        ]}))
        .unwrap();
        let run: ActionSet = serde_json::from_value(
            json!({"metadata": {"name": "r"}, "status": {"state": "complete", "actions": [
                {"name": "backup", "artifacts": {"snap": {"keyValue": {"path": "/b/1"}}}}
            ]}}),
        )
        .unwrap();
        let spec = delete_spec(&template, "delete", &run);
        assert_eq!(spec.actions.len(), 1);
        assert_eq!(spec.actions[0].name, "delete");
        assert_eq!(spec.actions[0].blueprint, "bp");
        assert_eq!(spec.actions[0].artifacts["snap"].key_value["path"], "/b/1");
        assert!(spec.actions[0].profile.is_some());
    }
}
