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
    use berth_core::test_util::taint;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(taints: Option<Vec<Taint>>, status: Option<NodeStatus>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("mynode".into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints,
                ..Default::default()
            }),
            status,
        }
    }

    #[test]
    fn node_taints_match_upstream_table() {
        // Upstream Test_nodeTaints (the rows that remain since the feature
        // gate and the config file were removed upstream).
        let not_ready = taint(TAINT_NODE_NOT_READY, "", "NoSchedule");
        let unready_status = NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "False".into(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let cases = [
            (
                "notReady taint is added on creation",
                node(None, None),
                vec![not_ready.clone()],
            ),
            (
                "already tainted node is not tainted again",
                node(Some(vec![not_ready.clone()]), None),
                vec![not_ready.clone()],
            ),
            (
                "NotReady taint is added to an unready node as well",
                node(None, Some(unready_status)),
                vec![not_ready.clone()],
            ),
            (
                "a not-ready taint with another value counts as present",
                node(
                    Some(vec![taint(TAINT_NODE_NOT_READY, "x", "NoSchedule")]),
                    None,
                ),
                vec![taint(TAINT_NODE_NOT_READY, "x", "NoSchedule")],
            ),
            (
                "a not-ready NoExecute taint does not count",
                node(
                    Some(vec![taint(TAINT_NODE_NOT_READY, "", "NoExecute")]),
                    None,
                ),
                vec![
                    taint(TAINT_NODE_NOT_READY, "", "NoExecute"),
                    not_ready.clone(),
                ],
            ),
        ];
        for (name, mut node, want) in cases {
            admit(&mut node);
            assert_eq!(
                node.spec.and_then(|s| s.taints).unwrap_or_default(),
                want,
                "{name}"
            );
        }
    }
}
