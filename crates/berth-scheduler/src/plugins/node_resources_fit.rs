//! NodeResourcesFit: a node must have room for the pod's requests (Filter),
//! and nodes with more room left score higher (Score, LeastAllocated
//! strategy). Ported from upstream `plugins/noderesources/fit.go`,
//! `resource_allocation.go` and `least_allocated.go`.
//!
//! Kept from upstream: the "Too many pods" check, the per-resource
//! `"Insufficient <name>"` reasons in the order pods, cpu, memory,
//! ephemeral-storage, scalar resources (sorted by name here; Go iterates a
//! map), `UnschedulableAndUnresolvable` when the pod asks for more than the
//! node's whole allocatable (preempting cannot help), `ignoredResources` and
//! `ignoredResourceGroups`, the SidecarContainers PreFilter check, and
//! LeastAllocated scoring over configurable weighted resources.
//!
//! Not ported: the MostAllocated and RequestedToCapacityRatio strategies,
//! DRA-backed extended resources (`DRAExtendedResource`), queueing hints
//! (`EventsToRegister`) and the pod signature (`SignPod`).

use std::borrow::Cow;
use std::collections::BTreeSet;

use berth_core::validation::{ErrorList, FieldError, Path};

use crate::framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, Resource, ScorePlugin, Snapshot, Status,
    score_each,
};
use crate::resources::pod_requests_with;
use berth_core::resources::{
    CONTAINER_RESTART_POLICY_ALWAYS, PodResourcesOptions, RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY, RESOURCE_PODS, is_extended_resource_name, is_scalar_resource_name,
    pod_request_list,
};

/// The plugin's registry name.
pub const NAME: &str = "NodeResourcesFit";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 1;

/// The CycleState key of the PreFilter data.
pub const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeResourcesFit";

/// The CycleState key of the PreScore data.
pub const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesFit";

/// The Filter reason when the node already holds its allowed pod number.
pub const ERR_REASON_TOO_MANY_PODS: &str = "Too many pods";

/// The PreFilter reason for sidecars when the SidecarContainers gate is off.
pub const ERR_REASON_SIDECARS_DISABLED: &str =
    "Pod has a restartable init container and the SidecarContainers feature is disabled";

/// The highest weight a scored resource may have (validation's bound).
pub const MAX_RESOURCE_WEIGHT: i64 = 100;

/// One scored resource and its weight (`config.ResourceSpec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
    /// Where the resource is counted, resolved from `name` once (the
    /// scores read it for every node).
    field: ResourceField,
}

/// Where a [`Resource`] keeps a scored resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResourceField {
    Cpu,
    Memory,
    EphemeralStorage,
    /// In `scalar_resources`; `scalar_name`: the name is a scalar
    /// resource's (extended, hugepages, ...), which a pod not asking for it
    /// leaves out of the score.
    Scalar {
        scalar_name: bool,
    },
}

impl ResourceSpec {
    pub fn new(name: impl Into<String>, weight: i64) -> Self {
        let name = name.into();
        let field = match name.as_str() {
            RESOURCE_CPU => ResourceField::Cpu,
            RESOURCE_MEMORY => ResourceField::Memory,
            RESOURCE_EPHEMERAL_STORAGE => ResourceField::EphemeralStorage,
            other => ResourceField::Scalar {
                scalar_name: is_scalar_resource_name(other),
            },
        };
        ResourceSpec {
            name,
            weight,
            field,
        }
    }
}

/// The weights of `resources` when they are cpu then memory (the default
/// and most profiles): the scores then read the two amounts directly
/// instead of walking the list, for every scored node of every pod. The
/// arithmetic is the general path's, term for term.
pub(crate) fn cpu_memory_weights(resources: &[ResourceSpec]) -> Option<(i64, i64)> {
    match resources {
        [cpu, memory]
            if cpu.field == ResourceField::Cpu && memory.field == ResourceField::Memory =>
        {
            Some((cpu.weight, memory.weight))
        }
        _ => None,
    }
}

/// The default scored resources: cpu and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec::new(RESOURCE_CPU, 1),
        ResourceSpec::new(RESOURCE_MEMORY, 1),
    ]
}

/// The NodeResourcesFit plugin with the LeastAllocated scoring strategy.
#[derive(Debug, Clone)]
pub struct NodeResourcesFit {
    /// Extended resources the Filter does not check (`ignoredResources`).
    ignored_resources: BTreeSet<String>,
    /// Extended-resource prefixes (before the `/`) the Filter does not
    /// check (`ignoredResourceGroups`).
    ignored_resource_groups: BTreeSet<String>,
    /// Resources LeastAllocated scores, with their weights.
    resources: Vec<ResourceSpec>,
    /// The `SidecarContainers` gate; GA upstream, so on by default.
    pub enable_sidecar_containers: bool,
    /// The `PodLevelResources` gate; on by default upstream.
    pub enable_pod_level_resources: bool,
}

impl Default for NodeResourcesFit {
    fn default() -> Self {
        NodeResourcesFit {
            ignored_resources: BTreeSet::new(),
            ignored_resource_groups: BTreeSet::new(),
            resources: default_resources(),
            enable_sidecar_containers: true,
            enable_pod_level_resources: true,
        }
    }
}

/// What PreFilter computes once per pod: its request, and which of its
/// scalar resources the Filter skips. The ignore decision is taken here
/// because telling extended resources apart allocates, and Filter must not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterState {
    pub request: Resource,
    pub ignored: BTreeSet<String>,
}

/// What PreScore computes once per pod: its non-zero request for each
/// scored resource, in the order of the plugin's resource specs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreScoreState {
    pub pod_requests: Vec<i64>,
}

/// Why the pod does not fit, per resource (upstream's `InsufficientResource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsufficientResource {
    pub resource_name: Cow<'static, str>,
    /// Fixed for the resources a node always has (a rejection of
    /// thousands of nodes allocates no reason for each).
    pub reason: Cow<'static, str>,
    pub requested: i64,
    pub used: i64,
    pub capacity: i64,
    /// The pod asks for more than the node's whole allocatable, so evicting
    /// pods from it cannot help.
    pub unresolvable: bool,
}

impl NodeResourcesFit {
    /// A plugin scoring `resources`; each weight must be in `1..=100`, as
    /// upstream's `ValidateNodeResourcesFitArgs` demands. An empty list is
    /// accepted, as upstream, and makes Score fail with "resources not found".
    pub fn new(resources: Vec<ResourceSpec>) -> Result<Self, ErrorList> {
        let path = Path::new("scoringStrategy").child("resources");
        let errs: ErrorList = resources
            .iter()
            .enumerate()
            .filter(|(_, r)| r.weight <= 0 || r.weight > MAX_RESOURCE_WEIGHT)
            .map(|(i, r)| {
                FieldError::invalid(
                    &path.index(i).child("weight"),
                    r.weight,
                    format!(
                        "resource weight of {} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
                        r.name
                    ),
                )
            })
            .collect();
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(NodeResourcesFit {
            resources,
            ..NodeResourcesFit::default()
        })
    }

    /// Skips the given extended resources in Filter.
    pub fn with_ignored_resources<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignored_resources = names.into_iter().map(Into::into).collect();
        self
    }

    /// Skips extended resources with the given prefixes (`example.com` for
    /// `example.com/gpu`) in Filter.
    pub fn with_ignored_resource_groups<I, S>(mut self, groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignored_resource_groups = groups.into_iter().map(Into::into).collect();
        self
    }

    pub fn resources(&self) -> &[ResourceSpec] {
        &self.resources
    }

    fn request_options(&self, non_zero_defaults: bool) -> PodResourcesOptions {
        PodResourcesOptions {
            pod_level_resources: self.enable_pod_level_resources,
            non_zero_defaults,
        }
    }

    /// `computePodResourceRequest` plus the ignore decisions.
    pub fn compute_pre_filter_state(&self, pod: &PodInfo) -> PreFilterState {
        let request = if self.enable_pod_level_resources {
            // PodInfo parsed them with these options when the pod was
            // queued (`pods` there counts the pod itself).
            Resource {
                pods: 0,
                ..pod.usage().requested.clone()
            }
        } else {
            pod_requests_with(pod.pod(), self.request_options(false))
        };
        let ignored = request
            .scalar_resources
            .keys()
            .filter(|name| self.is_ignored(name))
            .cloned()
            .collect();
        PreFilterState { request, ignored }
    }

    fn is_ignored(&self, name: &str) -> bool {
        if self.ignored_resources.is_empty() && self.ignored_resource_groups.is_empty() {
            return false;
        }
        if !is_extended_resource_name(name) {
            return false;
        }
        // API validation guarantees extended resource names have a slash.
        let group = name.split('/').next().unwrap_or(name);
        self.ignored_resources.contains(name) || self.ignored_resource_groups.contains(group)
    }

    /// `calculatePodResourceRequestList`: the pod's non-zero request for
    /// each scored resource (cpu in millicores, the rest in units).
    pub fn pod_score_requests(&self, pod: &PodInfo) -> Vec<i64> {
        score_requests(pod, &self.resources, self.request_options(true))
    }
}

