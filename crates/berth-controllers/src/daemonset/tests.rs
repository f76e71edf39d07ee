//! The DaemonSet controller's syncs against a recording fake, ported from
//! upstream's `daemon_controller_test.go` and `update_test.go`: each test
//! fills the stores, syncs, and counts the creates, deletes and Events.
//! Upstream's fake pod control puts created pods into the store at once;
//! here the harness replays the fake's writes as the watch would deliver
//! them ([`Harness::observe`]), so a test says when the watch catches up.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use berth_client::{Change, ObjectKey};
use berth_core::clock::Clock;
use berth_core::test_util::{taint, tol};
use berth_core::workloads::CONTROLLER_REVISION_HASH_LABEL;
use berth_core::workloads::daemon::{STRATEGY_ON_DELETE, STRATEGY_ROLLING_UPDATE};
use berth_core::workloads::template_hash::compute_hash;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec, PodStatus,
    PodTemplateSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{DaemonSetConfig, DaemonSetController, Placements};
use crate::cache::Observed;
use crate::metrics::ControllerMetrics;
use crate::shared::{lock, read, write};
use crate::sync_error::SyncError;
use crate::workload::writes::fake::FakeWrites;

const START: &str = "2026-01-01T00:00:00Z";

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Upstream's `simpleDaemonSetLabel`.
fn simple_daemon_label() -> BTreeMap<String, String> {
    labels(&[("name", "simple-daemon"), ("type", "production")])
}

/// Upstream's `simpleDaemonSetLabel2`.
fn simple_daemon_label2() -> BTreeMap<String, String> {
    labels(&[("name", "simple-daemon"), ("type", "test")])
}

/// Upstream's `simpleNodeLabel`.
fn simple_node_label() -> BTreeMap<String, String> {
    labels(&[("color", "blue"), ("speed", "fast")])
}

fn on_delete() -> DaemonSetUpdateStrategy {
    DaemonSetUpdateStrategy {
        type_: Some(STRATEGY_ON_DELETE.into()),
        rolling_update: None,
    }
}

fn rolling(max_unavailable: i32, max_surge: i32) -> DaemonSetUpdateStrategy {
    DaemonSetUpdateStrategy {
        type_: Some(STRATEGY_ROLLING_UPDATE.into()),
        rolling_update: Some(RollingUpdateDaemonSet {
            max_unavailable: Some(IntOrString::Int(max_unavailable)),
            max_surge: Some(IntOrString::Int(max_surge)),
        }),
    }
}

/// Upstream's `updateStrategies()`: most behaviours hold for both.
fn update_strategies() -> [DaemonSetUpdateStrategy; 2] {
    [on_delete(), rolling(1, 0)]
}

