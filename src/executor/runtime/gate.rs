//! The exclusive gate: before its first write, a not-started ActionSet waits for
//! its turn ([`crate::executor::exclusive`]) on the executor's own ActionSet store, woken by
//! the watch's events (no polling), and claims the start within this process in the same
//! step, so two of its tasks never both start on one object. While it waits it stays
//! `pending` (Kanister's state), names the run it waits for in the annotation
//! [`ANNOTATION_WAITING_FOR`] and says why in a `WaitingForExclusiveRun` Event.

use std::collections::HashSet;

use kube::runtime::reflector::Store;

use super::*;
use crate::executor::exclusive::{
    self as excl, ANNOTATION_WAITING_FOR, Ask, Blocker, Entry, Standing,
};

/// The store the decisions read, its change signal, and the starts claimed here.
pub(super) struct Gate {
    store: Store<WatchedActionSet>,
    changed: watch::Sender<u64>,
    /// UIDs this process decided to start (their `running` may not be in the store yet).
    claimed: Mutex<HashSet<String>>,
}

/// What a not-started ActionSet does.
pub(super) enum Turn {
    /// Start it (the start is claimed).
    Go,
    /// Fail it without starting: what it waited for, or an annotation that does not read.
    Refuse(String),
    /// Deleted while it waited: nothing runs.
    Deleted,
}

impl Gate {
    pub(super) fn new(store: Store<WatchedActionSet>) -> Gate {
        Gate {
            store,
            changed: watch::channel(0).0,
            claimed: Mutex::new(HashSet::new()),
        }
    }

    /// Something changed in the store: waiting tasks look again.
    pub(super) fn changed(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The task of `uid` ended: its start no longer counts unless the store shows it running.
    pub(super) fn release(&self, uid: &str) {
        let was = self
            .claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
        if was {
            self.changed();
        }
    }

    /// What `me` waits for; none: its start is claimed.
    fn decide(&self, ownership: &Ownership, me: &Entry) -> Option<Blocker> {
        // Only ActionSets naming an object of the same name can conflict: a cheap filter
        // before the annotations and keys are read (every start scans the whole store).
        let names: HashSet<&str> = me
            .keys
            .iter()
            .filter_map(|k| k.rsplit('/').next())
            .collect();
        let mut claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        let entries: Vec<Entry> = self
            .store
            .state()
            .iter()
            .filter(|w| match w.as_ref() {
                WatchedActionSet::Valid(a) => a
                    .spec
                    .iter()
                    .flat_map(|s| &s.actions)
                    .any(|x| names.contains(x.object.name.as_str())),
                WatchedActionSet::Invalid { .. } => false,
            })
            .filter_map(|w| entry(ownership, w, &claimed))
            .collect();
        let b = excl::blocker(me, &entries);
        if b.is_none() {
            claimed.insert(me.uid.clone());
        }
        b
    }
}

/// An ActionSet of the store as the decision sees it (`None`: it neither runs nor will be
/// started by this executor).
fn entry(ownership: &Ownership, w: &WatchedActionSet, claimed: &HashSet<String>) -> Option<Entry> {
    let WatchedActionSet::Valid(a) = w else {
        return None;
    };
    let uid = a.metadata.uid.clone()?;
    let not_started = claim::not_started(a);
    let ended = a.state().is_some_and(State::is_terminal);
    let standing = if !ended && (claimed.contains(&uid) || !not_started) {
        Standing::Started
    } else if not_started
        && a.metadata.deletion_timestamp.is_none()
        && ownership.decide(&a.metadata, a.state()) == Decision::Run
    {
        Standing::Waiting
    } else {
        return None;
    };
    Some(new_entry(a, uid, standing))
}

fn new_entry(a: &ActionSet, uid: String, standing: Standing) -> Entry {
    Entry {
        created: a
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second())
            .unwrap_or_default(),
        namespace: a.metadata.namespace.clone().unwrap_or_default(),
        name: a.name_any(),
        uid,
        // A value that does not read fails that ActionSet at its own gate; until then it
        // asks for nothing.
        exclusive: excl::ask(&a.metadata).is_ok_and(|x| x.exclusive),
        keys: excl::keys(a.spec.as_ref()),
        standing,
    }
}

