//! The scheduler's own fixtures for plugin tests: selectors and taints
//! upstream's tables share, and snapshots of nodes with their pods. The pod,
//! node and selector builders themselves are berth-core's
//! (`berth_core::test_util::{make_pod, make_node, make_selector}`).

use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use berth_core::test_util::make_selector;

use crate::framework::{CycleState, FilterPlugin, NodeInfo, PodInfo, Status};

/// `st.MakeLabelSelector().Exists("foo").Obj()`.
pub fn foo_selector() -> Option<LabelSelector> {
    Some(make_selector().exists("foo").obj())
}

/// `st.MakeLabelSelector().Exists("bar").Obj()`.
pub fn bar_selector() -> Option<LabelSelector> {
    Some(make_selector().exists("bar").obj())
}

/// The `node.kubernetes.io/unschedulable:NoSchedule` taint upstream's
/// topology spread tests put on nodes.
pub fn unschedulable_taint() -> Vec<Taint> {
    vec![Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        effect: "NoSchedule".into(),
        ..Taint::default()
    }]
}

/// `cache.NewSnapshot(pods, nodes)`: each node with the pods bound to it,
/// at its position in the list.
pub fn node_infos(nodes: &[Node], pods: &[Pod]) -> Vec<NodeInfo> {
    nodes
        .iter()
        .enumerate()
        .map(|(position, n)| {
            let name = n.metadata.name.as_deref();
            let mut info = NodeInfo::with_pods(
                std::sync::Arc::new(n.clone()),
                pods.iter()
                    .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == name),
            );
            info.set_position(position);
            info
        })
        .collect()
}

/// A row of a Filter table: the pod, the node, and the status Filter gives.
pub struct FilterCase {
    pub name: &'static str,
    pub pod: PodInfo,
    pub node: NodeInfo,
    pub want: Status,
}

/// Runs `plugin`'s Filter on each case, each in a fresh cycle.
pub fn assert_filter(plugin: &impl FilterPlugin, cases: Vec<FilterCase>) {
    for FilterCase {
        name,
        pod,
        node,
        want,
    } in cases
    {
        assert_eq!(
            plugin.filter(&CycleState::new(), &pod, &node),
            want,
            "{name}"
        );
    }
}
