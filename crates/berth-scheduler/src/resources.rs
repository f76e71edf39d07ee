//! How much a pod requests, in the scheduler's units: berth-core's
//! [`berth_core::resources`] (upstream's `PodRequests` and resource-name
//! rules) converted with the scheduler's `framework.Resource` rules (`Add`,
//! `SetMaxResource`): which resource names count and in which unit.

use std::collections::BTreeMap;

use berth_core::resources::{
    PodResourcesOptions, RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, RESOURCE_PODS,
    ResourceList, is_scalar_resource_name, parse_resource_list, pod_request_list,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

/// Amounts of resources in the scheduler's units (upstream's
/// `framework.Resource`): CPU in millicores, everything else in whole units
/// (bytes for memory and storage, counts for extended resources).
///
/// `pods` means the node's allowed pod number in `NodeInfo::allocatable`
/// (upstream's `AllowedPodNumber`) and the number of pods counted in
/// `NodeInfo::requested` (upstream's `len(nodeInfo.Pods)`); a pod's own
/// request for the `pods` resource is never counted, as upstream.
///
/// This module fills it from resource lists and pod specs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: usize,
    /// Scalar resources by name: extended resources (`example.com/gpu`),
    /// `hugepages-*`, `attachable-volumes-*` and prefixed native resources
    /// (`kubernetes.io/...`); see [`berth_core::resources::is_scalar_resource_name`].
    pub scalar_resources: BTreeMap<String, i64>,
}

impl Resource {
    /// Adds `other`'s amounts (saturating, so hostile inputs cannot wrap).
    pub fn add(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.pods = self.pods.saturating_add(other.pods);
        for (name, value) in &other.scalar_resources {
            let entry = self.scalar_resources.entry(name.clone()).or_default();
            *entry = entry.saturating_add(*value);
        }
    }

    /// The amount of scalar resource `name`, zero when absent.
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar_resources.get(name).copied().unwrap_or(0)
    }

    /// Takes `other`'s amounts away (saturating); the inverse of [`Resource::add`]
    /// for amounts that were added before.
    pub fn sub(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.pods = self.pods.saturating_sub(other.pods);
        for (name, value) in &other.scalar_resources {
            if let Some(entry) = self.scalar_resources.get_mut(name) {
                *entry = entry.saturating_sub(*value);
            }
        }
    }
}

/// What one pod adds to a node's [`crate::framework::NodeInfo`]: its requests (with `pods`
/// one) and its non-zero cpu and memory requests. Computed once per pod, so
/// the cache can add and remove a pod without parsing its quantities again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodUsage {
    pub requested: Resource,
    pub non_zero_milli_cpu: i64,
    pub non_zero_memory: i64,
}

impl PodUsage {
    pub fn of(pod: &Pod) -> Self {
        let mut requested = pod_requests(pod);
        requested.pods = 1;
        let non_zero = pod_requests_non_zero(pod);
        PodUsage {
            requested,
            non_zero_milli_cpu: non_zero.milli_cpu,
            non_zero_memory: non_zero.memory,
        }
    }
}

/// A resource list in the scheduler's units, following `Resource.Add` on an
/// empty `Resource`: cpu in millicores, `pods` as the allowed pod number,
/// scalar resources by name, other names ignored. Negative amounts (which
/// validation rejects) count as zero, so they cannot inflate a node.
/// Unparseable quantities count as zero.
pub fn resource_list_to_resource(list: Option<&BTreeMap<String, K8sQuantity>>) -> Resource {
    to_resource(&parse_resource_list(list), true)
}

/// `SetMaxResource` on an empty `Resource` (with `count_pods` false) or
/// `Add` (with it true), clamping at zero.
fn to_resource(list: &ResourceList, count_pods: bool) -> Resource {
    let mut r = Resource::default();
    for (name, q) in list {
        match name.as_str() {
            RESOURCE_CPU => r.milli_cpu = q.milli_value().max(0),
            RESOURCE_MEMORY => r.memory = q.value().max(0),
            RESOURCE_EPHEMERAL_STORAGE => r.ephemeral_storage = q.value().max(0),
            RESOURCE_PODS => {
                if count_pods {
                    r.pods = usize::try_from(q.value().max(0)).unwrap_or(usize::MAX);
                }
            }
            other => {
                if is_scalar_resource_name(other) {
                    r.scalar_resources
                        .insert(other.to_string(), q.value().max(0));
                }
            }
        }
    }
    r
}

