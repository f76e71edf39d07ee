//! The pod sync loop: what happens to the pods bound to the nodes an agent
//! serves (one real node, or many simulated ones).
//!
//! - A new pod is admitted ([`crate::admission`]) against the node as
//!   stored now and the pods already admitted there; a rejected pod gets
//!   phase Failed with upstream's reason and message and never runs.
//! - An admitted pod is started in the [`Runtime`]; whenever the runtime
//!   says its containers changed, the pod's status is written.
//! - A pod being deleted (`deletionTimestamp`) is stopped with its
//!   deletion grace period (SIGTERM, wait, SIGKILL in the process
//!   runtime), its final status written, and the deletion completed
//!   (delete with grace 0, on the pod's UID).
//! - Graceful node shutdown stops pods phase by phase
//!   ([`crate::shutdown`]) and marks them Failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use berth_client::{Change, SharedWatch, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_core::pod::{bound_node, is_terminal};
use berth_runtime::Runtime;
use berth_scheduler::resources::PodUsage;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::watcher;
use serde_json::json;

use crate::admission::{Rejection, admit};
use crate::config::ShutdownGracePeriodByPodPriority;
use crate::node_client::NodeClient;
use crate::pod_lanes::{LaneHandler, NODE_LANES, NodeLanes};
use crate::pod_table::{PodEntry, PodState, PodTable};
use crate::shutdown::{
    NODE_SHUTDOWN_MESSAGE, NODE_SHUTDOWN_REASON, TERMINATION_BY_KUBELET, group_by_priority,
    pod_grace,
};

/// The clients of the nodes a worker serves.
pub trait NodeDirectory: Send + Sync + 'static {
    /// The client acting as `node`, if this worker serves it.
    fn client(&self, node: &str) -> Option<NodeClient>;
    /// The node as a watch last delivered it, when one is kept (the
    /// kubelet's node lister); admission then reads no Node from the
    /// server.
    fn node(&self, _node: &str) -> Option<Arc<Node>> {
        None
    }
}

/// One node: the agent's own.
impl NodeDirectory for NodeClient {
    fn client(&self, node: &str) -> Option<NodeClient> {
        (self.node_name() == node).then(|| self.clone())
    }
}

pub use crate::pod_event::PodEvent;

/// The pods of the served nodes and what has been done with them.
pub struct PodWorker {
    runtime: Arc<dyn Runtime>,
    nodes: Arc<dyn NodeDirectory>,
    clock: Clock,
    gates: FeatureGates,
    shutting_down: AtomicBool,
    pods: Mutex<PodTable>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn uid_of(pod: &Pod) -> Option<&str> {
    pod.metadata.uid.as_deref().filter(|u| !u.is_empty())
}

fn namespace_and_name(pod: &Pod) -> (String, String) {
    (
        pod.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// The status of a rejected pod (upstream's `rejectPod`).
pub fn rejected_status(pod: &Pod, rejection: &Rejection) -> PodStatus {
    PodStatus {
        phase: Some("Failed".into()),
        reason: Some(rejection.reason.clone()),
        message: Some(rejection.status_message()),
        qos_class: pod.status.as_ref().and_then(|s| s.qos_class.clone()),
        conditions: pod.status.as_ref().and_then(|s| s.conditions.clone()),
        ..Default::default()
    }
}

/// The status of a pod ended by node shutdown: Failed (unless it had
/// Succeeded), upstream's reason and message, and `DisruptionTarget`.
pub fn shutdown_status(mut status: PodStatus, now: jiff::Timestamp) -> PodStatus {
    if status.phase.as_deref() != Some("Succeeded") {
        status.phase = Some("Failed".into());
    }
    status.reason = Some(NODE_SHUTDOWN_REASON.into());
    status.message = Some(NODE_SHUTDOWN_MESSAGE.into());
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "DisruptionTarget");
    conditions.push(PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some(TERMINATION_BY_KUBELET.into()),
        message: Some(NODE_SHUTDOWN_MESSAGE.into()),
        last_transition_time: Some(Time(now)),
        ..Default::default()
    });
    for kind in ["Ready", "ContainersReady"] {
        if let Some(c) = conditions.iter_mut().find(|c| c.type_ == kind)
            && c.status != "False"
        {
            c.status = "False".into();
            c.reason = Some("PodFailed".into());
            c.last_transition_time = Some(Time(now));
        }
    }
    status
}

impl PodWorker {
    pub fn new(
        runtime: Arc<dyn Runtime>,
        nodes: Arc<dyn NodeDirectory>,
        clock: Clock,
        gates: FeatureGates,
    ) -> Arc<PodWorker> {
        Arc::new(PodWorker {
            runtime,
            nodes,
            clock,
            gates,
            shutting_down: AtomicBool::new(false),
            pods: Mutex::default(),
        })
    }

