//! What every component reads of a node's spec: its taints and whether it
//! is cordoned, absent fields read as Kubernetes reads them (no taints, not
//! cordoned).

use k8s_openapi::api::core::v1::{Node, Taint};

/// The node's taints (none when `spec.taints` is unset).
pub fn taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

/// Whether the node is cordoned (`spec.unschedulable`).
pub fn unschedulable(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}
