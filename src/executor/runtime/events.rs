//! The Events of a transition, queued and published in order by one task per ActionSet, off
//! the critical path; failures are also posted to the Blueprint, as Kanister does.

use super::*;

/// Publishes queued Events in order until the queue closes.
pub(super) async fn event_publisher(
    client: Client,
    instance: String,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(CoreRef, EventSpec)>,
) {
    while let Some((r, ev)) = rx.recv().await {
        publish(&client, &instance, &r, &ev).await;
    }
}

impl Run<'_> {
    pub(super) fn publish_all(&self, obj: &ActionSet, evs: &[EventSpec]) {
        for ev in evs {
            let _ = self.events.send((as_ref(obj), ev.clone()));
            if let Some(bp) = &ev.blueprint {
                let r = CoreRef {
                    api_version: Some(crate::model::API_VERSION.into()),
                    kind: Some("Blueprint".into()),
                    name: Some(bp.clone()),
                    namespace: Some(self.ns.to_string()),
                    ..CoreRef::default()
                };
                let _ = self.events.send((r, ev.clone()));
            }
        }
    }
}

pub(super) fn as_ref(obj: &ActionSet) -> CoreRef {
    obj.object_ref(&())
}

/// `<object>.<nanoseconds hex><sequence hex>`, unique within this process
/// and valid whatever the object's name (as kube's Recorder names Events).
pub(super) fn event_name(object: &str) -> String {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xfff;
    let nanos = k8s_openapi::jiff::Timestamp::now().as_nanosecond();
    format!("{object}.{nanos:x}{seq:03x}")
}

/// Publishes one events.k8s.io/v1 Event (each one its own object: kube's
/// Recorder merges Events with the same reason into a series and would
/// drop the second "Executing phase <name>" note).
pub async fn publish(client: &Client, instance: &str, regarding: &CoreRef, ev: &EventSpec) {
    publish_related(client, instance, regarding, None, ev).await
}

/// [`publish`] with the Event's `related` object (an Event about a pod,
/// related to the ActionSet whose phase made it).
pub async fn publish_related(
    client: &Client,
    instance: &str,
    regarding: &CoreRef,
    related: Option<&CoreRef>,
    ev: &EventSpec,
) {
    let ns = regarding
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let event = K8sEvent {
        metadata: ObjectMeta {
            name: Some(event_name(regarding.name.as_deref().unwrap_or("actionset"))),
            namespace: Some(ns.clone()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
        action: Some("Execute".into()),
        reason: Some(ev.reason.chars().take(128).collect()),
        note: Some(truncate_note(&ev.message)),
        regarding: Some(regarding.clone()),
        related: related.cloned(),
        reporting_controller: Some(REPORTING_CONTROLLER.into()),
        reporting_instance: Some(instance.chars().take(128).collect()),
        type_: Some(
            match ev.kind {
                Kind::Normal => "Normal",
                Kind::Warning => "Warning",
            }
            .into(),
        ),
        ..K8sEvent::default()
    };
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), &ns);
    if let Err(e) = api.create(&PostParams::default(), &event).await {
        warn!(reason = %ev.reason, error = %e, "publishing Event failed");
    }
}
