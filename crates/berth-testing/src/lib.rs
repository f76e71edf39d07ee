//! berth-testing: the test server every whole-cluster test starts, in one
//! place. A dev-dependency only; nothing in berth's binaries uses it.
//!
//! [`TestServer::start`] is berth's API server on the in-memory store
//! under a virtual clock, with an admin client: call it inside a test whose
//! tokio time is paused (`#[tokio::test(start_paused = true)]`), so an
//! hour passes at once and every timestamp is virtual. The pod and node
//! builders tests fill it with are berth-core's (`berth_core::test_util`,
//! the `test-util` feature). [`pod_history`] records what a watch of a
//! namespace's pods showed, for the rollout tests' invariants.
//!
//! ```no_run
//! # async fn example() {
//! use berth_testing::TestServer;
//! use k8s_openapi::api::core::v1::Node;
//!
//! let server = TestServer::start().await;
//! let nodes: kube::Api<Node> = kube::Api::all(server.admin.clone());
//! # }
//! ```

pub mod pod_history;

use std::sync::Arc;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::PostParams;

/// The virtual clock's reading when a test server starts.
pub const START: &str = "2026-01-01T00:00:00Z";

/// An API server for a test, its clock and an admin client.
pub struct TestServer {
    pub api: Arc<ApiServer>,
    pub clock: Clock,
    pub admin: kube::Client,
}

impl TestServer {
    /// The server with its default configuration, its clock at [`START`].
    pub async fn start() -> TestServer {
        TestServer::start_with(ApiConfig::default()).await
    }

    /// The server with `config`, its clock at [`START`].
    pub async fn start_with(config: ApiConfig) -> TestServer {
        let start: Timestamp = START.parse().unwrap_or(Timestamp::UNIX_EPOCH);
        let clock = Clock::virtual_from(start);
        let api = ApiServer::new(AnyStore::Memory(MemStore::new()), clock.clone(), config)
            .await
            .expect("the API server starts on the in-memory store");
        let admin = TestServer::client_of(&api, User::admin());
        TestServer { api, clock, admin }
    }

    /// A client acting as `user` (`User::node("n1")`, ...).
    pub fn client(&self, user: User) -> kube::Client {
        TestServer::client_of(&self.api, user)
    }

    fn client_of(api: &Arc<ApiServer>, user: User) -> kube::Client {
        in_process::client(api, user, "default").expect("the OS gives a random token")
    }
}

/// The Nodes' resourceVersion now: where [`node_as_created`] watches from.
pub async fn nodes_revision(server: &TestServer) -> String {
    let nodes: Api<Node> = Api::all(server.admin.clone());
    nodes
        .list_metadata(&kube::api::ListParams::default())
        .await
        .expect("list the nodes")
        .metadata
        .resource_version
        .unwrap_or_default()
}

/// Node `name` as it was created, after `since` (a [`nodes_revision`]
/// taken before): its first version, whatever was written to it since.
pub async fn node_as_created(server: &TestServer, since: &str, name: &str) -> Node {
    use futures::StreamExt;
    use kube::api::{WatchEvent, WatchParams};
    let nodes: Api<Node> = Api::all(server.admin.clone());
    let mut events = nodes
        .watch(&WatchParams::default(), since)
        .await
        .expect("watch the nodes")
        .boxed();
    loop {
        match events.next().await {
            Some(Ok(WatchEvent::Added(node))) if node.metadata.name.as_deref() == Some(name) => {
                return node;
            }
            Some(Ok(_)) => continue,
            other => panic!("no creation of {name}: {other:?}"),
        }
    }
}

/// What the node lifecycle controller writes for a node that went silent,
/// done by hand: every condition of Node `name` set Unknown
/// (`NodeStatusUnknown`) at the clock's time, which this returns.
pub async fn mark_unknown(server: &TestServer, name: &str) -> Timestamp {
    let nodes: Api<Node> = Api::all(server.admin.clone());
    let marked = server.clock.now();
    let mut node = nodes.get_status(name).await.expect("the node exists");
    let conditions = node.status.as_mut().and_then(|s| s.conditions.as_mut());
    for c in conditions.into_iter().flatten() {
        c.status = "Unknown".into();
        c.reason = Some("NodeStatusUnknown".into());
        c.message = Some("Kubelet stopped posting node status.".into());
        c.last_transition_time = Some(Time(marked));
    }
    nodes
        .replace_status(name, &PostParams::default(), &node)
        .await
        .expect("the node's status is replaced");
    marked
}
