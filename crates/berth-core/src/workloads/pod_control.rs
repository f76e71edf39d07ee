//! How a workload controller issues pod creates and deletes, from
//! upstream's `pkg/controller/controller_utils.go` and the ReplicaSet
//! controller's `slowStartBatch`:
//!
//! - [`SlowStartBatches`]: creates go out in batches of 1, 2, 4, ... so
//!   that a controller whose creates all fail (quota, admission) finds out
//!   after one request, not after thousands; a failed batch ends the sync
//!   and the skipped creates are no longer expected.
//! - [`Expectations`] (`ControllerExpectations` and
//!   `UIDTrackingControllerExpectations`): what a controller has asked for
//!   and not yet seen in its watch. While creates or deletes are
//!   outstanding the controller does not act again on its (stale) cache,
//!   so it never creates a pod twice; an expectation older than
//!   [`EXPECTATIONS_TIMEOUT`] is given up on, so a lost event delays a
//!   controller but never wedges it.
//! - [`pod_from_template`] (`GetPodFromTemplate`): the pod a controller
//!   creates from its template.
//!
//! Time is an argument: the caller passes `now` from its clock.

use std::collections::{BTreeSet, HashMap};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::validation::names::{DNS1123_SUBDOMAIN_MAX_LENGTH, is_dns1123_subdomain};

/// `SlowStartInitialBatchSize`.
pub const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

/// `ExpectationsTimeout`: how long a controller waits for the watch to
/// show what it asked for before it acts on its cache anyway.
pub const EXPECTATIONS_TIMEOUT: SignedDuration = SignedDuration::from_secs(5 * 60);

/// The batch sizes of `slowStartBatch` for `count` calls: `initial`, then
/// doubling, the last one cut to what remains (1, 2, 4, 3 for 10).
#[derive(Debug, Clone)]
pub struct SlowStartBatches {
    remaining: usize,
    next: usize,
}

impl SlowStartBatches {
    pub fn new(count: usize, initial: usize) -> SlowStartBatches {
        SlowStartBatches {
            remaining: count,
            next: initial.min(count),
        }
    }
}

impl Iterator for SlowStartBatches {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.next == 0 {
            return None;
        }
        let batch = self.next;
        self.remaining -= batch;
        self.next = batch.saturating_mul(2).min(self.remaining);
        Some(batch)
    }
}

/// One controller's outstanding creates and deletes
/// (`ControlleeExpectations`), plus the keys of the pods it expects to see
/// deleted (`UIDTrackingControllerExpectations`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outstanding {
    add: i64,
    del: i64,
    set_at: Timestamp,
    deleting: BTreeSet<String>,
}

/// Every controller's expectations, by controller key (`namespace/name`).
#[derive(Debug, Clone)]
pub struct Expectations {
    timeout: SignedDuration,
    by_controller: HashMap<String, Outstanding>,
}

impl Default for Expectations {
    fn default() -> Self {
        Expectations::new(EXPECTATIONS_TIMEOUT)
    }
}

impl Expectations {
    /// Expectations given up on after `timeout`.
    pub fn new(timeout: SignedDuration) -> Expectations {
        Expectations {
            timeout,
            by_controller: HashMap::new(),
        }
    }

    /// `SatisfiedExpectations`: the controller may act on its cache. True
    /// when nothing was recorded, when everything recorded was observed,
    /// or when the record is older than the timeout.
    pub fn satisfied(&self, controller: &str, now: Timestamp) -> bool {
        self.by_controller.get(controller).is_none_or(|e| {
            (e.add <= 0 && e.del <= 0) || now.duration_since(e.set_at) > self.timeout
        })
    }

    /// `SetExpectations`: expect `add` creates and `del` deletes from now,
    /// replacing whatever was expected before.
    pub fn set(&mut self, controller: &str, add: usize, del: usize, now: Timestamp) {
        self.by_controller.insert(
            controller.to_string(),
            Outstanding {
                add: count(add),
                del: count(del),
                set_at: now,
                deleting: BTreeSet::new(),
            },
        );
    }

    /// `ExpectCreations`.
    pub fn expect_creations(&mut self, controller: &str, add: usize, now: Timestamp) {
        self.set(controller, add, 0, now);
    }

    /// `UIDTrackingControllerExpectations.ExpectDeletions`: expect these
    /// pods (by `namespace/name`) to be deleted, each counted once however
    /// often its deletion is seen (as an update setting the deletion
    /// timestamp, then as a delete).
    pub fn expect_deletions(&mut self, controller: &str, pod_keys: &[String], now: Timestamp) {
        self.set(controller, 0, pod_keys.len(), now);
        if let Some(e) = self.by_controller.get_mut(controller) {
            e.deleting = pod_keys.iter().cloned().collect();
        }
    }

    /// `CreationObserved`: one expected create was seen (or failed, and so
    /// will never be seen).
    pub fn creation_observed(&mut self, controller: &str) {
        self.lower(controller, 1, 0);
    }

    /// `DeletionObserved` for a count-only deletion.
    pub fn deletion_observed(&mut self, controller: &str) {
        self.lower(controller, 0, 1);
    }

