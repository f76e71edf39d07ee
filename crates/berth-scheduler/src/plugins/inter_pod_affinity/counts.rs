//! The Filter's counts (upstream's `topologyToMatchedTermCount`s): per
//! topology key and value, how many existing pods' required anti-affinity
//! terms match the incoming pod, and how many existing pods match the
//! incoming pod's required affinity and anti-affinity terms. Kept in the
//! cycle state's memory across cycles, keyed by what they depend on of the
//! incoming pod, and brought forward over the snapshot's pod log.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use crate::affinity_terms::{AffinityTerm, matches_all};
use crate::framework::{DomainMap, NodeInfo};
use crate::snapshot::{NodePod, Snapshot, Version};

pub const MEMORY_KEY: &str = "InterPodAffinityCounts";

/// How many sets of counts are kept.
pub const KEPT: usize = 8;

/// Counts (or score weights) per topology key, then value. The keys are
/// the terms' topology keys, one or two in practice, so they are found by
/// comparison rather than hashed for every node. The Filter's counts drop
/// zero entries ([`TopologyCounts::update`]), so for them empty means no
/// pair counts; PreScore's sums keep them, as upstream's maps do.
#[derive(Debug, Clone, Default)]
pub struct TopologyCounts(Vec<(String, DomainMap<i64>)>);

impl TopologyCounts {
    /// The count of (key, value).
    #[inline]
    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.values(key)
            .and_then(|v| v.get(value))
            .copied()
            .unwrap_or(0)
    }

    /// The counts per value of `key`.
    #[inline]
    fn values(&self, key: &str) -> Option<&DomainMap<i64>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every key with its counts per value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &DomainMap<i64>)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Adds `delta` to (key, value), creating the entry; the new count.
    pub fn add(&mut self, key: &str, value: &str, delta: i64) -> i64 {
        let at = match self.0.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                self.0.push((key.to_string(), DomainMap::default()));
                self.0.len() - 1
            }
        };
        let values = &mut self.0[at].1;
        match values.get_mut(value) {
            Some(n) => {
                *n += delta;
                *n
            }
            None => {
                values.insert(value.to_string(), delta);
                delta
            }
        }
    }

    /// `topologyToMatchedTermCount.update`: only nodes with the key count,
    /// and a pair whose count drops to zero is removed.
    fn update(&mut self, node: &NodeInfo, key: &str, delta: i64) {
        let Some(value) = node.label(key) else {
            return;
        };
        if self.add(key, value, delta) != 0 {
            return;
        }
        if let Some(at) = self.0.iter().position(|(k, _)| k == key) {
            let values = &mut self.0[at].1;
            values.remove(value);
            if values.is_empty() {
                self.0.swap_remove(at);
            }
        }
    }
}

/// What the counts depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountKey {
    pub namespace: String,
    pub labels: Option<BTreeMap<String, String>>,
    pub namespace_labels: Option<BTreeMap<String, String>>,
    pub affinity: Vec<AffinityTerm>,
    pub anti_affinity: Vec<AffinityTerm>,
}

/// The three counts for one key.
#[derive(Debug, Clone)]
pub struct TermCounts {
    pub key: CountKey,
    version: Version,
    seen: u64,
    pub existing_anti_affinity: TopologyCounts,
    pub affinity: TopologyCounts,
    pub anti_affinity: TopologyCounts,
}

/// The remembered counts, most recently used last.
#[derive(Debug, Default)]
pub struct Memory {
    pub entries: Vec<TermCounts>,
}

impl TermCounts {
    fn empty(key: CountKey, snapshot: &Snapshot<'_>) -> Self {
        TermCounts {
            key,
            version: snapshot.version,
            seen: snapshot.log.end(),
            existing_anti_affinity: TopologyCounts::default(),
            affinity: TopologyCounts::default(),
            anti_affinity: TopologyCounts::default(),
        }
    }

    /// `updateWithPod` for one existing pod on `node`.
    fn apply(&mut self, incoming: &Pod, existing: &NodePod, node: &NodeInfo, delta: i64) {
        if let Some(terms) = &existing.terms {
            for t in &terms.required_anti_affinity {
                if t.matches(incoming, self.key.namespace_labels.as_ref()) {
                    self.existing_anti_affinity
                        .update(node, &t.topology_key, delta);
                }
            }
        }
        if matches_all(&self.key.affinity, &existing.pod) {
            for t in &self.key.affinity {
                self.affinity.update(node, &t.topology_key, delta);
            }
        }
        for t in &self.key.anti_affinity {
            if t.matches(&existing.pod, None) {
                self.anti_affinity.update(node, &t.topology_key, delta);
            }
        }
    }

    /// Preemption's dry run (upstream's `AddPod` / `RemovePod`):
    /// `existing` added to (`delta` 1) or taken off (-1) `node` for the
    /// time of the dry run, which undoes it before the counts serve
    /// another cycle.
    pub fn update_with_pod(
        &mut self,
        incoming: &Pod,
        existing: &NodePod,
        node: &NodeInfo,
        delta: i64,
    ) {
        self.apply(incoming, existing, node, delta);
    }

    /// Counts from the nodes (`getExistingAntiAffinityCounts`,
    /// `getIncomingAffinityAntiAffinityCounts`).
    fn count(key: CountKey, incoming: &Pod, snapshot: &Snapshot<'_>) -> Self {
        let mut counts = TermCounts::empty(key, snapshot);
        let all_pods = !counts.key.affinity.is_empty() || !counts.key.anti_affinity.is_empty();
        for node in snapshot.nodes {
            if !all_pods && node.pods_with_required_anti_affinity == 0 {
                continue;
            }
            for pod in &node.pods {
                counts.apply(incoming, pod, node, 1);
            }
        }
        counts
    }

    fn catch_up(&mut self, incoming: &Pod, snapshot: &Snapshot<'_>) -> bool {
        if self.version != snapshot.version {
            return false;
        }
        let Some(changes) = snapshot.log.since(self.seen) else {
            return false;
        };
        for change in changes {
            if let Some(node) = snapshot.nodes.get(change.node) {
                self.apply(incoming, &change.pod, node, change.delta);
            }
        }
        self.seen = snapshot.log.end();
        true
    }
}

impl Memory {
    /// The index of up-to-date counts for `key` (the incoming pod's).
    pub fn counts_for(&mut self, key: CountKey, incoming: &Pod, snapshot: &Snapshot<'_>) -> usize {
        if let Some(i) = self.entries.iter().position(|e| e.key == key) {
            let mut entry = self.entries.remove(i);
            if !entry.catch_up(incoming, snapshot) {
                entry = TermCounts::count(key, incoming, snapshot);
            }
            self.entries.push(entry);
        } else {
            if self.entries.len() == KEPT {
                self.entries.remove(0);
            }
            self.entries
                .push(TermCounts::count(key, incoming, snapshot));
        }
        self.entries.len() - 1
    }
}
