//! The facts about a Pod that every client asks: its key, the node it is
//! bound to, whether it has finished.

use k8s_openapi::api::core::v1::Pod;

use crate::object_key::ObjectKey;

/// A pod's namespace and name.
pub type PodKey = ObjectKey;

/// The pod's key.
pub fn pod_key(pod: &Pod) -> PodKey {
    ObjectKey::of_meta(&pod.metadata)
}

/// The node the pod is bound to (`spec.nodeName`), if any.
pub fn bound_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.node_name.as_deref())
        .filter(|node| !node.is_empty())
}

/// Whether the pod has finished for good: phase `Succeeded` or `Failed`
/// (upstream's `podutil.IsPodTerminal`). Its containers no longer run and
/// it no longer counts against its node.
pub fn is_terminal(pod: &Pod) -> bool {
    is_terminal_phase(pod.status.as_ref().and_then(|s| s.phase.as_deref()))
}

/// [`is_terminal`] for a phase alone.
pub fn is_terminal_phase(phase: Option<&str>) -> bool {
    matches!(phase, Some("Succeeded" | "Failed"))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(node: Option<&str>, phase: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some("web".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(Into::into),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: phase.map(Into::into),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn pod_facts() {
        struct Case {
            name: &'static str,
            pod: Pod,
            bound: Option<&'static str>,
            terminal: bool,
        }
        for case in [
            Case {
                name: "pending and unbound",
                pod: pod(None, Some("Pending")),
                bound: None,
                terminal: false,
            },
            Case {
                name: "an empty nodeName is unbound",
                pod: pod(Some(""), None),
                bound: None,
                terminal: false,
            },
            Case {
                name: "running on a node",
                pod: pod(Some("n1"), Some("Running")),
                bound: Some("n1"),
                terminal: false,
            },
            Case {
                name: "succeeded",
                pod: pod(Some("n1"), Some("Succeeded")),
                bound: Some("n1"),
                terminal: true,
            },
            Case {
                name: "failed",
                pod: pod(Some("n1"), Some("Failed")),
                bound: Some("n1"),
                terminal: true,
            },
        ] {
            assert_eq!(bound_node(&case.pod), case.bound, "{}", case.name);
            assert_eq!(is_terminal(&case.pod), case.terminal, "{}", case.name);
            assert_eq!(
                pod_key(&case.pod).to_string(),
                "default/web",
                "{}",
                case.name
            );
        }
    }
}