/// Upstream's `newDaemonSet(name)`.
fn daemon_set(name: &str, strategy: DaemonSetUpdateStrategy) -> DaemonSet {
    DaemonSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("{name}-uid")),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: DaemonSetSpec {
            revision_history_limit: Some(2),
            update_strategy: Some(strategy),
            selector: LabelSelector {
                match_labels: Some(simple_daemon_label()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(simple_daemon_label()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        image: Some("foo/bar".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DaemonSetSpec::default()
        },
        status: None,
    }
}

/// Upstream's `newNode(name, labels)`: Ready.
fn node(name: &str, node_labels: Option<BTreeMap<String, String>>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: node_labels,
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
    }
}

fn with_taints(mut n: Node, taints: Vec<Taint>) -> Node {
    n.spec.get_or_insert_with(NodeSpec::default).taints = Some(taints);
    n
}

/// The controller with a recording fake, on a paused clock.
struct Harness {
    controller: DaemonSetController<FakeWrites>,
    /// How many of the fake's calls the watch has delivered.
    replayed: usize,
    pods_made: usize,
}

impl Harness {
    fn new() -> Harness {
        Harness::with_config(DaemonSetConfig::default())
    }

    fn with_config(config: DaemonSetConfig) -> Harness {
        let start = START.parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        Harness {
            controller: DaemonSetController::with_writes(
                FakeWrites::default(),
                Clock::virtual_from(start),
                config,
                &ControllerMetrics::default(),
            ),
            replayed: 0,
            pods_made: 0,
        }
    }

    fn writes(&self) -> &FakeWrites {
        &self.controller.inner.writes
    }

    fn add_daemon_set(&self, ds: &DaemonSet) {
        write(&self.controller.inner.daemon_sets).apply(Change::Upsert(ds.clone()));
        self.writes().put(ds);
    }

    fn daemon_set(&self, name: &str) -> Arc<DaemonSet> {
        read(&self.controller.inner.daemon_sets)
            .get(&ObjectKey::new("default", name))
            .unwrap_or_default()
    }

    fn add_node(&self, n: Node) {
        write(&self.controller.inner.nodes).apply(Change::Upsert(n));
    }

    /// Upstream's `addNodes(store, start, count, labels)`.
    fn add_nodes(&self, start: usize, count: usize, node_labels: Option<BTreeMap<String, String>>) {
        for i in start..start + count {
            self.add_node(node(&format!("node-{i}"), node_labels.clone()));
        }
    }

    /// Upstream's `newPod(prefix, node, labels, ds)`: bound to `node`,
    /// with the DaemonSet's hash and controller reference.
    fn pod(
        &mut self,
        node_name: &str,
        pod_labels: BTreeMap<String, String>,
        ds: Option<&DaemonSet>,
    ) -> Pod {
        self.pods_made += 1;
        let mut pod_labels = pod_labels;
        let mut spec = PodSpec::default();
        let mut owner_references = None;
        if let Some(ds) = ds {
            let collisions = ds.status.as_ref().and_then(|s| s.collision_count);
            pod_labels.insert(
                CONTROLLER_REVISION_HASH_LABEL.into(),
                compute_hash(&ds.spec.template, collisions),
            );
            spec = ds.spec.template.spec.clone().unwrap_or_default();
            owner_references = Some(vec![berth_core::workloads::ownership::new_controller_ref(
                &ds.metadata,
                "apps/v1",
                "DaemonSet",
            )]);
        }
        if !node_name.is_empty() {
            spec.node_name = Some(node_name.into());
        }
        Pod {
            metadata: ObjectMeta {
                name: Some(format!("{node_name}-{}", self.pods_made)),
                namespace: Some("default".into()),
                uid: Some(format!("pod-uid-{}", self.pods_made)),
                labels: Some(pod_labels),
                owner_references,
                creation_timestamp: Some(Time(self.controller.inner.clock.now())),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
            status: Some(PodStatus::default()),
        }
    }

    fn add_pod(&self, pod: Pod) {
        self.writes().put(&pod);
        write(&self.controller.inner.pods).apply(Change::Upsert(pod));
    }

    /// Upstream's `addPods(store, node, labels, ds, count)`.
    fn add_pods(
        &mut self,
        node_name: &str,
        pod_labels: BTreeMap<String, String>,
        ds: &DaemonSet,
        count: usize,
    ) {
        for _ in 0..count {
            let pod = self.pod(node_name, pod_labels.clone(), Some(ds));
            self.add_pod(pod);
        }
    }

    /// Upstream's `addFailedPods`.
    fn add_failed_pods(&mut self, node_name: &str, ds: &DaemonSet, count: usize) {
        for _ in 0..count {
            let mut pod = self.pod(node_name, simple_daemon_label(), Some(ds));
            pod.status = Some(PodStatus {
                phase: Some("Failed".into()),
                ..PodStatus::default()
            });
            self.add_pod(pod);
        }
    }

    async fn sync(&self, ds: &DaemonSet) -> Result<(), SyncError> {
        self.controller
            .sync(&ObjectKey::of_meta(&ds.metadata))
            .await
    }

    /// The watch delivers what the fake wrote since the last call: pods
    /// created and deleted (through the pod handler, lowering
    /// expectations), revisions and statuses.
    fn observe(&mut self) {
        let inner = &self.controller.inner;
        let writes = self.writes();
        for change in writes.changes_since::<Pod>(self.replayed) {
            let change = match change {
                Change::Upsert(mut pod) => {
                    pod.metadata.creation_timestamp = Some(Time(inner.clock.now()));
                    Change::Upsert(pod)
                }
                other => other,
            };
            let observed = write(&inner.pods).apply(change);
            if let Some(observed) = observed {
                self.controller.on_pod(&observed);
            }
        }
        for change in writes.changes_since::<ControllerRevision>(self.replayed) {
            write(&inner.revisions).apply(change);
        }
        for change in writes.changes_since::<DaemonSet>(self.replayed) {
            write(&inner.daemon_sets).apply(change);
        }
        self.replayed = writes.calls().len();
    }

    /// Pods the fake created in this test, as created.
    fn created_pods(&self) -> Vec<Pod> {
        self.writes()
            .calls()
            .into_iter()
            .filter(|c| c.verb == "create" && c.kind == "Pod")
            .filter_map(|c| serde_json::from_value(c.body).ok())
            .collect()
    }

    fn creates(&self) -> usize {
        self.writes().count("create", "Pod")
    }

    fn deletes(&self) -> usize {
        self.writes().count("delete", "Pod")
    }

    /// Events of the DaemonSet controller itself (upstream's test recorder
    /// sees those, not the pod control's `SuccessfulCreate`/`Delete`).
    fn controller_events(&self) -> Vec<String> {
        self.writes()
            .reasons()
            .into_iter()
            .filter(|r| !r.starts_with("Successful"))
            .collect()
    }

    fn last_status(&self) -> Option<k8s_openapi::api::apps::v1::DaemonSetStatus> {
        self.writes()
            .calls()
            .into_iter()
            .rev()
            .find(|c| c.verb == "update-status" && c.kind == "DaemonSet")
            .and_then(|c| serde_json::from_value::<DaemonSet>(c.body).ok())
            .and_then(|ds| ds.status)
    }

    fn satisfied(&self, ds: &DaemonSet) -> bool {
        lock(&self.controller.inner.expectations).satisfied(
            &ObjectKey::of_meta(&ds.metadata).to_string(),
            self.controller.inner.clock.now(),
        )
    }
}

/// The node a created (unbound) pod's required affinity names.
fn affinity_node(pod: &Pod) -> Option<String> {
    berth_core::workloads::daemon::target_node_name(pod).map(str::to_string)
}

/// Upstream `TestSimpleDaemonSetLaunchesPods` and
/// `TestSimpleDaemonSetScheduleDaemonSetPodsLaunchesPods`: a pod per
/// node, never bound by `nodeName` but pinned by a required node affinity
/// on `metadata.name`, owned by the DaemonSet, labelled with the hash of
/// the ControllerRevision the sync made.
#[tokio::test(start_paused = true)]
async fn daemon_set_launches_a_pod_per_node_scheduled_by_affinity() {
    for strategy in update_strategies() {
        let h = Harness::new();
        let ds = daemon_set("foo", strategy);
        h.add_nodes(0, 5, None);
        h.add_daemon_set(&ds);
        h.sync(&ds).await.expect("sync");
        assert_eq!((h.creates(), h.deletes()), (5, 0));
        let revisions = h.writes().names("create", "ControllerRevision");
        assert_eq!(revisions.len(), 1, "the current revision is recorded");
        let hash = compute_hash(&ds.spec.template, None);
        assert_eq!(revisions[0], format!("foo-{hash}"));
        let mut nodes: Vec<String> = Vec::new();
        for pod in h.created_pods() {
            let spec = pod.spec.clone().unwrap_or_default();
            assert_eq!(
                spec.node_name, None,
                "scheduled by the scheduler, not bound"
            );
            nodes.extend(affinity_node(&pod));
            let owner = pod
                .metadata
                .owner_references
                .as_ref()
                .and_then(|r| r.first())
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                (
                    owner.api_version.as_str(),
                    owner.kind.as_str(),
                    owner.controller
                ),
                ("apps/v1", "DaemonSet", Some(true))
            );
            assert_eq!(
                pod.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL)),
                Some(&hash)
            );
            assert_eq!(pod.metadata.generate_name.as_deref(), Some("foo-"));
            let tolerations = spec.tolerations.unwrap_or_default();
            assert!(
                tolerations.iter().any(|t| t.key.as_deref()
                    == Some("node.kubernetes.io/unreachable")
                    && t.toleration_seconds.is_none()),
                "the automatic tolerations: {tolerations:?}"
            );
        }
        nodes.sort();
        assert_eq!(nodes, ["node-0", "node-1", "node-2", "node-3", "node-4"]);
        let status = h.last_status().unwrap_or_default();
        assert_eq!(
            (status.desired_number_scheduled, status.observed_generation),
            (5, Some(1))
        );
    }
}

