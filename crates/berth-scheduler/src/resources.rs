//! How much a pod requests, in the scheduler's units.
//!
//! Ports three upstream pieces that NodeResourcesFit and `NodeInfo` rest on:
//!
//! - `PodRequests` from `k8s.io/component-helpers/resource/helpers.go`: the
//!   sum of the regular containers' requests; each regular init container
//!   runs alone (next to the restartable "sidecar" init containers started
//!   before it), so the pod needs the maximum of those; sidecars run for the
//!   pod's whole life, so they are added to the sum; pod-level requests
//!   (`spec.resources`, for cpu, memory and `hugepages-*`) replace the
//!   container aggregate; `spec.overhead` is added on top.
//! - The scheduler's `framework.Resource` conversion rules (`Add`,
//!   `SetMaxResource`): which resource names count and in which unit.
//! - The resource-name predicates of `pkg/apis/core/v1/helper/helpers.go`
//!   and `pkg/scheduler/util` (`IsExtendedResourceName`,
//!   `IsScalarResourceName`, ...), and the non-zero defaults
//!   (`DefaultMilliCPURequest`, `DefaultMemoryRequest`) that scoring uses
//!   for pods that request nothing.
//!
//! Sums are computed on exact [`Quantity`] values and converted at the end,
//! as upstream does, so `0.5` + `0.5` bytes is one byte, not two. An
//! unparseable quantity counts as absent: the API server validates
//! quantities on write, and the scheduler must not fail on data it reads.
//! Not ported: `UseStatusResources` (in-place resize, only relevant to pods
//! already running) and the `ContainerFn`/`Reuse` hooks.

use std::collections::BTreeMap;

use berth_core::quantity::Quantity;
use berth_core::validation::names::is_qualified_name;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use crate::framework::Resource;

pub const RESOURCE_CPU: &str = "cpu";
pub const RESOURCE_MEMORY: &str = "memory";
pub const RESOURCE_PODS: &str = "pods";
pub const RESOURCE_EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// `v1.ResourceHugePagesPrefix`.
pub const HUGE_PAGES_PREFIX: &str = "hugepages-";
/// `v1.ResourceAttachableVolumesPrefix`.
pub const ATTACHABLE_VOLUMES_PREFIX: &str = "attachable-volumes-";
/// `v1.ResourceDefaultNamespacePrefix`: names containing it are native.
pub const DEFAULT_NAMESPACE_PREFIX: &str = "kubernetes.io/";
/// `v1.DefaultResourceRequestsPrefix`, the quota prefix for requests.
pub const DEFAULT_RESOURCE_REQUESTS_PREFIX: &str = "requests.";

/// `schedutil.DefaultMilliCPURequest`: 0.1 core, assumed for scoring when a
/// container requests no CPU.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// `schedutil.DefaultMemoryRequest`: 200 MiB, assumed for scoring when a
/// container requests no memory.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// The `restartPolicy` that makes an init container a sidecar.
pub const CONTAINER_RESTART_POLICY_ALWAYS: &str = "Always";

/// `IsPrefixedNativeResource`: the name contains `kubernetes.io/`.
pub fn is_prefixed_native_resource(name: &str) -> bool {
    name.contains(DEFAULT_NAMESPACE_PREFIX)
}

/// `IsNativeResource`: unprefixed names (`cpu`) and `kubernetes.io/` ones.
pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || is_prefixed_native_resource(name)
}

/// `IsHugePageResourceName`.
pub fn is_huge_page_resource_name(name: &str) -> bool {
    name.starts_with(HUGE_PAGES_PREFIX)
}

/// `IsAttachableVolumeResourceName`.
pub fn is_attachable_volume_resource_name(name: &str) -> bool {
    name.starts_with(ATTACHABLE_VOLUMES_PREFIX)
}

/// `IsExtendedResourceName`: not native, not a quota name, and a valid
/// qualified name once prefixed with `requests.` (so that it can be quoted).
/// Allocates (it validates a formatted string); keep it off hot paths.
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with(DEFAULT_RESOURCE_REQUESTS_PREFIX) {
        return false;
    }
    is_qualified_name(&format!("{DEFAULT_RESOURCE_REQUESTS_PREFIX}{name}")).is_empty()
}

/// `schedutil.IsScalarResourceName`: the names tracked in
/// [`Resource::scalar_resources`].
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_huge_page_resource_name(name)
        || is_prefixed_native_resource(name)
        || is_attachable_volume_resource_name(name)
        || is_extended_resource_name(name)
}

/// `IsSupportedPodLevelResource`: what `spec.resources` may set.
pub fn is_supported_pod_level_resource(name: &str) -> bool {
    name == RESOURCE_CPU || name == RESOURCE_MEMORY || is_huge_page_resource_name(name)
}

