//! What a scheduling cycle reads of the cluster, after upstream's
//! `NodeInfo`, `PodInfo` and `Snapshot`: every node with the pods on it
//! (their requests, labels, pod-affinity terms and host ports), the images
//! nodes report, namespace labels, the selectors of the workloads that own
//! pods, and a log of the pods added to and removed from nodes, so that
//! plugins can keep per-cycle counts up to date instead of recounting every
//! pod of the cluster in every cycle.
//!
//! The [`crate::cache::Cache`] owns all of it and lends a [`Snapshot`] to
//! each cycle (the scheduling loop owns the cache, so no copy is made).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use berth_core::labels::LabelSelector;
use k8s_openapi::api::core::v1::{Node, Pod, Toleration};

use crate::affinity_terms::PodAffinityTerms;
use crate::resources::{PodUsage, Resource};
use crate::taint_sets::{TaintSetId, TaintSets};

/// A host port a container claims (`hostIP`, protocol, `hostPort`), with
/// upstream's defaults filled in: `0.0.0.0` and `TCP`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

/// Upstream's `DefaultBindAllHostIP`.
pub const BIND_ALL_HOST_IP: &str = "0.0.0.0";

impl HostPort {
    /// `HostPortInfo.sanitize`: empty IP means all, empty protocol TCP.
    pub fn new(ip: &str, protocol: &str, port: i32) -> Self {
        HostPort {
            ip: if ip.is_empty() { BIND_ALL_HOST_IP } else { ip }.to_string(),
            protocol: if protocol.is_empty() { "TCP" } else { protocol }.to_string(),
            port,
        }
    }

    /// `HostPortInfo.CheckConflict` of `self` (wanted) against one port in
    /// use: same protocol and port, and either side binds all addresses or
    /// both bind the same one.
    pub fn conflicts_with(&self, used: &HostPort) -> bool {
        self.port > 0
            && self.port == used.port
            && self.protocol == used.protocol
            && (self.ip == BIND_ALL_HOST_IP || used.ip == BIND_ALL_HOST_IP || self.ip == used.ip)
    }
}

/// `GetHostPorts`: the host ports of the pod's containers (init containers
/// included, as upstream's `GetHostPorts` walks both lists), those with a
/// `hostPort` above zero.
pub fn pod_host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.unwrap_or(0) > 0)
        .map(|p| {
            HostPort::new(
                p.host_ip.as_deref().unwrap_or(""),
                p.protocol.as_deref().unwrap_or(""),
                p.host_port.unwrap_or(0),
            )
        })
        .collect()
}

/// A pod bound (or assumed) to a node, as the node keeps it.
#[derive(Debug, Clone)]
pub struct NodePod {
    pub pod: Arc<Pod>,
    /// Its pod-(anti-)affinity terms; `None` when it has none (or they do
    /// not parse: the API server validates them, so such a pod is ignored
    /// rather than failing every other pod's cycle).
    pub terms: Option<Arc<PodAffinityTerms>>,
    /// What it adds to the node, kept so that preemption's dry run can
    /// take it off a copy of the node and put it back without parsing its
    /// requests again.
    pub usage: PodUsage,
}

impl NodePod {
    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or("")
    }

    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.pod.metadata.labels.as_ref()
    }

    /// Terminating pods do not count for spreading (upstream #87621).
    pub fn is_terminating(&self) -> bool {
        self.pod.metadata.deletion_timestamp.is_some()
    }

    fn same_pod(&self, pod: &Pod) -> bool {
        self.pod.metadata.namespace == pod.metadata.namespace
            && self.pod.metadata.name == pod.metadata.name
    }
}

