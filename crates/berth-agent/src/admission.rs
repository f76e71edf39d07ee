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
use berth_scheduler::resources::PodUsage;
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

/// Decides whether `pod` may run on `node`, which already runs pods
/// requesting `others` (the admitted, not yet terminated pods).
pub fn admit(
    node: &Arc<Node>,
    pod: &Pod,
    others: &[&PodUsage],
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

    // Only the requests of the pods already admitted count here: they are
    // added up without a copy of any pod (or of the node).
    let mut info = NodeInfo::new(node.clone());
    for other in others {
        info.add_usage(other);
    }
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
    use berth_core::test_util::{PodWrapper, make_node, make_pod, taint, tol};
    use k8s_openapi::api::core::v1::PodOS;

    /// Node n1 (linux, zone a) with these taints and allocatable.
    fn n1(taints: Vec<k8s_openapi::api::core::v1::Taint>, allocatable: &[(&str, &str)]) -> Node {
        make_node()
            .name("n1")
            .label("kubernetes.io/os", "linux")
            .label("zone", "a")
            .taints(taints)
            .allocatable(allocatable)
            .obj()
    }

    fn small_node() -> Node {
        n1(
            vec![],
            &[
                ("cpu", "1"),
                ("memory", "1Gi"),
                ("pods", "2"),
                ("ephemeral-storage", "10Gi"),
            ],
        )
    }

    fn plain() -> PodWrapper {
        make_pod().name("p").namespace("default")
    }

    fn requesting(cpu: &str, memory: &str) -> Pod {
        plain().req(&[("cpu", cpu), ("memory", memory)]).obj()
    }

    #[test]
    fn admission_rejects_with_upstream_reasons_and_messages() {
        let one_cpu = [("cpu", "1"), ("memory", "1Gi"), ("pods", "110")];
        let no_execute = n1(vec![taint("dedicated", "db", "NoExecute")], &one_cpu);
        let no_schedule_only = n1(vec![taint("dedicated", "db", "NoSchedule")], &one_cpu);
        let busy = requesting("600m", "100Mi");
        let windows = {
            let mut pod = plain();
            pod.0.spec.get_or_insert_default().os = Some(PodOS {
                name: "windows".into(),
            });
            pod.obj()
        };
        struct Case<'a> {
            name: &'a str,
            node: Node,
            pod: Pod,
            others: Vec<&'a Pod>,
            shutting_down: bool,
            /// The rejection's reason and message; `None`: admitted.
            want: Option<(&'a str, &'a str)>,
        }
        let cases = vec![
            Case {
                name: "a pod that fits is admitted",
                node: small_node(),
                pod: requesting("500m", "100Mi"),
                others: vec![],
                shutting_down: false,
                want: None,
            },
            Case {
                name: "too much cpu",
                node: small_node(),
                pod: requesting("2", "100Mi"),
                others: vec![],
                shutting_down: false,
                want: Some((
                    "OutOfcpu",
                    "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000",
                )),
            },
            Case {
                name: "cpu used by the pods already there",
                node: small_node(),
                pod: requesting("500m", "100Mi"),
                others: vec![&busy],
                shutting_down: false,
                want: Some((
                    "OutOfcpu",
                    "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
                )),
            },
            Case {
                name: "too much memory",
                node: small_node(),
                pod: requesting("100m", "2Gi"),
                others: vec![],
                shutting_down: false,
                want: Some((
                    "OutOfmemory",
                    "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824",
                )),
            },
            Case {
                name: "the pod count comes first",
                node: small_node(),
                pod: requesting("2", "100Mi"),
                others: vec![&busy, &busy],
                shutting_down: false,
                want: Some((
                    "OutOfpods",
                    "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
                )),
            },
            Case {
                name: "an extended resource the node lacks is ignored",
                node: small_node(),
                pod: plain().req(&[("example.com/gpu", "1")]).obj(),
                others: vec![],
                shutting_down: false,
                want: None,
            },
            Case {
                name: "an untolerated NoExecute taint",
                node: no_execute.clone(),
                pod: plain().obj(),
                others: vec![],
                shutting_down: false,
                want: Some((
                    "TaintToleration",
                    "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
                )),
            },
            Case {
                name: "a tolerated NoExecute taint",
                node: no_execute.clone(),
                pod: plain()
                    .toleration(tol("dedicated", "Equal", "db", "NoExecute"))
                    .obj(),
                others: vec![],
                shutting_down: false,
                want: None,
            },
            Case {
                name: "NoSchedule taints are the scheduler's business, not the node's",
                node: no_schedule_only,
                pod: plain().obj(),
                others: vec![],
                shutting_down: false,
                want: None,
            },
            Case {
                name: "node selector that does not match",
                node: small_node(),
                pod: plain().node_selector(&[("zone", "b")]).obj(),
                others: vec![],
                shutting_down: false,
                want: Some((
                    "NodeAffinity",
                    "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
                )),
            },
            Case {
                name: "pod OS field for another OS",
                node: small_node(),
                pod: windows,
                others: vec![],
                shutting_down: false,
                want: Some((
                    "PodOSNotSupported",
                    "Failed to admit pod as the OS field doesn't match node OS",
                )),
            },
            Case {
                name: "a node shutting down admits nothing",
                node: small_node(),
                pod: plain().obj(),
                others: vec![],
                shutting_down: true,
                want: Some((
                    "NodeShutdown",
                    "Pod was rejected as the node is shutting down.",
                )),
            },
        ];
        for case in cases {
            let others: Vec<PodUsage> = case.others.iter().map(|p| PodUsage::of(p)).collect();
            let got = admit(
                &Arc::new(case.node),
                &case.pod,
                &others.iter().collect::<Vec<_>>(),
                case.shutting_down,
                FeatureGates::default(),
            );
            let got = got.err().map(|r| (r.reason, r.message));
            let want = case.want.map(|(r, m)| (r.to_string(), m.to_string()));
            assert_eq!(got, want, "{}", case.name);
        }
    }

    #[test]
    fn the_status_message_is_prefixed_as_upstream() {
        let r = Rejection::new("TaintToleration", "x");
        assert_eq!(r.status_message(), "Pod was rejected: x");
    }
}
