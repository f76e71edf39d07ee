//! The facts about a Pod that every client asks: its key, the node it is
//! bound to, whether it has finished, whether it is ready and available
//! (upstream's `pkg/api/v1/pod` helpers and `controller.IsPodActive`).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodCondition};

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

/// The pod's `Ready` condition, if it has one (`GetPodReadyCondition`).
pub fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
}

/// `IsPodReady`: the `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// `IsPodAvailable`: ready, and ready for longer than `min_ready_seconds`
/// at `now` (strictly: upstream's `Before`). With `min_ready_seconds` 0
/// any ready pod is available; otherwise a ready condition without a
/// transition time never is.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    Readiness::of(pod).is_available(min_ready_seconds, now)
}

/// What [`is_ready`] and [`is_available`] read of a pod, kept apart from
/// it: a controller that counts the same pods sync after sync keeps this
/// per pod version instead of reading every pod again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    NotReady,
    /// `Ready` is `True`, since its transition time (if it has one).
    ReadySince(Option<Timestamp>),
}

impl Readiness {
    pub fn of(pod: &Pod) -> Readiness {
        match ready_condition(pod).filter(|c| c.status == "True") {
            Some(ready) => Readiness::ReadySince(ready.last_transition_time.as_ref().map(|t| t.0)),
            None => Readiness::NotReady,
        }
    }

    pub fn is_ready(self) -> bool {
        matches!(self, Readiness::ReadySince(_))
    }

    /// [`is_available`] of the pod this was read from.
    pub fn is_available(self, min_ready_seconds: i32, now: Timestamp) -> bool {
        let Readiness::ReadySince(since) = self else {
            return false;
        };
        if min_ready_seconds == 0 {
            return true;
        }
        since.is_some_and(|since| {
            since
                .checked_add(SignedDuration::from_secs(i64::from(min_ready_seconds)))
                .is_ok_and(|available_at| available_at < now)
        })
    }
}

/// Whether the pod has been asked to go: it has a deletion timestamp.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `controller.IsPodActive`: not finished and not being deleted; the pods
/// a workload counts as its replicas.
pub fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && !is_terminating(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::make_pod;
    use k8s_openapi::api::core::v1::PodStatus;

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

    fn ready_since(now: Timestamp, ready: bool, seconds_before: i64) -> Pod {
        Pod {
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    last_transition_time: Some(
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            now - SignedDuration::from_secs(seconds_before),
                        ),
                    ),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Upstream `TestIsPodAvailable` (`pkg/api/v1/pod/util_test.go`).
    #[test]
    fn available_once_ready_for_min_ready_seconds() {
        let now = crate::test_util::t(0);
        struct Case {
            name: &'static str,
            pod: Pod,
            min_ready_seconds: i32,
            want: bool,
        }
        for case in [
            Case {
                name: "not ready",
                pod: ready_since(now, false, 0),
                min_ready_seconds: 0,
                want: false,
            },
            Case {
                name: "ready just now, minReadySeconds 1",
                pod: ready_since(now, true, 0),
                min_ready_seconds: 1,
                want: false,
            },
            Case {
                name: "ready, minReadySeconds 0",
                pod: ready_since(now, true, 0),
                min_ready_seconds: 0,
                want: true,
            },
            Case {
                name: "ready for 51 s, minReadySeconds 50",
                pod: ready_since(now, true, 51),
                min_ready_seconds: 50,
                want: true,
            },
            Case {
                name: "ready for exactly minReadySeconds is not yet available",
                pod: ready_since(now, true, 50),
                min_ready_seconds: 50,
                want: false,
            },
        ] {
            assert_eq!(
                is_available(&case.pod, case.min_ready_seconds, now),
                case.want,
                "{}",
                case.name
            );
            assert_eq!(
                is_ready(&case.pod),
                case.name != "not ready",
                "{}",
                case.name
            );
        }
    }
}
