//! The Events of a transition, queued and published in order by one task per ActionSet, off
//! the critical path; failures are also posted to the Blueprint, as Kanister does.

use k8s_openapi::api::core::v1::ObjectReference as CoreRef;
use kube::Resource;

use super::write::Run;
use crate::executor::events::EventSpec;
use crate::model::ActionSet;

/// Publishes queued Events in order until the queue closes.
pub(super) async fn event_publisher(
    events: crate::events::Publisher,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(CoreRef, EventSpec)>,
) {
    while let Some((r, ev)) = rx.recv().await {
        events.publish(&r, None, ev.note()).await;
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
