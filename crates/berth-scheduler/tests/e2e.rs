//! The scheduler end to end through the API: an in-process API server on
//! the in-memory store, the scheduler as an ordinary kube-rs client of it,
//! everything on a paused (virtual) clock. Objects go in through the API
//! as users would create them (admission runs), and what the tests check
//! is what users see: `spec.nodeName`, the `PodScheduled` condition and
//! `FailedScheduling` events.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use berth_core::clock::Clock;
use berth_core::test_util::{
    ContainerWrapper, MATCH_EXPRESSIONS, NodeWrapper, PodWrapper, make_container, make_node,
    make_pod, taint, tol,
};
use berth_leader::Standing;
use berth_scheduler::client::{self, SchedulerConfig, metrics};
use berth_testing::TestServer;
use k8s_openapi::api::core::v1::{Event, Node, Pod, Taint};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

struct Cluster {
    client: kube::Client,
    clock: Clock,
    _server: TestServer,
}

impl Cluster {
    async fn start() -> Cluster {
        Cluster::start_with(SchedulerConfig {
            seed: Some(7),
            ..SchedulerConfig::default()
        })
        .await
    }

    async fn start_with(config: SchedulerConfig) -> Cluster {
        let cluster = Cluster::without_scheduler().await;
        tokio::spawn(client::run(
            cluster.client.clone(),
            cluster.clock.clone(),
            config,
        ));
        cluster
    }

    async fn without_scheduler() -> Cluster {
        let server = TestServer::start().await;
        Cluster {
            client: server.admin.clone(),
            clock: server.clock.clone(),
            _server: server,
        }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), "default")
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Creates a Ready node and, as the node lifecycle controller would
    /// once it reports Ready, replaces admission's not-ready taint with
    /// `taints`.
    async fn node(&self, node: NodeWrapper, taints: Vec<Taint>) {
        let node = node.condition("Ready", "True").obj();
        let name = node.metadata.name.clone().unwrap_or_default();
        self.nodes()
            .create(&PostParams::default(), &node)
            .await
            .expect("create node");
        self.set_taints(&name, taints).await;
    }

    async fn set_taints(&self, name: &str, taints: Vec<Taint>) {
        self.nodes()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": taints}})),
            )
            .await
            .expect("set taints");
    }

    /// Creates the pod in `default`, with a busybox container `c` if it
    /// has none.
    async fn pod(&self, pod: PodWrapper) -> Pod {
        let mut pod = pod.namespace("default").obj();
        let spec = pod.spec.get_or_insert_default();
        if spec.containers.is_empty() {
            spec.containers = vec![busybox().obj()];
        }
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("create pod")
    }

    async fn node_of(&self, pod: &str) -> Option<String> {
        self.pods()
            .get(pod)
            .await
            .ok()
            .and_then(|p| p.spec.and_then(|s| s.node_name))
    }

    /// Polls `check` every 50 ms of virtual time, for at most a minute.
    async fn eventually<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        for _ in 0..1200 {
            if let Some(v) = check().await {
                return v;
            }
            self.clock.sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for {what}");
    }

    async fn bound_to(&self, pod: &str) -> String {
        self.eventually(&format!("{pod} bound"), || self.node_of(pod))
            .await
    }

    /// The pod's PodScheduled condition as (status, reason, message).
    async fn scheduled_condition(&self, pod: &str) -> Option<(String, String, String)> {
        let pod = self.pods().get(pod).await.ok()?;
        let c = pod
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "PodScheduled")?;
        Some((
            c.status,
            c.reason.unwrap_or_default(),
            c.message.unwrap_or_default(),
        ))
    }

    /// Messages of the events about `pod` with `reason`, as core/v1 Events
    /// (what `kubectl describe` lists).
    async fn events(&self, pod: &str, reason: &str) -> Vec<String> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), "default");
        events
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(pod))
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.message)
            .collect()
    }
}

/// A node of `cpu` cores (capacity and allocatable).
fn cores(cpu: &str) -> NodeWrapper {
    make_node().capacity(&[("cpu", cpu), ("memory", "16Gi"), ("pods", "110")])
}

