//! Non-BestEffort pods tolerate `node.kubernetes.io/memory-pressure:NoSchedule`.
//!
//! This is berth's rule, taken from upstream's PodTolerationRestriction
//! plugin (`plugin/pkg/admission/podtolerationrestriction`), whose `Admit`
//! ends with: if the pod's QoS class is not BestEffort, merge in an
//! `Exists` toleration for the memory-pressure taint with
//! `tolerations.MergeTolerations`. No other admission plugin adds it. (The
//! DaemonSet controller adds it to every daemon pod regardless of QoS; see
//! [`super::daemon_pod_tolerations`].)
//!
//! Why: under memory pressure the kubelet's eviction manager refuses only
//! BestEffort pods (unless they tolerate the taint); Burstable and
//! Guaranteed pods are still admitted, so the scheduler must not keep them
//! off the node either. The taint therefore only repels BestEffort pods.
//!
//! berth runs this step on its own: the namespace default tolerations and
//! whitelist of PodTolerationRestriction are not implemented. Runs on
//! create and update of pods proper, as upstream's plugin does; on update
//! the merge can only add (or, like upstream, drop a toleration the new one
//! covers, which update validation then rejects).

use berth_core::toleration::{EFFECT_NO_SCHEDULE, OP_EXISTS};
use k8s_openapi::api::core::v1::{Pod, Toleration};

use super::qos::{QosClass, compute_pod_qos};
use super::tolerations::merge_tolerations;

/// `v1.TaintNodeMemoryPressure`.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";

/// Merges the memory-pressure toleration into a non-BestEffort pod.
pub fn admit(pod: &mut Pod) {
    if compute_pod_qos(pod) == QosClass::BestEffort {
        return;
    }
    let toleration = Toleration {
        key: Some(TAINT_NODE_MEMORY_PRESSURE.to_string()),
        operator: Some(OP_EXISTS.to_string()),
        effect: Some(EFFECT_NO_SCHEDULE.to_string()),
        value: None,
        toleration_seconds: None,
    };
    let spec = pod.spec.get_or_insert_with(Default::default);
    let existing = spec.tolerations.as_deref().unwrap_or_default();
    spec.tolerations = Some(merge_tolerations(existing, &[toleration]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::toleration_table::{Case, check};
    use berth_core::test_util::{make_container, make_pod, tol};

    const MP: &str = TAINT_NODE_MEMORY_PRESSURE;

    #[test]
    fn memory_pressure_toleration_by_qos_class() {
        // berth's table (upstream's PodTolerationRestriction tests mix this
        // with namespace defaults and whitelists, which berth lacks).
        let burstable = || {
            vec![
                make_container()
                    .name("c")
                    .requests(&[("cpu", "100m")])
                    .obj(),
            ]
        };
        let guaranteed = || {
            vec![
                make_container()
                    .name("c")
                    .requests(&[("cpu", "1"), ("memory", "1Gi")])
                    .limits(&[("cpu", "1"), ("memory", "1Gi")])
                    .obj(),
            ]
        };
        let best_effort = || vec![make_container().name("c").obj()];
        let mp = || tol(MP, "Exists", "", "NoSchedule");
        let cases = [
            Case {
                name: "BestEffort pod gets nothing",
                pod: make_pod().containers(best_effort()).obj(),
                want_tolerations: vec![],
            },
            Case {
                name: "BestEffort pod keeps its own tolerations untouched",
                pod: make_pod()
                    .containers(best_effort())
                    .tolerations(vec![tol("foo", "Exists", "", "")])
                    .obj(),
                want_tolerations: vec![tol("foo", "Exists", "", "")],
            },
            Case {
                name: "Burstable pod gets the toleration",
                pod: make_pod().containers(burstable()).obj(),
                want_tolerations: vec![mp()],
            },
            Case {
                name: "Guaranteed pod gets the toleration",
                pod: make_pod().containers(guaranteed()).obj(),
                want_tolerations: vec![mp()],
            },
            Case {
                name: "existing tolerations come first",
                pod: make_pod()
                    .containers(burstable())
                    .tolerations(vec![tol("foo", "Equal", "bar", "NoSchedule")])
                    .obj(),
                want_tolerations: vec![tol("foo", "Equal", "bar", "NoSchedule"), mp()],
            },
            Case {
                name: "an identical toleration is not duplicated",
                pod: make_pod()
                    .containers(burstable())
                    .tolerations(vec![mp()])
                    .obj(),
                want_tolerations: vec![mp()],
            },
            Case {
                name: "a wildcard toleration already covers it",
                pod: make_pod()
                    .containers(burstable())
                    .tolerations(vec![tol("", "Exists", "", "")])
                    .obj(),
                want_tolerations: vec![tol("", "Exists", "", "")],
            },
            Case {
                name: "a narrower toleration for the key is replaced by the Exists one",
                pod: make_pod()
                    .containers(burstable())
                    .tolerations(vec![tol(MP, "Equal", "x", "NoSchedule")])
                    .obj(),
                want_tolerations: vec![mp()],
            },
        ];
        check(admit, cases);
    }
}
