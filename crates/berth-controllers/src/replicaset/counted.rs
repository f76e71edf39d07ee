//! What one ReplicaSet's last sync read of each pod it owns, kept for its
//! next sync.
//!
//! A sync claims and counts every pod of the set (upstream's
//! `syncReplicaSet`: `ClaimPods`, then `calculateStatus`), and a set's
//! pods change one at a time: during a scale-up of 10,000 replicas each
//! sync read ~10,000 pods again to find a handful changed. The pod cache
//! holds each pod version as its own `Arc`, so a pod whose `Arc` is the
//! one the last sync counted is unchanged: it is still this set's (its
//! controller reference, namespace and phase are those that were read),
//! still selected (while the selector is the same) and counts as it did
//! (while the template's labels are the same). Each entry keeps its `Arc`
//! alive, so no other pod version can come to live at its address.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_core::workloads::replicaset::{self, PodCount, ReplicaCounts};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct CountedPods {
    basis: Basis,
    /// By the address of the pod version counted.
    entries: foldhash::HashMap<usize, Counted>,
    /// Syncs counted so far.
    round: u64,
}

/// What the entries were read against.
#[derive(Debug, Default, PartialEq)]
struct Basis {
    uid: Option<String>,
    selector: LabelSelector,
    template_labels: BTreeMap<String, String>,
}

#[derive(Debug)]
struct Counted {
    pod: Arc<Pod>,
    count: PodCount,
    /// The last sync that claimed it.
    round: u64,
}

fn address(pod: &Arc<Pod>) -> usize {
    Arc::as_ptr(pod) as usize
}

impl CountedPods {
    /// The entries of `previous` if they were read against what `rs`
    /// selects and labels now; none otherwise.
    pub fn for_replica_set(previous: Option<CountedPods>, rs: &ReplicaSet) -> CountedPods {
        let basis = Basis {
            uid: rs.metadata.uid.clone(),
            selector: rs.spec.selector.clone(),
            template_labels: replicaset::template_labels(rs),
        };
        match previous {
            Some(previous) if previous.basis == basis => previous,
            _ => CountedPods {
                basis,
                entries: foldhash::HashMap::default(),
                round: 0,
            },
        }
    }

    /// Whether `pod` is the very version the last sync claimed as this
    /// set's own.
    pub fn is_owned(&self, pod: &Arc<Pod>) -> bool {
        self.entries
            .get(&address(pod))
            .is_some_and(|c| Arc::ptr_eq(&c.pod, pod))
    }

    /// The status counts of `pods` (the set's claimed pods) at `now`,
    /// reading only the pods not counted before; what is kept afterwards
    /// is these pods.
    pub fn count(
        &mut self,
        pods: &[Arc<Pod>],
        min_ready_seconds: i32,
        now: Timestamp,
    ) -> ReplicaCounts {
        self.round = self.round.wrapping_add(1);
        let mut counts = ReplicaCounts::default();
        for pod in pods {
            let entry = self
                .entries
                .entry(address(pod))
                .and_modify(|counted| {
                    if !Arc::ptr_eq(&counted.pod, pod) {
                        *counted = Counted::of(pod, &self.basis.template_labels, self.round);
                    }
                    counted.round = self.round;
                })
                .or_insert_with(|| Counted::of(pod, &self.basis.template_labels, self.round));
            counts.add(entry.count, min_ready_seconds, now);
        }
        // Every pod has its own address: anything more is a pod not
        // claimed this time.
        if self.entries.len() > pods.len() {
            let round = self.round;
            self.entries.retain(|_, counted| counted.round == round);
        }
        counts
    }
}

impl Counted {
    fn of(pod: &Arc<Pod>, template_labels: &BTreeMap<String, String>, round: u64) -> Counted {
        Counted {
            pod: pod.clone(),
            count: PodCount::of(pod, template_labels),
            round,
        }
    }
}

#[cfg(test)]
mod tests {
    use berth_core::test_util::make_pod;
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn replica_set(app: &str, template_labels: &[(&str, &str)]) -> ReplicaSet {
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some("rs-uid".into()),
                ..Default::default()
            },
            spec: ReplicaSetSpec {
                selector: LabelSelector {
                    match_labels: Some(labels(&[("app", app)])),
                    ..Default::default()
                },
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels(template_labels)),
                        ..Default::default()
                    }),
                    spec: None,
                }),
                ..Default::default()
            },
            status: None,
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).expect("a second in range")
    }

    fn ready_pod(name: &str, since: i64) -> Arc<Pod> {
        Arc::new(
            make_pod()
                .name(name)
                .label("app", "web")
                .ready_since(at(since))
                .obj(),
        )
    }

    #[test]
    fn counts_equal_the_status_rule_and_are_reused_per_pod_version() {
        let rs = replica_set("web", &[("app", "web")]);
        let pods = vec![
            ready_pod("a", 100),
            ready_pod("b", 200),
            Arc::new(make_pod().name("c").label("app", "web").obj()),
        ];
        let mut counted = CountedPods::for_replica_set(None, &rs);
        assert!(pods.iter().all(|p| !counted.is_owned(p)));
        let first = counted.count(&pods, 50, at(210));
        let refs: Vec<&Pod> = pods.iter().map(Arc::as_ref).collect();
        let mut with_min_ready = rs.clone();
        with_min_ready.spec.min_ready_seconds = Some(50);
        let expected = replicaset::status(&with_min_ready, &refs, None, at(210));
        assert_eq!(
            (
                first.replicas,
                Some(first.fully_labeled),
                Some(first.ready),
                Some(first.available)
            ),
            (
                expected.replicas,
                expected.fully_labeled_replicas,
                expected.ready_replicas,
                expected.available_replicas
            )
        );
        assert_eq!((first.ready, first.available), (2, 1));
        // Availability moves with the clock without reading the pods again.
        let mut counted = CountedPods::for_replica_set(Some(counted), &rs);
        assert!(pods.iter().all(|p| counted.is_owned(p)));
        assert_eq!(counted.count(&pods, 50, at(260)).available, 2);
        // A new version of a pod is a stranger until counted.
        let changed = Arc::new(Pod::clone(&pods[2]));
        assert!(!counted.is_owned(&changed));
    }

    #[test]
    fn a_changed_selector_or_template_forgets_every_pod() {
        let pods = vec![ready_pod("a", 100)];
        let cases = [
            ("selector", replica_set("other", &[("app", "web")])),
            (
                "template labels",
                replica_set("web", &[("app", "web"), ("tier", "x")]),
            ),
        ];
        for (name, changed) in cases {
            let rs = replica_set("web", &[("app", "web")]);
            let mut counted = CountedPods::for_replica_set(None, &rs);
            counted.count(&pods, 0, at(300));
            let counted = CountedPods::for_replica_set(Some(counted), &changed);
            assert!(!counted.is_owned(&pods[0]), "{name}");
        }
    }

    #[test]
    fn pods_no_longer_claimed_are_forgotten() {
        let rs = replica_set("web", &[("app", "web")]);
        let (a, b) = (ready_pod("a", 100), ready_pod("b", 100));
        let mut counted = CountedPods::for_replica_set(None, &rs);
        counted.count(&[a.clone(), b.clone()], 0, at(300));
        counted.count(std::slice::from_ref(&a), 0, at(300));
        assert!(counted.is_owned(&a));
        assert!(!counted.is_owned(&b));
    }
}
