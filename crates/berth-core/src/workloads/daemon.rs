//! DaemonSet decisions, ported from upstream's `pkg/controller/daemon`:
//!
//! - where a daemon pod belongs: `NodeShouldRunDaemonPod` and its
//!   `predicates` (the template's `nodeName`, its `nodeSelector` and
//!   required node affinity, NoSchedule/NoExecute taints against the
//!   tolerations) as [`DaemonPod::placement_on`]; cordoned nodes are
//!   handled by the automatic `unschedulable` toleration, as upstream;
//! - the daemon pod as created: `AddOrUpdateDaemonPodTolerations`,
//!   `CreatePodTemplate`, `ReplaceDaemonSetPodNodeNameNodeAffinity` (the
//!   per-node required node affinity that lets the default scheduler bind
//!   the pod; `nodeName` is never set), `GetTargetNodeName`,
//!   `IsPodUpdated`, `GetTemplateGeneration`;
//! - what one sync does: `podsShouldBeOnNode`, `manage`,
//!   `getNodesToDaemonPods`, `getUnscheduledPodsWithoutNode`, the status
//!   counts of `updateDaemonSetStatus`; which node updates matter
//!   (`shouldIgnoreNodeUpdate`);
//! - rolling updates (`update.go`): `SurgeCount`, `UnavailableCount`,
//!   `AllowsSurge`, `updatedDesiredNodeCounts`, `findUpdatedPodsOnNode`
//!   and the decision half of `rollingUpdate`.
//!
//! Differences from upstream: nodes and their pods are visited in node
//! name order where upstream walks a Go map (random order), so which
//! candidates a budget admits first is deterministic here. Deleting a
//! failed pod is subject to a per-node backoff upstream keeps in the
//! controller; [`NodePodsPlan::failed`] hands those pods to the caller,
//! which owns that state.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeCondition, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PodSpec, PodTemplateSpec, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::CONTROLLER_REVISION_HASH_LABEL;
use super::history;
use super::ownership::new_controller_ref;
use super::template_hash::{canonical_json, compute_hash};
use crate::feature_gates::FeatureGates;
use crate::int_or_string::{IntOrStringError, scaled_value};
use crate::node_affinity::RequiredNodeAffinity;
use crate::pod;
use crate::toleration::{
    EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, OP_EXISTS, add_or_update_toleration,
    find_matching_untolerated_taint, is_do_not_schedule, is_no_execute,
};
use crate::well_known_taints::{
    TAINT_NODE_DISK_PRESSURE, TAINT_NODE_MEMORY_PRESSURE, TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY, TAINT_NODE_PID_PRESSURE, TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
};

/// Upstream's `BurstReplicas` for DaemonSets: at most this many creates
/// (and deletes) per sync, so a new DaemonSet on thousands of nodes does
/// not flood the API server in one go.
pub const BURST_REPLICAS: usize = 250;

/// `extensions.DaemonSetTemplateGenerationKey`: the pod label of the
/// pre-ControllerRevision update scheme, still honoured by `IsPodUpdated`.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// `apps.DeprecatedTemplateGeneration`: the DaemonSet annotation that
/// carries the template generation for that scheme.
pub const DEPRECATED_TEMPLATE_GENERATION_ANNOTATION: &str =
    "deprecated.daemonset.template.generation";

/// `metav1.ObjectNameField`: the one node field a node selector can match.
const OBJECT_NAME_FIELD: &str = "metadata.name";

/// The update strategy types.
pub const STRATEGY_ROLLING_UPDATE: &str = "RollingUpdate";
pub const STRATEGY_ON_DELETE: &str = "OnDelete";

/// Where a DaemonSet's pod belongs, for one node
/// (`NodeShouldRunDaemonPod`'s two results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// A pod should be created on the node if it has none.
    pub should_run: bool,
    /// A pod already on the node may stay: false only when the node does
    /// not match at all or has a NoExecute taint the pod does not
    /// tolerate (a NoSchedule taint keeps new pods off, not running ones).
    pub should_continue_running: bool,
}

/// A DaemonSet's pod as the placement rules see it (upstream `NewPod`
/// without the node name), prepared once per DaemonSet so that it can be
/// checked against thousands of nodes without rebuilding anything.
#[derive(Debug, Clone)]
pub struct DaemonPod {
    /// The template's `nodeName`, if it pins the pod to one node.
    template_node_name: Option<String>,
    affinity: RequiredNodeAffinity,
    /// The template's tolerations plus the automatic ones.
    tolerations: Vec<Toleration>,
}

impl DaemonPod {
    /// The DaemonSet's pod template with its automatic tolerations.
    pub fn of(ds: &DaemonSet) -> DaemonPod {
        let spec = template(ds).spec.clone().unwrap_or_default();
        let template_node_name = spec.node_name.clone().filter(|n| !n.is_empty());
        let mut tolerations = spec.tolerations.clone().unwrap_or_default();
        add_daemon_tolerations(&mut tolerations, spec.host_network == Some(true));
        let affinity = RequiredNodeAffinity::of_pod(&Pod {
            spec: Some(spec),
            ..Pod::default()
        });
        DaemonPod {
            template_node_name,
            affinity,
            tolerations,
        }
    }

    /// `NodeShouldRunDaemonPod`: a template pinned to another node, or a
    /// node its selector and required affinity reject, gets no pod
    /// (unparsable affinity terms match nothing, as upstream ignores the
    /// parse error); a NoSchedule or NoExecute taint the pod does not
    /// tolerate keeps new pods off, and only an untolerated NoExecute one
    /// removes a running pod.
    pub fn placement_on(&self, node: &Node, gates: FeatureGates) -> Placement {
        let node_name = node.metadata.name.as_deref().unwrap_or("");
        let pinned_elsewhere = self
            .template_node_name
            .as_deref()
            .is_some_and(|pinned| pinned != node_name);
        if pinned_elsewhere || !self.affinity.matches(node) {
            return Placement {
                should_run: false,
                should_continue_running: false,
            };
        }
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        let untolerated = |filter: fn(&_) -> bool| {
            find_matching_untolerated_taint(taints, &self.tolerations, filter, gates).is_some()
        };
        if !untolerated(is_do_not_schedule) {
            return Placement {
                should_run: true,
                should_continue_running: true,
            };
        }
        Placement {
            should_run: false,
            should_continue_running: !untolerated(is_no_execute),
        }
    }
}

/// `NodeShouldRunDaemonPod` for one node; prefer [`DaemonPod::of`] once and
/// [`DaemonPod::placement_on`] per node when checking many.
pub fn node_should_run_daemon_pod(node: &Node, ds: &DaemonSet, gates: FeatureGates) -> Placement {
    DaemonPod::of(ds).placement_on(node, gates)
}

fn template(ds: &DaemonSet) -> &PodTemplateSpec {
    &ds.spec.template
}

fn exists_toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_string()),
        operator: Some(OP_EXISTS.to_string()),
        effect: Some(effect.to_string()),
        value: None,
        toleration_seconds: None,
    }
}

fn add_daemon_tolerations(tolerations: &mut Vec<Toleration>, host_network: bool) {
    // Never evicted for node trouble: a daemon pod belongs on its node
    // however the node is doing, so no tolerationSeconds.
    for key in [TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE] {
        add_or_update_toleration(tolerations, &exists_toleration(key, EFFECT_NO_EXECUTE));
    }
    // TaintNodesByCondition: node conditions and cordoning must not keep
    // daemons (often the very agents that fix the node) off it.
    for key in [
        TAINT_NODE_DISK_PRESSURE,
        TAINT_NODE_MEMORY_PRESSURE,
        TAINT_NODE_PID_PRESSURE,
        TAINT_NODE_UNSCHEDULABLE,
    ] {
        add_or_update_toleration(tolerations, &exists_toleration(key, EFFECT_NO_SCHEDULE));
    }
    // A host-network pod does not need the pod network to be up.
    if host_network {
        add_or_update_toleration(
            tolerations,
            &exists_toleration(TAINT_NODE_NETWORK_UNAVAILABLE, EFFECT_NO_SCHEDULE),
        );
    }
}

/// `AddOrUpdateDaemonPodTolerations`: not-ready and unreachable NoExecute
/// forever; disk, memory and PID pressure and unschedulable NoSchedule;
/// network-unavailable NoSchedule for host-network pods. A toleration of
/// the same identity in the template is replaced (so a template's
/// `tolerationSeconds` on not-ready is dropped), others are kept.
pub fn add_or_update_daemon_pod_tolerations(spec: &mut PodSpec) {
    let host_network = spec.host_network == Some(true);
    add_daemon_tolerations(spec.tolerations.get_or_insert_with(Vec::new), host_network);
}

/// `GetTemplateGeneration`: the deprecated template-generation annotation,
/// if present and a number (upstream treats an unparsable one as absent
/// too, "the controller handles this via the hash").
pub fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata
        .annotations
        .as_ref()?
        .get(DEPRECATED_TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()
}

/// `CreatePodTemplate`: the template with the automatic tolerations, the
/// template-generation label when there is a generation, and the
/// `controller-revision-hash` label when there is a hash.
pub fn create_pod_template(
    template: &PodTemplateSpec,
    generation: Option<i64>,
    hash: &str,
) -> PodTemplateSpec {
    let mut out = template.clone();
    add_or_update_daemon_pod_tolerations(out.spec.get_or_insert_with(PodSpec::default));
    let labels = out
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    if let Some(generation) = generation {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
    }
    if !hash.is_empty() {
        labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    }
    out
}

fn node_name_term(node_name: &str) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(vec![NodeSelectorRequirement {
            key: OBJECT_NAME_FIELD.into(),
            operator: "In".into(),
            values: Some(vec![node_name.into()]),
        }]),
    }
}

/// `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity
/// becomes the single term `metadata.name In [node]`, whatever it was
/// (the placement rules already checked that the node satisfies it);
/// preferred terms and pod (anti-)affinity are kept.
pub fn replace_daemon_set_pod_node_name_node_affinity(
    affinity: Option<Affinity>,
    node_name: &str,
) -> Affinity {
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default)
        .node_selector_terms = vec![node_name_term(node_name)];
    affinity
}

/// The template the controller posts to put a daemon pod on `node_name`:
/// `CreatePodTemplate` with the DaemonSet's template generation and
/// `hash`, then [`replace_daemon_set_pod_node_name_node_affinity`].
pub fn pod_template_for_node(ds: &DaemonSet, node_name: &str, hash: &str) -> PodTemplateSpec {
    let mut out = create_pod_template(template(ds), template_generation(ds), hash);
    let spec = out.spec.get_or_insert_with(PodSpec::default);
    spec.affinity = Some(replace_daemon_set_pod_node_name_node_affinity(
        spec.affinity.take(),
        node_name,
    ));
    out
}

