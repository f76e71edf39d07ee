//! Whole-cluster scenarios in virtual time: the API server on the in-memory
//! store, the controllers over in-process clients, everything on a paused
//! tokio clock. The tests play the nodes' agents themselves (Lease renewals
//! and status updates through the API) and watch what the controllers do,
//! noting the virtual time of each change.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::{ControllerOptions, EnabledControllers, spawn};
use berth_core::clock::Clock;
use berth_testing::TestServer;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    Container, Event, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::Api;
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use tokio::task::JoinSet;

const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NO_EXECUTE: &str = "NoExecute";

/// What the test saw happen, with the virtual time it happened.
#[derive(Default)]
struct Seen {
    /// First time a pod was seen being deleted (deletionTimestamp set, or gone).
    pod_deleted: HashMap<String, Timestamp>,
    /// First time a node's Ready condition was seen Unknown.
    node_unknown: HashMap<String, Timestamp>,
    /// Nodes' current taints (key:effect) and when each was first seen.
    node_taints: HashMap<String, HashMap<String, Timestamp>>,
    /// When a node's taint (`node/key:effect`) was last seen to go.
    taint_removed: HashMap<String, Timestamp>,
}

struct Cluster {
    api: Arc<ApiServer>,
    admin: kube::Client,
    clock: Clock,
    seen: Arc<Mutex<Seen>>,
    controllers: Option<JoinSet<()>>,
    metrics: ControllerMetrics,
    _observers: JoinSet<()>,
    /// Nodes whose agents are alive (renew their Lease every 10 s).
    alive: Arc<Mutex<BTreeSet<String>>>,
}

