//! Which ActionSets are a schedule's runs, without ownerReferences.
//!
//! A run carries the label `blueprint-operator.io/schedule` (the schedule's
//! name, hashed when too long for a label) and the annotation
//! `blueprint-operator.io/schedule-name` (the full name). Both must match: the
//! label finds the runs cheaply, the annotation tells two long names apart and
//! is not something a user sets by accident. Runs carry no ownerReference to
//! the schedule, so the garbage collector never deletes them with it; a
//! schedule re-created under the same name finds (adopts) them.

use kube::core::ObjectMeta;

use super::plan::schedule_label_value;
use crate::model::{ANNOTATION_SCHEDULE, LABEL_SCHEDULE};

/// The schedule an ActionSet belongs to, by its label and annotation
/// (`None`: not a schedule's run).
pub fn schedule_of(meta: &ObjectMeta) -> Option<&str> {
    meta.labels.as_ref()?.get(LABEL_SCHEDULE)?;
    meta.annotations
        .as_ref()?
        .get(ANNOTATION_SCHEDULE)
        .map(String::as_str)
}

/// True when the ActionSet was created by the schedule `schedule` (this one or
/// an earlier one of the same name, in the same namespace).
pub fn is_run_of(meta: &ObjectMeta, schedule: &str) -> bool {
    let label = meta.labels.as_ref().and_then(|l| l.get(LABEL_SCHEDULE));
    label.is_some_and(|l| *l == schedule_label_value(schedule))
        && schedule_of(meta) == Some(schedule)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn meta(v: Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
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
}
