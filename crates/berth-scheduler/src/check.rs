//! `berth check`: one pod against a set of nodes, explained.
//!
//! For every node: would the scheduler place the pod there (the filters
//! NodeUnschedulable, NodeName, TaintToleration, NodeAffinity and
//! NodeResourcesFit, with upstream's messages), which taints nothing
//! tolerates, the TaintToleration score normalised over the given nodes,
//! what the node's NoExecute taints would do to the pod were it already
//! running there (berth-core's eviction rule, the one the taint eviction
//! controller follows), and whether the node agent would admit it if it were
//! bound there directly (`spec.nodeName`), as the kubelet's admission does.
//!
//! Unlike the scheduler, which stops at a node's first failing filter, the
//! check runs every filter so that the report names every reason.

use berth_core::FeatureGates;
use berth_core::eviction::{EvictionDelay, eviction_delay};
use berth_core::node::taints as node_taints;
use berth_core::toleration::{is_no_execute, tolerations_tolerate_taint};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use serde::Serialize;

use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, NodeScore, PodInfo, PreFilterPlugin, PreScorePlugin,
    ScorePlugin, Snapshot, Status,
};
use crate::plugins::{
    NodeAffinity, NodeName, NodeResourcesFit, NodeUnschedulable, TaintToleration,
};
use berth_core::node_affinity::RequiredNodeAffinity;

/// The whole answer for one pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// `namespace/name` (namespace `default` when the manifest has none).
    pub pod: String,
    pub nodes: Vec<NodeVerdict>,
}

/// The answer for one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeVerdict {
    pub name: String,
    /// Every filter passes.
    pub schedulable: bool,
    /// Upstream's message of each failing filter, in plugin order.
    pub reasons: Vec<String>,
    /// Every taint of the node, of any effect, that no toleration tolerates.
    pub untolerated_taints: Vec<Taint>,
    /// TaintToleration's score normalised over the given nodes (0..=100).
    pub taint_toleration_score: i64,
    pub if_running: IfRunning,
    /// Whether the node agent would admit the pod bound with `spec.nodeName`.
    pub admit_if_bound: bool,
}

/// What the node's NoExecute taints do to the pod if it already runs there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "evict", rename_all = "lowercase")]
pub enum IfRunning {
    Now,
    Never,
    After { seconds: i64 },
}

impl From<EvictionDelay> for IfRunning {
    fn from(delay: EvictionDelay) -> Self {
        match delay {
            EvictionDelay::Now => IfRunning::Now,
            EvictionDelay::Never => IfRunning::Never,
            EvictionDelay::After(seconds) => IfRunning::After { seconds },
        }
    }
}

/// `namespace/name` of a pod as the API server would store it.
pub fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or("")
    )
}

/// Checks `pod` against each of `nodes`, as if no other pods ran there.
pub fn check_pod(pod: &Pod, nodes: &[Node], gates: FeatureGates) -> CheckReport {
    let pod_info = PodInfo::from(pod.clone());
    let node_infos: Vec<NodeInfo> = nodes.iter().cloned().map(NodeInfo::from).collect();

    let unschedulable = NodeUnschedulable::new(gates);
    let taint_toleration = TaintToleration::new(gates);
    let affinity = NodeAffinity::default();
    let fit = NodeResourcesFit::default();

    let mut state = CycleState::new();
    let pre_filters: [&dyn PreFilterPlugin; 2] = [&affinity, &fit];
    let mut rejected_by_pre_filter = Vec::new();
    for plugin in pre_filters {
        let (_, status) =
            plugin.pre_filter(&mut state, &pod_info, &Snapshot::of_nodes(&node_infos));
        if status.is_rejected() {
            rejected_by_pre_filter.extend(status.reasons.iter().map(|r| r.to_string()));
        }
    }
    // The default profile's filter order.
    let filters: [&dyn FilterPlugin; 5] = [
        &unschedulable,
        &NodeName,
        &taint_toleration,
        &affinity,
        &fit,
    ];

    let scores = taint_toleration_scores(&taint_toleration, &pod_info, &node_infos);
    let tolerations = pod_info.tolerations();
    let required_affinity = RequiredNodeAffinity::of_pod(pod);

    let verdicts = node_infos
        .iter()
        .zip(scores)
        .map(|(node, score)| {
            let mut reasons = rejected_by_pre_filter.clone();
            if reasons.is_empty() {
                for filter in filters {
                    let status: Status = filter.filter(&state, &pod_info, node);
                    if !status.is_success() && !status.is_skip() {
                        reasons.extend(status.reasons.iter().map(|r| r.to_string()));
                    }
                }
            }
            let taints = node_taints(node.node());
            let untolerated_taints: Vec<Taint> = taints
                .iter()
                .filter(|t| !tolerations_tolerate_taint(tolerations, t, gates))
                .cloned()
                .collect();
            // The kubelet's admission (GeneralPredicates): resources, the
            // required node affinity, and only the NoExecute taints.
            let fits = fit.filter(&state, &pod_info, node).is_success();
            let admit_if_bound = fits
                && required_affinity.matches(node.node())
                && !untolerated_taints.iter().any(is_no_execute);
            NodeVerdict {
                name: node.name().to_string(),
                schedulable: reasons.is_empty(),
                reasons,
                untolerated_taints,
                taint_toleration_score: score,
                if_running: eviction_delay(taints, tolerations, gates).into(),
                admit_if_bound,
            }
        })
        .collect();
    CheckReport {
        pod: pod_key(pod),
        nodes: verdicts,
    }
}

/// TaintToleration's PreScore, Score and NormalizeScore over every node.
fn taint_toleration_scores(
    plugin: &TaintToleration,
    pod: &PodInfo,
    nodes: &[NodeInfo],
) -> Vec<i64> {
    let mut state = CycleState::new();
    let feasible: Vec<&NodeInfo> = nodes.iter().collect();
    if !plugin
        .pre_score(&mut state, pod, &Snapshot::of_nodes(nodes), &feasible)
        .is_success()
    {
        return vec![0; nodes.len()];
    }
    let mut scores: Vec<NodeScore> = nodes
        .iter()
        .map(|node| NodeScore {
            name: node.name().to_string(),
            score: plugin.score(&state, pod, node).unwrap_or(0),
        })
        .collect();
    if !plugin
        .normalize_score(&state, pod, &mut scores)
        .is_success()
    {
        return vec![0; nodes.len()];
    }
    scores.into_iter().map(|s| s.score).collect()
}
