//! Pods nominated to nodes (upstream's `nominator` in the scheduling
//! queue): a pod that preempted others waits for its victims to go, and
//! until it is bound its requests count on the node it was nominated to
//! when pods of equal or lower priority are filtered there
//! (`addGetNominatedPods`), so that they do not take the room its victims
//! freed. Nominations come from this scheduler's preemptions and from the
//! pods' `status.nominatedNodeName` as the watch reports it.

use std::collections::VecDeque;

use berth_core::priority::pod_priority;
use k8s_openapi::api::core::v1::Pod;

use crate::framework::PodInfo;

/// One nominated pod.
#[derive(Debug, Clone)]
pub struct Nominated {
    pub node: String,
    pub pod: PodInfo,
    pub priority: i32,
}

/// The nominations, by pod key, and the keys again by node: a cycle asks
/// for each node it filters which pods are nominated there, and a search
/// through every nomination for each would grow with their number.
#[derive(Debug, Default)]
pub struct Nominator {
    pods: foldhash::HashMap<String, Nominated>,
    by_node: foldhash::HashMap<String, Vec<String>>,
    /// How many changes there have been to the nominations of any node.
    changes: u64,
    /// The nodes of the latest changes (at most [`CHANGE_LOG_LEN`]), the
    /// oldest first, the last numbered `changes`: a cycle that reuses its
    /// verdicts on nodes from an earlier one asks which nodes' nominations
    /// changed since.
    changed: VecDeque<String>,
}

/// How many changes [`Nominator::changed_since`] can tell about.
const CHANGE_LOG_LEN: usize = 4096;

/// `status.nominatedNodeName`, "" when unset.
pub fn nominated_node_name(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .unwrap_or("")
}

impl Nominator {
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Where `key` is nominated, if anywhere.
    pub fn node_of(&self, key: &str) -> Option<&str> {
        self.pods.get(key).map(|n| n.node.as_str())
    }

    /// Nominates `pod` to `node` (replacing an earlier nomination).
    pub fn nominate(&mut self, key: &str, pod: PodInfo, node: &str) {
        let priority = pod_priority(pod.pod());
        let earlier = self.pods.insert(
            key.to_string(),
            Nominated {
                node: node.to_string(),
                pod,
                priority,
            },
        );
        match earlier {
            Some(earlier) if earlier.node == node => self.record(node),
            Some(earlier) => {
                self.unindex(key, &earlier.node);
                self.index(key, node);
            }
            None => self.index(key, node),
        }
    }

    /// The nominations of `node` changed.
    fn record(&mut self, node: &str) {
        self.changes += 1;
        if self.changed.len() == CHANGE_LOG_LEN {
            self.changed.pop_front();
        }
        self.changed.push_back(node.to_string());
    }

    /// How many changes there have been (see [`Nominator::changed_since`]).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The nodes whose nominations changed after the first `seen` changes
    /// (a node may come more than once), or `None` when the log no longer
    /// reaches that far back.
    pub fn changed_since(&self, seen: u64) -> Option<impl Iterator<Item = &str>> {
        let missed = usize::try_from(self.changes.checked_sub(seen)?).ok()?;
        (missed <= self.changed.len()).then(|| {
            self.changed
                .iter()
                .skip(self.changed.len() - missed)
                .map(String::as_str)
        })
    }

    fn index(&mut self, key: &str, node: &str) {
        self.record(node);
        self.by_node
            .entry(node.to_string())
            .or_default()
            .push(key.to_string());
    }

    fn unindex(&mut self, key: &str, node: &str) {
        self.record(node);
        if let Some(keys) = self.by_node.get_mut(node) {
            keys.retain(|k| k != key);
            if keys.is_empty() {
                self.by_node.remove(node);
            }
        }
    }

    /// A pending pod's new version from the watch (`updateNominatedPod`):
    /// its `status.nominatedNodeName` when set; when neither the version
    /// kept here nor the new one has one, a nomination made here is kept
    /// (the watch may report the pod before the status patch that
    /// nominates it); when the field was cleared, the nomination goes.
    pub fn pod_updated(&mut self, key: &str, new: &PodInfo) {
        let now = nominated_node_name(new.pod());
        if !now.is_empty() {
            self.nominate(key, new.clone(), now);
            return;
        }
        match self.pods.get_mut(key) {
            Some(kept) if nominated_node_name(kept.pod.pod()).is_empty() => {
                kept.pod = new.clone();
                let node = kept.node.clone();
                self.record(&node);
            }
            Some(_) => {
                self.delete(key);
            }
            None => {}
        }
    }

    /// The pod was bound, deleted or is no longer pending.
    pub fn delete(&mut self, key: &str) -> Option<Nominated> {
        let gone = self.pods.remove(key)?;
        self.unindex(key, &gone.node);
        Some(gone)
    }

