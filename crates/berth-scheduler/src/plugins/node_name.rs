//! NodeName: a pod that names its node (`spec.nodeName`) fits only that
//! node. Ported from upstream `plugins/nodename/node_name.go`.

use k8s_openapi::api::core::v1::Node;

use crate::framework::{Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Status};

/// The plugin's registry name.
pub const NAME: &str = "NodeName";

/// The Filter reason when the names differ.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The NodeName plugin (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeName;

/// `Fits`: the pod names no node, or names this one.
pub fn fits(pod: &PodInfo, node: &Node) -> bool {
    let wanted = pod.node_name();
    wanted.is_empty() || wanted == node.metadata.name.as_deref().unwrap_or("")
}

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    fn node_local(&self) -> bool {
        true
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if fits(pod, node.node()) {
            Status::success()
        } else {
            // Another node name never becomes this one: preemption cannot help.
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON).with_plugin(NAME)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{FilterCase, assert_filter};
    use berth_core::test_util::{make_node, make_pod};
    use k8s_openapi::api::core::v1::Pod;

    /// Upstream `TestNodeName`.
    #[test]
    fn node_name_filter_as_upstream() {
        let cases = vec![
            FilterCase {
                name: "no host specified",
                pod: PodInfo::from(Pod::default()),
                node: NodeInfo::from(Node::default()),
                want: Status::success(),
            },
            FilterCase {
                name: "host matches",
                pod: PodInfo::from(make_pod().node("foo").obj()),
                node: NodeInfo::from(make_node().name("foo").obj()),
                want: Status::success(),
            },
            FilterCase {
                name: "host doesn't match",
                pod: PodInfo::from(make_pod().node("bar").obj()),
                node: NodeInfo::from(make_node().name("foo").obj()),
                want: Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON).with_plugin(NAME),
            },
        ];
        assert_filter(&NodeName, cases);
    }

    #[test]
    fn empty_node_name_on_the_pod_means_any_node() {
        assert!(fits(
            &PodInfo::from(make_pod().node("").obj()),
            NodeInfo::from(make_node().name("anything").obj()).node()
        ));
    }
}
