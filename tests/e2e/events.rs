//! The Events publisher against the API server: a repeat counts up the first Event's series,
//! anything else (another reason, another object, a deleted first Event) makes a new Event,
//! and `publish` never merges.

use blueprint_operator::events::{Kind, Note, Publisher};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::support;

fn note(reason: &'static str, note: &'static str) -> Note<'static> {
    Note {
        kind: Kind::Normal,
        reason,
        action: "Test",
        note,
    }
}

/// (reason, series count, note) of every Event in `ns`, sorted.
async fn events(api: &Api<Event>) -> anyhow::Result<Vec<(String, i32, String)>> {
    let mut out: Vec<_> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|e| {
            let count = e.series.as_ref().map_or(1, |s| s.count);
            (
                e.reason.unwrap_or_default(),
                count,
                e.note.unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    Ok(out)
}

#[tokio::test]
async fn series_count_repeats_and_start_again_when_their_event_is_gone() -> anyhow::Result<()> {
    let client = support::client().await;
    let ns = support::namespace(&client, "events").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "subject"}}))?;
    let cm = cms.create(&PostParams::default(), &cm).await?;
    let regarding: ObjectReference = cm.object_ref(&());
    let api: Api<Event> = Api::namespaced(client.clone(), &ns);
    let p = Publisher::new(client.clone(), "events-test", "events-test-0");

    for n in ["first", "second", "third"] {
        p.try_publish_series(&regarding, note("Ticked", n)).await?;
    }
    p.try_publish_series(&regarding, note("Other", "other"))
        .await?;
    assert_eq!(
        events(&api).await?,
        [
            ("Other".into(), 1, "other".into()),
            ("Ticked".into(), 3, "first".into())
        ]
    );
    let head = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("Ticked"))
        .expect("the Ticked Event");
    let series = head.series.as_ref().expect("a series");
    assert!(series.last_observed_time.0 >= head.event_time.as_ref().expect("eventTime").0);
    assert_eq!(head.reporting_controller.as_deref(), Some("events-test"));
    assert_eq!(head.reporting_instance.as_deref(), Some("events-test-0"));

    // The first Event deleted: the next repeat starts a new series instead of failing.
    api.delete(&head.name_any(), &DeleteParams::default())
        .await?;
    p.try_publish_series(&regarding, note("Ticked", "fourth"))
        .await?;
    p.try_publish_series(&regarding, note("Ticked", "fifth"))
        .await?;
    assert_eq!(
        events(&api).await?,
        [
            ("Other".into(), 1, "other".into()),
            ("Ticked".into(), 2, "fourth".into())
        ]
    );

    // Another object is another series.
    let other: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "other"}}))?;
    let other = cms.create(&PostParams::default(), &other).await?;
    p.try_publish_series(&other.object_ref(&()), note("Ticked", "sixth"))
        .await?;
    // And `publish` makes each Event its own object.
    p.publish(&regarding, None, note("Own", "a")).await;
    p.publish(&regarding, None, note("Own", "b")).await;
    assert_eq!(
        events(&api).await?,
        [
            ("Other".into(), 1, "other".into()),
            ("Own".into(), 1, "a".into()),
            ("Own".into(), 1, "b".into()),
            ("Ticked".into(), 1, "sixth".into()),
            ("Ticked".into(), 2, "fourth".into()),
        ]
    );
    Ok(())
}