/// `calculatePodResourceRequestList`: the pod's request for each of
/// `resources` (cpu in millicores, the rest in units), with `opts`.
pub(crate) fn score_requests(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    opts: PodResourcesOptions,
) -> Vec<i64> {
    cpu_memory_requests_parsed(pod, resources, opts)
        .unwrap_or_else(|| parse_score_requests(pod, resources, opts))
}

/// [`score_requests`] from the pod's spec.
fn parse_score_requests(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    opts: PodResourcesOptions,
) -> Vec<i64> {
    let list = pod_request_list(pod.pod(), opts);
    resources
        .iter()
        .map(|spec| match list.get(&spec.name) {
            Some(q) if spec.name == RESOURCE_CPU => q.milli_value(),
            Some(q) => q.value(),
            None => 0,
        })
        .collect()
}

/// [`score_requests`] of cpu then memory (the default) read from what
/// the pod's `PodInfo` parsed when it was queued, which used the same
/// request lists (pod-level resources honoured; with and without the
/// non-zero defaults). Those amounts are clamped at zero and the score's
/// are not, so only positive amounts are taken (a best-effort pod, or an
/// amount no validation let through, is parsed again).
fn cpu_memory_requests_parsed(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    opts: PodResourcesOptions,
) -> Option<Vec<i64>> {
    cpu_memory_weights(resources)?;
    if !opts.pod_level_resources {
        return None;
    }
    let usage = pod.usage();
    let (cpu, memory) = if opts.non_zero_defaults {
        (usage.non_zero_milli_cpu, usage.non_zero_memory)
    } else {
        (usage.requested.milli_cpu, usage.requested.memory)
    };
    (cpu > 0 && memory > 0).then(|| vec![cpu, memory])
}

impl NodeResourcesFit {
    /// `resourceAllocationScorer.score` with the LeastAllocated scorer.
    pub fn least_allocated_score(
        &self,
        node: &NodeInfo,
        pod_requests: &[i64],
    ) -> Result<i64, Status> {
        if self.resources.is_empty() {
            return Err(Status::error("resources not found").with_plugin(NAME));
        }
        Ok(least_allocated_of(
            self.resources
                .iter()
                .zip(pod_requests)
                .map(|(spec, &pod_request)| {
                    let (allocatable, allocated) =
                        allocatable_and_allocated(node, spec, pod_request, false);
                    (allocatable, allocated, pod_request, spec.weight)
                }),
        ))
    }
}

/// [`NodeResourcesFit::least_allocated_score`] for cpu then memory with
/// `weights` ([`cpu_memory_weights`]) and the pod's requests of the two.
#[inline]
pub(crate) fn least_allocated_cpu_memory(
    node: &NodeInfo,
    (cpu_weight, memory_weight): (i64, i64),
    cpu_request: i64,
    memory_request: i64,
) -> i64 {
    least_allocated_of([
        (
            node.allocatable.milli_cpu,
            node.non_zero_requested.milli_cpu,
            cpu_request,
            cpu_weight,
        ),
        (
            node.allocatable.memory,
            node.non_zero_requested.memory,
            memory_request,
            memory_weight,
        ),
    ])
}

/// The LeastAllocated score of a node from each scored resource's
/// `(allocatable, allocated, pod's request, weight)`: the weighted average
/// of the unused shares.
#[inline]
fn least_allocated_of(resources: impl IntoIterator<Item = (i64, i64, i64, i64)>) -> i64 {
    let mut node_score: i64 = 0;
    let mut weight_sum: i64 = 0;
    for (allocatable, allocated, request, weight) in resources {
        // Resources the node does not offer (or the pod does not ask
        // for, among scalar ones) take no part in the average.
        if allocatable == 0 {
            continue;
        }
        let requested = allocated.saturating_add(request);
        node_score = node_score
            .saturating_add(least_requested_score(requested, allocatable).saturating_mul(weight));
        weight_sum = weight_sum.saturating_add(weight);
    }
    if weight_sum == 0 {
        return 0;
    }
    node_score / weight_sum
}

/// `calculateResourceAllocatableRequest`: the node's allocatable amount of
/// `spec`'s resource and what is already allocated there. With
/// `use_requested` false (LeastAllocated) cpu and memory count the non-zero
/// requests; with it true (BalancedAllocation) the plain requests. `(0, 0)`
/// leaves the resource out of the score: a scalar resource the pod does not
/// ask for (`pod_request` 0) says nothing about fit, and one the node lacks
/// neither.
#[inline]
pub(crate) fn allocatable_and_allocated(
    node: &NodeInfo,
    spec: &ResourceSpec,
    pod_request: i64,
    use_requested: bool,
) -> (i64, i64) {
    let alloc = &node.allocatable;
    let counted = if use_requested {
        &node.requested
    } else {
        &node.non_zero_requested
    };
    match spec.field {
        ResourceField::Cpu => (alloc.milli_cpu, counted.milli_cpu),
        ResourceField::Memory => (alloc.memory, counted.memory),
        ResourceField::EphemeralStorage => {
            (alloc.ephemeral_storage, node.requested.ephemeral_storage)
        }
        ResourceField::Scalar { scalar_name } => {
            if pod_request == 0 && scalar_name {
                return (0, 0);
            }
            match alloc.scalar_resources.get(&spec.name) {
                Some(&a) => (a, node.requested.scalar(&spec.name)),
                None => (0, 0),
            }
        }
    }
}

/// `leastRequestedScore`: the unused share of `capacity`, on `0..=100`.
/// Computed in i128 because `capacity * 100` overflows i64 for large
/// memory amounts, where Go would silently wrap. A negative `requested`
/// (only possible from invalid specs) counts as zero so the score stays in
/// range.
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity <= 0 || requested > capacity {
        return 0;
    }
    // The common case fits i64 (a division in i128 costs several times
    // more, and this runs for every resource of every scored node).
    if let Some(scaled) = (capacity - requested.max(0)).checked_mul(MAX_NODE_SCORE) {
        return scaled / capacity;
    }
    let requested = i128::from(requested.max(0));
    let score =
        (i128::from(capacity) - requested) * i128::from(MAX_NODE_SCORE) / i128::from(capacity);
    i64::try_from(score).unwrap_or(0)
}

/// Whether `request` exceeds what is left of `capacity` after `used`, in
/// i128 so that hostile values cannot overflow.
fn exceeds(request: i64, capacity: i64, used: i64) -> bool {
    i128::from(request) > i128::from(capacity) - i128::from(used)
}