fn start() -> Timestamp {
    berth_testing::START
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

impl Cluster {
    async fn new(controllers: &str) -> Cluster {
        let TestServer { api, clock, admin } = TestServer::start().await;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut observers = JoinSet::new();
        observers.spawn(observe_pods(admin.clone(), clock.clone(), seen.clone()));
        observers.spawn(observe_nodes(admin.clone(), clock.clone(), seen.clone()));
        let alive = Arc::new(Mutex::new(BTreeSet::new()));
        observers.spawn(agents(admin.clone(), clock.clone(), alive.clone()));
        let mut cluster = Cluster {
            api,
            admin,
            clock,
            seen,
            controllers: None,
            metrics: ControllerMetrics::default(),
            _observers: observers,
            alive,
        };
        cluster.start_controllers(controllers);
        cluster
    }

    fn start_controllers(&mut self, enabled: &str) {
        let options = ControllerOptions {
            enabled: EnabledControllers::parse(enabled).expect("controllers"),
            ..ControllerOptions::default()
        };
        let client = in_process::client(&self.api, User::admin(), "default").expect("client");
        self.controllers = Some(spawn(
            client,
            self.clock.clone(),
            options,
            self.metrics.clone(),
            None,
        ));
    }

    fn stop_controllers(&mut self) {
        self.controllers = None;
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Sleeps until `start + seconds` of virtual time.
    async fn at(&self, seconds: f64) {
        let deadline = start() + SignedDuration::from_secs_f64(seconds);
        self.clock.sleep_until(deadline).await;
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.admin.clone())
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), "default")
    }

    /// A node as its agent registers it: Ready, in `zone`, with a Lease;
    /// its agent keeps renewing the Lease.
    async fn add_node(&self, name: &str, zone: &str) {
        let mut node = Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    [("topology.kubernetes.io/zone".to_string(), zone.to_string())].into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            ..Node::default()
        };
        node.status = Some(NodeStatus {
            conditions: Some(vec![condition("Ready", "True", self.now())]),
            ..NodeStatus::default()
        });
        self.nodes()
            .create(&PostParams::default(), &node)
            .await
            .expect("create node");
        self.set_condition(name, "Ready", "True").await;
        renew_lease(&self.admin, name, self.now()).await;
        self.alive.lock().expect("lock").insert(name.into());
    }

    /// The node's agent stops: no more Lease renewals.
    fn kill(&self, name: &str) {
        self.alive.lock().expect("lock").remove(name);
    }

    /// The node's agent comes back: renews its Lease and posts Ready now.
    async fn revive(&self, name: &str) {
        renew_lease(&self.admin, name, self.now()).await;
        self.set_condition(name, "Ready", "True").await;
        self.alive.lock().expect("lock").insert(name.into());
    }

    /// Sets a condition as the node's agent does (retrying on conflicts
    /// with the controllers' writes).
    async fn set_condition(&self, name: &str, type_: &str, status: &str) {
        loop {
            let now = self.now();
            let mut node = self.nodes().get(name).await.expect("node");
            let conditions = node
                .status
                .get_or_insert_with(Default::default)
                .conditions
                .get_or_insert_with(Vec::new);
            conditions.retain(|c| c.type_ != type_);
            conditions.push(condition(type_, status, now));
            match self
                .nodes()
                .replace_status(name, &PostParams::default(), &node)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(err) => panic!("node status: {err}"),
            }
        }
    }

    /// Changes a node as an admin does (retrying on conflicts).
    async fn edit_node(&self, name: &str, edit: impl Fn(&mut Node)) {
        loop {
            let mut node = self.nodes().get(name).await.expect("node");
            edit(&mut node);
            match self
                .nodes()
                .replace(name, &PostParams::default(), &node)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(err) => panic!("node update: {err}"),
            }
        }
    }

    async fn add_taint(&self, node: &str, taint: Taint) {
        self.edit_node(node, |n| {
            n.spec
                .get_or_insert_with(Default::default)
                .taints
                .get_or_insert_with(Vec::new)
                .push(taint.clone())
        })
        .await;
    }

    async fn add_pod(&self, name: &str, node: &str, tolerations: Vec<Toleration>) {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                containers: vec![Container {
                    name: "c".into(),
                    image: Some("busybox".into()),
                    ..Container::default()
                }],
                tolerations: Some(tolerations),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
    }

    fn deleted_at(&self, pod: &str) -> Option<Timestamp> {
        self.seen
            .lock()
            .expect("lock")
            .pod_deleted
            .get(pod)
            .copied()
    }

    fn unknown_at(&self, node: &str) -> Option<Timestamp> {
        self.seen
            .lock()
            .expect("lock")
            .node_unknown
            .get(node)
            .copied()
    }

    fn taint_seen_at(&self, node: &str, key_effect: &str) -> Option<Timestamp> {
        self.seen
            .lock()
            .expect("lock")
            .node_taints
            .get(node)
            .and_then(|t| t.get(key_effect))
            .copied()
    }

    /// The node's taint (`key:effect`) was seen to go at `start + seconds`.
    fn assert_removed_at(&self, node: &str, key_effect: &str, seconds: i64) {
        let removed = self
            .seen
            .lock()
            .expect("lock")
            .taint_removed
            .get(&format!("{node}/{key_effect}"))
            .copied();
        let what = format!("{node} {key_effect} removed");
        let removed = removed.unwrap_or_else(|| panic!("{what}: never"));
        assert_close(removed, start() + SignedDuration::from_secs(seconds), &what);
    }

    /// Adds `taint` to the node, to expire at `start + seconds`, as
    /// `berth taint --for` writes it.
    async fn add_expiring_taint(&self, node: &str, taint: Taint, seconds: i64) {
        let at = start() + SignedDuration::from_secs(seconds);
        self.edit_node(node, |n| {
            n.spec
                .get_or_insert_with(Default::default)
                .taints
                .get_or_insert_with(Vec::new)
                .push(taint.clone());
            berth_core::taint_expiry::set(n, &taint, at);
        })
        .await;
    }

    async fn taint(&self, node: &str, key: &str, effect: &str) -> Option<Taint> {
        let n = self.nodes().get(node).await.expect("node");
        n.spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .find(|t| t.key == key && t.effect == effect)
    }

    async fn events(&self, reason: &str) -> Vec<String> {
        let events: Api<Event> = Api::all(self.admin.clone());
        let list = events.list(&ListParams::default()).await.expect("events");
        list.items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.message)
            .collect()
    }
}

