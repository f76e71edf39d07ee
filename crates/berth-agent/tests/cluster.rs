//! The agent and simulated nodes against an in-process API server on the
//! in-memory store, in virtual time: minutes of cluster life pass at once,
//! the same way every run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_agent::agent::{self, AgentOptions};
use berth_agent::config::AgentConfig;
use berth_agent::metrics::AgentMetrics;
use berth_agent::node_client::{NodeClient, bearer_header, with_default_bearer};
use berth_agent::registration::NodeTemplate;
use berth_agent::sim::{self, Fleet, FleetOptions, SimNode, SimStats};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_core::test_util::{PodWrapper, make_pod, tol};
use berth_runtime::sim::SimRuntime;
use berth_runtime::{LogFile, Runtime, RuntimeError, RuntimePodStatus};
use berth_testing::{TestServer, mark_unknown, node_as_created, nodes_revision};
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A simulated runtime that remembers the order pods were stopped in.
struct RecordingRuntime {
    inner: SimRuntime,
    stopped: Mutex<Vec<String>>,
    /// Containers ignore SIGTERM: a stop takes the whole grace period.
    stubborn: bool,
    clock: Clock,
}

impl Runtime for RecordingRuntime {
    fn start_pod(&self, pod: &Pod) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.inner.start_pod(pod)
    }
    fn stop_pod(&self, uid: &str, grace: Duration) -> BoxFuture<'_, Result<(), RuntimeError>> {
        if let Ok(mut s) = self.stopped.lock() {
            s.push(uid.to_string());
        }
        let wait = if self.stubborn { grace } else { Duration::ZERO };
        let uid = uid.to_string();
        Box::pin(async move {
            self.clock.sleep(wait).await;
            self.inner.stop_pod(&uid, grace).await
        })
    }
    fn remove_pod(&self, uid: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.inner.remove_pod(uid)
    }
    fn pod_status(&self, uid: &str) -> Option<RuntimePodStatus> {
        self.inner.pod_status(uid)
    }
    fn pod_uids(&self) -> Vec<String> {
        self.inner.pod_uids()
    }
    fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        self.inner.subscribe()
    }
    fn log_file(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<LogFile, RuntimeError> {
        self.inner.log_file(namespace, pod, container, previous)
    }
}

/// The cluster of a test: berth's API server on a virtual clock.
type Cluster = TestServer;

async fn cluster() -> Cluster {
    TestServer::start().await
}

fn template(name: &str, taints: &str) -> NodeTemplate {
    let q = |s: &str| Quantity(s.to_string());
    let resources = BTreeMap::from([
        ("cpu".to_string(), q("4")),
        ("memory".to_string(), q("8Gi")),
        ("pods".to_string(), q("110")),
    ]);
    NodeTemplate {
        name: name.to_string(),
        labels: BTreeMap::from([("team".to_string(), "a".to_string())]),
        taints: berth_core::taint_spec::parse_register_with_taints(taints).expect("taints"),
        capacity: resources.clone(),
        allocatable: resources,
        addresses: Vec::new(),
        node_info: k8s_openapi::api::core::v1::NodeSystemInfo {
            operating_system: "linux".into(),
            architecture: "amd64".into(),
            ..Default::default()
        },
        kubelet_port: None,
    }
}

struct RunningAgent {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), agent::AgentError>>,
    runtime: Arc<RecordingRuntime>,
    metrics: Arc<AgentMetrics>,
}

fn start_agent(c: &Cluster, name: &str, taints: &str, config: AgentConfig) -> RunningAgent {
    start_agent_with(c, name, taints, config, true, false)
}

fn start_agent_with(
    c: &Cluster,
    name: &str,
    taints: &str,
    config: AgentConfig,
    register_node: bool,
    stubborn: bool,
) -> RunningAgent {
    let client = in_process::client(&c.api, User::node(name), "default").expect("node client");
    start_agent_on(
        c,
        client,
        name,
        taints,
        config,
        register_node,
        stubborn,
        None,
    )
}

