//! Which ActionSets are a schedule's runs, without ownerReferences: how a run is made
//! ([`new_action_set`]) and how it is recognised.
//!
//! A run carries the label `blueprint-operator.io/schedule` (the schedule's
//! name, hashed when too long for a label) and the annotation
//! `blueprint-operator.io/schedule-name` (the full name). Both must match: the
//! label finds the runs cheaply, the annotation tells two long names apart and
//! is not something a user sets by accident. Runs carry no ownerReference to
//! the schedule, so the garbage collector never deletes them with it; a
//! schedule re-created under the same name finds (adopts) them.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::core::ObjectMeta;

use super::plan::{NewRun, schedule_label_value};
use crate::model::{
    ANNOTATION_EXCLUSIVE, ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT, ANNOTATION_SCHEDULE,
    ANNOTATION_SCHEDULED_TIME, ActionSchedule, ActionSet, ActionSetSpec, EXECUTOR_LABEL_VALUE,
    LABEL_DELETE_FOR, LABEL_EXECUTOR, LABEL_SCHEDULE, LABEL_TRIGGER,
};

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

/// A run of `s`: labelled and annotated with the schedule, without an
/// ownerReference (the garbage collector must not delete it with the schedule).
pub(super) fn new_action_set(
    s: &ActionSchedule,
    run: &NewRun,
    spec: ActionSetSpec,
    delete_for: Option<&str>,
) -> ActionSet {
    let mut labels = BTreeMap::new();
    labels.insert(
        LABEL_SCHEDULE.to_string(),
        schedule_label_value(&s.name_any()),
    );
    labels.insert(LABEL_TRIGGER.to_string(), run.trigger.as_str().to_string());
    // Opts the run in to our executor (beside Kanister, which ignores it).
    labels.insert(LABEL_EXECUTOR.to_string(), EXECUTOR_LABEL_VALUE.to_string());
    if let Some(d) = delete_for {
        labels.insert(LABEL_DELETE_FOR.to_string(), d.to_string());
    }
    let mut annotations = BTreeMap::new();
    annotations.insert(
        ANNOTATION_SCHEDULED_TIME.to_string(),
        run.scheduled_time.to_rfc3339(),
    );
    annotations.insert(ANNOTATION_SCHEDULE.to_string(), s.name_any());
    // Exclusive runs; a retention delete action does not wait.
    if s.spec.exclusive && delete_for.is_none() {
        annotations.insert(ANNOTATION_EXCLUSIVE.to_string(), "true".to_string());
        if let Some(t) = &s.spec.exclusive_wait_timeout {
            annotations.insert(ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT.to_string(), t.clone());
        }
    }
    let meta = kube::core::ObjectMeta {
        name: Some(run.name.clone()),
        namespace: s.namespace(),
        labels: Some(labels),
        annotations: Some(annotations),
        ..Default::default()
    };
    let mut a = ActionSet::new(meta, spec);
    // Created already claimed: Kanister's controller in the same namespace never starts it,
    // with or without the webhook.
    crate::executor::claim::claim(&mut a, crate::executor::claim::By::Schedule);
    a
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;
    use serde_json::{Value, json};

    use super::super::plan::Trigger;
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

    #[test]
    fn runs_are_labelled_and_annotated_without_an_owner() {
        let s: ActionSchedule = serde_json::from_value(json!({
            "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
            "metadata": {"name": "db", "namespace": "ns"},
            "spec": {"schedule": "* * * * *", "actionSetTemplate": {"actions": []}},
        }))
        .unwrap();
        let run = NewRun {
            name: "db-1".into(),
            scheduled_time: DateTime::from_timestamp(1_000, 0).unwrap(),
            trigger: Trigger::Scheduled,
        };
        for delete_for in [None, Some("db-0")] {
            let a = new_action_set(&s, &run, ActionSetSpec::default(), delete_for);
            assert_eq!(a.labels()[LABEL_EXECUTOR], EXECUTOR_LABEL_VALUE);
            assert_eq!(a.labels()[LABEL_SCHEDULE], "db");
            assert_eq!(a.annotations()[ANNOTATION_SCHEDULE], "db");
            // The garbage collector must not delete runs with their schedule.
            assert!(a.owner_references().is_empty());
            assert!(is_run_of(&a.metadata, "db"));
        }
    }
}