    /// `UIDTrackingControllerExpectations.DeletionObserved`: the pod's
    /// deletion was seen; lowers the count the first time only.
    pub fn pod_deletion_observed(&mut self, controller: &str, pod_key: &str) {
        let first_time = self
            .by_controller
            .get_mut(controller)
            .is_some_and(|e| e.deleting.remove(pod_key));
        if first_time {
            self.lower(controller, 0, 1);
        }
    }

    /// `LowerExpectations`: e.g. the creates a failed slow-start batch
    /// skipped.
    pub fn lower(&mut self, controller: &str, add: usize, del: usize) {
        if let Some(e) = self.by_controller.get_mut(controller) {
            e.add -= count(add);
            e.del -= count(del);
        }
    }

    /// `RaiseExpectations`.
    pub fn raise(&mut self, controller: &str, add: usize, del: usize) {
        if let Some(e) = self.by_controller.get_mut(controller) {
            e.add += count(add);
            e.del += count(del);
        }
    }

    /// `GetExpectations`: the outstanding (creates, deletes), which go
    /// negative when more was observed than expected.
    pub fn get(&self, controller: &str) -> Option<(i64, i64)> {
        self.by_controller.get(controller).map(|e| (e.add, e.del))
    }

    /// The pods still expected to be deleted (`GetUIDs`).
    pub fn pending_deletions(&self, controller: &str) -> Option<&BTreeSet<String>> {
        self.by_controller.get(controller).map(|e| &e.deleting)
    }

