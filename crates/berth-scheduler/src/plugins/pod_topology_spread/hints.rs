//! PodTopologySpread's queueing hints (upstream `plugin.go`:
//! `isSchedulableAfterPodChange`, `isSchedulableAfterNodeChange`).

use k8s_openapi::api::core::v1::{Node, Pod};

use super::{DO_NOT_SCHEDULE, InclusionPolicy, PodTopologySpread, SpreadConstraint};
use crate::snapshot::WorkloadSelectors;

/// `involvedInTopologySpreading`: the changed pod is the waiting pod
/// itself, or a bound pod of its namespace.
fn involved(changed: &Pod, waiting: &Pod) -> bool {
    if changed.metadata.uid.is_some() && changed.metadata.uid == waiting.metadata.uid {
        return true;
    }
    let bound = changed
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    bound && changed.metadata.namespace == waiting.metadata.namespace
}

fn selected_by_any(constraints: &[SpreadConstraint], pod: &Pod) -> bool {
    constraints
        .iter()
        .any(|c| c.selects(pod.metadata.labels.as_ref()))
}

fn node_has_all(node: &Node, constraints: &[SpreadConstraint]) -> bool {
    let labels = node.metadata.labels.as_ref();
    constraints
        .iter()
        .all(|c| labels.is_some_and(|l| l.contains_key(&c.topology_key)))
}

impl PodTopologySpread {
    fn hard_constraints(
        &self,
        pod: &Pod,
        workloads: &dyn WorkloadSelectors,
    ) -> Option<Vec<SpreadConstraint>> {
        // A parse error queues the pod (upstream returns Queue with it).
        self.constraints(pod, DO_NOT_SCHEDULE, workloads).ok()
    }

    /// A pod was added (`old` None), updated, or deleted (`new` None):
    /// may `waiting` now pass?
    pub fn is_schedulable_after_pod_change(
        &self,
        waiting: &Pod,
        old: Option<&Pod>,
        new: Option<&Pod>,
        workloads: &dyn WorkloadSelectors,
    ) -> bool {
        if new.is_some_and(|p| !involved(p, waiting)) || old.is_some_and(|p| !involved(p, waiting))
        {
            return false;
        }
        let Some(constraints) = self.hard_constraints(waiting, workloads) else {
            return true;
        };
        match (old, new) {
            (Some(old), Some(new)) => {
                let own_tolerations_changed = new.metadata.uid == waiting.metadata.uid
                    && new.spec.as_ref().map(|s| &s.tolerations)
                        != old.spec.as_ref().map(|s| &s.tolerations);
                if own_tolerations_changed
                    && constraints
                        .iter()
                        .any(|c| c.node_taints_policy == InclusionPolicy::Honor)
                {
                    return true;
                }
                if old.metadata.labels == new.metadata.labels {
                    return false;
                }
                constraints.iter().any(|c| {
                    c.selects(old.metadata.labels.as_ref())
                        != c.selects(new.metadata.labels.as_ref())
                })
            }
            (None, Some(added)) => selected_by_any(&constraints, added),
            (Some(deleted), None) => selected_by_any(&constraints, deleted),
            (None, None) => false,
        }
    }

    /// A node was added (`old` None), updated, or deleted (`new` None).
    pub fn is_schedulable_after_node_change(
        &self,
        waiting: &Pod,
        old: Option<&Node>,
        new: Option<&Node>,
        workloads: &dyn WorkloadSelectors,
    ) -> bool {
        let Some(constraints) = self.hard_constraints(waiting, workloads) else {
            return true;
        };
        let old_matching = old.is_some_and(|n| node_has_all(n, &constraints));
        let new_matching = new.is_some_and(|n| node_has_all(n, &constraints));
        match (old, new) {
            (Some(old), Some(new)) => {
                if old_matching != new_matching {
                    return true;
                }
                let key_changed = constraints.iter().any(|c| {
                    let value = |n: &Node| {
                        n.metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(&c.topology_key))
                            .cloned()
                    };
                    value(old) != value(new)
                });
                let taints = |n: &Node| n.spec.as_ref().and_then(|s| s.taints.clone());
                new_matching && (key_changed || taints(old) != taints(new))
            }
            (None, Some(_)) => new_matching,
            (Some(_), None) => old_matching,
            (None, None) => false,
        }
    }
}
