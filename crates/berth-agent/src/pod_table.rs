//! The pods a pod worker holds, by UID and by node.
//!
//! One worker serves a whole simulated fleet (thousands of nodes): admitting
//! a pod needs the pods already running on its node, and a scan of every
//! pod of the fleet per admission (10,000 pods on 1,000 nodes: 10^8 string
//! comparisons over a Deployment's scale-up) was a tenth of the server's
//! CPU. The node index makes that lookup the node's own pods.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{Pod, PodStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PodState {
    /// Admitted and handed to the runtime.
    Running,
    /// Rejected at admission; never ran.
    Rejected,
    /// Being stopped for deletion or shutdown; status writes from the
    /// runtime are over.
    Stopping,
}

#[derive(Debug)]
pub(crate) struct PodEntry {
    pub pod: Pod,
    /// Fixed at insertion (a pod is bound once): the index's key.
    node: String,
    pub state: PodState,
    pub last_status: Option<PodStatus>,
}

impl PodEntry {
    pub fn new(pod: Pod, node: String, state: PodState) -> PodEntry {
        PodEntry {
            pod,
            node,
            state,
            last_status: None,
        }
    }

    pub fn node(&self) -> &str {
        &self.node
    }
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct PodTable {
    entries: HashMap<String, PodEntry>,
    by_node: HashMap<String, BTreeSet<String>>,
}

impl PodTable {
    pub fn get(&self, uid: &str) -> Option<&PodEntry> {
        self.entries.get(uid)
    }

    pub fn get_mut(&mut self, uid: &str) -> Option<&mut PodEntry> {
        self.entries.get_mut(uid)
    }

    /// Adds or replaces the entry of `uid`.
    pub fn insert(&mut self, uid: &str, entry: PodEntry) {
        self.by_node
            .entry(entry.node.clone())
            .or_default()
            .insert(uid.to_string());
        if let Some(old) = self.entries.insert(uid.to_string(), entry)
            && old.node != self.entries[uid].node
        {
            self.unindex(&old.node, uid);
        }
    }

    pub fn remove(&mut self, uid: &str) -> Option<PodEntry> {
        let old = self.entries.remove(uid)?;
        self.unindex(&old.node, uid);
        Some(old)
    }

    fn unindex(&mut self, node: &str, uid: &str) {
        if let Some(uids) = self.by_node.get_mut(node) {
            uids.remove(uid);
            if uids.is_empty() {
                self.by_node.remove(node);
            }
        }
    }

    /// The entries of `node`, in UID order.
    pub fn on_node<'a>(&'a self, node: &str) -> impl Iterator<Item = &'a PodEntry> {
        self.by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|uid| self.entries.get(uid))
    }

    /// Every entry with its UID.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &PodEntry)> {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use berth_core::test_util::make_pod;

    use super::*;

    fn entry(node: &str) -> PodEntry {
        PodEntry::new(make_pod().obj(), node.into(), PodState::Running)
    }

    fn uids_on(table: &PodTable, node: &str) -> Vec<String> {
        table
            .iter()
            .filter(|(_, e)| e.node() == node)
            .map(|(uid, _)| uid.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    fn indexed_on(table: &PodTable, node: &str) -> Vec<String> {
        let mut got: Vec<String> = table
            .by_node
            .get(node)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        got.sort();
        got
    }

    /// The node index always answers what a scan of every entry answers.
    #[test]
    fn the_node_index_matches_a_scan_of_every_pod() {
        struct Case {
            name: &'static str,
            steps: Vec<(&'static str, Option<&'static str>)>,
        }
        let cases = [
            Case {
                name: "inserts on two nodes",
                steps: vec![("a", Some("n1")), ("b", Some("n2")), ("c", Some("n1"))],
            },
            Case {
                name: "a removal leaves the node's other pods",
                steps: vec![("a", Some("n1")), ("b", Some("n1")), ("a", None)],
            },
            Case {
                name: "the last pod removed empties the node",
                steps: vec![("a", Some("n1")), ("a", None), ("a", None)],
            },
            Case {
                name: "an entry replaced under another node moves",
                steps: vec![("a", Some("n1")), ("a", Some("n2"))],
            },
        ];
        for case in cases {
            let mut table = PodTable::default();
            for (uid, node) in &case.steps {
                match node {
                    Some(node) => table.insert(uid, entry(node)),
                    None => {
                        table.remove(uid);
                    }
                }
            }
            for node in ["n1", "n2"] {
                assert_eq!(
                    indexed_on(&table, node),
                    uids_on(&table, node),
                    "{}: {node}",
                    case.name
                );
                assert_eq!(
                    table.on_node(node).count(),
                    uids_on(&table, node).len(),
                    "{}: {node}",
                    case.name
                );
            }
            assert!(
                table.by_node.values().all(|uids| !uids.is_empty()),
                "{}: no empty node entries",
                case.name
            );
        }
    }
}
