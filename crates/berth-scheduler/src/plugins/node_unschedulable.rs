//! NodeUnschedulable: a cordoned node (`spec.unschedulable: true`) takes no
//! new pods, unless the pod tolerates the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint. Ported from upstream
//! `plugins/nodeunschedulable/node_unschedulable.go`.
//!
//! Upstream's PreFilter only skips pods whose in-place resize is deferred
//! (a feature berth does not have yet), so only the Filter is ported.

use berth_core::FeatureGates;
use berth_core::toleration::cordon_admits;

use crate::framework::{Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Status};

/// The plugin's registry name.
pub const NAME: &str = "NodeUnschedulable";

/// The Filter reason for a cordoned node.
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// Upstream still defines this constant but no longer returns it: its
/// Filter used it for a missing node, which a [`NodeInfo`] cannot lack.
/// Kept so callers matching on upstream's reasons find it.
pub const ERR_REASON_UNKNOWN_CONDITION: &str = "node(s) had unknown conditions";

/// `v1.TaintNodeUnschedulable`.
pub use berth_core::well_known_taints::TAINT_NODE_UNSCHEDULABLE;

/// The NodeUnschedulable plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeUnschedulable {
    /// Gt/Lt tolerations are matched only when the gate is on.
    pub gates: FeatureGates,
}

impl NodeUnschedulable {
    pub fn new(gates: FeatureGates) -> Self {
        NodeUnschedulable { gates }
    }
}

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    fn node_local(&self) -> bool {
        true
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !cordon_admits(node.unschedulable, pod.tolerations(), self.gates) {
            // Uncordoning is an admin action; evicting pods cannot do it.
            return Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE)
                .with_plugin(NAME);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{FilterCase, assert_filter};
    use berth_core::test_util::{make_node, make_pod};
    use berth_core::toleration::EFFECT_NO_SCHEDULE;
    use k8s_openapi::api::core::v1::{Node, Pod, Toleration};

    fn tol(key: &str, op: &str, effect: &str) -> Toleration {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: some(key),
            operator: some(op),
            effect: some(effect),
            ..Toleration::default()
        }
    }

    fn rejected() -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE).with_plugin(NAME)
    }

    /// Upstream `TestNodeUnschedulable`, plus berth rows around the toleration.
    #[test]
    fn node_unschedulable_filter_as_upstream() {
        let cases = vec![
            FilterCase {
                name: "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
                pod: PodInfo::from(Pod::default()),
                node: NodeInfo::from(make_node().unschedulable(true).obj()),
                want: rejected(),
            },
            FilterCase {
                name: "Schedule pod to normal node",
                pod: PodInfo::from(Pod::default()),
                node: NodeInfo::from(make_node().unschedulable(false).obj()),
                want: Status::success(),
            },
            FilterCase {
                name: "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
                pod: PodInfo::from(
                    make_pod()
                        .tolerations(vec![tol(TAINT_NODE_UNSCHEDULABLE, "", EFFECT_NO_SCHEDULE)])
                        .obj(),
                ),
                node: NodeInfo::from(make_node().unschedulable(true).obj()),
                want: Status::success(),
            },
            // berth additions.
            FilterCase {
                name: "unset spec.unschedulable means schedulable",
                pod: PodInfo::from(Pod::default()),
                node: NodeInfo::from(Node::default()),
                want: Status::success(),
            },
            FilterCase {
                name: "Exists toleration with empty key and effect tolerates the cordon",
                pod: PodInfo::from(make_pod().tolerations(vec![tol("", "Exists", "")]).obj()),
                node: NodeInfo::from(make_node().unschedulable(true).obj()),
                want: Status::success(),
            },
            FilterCase {
                name: "toleration for NoExecute only does not tolerate the cordon",
                pod: PodInfo::from(
                    make_pod()
                        .tolerations(vec![tol(TAINT_NODE_UNSCHEDULABLE, "Exists", "NoExecute")])
                        .obj(),
                ),
                node: NodeInfo::from(make_node().unschedulable(true).obj()),
                want: rejected(),
            },
            FilterCase {
                name: "toleration with a value does not match the valueless taint",
                pod: PodInfo::from(
                    make_pod()
                        .tolerations(vec![Toleration {
                            value: Some("x".into()),
                            ..tol(TAINT_NODE_UNSCHEDULABLE, "Equal", EFFECT_NO_SCHEDULE)
                        }])
                        .obj(),
                ),
                node: NodeInfo::from(make_node().unschedulable(true).obj()),
                want: rejected(),
            },
        ];
        assert_filter(&NodeUnschedulable::default(), cases);
    }
}