/// An agent whose API calls go through `client`, reading the host's
/// signals (its disk: the file system of `host_signals`) when given a
/// directory.
#[allow(clippy::too_many_arguments)]
fn start_agent_on(
    c: &Cluster,
    client: kube::Client,
    name: &str,
    taints: &str,
    config: AgentConfig,
    register_node: bool,
    stubborn: bool,
    host_signals: Option<std::path::PathBuf>,
) -> RunningAgent {
    let runtime = Arc::new(RecordingRuntime {
        inner: SimRuntime::new(c.clock.clone()),
        stopped: Mutex::new(Vec::new()),
        stubborn,
        clock: c.clock.clone(),
    });
    let metrics = Arc::new(AgentMetrics::default());
    let stop = CancellationToken::new();
    let options = AgentOptions {
        template: template(name, taints),
        register_node,
        config,
        gates: FeatureGates::default(),
        host_signals: host_signals.clone(),
    };
    let task = tokio::spawn(agent::run(
        NodeClient::new(client, name),
        runtime.clone(),
        c.clock.clone(),
        options,
        metrics.clone(),
        stop.clone(),
    ));
    RunningAgent {
        stop,
        task,
        runtime,
        metrics,
    }
}

/// Waits (in virtual time) until `check` holds, at most `limit` seconds.
async fn eventually<F, Fut>(clock: &Clock, limit: u64, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..limit {
        if check().await {
            return true;
        }
        clock.sleep(Duration::from_secs(1)).await;
    }
    check().await
}

fn condition(node: &Node, kind: &str) -> Option<(String, String)> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
}

/// Agents n2 and n3 beside n1, all three Ready: with n1 alone down the
/// cluster is not all down (then upstream taints nothing).
async fn two_more_ready(c: &Cluster) -> (Api<Node>, [RunningAgent; 2]) {
    let others = [
        start_agent(c, "n2", "", AgentConfig::default()),
        start_agent(c, "n3", "", AgentConfig::default()),
    ];
    let nodes: Api<Node> = Api::all(c.admin.clone());
    for name in ["n1", "n2", "n3"] {
        assert!(
            eventually(&c.clock, 30, || node_ready(&nodes, name)).await,
            "{name} Ready"
        );
    }
    (nodes, others)
}

/// The node lifecycle and taint eviction controllers, on the cluster.
fn controllers(c: &Cluster) -> tokio::task::JoinSet<()> {
    berth_controllers::spawn(
        c.admin.clone(),
        c.clock.clone(),
        berth_controllers::ControllerOptions::default(),
        berth_controllers::metrics::ControllerMetrics::default(),
        None,
    )
}

/// Whether the node carries node.kubernetes.io/unreachable:NoExecute.
async fn unreachable(nodes: &Api<Node>, name: &str) -> bool {
    nodes
        .get(name)
        .await
        .ok()
        .and_then(|n| n.spec)
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .iter()
        .any(|t| t.key == "node.kubernetes.io/unreachable" && t.effect == "NoExecute")
}

async fn node_ready(nodes: &Api<Node>, name: &str) -> bool {
    nodes
        .get(name)
        .await
        .ok()
        .and_then(|n| condition(&n, "Ready"))
        .is_some_and(|(s, _)| s == "True")
}

/// A pod `name` of busybox bound to `node`.
/// Creates `pod` at `priority` as a client must: naming a PriorityClass of
/// that value (`system-cluster-critical` for 2,000,000,000, else one made
/// for it; none for 0), which the Priority admission resolves.
async fn create_with_priority(c: &Cluster, pods: &Api<Pod>, pod: PodWrapper, priority: i32) {
    let pod = match priority {
        0 => pod,
        berth_core::priority::SYSTEM_CRITICAL_PRIORITY => {
            pod.priority_class_name(berth_core::priority::SYSTEM_CLUSTER_CRITICAL)
        }
        value => {
            let name = format!("priority-{value}");
            let class = berth_core::test_util::priority_class(&name, value, false, None);
            let classes: Api<PriorityClass> = Api::all(c.admin.clone());
            classes
                .create(&PostParams::default(), &class)
                .await
                .expect("a PriorityClass");
            pod.priority_class_name(&name)
        }
    };
    pods.create(&PostParams::default(), &pod.obj())
        .await
        .expect("create");
}

fn bound(name: &str, node: &str) -> PodWrapper {
    make_pod()
        .name(name)
        .namespace("default")
        .node(node)
        .container("busybox")
}

async fn pod_running(pods: &Api<Pod>, name: &str) -> bool {
    pods.get(name)
        .await
        .ok()
        .is_some_and(|p| phase(&p).0 == "Running")
}