fn condition(type_: &str, status: &str, now: Timestamp) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some("KubeletReady".into()),
        last_heartbeat_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
        ..NodeCondition::default()
    }
}

fn toleration(key: &str, seconds: Option<i64>) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(NO_EXECUTE.into()),
        toleration_seconds: seconds,
        ..Toleration::default()
    }
}

async fn renew_lease(client: &kube::Client, name: &str, now: Timestamp) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let spec = LeaseSpec {
        holder_identity: Some(name.into()),
        lease_duration_seconds: Some(40),
        renew_time: Some(MicroTime(now)),
        ..LeaseSpec::default()
    };
    match leases.get_opt(name).await.expect("get lease") {
        Some(mut lease) => {
            lease.spec = Some(spec);
            leases
                .replace(name, &PostParams::default(), &lease)
                .await
                .expect("renew lease");
        }
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("kube-node-lease".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            leases
                .create(&PostParams::default(), &lease)
                .await
                .expect("create lease");
        }
    }
}

/// The agents of the alive nodes: a Lease renewal every 10 s.
async fn agents(client: kube::Client, clock: Clock, alive: Arc<Mutex<BTreeSet<String>>>) {
    loop {
        clock.sleep(Duration::from_secs(10)).await;
        let names: Vec<String> = alive.lock().expect("lock").iter().cloned().collect();
        for name in names {
            renew_lease(&client, &name, clock.now()).await;
        }
    }
}

async fn observe_pods(client: kube::Client, clock: Clock, seen: Arc<Mutex<Seen>>) {
    let mut events = watcher(Api::<Pod>::all(client), watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        let (pod, gone) = match event {
            Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => {
                let gone = p.metadata.deletion_timestamp.is_some();
                (p, gone)
            }
            Ok(watcher::Event::Delete(p)) => (p, true),
            _ => continue,
        };
        if gone {
            let name = pod.metadata.name.unwrap_or_default();
            seen.lock()
                .expect("lock")
                .pod_deleted
                .entry(name)
                .or_insert_with(|| clock.now());
        }
    }
}

async fn observe_nodes(client: kube::Client, clock: Clock, seen: Arc<Mutex<Seen>>) {
    let mut events = watcher(Api::<Node>::all(client), watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        let node = match event {
            Ok(watcher::Event::Apply(n)) | Ok(watcher::Event::InitApply(n)) => n,
            _ => continue,
        };
        let now = clock.now();
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut seen = seen.lock().expect("lock");
        let unknown = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Ready" && c.status == "Unknown")
            });
        if unknown {
            seen.node_unknown.entry(name.clone()).or_insert(now);
        }
        let current: Vec<String> = node
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect();
        let taints = seen.node_taints.entry(name.clone()).or_default();
        let gone: Vec<String> = taints
            .keys()
            .filter(|k| !current.contains(k))
            .cloned()
            .collect();
        taints.retain(|k, _| current.contains(k));
        for key in current {
            taints.entry(key).or_insert(now);
        }
        for key in gone {
            seen.taint_removed.insert(format!("{name}/{key}"), now);
        }
    }
}

fn secs(d: SignedDuration) -> f64 {
    d.as_secs_f64()
}

fn assert_close(got: Timestamp, want: Timestamp, what: &str) {
    let diff = secs(got.duration_since(want)).abs();
    assert!(
        diff <= 0.1,
        "{what}: at {got}, want {want} (off by {diff} s)"
    );
}