    /// Whether graceful shutdown has begun (no pod is admitted any more).
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Handles events until the channel closes: each node's in the order
    /// they came, different nodes' side by side (see [`NodeLanes`]).
    pub async fn run(self: Arc<Self>, mut events: tokio::sync::mpsc::UnboundedReceiver<PodEvent>) {
        let worker = self.clone();
        let handler: LaneHandler = Arc::new(move |event| {
            let worker = worker.clone();
            Box::pin(async move { worker.handle(event).await })
        });
        let mut lanes = NodeLanes::new(handler, NODE_LANES);
        while let Some(event) = events.recv().await {
            lanes.send(event);
        }
        lanes.close().await;
    }

    /// Handles one event.
    pub async fn handle(self: &Arc<Self>, event: PodEvent) {
        match event {
            PodEvent::Applied(pod) => self.applied(pod).await,
            PodEvent::Deleted { uid } => self.deleted(uid.as_deref()).await,
            PodEvent::Runtime(uid) => self.runtime_changed(&uid).await,
        }
    }

    async fn applied(self: &Arc<Self>, pod: Arc<Pod>) {
        let (Some(uid), Some(node)) = (uid_of(&pod), bound_node(&pod)) else {
            return;
        };
        let (uid, node) = (uid.to_string(), node.to_string());
        let Some(client) = self.nodes.client(&node) else {
            return;
        };
        let known = {
            let mut pods = lock(&self.pods);
            match pods.get_mut(&uid) {
                Some(entry) => {
                    entry.set_pod(pod.clone());
                    Some(entry.state)
                }
                None => None,
            }
        };
        if pod.metadata.deletion_timestamp.is_some() {
            if known != Some(PodState::Stopping) {
                self.begin_deletion(client, pod, uid, node, known);
            }
            return;
        }
        if known.is_some() || is_terminal(&pod) {
            return;
        }
        // A new pod: admission against the node as watched (upstream's
        // kubelet reads its node lister), or as stored now.
        let node_object = match self.nodes.node(&node) {
            Some(watched) => watched,
            None => match client.get_node().await {
                Ok(n) => Arc::new(n),
                Err(e) => {
                    tracing::warn!(pod = ?pod.metadata.name, error = %e, "reading the node for admission failed");
                    return;
                }
            },
        };
        let verdict = {
            let pods = lock(&self.pods);
            let others: Vec<&PodUsage> = pods
                .on_node(&node)
                .filter(|e| e.state == PodState::Running && !e.is_terminal())
                .map(|e| e.usage())
                .collect();
            admit(
                &node_object,
                &pod,
                &others,
                self.is_shutting_down(),
                self.gates,
            )
        };
        match verdict {
            Err(rejection) => {
                tracing::info!(pod = ?pod.metadata.name, reason = %rejection.reason, "pod rejected");
                let status = rejected_status(&pod, &rejection);
                self.insert(&uid, &node, pod.clone(), PodState::Rejected);
                self.write_status(&client, &uid, &pod, status).await;
            }
            Ok(()) => {
                self.insert(&uid, &node, pod.clone(), PodState::Running);
                if let Err(e) = self.runtime.start_pod(&pod).await {
                    tracing::warn!(pod = ?pod.metadata.name, error = %e, "starting the pod failed");
                }
                self.runtime_changed(&uid).await;
            }
        }
    }

    fn insert(&self, uid: &str, node: &str, pod: Arc<Pod>, state: PodState) {
        lock(&self.pods).insert(uid, PodEntry::new(pod, node.to_string(), state));
    }

