//! Matching pods per topology domain, per constraint (upstream's
//! `TpValueToMatchNum` and `TopologyValueToPodCounts`), kept in the cycle
//! state's memory from one cycle to the next: pods of one workload share
//! their constraints, so the next pod's counts are the last pod's plus the
//! pods the snapshot's log added or removed since. Counted again from the
//! nodes when the nodes' epoch moved (a node came, went, or changed labels
//! or taints) or the log no longer reaches back far enough.

use berth_core::FeatureGates;
use berth_core::node_affinity::RequiredNodeAffinity;
use k8s_openapi::api::core::v1::{Pod, Toleration};

use super::{InclusionPolicy, SpreadConstraint, node_has_all_keys};
use crate::framework::{DomainMap, NodeInfo};
use crate::snapshot::{NodePod, Snapshot, Version};

/// The memory key.
pub const MEMORY_KEY: &str = "PodTopologySpreadCounts";

/// How many sets of counts are kept (one per distinct set of constraints
/// recently scheduled).
pub const KEPT: usize = 8;

/// What the counts depend on besides the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct CountKey {
    pub namespace: String,
    pub constraints: Vec<SpreadConstraint>,
    /// Only nodes with every topology key count (always for filtering;
    /// for scoring unless the constraints are the system defaults).
    pub require_all_keys: bool,
    /// The pod's required node affinity, when a constraint honours it.
    pub affinity: Option<RequiredNodeAffinity>,
    /// The pod's tolerations, when a constraint honours taints.
    pub tolerations: Option<Vec<Toleration>>,
}

impl CountKey {
    pub fn new(pod: &Pod, constraints: Vec<SpreadConstraint>, require_all_keys: bool) -> Self {
        let honours = |f: fn(&SpreadConstraint) -> InclusionPolicy| {
            constraints.iter().any(|c| f(c) == InclusionPolicy::Honor)
        };
        let affinity =
            honours(|c| c.node_affinity_policy).then(|| RequiredNodeAffinity::of_pod(pod));
        let tolerations = honours(|c| c.node_taints_policy).then(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.tolerations.clone())
                .unwrap_or_default()
        });
        CountKey {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            constraints,
            require_all_keys,
            affinity,
            tolerations,
        }
    }
}

/// Counts for one key.
#[derive(Debug, Clone)]
pub struct DomainCounts {
    pub key: CountKey,
    version: Version,
    /// The pod log position the counts include.
    seen: u64,
    /// Per constraint: matching pods per topology value, with an entry
    /// (maybe 0) for the value of every node that counts.
    pub per_constraint: Vec<Domains>,
}

/// One constraint's domains (upstream's `TpValueToMatchNum`): each topology
/// value's count, and for every node of the snapshot the domain its label
/// value names, so that Filter and Score find a node's count by its
/// position instead of looking its label up and hashing the value.
#[derive(Debug, Clone, Default)]
pub struct Domains {
    topology_key: String,
    slot_of: DomainMap<u32>,
    counts: Vec<i64>,
    /// Per node position: its value's slot, [`NO_LABEL`] or [`NO_DOMAIN`];
    /// empty when the nodes' positions were not known when counting.
    node_slots: Vec<u32>,
}

/// The node lacks the topology key.
const NO_LABEL: u32 = u32::MAX;
/// The node's value is no domain (no node with it counts).
const NO_DOMAIN: u32 = u32::MAX - 1;

impl Domains {
    fn new(topology_key: &str) -> Self {
        Domains {
            topology_key: topology_key.to_string(),
            ..Domains::default()
        }
    }

    /// The count of topology value `value`, 0 when it is no domain.
    pub fn get(&self, value: &str) -> i64 {
        self.slot_of
            .get(value)
            .map_or(0, |&slot| self.counts[slot as usize])
    }

    /// The count of `node`'s domain (0 when its value is no domain);
    /// `None` when the node lacks the topology key.
    #[inline]
    pub fn of_node(&self, node: &NodeInfo) -> Option<i64> {
        match node.position().and_then(|p| self.node_slots.get(p)) {
            Some(&NO_LABEL) => None,
            Some(&NO_DOMAIN) => Some(0),
            Some(&slot) => Some(self.counts[slot as usize]),
            None => node.label(&self.topology_key).map(|v| self.get(v)),
        }
    }

    /// How many domains there are.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The least populated domain's count.
    pub fn min(&self) -> Option<i64> {
        self.counts.iter().copied().min()
    }

    /// The slot of `value`, made a domain if it is not one yet.
    fn slot(&mut self, value: &str) -> usize {
        if let Some(&slot) = self.slot_of.get(value) {
            return slot as usize;
        }
        let slot = self.counts.len();
        self.slot_of.insert(value.to_string(), slot as u32);
        self.counts.push(0);
        slot
    }

    /// Maps every node's position to its domain, once all are known; left
    /// empty (lookups by label) unless every node is at its position.
    fn map_nodes(&mut self, nodes: &[NodeInfo]) {
        let at_positions = nodes
            .iter()
            .enumerate()
            .all(|(i, n)| n.position() == Some(i));
        if !at_positions || self.counts.len() >= NO_DOMAIN as usize {
            return;
        }
        self.node_slots = nodes
            .iter()
            .map(|n| match n.label(&self.topology_key) {
                None => NO_LABEL,
                Some(v) => self.slot_of.get(v).copied().unwrap_or(NO_DOMAIN),
            })
            .collect();
    }
}

/// The remembered counts, most recently used last.
#[derive(Debug, Default)]
pub struct Memory {
    pub entries: Vec<DomainCounts>,
}