/// What the scheduler knows about one node: the node object, what it can
/// hold, the pods bound to it and their aggregate requests.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    node: Arc<Node>,
    /// `metadata.name`, shared: a failed cycle names every node it
    /// rejected.
    name: Arc<str>,
    /// Sum of the requests of the pods on the node, and their count.
    pub requested: Resource,
    /// Like `requested`, but CPU and memory count pods that request none
    /// as requesting the scheduler's defaults (100m, 200Mi), so scoring
    /// still spreads best-effort pods (upstream's `NonZeroRequested`; only
    /// `milli_cpu` and `memory` are filled).
    pub non_zero_requested: Resource,
    /// `node.status.allocatable`, with `pods` the allowed pod number.
    pub allocatable: Resource,
    /// The node's taint list in the snapshot's [`TaintSets`], or
    /// [`TaintSetId::UNKNOWN`] when the node was built without one (plugins
    /// then read the node's taints directly).
    pub taint_set: TaintSetId,
    /// `spec.unschedulable` (cordoned), kept here so the filter that reads
    /// it for every node does not chase the pointer to the node object.
    pub unschedulable: bool,
    /// The pods on the node.
    pub pods: Vec<NodePod>,
    /// How many of them have pod affinity or anti-affinity terms
    /// (upstream's `PodsWithAffinity`), required anti-affinity terms
    /// (`PodsWithRequiredAntiAffinity`), and terms that can change another
    /// pod's InterPodAffinity score.
    pub pods_with_affinity: usize,
    pub pods_with_required_anti_affinity: usize,
    pub pods_affecting_scores: usize,
    /// The host ports the pods use (`UsedPorts`), one entry per claim.
    pub used_ports: Vec<HostPort>,
    /// The images the node reports (`status.images`): every name of each,
    /// with its size in bytes (behind a pointer: only ImageLocality reads
    /// them, and the filters read the rest of the node for every pod;
    /// shared, so a copy of the node for preemption's dry run or with its
    /// nominated pods does not copy them).
    pub images: Arc<HashMap<String, i64>>,
    /// The node's labels again, laid out for [`NodeInfo::label`].
    flat_labels: FlatLabels,
    /// Where the node is in its snapshot's `nodes` (set by the cache that
    /// holds it), so plugins can keep per-node data in plain arrays;
    /// `usize::MAX` for a node outside a snapshot.
    position: usize,
    /// Set by the cache that holds the node to a number it never gave
    /// before, whenever the node or its pods change (0 outside a cache):
    /// two equal versions of the same cache are the same node contents.
    version: u64,
}

/// A node's labels laid out flat for the lookups the plugins make per node
/// per pod (a topology key, an affinity term's key), in one string: a flag
/// (`1`: a label did not fit and lookups must ask the map), then per label
/// the key's and the value's lengths (two base-128 digits each, so ASCII)
/// followed by the key and the value. A lookup compares lengths first and
/// reads one short buffer; a `BTreeMap` compares against key strings that
/// are each an allocation of their own, a cache miss apiece over thousands
/// of nodes. Being a `str` throughout, a value found is sliced out with
/// two char-boundary checks, not validated as UTF-8 again.
#[derive(Debug, Clone, Default)]
struct FlatLabels(Arc<str>);

/// A length a [`FlatLabels`] entry can hold: two base-128 digits. The API
/// server caps label keys at 317 bytes and values at 63.
const FLAT_LABEL_MAX_LEN: usize = 1 << 14;

impl FlatLabels {
    fn new(labels: Option<&BTreeMap<String, String>>) -> Self {
        let mut text = String::from("0");
        let push_len = |text: &mut String, len: usize| {
            for digit in [len >> 7, len & 0x7f] {
                text.push(char::from(digit as u8));
            }
        };
        for (k, v) in labels.into_iter().flatten() {
            if k.len() >= FLAT_LABEL_MAX_LEN || v.len() >= FLAT_LABEL_MAX_LEN {
                text.replace_range(0..1, "1");
                continue;
            }
            push_len(&mut text, k.len());
            push_len(&mut text, v.len());
            text.push_str(k);
            text.push_str(v);
        }
        FlatLabels(Arc::from(text))
    }

    /// Some label was too long to lay out.
    fn incomplete(&self) -> bool {
        self.0.starts_with('1')
    }

    #[inline]
    fn get(&self, key: &str) -> Option<&str> {
        let bytes = self.0.as_bytes();
        let len = |hi: u8, lo: u8| (usize::from(hi) << 7) | usize::from(lo);
        let mut at = 1;
        while let Some(&[k0, k1, v0, v1]) = bytes.get(at..at + 4) {
            let key_start = at + 4;
            let value_start = key_start + len(k0, k1);
            let next = value_start + len(v0, v1);
            if value_start - key_start == key.len()
                && bytes.get(key_start..value_start)? == key.as_bytes()
            {
                return self.0.get(value_start..next);
            }
            at = next;
        }
        None
    }
}