    /// `DeleteExpectations`: the controller is gone (or recreated under
    /// the same name, which must start clean).
    pub fn delete(&mut self, controller: &str) {
        self.by_controller.remove(controller);
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `getPodsPrefix`: the `generateName` of a controller's pods, its name
/// and a dash, or the bare name when the dash would make it an invalid
/// prefix (upstream's `ValidatePodName(prefix, true)`: a DNS subdomain
/// once the trailing dash is masked, so only a name at the length limit).
pub fn pods_prefix(controller_name: &str) -> String {
    let prefix = format!("{controller_name}-");
    let masked = format!("{controller_name}a");
    if prefix.len() > DNS1123_SUBDOMAIN_MAX_LENGTH || !is_dns1123_subdomain(&masked).is_empty() {
        return controller_name.to_string();
    }
    prefix
}

/// `GetPodFromTemplate`: the pod a controller named `controller_name`
/// creates from `template`: the template's labels, annotations, finalizers
/// and spec, `generateName` from [`pods_prefix`], and `controller_ref` as
/// its only owner reference.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    controller_name: &str,
    controller_ref: Option<OwnerReference>,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(pods_prefix(controller_name)),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: controller_ref.map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::t;

    /// Upstream `TestSlowStartBatch` (replicaset): calls fail past a
    /// limit; a failed batch ends the run.
    #[test]
    fn slow_start_stops_after_a_failed_batch() {
        struct Case {
            name: &'static str,
            count: usize,
            call_limit: usize,
            want_successes: usize,
            want_calls: usize,
        }
        for case in [
            Case {
                name: "callLimit = 0 (all fail)",
                count: 10,
                call_limit: 0,
                want_successes: 0,
                want_calls: 1,
            },
            Case {
                name: "callLimit = count (all succeed)",
                count: 10,
                call_limit: 10,
                want_successes: 10,
                want_calls: 10,
            },
            Case {
                name: "callLimit < count (some succeed)",
                count: 10,
                call_limit: 5,
                want_successes: 5,
                want_calls: 7,
            },
        ] {
            let (mut calls, mut successes) = (0, 0);
            for batch in SlowStartBatches::new(case.count, 1) {
                let failures = (0..batch)
                    .filter(|_| {
                        calls += 1;
                        calls > case.call_limit
                    })
                    .count();
                successes += batch - failures;
                if failures > 0 {
                    break;
                }
            }
            assert_eq!(successes, case.want_successes, "{}", case.name);
            assert_eq!(calls, case.want_calls, "{}", case.name);
        }
    }

    #[test]
    fn slow_start_batch_sizes_double() {
        let sizes = |count, initial| SlowStartBatches::new(count, initial).collect::<Vec<_>>();
        assert_eq!(sizes(10, 1), vec![1, 2, 4, 3]);
        assert_eq!(sizes(0, 1), Vec::<usize>::new());
        assert_eq!(sizes(1, 1), vec![1]);
        assert_eq!(sizes(500, 1), vec![1, 2, 4, 8, 16, 32, 64, 128, 245]);
        assert_eq!(sizes(3, 5), vec![3]);
    }

    /// Upstream `TestControllerExpectations`: 10 adds and 30 deletes,
    /// each observed once more than expected; then re-set and expired.
    #[test]
    fn expectations_are_satisfied_when_observed_or_expired() {
        let ttl = SignedDuration::from_secs(30);
        let mut e = Expectations::new(ttl);
        let key = "default/foobar";
        let (adds, dels) = (10, 30);
        e.set(key, adds, dels, t(0));
        for _ in 0..=adds {
            e.creation_observed(key);
        }
        assert!(!e.satisfied(key, t(0)), "deletes are still expected");
        for _ in 0..=dels {
            e.deletion_observed(key);
        }
        struct Case {
            name: &'static str,
            set: Option<(usize, usize)>,
            want: (i64, i64),
            want_satisfied: bool,
            expire: bool,
        }
        for case in [
            Case {
                name: "Expectations have been surpassed",
                set: None,
                want: (-1, -1),
                want_satisfied: true,
                expire: false,
            },
            Case {
                name: "Old expectations are cleared because of ttl",
                set: Some((1, 2)),
                want: (1, 2),
                want_satisfied: false,
                expire: true,
            },
        ] {
            if let Some((add, del)) = case.set {
                e.set(key, add, del, t(0));
            }
            assert_eq!(e.get(key), Some(case.want), "{}", case.name);
            assert_eq!(e.satisfied(key, t(0)), case.want_satisfied, "{}", case.name);
            if case.expire {
                assert!(
                    !e.satisfied(key, t(30)),
                    "{}: not yet expired at the ttl",
                    case.name
                );
                assert!(
                    e.satisfied(key, t(31)),
                    "{}: expired past the ttl",
                    case.name
                );
            }
        }
        assert!(Expectations::default().satisfied("never/recorded", t(0)));
    }

    /// Upstream `TestUIDExpectations`: each expected pod's deletion counts
    /// once; deleting the expectations forgets the pods.
    #[test]
    fn deletions_are_counted_once_per_pod() {
        let mut e = Expectations::default();
        for replicas in [2_usize, 1, 0, 5] {
            let key = format!("default/rc-{replicas}");
            let pods: Vec<String> = (0..5)
                .map(|i| format!("default/pod{i}-rc-{replicas}"))
                .collect();
            e.expect_deletions(&key, &pods, t(0));
            assert!(
                !e.satisfied(&key, t(0)),
                "{key}: satisfied before the deletions"
            );
            for pod in &pods {
                e.pod_deletion_observed(&key, pod);
                e.pod_deletion_observed(&key, pod);
            }
            assert_eq!(e.get(&key), Some((0, 0)), "{key}: each pod counted once");
            assert!(
                e.satisfied(&key, t(0)),
                "{key}: satisfied after the deletions"
            );
            e.delete(&key);
            assert_eq!(e.pending_deletions(&key), None, "{key}");
        }
    }

    /// Upstream `TestCreatePodsWithGenerateName` and `getPodsPrefix`: the
    /// pod carries the template and the controller reference, named by
    /// the controller's prefix.
    #[test]
    fn pods_come_from_the_template() {
        use k8s_openapi::api::core::v1::PodSpec;
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                name: Some("ignored".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                annotations: Some([("a".to_string(), "b".to_string())].into()),
                finalizers: Some(vec!["example.com/keep".into()]),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Always".into()),
                ..PodSpec::default()
            }),
        };
        let owner = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web-abc".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let pod = pod_from_template(&template, "web-abc", Some(owner.clone()));
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-abc-"));
        assert_eq!(pod.metadata.name, None);
        assert_eq!(
            pod.metadata.labels,
            template.metadata.as_ref().and_then(|m| m.labels.clone())
        );
        assert_eq!(pod.metadata.annotations.map(|a| a.len()), Some(1));
        assert_eq!(
            pod.metadata.finalizers,
            Some(vec!["example.com/keep".to_string()])
        );
        assert_eq!(pod.metadata.owner_references, Some(vec![owner]));
        assert_eq!(pod.spec, template.spec);

        struct Case {
            name: &'static str,
            controller: String,
            want: String,
        }
        for case in [
            Case {
                name: "a short name gets a dash",
                controller: "web".into(),
                want: "web-".into(),
            },
            Case {
                name: "a name at the limit stays bare",
                controller: "a".repeat(253),
                want: "a".repeat(253),
            },
            Case {
                name: "one below the limit gets its dash",
                controller: "a".repeat(252),
                want: format!("{}-", "a".repeat(252)),
            },
        ] {
            assert_eq!(pods_prefix(&case.controller), case.want, "{}", case.name);
        }
    }

    /// How a sync that creates 10 pods in slow start and fails in its
    /// third batch leaves its expectations (upstream `manageReplicas`).
    #[test]
    fn a_failed_slow_start_lowers_the_expected_creates() {
        let mut e = Expectations::default();
        e.expect_creations("ns/rs", 10, t(0));
        // Batches 1 and 2 succeed and are observed; the batch of 4 has 3
        // successes and one failure (observed at once: it will never show
        // up in the watch).
        for _ in 0..(1 + 2 + 3 + 1) {
            e.creation_observed("ns/rs");
        }
        assert!(!e.satisfied("ns/rs", t(1)));
        // The last 3 creates were never attempted.
        e.lower("ns/rs", 3, 0);
        assert!(e.satisfied("ns/rs", t(1)));
        e.raise("ns/rs", 1, 0);
        assert_eq!(e.get("ns/rs"), Some((1, 0)));
    }
}