/// Waits until not-started `obj` may start (claimed), must fail, or is deleted.
pub(super) async fn wait_turn(
    run: &Run<'_>,
    obj: &ActionSet,
    rx: &mut watch::Receiver<bool>,
) -> Result<Turn, WriteError> {
    let ask = match excl::ask(&obj.metadata) {
        Ok(a) => a,
        Err(e) => return Ok(Turn::Refuse(e.to_string())),
    };
    let Some(uid) = obj.metadata.uid.clone() else {
        return Ok(Turn::Go);
    };
    let gate = &run.inner.gate;
    let me = new_entry(obj, uid, Standing::Waiting);
    let mut changed = gate.changed.subscribe();
    // The first decision needs the whole first list.
    let _ = gate.store.wait_until_ready().await;
    // The wait is measured from the creation, so it holds across restarts.
    let deadline = ask.wait_timeout.map(|d| {
        let created = obj
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_millisecond())
            .unwrap_or_default();
        let waited = chrono::Utc::now()
            .timestamp_millis()
            .saturating_sub(created);
        let waited = Duration::from_millis(waited.max(0) as u64);
        tokio::time::Instant::now() + d.saturating_sub(waited)
    });
    let mut shown = obj.annotations().get(ANNOTATION_WAITING_FOR).cloned();
    loop {
        changed.borrow_and_update();
        let Some(b) = gate.decide(&run.inner.ownership, &me) else {
            return Ok(Turn::Go);
        };
        if deadline.is_some_and(|d| d <= tokio::time::Instant::now()) {
            let waited = ask.wait_timeout.unwrap_or_default();
            return Ok(Turn::Refuse(excl::timed_out_message(&b, waited)));
        }
        if shown.as_deref() != Some(b.full_name().as_str()) {
            show_waiting(run, &b, &ask).await?;
            shown = Some(b.full_name());
        }
        let until = deadline.unwrap_or_else(|| {
            tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 86400)
        });
        tokio::select! {
            r = changed.changed() => {
                if r.is_err() {
                    return Ok(Turn::Deleted);
                }
            }
            Ok(_) = rx.wait_for(|d| *d) => return Ok(Turn::Deleted),
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}

/// Records that the ActionSet waits for `b` (`pending`, the annotation) and says why.
async fn show_waiting(run: &Run<'_>, b: &Blocker, ask: &Ask) -> Result<(), WriteError> {
    let (obj, waiting) = update(&run.api, run.name, None, |o| {
        if !claim::not_started(o) {
            return Ok(false);
        }
        // A claimed ActionSet stays `running`: Kanister's controller starts `pending` ones.
        if !claim::claimed_not_started(&o.metadata) {
            o.status.get_or_insert_with(Default::default).state = State::Pending;
        }
        o.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ANNOTATION_WAITING_FOR.into(), b.full_name());
        Ok(true)
    })
    .await?;
    if waiting {
        let message = excl::waiting_message(b, ask);
        info!(actionset = %run.name, namespace = %run.ns, "{message}");
        let ev = EventSpec {
            kind: crate::events::Kind::Normal,
            reason: excl::REASON_WAITING.into(),
            message,
            blueprint: None,
        };
        let _ = run.events.send((as_ref(&obj), ev));
    }
    Ok(())
}

/// Fails not-started `name` with `message`: nothing ran, so no deferPhase runs (as an
/// ActionSet whose Blueprint is missing). Kanister's launch failure Event for each action.
pub(super) async fn refuse(run: &Run<'_>, message: &str) -> Result<(), WriteError> {
    let (obj, failed) = update(&run.api, run.name, None, |o| {
        if !claim::not_started(o) {
            return Ok(false);
        }
        let status = o.status.get_or_insert_with(Default::default);
        status.state = State::Failed;
        status.error.message = message.to_string();
        Ok(true)
    })
    .await?;
    if failed {
        warn!(actionset = %run.name, namespace = %run.ns, error = %message, "ActionSet not started");
        let evs: Vec<EventSpec> = obj
            .spec
            .iter()
            .flat_map(|s| &s.actions)
            .map(|a| {
                crate::executor::events::launch_failed(&a.name, run.name, &a.blueprint, message)
            })
            .collect();
        run.publish_all(&obj, &evs);
        run.inner.metrics.actionset_ended(false);
    }
    Ok(())
}