fn phase(p: &Pod) -> (String, String, String) {
    let s = p.status.clone().unwrap_or_default();
    (
        s.phase.unwrap_or_default(),
        s.reason.unwrap_or_default(),
        s.message.unwrap_or_default(),
    )
}

/// The agent creates its Node with its conditions, as a kubelet's initial
/// Node carries them: Ready in the Node's first version, not only after
/// the first status write.
#[tokio::test(start_paused = true)]
async fn an_agent_node_is_ready_in_the_node_it_registers() {
    let c = cluster().await;
    let before = nodes_revision(&c).await;
    let _agent = start_agent(&c, "n1", "", AgentConfig::default());
    let first = node_as_created(&c, &before, "n1").await;
    assert_eq!(
        condition(&first, "Ready").map(|(status, _)| status),
        Some("True".to_string()),
        "{:?}",
        first.status
    );
}

#[tokio::test(start_paused = true)]
async fn an_agent_registers_with_its_taints_heartbeats_and_runs_a_tolerating_pod() {
    let c = cluster().await;
    let agent = start_agent(
        &c,
        "n1",
        "dedicated=groupName:NoSchedule",
        AgentConfig::default(),
    );
    let nodes: Api<Node> = Api::all(c.admin.clone());
    assert!(
        eventually(&c.clock, 30, || node_ready(&nodes, "n1")).await,
        "node Ready"
    );
    let node = nodes.get("n1").await.expect("node");
    let taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
    assert!(
        taints.iter().any(|t| t.key == "dedicated"
            && t.value.as_deref() == Some("groupName")
            && t.effect == "NoSchedule"),
        "{taints:?}"
    );
    let labels = node.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    let reasons: Vec<String> = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| c.reason)
        .collect();
    assert_eq!(
        reasons,
        vec![
            "KubeletHasSufficientMemory",
            "KubeletHasNoDiskPressure",
            "KubeletHasSufficientPID",
            "KubeletReady"
        ]
    );

    // The Lease is renewed every 10 s (with at most 4% jitter).
    let leases: Api<Lease> = Api::namespaced(c.admin.clone(), "kube-node-lease");
    let renew = |l: Lease| l.spec.and_then(|s| s.renew_time).map(|t| t.0);
    let first = renew(leases.get("n1").await.expect("lease")).expect("renewTime");
    c.clock.sleep(Duration::from_secs(31)).await;
    let lease = leases.get("n1").await.expect("lease");
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.lease_duration_seconds),
        Some(40)
    );
    let later = renew(lease).expect("renewTime");
    let gap = later.duration_since(first).as_secs_f64();
    assert!(
        (20.0..=31.0).contains(&gap),
        "renewed three times in 31 s: {gap}"
    );

    // A pod with the toleration, bound to the node, runs and is Ready.
    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    let tolerating = bound("web", "n1")
        .toleration(tol("dedicated", "Equal", "groupName", "NoSchedule"))
        .obj();
    pods.create(&PostParams::default(), &tolerating)
        .await
        .expect("create");
    assert!(
        eventually(&c.clock, 10, || pod_running(&pods, "web")).await,
        "pod Running"
    );
    let running = pods.get("web").await.expect("pod");
    let ready = running
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    assert!(ready, "pod Ready");

    // Deleting it stops it and completes the graceful deletion.
    pods.delete("web", &Default::default())
        .await
        .expect("delete");
    assert!(
        eventually(&c.clock, 40, || async {
            pods.get_opt("web").await.ok().flatten().is_none()
        })
        .await,
        "the agent completes the deletion"
    );
    agent.stop.cancel();
    let _ = agent.task.await;
}

