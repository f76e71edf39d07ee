//! Upstream's `gc_controller_test.go` tables: which pods each step deletes
//! and which it marks `Failed` first.

use std::sync::Mutex;

use berth_core::test_util::make_node;
use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::watched_pod::{WatchedPodSpec, WatchedPodStatus};

/// Keeps a pod after its deletion was accepted.
const TEST_FINALIZER: &str = "example.com/some-finalizer";

/// The API as a test sees it: the nodes a GET finds, and what was
/// deleted and marked Failed.
#[derive(Default)]
struct FakeApi {
    nodes: Mutex<BTreeSet<String>>,
    deleted: Mutex<BTreeSet<String>>,
    patched: Mutex<BTreeSet<String>>,
    conditions: Mutex<Vec<PodCondition>>,
}

fn name_of(pod: &WatchedPod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

impl PodGcApi for FakeApi {
    async fn node_exists(&self, name: &str) -> Result<bool, kube::Error> {
        Ok(self.nodes.lock().is_ok_and(|n| n.contains(name)))
    }

    async fn mark_failed(
        &self,
        pod: &WatchedPod,
        condition: Option<&PodCondition>,
    ) -> Result<bool, kube::Error> {
        if let Ok(mut patched) = self.patched.lock() {
            patched.insert(name_of(pod));
        }
        if let (Ok(mut conditions), Some(c)) = (self.conditions.lock(), condition) {
            conditions.push(c.clone());
        }
        Ok(true)
    }

    async fn force_delete(&self, pod: &WatchedPod) -> Result<bool, kube::Error> {
        if let Ok(mut deleted) = self.deleted.lock() {
            deleted.insert(name_of(pod));
        }
        Ok(true)
    }
}

impl FakeApi {
    fn with_nodes(nodes: &[&str]) -> FakeApi {
        let api = FakeApi::default();
        if let Ok(mut n) = api.nodes.lock() {
            n.extend(nodes.iter().map(|s| s.to_string()));
        }
        api
    }

    fn deleted(&self) -> Vec<String> {
        self.deleted
            .lock()
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn patched(&self) -> Vec<String> {
        self.patched
            .lock()
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn clear(&self) {
        if let (Ok(mut d), Ok(mut p)) = (self.deleted.lock(), self.patched.lock()) {
            d.clear();
            p.clear();
        }
    }
}

fn t0() -> Timestamp {
    "2026-01-01T00:00:00Z"
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A pod of the tables: name, node, phase, and how far its deletion went.
#[derive(Clone, Copy)]
struct P {
    name: &'static str,
    node: &'static str,
    phase: &'static str,
    reason: &'static str,
    /// A deletion timestamp.
    deleting: bool,
    /// `deletionGracePeriodSeconds`.
    grace: Option<i64>,
    /// Held by [`TEST_FINALIZER`].
    finalizer: bool,
}

const fn p(name: &'static str, node: &'static str, phase: &'static str) -> P {
    P {
        name,
        node,
        phase,
        reason: "",
        deleting: false,
        grace: None,
        finalizer: false,
    }
}

impl P {
    const fn deleting(mut self) -> P {
        self.deleting = true;
        self
    }

    /// Deleted with grace period 0, kept only by its finalizer.
    const fn force_deleted(mut self) -> P {
        self.deleting = true;
        self.grace = Some(0);
        self.finalizer = true;
        self
    }

    const fn grace(mut self, grace: Option<i64>) -> P {
        self.grace = grace;
        self
    }

    const fn finalizer(mut self, finalizer: bool) -> P {
        self.finalizer = finalizer;
        self
    }

    const fn evicted(mut self) -> P {
        self.reason = "Evicted";
        self
    }

    /// The pod, created `hours` after [`t0`].
    fn pod(self, hours: i64) -> WatchedPod {
        let mut pod = WatchedPod::default();
        let meta = &mut pod.metadata;
        meta.name = Some(self.name.into());
        meta.namespace = Some("default".into());
        meta.uid = Some(format!("uid-{}", self.name));
        meta.creation_timestamp = Some(Time(t0() + SignedDuration::from_hours(hours)));
        meta.deletion_timestamp = self.deleting.then(|| Time(t0()));
        meta.deletion_grace_period_seconds = self.grace;
        meta.finalizers = self.finalizer.then(|| vec![TEST_FINALIZER.to_string()]);
        pod.spec = Some(WatchedPodSpec {
            node_name: Some(self.node.into()),
            tolerations: None::<Vec<Toleration>>,
        });
        pod.status = Some(WatchedPodStatus {
            phase: (!self.phase.is_empty()).then(|| self.phase.into()),
            reason: (!self.reason.is_empty()).then(|| self.reason.into()),
            conditions: None,
        });
        pod
    }
}

fn state(pods: &[P], nodes: Vec<Node>, threshold: i64) -> PodGc {
    let mut gc = PodGc::new(threshold, Duration::from_secs(40));
    for (i, p) in pods.iter().enumerate() {
        let pod = p.pod(i as i64 + 1);
        gc.pods.insert(ObjectKey::of_meta(&pod.metadata), pod);
    }
    for node in nodes {
        gc.nodes
            .insert(node.metadata.name.clone().unwrap_or_default(), node);
    }
    gc
}

fn ready_node(name: &str) -> Node {
    make_node().name(name).condition("Ready", "True").obj()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn counted(metrics: &ControllerMetrics, reason: Reason) -> u64 {
    metrics
        .pod_gc_force_deletes
        .get_or_create(&ControllerMetrics::pod_gc("default", reason.label()))
        .get()
}

const SUCCEEDED: &str = "Succeeded";
const FAILED: &str = "Failed";
const RUNNING: &str = "Running";
const PENDING: &str = "Pending";
const UNKNOWN: &str = "Unknown";

/// Upstream `TestGCTerminated`.
#[tokio::test]
async fn terminated_pods_over_the_threshold_go_evicted_then_oldest_first() {
    struct Case {
        name: &'static str,
        pods: Vec<P>,
        threshold: i64,
        deleted: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "delete pod a which is PodFailed and pod b which is PodSucceeded",
            pods: vec![
                p("a", "node", FAILED),
                p("b", "node", SUCCEEDED),
                p("c", "node", FAILED),
            ],
            threshold: 1,
            deleted: &["a", "b"],
        },
        Case {
            name: "threshold = 0, disables terminated pod deletion",
            pods: vec![p("a", "node", FAILED), p("b", "node", SUCCEEDED)],
            threshold: 0,
            deleted: &[],
        },
        Case {
            name: "threshold = 1, delete pod b which is PodSucceeded",
            pods: vec![
                p("a", "node", RUNNING),
                p("b", "node", SUCCEEDED),
                p("c", "node", FAILED),
            ],
            threshold: 1,
            deleted: &["b"],
        },
        Case {
            name: "threshold = 1, delete pod a which is PodFailed",
            pods: vec![p("a", "node", FAILED), p("b", "node", SUCCEEDED)],
            threshold: 1,
            deleted: &["a"],
        },
        Case {
            name: "threshold = 5, don't delete pod",
            pods: vec![p("a", "node", FAILED), p("b", "node", SUCCEEDED)],
            threshold: 5,
            deleted: &[],
        },
        Case {
            name: "an evicted pod goes first",
            pods: vec![
                p("a", "node", FAILED),
                p("b", "node", SUCCEEDED),
                p("c", "node", FAILED).evicted(),
            ],
            threshold: 1,
            deleted: &["a", "c"],
        },
        Case {
            name: "an evicted pod goes first, running pods do not count",
            pods: vec![
                p("a", "node", RUNNING),
                p("b", "node", SUCCEEDED),
                p("c", "node", FAILED).evicted(),
            ],
            threshold: 1,
            deleted: &["c"],
        },
        Case {
            name: "pods that are only waiting for their finalizers are not deleted again",
            pods: vec![
                p("a", "node", SUCCEEDED).force_deleted(),
                p("b", "node", FAILED).force_deleted(),
            ],
            threshold: 1,
            deleted: &[],
        },
        Case {
            name: "pods that are only waiting for their finalizers still count towards the threshold",
            pods: vec![
                p("a", "node", SUCCEEDED).force_deleted(),
                p("b", "node", FAILED).force_deleted(),
                p("c", "node", SUCCEEDED),
            ],
            threshold: 2,
            deleted: &["c"],
        },
        Case {
            name: "the number of deletion candidates limits the number of deleted pods",
            pods: vec![
                p("a", "node", SUCCEEDED).force_deleted(),
                p("b", "node", FAILED).force_deleted(),
                p("c", "node", SUCCEEDED).force_deleted(),
                p("d", "node", SUCCEEDED),
            ],
            threshold: 1,
            deleted: &["d"],
        },
        Case {
            name: "terminated pods that are not only waiting for their finalizers are still deleted",
            pods: vec![
                // The grace period still has to be shortened.
                p("a", "node", SUCCEEDED).force_deleted().grace(Some(30)),
                // Nothing holds it back: deleting it again can make it go.
                p("b", "node", SUCCEEDED).deleting().grace(Some(0)),
                // The deletion has not been accepted yet.
                p("c", "node", SUCCEEDED).force_deleted().grace(None),
                p("d", "node", SUCCEEDED).finalizer(true),
            ],
            threshold: 1,
            deleted: &["a", "b", "c"],
        },
    ];
    for case in cases {
        let api = FakeApi::with_nodes(&["node"]);
        let metrics = ControllerMetrics::default();
        let mut gc = state(&case.pods, vec![ready_node("node")], case.threshold);
        gc.gc(&api, t0(), &metrics).await;
        assert_eq!(api.deleted(), strings(case.deleted), "{}", case.name);
        assert_eq!(
            api.patched(),
            Vec::<String>::new(),
            "{}: terminated pods are not marked",
            case.name
        );
        assert_eq!(
            counted(&metrics, Reason::Terminated),
            case.deleted.len() as u64,
            "{}: pod_gc_collector_force_delete_pods_total",
            case.name
        );
    }
}

/// Upstream `TestGCOrphaned`: a pod is collected only once its node has
/// been missing for the quarantine and the API does not have it either.
#[tokio::test]
async fn pods_of_a_node_gone_past_its_quarantine_are_collected() {
    #[derive(Default)]
    struct Case {
        name: &'static str,
        client_nodes: &'static [&'static str],
        informer_nodes: &'static [&'static str],
        delay: Duration,
        added_client_nodes: &'static [&'static str],
        deleted_client_nodes: &'static [&'static str],
        added_informer_nodes: &'static [&'static str],
        deleted_informer_nodes: &'static [&'static str],
        pods: Vec<P>,
        deleted: &'static [&'static str],
        patched: &'static [&'static str],
    }
    let quarantine = Duration::from_secs(40);
    let cases = [
        Case {
            name: "nodes present in lister",
            informer_nodes: &["existing1", "existing2"],
            delay: 2 * quarantine,
            pods: vec![
                p("a", "existing1", RUNNING),
                p("b", "existing2", FAILED),
                p("c", "existing2", SUCCEEDED),
            ],
            ..Case::default()
        },
        Case {
            name: "nodes present in client",
            client_nodes: &["existing1", "existing2"],
            delay: 2 * quarantine,
            pods: vec![
                p("a", "existing1", RUNNING),
                p("b", "existing2", FAILED),
                p("c", "existing2", SUCCEEDED),
            ],
            ..Case::default()
        },
        Case {
            name: "no nodes",
            delay: 2 * quarantine,
            pods: vec![p("a", "deleted", FAILED), p("b", "deleted", SUCCEEDED)],
            deleted: &["a", "b"],
            ..Case::default()
        },
        Case {
            name: "no nodes, one running pod",
            delay: 2 * quarantine,
            pods: vec![
                p("a", "deleted", FAILED),
                p("b", "deleted", SUCCEEDED),
                p("c", "deleted", RUNNING),
            ],
            deleted: &["a", "b", "c"],
            patched: &["c"],
            ..Case::default()
        },
        Case {
            name: "no nodes, pods that are only waiting for their finalizers",
            delay: 2 * quarantine,
            pods: vec![
                p("a", "deleted", FAILED).force_deleted(),
                p("b", "deleted", RUNNING),
                p("c", "deleted", SUCCEEDED),
            ],
            deleted: &["b", "c"],
            patched: &["b"],
            ..Case::default()
        },
        Case {
            name: "quarantine not finished",
            delay: quarantine / 2,
            pods: vec![p("a", "deleted", FAILED)],
            ..Case::default()
        },
        Case {
            name: "wrong nodes",
            informer_nodes: &["existing"],
            delay: 2 * quarantine,
            pods: vec![p("a", "deleted", RUNNING)],
            deleted: &["a"],
            patched: &["a"],
            ..Case::default()
        },
        Case {
            name: "some nodes missing",
            informer_nodes: &["existing"],
            delay: 2 * quarantine,
            pods: vec![
                p("a", "deleted", FAILED),
                p("b", "existing", FAILED),
                p("c", "deleted", SUCCEEDED),
                p("d", "deleted", RUNNING),
            ],
            deleted: &["a", "c", "d"],
            patched: &["d"],
            ..Case::default()
        },
        Case {
            name: "node added to client after quarantine",
            delay: 2 * quarantine,
            added_client_nodes: &["node"],
            pods: vec![p("a", "node", RUNNING)],
            ..Case::default()
        },
        Case {
            name: "node added to informer after quarantine",
            delay: 2 * quarantine,
            added_informer_nodes: &["node"],
            pods: vec![p("a", "node", FAILED)],
            ..Case::default()
        },
        Case {
            // It shouldn't happen that client will be lagging behind informer.
            name: "node deleted from client after quarantine",
            client_nodes: &["node"],
            delay: 2 * quarantine,
            deleted_client_nodes: &["node"],
            pods: vec![p("a", "node", FAILED)],
            deleted: &["a"],
            ..Case::default()
        },
        Case {
            name: "node deleted from informer after quarantine",
            informer_nodes: &["node"],
            delay: 2 * quarantine,
            deleted_informer_nodes: &["node"],
            pods: vec![p("a", "node", SUCCEEDED)],
            ..Case::default()
        },
    ];
    for case in cases {
        let api = FakeApi::with_nodes(case.client_nodes);
        let metrics = ControllerMetrics::default();
        let informer = case.informer_nodes.iter().map(|n| ready_node(n)).collect();
        let mut gc = state(&case.pods, informer, -1);
        gc.gc(&api, t0(), &metrics).await;
        assert_eq!(
            api.deleted(),
            Vec::<String>::new(),
            "{}: nothing before the quarantine",
            case.name
        );

        if let Ok(mut nodes) = api.nodes.lock() {
            nodes.extend(case.added_client_nodes.iter().map(|s| s.to_string()));
            nodes.retain(|n| !case.deleted_client_nodes.contains(&n.as_str()));
        }
        for node in case.added_informer_nodes {
            gc.nodes.insert(node.to_string(), ready_node(node));
        }
        for node in case.deleted_informer_nodes {
            gc.nodes.remove(*node);
        }
        let later = t0() + SignedDuration::try_from(case.delay).unwrap_or(SignedDuration::ZERO);
        gc.gc(&api, later, &metrics).await;
        assert_eq!(
            api.deleted(),
            strings(case.deleted),
            "{}: deleted",
            case.name
        );
        assert_eq!(
            api.patched(),
            strings(case.patched),
            "{}: marked Failed",
            case.name
        );
        assert_eq!(
            counted(&metrics, Reason::Orphaned),
            case.deleted.len() as u64,
            "{}: metric",
            case.name
        );
    }
}

