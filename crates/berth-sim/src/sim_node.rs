//! The scenario's simulated node: just enough of a kubelet for a
//! scenario. It registers its Node (the kubelet's labels and the
//! scenario's, `--register-with-taints`, capacity, healthy conditions) and
//! its Lease, renews the Lease every 10 s (at a phase drawn from the seed),
//! computes its status every 10 s against its Node on the server and posts
//! it when it differs from the server's (a condition set by a step, or the
//! node lifecycle controller's Unknown) or every 5 min, as the kubelet does
//! ([`berth_core::node_status`]), marks its pods Running and confirms their
//! graceful deletion. A stopped node does none of this until it is
//! resumed, as a node cut off from the API server.
//!
//! Why not berth-agent's simulated fleet (branch `agent`): it gives every
//! node one shared template (scenarios give each node its own labels,
//! taints and capacity), never changes a node's status (scenarios set
//! conditions), has no way to stop and resume one node's heartbeats, and
//! jitters renewals with an unseeded random source (a run must repeat byte
//! for byte). When the agent offers those, this module goes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_core::node_status::{self, Decided};
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::mpsc;

use crate::scenario::NodeSpec;

/// The kubelet's Lease renewal interval.
const LEASE_RENEW: Duration = Duration::from_secs(10);
/// The kubelet's `nodeStatusUpdateFrequency`: how often the status is
/// computed and compared with the server's.
const STATUS_UPDATE: Duration = Duration::from_secs(10);
/// The kubelet's `nodeStatusReportFrequency`: an unchanged status is
/// posted this often.
const STATUS_REPORT: Duration = Duration::from_secs(300);
/// `leaseDurationSeconds` the kubelet writes.
const LEASE_DURATION_SECONDS: i32 = 40;

/// What a step tells a node.
#[derive(Debug, Clone)]
pub enum NodeCommand {
    Heartbeat {
        stop: bool,
    },
    Condition {
        condition: String,
        status: String,
        reason: Option<String>,
        message: Option<String>,
    },
}

/// Why a node could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("node {node}: {source}")]
    Api { node: String, source: kube::Error },
    #[error("node {node}: no credential: {message}")]
    Credential { node: String, message: String },
}

/// A running simulated node.
pub struct SimNode {
    pub name: String,
    tx: mpsc::UnboundedSender<NodeCommand>,
}

impl SimNode {
    /// Tells the node something; a node whose task ended ignores it.
    pub fn send(&self, command: NodeCommand) {
        let _ = self.tx.send(command);
    }
}

/// A condition the node reports (its times come from the server's).
struct Condition {
    status: String,
    reason: String,
    message: String,
}

struct NodeState {
    name: String,
    clock: Clock,
    nodes: Api<Node>,
    leases: Api<Lease>,
    pods: Api<Pod>,
    conditions: BTreeMap<String, Condition>,
    stopped: bool,
    /// When the status was last posted.
    last_report: Option<Timestamp>,
    /// The node's conditions on the server, from a watch of the Node (the
    /// kubelet reads its Node from the API server's cache).
    on_server: Vec<NodeCondition>,
}

fn healthy_conditions() -> BTreeMap<String, Condition> {
    [
        (
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
        (
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        (
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    ]
    .into_iter()
    .map(|(kind, status, reason, message)| {
        (
            kind.to_owned(),
            Condition {
                status: status.to_owned(),
                reason: reason.to_owned(),
                message: message.to_owned(),
            },
        )
    })
    .collect()
}

/// Registers `spec` as a node and starts its kubelet loop; `phase` offsets
/// its heartbeats within the renewal interval.
pub async fn start(
    api: &Arc<ApiServer>,
    clock: &Clock,
    spec: &NodeSpec,
    phase: Duration,
) -> Result<SimNode, NodeError> {
    let name = spec.name.clone();
    let api_err = |source| NodeError::Api {
        node: name.clone(),
        source,
    };
    let client = in_process::client(api, User::node(&name), "default").map_err(|e| {
        NodeError::Credential {
            node: name.clone(),
            message: e.to_string(),
        }
    })?;
    let now = clock.now();
    let mut state = NodeState {
        name: name.clone(),
        clock: clock.clone(),
        nodes: Api::all(client.clone()),
        leases: Api::namespaced(client.clone(), "kube-node-lease"),
        pods: Api::all(client),
        conditions: healthy_conditions(),
        stopped: false,
        last_report: None,
        on_server: Vec::new(),
    };
    let capacity: BTreeMap<&str, &str> = spec
        .capacity
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // The kubelet's own labels, then the scenario's.
    let mut labels: BTreeMap<&str, &str> = [
        ("kubernetes.io/hostname", name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
    ]
    .into_iter()
    .collect();
    labels.extend(spec.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": spec.taints},
        "status": {"capacity": capacity, "allocatable": capacity},
    }))
    .unwrap_or_default();
    state
        .nodes
        .create(&PostParams::default(), &node)
        .await
        .map_err(api_err)?;
    state.report(true).await.map_err(api_err)?;
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_time(now),
        },
    }))
    .unwrap_or_default();
    state
        .leases
        .create(&PostParams::default(), &lease)
        .await
        .map_err(api_err)?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(state.run(rx, phase));
    Ok(SimNode { name, tx })
}

