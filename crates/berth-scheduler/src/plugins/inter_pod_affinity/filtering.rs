//! PreFilter and Filter (upstream `filtering.go`).

use super::counts::{CountKey, MEMORY_KEY, Memory, TermCounts};
use super::{InterPodAffinity, NAME, merged};
use crate::affinity_terms::{AffinityTerm, matches_all};
use crate::framework::{
    Code, CycleState, FilterPlugin, NodeInfo, NodePod, PodInfo, PreFilterPlugin, PreFilterResult,
    Snapshot, Status,
};

pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";

/// What Filter reads besides the remembered counts.
#[derive(Debug, Clone)]
pub struct PreFilterState {
    pub affinity: Vec<AffinityTerm>,
    pub anti_affinity: Vec<AffinityTerm>,
    /// The incoming pod matches all its own affinity terms (so the first
    /// pod of a group may go where none of the group runs yet).
    pub matches_own_affinity: bool,
    pub counts: usize,
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status) {
        if let Some(e) = pod.affinity_error() {
            return (
                None,
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    format!("parsing pod: {e}"),
                )
                .with_plugin(NAME),
            );
        }
        let terms = pod.affinity_terms();
        let affinity = merged(
            terms.iter().flat_map(|t| &t.required_affinity),
            snapshot.namespaces,
        );
        let anti_affinity = merged(
            terms.iter().flat_map(|t| &t.required_anti_affinity),
            snapshot.namespaces,
        );
        if affinity.is_empty()
            && anti_affinity.is_empty()
            && snapshot.pods_with_required_anti_affinity == 0
        {
            return (None, Status::skip());
        }
        let key = CountKey {
            namespace: pod.namespace().to_string(),
            labels: pod.labels().cloned(),
            namespace_labels: snapshot.namespace_labels(pod.namespace()).cloned(),
            affinity: affinity.clone(),
            anti_affinity: anti_affinity.clone(),
        };
        let counts = state
            .memory::<Memory>(MEMORY_KEY)
            .counts_for(key, pod.pod(), snapshot);
        let existing_empty = state
            .remembered::<Memory>(MEMORY_KEY)
            .and_then(|m| m.entries.get(counts))
            .is_none_or(|c| c.existing_anti_affinity.is_empty());
        if existing_empty && affinity.is_empty() && anti_affinity.is_empty() {
            return (None, Status::skip());
        }
        let matches_own_affinity = matches_all(&affinity, pod.pod());
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                affinity,
                anti_affinity,
                matches_own_affinity,
                counts,
            },
        );
        (None, Status::success())
    }

    /// `AddPod` / `RemovePod` (`updateWithPod`): the three counts with
    /// `existing` added to or removed from `node`.
    fn update_for_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        existing: &NodePod,
        node: &NodeInfo,
        delta: i64,
    ) -> Status {
        let Some(counts) = state
            .read::<PreFilterState>(PRE_FILTER_STATE_KEY)
            .map(|s| s.counts)
        else {
            return Status::error(format!(
                "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        let Some(entry) = state.memory::<Memory>(MEMORY_KEY).entries.get_mut(counts) else {
            return Status::error("counts not kept").with_plugin(NAME);
        };
        entry.update_with_pod(pod.pod(), existing, node, delta);
        Status::success()
    }
}

/// `satisfyPodAffinity`.
fn satisfies_affinity(s: &PreFilterState, counts: &TermCounts, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for t in &s.affinity {
        let Some(value) = node.label(&t.topology_key) else {
            return false;
        };
        if counts.affinity.get(&t.topology_key, value) <= 0 {
            pods_exist = false;
        }
    }
    pods_exist || (counts.affinity.is_empty() && s.matches_own_affinity)
}

/// `satisfyPodAntiAffinity`.
fn satisfies_anti_affinity(s: &PreFilterState, counts: &TermCounts, node: &NodeInfo) -> bool {
    if counts.anti_affinity.is_empty() {
        return true;
    }
    !s.anti_affinity.iter().any(|t| {
        node.label(&t.topology_key)
            .is_some_and(|v| counts.anti_affinity.get(&t.topology_key, v) > 0)
    })
}

/// `satisfyExistingPodsAntiAffinity`: no pair of the node's labels is
/// counted.
fn satisfies_existing_anti_affinity(counts: &TermCounts, node: &NodeInfo) -> bool {
    counts.existing_anti_affinity.iter().all(|(key, values)| {
        node.label(key)
            .is_none_or(|v| values.get(v).is_none_or(|&n| n <= 0))
    })
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        let Some(counts) = state
            .remembered::<Memory>(MEMORY_KEY)
            .and_then(|m| m.entries.get(s.counts))
        else {
            return Status::error("counts not kept").with_plugin(NAME);
        };
        if !satisfies_affinity(s, counts, node) {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_AFFINITY_RULES_NOT_MATCH,
            )
            .with_plugin(NAME);
        }
        if !satisfies_anti_affinity(s, counts, node) {
            return Status::new(
                Code::Unschedulable,
                ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
            )
            .with_plugin(NAME);
        }
        if !satisfies_existing_anti_affinity(counts, node) {
            return Status::new(
                Code::Unschedulable,
                ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
            )
            .with_plugin(NAME);
        }
        Status::success()
    }
}