/// Upstream `TestGCUnscheduledTerminating`.
#[tokio::test]
async fn terminating_pods_never_bound_are_collected() {
    struct Case {
        name: &'static str,
        pods: Vec<P>,
        deleted: &'static [&'static str],
        patched: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "Unscheduled pod in any phase must be deleted",
            pods: vec![
                p("a", "", FAILED).deleting(),
                p("b", "", SUCCEEDED).deleting(),
                p("c", "", RUNNING).deleting(),
            ],
            deleted: &["a", "b", "c"],
            patched: &["c"],
        },
        Case {
            name: "Scheduled pod in any phase must not be deleted",
            pods: vec![
                p("a", "", FAILED),
                p("b", "node", SUCCEEDED),
                p("c", "node", RUNNING).deleting(),
            ],
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "Unscheduled pod that is only waiting for its finalizers must not be deleted again",
            pods: vec![
                p("a", "", FAILED).force_deleted(),
                p("b", "", PENDING).force_deleted(),
                p("c", "", SUCCEEDED).deleting().grace(Some(0)),
            ],
            deleted: &["b", "c"],
            patched: &["b"],
        },
    ];
    for case in cases {
        let api = FakeApi::default();
        let metrics = ControllerMetrics::default();
        // Every bound pod's node is in the view: only this step collects.
        let mut gc = state(&case.pods, vec![ready_node("node")], -1);
        gc.gc(&api, t0(), &metrics).await;
        assert_eq!(api.deleted(), strings(case.deleted), "{}", case.name);
        assert_eq!(api.patched(), strings(case.patched), "{}", case.name);
        assert_eq!(
            counted(&metrics, Reason::Unscheduled),
            case.deleted.len() as u64,
            "{}",
            case.name
        );
    }
}