/// `GetTargetNodeName`: the node a daemon pod is bound to, or, while it is
/// pending, the node its `metadata.name In [node]` field requirement
/// names. `None` when neither says (upstream's errors, which callers only
/// log), including a name requirement with other than exactly one value.
pub fn target_node_name(pod: &Pod) -> Option<&str> {
    if let Some(node) = pod::bound_node(pod) {
        return Some(node);
    }
    let terms = &pod
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let requirement = terms
        .iter()
        .flat_map(|term| term.match_fields.iter().flatten())
        .find(|r| r.key == OBJECT_NAME_FIELD && r.operator == "In")?;
    match requirement.values.as_deref() {
        Some([node]) => Some(node),
        _ => None,
    }
}

/// `IsPodUpdated`: the pod carries the current revision `hash`, or the
/// current template generation of the older scheme.
pub fn is_pod_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let label = |key: &str| {
        pod.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    };
    let template_matches =
        generation.is_some_and(|g| label(TEMPLATE_GENERATION_LABEL) == Some(&g.to_string()));
    let hash_matches = !hash.is_empty() && label(CONTROLLER_REVISION_HASH_LABEL) == Some(hash);
    hash_matches || template_matches
}

/// The rolling-update parameters, with the API server's defaults for what
/// is absent (type RollingUpdate, maxUnavailable 1, maxSurge 0); `None`
/// for OnDelete (or an unknown type, which validation refuses).
fn rolling_update_params(ds: &DaemonSet) -> Option<(IntOrString, IntOrString)> {
    let strategy = ds.spec.update_strategy.as_ref();
    let kind = strategy
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(STRATEGY_ROLLING_UPDATE);
    if kind != STRATEGY_ROLLING_UPDATE {
        return None;
    }
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let surge = rolling.and_then(|r| r.max_surge.clone());
    let unavailable = rolling.and_then(|r| r.max_unavailable.clone());
    Some((
        surge.unwrap_or(IntOrString::Int(0)),
        unavailable.unwrap_or(IntOrString::Int(1)),
    ))
}

/// `SurgeCount`: how many extra pods the rollout may run out of
/// `number_to_schedule` (percentages round up); 0 for OnDelete.
pub fn surge_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, IntOrStringError> {
    rolling_update_params(ds).map_or(Ok(0), |(surge, _)| {
        scaled_value(&surge, number_to_schedule, true)
    })
}

/// `UnavailableCount`: how many pods may be unavailable out of
/// `number_to_schedule` (percentages round up); 0 for OnDelete.
pub fn unavailable_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, IntOrStringError> {
    rolling_update_params(ds).map_or(Ok(0), |(_, unavailable)| {
        scaled_value(&unavailable, number_to_schedule, true)
    })
}

/// `AllowsSurge`: a node may hold two pods (old and new) during a rollout.
pub fn allows_surge(ds: &DaemonSet) -> bool {
    surge_count(ds, 1).is_ok_and(|surge| surge > 0)
}

fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec.min_ready_seconds.unwrap_or(0)
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn created(pod: &Pod) -> Timestamp {
    // Go's zero time sorts before every real one.
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::MIN, |t| t.0)
}

/// `podByCreationTimestampAndPhase`: scheduled pods first, then the
/// oldest, then by name; the first pod is the one a node keeps.
pub fn by_creation_timestamp_and_phase(a: &Pod, b: &Pod) -> Ordering {
    let unscheduled = |p: &Pod| pod::bound_node(p).is_none();
    unscheduled(a)
        .cmp(&unscheduled(b))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// What one node needs (`podsShouldBeOnNode`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodePodsPlan {
    /// Create a daemon pod on the node.
    pub create: bool,
    /// Pods to delete now: succeeded pods, excess pods, pods on a node
    /// that no longer wants them.
    pub delete: Vec<String>,
    /// Failed pods to delete, subject to the caller's per-node backoff
    /// (upstream's `failedPodsBackoff`, keyed by DaemonSet UID, observed
    /// generation and node): the kubelet may keep rejecting the pod, and
    /// recreating it at once would hot-loop.
    pub failed: Vec<String>,
}

/// `podsShouldBeOnNode`: given the node's placement and the DaemonSet's
/// pods there, whether to create one and which to delete. Without surge a
/// node keeps only its oldest running pod; with surge it keeps at most
/// the oldest pod of the current revision (`hash`) and the oldest older
/// one, and lets the old one go once the new one is available (or the
/// old one is not ready).
pub fn pods_should_be_on_node(
    placement: Placement,
    daemon_pods: &[&Pod],
    ds: &DaemonSet,
    hash: &str,
    now: Timestamp,
) -> NodePodsPlan {
    let mut plan = NodePodsPlan::default();
    let exists = !daemon_pods.is_empty();
    if placement.should_run && !exists {
        plan.create = true;
        return plan;
    }
    if !placement.should_continue_running {
        plan.delete = daemon_pods
            .iter()
            .filter(|p| !pod::is_terminating(p))
            .map(|p| name(p))
            .collect();
        return plan;
    }
    let mut running: Vec<&Pod> = Vec::new();
    for &p in daemon_pods {
        if pod::is_terminating(p) {
            continue;
        }
        match p.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some("Failed") => plan.failed.push(name(p)),
            Some("Succeeded") => plan.delete.push(name(p)),
            _ => running.push(p),
        }
    }
    running.sort_by(|a, b| by_creation_timestamp_and_phase(a, b));
    if !allows_surge(ds) {
        plan.delete.extend(running.iter().skip(1).map(|p| name(p)));
        return plan;
    }
    if running.len() <= 1 {
        // Surging needs at least one live pod on the node.
        plan.create = running.is_empty() && placement.should_run;
        return plan;
    }
    let mut oldest_new: Option<&Pod> = None;
    let mut oldest_old: Option<&Pod> = None;
    for p in running {
        let slot = if p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            .is_some_and(|h| h == hash)
        {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(p);
        } else {
            plan.delete.push(name(p));
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old)
        && (!pod::is_ready(old) || pod::is_available(new, min_ready_seconds(ds), now))
    {
        plan.delete.push(name(old));
    }
    plan
}

/// A DaemonSet's pods by node name, the names borrowed from the pods (and
/// the nodes): a sync builds one per step over every pod, so no name is
/// copied.
pub type NodePods<'a> = BTreeMap<&'a str, Vec<&'a Pod>>;

/// `getNodesToDaemonPods`: the DaemonSet's (claimed) pods by the node they
/// are on or meant for ([`target_node_name`]; pods naming no node are
/// left out). Finished pods already being deleted are left out unless
/// `include_deleted_terminal`: nothing is left to do with them but for
/// history cleanup, which must still see their revision.
pub fn nodes_to_daemon_pods<'a>(pods: &[&'a Pod], include_deleted_terminal: bool) -> NodePods<'a> {
    let mut by_node = NodePods::new();
    for &p in pods {
        if !include_deleted_terminal && pod::is_terminal(p) && pod::is_terminating(p) {
            continue;
        }
        if let Some(node) = target_node_name(p) {
            by_node.entry(node).or_default().push(p);
        }
    }
    by_node
}

/// `getUnscheduledPodsWithoutNode`: pending pods meant for a node that no
/// longer exists. The scheduler cannot place them and pod GC does not
/// collect unbound pods, so the DaemonSet controller deletes them.
pub fn unscheduled_pods_without_node(nodes: &[&Node], node_to_pods: &NodePods) -> Vec<String> {
    let existing: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    node_to_pods
        .iter()
        .filter(|(node, _)| !existing.contains(*node))
        .flat_map(|(_, pods)| pods.iter())
        .filter(|p| pod::bound_node(p).is_none())
        .map(|p| name(p))
        .collect()
}

/// One sync's creates and deletes (`manage` before `syncNodes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagePlan {
    /// Nodes to create a daemon pod on ([`pod_template_for_node`]), in
    /// node order. At most [`BURST_REPLICAS`] are created per sync, in
    /// slow-start batches.
    pub create_on: Vec<String>,
    /// Pods to delete now.
    pub delete: Vec<String>,
    /// Failed pods to delete, with their node, subject to the caller's
    /// backoff ([`NodePodsPlan::failed`]).
    pub failed: Vec<(String, String)>,
}

/// `manage`: [`pods_should_be_on_node`] for every node, plus the pending
/// pods of nodes that are gone. `node_to_pods` is
/// [`nodes_to_daemon_pods`] without deleted terminal pods.
pub fn manage(
    ds: &DaemonSet,
    nodes: &[&Node],
    node_to_pods: &NodePods,
    hash: &str,
    now: Timestamp,
    gates: FeatureGates,
) -> ManagePlan {
    let daemon = DaemonPod::of(ds);
    let mut plan = ManagePlan::default();
    for node in nodes {
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        let pods = node_to_pods.get(node_name).map_or(&[][..], Vec::as_slice);
        let on_node = pods_should_be_on_node(daemon.placement_on(node, gates), pods, ds, hash, now);
        if on_node.create {
            plan.create_on.push(node_name.to_string());
        }
        plan.delete.extend(on_node.delete);
        plan.failed.extend(
            on_node
                .failed
                .into_iter()
                .map(|p| (node_name.to_string(), p)),
        );
    }
    plan.delete
        .extend(unscheduled_pods_without_node(nodes, node_to_pods));
    plan
}

/// The counts of a DaemonSet's status (`updateDaemonSetStatus`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    pub desired_number_scheduled: i32,
    pub current_number_scheduled: i32,
    pub number_misscheduled: i32,
    pub number_ready: i32,
    pub updated_number_scheduled: i32,
    pub number_available: i32,
    pub number_unavailable: i32,
}

/// `updateDaemonSetStatus`'s arithmetic: per node that should run the
/// pod, whether it has one and whether the oldest is ready, available at
/// `now` and of the current revision; pods on nodes that should not run
/// one are misscheduled.
pub fn status_counts(
    ds: &DaemonSet,
    nodes: &[&Node],
    node_to_pods: &NodePods,
    hash: &str,
    now: Timestamp,
    gates: FeatureGates,
) -> StatusCounts {
    let daemon = DaemonPod::of(ds);
    let generation = template_generation(ds);
    let mut counts = StatusCounts::default();
    for node in nodes {
        let pods = node
            .metadata
            .name
            .as_ref()
            .and_then(|n| node_to_pods.get(n.as_str()))
            .map_or(&[][..], Vec::as_slice);
        let oldest = pods
            .iter()
            .copied()
            .min_by(|a, b| by_creation_timestamp_and_phase(a, b));
        if !daemon.placement_on(node, gates).should_run {
            counts.number_misscheduled += i32::from(oldest.is_some());
            continue;
        }
        counts.desired_number_scheduled += 1;
        let Some(oldest) = oldest else {
            continue;
        };
        counts.current_number_scheduled += 1;
        if pod::is_ready(oldest) {
            counts.number_ready += 1;
            if pod::is_available(oldest, min_ready_seconds(ds), now) {
                counts.number_available += 1;
            }
        }
        if is_pod_updated(oldest, hash, generation) {
            counts.updated_number_scheduled += 1;
        }
    }
    counts.number_unavailable = counts.desired_number_scheduled - counts.number_available;
    counts
}

