//! Pod admission on the node, as upstream's kubelet admits a pod bound to
//! it (`pkg/kubelet/lifecycle/predicate.go`): a pod that reaches the node
//! without the scheduler (`spec.nodeName`), or after the node changed, is
//! checked again, and one that does not belong is rejected: phase Failed,
//! with upstream's reason and message.
//!
//! In upstream's order: the node shutting down (`NodeShutdown`), the
//! `kubernetes.io/os` selector and `spec.os`, then the scheduler's general
//! predicates (resource fit with every insufficient resource, required
//! node affinity) and the node's NoExecute taints. The first failure is
//! the pod's reason.

use berth_core::FeatureGates;
use berth_core::node_affinity::RequiredNodeAffinity;
use berth_core::resources::is_extended_resource_name;
use berth_core::toleration::find_matching_untolerated_taint;
use berth_scheduler::framework::NodeInfo;
use berth_scheduler::plugins::node_resources_fit::{PreFilterState, fits_request};
use berth_scheduler::plugins::{node_affinity, taint_toleration};
use berth_scheduler::resources::pod_requests;
use k8s_openapi::api::core::v1::{Node, Pod};
use std::sync::Arc;

/// The prefix upstream's `rejectPod` puts before the admission message.
pub const REJECTED_PREFIX: &str = "Pod was rejected: ";
/// Upstream's reason and message while the node shuts down.
pub const NODE_SHUTDOWN_REASON: &str = "NodeShutdown";
pub const NODE_SHUTDOWN_MESSAGE: &str = "Pod was rejected as the node is shutting down.";

/// Why a pod may not run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
}

impl Rejection {
    fn new(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Rejection {
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// The `status.message` of a rejected pod.
    pub fn status_message(&self) -> String {
        format!("{REJECTED_PREFIX}{}", self.message)
    }
}

/// `lifecycle.OutOfcpu`, `OutOfmemory`, ... : `OutOf` + the resource name.
fn out_of(resource: &str) -> String {
    format!("OutOf{resource}")
}

/// Decides whether `pod` may run on `node`, which already runs `others`
/// (the admitted, not yet terminated pods).
pub fn admit(
    node: &Node,
    pod: &Pod,
    others: &[&Pod],
    shutting_down: bool,
    gates: FeatureGates,
) -> Result<(), Rejection> {
    if shutting_down {
        return Err(Rejection::new(NODE_SHUTDOWN_REASON, NODE_SHUTDOWN_MESSAGE));
    }
    let os = std::env::consts::OS;
    let node_os = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("kubernetes.io/os"))
        .filter(|v| v.as_str() == os)
        .map_or(os, |v| v.as_str());
    if let Some(wanted) = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("kubernetes.io/os"))
        && wanted != node_os
    {
        return Err(Rejection::new(
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        ));
    }
    let spec = pod.spec.as_ref();
    if let Some(pod_os) = spec.and_then(|s| s.os.as_ref())
        && pod_os.name != os
    {
        return Err(Rejection::new(
            "PodOSNotSupported",
            "Failed to admit pod as the OS field doesn't match node OS",
        ));
    }

    let info = NodeInfo::with_pods(Arc::new(node.clone()), others.iter().copied());
    // Extended resources the node does not have are left out
    // (`removeMissingExtendedResources`): they may be cluster-level.
    let request = pod_requests(pod);
    let ignored = request
        .scalar_resources
        .keys()
        .filter(|name| {
            is_extended_resource_name(name)
                && !info.allocatable.scalar_resources.contains_key(*name)
        })
        .cloned()
        .collect();
    let insufficient = fits_request(&PreFilterState { request, ignored }, &info);
    if let Some(first) = insufficient.first() {
        return Err(Rejection::new(
            out_of(&first.resource_name),
            format!(
                "Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}",
                first.resource_name, first.requested, first.used, first.capacity
            ),
        ));
    }
    if !RequiredNodeAffinity::of_pod(pod).matches(node) {
        return Err(predicate_failure(
            node_affinity::NAME,
            node_affinity::ERR_REASON_POD,
        ));
    }
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let tolerations = spec.and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]);
    if !is_static_pod(pod)
        && find_matching_untolerated_taint(taints, tolerations, |t| t.effect == "NoExecute", gates)
            .is_some()
    {
        return Err(predicate_failure(
            taint_toleration::NAME,
            taint_toleration::ERR_REASON_NOT_MATCH,
        ));
    }
    Ok(())
}

