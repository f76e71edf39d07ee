//! DaemonSets and StatefulSets on a whole cluster in virtual time: the API
//! server on the in-memory store, the scheduler and every controller,
//! simulated nodes whose pods become Running and Ready at once (berth-agent's
//! fleet). The tests change nodes and workloads through the API as a user
//! would and wait, on the virtual clock, for what upstream promises.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use berth_agent::sim::FleetHandle;
use berth_apiserver::auth::User;
use berth_controllers::ControllerOptions;
use berth_controllers::metrics::ControllerMetrics;
use berth_core::FeatureGates;
use berth_core::test_util::taint;
use berth_scheduler::client::SchedulerConfig;
use berth_scheduler::cycle::Profile;
use berth_sim::fleet::{self, NodeCommand};
use berth_sim::scenario::NodeSpec;
use berth_testing::TestServer;
use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// A fleet of simulated nodes and what stops it.
struct Fleet {
    handle: FleetHandle,
    _stop: CancellationToken,
}

struct Cluster {
    server: TestServer,
    fleets: Vec<Fleet>,
    _components: JoinSet<()>,
}

fn spec(name: &str, taints: Vec<Taint>) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        zone: None,
        labels: BTreeMap::new(),
        taints,
        capacity: [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

impl Cluster {
    /// A cluster with these nodes up, the scheduler and every controller.
    async fn start(nodes: Vec<NodeSpec>) -> Cluster {
        let server = TestServer::start().await;
        let mut cluster = Cluster {
            fleets: Vec::new(),
            _components: JoinSet::new(),
            server,
        };
        cluster.add_nodes(nodes).await;
        let clock = cluster.server.clock.clone();
        let controllers = berth_controllers::spawn(
            cluster.server.client(User::kube_controller_manager()),
            clock.clone(),
            ControllerOptions::default(),
            ControllerMetrics::default(),
            None,
        );
        let scheduler = berth_scheduler::client::run(
            cluster.server.client(User::kube_scheduler()),
            clock,
            SchedulerConfig {
                profile: Profile::new("default-scheduler", FeatureGates::default()),
                seed: Some(7),
                ..SchedulerConfig::default()
            },
        );
        cluster._components.spawn(async move {
            let _controllers = controllers;
            std::future::pending::<()>().await;
        });
        cluster._components.spawn(scheduler);
        cluster
    }

    /// Simulated nodes joining now.
    async fn add_nodes(&mut self, nodes: Vec<NodeSpec>) {
        let stop = CancellationToken::new();
        let phases: Vec<Duration> = (0..nodes.len())
            .map(|i| Duration::from_millis(500 * (i as u64 + 1)))
            .collect();
        let mut handle = fleet::start(
            &self.server.api,
            &self.server.clock,
            &nodes,
            &phases,
            FeatureGates::default(),
            stop.clone(),
        )
        .expect("the fleet joins");
        handle.up().await.expect("the nodes are up");
        self.fleets.push(Fleet {
            handle,
            _stop: stop,
        });
    }

    /// Three untainted nodes, `node-a` to `node-c`.
    async fn of_three() -> Cluster {
        let nodes = ["node-a", "node-b", "node-c"].map(|n| spec(n, vec![]));
        Cluster::start(nodes.to_vec()).await
    }

    /// Creates the `web` StatefulSet and waits until it is rolled out.
    async fn run_stateful_set(&self, replicas: i32) {
        self.stateful_sets()
            .create(&PostParams::default(), &stateful_set(replicas))
            .await
            .expect("create the StatefulSet");
        self.until("the pods ready", Duration::from_secs(120), || {
            sts_rolled_out(self, replicas)
        })
        .await;
    }

    /// Creates the `agent` DaemonSet and waits until it is rolled out on
    /// `desired` nodes.
    async fn run_daemon_set(&self, desired: i32) {
        self.daemon_sets()
            .create(&PostParams::default(), &daemon_set("agent:1"))
            .await
            .expect("create the DaemonSet");
        self.until("rolled out", Duration::from_secs(60), || {
            rolled_out(self, desired)
        })
        .await;
    }

    fn pause(&self, node: &str) {
        for fleet in &self.fleets {
            fleet.handle.send(NodeCommand::Pause {
                node: node.into(),
                paused: true,
            });
        }
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.server.admin.clone())
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    fn daemon_sets(&self) -> Api<DaemonSet> {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    fn stateful_sets(&self) -> Api<StatefulSet> {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    async fn pod_list(&self, app: &str) -> Vec<Pod> {
        self.pods()
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    /// Waits (virtual time, a second at a time) until `check` holds;
    /// panics with `what` after `limit`.
    async fn until<F, Fut>(&self, what: &str, limit: Duration, check: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = bool>,
    {
        let clock = &self.server.clock;
        let deadline = clock.instant() + limit;
        while clock.instant() < deadline {
            if check().await {
                return;
            }
            clock.sleep(Duration::from_secs(1)).await;
        }
        panic!("{what}: not within {limit:?}\n{}", self.describe().await);
    }

    /// What the cluster looks like, for a failure's message.
    async fn describe(&self) -> String {
        let mut out = String::new();
        for pod in self
            .pods()
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            out += &format!(
                "pod {} node={:?} phase={:?} ready={} deleting={}\n",
                pod.metadata.name.clone().unwrap_or_default(),
                node_of(&pod),
                pod.status.as_ref().and_then(|s| s.phase.clone()),
                berth_core::pod::is_ready(&pod),
                pod.metadata.deletion_timestamp.is_some(),
            );
        }
        for ds in self
            .daemon_sets()
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            out += &format!("daemonset status {:?}\n", ds.status);
        }
        for set in self
            .stateful_sets()
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            out += &format!("statefulset status {:?}\n", set.status);
        }
        let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(self.server.admin.clone());
        for e in events
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            out += &format!(
                "event {:?} {:?} {:?}\n",
                e.involved_object.name, e.reason, e.message
            );
        }
        out
    }

    async fn set_taints(&self, node: &str, taints: Vec<Taint>) {
        self.nodes()
            .patch(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": taints}})),
            )
            .await
            .expect("taint the node");
    }
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.node_name.clone())
}

