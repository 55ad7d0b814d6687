//! The ActionSets of every schedule, kept up to date from the one ActionSet
//! watch the controller already runs. A reconcile reads its runs from here
//! instead of listing them from the API server: at 10,000 schedules, a
//! labelled LIST per reconcile made the API server filter every ActionSet of
//! the namespace each time and was the scheduler's bottleneck.
//!
//! The view may trail the API server by a watch event. That is safe: run names
//! are deterministic (a duplicate create is `AlreadyExists`), deletes carry a
//! UID precondition, and the watch event of every change triggers another
//! reconcile of the owning schedule.
//!
//! It keeps each ActionSet's [`RunSummary`], not the ActionSet: the executor's
//! store holds every ActionSet already, and the scheduler reads little of one.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use kube::ResourceExt;
use kube::runtime::watcher;
use tracing::warn;

use super::summary::RunSummary;
use crate::model::{ActionSet, LABEL_SCHEDULE, WatchedActionSet};

/// Namespace and value of the schedule label.
type Key = (String, String);
type Runs = HashMap<Key, BTreeMap<String, Arc<RunSummary>>>;

#[derive(Default)]
pub struct RunIndex {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    runs: Runs,
    /// Objects of a relist in progress; swapped in at `InitDone`.
    relist: Option<Runs>,
    /// True once the first list has completed.
    ready: bool,
}

fn key(a: &ActionSet) -> Option<Key> {
    let label = a.labels().get(LABEL_SCHEDULE)?;
    Some((a.namespace().unwrap_or_default(), label.clone()))
}

fn insert(runs: &mut Runs, a: &ActionSet) {
    if let Some(k) = key(a) {
        runs.entry(k)
            .or_default()
            .insert(a.name_any(), Arc::new(RunSummary::of(a)));
    }
}

fn remove(runs: &mut Runs, a: &ActionSet) {
    if let Some(k) = key(a)
        && let Some(m) = runs.get_mut(&k)
    {
        m.remove(&a.name_any());
        if m.is_empty() {
            runs.remove(&k);
        }
    }
}

impl Inner {
    fn init(&mut self) {
        self.relist = Some(Runs::new());
    }

    fn init_done(&mut self) {
        if let Some(r) = self.relist.take() {
            self.runs = r;
        }
        self.ready = true;
    }

    /// `a` as listed (`in_relist`: part of a relist) or changed.
    fn put(&mut self, a: &ActionSet, in_relist: bool) {
        match self.relist.as_mut() {
            Some(r) if in_relist => insert(r, a),
            _ => insert(&mut self.runs, a),
        }
    }
}

impl RunIndex {
    /// Apply one watch event.
    pub fn apply(&self, event: &watcher::Event<ActionSet>) {
        // A poisoned lock only means another thread panicked mid-update; the
        // map itself is still a valid (if possibly stale) view.
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        match event {
            watcher::Event::Init => g.init(),
            watcher::Event::InitApply(a) => g.put(a, true),
            watcher::Event::InitDone => g.init_done(),
            watcher::Event::Apply(a) => g.put(a, false),
            watcher::Event::Delete(a) => remove(&mut g.runs, a),
        }
    }

    /// Apply one watch event of ActionSets decoded one by one. One that does
    /// not decode is left out of the view (as if deleted), so that neither
    /// retention nor concurrency acts on a run it cannot read.
    pub fn apply_watched(&self, event: &watcher::Event<WatchedActionSet>) {
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let (w, applied) = match event {
            watcher::Event::Init => return g.init(),
            watcher::Event::InitDone => return g.init_done(),
            watcher::Event::InitApply(w) | watcher::Event::Apply(w) => (w, true),
            watcher::Event::Delete(w) => (w, false),
        };
        let in_relist = matches!(event, watcher::Event::InitApply(_));
        match w {
            WatchedActionSet::Valid(a) if applied => g.put(a, in_relist),
            WatchedActionSet::Valid(a) => remove(&mut g.runs, a),
            WatchedActionSet::Invalid { metadata, error } => {
                let skeleton = ActionSet {
                    metadata: metadata.as_ref().clone(),
                    ..ActionSet::default()
                };
                if applied && key(&skeleton).is_some() {
                    warn!(
                        actionset = %skeleton.name_any(),
                        namespace = %skeleton.namespace().unwrap_or_default(),
                        error = %error,
                        "scheduled run cannot be read; left out of its schedule's runs"
                    );
                }
                remove(&mut g.runs, &skeleton);
            }
        }
    }

