//! The eviction schedule: every bound pod's due time, recomputed from the
//! current node and pod whenever either changes, kept in time order.
//!
//! Plain data driven by watch events (`set_node`, `remove_node`, `set_pod`,
//! `remove_pod`) and by time (`take_due`); the controller's task does the
//! API calls. A change that moves a pod's due time moves its entry (a
//! lengthened toleration delays it, a re-added taint restarts it), one that
//! makes the pod tolerate the taints forever or removes them cancels it,
//! and the cancellations are reported so the controller can record them.

use std::collections::{BTreeSet, HashMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

use berth_core::FeatureGates;
use berth_core::eviction::{Due, TaintStarts, applies, bound_at, due, is_eviction_taint};
pub use berth_core::pod::PodKey;

use crate::watched_pod::WatchedPod;

/// An eviction to carry out now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueEviction {
    pub pod: PodKey,
    pub uid: String,
    pub node: String,
    pub due: Due,
}

#[derive(Debug, Clone)]
struct PodEntry {
    node: String,
    uid: String,
    tolerations: Vec<Toleration>,
    bound: Timestamp,
    terminating: bool,
    /// The scheduled eviction, if any.
    due: Option<Due>,
    /// Handed to the controller and not reported back failed.
    in_flight: bool,
}

#[derive(Debug, Clone, Default)]
struct NodeEntry {
    /// The taints that can evict ([`is_eviction_taint`]).
    taints: Vec<Taint>,
    /// When each started (for taints without `timeAdded`: when the
    /// controller first saw them).
    starts: TaintStarts,
}

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct EvictionSchedule {
    gates: FeatureGates,
    nodes: HashMap<String, NodeEntry>,
    pods: HashMap<PodKey, PodEntry>,
    by_node: HashMap<String, HashSet<PodKey>>,
    queue: BTreeSet<(Timestamp, PodKey)>,
}

impl EvictionSchedule {
    pub fn new(gates: FeatureGates) -> EvictionSchedule {
        EvictionSchedule {
            gates,
            ..EvictionSchedule::default()
        }
    }