/// A node that stops heart-beating is Unknown 50–55 s later, tainted
/// unreachable:NoExecute, and its pods with the default 300 s toleration
/// leave 300 s after the taint's timeAdded.
#[tokio::test(start_paused = true)]
async fn silent_node_is_unknown_then_tainted_then_its_pods_evicted_on_time() {
    let c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_node("n2", "z1").await;
    c.add_pod("web", "n1", vec![]).await;
    let pod = c.pods().get("web").await.expect("pod");
    let defaults = pod
        .spec
        .and_then(|s| s.tolerations)
        .unwrap_or_default()
        .iter()
        .filter(|t| t.toleration_seconds == Some(300))
        .count();
    assert_eq!(defaults, 2, "admission added the 300 s tolerations");

    // n1's agent renews at 10 and 20 s, then dies.
    c.at(25.0).await;
    c.kill("n1");
    let last_renewal = start() + SignedDuration::from_secs(20);
    c.at(90.0).await;
    let unknown = c.unknown_at("n1").expect("n1 went Unknown");
    let silent_for = secs(unknown.duration_since(last_renewal));
    assert!(
        (50.0..=55.0).contains(&silent_for),
        "Unknown {silent_for} s after the last heartbeat"
    );
    assert_eq!(c.unknown_at("n2"), None, "n2 keeps heart-beating");
    let node = c.nodes().get("n1").await.expect("n1");
    let ready = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(
        ready.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    let taint = c
        .taint("n1", UNREACHABLE, NO_EXECUTE)
        .await
        .expect("unreachable:NoExecute");
    let added = taint.time_added.expect("timeAdded").0;
    assert!(
        c.taint("n1", UNREACHABLE, "NoSchedule").await.is_some(),
        "and the NoSchedule one"
    );

    c.at(secs(added.duration_since(start())) + 299.0).await;
    assert_eq!(
        c.deleted_at("web"),
        None,
        "still there 299 s after the taint"
    );
    c.at(secs(added.duration_since(start())) + 301.0).await;
    let deleted = c.deleted_at("web").expect("evicted");
    assert_close(deleted, added + SignedDuration::from_secs(300), "eviction");
    let pod = c.pods().get("web").await.expect("terminating pod");
    let target = pod
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .expect("DisruptionTarget");
    assert_eq!(
        (target.status.as_str(), target.reason.as_deref()),
        ("True", Some("DeletionByTaintManager"))
    );
    assert_eq!(
        c.events("TaintManagerEviction").await,
        ["Marking for deletion Pod default/web"]
    );
}

/// The monitor pass that marks a silent node Unknown also taints it
/// unreachable:NoExecute: Ready's lastTransitionTime and the taint's
/// timeAdded are one instant, and so are the two changes on the watch (it
/// used to come one monitor period, 5 s, after the Unknown).
#[tokio::test(start_paused = true)]
async fn unknown_and_the_unreachable_taint_come_at_the_same_instant() {
    let c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_node("n2", "z1").await;
    c.at(25.0).await;
    c.kill("n1");
    c.at(90.0).await;
    let unknown = c.unknown_at("n1").expect("n1 went Unknown");
    let tainted = c
        .taint_seen_at("n1", &format!("{UNREACHABLE}:{NO_EXECUTE}"))
        .expect("n1 tainted unreachable:NoExecute");
    assert_eq!(
        tainted, unknown,
        "taint seen at {tainted}, Unknown at {unknown}"
    );
    let node = c.nodes().get("n1").await.expect("n1");
    let transition = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .and_then(|c| c.last_transition_time)
        .expect("Ready's lastTransitionTime");
    let added = c
        .taint("n1", UNREACHABLE, NO_EXECUTE)
        .await
        .and_then(|t| t.time_added)
        .expect("the taint's timeAdded");
    assert_eq!(added, transition);
}

/// A pod bound to an already-tainted node leaves `tolerationSeconds` after
/// its binding; pods already there leave that long after the taint.
#[tokio::test(start_paused = true)]
async fn tolerations_count_from_the_taint_or_the_binding_whichever_is_later() {
    let c = Cluster::new("taint-eviction-controller").await;
    c.add_node("n1", "z1").await;
    let maint = "example.com/maintenance";
    c.add_pod("long-a", "n1", vec![toleration(maint, Some(6000))])
        .await;
    c.add_pod("long-b", "n1", vec![toleration(maint, Some(6000))])
        .await;
    c.add_pod("forever", "n1", vec![toleration(maint, None)])
        .await;
    c.at(10.0).await;
    c.add_taint(
        "n1",
        Taint {
            key: maint.into(),
            effect: NO_EXECUTE.into(),
            ..Taint::default()
        },
    )
    .await;
    let added = c
        .taint("n1", maint, NO_EXECUTE)
        .await
        .and_then(|t| t.time_added)
        .expect("timeAdded stamped")
        .0;
    assert_eq!(added, start() + SignedDuration::from_secs(10));
    c.add_pod("untolerating", "n1", vec![]).await;
    c.at(60.0).await;
    assert_close(
        c.deleted_at("untolerating").expect("evicted at once"),
        start() + SignedDuration::from_secs(10),
        "untolerating pod",
    );
    c.add_pod("short", "n1", vec![toleration(maint, Some(100))])
        .await;
    c.at(159.0).await;
    assert_eq!(c.deleted_at("short"), None);
    c.at(161.0).await;
    assert_close(
        c.deleted_at("short").expect("evicted"),
        start() + SignedDuration::from_secs(160),
        "100 s after binding",
    );
    c.at(6009.0).await;
    assert_eq!(c.deleted_at("long-a"), None, "6000 s pods stay");
    c.at(6011.0).await;
    for pod in ["long-a", "long-b"] {
        assert_close(
            c.deleted_at(pod).expect("evicted"),
            added + SignedDuration::from_secs(6000),
            pod,
        );
    }
    assert_eq!(c.deleted_at("forever"), None);
    let deletions = c.metrics.pod_deletions.get();
    assert_eq!(deletions, 4);
}

/// A heartbeat that resumes before the pods fall due lifts the taint and
/// cancels every eviction.
#[tokio::test(start_paused = true)]
async fn resumed_heartbeat_cancels_everything() {
    let c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_node("n2", "z1").await;
    c.add_pod("web", "n1", vec![]).await;
    c.kill("n1");
    c.at(100.0).await;
    assert!(c.taint("n1", UNREACHABLE, NO_EXECUTE).await.is_some());
    c.revive("n1").await;
    c.at(120.0).await;
    assert_eq!(c.taint("n1", UNREACHABLE, NO_EXECUTE).await, None);
    assert_eq!(c.taint("n1", UNREACHABLE, "NoSchedule").await, None);
    c.at(1000.0).await;
    assert_eq!(c.deleted_at("web"), None, "not evicted");
    assert_eq!(
        c.events("TaintManagerEviction").await,
        ["Cancelling deletion of Pod default/web"]
    );
}

async fn tainted_count(c: &Cluster, prefix: &str) -> usize {
    let nodes = c.nodes().list(&ListParams::default()).await.expect("nodes");
    nodes
        .items
        .iter()
        .filter(|n| {
            n.metadata
                .name
                .as_deref()
                .is_some_and(|x| x.starts_with(prefix))
        })
        .filter(|n| {
            n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| {
                    t.iter()
                        .any(|t| t.key == UNREACHABLE && t.effect == NO_EXECUTE)
                })
        })
        .count()
}