/// A pod whose container `c` of cuda requests and is limited to `gpus`
/// `example.com/gpu`.
fn gpu_trainer(name: &str, gpus: &str) -> PodWrapper {
    let gpu = [("example.com/gpu", gpus)];
    let container = make_container()
        .name("c")
        .image("cuda")
        .requests(&gpu)
        .limits(&gpu);
    make_pod().name(name).containers(vec![container.obj()])
}

/// The container `c` of busybox.
fn busybox() -> ContainerWrapper {
    make_container().name("c").image("busybox")
}

/// A pod whose busybox container `c` requests `cpu`.
fn requesting(name: &str, cpu: &str) -> PodWrapper {
    make_pod()
        .name(name)
        .containers(vec![busybox().requests(&[("cpu", cpu)]).obj()])
}

/// The seed's dedicated-nodes pattern: taint the group's nodes (so others
/// stay off) and label them (so the group's pods, tolerating the taint,
/// can require them).
#[tokio::test(start_paused = true)]
async fn dedicated_nodes_keep_their_group_and_only_it() {
    let c = Cluster::start().await;
    for n in ["dedicated-1", "dedicated-2"] {
        c.node(
            cores("8").name(n).label("dedicated", "groupName"),
            vec![taint("dedicated", "groupName", "NoSchedule")],
        )
        .await;
    }
    for n in ["general-1", "general-2"] {
        c.node(cores("8").name(n), vec![]).await;
    }
    for i in 0..6 {
        let group = make_pod()
            .name(&format!("group-{i}"))
            .toleration(tol("dedicated", "Equal", "groupName", "NoSchedule"))
            .node_affinity_in("dedicated", vec!["groupName"], MATCH_EXPRESSIONS);
        c.pod(group).await;
        c.pod(make_pod().name(&format!("other-{i}"))).await;
    }
    for i in 0..6 {
        let group = c.bound_to(&format!("group-{i}")).await;
        assert!(group.starts_with("dedicated-"), "group-{i} on {group}");
        let other = c.bound_to(&format!("other-{i}")).await;
        assert!(other.starts_with("general-"), "other-{i} on {other}");
    }
}

/// The seed's special-hardware pattern: the GPU node is tainted with the
/// resource's name; a pod requesting the extended resource gets the
/// toleration from admission (ExtendedResourceToleration) and lands there;
/// pods that do not request it never do.
#[tokio::test(start_paused = true)]
async fn extended_resource_pods_land_on_the_tainted_gpu_node_and_others_never() {
    let c = Cluster::start().await;
    c.node(
        make_node().name("gpu-1").capacity(&[
            ("cpu", "8"),
            ("memory", "16Gi"),
            ("pods", "110"),
            ("example.com/gpu", "2"),
        ]),
        vec![taint("example.com/gpu", "", "NoSchedule")],
    )
    .await;
    for n in ["cpu-1", "cpu-2"] {
        c.node(cores("8").name(n), vec![]).await;
    }
    let gpu_pod = c.pod(gpu_trainer("trainer", "1")).await;
    let tolerations = gpu_pod.spec.and_then(|s| s.tolerations).unwrap_or_default();
    assert!(
        tolerations
            .iter()
            .any(|t| t.key.as_deref() == Some("example.com/gpu")
                && t.operator.as_deref() == Some("Exists")
                && t.effect.as_deref() == Some("NoSchedule")),
        "admission adds the toleration: {tolerations:?}"
    );
    for i in 0..8 {
        c.pod(make_pod().name(&format!("web-{i}"))).await;
    }
    assert_eq!(c.bound_to("trainer").await, "gpu-1");
    for i in 0..8 {
        let node = c.bound_to(&format!("web-{i}")).await;
        assert_ne!(node, "gpu-1", "web-{i}");
    }
    // A third GPU pod does not fit (2 GPUs): refused, never on a CPU node.
    c.pod(gpu_trainer("trainer-2", "2")).await;
    let condition = c
        .eventually("trainer-2 refused", || c.scheduled_condition("trainer-2"))
        .await;
    assert_eq!(
        condition,
        (
            "False".into(),
            "Unschedulable".into(),
            "0/3 nodes are available: 3 Insufficient example.com/gpu. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.".into()
        )
    );
}

