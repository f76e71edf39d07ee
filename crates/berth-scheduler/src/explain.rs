//! Why a pod goes where it goes (issue 23's live explanation, `berth
//! explain pod`): every node with each filter plugin's verdict and reason,
//! each score plugin's raw, normalised and weighted score, the total and
//! the rank, and which taint or toleration decided, the way
//! kube-scheduler-simulator annotates pods.
//!
//! Nothing here decides anything: the verdicts are the cycle's own steps
//! ([`PodFilters`] for PreFilter and Filter, [`score_nodes`] for PreScore,
//! Score, NormalizeScore and the weights) over a [`Cache`] built by the
//! scheduler's own state machine ([`Scheduler::upsert_node`] and
//! friends) from the cluster's objects. The one difference from a cycle,
//! which an explanation wants: every node is filtered (a cycle stops after
//! `numFeasibleNodesToFind` of them on clusters of 100 nodes or more) and
//! every filter runs on every node (a cycle stops at a node's first
//! rejection, which is the verdict shown).
//!
//! A bound pod is explained as it was when it was pending: without its
//! `nodeName` and without itself on its node.

use std::sync::Arc;

use berth_core::node::taints as node_taints;
use berth_core::taint_spec::{format_taint, format_toleration};
use berth_core::toleration::{find_matching_untolerated_taint, is_do_not_schedule, tolerates};
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde::Serialize;
use tokio::time::Instant;

use crate::cache::Cache;
use crate::cycle::{PodFilters, Profile, ScheduleError, score_nodes};
use crate::framework::{
    Code, CycleState, Diagnosis, FitError, NodeInfo, NodeToStatus, PodInfo, Snapshot, Status,
};
use crate::plugins::taint_toleration;
use crate::queue::QueueConfig;
use crate::scheduler::{Scheduler, assigned_node, pod_key};

/// The cluster as the scheduler's watches would show it.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub namespaces: Vec<Namespace>,
}

/// The scheduler's cache of `cluster`, built by the scheduler's own state
/// machine, without the pod `leave_out` (the one explained).
pub fn cache_of(profile: &Profile, cluster: &ClusterObjects, leave_out: &str) -> Cache {
    let mut scheduler = Scheduler::new(profile.clone(), QueueConfig::default(), 0);
    let now = Instant::now();
    for namespace in &cluster.namespaces {
        scheduler.upsert_namespace(namespace.clone(), now);
    }
    for node in &cluster.nodes {
        scheduler.upsert_node(node.clone(), now);
    }
    // Only bound pods count on nodes; pending ones would only be queued.
    for pod in cluster
        .pods
        .iter()
        .filter(|p| assigned_node(p).is_some() && pod_key(p) != leave_out)
    {
        scheduler.upsert_pod(pod.clone(), now);
    }
    scheduler.into_cache()
}

/// The whole explanation of one pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name`.
    pub pod: String,
    /// The profile (`spec.schedulerName`) that schedules it.
    pub scheduler_name: String,
    /// The node it is bound to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_to: Option<String>,
    /// Upstream's message when no node fits ("0/3 nodes are available:
    /// ..."), or a PreFilter's or plugin's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unschedulable: Option<String>,
    /// The nodes the scheduler may choose: feasible, with the highest
    /// total (it picks one of them at random).
    pub best: Vec<String>,
    /// Every node: feasible ones by rank, then the others by name.
    pub nodes: Vec<NodeExplanation>,
}

/// One node's part of an explanation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeExplanation {
    pub name: String,
    pub feasible: bool,
    /// The cycle's verdict: the first filter that rejects the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_by: Option<String>,
    /// Its reason (upstream's message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every filter's own verdict, in the profile's order.
    pub filters: Vec<FilterVerdict>,
    /// Every score plugin's scores (feasible nodes only: scores are
    /// normalised over the feasible nodes).
    pub scores: Vec<ScoreDetail>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// 1 for the best; equal totals share a rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
    /// Each of the node's taints and the toleration that tolerates it.
    pub taints: Vec<TaintVerdict>,
}