/// Upstream `TestGCTerminating`: terminating pods on a node that is not
/// Ready and is tainted out-of-service (any effect, any value).
#[tokio::test]
async fn terminating_pods_on_an_out_of_service_node_are_collected() {
    struct Case {
        name: &'static str,
        nodes: Vec<Node>,
        pods: Vec<P>,
        deleted: &'static [&'static str],
        patched: &'static [&'static str],
    }
    let node = |name: &str, ready: &str, out_of_service: Option<(&str, &str)>| {
        let taints = out_of_service
            .map(|(value, effect)| {
                vec![Taint {
                    key: TAINT_NODE_OUT_OF_SERVICE.into(),
                    value: (!value.is_empty()).then(|| value.into()),
                    effect: effect.into(),
                    time_added: None,
                }]
            })
            .unwrap_or_default();
        make_node()
            .name(name)
            .condition("Ready", ready)
            .taints(taints)
            .obj()
    };
    let mut many = Vec::new();
    for (i, worker) in [
        "worker-0", "worker-1", "worker-2", "worker-3", "worker-4", "worker-5",
    ]
    .into_iter()
    .enumerate()
    {
        let n = i + 1;
        let names: [&'static str; 5] = [
            ["a1", "a2", "a3", "a4", "a5", "a6"][i],
            ["b1", "b2", "b3", "b4", "b5", "b6"][i],
            ["c1", "c2", "c3", "c4", "c5", "c6"][i],
            ["d1", "d2", "d3", "d4", "d5", "d6"][i],
            ["e1", "e2", "e3", "e4", "e5", "e6"][i],
        ];
        // Upstream puts a5 on worker-3.
        let a_node = if n == 5 { "worker-3" } else { worker };
        many.extend([
            p(names[0], a_node, ""),
            p(names[1], worker, "").deleting(),
            p(names[2], worker, PENDING),
            p(names[3], worker, RUNNING),
            p(names[4], worker, UNKNOWN),
        ]);
    }
    let cases = [
        Case {
            name: "pods have deletion timestamp set and the corresponding nodes are not ready",
            nodes: vec![
                node("worker-0", "False", None),
                node("worker-1", "False", None),
            ],
            pods: vec![
                p("a", "worker-0", "").deleting(),
                p("b", "worker-1", "").deleting(),
            ],
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "some pods have deletion timestamp and/or phase set and some of the corresponding nodes have an outofservice taint that are not ready",
            nodes: vec![
                node("worker-0", "False", Some(("", "NoExecute"))),
                node("worker-1", "False", None),
                node("worker-2", "True", None),
                node("worker-3", "False", Some(("", "NoSchedule"))),
                node("worker-4", "False", Some(("", "PreferNoSchedule"))),
                node("worker-5", "False", Some(("any-value", "NoExecute"))),
            ],
            pods: many,
            deleted: &["b1", "b4", "b5", "b6"],
            patched: &["b1", "b4", "b5", "b6"],
        },
        Case {
            name: "pods deleted from node tainted out-of-service",
            nodes: vec![node("worker", "False", Some(("", "NoExecute")))],
            pods: vec![
                p("a", "worker", RUNNING).deleting(),
                p("b", "worker", FAILED).deleting(),
                p("c", "worker", SUCCEEDED).deleting(),
            ],
            deleted: &["a", "b", "c"],
            patched: &["a"],
        },
        Case {
            name: "pods that are only waiting for their finalizers are not deleted again",
            nodes: vec![node("worker", "False", Some(("", "NoExecute")))],
            pods: vec![
                p("a", "worker", FAILED).force_deleted(),
                p("b", "worker", RUNNING).force_deleted(),
            ],
            deleted: &["b"],
            patched: &["b"],
        },
    ];
    for case in cases {
        let api = FakeApi::default();
        let metrics = ControllerMetrics::default();
        let mut gc = state(&case.pods, case.nodes, -1);
        gc.gc(&api, t0(), &metrics).await;
        assert_eq!(api.deleted(), strings(case.deleted), "{}", case.name);
        assert_eq!(api.patched(), strings(case.patched), "{}", case.name);
        assert_eq!(
            counted(&metrics, Reason::OutOfService),
            case.deleted.len() as u64,
            "{}",
            case.name
        );
    }
}

