//! The recorder's Events as the API server ends up holding them: a burst
//! about one object is combined, counted on the combined Event by patches,
//! and cut after 25, as client-go's recorder writes them. The API server
//! runs on the in-memory store, everything on a paused tokio clock.

use std::time::Duration;

use berth_controllers::events::correlator::AGGREGATE_MESSAGE_PREFIX;
use berth_controllers::events::{EventRecorder, TYPE_NORMAL, object_ref};
use berth_testing::TestServer;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::ListParams;

const REASON: &str = "SuccessfulCreate";

async fn events(admin: &kube::Client) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(admin.clone(), "default");
    let mut items = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items;
    items.retain(|e| e.reason.as_deref() == Some(REASON));
    items.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
    items
}

#[tokio::test(start_paused = true)]
async fn a_burst_about_one_object_is_combined_counted_and_cut() {
    let TestServer {
        api: _api,
        clock,
        admin,
    } = TestServer::start().await;
    let owner = object_ref(
        "apps/v1",
        "ReplicaSet",
        &ObjectMeta {
            name: Some("web-abc".into()),
            namespace: Some("default".into()),
            uid: Some("4b1c0b1e-0000-4000-8000-000000000001".into()),
            ..ObjectMeta::default()
        },
    );
    let recorder = EventRecorder::new(admin.clone(), clock.clone(), "replicaset-controller");
    for i in 0..400 {
        recorder.record(
            owner.clone(),
            TYPE_NORMAL,
            REASON,
            format!("Created pod: web-abc-{i}"),
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let written = events(&admin).await;
    let messages: Vec<&str> = written
        .iter()
        .filter_map(|e| e.message.as_deref())
        .collect();
    assert_eq!(written.len(), 10, "{messages:?}");
    let combined: Vec<&Event> = written
        .iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.starts_with(AGGREGATE_MESSAGE_PREFIX))
        })
        .collect();
    assert_eq!(combined.len(), 1, "{messages:?}");
    // The 10th occurrence made it, the 11th to 25th counted on it by
    // patches (the message is the last one's), the rest cut.
    assert_eq!(combined[0].count, Some(16));
    assert_eq!(
        combined[0].message.as_deref(),
        Some("(combined from similar events): Created pod: web-abc-24")
    );
    assert!(written.iter().all(|e| e.count.is_some()));

    // Five minutes on, the bucket holds one more: its count is every
    // occurrence seen, the cut ones too (client-go counts before it
    // filters): 391 combined so far, this one the 392nd.
    tokio::time::sleep(Duration::from_secs(300)).await;
    recorder.record(
        owner.clone(),
        TYPE_NORMAL,
        REASON,
        "Created pod: web-abc-x".into(),
    );
    recorder.record(owner, TYPE_NORMAL, REASON, "Created pod: web-abc-y".into());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let written = events(&admin).await;
    assert_eq!(written.len(), 10);
    let combined = written
        .iter()
        .find(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.starts_with(AGGREGATE_MESSAGE_PREFIX))
        })
        .expect("the combined Event");
    assert_eq!(combined.count, Some(392));
    assert_eq!(
        combined.message.as_deref(),
        Some("(combined from similar events): Created pod: web-abc-x")
    );
    assert_ne!(combined.first_timestamp, combined.last_timestamp);
}