/// 60 % of a 100-node zone failing taints at 0.01 nodes/s; 60 % of a
/// 30-node zone (at most --large-cluster-size-threshold) not at all.
#[tokio::test(start_paused = true)]
async fn partial_zone_disruption_slows_or_stops_tainting() {
    let c = Cluster::new("node-lifecycle-controller").await;
    for i in 0..100 {
        c.add_node(&format!("big-{i:03}"), "big").await;
    }
    for i in 0..30 {
        c.add_node(&format!("small-{i:02}"), "small").await;
    }
    c.at(15.0).await;
    for i in 0..60 {
        c.kill(&format!("big-{i:03}"));
    }
    for i in 0..18 {
        c.kill(&format!("small-{i:02}"));
    }
    // Last renewal at 10 s: Unknown and queued at the pass after 60 s.
    c.at(80.0).await;
    assert!(c.unknown_at("big-000").is_some());
    let first = tainted_count(&c, "big-").await;
    assert_eq!(first, 1, "one token at once");
    c.at(80.0 + 250.0).await;
    assert_eq!(tainted_count(&c, "big-").await, 3, "then one per 100 s");
    assert_eq!(tainted_count(&c, "small-").await, 0, "small zone: rate 0");
    let times = {
        let seen = c.seen.lock().expect("lock");
        let mut t: Vec<Timestamp> = seen
            .node_taints
            .values()
            .filter_map(|t| t.get("node.kubernetes.io/unreachable:NoExecute").copied())
            .collect();
        t.sort();
        t
    };
    assert_eq!(times.len(), 3);
    for pair in times.windows(2) {
        let gap = secs(pair[1].duration_since(pair[0]));
        assert!((gap - 100.0).abs() <= 0.1, "gap {gap} s");
    }
    let zone = ControllerMetrics::zone(":\0:big");
    assert_eq!(c.metrics.evictions.get_or_create(&zone).get(), 3);
    assert_eq!(c.metrics.zone_health.get_or_create(&zone).get(), 40.0);
    assert_eq!(c.metrics.zone_size.get_or_create(&zone).get(), 100.0);
}