fn node_images(node: &Node) -> HashMap<String, i64> {
    let mut images = HashMap::new();
    for image in node.status.iter().flat_map(|s| s.images.iter().flatten()) {
        for name in image.names.iter().flatten() {
            images.insert(name.clone(), image.size_bytes.unwrap_or(0));
        }
    }
    images
}

impl NodeInfo {
    /// A node with no pods counted yet. `allocatable` comes from
    /// `node.status.allocatable`; an unparseable quantity there counts as
    /// zero, since the API server validates quantities on write and a
    /// scheduler cannot reject a node it merely reads.
    pub fn new(node: Arc<Node>) -> Self {
        let allocatable = crate::resources::resource_list_to_resource(
            node.status.as_ref().and_then(|s| s.allocatable.as_ref()),
        );
        let unschedulable = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        let images = Arc::new(node_images(&node));
        let flat_labels = FlatLabels::new(node.metadata.labels.as_ref());
        NodeInfo {
            name: Arc::from(node.metadata.name.as_deref().unwrap_or("")),
            flat_labels,
            position: usize::MAX,
            version: 0,
            node,
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            allocatable,
            taint_set: TaintSetId::UNKNOWN,
            unschedulable,
            pods: Vec::new(),
            pods_with_affinity: 0,
            pods_with_required_anti_affinity: 0,
            pods_affecting_scores: 0,
            used_ports: Vec::new(),
            images,
        }
    }

