//! Which ActionSets are a schedule's runs, without ownerReferences.
//!
//! A run carries the label `blueprint-operator.io/schedule` (the schedule's
//! name, hashed when too long for a label) and the annotation
//! `blueprint-operator.io/schedule-name` (the full name). Both must match: the
//! label finds the runs cheaply, the annotation tells two long names apart and
//! is not something a user sets by accident. Runs carry no ownerReference to
//! the schedule, so the garbage collector never deletes them with it; a
//! schedule re-created under the same name finds (adopts) them.
//!
//! Runs made by earlier versions carry a controller ownerReference to their
//! schedule instead of the annotation. They count as the schedule's runs, and
//! [`migration_patch`] turns them into the new form (the controller applies it
//! to every such run it sees), so that deleting the schedule keeps them.

use kube::core::ObjectMeta;
use serde_json::{Value, json};

use super::plan::schedule_label_value;
use crate::model::{ANNOTATION_SCHEDULE, LABEL_SCHEDULE, SCHEDULE_GROUP};

/// Name of the ActionSchedule that an ownerReference of an earlier version
/// points to.
pub fn legacy_owner(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| is_schedule_ref(&o.api_version, &o.kind))
        .map(|o| o.name.as_str())
}

fn is_schedule_ref(api_version: &str, kind: &str) -> bool {
    kind == "ActionSchedule" && api_version.split('/').next() == Some(SCHEDULE_GROUP)
}

/// The schedule an ActionSet belongs to, by annotation, else by an earlier
/// version's ownerReference (`None`: not a schedule's run).
pub fn schedule_of(meta: &ObjectMeta) -> Option<&str> {
    meta.labels.as_ref()?.get(LABEL_SCHEDULE)?;
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_SCHEDULE))
        .map(String::as_str)
        .or_else(|| legacy_owner(meta))
}

/// True when the ActionSet was created by the schedule `schedule` (this one or
/// an earlier one of the same name, in the same namespace).
pub fn is_run_of(meta: &ObjectMeta, schedule: &str) -> bool {
    let label = meta.labels.as_ref().and_then(|l| l.get(LABEL_SCHEDULE));
    label.is_some_and(|l| *l == schedule_label_value(schedule))
        && schedule_of(meta) == Some(schedule)
}

/// For a run of an earlier version: a merge patch that removes the
/// ownerReference to its schedule and adds the annotation in its place. It
/// carries the resourceVersion it was computed from, so a concurrent change
/// makes it fail (409) instead of dropping another ownerReference.
pub fn migration_patch(meta: &ObjectMeta) -> Option<Value> {
    let schedule = legacy_owner(meta)?;
    let others: Vec<_> = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|o| !is_schedule_ref(&o.api_version, &o.kind))
        .collect();
    Some(json!({
        "metadata": {
            "resourceVersion": meta.resource_version,
            "ownerReferences": if others.is_empty() { Value::Null } else { json!(others) },
            "annotations": { ANNOTATION_SCHEDULE: schedule },
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(v: Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
    }

    fn owner(kind: &str, name: &str) -> Value {
        json!({"apiVersion": "blueprint-operator.io/v1alpha1", "kind": kind, "name": name, "uid": "u1", "controller": true})
    }

    #[test]
    fn a_run_is_found_by_label_and_annotation() {
        let m = meta(json!({"name": "db-1",
            "labels": {LABEL_SCHEDULE: "db"}, "annotations": {ANNOTATION_SCHEDULE: "db"}}));
        assert!(is_run_of(&m, "db"));
        assert!(!is_run_of(&m, "db2"));
        // The label alone (a user's copy of the labels) is not enough.
        let m = meta(json!({"name": "x", "labels": {LABEL_SCHEDULE: "db"}}));
        assert!(!is_run_of(&m, "db"));
        // Nor the annotation without the label.
        let m = meta(json!({"name": "x", "annotations": {ANNOTATION_SCHEDULE: "db"}}));
        assert!(!is_run_of(&m, "db"));
        assert_eq!(schedule_of(&m), None);
    }

    #[test]
    fn long_names_are_told_apart_by_the_annotation() {
        let a = "a".repeat(70);
        let b = format!("{a}b");
        let m = meta(json!({"name": "x",
            "labels": {LABEL_SCHEDULE: schedule_label_value(&a)},
            "annotations": {ANNOTATION_SCHEDULE: a}}));
        assert!(is_run_of(&m, &a));
        assert!(!is_run_of(&m, &b));
    }

    #[test]
    fn an_earlier_versions_run_counts_and_is_migrated() {
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u2"});
        let m = meta(json!({"name": "db-1", "resourceVersion": "7",
            "labels": {LABEL_SCHEDULE: "db"},
            "ownerReferences": [owner("ActionSchedule", "db"), other]}));
        assert!(is_run_of(&m, "db"));
        assert_eq!(schedule_of(&m), Some("db"));
        let p = migration_patch(&m).unwrap();
        assert_eq!(p["metadata"]["resourceVersion"], "7");
        assert_eq!(p["metadata"]["annotations"][ANNOTATION_SCHEDULE], "db");
        assert_eq!(p["metadata"]["ownerReferences"], json!([other]));
        // Only ownerReference: the field is removed.
        let m = meta(json!({"name": "db-1", "labels": {LABEL_SCHEDULE: "db"},
            "ownerReferences": [owner("ActionSchedule", "db")]}));
        assert_eq!(
            migration_patch(&m).unwrap()["metadata"]["ownerReferences"],
            Value::Null
        );
        // Nothing to migrate: no reference to a schedule.
        let m = meta(json!({"name": "x", "ownerReferences": [owner("Other", "db")]}));
        assert_eq!(migration_patch(&m), None);
    }
}