/// Every zone failing: the controller assumes it is the one cut off and
/// evicts nothing.
#[tokio::test(start_paused = true)]
async fn every_zone_failing_evicts_nothing() {
    let c = Cluster::new("*").await;
    for zone in ["a", "b"] {
        for i in 0..3 {
            c.add_node(&format!("{zone}{i}"), zone).await;
        }
    }
    c.add_pod("web", "a0", vec![]).await;
    for zone in ["a", "b"] {
        for i in 0..3 {
            c.kill(&format!("{zone}{i}"));
        }
    }
    c.at(1000.0).await;
    assert!(c.unknown_at("a0").is_some());
    assert_eq!(tainted_count(&c, "").await, 0);
    assert_eq!(c.deleted_at("web"), None);
    // One node comes back: evictions resume, from a fresh grace period.
    c.revive("b0").await;
    c.at(1100.0).await;
    assert!(tainted_count(&c, "").await >= 1);
}

/// Condition taints follow the conditions: MemoryPressure adds
/// memory-pressure:NoSchedule and clears it; cordoning adds unschedulable.
#[tokio::test(start_paused = true)]
async fn memory_pressure_and_cordon_taints_follow_the_node() {
    let c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_taint(
        "n1",
        Taint {
            key: "dedicated".into(),
            value: Some("db".into()),
            effect: "NoSchedule".into(),
            ..Taint::default()
        },
    )
    .await;
    c.at(1.0).await;
    assert_eq!(
        c.taint("n1", "node.kubernetes.io/not-ready", "NoSchedule")
            .await,
        None,
        "the admission's not-ready taint is lifted once Ready"
    );
    c.set_condition("n1", "MemoryPressure", "True").await;
    c.at(2.0).await;
    assert!(
        c.taint("n1", "node.kubernetes.io/memory-pressure", "NoSchedule")
            .await
            .is_some()
    );
    assert_close(
        c.taint_seen_at("n1", "node.kubernetes.io/memory-pressure:NoSchedule")
            .expect("seen"),
        start() + SignedDuration::from_secs(1),
        "tainted on the status change",
    );
    c.set_condition("n1", "MemoryPressure", "False").await;
    c.at(3.0).await;
    assert_eq!(
        c.taint("n1", "node.kubernetes.io/memory-pressure", "NoSchedule")
            .await,
        None
    );
    c.edit_node("n1", |n| {
        n.spec.get_or_insert_with(Default::default).unschedulable = Some(true)
    })
    .await;
    c.at(4.0).await;
    assert!(
        c.taint("n1", "node.kubernetes.io/unschedulable", "NoSchedule")
            .await
            .is_some()
    );
    assert!(
        c.taint("n1", "dedicated", "NoSchedule").await.is_some(),
        "untouched"
    );
}

