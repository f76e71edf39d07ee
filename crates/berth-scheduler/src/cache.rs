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

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::framework::{NodeInfo, PodInfo, PodUsage};
use crate::taint_sets::TaintSets;

/// A pod the cache counts.
#[derive(Debug, Clone)]
pub struct CachedPod {
    pub pod: Arc<Pod>,
    /// The node it is (or is assumed to be) on.
    pub node: String,
    pub usage: PodUsage,
    /// Chosen by this scheduler, binding not yet seen on the watch.
    pub assumed: bool,
}

/// Nodes and the pods on them.
#[derive(Debug, Default)]
pub struct Cache {
    nodes: Vec<NodeInfo>,
    index: HashMap<String, usize>,
    taint_sets: TaintSets,
    pods: HashMap<String, CachedPod>,
}

impl Cache {
    pub fn new() -> Self {
        Cache::default()
    }

    /// Every node, in a stable order (a deletion moves the last node into
    /// the freed slot).
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
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

    /// Adds or replaces a node; returns the previous object. Pods already
    /// known to be on it (seen before their node) are counted.
    pub fn upsert_node(&mut self, node: Arc<Node>) -> Option<Arc<Node>> {
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(&i) = self.index.get(&name) {
            let info = &mut self.nodes[i];
            let old = info.node_arc().clone();
            info.set_node(node, &mut self.taint_sets);
            return Some(old);
        }
        let mut info = NodeInfo::interned(node, &mut self.taint_sets);
        for pod in self.pods.values().filter(|p| p.node == name) {
            info.add_usage(&pod.usage);
        }
        self.index.insert(name, self.nodes.len());
        self.nodes.push(info);
        None
    }

    /// Removes a node. Its pods stay known, so they count again should the
    /// node come back before they are gone.
    pub fn remove_node(&mut self, name: &str) -> Option<Arc<Node>> {
        let i = self.index.remove(name)?;
        let removed = self.nodes.swap_remove(i);
        if let Some(moved) = self.nodes.get(i) {
            self.index.insert(moved.name().to_string(), i);
        }
        Some(removed.node_arc().clone())
    }

    /// Counts a pod on `node` as soon as the scheduler picks it, with the
    /// usage its [`PodInfo`] computed when it was queued.
    pub fn assume(&mut self, key: &str, pod: &PodInfo, node: &str) {
        self.remove_pod(key);
        self.insert(key, pod.pod_arc().clone(), pod.usage().clone(), node, true);
    }

    /// The binding failed: an assumed pod is taken off its node. A pod
    /// already confirmed by the watch stays.
    pub fn forget(&mut self, key: &str) {
        if self.pods.get(key).is_some_and(|p| p.assumed) {
            self.remove_pod(key);
        }
    }

    /// A pod bound to `node` as seen on the watch: confirms an assumed pod
    /// (moving it if it was bound elsewhere), or counts a new one.
    pub fn add_pod(&mut self, key: &str, pod: Arc<Pod>, node: &str) {
        if let Some(existing) = self.pods.get_mut(key)
            && existing.node == node
        {
            existing.assumed = false;
            existing.pod = pod;
            return;
        }
        self.remove_pod(key);
        let usage = PodUsage::of(&pod);
        self.insert(key, pod, usage, node, false);
    }

    fn insert(&mut self, key: &str, pod: Arc<Pod>, usage: PodUsage, node: &str, assumed: bool) {
        self.count(node, &usage, true);
        self.pods.insert(
            key.to_string(),
            CachedPod {
                pod,
                node: node.to_string(),
                usage,
                assumed,
            },
        );
    }

    /// The pod is gone (deleted or finished): its node is freed.
    pub fn remove_pod(&mut self, key: &str) -> Option<CachedPod> {
        let pod = self.pods.remove(key)?;
        self.count(&pod.node, &pod.usage, false);
        Some(pod)
    }

    fn count(&mut self, node: &str, usage: &PodUsage, add: bool) {
        if let Some(&i) = self.index.get(node) {
            let info = &mut self.nodes[i];
            if add {
                info.add_usage(usage);
            } else {
                info.remove_usage(usage);
            }
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
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        })
    }

    fn pod(cpu: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
            }))
            .unwrap_or_default(),
        )
    }

    fn cpu(cache: &Cache, node: &str) -> (i64, usize) {
        cache
            .node(node)
            .map(|n| (n.requested.milli_cpu, n.requested.pods))
            .unwrap_or_default()
    }

    #[test]
    fn assumed_pods_count_at_once_and_are_forgotten_on_failure() {
        let mut cache = Cache::new();
        cache.upsert_node(node("a"));
        cache.assume("default/p", &PodInfo::new(pod("500m")), "a");
        assert_eq!(cpu(&cache, "a"), (500, 1));
        cache.forget("default/p");
        assert_eq!(cpu(&cache, "a"), (0, 0));
        assert_eq!(cache.num_pods(), 0);
    }

    #[test]
    fn the_watch_confirms_an_assumed_pod_without_counting_it_twice() {
        let mut cache = Cache::new();
        cache.upsert_node(node("a"));
        cache.assume("default/p", &PodInfo::new(pod("500m")), "a");
        cache.add_pod("default/p", pod("500m"), "a");
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
        cache.upsert_node(node("a"));
        cache.upsert_node(node("b"));
        cache.assume("default/p", &PodInfo::new(pod("1")), "a");
        cache.add_pod("default/p", pod("1"), "b");
        assert_eq!(cpu(&cache, "a"), (0, 0));
        assert_eq!(cpu(&cache, "b"), (1000, 1));
    }

    #[test]
    fn pods_seen_before_their_node_count_when_it_arrives() {
        let mut cache = Cache::new();
        cache.add_pod("default/p", pod("250m"), "late");
        cache.upsert_node(node("late"));
        assert_eq!(cpu(&cache, "late"), (250, 1));
        // Updating the node keeps its pods counted.
        cache.upsert_node(node("late"));
        assert_eq!(cpu(&cache, "late"), (250, 1));
    }

    #[test]
    fn removing_a_node_keeps_the_index_right() {
        let mut cache = Cache::new();
        for n in ["a", "b", "c"] {
            cache.upsert_node(node(n));
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