/// What the pod asks of a node (upstream's `computePodResourceRequest`):
/// [`pod_request_list`] with pod-level resources honoured, converted with
/// `SetMaxResource`. A request for `pods` is not counted (`pods` is 0);
/// scalar resources requested with zero keep their zero entry, as upstream.
pub fn pod_requests(pod: &Pod) -> Resource {
    pod_requests_with(pod, PodResourcesOptions::default())
}

/// [`pod_requests`] with explicit options.
pub fn pod_requests_with(pod: &Pod, opts: PodResourcesOptions) -> Resource {
    to_resource(&pod_request_list(pod, opts), false)
}

/// The pod's requests with the scheduler's non-zero defaults for
/// containers that request no cpu or memory (100m, 200Mi): what scoring
/// counts, so that best-effort pods still spread across nodes.
///
/// Upstream's `NodeInfo` bookkeeping differs in one corner this port does
/// not copy: for pods with pod-level requests it defaults a container's cpu
/// or memory only when the pod-level and container totals lack it entirely.
pub fn pod_requests_non_zero(pod: &Pod) -> Resource {
    pod_requests_with(
        pod,
        PodResourcesOptions {
            pod_level_resources: true,
            non_zero_defaults: true,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::resources::{CONTAINER_RESTART_POLICY_ALWAYS, DEFAULT_MEMORY_REQUEST};
    use berth_core::test_util::{make_container, make_pod};
    use k8s_openapi::api::core::v1::{Container, ResourceRequirements};

    fn list(entries: &[(&str, &str)]) -> BTreeMap<String, K8sQuantity> {
        entries
            .iter()
            .map(|(n, q)| (n.to_string(), K8sQuantity(q.to_string())))
            .collect()
    }

    /// Container `c` requesting `requests`; a sidecar (as an init
    /// container) restarts `Always`.
    fn container(requests: &[(&str, &str)], sidecar: bool) -> Container {
        let container = make_container().name("c").requests(requests);
        if sidecar {
            container.restart_policy(CONTAINER_RESTART_POLICY_ALWAYS)
        } else {
            container
        }
        .obj()
    }

    fn cpu_mem(r: &Resource) -> (i64, i64) {
        (r.milli_cpu, r.memory)
    }

    /// The worked example in upstream's `computePodResourceRequest` doc.
    #[test]
    fn init_containers_take_the_max_and_regular_containers_sum() {
        let p = make_pod()
            .containers(vec![
                container(&[("cpu", "2"), ("memory", "1G")], false),
                container(&[("cpu", "1"), ("memory", "1G")], false),
            ])
            .init_containers(vec![
                container(&[("cpu", "2"), ("memory", "1G")], false),
                container(&[("cpu", "2"), ("memory", "3G")], false),
            ])
            .obj();
        assert_eq!(cpu_mem(&pod_requests(&p)), (3000, 3_000_000_000));
    }

    /// Sidecar rows after upstream `TestPodRequests` (component-helpers).
    #[test]
    fn restartable_init_containers_are_added_and_stack_under_later_init_containers() {
        struct Case {
            name: &'static str,
            pod: Pod,
            want_milli_cpu: i64,
        }
        let cases = [
            Case {
                name: "restartable init container adds to the regular containers",
                pod: make_pod()
                    .containers(vec![container(&[("cpu", "1")], false)])
                    .init_containers(vec![container(&[("cpu", "1")], true)])
                    .obj(),
                want_milli_cpu: 2000,
            },
            Case {
                name: "init container after a sidecar needs its own request plus the sidecar's",
                pod: make_pod()
                    .containers(vec![container(&[("cpu", "1")], false)])
                    .init_containers(vec![
                        container(&[("cpu", "1")], true),
                        container(&[("cpu", "2")], false),
                    ])
                    .obj(),
                want_milli_cpu: 3000,
            },
            Case {
                name: "init container before a sidecar runs alone",
                pod: make_pod()
                    .containers(vec![container(&[("cpu", "1")], false)])
                    .init_containers(vec![
                        container(&[("cpu", "2")], false),
                        container(&[("cpu", "1")], true),
                    ])
                    .obj(),
                want_milli_cpu: 2000,
            },
            Case {
                name: "multiple sidecars accumulate",
                pod: make_pod()
                    .containers(vec![container(&[("cpu", "1")], false)])
                    .init_containers(vec![
                        container(&[("cpu", "1")], true),
                        container(&[("cpu", "1")], true),
                        container(&[("cpu", "3")], false),
                    ])
                    .obj(),
                // max(1 + 1 + 1, 1 + 1 + 3) = 5
                want_milli_cpu: 5000,
            },
        ];
        for case in cases {
            assert_eq!(
                pod_requests(&case.pod).milli_cpu,
                case.want_milli_cpu,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn overhead_is_added_and_pod_level_requests_replace_the_container_sum() {
        let mut p = make_pod()
            .containers(vec![container(&[("cpu", "1"), ("memory", "1")], false)])
            .overhead(&[("cpu", "3m"), ("memory", "13")])
            .obj();
        assert_eq!(cpu_mem(&pod_requests(&p)), (1003, 14));
        if let Some(spec) = p.spec.as_mut() {
            spec.resources = Some(ResourceRequirements {
                requests: Some(list(&[("cpu", "7"), ("example.com/x", "9")])),
                ..ResourceRequirements::default()
            });
        }
        let r = pod_requests(&p);
        // cpu comes from the pod level; extended resources are not
        // supported there and are ignored; overhead still adds.
        assert_eq!(cpu_mem(&r), (7003, 14));
        assert!(r.scalar_resources.is_empty());
        let without = pod_requests_with(
            &p,
            PodResourcesOptions {
                pod_level_resources: false,
                non_zero_defaults: false,
            },
        );
        assert_eq!(cpu_mem(&without), (1003, 14));
    }

    #[test]
    fn non_zero_defaults_fill_only_missing_entries() {
        let p = make_pod()
            .containers(vec![
                container(&[], false),
                container(&[("cpu", "0"), ("memory", "0")], false),
                container(&[("cpu", "1")], false),
            ])
            .obj();
        let r = pod_requests_non_zero(&p);
        assert_eq!(
            cpu_mem(&r),
            (100 + 1000, 2 * DEFAULT_MEMORY_REQUEST),
            "explicit zeros stay zero"
        );
        // A pod without containers requests nothing, even non-zero.
        assert_eq!(
            cpu_mem(&pod_requests_non_zero(
                &make_pod().containers(vec![]).init_containers(vec![]).obj()
            )),
            (0, 0)
        );
    }

    #[test]
    fn quantities_are_summed_exactly_before_rounding() {
        let p = make_pod()
            .containers(vec![
                container(&[("memory", "500m")], false),
                container(&[("memory", "500m")], false),
            ])
            .obj();
        assert_eq!(pod_requests(&p).memory, 1);
    }

    #[test]
    fn allocatable_counts_pods_and_treats_garbage_as_zero() {
        let r = resource_list_to_resource(Some(&list(&[
            ("cpu", "1.5"),
            ("memory", "1Ki"),
            ("pods", "110"),
            ("ephemeral-storage", "not-a-quantity"),
            ("hugepages-2Mi", "4Mi"),
            ("storage", "1Gi"),
            ("example.com/gpu", "-3"),
        ])));
        assert_eq!(r.milli_cpu, 1500);
        assert_eq!(r.memory, 1024);
        assert_eq!(r.pods, 110);
        assert_eq!(r.ephemeral_storage, 0);
        assert_eq!(r.scalar("hugepages-2Mi"), 4 * 1024 * 1024);
        assert_eq!(
            r.scalar("storage"),
            0,
            "unprefixed non-native names are not scalar"
        );
        assert_eq!(r.scalar("example.com/gpu"), 0, "negative counts as zero");
    }

    #[test]
    fn pods_without_spec_request_nothing() {
        assert_eq!(pod_requests(&Pod::default()), Resource::default());
        assert_eq!(pod_requests_non_zero(&Pod::default()), Resource::default());
    }
}