/// `fitsRequest`: every way the pod does not fit the node; empty when it
/// fits, in which case nothing is allocated.
pub fn fits_request(state: &PreFilterState, node: &NodeInfo) -> Vec<InsufficientResource> {
    let mut out = Vec::new();
    let req = &state.request;
    let alloc = &node.allocatable;
    let used = &node.requested;

    let allowed_pods = alloc.pods;
    if used.pods.saturating_add(1) > allowed_pods {
        out.push(InsufficientResource {
            resource_name: RESOURCE_PODS.into(),
            reason: ERR_REASON_TOO_MANY_PODS.into(),
            requested: 1,
            used: i64::try_from(used.pods).unwrap_or(i64::MAX),
            capacity: i64::try_from(allowed_pods).unwrap_or(i64::MAX),
            unresolvable: false,
        });
    }

    if req.milli_cpu == 0
        && req.memory == 0
        && req.ephemeral_storage == 0
        && req.scalar_resources.is_empty()
    {
        return out;
    }

    let mut check =
        |name: &'static str, reason: &'static str, requested: i64, used: i64, capacity: i64| {
            if requested > 0 && exceeds(requested, capacity, used) {
                out.push(InsufficientResource {
                    resource_name: name.into(),
                    reason: reason.into(),
                    requested,
                    used,
                    capacity,
                    unresolvable: requested > capacity,
                });
            }
        };
    check(
        RESOURCE_CPU,
        "Insufficient cpu",
        req.milli_cpu,
        used.milli_cpu,
        alloc.milli_cpu,
    );
    check(
        RESOURCE_MEMORY,
        "Insufficient memory",
        req.memory,
        used.memory,
        alloc.memory,
    );
    check(
        RESOURCE_EPHEMERAL_STORAGE,
        "Insufficient ephemeral-storage",
        req.ephemeral_storage,
        used.ephemeral_storage,
        alloc.ephemeral_storage,
    );

    for (name, &quantity) in &req.scalar_resources {
        if quantity == 0 || state.ignored.contains(name) {
            continue;
        }
        let capacity = alloc.scalar(name);
        let in_use = used.scalar(name);
        if exceeds(quantity, capacity, in_use) {
            out.push(InsufficientResource {
                resource_name: name.clone().into(),
                reason: format!("Insufficient {name}").into(),
                requested: quantity,
                used: in_use,
                capacity,
                unresolvable: quantity > capacity,
            });
        }
    }
    out
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn node_local(&self) -> bool {
        true
    }
}

impl PreFilterPlugin for NodeResourcesFit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status) {
        let has_sidecar = pod
            .pod()
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.restart_policy.as_deref() == Some(CONTAINER_RESTART_POLICY_ALWAYS))
            });
        if !self.enable_sidecar_containers && has_sidecar {
            // Kubelets older than 1.28 count sidecars differently; refusing
            // the pod avoids overbooking them.
            return (
                None,
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    ERR_REASON_SIDECARS_DISABLED,
                )
                .with_plugin(NAME),
            );
        }
        state.write(PRE_FILTER_STATE_KEY, self.compute_pre_filter_state(pod));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeResourcesFit {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        let insufficient = fits_request(s, node);
        if insufficient.is_empty() {
            return Status::success();
        }
        let code = if insufficient.iter().any(|r| r.unresolvable) {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        };
        Status {
            code,
            reasons: insufficient.into_iter().map(|r| r.reason).collect(),
            plugin: NAME,
        }
    }
}

impl PreScorePlugin for NodeResourcesFit {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
        _nodes: &[&NodeInfo],
    ) -> Status {
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                pod_requests: self.pod_score_requests(pod),
            },
        );
        Status::success()
    }
}