/// A stand-in pod carrying the key's tolerations and affinity for the
/// inclusion checks.
struct Inclusion<'a> {
    key: &'a CountKey,
    pod: Pod,
    affinity: RequiredNodeAffinity,
    gates: FeatureGates,
}

impl<'a> Inclusion<'a> {
    fn new(key: &'a CountKey, gates: FeatureGates) -> Self {
        let mut pod = Pod::default();
        if let Some(t) = &key.tolerations {
            pod.spec = Some(k8s_openapi::api::core::v1::PodSpec {
                tolerations: Some(t.clone()),
                ..Default::default()
            });
        }
        Inclusion {
            key,
            pod,
            affinity: key.affinity.clone().unwrap_or_default(),
            gates,
        }
    }

    /// Whether the node counts at all, then per constraint.
    fn node_counts(&self, node: &NodeInfo) -> bool {
        !self.key.require_all_keys || node_has_all_keys(node, &self.key.constraints)
    }

    fn includes(&self, c: &SpreadConstraint, node: &NodeInfo) -> bool {
        c.includes(node, &self.affinity, &self.pod, self.gates)
    }
}

fn counts_pod(key: &CountKey, c: &SpreadConstraint, pod: &NodePod) -> bool {
    !pod.is_terminating() && pod.namespace() == key.namespace && c.selects(pod.labels())
}

impl DomainCounts {
    /// Counts from every node (`calPreFilterState` / PreScore's loop).
    fn count(key: CountKey, snapshot: &Snapshot<'_>, gates: FeatureGates) -> Self {
        let mut per_constraint: Vec<Domains> = key
            .constraints
            .iter()
            .map(|c| Domains::new(&c.topology_key))
            .collect();
        {
            let inclusion = Inclusion::new(&key, gates);
            for node in snapshot.nodes {
                if !inclusion.node_counts(node) {
                    continue;
                }
                for (i, c) in key.constraints.iter().enumerate() {
                    if !inclusion.includes(c, node) {
                        continue;
                    }
                    let value = node.label(&c.topology_key).unwrap_or("");
                    let n = node.pods.iter().filter(|p| counts_pod(&key, c, p)).count() as i64;
                    let domains = &mut per_constraint[i];
                    let slot = domains.slot(value);
                    domains.counts[slot] += n;
                }
            }
        }
        for domains in &mut per_constraint {
            domains.map_nodes(snapshot.nodes);
        }
        DomainCounts {
            key,
            version: snapshot.version,
            seen: snapshot.log.end(),
            per_constraint,
        }
    }

    /// Brings the counts forward over the log; false when it cannot (the
    /// log no longer has every change since).
    fn catch_up(&mut self, snapshot: &Snapshot<'_>, gates: FeatureGates) -> bool {
        if self.version != snapshot.version {
            return false;
        }
        let Some(changes) = snapshot.log.since(self.seen) else {
            return false;
        };
        let inclusion = Inclusion::new(&self.key, gates);
        for change in changes {
            let Some(node) = snapshot.nodes.get(change.node) else {
                continue;
            };
            if !apply(
                &inclusion,
                &mut self.per_constraint,
                &change.pod,
                node,
                change.delta,
            ) {
                return false;
            }
        }
        self.seen = snapshot.log.end();
        true
    }

    /// Preemption's dry run (upstream's `AddPod` / `RemovePod`): `pod`
    /// added to or taken off `node` for the time of the dry run, which
    /// undoes it before the counts serve another cycle. False when the
    /// node's value is no domain (not for a node of the snapshot counted).
    pub fn update_with_pod(
        &mut self,
        pod: &NodePod,
        node: &NodeInfo,
        delta: i64,
        gates: FeatureGates,
    ) -> bool {
        let inclusion = Inclusion::new(&self.key, gates);
        apply(&inclusion, &mut self.per_constraint, pod, node, delta)
    }
}

/// `updateWithPod`: `pod` added to (`delta` 1) or removed from (-1)
/// `node`, counted in the domains of `inclusion`'s key. False when the
/// node's value is no domain yet (the caller counts again).
fn apply(
    inclusion: &Inclusion<'_>,
    per_constraint: &mut [Domains],
    pod: &NodePod,
    node: &NodeInfo,
    delta: i64,
) -> bool {
    let key = inclusion.key;
    if !inclusion.node_counts(node) {
        return true;
    }
    for (i, c) in key.constraints.iter().enumerate() {
        if !counts_pod(key, c, pod) || !inclusion.includes(c, node) {
            continue;
        }
        let value = node.label(&c.topology_key).unwrap_or("");
        let domains = &mut per_constraint[i];
        // Every node that counts got a domain when counting, and the
        // nodes are the same (same version); a new domain would leave the
        // nodes' map behind, so count again then.
        let Some(&slot) = domains.slot_of.get(value) else {
            return false;
        };
        domains.counts[slot as usize] += delta;
    }
    true
}

impl Memory {
    /// The index of up-to-date counts for `key`, counted or caught up.
    pub fn counts_for(
        &mut self,
        key: CountKey,
        snapshot: &Snapshot<'_>,
        gates: FeatureGates,
    ) -> usize {
        if let Some(i) = self.entries.iter().position(|e| e.key == key) {
            let mut entry = self.entries.remove(i);
            if !entry.catch_up(snapshot, gates) {
                entry = DomainCounts::count(key, snapshot, gates);
            }
            self.entries.push(entry);
        } else {
            if self.entries.len() == KEPT {
                self.entries.remove(0);
            }
            self.entries.push(DomainCounts::count(key, snapshot, gates));
        }
        self.entries.len() - 1
    }
}
