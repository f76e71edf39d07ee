//! NodeResourcesBalancedAllocation: nodes whose resources would be used
//! in more even shares with the pod on them score higher (Score only).
//! Ported from upstream `plugins/noderesources/balanced_allocation.go`
//! (the `resourceAllocationScorer` with `useRequested`: the pod's plain
//! requests, no non-zero defaults; a pod requesting nothing is skipped).

use berth_core::resources::PodResourcesOptions;

use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, Plugin, PodInfo, PreScorePlugin, ScorePlugin, Snapshot,
    Status,
};
use crate::plugins::node_resources_fit::{
    ResourceSpec, allocatable_and_allocated, default_resources, score_requests,
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
        // At most a handful of resources: fixed arrays, no allocation.
        const MAX: usize = 16;
        let mut with_pod = [0i64; MAX];
        let mut without_pod = [0i64; MAX];
        let mut allocatable = [0i64; MAX];
        let n = self.resources.len().min(MAX);
        for (i, (spec, &request)) in self.resources.iter().zip(pod_requests).take(n).enumerate() {
            let (alloc, allocated) = allocatable_and_allocated(node, &spec.name, request, true);
            if alloc == 0 {
                continue;
            }
            allocatable[i] = alloc;
            without_pod[i] = allocated;
            with_pod[i] = allocated.saturating_add(request);
        }
        let score_with = balanced_resource_score(&with_pod[..n], &allocatable[..n]);
        let score_without = balanced_resource_score(&without_pod[..n], &allocatable[..n]);
        Ok(MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + score_with - score_without) / 2)
    }
}

/// `balancedResourceScore`: 100 × (1 − the standard deviation of the
/// requested shares of each resource the node offers, each at most 1).
pub fn balanced_resource_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let mut fractions = [0f64; 16];
    let mut count = 0;
    let mut total = 0.0;
    for (&r, &a) in requested.iter().zip(allocatable) {
        if a == 0 || count == fractions.len() {
            continue;
        }
        let fraction = (r as f64 / a as f64).min(1.0);
        total += fraction;
        fractions[count] = fraction;
        count += 1;
    }
    let fractions = &fractions[..count];
    let std = match fractions {
        [a, b] => ((a - b) / 2.0).abs(),
        f if f.len() > 2 => {
            let mean = total / f.len() as f64;
            let sum: f64 = f.iter().map(|x| (x - mean) * (x - mean)).sum();
            (sum / f.len() as f64).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
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
        let pod_requests = self.pod_requests(pod);
        if pod_requests.iter().all(|&r| r == 0) {
            // A best-effort pod: every node would score the same.
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { pod_requests });
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => self.balanced_score(node, &s.pod_requests),
            None => {
                let requests = self.pod_requests(pod);
                if requests.iter().all(|&r| r == 0) {
                    return Ok(0);
                }
                self.balanced_score(node, &requests)
            }
        }
    }
}

#[cfg(test)]
mod tests;
