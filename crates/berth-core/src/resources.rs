//! Resource names and how much a pod requests, as exact quantities: the
//! one port the scheduler, the node agent's admission and the API server's
//! ExtendedResourceToleration share.
//!
//! - `PodRequests` from `k8s.io/component-helpers/resource/helpers.go`: the
//!   sum of the regular containers' requests; each regular init container
//!   runs alone (next to the restartable "sidecar" init containers started
//!   before it), so the pod needs the maximum of those; sidecars run for the
//!   pod's whole life, so they are added to the sum; pod-level requests
//!   (`spec.resources`, for cpu, memory and `hugepages-*`) replace the
//!   container aggregate; `spec.overhead` is added on top.
//! - The resource-name predicates of `pkg/apis/core/v1/helper/helpers.go`
//!   and `pkg/scheduler/util` (`IsExtendedResourceName`,
//!   `IsScalarResourceName`, ...), and the non-zero defaults
//!   (`DefaultMilliCPURequest`, `DefaultMemoryRequest`) that scheduling
//!   scores use for pods that request nothing.
//!
//! Sums are computed on exact [`Quantity`] values, as upstream does, so
//! `0.5` + `0.5` bytes is one byte, not two; converting them to a
//! scheduler's units is the scheduler's business. An unparseable quantity
//! counts as absent: the API server validates quantities on write, and
//! nobody reading pods must fail on data it reads. Not ported:
//! `UseStatusResources` (in-place resize, only relevant to pods already
//! running) and the `ContainerFn`/`Reuse` hooks.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use crate::quantity::Quantity;
use crate::validation::names::is_qualified_name;

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

/// `schedutil.IsScalarResourceName`: the names a scheduler tracks one by
/// one beside cpu, memory, ephemeral storage and pods.
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn extended_resource_names() {
        // Shapes of upstream TestIsExtendedResourceName (helpers_test.go),
        // written from the rule.
        let cases = [
            ("foo.com/bar", true),
            ("example.com/device-ek", true),
            ("cpu", false),
            ("memory", false),
            ("hugepages-2Mi", false),
            ("kubernetes.io/foo", false),
            ("foo.kubernetes.io/bar", false),
            ("requests.foo.com/bar", false),
            ("foo.com/-bar", false),
            ("foo.com/bar baz", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_extended_resource_name(name), want, "{name}");
        }
    }
}