/// Upstream `TestSimpleDaemonSetPodCreateErrors` and
/// `TestDaemonSetPodCreateExpectationsError`: 100 nodes and creates that
/// fail after 10: slow start stops after the first failing batch (1 + 2
/// + 4 + 8 calls), the creates never attempted are no longer expected,
/// and once the 10 are seen the expectations are met.
#[tokio::test(start_paused = true)]
async fn failing_creates_stop_the_slow_start() {
    for strategy in update_strategies() {
        let mut h = Harness::new();
        let ds = daemon_set("foo", strategy);
        h.writes().fail("create", "Pod", 10, 500);
        h.add_nodes(0, 100, None);
        h.add_daemon_set(&ds);
        let result = h.sync(&ds).await;
        assert!(result.is_err(), "the failures are reported");
        assert_eq!(
            h.creates(),
            15,
            "1 + 2 + 4 + 8 calls, the last batch failing"
        );
        assert_eq!(
            h.controller_events()
                .iter()
                .filter(|r| *r == "FailedCreate")
                .count(),
            5
        );
        assert!(!h.satisfied(&ds), "10 creates are still to be seen");
        h.observe();
        assert!(h.satisfied(&ds), "every create that succeeded was seen");
        h.sync(&ds).await.ok();
        let status = h.last_status().unwrap_or_default();
        assert_eq!(
            (
                status.desired_number_scheduled,
                status.current_number_scheduled
            ),
            (100, 10)
        );
    }
}