/// One filter plugin on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterVerdict {
    pub plugin: String,
    /// `Passed`, `Skipped` (its PreFilter had nothing to check),
    /// `Unschedulable`, `UnschedulableAndUnresolvable` or `Error`.
    pub verdict: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// One score plugin on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreDetail {
    pub plugin: String,
    /// As the plugin's Score gave it.
    pub raw: i64,
    /// After NormalizeScore, `0..=100`.
    pub normalized: i64,
    pub weight: i64,
    /// `normalized × weight`, the part of the total.
    pub weighted: i64,
}

/// One taint of a node and what the pod makes of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintVerdict {
    /// `key=value:Effect`.
    pub taint: String,
    /// The pod's first toleration that tolerates it, as
    /// `key op value:effect`; none: untolerated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerated_by: Option<String>,
    /// This taint is the one TaintToleration rejected the node for.
    pub decided: bool,
}

/// Explains where `pod` goes in `cache` under `profile`.
pub fn explain(profile: &Profile, pod: &Pod, cache: &Cache) -> Explanation {
    let bound_to = assigned_node(pod).map(str::to_string);
    let mut pending = pod.clone();
    if let Some(spec) = pending.spec.as_mut() {
        spec.node_name = None;
    }
    let info = PodInfo::new(Arc::new(pending));
    let snapshot = cache.snapshot();
    let all = snapshot.nodes;
    let mut state = CycleState::new();
    let mut nodes: Vec<NodeExplanation> = all
        .iter()
        .map(|n| NodeExplanation {
            name: n.name().to_string(),
            feasible: false,
            rejected_by: None,
            reason: None,
            filters: Vec::new(),
            scores: Vec::new(),
            total: None,
            rank: None,
            taints: taint_verdicts(profile, &info, n, false),
        })
        .collect();
    let mut unschedulable = None;
    match PodFilters::new(profile, &mut state, &info, &snapshot) {
        Err(error) => {
            // A PreFilter turned the pod away from every node.
            let (plugin, reason) = match &error {
                ScheduleError::Fit(fit) => (
                    fit.diagnosis
                        .unschedulable_plugins
                        .iter()
                        .next()
                        .copied()
                        .unwrap_or(""),
                    fit.diagnosis.pre_filter_msg.clone(),
                ),
                other => ("", other.to_string()),
            };
            for node in &mut nodes {
                node.rejected_by = Some(plugin.to_string());
                node.reason = Some(reason.clone());
            }
            unschedulable = Some(error.to_string());
        }
        Ok(filters) => {
            let mut feasible = Vec::new();
            let mut rejections = BTreeMap::new();
            for (i, (node, info_node)) in nodes.iter_mut().zip(all).enumerate() {
                let candidate = filters.is_candidate(node.name.as_str());
                let verdict = if candidate {
                    node.filters = filters
                        .each(&state, &info, info_node)
                        .into_iter()
                        .map(filter_verdict)
                        .collect();
                    filters.run(&state, &info, info_node)
                } else {
                    Some(filters.not_a_candidate())
                };
                match verdict {
                    None => {
                        node.feasible = true;
                        feasible.push(i);
                    }
                    Some(status) => {
                        if status.plugin == taint_toleration::NAME {
                            node.taints = taint_verdicts(profile, &info, info_node, true);
                        }
                        node.rejected_by = Some(status.plugin.to_string());
                        node.reason = Some(status.message());
                        if candidate {
                            rejections.insert(node.name.clone(), status);
                        }
                    }
                }
            }
            if feasible.is_empty() {
                let absent = filters.not_a_candidate();
                unschedulable = Some(fit_message(all.len(), rejections, absent));
            } else if let Err(error) =
                score(profile, &mut state, &info, &snapshot, &feasible, &mut nodes)
            {
                unschedulable = Some(error.to_string());
            }
        }
    }
    rank(&mut nodes);
    let best = nodes
        .iter()
        .filter(|n| n.rank == Some(1))
        .map(|n| n.name.clone())
        .collect();
    Explanation {
        pod: pod_key(pod),
        scheduler_name: profile.scheduler_name.clone(),
        bound_to,
        unschedulable,
        best,
        nodes,
    }
}

