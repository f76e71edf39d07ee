//! One pass of upstream's pod garbage collector (`PodGCController.gc`) over
//! the controller's copies of the pods and nodes, in upstream's order:
//!
//! - `gcTerminated`: terminated pods (any phase but Pending, Running and
//!   Unknown) over `--terminated-pod-gc-threshold`, evicted ones first,
//!   then the oldest;
//! - `gcTerminating`: pods being deleted on a node that is not Ready and
//!   has the `node.kubernetes.io/out-of-service` taint;
//! - `gcOrphaned`: pods bound to a node that no longer exists. A node
//!   missing from the controller's view is quarantined for 40 s, then
//!   asked for at the API (it may only be slow to show up); only one the
//!   API does not have either is gone;
//! - `gcUnscheduledTerminating`: pods being deleted that were never bound.
//!
//! Each goes the way upstream's `markFailedAndDeletePod` sends it: a pod
//! not yet finished is marked `Failed` (an orphaned one with the
//! `DisruptionTarget` condition, reason `DeletionByPodGC`), then deleted
//! with grace period 0. A pod whose deletion was accepted and that only
//! waits for its finalizers is left alone (it would only be deleted again).
//!
//! The API calls go through [`PodGcApi`], so the decisions are tested
//! against a fake, as upstream's tables are.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use berth_core::object_key::ObjectKey;
use berth_core::pod::is_terminal_phase;
use berth_core::well_known_taints::TAINT_NODE_OUT_OF_SERVICE;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, PodCondition};

use crate::metrics::ControllerMetrics;
use crate::watched_pod::WatchedPod;
use crate::work_queue::QueueState;

/// Deletions in flight at once within one step of a pass (upstream starts
/// a goroutine per pod, bounded only by its client's rate limit).
const DELETIONS_IN_FLIGHT: usize = 32;

/// Why a pod is collected: the `reason` label of upstream's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Terminated,
    OutOfService,
    Orphaned,
    Unscheduled,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::Terminated => "terminated",
            Reason::OutOfService => "out-of-service",
            Reason::Orphaned => "orphaned",
            Reason::Unscheduled => "unscheduled",
        }
    }
}

/// The API calls a pass makes.
pub trait PodGcApi: Sync {
    /// Whether Node `name` exists (a GET; an error is not an answer).
    fn node_exists(&self, name: &str) -> impl Future<Output = Result<bool, kube::Error>> + Send;

    /// Marks `pod` `Failed`, with `condition` among its conditions.
    /// `Ok(false)`: the pod is gone, or another pod has its name now.
    fn mark_failed(
        &self,
        pod: &WatchedPod,
        condition: Option<&PodCondition>,
    ) -> impl Future<Output = Result<bool, kube::Error>> + Send;

    /// Deletes `pod` with grace period 0 (and its UID as precondition).
    /// `Ok(false)` as [`PodGcApi::mark_failed`].
    fn force_delete(
        &self,
        pod: &WatchedPod,
    ) -> impl Future<Output = Result<bool, kube::Error>> + Send;
}

/// The controller's view of the cluster and its node quarantine.
#[derive(Debug)]
pub struct PodGc {
    pub pods: BTreeMap<ObjectKey, WatchedPod>,
    pub nodes: BTreeMap<String, Node>,
    /// `--terminated-pod-gc-threshold`; 0 (or less) collects no terminated
    /// pods.
    pub terminated_pod_threshold: i64,
    pub quarantine_time: Duration,
    /// Nodes missing from the view, each asked for once its quarantine
    /// ends (upstream's `orphaned_pods_nodes` delaying queue).
    quarantine: QueueState<String>,
}

/// A pod to collect and why.
struct Doomed<'a> {
    pod: &'a WatchedPod,
    reason: Reason,
    condition: Option<PodCondition>,
}

impl PodGc {
    pub fn new(terminated_pod_threshold: i64, quarantine_time: Duration) -> PodGc {
        PodGc {
            pods: BTreeMap::new(),
            nodes: BTreeMap::new(),
            terminated_pod_threshold,
            quarantine_time,
            quarantine: QueueState::default(),
        }
    }

