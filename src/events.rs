//! The one Events publisher of the executor and the scheduler (events.k8s.io/v1).
//!
//! Two ways to publish, one place: [`Publisher::publish`] makes each Event its own object (the
//! executor's Kanister Events: kube's Recorder keys a series by reason, not note, and would merge
//! the second "Executing phase <name>" into the first); [`Publisher::publish_series`] merges a
//! repeat of the same reason about the same object into a series on the first Event (kube's
//! `Recorder`), which keeps a scheduler that reports the same thing every tick to one object.
//! Publishing is best effort: a failure is logged, never returned.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::events::{Event as SeriesEvent, EventType, Recorder, Reporter};
use tracing::warn;

/// Event type, as in `core/v1` Events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    series: Recorder,
}

impl Publisher {
    /// `controller` and `instance` become the Events' `reportingController` and
    /// `reportingInstance`.
    pub fn new(client: Client, controller: &str, instance: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: Some(instance.to_string()),
        };
        Publisher {
            series: Recorder::new(client.clone(), reporter),
            client,
            controller: controller.to_string(),
            instance: instance.to_string(),
        }
    }

    /// Publishes one Event about `regarding` (and `related`, if any) as its own object.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        ev: Note<'_>,
    ) {
        let ns = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(event_name(regarding.name.as_deref().unwrap_or("event"))),
                namespace: Some(ns.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            action: Some(limit(ev.action)),
            reason: Some(limit(ev.reason)),
            note: Some(truncate_note(ev.note)),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            reporting_controller: Some(limit(&self.controller)),
            reporting_instance: Some(limit(&self.instance)),
            type_: Some(ev.kind.as_str().into()),
            ..K8sEvent::default()
        };
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &ns);
        if let Err(e) = api.create(&PostParams::default(), &event).await {
            warn!(reason = %ev.reason, error = %e, "publishing Event failed");
        }
    }

    /// Publishes one Event about `regarding`; a repeat of the same type, reason and action
    /// within kube's cache period (6 minutes) counts up the first one's series instead.
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
        let event = SeriesEvent {
            type_: match ev.kind {
                Kind::Normal => EventType::Normal,
                Kind::Warning => EventType::Warning,
            },
            reason: limit(ev.reason),
            note: Some(truncate_note(ev.note)),
            action: limit(ev.action),
            secondary: None,
        };
        self.series.publish(&event, regarding).await
    }
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