#[tokio::test(start_paused = true)]
async fn without_registration_the_agent_waits_for_the_admin_made_node() {
    let c = cluster().await;
    let agent = start_agent_with(&c, "manual", "", AgentConfig::default(), false, false);
    let nodes: Api<Node> = Api::all(c.admin.clone());
    c.clock.sleep(Duration::from_secs(30)).await;
    assert!(
        nodes.get_opt("manual").await.expect("get").is_none(),
        "the agent does not create its Node"
    );
    let node: Node = serde_json::from_value(
        json!({"metadata": {"name": "manual", "labels": {"made-by": "admin"}}}),
    )
    .expect("node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("admin creates it");
    assert!(
        eventually(&c.clock, 30, || node_ready(&nodes, "manual")).await,
        "then it reports Ready"
    );
    let leases: Api<Lease> = Api::namespaced(c.admin.clone(), "kube-node-lease");
    assert!(
        leases.get_opt("manual").await.expect("get").is_some(),
        "and heartbeats"
    );
    let labels = nodes
        .get("manual")
        .await
        .expect("node")
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(labels.get("made-by").map(String::as_str), Some("admin"));
    agent.stop.cancel();
    let _ = agent.task.await;
}

#[tokio::test(start_paused = true)]
async fn a_pod_bound_onto_a_no_execute_tainted_node_is_rejected_by_the_agent() {
    let c = cluster().await;
    let agent = start_agent(&c, "n1", "", AgentConfig::default());
    let nodes: Api<Node> = Api::all(c.admin.clone());
    assert!(eventually(&c.clock, 30, || node_ready(&nodes, "n1")).await);
    nodes
        .patch(
            "n1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]}})),
        )
        .await
        .expect("taint");
    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    pods.create(&PostParams::default(), &bound("intruder", "n1").obj())
        .await
        .expect("create");
    pods.create(
        &PostParams::default(),
        &bound("guest", "n1")
            .toleration(tol("dedicated", "Exists", "", "NoExecute"))
            .obj(),
    )
    .await
    .expect("create");
    assert!(
        eventually(&c.clock, 10, || async {
            pods.get("intruder")
                .await
                .ok()
                .is_some_and(|p| phase(&p).0 == "Failed")
        })
        .await
    );
    let (ph, reason, message) = phase(&pods.get("intruder").await.expect("pod"));
    assert_eq!(
        (ph.as_str(), reason.as_str(), message.as_str()),
        (
            "Failed",
            "TaintToleration",
            "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
        )
    );
    assert!(
        eventually(&c.clock, 10, || pod_running(&pods, "guest")).await,
        "the tolerating pod runs"
    );
    agent.stop.cancel();
    let _ = agent.task.await;
}

#[tokio::test(start_paused = true)]
async fn sigterm_stops_regular_pods_before_critical_ones_and_marks_them_failed() {
    let c = cluster().await;
    let config =
        AgentConfig::from_yaml("shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n")
            .expect("config");
    let agent = start_agent(&c, "n1", "", config);
    let nodes: Api<Node> = Api::all(c.admin.clone());
    assert!(eventually(&c.clock, 30, || node_ready(&nodes, "n1")).await);
    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    for (name, priority) in [
        ("critical", 2_000_000_000),
        ("regular", 0),
        ("regular-2", 1000),
    ] {
        create_with_priority(&c, &pods, bound(name, "n1"), priority).await;
    }
    for name in ["critical", "regular", "regular-2"] {
        assert!(
            eventually(&c.clock, 10, || pod_running(&pods, name)).await,
            "{name} running"
        );
    }
    let uid = |p: Pod| p.metadata.uid.unwrap_or_default();
    let critical_uid = uid(pods.get("critical").await.expect("pod"));

    let before = c.clock.now();
    agent.stop.cancel();
    agent
        .task
        .await
        .expect("joined")
        .expect("agent ends cleanly");
    let stopped = agent
        .runtime
        .stopped
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    assert_eq!(stopped.len(), 3, "{stopped:?}");
    assert_eq!(
        stopped.last(),
        Some(&critical_uid),
        "critical pods stop last: {stopped:?}"
    );
    assert!(
        c.clock.now().duration_since(before).as_secs_f64() <= 30.0,
        "within shutdownGracePeriod"
    );
    for name in ["critical", "regular", "regular-2"] {
        let (ph, reason, message) = phase(&pods.get(name).await.expect("pod"));
        assert_eq!(
            (ph.as_str(), reason.as_str(), message.as_str()),
            (
                "Failed",
                "Shutdown",
                "Pod was terminated in response to imminent node shutdown."
            ),
            "{name}"
        );
    }
    let node = nodes.get("n1").await.expect("node");
    assert_eq!(
        condition(&node, "Ready"),
        Some(("False".to_string(), "node is shutting down".to_string()))
    );
    let metrics = agent.metrics.render();
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let start = value("kubelet_graceful_shutdown_start_time_seconds");
    let end = value("kubelet_graceful_shutdown_end_time_seconds");
    assert!(start > 0.0 && end >= start, "{metrics}");
}

#[tokio::test(start_paused = true)]
async fn priority_phases_run_lowest_first_skip_empty_ones_and_end_at_their_periods() {
    let c = cluster().await;
    let config = AgentConfig::from_yaml(
        "shutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 10}\n- {priority: 1000, shutdownGracePeriodSeconds: 20}\n- {priority: 100000, shutdownGracePeriodSeconds: 5}\n",
    )
    .expect("config");
    let agent = start_agent_with(&c, "n1", "", config, true, true);
    let nodes: Api<Node> = Api::all(c.admin.clone());
    assert!(eventually(&c.clock, 30, || node_ready(&nodes, "n1")).await);
    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    for (name, priority) in [("high", 200_000), ("low", 0)] {
        create_with_priority(&c, &pods, bound(name, "n1"), priority).await;
        assert!(eventually(&c.clock, 10, || pod_running(&pods, name)).await);
    }
    let uid = |p: Pod| p.metadata.uid.unwrap_or_default();
    let low = uid(pods.get("low").await.expect("pod"));
    let high = uid(pods.get("high").await.expect("pod"));
    let before = c.clock.now();
    agent.stop.cancel();
    agent
        .task
        .await
        .expect("joined")
        .expect("agent ends cleanly");
    let stopped = agent
        .runtime
        .stopped
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    assert_eq!(stopped, vec![low, high]);
    // Pods that ignore SIGTERM hold each phase for its whole period: 10 s,
    // nothing for the empty 1000 phase, then 5 s.
    let took = c.clock.now().duration_since(before).as_secs_f64();
    assert!((15.0..16.0).contains(&took), "{took}");
}

#[tokio::test(start_paused = true)]
async fn a_node_agent_token_cannot_change_another_node() {
    let c = cluster().await;
    let a1 = start_agent(&c, "n1", "", AgentConfig::default());
    let a2 = start_agent(&c, "n2", "", AgentConfig::default());
    let nodes: Api<Node> = Api::all(c.admin.clone());
    assert!(eventually(&c.clock, 30, || node_ready(&nodes, "n2")).await);
    let n1 = in_process::client(&c.api, User::node("n1"), "default").expect("client");
    let as_n1 = NodeClient::new(n1.clone(), "n2");
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
    let err = as_n1.patch_node_status(&patch).await.expect_err("403");
    assert_eq!(err.code(), Some(403), "{err}");
    // Not even reading another node's Lease (upstream's node authorizer).
    let err = as_n1.get_lease().await.expect_err("403");
    assert_eq!(err.code(), Some(403), "{err}");
    let as_admin = NodeClient::new(c.admin.clone(), "n2");
    let lease = as_admin.get_lease().await.expect("the admin reads it");
    let err = as_n1.update_lease(&lease).await.expect_err("403");
    assert_eq!(err.code(), Some(403), "{err}");
    let n1_nodes: Api<Node> = Api::all(n1);
    let err = n1_nodes
        .patch(
            "n2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect_err("403");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err}"
    );
    a1.stop.cancel();
    a2.stop.cancel();
}

/// A simulated fleet of `count` nodes (`sim-000000`...) in two zones,
/// joined in-process: its shared client watches as `system:berth:sim`,
/// each node writes with its own token. Cancel the token to stop it.
fn start_fleet(
    c: &Cluster,
    count: usize,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<()>,
    Arc<SimStats>,
) {
    let template = Arc::new(template("", ""));
    let sim_nodes: Vec<SimNode> = (0..count)
        .map(|i| {
            let name = sim::sim_node_name("sim-", i);
            let token = format!("sim-token-{i}");
            c.api.auth.add_token(token.clone(), User::node(&name));
            SimNode {
                zone: Some(sim::sim_zone(i, 2)),
                bearer: Some(bearer_header(&token).expect("header")),
                name,
                template: template.clone(),
                phase: None,
            }
        })
        .collect();
    let base = kube::Client::new(berth_apiserver::server::router(c.api.clone()), "default");
    c.api.auth.add_token("sim-fleet-token", User::sim_fleet());
    let shared = with_default_bearer(base, bearer_header("sim-fleet-token").expect("header"));
    let stats = Arc::new(SimStats::default());
    let stop = CancellationToken::new();
    let fleet = tokio::spawn(
        Fleet {
            client: shared,
            nodes: sim_nodes,
            runtime: Arc::new(SimRuntime::new(c.clock.clone())),
            clock: c.clock.clone(),
            options: FleetOptions {
                config: AgentConfig::default(),
                gates: FeatureGates::default(),
                max_in_flight: 2,
            },
            stats: stats.clone(),
            pods: None,
        }
        .run(stop.clone()),
    );
    (stop, fleet, stats)
}

#[tokio::test(start_paused = true)]
async fn simulated_nodes_share_one_client_and_each_heartbeats_as_itself() {
    let c = cluster().await;
    let nodes_wanted = 5;
    let (stop, fleet, stats) = start_fleet(&c, nodes_wanted);
    let nodes: Api<Node> = Api::all(c.admin.clone());
    for i in 0..nodes_wanted {
        let name = sim::sim_node_name("sim-", i);
        assert!(
            eventually(&c.clock, 30, || node_ready(&nodes, &name)).await,
            "{name}"
        );
    }
    let zone = nodes
        .get("sim-000001")
        .await
        .expect("node")
        .metadata
        .labels
        .unwrap_or_default()
        .get(sim::ZONE_LABEL)
        .cloned();
    assert_eq!(zone.as_deref(), Some("zone-b"));
    c.clock.sleep(Duration::from_secs(120)).await;
    let renewals = stats
        .lease_renewals
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        renewals >= 5 * 12,
        "each node renews every ~10 s: {renewals}"
    );
    assert_eq!(
        stats
            .late_renewals
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    let leases: Api<Lease> = Api::namespaced(c.admin.clone(), "kube-node-lease");
    let holder = leases
        .get("sim-000003")
        .await
        .expect("lease")
        .spec
        .and_then(|s| s.holder_identity);
    assert_eq!(holder.as_deref(), Some("sim-000003"));

    // The node lifecycle controller's write of a silent node, done here by
    // hand: the fleet sees the Node differ from its own status and writes
    // Ready again at once, not at its next 5-minute report.
    let marked = mark_unknown(&c, "sim-000004").await;
    assert!(
        eventually(&c.clock, 10, || node_ready(&nodes, "sim-000004")).await,
        "Ready again within 10 s"
    );
    let ready = nodes
        .get("sim-000004")
        .await
        .expect("node")
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .and_then(|c| c.last_transition_time)
        .expect("Ready's transition");
    assert!(
        ready.0 >= marked.round(jiff::Unit::Second).unwrap_or(marked),
        "a new transition: {ready:?}"
    );

    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    pods.create(&PostParams::default(), &bound("on-sim", "sim-000002").obj())
        .await
        .expect("create");
    assert!(
        eventually(&c.clock, 20, || pod_running(&pods, "on-sim")).await,
        "a pod on a simulated node runs"
    );
    stop.cancel();
    let _ = fleet.await;
}

/// An agent that stops without its graceful shutdown (the process killed,
/// the host gone) stops renewing its Lease; the node lifecycle controller
/// then marks the node Unknown after the 50 s grace period (counted from
/// the last renewal it saw, at most one 10 s interval before the stop, and
/// checked every 5 s) and taints it unreachable:NoExecute.
#[tokio::test(start_paused = true)]
async fn an_agent_stopped_without_shutdown_leaves_its_node_unknown_and_unreachable() {
    let c = cluster().await;
    let _controllers = controllers(&c);
    let agent = start_agent(&c, "n1", "", AgentConfig::default());
    let (nodes, _others) = two_more_ready(&c).await;
    // A minute of heart-beating: the node stays Ready.
    c.clock.sleep(Duration::from_secs(60)).await;
    assert!(node_ready(&nodes, "n1").await, "still Ready while renewing");

    agent.task.abort();
    let stopped = c.clock.now();
    let unknown = || async {
        let node = nodes.get("n1").await.expect("node");
        matches!(condition(&node, "Ready"), Some((status, _)) if status == "Unknown")
    };
    assert!(eventually(&c.clock, 120, unknown).await, "node Unknown");
    let after = c.clock.now().duration_since(stopped).as_secs_f64();
    assert!(
        (40.0..=61.0).contains(&after),
        "Unknown {after} s after the agent stopped"
    );
    let node = nodes.get("n1").await.expect("node");
    assert_eq!(
        condition(&node, "Ready")
            .map(|(_, message)| message)
            .as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    assert!(
        eventually(&c.clock, 30, || unreachable(&nodes, "n1")).await,
        "node tainted unreachable:NoExecute"
    );
    for name in ["n2", "n3"] {
        assert!(node_ready(&nodes, name).await, "{name} still Ready");
    }
}

/// A client whose requests wait while `paused` is set, as those of a
/// stopped process (SIGSTOP): nothing reaches the server until it resumes.
fn pausable(client: kube::Client, paused: tokio::sync::watch::Receiver<bool>) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let client = client.clone();
        let mut paused = paused.clone();
        async move {
            let _ = paused.wait_for(|p| !*p).await;
            client.send(request).await
        }
    });
    kube::Client::new(service, "default")
}