/// Upstream `TestSimpleDaemonSetUpdatesStatusError`: a failed create and
/// a failed status write both fail the sync; the create's error wins.
#[tokio::test(start_paused = true)]
async fn sync_and_status_errors_are_reported() {
    struct Case {
        name: &'static str,
        create_fails: bool,
        status_fails: bool,
        want_code: u16,
    }
    for case in [
        Case {
            name: "sync error",
            create_fails: true,
            status_fails: false,
            want_code: 500,
        },
        Case {
            name: "status error",
            create_fails: false,
            status_fails: true,
            want_code: 503,
        },
        Case {
            name: "sync and status error",
            create_fails: true,
            status_fails: true,
            want_code: 500,
        },
    ] {
        for strategy in update_strategies() {
            let h = Harness::new();
            let ds = daemon_set("foo", strategy);
            if case.create_fails {
                h.writes().fail("create", "Pod", 0, 500);
            }
            if case.status_fails {
                h.writes().fail("update-status", "DaemonSet", 0, 503);
            }
            h.add_nodes(0, 1, None);
            h.add_daemon_set(&ds);
            let code = match h.sync(&ds).await {
                Err(SyncError::Api(kube::Error::Api(status))) => status.code,
                other => panic!("{}: {other:?}", case.name),
            };
            assert_eq!(code, case.want_code, "{}", case.name);
        }
    }
}

/// Upstream `TestNoNodesDoesNothing`, `TestOneNodeDaemonLaunchesPod`,
/// `TestNotReadyNodeDaemonDoesLaunchPod`, and a cordoned node (the
/// automatic `unschedulable` toleration).
#[tokio::test(start_paused = true)]
async fn nodes_that_get_a_pod() {
    struct Case {
        name: &'static str,
        nodes: Vec<Node>,
        want_creates: usize,
    }
    let not_ready = {
        let mut n = node("not-ready", None);
        n.status = Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "False".into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        });
        n
    };
    let cordoned = {
        let mut n = node("cordoned", None);
        n.spec = Some(NodeSpec {
            unschedulable: Some(true),
            taints: Some(vec![taint(
                "node.kubernetes.io/unschedulable",
                "",
                "NoSchedule",
            )]),
            ..NodeSpec::default()
        });
        n
    };
    for case in [
        Case {
            name: "no nodes: nothing",
            nodes: vec![],
            want_creates: 0,
        },
        Case {
            name: "one node",
            nodes: vec![node("only-node", None)],
            want_creates: 1,
        },
        Case {
            name: "a NotReady node",
            nodes: vec![not_ready],
            want_creates: 1,
        },
        Case {
            name: "a cordoned node",
            nodes: vec![cordoned],
            want_creates: 1,
        },
    ] {
        for strategy in update_strategies() {
            let h = Harness::new();
            let ds = daemon_set("foo", strategy);
            for n in &case.nodes {
                h.add_node(n.clone());
            }
            h.add_daemon_set(&ds);
            h.sync(&ds).await.expect("sync");
            assert_eq!(h.creates(), case.want_creates, "{}", case.name);
        }
    }
}

/// Upstream `TestDealsWithExistingPods` and
/// `TestSelectorDaemonDeletesUnselectedPods`: excess pods go (the oldest
/// stays), nodes without one get one, pods the selector no longer matches
/// are released, not counted.
#[tokio::test(start_paused = true)]
async fn existing_pods_are_kept_pruned_or_released() {
    for strategy in update_strategies() {
        let mut h = Harness::new();
        let ds = daemon_set("foo", strategy.clone());
        h.add_daemon_set(&ds);
        h.add_nodes(0, 5, None);
        h.add_pods("node-1", simple_daemon_label(), &ds, 1);
        h.add_pods("node-2", simple_daemon_label(), &ds, 2);
        h.add_pods("node-3", simple_daemon_label(), &ds, 5);
        h.add_pods("node-4", simple_daemon_label2(), &ds, 2);
        h.sync(&ds).await.expect("sync");
        assert_eq!((h.creates(), h.deletes()), (2, 5), "existing pods");
        assert_eq!(h.writes().count("patch", "Pod"), 2, "two pods released");

        let mut h = Harness::new();
        let mut ds = daemon_set("foo", strategy);
        ds.spec
            .template
            .spec
            .get_or_insert_with(PodSpec::default)
            .node_selector = Some(simple_node_label());
        h.add_daemon_set(&ds);
        h.add_nodes(0, 5, None);
        h.add_nodes(5, 5, Some(simple_node_label()));
        h.add_pods("node-0", simple_daemon_label2(), &ds, 2);
        h.add_pods("node-1", simple_daemon_label(), &ds, 3);
        h.add_pods("node-1", simple_daemon_label2(), &ds, 1);
        h.add_pods("node-4", simple_daemon_label(), &ds, 1);
        h.sync(&ds).await.expect("sync");
        assert_eq!(
            (h.creates(), h.deletes()),
            (5, 4),
            "the node selector's nodes get one, the others lose theirs"
        );
    }
}