/// Upstream's FitError message over the explained rejections: the cycle's
/// own diagnosis when the pod fits nowhere.
fn fit_message(num_nodes: usize, rejections: BTreeMap<String, Status>, absent: Status) -> String {
    let diagnosis = Diagnosis {
        unschedulable_plugins: rejections.values().map(|s| s.plugin).collect(),
        node_to_status: NodeToStatus::new(
            rejections
                .into_iter()
                .map(|(name, status)| (Arc::from(name), status))
                .collect(),
            absent,
        ),
        ..Diagnosis::default()
    };
    FitError {
        num_all_nodes: num_nodes,
        diagnosis,
    }
    .to_string()
}

fn filter_verdict(status: Status) -> FilterVerdict {
    let verdict = match status.code {
        Code::Success => "Passed".to_string(),
        Code::Skip => "Skipped".to_string(),
        code => code.to_string(),
    };
    FilterVerdict {
        plugin: status.plugin.to_string(),
        verdict,
        reason: status.message(),
    }
}

/// Scores the feasible nodes (indexes into `nodes`) with the cycle's own
/// scoring and writes each plugin's part and the total.
fn score(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot<'_>,
    feasible: &[usize],
    nodes: &mut [NodeExplanation],
) -> Result<(), ScheduleError> {
    let infos: Vec<&NodeInfo> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
    for &i in feasible {
        nodes[i].total = Some(0);
    }
    score_nodes(profile, state, pod, snapshot, &infos, |scored| {
        for ((&i, raw), normalized) in feasible.iter().zip(scored.raw).zip(scored.normalized) {
            let weighted = normalized.score.saturating_mul(scored.weight);
            let node = &mut nodes[i];
            node.scores.push(ScoreDetail {
                plugin: scored.plugin.to_string(),
                raw: *raw,
                normalized: normalized.score,
                weight: scored.weight,
                weighted,
            });
            node.total = Some(node.total.unwrap_or(0).saturating_add(weighted));
        }
    })
}

/// Orders the nodes (feasible by total, best first, then by name; then the
/// others by name) and gives the feasible ones their rank.
fn rank(nodes: &mut [NodeExplanation]) {
    nodes.sort_by(|a, b| {
        b.total
            .cmp(&a.total)
            .then_with(|| b.feasible.cmp(&a.feasible))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut rank = 0;
    let mut last = None;
    for (i, node) in nodes.iter_mut().enumerate() {
        let Some(total) = node.total.filter(|_| node.feasible) else {
            continue;
        };
        if last != Some(total) {
            rank = i + 1;
            last = Some(total);
        }
        node.rank = Some(rank);
    }
}

/// Each taint of the node with the toleration that tolerates it; with
/// `decided`, the taint TaintToleration's Filter reports (upstream's
/// FindMatchingUntoleratedTaint over the NoSchedule and NoExecute ones) is
/// marked.
fn taint_verdicts(
    profile: &Profile,
    pod: &PodInfo,
    node: &NodeInfo,
    decided: bool,
) -> Vec<TaintVerdict> {
    let tolerations = pod.tolerations();
    let taints = node_taints(node.node());
    let decided = decided
        .then(|| {
            find_matching_untolerated_taint(taints, tolerations, is_do_not_schedule, profile.gates)
        })
        .flatten();
    taints
        .iter()
        .map(|taint| TaintVerdict {
            taint: format_taint(taint),
            tolerated_by: tolerations
                .iter()
                .find(|t| tolerates(t, taint, profile.gates))
                .map(format_toleration),
            decided: decided.is_some_and(|d| std::ptr::eq(d, taint)),
        })
        .collect()
}

/// Pending pods a what-if looks at, at most.
pub const PENDING_CHECKED: usize = 1_000;

/// An explanation with a what-if: nodes changed (`berth explain pod
/// --taint`), the pod explained on the changed cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    #[serde(flatten)]
    pub explanation: Explanation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIf>,
}

/// What the changed nodes do to scheduling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// The best nodes for the pod before the change.
    pub best_before: Vec<String>,
    /// Pending pods (`namespace/name`) that fit no node before and some
    /// node after.
    pub become_schedulable: Vec<String>,
    /// Pending pods that fit some node before and none after.
    pub become_unschedulable: Vec<String>,
    /// Pending pods left unchecked past [`PENDING_CHECKED`].
    pub pending_unchecked: usize,
}