    /// The pods nominated to `node`, with their keys.
    pub fn on_node<'n>(&'n self, node: &str) -> impl Iterator<Item = (&'n str, &'n Nominated)> {
        self.by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|key| self.pods.get(key).map(|n| (key.as_str(), n)))
    }

    /// Every nomination.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Nominated)> {
        self.pods.iter().map(|(k, n)| (k.as_str(), n))
    }

    /// The pods nominated to `node` whose priority is below `priority`
    /// (`getLowerPriorityNominatedPods`): a preemption for a pod of
    /// `priority` there takes their nomination away.
    pub fn lower_priority_on(&self, node: &str, priority: i32) -> Vec<(String, Nominated)> {
        self.on_node(node)
            .filter(|(_, n)| n.priority < priority)
            .map(|(k, n)| (k.to_string(), n.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::make_pod;
    use std::sync::Arc;

    fn pending(name: &str, nominated: Option<&str>) -> PodInfo {
        let mut pod = make_pod().name(name).namespace("default").obj();
        if let Some(node) = nominated {
            pod.status.get_or_insert_default().nominated_node_name = Some(node.into());
        }
        PodInfo::new(Arc::new(pod))
    }

    /// Upstream's `updateNominatedPod` cases: the field wins when set; a
    /// nomination made in memory survives an update that never had the
    /// field; clearing the field ends it.
    #[test]
    fn a_watch_update_keeps_or_ends_a_nomination_as_upstream() {
        struct Case {
            name: &'static str,
            in_memory: Option<&'static str>,
            old: Option<&'static str>,
            new: Option<&'static str>,
            want: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "the field names a node",
                in_memory: None,
                old: None,
                new: Some("n2"),
                want: Some("n2"),
            },
            Case {
                name: "the field moves the nomination",
                in_memory: Some("n1"),
                old: Some("n1"),
                new: Some("n2"),
                want: Some("n2"),
            },
            Case {
                name: "an update before the status patch keeps the nomination",
                in_memory: Some("n1"),
                old: None,
                new: None,
                want: Some("n1"),
            },
            Case {
                name: "the field cleared ends the nomination",
                in_memory: Some("n1"),
                old: Some("n1"),
                new: None,
                want: None,
            },
            Case {
                name: "no nomination anywhere",
                in_memory: None,
                old: None,
                new: None,
                want: None,
            },
        ];
        for Case {
            name,
            in_memory,
            old,
            new,
            want,
        } in cases
        {
            let mut nominator = Nominator::default();
            if let Some(node) = in_memory {
                // Made here (the pod as queued), or seen on the watch.
                nominator.nominate("default/p", pending("p", old), node);
            }
            nominator.pod_updated("default/p", &pending("p", new));
            assert_eq!(nominator.node_of("default/p"), want, "{name}");
        }
    }

    /// The per-node index follows every nomination: made, moved by the
    /// watch, replaced, ended by a cleared field or by deletion.
    #[test]
    fn the_pods_on_a_node_follow_nominations_made_moved_and_ended() {
        let on = |nominator: &Nominator, node: &str| -> Vec<String> {
            let mut keys: Vec<String> = nominator
                .on_node(node)
                .map(|(k, _)| k.to_string())
                .collect();
            keys.sort();
            keys
        };
        let mut nominator = Nominator::default();
        nominator.nominate("default/a", pending("a", None), "n1");
        nominator.nominate("default/b", pending("b", None), "n1");
        assert_eq!(on(&nominator, "n1"), ["default/a", "default/b"]);
        // The watch moves a's nomination to n2.
        nominator.pod_updated("default/a", &pending("a", Some("n2")));
        assert_eq!(on(&nominator, "n1"), ["default/b"]);
        assert_eq!(on(&nominator, "n2"), ["default/a"]);
        // Nominated to the same node again: listed once.
        nominator.nominate("default/a", pending("a", Some("n2")), "n2");
        assert_eq!(on(&nominator, "n2"), ["default/a"]);
        // The field cleared ends a's nomination; b is bound.
        nominator.pod_updated("default/a", &pending("a", None));
        nominator.delete("default/b");
        assert!(on(&nominator, "n1").is_empty() && on(&nominator, "n2").is_empty());
        assert!(nominator.is_empty());
    }

    #[test]
    fn only_lower_priority_pods_on_the_node_lose_their_nomination() {
        let mut nominator = Nominator::default();
        let with_priority = |name: &str, priority: i32| {
            let mut pod = make_pod().name(name).namespace("default").obj();
            pod.spec.get_or_insert_default().priority = Some(priority);
            PodInfo::new(Arc::new(pod))
        };
        nominator.nominate("default/low", with_priority("low", 1), "n1");
        nominator.nominate("default/same", with_priority("same", 5), "n1");
        nominator.nominate("default/elsewhere", with_priority("elsewhere", 1), "n2");
        let lower: Vec<String> = nominator
            .lower_priority_on("n1", 5)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(lower, vec!["default/low".to_string()]);
    }
}