/// Upstream `TestDaemonKillFailedPods`: failed pods are deleted (with a
/// `FailedDaemonPod` Event) and replaced on a later sync; at most one pod
/// is kept.
#[tokio::test(start_paused = true)]
async fn failed_pods_are_killed() {
    struct Case {
        name: &'static str,
        failed: usize,
        normal: usize,
        want_creates: usize,
        want_deletes: usize,
        want_events: usize,
    }
    for case in [
        Case {
            name: "normal (do nothing)",
            failed: 0,
            normal: 1,
            want_creates: 0,
            want_deletes: 0,
            want_events: 0,
        },
        Case {
            name: "no pods (create 1)",
            failed: 0,
            normal: 0,
            want_creates: 1,
            want_deletes: 0,
            want_events: 0,
        },
        Case {
            name: "1 failed pod (kill 1), 0 normal pod (create 0; will create in the next sync)",
            failed: 1,
            normal: 0,
            want_creates: 0,
            want_deletes: 1,
            want_events: 1,
        },
        Case {
            name: "1 failed pod (kill 1), 3 normal pods (kill 2)",
            failed: 1,
            normal: 3,
            want_creates: 0,
            want_deletes: 3,
            want_events: 1,
        },
    ] {
        for strategy in update_strategies() {
            let mut h = Harness::new();
            let ds = daemon_set("foo", strategy);
            h.add_daemon_set(&ds);
            h.add_nodes(0, 1, None);
            h.add_failed_pods("node-0", &ds, case.failed);
            h.add_pods("node-0", simple_daemon_label(), &ds, case.normal);
            h.sync(&ds).await.expect("sync");
            assert_eq!(
                (h.creates(), h.deletes(), h.controller_events().len()),
                (case.want_creates, case.want_deletes, case.want_events),
                "{}",
                case.name
            );
        }
    }
}

/// Upstream `TestDaemonKillFailedPodsBackoff`: a node whose daemon pods
/// keep failing has them deleted no faster than its backoff allows (1 s,
/// then 2 s, ...); the DaemonSet is looked at again when the backoff ends.
#[tokio::test(start_paused = true)]
async fn failed_pod_deletions_back_off_per_node() {
    for strategy in update_strategies() {
        let mut h = Harness::new();
        let ds = daemon_set("foo", strategy);
        h.add_daemon_set(&ds);
        h.add_nodes(0, 1, None);
        // The backoff is kept per observed generation: first observe it.
        h.sync(&ds).await.expect("sync");
        h.observe();
        let ds = h.daemon_set("foo");
        h.add_failed_pods("node-0", &ds, 1);
        h.sync(&ds).await.expect("sync");
        assert_eq!(h.deletes(), 1, "the first failed pod goes at once");
        h.observe();
        h.add_failed_pods("node-0", &ds, 1);
        h.sync(&ds).await.expect("sync");
        assert_eq!(h.deletes(), 1, "the next one waits for the backoff");
        let queue = &h.controller.inner.queue;
        let before = queue.len();
        tokio::time::sleep(Duration::from_millis(1001)).await;
        let key = tokio::time::timeout(Duration::from_millis(1), queue.get()).await;
        assert!(
            key.is_ok(),
            "requeued when the backoff ends (queue had {before})"
        );
        h.sync(&ds).await.expect("sync");
        assert_eq!(h.deletes(), 2, "deleted once the backoff passed");
    }
}