    /// The node's taints changed (or it appeared); returns the pods whose
    /// scheduled eviction was called off.
    pub fn set_node(&mut self, node: &Node, now: Timestamp) -> Vec<PodKey> {
        let Some(name) = node.metadata.name.as_deref() else {
            return Vec::new();
        };
        let taints: Vec<Taint> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[])
            .iter()
            .filter(|t| is_eviction_taint(t))
            .cloned()
            .collect();
        let entry = self.nodes.entry(name.to_string()).or_default();
        if entry.taints == taints {
            return Vec::new();
        }
        entry.starts.observe(&taints, now);
        entry.taints = taints;
        self.recompute_node(name)
    }

    /// The node is gone: its pods' evictions are called off.
    pub fn remove_node(&mut self, name: &str) -> Vec<PodKey> {
        if self.nodes.remove(name).is_none() {
            return Vec::new();
        }
        self.recompute_node(name)
    }

    /// A pod appeared or changed; returns whether a scheduled eviction of it
    /// was called off.
    pub fn set_pod(&mut self, pod: &Pod) -> bool {
        self.set_watched_pod(WatchedPod::from(pod))
    }

    /// [`set_pod`](EvictionSchedule::set_pod) for the pod as the controller
    /// watches it.
    pub fn set_watched_pod(&mut self, pod: WatchedPod) -> bool {
        let bound = bound_at(
            pod.status.as_ref().and_then(|s| s.conditions.as_deref()),
            pod.metadata.creation_timestamp.as_ref(),
        )
        .unwrap_or(Timestamp::UNIX_EPOCH);
        let key = PodKey::of_meta(&pod.metadata);
        let WatchedPod { metadata, spec, .. } = pod;
        let (node, tolerations) = spec
            .map(|s| {
                (
                    s.node_name.unwrap_or_default(),
                    s.tolerations.unwrap_or_default(),
                )
            })
            .unwrap_or_default();
        if node.is_empty() {
            return self.remove_pod(&key);
        }
        let uid = metadata.uid.unwrap_or_default();
        let terminating = metadata.deletion_timestamp.is_some();
        let previous = self.pods.remove(&key);
        let (due, in_flight) = match previous {
            Some(p) => {
                if p.node != node {
                    self.unindex(&p.node, &key);
                }
                if p.uid == uid {
                    (p.due, p.in_flight)
                } else {
                    // A new pod object under the same name starts afresh.
                    if let (Some(d), false) = (p.due, p.in_flight) {
                        self.queue.remove(&(d.at, key.clone()));
                    }
                    (None, false)
                }
            }
            None => (None, false),
        };
        self.by_node
            .entry(node.clone())
            .or_default()
            .insert(key.clone());
        self.pods.insert(
            key.clone(),
            PodEntry {
                node,
                uid,
                tolerations,
                bound,
                terminating,
                due,
                in_flight,
            },
        );
        self.recompute(&key)
    }

    /// The pod is gone; returns whether a scheduled eviction was called off.
    pub fn remove_pod(&mut self, key: &PodKey) -> bool {
        let Some(p) = self.pods.remove(key) else {
            return false;
        };
        self.unindex(&p.node, key);
        match p.due {
            Some(d) => {
                self.queue.remove(&(d.at, key.clone()));
                !p.in_flight
            }
            None => false,
        }
    }

    fn unindex(&mut self, node: &str, key: &PodKey) {
        if let Some(set) = self.by_node.get_mut(node) {
            set.remove(key);
            if set.is_empty() {
                self.by_node.remove(node);
            }
        }
    }

    fn recompute_node(&mut self, node: &str) -> Vec<PodKey> {
        let keys: Vec<PodKey> = self
            .by_node
            .get(node)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        keys.into_iter().filter(|k| self.recompute(k)).collect()
    }

    /// Recomputes one pod's due time; true if a scheduled eviction was
    /// called off.
    fn recompute(&mut self, key: &PodKey) -> bool {
        let Some(pod) = self.pods.get(key) else {
            return false;
        };
        let want = match self.nodes.get(&pod.node) {
            Some(node) if !node.taints.is_empty() => {
                let due = due(
                    &node.taints,
                    &pod.tolerations,
                    pod.bound,
                    |t: &Taint| node.starts.start(t),
                    self.gates,
                );
                due.filter(|d| applies(*d, pod.terminating))
            }
            _ => None,
        };
        let old = pod.due;
        let in_flight = pod.in_flight;
        if old == want {
            return false;
        }
        // Invariant: queued exactly when due and not in flight.
        if let (Some(d), false) = (old, in_flight) {
            self.queue.remove(&(d.at, key.clone()));
        }
        if let Some(p) = self.pods.get_mut(key) {
            p.due = want;
            if want.is_none() {
                // A deletion already under way cannot be called off.
                p.in_flight = false;
            }
        }
        if in_flight {
            return false;
        }
        if let Some(d) = want {
            self.queue.insert((d.at, key.clone()));
        }
        old.is_some() && want.is_none()
    }

    /// The earliest scheduled eviction not yet handed out.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.queue.first().map(|(at, _)| *at)
    }

    /// Hands out every eviction due at `now` (they stay in flight until the
    /// pod is gone or [`Self::failed`] is called).
    pub fn take_due(&mut self, now: Timestamp) -> Vec<DueEviction> {
        let mut out = Vec::new();
        while let Some((at, key)) = self.queue.first().cloned() {
            if at > now {
                break;
            }
            self.queue.pop_first();
            if let Some(p) = self.pods.get_mut(&key)
                && let Some(due) = p.due
            {
                p.in_flight = true;
                out.push(DueEviction {
                    pod: key,
                    uid: p.uid.clone(),
                    node: p.node.clone(),
                    due,
                });
            }
        }
        out
    }

    /// An eviction failed: try again at `retry_at` if it is still wanted.
    pub fn failed(&mut self, eviction: &DueEviction, retry_at: Timestamp) {
        let Some(p) = self.pods.get_mut(&eviction.pod) else {
            return;
        };
        if p.uid != eviction.uid || !p.in_flight {
            return;
        }
        p.in_flight = false;
        if let Some(d) = p.due {
            let at = d.at.max(retry_at);
            p.due = Some(Due { at, force: d.force });
            self.queue.insert((at, eviction.pod.clone()));
        }
    }

    /// The scheduled eviction time of a pod (not in flight).
    pub fn scheduled(&self, key: &PodKey) -> Option<Timestamp> {
        self.pods
            .get(key)
            .filter(|p| !p.in_flight)
            .and_then(|p| p.due)
            .map(|d| d.at)
    }

    /// Bound pods tracked.
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Evictions waiting for their time.
    pub fn scheduled_count(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_node, make_pod, t, taint_n, tol, tol_n, tol_secs};
    use berth_core::toleration::EFFECT_NO_EXECUTE;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn tainted(name: &str, taints: Vec<Taint>) -> Node {
        make_node().name(name).taints(taints).obj()
    }

    /// Upstream `testutil.NewPod(name, node)`, created at -10, with these
    /// tolerations.
    fn new_pod(name: &str, node: &str, tolerations: Vec<Toleration>) -> Pod {
        let pod = make_pod()
            .name(name)
            .namespace("default")
            .uid(&format!("uid-{name}"))
            .created_at(t(-10))
            .tolerations(tolerations);
        if node.is_empty() {
            pod.obj()
        } else {
            pod.node(node).obj()
        }
    }

    fn key(name: &str) -> PodKey {
        PodKey::new("default", name)
    }

    fn due_now(s: &mut EvictionSchedule, now: i64) -> Vec<String> {
        s.take_due(t(now)).into_iter().map(|e| e.pod.name).collect()
    }

    /// Upstream `TestCreatePod`: (pod, tainted node?) → deleted at once?
    #[test]
    fn create_pod() {
        struct Case {
            name: &'static str,
            pod: Pod,
            /// The node's taints.
            taints: Vec<Taint>,
            /// Deleted at once.
            deleted: bool,
        }
        let cases = vec![
            Case {
                name: "not scheduled - ignore",
                pod: new_pod("pod1", "", vec![]),
                taints: vec![],
                deleted: false,
            },
            Case {
                name: "scheduled on untainted Node",
                pod: new_pod("pod1", "node1", vec![]),
                taints: vec![],
                deleted: false,
            },
            Case {
                name: "schedule on tainted Node",
                pod: new_pod("pod1", "node1", vec![]),
                taints: vec![taint_n(1, 0)],
                deleted: true,
            },
            Case {
                name: "schedule on tainted Node with finite toleration",
                pod: new_pod("pod1", "node1", vec![tol_n(1, 100)]),
                taints: vec![taint_n(1, 0)],
                deleted: false,
            },
            Case {
                name: "schedule on tainted Node with infinite toleration",
                pod: new_pod("pod1", "node1", vec![tol_n(1, -1)]),
                taints: vec![taint_n(1, 0)],
                deleted: false,
            },
            Case {
                name: "schedule on tainted Node with infinite invalid toleration",
                pod: new_pod("pod1", "node1", vec![tol_n(2, -1)]),
                taints: vec![taint_n(1, 0)],
                deleted: true,
            },
        ];
        for case in cases {
            let mut s = EvictionSchedule::default();
            s.set_node(&tainted("node1", case.taints), t(0));
            s.set_pod(&case.pod);
            let deleted = !due_now(&mut s, 0).is_empty();
            assert_eq!(deleted, case.deleted, "{}", case.name);
        }
    }

    /// Upstream `TestDeletePod`: deleting an unknown pod is harmless.
    #[test]
    fn delete_pod() {
        let mut s = EvictionSchedule::default();
        s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
        assert!(!s.remove_pod(&key("pod1")));
        s.set_pod(&new_pod("pod1", "node1", vec![tol_n(1, 100)]));
        assert_eq!(s.scheduled(&key("pod1")), Some(t(100)));
        assert!(s.remove_pod(&key("pod1")), "scheduled eviction cancelled");
        assert_eq!(s.next_due(), None);
    }

    /// Upstream `TestUpdatePod`, with berth's rule where it differs:
    /// lengthening a toleration delays the eviction (upstream keeps the
    /// first schedule).
    #[test]
    fn update_pod() {
        struct Case {
            name: &'static str,
            before: Pod,
            after: Pod,
            /// When the eviction is due after the update (`None`: never).
            due: Option<i64>,
        }
        let cases = vec![
            Case {
                name: "scheduling onto tainted Node",
                before: new_pod("pod1", "", vec![]),
                after: new_pod("pod1", "node1", vec![]),
                due: Some(0),
            },
            Case {
                name: "scheduling onto tainted Node with toleration",
                before: new_pod("pod1", "", vec![tol_n(1, -1)]),
                after: new_pod("pod1", "node1", vec![tol_n(1, -1)]),
                due: None,
            },
            Case {
                name: "removing toleration",
                before: new_pod("pod1", "node1", vec![tol_n(1, 100)]),
                after: new_pod("pod1", "node1", vec![]),
                due: Some(0),
            },
            Case {
                name: "lengthening toleration moves the due time",
                before: new_pod("pod1", "node1", vec![tol_n(1, 1)]),
                after: new_pod("pod1", "node1", vec![tol_n(1, 100)]),
                due: Some(100),
            },
        ];
        for case in cases {
            let mut s = EvictionSchedule::default();
            s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
            s.set_pod(&case.before);
            s.set_pod(&case.after);
            assert_eq!(s.next_due(), case.due.map(t), "{}", case.name);
        }
    }

    /// Upstream `TestUpdateNode`.
    #[test]
    fn update_node() {
        struct Case {
            name: &'static str,
            pod: Pod,
            /// The node's taints before and after the update.
            before: Vec<Taint>,
            after: Vec<Taint>,
            /// When the eviction is due after the update (`None`: never).
            due: Option<i64>,
        }
        let cases = vec![
            Case {
                name: "Added taint, expect node patched and deleted",
                pod: new_pod("pod1", "node1", vec![]),
                before: vec![],
                after: vec![taint_n(1, 0)],
                due: Some(0),
            },
            Case {
                name: "Added tolerated taint",
                pod: new_pod("pod1", "node1", vec![tol_n(1, 100)]),
                before: vec![],
                after: vec![taint_n(1, 0)],
                due: Some(100),
            },
            Case {
                name: "Only one added taint tolerated",
                pod: new_pod("pod1", "node1", vec![tol_n(1, 100)]),
                before: vec![],
                after: vec![taint_n(1, 0), taint_n(2, 0)],
                due: Some(0),
            },
            Case {
                name: "Taint removed",
                pod: new_pod("pod1", "node1", vec![tol_n(1, 1)]),
                before: vec![taint_n(1, 0)],
                after: vec![],
                due: None,
            },
            Case {
                name: "Pod with multiple tolerations are evicted when first one runs out",
                pod: new_pod("pod1", "node1", vec![tol_n(1, 1), tol_n(2, 100)]),
                before: vec![],
                after: vec![taint_n(1, 0), taint_n(2, 0)],
                due: Some(1),
            },
        ];
        for case in cases {
            let mut s = EvictionSchedule::default();
            s.set_pod(&case.pod);
            s.set_node(&tainted("node1", case.before), t(0));
            s.set_node(&tainted("node1", case.after), t(0));
            assert_eq!(s.next_due(), case.due.map(t), "{}", case.name);
        }
    }

    /// Upstream `TestUpdateNodeWithMultipleTaints`.
    #[test]
    fn update_node_with_multiple_taints() {
        let p = new_pod(
            "pod1",
            "node1",
            vec![
                tol("testTaint1", "Exists", "", EFFECT_NO_EXECUTE),
                tol_secs("testTaint2", "Exists", "", EFFECT_NO_EXECUTE, 60),
            ],
        );
        let mut s = EvictionSchedule::default();
        s.set_pod(&p);
        s.set_node(&tainted("node1", vec![]), t(0));
        assert_eq!(s.scheduled(&key("pod1")), None, "no taints");
        s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
        assert_eq!(s.scheduled(&key("pod1")), None, "forever tolerated");
        s.set_node(&tainted("node1", vec![taint_n(1, 0), taint_n(2, 5)]), t(5));
        assert_eq!(s.scheduled(&key("pod1")), Some(t(65)), "temporary");
        let cancelled = s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(6));
        assert_eq!(cancelled, vec![key("pod1")]);
        assert_eq!(s.scheduled(&key("pod1")), None);
        assert!(due_now(&mut s, 1000).is_empty(), "never deleted");
    }

    /// Upstream `TestUpdateNodeWithMultiplePods`.
    #[test]
    fn update_node_with_multiple_pods() {
        let mut s = EvictionSchedule::default();
        s.set_pod(&new_pod("pod1", "node1", vec![]));
        s.set_pod(&new_pod("pod2", "node1", vec![tol_n(1, 1)]));
        s.set_pod(&new_pod("pod3", "node1", vec![tol_n(1, -1)]));
        s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
        assert_eq!(due_now(&mut s, 0), ["pod1"]);
        assert_eq!(due_now(&mut s, 1), ["pod2"]);
        assert!(due_now(&mut s, 1000).is_empty());

        let mut s = EvictionSchedule::default();
        for p in [
            new_pod("pod1", "node1", vec![]),
            new_pod("pod2", "node1", vec![tol_n(1, 1)]),
            new_pod("pod3", "node1", vec![tol_n(1, -1)]),
        ] {
            s.set_pod(&p);
        }
        s.set_node(&tainted("node1", vec![taint_n(1, 0), taint_n(2, 0)]), t(0));
        let mut all = due_now(&mut s, 0);
        all.sort();
        assert_eq!(
            all,
            ["pod1", "pod2", "pod3"],
            "evict all not matching all taints"
        );
    }

    /// Upstream `TestEventualConsistency`: a pod seen after its node's taint
    /// is handled all the same.
    #[test]
    fn eventual_consistency() {
        struct Case {
            name: &'static str,
            /// pod2 as the schedule knew it before the taint, if at all.
            before: Option<Pod>,
            after: Pod,
            /// When pod2's eviction is due (`None`: never).
            due: Option<i64>,
        }
        let cases = vec![
            Case {
                name: "existing pod2 scheduled onto tainted Node",
                before: Some(new_pod("pod2", "", vec![])),
                after: new_pod("pod2", "node1", vec![]),
                due: Some(0),
            },
            Case {
                name: "existing pod2 with taint toleration scheduled onto tainted Node",
                before: Some(new_pod("pod2", "", vec![tol_n(1, 100)])),
                after: new_pod("pod2", "node1", vec![tol_n(1, 100)]),
                due: Some(100),
            },
            Case {
                name: "new pod2 created on tainted Node",
                before: None,
                after: new_pod("pod2", "node1", vec![]),
                due: Some(0),
            },
            Case {
                name: "new pod2 with taint toleration created on tainted Node",
                before: None,
                after: new_pod("pod2", "node1", vec![tol_n(1, 100)]),
                due: Some(100),
            },
        ];
        for case in cases {
            let mut s = EvictionSchedule::default();
            s.set_pod(&new_pod("pod1", "node1", vec![]));
            if let Some(before) = &case.before {
                s.set_pod(before);
            }
            s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
            assert_eq!(due_now(&mut s, 0), ["pod1"], "{}", case.name);
            s.set_pod(&case.after);
            assert_eq!(s.scheduled(&key("pod2")), case.due.map(t), "{}", case.name);
        }
    }

    #[test]
    fn a_re_added_taint_restarts_the_count() {
        let mut s = EvictionSchedule::default();
        s.set_pod(&new_pod("pod1", "node1", vec![tol_n(1, 300)]));
        s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
        assert_eq!(s.scheduled(&key("pod1")), Some(t(300)));
        let cancelled = s.set_node(&tainted("node1", vec![]), t(100));
        assert_eq!(cancelled, vec![key("pod1")]);
        s.set_node(&tainted("node1", vec![taint_n(1, 200)]), t(200));
        assert_eq!(s.scheduled(&key("pod1")), Some(t(500)));
    }

    #[test]
    fn a_failed_eviction_is_retried_and_a_deleted_pod_is_forgotten() {
        let mut s = EvictionSchedule::default();
        s.set_pod(&new_pod("pod1", "node1", vec![]));
        s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
        let due = s.take_due(t(0));
        assert_eq!(due.len(), 1);
        assert_eq!(s.next_due(), None, "in flight");
        // An unrelated update of the pod while in flight does not hand it out again.
        s.set_pod(&new_pod("pod1", "node1", vec![]));
        assert_eq!(s.next_due(), None);
        s.failed(&due[0], t(1));
        assert_eq!(s.next_due(), Some(t(1)));
        let again = s.take_due(t(1));
        assert_eq!(again.len(), 1);
        assert!(
            !s.remove_pod(&key("pod1")),
            "no cancellation for an evicted pod"
        );
        assert_eq!(s.pod_count(), 0);
    }

    #[test]
    fn terminating_pods_are_not_evicted_again() {
        let mut s = EvictionSchedule::default();
        let mut p = new_pod("pod1", "node1", vec![]);
        p.metadata.deletion_timestamp = Some(Time(t(0)));
        s.set_pod(&p);
        s.set_node(&tainted("node1", vec![taint_n(1, 0)]), t(0));
        assert_eq!(s.next_due(), None);
    }
}
