//! PreFilter and Filter (upstream `filtering.go`).

use super::counts::{CountKey, DomainCounts, MEMORY_KEY, Memory};
use super::{DO_NOT_SCHEDULE, NAME, PodTopologySpread, SpreadConstraint};
use crate::framework::{
    Code, CycleState, FilterPlugin, NodeInfo, NodePod, PodInfo, PreFilterPlugin, PreFilterResult,
    Snapshot, Status,
};

/// The Filter reason when a domain would be too full.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// The Filter reason when the node lacks a topology key.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterPodTopologySpread";

/// What Filter reads besides the remembered counts.
#[derive(Debug, Clone)]
pub struct PreFilterState {
    pub constraints: Vec<SpreadConstraint>,
    /// `minMatchNum` per constraint: the least populated domain's count, or
    /// 0 when there are fewer domains than `minDomains`.
    pub min_match: Vec<i64>,
    /// Whether the incoming pod matches each constraint's selector.
    pub self_match: Vec<i64>,
    /// Which remembered counts are this pod's.
    pub counts: usize,
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints(pod.pod(), DO_NOT_SCHEDULE, snapshot.workloads) {
            Ok(c) => c,
            Err(e) => {
                return (
                    None,
                    Status::error(format!("get constraints from pod: {e}")).with_plugin(NAME),
                );
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        let key = CountKey::new(pod.pod(), constraints.clone(), true);
        let counts = state
            .memory::<Memory>(MEMORY_KEY)
            .counts_for(key, snapshot, self.gates);
        let Some(domains) = state
            .remembered::<Memory>(MEMORY_KEY)
            .and_then(|m| m.entries.get(counts))
        else {
            return (None, Status::error("counts not kept").with_plugin(NAME));
        };
        let min_match = min_match(&constraints, domains);
        let self_match = constraints
            .iter()
            .map(|c| i64::from(c.selects(pod.labels())))
            .collect();
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                constraints,
                min_match,
                self_match,
                counts,
            },
        );
        (None, Status::success())
    }

    /// `AddPod` / `RemovePod`: the pod's domains counted with `existing`
    /// added or removed, and `minMatchNum` again.
    fn update_for_pod(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        existing: &NodePod,
        node: &NodeInfo,
        delta: i64,
    ) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY).cloned() else {
            return Status::error(format!(
                "reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        let Some(domains) = state.memory::<Memory>(MEMORY_KEY).entries.get_mut(s.counts) else {
            return Status::error("counts not kept").with_plugin(NAME);
        };
        if !domains.update_with_pod(existing, node, delta, self.gates) {
            return Status::error(format!("node {:?} is no domain of the counts", node.name()))
                .with_plugin(NAME);
        }
        let min_match = min_match(&s.constraints, domains);
        state.write(PRE_FILTER_STATE_KEY, PreFilterState { min_match, ..s });
        Status::success()
    }
}

/// `minMatchNum` per constraint: the least populated domain's count, or 0
/// when there are fewer domains than `minDomains` (upstream's critical
/// paths; exact here, the counts being at hand).
fn min_match(constraints: &[SpreadConstraint], domains: &DomainCounts) -> Vec<i64> {
    constraints
        .iter()
        .zip(&domains.per_constraint)
        .map(|(c, domains)| {
            if (domains.len() as i64) < i64::from(c.min_domains) {
                0
            } else {
                domains.min().unwrap_or(i64::from(i32::MAX))
            }
        })
        .collect()
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        let Some(domains) = state
            .remembered::<Memory>(MEMORY_KEY)
            .and_then(|m| m.entries.get(s.counts))
        else {
            return Status::error("counts not kept").with_plugin(NAME);
        };
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(match_num) = domains.per_constraint[i].of_node(node) else {
                return Status::new(
                    Code::UnschedulableAndUnresolvable,
                    ERR_REASON_NODE_LABEL_NOT_MATCH,
                )
                .with_plugin(NAME);
            };
            let skew = match_num + s.self_match[i] - s.min_match[i];
            if skew > i64::from(c.max_skew) {
                return Status::new(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH)
                    .with_plugin(NAME);
            }
        }
        Status::success()
    }
}
