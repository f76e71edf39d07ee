//! The StatefulSet controller's syncs against a recording fake, after
//! upstream's `stateful_set_control_test.go` (`ScalesUp`, `ScalesDown`,
//! `ReplacesPods`, `RecreatesFailedPod`, `RollingUpdate` with partitions,
//! `OnDelete`): a test syncs, lets the watch deliver the writes
//! ([`Harness::observe`]), moves pods to Running and Ready itself (as a
//! kubelet would) and syncs again, checking the order of what happened.

use std::collections::BTreeMap;

use berth_client::{Change, ObjectKey};
use berth_core::clock::Clock;
use berth_core::test_util::t;
use berth_core::workloads::CONTROLLER_REVISION_HASH_LABEL;
use berth_core::workloads::statefulset::{
    POD_INDEX_LABEL, POD_NAME_LABEL, POLICY_PARALLEL, STRATEGY_ON_DELETE, STRATEGY_ROLLING_UPDATE,
};
use k8s_openapi::api::apps::v1::{
    ControllerRevision, RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetSpec,
    StatefulSetStatus, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    Container, Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};

use super::{StatefulSetConfig, StatefulSetController};
use crate::metrics::ControllerMetrics;
use crate::shared::{read, write};
use crate::workload::writes::fake::FakeWrites;

const START: &str = "2026-01-01T00:00:00Z";

fn labels() -> BTreeMap<String, String> {
    [("app".to_string(), "web".to_string())].into()
}

fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "nginx".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

/// Upstream's `newStatefulSet(replicas)`: `web`, OrderedReady,
/// RollingUpdate.
fn stateful_set(replicas: i32) -> StatefulSet {
    StatefulSet {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("web-uid".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: StatefulSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels()),
                match_expressions: None,
            },
            service_name: Some("nginx".into()),
            template: template("nginx:1"),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some(STRATEGY_ROLLING_UPDATE.into()),
                rolling_update: None,
            }),
            revision_history_limit: Some(10),
            ..StatefulSetSpec::default()
        },
        status: None,
    }
}

struct Harness {
    controller: StatefulSetController<FakeWrites>,
    replayed: usize,
}

impl Harness {
    fn new() -> Harness {
        let start = START.parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        Harness {
            controller: StatefulSetController::with_writes(
                FakeWrites::default(),
                Clock::virtual_from(start),
                StatefulSetConfig::default(),
                &ControllerMetrics::default(),
            ),
            replayed: 0,
        }
    }

    fn writes(&self) -> &FakeWrites {
        &self.controller.inner.writes
    }

    /// The set as the API has it (the test changes its spec this way).
    fn put_set(&self, set: &StatefulSet) {
        self.writes().put(set);
        write(&self.controller.inner.sets).apply(Change::Upsert(set.clone()));
    }

    fn set(&self) -> StatefulSet {
        read(&self.controller.inner.sets)
            .get(&ObjectKey::new("default", "web"))
            .map(|s| (*s).clone())
            .unwrap_or_default()
    }

    async fn sync(&mut self) {
        let result = self
            .controller
            .sync(&ObjectKey::new("default", "web"))
            .await;
        assert!(result.is_ok(), "sync: {result:?}");
        self.observe();
    }

    /// The watch delivers the fake's writes. A pod's deletion is graceful:
    /// it shows as a deletion timestamp, and the pod stays until the test
    /// finishes it ([`Harness::remove`], the kubelet's part).
    fn observe(&mut self) {
        let inner = &self.controller.inner;
        let writes = self.writes();
        for change in writes.changes_since::<Pod>(self.replayed) {
            let change = match change {
                Change::Delete(gone) => {
                    let Some(mut pod) = self.pod(&gone.key.name) else {
                        continue;
                    };
                    pod.metadata.deletion_timestamp = Some(Time(t(0)));
                    Change::Upsert(pod)
                }
                upsert => upsert,
            };
            let observed = write(&inner.pods).apply(change);
            if let Some(observed) = observed {
                self.controller.on_pod(&observed);
            }
        }
        for change in writes.changes_since::<ControllerRevision>(self.replayed) {
            write(&inner.revisions).apply(change);
        }
        for change in writes.changes_since::<StatefulSet>(self.replayed) {
            write(&inner.sets).apply(change);
        }
        self.replayed = writes.calls().len();
    }