/// PreferNoSchedule steers pods to untainted nodes while they have room,
/// and onto the tainted node once nothing else fits.
#[tokio::test(start_paused = true)]
async fn prefer_no_schedule_is_used_only_when_nothing_else_fits() {
    let c = Cluster::start().await;
    c.node(
        cores("8").name("spot"),
        vec![taint("spot", "true", "PreferNoSchedule")],
    )
    .await;
    for n in ["regular-1", "regular-2"] {
        c.node(cores("1").name(n), vec![]).await;
    }
    for i in 0..4 {
        c.pod(requesting(&format!("p{i}"), "500m")).await;
    }
    for i in 0..4 {
        let node = c.bound_to(&format!("p{i}")).await;
        assert!(
            node.starts_with("regular-"),
            "p{i} on {node} while regular nodes had room"
        );
    }
    for i in 4..6 {
        c.pod(requesting(&format!("p{i}"), "500m")).await;
    }
    for i in 4..6 {
        assert_eq!(c.bound_to(&format!("p{i}")).await, "spot", "p{i}");
    }
}

/// A pod blocked by a taint is refused with upstream's message, on its
/// condition and in a FailedScheduling event, and is scheduled as soon as
/// the taint goes: the node update's queueing hint moves it back at once,
/// without waiting for a periodic flush.
#[tokio::test(start_paused = true)]
async fn a_pending_pod_is_scheduled_right_after_its_blocking_taint_is_removed() {
    let c = Cluster::start().await;
    c.node(
        cores("4").name("n1"),
        vec![taint("maintenance", "true", "NoSchedule")],
    )
    .await;
    c.node(cores("4").name("n2"), vec![]).await;
    c.nodes()
        .patch(
            "n2",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    c.pod(make_pod().name("waiting")).await;

    let want = "0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";
    let condition = c
        .eventually("PodScheduled=False", || c.scheduled_condition("waiting"))
        .await;
    assert_eq!(
        condition,
        ("False".into(), "Unschedulable".into(), want.into())
    );
    let events = c
        .eventually("a FailedScheduling event", || async {
            let e = c.events("waiting", "FailedScheduling").await;
            (!e.is_empty()).then_some(e)
        })
        .await;
    assert_eq!(events[0], want);

    // Long after the pod's backoff: only an event can bring it back.
    c.clock.sleep(Duration::from_secs(30)).await;
    assert_eq!(c.node_of("waiting").await, None);
    let removed_at = c.clock.instant();
    c.set_taints("n1", vec![]).await;
    let node = c.bound_to("waiting").await;
    assert_eq!(node, "n1");
    let waited = removed_at.elapsed();
    assert!(
        waited <= Duration::from_millis(100),
        "bound {waited:?} (virtual) after the taint was removed"
    );
    // Binding set PodScheduled=True.
    let condition = c.scheduled_condition("waiting").await;
    assert_eq!(condition.map(|c| c.0), Some("True".into()));
}

/// Tolerating the unschedulable taint lets a pod onto a cordoned node.
#[tokio::test(start_paused = true)]
async fn tolerating_the_unschedulable_taint_lets_a_pod_onto_a_cordoned_node() {
    let c = Cluster::start().await;
    c.node(cores("4").name("cordoned"), vec![]).await;
    c.nodes()
        .patch(
            "cordoned",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    c.pod(make_pod().name("tolerant").toleration(tol(
        "node.kubernetes.io/unschedulable",
        "Exists",
        "",
        "NoSchedule",
    )))
    .await;
    c.pod(make_pod().name("plain")).await;
    assert_eq!(c.bound_to("tolerant").await, "cordoned");
    let condition = c
        .eventually("plain refused", || c.scheduled_condition("plain"))
        .await;
    assert_eq!(
        condition.2,
        "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
}

/// Many pods created at once, bindings in flight concurrently: no node ever
/// ends up over its allocatable, and the pods that fit nowhere say so.
#[tokio::test(start_paused = true)]
async fn concurrent_scheduling_never_overcommits_a_node() {
    let c = Cluster::start().await;
    for i in 0..10 {
        c.node(cores("2").name(&format!("n{i}")), vec![]).await;
    }
    let creates = (0..60).map(|i| {
        let c = &c;
        async move { c.pod(requesting(&format!("p{i:02}"), "500m")).await }
    });
    futures::future::join_all(creates).await;
    let pods = c
        .eventually("every pod decided", || async {
            let pods = c.pods().list(&ListParams::default()).await.ok()?.items;
            let decided = pods
                .iter()
                .filter(|p| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "PodScheduled"))
                })
                .count();
            (decided == 60).then_some(pods)
        })
        .await;
    let mut per_node = std::collections::BTreeMap::<String, usize>::new();
    for p in &pods {
        if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
            *per_node.entry(n).or_default() += 1;
        }
    }
    assert_eq!(per_node.values().sum::<usize>(), 40, "{per_node:?}");
    for (node, n) in &per_node {
        assert!(*n <= 4, "{node} holds {n} pods of 500m with 2 cpus");
    }
}