/// A resource list with parsed quantities.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Options of [`pod_request_list`] (upstream's `PodResourcesOptions`,
/// reduced to what the scheduler uses for pods it places).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodResourcesOptions {
    /// Honour pod-level `spec.resources` (the `PodLevelResources` gate,
    /// beta and on by default upstream). Pods without pod-level requests
    /// are unaffected either way.
    pub pod_level_resources: bool,
    /// Give containers that do not mention cpu or memory the scheduler's
    /// defaults (`NonMissingContainerRequests` with 100m and 200Mi).
    /// An explicit zero is kept: only missing entries are filled.
    pub non_zero_defaults: bool,
}

impl Default for PodResourcesOptions {
    fn default() -> Self {
        PodResourcesOptions {
            pod_level_resources: true,
            non_zero_defaults: false,
        }
    }
}

/// Parses a k8s resource list; unparseable quantities are dropped (see the
/// module doc for why).
pub fn parse_resource_list(list: Option<&BTreeMap<String, K8sQuantity>>) -> ResourceList {
    list.into_iter()
        .flatten()
        .filter_map(|(name, q)| Quantity::from_k8s(q).ok().map(|q| (name.clone(), q)))
        .collect()
}

/// `addResourceList`.
fn add_list(into: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        match into.get_mut(name) {
            Some(v) => v.add(q),
            None => {
                into.insert(name.clone(), q.clone());
            }
        }
    }
}

/// `maxResourceList`: each entry of `other` raises `into` to at least it.
fn max_list(into: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        match into.get_mut(name) {
            Some(v) if *q > *v => *v = q.clone(),
            Some(_) => {}
            None => {
                into.insert(name.clone(), q.clone());
            }
        }
    }
}

fn is_restartable_init_container(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some(CONTAINER_RESTART_POLICY_ALWAYS)
}