    /// A node whose taint list is interned in `sets`, so that
    /// TaintToleration judges each distinct list once per pod.
    pub fn interned(node: Arc<Node>, sets: &mut TaintSets) -> Self {
        let taint_set = sets.intern(
            node.spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]),
        );
        NodeInfo {
            taint_set,
            ..NodeInfo::new(node)
        }
    }

    /// A node with `pods` already bound to it.
    pub fn with_pods<'a>(node: Arc<Node>, pods: impl IntoIterator<Item = &'a Pod>) -> Self {
        let mut info = NodeInfo::new(node);
        for pod in pods {
            info.add_pod(pod);
        }
        info
    }

    /// Counts a pod bound to this node (see [`NodeInfo::add_pod_info`]).
    pub fn add_pod(&mut self, pod: &Pod) {
        self.add_pod_info(&PodInfo::from(pod.clone()));
    }

    /// Counts a pod bound to this node: its requests (to `requested`, one
    /// to `requested.pods`), its non-zero requests, its host ports and its
    /// affinity terms; the pod joins `pods`.
    pub fn add_pod_info(&mut self, pod: &PodInfo) {
        self.add_node_pod(NodePod {
            pod: pod.pod_arc().clone(),
            terms: pod.affinity_terms().cloned(),
            usage: pod.usage().clone(),
        });
    }

    /// Counts a pod as [`NodeInfo::add_pod_info`] does, from what a node
    /// kept of it (preemption's dry run puts a victim back with this).
    pub fn add_node_pod(&mut self, pod: NodePod) {
        self.add_usage(&pod.usage);
        self.used_ports.extend(pod_host_ports(&pod.pod));
        if let Some(t) = &pod.terms {
            self.pods_with_affinity += 1;
            if !t.required_anti_affinity.is_empty() {
                self.pods_with_required_anti_affinity += 1;
            }
            if t.affects_scores() {
                self.pods_affecting_scores += 1;
            }
        }
        self.pods.push(pod);
    }

    /// Stops counting a pod counted with [`NodeInfo::add_pod_info`]; the
    /// node pod it was, if it was there.
    pub fn remove_pod_info(&mut self, pod: &PodInfo) -> Option<NodePod> {
        let i = self.pods.iter().position(|p| p.same_pod(pod.pod()))?;
        Some(self.remove_pod_at(i))
    }

    /// Stops counting the pod at `i` of `pods` (the last pod takes its
    /// place); the node pod it was.
    pub fn remove_pod_at(&mut self, i: usize) -> NodePod {
        let gone = self.pods.swap_remove(i);
        self.remove_usage(&gone.usage);
        // No claimed port on the node: none of the pod's to give back
        // (and its spec need not be read).
        let ports = if self.used_ports.is_empty() {
            Vec::new()
        } else {
            pod_host_ports(&gone.pod)
        };
        for port in ports {
            if let Some(j) = self.used_ports.iter().position(|p| *p == port) {
                self.used_ports.swap_remove(j);
            }
        }
        if let Some(t) = &gone.terms {
            self.pods_with_affinity -= 1;
            if !t.required_anti_affinity.is_empty() {
                self.pods_with_required_anti_affinity -= 1;
            }
            if t.affects_scores() {
                self.pods_affecting_scores -= 1;
            }
        }
        gone
    }

    /// Counts a pod whose usage is already computed (requests only).
    pub fn add_usage(&mut self, usage: &PodUsage) {
        self.requested.add(&usage.requested);
        self.non_zero_requested.milli_cpu = self
            .non_zero_requested
            .milli_cpu
            .saturating_add(usage.non_zero_milli_cpu);
        self.non_zero_requested.memory = self
            .non_zero_requested
            .memory
            .saturating_add(usage.non_zero_memory);
    }

    /// Stops counting a pod counted with [`NodeInfo::add_usage`].
    pub fn remove_usage(&mut self, usage: &PodUsage) {
        self.requested.sub(&usage.requested);
        self.non_zero_requested.milli_cpu = self
            .non_zero_requested
            .milli_cpu
            .saturating_sub(usage.non_zero_milli_cpu);
        self.non_zero_requested.memory = self
            .non_zero_requested
            .memory
            .saturating_sub(usage.non_zero_memory);
    }

    /// Replaces the node object (an update from the API), keeping the pods
    /// counted: allocatable, images and the interned taint list follow the
    /// new node.
    pub fn set_node(&mut self, node: Arc<Node>, sets: &mut TaintSets) {
        let fresh = NodeInfo::interned(node, sets);
        self.node = fresh.node;
        self.name = fresh.name;
        self.allocatable = fresh.allocatable;
        self.taint_set = fresh.taint_set;
        self.unschedulable = fresh.unschedulable;
        self.images = fresh.images;
        self.flat_labels = fresh.flat_labels;
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The names of the images the node reports.
    pub fn clone_images(&self) -> Vec<String> {
        self.images.keys().cloned().collect()
    }

    /// The shared handle, for callers that keep the node beyond the cycle.
    pub fn node_arc(&self) -> &Arc<Node> {
        &self.node
    }

    /// The node's name, or "" when unset.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name, shared.
    pub fn name_arc(&self) -> &Arc<str> {
        &self.name
    }

    /// The node's labels.
    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.node.metadata.labels.as_ref()
    }

    /// The node's index in its snapshot's `nodes`, when it is in one.
    #[inline]
    pub fn position(&self) -> Option<usize> {
        (self.position != usize::MAX).then_some(self.position)
    }

    /// Records that the node is at `position` in its snapshot's `nodes`
    /// (whoever keeps the list keeps this true); `usize::MAX`: in none.
    pub fn set_position(&mut self, position: usize) {
        self.position = position;
    }

    /// See the field: which contents of the node this is, within the
    /// cache that holds it.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Records a change of the node's contents (the cache that holds the
    /// node numbers them).
    pub fn set_version(&mut self, version: u64) {
        self.version = version;
    }

    /// The value of label `key`, if the node has it.
    #[inline]
    pub fn label(&self, key: &str) -> Option<&str> {
        match self.flat_labels.get(key) {
            None if self.flat_labels.incomplete() => {
                self.labels().and_then(|l| l.get(key)).map(String::as_str)
            }
            found => found,
        }
    }
}

impl From<Node> for NodeInfo {
    fn from(node: Node) -> Self {
        NodeInfo::new(Arc::new(node))
    }
}

/// The pod being scheduled (or one the cache counts), with what is
/// computed once per pod version: its requests as a node counts them and
/// its parsed pod-affinity terms.
#[derive(Debug, Clone)]
pub struct PodInfo {
    pod: Arc<Pod>,
    /// What the pod adds to a node, computed once per pod (version) when
    /// it is queued, so assuming it does not parse its quantities again.
    usage: PodUsage,
    affinity: Result<Option<Arc<PodAffinityTerms>>, Arc<str>>,
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> Self {
        let usage = PodUsage::of(&pod);
        let affinity = PodAffinityTerms::of(&pod)
            .map(|t| t.map(Arc::new))
            .map_err(|e| Arc::from(e.to_string()));
        PodInfo {
            pod,
            usage,
            affinity,
        }
    }

    /// The pod's requests as a node counts them.
    pub fn usage(&self) -> &PodUsage {
        &self.usage
    }