/// The rollout's budget (`updatedDesiredNodeCounts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateBudget {
    pub max_surge: i32,
    pub max_unavailable: i32,
    pub desired_number_scheduled: i32,
}

/// Why a rollout step cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolloutError {
    #[error("invalid value for MaxUnavailable: {0}")]
    MaxUnavailable(IntOrStringError),
    #[error("invalid value for MaxSurge: {0}")]
    MaxSurge(IntOrStringError),
    #[error("couldn't get node for nodeName {0:?}")]
    NodeNotFound(String),
}

/// `updatedDesiredNodeCounts`: surge and unavailability resolved against
/// the number of nodes that should run the pod (percentages round up);
/// when both resolve to 0 on a non-empty set, 1 unavailable is allowed so
/// the rollout can move. Adds an empty entry to `node_to_pods` for every
/// node that should run a pod and has none, so the rollout counts it.
pub fn updated_desired_node_counts<'a>(
    ds: &DaemonSet,
    nodes: &[&'a Node],
    node_to_pods: &mut NodePods<'a>,
    gates: FeatureGates,
) -> Result<UpdateBudget, RolloutError> {
    let daemon = DaemonPod::of(ds);
    let mut desired = 0;
    for node in nodes {
        if !daemon.placement_on(node, gates).should_run {
            continue;
        }
        desired += 1;
        node_to_pods
            .entry(node.metadata.name.as_deref().unwrap_or_default())
            .or_default();
    }
    let mut max_unavailable =
        unavailable_count(ds, desired).map_err(RolloutError::MaxUnavailable)?;
    let max_surge = surge_count(ds, desired).map_err(RolloutError::MaxSurge)?;
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    Ok(UpdateBudget {
        max_surge,
        max_unavailable,
        desired_number_scheduled: desired,
    })
}

/// The live pods of one node split by revision (`findUpdatedPodsOnNode`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeRevisions<'a> {
    pub new: Option<&'a Pod>,
    pub old: Option<&'a Pod>,
}

/// `findUpdatedPodsOnNode`: the node's one current-revision pod and one
/// older pod, ignoring pods being deleted; `None` when it has more than
/// one of either, which [`manage`] prunes first.
pub fn find_updated_pods_on_node<'a>(
    ds: &DaemonSet,
    pods: &[&'a Pod],
    hash: &str,
) -> Option<NodeRevisions<'a>> {
    let generation = template_generation(ds);
    let mut found = NodeRevisions::default();
    for &p in pods.iter().filter(|p| !pod::is_terminating(p)) {
        let slot = if is_pod_updated(p, hash, generation) {
            &mut found.new
        } else {
            &mut found.old
        };
        if slot.replace(p).is_some() {
            return None;
        }
    }
    Some(found)
}

/// One rollout step (the decision half of `rollingUpdate`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutPlan {
    /// Old pods to delete.
    pub delete: Vec<String>,
    /// Nodes to create a new-revision pod on (surge).
    pub create_on: Vec<String>,
}

/// `rollingUpdate`. Without surge: delete old pods, unavailable ones
/// always and available ones while fewer than `maxUnavailable` pods are
/// unavailable; [`manage`] then creates their replacements. With surge:
/// create a new pod next to each unavailable old one, and next to up to
/// `maxSurge` available ones; delete an old pod once its node's new pod
/// is available; old pods on nodes that no longer want the DaemonSet go
/// only as far as pods available elsewhere exceed the desired number.
/// Deleted pods never count as unavailable, so a rollout moves on while
/// nodes are down.
pub fn rolling_update(
    ds: &DaemonSet,
    nodes: &[&Node],
    node_to_pods: &NodePods,
    hash: &str,
    now: Timestamp,
    gates: FeatureGates,
) -> Result<RolloutPlan, RolloutError> {
    let mut node_to_pods = node_to_pods.clone();
    let budget = updated_desired_node_counts(ds, nodes, &mut node_to_pods, gates)?;
    let available = |p: &Pod| pod::is_available(p, min_ready_seconds(ds), now);
    if budget.max_surge == 0 {
        return Ok(rolling_update_without_surge(
            ds,
            &node_to_pods,
            hash,
            budget,
            available,
        ));
    }
    let daemon = DaemonPod::of(ds);
    let should_run = |node_name: &str| {
        nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(node_name))
            .map(|n| daemon.placement_on(n, gates).should_run)
            .ok_or_else(|| RolloutError::NodeNotFound(node_name.to_string()))
    };
    let mut plan = RolloutPlan::default();
    let mut sunset_candidates = Vec::new();
    let mut candidate_nodes = Vec::new();
    let mut num_surge = 0;
    let mut num_available = 0;
    for (node_name, pods) in &node_to_pods {
        let Some(NodeRevisions { new, old }) = find_updated_pods_on_node(ds, pods, hash) else {
            // manage prunes this node first; it counts as surging.
            num_surge += 1;
            continue;
        };
        if old.or(new).is_some_and(available) {
            num_available += 1;
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) if !available(old) => {
                if should_run(node_name)? {
                    plan.create_on.push(node_name.to_string());
                } else {
                    plan.delete.push(name(old));
                }
            }
            (None, Some(old)) => {
                if !should_run(node_name)? {
                    sunset_candidates.push(name(old));
                } else if num_surge < budget.max_surge {
                    candidate_nodes.push(node_name.to_string());
                }
            }
            (Some(new), Some(old)) => {
                if available(new) {
                    plan.delete.push(name(old));
                } else {
                    num_surge += 1;
                }
            }
        }
    }
    // With surge the owner expects full availability: an old pod on a node
    // that no longer wants one goes only once enough pods run elsewhere.
    let deletable = usize::try_from(num_available - budget.desired_number_scheduled).unwrap_or(0);
    plan.delete
        .extend(sunset_candidates.into_iter().take(deletable));
    let remaining = usize::try_from(budget.max_surge - num_surge).unwrap_or(0);
    plan.create_on
        .extend(candidate_nodes.into_iter().take(remaining));
    Ok(plan)
}

fn rolling_update_without_surge(
    ds: &DaemonSet,
    node_to_pods: &NodePods,
    hash: &str,
    budget: UpdateBudget,
    available: impl Fn(&Pod) -> bool,
) -> RolloutPlan {
    let mut num_unavailable = 0;
    let mut replacements = Vec::new();
    let mut candidates = Vec::new();
    for pods in node_to_pods.values() {
        let Some(NodeRevisions { new, old }) = find_updated_pods_on_node(ds, pods, hash) else {
            // manage prunes this node first; it counts as unavailable.
            num_unavailable += 1;
            continue;
        };
        match (new, old) {
            // Nothing yet, or a pod of each: manage creates or deletes.
            (None, None) | (Some(_), Some(_)) => num_unavailable += 1,
            (Some(new), None) => num_unavailable += i32::from(!available(new)),
            (None, Some(old)) if !available(old) => {
                replacements.push(name(old));
                num_unavailable += 1;
            }
            (None, Some(old)) => {
                if num_unavailable < budget.max_unavailable {
                    candidates.push(name(old));
                }
            }
        }
    }
    let remaining = usize::try_from(budget.max_unavailable - num_unavailable).unwrap_or(0);
    replacements.extend(candidates.into_iter().take(remaining));
    RolloutPlan {
        delete: replacements,
        create_on: Vec::new(),
    }
}

/// `nodeInSameCondition`: the same condition types are `True` in both
/// lists (what else the conditions say, heartbeats included, is ignored).
pub fn node_in_same_condition(old: &[NodeCondition], new: &[NodeCondition]) -> bool {
    let true_types = |conditions: &[NodeCondition]| -> BTreeSet<String> {
        conditions
            .iter()
            .filter(|c| c.status == "True")
            .map(|c| c.type_.clone())
            .collect()
    };
    true_types(old) == true_types(new)
}

/// `shouldIgnoreNodeUpdate`: a node update the DaemonSets need not look
/// at, because only its resourceVersion and its conditions' details
/// (heartbeats, reasons) changed. Anything else (labels, taints,
/// `unschedulable`, a condition turning True or no longer True) may
/// change where daemon pods belong.
pub fn should_ignore_node_update(old: &Node, new: &Node) -> bool {
    let conditions = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default()
    };
    let (old_conditions, new_conditions) = (conditions(old), conditions(new));
    if !node_in_same_condition(&old_conditions, &new_conditions) {
        return false;
    }
    let mut old = old.clone();
    old.metadata.resource_version = new.metadata.resource_version.clone();
    if let Some(status) = old.status.as_mut() {
        status.conditions = new.status.as_ref().and_then(|s| s.conditions.clone());
    }
    old == *new
}

/// `snapshot`: the ControllerRevision recording the DaemonSet's template,
/// named `<ds>-<hash>` with the template hash (upstream's `ComputeHash`
/// with the collision count), labelled with the template's labels and
/// the hash, carrying the DaemonSet's annotations.
pub fn history_revision(ds: &DaemonSet, revision: i64) -> ControllerRevision {
    let collision_count = ds.status.as_ref().and_then(|s| s.collision_count);
    let hash = compute_hash(template(ds), collision_count);
    let mut labels = template(ds)
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}-{hash}",
                ds.metadata.name.as_deref().unwrap_or("")
            )),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: Some(vec![new_controller_ref(
                &ds.metadata,
                "apps/v1",
                "DaemonSet",
            )]),
            ..ObjectMeta::default()
        },
        data: RawExtension(history::template_patch(template(ds))),
        revision: Some(revision),
    }
}

/// `Match`: the revision records the DaemonSet's current template.
pub fn matches_revision(ds: &DaemonSet, revision: &ControllerRevision) -> bool {
    history::revision_template(revision)
        .is_some_and(|t| canonical_json(&t) == canonical_json(template(ds)))
}

/// `constructHistory`'s split: the revisions recording the current
/// template, and the others.
pub fn split_history<'a>(
    ds: &DaemonSet,
    revisions: &[&'a ControllerRevision],
) -> (Vec<&'a ControllerRevision>, Vec<&'a ControllerRevision>) {
    revisions
        .iter()
        .copied()
        .partition(|r| matches_revision(ds, r))
}

/// `maxRevision`: the highest revision number (0 for none); the current
/// revision must be one more than the old ones' highest.
pub fn max_revision(revisions: &[&ControllerRevision]) -> i64 {
    revisions
        .iter()
        .filter_map(|r| r.revision)
        .max()
        .unwrap_or(0)
        .max(0)
}