fn micro_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

fn time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl NodeState {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<NodeCommand>, phase: Duration) {
        let start = self.clock.now();
        let mut next_lease = start + signed(phase);
        let mut next_status = start + signed(phase) + signed(STATUS_UPDATE);
        let selector = format!("spec.nodeName={}", self.name);
        let mut pods = watcher(
            self.pods.clone(),
            watcher::Config::default().fields(&selector),
        )
        .boxed();
        let itself = format!("metadata.name={}", self.name);
        let mut node = watcher(
            self.nodes.clone(),
            watcher::Config::default().fields(&itself),
        )
        .boxed();
        loop {
            tokio::select! {
                biased;
                command = commands.recv() => match command {
                    None => return,
                    Some(command) => self.handle(command).await,
                },
                () = self.clock.sleep_until(next_lease) => {
                    next_lease += signed(LEASE_RENEW);
                    if !self.stopped {
                        self.renew_lease().await;
                    }
                },
                () = self.clock.sleep_until(next_status) => {
                    next_status += signed(STATUS_UPDATE);
                    if !self.stopped {
                        self.sync_status().await;
                    }
                },
                event = node.next() => match event {
                    Some(Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node))) => {
                        self.on_server = conditions_of(&node);
                    }
                    Some(_) => {}
                    None => return,
                },
                event = pods.next() => match event {
                    Some(Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod))) => {
                        if !self.stopped {
                            self.look_after(&pod).await;
                        }
                    }
                    Some(_) => {}
                    None => return,
                },
            }
        }
    }

    async fn handle(&mut self, command: NodeCommand) {
        match command {
            NodeCommand::Heartbeat { stop } => {
                let resumed = self.stopped && !stop;
                self.stopped = stop;
                if resumed {
                    self.renew_lease().await;
                    self.sync_status().await;
                    self.look_after_all().await;
                }
            }
            NodeCommand::Condition {
                condition,
                status,
                reason,
                message,
            } => {
                let reason = reason.unwrap_or_else(|| format!("Scenario{condition}"));
                let message = message.unwrap_or_else(|| "set by the scenario".to_owned());
                self.conditions.insert(
                    condition,
                    Condition {
                        status,
                        reason,
                        message,
                    },
                );
                if !self.stopped {
                    self.sync_status().await;
                }
            }
        }
    }

    async fn renew_lease(&self) {
        let patch = json!({"spec": {"renewTime": micro_time(self.clock.now())}});
        if let Err(e) = self
            .leases
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(node = %self.name, error = %e, "renewing the lease");
        }
    }

    /// The kubelet's status sync: the conditions computed against the
    /// Node on the server, posted when they differ from the server's or
    /// the last report is [`STATUS_REPORT`] old.
    async fn sync_status(&mut self) {
        if let Err(e) = self.report(false).await {
            tracing::warn!(node = %self.name, error = %e, "posting node status");
        }
    }

    /// Posts the status if it is due (or `always`).
    async fn report(&mut self, always: bool) -> Result<(), kube::Error> {
        let now = self.clock.now();
        let conditions: Vec<NodeCondition> = self
            .conditions
            .iter()
            .map(|(kind, c)| {
                let decided = Decided {
                    type_: kind,
                    status: &c.status,
                    reason: &c.reason,
                    message: &c.message,
                };
                node_status::condition(&self.on_server, decided, now)
            })
            .collect();
        let stale = self
            .last_report
            .is_none_or(|last| now.duration_since(last) >= signed(STATUS_REPORT));
        if !always && !stale && !node_status::differs_from_server(&self.on_server, &conditions) {
            return Ok(());
        }
        let patch = json!({"status": {
            "conditions": conditions,
            "nodeInfo": {
                "kubeletVersion": "v1.37.0-berth-sim",
                "containerRuntimeVersion": "sim://1",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                "osImage": "berth sim", "kubeProxyVersion": "",
            },
        }});
        let written = self
            .nodes
            .patch_status(
                &self.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await?;
        self.on_server = conditions_of(&written);
        self.last_report = Some(now);
        Ok(())
    }

    async fn look_after_all(&self) {
        let selector = format!("spec.nodeName={}", self.name);
        match self
            .pods
            .list(&ListParams::default().fields(&selector))
            .await
        {
            Ok(list) => {
                for pod in &list.items {
                    self.look_after(pod).await;
                }
            }
            Err(e) => tracing::warn!(node = %self.name, error = %e, "listing pods"),
        }
    }

    /// Runs a pod bound here (it is Running at once) and confirms its
    /// deletion once the API server asks for it.
    async fn look_after(&self, pod: &Pod) {
        let (Some(ns), Some(name)) = (
            pod.metadata.namespace.as_deref(),
            pod.metadata.name.as_deref(),
        ) else {
            return;
        };
        let pods: Api<Pod> = Api::namespaced(self.pods.clone().into_client(), ns);
        if pod.metadata.deletion_timestamp.is_some() {
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            };
            if let Err(e) = pods.delete(name, &params).await
                && !matches!(&e, kube::Error::Api(s) if s.code == 404)
            {
                tracing::warn!(node = %self.name, pod = name, error = %e, "confirming a deletion");
            }
            return;
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, None | Some("Pending")) {
            let now = time(self.clock.now());
            let patch = json!({"status": {
                "phase": "Running",
                "startTime": now,
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                    {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                ],
            }});
            if let Err(e) = pods
                .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
                && !matches!(&e, kube::Error::Api(s) if s.code == 404)
            {
                tracing::warn!(node = %self.name, pod = name, error = %e, "marking a pod running");
            }
        }
    }
}