    fn pod(&self, name: &str) -> Option<Pod> {
        read(&self.controller.inner.pods)
            .get(&ObjectKey::new("default", name))
            .map(|p| (*p).clone())
    }

    fn pod_names(&self) -> Vec<String> {
        read(&self.controller.inner.pods)
            .in_namespace("default")
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    }

    /// A kubelet's work: the pod is Running and Ready.
    fn run(&self, name: &str) {
        self.set_phase(name, "Running", true);
    }

    fn set_phase(&self, name: &str, phase: &str, ready: bool) {
        let Some(mut pod) = self.pod(name) else {
            panic!("no pod {name}");
        };
        pod.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                last_transition_time: Some(Time(t(0))),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        let observed = write(&self.controller.inner.pods).apply(Change::Upsert(pod));
        if let Some(observed) = observed {
            self.controller.on_pod(&observed);
        }
    }

    /// Graceful deletion started (a deletion timestamp), not finished.
    fn terminating(&self, name: &str) {
        let Some(mut pod) = self.pod(name) else {
            panic!("no pod {name}");
        };
        pod.metadata.deletion_timestamp = Some(Time(t(0)));
        write(&self.controller.inner.pods).apply(Change::Upsert(pod));
    }

    fn remove(&self, name: &str) {
        let observed =
            write(&self.controller.inner.pods).apply(Change::Delete(berth_client::Gone {
                key: ObjectKey::new("default", name),
                uid: None,
                last: None,
            }));
        if let Some(observed) = observed {
            self.controller.on_pod(&observed);
        }
    }

    fn created(&self) -> Vec<String> {
        self.writes().names("create", "Pod")
    }

    fn deleted(&self) -> Vec<String> {
        self.writes().names("delete", "Pod")
    }

    fn status(&self) -> StatefulSetStatus {
        self.set().status.unwrap_or_default()
    }

    fn revision_of(&self, name: &str) -> String {
        self.pod(name)
            .and_then(|p| {
                p.metadata
                    .labels
                    .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL).cloned())
            })
            .unwrap_or_default()
    }

    /// Syncs, and runs every pod the sync created, until nothing changes.
    async fn settle(&mut self) {
        for _ in 0..20 {
            let before = self.writes().calls().len();
            self.sync().await;
            for name in self.pod_names() {
                let running = self
                    .pod(&name)
                    .and_then(|p| p.status)
                    .and_then(|s| s.phase)
                    .is_some();
                if !running {
                    self.run(&name);
                }
            }
            let pod_writes = self
                .writes()
                .calls()
                .iter()
                .skip(before)
                .filter(|c| c.kind == "Pod")
                .count();
            if pod_writes == 0 {
                return;
            }
        }
    }
}

/// Upstream `ScalesUp` (OrderedReady): one pod at a time, lowest ordinal
/// first, each only once its predecessor is Running and Ready; stable
/// names and the identity labels.
#[tokio::test(start_paused = true)]
async fn ordered_ready_scales_up_one_pod_at_a_time() {
    let mut h = Harness::new();
    h.put_set(&stateful_set(3));
    h.sync().await;
    assert_eq!(h.created(), ["web-0"], "only the first");
    h.sync().await;
    assert_eq!(h.created(), ["web-0"], "web-1 waits for web-0 to be ready");
    h.set_phase("web-0", "Running", false);
    h.sync().await;
    assert_eq!(h.created(), ["web-0"], "running is not enough");
    h.run("web-0");
    h.sync().await;
    assert_eq!(h.created(), ["web-0", "web-1"]);
    h.run("web-1");
    h.sync().await;
    h.run("web-2");
    h.sync().await;
    assert_eq!(h.created(), ["web-0", "web-1", "web-2"]);
    let pod = h.pod("web-2").unwrap_or_default();
    let pod_labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        (
            pod_labels.get(POD_NAME_LABEL).map(String::as_str),
            pod_labels.get(POD_INDEX_LABEL).map(String::as_str),
        ),
        (Some("web-2"), Some("2"))
    );
    let spec = pod.spec.unwrap_or_default();
    assert_eq!(
        (spec.hostname.as_deref(), spec.subdomain.as_deref()),
        (Some("web-2"), Some("nginx"))
    );
    let status = h.status();
    assert_eq!(
        (
            status.replicas,
            status.ready_replicas,
            status.available_replicas,
            status.current_replicas,
            status.updated_replicas,
            status.observed_generation,
        ),
        (3, Some(3), Some(3), Some(3), Some(3), Some(1))
    );
    assert_eq!(status.current_revision, status.update_revision);
    assert_eq!(
        status.current_revision.as_deref(),
        Some(h.revision_of("web-0").as_str()),
        "pods carry the revision's name"
    );
}