/// An agent paused past the grace period: the node lifecycle controller
/// marks its node Unknown and taints it unreachable:NoExecute. Resumed, it
/// is Ready again within 15 s, because it compares the status it computes
/// with the Node on the server, which the controller overwrote, not with
/// its own last write (which said Ready, so it used to wait for its
/// 5-minute report); the taint goes, and its pod with the default 300 s
/// toleration is not evicted.
#[tokio::test(start_paused = true)]
async fn a_paused_agent_is_ready_again_within_15_s_of_resuming_and_keeps_its_pods() {
    pause_past_the_grace_period_and_resume(false).await;
}

/// The same with the node under disk pressure, so that it carries the
/// `disk-pressure` NoSchedule condition taint, which the controller takes
/// off while the node is Unknown (`unreachable:NoSchedule` instead) and
/// puts back when it is Ready again, beside the lift of
/// `unreachable:NoExecute`.
#[tokio::test(start_paused = true)]
async fn a_paused_agent_under_disk_pressure_is_ready_again_and_its_unreachable_taint_lifted() {
    pause_past_the_grace_period_and_resume(true).await;
}

async fn pause_past_the_grace_period_and_resume(under_disk_pressure: bool) {
    let c = cluster().await;
    let _controllers = controllers(&c);
    let (pause, paused) = tokio::sync::watch::channel(false);
    let client = pausable(
        in_process::client(&c.api, User::node("n1"), "default").expect("node client"),
        paused,
    );
    // Under pressure: the agent reads the host's disk, and every disk is
    // under pressure at a threshold of 100 % available. Otherwise it reads
    // no host, so the host's own disk cannot put the node under pressure.
    let mut config = AgentConfig::default();
    let host = tempfile::tempdir().expect("a directory on the host's disk");
    let host_signals = under_disk_pressure.then(|| {
        config
            .eviction_hard
            .insert("nodefs.available".into(), "100%".into());
        host.path().to_path_buf()
    });
    let _agent = start_agent_on(&c, client, "n1", "", config, true, false, host_signals);
    let (nodes, _others) = two_more_ready(&c).await;
    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    let web = pods
        .create(&PostParams::default(), &bound("web", "n1").obj())
        .await
        .expect("create");
    let default_toleration = web
        .spec
        .and_then(|s| s.tolerations)
        .unwrap_or_default()
        .into_iter()
        .find(|t| t.key.as_deref() == Some("node.kubernetes.io/unreachable"))
        .and_then(|t| t.toleration_seconds);
    assert_eq!(default_toleration, Some(300));
    assert!(
        eventually(&c.clock, 10, || pod_running(&pods, "web")).await,
        "pod Running"
    );

    let disk_pressure = || async {
        let node = nodes.get("n1").await.expect("node");
        condition(&node, "DiskPressure").map(|(status, _)| status)
            == Some(if under_disk_pressure { "True" } else { "False" }.into())
    };
    assert!(
        eventually(&c.clock, 30, disk_pressure).await,
        "n1's DiskPressure as configured"
    );
    let _ = pause.send(true);
    assert!(
        eventually(&c.clock, 120, || unreachable(&nodes, "n1")).await,
        "n1 Unknown and tainted unreachable:NoExecute"
    );
    let node = nodes.get("n1").await.expect("node");
    assert_eq!(
        condition(&node, "Ready")
            .map(|(status, _)| status)
            .as_deref(),
        Some("Unknown")
    );

    let _ = pause.send(false);
    let resumed = c.clock.now();
    assert!(
        eventually(&c.clock, 15, || node_ready(&nodes, "n1")).await,
        "n1 Ready again within 15 s of resuming"
    );
    let back = c.clock.now().duration_since(resumed).as_secs_f64();
    assert!(back <= 15.0, "Ready {back} s after resuming");
    assert!(
        eventually(&c.clock, 10, || async { !unreachable(&nodes, "n1").await }).await,
        "the unreachable taint is lifted"
    );
    // Past the 300 s the pod tolerates the taint for: still there.
    c.clock.sleep(Duration::from_secs(400)).await;
    let web = pods.get("web").await.expect("the pod is not evicted");
    assert_eq!(web.metadata.deletion_timestamp, None);
    assert_eq!(phase(&web).0, "Running");
}

