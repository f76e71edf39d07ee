//! Many evictions falling due in the same instant: the taint eviction
//! controller carries them out in bounded parallel, each exactly once, and
//! its Events go through the recorder's bounded queue. The API server runs
//! on the in-memory store, everything on a paused tokio clock.

use std::collections::HashMap;
use std::time::Duration;

use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_controllers::events::{EventRecorder, TYPE_NORMAL, pod_ref};
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::taint_eviction::{
    Acknowledged, REASON, TaintEvictionConfig, TaintEvictionController,
};
use berth_core::test_util::{make_node, make_pod, tol_secs};
use berth_testing::TestServer;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Event, Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{ListParams, PostParams};

const KEY: &str = "example.com/drain";

fn start() -> Timestamp {
    berth_testing::START
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A pod bound to `node` that tolerates the drain taint for `seconds`.
fn tolerating(name: &str, node: &str, seconds: i64) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .node(node)
        .container("busybox")
        .toleration(tol_secs(KEY, "Exists", "", "NoExecute", seconds))
        .obj()
}

async fn events_with(admin: &kube::Client, prefix: &str) -> usize {
    let events: Api<Event> = Api::namespaced(admin.clone(), "default");
    events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .iter()
        .filter(|e| e.message.as_deref().is_some_and(|m| m.starts_with(prefix)))
        .count()
}

/// Many more due evictions than the concurrency limit: every pod gets
/// DisruptionTarget and a deletion, the controller acknowledges each
/// exactly once, at its due time, and records one Event per eviction.
#[tokio::test(start_paused = true)]
async fn evictions_due_together_each_happen_once() {
    let TestServer { api, clock, admin } = TestServer::start().await;
    let nodes: Api<Node> = Api::all(admin.clone());
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let added = start() + SignedDuration::from_secs(10);
    let taint = Taint {
        key: KEY.into(),
        effect: "NoExecute".into(),
        time_added: Some(Time(added)),
        value: None,
    };
    let count = 120;
    for n in 0..3 {
        nodes
            .create(
                &PostParams::default(),
                &make_node()
                    .name(&format!("node-{n}"))
                    .taints(vec![taint.clone()])
                    .obj(),
            )
            .await
            .expect("node");
    }
    for i in 0..count {
        pods.create(
            &PostParams::default(),
            &tolerating(&format!("pod-{i:03}"), &format!("node-{}", i % 3), 5),
        )
        .await
        .expect("pod");
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Acknowledged>();
    let config = TaintEvictionConfig {
        concurrency: 8,
        acknowledged: Some(tx),
        ..TaintEvictionConfig::default()
    };
    let client = in_process::client(&api, User::admin(), "default").expect("client");
    let controller = tokio::spawn(
        TaintEvictionController::new(
            berth_client::SharedWatches::new(client),
            clock.clone(),
            config,
            ControllerMetrics::default(),
        )
        .run(),
    );
    // The pods were bound at the start, before the taint: due 5 s after it.
    let due = added + SignedDuration::from_secs(5);
    clock.sleep_until(due + SignedDuration::from_secs(5)).await;

    let mut acknowledged: HashMap<String, usize> = HashMap::new();
    while let Ok(ack) = rx.try_recv() {
        assert_eq!(ack.due, due, "{}", ack.pod);
        assert!(
            ack.at >= due,
            "{} acknowledged before its due time",
            ack.pod
        );
        *acknowledged.entry(ack.pod.name).or_default() += 1;
    }
    assert_eq!(acknowledged.len(), count, "every pod evicted");
    assert!(acknowledged.values().all(|&n| n == 1), "{acknowledged:?}");
    for p in pods.list(&ListParams::default()).await.expect("pods").items {
        let name = p.metadata.name.clone().unwrap_or_default();
        assert!(
            p.metadata.deletion_timestamp.is_some(),
            "{name} not deleted"
        );
        let target = p
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"));
        assert_eq!(
            target.and_then(|c| c.reason.as_deref()),
            Some("DeletionByTaintManager"),
            "{name}"
        );
    }
    assert_eq!(events_with(&admin, "Marking for deletion Pod").await, count);
    controller.abort();
}

/// The recorder's queue holds `capacity` Events: what is recorded beyond
/// that before the writer catches up is dropped and counted, and what was
/// queued is still written.
#[tokio::test(start_paused = true)]
async fn events_beyond_the_queue_are_dropped_and_counted() {
    let TestServer {
        api: _api,
        clock,
        admin,
    } = TestServer::start().await;
    let cases: [(usize, usize, u64); 3] = [(3, 2, 1), (5, 5, 0), (9, 4, 5)];
    for (run, (recorded, capacity, dropped)) in cases.into_iter().enumerate() {
        let recorder = EventRecorder::with_capacity(admin.clone(), clock.clone(), "test", capacity);
        let prefix = format!("run {run} ");
        // No await in between: the writer cannot run, so the queue fills.
        for i in 0..recorded {
            recorder.record(
                pod_ref("default", &format!("p{i}"), None),
                TYPE_NORMAL,
                REASON,
                format!("{prefix}{i}"),
            );
        }
        assert_eq!(recorder.dropped(), dropped, "run {run}");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let written = recorded.min(capacity);
        assert_eq!(events_with(&admin, &prefix).await, written, "run {run}");
    }
}
