//! PreScore, Score and NormalizeScore (upstream `scoring.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::counts::TopologyCounts;
use super::{InterPodAffinity, NAME, merged};
use crate::affinity_terms::{AffinityTerm, WeightedAffinityTerm};
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status,
};
use crate::snapshot::NodePod;

pub const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

/// Score per topology key, then value.
#[derive(Debug, Clone, Default)]
pub struct PreScoreState {
    pub topology_score: TopologyCounts,
}

struct Scorer<'a> {
    incoming: &'a Pod,
    namespace_labels: Option<&'a BTreeMap<String, String>>,
    preferred: Vec<WeightedAffinityTerm>,
    preferred_anti: Vec<WeightedAffinityTerm>,
    hard_weight: i32,
    scores: TopologyCounts,
}

impl Scorer<'_> {
    /// `processTerm`.
    fn term(
        &mut self,
        term: &AffinityTerm,
        weight: i64,
        pod: &Pod,
        ns: Option<&BTreeMap<String, String>>,
        node: &NodeInfo,
    ) {
        if !term.matches(pod, ns) {
            return;
        }
        if let Some(value) = node.label(&term.topology_key) {
            self.scores.add(&term.topology_key, value, weight);
        }
    }

    /// `processExistingPod`.
    fn existing(&mut self, existing: &NodePod, node: &NodeInfo) {
        if node.labels().is_none_or(|l| l.is_empty()) {
            return;
        }
        let preferred = std::mem::take(&mut self.preferred);
        for t in &preferred {
            self.term(&t.term, i64::from(t.weight), &existing.pod, None, node);
        }
        self.preferred = preferred;
        let preferred_anti = std::mem::take(&mut self.preferred_anti);
        for t in &preferred_anti {
            self.term(&t.term, -i64::from(t.weight), &existing.pod, None, node);
        }
        self.preferred_anti = preferred_anti;
        let Some(terms) = &existing.terms else {
            return;
        };
        let (incoming, ns) = (self.incoming, self.namespace_labels);
        if self.hard_weight > 0 {
            for t in &terms.required_affinity {
                self.term(t, i64::from(self.hard_weight), incoming, ns, node);
            }
        }
        for t in &terms.preferred_affinity {
            self.term(&t.term, i64::from(t.weight), incoming, ns, node);
        }
        for t in &terms.preferred_anti_affinity {
            self.term(&t.term, -i64::from(t.weight), incoming, ns, node);
        }
    }
}

fn merged_weighted(
    terms: &[WeightedAffinityTerm],
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<WeightedAffinityTerm> {
    let plain = merged(terms.iter().map(|t| &t.term), namespaces);
    plain
        .into_iter()
        .zip(terms)
        .map(|(term, t)| WeightedAffinityTerm {
            term,
            weight: t.weight,
        })
        .collect()
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let terms = pod.affinity_terms();
        let preferred = terms
            .map(|t| t.preferred_affinity.as_slice())
            .unwrap_or(&[]);
        let preferred_anti = terms
            .map(|t| t.preferred_anti_affinity.as_slice())
            .unwrap_or(&[]);
        let has_constraints = !preferred.is_empty() || !preferred_anti.is_empty();
        if self.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        if !has_constraints && snapshot.pods_affecting_scores == 0 {
            // No pod could add to any score.
            return Status::skip();
        }
        if let Some(e) = pod.affinity_error() {
            return Status::error(format!("failed to parse pod: {e}")).with_plugin(NAME);
        }
        let mut scorer = Scorer {
            incoming: pod.pod(),
            namespace_labels: snapshot.namespace_labels(pod.namespace()),
            preferred: merged_weighted(preferred, snapshot.namespaces),
            preferred_anti: merged_weighted(preferred_anti, snapshot.namespaces),
            hard_weight: self.hard_pod_affinity_weight,
            scores: TopologyCounts::default(),
        };
        for node in snapshot.nodes {
            if has_constraints {
                for existing in &node.pods {
                    scorer.existing(existing, node);
                }
            } else if node.pods_affecting_scores > 0 {
                for existing in node
                    .pods
                    .iter()
                    .filter(|p| p.terms.as_ref().is_some_and(|t| t.affects_scores()))
                {
                    scorer.existing(existing, node);
                }
            }
        }
        if scorer.scores.is_empty() {
            return Status::skip();
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                topology_score: scorer.scores,
            },
        );
        Status::success()
    }
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(Status::error(format!(
                "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME));
        };
        Ok(s.topology_score
            .iter()
            .filter_map(|(key, values)| node.label(key).and_then(|v| values.get(v)))
            .sum())
    }

    /// Min-max scaling onto 0..=100.
    fn normalize_score(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Status::error(format!(
                "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        if s.topology_score.is_empty() {
            return Status::success();
        }
        let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
        let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
        let diff = max - min;
        for s in scores.iter_mut() {
            s.score = if diff > 0 {
                (MAX_NODE_SCORE as f64 * ((s.score - min) as f64 / diff as f64)) as i64
            } else {
                0
            };
        }
        Status::success()
    }
}
