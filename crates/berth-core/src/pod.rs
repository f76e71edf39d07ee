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
    use super::*;
    use crate::test_util::make_pod;

    fn web() -> crate::test_util::PodWrapper {
        make_pod().namespace("default").name("web")
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
                pod: web().phase("Pending").obj(),
                bound: None,
                terminal: false,
            },
            Case {
                name: "an empty nodeName is unbound",
                pod: web().node("").obj(),
                bound: None,
                terminal: false,
            },
            Case {
                name: "running on a node",
                pod: web().node("n1").phase("Running").obj(),
                bound: Some("n1"),
                terminal: false,
            },
            Case {
                name: "succeeded",
                pod: web().node("n1").phase("Succeeded").obj(),
                bound: Some("n1"),
                terminal: true,
            },
            Case {
                name: "failed",
                pod: web().node("n1").phase("Failed").obj(),
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
