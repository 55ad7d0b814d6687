//! The one Events publisher of the executor and the scheduler (events.k8s.io/v1).
//!
//! Two ways to publish, one place: [`Publisher::publish`] makes each Event its own object (the
//! executor's Kanister Events: a series is keyed by reason, not note, and would merge the second
//! "Executing phase <name>" into the first); [`Publisher::publish_series`] counts a repeat of the
//! same type, reason and action about the same object (as kube's and client-go's recorders key
//! it) within [`SERIES_WINDOW`] up in the first Event's `series`, which keeps a scheduler that
//! reports the same thing every tick to one object. Publishing is best effort: a failure is
//! logged, never returned.
//!
//! The series are remembered by a fingerprint of that key, with the first Event's name: not
//! kube's `Recorder`, which keeps a copy of each Event and its key and walks all of them on
//! every publish, when thousands of schedules publish at one tick.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use tracing::warn;

/// How long after its last occurrence an Event still counts up (kube's and client-go's 6 minutes).
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Event type, as in `core/v1` Events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Normal,
    Warning,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Normal => "Normal",
            Kind::Warning => "Warning",
        }
    }
}

/// What one Event says: its type, reason (`kubectl describe`'s Reason), action and note (Message).
#[derive(Clone, Copy, Debug)]
pub struct Note<'a> {
    pub kind: Kind,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: &'a str,
}

/// Publishes Events as one reporting controller and instance.
#[derive(Clone)]
pub struct Publisher {
    client: Client,
    controller: String,
    instance: String,
    series: Arc<Mutex<Series>>,
}

/// The series published within [`SERIES_WINDOW`], by the fingerprint of their key.
#[derive(Default)]
struct Series {
    heads: HashMap<u64, Head>,
    /// Keys the fingerprint (SipHash with this process's random key): two keys sharing one
    /// is about as likely as 1 in 10^11 among 10,000 series.
    keys: RandomState,
    /// When the series out of their window were last forgotten.
    swept: Option<Timestamp>,
}

/// The first Event of a series, and how often and when last it happened.
struct Head {
    namespace: String,
    name: String,
    count: i32,
    last: Timestamp,
}

impl Series {
    /// Forgets the series out of their window, at most once a minute (not on every publish:
    /// thousands of schedules publish at one tick).
    fn sweep(&mut self, now: Timestamp) {
        if self
            .swept
            .is_some_and(|t| now.duration_since(t) < SignedDuration::from_mins(1))
        {
            return;
        }
        self.heads
            .retain(|_, h| now.duration_since(h.last) < SERIES_WINDOW);
        self.swept = Some(now);
    }

    /// The series `key` counts into at `now`: its Event's namespace, name and next count.
    fn repeat(&mut self, key: u64, now: Timestamp) -> Option<(String, String, i32)> {
        self.sweep(now);
        self.heads
            .get(&key)
            .filter(|h| now.duration_since(h.last) < SERIES_WINDOW)
            .map(|h| (h.namespace.clone(), h.name.clone(), h.count + 1))
    }
}

impl Publisher {
    /// `controller` and `instance` become the Events' `reportingController` and
    /// `reportingInstance`.
    pub fn new(client: Client, controller: &str, instance: &str) -> Self {
        Publisher {
            client,
            controller: controller.to_string(),
            instance: instance.to_string(),
            series: Arc::default(),
        }
    }

    fn series(&self) -> MutexGuard<'_, Series> {
        // Poisoning only means a panic elsewhere; the series are still usable.
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The Event saying `ev` about `regarding`, named afresh.
    fn event(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        ev: Note<'_>,
        now: Timestamp,
    ) -> K8sEvent {
        K8sEvent {
            metadata: ObjectMeta {
                name: Some(event_name(regarding.name.as_deref().unwrap_or("event"))),
                namespace: Some(namespace(regarding).to_string()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some(limit(ev.action)),
            reason: Some(limit(ev.reason)),
            note: Some(truncate_note(ev.note)),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            reporting_controller: Some(limit(&self.controller)),
            reporting_instance: Some(limit(&self.instance)),
            type_: Some(ev.kind.as_str().into()),
            ..K8sEvent::default()
        }
    }

    /// Publishes one Event about `regarding` (and `related`, if any) as its own object.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        ev: Note<'_>,
    ) {
        let event = self.event(regarding, related, ev, Timestamp::now());
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace(regarding));
        if let Err(e) = api.create(&PostParams::default(), &event).await {
            warn!(reason = %ev.reason, error = %e, "publishing Event failed");
        }
    }