impl ScorePlugin for NodeResourcesFit {
    /// LeastAllocated: the weighted average of the unused share of each
    /// scored resource, already on `0..=100`, so there is no NormalizeScore.
    /// Without PreScore the requests are computed here, as upstream does.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => self.least_allocated_score(node, &s.pod_requests),
            None => self.least_allocated_score(node, &self.pod_score_requests(pod)),
        }
    }

    fn score_all(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut Vec<NodeScore>,
    ) -> Result<(), Status> {
        let computed;
        let requests = match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => &s.pod_requests,
            None => {
                computed = self.pod_score_requests(pod);
                &computed
            }
        };
        if let (Some(weights), [cpu, memory, ..]) =
            (cpu_memory_weights(&self.resources), requests.as_slice())
        {
            return score_each(nodes, scores, |node| {
                Ok(least_allocated_cpu_memory(node, weights, *cpu, *memory))
            });
        }
        score_each(nodes, scores, |node| {
            self.least_allocated_score(node, requests)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{
        Container, Node, NodeStatus, Pod, PodSpec, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use crate::framework::NodeScore;

    const EXT_A: &str = "example.com/aaa";
    const EXT_B: &str = "example.com/bbb";
    const K8S_IO_A: &str = "kubernetes.io/something";
    const K8S_IO_B: &str = "subdomain.kubernetes.io/something";
    const HUGE_A: &str = "hugepages-2Mi";
    const DRA_EXT: &str = "extended.resource.dra.io/something";
    /// `extendedRes` of upstream's least_allocated tests.
    const EXT_RES: &str = "abc.com/xyz";

    use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU};

    /// Upstream's `framework.Resource` as the tests' `newResourcePod` reads
    /// it: one container's requests.
    #[derive(Debug, Clone, Default)]
    struct Usage {
        cpu: i64,
        mem: i64,
        eph: i64,
        scalars: Vec<(&'static str, i64)>,
    }

    fn u(cpu: i64, mem: i64) -> Usage {
        Usage {
            cpu,
            mem,
            ..Usage::default()
        }
    }

    fn us(cpu: i64, mem: i64, scalars: &[(&'static str, i64)]) -> Usage {
        Usage {
            cpu,
            mem,
            eph: 0,
            scalars: scalars.to_vec(),
        }
    }

    fn eph(eph: i64) -> Usage {
        Usage {
            eph,
            ..Usage::default()
        }
    }

    fn list<S: AsRef<str>>(entries: &[(&str, S)]) -> BTreeMap<String, Q> {
        entries
            .iter()
            .map(|(n, v)| (n.to_string(), Q(v.as_ref().to_string())))
            .collect()
    }

    fn container(requests: BTreeMap<String, Q>) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(requests),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }
    }

    /// `newResourcePod`: one container per usage, every request explicit
    /// (zeros included), as upstream's helper writes them.
    fn usage_containers(usages: &[Usage]) -> Vec<Container> {
        usages
            .iter()
            .map(|us| {
                let mut rl = list(&[
                    ("cpu", format!("{}m", us.cpu)),
                    ("memory", us.mem.to_string()),
                    ("pods", "0".to_string()),
                    ("ephemeral-storage", us.eph.to_string()),
                ]);
                for (name, v) in &us.scalars {
                    rl.insert(name.to_string(), Q(v.to_string()));
                }
                container(rl)
            })
            .collect()
    }

    fn new_resource_pod(usages: &[Usage]) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: usage_containers(usages),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    /// `newResourceInitPod`.
    fn with_init(mut pod: Pod, usages: &[Usage]) -> Pod {
        if let Some(spec) = pod.spec.as_mut() {
            spec.init_containers = Some(usage_containers(usages));
        }
        pod
    }

    /// `newResourceOverheadPod`.
    fn with_overhead(mut pod: Pod, overhead: &[(&str, &str)]) -> Pod {
        if let Some(spec) = pod.spec.as_mut() {
            spec.overhead = Some(list(overhead));
        }
        pod
    }

    /// `newPodLevelResourcesPod`.
    fn with_pod_level(mut pod: Pod, requests: &[(&str, &str)]) -> Pod {
        if let Some(spec) = pod.spec.as_mut() {
            spec.resources = Some(ResourceRequirements {
                requests: Some(list(requests)),
                ..ResourceRequirements::default()
            });
        }
        pod
    }

    /// `makeAllocatableResources(milliCPU, memory, pods, extendedA, storage, hugePageA)`.
    fn make_allocatable(
        cpu: i64,
        mem: i64,
        pods: i64,
        ext_a: i64,
        storage: i64,
        huge_a: i64,
    ) -> BTreeMap<String, Q> {
        list(&[
            ("cpu", format!("{cpu}m")),
            ("memory", mem.to_string()),
            ("pods", pods.to_string()),
            (EXT_A, ext_a.to_string()),
            ("ephemeral-storage", storage.to_string()),
            (HUGE_A, huge_a.to_string()),
        ])
    }

    fn named_node(name: &str, allocatable: BTreeMap<String, Q>) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            status: Some(NodeStatus {
                capacity: Some(allocatable.clone()),
                allocatable: Some(allocatable),
                ..NodeStatus::default()
            }),
            ..Node::default()
        })
    }

    fn node_info(allocatable: BTreeMap<String, Q>, pods: &[Pod]) -> NodeInfo {
        NodeInfo::with_pods(named_node("node", allocatable), pods)
    }

    fn ins(
        name: &str,
        requested: i64,
        used: i64,
        capacity: i64,
        unresolvable: bool,
    ) -> InsufficientResource {
        InsufficientResource {
            resource_name: name.to_string().into(),
            reason: if name == RESOURCE_PODS {
                ERR_REASON_TOO_MANY_PODS.into()
            } else {
                format!("Insufficient {name}").into()
            },
            requested,
            used,
            capacity,
            unresolvable,
        }
    }

    fn want_status(code: Code, reasons: &[&str]) -> Status {
        if code == S {
            return Status::success();
        }
        Status::with_reasons(code, reasons.iter().map(|r| r.to_string()).collect())
            .with_plugin(NAME)
    }

    fn run_filter(plugin: &NodeResourcesFit, pod: &Pod, node: &NodeInfo) -> Status {
        let pod = PodInfo::from(pod.clone());
        let mut state = CycleState::new();
        let (result, status) = plugin.pre_filter(&mut state, &pod, &Snapshot::of_nodes(&[]));
        assert!(result.is_none());
        assert!(status.is_success(), "prefilter failed: {status}");
        plugin.filter(&state, &pod, node)
    }

    struct EnoughCase {
        name: &'static str,
        pod: Pod,
        node_pods: Vec<Pod>,
        plugin: NodeResourcesFit,
        code: Code,
        want: Vec<InsufficientResource>,
    }

    fn case(
        name: &'static str,
        pod: Pod,
        node_pods: Vec<Pod>,
        code: Code,
        want: Vec<InsufficientResource>,
    ) -> EnoughCase {
        EnoughCase {
            name,
            pod,
            node_pods,
            plugin: NodeResourcesFit::default(),
            code,
            want,
        }
    }

    fn on(pod_usage: Usage) -> Vec<Pod> {
        vec![new_resource_pod(&[pod_usage])]
    }

    /// Upstream `TestEnoughRequests`: every row except the six that need a
    /// DRA manager (DRAExtendedResource enabled). Rows with pod-level
    /// resources run with the PodLevelResources gate on, as upstream; the
    /// other rows have no pod-level requests, so the gate does not matter.
    #[test]
    fn enough_requests_as_upstream() {
        let cases = vec![
            case(
                "no resources requested always fits",
                Pod::default(),
                on(u(10, 20)),
                S,
                vec![],
            ),
            case(
                "too many resources fails",
                new_resource_pod(&[u(1, 1)]),
                on(u(10, 20)),
                U,
                vec![
                    ins("cpu", 1, 10, 10, false),
                    ins("memory", 1, 20, 20, false),
                ],
            ),
            case(
                "too many resources fails due to init container cpu",
                with_init(new_resource_pod(&[u(1, 1)]), &[u(3, 1)]),
                on(u(8, 19)),
                U,
                vec![ins("cpu", 3, 8, 10, false)],
            ),
            case(
                "too many resources fails due to highest init container cpu",
                with_init(new_resource_pod(&[u(1, 1)]), &[u(3, 1), u(2, 1)]),
                on(u(8, 19)),
                U,
                vec![ins("cpu", 3, 8, 10, false)],
            ),
            case(
                "too many resources fails due to init container memory",
                with_init(new_resource_pod(&[u(1, 1)]), &[u(1, 3)]),
                on(u(9, 19)),
                U,
                vec![ins("memory", 3, 19, 20, false)],
            ),
            case(
                "too many resources fails due to highest init container memory",
                with_init(new_resource_pod(&[u(1, 1)]), &[u(1, 3), u(1, 2)]),
                on(u(9, 19)),
                U,
                vec![ins("memory", 3, 19, 20, false)],
            ),
            case(
                "init container fits because it's the max, not sum, of containers and init containers",
                with_init(new_resource_pod(&[u(1, 1)]), &[u(1, 1)]),
                on(u(9, 19)),
                S,
                vec![],
            ),
            case(
                "multiple init containers fit because it's the max, not sum, of containers and init containers",
                with_init(new_resource_pod(&[u(1, 1)]), &[u(1, 1), u(1, 1)]),
                on(u(9, 19)),
                S,
                vec![],
            ),
            case(
                "both resources fit",
                new_resource_pod(&[u(1, 1)]),
                on(u(5, 5)),
                S,
                vec![],
            ),
            case(
                "one resource memory fits",
                new_resource_pod(&[u(2, 1)]),
                on(u(9, 5)),
                U,
                vec![ins("cpu", 2, 9, 10, false)],
            ),
            case(
                "one resource cpu fits",
                new_resource_pod(&[u(1, 2)]),
                on(u(5, 19)),
                U,
                vec![ins("memory", 2, 19, 20, false)],
            ),
            case(
                "equal edge case",
                new_resource_pod(&[u(5, 1)]),
                on(u(5, 19)),
                S,
                vec![],
            ),
            case(
                "equal edge case for init container",
                with_init(new_resource_pod(&[u(4, 1)]), &[u(5, 1)]),
                on(u(5, 19)),
                S,
                vec![],
            ),
            case(
                "extended resource fits",
                new_resource_pod(&[us(0, 0, &[(EXT_A, 1)])]),
                on(Usage::default()),
                S,
                vec![],
            ),
            case(
                "extended resource fits for init container",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(0, 0, &[(EXT_A, 1)])],
                ),
                on(Usage::default()),
                S,
                vec![],
            ),
            case(
                "extended resource capacity enforced",
                new_resource_pod(&[us(1, 1, &[(EXT_A, 10)])]),
                on(us(0, 0, &[(EXT_A, 0)])),
                UU,
                vec![ins(EXT_A, 10, 0, 5, true)],
            ),
            case(
                "extended resource capacity enforced for init container",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(EXT_A, 10)])],
                ),
                on(us(0, 0, &[(EXT_A, 0)])),
                UU,
                vec![ins(EXT_A, 10, 0, 5, true)],
            ),
            case(
                "extended resource allocatable enforced",
                new_resource_pod(&[us(1, 1, &[(EXT_A, 1)])]),
                on(us(0, 0, &[(EXT_A, 5)])),
                U,
                vec![ins(EXT_A, 1, 5, 5, false)],
            ),
            case(
                "extended resource allocatable enforced for init container",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(EXT_A, 1)])],
                ),
                on(us(0, 0, &[(EXT_A, 5)])),
                U,
                vec![ins(EXT_A, 1, 5, 5, false)],
            ),
            case(
                "extended resource allocatable enforced for multiple containers",
                new_resource_pod(&[us(1, 1, &[(EXT_A, 3)]), us(1, 1, &[(EXT_A, 3)])]),
                on(us(0, 0, &[(EXT_A, 2)])),
                UU,
                vec![ins(EXT_A, 6, 2, 5, true)],
            ),
            case(
                "extended resource allocatable admits multiple init containers",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(EXT_A, 3)]), us(1, 1, &[(EXT_A, 3)])],
                ),
                on(us(0, 0, &[(EXT_A, 2)])),
                S,
                vec![],
            ),
            case(
                "extended resource allocatable enforced for multiple init containers",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(EXT_A, 6)]), us(1, 1, &[(EXT_A, 3)])],
                ),
                on(us(0, 0, &[(EXT_A, 2)])),
                UU,
                vec![ins(EXT_A, 6, 2, 5, true)],
            ),
            case(
                "extended resource allocatable enforced for unknown resource",
                new_resource_pod(&[us(1, 1, &[(EXT_B, 1)])]),
                on(u(0, 0)),
                UU,
                vec![ins(EXT_B, 1, 0, 0, true)],
            ),
            case(
                "extended resource allocatable enforced for unknown resource for init container",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(EXT_B, 1)])],
                ),
                on(u(0, 0)),
                UU,
                vec![ins(EXT_B, 1, 0, 0, true)],
            ),
            case(
                "kubernetes.io resource capacity enforced",
                new_resource_pod(&[us(1, 1, &[(K8S_IO_A, 10)])]),
                on(u(0, 0)),
                UU,
                vec![ins(K8S_IO_A, 10, 0, 0, true)],
            ),
            case(
                "kubernetes.io resource capacity enforced for init container",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(K8S_IO_B, 10)])],
                ),
                on(u(0, 0)),
                UU,
                vec![ins(K8S_IO_B, 10, 0, 0, true)],
            ),
            case(
                "hugepages resource capacity enforced",
                new_resource_pod(&[us(1, 1, &[(HUGE_A, 10)])]),
                on(us(0, 0, &[(HUGE_A, 0)])),
                UU,
                vec![ins(HUGE_A, 10, 0, 5, true)],
            ),
            case(
                "hugepages resource capacity enforced for init container",
                with_init(
                    new_resource_pod(&[Usage::default()]),
                    &[us(1, 1, &[(HUGE_A, 10)])],
                ),
                on(us(0, 0, &[(HUGE_A, 0)])),
                UU,
                vec![ins(HUGE_A, 10, 0, 5, true)],
            ),
            case(
                "hugepages resource allocatable enforced for multiple containers",
                new_resource_pod(&[us(1, 1, &[(HUGE_A, 3)]), us(1, 1, &[(HUGE_A, 3)])]),
                on(us(0, 0, &[(HUGE_A, 2)])),
                UU,
                vec![ins(HUGE_A, 6, 2, 5, true)],
            ),
            EnoughCase {
                plugin: NodeResourcesFit::default().with_ignored_resources(["example.com/bbb"]),
                ..case(
                    "skip checking ignored extended resource",
                    new_resource_pod(&[us(1, 1, &[(EXT_B, 1)])]),
                    on(u(0, 0)),
                    S,
                    vec![],
                )
            },
            case(
                "resources + pod overhead fits",
                with_overhead(
                    new_resource_pod(&[u(1, 1)]),
                    &[("cpu", "3m"), ("memory", "13")],
                ),
                on(u(5, 5)),
                S,
                vec![],
            ),
            case(
                "requests + overhead does not fit for memory",
                with_overhead(
                    new_resource_pod(&[u(1, 1)]),
                    &[("cpu", "1m"), ("memory", "15")],
                ),
                on(u(5, 5)),
                U,
                vec![ins("memory", 16, 5, 20, false)],
            ),
            EnoughCase {
                plugin: NodeResourcesFit::default().with_ignored_resource_groups(["example.com"]),
                ..case(
                    "skip checking ignored extended resource via resource groups",
                    new_resource_pod(&[us(1, 1, &[(EXT_B, 1), (K8S_IO_A, 1)])]),
                    on(u(0, 0)),
                    UU,
                    vec![ins(K8S_IO_A, 1, 0, 0, true)],
                )
            },
            case(
                "skip checking extended resource request with quantity zero via resource groups",
                new_resource_pod(&[us(1, 1, &[(EXT_A, 0)])]),
                on(us(0, 0, &[(EXT_A, 6)])),
                S,
                vec![],
            ),
            case(
                "skip checking resource request with quantity zero",
                new_resource_pod(&[us(0, 0, &[(EXT_A, 1)])]),
                on(us(20, 30, &[(EXT_A, 1)])),
                S,
                vec![],
            ),
            case(
                "both pod-level and container-level resources fit",
                with_pod_level(
                    new_resource_pod(&[u(1, 1)]),
                    &[("cpu", "1m"), ("memory", "2")],
                ),
                on(u(5, 5)),
                S,
                vec![],
            ),
            case(
                "pod-level cpu resource not fit",
                with_pod_level(
                    new_resource_pod(&[u(1, 1)]),
                    &[("cpu", "7m"), ("memory", "2")],
                ),
                on(u(5, 5)),
                U,
                vec![ins("cpu", 7, 5, 10, false)],
            ),
            case(
                "pod-level memory resource not fit",
                with_pod_level(
                    new_resource_pod(&[u(1, 1)]),
                    &[("cpu", "3m"), ("memory", "2")],
                ),
                on(u(5, 19)),
                U,
                vec![ins("memory", 2, 19, 20, false)],
            ),
            case(
                "pod-level hugepages resource fit",
                with_pod_level(
                    new_resource_pod(&[]),
                    &[("cpu", "3m"), ("memory", "2"), (HUGE_A, "5")],
                ),
                vec![],
                S,
                vec![],
            ),
            case(
                "both pod-level and container-level hugepages resource fit",
                with_pod_level(
                    new_resource_pod(&[us(1, 1, &[(HUGE_A, 3)])]),
                    &[("cpu", "3m"), ("memory", "2"), (HUGE_A, "5")],
                ),
                vec![],
                S,
                vec![],
            ),
            case(
                "pod-level hugepages resource not fit",
                with_pod_level(
                    new_resource_pod(&[]),
                    &[("cpu", "3m"), ("memory", "2"), (HUGE_A, "10")],
                ),
                vec![],
                UU,
                vec![ins(HUGE_A, 10, 0, 5, true)],
            ),
            case(
                "one pod-level cpu resource fits and all init and non-init containers resources fit",
                with_init(
                    with_pod_level(
                        new_resource_pod(&[u(1, 1)]),
                        &[("cpu", "3m"), ("memory", "2")],
                    ),
                    &[u(1, 1)],
                ),
                on(u(5, 19)),
                U,
                vec![ins("memory", 2, 19, 20, false)],
            ),
            case(
                "extended resource backed by DRA not enabled",
                new_resource_pod(&[us(1, 1, &[(DRA_EXT, 1)])]),
                on(u(0, 0)),
                UU,
                vec![ins(DRA_EXT, 1, 0, 0, true)],
            ),
        ];
        assert_eq!(cases.len(), 43);
        for c in cases {
            let node = node_info(make_allocatable(10, 20, 32, 5, 20, 5), &c.node_pods);
            let got = run_filter(&c.plugin, &c.pod, &node);
            let reasons: Vec<&str> = c.want.iter().map(|r| r.reason.as_ref()).collect();
            assert_eq!(got, want_status(c.code, &reasons), "{}: status", c.name);

            let state = c
                .plugin
                .compute_pre_filter_state(&PodInfo::from(c.pod.clone()));
            assert_eq!(
                fits_request(&state, &node),
                c.want,
                "{}: insufficient resources",
                c.name
            );
        }
    }

    /// Upstream `TestPreFilterDisabled`.
    #[test]
    fn filter_without_pre_filter_is_an_error_not_a_panic() {
        let node = NodeInfo::from(Node::default());
        let got = NodeResourcesFit::default().filter(
            &CycleState::new(),
            &PodInfo::from(Pod::default()),
            &node,
        );
        assert_eq!(got.code, Code::Error);
        assert_eq!(
            got.message(),
            "error reading \"PreFilterNodeResourcesFit\" from cycleState: not found"
        );
    }

    /// Upstream `TestNotEnoughRequests`: the node allows one pod and holds one.
    #[test]
    fn not_enough_requests_as_upstream() {
        let cases: Vec<(&str, Pod, Usage)> = vec![
            (
                "even without specified resources, predicate fails when there's no space for additional pod",
                Pod::default(),
                u(10, 20),
            ),
            (
                "even if both resources fit, predicate fails when there's no space for additional pod",
                new_resource_pod(&[u(1, 1)]),
                u(5, 5),
            ),
            (
                "even for equal edge case, predicate fails when there's no space for additional pod",
                new_resource_pod(&[u(5, 1)]),
                u(5, 19),
            ),
            (
                "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
                with_init(new_resource_pod(&[u(5, 1)]), &[u(5, 1)]),
                u(5, 19),
            ),
        ];
        for (name, pod, existing) in cases {
            let node = node_info(make_allocatable(10, 20, 1, 0, 0, 0), &on(existing));
            let got = run_filter(&NodeResourcesFit::default(), &pod, &node);
            assert_eq!(got, want_status(U, &[ERR_REASON_TOO_MANY_PODS]), "{name}");
        }
    }

    /// Upstream `TestStorageRequests`.
    #[test]
    fn storage_requests_as_upstream() {
        struct Case {
            name: &'static str,
            pod: Pod,
            existing: Usage,
            want: Status,
        }
        let cases = vec![
            Case {
                name: "empty storage requested, and pod fits",
                pod: new_resource_pod(&[u(1, 1)]),
                existing: u(2, 10),
                want: Status::success(),
            },
            Case {
                name: "storage ephemeral local storage request exceeds allocatable",
                pod: new_resource_pod(&[eph(25)]),
                existing: u(2, 2),
                want: want_status(UU, &["Insufficient ephemeral-storage"]),
            },
            Case {
                name: "ephemeral local storage is sufficient",
                pod: with_init(new_resource_pod(&[eph(5)]), &[]),
                existing: Usage { eph: 10, ..u(2, 2) },
                want: Status::success(),
            },
            Case {
                name: "pod fits",
                pod: new_resource_pod(&[eph(10)]),
                existing: u(2, 2),
                want: Status::success(),
            },
        ];
        for Case {
            name,
            pod,
            existing,
            want,
        } in cases
        {
            let node = node_info(make_allocatable(10, 20, 32, 5, 20, 5), &on(existing));
            let got = run_filter(&NodeResourcesFit::default(), &pod, &node);
            assert_eq!(got, want, "{name}");
        }
    }

    /// Upstream `TestRestartableInitContainers`.
    #[test]
    fn restartable_init_containers_as_upstream() {
        let regular_pod = || Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "regular".into(),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        let with_sidecar = |request: Option<&str>, sidecar_request: Option<&str>| {
            let mut regular = Container {
                name: "regular".into(),
                ..Container::default()
            };
            if let Some(cpu) = request {
                regular = Container {
                    name: "regular".into(),
                    ..container(list(&[("cpu", cpu)]))
                };
            }
            let mut sidecar = Container {
                name: "restartable-init".into(),
                ..Container::default()
            };
            if let Some(cpu) = sidecar_request {
                sidecar = Container {
                    name: "restartable-init".into(),
                    ..container(list(&[("cpu", cpu)]))
                };
            }
            sidecar.restart_policy = Some("Always".into());
            Pod {
                spec: Some(PodSpec {
                    containers: vec![regular],
                    init_containers: Some(vec![sidecar]),
                    ..PodSpec::default()
                }),
                ..Pod::default()
            }
        };
        struct Case {
            name: &'static str,
            pod: Pod,
            sidecars: bool,
            want_pre_filter: Status,
            want_filter: Status,
        }
        let cases = vec![
            Case {
                name: "allow pod without restartable init containers if sidecar containers is disabled",
                pod: regular_pod(),
                sidecars: false,
                want_pre_filter: Status::success(),
                want_filter: Status::success(),
            },
            Case {
                name: "not allow pod with restartable init containers if sidecar containers is disabled",
                pod: with_sidecar(None, None),
                sidecars: false,
                want_pre_filter: Status::new(UU, ERR_REASON_SIDECARS_DISABLED).with_plugin(NAME),
                want_filter: Status::success(),
            },
            Case {
                name: "allow pod without restartable init containers if sidecar containers is enabled",
                pod: regular_pod(),
                sidecars: true,
                want_pre_filter: Status::success(),
                want_filter: Status::success(),
            },
            Case {
                name: "allow pod with restartable init containers if sidecar containers is enabled",
                pod: with_sidecar(None, None),
                sidecars: true,
                want_pre_filter: Status::success(),
                want_filter: Status::success(),
            },
            Case {
                name: "allow pod if the total requested resources do not exceed the node's allocatable resources",
                pod: with_sidecar(Some("1m"), Some("1m")),
                sidecars: true,
                want_pre_filter: Status::success(),
                want_filter: Status::success(),
            },
            Case {
                name: "not allow pod if the total requested resources do exceed the node's allocatable resources",
                pod: with_sidecar(Some("1m"), Some("2m")),
                sidecars: true,
                want_pre_filter: Status::success(),
                want_filter: want_status(UU, &["Insufficient cpu"]),
            },
        ];
        for Case {
            name,
            pod,
            sidecars,
            want_pre_filter,
            want_filter,
        } in cases
        {
            let node = node_info(make_allocatable(2, 0, 1, 0, 0, 0), &[]);
            let plugin = NodeResourcesFit {
                enable_sidecar_containers: sidecars,
                ..NodeResourcesFit::default()
            };
            let pod = PodInfo::from(pod);
            let mut state = CycleState::new();
            let (_, pre_filter) = plugin.pre_filter(&mut state, &pod, &Snapshot::of_nodes(&[]));
            assert_eq!(pre_filter, want_pre_filter, "{name}: prefilter");
            if !pre_filter.is_success() {
                continue;
            }
            assert_eq!(
                plugin.filter(&state, &pod, &node),
                want_filter,
                "{name}: filter"
            );
        }
    }

    /// `st.MakePod().Req(...)...`: one container per request map, plus a
    /// sidecar init container per `sidecar` map.
    fn req_pod(containers: &[&[(&str, &str)]], sidecars: &[&[(&str, &str)]]) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: containers.iter().map(|r| container(list(r))).collect(),
                init_containers: Some(
                    sidecars
                        .iter()
                        .map(|r| Container {
                            restart_policy: Some("Always".into()),
                            ..container(list(r))
                        })
                        .collect(),
                ),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    /// `st.MakeNode().Name(name).Capacity(...)`: capacity and allocatable.
    fn cap_node(name: &'static str, capacity: &[(&str, &str)]) -> (&'static str, Arc<Node>) {
        (name, named_node(name, list(capacity)))
    }

    type ScoreRun = Result<Vec<(String, i64)>, Status>;

    /// Runs PreScore (when asked) and Score for every node, each node's
    /// `NodeInfo` holding the existing pods bound to it.
    fn run_score(
        plugin: &NodeResourcesFit,
        pod: &Pod,
        nodes: &[(&'static str, Arc<Node>)],
        existing: &[(&str, Pod)],
        pre_score: bool,
    ) -> ScoreRun {
        let pod = PodInfo::from(pod.clone());
        let infos: Vec<NodeInfo> = nodes
            .iter()
            .map(|(name, node)| {
                NodeInfo::with_pods(
                    node.clone(),
                    existing.iter().filter(|(n, _)| n == name).map(|(_, p)| p),
                )
            })
            .collect();
        let mut state = CycleState::new();
        if pre_score {
            assert!(
                plugin
                    .pre_score(
                        &mut state,
                        &pod,
                        &Snapshot::of_nodes(&infos),
                        &infos.iter().collect::<Vec<_>>()
                    )
                    .is_success()
            );
        }
        let mut scores = Vec::new();
        for info in &infos {
            let score = plugin.score(&state, &pod, info)?;
            scores.push(NodeScore {
                name: info.name().to_string(),
                score,
            });
        }
        Ok(scores.into_iter().map(|s| (s.name, s.score)).collect())
    }

    fn scores(entries: &[(&str, i64)]) -> ScoreRun {
        Ok(entries.iter().map(|(n, s)| (n.to_string(), *s)).collect())
    }

    const C4K_M10K: &[(&str, &str)] = &[("cpu", "4000"), ("memory", "10000")];
    const C6K_M10K: &[(&str, &str)] = &[("cpu", "6000"), ("memory", "10000")];
    const C10K_M20K: &[(&str, &str)] = &[("cpu", "10000"), ("memory", "20000")];

    /// Upstream `TestLeastAllocatedScoringStrategy`; the three rows with
    /// invalid weights are in `invalid_weights_are_rejected_as_upstream`.
    #[test]
    fn least_allocated_scoring_as_upstream() {
        let req_1k_2k_and_2k_3k = || {
            req_pod(
                &[
                    &[("cpu", "1000"), ("memory", "2000")],
                    &[("cpu", "2000"), ("memory", "3000")],
                ],
                &[],
            )
        };
        let cpu3k_mem0 = || req_pod(&[&[("cpu", "3000"), ("memory", "0")]], &[]);
        let cpu3k_mem5k = || req_pod(&[&[("cpu", "3000"), ("memory", "5000")]], &[]);
        let extended_set = vec![
            ResourceSpec::new("cpu", 1),
            ResourceSpec::new("memory", 1),
            ResourceSpec::new(EXT_RES, 1),
        ];
        struct Case {
            name: &'static str,
            pod: Pod,
            nodes: Vec<(&'static str, Arc<Node>)>,
            existing: Vec<(&'static str, Pod)>,
            resources: Vec<ResourceSpec>,
            want: ScoreRun,
        }
        let cases = vec![
            Case {
                name: "nothing scheduled, nothing requested",
                pod: Pod::default(),
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C4K_M10K)],
                existing: vec![],
                resources: default_resources(),
                want: scores(&[("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)]),
            },
            Case {
                name: "nothing scheduled, resources requested, differently sized nodes",
                pod: req_1k_2k_and_2k_3k(),
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C6K_M10K)],
                existing: vec![],
                resources: default_resources(),
                want: scores(&[("node1", 37), ("node2", 50)]),
            },
            Case {
                name: "Resources not set, pods scheduled with error",
                pod: req_1k_2k_and_2k_3k(),
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C6K_M10K)],
                existing: vec![],
                resources: vec![],
                want: Err(Status::error("resources not found").with_plugin(NAME)),
            },
            Case {
                name: "no resources requested, pods scheduled",
                pod: Pod::default(),
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C4K_M10K)],
                existing: vec![
                    ("node1", Pod::default()),
                    ("node1", Pod::default()),
                    ("node2", Pod::default()),
                    ("node2", Pod::default()),
                ],
                resources: default_resources(),
                want: scores(&[("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)]),
            },
            Case {
                name: "no resources requested, pods scheduled with resources",
                pod: Pod::default(),
                nodes: vec![cap_node("node1", C10K_M20K), cap_node("node2", C10K_M20K)],
                existing: vec![
                    ("node1", cpu3k_mem0()),
                    ("node1", cpu3k_mem0()),
                    ("node2", cpu3k_mem0()),
                    ("node2", cpu3k_mem5k()),
                ],
                resources: default_resources(),
                want: scores(&[("node1", 70), ("node2", 57)]),
            },
            Case {
                name: "resources requested, pods scheduled with resources",
                pod: req_1k_2k_and_2k_3k(),
                nodes: vec![cap_node("node1", C10K_M20K), cap_node("node2", C10K_M20K)],
                existing: vec![("node1", cpu3k_mem0()), ("node2", cpu3k_mem5k())],
                resources: default_resources(),
                want: scores(&[("node1", 57), ("node2", 45)]),
            },
            Case {
                name: "resources requested, pods scheduled with resources, differently sized nodes",
                pod: req_1k_2k_and_2k_3k(),
                nodes: vec![
                    cap_node("node1", C10K_M20K),
                    cap_node("node2", &[("cpu", "10000"), ("memory", "50000")]),
                ],
                existing: vec![("node1", cpu3k_mem0()), ("node2", cpu3k_mem5k())],
                resources: default_resources(),
                want: scores(&[("node1", 57), ("node2", 60)]),
            },
            Case {
                name: "requested resources exceed node capacity",
                pod: cpu3k_mem0(),
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C4K_M10K)],
                existing: vec![("node1", cpu3k_mem0()), ("node2", cpu3k_mem5k())],
                resources: default_resources(),
                want: scores(&[("node1", 50), ("node2", 25)]),
            },
            Case {
                name: "zero node resources, pods scheduled with resources",
                pod: Pod::default(),
                nodes: vec![cap_node("node1", &[]), cap_node("node2", &[])],
                existing: vec![("node1", cpu3k_mem0()), ("node2", cpu3k_mem5k())],
                resources: default_resources(),
                want: scores(&[("node1", 0), ("node2", 0)]),
            },
            Case {
                name: "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
                pod: req_1k_2k_and_2k_3k(),
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C6K_M10K)],
                existing: vec![],
                resources: vec![ResourceSpec::new("memory", 2), ResourceSpec::new("cpu", 1)],
                want: scores(&[("node1", 41), ("node2", 50)]),
            },
            Case {
                name: "bypass extended resource if the pod does not request",
                pod: req_1k_2k_and_2k_3k(),
                nodes: vec![
                    cap_node("node1", C6K_M10K),
                    cap_node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000"), (EXT_RES, "4")],
                    ),
                ],
                existing: vec![],
                resources: extended_set.clone(),
                want: scores(&[("node1", 50), ("node2", 50)]),
            },
            Case {
                name: "honor extended resource if the pod requests",
                pod: req_pod(
                    &[&[("cpu", "3000"), ("memory", "5000"), (EXT_RES, "2")]],
                    &[],
                ),
                nodes: vec![
                    cap_node(
                        "node1",
                        &[("cpu", "6000"), ("memory", "10000"), (EXT_RES, "4")],
                    ),
                    cap_node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000"), (EXT_RES, "10")],
                    ),
                ],
                existing: vec![],
                resources: extended_set,
                want: scores(&[("node1", 50), ("node2", 60)]),
            },
            Case {
                name: "if the node doesn't have a resource",
                pod: req_pod(&[&[("cpu", "3000"), ("memory", "4000")]], &[]),
                nodes: vec![
                    cap_node("node1", C6K_M10K),
                    cap_node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000"), (EXT_RES, "4")],
                    ),
                ],
                existing: vec![],
                resources: vec![
                    ResourceSpec::new(EXT_RES, 2),
                    ResourceSpec::new("cpu", 1),
                    ResourceSpec::new("memory", 1),
                ],
                want: scores(&[("node1", 55), ("node2", 55)]),
            },
        ];
        for Case {
            name,
            pod,
            nodes,
            existing,
            resources,
            want,
        } in cases
        {
            let plugin = match NodeResourcesFit::new(resources) {
                Ok(p) => p,
                Err(errs) => panic!("{name}: unexpected validation errors {errs:?}"),
            };
            assert_eq!(
                run_score(&plugin, &pod, &nodes, &existing, true),
                want,
                "{name}"
            );
        }
    }

    /// The invalid-weight rows of upstream `TestLeastAllocatedScoringStrategy`.
    #[test]
    fn invalid_weights_are_rejected_as_upstream() {
        let cases: Vec<(&str, Vec<ResourceSpec>, &str)> = vec![
            (
                "resource with negative weight",
                vec![ResourceSpec::new("memory", -1), ResourceSpec::new("cpu", 1)],
                "scoringStrategy.resources[0].weight",
            ),
            (
                "resource with zero weight",
                vec![ResourceSpec::new("memory", 1), ResourceSpec::new("cpu", 0)],
                "scoringStrategy.resources[1].weight",
            ),
            (
                "resource weight larger than MaxNodeScore",
                vec![
                    ResourceSpec::new("memory", 1),
                    ResourceSpec::new("cpu", 101),
                ],
                "scoringStrategy.resources[1].weight",
            ),
        ];
        for (name, resources, want_field) in cases {
            match NodeResourcesFit::new(resources) {
                Ok(_) => panic!("{name}: want a validation error"),
                Err(errs) => {
                    let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
                    assert_eq!(fields, vec![want_field], "{name}");
                    assert_eq!(
                        errs[0].error_type,
                        berth_core::validation::ErrorType::Invalid,
                        "{name}"
                    );
                }
            }
        }
    }

    /// The LeastAllocated rows of upstream `TestFitScore`, with and without
    /// PreScore, and with a sidecar on an existing pod.
    #[test]
    fn fit_score_least_allocated_as_upstream() {
        let pod = req_pod(&[&[("cpu", "1000"), ("memory", "2000")]], &[]);
        struct Case {
            name: &'static str,
            nodes: Vec<(&'static str, Arc<Node>)>,
            existing: Vec<(&'static str, Pod)>,
            pre_score: bool,
            want: ScoreRun,
        }
        let cases = vec![
            Case {
                name: "test case for ScoringStrategy LeastAllocated",
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C6K_M10K)],
                existing: vec![
                    (
                        "node1",
                        req_pod(&[&[("cpu", "2000"), ("memory", "4000")]], &[]),
                    ),
                    (
                        "node2",
                        req_pod(&[&[("cpu", "1000"), ("memory", "2000")]], &[]),
                    ),
                ],
                pre_score: true,
                want: scores(&[("node1", 32), ("node2", 63)]),
            },
            Case {
                name: "test case for ScoringStrategy LeastAllocated if PreScore is not called",
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C6K_M10K)],
                existing: vec![
                    (
                        "node1",
                        req_pod(&[&[("cpu", "2000"), ("memory", "4000")]], &[]),
                    ),
                    (
                        "node2",
                        req_pod(&[&[("cpu", "1000"), ("memory", "2000")]], &[]),
                    ),
                ],
                pre_score: false,
                want: scores(&[("node1", 32), ("node2", 63)]),
            },
            Case {
                name: "test case for ScoringStrategy LeastAllocated with sidecar container",
                nodes: vec![cap_node("node1", C4K_M10K), cap_node("node2", C4K_M10K)],
                existing: vec![
                    (
                        "node1",
                        req_pod(
                            &[&[("cpu", "1000"), ("memory", "2000")]],
                            &[&[("cpu", "1000"), ("memory", "2000")]],
                        ),
                    ),
                    (
                        "node2",
                        req_pod(&[&[("cpu", "1000"), ("memory", "2000")]], &[]),
                    ),
                ],
                pre_score: true,
                want: scores(&[("node1", 32), ("node2", 55)]),
            },
        ];
        for Case {
            name,
            nodes,
            existing,
            pre_score,
            want,
        } in cases
        {
            let got = run_score(
                &NodeResourcesFit::default(),
                &pod,
                &nodes,
                &existing,
                pre_score,
            );
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn best_effort_pods_count_with_the_non_zero_defaults_when_scoring() {
        // A pod with a container that requests nothing counts as 100m and
        // 200Mi, on the node (via add_pod) and for the pod being scored.
        let best_effort = req_pod(&[&[]], &[]);
        let nodes = vec![
            cap_node("empty", &[("cpu", "1"), ("memory", "1Gi")]),
            cap_node("busy", &[("cpu", "1"), ("memory", "1Gi")]),
        ];
        let existing = vec![("busy", best_effort.clone()), ("busy", best_effort.clone())];
        // empty: cpu (1000-100)/1000 = 90, memory (1024-200)/1024 = 80 -> 85
        // busy:  cpu (1000-300)/1000 = 70, memory (1024-600)/1024 = 41 -> 55
        assert_eq!(
            run_score(
                &NodeResourcesFit::default(),
                &best_effort,
                &nodes,
                &existing,
                true
            ),
            scores(&[("empty", 85), ("busy", 55)])
        );
    }

    #[test]
    fn extreme_values_neither_overflow_nor_panic() {
        assert_eq!(least_requested_score(0, i64::MAX), MAX_NODE_SCORE);
        assert_eq!(least_requested_score(i64::MAX, i64::MAX), 0);
        assert_eq!(least_requested_score(-5, 10), MAX_NODE_SCORE);
        assert_eq!(least_requested_score(1, 0), 0);
        assert_eq!(least_requested_score(1, -1), 0);

        let huge = "9223372036854775807";
        let node = node_info(
            list(&[
                ("cpu", huge),
                ("memory", huge),
                ("pods", huge),
                (EXT_A, huge),
            ]),
            &[new_resource_pod(&[us(1, 1, &[(EXT_A, 1)])])],
        );
        let pod = new_resource_pod(&[Usage {
            cpu: i64::MAX,
            mem: i64::MAX,
            eph: i64::MAX,
            scalars: vec![(EXT_A, i64::MAX)],
        }]);
        let plugin = NodeResourcesFit::default();
        let status = run_filter(&plugin, &pod, &node);
        assert!(status.is_rejected(), "{status}");
        let info = PodInfo::from(pod);
        let mut state = CycleState::new();
        assert!(
            plugin
                .pre_score(&mut state, &info, &Snapshot::of_nodes(&[]), &[])
                .is_success()
        );
        assert!(plugin.score(&state, &info, &node).is_ok());
    }

    #[test]
    fn garbage_quantities_count_as_zero() {
        let node = node_info(
            list(&[("cpu", "lots"), ("memory", "20"), ("pods", "many")]),
            &[],
        );
        assert_eq!(node.allocatable.milli_cpu, 0);
        assert_eq!(node.allocatable.pods, 0);
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container(list(&[("cpu", "1x"), ("memory", "1")]))],
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        assert_eq!(
            run_filter(&NodeResourcesFit::default(), &pod, &node),
            want_status(U, &[ERR_REASON_TOO_MANY_PODS])
        );
    }

    #[test]
    fn add_pod_counts_pods_and_their_requests() {
        let mut node = node_info(make_allocatable(10, 20, 32, 5, 20, 5), &[]);
        node.add_pod(&new_resource_pod(&[us(1, 2, &[(EXT_A, 3)])]));
        node.add_pod(&Pod::default());
        assert_eq!(node.requested.pods, 2);
        assert_eq!(node.requested.milli_cpu, 1);
        assert_eq!(node.requested.memory, 2);
        assert_eq!(node.requested.scalar(EXT_A), 3);
        // Explicit requests count as they are; a pod without containers
        // adds no non-zero defaults.
        assert_eq!(node.non_zero_requested.milli_cpu, 1);
        assert_eq!(node.non_zero_requested.memory, 2);
        assert_eq!(node.allocatable.pods, 32);
        assert_eq!(node.allocatable.scalar(HUGE_A), 5);
    }

    #[test]
    fn plugin_defaults_match_the_default_profile() {
        let p = NodeResourcesFit::default();
        assert_eq!(p.name(), "NodeResourcesFit");
        assert_eq!(DEFAULT_WEIGHT, 1);
        assert_eq!(p.resources(), default_resources().as_slice());
        assert!(p.enable_sidecar_containers && p.enable_pod_level_resources);
    }

    /// The cpu and memory requests read from the queued pod's parsed usage
    /// are the requests parsed again, for any pod (containers, init
    /// containers and sidecars, pod-level resources, overhead; cpu or
    /// memory missing, zero, negative or unparseable) and any options.
    mod parsed_usage {
        use super::*;
        use berth_core::resources::CONTAINER_RESTART_POLICY_ALWAYS;
        use berth_core::test_util::{make_container, make_pod};
        use proptest::prelude::*;

        fn amount() -> impl Strategy<Value = Option<&'static str>> {
            prop_oneof![
                Just(None),
                Just(Some("0")),
                Just(Some("100m")),
                Just(Some("2")),
                Just(Some("1Gi")),
                Just(Some("500Mi")),
                Just(Some("-1")),
                Just(Some("bogus")),
            ]
        }

        fn requests() -> impl Strategy<Value = Vec<(&'static str, &'static str)>> {
            (amount(), amount()).prop_map(|(cpu, memory)| {
                [("cpu", cpu), ("memory", memory)]
                    .into_iter()
                    .filter_map(|(name, q)| q.map(|q| (name, q)))
                    .collect()
            })
        }

        fn container(requests: Vec<(&str, &str)>, sidecar: bool) -> Container {
            let c = make_container().name("c").requests(&requests);
            if sidecar {
                c.restart_policy(CONTAINER_RESTART_POLICY_ALWAYS).obj()
            } else {
                c.obj()
            }
        }

        fn pod() -> impl Strategy<Value = Pod> {
            (
                proptest::collection::vec(requests(), 1..3),
                proptest::collection::vec((requests(), any::<bool>()), 0..3),
                proptest::option::of(requests()),
                proptest::option::of(requests()),
            )
                .prop_map(|(containers, inits, pod_level, overhead)| {
                    let mut pod = make_pod()
                        .containers(
                            containers
                                .into_iter()
                                .map(|r| container(r, false))
                                .collect(),
                        )
                        .init_containers(inits.into_iter().map(|(r, s)| container(r, s)).collect());
                    if let Some(requests) = pod_level {
                        pod = pod.resources(ResourceRequirements {
                            requests: Some(
                                requests
                                    .into_iter()
                                    .map(|(n, q)| (n.to_string(), Q(q.to_string())))
                                    .collect(),
                            ),
                            ..ResourceRequirements::default()
                        });
                    }
                    if let Some(overhead) = overhead {
                        pod = pod.overhead(&overhead);
                    }
                    pod.obj()
                })
        }

        proptest! {
            #[test]
            fn cpu_and_memory_read_from_the_parsed_usage_are_the_parsed_again(
                pod in pod(),
                pod_level_resources in any::<bool>(),
                non_zero_defaults in any::<bool>(),
            ) {
                let info = PodInfo::new(Arc::new(pod));
                let opts = PodResourcesOptions { pod_level_resources, non_zero_defaults };
                let resources = default_resources();
                prop_assert_eq!(
                    score_requests(&info, &resources, opts),
                    parse_score_requests(&info, &resources, opts)
                );
            }
        }
    }
}