fn running_and_ready(pod: &Pod) -> bool {
    berth_core::pod::is_ready(pod)
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && pod.metadata.deletion_timestamp.is_none()
}

/// The nodes running a Ready pod of `app`, sorted.
async fn ready_nodes(cluster: &Cluster, app: &str) -> Vec<String> {
    let mut nodes: Vec<String> = cluster
        .pod_list(app)
        .await
        .iter()
        .filter(|p| running_and_ready(p))
        .filter_map(node_of)
        .collect();
    nodes.sort();
    nodes
}

fn daemon_set(image: &str) -> DaemonSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": image}]}
            }
        }
    }))
    .expect("a DaemonSet")
}

/// The DaemonSet is done rolling out, as `kubectl rollout status` judges.
async fn rolled_out(cluster: &Cluster, desired: i32) -> bool {
    let Ok(ds) = cluster.daemon_sets().get("agent").await else {
        return false;
    };
    let status = ds.status.unwrap_or_default();
    status.observed_generation >= ds.metadata.generation
        && status.desired_number_scheduled == desired
        && status.updated_number_scheduled == Some(desired)
        && status.number_available == Some(desired)
}

/// A DaemonSet on tainted nodes (the seed's "Taints and Tolerations"):
/// a pod on each node it tolerates, placed by the scheduler through a
/// per-node affinity with the automatic tolerations; it follows a node
/// tainted NoExecute (its pod goes) and untainted (it comes back), a node
/// added, and a node deleted.
#[tokio::test(start_paused = true)]
async fn a_daemon_set_follows_its_nodes() {
    let mut cluster = Cluster::start(vec![
        spec("node-a", vec![]),
        spec(
            "node-b",
            vec![taint("dedicated", "groupName", "NoSchedule")],
        ),
        spec("node-c", vec![]),
    ])
    .await;
    cluster.run_daemon_set(2).await;
    assert_eq!(ready_nodes(&cluster, "agent").await, ["node-a", "node-c"]);
    for pod in cluster.pod_list("agent").await {
        let spec = pod.spec.clone().unwrap_or_default();
        let terms = spec
            .affinity
            .and_then(|a| a.node_affinity)
            .and_then(|n| n.required_during_scheduling_ignored_during_execution)
            .map(|s| s.node_selector_terms)
            .unwrap_or_default();
        let field = terms
            .first()
            .and_then(|t| t.match_fields.as_ref())
            .and_then(|f| f.first())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            (field.key.as_str(), field.values.clone().unwrap_or_default()),
            ("metadata.name", vec![node_of(&pod).unwrap_or_default()]),
            "scheduled onto its node by affinity"
        );
        let tolerations = spec.tolerations.unwrap_or_default();
        for (key, effect) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            assert!(
                tolerations.iter().any(|t| t.key.as_deref() == Some(key)
                    && t.effect.as_deref() == Some(effect)
                    && t.operator.as_deref() == Some("Exists")
                    && t.toleration_seconds.is_none()),
                "{key}:{effect} tolerated for good: {tolerations:?}"
            );
        }
    }

    // A NoExecute taint the pods do not tolerate: node-c's pod goes.
    cluster
        .set_taints("node-c", vec![taint("maintenance", "", "NoExecute")])
        .await;
    cluster
        .until("node-c's pod gone", Duration::from_secs(60), || async {
            let on_c = cluster
                .pod_list("agent")
                .await
                .iter()
                .any(|p| node_of(p).as_deref() == Some("node-c"));
            !on_c && rolled_out(&cluster, 1).await
        })
        .await;
    // Untainted: it comes back.
    cluster.set_taints("node-c", vec![]).await;
    cluster
        .until("node-c's pod back", Duration::from_secs(60), || async {
            ready_nodes(&cluster, "agent").await == ["node-a", "node-c"]
        })
        .await;

    // A node joins: it gets a pod.
    cluster.add_nodes(vec![spec("node-d", vec![])]).await;
    cluster
        .until("a pod on the new node", Duration::from_secs(60), || async {
            ready_nodes(&cluster, "agent").await == ["node-a", "node-c", "node-d"]
                && rolled_out(&cluster, 3).await
        })
        .await;

    // A node leaves: the DaemonSet no longer counts it.
    cluster.pause("node-d");
    cluster
        .nodes()
        .delete("node-d", &DeleteParams::default())
        .await
        .expect("delete node-d");
    cluster
        .until("node-d no longer desired", Duration::from_secs(60), || {
            rolled_out(&cluster, 2)
        })
        .await;
}