/// Upstream's burst mode (`Parallel`): every pod at once.
#[tokio::test(start_paused = true)]
async fn parallel_creates_every_pod_at_once() {
    let mut h = Harness::new();
    let mut set = stateful_set(4);
    set.spec.pod_management_policy = Some(POLICY_PARALLEL.into());
    h.put_set(&set);
    h.sync().await;
    assert_eq!(h.created(), ["web-0", "web-1", "web-2", "web-3"]);
}

/// Upstream `ScalesDown`: highest ordinal first, one at a time, each
/// only once the previous one is gone.
#[tokio::test(start_paused = true)]
async fn ordered_ready_scales_down_in_reverse() {
    let mut h = Harness::new();
    h.put_set(&stateful_set(3));
    h.settle().await;
    let mut set = h.set();
    set.spec.replicas = Some(1);
    set.metadata.generation = Some(2);
    h.put_set(&set);
    h.sync().await;
    assert_eq!(h.deleted(), ["web-2"]);
    h.sync().await;
    assert_eq!(h.deleted(), ["web-2"], "web-1 waits while web-2 terminates");
    h.remove("web-2");
    h.sync().await;
    assert_eq!(h.deleted(), ["web-2", "web-1"]);
}

/// Upstream `RecreatesFailedPod`: a failed pod is deleted (with a
/// `RecreatingFailedPod` Event) and recreated once it is gone.
#[tokio::test(start_paused = true)]
async fn a_failed_pod_is_recreated() {
    let mut h = Harness::new();
    h.put_set(&stateful_set(2));
    h.settle().await;
    h.set_phase("web-0", "Failed", false);
    h.sync().await;
    assert_eq!(h.deleted(), ["web-0"]);
    assert!(
        h.writes()
            .reasons()
            .contains(&"RecreatingFailedPod".to_string())
    );
    h.sync().await;
    assert_eq!(h.created().len(), 2, "not while the old one terminates");
    h.remove("web-0");
    h.sync().await;
    assert_eq!(h.created(), ["web-0", "web-1", "web-0"], "recreated");
}

/// A pod stuck terminating (its node dead) keeps its identity: no second
/// pod of that name is asked for, under either policy, until it is gone.
#[tokio::test(start_paused = true)]
async fn a_terminating_pod_blocks_its_replacement() {
    for policy in ["OrderedReady", POLICY_PARALLEL] {
        let mut h = Harness::new();
        let mut set = stateful_set(3);
        set.spec.pod_management_policy = Some(policy.into());
        h.put_set(&set);
        h.settle().await;
        let before = h.created().len();
        h.terminating("web-1");
        for _ in 0..3 {
            h.sync().await;
        }
        assert_eq!(
            h.created().len(),
            before,
            "{policy}: nothing while web-1 terminates"
        );
        assert!(h.deleted().is_empty(), "{policy}: nothing deleted");
        h.remove("web-1");
        h.sync().await;
        assert_eq!(
            h.created().last().map(String::as_str),
            Some("web-1"),
            "{policy}: recreated once gone"
        );
    }
}