/// Taints and the automatic tolerations, one node each (upstream
/// `TestTaintedNodeDaemonDoesNotLaunchIntolerantPod`,
/// `TestNoScheduleTaintedDoesntEvicitRunningIntolerantPod`,
/// `TestNoExecuteTaintedDoesEvicitRunningIntolerantPod`,
/// `TestTaintedNodeDaemonLaunchesToleratePod`,
/// `TestNotReadyNodeDaemonLaunchesPod`, `TestUnreachableNodeDaemonLaunchesPod`,
/// `TestTaintPressureNodeDaemonLaunchesPod`, and the host-network case).
#[tokio::test(start_paused = true)]
async fn taints_decide_creates_and_evictions() {
    struct Case {
        name: &'static str,
        taints: Vec<Taint>,
        tolerations: Vec<Toleration>,
        host_network: bool,
        pod_running: bool,
        want: (usize, usize),
    }
    let dedicated = |effect| vec![taint("dedicated", "user1", effect)];
    let cases = [
        Case {
            name: "untolerated NoSchedule: no new pod",
            taints: dedicated("NoSchedule"),
            tolerations: vec![],
            host_network: false,
            pod_running: false,
            want: (0, 0),
        },
        Case {
            name: "untolerated NoSchedule: a running pod stays",
            taints: dedicated("NoSchedule"),
            tolerations: vec![],
            host_network: false,
            pod_running: true,
            want: (0, 0),
        },
        Case {
            name: "untolerated NoExecute: a running pod goes",
            taints: dedicated("NoExecute"),
            tolerations: vec![],
            host_network: false,
            pod_running: true,
            want: (0, 1),
        },
        Case {
            name: "a tolerated NoSchedule taint",
            taints: dedicated("NoSchedule"),
            tolerations: vec![tol("dedicated", "Equal", "user1", "NoSchedule")],
            host_network: false,
            pod_running: false,
            want: (1, 0),
        },
        Case {
            name: "not-ready NoExecute: tolerated automatically",
            taints: vec![taint("node.kubernetes.io/not-ready", "", "NoExecute")],
            tolerations: vec![],
            host_network: false,
            pod_running: false,
            want: (1, 0),
        },
        Case {
            name: "unreachable NoExecute: tolerated automatically",
            taints: vec![taint("node.kubernetes.io/unreachable", "", "NoExecute")],
            tolerations: vec![],
            host_network: false,
            pod_running: false,
            want: (1, 0),
        },
        Case {
            name: "disk, memory and PID pressure: tolerated automatically",
            taints: vec![
                taint("node.kubernetes.io/disk-pressure", "", "NoSchedule"),
                taint("node.kubernetes.io/memory-pressure", "", "NoSchedule"),
                taint("node.kubernetes.io/pid-pressure", "", "NoSchedule"),
            ],
            tolerations: vec![],
            host_network: false,
            pod_running: false,
            want: (1, 0),
        },
        Case {
            name: "network-unavailable: not for a pod-network pod",
            taints: vec![taint(
                "node.kubernetes.io/network-unavailable",
                "",
                "NoSchedule",
            )],
            tolerations: vec![],
            host_network: false,
            pod_running: false,
            want: (0, 0),
        },
        Case {
            name: "network-unavailable: tolerated by a host-network pod",
            taints: vec![taint(
                "node.kubernetes.io/network-unavailable",
                "",
                "NoSchedule",
            )],
            tolerations: vec![],
            host_network: true,
            pod_running: false,
            want: (1, 0),
        },
    ];
    for case in cases {
        for strategy in update_strategies() {
            let mut h = Harness::new();
            let mut ds = daemon_set("foo", strategy);
            let spec = ds.spec.template.spec.get_or_insert_with(PodSpec::default);
            spec.tolerations = Some(case.tolerations.clone());
            spec.host_network = Some(case.host_network);
            h.add_daemon_set(&ds);
            h.add_node(with_taints(node("tainted", None), case.taints.clone()));
            if case.pod_running {
                h.add_pods("tainted", simple_daemon_label(), &ds, 1);
            }
            h.sync(&ds).await.expect("sync");
            assert_eq!((h.creates(), h.deletes()), case.want, "{}", case.name);
        }
    }
}

/// Upstream `TestDeleteUnscheduledPodForNotExistingNode`: a pending pod
/// meant for a node that is gone is deleted (the scheduler cannot place
/// it); a bound pod of a gone node is left to pod GC.
#[tokio::test(start_paused = true)]
async fn pending_pod_of_a_gone_node_is_deleted() {
    for strategy in update_strategies() {
        let mut h = Harness::new();
        let ds = daemon_set("foo", strategy);
        h.add_daemon_set(&ds);
        h.add_nodes(0, 1, None);
        h.add_pods("node-0", simple_daemon_label(), &ds, 1);
        h.add_pods("node-1", simple_daemon_label(), &ds, 1);
        let mut pending = h.pod("", simple_daemon_label(), Some(&ds));
        pending.spec.get_or_insert_with(PodSpec::default).affinity = Some(
            berth_core::workloads::daemon::replace_daemon_set_pod_node_name_node_affinity(
                None, "node-2",
            ),
        );
        let pending_name = pending.metadata.name.clone().unwrap_or_default();
        h.add_pod(pending);
        h.sync(&ds).await.expect("sync");
        assert_eq!((h.creates(), h.deletes()), (0, 1));
        assert_eq!(h.writes().names("delete", "Pod"), [pending_name]);
    }
}

/// Upstream `SelectingAllReason`: an empty selector would claim every pod
/// of the namespace; the DaemonSet is refused with a Warning.
#[tokio::test(start_paused = true)]
async fn a_daemon_set_selecting_everything_is_refused() {
    let h = Harness::new();
    let mut ds = daemon_set("foo", on_delete());
    ds.spec.selector = LabelSelector::default();
    h.add_daemon_set(&ds);
    h.add_nodes(0, 2, None);
    h.sync(&ds).await.expect("sync");
    assert_eq!(h.creates(), 0);
    assert_eq!(h.controller_events(), ["SelectingAll"]);
}

/// Expectations: until the watch shows the creates of a sync, a second
/// sync creates nothing (never two daemon pods on a node) and writes the
/// status without raising `observedGeneration`.
#[tokio::test(start_paused = true)]
async fn expectations_keep_a_stale_cache_from_creating_twice() {
    let mut h = Harness::new();
    let mut ds = daemon_set("foo", rolling(1, 0));
    h.add_daemon_set(&ds);
    h.add_nodes(0, 3, None);
    h.sync(&ds).await.expect("sync");
    assert_eq!(h.creates(), 3);
    ds.metadata.generation = Some(2);
    h.add_daemon_set(&ds);
    h.sync(&ds).await.expect("sync");
    assert_eq!(h.creates(), 3, "nothing more while the creates are unseen");
    let status = h.last_status().unwrap_or_default();
    assert_ne!(
        status.observed_generation,
        Some(2),
        "generation 2 not acted on"
    );
    h.observe();
    h.sync(&ds).await.expect("sync");
    assert_eq!(h.creates(), 3, "the watch shows a pod on every node");
    assert_eq!(
        h.last_status().unwrap_or_default().observed_generation,
        Some(2)
    );
}