fn container_requests(c: &Container, opts: PodResourcesOptions) -> ResourceList {
    let mut reqs = parse_resource_list(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
    if opts.non_zero_defaults {
        // `applyNonMissing`: only names absent from the spec get a default.
        // Checked against the spec, not the parsed list, so an unparseable
        // explicit value is not replaced by the default either.
        let spec = c.resources.as_ref().and_then(|r| r.requests.as_ref());
        let has = |name: &str| spec.is_some_and(|m| m.contains_key(name));
        if !has(RESOURCE_CPU) {
            reqs.insert(
                RESOURCE_CPU.to_string(),
                Quantity::from_milli(DEFAULT_MILLI_CPU_REQUEST),
            );
        }
        if !has(RESOURCE_MEMORY) {
            reqs.insert(
                RESOURCE_MEMORY.to_string(),
                Quantity::from_value(DEFAULT_MEMORY_REQUEST),
            );
        }
    }
    reqs
}

/// `AggregateContainerRequests`: the sidecar-aware container aggregate.
fn aggregate_container_requests(pod: &Pod, opts: PodResourcesOptions) -> ResourceList {
    let mut reqs = ResourceList::new();
    let Some(spec) = pod.spec.as_ref() else {
        return reqs;
    };
    for c in &spec.containers {
        add_list(&mut reqs, &container_requests(c, opts));
    }
    // While init container i runs, the sidecars started before it run too:
    // InitContainerUse(i) = sum(sidecars before i) + init container i.
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in spec.init_containers.iter().flatten() {
        let c_reqs = container_requests(c, opts);
        if is_restartable_init_container(c) {
            // A sidecar keeps running next to the regular containers.
            add_list(&mut reqs, &c_reqs);
            add_list(&mut sidecars, &c_reqs);
            max_list(&mut init_max, &sidecars);
        } else {
            let mut during = c_reqs;
            add_list(&mut during, &sidecars);
            max_list(&mut init_max, &during);
        }
    }
    max_list(&mut reqs, &init_max);
    reqs
}

/// `PodRequests`: the pod's total requests as exact quantities.
pub fn pod_request_list(pod: &Pod, opts: PodResourcesOptions) -> ResourceList {
    let mut reqs = aggregate_container_requests(pod, opts);
    let spec = pod.spec.as_ref();
    if opts.pod_level_resources {
        let pod_level = parse_resource_list(
            spec.and_then(|s| s.resources.as_ref())
                .and_then(|r| r.requests.as_ref()),
        );
        for (name, q) in pod_level {
            if is_supported_pod_level_resource(&name) {
                reqs.insert(name, q);
            }
        }
    }
    add_list(
        &mut reqs,
        &parse_resource_list(spec.and_then(|s| s.overhead.as_ref())),
    );
    reqs
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
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};

    fn list(entries: &[(&str, &str)]) -> BTreeMap<String, K8sQuantity> {
        entries
            .iter()
            .map(|(n, q)| (n.to_string(), K8sQuantity(q.to_string())))
            .collect()
    }

    fn container(requests: &[(&str, &str)], sidecar: bool) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(list(requests)),
                ..ResourceRequirements::default()
            }),
            restart_policy: sidecar.then(|| CONTAINER_RESTART_POLICY_ALWAYS.to_string()),
            ..Container::default()
        }
    }

    fn pod(containers: Vec<Container>, init: Vec<Container>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers,
                init_containers: Some(init),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    fn cpu_mem(r: &Resource) -> (i64, i64) {
        (r.milli_cpu, r.memory)
    }

    /// The worked example in upstream's `computePodResourceRequest` doc.
    #[test]
    fn init_containers_take_the_max_and_regular_containers_sum() {
        let p = pod(
            vec![
                container(&[("cpu", "2"), ("memory", "1G")], false),
                container(&[("cpu", "1"), ("memory", "1G")], false),
            ],
            vec![
                container(&[("cpu", "2"), ("memory", "1G")], false),
                container(&[("cpu", "2"), ("memory", "3G")], false),
            ],
        );
        assert_eq!(cpu_mem(&pod_requests(&p)), (3000, 3_000_000_000));
    }

    /// Sidecar rows after upstream `TestPodRequests` (component-helpers).
    #[test]
    fn restartable_init_containers_are_added_and_stack_under_later_init_containers() {
        let cases: Vec<(&str, Pod, i64)> = vec![
            (
                "restartable init container adds to the regular containers",
                pod(
                    vec![container(&[("cpu", "1")], false)],
                    vec![container(&[("cpu", "1")], true)],
                ),
                2000,
            ),
            (
                "init container after a sidecar needs its own request plus the sidecar's",
                pod(
                    vec![container(&[("cpu", "1")], false)],
                    vec![
                        container(&[("cpu", "1")], true),
                        container(&[("cpu", "2")], false),
                    ],
                ),
                3000,
            ),
            (
                "init container before a sidecar runs alone",
                pod(
                    vec![container(&[("cpu", "1")], false)],
                    vec![
                        container(&[("cpu", "2")], false),
                        container(&[("cpu", "1")], true),
                    ],
                ),
                2000,
            ),
            (
                "multiple sidecars accumulate",
                pod(
                    vec![container(&[("cpu", "1")], false)],
                    vec![
                        container(&[("cpu", "1")], true),
                        container(&[("cpu", "1")], true),
                        container(&[("cpu", "3")], false),
                    ],
                ),
                // max(1 + 1 + 1, 1 + 1 + 3) = 5
                5000,
            ),
        ];
        for (name, p, want) in cases {
            assert_eq!(pod_requests(&p).milli_cpu, want, "{name}");
        }
    }

    #[test]
    fn overhead_is_added_and_pod_level_requests_replace_the_container_sum() {
        let mut p = pod(
            vec![container(&[("cpu", "1"), ("memory", "1")], false)],
            vec![],
        );
        if let Some(spec) = p.spec.as_mut() {
            spec.overhead = Some(list(&[("cpu", "3m"), ("memory", "13")]));
        }
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
        let p = pod(
            vec![
                container(&[], false),
                container(&[("cpu", "0"), ("memory", "0")], false),
                container(&[("cpu", "1")], false),
            ],
            vec![],
        );
        let r = pod_requests_non_zero(&p);
        assert_eq!(
            cpu_mem(&r),
            (100 + 1000, 2 * DEFAULT_MEMORY_REQUEST),
            "explicit zeros stay zero"
        );
        // A pod without containers requests nothing, even non-zero.
        assert_eq!(
            cpu_mem(&pod_requests_non_zero(&pod(vec![], vec![]))),
            (0, 0)
        );
    }

    #[test]
    fn quantities_are_summed_exactly_before_rounding() {
        let p = pod(
            vec![
                container(&[("memory", "500m")], false),
                container(&[("memory", "500m")], false),
            ],
            vec![],
        );
        assert_eq!(pod_requests(&p).memory, 1);
    }

    #[test]
    fn resource_names_are_classified_as_upstream() {
        let scalar = [
            "example.com/aaa",
            "kubernetes.io/something",
            "subdomain.kubernetes.io/something",
            "hugepages-2Mi",
            "attachable-volumes-aws-ebs",
        ];
        for name in scalar {
            assert!(is_scalar_resource_name(name), "{name}");
        }
        let not_scalar = [
            "cpu",
            "memory",
            "pods",
            "ephemeral-storage",
            "requests.example.com/x",
            "example.com/",
            "a/b/c",
            "Example_Com/x",
        ];
        for name in not_scalar {
            assert!(!is_scalar_resource_name(name), "{name}");
        }
        assert!(is_extended_resource_name("example.com/aaa"));
        assert!(!is_extended_resource_name("kubernetes.io/something"));
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