fn conditions_of(node: &Node) -> Vec<NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_apiserver::api::ApiConfig;
    use berth_store::{AnyStore, MemStore};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ready(node: &Node) -> Option<NodeCondition> {
        conditions_of(node).into_iter().find(|c| c.type_ == "Ready")
    }

    /// The node lifecycle controller set the node's conditions Unknown
    /// (written here by hand) while the node kept running: it reports
    /// Ready again at its next status computation, within 10 s, with a new
    /// transition time; it used to wait for its 5-minute report.
    #[tokio::test(start_paused = true)]
    async fn a_node_marked_unknown_reports_ready_within_one_status_period() {
        let origin: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let clock = Clock::virtual_from(origin);
        let api = ApiServer::new(
            AnyStore::Memory(MemStore::new()),
            clock.clone(),
            ApiConfig::default(),
        )
        .await
        .expect("api server");
        let spec = NodeSpec {
            name: "node1".into(),
            zone: None,
            labels: BTreeMap::new(),
            taints: Vec::new(),
            capacity: BTreeMap::new(),
        };
        let _node = start(&api, &clock, &spec, Duration::from_secs(3))
            .await
            .expect("node starts");
        let admin = in_process::client(&api, User::admin(), "default").expect("admin");
        let nodes: Api<Node> = Api::all(admin);
        clock.sleep(Duration::from_secs(60)).await;
        let marked = clock.now();
        let mut unknown = nodes.get_status("node1").await.expect("node");
        for c in unknown
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .expect("conditions")
        {
            c.status = "Unknown".into();
            c.reason = Some("NodeStatusUnknown".into());
            c.message = Some("Kubelet stopped posting node status.".into());
            c.last_transition_time = Some(Time(marked));
        }
        nodes
            .replace_status("node1", &PostParams::default(), &unknown)
            .await
            .expect("mark Unknown");
        clock.sleep(Duration::from_secs(10)).await;
        let back = ready(&nodes.get("node1").await.expect("node")).expect("Ready");
        assert_eq!(back.status, "True", "{back:?}");
        assert!(
            back.last_transition_time
                .as_ref()
                .is_some_and(|t| t.0 > marked),
            "a new transition: {back:?}"
        );
    }
}