/// Pods for another scheduler are left alone, so berth can run beside it.
#[tokio::test(start_paused = true)]
async fn pods_for_another_scheduler_are_left_alone() {
    let c = Cluster::start_with(SchedulerConfig {
        profile: berth_scheduler::cycle::Profile::new("berth", Default::default()),
        seed: Some(1),
        ..SchedulerConfig::default()
    })
    .await;
    c.node(cores("4").name("n1"), vec![]).await;
    c.pod(make_pod().name("mine").scheduler_name("berth")).await;
    c.pod(make_pod().name("theirs")).await;
    assert_eq!(c.bound_to("mine").await, "n1");
    c.clock.sleep(Duration::from_secs(30)).await;
    assert_eq!(c.node_of("theirs").await, None);
    assert_eq!(c.scheduled_condition("theirs").await, None);
    assert!(metrics::attempts("berth", metrics::AttemptResult::Scheduled) >= 1);
}

/// Under leader election (several servers sharing one etcd) the scheduler
/// runs only while its process leads: `berth server` wraps [`client::run`]
/// in `berth_leader::run_while_leading`, which this test drives by hand.
#[tokio::test(start_paused = true)]
async fn the_scheduler_binds_only_while_leading() {
    let c = Cluster::without_scheduler().await;
    let (leading, rx) = tokio::sync::watch::channel(Standing::Follower);
    let (client, clock) = (c.client.clone(), c.clock.clone());
    tokio::spawn(berth_leader::run_while_leading(rx, move || {
        let config = SchedulerConfig {
            seed: Some(3),
            ..SchedulerConfig::default()
        };
        client::run(client.clone(), clock.clone(), config)
    }));
    c.node(cores("4").name("n1"), vec![]).await;
    c.pod(make_pod().name("early")).await;
    c.clock.sleep(Duration::from_secs(30)).await;
    assert_eq!(c.node_of("early").await, None, "not leading yet");

    leading.send(Standing::leader_indefinitely()).expect("send");
    assert_eq!(c.bound_to("early").await, "n1");

    leading.send(Standing::Follower).expect("send");
    c.clock.sleep(Duration::from_secs(1)).await;
    c.pod(make_pod().name("late")).await;
    c.clock.sleep(Duration::from_secs(30)).await;
    assert_eq!(c.node_of("late").await, None, "leadership lost");

    // Leading again: state is rebuilt from the watches.
    leading.send(Standing::leader_indefinitely()).expect("send");
    assert_eq!(c.bound_to("late").await, "n1");
}

