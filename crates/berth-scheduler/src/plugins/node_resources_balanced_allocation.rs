//! NodeResourcesBalancedAllocation: nodes whose resources would be used
//! in more even shares with the pod on them score higher (Score only).
//! Ported from upstream `plugins/noderesources/balanced_allocation.go`
//! (the `resourceAllocationScorer` with `useRequested`: the pod's plain
//! requests, no non-zero defaults; a pod requesting nothing is skipped).

use berth_core::resources::PodResourcesOptions;
use smallvec::SmallVec;

use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status, score_each,
};
use crate::plugins::node_resources_fit::{
    ResourceSpec, allocatable_and_allocated, cpu_memory_weights, default_resources, score_requests,
};

/// The plugin's registry name.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 1;

pub const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

/// The plugin (`NodeResourcesBalancedAllocationArgs.resources`: cpu and
/// memory by default).
#[derive(Debug, Clone)]
pub struct BalancedAllocation {
    pub resources: Vec<ResourceSpec>,
    /// The `PodLevelResources` gate.
    pub enable_pod_level_resources: bool,
}

impl Default for BalancedAllocation {
    fn default() -> Self {
        BalancedAllocation {
            resources: default_resources(),
            enable_pod_level_resources: true,
        }
    }
}

/// PreScore's per-pod data: the pod's request of each scored resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreScoreState {
    pub pod_requests: Vec<i64>,
}

impl BalancedAllocation {
    fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        score_requests(
            pod,
            &self.resources,
            PodResourcesOptions {
                pod_level_resources: self.enable_pod_level_resources,
                non_zero_defaults: false,
            },
        )
    }

    /// `resourceAllocationScorer.score` with `balancedResourceScorer`.
    pub fn balanced_score(&self, node: &NodeInfo, pod_requests: &[i64]) -> Result<i64, Status> {
        if self.resources.is_empty() {
            return Err(Status::error("resources not found").with_plugin(NAME));
        }
        Ok(balanced_of(self.resources.iter().zip(pod_requests).map(
            |(spec, &request)| {
                let (alloc, allocated) = allocatable_and_allocated(node, spec, request, true);
                (alloc, allocated, request)
            },
        )))
    }

    /// [`BalancedAllocation::balanced_score`] for cpu then memory (see
    /// [`cpu_memory_weights`]; the weights play no part here).
    #[inline]
    fn balanced_cpu_memory(node: &NodeInfo, cpu_request: i64, memory_request: i64) -> i64 {
        balanced_of([
            (
                node.allocatable.milli_cpu,
                node.requested.milli_cpu,
                cpu_request,
            ),
            (
                node.allocatable.memory,
                node.requested.memory,
                memory_request,
            ),
        ])
    }

    /// The pod's requests of the scored resources; `None` for a
    /// best-effort pod (every node would score the same).
    fn requests_if_any(&self, pod: &PodInfo) -> Option<Vec<i64>> {
        let requests = self.pod_requests(pod);
        requests.iter().any(|&r| r != 0).then_some(requests)
    }
}

/// The balance score of a node from each scored resource's
/// `(allocatable, allocated, pod's request)`: how much more evenly the
/// node's resources are used with the pod than without it.
#[inline]
fn balanced_of(resources: impl IntoIterator<Item = (i64, i64, i64)>) -> i64 {
    // The requested share of each resource the node offers, with and
    // without the pod: a handful, inline (not zeroed first: this runs
    // for every scored node of every pod).
    let mut with_pod: SmallVec<[f64; 4]> = SmallVec::new();
    let mut without_pod: SmallVec<[f64; 4]> = SmallVec::new();
    for (alloc, allocated, request) in resources {
        if alloc == 0 {
            continue;
        }
        with_pod.push(share(allocated.saturating_add(request), alloc));
        without_pod.push(share(allocated, alloc));
    }
    let score_with = balance(&with_pod);
    let score_without = balance(&without_pod);
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + score_with - score_without) / 2
}

/// `requested / allocatable`, at most 1.
#[inline]
fn share(requested: i64, allocatable: i64) -> f64 {
    (requested as f64 / allocatable as f64).min(1.0)
}

/// 100 × (1 − the standard deviation of `shares`).
#[inline]
fn balance(shares: &[f64]) -> i64 {
    let std = match shares {
        [a, b] => ((a - b) / 2.0).abs(),
        f if f.len() > 2 => {
            let mean = f.iter().sum::<f64>() / f.len() as f64;
            let sum: f64 = f.iter().map(|x| (x - mean) * (x - mean)).sum();
            (sum / f.len() as f64).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// `balancedResourceScore`: 100 × (1 − the standard deviation of the
/// requested shares of each resource the node offers, each at most 1).
pub fn balanced_resource_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let shares: Vec<f64> = requested
        .iter()
        .zip(allocatable)
        .filter(|&(_, &a)| a != 0)
        .map(|(&r, &a)| share(r, a))
        .collect();
    balance(&shares)
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreScorePlugin for BalancedAllocation {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
        _nodes: &[&NodeInfo],
    ) -> Status {
        match self.requests_if_any(pod) {
            Some(pod_requests) => {
                state.write(PRE_SCORE_STATE_KEY, PreScoreState { pod_requests });
                Status::success()
            }
            None => Status::skip(),
        }
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut scores = Vec::with_capacity(1);
        self.score_all(state, pod, &[node], &mut scores)?;
        Ok(scores.first().map_or(0, |s| s.score))
    }

    fn score_all(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut Vec<NodeScore>,
    ) -> Result<(), Status> {
        let computed;
        let requests = match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => &s.pod_requests,
            None => match self.requests_if_any(pod) {
                Some(r) => {
                    computed = r;
                    &computed
                }
                None => return score_each(nodes, scores, |_| Ok(0)),
            },
        };
        if let (Some(_), [cpu, memory, ..]) =
            (cpu_memory_weights(&self.resources), requests.as_slice())
        {
            return score_each(nodes, scores, |node| {
                Ok(Self::balanced_cpu_memory(node, *cpu, *memory))
            });
        }
        score_each(nodes, scores, |node| self.balanced_score(node, requests))
    }
}

#[cfg(test)]
mod tests;
