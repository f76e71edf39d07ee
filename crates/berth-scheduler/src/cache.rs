//! The scheduler's cache of the cluster, after upstream's
//! `pkg/scheduler/backend/cache`: every node as a [`NodeInfo`] (with its
//! interned taint list) and every pod bound to one, counted in its node's
//! requests.
//!
//! **Assumed pods.** When a cycle picks a node, the pod is counted there at
//! once ([`Cache::assume`]), before its binding is even sent, so the next
//! cycles see the node as fuller and concurrent decisions never overcommit
//! it. The pod's binding then shows up on the watch ([`Cache::add_pod`]
//! confirms it) or fails ([`Cache::forget`] takes it off again).
//!
//! The scheduling loop owns the cache and runs cycles between updates, so
//! the cache itself is the snapshot a cycle reads: no copy per cycle.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::budgets::Budgets;
use crate::framework::{NodeInfo, PodInfo};
use crate::nominator::Nominator;
use crate::snapshot::{
    NamespaceLabels, PodChange, PodLog, ServedWorkloads, Snapshot, Version, WorkloadSelectors,
};
use crate::taint_sets::TaintSets;

/// A pod the cache counts.
#[derive(Debug, Clone)]
pub struct CachedPod {
    pub pod: Arc<Pod>,
    /// The node it is (or is assumed to be) on.
    pub node: String,
    /// Its requests and affinity terms, computed once.
    pub info: PodInfo,
    /// Chosen by this scheduler, binding not yet seen on the watch.
    pub assumed: bool,
}

/// Tells caches apart, so counts kept for one are never used for another.
static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(0);

/// Nodes and the pods on them, namespaces, and what cycles read of them.
#[derive(Debug)]
pub struct Cache {
    id: u64,
    nodes: Vec<NodeInfo>,
    index: HashMap<String, usize>,
    taint_sets: TaintSets,
    pods: HashMap<String, CachedPod>,
    /// Bumped when node indexes, node labels or taints, namespace labels
    /// or the workload selectors change: what plugins count from.
    epoch: u64,
    log: PodLog,
    namespaces: NamespaceLabels,
    workloads: Arc<dyn WorkloadSelectors>,
    image_nodes: BTreeMap<String, usize>,
    pods_with_required_anti_affinity: usize,
    pods_affecting_scores: usize,
    /// Pending pods nominated to nodes (preemptors waiting for their
    /// victims to go): their requests count there in filtering.
    nominator: Nominator,
    /// The disruption budgets preemption weighs (from the PDB watch).
    budgets: Budgets,
    /// The last [`NodeInfo::version`] given: each change to a node or
    /// the pods on it takes the next one.
    node_versions: u64,
    /// Every node's name by index, made when a failed cycle first needs
    /// it after nodes came or went (its diagnosis names nodes by index).
    node_names: OnceLock<Arc<[Arc<str>]>>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            nodes: Vec::new(),
            index: HashMap::new(),
            taint_sets: TaintSets::default(),
            pods: HashMap::new(),
            epoch: 0,
            log: PodLog::new(),
            namespaces: NamespaceLabels::new(),
            workloads: Arc::new(ServedWorkloads),
            image_nodes: BTreeMap::new(),
            pods_with_required_anti_affinity: 0,
            pods_affecting_scores: 0,
            nominator: Nominator::default(),
            budgets: Budgets::default(),
            node_versions: 0,
            node_names: OnceLock::new(),
        }
    }
}

fn node_labels(node: &Node) -> Option<&BTreeMap<String, String>> {
    node.metadata.labels.as_ref()
}

fn node_taints(node: &Node) -> Option<&Vec<k8s_openapi::api::core::v1::Taint>> {
    node.spec.as_ref().and_then(|s| s.taints.as_ref())
}

impl Cache {
    pub fn new() -> Self {
        Cache::default()
    }

