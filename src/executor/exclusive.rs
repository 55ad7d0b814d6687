//! Exclusive runs per application, as pure decisions: which ActionSet a
//! not-yet-started ActionSet waits for.
//!
//! An ActionSet asks with the annotation [`ANNOTATION_EXCLUSIVE`] (`"true"`; Kanister's
//! structural schema prunes unknown spec fields, so it cannot be a field), an ActionSchedule
//! with `spec.exclusive` (its runs get the annotation). Its *keys* are the objects of its
//! actions, `kind/namespace/name` ([`keys`]). Two ActionSets *conflict* when they share a key
//! and at least one of them is exclusive: the one that asked never runs beside the other,
//! whoever started first.
//!
//! A not-started ActionSet waits ([`blocker`]) for every conflicting one that has started
//! (`running`, or claimed by this executor an instant before its first write), and for every
//! conflicting one that is waiting too and comes *first* in the order (creationTimestamp,
//! namespace, name, uid). Started ones never wait, and among waiting ones the order is
//! total, so the relation has no cycle (no deadlock) and of waiters on one key exactly the
//! first one with no started conflict goes. With [`ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT`] it
//! fails, naming the run it waited for, once it has waited that long since its creation.

use std::collections::BTreeSet;
use std::time::Duration;

use kube::core::ObjectMeta;

use crate::model::ActionSetSpec;
pub use crate::model::labels::{
    ANNOTATION_EXCLUSIVE, ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT, ANNOTATION_WAITING_FOR,
};

/// What an ActionSet asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ask {
    pub exclusive: bool,
    /// Fail after waiting this long since creation (`None`: wait as long as it takes).
    pub wait_timeout: Option<Duration>,
}

/// An annotation of the contract that does not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AskError {
    #[error(
        "annotation {ANNOTATION_EXCLUSIVE} is {0:?}: set it to \"true\" (or \"false\", or remove it)"
    )]
    Exclusive(String),
    #[error(
        "annotation {ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT} is {value:?}: {error}; set a Go duration such as \"30m\" (\"0\" or no annotation: wait as long as it takes)"
    )]
    WaitTimeout {
        value: String,
        error: crate::duration::DurationError,
    },
}

/// Reads [`Ask`] from an ActionSet's annotations.
pub fn ask(meta: &ObjectMeta) -> Result<Ask, AskError> {
    let get = |k: &str| meta.annotations.as_ref().and_then(|a| a.get(k));
    let exclusive = match get(ANNOTATION_EXCLUSIVE).map(|v| v.trim()) {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(AskError::Exclusive(other.to_string())),
    };
    let wait_timeout = match get(ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT) {
        None => None,
        Some(v) => {
            let d = crate::duration::parse_timeout(v).map_err(|error| AskError::WaitTimeout {
                value: v.clone(),
                error,
            })?;
            Some(d).filter(|d| !d.is_zero())
        }
    };
    Ok(Ask {
        exclusive,
        wait_timeout,
    })
}

/// The objects of an ActionSet's actions: `kind/namespace/name` (kind in lower case, as
/// Kanister compares kinds; without a kind, `resource.group`).
pub fn keys(spec: Option<&ActionSetSpec>) -> BTreeSet<String> {
    spec.iter()
        .flat_map(|s| &s.actions)
        .map(|a| {
            let o = &a.object;
            let kind = if o.kind.is_empty() {
                if o.group.is_empty() {
                    o.resource.to_lowercase()
                } else {
                    format!("{}.{}", o.resource, o.group).to_lowercase()
                }
            } else {
                o.kind.to_lowercase()
            };
            format!("{kind}/{}/{}", o.namespace, o.name)
        })
        .collect()
}

/// Where an ActionSet stands for exclusivity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Running (or claimed by this executor to start).
    Started,
    /// Not started, and this executor will start it once its turn comes.
    Waiting,
}