/// A Node deleted (its agent gone, as when a machine is removed) takes its
/// pods with it, through the pod garbage collector once the node has been
/// missing for the 40 s quarantine, and its Lease, which the agent (or the
/// simulated kubelet) wrote owned by the Node, through the garbage
/// collector at once.
#[tokio::test(start_paused = true)]
async fn a_deleted_node_takes_its_pods_and_its_lease() {
    let c = cluster().await;
    let _controllers = controllers(&c);
    let agent = start_agent(&c, "n1", "", AgentConfig::default());
    let (stop, fleet, _) = start_fleet(&c, 1);
    let nodes: Api<Node> = Api::all(c.admin.clone());
    let pods: Api<Pod> = Api::namespaced(c.admin.clone(), "default");
    let leases: Api<Lease> = Api::namespaced(c.admin.clone(), "kube-node-lease");
    let names = ["n1", "sim-000000"];
    for (i, node) in names.into_iter().enumerate() {
        assert!(
            eventually(&c.clock, 30, || node_ready(&nodes, node)).await,
            "{node} Ready"
        );
        let pod = format!("web-{i}");
        pods.create(&PostParams::default(), &bound(&pod, node).obj())
            .await
            .expect("create");
        assert!(
            eventually(&c.clock, 30, || pod_running(&pods, &pod)).await,
            "{pod} runs"
        );
        // The kubelet's Lease is owned by its Node.
        let uid = nodes.get(node).await.expect("node").metadata.uid;
        let owners = leases
            .get(node)
            .await
            .expect("lease")
            .metadata
            .owner_references;
        let owner = owners
            .as_deref()
            .and_then(|o| o.first())
            .cloned()
            .expect("an owner");
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                Some(owner.uid)
            ),
            ("v1", "Node", node, uid),
            "{node}'s Lease"
        );
    }
    // Unaffected: a pod of a node that stays.
    let others = start_agent(&c, "n2", "", AgentConfig::default());
    assert!(eventually(&c.clock, 30, || node_ready(&nodes, "n2")).await);
    pods.create(&PostParams::default(), &bound("stays", "n2").obj())
        .await
        .expect("create");

    agent.task.abort();
    stop.cancel();
    let _ = fleet.await;
    let deleted_at = c.clock.now();
    for node in names {
        nodes
            .delete(node, &Default::default())
            .await
            .expect("deleted");
    }
    let lease_gone = || async {
        leases.get_opt("n1").await.ok().flatten().is_none()
            && leases.get_opt("sim-000000").await.ok().flatten().is_none()
    };
    assert!(
        eventually(&c.clock, 5, lease_gone).await,
        "the Leases go with their Nodes"
    );
    let pods_gone = || async {
        pods.get_opt("web-0").await.ok().flatten().is_none()
            && pods.get_opt("web-1").await.ok().flatten().is_none()
    };
    assert!(!pods_gone().await, "pods wait out the quarantine");
    c.clock.sleep(Duration::from_secs(30)).await;
    assert!(!pods_gone().await, "still within the 40 s quarantine");
    assert!(
        eventually(&c.clock, 60, pods_gone).await,
        "the pods go with their Nodes"
    );
    let took = c.clock.now().duration_since(deleted_at).as_secs();
    assert!(
        (40..=80).contains(&took),
        "quarantine, then the next 20 s pass: {took} s"
    );
    assert!(pods.get_opt("stays").await.expect("a get").is_some());
    assert!(leases.get_opt("n2").await.expect("a get").is_some());
    drop(others);
}
