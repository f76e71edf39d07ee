//! The scenario's simulated node: just enough of a kubelet for a
//! scenario. It registers its Node (the kubelet's labels and the
//! scenario's, `--register-with-taints`, capacity, healthy conditions) and
//! its Lease, renews the Lease every 10 s (at a phase drawn from the seed)
//! and posts status every 5 min or when a condition changes, marks its pods
//! Running and confirms their graceful deletion. A stopped node does none
//! of this until it is resumed, as a node cut off from the API server.
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
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::scenario::NodeSpec;

/// The kubelet's Lease renewal interval.
const LEASE_RENEW: Duration = Duration::from_secs(10);
/// The kubelet's `nodeStatusReportFrequency`.
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

struct Condition {
    status: String,
    reason: String,
    message: String,
    transition: Timestamp,
}

struct NodeState {
    name: String,
    clock: Clock,
    nodes: Api<Node>,
    leases: Api<Lease>,
    pods: Api<Pod>,
    conditions: BTreeMap<String, Condition>,
    stopped: bool,
}

fn healthy_conditions(now: Timestamp) -> BTreeMap<String, Condition> {
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
                transition: now,
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
    let state = NodeState {
        name: name.clone(),
        clock: clock.clone(),
        nodes: Api::all(client.clone()),
        leases: Api::namespaced(client.clone(), "kube-node-lease"),
        pods: Api::all(client),
        conditions: healthy_conditions(now),
        stopped: false,
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
    state.post_status().await.map_err(api_err)?;
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
        let mut next_status = start + signed(STATUS_REPORT);
        let selector = format!("spec.nodeName={}", self.name);
        let mut pods = watcher(
            self.pods.clone(),
            watcher::Config::default().fields(&selector),
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
                    next_status += signed(STATUS_REPORT);
                    if !self.stopped {
                        self.post_status_logged().await;
                    }
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
                    self.post_status_logged().await;
                    self.look_after_all().await;
                }
            }
            NodeCommand::Condition {
                condition,
                status,
                reason,
                message,
            } => {
                let now = self.clock.now();
                let entry = self
                    .conditions
                    .entry(condition.clone())
                    .or_insert_with(|| Condition {
                        status: String::new(),
                        reason: String::new(),
                        message: String::new(),
                        transition: now,
                    });
                if entry.status != status {
                    entry.transition = now;
                }
                entry.status = status;
                entry.reason = reason.unwrap_or_else(|| format!("Scenario{condition}"));
                entry.message = message.unwrap_or_else(|| "set by the scenario".to_owned());
                if !self.stopped {
                    self.post_status_logged().await;
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

    async fn post_status_logged(&self) {
        if let Err(e) = self.post_status().await {
            tracing::warn!(node = %self.name, error = %e, "posting node status");
        }
    }

    async fn post_status(&self) -> Result<(), kube::Error> {
        let now = time(self.clock.now());
        let conditions: Vec<Value> = self
            .conditions
            .iter()
            .map(|(kind, c)| {
                json!({
                    "type": kind,
                    "status": c.status,
                    "reason": c.reason,
                    "message": c.message,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": time(c.transition),
                })
            })
            .collect();
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
        self.nodes
            .patch_status(
                &self.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
            .map(|_| ())
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

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}