    pub fn pod(&self) -> &Pod {
        &self.pod
    }

    pub fn pod_arc(&self) -> &Arc<Pod> {
        &self.pod
    }

    /// The pod's parsed pod-(anti-)affinity terms, `None` when it has none
    /// or they do not parse.
    pub fn affinity_terms(&self) -> Option<&Arc<PodAffinityTerms>> {
        self.affinity.as_ref().ok().and_then(Option::as_ref)
    }

    /// Why the pod's affinity terms do not parse, if they do not.
    pub fn affinity_error(&self) -> Option<&str> {
        self.affinity.as_ref().err().map(|e| &**e)
    }

    /// `spec.tolerations`, empty when unset.
    pub fn tolerations(&self) -> &[Toleration] {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or(&[])
    }

    /// `spec.nodeName`, "" when unset.
    pub fn node_name(&self) -> &str {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("")
    }

    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or("")
    }

    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.pod.metadata.labels.as_ref()
    }
}

impl From<Pod> for PodInfo {
    fn from(pod: Pod) -> Self {
        PodInfo::new(Arc::new(pod))
    }
}

/// The selectors of the workloads a pod belongs to, for PodTopologySpread's
/// default constraints (upstream's `helper.DefaultSelector` over the
/// Services, ReplicationControllers, ReplicaSets and StatefulSets that
/// match the pod). berth serves none of those types yet: the scheduler's
/// cache holds one of these, and the workload controllers plug theirs in
/// when they exist ([`crate::cache::Cache::set_workloads`]).
pub trait WorkloadSelectors: Send + Sync + fmt::Debug {
    /// The merged selector of the pod's Services and of its controlling
    /// owner; empty when none is known (then no default constraint
    /// applies to the pod, as upstream).
    fn default_selector(&self, pod: &Pod) -> LabelSelector;
}

/// What the scheduler reads today: no Services (berth serves them, the
/// scheduler does not watch them yet), ReplicationControllers, ReplicaSets
/// or StatefulSets (the server serves the last two now), so upstream's
/// `DefaultSelector` finds none and every
/// default selector is empty.
#[derive(Debug, Default, Clone, Copy)]
pub struct ServedWorkloads;

impl WorkloadSelectors for ServedWorkloads {
    fn default_selector(&self, _pod: &Pod) -> LabelSelector {
        LabelSelector::default()
    }
}

/// A pod added to (`delta` 1) or removed from (-1) the node at index
/// `node` of the snapshot's epoch.
#[derive(Debug, Clone)]
pub struct PodChange {
    pub node: usize,
    pub pod: NodePod,
    pub delta: i64,
}

/// The pods added to and removed from nodes, in order, numbered from
/// `first`. Bounded: plugins whose counts are older than the oldest entry
/// count again from the nodes.
#[derive(Debug, Default)]
pub struct PodLog {
    first: u64,
    entries: VecDeque<PodChange>,
}

/// How many changes the log keeps.
pub const POD_LOG_CAPACITY: usize = 1 << 15;

impl PodLog {
    pub const fn new() -> Self {
        PodLog {
            first: 0,
            entries: VecDeque::new(),
        }
    }

    /// The number the next change will have.
    pub fn end(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    pub fn push(&mut self, change: PodChange) {
        if self.entries.len() == POD_LOG_CAPACITY {
            self.entries.pop_front();
            self.first += 1;
        }
        self.entries.push_back(change);
    }

    /// The changes numbered `from` and later, or `None` when some of them
    /// were dropped already.
    pub fn since(&self, from: u64) -> Option<impl Iterator<Item = &PodChange>> {
        let skip = usize::try_from(from.checked_sub(self.first)?).ok()?;
        (skip <= self.entries.len()).then(|| self.entries.iter().skip(skip))
    }
}

/// Labels of namespaces, by name.
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

/// Where a snapshot stands: which cache, which epoch of its nodes and
/// namespaces (bumped whenever a node comes or goes or changes its labels
/// or taints, or a namespace's labels change) and how far into its pod
/// log. Counts kept across cycles are valid while the cache and epoch are
/// the same; the pod log brings them forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub cache: u64,
    pub epoch: u64,
}

