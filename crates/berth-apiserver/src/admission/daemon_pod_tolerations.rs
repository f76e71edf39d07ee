//! Tolerations for DaemonSet pods: upstream's
//! `AddOrUpdateDaemonPodTolerations` (`pkg/controller/daemon/util`).
//!
//! Upstream the DaemonSet controller writes these into the pod template of
//! every pod it creates; berth applies them in admission instead, to any
//! pod being created whose controller owner reference is a DaemonSet, so
//! the result does not depend on which controller created the pod.
//!
//! Why: a daemon pod runs on every (matching) node and must keep running
//! there through node trouble: not-ready and unreachable NoExecute
//! tolerations without `tolerationSeconds` (never evicted), and NoSchedule
//! tolerations for disk, memory and PID pressure and for unschedulable
//! (cordoned) nodes; host-network pods also tolerate network-unavailable,
//! since they do not need the pod network.
//!
//! This step runs before DefaultTolerationSeconds, as upstream's order
//! implies (controller first, admission after), so a daemon pod keeps its
//! forever tolerations and gets no 300-second ones.

use k8s_openapi::api::core::v1::Pod;

pub use berth_core::well_known_taints::{
    TAINT_NODE_DISK_PRESSURE, TAINT_NODE_MEMORY_PRESSURE, TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY, TAINT_NODE_PID_PRESSURE, TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
};

/// Whether the pod's controller owner reference is a DaemonSet.
pub fn is_daemon_pod(pod: &Pod) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.kind == "DaemonSet")
}

/// berth-core's `AddOrUpdateDaemonPodTolerations`, on the pod's spec.
pub fn add_daemon_pod_tolerations(pod: &mut Pod) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    berth_core::workloads::daemon::add_or_update_daemon_pod_tolerations(spec);
}

pub fn admit(pod: &mut Pod) {
    if is_daemon_pod(pod) {
        add_daemon_pod_tolerations(pod);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::toleration_table::{Case, check};
    use berth_core::test_util::{PodWrapper, make_pod, tol, tol_secs};
    use k8s_openapi::api::core::v1::Toleration;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    /// A pod owned by `kind` `ds` (`controller`: whether as its
    /// controller).
    fn owned_by(kind: &str, controller: Option<bool>) -> PodWrapper {
        make_pod().owner_reference(OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: "ds".into(),
            uid: "uid".into(),
            controller,
            block_owner_deletion: None,
        })
    }

    fn base() -> Vec<Toleration> {
        vec![
            tol(TAINT_NODE_NOT_READY, "Exists", "", "NoExecute"),
            tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute"),
            tol(TAINT_NODE_DISK_PRESSURE, "Exists", "", "NoSchedule"),
            tol(TAINT_NODE_MEMORY_PRESSURE, "Exists", "", "NoSchedule"),
            tol(TAINT_NODE_PID_PRESSURE, "Exists", "", "NoSchedule"),
            tol(TAINT_NODE_UNSCHEDULABLE, "Exists", "", "NoSchedule"),
        ]
    }

    fn tolerations(pod: Pod) -> Vec<Toleration> {
        pod.spec.and_then(|s| s.tolerations).unwrap_or_default()
    }

    #[test]
    fn daemon_pod_tolerations_by_owner_and_network() {
        let host = owned_by("DaemonSet", Some(true)).host_network(true).obj();
        let mut with_net = base();
        with_net.push(tol(
            TAINT_NODE_NETWORK_UNAVAILABLE,
            "Exists",
            "",
            "NoSchedule",
        ));
        let cases = [
            Case {
                name: "DaemonSet controller gets the set",
                pod: owned_by("DaemonSet", Some(true)).obj(),
                want_tolerations: base(),
            },
            Case {
                name: "hostNetwork adds network-unavailable",
                pod: host,
                want_tolerations: with_net,
            },
            Case {
                name: "a non-controller DaemonSet owner does not count",
                pod: owned_by("DaemonSet", None).obj(),
                want_tolerations: vec![],
            },
            Case {
                name: "a ReplicaSet controller does not count",
                pod: owned_by("ReplicaSet", Some(true)).obj(),
                want_tolerations: vec![],
            },
            Case {
                name: "no owner",
                pod: make_pod().obj(),
                want_tolerations: vec![],
            },
        ];
        check(admit, cases);
    }

    #[test]
    fn existing_tolerations_are_kept_and_seconds_replaced() {
        // Upstream replaces a toleration with the same identity (the
        // seconds go, the daemon pod is never evicted), keeps the others.
        let mut pod = owned_by("DaemonSet", Some(true))
            .tolerations(vec![
                tol("foo", "Exists", "", ""),
                tol_secs(TAINT_NODE_NOT_READY, "Exists", "", "NoExecute", 30),
            ])
            .obj();
        admit(&mut pod);
        let got = tolerations(pod);
        assert_eq!(got[0], tol("foo", "Exists", "", ""));
        assert_eq!(got[1], tol(TAINT_NODE_NOT_READY, "Exists", "", "NoExecute"));
        assert_eq!(got.len(), 7);
    }
}