    /// What a cycle reads.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            nodes: &self.nodes,
            version: Version {
                cache: self.id,
                epoch: self.epoch,
            },
            log: &self.log,
            namespaces: &self.namespaces,
            workloads: &*self.workloads,
            image_nodes: &self.image_nodes,
            pods_with_required_anti_affinity: self.pods_with_required_anti_affinity,
            pods_affecting_scores: self.pods_affecting_scores,
        }
    }

    /// Every node, in a stable order (a deletion moves the last node into
    /// the freed slot).
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// Every node's name, by index.
    pub fn node_names(&self) -> Arc<[Arc<str>]> {
        self.node_names
            .get_or_init(|| self.nodes.iter().map(|n| n.name_arc().clone()).collect())
            .clone()
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.node_index(name).and_then(|i| self.nodes.get(i))
    }

    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn pod(&self, key: &str) -> Option<&CachedPod> {
        self.pods.get(key)
    }

    pub fn num_pods(&self) -> usize {
        self.pods.len()
    }

    /// Where the workloads' selectors come from (PodTopologySpread's
    /// default constraints); [`ServedWorkloads`] until set.
    pub fn set_workloads(&mut self, workloads: Arc<dyn WorkloadSelectors>) {
        self.workloads = workloads;
        self.epoch += 1;
    }

    /// The workloads' selectors.
    pub fn workloads(&self) -> &Arc<dyn WorkloadSelectors> {
        &self.workloads
    }

    /// The pods nominated to nodes.
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }

    pub fn nominator_mut(&mut self) -> &mut Nominator {
        &mut self.nominator
    }

    /// The disruption budgets preemption weighs.
    pub fn budgets(&self) -> &Budgets {
        &self.budgets
    }

    pub fn budgets_mut(&mut self) -> &mut Budgets {
        &mut self.budgets
    }

    /// A namespace was added or changed; returns its previous labels.
    pub fn upsert_namespace(
        &mut self,
        name: &str,
        labels: BTreeMap<String, String>,
    ) -> Option<BTreeMap<String, String>> {
        let old = self.namespaces.insert(name.to_string(), labels);
        if old.as_ref() != self.namespaces.get(name) {
            self.epoch += 1;
        }
        old
    }

    /// A namespace was deleted.
    pub fn delete_namespace(&mut self, name: &str) -> Option<BTreeMap<String, String>> {
        let old = self.namespaces.remove(name);
        if old.is_some() {
            self.epoch += 1;
        }
        old
    }

    /// The labels of namespace `name`, if known.
    pub fn namespace_labels(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.namespaces.get(name)
    }

    /// The node at `i` changed: it takes a version never given before.
    fn touch(&mut self, i: usize) {
        self.node_versions += 1;
        if let Some(node) = self.nodes.get_mut(i) {
            node.set_version(self.node_versions);
        }
    }

    fn count_images(&mut self, info: &NodeInfo, add: bool) {
        for name in info.images.keys() {
            if add {
                *self.image_nodes.entry(name.clone()).or_default() += 1;
            } else if let Some(n) = self.image_nodes.get_mut(name) {
                *n -= 1;
                if *n == 0 {
                    self.image_nodes.remove(name);
                }
            }
        }
    }

    /// Adds or replaces a node; returns the previous object. Pods already
    /// known to be on it (seen before their node) are counted.
    pub fn upsert_node(&mut self, node: Arc<Node>) -> Option<Arc<Node>> {
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(&i) = self.index.get(&name) {
            let old = self.nodes[i].node_arc().clone();
            if node_labels(&old) != node_labels(&node) || node_taints(&old) != node_taints(&node) {
                self.epoch += 1;
            }
            let images_changed = old.status.as_ref().and_then(|s| s.images.as_ref())
                != node.status.as_ref().and_then(|s| s.images.as_ref());
            if images_changed {
                let before = std::mem::take(&mut self.nodes[i].images);
                for name in before.keys() {
                    if let Some(n) = self.image_nodes.get_mut(name) {
                        *n -= 1;
                        if *n == 0 {
                            self.image_nodes.remove(name);
                        }
                    }
                }
            }
            self.nodes[i].set_node(node, &mut self.taint_sets);
            self.touch(i);
            if images_changed {
                let info = self.nodes[i].clone_images();
                for name in info {
                    *self.image_nodes.entry(name).or_default() += 1;
                }
            }
            return Some(old);
        }
        let mut info = NodeInfo::interned(node, &mut self.taint_sets);
        // In key order, not the map's: the order of a node's pods breaks
        // preemption's ties, and must not differ from run to run.
        let mut waiting: Vec<(&String, &CachedPod)> =
            self.pods.iter().filter(|(_, p)| p.node == name).collect();
        waiting.sort_unstable_by_key(|(key, _)| *key);
        for (_, pod) in waiting {
            info.add_pod_info(&pod.info);
        }
        self.count_images(&info, true);
        info.set_position(self.nodes.len());
        self.index.insert(name, self.nodes.len());
        self.nodes.push(info);
        self.node_names = OnceLock::new();
        self.touch(self.nodes.len() - 1);
        self.epoch += 1;
        None
    }

    /// Removes a node. Its pods stay known, so they count again should the
    /// node come back before they are gone.
    pub fn remove_node(&mut self, name: &str) -> Option<Arc<Node>> {
        let i = self.index.remove(name)?;
        let removed = self.nodes.swap_remove(i);
        self.node_names = OnceLock::new();
        self.count_images(&removed, false);
        if let Some(moved) = self.nodes.get_mut(i) {
            moved.set_position(i);
            self.index.insert(moved.name().to_string(), i);
        }
        self.epoch += 1;
        Some(removed.node_arc().clone())
    }

    /// Counts a pod on `node` as soon as the scheduler picks it, with the
    /// usage its [`PodInfo`] computed when it was queued.
    pub fn assume(&mut self, key: &str, pod: &PodInfo, node: &str) {
        self.nominator.delete(key);
        self.remove_pod(key);
        self.insert(key, pod.clone(), node, true);
    }

    /// The binding failed: an assumed pod is taken off its node. A pod
    /// already confirmed by the watch stays.
    pub fn forget(&mut self, key: &str) {
        if self.pods.get(key).is_some_and(|p| p.assumed) {
            self.remove_pod(key);
        }
    }

    /// A pod bound to `node` as seen on the watch: confirms an assumed pod
    /// (moving it if it was bound elsewhere), or counts a new one. Returns
    /// the pod it replaces, if the cache knew it already.
    pub fn add_pod(&mut self, key: &str, pod: Arc<Pod>, node: &str) -> Option<Arc<Pod>> {
        if let Some(existing) = self.pods.get_mut(key)
            && existing.node == node
        {
            let old = existing.pod.clone();
            let same_for_plugins = old.metadata.labels == pod.metadata.labels
                && old.metadata.deletion_timestamp.is_some()
                    == pod.metadata.deletion_timestamp.is_some();
            if same_for_plugins {
                existing.assumed = false;
                existing.pod = pod;
                return Some(old);
            }
        }
        let old = self.remove_pod(key).map(|p| p.pod);
        self.insert(key, PodInfo::new(pod), node, false);
        old
    }

    fn insert(&mut self, key: &str, info: PodInfo, node: &str, assumed: bool) {
        if let Some(&i) = self.index.get(node) {
            self.nodes[i].add_pod_info(&info);
            self.touch(i);
            if let Some(added) = self.nodes[i].pods.last().cloned() {
                self.log.push(PodChange {
                    node: i,
                    pod: added,
                    delta: 1,
                });
            }
        }
        self.count_terms(&info, true);
        self.pods.insert(
            key.to_string(),
            CachedPod {
                pod: info.pod_arc().clone(),
                node: node.to_string(),
                info,
                assumed,
            },
        );
    }

    /// The pod is gone (deleted or finished): its node is freed.
    pub fn remove_pod(&mut self, key: &str) -> Option<CachedPod> {
        let pod = self.pods.remove(key)?;
        if let Some(&i) = self.index.get(&pod.node)
            && let Some(gone) = self.nodes[i].remove_pod_info(&pod.info)
        {
            self.touch(i);
            self.log.push(PodChange {
                node: i,
                pod: gone,
                delta: -1,
            });
        }
        self.count_terms(&pod.info, false);
        Some(pod)
    }

    fn count_terms(&mut self, info: &PodInfo, add: bool) {
        let Some(terms) = info.affinity_terms() else {
            return;
        };
        let step = |n: &mut usize| {
            if add {
                *n += 1;
            } else {
                *n = n.saturating_sub(1);
            }
        };
        if !terms.required_anti_affinity.is_empty() {
            step(&mut self.pods_with_required_anti_affinity);
        }
        if terms.affects_scores() {
            step(&mut self.pods_affecting_scores);
        }
    }

    /// The interned taint lists, for plugins' per-list verdicts.
    pub fn taint_sets(&self) -> &TaintSets {
        &self.taint_sets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_node, make_pod};

    fn cpu(cache: &Cache, node: &str) -> (i64, usize) {
        cache
            .node(node)
            .map(|n| (n.requested.milli_cpu, n.requested.pods))
            .unwrap_or_default()
    }

    #[test]
    fn assumed_pods_count_at_once_and_are_forgotten_on_failure() {
        let mut cache = Cache::new();
        cache.upsert_node(Arc::new(make_node().name("a").obj()));
        cache.assume(
            "default/p",
            &PodInfo::new(Arc::new(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "500m")])
                    .obj(),
            )),
            "a",
        );
        assert_eq!(cpu(&cache, "a"), (500, 1));
        cache.forget("default/p");
        assert_eq!(cpu(&cache, "a"), (0, 0));
        assert_eq!(cache.num_pods(), 0);
    }

    #[test]
    fn the_watch_confirms_an_assumed_pod_without_counting_it_twice() {
        let mut cache = Cache::new();
        cache.upsert_node(Arc::new(make_node().name("a").obj()));
        cache.assume(
            "default/p",
            &PodInfo::new(Arc::new(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "500m")])
                    .obj(),
            )),
            "a",
        );
        cache.add_pod(
            "default/p",
            Arc::new(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "500m")])
                    .obj(),
            ),
            "a",
        );
        assert_eq!(cpu(&cache, "a"), (500, 1));
        // A confirmed pod is not forgotten by a late bind failure.
        cache.forget("default/p");
        assert_eq!(cpu(&cache, "a"), (500, 1));
        cache.remove_pod("default/p");
        assert_eq!(cpu(&cache, "a"), (0, 0));
    }

    #[test]
    fn a_pod_bound_elsewhere_moves() {
        let mut cache = Cache::new();
        cache.upsert_node(Arc::new(make_node().name("a").obj()));
        cache.upsert_node(Arc::new(make_node().name("b").obj()));
        cache.assume(
            "default/p",
            &PodInfo::new(Arc::new(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "1")])
                    .obj(),
            )),
            "a",
        );
        cache.add_pod(
            "default/p",
            Arc::new(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "1")])
                    .obj(),
            ),
            "b",
        );
        assert_eq!(cpu(&cache, "a"), (0, 0));
        assert_eq!(cpu(&cache, "b"), (1000, 1));
    }

    #[test]
    fn pods_seen_before_their_node_count_when_it_arrives() {
        let mut cache = Cache::new();
        cache.add_pod(
            "default/p",
            Arc::new(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "250m")])
                    .obj(),
            ),
            "late",
        );
        cache.upsert_node(Arc::new(make_node().name("late").obj()));
        assert_eq!(cpu(&cache, "late"), (250, 1));
        // Updating the node keeps its pods counted.
        cache.upsert_node(Arc::new(make_node().name("late").obj()));
        assert_eq!(cpu(&cache, "late"), (250, 1));
    }

    #[test]
    fn removing_a_node_keeps_the_index_right() {
        let mut cache = Cache::new();
        for n in ["a", "b", "c"] {
            cache.upsert_node(Arc::new(make_node().name(n).obj()));
        }
        cache.remove_node("a");
        assert_eq!(cache.num_nodes(), 2);
        for n in ["b", "c"] {
            let i = cache.node_index(n).unwrap_or(usize::MAX);
            assert_eq!(cache.nodes()[i].name(), n);
        }
        assert!(cache.node("a").is_none());
    }
}