/// The cluster as one cycle sees it.
#[derive(Clone, Copy)]
pub struct Snapshot<'a> {
    pub nodes: &'a [NodeInfo],
    pub version: Version,
    pub log: &'a PodLog,
    pub namespaces: &'a NamespaceLabels,
    pub workloads: &'a dyn WorkloadSelectors,
    /// How many nodes report each image name (`ImageStateSummary.NumNodes`).
    pub image_nodes: &'a BTreeMap<String, usize>,
    /// Pods with required anti-affinity terms, cluster-wide.
    pub pods_with_required_anti_affinity: usize,
    /// Pods whose terms can change other pods' InterPodAffinity scores.
    pub pods_affecting_scores: usize,
}

static NO_LOG: PodLog = PodLog::new();
static NO_NAMESPACES: NamespaceLabels = BTreeMap::new();
static NO_IMAGES: BTreeMap<String, usize> = BTreeMap::new();

impl<'a> Snapshot<'a> {
    /// A snapshot of these nodes alone (no namespaces, no workloads), as
    /// tests and `berth check` build one; it shares no version with any
    /// cache, so nothing counted for a cache is reused for it.
    pub fn of_nodes(nodes: &'a [NodeInfo]) -> Self {
        Snapshot {
            nodes,
            version: Version {
                cache: u64::MAX,
                epoch: u64::MAX,
            },
            log: &NO_LOG,
            namespaces: &NO_NAMESPACES,
            workloads: &ServedWorkloads,
            image_nodes: &NO_IMAGES,
            pods_with_required_anti_affinity: nodes
                .iter()
                .map(|n| n.pods_with_required_anti_affinity)
                .sum(),
            pods_affecting_scores: nodes.iter().map(|n| n.pods_affecting_scores).sum(),
        }
    }

    /// Labels of namespace `name`, if known.
    pub fn namespace_labels(&self, name: &str) -> Option<&'a BTreeMap<String, String>> {
        self.namespaces.get(name)
    }
}

impl fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("nodes", &self.nodes.len())
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NodeInfo::label` answers as the labels map would, whatever the
    /// keys' lengths and order.
    #[test]
    fn label_lookup_matches_the_map() {
        let long = "v".repeat(usize::from(u16::MAX) + 1);
        let longest = "w".repeat(FLAT_LABEL_MAX_LEN - 1);
        let too_long = "x".repeat(FLAT_LABEL_MAX_LEN);
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![],
            vec![("a", "1")],
            vec![("é", "ü"), ("ключ", "значение"), ("k", "🙂")],
            vec![
                ("a", longest.as_str()),
                ("b", too_long.as_str()),
                ("c", "3"),
            ],
            vec![
                (longest.as_str(), "l"),
                (too_long.as_str(), "t"),
                ("c", "3"),
            ],
            vec![
                ("kubernetes.io/hostname", "node-1"),
                ("topology.kubernetes.io/zone", "zone-a"),
                ("topology.kubernetes.io/region", "r"),
                ("zone", ""),
            ],
            vec![("ab", "x"), ("ba", "y"), ("a", "z"), ("abc", "w")],
            vec![("big", long.as_str()), ("small", "s")],
        ];
        let probes = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "abcd",
            "zone",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "topology.kubernetes.io/zonE",
            "big",
            "small",
            "é",
            "ключ",
            "k",
            "b",
            "c",
        ];
        for labels in cases {
            let map: BTreeMap<String, String> = labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let mut node = Node::default();
            node.metadata.labels = Some(map.clone());
            let info = NodeInfo::new(Arc::new(node));
            for key in probes.iter().copied().chain(labels.iter().map(|(k, _)| *k)) {
                assert_eq!(
                    info.label(key),
                    map.get(key).map(String::as_str),
                    "{key:?} in {labels:?}"
                );
            }
        }
    }

    proptest::proptest! {
        /// The same law for any labels: every key found with its value,
        /// any other string not found.
        #[test]
        fn label_lookup_matches_the_map_for_any_labels(
            map in proptest::collection::btree_map(".{0,12}", ".{0,12}", 0..8),
            probe in ".{0,12}",
        ) {
            let mut node = Node::default();
            node.metadata.labels = Some(map.clone());
            let info = NodeInfo::new(Arc::new(node));
            for (key, value) in &map {
                proptest::prop_assert_eq!(info.label(key), Some(value.as_str()));
            }
            proptest::prop_assert_eq!(info.label(&probe), map.get(&probe).map(String::as_str));
        }
    }
}