    /// Publishes one Event about `regarding`; a repeat of the same type, reason and action
    /// within [`SERIES_WINDOW`] counts up the first one's series instead.
    pub async fn publish_series(&self, regarding: &ObjectReference, ev: Note<'_>) {
        if let Err(e) = self.try_publish_series(regarding, ev).await {
            warn!(reason = %ev.reason, error = %e, "publishing Event failed");
        }
    }

    /// [`Publisher::publish_series`], returning the error (for a caller that retries).
    pub async fn try_publish_series(
        &self,
        regarding: &ObjectReference,
        ev: Note<'_>,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let (key, repeat) = {
            let mut series = self.series();
            // The reference whole, as kube's recorder keys it.
            let r = regarding;
            let key = series.keys.hash_one((
                ev.kind,
                ev.reason,
                ev.action,
                (&r.api_version, &r.kind, &r.namespace, &r.name),
                (&r.uid, &r.resource_version, &r.field_path),
            ));
            (key, series.repeat(key, now))
        };
        if let Some((ns, name, count)) = repeat {
            let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &ns);
            let series = serde_json::json!({
                "series": {"count": count, "lastObservedTime": MicroTime(now)}
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&series))
                .await
            {
                Ok(_) => {
                    if let Some(h) = self.series().heads.get_mut(&key) {
                        (h.count, h.last) = (count, now);
                    }
                    return Ok(());
                }
                // The first Event is gone (deleted, or expired by the API server's TTL): this
                // one starts a new series.
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let event = self.event(regarding, None, ev, now);
        let ns = namespace(regarding);
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), ns);
        api.create(&PostParams::default(), &event).await?;
        let head = Head {
            namespace: ns.to_string(),
            name: event.metadata.name.unwrap_or_default(),
            count: 1,
            last: now,
        };
        self.series().heads.insert(key, head);
        Ok(())
    }
}

/// The namespace an Event about `regarding` is made in (`default` for a cluster-scoped object).
fn namespace(regarding: &ObjectReference) -> &str {
    regarding.namespace.as_deref().unwrap_or("default")
}

/// events.k8s.io/v1 limits reason, action and the reporting fields to 128 characters.
fn limit(s: &str) -> String {
    s.chars().take(128).collect()
}

/// `<object>.<nanoseconds hex><sequence hex>`, unique within this process
/// and valid whatever the object's name (as kube's Recorder names Events).
fn event_name(object: &str) -> String {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xfff;
    let nanos = k8s_openapi::jiff::Timestamp::now().as_nanosecond();
    format!("{object}.{nanos:x}{seq:03x}")
}

/// events.k8s.io/v1 limits `note` to 1 KiB; longer messages are cut on a
/// character boundary and marked.
pub fn truncate_note(note: &str) -> String {
    const LIMIT: usize = 1024;
    if note.len() <= LIMIT {
        return note.to_string();
    }
    let marker = " [truncated]";
    let mut end = LIMIT - marker.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &note[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_char_boundary() {
        let s = "é".repeat(1000);
        let t = truncate_note(&s);
        assert!(t.len() <= 1024);
        assert!(t.ends_with("[truncated]"));
        assert_eq!(truncate_note("short"), "short");
    }

    #[test]
    fn event_names_are_unique_and_start_with_the_object() {
        let (a, b) = (event_name("x"), event_name("x"));
        assert!(a.starts_with("x."), "{a}");
        assert_ne!(a, b);
    }
}
