//! TaintNodesByCondition (upstream plugin `TaintNodesAtCreation`,
//! `plugin/pkg/admission/nodetaint`): a node being created gets the
//! `node.kubernetes.io/not-ready:NoSchedule` taint unless it already has a
//! taint with that key and effect.
//!
//! Why: without it a new node is schedulable from the moment it registers
//! until the node lifecycle controller first sees it not ready, and pods
//! land on a node that cannot run them. The controller removes the taint
//! once the node reports Ready. Only create is handled (upstream's handler
//! is `admission.NewHandler(admission.Create)`), and only the node proper,
//! not its subresources.

use berth_core::toleration::EFFECT_NO_SCHEDULE;
use k8s_openapi::api::core::v1::{Node, Taint};

/// `v1.TaintNodeNotReady`.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";

/// Adds the not-ready taint if no taint has its key and effect (upstream
/// `MatchTaint`: key and effect, value ignored).
pub fn admit(node: &mut Node) {
    let taints = node
        .spec
        .get_or_insert_with(Default::default)
        .taints
        .get_or_insert_with(Vec::new);
    let present = taints
        .iter()
        .any(|t| t.key == TAINT_NODE_NOT_READY && t.effect == EFFECT_NO_SCHEDULE);
    if !present {
        taints.push(Taint {
            key: TAINT_NODE_NOT_READY.to_string(),
            effect: EFFECT_NO_SCHEDULE.to_string(),
            value: None,
            time_added: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_node, taint};

    #[test]
    fn node_taints_match_upstream_table() {
        // Upstream Test_nodeTaints (the rows that remain since the feature
        // gate and the config file were removed upstream).
        let not_ready = taint(TAINT_NODE_NOT_READY, "", "NoSchedule");
        struct Case {
            name: &'static str,
            node: Node,
            want_taints: Vec<Taint>,
        }
        let cases = [
            Case {
                name: "notReady taint is added on creation",
                node: make_node().name("mynode").obj(),
                want_taints: vec![not_ready.clone()],
            },
            Case {
                name: "already tainted node is not tainted again",
                node: make_node()
                    .name("mynode")
                    .taints(vec![not_ready.clone()])
                    .obj(),
                want_taints: vec![not_ready.clone()],
            },
            Case {
                name: "NotReady taint is added to an unready node as well",
                node: make_node().name("mynode").condition("Ready", "False").obj(),
                want_taints: vec![not_ready.clone()],
            },
            Case {
                name: "a not-ready taint with another value counts as present",
                node: make_node()
                    .name("mynode")
                    .taints(vec![taint(TAINT_NODE_NOT_READY, "x", "NoSchedule")])
                    .obj(),
                want_taints: vec![taint(TAINT_NODE_NOT_READY, "x", "NoSchedule")],
            },
            Case {
                name: "a not-ready NoExecute taint does not count",
                node: make_node()
                    .name("mynode")
                    .taints(vec![taint(TAINT_NODE_NOT_READY, "", "NoExecute")])
                    .obj(),
                want_taints: vec![
                    taint(TAINT_NODE_NOT_READY, "", "NoExecute"),
                    not_ready.clone(),
                ],
            },
        ];
        for Case {
            name,
            mut node,
            want_taints,
        } in cases
        {
            admit(&mut node);
            assert_eq!(
                node.spec.and_then(|s| s.taints).unwrap_or_default(),
                want_taints,
                "{name}"
            );
        }
    }
}