/// Restarting the controllers in the middle keeps every due time: one due
/// during the downtime happens at once, the rest at their time.
#[tokio::test(start_paused = true)]
async fn restart_keeps_due_times() {
    let mut c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_node("n2", "z1").await;
    c.add_pod("default-300", "n1", vec![]).await;
    c.add_pod("short-120", "n1", vec![toleration(UNREACHABLE, Some(120))])
        .await;
    c.kill("n1");
    c.at(90.0).await;
    let added = c
        .taint("n1", UNREACHABLE, NO_EXECUTE)
        .await
        .and_then(|t| t.time_added)
        .expect("tainted")
        .0;
    let t_added = secs(added.duration_since(start()));
    c.at(t_added + 100.0).await;
    c.stop_controllers();
    c.at(t_added + 150.0).await;
    assert_eq!(c.deleted_at("short-120"), None, "controllers are down");
    c.start_controllers("*");
    c.at(t_added + 151.0).await;
    assert_close(
        c.deleted_at("short-120").expect("evicted on restart"),
        added + SignedDuration::from_secs(150),
        "due during the downtime: at once",
    );
    let taint = c.taint("n1", UNREACHABLE, NO_EXECUTE).await.expect("kept");
    assert_eq!(taint.time_added.map(|t| t.0), Some(added), "timeAdded kept");
    c.at(t_added + 301.0).await;
    assert_close(
        c.deleted_at("default-300").expect("evicted"),
        added + SignedDuration::from_secs(300),
        "exact due time after a restart",
    );
}

/// The out-of-service taint force-deletes the node's pods that do not
/// tolerate it, whatever its effect.
#[tokio::test(start_paused = true)]
async fn out_of_service_force_deletes_untolerating_pods() {
    let c = Cluster::new("taint-eviction-controller").await;
    c.add_node("n1", "z1").await;
    c.add_pod("web", "n1", vec![]).await;
    c.add_pod(
        "tolerant",
        "n1",
        vec![Toleration {
            key: Some("node.kubernetes.io/out-of-service".into()),
            operator: Some("Exists".into()),
            ..Toleration::default()
        }],
    )
    .await;
    c.at(10.0).await;
    c.add_taint(
        "n1",
        Taint {
            key: "node.kubernetes.io/out-of-service".into(),
            value: Some("nodeshutdown".into()),
            effect: "NoSchedule".into(),
            ..Taint::default()
        },
    )
    .await;
    c.at(11.0).await;
    assert_close(
        c.deleted_at("web").expect("deleted"),
        start() + SignedDuration::from_secs(10),
        "force deletion",
    );
    // Grace period 0: the pod is gone, not terminating.
    assert!(c.pods().get_opt("web").await.expect("get").is_none());
    assert!(c.pods().get_opt("tolerant").await.expect("get").is_some());
}

/// Two servers' controllers share the API: only the one holding the
/// kube-controller-manager Lease acts; when it dies the other takes over
/// and keeps the due time.
#[tokio::test(start_paused = true)]
async fn only_the_leader_evicts_and_a_successor_keeps_the_due_time() {
    let mut c = Cluster::new("").await; // no unelected controllers
    c.stop_controllers();
    let elect = |identity: &str| {
        let client = in_process::client(&c.api, User::admin(), "default").expect("client");
        let leadership = berth_leader::spawn(
            client.clone(),
            c.clock.clone(),
            berth_leader::Config::new("kube-controller-manager", identity),
        );
        let metrics = ControllerMetrics::default();
        let tasks = spawn(
            client,
            c.clock.clone(),
            ControllerOptions::default(),
            metrics.clone(),
            Some(leadership.subscribe()),
        );
        (leadership, tasks, metrics)
    };
    let (a, a_tasks, a_metrics) = elect("server-a");
    c.at(1.0).await;
    let (b, b_tasks, b_metrics) = elect("server-b");
    c.at(5.0).await;
    assert!(a.is_leader() && !b.is_leader());
    c.add_node("n1", "z1").await;
    c.add_node("n2", "z1").await;
    c.add_pod("web", "n1", vec![]).await;
    c.kill("n1");
    c.at(90.0).await;
    let added = c
        .taint("n1", UNREACHABLE, NO_EXECUTE)
        .await
        .and_then(|t| t.time_added)
        .expect("tainted by the leader")
        .0;
    // Server A crashes.
    drop(a_tasks);
    drop(a);
    c.at(secs(added.duration_since(start())) + 100.0).await;
    assert!(b.is_leader(), "b took over");
    c.at(secs(added.duration_since(start())) + 301.0).await;
    assert_close(
        c.deleted_at("web").expect("evicted"),
        added + SignedDuration::from_secs(300),
        "eviction by the successor",
    );
    assert_eq!(
        (a_metrics.pod_deletions.get(), b_metrics.pod_deletions.get()),
        (0, 1)
    );
    assert_eq!(
        c.events("TaintManagerEviction").await,
        ["Marking for deletion Pod default/web"],
        "evicted once"
    );
    drop(b_tasks);
}