    /// The ActionSets labelled with schedule `label` in `namespace`, or `None`
    /// until the first list has completed (the caller then asks the API).
    pub fn runs(&self, namespace: &str, label: &str) -> Option<Vec<Arc<RunSummary>>> {
        let g = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if !g.ready {
            return None;
        }
        let k = (namespace.to_string(), label.to_string());
        Some(
            g.runs
                .get(&k)
                .map(|m| m.values().cloned().collect())
                .unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(ns: &str, schedule: &str, name: &str) -> ActionSet {
        serde_json::from_value(json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "metadata": {"name": name, "namespace": ns, "labels": {LABEL_SCHEDULE: schedule}},
        }))
        .unwrap()
    }

    fn names(ix: &RunIndex, ns: &str, s: &str) -> Option<Vec<String>> {
        ix.runs(ns, s)
            .map(|v| v.iter().map(|a| a.name().to_string()).collect())
    }

    #[test]
    fn not_ready_until_the_first_list_completes() {
        let ix = RunIndex::default();
        ix.apply(&watcher::Event::Init);
        ix.apply(&watcher::Event::InitApply(run("a", "s", "s-1")));
        assert_eq!(names(&ix, "a", "s"), None);
        ix.apply(&watcher::Event::InitDone);
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-1".into()]));
        assert_eq!(names(&ix, "b", "s"), Some(vec![]), "other namespace");
    }

    #[test]
    fn applies_and_deletes_by_schedule() {
        let ix = RunIndex::default();
        ix.apply(&watcher::Event::Init);
        ix.apply(&watcher::Event::InitDone);
        ix.apply(&watcher::Event::Apply(run("a", "s", "s-2")));
        ix.apply(&watcher::Event::Apply(run("a", "s", "s-1")));
        ix.apply(&watcher::Event::Apply(run("a", "t", "t-1")));
        ix.apply(&watcher::Event::Apply(run("a", "s", "s-1")));
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-1".into(), "s-2".into()]));
        ix.apply(&watcher::Event::Delete(run("a", "s", "s-1")));
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-2".into()]));
        assert_eq!(names(&ix, "a", "t"), Some(vec!["t-1".into()]));
    }

    #[test]
    fn a_run_that_does_not_decode_is_left_out() {
        let ix = RunIndex::default();
        let decode = |name: &str, state: &str| {
            let mut v = serde_json::to_value(run("a", "s", name)).unwrap();
            v["status"] = serde_json::json!({ "state": state });
            WatchedActionSet::decode(v)
        };
        let bad = decode("s-2", "paused");
        assert!(matches!(bad, WatchedActionSet::Invalid { .. }));
        ix.apply_watched(&watcher::Event::Init);
        ix.apply_watched(&watcher::Event::InitApply(decode("s-1", "complete")));
        ix.apply_watched(&watcher::Event::InitApply(bad.clone()));
        ix.apply_watched(&watcher::Event::InitDone);
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-1".into()]));
        ix.apply_watched(&watcher::Event::Apply(decode("s-2", "running")));
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-1".into(), "s-2".into()]));
        // Readable, then not any more: it leaves the view.
        ix.apply_watched(&watcher::Event::Apply(bad));
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-1".into()]));
    }

    #[test]
    fn a_relist_replaces_what_was_deleted_meanwhile() {
        let ix = RunIndex::default();
        ix.apply(&watcher::Event::Init);
        ix.apply(&watcher::Event::InitApply(run("a", "s", "s-1")));
        ix.apply(&watcher::Event::InitApply(run("a", "s", "s-2")));
        ix.apply(&watcher::Event::InitDone);
        // The watch broke; s-1 was deleted while it was down.
        ix.apply(&watcher::Event::Init);
        ix.apply(&watcher::Event::InitApply(run("a", "s", "s-2")));
        assert_eq!(
            names(&ix, "a", "s"),
            Some(vec!["s-1".into(), "s-2".into()]),
            "old view served during the relist"
        );
        ix.apply(&watcher::Event::InitDone);
        assert_eq!(names(&ix, "a", "s"), Some(vec!["s-2".into()]));
    }
}