/// `kubectl set image` on a DaemonSet with RollingUpdate (maxUnavailable
/// 1): every pod is replaced, one node at a time, until the status says
/// the rollout is complete.
#[tokio::test(start_paused = true)]
async fn a_daemon_set_rolls_to_a_new_image() {
    let cluster = Cluster::of_three().await;
    cluster.run_daemon_set(3).await;
    cluster
        .daemon_sets()
        .patch(
            "agent",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {
                "containers": [{"name": "agent", "image": "agent:2"}]
            }}}})),
        )
        .await
        .expect("set image");
    let image = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
    };
    cluster
        .until("every pod on agent:2", Duration::from_secs(120), || async {
            let pods = cluster.pod_list("agent").await;
            let new = pods
                .iter()
                .filter(|p| running_and_ready(p) && image(p).as_deref() == Some("agent:2"))
                .count();
            new == 3 && pods.len() == 3 && rolled_out(&cluster, 3).await
        })
        .await;
}

fn stateful_set(replicas: i32) -> StatefulSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "serviceName": "web",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}
            }
        }
    }))
    .expect("a StatefulSet")
}

/// The StatefulSet is done, as `kubectl rollout status sts` judges.
async fn sts_rolled_out(cluster: &Cluster, replicas: i32) -> bool {
    let Ok(set) = cluster.stateful_sets().get("web").await else {
        return false;
    };
    let status = set.status.unwrap_or_default();
    status.observed_generation >= set.metadata.generation
        && status.ready_replicas == Some(replicas)
        && status.updated_replicas == Some(replicas)
        && status.current_revision == status.update_revision
}

fn created(pod: &Pod) -> jiff::Timestamp {
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(jiff::Timestamp::MIN, |t| t.0)
}

fn ready_since(pod: &Pod) -> jiff::Timestamp {
    berth_core::pod::ready_condition(pod)
        .and_then(|c| c.last_transition_time.as_ref())
        .map_or(jiff::Timestamp::MAX, |t| t.0)
}

fn revision(pod: &Pod) -> String {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        .cloned()
        .unwrap_or_default()
}