    /// One pass at `now` (upstream's `gc`).
    pub async fn gc(&mut self, api: &impl PodGcApi, now: Timestamp, metrics: &ControllerMetrics) {
        let pods: Vec<&WatchedPod> = self.pods.values().collect();
        if self.terminated_pod_threshold > 0 {
            let doomed = terminated(&pods, self.terminated_pod_threshold);
            if !doomed.is_empty() {
                tracing::info!(pods = doomed.len(), "Garbage collecting terminated pods");
            }
            collect(api, doomed, metrics).await;
        }
        collect(api, terminating_out_of_service(&pods, &self.nodes), metrics).await;
        let quarantine = Quarantine {
            queue: &mut self.quarantine,
            nodes: &self.nodes,
            time: self.quarantine_time,
        };
        let gone = quarantine.deleted_nodes(&pods, api, now).await;
        collect(api, orphaned(&pods, &gone), metrics).await;
        collect(api, unscheduled_terminating(&pods), metrics).await;
    }
}

/// The node quarantine of one pass.
struct Quarantine<'a> {
    queue: &'a mut QueueState<String>,
    nodes: &'a BTreeMap<String, Node>,
    time: Duration,
}

impl Quarantine<'_> {
    /// Quarantines the nodes pods are bound to that the view lacks, and
    /// returns those whose quarantine is over and that the API does not
    /// have either (upstream's `discoverDeletedNodes`).
    async fn deleted_nodes(
        self,
        pods: &[&WatchedPod],
        api: &impl PodGcApi,
        now: Timestamp,
    ) -> BTreeSet<String> {
        let quarantine = SignedDuration::try_from(self.time).unwrap_or(SignedDuration::MAX);
        let until = now.saturating_add(quarantine).unwrap_or(Timestamp::MAX);
        for pod in pods {
            let node = pod.node_name();
            if !node.is_empty() && !self.nodes.contains_key(node) {
                self.queue.add_after(node.to_string(), until);
            }
        }
        self.queue.promote_due(now);
        let mut gone = BTreeSet::new();
        while let Some(node) = self.queue.get() {
            if !self.nodes.contains_key(&node) {
                match api.node_exists(&node).await {
                    Ok(false) => {
                        gone.insert(node.clone());
                    }
                    Ok(true) => {}
                    // Asked again at a later pass if pods still need it.
                    Err(error) => tracing::error!(%node, %error, "Error while getting node"),
                }
            }
            self.queue.done(&node);
        }
        gone
    }
}

/// Upstream `gcTerminated`: beyond `threshold` terminated pods, the
/// excess (counting pods only waiting for their finalizers, deleting only
/// the others), evicted first, then oldest first.
fn terminated<'a>(pods: &[&'a WatchedPod], threshold: i64) -> Vec<Doomed<'a>> {
    let terminated: Vec<&WatchedPod> = pods.iter().copied().filter(|p| is_terminated(p)).collect();
    let excess = usize::try_from(i64::try_from(terminated.len()).unwrap_or(i64::MAX) - threshold)
        .unwrap_or(0);
    let mut candidates: Vec<&WatchedPod> = terminated
        .into_iter()
        .filter(|p| !is_blocked_on_finalizers(p))
        .collect();
    candidates.sort_by(|a, b| eviction_then_creation(a, b));
    candidates.truncate(excess);
    doomed(candidates, Reason::Terminated, None)
}

/// Upstream `gcTerminating`: pods being deleted on a node that is not
/// Ready and has the out-of-service taint (of any effect).
fn terminating_out_of_service<'a>(
    pods: &[&'a WatchedPod],
    nodes: &BTreeMap<String, Node>,
) -> Vec<Doomed<'a>> {
    let mut candidates: Vec<&WatchedPod> = pods
        .iter()
        .copied()
        .filter(|pod| pod.metadata.deletion_timestamp.is_some() && !is_blocked_on_finalizers(pod))
        .filter(|pod| match nodes.get(pod.node_name()) {
            Some(node) => !is_node_ready(node) && has_out_of_service_taint(node),
            None => {
                tracing::debug!(
                    node = pod.node_name(),
                    "Failed to get node of a terminating pod"
                );
                false
            }
        })
        .collect();
    candidates.sort_by(|a, b| eviction_then_creation(a, b));
    doomed(candidates, Reason::OutOfService, None)
}

/// Upstream `gcOrphaned`'s deletions: the pods bound to a node that is
/// gone, with the `DisruptionTarget` condition.
fn orphaned<'a>(pods: &[&'a WatchedPod], gone: &BTreeSet<String>) -> Vec<Doomed<'a>> {
    let candidates = pods
        .iter()
        .copied()
        .filter(|pod| gone.contains(pod.node_name()) && !is_blocked_on_finalizers(pod))
        .inspect(|pod| {
            tracing::info!(
                pod = %ObjectKey::of_meta(&pod.metadata),
                node = pod.node_name(),
                "Found orphaned Pod assigned to the Node, deleting"
            )
        })
        .collect();
    doomed(candidates, Reason::Orphaned, Some(orphaned_condition()))
}