    fn begin_deletion(
        self: &Arc<Self>,
        client: NodeClient,
        pod: Arc<Pod>,
        uid: String,
        node: String,
        known: Option<PodState>,
    ) {
        let ran = known == Some(PodState::Running);
        {
            let mut pods = lock(&self.pods);
            match pods.get_mut(&uid) {
                Some(entry) => entry.state = PodState::Stopping,
                None => pods.insert(&uid, PodEntry::new(pod.clone(), node, PodState::Stopping)),
            }
        }
        let grace = Duration::from_secs(
            pod.metadata
                .deletion_grace_period_seconds
                .or_else(|| {
                    pod.spec
                        .as_ref()
                        .and_then(|s| s.termination_grace_period_seconds)
                })
                .unwrap_or(30)
                .max(0)
                .unsigned_abs(),
        );
        let worker = self.clone();
        tokio::spawn(async move {
            if ran || worker.runtime.pod_status(&uid).is_some() {
                if let Err(e) = worker.runtime.stop_pod(&uid, grace).await {
                    tracing::warn!(%uid, error = %e, "stopping the pod failed");
                }
                if let Some(rs) = worker.runtime.pod_status(&uid) {
                    let mut status = pod.status.clone().unwrap_or_default();
                    rs.apply_to(&mut status, worker.clock.now());
                    worker.write_status(&client, &uid, &pod, status).await;
                }
            }
            let (ns, name) = namespace_and_name(&pod);
            match client.delete_pod_now(&ns, &name, &uid).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => tracing::warn!(pod = %name, error = %e, "completing the deletion failed"),
            }
        });
    }

    async fn deleted(&self, uid: Option<&str>) {
        let Some(uid) = uid.filter(|u| !u.is_empty()) else {
            return;
        };
        if lock(&self.pods).remove(uid).is_some()
            && let Err(e) = self.runtime.remove_pod(uid).await
        {
            tracing::warn!(%uid, error = %e, "removing the pod from the runtime failed");
        }
    }

    async fn runtime_changed(&self, uid: &str) {
        let Some(rs) = self.runtime.pod_status(uid) else {
            return;
        };
        let (pod, node, status) = {
            let pods = lock(&self.pods);
            match pods.get(uid) {
                Some(e) if e.state == PodState::Running => {
                    (e.pod().clone(), e.node().to_string(), e.status().cloned())
                }
                _ => return,
            }
        };
        let Some(client) = self.nodes.client(&node) else {
            return;
        };
        let mut status = status.unwrap_or_default();
        rs.apply_to(&mut status, self.clock.now());
        self.write_status(&client, uid, &pod, status).await;
    }