/// One ActionSet as the decision sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// creationTimestamp, seconds since the epoch (the API server's resolution).
    pub created: i64,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub exclusive: bool,
    pub keys: BTreeSet<String>,
    pub standing: Standing,
}

impl Entry {
    fn order(&self) -> (i64, &str, &str, &str) {
        (self.created, &self.namespace, &self.name, &self.uid)
    }

    fn conflict(&self, other: &Entry) -> Option<String> {
        if !(self.exclusive || other.exclusive) {
            return None;
        }
        self.keys.intersection(&other.keys).next().cloned()
    }
}

/// The ActionSet `me` waits for, and the object they share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocker {
    pub namespace: String,
    pub name: String,
    pub key: String,
    /// It has started (else it waits too, ahead of `me`).
    pub started: bool,
}

impl Blocker {
    /// `<namespace>/<name>`, the value of [`ANNOTATION_WAITING_FOR`].
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What waiting ActionSet `me` waits for (`None`: its turn). A started one is named before
/// a waiting one, the first in the order among each, so the answer is the same every time.
pub fn blocker<'a>(me: &Entry, others: impl IntoIterator<Item = &'a Entry>) -> Option<Blocker> {
    others
        .into_iter()
        .filter(|o| o.uid != me.uid)
        .filter_map(|o| {
            let key = me.conflict(o)?;
            let started = o.standing == Standing::Started;
            (started || o.order() < me.order()).then_some((o, key, started))
        })
        .min_by(|(a, _, sa), (b, _, sb)| sb.cmp(sa).then_with(|| a.order().cmp(&b.order())))
        .map(|(o, key, started)| Blocker {
            namespace: o.namespace.clone(),
            name: o.name.clone(),
            key,
            started,
        })
}

/// The waiting message of the Event and the log.
pub fn waiting_message(b: &Blocker, ask: &Ask) -> String {
    let how = if b.started {
        "which is running"
    } else {
        "which was created first and waits its turn too"
    };
    let until = match ask.wait_timeout {
        Some(d) => format!(
            "; it fails if it has not started {} after its creation ({ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT})",
            crate::duration::format(d)
        ),
        None => String::new(),
    };
    format!(
        "Waiting for ActionSet {} on {} ({how}): runs on one object do not overlap when one of them is exclusive ({ANNOTATION_EXCLUSIVE}){until}",
        b.full_name(),
        b.key
    )
}

/// The error of a wait that timed out.
pub fn timed_out_message(b: &Blocker, waited: Duration) -> String {
    format!(
        "not started: waited {} ({ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT}) for ActionSet {}, which {} on {}",
        crate::duration::format(waited),
        b.full_name(),
        if b.started {
            "is running"
        } else {
            "waits ahead of it"
        },
        b.key
    )
}