/// A StatefulSet scaled up in order (each pod created only once the one
/// before it is Ready) and rolled with a partition: only the pods at or
/// above it change, highest first; lowering it finishes the rollout.
#[tokio::test(start_paused = true)]
async fn a_stateful_set_scales_in_order_and_rolls_with_a_partition() {
    let cluster = Cluster::of_three().await;
    cluster.run_stateful_set(3).await;
    let pods: BTreeMap<String, Pod> = cluster
        .pod_list("web")
        .await
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect();
    assert_eq!(
        pods.keys().cloned().collect::<Vec<_>>(),
        ["web-0", "web-1", "web-2"]
    );
    for (before, after) in [("web-0", "web-1"), ("web-1", "web-2")] {
        assert!(
            ready_since(&pods[before]) <= created(&pods[after]),
            "{after} created only once {before} was Ready"
        );
    }
    let old = revision(&pods["web-0"]);

    cluster
        .stateful_sets()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
                "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:2"}]}}
            }})),
        )
        .await
        .expect("a new template with partition 2");
    cluster
        .until("web-2 updated", Duration::from_secs(120), || async {
            let pods = cluster.pod_list("web").await;
            pods.iter().any(|p| {
                p.metadata.name.as_deref() == Some("web-2")
                    && running_and_ready(p)
                    && revision(p) != old
            })
        })
        .await;
    // Long enough for a rollout to go further, were it allowed to.
    cluster.server.clock.sleep(Duration::from_secs(30)).await;
    for pod in cluster.pod_list("web").await {
        if pod.metadata.name.as_deref() != Some("web-2") {
            assert_eq!(
                revision(&pod),
                old,
                "below the partition: {:?}",
                pod.metadata.name
            );
        }
    }
    let set = cluster.stateful_sets().get("web").await.expect("get");
    let status = set.status.unwrap_or_default();
    assert_eq!(
        (status.current_replicas, status.updated_replicas),
        (Some(2), Some(1))
    );

    cluster
        .stateful_sets()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}})),
        )
        .await
        .expect("partition 0");
    cluster
        .until("rolled out", Duration::from_secs(180), || {
            sts_rolled_out(&cluster, 3)
        })
        .await;
    let pods = cluster.pod_list("web").await;
    assert!(pods.iter().all(|p| revision(p) != old));
}

/// Upstream's non-graceful node shutdown: the node of a StatefulSet pod
/// dies; the pod is evicted after its 300 s toleration but stays
/// Terminating (no kubelet confirms it), and the controller never makes a
/// second pod of that name. The `node.kubernetes.io/out-of-service` taint
/// force-deletes it, and the pod comes back on a healthy node.
#[tokio::test(start_paused = true)]
async fn a_stateful_set_pod_of_a_dead_node_waits_for_out_of_service() {
    let cluster = Cluster::of_three().await;
    cluster.run_stateful_set(2).await;
    let web1 = cluster.pods().get("web-1").await.expect("web-1");
    let dead = node_of(&web1).unwrap_or_default();
    let uid = web1.metadata.uid.clone();
    cluster.pause(&dead);

    cluster
        .until(
            "web-1 evicted, terminating",
            Duration::from_secs(50 + 300 + 60),
            || async {
                cluster
                    .pods()
                    .get("web-1")
                    .await
                    .is_ok_and(|p| p.metadata.deletion_timestamp.is_some())
            },
        )
        .await;
    // Ten minutes later it is still the same pod, still terminating.
    cluster.server.clock.sleep(Duration::from_secs(600)).await;
    let stuck = cluster.pods().get("web-1").await.expect("web-1 remains");
    assert_eq!(stuck.metadata.uid, uid, "never a second web-1");
    assert!(stuck.metadata.deletion_timestamp.is_some());

    let mut taints = cluster
        .nodes()
        .get(&dead)
        .await
        .expect("the dead node")
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default();
    taints.push(taint(
        "node.kubernetes.io/out-of-service",
        "nodeshutdown",
        "NoExecute",
    ));
    cluster.set_taints(&dead, taints).await;
    cluster
        .until(
            "web-1 back on a healthy node",
            Duration::from_secs(120),
            || async {
                cluster.pods().get("web-1").await.is_ok_and(|p| {
                    p.metadata.uid != uid
                        && running_and_ready(&p)
                        && node_of(&p).is_some_and(|n| n != dead)
                })
            },
        )
        .await;
}