/// The profile of `pod`'s `spec.schedulerName` among `profiles`.
pub fn profile_of<'p>(profiles: &'p [Profile], pod: &Pod) -> Result<&'p Profile, String> {
    let name = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or(crate::cycle::DEFAULT_SCHEDULER_NAME);
    profiles
        .iter()
        .find(|p| p.scheduler_name == name)
        .ok_or_else(|| {
            format!("no scheduler profile of this server schedules pods of schedulerName {name:?}")
        })
}

/// Explains `pod` in `cluster`; with `changed` nodes (replacing the nodes
/// of the same name), on the changed cluster, with which pending pods the
/// change makes schedulable or unschedulable (every filter counted, by the
/// same steps).
pub fn report(
    profiles: &[Profile],
    pod: &Pod,
    cluster: &ClusterObjects,
    changed: &[Node],
) -> Result<Report, String> {
    let profile = profile_of(profiles, pod)?;
    let key = pod_key(pod);
    if changed.is_empty() {
        let explanation = explain(profile, pod, &cache_of(profile, cluster, &key));
        return Ok(Report {
            explanation,
            what_if: None,
        });
    }
    let name_of = |n: &Node| n.metadata.name.clone().unwrap_or_default();
    let mut after = cluster.clone();
    for node in &mut after.nodes {
        if let Some(new) = changed.iter().find(|c| name_of(c) == name_of(node)) {
            *node = new.clone();
        }
    }
    let before = explain(profile, pod, &cache_of(profile, cluster, &key));
    let explanation = explain(profile, pod, &cache_of(profile, &after, &key));
    let (before_cache, after_cache) = (
        cache_of(profile, cluster, ""),
        cache_of(profile, &after, ""),
    );
    let pending: Vec<&Pod> = cluster
        .pods
        .iter()
        .filter(|p| assigned_node(p).is_none() && p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            !matches!(
                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            )
        })
        .collect();
    let mut what_if = WhatIf {
        best_before: before.best,
        become_schedulable: Vec::new(),
        become_unschedulable: Vec::new(),
        pending_unchecked: pending.len().saturating_sub(PENDING_CHECKED),
    };
    for pending in pending.into_iter().take(PENDING_CHECKED) {
        let Ok(profile) = profile_of(profiles, pending) else {
            continue;
        };
        let info = PodInfo::new(Arc::new(pending.clone()));
        match (
            fits_somewhere(profile, &info, &before_cache),
            fits_somewhere(profile, &info, &after_cache),
        ) {
            (false, true) => what_if.become_schedulable.push(pod_key(pending)),
            (true, false) => what_if.become_unschedulable.push(pod_key(pending)),
            _ => {}
        }
    }
    Ok(Report {
        explanation,
        what_if: Some(what_if),
    })
}

/// Whether some node of `cache` passes the profile's PreFilters and
/// Filters for `pod` (the cycle's own steps).
fn fits_somewhere(profile: &Profile, pod: &PodInfo, cache: &Cache) -> bool {
    let snapshot = cache.snapshot();
    let mut state = CycleState::new();
    let Ok(filters) = PodFilters::new(profile, &mut state, pod, &snapshot) else {
        return false;
    };
    snapshot
        .nodes
        .iter()
        .any(|n| filters.is_candidate(n.name()) && filters.run(&state, pod, n).is_none())
}

/// Whether `taint` is one of the node's that the explanation marks.
#[cfg(test)]
pub(crate) fn decided_taint(explanation: &NodeExplanation) -> Option<&str> {
    explanation
        .taints
        .iter()
        .find(|t| t.decided)
        .map(|t| t.taint.as_str())
}

#[cfg(test)]
mod tests;