/// Upstream `TestIsPodBlockedOnFinalizers`.
#[test]
fn a_pod_is_blocked_on_finalizers_only_once_its_immediate_deletion_was_accepted() {
    struct Case {
        name: &'static str,
        pod: P,
        want: bool,
    }
    let cases = [
        Case {
            name: "terminated pod that is not marked for deletion",
            pod: p("a", "node", SUCCEEDED),
            want: false,
        },
        Case {
            name: "terminated pod whose deletion has not been accepted yet",
            pod: p("a", "node", SUCCEEDED).force_deleted().grace(None),
            want: false,
        },
        Case {
            name: "terminated pod that is still within its grace period",
            pod: p("a", "node", SUCCEEDED).force_deleted().grace(Some(30)),
            want: false,
        },
        Case {
            name: "terminated pod without finalizers",
            pod: p("a", "node", SUCCEEDED).force_deleted().finalizer(false),
            want: false,
        },
        Case {
            name: "running pod",
            pod: p("a", "node", RUNNING).force_deleted(),
            want: false,
        },
        Case {
            name: "succeeded pod that is only waiting for its finalizers",
            pod: p("a", "node", SUCCEEDED).force_deleted(),
            want: true,
        },
        Case {
            name: "failed pod that is only waiting for its finalizers",
            pod: p("a", "node", FAILED).force_deleted(),
            want: true,
        },
    ];
    for case in cases {
        assert_eq!(
            is_blocked_on_finalizers(&case.pod.pod(1)),
            case.want,
            "{}",
            case.name
        );
    }
}