/// Event reason while an ActionSet waits.
pub const REASON_WAITING: &str = "WaitingForExclusiveRun";

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, created: i64, exclusive: bool, keys: &[&str], s: Standing) -> Entry {
        Entry {
            created,
            namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            exclusive,
            keys: keys.iter().map(|k| k.to_string()).collect(),
            standing: s,
        }
    }

    const T1: i64 = 1_767_225_601;
    const T2: i64 = T1 + 1;

    #[test]
    fn asks_read_from_annotations_and_bad_values_say_how_to_fix_them() {
        let meta = |pairs: &[(&str, &str)]| ObjectMeta {
            annotations: Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        };
        assert_eq!(ask(&ObjectMeta::default()), Ok(Ask::default()));
        assert_eq!(
            ask(&meta(&[
                (ANNOTATION_EXCLUSIVE, "true"),
                (ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT, "90s")
            ])),
            Ok(Ask {
                exclusive: true,
                wait_timeout: Some(Duration::from_secs(90))
            })
        );
        assert_eq!(
            ask(&meta(&[(ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT, "0")]))
                .unwrap()
                .wait_timeout,
            None
        );
        let e = ask(&meta(&[(ANNOTATION_EXCLUSIVE, "yes")])).unwrap_err();
        assert!(e.to_string().contains("set it to \"true\""), "{e}");
        let e = ask(&meta(&[(ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT, "soon")])).unwrap_err();
        assert!(e.to_string().contains("\"soon\""), "{e}");
    }

    #[test]
    fn keys_are_the_actions_objects() {
        let spec: ActionSetSpec = serde_json::from_value(serde_json::json!({"actions": [
            {"name": "backup", "object": {"kind": "Deployment", "namespace": "app", "name": "db"}},
            {"name": "backup", "object": {"resource": "namespaces", "name": "app"}},
        ]}))
        .unwrap();
        let k: Vec<String> = keys(Some(&spec)).into_iter().collect();
        assert_eq!(k, ["deployment/app/db", "namespaces//app"]);
    }

    #[test]
    fn a_running_conflict_blocks_whoever_came_first() {
        let running = entry(
            "restore",
            T2,
            false,
            &["deployment/app/db"],
            Standing::Started,
        );
        let me = entry(
            "backup",
            T1,
            true,
            &["deployment/app/db"],
            Standing::Waiting,
        );
        let b = blocker(&me, [&running]).expect("blocked");
        assert_eq!((b.name.as_str(), b.started), ("restore", true));
        assert_eq!(b.key, "deployment/app/db");
        // Neither exclusive, or another object: no wait.
        let plain = entry(
            "backup",
            T1,
            false,
            &["deployment/app/db"],
            Standing::Waiting,
        );
        assert_eq!(blocker(&plain, [&running]), None);
        let other = entry(
            "other",
            T1,
            true,
            &["deployment/app/web"],
            Standing::Waiting,
        );
        assert_eq!(blocker(&other, [&running]), None);
        // The exclusive one running blocks a plain one that did not ask.
        let ex_running = entry(
            "backup",
            T1,
            true,
            &["deployment/app/db"],
            Standing::Started,
        );
        let plain_restore = entry(
            "restore",
            T2,
            false,
            &["deployment/app/db"],
            Standing::Waiting,
        );
        assert!(blocker(&plain_restore, [&ex_running]).is_some());
    }

    #[test]
    fn of_waiters_exactly_the_first_goes_and_none_waits_for_a_later_one() {
        let all = [
            entry("c", T2, true, &["k"], Standing::Waiting),
            entry("b", T1, true, &["k"], Standing::Waiting),
            entry("a", T2, true, &["k"], Standing::Waiting),
        ];
        let go: Vec<&str> = all
            .iter()
            .filter(|me| blocker(me, &all).is_none())
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(go, ["b"], "creationTimestamp first, then the name");
        // Each waits for one ahead of it, never behind: no cycle.
        for me in &all {
            if let Some(b) = blocker(me, &all) {
                let them = all.iter().find(|e| e.name == b.name).unwrap();
                assert!(them.order() < me.order());
            }
        }
        // Once b has started, a and c wait for it, not for each other.
        let mut started = all.clone();
        started[1].standing = Standing::Started;
        for me in [&started[0], &started[2]] {
            assert_eq!(blocker(me, &started).unwrap().name, "b");
        }
    }

    #[test]
    fn messages_name_the_run_waited_for() {
        let b = Blocker {
            namespace: "app".into(),
            name: "restore-1".into(),
            key: "deployment/app/db".into(),
            started: true,
        };
        let m = timed_out_message(&b, Duration::from_secs(90));
        assert_eq!(
            m,
            "not started: waited 1m30s (blueprint-operator.io/exclusive-wait-timeout) for ActionSet app/restore-1, which is running on deployment/app/db"
        );
        assert!(waiting_message(&b, &Ask::default()).starts_with(
            "Waiting for ActionSet app/restore-1 on deployment/app/db (which is running)"
        ));
    }
}
