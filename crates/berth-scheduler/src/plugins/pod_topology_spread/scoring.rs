//! PreScore, Score and NormalizeScore (upstream `scoring.go`).

use super::counts::{CountKey, MEMORY_KEY, Memory};
use super::{
    LABEL_HOSTNAME, NAME, PodTopologySpread, SCHEDULE_ANYWAY, SpreadConstraint, node_has_all_keys,
    pod_constraints,
};
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status,
};

pub const PRE_SCORE_STATE_KEY: &str = "PreScorePodTopologySpread";

/// The raw score of a node PreScore ignores (it lacks a topology key);
/// NormalizeScore turns it into 0.
pub const INVALID_SCORE: i64 = -1;

/// What Score reads besides the remembered counts.
#[derive(Debug, Clone)]
pub struct PreScoreState {
    pub constraints: Vec<SpreadConstraint>,
    pub require_all_keys: bool,
    /// `topologyNormalizingWeight` per constraint.
    pub weights: Vec<f64>,
    pub namespace: String,
    pub counts: usize,
}

/// `topologyNormalizingWeight`: ln(domains + 2).
pub fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

/// `scoreForCount`.
pub fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + f64::from(max_skew - 1)
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
        nodes: &[&NodeInfo],
    ) -> Status {
        if snapshot.nodes.is_empty() {
            return Status::skip();
        }
        let constraints = match self.constraints(pod.pod(), SCHEDULE_ANYWAY, snapshot.workloads) {
            Ok(c) => c,
            Err(e) => {
                return Status::error(format!("calculating preScoreState: {e}")).with_plugin(NAME);
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        // Nodes without a zone label still get hostname spreading under
        // the system defaults.
        let require_all_keys = !pod_constraints(pod.pod()).is_empty() || !self.system_defaulted;
        let mut ignored = 0;
        let mut values: Vec<foldhash::HashSet<&str>> =
            vec![foldhash::HashSet::default(); constraints.len()];
        for node in nodes {
            if require_all_keys && !node_has_all_keys(node, &constraints) {
                ignored += 1;
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key != LABEL_HOSTNAME {
                    values[i].insert(node.label(&c.topology_key).unwrap_or(""));
                }
            }
        }
        let weights = constraints
            .iter()
            .zip(&values)
            .map(|(c, v)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len() - ignored
                } else {
                    v.len()
                };
                topology_normalizing_weight(size)
            })
            .collect();
        let key = CountKey::new(pod.pod(), constraints.clone(), require_all_keys);
        let counts = state
            .memory::<Memory>(MEMORY_KEY)
            .counts_for(key, snapshot, self.gates);
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                constraints,
                require_all_keys,
                weights,
                namespace: pod.namespace().to_string(),
                counts,
            },
        );
        Status::success()
    }
}

impl ScorePlugin for PodTopologySpread {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(Status::error(format!(
                "error reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME));
        };
        let Some(domains) = state
            .remembered::<Memory>(MEMORY_KEY)
            .and_then(|m| m.entries.get(s.counts))
        else {
            return Err(Status::error("counts not kept").with_plugin(NAME));
        };
        if s.require_all_keys && !node_has_all_keys(node, &s.constraints) {
            return Ok(INVALID_SCORE);
        }
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let count = if c.topology_key == LABEL_HOSTNAME {
                if node.label(&c.topology_key).is_none() {
                    continue;
                }
                node.pods
                    .iter()
                    .filter(|p| {
                        !p.is_terminating() && p.namespace() == s.namespace && c.selects(p.labels())
                    })
                    .count() as i64
            } else {
                let Some(count) = domains.per_constraint[i].of_node(node) else {
                    continue;
                };
                count
            };
            score += score_for_count(count, c.max_skew, s.weights[i]);
        }
        Ok(score.round() as i64)
    }

    /// Fewer matching pods is better: `100 × (max + min − score) / max`
    /// over the scored nodes; ignored nodes get 0.
    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        let mut min = i64::MAX;
        let mut max = 0;
        for s in scores.iter().filter(|s| s.score != INVALID_SCORE) {
            min = min.min(s.score);
            max = max.max(s.score);
        }
        for s in scores.iter_mut() {
            s.score = if s.score == INVALID_SCORE {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - s.score) / max
            };
        }
        Status::success()
    }
}