/// `dedupCurHistories`: of several revisions recording the current
/// template, the one with the highest revision (the last of equals) is
/// kept; the others are deleted, after their pods are relabelled with
/// the kept one's hash.
pub fn dedup_current<'a>(
    current: &[&'a ControllerRevision],
) -> Option<(&'a ControllerRevision, Vec<String>)> {
    let keep = current
        .iter()
        .copied()
        .reduce(|kept, r| if r.revision >= kept.revision { r } else { kept })?;
    let delete = current
        .iter()
        .filter(|r| r.metadata.name != keep.metadata.name)
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    Some((keep, delete))
}

/// `cleanupHistory`: the old revisions to delete beyond
/// `revisionHistoryLimit` (default 10), lowest revision first, sparing
/// any whose hash a pod still carries (finished pods included: the caller
/// passes every pod).
pub fn cleanup_history(ds: &DaemonSet, old: &[&ControllerRevision], pods: &[&Pod]) -> Vec<String> {
    let limit = usize::try_from(ds.spec.revision_history_limit.unwrap_or(10)).unwrap_or(0);
    let mut to_kill = old.len().saturating_sub(limit);
    let live: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| {
            p.metadata
                .labels
                .as_ref()?
                .get(CONTROLLER_REVISION_HASH_LABEL)
        })
        .map(String::as_str)
        .collect();
    let mut sorted = old.to_vec();
    sorted.sort_by_key(|r| r.revision);
    let mut out = Vec::new();
    for r in sorted {
        if to_kill == 0 {
            break;
        }
        let hash = r
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            .map(String::as_str);
        if hash.is_some_and(|h| live.contains(h)) {
            continue;
        }
        out.extend(r.metadata.name.clone());
        to_kill -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::apps::v1::{
        DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
    };
    use k8s_openapi::api::core::v1::{PreferredSchedulingTerm, Taint};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    use super::*;
    use crate::test_util::{
        PodWrapper, expr, label_map, make_node, make_pod, pod_names, selector, strings, t, taint,
        term, tol, tol_secs,
    };
    use crate::toleration::{EFFECT_PREFER_NO_SCHEDULE, OP_EQUAL};
    use crate::well_known_taints::TAINT_NODE_OUT_OF_SERVICE;

    const GATES: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: false,
        max_unavailable_stateful_set: true,
    };
    const NS: &str = EFFECT_NO_SCHEDULE;
    const NE: &str = EFFECT_NO_EXECUTE;
    const HASH: &str = "current";

    /// Upstream's `simpleDaemonSetLabel`.
    fn simple_daemon_label() -> BTreeMap<String, String> {
        label_map(&[("name", "simple-daemon"), ("type", "production")])
    }

    fn on_delete() -> DaemonSetUpdateStrategy {
        DaemonSetUpdateStrategy {
            type_: Some(STRATEGY_ON_DELETE.into()),
            rolling_update: None,
        }
    }

    fn rolling(
        max_unavailable: IntOrString,
        max_surge: Option<IntOrString>,
    ) -> DaemonSetUpdateStrategy {
        DaemonSetUpdateStrategy {
            type_: Some(STRATEGY_ROLLING_UPDATE.into()),
            rolling_update: Some(RollingUpdateDaemonSet {
                max_unavailable: Some(max_unavailable),
                max_surge,
            }),
        }
    }

    /// Upstream's `updateStrategies()`: every behaviour holds for both.
    fn update_strategies() -> [DaemonSetUpdateStrategy; 2] {
        [on_delete(), rolling(IntOrString::Int(1), None)]
    }

    /// Upstream's `newDaemonSet`, with the given pod spec and strategy.
    fn daemon_set(spec: PodSpec, strategy: DaemonSetUpdateStrategy) -> DaemonSet {
        DaemonSet {
            metadata: ObjectMeta {
                name: Some("ds".into()),
                namespace: Some("default".into()),
                uid: Some("ds-uid".into()),
                ..ObjectMeta::default()
            },
            spec: DaemonSetSpec {
                selector: LabelSelector {
                    match_labels: Some(simple_daemon_label()),
                    match_expressions: None,
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(simple_daemon_label()),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(spec),
                },
                update_strategy: Some(strategy),
                ..DaemonSetSpec::default()
            },
            status: None,
        }
    }

    fn required_affinity(terms: Vec<NodeSelectorTerm>) -> Affinity {
        Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(selector(terms)),
                ..NodeAffinity::default()
            }),
            ..Affinity::default()
        }
    }

    const RUN: Placement = Placement {
        should_run: true,
        should_continue_running: true,
    };
    const KEEP_ONLY: Placement = Placement {
        should_run: false,
        should_continue_running: true,
    };
    const NONE: Placement = Placement {
        should_run: false,
        should_continue_running: false,
    };

    /// Upstream `TestNodeShouldRunDaemonPod`: resources and host ports no
    /// longer matter (the scheduler decides those); the template's
    /// nodeName, nodeSelector and required node affinity do; a cordoned
    /// node still runs daemons. Every case under both update strategies.
    #[test]
    fn node_should_run_daemon_pod_as_upstream() {
        struct Case {
            name: &'static str,
            spec: PodSpec,
            unschedulable: bool,
            want: Placement,
        }
        let resources = |node_name: &str| PodSpec {
            node_name: (!node_name.is_empty()).then(|| node_name.into()),
            containers: vec![Default::default()],
            ..PodSpec::default()
        };
        let host_port = PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                ports: Some(vec![k8s_openapi::api::core::v1::ContainerPort {
                    host_port: Some(666),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..PodSpec::default()
        };
        let with_selector = |pairs: &[(&str, &str)]| PodSpec {
            node_selector: Some(label_map(pairs)),
            ..PodSpec::default()
        };
        let with_type_affinity = |value: &str| PodSpec {
            affinity: Some(required_affinity(vec![term(
                vec![expr("type", "In", &[value])],
                vec![],
            )])),
            ..PodSpec::default()
        };
        let cases = [
            Case {
                name: "ShouldRunDaemonPod",
                spec: resources(""),
                unschedulable: false,
                want: RUN,
            },
            Case {
                name: "InsufficientResourceError: the scheduler's business now",
                spec: resources(""),
                unschedulable: false,
                want: RUN,
            },
            Case {
                name: "ErrPodNotMatchHostName",
                spec: resources("other-node"),
                unschedulable: false,
                want: NONE,
            },
            Case {
                name: "ErrPodNotFitsHostPorts: the scheduler's business now",
                spec: host_port,
                unschedulable: false,
                want: RUN,
            },
            Case {
                name: "template pinned to this node",
                spec: resources("test-node"),
                unschedulable: false,
                want: RUN,
            },
            Case {
                name: "ErrNodeSelectorNotMatch",
                spec: with_selector(&[("name", "simple-daemon"), ("type", "test")]),
                unschedulable: false,
                want: NONE,
            },
            Case {
                name: "node selector matches",
                spec: with_selector(&[("name", "simple-daemon"), ("type", "production")]),
                unschedulable: false,
                want: RUN,
            },
            Case {
                name: "ErrPodAffinityNotMatch",
                spec: with_type_affinity("test"),
                unschedulable: false,
                want: NONE,
            },
            Case {
                name: "node affinity matches",
                spec: with_type_affinity("production"),
                unschedulable: false,
                want: RUN,
            },
            Case {
                name: "ShouldRunDaemonPodOnUnschedulableNode",
                spec: resources(""),
                unschedulable: true,
                want: RUN,
            },
        ];
        for case in cases {
            for strategy in update_strategies() {
                let node = make_node()
                    .name("test-node")
                    .labels(&[("name", "simple-daemon"), ("type", "production")])
                    .unschedulable(case.unschedulable)
                    .obj();
                let ds = daemon_set(case.spec.clone(), strategy.clone());
                assert_eq!(
                    node_should_run_daemon_pod(&node, &ds, GATES),
                    case.want,
                    "{} ({:?})",
                    case.name,
                    strategy.type_
                );
            }
        }
    }

    /// Every taint a node can carry against a daemon pod: the automatic
    /// tolerations (upstream `TestNotReadyNodeDaemonLaunchesPod`,
    /// `TestUnreachableNodeDaemonLaunchesPod`,
    /// `TestTaintPressureNodeDaemonLaunchesPod`, unschedulable and
    /// network-unavailable), the template's own tolerations
    /// (`TestTaintedNodeDaemonLaunchesToleratePod`,
    /// `TestNodeDaemonLaunchesToleratePod`), and what an untolerated
    /// taint does to a running pod (`TestNoScheduleTaintedDoesntEvicitRunningIntolerantPod`,
    /// `TestNoExecuteTaintedDoesEvicitRunningIntolerantPod`,
    /// `TestTaintedNodeDaemonDoesNotLaunchIntolerantPod`).
    #[test]
    fn daemon_pods_tolerate_node_trouble_but_not_other_taints() {
        struct Case {
            name: &'static str,
            taints: Vec<Taint>,
            tolerations: Vec<Toleration>,
            host_network: bool,
            want: Placement,
        }
        let dedicated = |effect: &str| taint("dedicated", "user1", effect);
        let cases = [
            Case {
                name: "untainted node",
                taints: vec![],
                tolerations: vec![],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "not-ready NoExecute: tolerated forever",
                taints: vec![taint(TAINT_NODE_NOT_READY, "", NE)],
                tolerations: vec![],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "unreachable NoExecute: tolerated forever",
                taints: vec![taint(TAINT_NODE_UNREACHABLE, "", NE)],
                tolerations: vec![],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "not-ready tolerated for 300 s in the template: still forever",
                taints: vec![taint(TAINT_NODE_NOT_READY, "", NE)],
                tolerations: vec![tol_secs(TAINT_NODE_NOT_READY, OP_EXISTS, "", NE, 300)],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "disk, memory and PID pressure NoSchedule",
                taints: vec![
                    taint(TAINT_NODE_DISK_PRESSURE, "", NS),
                    taint(TAINT_NODE_MEMORY_PRESSURE, "", NS),
                    taint(TAINT_NODE_PID_PRESSURE, "", NS),
                ],
                tolerations: vec![],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "unschedulable NoSchedule (cordoned)",
                taints: vec![taint(TAINT_NODE_UNSCHEDULABLE, "", NS)],
                tolerations: vec![],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "network-unavailable NoSchedule, host network",
                taints: vec![taint(TAINT_NODE_NETWORK_UNAVAILABLE, "", NS)],
                tolerations: vec![],
                host_network: true,
                want: RUN,
            },
            Case {
                name: "network-unavailable NoSchedule, pod network: no new pod, the running one stays",
                taints: vec![taint(TAINT_NODE_NETWORK_UNAVAILABLE, "", NS)],
                tolerations: vec![],
                host_network: false,
                want: KEEP_ONLY,
            },
            Case {
                name: "memory pressure NoExecute is not covered by the NoSchedule toleration",
                taints: vec![taint(TAINT_NODE_MEMORY_PRESSURE, "", NE)],
                tolerations: vec![],
                host_network: false,
                want: NONE,
            },
            Case {
                name: "out-of-service NoExecute: not tolerated, the pod goes",
                taints: vec![taint(TAINT_NODE_OUT_OF_SERVICE, "nodeshutdown", NE)],
                tolerations: vec![],
                host_network: false,
                want: NONE,
            },
            Case {
                name: "intolerant pod, NoSchedule taint: not launched, not evicted",
                taints: vec![dedicated(NS)],
                tolerations: vec![],
                host_network: false,
                want: KEEP_ONLY,
            },
            Case {
                name: "intolerant pod, NoExecute taint: evicted",
                taints: vec![dedicated(NE)],
                tolerations: vec![],
                host_network: false,
                want: NONE,
            },
            Case {
                name: "tolerated NoSchedule taint",
                taints: vec![dedicated(NS)],
                tolerations: vec![tol("dedicated", OP_EQUAL, "user1", NS)],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "tolerations on an untainted node",
                taints: vec![],
                tolerations: vec![tol("dedicated", OP_EQUAL, "user1", NS)],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "NoExecute tolerated for a while still counts as tolerated",
                taints: vec![dedicated(NE)],
                tolerations: vec![tol_secs("dedicated", OP_EQUAL, "user1", NE, 60)],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "NoSchedule toleration does not cover NoExecute",
                taints: vec![dedicated(NE)],
                tolerations: vec![tol("dedicated", OP_EQUAL, "user1", NS)],
                host_network: false,
                want: NONE,
            },
            Case {
                name: "PreferNoSchedule is ignored",
                taints: vec![dedicated(EFFECT_PREFER_NO_SCHEDULE)],
                tolerations: vec![],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "an Exists toleration with no key tolerates everything",
                taints: vec![dedicated(NE), taint(TAINT_NODE_OUT_OF_SERVICE, "", NE)],
                tolerations: vec![tol("", OP_EXISTS, "", "")],
                host_network: false,
                want: RUN,
            },
            Case {
                name: "one untolerated NoExecute among tolerated taints",
                taints: vec![taint(TAINT_NODE_UNREACHABLE, "", NE), dedicated(NE)],
                tolerations: vec![],
                host_network: false,
                want: NONE,
            },
        ];
        for case in cases {
            for strategy in update_strategies() {
                let spec = PodSpec {
                    tolerations: (!case.tolerations.is_empty()).then(|| case.tolerations.clone()),
                    host_network: Some(case.host_network),
                    ..PodSpec::default()
                };
                let node = make_node()
                    .name("tainted")
                    .taints(case.taints.clone())
                    .obj();
                let ds = daemon_set(spec, strategy);
                assert_eq!(
                    node_should_run_daemon_pod(&node, &ds, GATES),
                    case.want,
                    "{}",
                    case.name
                );
            }
        }
    }

    /// The automatic tolerations (`AddOrUpdateDaemonPodTolerations`).
    #[test]
    fn automatic_daemon_tolerations() {
        let base = || {
            vec![
                tol(TAINT_NODE_NOT_READY, OP_EXISTS, "", NE),
                tol(TAINT_NODE_UNREACHABLE, OP_EXISTS, "", NE),
                tol(TAINT_NODE_DISK_PRESSURE, OP_EXISTS, "", NS),
                tol(TAINT_NODE_MEMORY_PRESSURE, OP_EXISTS, "", NS),
                tol(TAINT_NODE_PID_PRESSURE, OP_EXISTS, "", NS),
                tol(TAINT_NODE_UNSCHEDULABLE, OP_EXISTS, "", NS),
            ]
        };
        struct Case {
            name: &'static str,
            existing: Option<Vec<Toleration>>,
            host_network: bool,
            want: Vec<Toleration>,
        }
        let mine = tol("dedicated", OP_EQUAL, "user1", NS);
        for case in [
            Case {
                name: "no tolerations: the six defaults",
                existing: None,
                host_network: false,
                want: base(),
            },
            Case {
                name: "host network adds network-unavailable",
                existing: None,
                host_network: true,
                want: [
                    base(),
                    vec![tol(TAINT_NODE_NETWORK_UNAVAILABLE, OP_EXISTS, "", NS)],
                ]
                .concat(),
            },
            Case {
                name: "the template's own come first and stay",
                existing: Some(vec![mine.clone()]),
                host_network: false,
                want: [vec![mine.clone()], base()].concat(),
            },
            Case {
                name: "a bounded not-ready toleration becomes forever, in place",
                existing: Some(vec![
                    tol_secs(TAINT_NODE_NOT_READY, OP_EXISTS, "", NE, 300),
                    mine.clone(),
                ]),
                host_network: false,
                want: [
                    vec![tol(TAINT_NODE_NOT_READY, OP_EXISTS, "", NE), mine.clone()],
                    base()[1..].to_vec(),
                ]
                .concat(),
            },
            Case {
                name: "already there: not duplicated",
                existing: Some(base()),
                host_network: false,
                want: base(),
            },
        ] {
            let mut spec = PodSpec {
                tolerations: case.existing,
                host_network: Some(case.host_network),
                ..PodSpec::default()
            };
            add_or_update_daemon_pod_tolerations(&mut spec);
            assert_eq!(spec.tolerations, Some(case.want), "{}", case.name);
        }
    }

    /// Upstream `TestIsPodUpdated` (daemon/util).
    #[test]
    fn is_pod_updated_as_upstream() {
        let generation = 12345_i64;
        let hash = "55555";
        let with = |pairs: &[(&str, &str)]| {
            let mut p = make_pod().namespace("default").name("pod1").node("node1");
            for (k, v) in pairs {
                p = p.label(k, v);
            }
            p.obj()
        };
        let gen_label = generation.to_string();
        let both = with(&[
            (TEMPLATE_GENERATION_LABEL, &gen_label),
            (CONTROLLER_REVISION_HASH_LABEL, hash),
        ]);
        let no_hash = with(&[(TEMPLATE_GENERATION_LABEL, &gen_label)]);
        let empty = with(&[]);
        let mut no_labels = empty.clone();
        no_labels.metadata.labels = None;
        struct Case<'a> {
            name: &'static str,
            generation: i64,
            pod: &'a Pod,
            hash: String,
            want: bool,
        }
        for case in [
            Case {
                name: "templateGeneration and hash both match",
                generation,
                pod: &both,
                hash: hash.into(),
                want: true,
            },
            Case {
                name: "templateGeneration matches, hash doesn't",
                generation,
                pod: &both,
                hash: format!("{hash}123"),
                want: true,
            },
            Case {
                name: "templateGeneration matches, no hash label, has hash",
                generation,
                pod: &no_hash,
                hash: hash.into(),
                want: true,
            },
            Case {
                name: "templateGeneration matches, no hash label, no hash",
                generation,
                pod: &no_hash,
                hash: String::new(),
                want: true,
            },
            Case {
                name: "templateGeneration matches, has hash label, no hash",
                generation,
                pod: &both,
                hash: String::new(),
                want: true,
            },
            Case {
                name: "templateGeneration doesn't match, hash does",
                generation: generation + 1,
                pod: &both,
                hash: hash.into(),
                want: true,
            },
            Case {
                name: "templateGeneration and hash don't match",
                generation: generation + 1,
                pod: &both,
                hash: format!("{hash}123"),
                want: false,
            },
            Case {
                name: "empty labels, no hash",
                generation,
                pod: &empty,
                hash: String::new(),
                want: false,
            },
            Case {
                name: "empty labels",
                generation,
                pod: &empty,
                hash: hash.into(),
                want: false,
            },
            Case {
                name: "no labels",
                generation,
                pod: &no_labels,
                hash: hash.into(),
                want: false,
            },
        ] {
            assert_eq!(
                is_pod_updated(case.pod, &case.hash, Some(case.generation)),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestCreatePodTemplate`: the generation label always, the
    /// hash label only with a hash; the automatic tolerations too.
    #[test]
    fn create_pod_template_labels_and_tolerates() {
        struct Case {
            generation: i64,
            hash: &'static str,
            want_hash_label: bool,
        }
        for case in [
            Case {
                generation: 1,
                hash: "",
                want_hash_label: false,
            },
            Case {
                generation: 2,
                hash: "3242341807",
                want_hash_label: true,
            },
        ] {
            let out = create_pod_template(
                &PodTemplateSpec::default(),
                Some(case.generation),
                case.hash,
            );
            let labels = out.metadata.and_then(|m| m.labels).unwrap_or_default();
            assert_eq!(
                labels.get(TEMPLATE_GENERATION_LABEL),
                Some(&case.generation.to_string())
            );
            assert_eq!(
                labels.contains_key(CONTROLLER_REVISION_HASH_LABEL),
                case.want_hash_label
            );
            if case.want_hash_label {
                assert_eq!(
                    labels
                        .get(CONTROLLER_REVISION_HASH_LABEL)
                        .map(String::as_str),
                    Some(case.hash)
                );
            }
            let tolerations = out.spec.and_then(|s| s.tolerations).unwrap_or_default();
            assert_eq!(tolerations.len(), 6);
        }
    }

    /// Upstream `TestReplaceDaemonSetPodNodeNameNodeAffinity`: whatever
    /// the required affinity was, it becomes `metadata.name In [node]`;
    /// everything else stays.
    #[test]
    fn replace_node_affinity_pins_the_pod_to_its_node() {
        let pinned = |node: &str| selector(vec![node_name_term(node)]);
        let preferred = vec![PreferredSchedulingTerm {
            weight: 1,
            preference: term(vec![expr("zone", "In", &["a"])], vec![]),
        }];
        struct Case {
            name: &'static str,
            affinity: Option<Affinity>,
            want: Affinity,
        }
        let want_only = |preferred: Option<Vec<PreferredSchedulingTerm>>| Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(pinned("host_1")),
                preferred_during_scheduling_ignored_during_execution: preferred,
            }),
            ..Affinity::default()
        };
        for case in [
            Case {
                name: "no affinity",
                affinity: None,
                want: want_only(None),
            },
            Case {
                name: "affinity without node affinity",
                affinity: Some(Affinity::default()),
                want: want_only(None),
            },
            Case {
                name: "required label terms are replaced",
                affinity: Some(required_affinity(vec![term(
                    vec![expr("color", "In", &["blue"])],
                    vec![],
                )])),
                want: want_only(None),
            },
            Case {
                name: "another node's name is replaced",
                affinity: Some(required_affinity(vec![
                    node_name_term("host_2"),
                    node_name_term("host_3"),
                ])),
                want: want_only(None),
            },
            Case {
                name: "preferred terms are kept",
                affinity: Some(Affinity {
                    node_affinity: Some(NodeAffinity {
                        preferred_during_scheduling_ignored_during_execution: Some(
                            preferred.clone(),
                        ),
                        required_during_scheduling_ignored_during_execution: None,
                    }),
                    ..Affinity::default()
                }),
                want: want_only(Some(preferred.clone())),
            },
        ] {
            assert_eq!(
                replace_daemon_set_pod_node_name_node_affinity(case.affinity, "host_1"),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestGetTargetNodeName`.
    #[test]
    fn target_node_name_from_binding_or_affinity() {
        let with_affinity = |terms: Vec<NodeSelectorTerm>| {
            make_pod()
                .namespace("default")
                .name("p")
                .affinity(required_affinity(terms))
                .obj()
        };
        let two_values = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: OBJECT_NAME_FIELD.into(),
                operator: "In".into(),
                values: Some(strings(&["node-1", "node-2"])),
            }]),
        };
        struct Case {
            name: &'static str,
            pod: Pod,
            want: Option<&'static str>,
        }
        for case in [
            Case {
                name: "bound: nodeName",
                pod: make_pod()
                    .namespace("default")
                    .name("p")
                    .node("node-1")
                    .obj(),
                want: Some("node-1"),
            },
            Case {
                name: "pending: the affinity's node",
                pod: with_affinity(vec![node_name_term("node-1")]),
                want: Some("node-1"),
            },
            Case {
                name: "pending: the name term among others",
                pod: with_affinity(vec![
                    term(vec![expr("a", "Exists", &[])], vec![]),
                    node_name_term("node-2"),
                ]),
                want: Some("node-2"),
            },
            Case {
                name: "more than one node named",
                pod: with_affinity(vec![two_values]),
                want: None,
            },
            Case {
                name: "no affinity",
                pod: make_pod().namespace("default").name("p").obj(),
                want: None,
            },
            Case {
                name: "no node in the terms",
                pod: with_affinity(vec![]),
                want: None,
            },
        ] {
            assert_eq!(target_node_name(&case.pod), case.want, "{}", case.name);
        }
    }

    fn daemon_pod(name: &str, node: &str, hash: &str) -> PodWrapper {
        make_pod()
            .namespace("default")
            .name(name)
            .node(node)
            .label(CONTROLLER_REVISION_HASH_LABEL, hash)
            .created_at(t(0))
    }

    /// `podsShouldBeOnNode`, one node at a time: upstream
    /// `TestDaemonKillFailedPods`, `TestDaemonSetRespectsTermination`,
    /// the intolerant-taint tests, and the surge tests
    /// (`TestSurgeDealsWithExistingPods`, `TestSurgePreservesReadyOldPods`,
    /// `TestSurgeDeletesUnreadyOldPods`).
    #[test]
    fn pods_on_a_node() {
        let surge = rolling(IntOrString::Int(0), Some(IntOrString::Int(1)));
        let failed = |n: &str| daemon_pod(n, "node-0", HASH).phase("Failed").obj();
        let running = |n: &str, created: i64| {
            daemon_pod(n, "node-0", HASH)
                .phase("Running")
                .created_at(t(created))
                .obj()
        };
        let old_ready = |n: &str, created: i64| {
            daemon_pod(n, "node-0", "old")
                .ready_since(t(0))
                .created_at(t(created))
                .obj()
        };
        let old_not_ready = |n: &str, created: i64| {
            daemon_pod(n, "node-0", "old")
                .not_ready()
                .created_at(t(created))
                .obj()
        };
        let new_available = |n: &str, created: i64| {
            daemon_pod(n, "node-0", HASH)
                .ready_since(t(0))
                .created_at(t(created))
                .obj()
        };
        struct Case {
            name: &'static str,
            placement: Placement,
            strategy: DaemonSetUpdateStrategy,
            pods: Vec<Pod>,
            want: NodePodsPlan,
        }
        let plan = |create: bool, delete: &[&str], failed: &[&str]| NodePodsPlan {
            create,
            delete: strings(delete),
            failed: strings(failed),
        };
        let cases = [
            Case {
                name: "normal: nothing to do",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![running("a", 0)],
                want: plan(false, &[], &[]),
            },
            Case {
                name: "no pods: create one",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![],
                want: plan(true, &[], &[]),
            },
            Case {
                name: "1 failed pod: kill it, create in the next sync",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![failed("f")],
                want: plan(false, &[], &["f"]),
            },
            Case {
                name: "1 failed pod and 3 normal ones: kill the failed and 2 excess",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![
                    failed("f"),
                    running("a", 1),
                    running("b", 2),
                    running("c", 3),
                ],
                want: plan(false, &["b", "c"], &["f"]),
            },
            Case {
                name: "succeeded pod: deleted at once",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![daemon_pod("s", "node-0", HASH).phase("Succeeded").obj()],
                want: plan(false, &["s"], &[]),
            },
            Case {
                name: "a terminating pod is left alone, and blocks a create",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![daemon_pod("t", "node-0", HASH).terminating(t(0)).obj()],
                want: plan(false, &[], &[]),
            },
            Case {
                name: "excess pods: the oldest stays, ties by name",
                placement: RUN,
                strategy: on_delete(),
                pods: vec![running("c", 5), running("b", 5), running("a", 9)],
                want: plan(false, &["c", "a"], &[]),
            },
            Case {
                name: "NoSchedule-tainted node keeps its running pod",
                placement: KEEP_ONLY,
                strategy: on_delete(),
                pods: vec![running("keep-running-me", 0)],
                want: plan(false, &[], &[]),
            },
            Case {
                name: "node that should not run the pod: delete all but terminating ones",
                placement: NONE,
                strategy: on_delete(),
                pods: vec![
                    running("stop-running-me", 0),
                    daemon_pod("t", "node-0", HASH).terminating(t(0)).obj(),
                ],
                want: plan(false, &["stop-running-me"], &[]),
            },
            Case {
                name: "surge: one pod of each revision, the new one not yet available: keep both",
                placement: RUN,
                strategy: surge.clone(),
                pods: vec![old_ready("old", 0), running("new", 1)],
                want: plan(false, &[], &[]),
            },
            Case {
                name: "surge: the new pod is available: the old one goes",
                placement: RUN,
                strategy: surge.clone(),
                pods: vec![old_ready("old", 0), new_available("new", 1)],
                want: plan(false, &["old"], &[]),
            },
            Case {
                name: "surge: the old pod is not ready: it goes",
                placement: RUN,
                strategy: surge.clone(),
                pods: vec![old_not_ready("old", 0), running("new", 1)],
                want: plan(false, &["old"], &[]),
            },
            Case {
                name: "surge: the oldest old and oldest new stay, the rest go",
                placement: RUN,
                strategy: surge.clone(),
                pods: vec![
                    running("new-1", 100),
                    old_ready("old-1", 50),
                    old_ready("old-2", 60),
                    running("new-2", 110),
                ],
                want: plan(false, &["old-2", "new-2"], &[]),
            },
            Case {
                name: "surge: no live pod left: create one",
                placement: RUN,
                strategy: surge.clone(),
                pods: vec![failed("f")],
                want: plan(true, &[], &["f"]),
            },
        ];
        for case in cases {
            let ds = daemon_set(PodSpec::default(), case.strategy);
            let pods: Vec<&Pod> = case.pods.iter().collect();
            assert_eq!(
                pods_should_be_on_node(case.placement, &pods, &ds, HASH, t(1000)),
                case.want,
                "{}",
                case.name
            );
        }
    }

    fn nodes(count: usize, labels: &[(&str, &str)]) -> Vec<Node> {
        (0..count)
            .map(|i| make_node().name(&format!("node-{i}")).labels(labels).obj())
            .collect()
    }

    /// `manage` over several nodes: upstream
    /// `TestSimpleDaemonSetLaunchesPods`, `TestSelectorDaemonSetLaunchesPods`,
    /// `TestNodeAffinityDaemonLaunchesPods`,
    /// `TestNameAndSelectorDaemonSetLaunchesPods`,
    /// `TestInconsistentNameSelectorDaemonSetDoesNothing`, and pending pods
    /// of a deleted node.
    #[test]
    fn manage_creates_on_matching_nodes() {
        let blue = [("color", "blue"), ("speed", "fast")];
        let mut seven = nodes(4, &[]);
        seven.extend((4..7).map(|i| make_node().name(&format!("node-{i}")).labels(&blue).obj()));
        let with_selector = |spec: &mut PodSpec| {
            spec.node_selector = Some(label_map(&blue));
        };
        struct Case {
            name: &'static str,
            spec: PodSpec,
            nodes: Vec<Node>,
            pods: Vec<Pod>,
            want: ManagePlan,
        }
        let mut selector_spec = PodSpec::default();
        with_selector(&mut selector_spec);
        let mut named = selector_spec.clone();
        named.node_name = Some("node-6".into());
        let mut inconsistent = selector_spec.clone();
        inconsistent.node_name = Some("node-0".into());
        let affinity = PodSpec {
            affinity: Some(required_affinity(vec![term(
                vec![expr("color", "In", &["blue"])],
                vec![],
            )])),
            ..PodSpec::default()
        };
        let pending_on_gone_node = make_pod()
            .namespace("default")
            .name("orphan")
            .affinity(replace_daemon_set_pod_node_name_node_affinity(None, "gone"))
            .obj();
        let plan = |create_on: &[&str], delete: &[&str]| ManagePlan {
            create_on: strings(create_on),
            delete: strings(delete),
            failed: vec![],
        };
        for case in [
            Case {
                name: "one pod per node",
                spec: PodSpec::default(),
                nodes: nodes(5, &[]),
                pods: vec![],
                want: plan(&["node-0", "node-1", "node-2", "node-3", "node-4"], &[]),
            },
            Case {
                name: "node selector",
                spec: selector_spec,
                nodes: seven.clone(),
                pods: vec![],
                want: plan(&["node-4", "node-5", "node-6"], &[]),
            },
            Case {
                name: "node affinity",
                spec: affinity,
                nodes: seven.clone(),
                pods: vec![],
                want: plan(&["node-4", "node-5", "node-6"], &[]),
            },
            Case {
                name: "node name and selector agree",
                spec: named,
                nodes: seven.clone(),
                pods: vec![],
                want: plan(&["node-6"], &[]),
            },
            Case {
                name: "node name and selector disagree",
                spec: inconsistent,
                nodes: seven.clone(),
                pods: vec![],
                want: plan(&[], &[]),
            },
            Case {
                name: "a pending pod of a deleted node is deleted",
                spec: PodSpec::default(),
                nodes: nodes(1, &[]),
                pods: vec![
                    daemon_pod("here", "node-0", HASH).obj(),
                    pending_on_gone_node,
                ],
                want: plan(&[], &["orphan"]),
            },
        ] {
            let ds = daemon_set(case.spec, on_delete());
            let node_refs: Vec<&Node> = case.nodes.iter().collect();
            let pods: Vec<&Pod> = case.pods.iter().collect();
            let by_node = nodes_to_daemon_pods(&pods, false);
            assert_eq!(
                manage(&ds, &node_refs, &by_node, HASH, t(0), GATES),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestGetNodesToDaemonPods`: pods grouped by target node;
    /// finished pods being deleted only for history.
    #[test]
    fn nodes_to_daemon_pods_groups_by_target_node() {
        let pending = make_pod()
            .namespace("default")
            .name("pending")
            .affinity(replace_daemon_set_pod_node_name_node_affinity(
                None, "node-1",
            ))
            .obj();
        let bound = make_pod()
            .namespace("default")
            .name("bound")
            .node("node-0")
            .obj();
        let finished_deleted = make_pod()
            .namespace("default")
            .name("gone")
            .node("node-0")
            .phase("Failed")
            .terminating(t(0))
            .obj();
        let nowhere = make_pod().namespace("default").name("nowhere").obj();
        let all = [&pending, &bound, &finished_deleted, &nowhere];
        let grouped = |include| -> Vec<(String, Vec<String>)> {
            nodes_to_daemon_pods(&all, include)
                .into_iter()
                .map(|(n, pods)| (n.to_string(), pod_names(&pods)))
                .collect()
        };
        assert_eq!(
            grouped(false),
            vec![
                ("node-0".into(), strings(&["bound"])),
                ("node-1".into(), strings(&["pending"]))
            ]
        );
        assert_eq!(
            grouped(true),
            vec![
                ("node-0".into(), strings(&["bound", "gone"])),
                ("node-1".into(), strings(&["pending"]))
            ]
        );
    }

    /// Upstream `TestGetUnavailableNumbers` (`updatedDesiredNodeCounts`).
    #[test]
    fn updated_desired_node_counts_as_upstream() {
        let pct = |s: &str| IntOrString::String(s.into());
        let unavailable = |v: IntOrString| rolling(v, None);
        let surge = |v: IntOrString| rolling(IntOrString::Int(0), Some(v));
        let ready = |n: &str, node: &str| {
            make_pod()
                .namespace("default")
                .name(n)
                .node(node)
                .ready_since(t(0))
                .obj()
        };
        struct Case {
            name: &'static str,
            strategy: DaemonSetUpdateStrategy,
            nodes: usize,
            pods: Vec<Pod>,
            want: UpdateBudget,
            empty_nodes: usize,
        }
        let budget = |max_surge, max_unavailable, desired| UpdateBudget {
            max_surge,
            max_unavailable,
            desired_number_scheduled: desired,
        };
        let two_ready = || vec![ready("pod-0", "node-0"), ready("pod-1", "node-1")];
        for case in [
            Case {
                name: "No nodes",
                strategy: unavailable(IntOrString::Int(0)),
                nodes: 0,
                pods: vec![],
                want: budget(0, 0, 0),
                empty_nodes: 0,
            },
            Case {
                name: "Two nodes with ready pods",
                strategy: unavailable(IntOrString::Int(1)),
                nodes: 2,
                pods: two_ready(),
                want: budget(0, 1, 2),
                empty_nodes: 0,
            },
            Case {
                name: "Two nodes, one node without pods",
                strategy: unavailable(IntOrString::Int(0)),
                nodes: 2,
                pods: vec![ready("pod-0", "node-0")],
                want: budget(0, 1, 2),
                empty_nodes: 1,
            },
            Case {
                name: "Two nodes, one node without pods, surge",
                strategy: surge(IntOrString::Int(0)),
                nodes: 2,
                pods: vec![ready("pod-0", "node-0")],
                want: budget(0, 1, 2),
                empty_nodes: 1,
            },
            Case {
                name: "Two nodes with pods, MaxUnavailable in percents",
                strategy: unavailable(pct("50%")),
                nodes: 2,
                pods: two_ready(),
                want: budget(0, 1, 2),
                empty_nodes: 0,
            },
            Case {
                name: "Two nodes with pods, MaxUnavailable in percents, surge",
                strategy: surge(pct("50%")),
                nodes: 2,
                pods: two_ready(),
                want: budget(1, 0, 2),
                empty_nodes: 0,
            },
            Case {
                name: "Two nodes with pods, MaxUnavailable is 100%, surge",
                strategy: surge(pct("100%")),
                nodes: 2,
                pods: two_ready(),
                want: budget(2, 0, 2),
                empty_nodes: 0,
            },
            Case {
                name: "Two nodes with pods, MaxUnavailable in percents, pod terminating",
                strategy: unavailable(pct("50%")),
                nodes: 3,
                pods: vec![
                    ready("pod-0", "node-0"),
                    make_pod()
                        .namespace("default")
                        .name("pod-1")
                        .node("node-1")
                        .ready_since(t(0))
                        .terminating(t(0))
                        .obj(),
                ],
                want: budget(0, 2, 3),
                empty_nodes: 1,
            },
        ] {
            let ds = daemon_set(PodSpec::default(), case.strategy);
            let all = nodes(case.nodes, &[]);
            let node_refs: Vec<&Node> = all.iter().collect();
            let pods: Vec<&Pod> = case.pods.iter().collect();
            let mut by_node = nodes_to_daemon_pods(&pods, false);
            let got = updated_desired_node_counts(&ds, &node_refs, &mut by_node, GATES);
            assert_eq!(got, Ok(case.want), "{}", case.name);
            assert_eq!(
                by_node.values().filter(|p| p.is_empty()).count(),
                case.empty_nodes,
                "{}",
                case.name
            );
        }
        let bad = daemon_set(PodSpec::default(), unavailable(pct("lots")));
        let node = make_node().name("node-0").obj();
        assert!(matches!(
            updated_desired_node_counts(&bad, &[&node], &mut BTreeMap::new(), GATES),
            Err(RolloutError::MaxUnavailable(_))
        ));
    }

    /// Rolling-update steps (`rollingUpdate`), after upstream's
    /// `TestDaemonSetUpdatesPods`, `TestDaemonSetUpdatesPodsWithMaxSurge`,
    /// `TestDaemonSetUpdatesWhenNewPodIsNotReady`,
    /// `TestDaemonSetUpdatesAllOldPodsNotReady` and
    /// `TestDaemonSetUpdatesNoTemplateChanged`, one step each.
    #[test]
    fn rolling_update_steps() {
        let old = |node: &str| {
            daemon_pod(&format!("old-{node}"), node, "old")
                .ready_since(t(0))
                .obj()
        };
        let old_not_ready = |node: &str| {
            daemon_pod(&format!("old-{node}"), node, "old")
                .not_ready()
                .obj()
        };
        let new_ready = |node: &str| {
            daemon_pod(&format!("new-{node}"), node, HASH)
                .ready_since(t(0))
                .obj()
        };
        let new_starting = |node: &str| {
            daemon_pod(&format!("new-{node}"), node, HASH)
                .not_ready()
                .obj()
        };
        let five: Vec<String> = (0..5).map(|i| format!("node-{i}")).collect();
        let each = |f: &dyn Fn(&str) -> Pod| five.iter().map(|n| f(n)).collect::<Vec<_>>();
        struct Case {
            name: &'static str,
            strategy: DaemonSetUpdateStrategy,
            pods: Vec<Pod>,
            want: RolloutPlan,
        }
        let plan = |delete: &[&str], create_on: &[&str]| RolloutPlan {
            delete: strings(delete),
            create_on: strings(create_on),
        };
        let mut one_new = each(&old);
        one_new[0] = new_starting("node-0");
        let mut one_done = each(&old);
        one_done[0] = new_ready("node-0");
        let mut surging = each(&old);
        surging.push(new_starting("node-0"));
        let mut surged = each(&old);
        surged.push(new_ready("node-0"));
        for case in [
            Case {
                name: "maxUnavailable 1, all old and available: delete one",
                strategy: rolling(IntOrString::Int(1), None),
                pods: each(&old),
                want: plan(&["old-node-0"], &[]),
            },
            Case {
                name: "maxUnavailable 3: delete three",
                strategy: rolling(IntOrString::Int(3), None),
                pods: each(&old),
                want: plan(&["old-node-0", "old-node-1", "old-node-2"], &[]),
            },
            Case {
                name: "a new pod not yet ready uses the whole budget",
                strategy: rolling(IntOrString::Int(1), None),
                pods: one_new,
                want: plan(&[], &[]),
            },
            Case {
                name: "the new pod is available: the next old one goes",
                strategy: rolling(IntOrString::Int(1), None),
                pods: one_done,
                want: plan(&["old-node-1"], &[]),
            },
            Case {
                name: "unavailable old pods are replaced beyond the budget",
                strategy: rolling(IntOrString::Int(1), None),
                pods: each(&old_not_ready),
                want: plan(
                    &[
                        "old-node-0",
                        "old-node-1",
                        "old-node-2",
                        "old-node-3",
                        "old-node-4",
                    ],
                    &[],
                ),
            },
            Case {
                name: "template unchanged: nothing to do",
                strategy: rolling(IntOrString::Int(3), None),
                pods: each(&new_ready),
                want: plan(&[], &[]),
            },
            Case {
                name: "maxSurge 1: one new pod beside an old one",
                strategy: rolling(IntOrString::Int(0), Some(IntOrString::Int(1))),
                pods: each(&old),
                want: plan(&[], &["node-0"]),
            },
            Case {
                name: "maxSurge 1 used while the new pod starts",
                strategy: rolling(IntOrString::Int(0), Some(IntOrString::Int(1))),
                pods: surging,
                want: plan(&[], &[]),
            },
            Case {
                name: "the surged pod is available: its old pod goes, the next node surges",
                strategy: rolling(IntOrString::Int(0), Some(IntOrString::Int(1))),
                pods: surged,
                want: plan(&["old-node-0"], &["node-1"]),
            },
            Case {
                name: "surge: unavailable old pods get a new pod each",
                strategy: rolling(IntOrString::Int(0), Some(IntOrString::Int(1))),
                pods: each(&old_not_ready),
                want: plan(&[], &["node-0", "node-1", "node-2", "node-3", "node-4"]),
            },
        ] {
            let ds = daemon_set(PodSpec::default(), case.strategy);
            let all = nodes(5, &[]);
            let node_refs: Vec<&Node> = all.iter().collect();
            let pods: Vec<&Pod> = case.pods.iter().collect();
            let by_node = nodes_to_daemon_pods(&pods, false);
            assert_eq!(
                rolling_update(&ds, &node_refs, &by_node, HASH, t(100), GATES),
                Ok(case.want),
                "{}",
                case.name
            );
        }
    }

    /// Surge with a node that no longer wants the DaemonSet: its old pod
    /// goes only once the pods elsewhere are available beyond the desired
    /// number (upstream `TestUpdateToNodeSelectorWithSurge` in spirit).
    #[test]
    fn surge_keeps_a_sunset_node_until_replaced_elsewhere() {
        let mut ds = daemon_set(
            PodSpec::default(),
            rolling(IntOrString::Int(0), Some(IntOrString::Int(1))),
        );
        if let Some(spec) = ds.spec.template.spec.as_mut() {
            spec.node_selector = Some(label_map(&[("role", "new")]));
        }
        let old_node = make_node().name("node-old").obj();
        let new_node = make_node().name("node-new").label("role", "new").obj();
        let old_pod = daemon_pod("old", "node-old", "old").ready_since(t(0)).obj();
        let starting = daemon_pod("new", "node-new", HASH).not_ready().obj();
        let ready = daemon_pod("new", "node-new", HASH).ready_since(t(0)).obj();
        let nodes = [&old_node, &new_node];
        let step = |new_pod: &Pod| {
            let pods = [&old_pod, new_pod];
            rolling_update(
                &ds,
                &nodes,
                &nodes_to_daemon_pods(&pods, false),
                HASH,
                t(100),
                GATES,
            )
        };
        assert_eq!(step(&starting), Ok(RolloutPlan::default()));
        assert_eq!(
            step(&ready),
            Ok(RolloutPlan {
                delete: strings(&["old"]),
                create_on: vec![]
            })
        );
    }

    /// `updateDaemonSetStatus`'s counts.
    #[test]
    fn status_counts_per_node() {
        let ds = daemon_set(
            PodSpec {
                node_selector: Some(label_map(&[("run", "yes")])),
                ..PodSpec::default()
            },
            rolling(IntOrString::Int(1), None),
        );
        let yes = [("run", "yes")];
        let all = [
            make_node().name("ready-new").labels(&yes).obj(),
            make_node().name("ready-old").labels(&yes).obj(),
            make_node().name("starting").labels(&yes).obj(),
            make_node().name("empty").labels(&yes).obj(),
            make_node().name("elsewhere").obj(),
        ];
        let pods = [
            daemon_pod("a", "ready-new", HASH).ready_since(t(0)).obj(),
            daemon_pod("b", "ready-old", "old").ready_since(t(0)).obj(),
            daemon_pod("c", "starting", HASH).not_ready().obj(),
            daemon_pod("d", "elsewhere", HASH).obj(),
        ];
        let node_refs: Vec<&Node> = all.iter().collect();
        let pod_refs: Vec<&Pod> = pods.iter().collect();
        let counts = status_counts(
            &ds,
            &node_refs,
            &nodes_to_daemon_pods(&pod_refs, false),
            HASH,
            t(10),
            GATES,
        );
        assert_eq!(
            counts,
            StatusCounts {
                desired_number_scheduled: 4,
                current_number_scheduled: 3,
                number_misscheduled: 1,
                number_ready: 2,
                updated_number_scheduled: 2,
                number_available: 2,
                number_unavailable: 2,
            }
        );
    }

    /// The pod the controller posts for a node: tolerations, hash label,
    /// per-node affinity, never `nodeName`.
    #[test]
    fn pod_template_for_node_is_scheduled_not_bound() {
        let ds = daemon_set(
            PodSpec {
                host_network: Some(true),
                ..PodSpec::default()
            },
            on_delete(),
        );
        let out = pod_template_for_node(&ds, "node-7", HASH);
        let spec = out.spec.clone().unwrap_or_default();
        assert_eq!(spec.node_name, None);
        assert_eq!(spec.tolerations.map(|t| t.len()), Some(7));
        let as_pod = Pod {
            metadata: out.metadata.clone().unwrap_or_default(),
            spec: out.spec.clone(),
            status: None,
        };
        assert_eq!(target_node_name(&as_pod), Some("node-7"));
        assert!(is_pod_updated(&as_pod, HASH, None));
        assert!(RequiredNodeAffinity::of_pod(&as_pod).matches(&make_node().name("node-7").obj()));
        assert!(!RequiredNodeAffinity::of_pod(&as_pod).matches(&make_node().name("node-8").obj()));
    }

    #[test]
    fn surge_and_unavailable_counts() {
        let pct = |s: &str| IntOrString::String(s.into());
        struct Case {
            name: &'static str,
            strategy: Option<DaemonSetUpdateStrategy>,
            want_surge: i32,
            want_unavailable: i32,
            allows_surge: bool,
        }
        for case in [
            Case {
                name: "defaults: maxUnavailable 1, no surge",
                strategy: None,
                want_surge: 0,
                want_unavailable: 1,
                allows_surge: false,
            },
            Case {
                name: "OnDelete",
                strategy: Some(on_delete()),
                want_surge: 0,
                want_unavailable: 0,
                allows_surge: false,
            },
            Case {
                name: "percentages of 10 round up",
                strategy: Some(rolling(pct("25%"), Some(pct("11%")))),
                want_surge: 2,
                want_unavailable: 3,
                allows_surge: true,
            },
            Case {
                name: "RollingUpdate without parameters",
                strategy: Some(DaemonSetUpdateStrategy {
                    type_: Some(STRATEGY_ROLLING_UPDATE.into()),
                    rolling_update: None,
                }),
                want_surge: 0,
                want_unavailable: 1,
                allows_surge: false,
            },
        ] {
            let mut ds = daemon_set(PodSpec::default(), on_delete());
            ds.spec.update_strategy = case.strategy;
            assert_eq!(surge_count(&ds, 10), Ok(case.want_surge), "{}", case.name);
            assert_eq!(
                unavailable_count(&ds, 10),
                Ok(case.want_unavailable),
                "{}",
                case.name
            );
            assert_eq!(allows_surge(&ds), case.allows_surge, "{}", case.name);
        }
    }

    /// `snapshot`, `Match`, `constructHistory`'s split and dedup, and
    /// `cleanupHistory`.
    #[test]
    fn history_revisions_record_templates() {
        let ds = daemon_set(PodSpec::default(), on_delete());
        let first = history_revision(&ds, 1);
        let hash = compute_hash(&ds.spec.template, None);
        assert_eq!(first.metadata.name, Some(format!("ds-{hash}")));
        assert_eq!(
            first
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL)),
            Some(&hash)
        );
        assert!(matches_revision(&ds, &first));
        let mut changed = ds.clone();
        changed.spec.template.spec = Some(PodSpec {
            host_network: Some(true),
            ..PodSpec::default()
        });
        assert!(!matches_revision(&changed, &first), "another template");
        let second = history_revision(&changed, 2);
        let (current, old) = split_history(&changed, &[&first, &second]);
        assert_eq!((current.len(), old.len()), (1, 1));
        assert_eq!(max_revision(&old) + 1, 2, "the next revision number");
        let mut duplicate = second.clone();
        duplicate.metadata.name = Some("ds-dup".into());
        duplicate.revision = Some(5);
        let (keep, delete) = dedup_current(&[&second, &duplicate]).unwrap_or((&second, vec![]));
        assert_eq!(
            (keep.metadata.name.as_deref(), delete),
            (
                Some("ds-dup"),
                strings(&[second.metadata.name.as_deref().unwrap_or("")])
            )
        );
        let old_revs: Vec<ControllerRevision> = (1..=3)
            .map(|n| {
                let mut r = history_revision(&ds, n);
                r.metadata.name = Some(format!("rev-{n}"));
                r.metadata.labels = Some(label_map(&[(
                    CONTROLLER_REVISION_HASH_LABEL,
                    &format!("h{n}"),
                )]));
                r
            })
            .collect();
        let refs: Vec<&ControllerRevision> = old_revs.iter().rev().collect();
        let pod_on_1 = make_pod()
            .namespace("default")
            .name("p")
            .label(CONTROLLER_REVISION_HASH_LABEL, "h1")
            .obj();
        let mut limited = ds.clone();
        limited.spec.revision_history_limit = Some(1);
        assert_eq!(
            cleanup_history(&limited, &refs, &[&pod_on_1]),
            strings(&["rev-2", "rev-3"]),
            "a live revision is spared"
        );
        limited.spec.revision_history_limit = Some(2);
        assert_eq!(
            cleanup_history(&limited, &refs, &[]),
            strings(&["rev-1"]),
            "lowest revision first"
        );
        assert_eq!(
            cleanup_history(&ds, &refs, &[]),
            Vec::<String>::new(),
            "within the default limit of 10"
        );
    }

    /// `shouldIgnoreNodeUpdate` / `nodeInSameCondition`: heartbeats and
    /// resourceVersions do not matter; labels, taints, cordoning and a
    /// condition turning True do.
    #[test]
    fn node_updates_that_matter_to_daemon_sets() {
        use k8s_openapi::api::core::v1::{NodeCondition, NodeStatus};
        let condition = |type_: &str, status: &str, heartbeat: i64| NodeCondition {
            type_: type_.into(),
            status: status.into(),
            last_heartbeat_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(
                heartbeat,
            ))),
            ..NodeCondition::default()
        };
        let base = |rv: &str, conditions: Vec<NodeCondition>| {
            let mut n = make_node().name("n1").labels(&[("zone", "a")]).obj();
            n.metadata.resource_version = Some(rv.into());
            n.status = Some(NodeStatus {
                conditions: Some(conditions),
                ..NodeStatus::default()
            });
            n
        };
        let ready = |heartbeat| vec![condition("Ready", "True", heartbeat)];
        struct Case {
            name: &'static str,
            new: Node,
            ignore: bool,
        }
        let old = base("1", ready(0));
        let cases = [
            Case {
                name: "a heartbeat",
                new: base("2", ready(10)),
                ignore: true,
            },
            Case {
                name: "Ready turned False",
                new: base("2", vec![condition("Ready", "False", 10)]),
                ignore: false,
            },
            Case {
                name: "a pressure condition turned True",
                new: base(
                    "2",
                    vec![
                        condition("Ready", "True", 10),
                        condition("MemoryPressure", "True", 10),
                    ],
                ),
                ignore: false,
            },
            Case {
                name: "a new label",
                new: {
                    let mut n = base("2", ready(0));
                    n.metadata
                        .labels
                        .get_or_insert_with(BTreeMap::new)
                        .insert("disk".into(), "ssd".into());
                    n
                },
                ignore: false,
            },
            Case {
                name: "a taint",
                new: {
                    let mut n = base("2", ready(0));
                    n.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
                        taints: Some(vec![taint("k", "v", NS)]),
                        ..Default::default()
                    });
                    n
                },
                ignore: false,
            },
        ];
        for case in cases {
            assert_eq!(
                should_ignore_node_update(&old, &case.new),
                case.ignore,
                "{}",
                case.name
            );
        }
        assert!(node_in_same_condition(&[], &[]));
    }
}