fn ready(mut pod: Pod, since: jiff::Timestamp) -> Pod {
    let status = pod.status.get_or_insert_with(PodStatus::default);
    status.phase = Some("Running".into());
    status.conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        last_transition_time: Some(Time(since)),
        ..PodCondition::default()
    }]);
    pod
}

/// Upstream `TestNumberReadyStatus` and `TestObservedGeneration`: the
/// counts follow the pods' readiness; `minReadySeconds` delays
/// availability and brings the DaemonSet back when it may have come.
#[tokio::test(start_paused = true)]
async fn status_counts_ready_and_available_pods() {
    let mut h = Harness::new();
    let mut ds = daemon_set("foo", on_delete());
    ds.spec.min_ready_seconds = Some(10);
    ds.metadata.generation = Some(3);
    h.add_daemon_set(&ds);
    h.add_nodes(0, 2, None);
    let now = h.controller.inner.clock.now();
    let first = h.pod("node-0", simple_daemon_label(), Some(&ds));
    h.add_pod(ready(first, now));
    h.add_pods("node-1", simple_daemon_label(), &ds, 1);
    h.sync(&ds).await.expect("sync");
    let status = h.last_status().unwrap_or_default();
    assert_eq!(
        (
            status.desired_number_scheduled,
            status.current_number_scheduled,
            status.number_ready,
            status.number_available,
            status.updated_number_scheduled,
            status.number_unavailable,
            status.observed_generation,
        ),
        (2, 2, 1, Some(0), Some(2), Some(2), Some(3))
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    let key = tokio::time::timeout(Duration::from_millis(1), h.controller.inner.queue.get()).await;
    assert!(key.is_ok(), "looked at again after minReadySeconds");
    h.observe();
    tokio::time::sleep(Duration::from_secs(1)).await;
    h.sync(&ds).await.expect("sync");
    let status = h.last_status().unwrap_or_default();
    assert_eq!(
        status.number_available,
        Some(1),
        "available after 10 s ready"
    );
}

/// A rolling update (maxUnavailable 1): the new template gets a revision;
/// old pods are replaced one at a time, each replacement waiting for the
/// previous one to be available.
#[tokio::test(start_paused = true)]
async fn rolling_update_replaces_one_pod_at_a_time() {
    let mut h = Harness::new();
    let old = daemon_set("foo", rolling(1, 0));
    h.add_daemon_set(&old);
    h.add_nodes(0, 3, None);
    let now = h.controller.inner.clock.now();
    for n in 0..3 {
        let pod = h.pod(&format!("node-{n}"), simple_daemon_label(), Some(&old));
        h.add_pod(ready(pod, now));
    }
    h.sync(&old).await.expect("sync");
    h.observe();
    assert_eq!((h.creates(), h.deletes()), (0, 0), "all current");

    let mut new = old.clone();
    if let Some(c) = new
        .spec
        .template
        .spec
        .as_mut()
        .and_then(|s| s.containers.first_mut())
    {
        c.image = Some("foo/bar:2".into());
    }
    new.metadata.generation = Some(2);
    h.add_daemon_set(&new);
    h.sync(&new).await.expect("sync");
    assert_eq!((h.creates(), h.deletes()), (0, 1), "one old pod goes");
    h.observe();
    h.sync(&new).await.expect("sync");
    assert_eq!((h.creates(), h.deletes()), (1, 1), "its replacement comes");
    h.observe();
    h.sync(&new).await.expect("sync");
    assert_eq!(
        (h.creates(), h.deletes()),
        (1, 1),
        "the next old pod waits for the new one to be available"
    );
    let new_hash = compute_hash(&new.spec.template, None);
    let replacement = read(&h.controller.inner.pods)
        .iter()
        .find(|p| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
                == Some(&new_hash)
        })
        .cloned()
        .expect("the new pod");
    let mut bound = ready((*replacement).clone(), now);
    let target = affinity_node(&bound).unwrap_or_default();
    bound.spec.get_or_insert_with(PodSpec::default).node_name = Some(target);
    write(&h.controller.inner.pods).apply(Change::Upsert(bound));
    h.sync(&new).await.expect("sync");
    assert_eq!(
        (h.creates(), h.deletes()),
        (1, 2),
        "then the next old pod goes"
    );
}