    /// Writes `status` unless it is what was last written for the pod.
    async fn write_status(&self, client: &NodeClient, uid: &str, pod: &Pod, status: PodStatus) {
        {
            let pods = lock(&self.pods);
            if pods
                .get(uid)
                .and_then(|e| e.last_status.as_ref())
                .is_some_and(|last| *last == status)
            {
                return;
            }
        }
        let (ns, name) = namespace_and_name(pod);
        let patch = json!({"metadata": {"uid": uid}, "status": status});
        match client.patch_pod_status(&ns, &name, &patch).await {
            Ok(updated) => {
                if let Some(entry) = lock(&self.pods).get_mut(uid) {
                    entry.last_status = Some(status);
                    if entry.pod().metadata.deletion_timestamp.is_none() {
                        entry.set_status(updated);
                    }
                }
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => tracing::warn!(pod = %name, error = %e, "writing the pod status failed"),
        }
    }

    /// Graceful node shutdown: admits nothing more, then stops the running
    /// pods phase by phase (lowest priority first, skipping empty phases),
    /// each phase ending when its pods have stopped or its period is over,
    /// and marks them Failed. Returns the names of the pods in the order
    /// their phases ran.
    pub async fn shutdown(
        self: &Arc<Self>,
        phases: &[ShutdownGracePeriodByPodPriority],
    ) -> Vec<String> {
        self.shutting_down.store(true, Ordering::SeqCst);
        let running: Vec<(String, String, Arc<Pod>)> = lock(&self.pods)
            .iter()
            .filter(|(_, e)| e.state == PodState::Running && !e.is_terminal())
            .map(|(uid, e)| (uid.clone(), e.node().to_string(), e.current_pod()))
            .collect();
        let refs: Vec<&Pod> = running.iter().map(|(_, _, p)| p.as_ref()).collect();
        let mut order = Vec::new();
        // Stops still running when their phase's period ran out: the next
        // phase starts on time, but the agent does not exit before they end
        // (each ends by SIGKILL at its grace period) and wrote their status.
        let mut overrunning = Vec::new();
        for group in group_by_priority(phases, &refs) {
            if group.pods.is_empty() {
                continue;
            }
            tracing::info!(priority = group.priority, period = ?group.period, pods = group.pods.len(), "shutting down pods");
            let mut stops = futures::stream::FuturesUnordered::new();
            for pod in &group.pods {
                let Some((uid, node, pod)) = running
                    .iter()
                    .find(|(_, _, p)| std::ptr::eq(p.as_ref(), *pod))
                    .cloned()
                else {
                    continue;
                };
                order.push(pod.metadata.name.clone().unwrap_or_default());
                if let Some(entry) = lock(&self.pods).get_mut(&uid) {
                    entry.state = PodState::Stopping;
                }
                let grace = pod_grace(&pod, group.period);
                let worker = self.clone();
                stops.push(tokio::spawn(async move {
                    if let Err(e) = worker.runtime.stop_pod(&uid, grace).await {
                        tracing::warn!(%uid, error = %e, "stopping the pod failed");
                    }
                    let now = worker.clock.now();
                    let mut status = pod.status.clone().unwrap_or_default();
                    if let Some(rs) = worker.runtime.pod_status(&uid) {
                        let phase = status.phase.clone();
                        rs.apply_to(&mut status, now);
                        status.phase = phase;
                    }
                    let status = shutdown_status(status, now);
                    if let Some(client) = worker.nodes.client(&node) {
                        worker.write_status(&client, &uid, &pod, status).await;
                    }
                }));
            }
            let all_stopped = async { while stops.next().await.is_some() {} };
            tokio::select! {
                _ = all_stopped => {}
                _ = self.clock.sleep(group.period) => {
                    tracing::info!(priority = group.priority, "shutdown phase period over");
                }
            }
            overrunning.extend(stops);
        }
        for stop in overrunning {
            let _ = stop.await;
        }
        order
    }
}

/// Feeds the worker from a pod watch (`selector` a field selector such as
/// `spec.nodeName=n1`) and from the runtime, until the watch ends. A
/// relist that no longer contains a pod counts as its deletion
/// ([`berth_client::changes`]).
pub async fn feed(
    client: kube::Client,
    selector: String,
    runtime: Arc<dyn Runtime>,
    events: tokio::sync::mpsc::UnboundedSender<PodEvent>,
) {
    forward_runtime(runtime, events.clone());
    let api: kube::Api<Pod> = kube::Api::all(client);
    let mut pods = changes_of(api, watcher::Config::default().fields(&selector)).boxed();
    while let Some(change) = pods.next().await {
        let sent = match change {
            Change::Upsert(pod) => events.send(PodEvent::Applied(Arc::new(pod))),
            Change::Delete(gone) => events.send(PodEvent::Deleted { uid: gone.uid }),
            Change::Synced => Ok(()),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// [`feed`] from a process's shared watch of every pod instead of a watch
/// of its own (simulated nodes inside the API server's process: the
/// changes the controllers and the scheduler already decoded), the bound
/// pods only, as `spec.nodeName!=` selects them.
pub async fn feed_shared(
    pods: SharedWatch<Pod>,
    runtime: Arc<dyn Runtime>,
    events: tokio::sync::mpsc::UnboundedSender<PodEvent>,
) {
    forward_runtime(runtime, events.clone());
    let mut pods = std::pin::pin!(pods.changes());
    while let Some(change) = pods.next().await {
        let sent = match change {
            Change::Upsert(pod) if bound_node(&pod).is_some() => {
                events.send(PodEvent::Applied(pod))
            }
            // The worker forgets a UID it never ran (an unbound pod's).
            Change::Delete(gone) => events.send(PodEvent::Deleted { uid: gone.uid }),
            Change::Upsert(_) | Change::Synced => Ok(()),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Passes the runtime's changes on to the worker, until either is gone.
fn forward_runtime(
    runtime: Arc<dyn Runtime>,
    events: tokio::sync::mpsc::UnboundedSender<PodEvent>,
) {
    let mut changed = runtime.subscribe();
    tokio::spawn(async move {
        while let Some(uid) = changed.recv().await {
            if events.send(PodEvent::Runtime(uid)).is_err() {
                return;
            }
        }
    });
}
