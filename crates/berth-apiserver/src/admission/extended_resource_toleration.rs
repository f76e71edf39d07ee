//! ExtendedResourceToleration
//! (`plugin/pkg/admission/extendedresourcetoleration`): a pod whose
//! containers or init containers request an extended resource (say
//! `example.com/gpu`) gets an `Exists` toleration with that resource name
//! as key and effect NoSchedule.
//!
//! Why: operators taint nodes that carry special hardware with the
//! resource's name, so only pods that ask for the hardware land there;
//! this plugin spares every such pod from writing the toleration by hand.
//! Tolerations are added in sorted resource-name order with upstream's
//! `AddOrUpdateTolerationInPod`, which appends unless an identical
//! toleration exists (a wildcard does not stop it; upstream's table checks
//! that). Runs on create and update of pods proper.

use std::collections::BTreeSet;

use berth_core::resources::is_extended_resource_name;
use berth_core::toleration::{EFFECT_NO_SCHEDULE, OP_EXISTS};
use k8s_openapi::api::core::v1::{Pod, Toleration};

use super::tolerations::add_or_update_toleration;

/// Adds one toleration per extended resource requested.
pub fn admit(pod: &mut Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    // A sorted set: stable output, as upstream's `sets.String.List()`.
    let resources: BTreeSet<String> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref())
        .flat_map(|requests| requests.keys())
        .filter(|name| is_extended_resource_name(name))
        .cloned()
        .collect();
    if resources.is_empty() {
        return;
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for resource in resources {
        add_or_update_toleration(
            tolerations,
            &Toleration {
                key: Some(resource),
                operator: Some(OP_EXISTS.to_string()),
                effect: Some(EFFECT_NO_SCHEDULE.to_string()),
                value: None,
                toleration_seconds: None,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::toleration_table::{Case, check};
    use berth_core::test_util::{make_container, make_pod, tol};

    const ER1: &str = "example.com/device-ek";
    const ER2: &str = "example.com/device-do";

    #[test]
    fn admit_matches_upstream_table() {
        // Upstream TestAdmit, every row.
        let cpu = || make_container().name("c").requests(&[("cpu", "2")]).obj();
        let mem = || {
            make_container()
                .name("c")
                .requests(&[("memory", "2048")])
                .obj()
        };
        let er1 = || make_container().name("c").requests(&[(ER1, "1")]).obj();
        let er2 = || make_container().name("c").requests(&[(ER2, "2")]).obj();
        let t = |k: &str| tol(k, "Exists", "", "NoSchedule");
        let cases = [
            Case {
                name: "empty pod without any extended resources, expect no change in tolerations",
                pod: make_pod().containers(vec![]).obj(),
                want_tolerations: vec![],
            },
            Case {
                name: "pod with container without any extended resources, expect no change in tolerations",
                pod: make_pod().containers(vec![cpu()]).obj(),
                want_tolerations: vec![],
            },
            Case {
                name: "pod with init container without any extended resources, expect no change in tolerations",
                pod: make_pod()
                    .containers(vec![])
                    .init_containers(vec![mem()])
                    .obj(),
                want_tolerations: vec![],
            },
            Case {
                name: "pod with container with extended resource, expect toleration to be added",
                pod: make_pod().containers(vec![er1()]).obj(),
                want_tolerations: vec![t(ER1)],
            },
            Case {
                name: "pod with init container with extended resource, expect toleration to be added",
                pod: make_pod()
                    .containers(vec![])
                    .init_containers(vec![er2()])
                    .obj(),
                want_tolerations: vec![t(ER2)],
            },
            Case {
                name: "pod with existing tolerations and container with extended resource, expect existing tolerations to be preserved and new toleration to be added",
                pod: make_pod()
                    .containers(vec![cpu(), er1()])
                    .tolerations(vec![tol("foo", "Equal", "bar", "NoSchedule")])
                    .obj(),
                want_tolerations: vec![tol("foo", "Equal", "bar", "NoSchedule"), t(ER1)],
            },
            Case {
                name: "pod with multiple extended resources, expect multiple tolerations to be added",
                pod: make_pod()
                    .containers(vec![mem(), er1()])
                    .init_containers(vec![cpu(), er2()])
                    .obj(),
                // Sorted by key.
                want_tolerations: vec![t(ER2), t(ER1)],
            },
            Case {
                name: "pod with container requesting extended resource and existing correct toleration, expect no change in tolerations",
                pod: make_pod()
                    .containers(vec![cpu(), mem(), er1()])
                    .tolerations(vec![t(ER1)])
                    .obj(),
                want_tolerations: vec![t(ER1)],
            },
            Case {
                name: "pod with container requesting extended resource and existing toleration with the same key but different effect and value, expect existing tolerations to be preserved and new toleration to be added",
                pod: make_pod()
                    .containers(vec![cpu(), mem(), er1()])
                    .tolerations(vec![tol(ER1, "Equal", "foo", "NoExecute")])
                    .obj(),
                want_tolerations: vec![tol(ER1, "Equal", "foo", "NoExecute"), t(ER1)],
            },
            Case {
                name: "pod with wildcard toleration and container requesting extended resource, expect existing tolerations to be preserved and new toleration to be added",
                pod: make_pod()
                    .containers(vec![cpu(), mem(), er1()])
                    .tolerations(vec![tol("", "Exists", "", "")])
                    .obj(),
                want_tolerations: vec![tol("", "Exists", "", ""), t(ER1)],
            },
        ];
        check(admit, cases);
    }
}