/// Upstream `gcUnscheduledTerminating`: pods being deleted that no node
/// will ever finish.
fn unscheduled_terminating<'a>(pods: &[&'a WatchedPod]) -> Vec<Doomed<'a>> {
    let candidates = pods
        .iter()
        .copied()
        .filter(|pod| {
            pod.metadata.deletion_timestamp.is_some()
                && pod.node_name().is_empty()
                && !is_blocked_on_finalizers(pod)
        })
        .collect();
    doomed(candidates, Reason::Unscheduled, None)
}

fn doomed(
    pods: Vec<&WatchedPod>,
    reason: Reason,
    condition: Option<PodCondition>,
) -> Vec<Doomed<'_>> {
    pods.into_iter()
        .map(|pod| Doomed {
            pod,
            reason,
            condition: condition.clone(),
        })
        .collect()
}

/// The condition an orphaned pod gets before it is deleted.
pub fn orphaned_condition() -> PodCondition {
    PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("DeletionByPodGC".into()),
        message: Some("PodGC: node no longer exists".into()),
        ..PodCondition::default()
    }
}

/// Carries out a step's deletions (upstream's `markFailedAndDeletePod` per
/// pod), a few at a time, counting them in upstream's metrics.
async fn collect(api: &impl PodGcApi, doomed: Vec<Doomed<'_>>, metrics: &ControllerMetrics) {
    // The futures are made first: a stream mapping each pod to its future
    // would not be `Send` (its closure is not general over the lifetime).
    let deletions: Vec<_> = doomed
        .into_iter()
        .map(|d| collect_one(api, d, metrics))
        .collect();
    futures::stream::iter(deletions)
        .buffer_unordered(DELETIONS_IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

/// One pod's `markFailedAndDeletePod`.
async fn collect_one(api: &impl PodGcApi, d: Doomed<'_>, metrics: &ControllerMetrics) {
    let namespace = d.pod.metadata.namespace.as_deref().unwrap_or("");
    let labels = ControllerMetrics::pod_gc(namespace, d.reason.label());
    metrics.pod_gc_force_deletes.get_or_create(&labels).inc();
    let key = ObjectKey::of_meta(&d.pod.metadata);
    tracing::info!(pod = %key, reason = d.reason.label(), "PodGC is force deleting Pod");
    let marked = if is_terminal_phase(Some(d.pod.phase())) {
        Ok(true)
    } else {
        api.mark_failed(d.pod, d.condition.as_ref()).await
    };
    let result = match marked {
        Ok(true) => api.force_delete(d.pod).await,
        other => other,
    };
    if let Err(error) = result {
        metrics
            .pod_gc_force_delete_errors
            .get_or_create(&labels)
            .inc();
        tracing::warn!(pod = %key, %error, "PodGC could not delete the Pod");
    }
}

/// Upstream `isPodTerminated`: any phase but Pending, Running and Unknown
/// (an unset phase included).
fn is_terminated(pod: &WatchedPod) -> bool {
    !matches!(pod.phase(), "Pending" | "Running" | "Unknown")
}

/// A terminated pod whose immediate deletion was accepted and that only
/// waits for its finalizers: deleting it again would change nothing.
fn is_blocked_on_finalizers(pod: &WatchedPod) -> bool {
    let meta = &pod.metadata;
    is_terminal_phase(Some(pod.phase()))
        && meta.deletion_timestamp.is_some()
        && meta.deletion_grace_period_seconds == Some(0)
        && meta.finalizers.as_ref().is_some_and(|f| !f.is_empty())
}

/// Upstream `eviction.PodIsEvicted`.
fn is_evicted(pod: &WatchedPod) -> bool {
    pod.phase() == "Failed"
        && pod.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted")
}

/// Upstream `byEvictionAndCreationTimestamp`: evicted first, then by
/// creation time, then by name.
fn eviction_then_creation(a: &WatchedPod, b: &WatchedPod) -> std::cmp::Ordering {
    is_evicted(b)
        .cmp(&is_evicted(a))
        .then_with(|| {
            let created = |p: &WatchedPod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            created(a).cmp(&created(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// Upstream `nodeutil.IsNodeReady`.
fn is_node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn has_out_of_service_taint(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == TAINT_NODE_OUT_OF_SERVICE))
}

#[cfg(test)]
#[path = "collect_tests.rs"]
mod tests;