fn maintenance(effect: &str) -> Taint {
    Taint {
        key: "example.com/maintenance".into(),
        value: Some("kernel".into()),
        effect: effect.into(),
        time_added: None,
    }
}

/// Issue 23: a taint with a `berth.dev/taint-expiry` time is removed by the
/// node lifecycle controller at that time (the controller sleeps until it),
/// with its entry and an event; the node's other taints stay.
#[tokio::test(start_paused = true)]
async fn an_expiring_taint_is_removed_at_its_time_with_an_event() {
    let c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_expiring_taint("n1", maintenance("NoSchedule"), 90)
        .await;
    c.add_expiring_taint("n1", maintenance("NoExecute"), 125)
        .await;
    c.add_taint(
        "n1",
        Taint {
            key: "forever".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        },
    )
    .await;
    c.at(100.0).await;
    c.assert_removed_at("n1", "example.com/maintenance:NoSchedule", 90);
    assert!(
        c.taint("n1", "example.com/maintenance", NO_EXECUTE)
            .await
            .is_some()
    );
    c.at(200.0).await;
    c.assert_removed_at("n1", "example.com/maintenance:NoExecute", 125);
    let node = c.nodes().get("n1").await.expect("node");
    let left: Vec<String> = node
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .iter()
        .map(|t| t.key.clone())
        .collect();
    assert_eq!(left, ["forever"]);
    assert_eq!(
        node.metadata
            .annotations
            .unwrap_or_default()
            .get(berth_core::taint_expiry::ANNOTATION),
        None,
        "every entry went with its taint"
    );
    assert_eq!(
        c.events("TaintExpired").await,
        [
            "Removed taint example.com/maintenance=kernel:NoSchedule, which expired at 2026-01-01T00:01:30Z",
            "Removed taint example.com/maintenance=kernel:NoExecute, which expired at 2026-01-01T00:02:05Z",
        ]
    );
}

/// An expiry that passes while the controllers are down (no leader, the
/// process restarting) is acted on as soon as they are back: the taint
/// goes right after the restart, not never.
#[tokio::test(start_paused = true)]
async fn an_expiry_passed_while_the_controllers_were_down_is_acted_on_at_restart() {
    let mut c = Cluster::new("*").await;
    c.add_node("n1", "z1").await;
    c.add_expiring_taint("n1", maintenance("NoExecute"), 60)
        .await;
    c.at(10.0).await;
    c.stop_controllers();
    c.at(300.0).await;
    assert!(
        c.taint("n1", "example.com/maintenance", NO_EXECUTE)
            .await
            .is_some(),
        "nobody removed it while the controllers were down"
    );
    c.start_controllers("*");
    c.at(310.0).await;
    // Right after the restart.
    c.assert_removed_at("n1", "example.com/maintenance:NoExecute", 300);
    assert_eq!(
        c.events("TaintExpired").await,
        [
            "Removed taint example.com/maintenance=kernel:NoExecute, which expired at 2026-01-01T00:01:00Z"
        ]
    );
}
