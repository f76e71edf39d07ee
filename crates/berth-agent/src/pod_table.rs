//! The pods a pod worker holds, by UID and by node.
//!
//! One worker serves a whole simulated fleet (thousands of nodes): admitting
//! a pod needs the pods already running on its node, and a scan of every
//! pod of the fleet per admission (10,000 pods on 1,000 nodes: 10^8 string
//! comparisons over a Deployment's scale-up) was a tenth of the server's
//! CPU. The node index makes that lookup the node's own pods.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use berth_scheduler::resources::PodUsage;
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
    /// As the watch last showed it (shared with the watch).
    pod: Arc<Pod>,
    /// The status the server answered this worker's last status write
    /// with, when that answer is newer than `pod`: kept beside the shared
    /// pod rather than written into a copy of it.
    answered_status: Option<Option<PodStatus>>,
    /// What the pod requests, parsed once: admission adds up the requests
    /// of every pod on the node for each pod it admits.
    usage: PodUsage,
    /// Fixed at insertion (a pod is bound once): the index's key.
    node: String,
    pub state: PodState,
    pub last_status: Option<PodStatus>,
}

impl PodEntry {
    pub fn new(pod: Arc<Pod>, node: String, state: PodState) -> PodEntry {
        PodEntry {
            usage: PodUsage::of(&pod),
            pod,
            answered_status: None,
            node,
            state,
            last_status: None,
        }
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    pub fn pod(&self) -> &Arc<Pod> {
        &self.pod
    }

    /// The pod's status as last known: the server's answer to the last
    /// status write, or the watched pod's.
    pub fn status(&self) -> Option<&PodStatus> {
        match &self.answered_status {
            Some(answered) => answered.as_ref(),
            None => self.pod.status.as_ref(),
        }
    }

    /// Whether the pod has finished, by [`Self::status`].
    pub fn is_terminal(&self) -> bool {
        berth_core::pod::is_terminal_phase(self.status().and_then(|s| s.phase.as_deref()))
    }

    /// The pod with [`Self::status`].
    pub fn current_pod(&self) -> Arc<Pod> {
        match &self.answered_status {
            None => self.pod.clone(),
            Some(status) => Arc::new(Pod {
                status: status.clone(),
                ..Pod::clone(&self.pod)
            }),
        }
    }

    pub fn usage(&self) -> &PodUsage {
        &self.usage
    }

    /// Replaces the pod with its newer state; its requests are parsed
    /// again only when its spec changed (an in-place resize): most updates
    /// are its status.
    pub fn set_pod(&mut self, pod: Arc<Pod>) {
        if self.pod.spec != pod.spec {
            self.usage = PodUsage::of(&pod);
        }
        self.pod = pod;
        self.answered_status = None;
    }

    pub fn set_status(&mut self, status: Option<PodStatus>) {
        self.answered_status = Some(status);
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
        PodEntry::new(Arc::new(make_pod().obj()), node.into(), PodState::Running)
    }

    #[test]
    fn the_answer_to_a_status_write_is_the_status_until_the_watch_shows_a_newer_pod() {
        let watched = Arc::new(make_pod().name("p").phase("Running").obj());
        let mut entry = PodEntry::new(watched.clone(), "n1".into(), PodState::Running);
        let answered = PodStatus {
            phase: Some("Failed".into()),
            ..PodStatus::default()
        };
        entry.set_status(Some(answered.clone()));
        assert_eq!(entry.status(), Some(&answered));
        assert!(entry.is_terminal());
        assert_eq!(entry.current_pod().status.as_ref(), Some(&answered));
        assert_eq!(entry.current_pod().metadata, watched.metadata);
        // The shared pod itself is never written.
        assert!(Arc::ptr_eq(entry.pod(), &watched));
        assert_eq!(
            watched.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
        entry.set_pod(Arc::new(make_pod().name("p").phase("Pending").obj()));
        assert_eq!(
            entry.status().and_then(|s| s.phase.as_deref()),
            Some("Pending")
        );
        assert!(!entry.is_terminal());
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

    /// A pod's parsed requests follow its newer states: kept when only the
    /// status or metadata changed, parsed again when the spec's resources
    /// did (an in-place resize, another container).
    #[test]
    fn the_parsed_requests_follow_the_pods_resources() {
        struct Case {
            name: &'static str,
            first: Pod,
            then: Pod,
        }
        let small = || make_pod().req(&[("cpu", "100m"), ("memory", "1Gi")]);
        let mut running = small().obj();
        running.status = Some(PodStatus {
            phase: Some("Running".into()),
            ..PodStatus::default()
        });
        let cases = [
            Case {
                name: "a status change keeps the requests",
                first: small().obj(),
                then: running,
            },
            Case {
                name: "a label change keeps the requests",
                first: small().obj(),
                then: small().label("a", "b").obj(),
            },
            Case {
                name: "a resize is parsed again",
                first: small().obj(),
                then: make_pod().req(&[("cpu", "2"), ("memory", "1Gi")]).obj(),
            },
            Case {
                name: "another container is parsed again",
                first: small().obj(),
                then: small().req(&[("cpu", "1")]).obj(),
            },
        ];
        for case in cases {
            let mut entry = PodEntry::new(Arc::new(case.first), "n1".into(), PodState::Running);
            entry.set_pod(Arc::new(case.then.clone()));
            assert_eq!(entry.usage(), &PodUsage::of(&case.then), "{}", case.name);
            assert_eq!(entry.pod().as_ref(), &case.then, "{}", case.name);
        }
    }
}