/// `PredicateFailureError`: reason the predicate's name, message
/// `Predicate <name> failed: <description>`.
fn predicate_failure(name: &str, description: &str) -> Rejection {
    Rejection::new(name, format!("Predicate {name} failed: {description}"))
}

/// A pod from a file on the node (mirror pods carry this annotation).
fn is_static_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/config.source"))
        .is_some_and(|s| s != "api")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(taints: serde_json::Value, allocatable: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": {"kubernetes.io/os": "linux", "zone": "a"}},
            "spec": {"taints": taints},
            "status": {"allocatable": allocatable},
        }))
        .expect("node")
    }

    fn small_node() -> Node {
        node(
            json!([]),
            json!({"cpu": "1", "memory": "1Gi", "pods": "2", "ephemeral-storage": "10Gi"}),
        )
    }

    fn pod(spec: serde_json::Value) -> Pod {
        let mut spec = spec;
        if spec.get("containers").is_none() {
            spec["containers"] = json!([{"name": "c"}]);
        }
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}),
        )
        .expect("pod")
    }

    fn requesting(cpu: &str, memory: &str) -> Pod {
        pod(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}),
        )
    }

    #[test]
    fn admission_rejects_with_upstream_reasons_and_messages() {
        let no_execute = node(
            json!([{"key": "dedicated", "value": "db", "effect": "NoExecute"}]),
            json!({"cpu": "1", "memory": "1Gi", "pods": "110"}),
        );
        let no_schedule_only = node(
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
            json!({"cpu": "1", "memory": "1Gi", "pods": "110"}),
        );
        let busy = requesting("600m", "100Mi");
        type Case<'a> = (
            &'a str,
            Node,
            Pod,
            Vec<&'a Pod>,
            bool,
            Option<(&'a str, &'a str)>,
        );
        let cases: Vec<Case> = vec![
            (
                "a pod that fits is admitted",
                small_node(),
                requesting("500m", "100Mi"),
                vec![],
                false,
                None,
            ),
            (
                "too much cpu",
                small_node(),
                requesting("2", "100Mi"),
                vec![],
                false,
                Some((
                    "OutOfcpu",
                    "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000",
                )),
            ),
            (
                "cpu used by the pods already there",
                small_node(),
                requesting("500m", "100Mi"),
                vec![&busy],
                false,
                Some((
                    "OutOfcpu",
                    "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
                )),
            ),
            (
                "too much memory",
                small_node(),
                requesting("100m", "2Gi"),
                vec![],
                false,
                Some((
                    "OutOfmemory",
                    "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824",
                )),
            ),
            (
                "the pod count comes first",
                small_node(),
                requesting("2", "100Mi"),
                vec![&busy, &busy],
                false,
                Some((
                    "OutOfpods",
                    "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
                )),
            ),
            (
                "an extended resource the node lacks is ignored",
                small_node(),
                pod(
                    json!({"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}]}),
                ),
                vec![],
                false,
                None,
            ),
            (
                "an untolerated NoExecute taint",
                no_execute.clone(),
                pod(json!({})),
                vec![],
                false,
                Some((
                    "TaintToleration",
                    "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
                )),
            ),
            (
                "a tolerated NoExecute taint",
                no_execute.clone(),
                pod(
                    json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}]}),
                ),
                vec![],
                false,
                None,
            ),
            (
                "NoSchedule taints are the scheduler's business, not the node's",
                no_schedule_only,
                pod(json!({})),
                vec![],
                false,
                None,
            ),
            (
                "node selector that does not match",
                small_node(),
                pod(json!({"nodeSelector": {"zone": "b"}})),
                vec![],
                false,
                Some((
                    "NodeAffinity",
                    "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
                )),
            ),
            (
                "pod OS field for another OS",
                small_node(),
                pod(json!({"os": {"name": "windows"}})),
                vec![],
                false,
                Some((
                    "PodOSNotSupported",
                    "Failed to admit pod as the OS field doesn't match node OS",
                )),
            ),
            (
                "a node shutting down admits nothing",
                small_node(),
                pod(json!({})),
                vec![],
                true,
                Some((
                    "NodeShutdown",
                    "Pod was rejected as the node is shutting down.",
                )),
            ),
        ];
        for (name, node, pod, others, shutting_down, want) in cases {
            let got = admit(&node, &pod, &others, shutting_down, FeatureGates::default());
            let got = got.err().map(|r| (r.reason, r.message));
            let want = want.map(|(r, m)| (r.to_string(), m.to_string()));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn the_status_message_is_prefixed_as_upstream() {
        let r = Rejection::new("TaintToleration", "x");
        assert_eq!(r.status_message(), "Pod was rejected: x");
    }
}