/// Upstream's partitioned `RollingUpdate`: pods at or above the partition
/// are replaced, highest ordinal first, each waiting for the previous to
/// be ready; lowering the partition continues the rollout; the update
/// revision becomes current when every pod has it.
#[tokio::test(start_paused = true)]
async fn rolling_update_with_a_partition() {
    let mut h = Harness::new();
    h.put_set(&stateful_set(3));
    h.settle().await;
    let old_revision = h.revision_of("web-0");
    let mut set = h.set();
    set.spec.template = template("nginx:2");
    set.metadata.generation = Some(2);
    set.spec.update_strategy = Some(StatefulSetUpdateStrategy {
        type_: Some(STRATEGY_ROLLING_UPDATE.into()),
        rolling_update: Some(RollingUpdateStatefulSetStrategy {
            partition: Some(2),
            max_unavailable: None,
        }),
    });
    h.put_set(&set);
    h.sync().await;
    assert_eq!(h.deleted(), ["web-2"], "the highest ordinal first");
    h.remove("web-2");
    h.settle().await;
    let new_revision = h.revision_of("web-2");
    assert_ne!(new_revision, old_revision, "web-2 has the update revision");
    assert_eq!(h.revision_of("web-1"), old_revision, "below the partition");
    assert_eq!(h.deleted(), ["web-2"], "nothing below the partition");
    let status = h.status();
    assert_eq!(
        (status.current_replicas, status.updated_replicas),
        (Some(2), Some(1))
    );
    assert_eq!(
        status.update_revision.as_deref(),
        Some(new_revision.as_str())
    );

    let mut set = h.set();
    set.spec.update_strategy = Some(StatefulSetUpdateStrategy {
        type_: Some(STRATEGY_ROLLING_UPDATE.into()),
        rolling_update: Some(RollingUpdateStatefulSetStrategy {
            partition: Some(0),
            max_unavailable: None,
        }),
    });
    h.put_set(&set);
    h.sync().await;
    assert_eq!(h.deleted(), ["web-2", "web-1"]);
    h.remove("web-1");
    h.sync().await;
    h.sync().await;
    assert_eq!(
        h.deleted(),
        ["web-2", "web-1"],
        "web-0 waits for the new web-1 to be ready"
    );
    h.run("web-1");
    h.sync().await;
    assert_eq!(h.deleted(), ["web-2", "web-1", "web-0"]);
    h.remove("web-0");
    h.settle().await;
    let status = h.status();
    assert_eq!(
        (status.current_replicas, status.updated_replicas),
        (Some(3), Some(3))
    );
    assert_eq!(
        status.current_revision, status.update_revision,
        "rollout done"
    );
}

/// `OnDelete`: a new template changes nothing until a pod is deleted by
/// hand; its replacement has the new revision.
#[tokio::test(start_paused = true)]
async fn on_delete_replaces_only_deleted_pods() {
    let mut h = Harness::new();
    let mut set = stateful_set(2);
    set.spec.update_strategy = Some(StatefulSetUpdateStrategy {
        type_: Some(STRATEGY_ON_DELETE.into()),
        rolling_update: None,
    });
    h.put_set(&set);
    h.settle().await;
    let old_revision = h.revision_of("web-1");
    let mut set = h.set();
    set.spec.template = template("nginx:2");
    h.put_set(&set);
    h.sync().await;
    assert!(h.deleted().is_empty(), "nothing rolls by itself");
    h.remove("web-1");
    h.settle().await;
    assert_ne!(h.revision_of("web-1"), old_revision);
    assert_eq!(h.revision_of("web-0"), old_revision);
}

/// A pod whose identity drifted (its pod-name label removed) is restored
/// (`updateIdentity`), with a `SuccessfulUpdate` Event.
#[tokio::test(start_paused = true)]
async fn a_drifted_identity_is_restored() {
    let mut h = Harness::new();
    h.put_set(&stateful_set(1));
    h.settle().await;
    let mut pod = h.pod("web-0").unwrap_or_default();
    if let Some(l) = pod.metadata.labels.as_mut() {
        l.remove(POD_NAME_LABEL);
    }
    h.writes().put(&pod);
    write(&h.controller.inner.pods).apply(Change::Upsert(pod));
    h.sync().await;
    assert_eq!(h.writes().names("update", "Pod"), ["web-0"]);
    assert!(
        h.writes()
            .reasons()
            .contains(&"SuccessfulUpdate".to_string())
    );
    let restored = h
        .pod("web-0")
        .and_then(|p| p.metadata.labels)
        .unwrap_or_default();
    assert_eq!(
        restored.get(POD_NAME_LABEL).map(String::as_str),
        Some("web-0")
    );
}

/// The status is written only when it changes (upstream's
/// `inconsistentStatus`).
#[tokio::test(start_paused = true)]
async fn an_unchanged_status_is_not_written() {
    let mut h = Harness::new();
    h.put_set(&stateful_set(1));
    h.settle().await;
    let writes = h.writes().count("update-status", "StatefulSet");
    h.sync().await;
    h.sync().await;
    assert_eq!(h.writes().count("update-status", "StatefulSet"), writes);
}