/// `snapshot`'s collision path: the revision name is taken by another
/// template, so `collisionCount` goes up and the sync is retried.
#[tokio::test(start_paused = true)]
async fn a_revision_name_collision_bumps_the_collision_count() {
    let h = Harness::new();
    let ds = daemon_set("foo", on_delete());
    h.add_daemon_set(&ds);
    let mut other = berth_core::workloads::daemon::history_revision(&ds, 1);
    other.data.0 = serde_json::json!({"spec": {"template": {"$patch": "replace"}}});
    h.writes().put(&other);
    h.writes().fail("create", "ControllerRevision", 0, 409);
    assert!(h.sync(&ds).await.is_err(), "retried after the bump");
    let bumped = h
        .writes()
        .calls()
        .into_iter()
        .find(|c| c.verb == "update-status" && c.kind == "DaemonSet")
        .and_then(|c| serde_json::from_value::<DaemonSet>(c.body).ok())
        .and_then(|ds| ds.status)
        .and_then(|s| s.collision_count);
    assert_eq!(bumped, Some(1));
}

/// Orphans the selector matches are adopted (a patch adding the
/// controller reference), and count: no second pod on their node.
#[tokio::test(start_paused = true)]
async fn orphan_pods_are_adopted() {
    let mut h = Harness::new();
    let ds = daemon_set("foo", on_delete());
    h.add_daemon_set(&ds);
    h.add_nodes(0, 1, None);
    let orphan = h.pod("node-0", simple_daemon_label(), None);
    h.add_pod(orphan);
    h.sync(&ds).await.expect("sync");
    assert_eq!(h.writes().count("patch", "Pod"), 1, "adopted");
    assert_eq!(h.creates(), 0, "the adopted pod counts");
    assert_eq!(
        h.writes().count("get", "DaemonSet"),
        1,
        "the owner was re-read first"
    );
}

/// Upstream `TestUpdateNode`, plus a node added and a node deleted: a
/// node change queues the DaemonSets whose placement on it changed.
#[tokio::test(start_paused = true)]
async fn node_changes_queue_the_daemon_sets_they_affect() {
    struct Case {
        name: &'static str,
        old: Option<Node>,
        new: Option<Node>,
        node_selector: Option<BTreeMap<String, String>>,
        want_queued: bool,
    }
    let heartbeat = {
        let mut n = node("node1", None);
        n.metadata.resource_version = Some("2".into());
        if let Some(c) = n
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.first_mut())
        {
            c.last_heartbeat_time = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        }
        n
    };
    let cases = [
        Case {
            name: "nothing changed",
            old: Some(node("node1", None)),
            new: Some(node("node1", None)),
            node_selector: Some(simple_node_label()),
            want_queued: false,
        },
        Case {
            name: "a heartbeat",
            old: Some(node("node1", None)),
            new: Some(heartbeat),
            node_selector: None,
            want_queued: false,
        },
        Case {
            name: "node labels changed",
            old: Some(node("node1", None)),
            new: Some(node("node1", Some(simple_node_label()))),
            node_selector: Some(simple_node_label()),
            want_queued: true,
        },
        Case {
            name: "node taints changed",
            old: Some(with_taints(
                node("node1", None),
                vec![taint("dedicated", "user1", "NoSchedule")],
            )),
            new: Some(node("node1", None)),
            node_selector: None,
            want_queued: true,
        },
        Case {
            name: "a label the selector does not look at",
            old: Some(node("node1", None)),
            new: Some(node("node1", Some(labels(&[("other", "x")])))),
            node_selector: Some(simple_node_label()),
            want_queued: false,
        },
        Case {
            name: "a node added that should run the pod",
            old: None,
            new: Some(node("node1", None)),
            node_selector: None,
            want_queued: true,
        },
        Case {
            name: "a node added that should not",
            old: None,
            new: Some(node("node1", None)),
            node_selector: Some(simple_node_label()),
            want_queued: false,
        },
        Case {
            name: "a node that ran the pod deleted",
            old: Some(node("node1", None)),
            new: None,
            node_selector: None,
            want_queued: true,
        },
    ];
    for case in cases {
        let h = Harness::new();
        let mut ds = daemon_set("ds", on_delete());
        ds.spec
            .template
            .spec
            .get_or_insert_with(PodSpec::default)
            .node_selector = case.node_selector.clone();
        h.add_daemon_set(&ds);
        let mut placements = Placements::default();
        let observed = match (&case.old, &case.new) {
            (None, Some(new)) => Observed::Added(Arc::new(new.clone())),
            (Some(old), Some(new)) => Observed::Updated {
                old: Arc::new(old.clone()),
                new: Arc::new(new.clone()),
            },
            (Some(old), None) => Observed::Deleted(Arc::new(old.clone())),
            (None, None) => continue,
        };
        h.controller.on_node(&observed, &mut placements);
        assert_eq!(
            !h.controller.inner.queue.is_empty(),
            case.want_queued,
            "{}",
            case.name
        );
    }
}