/// A binding decided while leading but still in flight when leadership is
/// lost is abandoned with the scheduler: it never lands afterwards (the
/// new leader decides that pod again).
#[tokio::test(start_paused = true)]
async fn a_binding_in_flight_when_leadership_is_lost_never_lands() {
    let c = Cluster::without_scheduler().await;
    // The scheduler's transport holds every pods/binding request until the
    // gate opens (a slow API server, a stalled connection).
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = Arc::new(tokio::sync::Notify::new());
    let transport = {
        let (inner, gate, held) = (c.client.clone(), gate.clone(), held.clone());
        tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let (inner, gate, held) = (inner.clone(), gate.clone(), held.clone());
            async move {
                if request.uri().path().ends_with("/binding") {
                    held.notify_one();
                    let _open = gate.acquire().await;
                }
                inner.send(request).await
            }
        })
    };
    let gated = kube::Client::new(transport, "default");
    let (leading, rx) = tokio::sync::watch::channel(Standing::leader_indefinitely());
    let clock = c.clock.clone();
    let elected = tokio::spawn(berth_leader::run_while_leading(rx, move || {
        let config = SchedulerConfig {
            seed: Some(5),
            ..SchedulerConfig::default()
        };
        client::run(gated.clone(), clock.clone(), config)
    }));
    c.node(cores("4").name("n1"), vec![]).await;
    c.pod(make_pod().name("p")).await;
    held.notified().await;
    leading.send(Standing::Follower).expect("send");
    tokio::task::yield_now().await;
    gate.add_permits(1000);
    c.clock.sleep(Duration::from_secs(30)).await;
    assert_eq!(
        c.node_of("p").await,
        None,
        "bound after leadership was lost"
    );
    drop(leading);
    elected
        .await
        .expect("the guarded scheduler ends with the election");
}

/// The scheduler's PodDisruptionBudget watch feeds preemption: node a's
/// pod is the cheaper victim (class `low`, 10, against node b's `mid`,
/// 50), but a budget allowing no disruption covers it, so the `high`
/// preemptor is nominated to b and b's pod is the one deleted
/// (`pickOneNodeForPreemption`'s first rule: fewest budget violations).
#[tokio::test(start_paused = true)]
async fn preemption_spares_the_pod_a_disruption_budget_protects() {
    use berth_core::test_util::{pdb, priority_class};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::scheduling::v1::PriorityClass;

    let c = Cluster::start().await;
    let classes: Api<PriorityClass> = Api::all(c.client.clone());
    for (name, value) in [("low", 10), ("mid", 50), ("high", 1000)] {
        classes
            .create(
                &PostParams::default(),
                &priority_class(name, value, false, None),
            )
            .await
            .expect("create class");
    }
    c.node(cores("1").name("a"), vec![]).await;
    c.node(cores("1").name("b"), vec![]).await;
    c.pod(
        requesting("cheap", "1")
            .label("app", "foo")
            .priority_class_name("low")
            .node("a"),
    )
    .await;
    c.pod(
        requesting("dearer", "1")
            .priority_class_name("mid")
            .node("b"),
    )
    .await;
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(c.client.clone(), "default");
    budgets
        .create(
            &PostParams::default(),
            &pdb("foo", &[("app", "foo")], None, None),
        )
        .await
        .expect("create budget");
    // As the disruption controller would find it: no disruption allowed.
    budgets
        .patch_status(
            "foo",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
                "expectedPods": 1, "observedGeneration": 1,
            }})),
        )
        .await
        .expect("budget status");
    // Virtual time passes only once every task is idle: the scheduler has
    // taken in the budget's status.
    c.clock.sleep(Duration::from_secs(1)).await;

    c.pod(requesting("high", "1").priority_class_name("high"))
        .await;
    let nominated = c
        .eventually("high nominated", || async {
            let pod = c.pods().get("high").await.ok()?;
            pod.status?.nominated_node_name
        })
        .await;
    assert_eq!(nominated, "b");
    let dearer = c.pods().get("dearer").await.ok();
    assert!(
        dearer.is_none_or(|p| p.metadata.deletion_timestamp.is_some()),
        "the victim on b is being deleted"
    );
    let cheap = c.pods().get("cheap").await.expect("cheap still there");
    assert!(cheap.metadata.deletion_timestamp.is_none(), "cheap spared");
}
