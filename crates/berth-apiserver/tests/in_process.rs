//! The in-process client is an ordinary kube-rs client: typed calls,
//! errors as `Status`, and watches, through the router with no network.

use std::sync::Arc;
use std::time::Duration;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_core::test_util::make_node;
use berth_store::{AnyStore, RedbStore};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Api;
use kube::api::{ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};

async fn server() -> (Arc<ApiServer>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("berth-in-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = AnyStore::Redb(RedbStore::open(&dir).expect("store"));
    let api = ApiServer::new(store, Clock::real(), ApiConfig::default())
        .await
        .expect("server");
    (api, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_clients_are_ordinary_kube_clients() {
    let (api, dir) = server().await;
    let admin = in_process::client(&api, User::admin(), "default").expect("client");
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"kube-node-lease".to_string()), "{names:?}");

    // A simulated node's client is authorized as that node.
    let n1 = in_process::client(&api, User::node("n1"), "default").expect("client");
    let nodes: Api<Node> = Api::all(n1);
    let created = nodes
        .create(&PostParams::default(), &make_node().name("n1").obj())
        .await
        .expect("own node");
    assert!(
        created
            .spec
            .and_then(|s| s.taints)
            .is_some_and(|t| t.iter().any(|t| t.key == "node.kubernetes.io/not-ready"))
    );
    let err = nodes
        .create(&PostParams::default(), &make_node().name("n2").obj())
        .await
        .expect_err("another node");
    match err {
        kube::Error::Api(status) => assert_eq!(status.code, 403),
        other => panic!("expected a 403 Status, got {other:?}"),
    }

    // Watches work through the router too.
    let all_nodes: Api<Node> = Api::all(admin);
    let mut events = watcher(all_nodes, watcher::Config::default()).boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), events.next()).await;
    assert!(matches!(first, Ok(Some(Ok(_)))), "{first:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The API server on the in-memory store under a paused clock: the set-up of
/// whole-cluster tests and scenarios. An hour of virtual time passes at once,
/// timestamps are virtual, and a watcher started before sees what happens after.
#[tokio::test(start_paused = true)]
async fn memory_store_server_runs_on_virtual_time() {
    let start: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("timestamp");
    let clock = Clock::virtual_from(start);
    let store = AnyStore::Memory(berth_store::MemStore::new());
    let api = ApiServer::new(store, clock.clone(), ApiConfig::default())
        .await
        .expect("server");
    let admin = in_process::client(&api, User::admin(), "default").expect("client");
    let nodes: Api<Node> = Api::all(admin);
    let mut events = watcher(nodes.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();

    tokio::time::sleep(Duration::from_secs(3600)).await;
    let created = nodes
        .create(&PostParams::default(), &make_node().name("n1").obj())
        .await
        .expect("create");
    let stamp = created
        .metadata
        .creation_timestamp
        .expect("creationTimestamp")
        .0;
    assert_eq!(stamp.to_string(), "2026-01-01T01:00:00Z");
    let seen = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the watcher sees the node")
        .expect("stream open")
        .expect("no error");
    assert_eq!(seen.metadata.name.as_deref(), Some("n1"));
}
