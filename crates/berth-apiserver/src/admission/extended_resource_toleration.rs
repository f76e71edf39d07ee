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
    use crate::admission::test_pods::container_with;
    use berth_core::test_util::tol;
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    const ER1: &str = "example.com/device-ek";
    const ER2: &str = "example.com/device-do";

    fn pod(containers: Vec<Container>, init: Vec<Container>, tolerations: Vec<Toleration>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers,
                init_containers: (!init.is_empty()).then_some(init),
                tolerations: (!tolerations.is_empty()).then_some(tolerations),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn admit_matches_upstream_table() {
        // Upstream TestAdmit, every row.
        let cpu = || container_with(&[("cpu", "2")], &[]);
        let mem = || container_with(&[("memory", "2048")], &[]);
        let er1 = || container_with(&[(ER1, "1")], &[]);
        let er2 = || container_with(&[(ER2, "2")], &[]);
        let t = |k: &str| tol(k, "Exists", "", "NoSchedule");
        let cases: Vec<(&str, Pod, Vec<Toleration>)> = vec![
            (
                "empty pod without any extended resources, expect no change in tolerations",
                pod(vec![], vec![], vec![]),
                vec![],
            ),
            (
                "pod with container without any extended resources, expect no change in tolerations",
                pod(vec![cpu()], vec![], vec![]),
                vec![],
            ),
            (
                "pod with init container without any extended resources, expect no change in tolerations",
                pod(vec![], vec![mem()], vec![]),
                vec![],
            ),
            (
                "pod with container with extended resource, expect toleration to be added",
                pod(vec![er1()], vec![], vec![]),
                vec![t(ER1)],
            ),
            (
                "pod with init container with extended resource, expect toleration to be added",
                pod(vec![], vec![er2()], vec![]),
                vec![t(ER2)],
            ),
            (
                "pod with existing tolerations and container with extended resource, expect existing tolerations to be preserved and new toleration to be added",
                pod(
                    vec![cpu(), er1()],
                    vec![],
                    vec![tol("foo", "Equal", "bar", "NoSchedule")],
                ),
                vec![tol("foo", "Equal", "bar", "NoSchedule"), t(ER1)],
            ),
            (
                "pod with multiple extended resources, expect multiple tolerations to be added",
                pod(vec![mem(), er1()], vec![cpu(), er2()], vec![]),
                // Sorted by key.
                vec![t(ER2), t(ER1)],
            ),
            (
                "pod with container requesting extended resource and existing correct toleration, expect no change in tolerations",
                pod(vec![cpu(), mem(), er1()], vec![], vec![t(ER1)]),
                vec![t(ER1)],
            ),
            (
                "pod with container requesting extended resource and existing toleration with the same key but different effect and value, expect existing tolerations to be preserved and new toleration to be added",
                pod(
                    vec![cpu(), mem(), er1()],
                    vec![],
                    vec![tol(ER1, "Equal", "foo", "NoExecute")],
                ),
                vec![tol(ER1, "Equal", "foo", "NoExecute"), t(ER1)],
            ),
            (
                "pod with wildcard toleration and container requesting extended resource, expect existing tolerations to be preserved and new toleration to be added",
                pod(
                    vec![cpu(), mem(), er1()],
                    vec![],
                    vec![tol("", "Exists", "", "")],
                ),
                vec![tol("", "Exists", "", ""), t(ER1)],
            ),
        ];
        for (name, mut pod, want) in cases {
            admit(&mut pod);
            assert_eq!(
                pod.spec.and_then(|s| s.tolerations).unwrap_or_default(),
                want,
                "{name}"
            );
        }
    }
}