/// Upstream `TestGCTerminatedConverges`: once their deletion is accepted,
/// pods waiting for their finalizers are not deleted on every pass.
#[tokio::test]
async fn collecting_terminated_pods_converges() {
    let pods = [
        p("a", "node", SUCCEEDED).finalizer(true),
        p("b", "node", SUCCEEDED).finalizer(true),
        p("c", "node", SUCCEEDED).finalizer(true),
    ];
    let api = FakeApi::with_nodes(&["node"]);
    let metrics = ControllerMetrics::default();
    let mut gc = state(&pods, vec![ready_node("node")], 1);
    let accept = |gc: &mut PodGc, name: &str| {
        let key = ObjectKey::new("default", name);
        if let Some(pod) = gc.pods.get_mut(&key) {
            pod.metadata.deletion_timestamp = Some(Time(t0()));
            pod.metadata.deletion_grace_period_seconds = Some(0);
        }
    };
    gc.gc(&api, t0(), &metrics).await;
    assert_eq!(
        api.deleted(),
        strings(&["a", "b"]),
        "the threshold keeps the newest"
    );
    accept(&mut gc, "a");
    accept(&mut gc, "b");
    api.clear();
    gc.gc(&api, t0(), &metrics).await;
    assert_eq!(
        api.deleted(),
        strings(&["c"]),
        "a and b only wait for their finalizers"
    );
    accept(&mut gc, "c");
    api.clear();
    gc.gc(&api, t0(), &metrics).await;
    assert_eq!(api.deleted(), Vec::<String>::new(), "nothing left to do");
}

/// Upstream `TestGCInspectingPatchedPodBeforeDeletion`: an orphaned pod is
/// marked Failed with the DisruptionTarget condition before its deletion.
#[tokio::test]
async fn an_orphaned_pod_gets_the_disruption_target_condition() {
    let api = FakeApi::default();
    let metrics = ControllerMetrics::default();
    let mut gc = state(&[p("testPod", "deletedNode", RUNNING)], Vec::new(), -1);
    gc.quarantine_time = Duration::ZERO;
    gc.gc(&api, t0(), &metrics).await;
    assert_eq!(api.patched(), strings(&["testPod"]));
    assert_eq!(api.deleted(), strings(&["testPod"]));
    let conditions = api.conditions.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(conditions, vec![orphaned_condition()]);
    let c = &conditions[0];
    assert_eq!(
        (
            c.type_.as_str(),
            c.status.as_str(),
            c.reason.as_deref(),
            c.message.as_deref()
        ),
        (
            "DisruptionTarget",
            "True",
            Some("DeletionByPodGC"),
            Some("PodGC: node no longer exists")
        )
    );
}
