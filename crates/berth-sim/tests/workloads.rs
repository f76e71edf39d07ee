//! The ReplicaSet and Deployment controllers in a whole cluster on
//! virtual time: the API server on the in-memory store, simulated nodes
//! (berth-agent's fleet: pods become Running and Ready), the scheduler,
//! and the two controllers, with a watch of every pod that checks each
//! state it sees against what a rollout promises.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::{ControllerOptions, EnabledControllers};
use berth_core::FeatureGates;
use berth_core::workloads::deployment::{POD_TEMPLATE_HASH_LABEL, REVISION_ANNOTATION};
use berth_scheduler::client::SchedulerConfig;
use berth_scheduler::cycle::Profile;
use berth_sim::fleet;
use berth_sim::scenario::NodeSpec;
use berth_testing::TestServer;
use berth_testing::pod_history::{PodHistory, Snapshot};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, ReplicaSetSpec,
    RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, Event, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

struct Cluster {
    server: TestServer,
    history: PodHistory,
    _tasks: JoinSet<()>,
    _stop: StopOnDrop,
}

struct StopOnDrop(CancellationToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Cluster {
    /// `nodes` simulated nodes, the scheduler, the ReplicaSet and
    /// Deployment controllers, and the pod watch.
    async fn start(nodes: usize) -> Cluster {
        let server = TestServer::start().await;
        let stop = CancellationToken::new();
        let specs: Vec<NodeSpec> = (0..nodes)
            .map(|i| NodeSpec {
                name: format!("node-{i}"),
                zone: None,
                labels: BTreeMap::new(),
                taints: Vec::new(),
                capacity: [("cpu", "8"), ("memory", "32Gi"), ("pods", "110")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .collect();
        let phases: Vec<Duration> = (0..nodes)
            .map(|i| Duration::from_millis(100 * i as u64))
            .collect();
        let mut fleet = fleet::start(
            &server.api,
            &server.clock,
            &specs,
            &phases,
            FeatureGates::default(),
            stop.clone(),
        )
        .expect("the nodes join");
        fleet.up().await.expect("every node registers");
        let mut tasks = JoinSet::new();
        let scheduler = SchedulerConfig {
            profile: Profile::new("default-scheduler", FeatureGates::default()),
            seed: Some(0),
            ..SchedulerConfig::default()
        };
        tasks.spawn(berth_scheduler::client::run(
            server.admin.clone(),
            server.clock.clone(),
            scheduler,
        ));
        let options = ControllerOptions {
            enabled: EnabledControllers::parse(
                "node-lifecycle-controller,replicaset-controller,deployment-controller",
            )
            .expect("known controllers"),
            ..ControllerOptions::default()
        };
        let mut controllers = berth_controllers::spawn(
            server.admin.clone(),
            server.clock.clone(),
            options,
            ControllerMetrics::default(),
            None,
        );
        tasks.spawn(async move { while controllers.join_next().await.is_some() {} });
        let (history, watch) =
            PodHistory::watch(server.admin.clone(), "default", server.clock.clone());
        tasks.spawn(watch);
        Cluster {
            server,
            history,
            _tasks: tasks,
            _stop: StopOnDrop(stop),
        }
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    fn replica_sets(&self) -> Api<ReplicaSet> {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    /// Waits (in virtual time, up to `within`) until `check` holds.
    async fn until<F, Fut>(&self, what: &str, within: Duration, check: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = bool>,
    {
        let deadline = self.server.clock.instant() + within;
        while !check().await {
            if self.server.clock.instant() >= deadline {
                panic!("{what}: not within {within:?}\n{}", self.dump().await);
            }
            self.server.clock.sleep(Duration::from_millis(100)).await;
        }
    }

    /// Every `K` of `default` now (none if the list fails).
    async fn all<K>(&self) -> Vec<K>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Api::<K>::namespaced(self.server.admin.clone(), "default")
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    async fn create_deployment(&self, d: &Deployment) {
        self.deployments()
            .create(&PostParams::default(), d)
            .await
            .expect("the deployment is created");
    }

    /// The ReplicaSets, lowest revision first.
    async fn replica_sets_by_revision(&self) -> Vec<ReplicaSet> {
        let mut rss = self.all::<ReplicaSet>().await;
        rss.sort_by_key(revision);
        rss
    }

    /// The namespace's Deployments, ReplicaSets, pods and Events, for a
    /// failure's message.
    async fn dump(&self) -> String {
        let mut out = String::new();
        for d in self.all::<Deployment>().await {
            out += &format!(
                "deployment {:?} generation {:?} annotations {:?}\n  status {:?}\n",
                d.metadata.name, d.metadata.generation, d.metadata.annotations, d.status
            );
        }
        for rs in self.all::<ReplicaSet>().await {
            out += &format!(
                "replicaset {:?} replicas {:?} annotations {:?}\n  status {:?}\n",
                rs.metadata.name, rs.spec.replicas, rs.metadata.annotations, rs.status
            );
        }
        for p in self.all::<Pod>().await {
            out += &format!(
                "pod {:?} node {:?} phase {:?} ready {} deleting {} owner {:?}\n",
                p.metadata.name,
                p.spec.as_ref().and_then(|s| s.node_name.clone()),
                p.status.as_ref().and_then(|s| s.phase.clone()),
                berth_core::pod::is_ready(&p),
                p.metadata.deletion_timestamp.is_some(),
                p.metadata
                    .owner_references
                    .as_ref()
                    .map(|r| r.iter().map(|r| r.name.clone()).collect::<Vec<_>>()),
            );
        }
        for e in self.all::<Event>().await {
            out += &format!(
                "event {:?} {:?} {:?}: {:?}\n",
                e.involved_object.name, e.type_, e.reason, e.message
            );
        }
        out
    }

    /// Waits until the Deployment's rollout is complete, as `kubectl
    /// rollout status` judges it.
    async fn rolled_out(&self, name: &str) {
        self.until(
            &format!("deployment {name} rolled out"),
            Duration::from_secs(120),
            || async {
                let Ok(d) = self.deployments().get(name).await else {
                    return false;
                };
                rollout_complete(&d)
            },
        )
        .await;
    }

    fn snapshots(&self) -> Vec<Snapshot> {
        self.history.snapshots()
    }

    fn pods_created(&self) -> usize {
        self.history.pods_created()
    }

    /// The messages of the Events with `reason`, in the order they were
    /// recorded (by their names' stamps: their times have whole seconds).
    async fn events(&self, reason: &str) -> Vec<String> {
        let stamp = |e: &Event| {
            e.metadata
                .name
                .as_deref()
                .and_then(|n| n.rsplit_once('.'))
                .and_then(|(_, hex)| i128::from_str_radix(hex, 16).ok())
        };
        let mut messages: Vec<(Option<i128>, String)> = self
            .all::<Event>()
            .await
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| (stamp(&e), e.message.unwrap_or_default()))
            .collect();
        messages.sort();
        messages.into_iter().map(|(_, m)| m).collect()
    }
}

/// kubectl's `DeploymentStatusViewer`: the latest spec observed, every
/// replica updated, no old replica left, every updated one available.
fn rollout_complete(d: &Deployment) -> bool {
    let status = d.status.clone().unwrap_or_default();
    let replicas = d.spec.replicas.unwrap_or(1);
    status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
        && status.updated_replicas.unwrap_or(0) >= replicas
        && status.replicas.unwrap_or(0) <= status.updated_replicas.unwrap_or(0)
        && status.available_replicas.unwrap_or(0) >= status.updated_replicas.unwrap_or(0)
}

fn labels(app: &str) -> BTreeMap<String, String> {
    [("app".to_string(), app.to_string())].into()
}

fn template(app: &str, image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(app)),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

fn deployment(name: &str, replicas: i32, strategy: DeploymentStrategy) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels(name)),
                ..LabelSelector::default()
            },
            strategy: Some(strategy),
            template: template(name, "registry.example/web:1"),
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

fn rolling(max_surge: i32, max_unavailable: i32) -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some("RollingUpdate".into()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(IntOrString::Int(max_surge)),
            max_unavailable: Some(IntOrString::Int(max_unavailable)),
        }),
    }
}

fn recreate() -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some("Recreate".into()),
        rolling_update: None,
    }
}

async fn set_image(cluster: &Cluster, name: &str, image: &str) {
    let patch = serde_json::json!({"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": image}
    ]}}}});
    cluster
        .deployments()
        .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("the image is set");
}

fn revision(rs: &ReplicaSet) -> String {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION_ANNOTATION))
        .cloned()
        .unwrap_or_default()
}

/// A Deployment created, then rolled to a new image: at every state the
/// watch showed, at most `replicas + maxSurge` pods are active and, once
/// the first rollout is done, at least `replicas - maxUnavailable` are
/// ready; each pod is created once (4 + 4 in all); the ReplicaSets carry
/// revisions 1 and 2; the Events say what upstream's say.
#[tokio::test(start_paused = true)]
async fn a_rolling_update_keeps_within_max_surge_and_max_unavailable() {
    let cluster = Cluster::start(3).await;
    cluster
        .create_deployment(&deployment("web", 4, rolling(1, 1)))
        .await;
    cluster.rolled_out("web").await;
    assert_eq!(cluster.pods_created(), 4, "one pod per replica");
    let first_done = cluster.snapshots().len();

    set_image(&cluster, "web", "registry.example/web:2").await;
    cluster
        .until("a second ReplicaSet", Duration::from_secs(10), || async {
            cluster.all::<ReplicaSet>().await.len() == 2
        })
        .await;
    cluster.rolled_out("web").await;
    // The old pods finish terminating.
    cluster
        .until(
            "only the new pods left",
            Duration::from_secs(120),
            || async { cluster.all::<Pod>().await.len() == 4 },
        )
        .await;

    let snapshots = cluster.snapshots();
    for s in &snapshots {
        assert!(
            s.active() <= 5,
            "more than replicas + maxSurge active: {s:?}"
        );
    }
    for s in &snapshots[first_done..] {
        assert!(
            s.ready() >= 3,
            "fewer than replicas - maxUnavailable ready: {s:?}"
        );
    }
    assert!(
        snapshots[first_done..].iter().any(|s| s.active.len() == 2),
        "old and new pods ran side by side"
    );
    assert_eq!(cluster.pods_created(), 8, "each pod created once");

    let rss = cluster.replica_sets_by_revision().await;
    let revisions: Vec<(String, Option<i32>)> = rss
        .iter()
        .map(|rs| (revision(rs), rs.spec.replicas))
        .collect();
    assert_eq!(
        revisions,
        vec![("1".to_string(), Some(0)), ("2".to_string(), Some(4))]
    );
    let new_name = rss[1].metadata.name.clone().unwrap_or_default();
    let old_name = rss[0].metadata.name.clone().unwrap_or_default();
    let hash = rss[1]
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL))
        .cloned()
        .unwrap_or_default();
    assert_eq!(new_name, format!("web-{hash}"));

    let d = cluster.deployments().get("web").await.expect("deployment");
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION)),
        Some(&"2".to_string())
    );
    let status = d.status.clone().unwrap_or_default();
    assert_eq!(
        (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas,
            status.unavailable_replicas,
        ),
        (Some(4), Some(4), Some(4), Some(4), Some(0))
    );
    assert_eq!(status.observed_generation, d.metadata.generation);
    let conditions: Vec<(String, String, String)> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| {
            (
                c.type_.clone().unwrap_or_default(),
                c.status.clone().unwrap_or_default(),
                c.reason.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(conditions.contains(&(
        "Available".into(),
        "True".into(),
        "MinimumReplicasAvailable".into()
    )));
    assert!(conditions.contains(&(
        "Progressing".into(),
        "True".into(),
        "NewReplicaSetAvailable".into()
    )));

    let scaling = cluster.events("ScalingReplicaSet").await;
    assert_eq!(
        scaling.first().map(String::as_str),
        Some(format!("Scaled up replica set {old_name} from 0 to 4").as_str()),
        "{scaling:?}"
    );
    assert!(
        scaling.contains(&format!("Scaled up replica set {new_name} from 0 to 1")),
        "{scaling:?}"
    );
    assert!(
        scaling
            .iter()
            .any(|m| m.starts_with(&format!("Scaled down replica set {old_name} from 4 to "))),
        "{scaling:?}"
    );
    assert!(
        scaling.last().is_some_and(|m| m
            .starts_with(&format!("Scaled down replica set {old_name} from"))
            && m.ends_with(" to 0")),
        "{scaling:?}"
    );
    assert_eq!(cluster.events("SuccessfulCreate").await.len(), 8);
    assert_eq!(cluster.events("SuccessfulDelete").await.len(), 4);
}

/// Recreate: the old pods are all gone before the first new one exists.
#[tokio::test(start_paused = true)]
async fn recreate_never_runs_old_and_new_pods_together() {
    let cluster = Cluster::start(2).await;
    cluster
        .create_deployment(&deployment("web", 3, recreate()))
        .await;
    cluster.rolled_out("web").await;
    let first_done = cluster.snapshots().len();
    set_image(&cluster, "web", "registry.example/web:2").await;
    cluster
        .until("two ReplicaSets", Duration::from_secs(60), || async {
            cluster.all::<ReplicaSet>().await.len() == 2
        })
        .await;
    cluster.rolled_out("web").await;
    for s in &cluster.snapshots()[first_done..] {
        assert!(s.existing.len() <= 1, "old and new pods at once: {s:?}");
    }
    assert_eq!(cluster.pods_created(), 6);
}

/// A ReplicaSet adopts the orphans it selects (and creates only what is
/// still missing), releases a pod relabelled out of its selector and
/// replaces it; on scale-down it deletes the pod that is not running
/// first.
#[tokio::test(start_paused = true)]
async fn a_replica_set_adopts_releases_and_deletes_the_unready_first() {
    let cluster = Cluster::start(2).await;
    let orphan = |name: &str, schedulable: bool| {
        let mut spec = template("cache", "registry.example/cache:1")
            .spec
            .unwrap_or_default();
        if !schedulable {
            spec.node_selector = Some([("nowhere".to_string(), "true".to_string())].into());
        }
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels("cache")),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
            status: None,
        }
    };
    for (name, schedulable) in [("orphan-a", true), ("orphan-b", false)] {
        cluster
            .pods()
            .create(&PostParams::default(), &orphan(name, schedulable))
            .await
            .expect("the orphan is created");
    }
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some("cache".into()),
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some(labels("cache")),
                ..LabelSelector::default()
            },
            template: Some(template("cache", "registry.example/cache:1")),
            min_ready_seconds: None,
        },
        status: None,
    };
    let created = cluster
        .replica_sets()
        .create(&PostParams::default(), &rs)
        .await
        .expect("the replica set is created");
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let owned_by_rs =
        |pod: &Pod| berth_core::workloads::ownership::is_controlled_by(&pod.metadata, &uid);
    cluster
        .until("3 pods owned, 2 ready", Duration::from_secs(60), || async {
            let pods = cluster.all::<Pod>().await;
            let owned: Vec<&Pod> = pods.iter().filter(|p| owned_by_rs(p)).collect();
            owned.len() == 3
                && owned
                    .iter()
                    .filter(|p| berth_core::pod::is_ready(p))
                    .count()
                    == 2
        })
        .await;
    assert_eq!(cluster.pods_created(), 3, "two adopted, one created");

    // Relabelled out of the selector: released and replaced.
    let patch = serde_json::json!({"metadata": {"labels": {"app": "elsewhere"}}});
    cluster
        .pods()
        .patch(
            "orphan-a",
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
        .expect("relabelled");
    cluster
        .until(
            "orphan-a released and replaced",
            Duration::from_secs(60),
            || async {
                let pods = cluster.all::<Pod>().await;
                let released = pods
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some("orphan-a") && !owned_by_rs(p));
                released && pods.iter().filter(|p| owned_by_rs(p)).count() == 3
            },
        )
        .await;
    assert_eq!(cluster.pods_created(), 4);

    // Down to 2: the pending orphan-b goes first.
    let patch = serde_json::json!({"spec": {"replicas": 2}});
    cluster
        .replica_sets()
        .patch("cache", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("scaled");
    cluster
        .until("orphan-b deleted", Duration::from_secs(60), || async {
            cluster
                .pods()
                .get_opt("orphan-b")
                .await
                .is_ok_and(|p| p.is_none_or(|p| p.metadata.deletion_timestamp.is_some()))
        })
        .await;
    cluster
        .until("the status says 2", Duration::from_secs(60), || async {
            cluster.replica_sets().get("cache").await.is_ok_and(|rs| {
                let s = rs.status.unwrap_or_default();
                s.replicas == 2
                    && s.ready_replicas == Some(2)
                    && s.available_replicas == Some(2)
                    && s.fully_labeled_replicas == Some(2)
                    && s.observed_generation == rs.metadata.generation
            })
        })
        .await;
    assert_eq!(cluster.pods_created(), 4, "nothing created twice");
}

fn condition(d: &Deployment, type_: &str) -> Option<(String, String, String)> {
    d.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some(type_))
        .map(|c| {
            (
                c.status.clone().unwrap_or_default(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// `minReadySeconds`: a pod counts as available 10 s after it is Ready,
/// and a rollout with maxUnavailable 0 waits for that at each step.
#[tokio::test(start_paused = true)]
async fn min_ready_seconds_counts_from_ready() {
    let cluster = Cluster::start(2).await;
    let mut d = deployment("web", 2, rolling(1, 0));
    d.spec.min_ready_seconds = Some(10);
    let start = cluster.server.clock.now();
    cluster.create_deployment(&d).await;
    cluster
        .until("2 ready", Duration::from_secs(10), || async {
            cluster
                .deployments()
                .get("web")
                .await
                .is_ok_and(|d| d.status.and_then(|s| s.ready_replicas) == Some(2))
        })
        .await;
    let ready_at = cluster.server.clock.now();
    let available = cluster
        .deployments()
        .get("web")
        .await
        .ok()
        .and_then(|d| d.status)
        .and_then(|s| s.available_replicas);
    assert_eq!(
        available,
        Some(0),
        "not available while ready for less than 10 s"
    );
    cluster.rolled_out("web").await;
    let available_after = cluster.server.clock.now().duration_since(ready_at);
    assert!(
        available_after >= jiff::SignedDuration::from_secs(10)
            && available_after < jiff::SignedDuration::from_secs(13),
        "available {available_after:?} after ready"
    );
    // Two steps of one surge pod each, each waiting 10 s for availability.
    let rollout_start = cluster.server.clock.now();
    set_image(&cluster, "web", "registry.example/web:2").await;
    cluster
        .until("the new ReplicaSet", Duration::from_secs(10), || async {
            cluster.all::<ReplicaSet>().await.len() == 2
        })
        .await;
    cluster.rolled_out("web").await;
    let took = cluster.server.clock.now().duration_since(rollout_start);
    assert!(
        took >= jiff::SignedDuration::from_secs(20),
        "rolled in {took:?}"
    );
    assert!(
        took < jiff::SignedDuration::from_secs(30),
        "rolled in {took:?}"
    );
    assert!(cluster.server.clock.now() > start);
}

/// `progressDeadlineSeconds`: a rollout whose pods cannot be scheduled is
/// marked ProgressDeadlineExceeded once the deadline passes, not before.
#[tokio::test(start_paused = true)]
async fn a_stuck_rollout_exceeds_its_progress_deadline() {
    let cluster = Cluster::start(1).await;
    let mut d = deployment("web", 2, rolling(1, 0));
    d.spec.progress_deadline_seconds = Some(30);
    if let Some(spec) = d.spec.template.spec.as_mut() {
        spec.node_selector = Some([("nowhere".to_string(), "true".to_string())].into());
    }
    let start = cluster.server.clock.now();
    cluster.create_deployment(&d).await;
    cluster
        .until("the deadline exceeded", Duration::from_secs(60), || async {
            cluster.deployments().get("web").await.is_ok_and(|d| {
                condition(&d, "Progressing")
                    .is_some_and(|(_, reason, _)| reason == "ProgressDeadlineExceeded")
            })
        })
        .await;
    let after = cluster.server.clock.now().duration_since(start);
    assert!(
        after > jiff::SignedDuration::from_secs(30) && after < jiff::SignedDuration::from_secs(33),
        "exceeded after {after:?}"
    );
    let d = cluster.deployments().get("web").await.expect("deployment");
    let rs = cluster.all::<ReplicaSet>().await;
    let name = rs[0].metadata.name.clone().unwrap_or_default();
    assert_eq!(
        condition(&d, "Progressing"),
        Some((
            "False".to_string(),
            "ProgressDeadlineExceeded".to_string(),
            format!("ReplicaSet \"{name}\" has timed out progressing.")
        ))
    );
    assert_eq!(
        condition(&d, "Available").map(|(status, reason, _)| (status, reason)),
        Some((
            "False".to_string(),
            "MinimumReplicasUnavailable".to_string()
        ))
    );
}

/// A resize in the middle of a stuck rollout (upstream's `scale`): the
/// old and new ReplicaSets grow in proportion to their sizes, within
/// `replicas + maxSurge`; a pause holds a new template back.
#[tokio::test(start_paused = true)]
async fn a_resize_mid_rollout_is_shared_in_proportion() {
    let cluster = Cluster::start(2).await;
    cluster
        .create_deployment(&deployment("web", 4, rolling(1, 0)))
        .await;
    cluster.rolled_out("web").await;
    // A new template whose pods cannot be scheduled: the rollout sticks
    // at one surge pod.
    let patch = serde_json::json!({"spec": {"template": {"spec": {
        "nodeSelector": {"nowhere": "true"}
    }}}});
    cluster
        .deployments()
        .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patched");
    let sizes = || async {
        let rss = cluster.replica_sets_by_revision().await;
        rss.iter()
            .map(|rs| rs.spec.replicas.unwrap_or(0))
            .collect::<Vec<i32>>()
    };
    cluster
        .until(
            "stuck at 4 old and 1 new",
            Duration::from_secs(30),
            || async { sizes().await == vec![4, 1] },
        )
        .await;
    let patch = serde_json::json!({"spec": {"replicas": 8}});
    cluster
        .deployments()
        .patch("web", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("scaled");
    cluster
        .until(
            "both scaled up, 9 in all",
            Duration::from_secs(30),
            || async {
                let sizes = sizes().await;
                sizes.iter().sum::<i32>() == 9 && sizes[0] > 4 && sizes[1] > 1
            },
        )
        .await;
    assert_eq!(sizes().await, vec![7, 2], "9 * 4/5 and 9 * 1/5, rounded");

    // Paused, a new template makes no ReplicaSet.
    let patch = serde_json::json!({"spec": {"paused": true}});
    cluster
        .deployments()
        .patch("web", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("paused");
    set_image(&cluster, "web", "registry.example/web:3").await;
    cluster.server.clock.sleep(Duration::from_secs(10)).await;
    assert_eq!(sizes().await.len(), 2, "no new ReplicaSet while paused");
    let d = cluster.deployments().get("web").await.expect("deployment");
    assert_eq!(
        condition(&d, "Progressing").map(|(status, reason, _)| (status, reason)),
        Some(("Unknown".to_string(), "DeploymentPaused".to_string()))
    );
}

/// `revisionHistoryLimit`: old ReplicaSets beyond the limit are deleted
/// once scaled to 0, the oldest revisions first.
#[tokio::test(start_paused = true)]
async fn old_revisions_beyond_the_history_limit_are_deleted() {
    let cluster = Cluster::start(2).await;
    let mut d = deployment("web", 2, rolling(1, 0));
    d.spec.revision_history_limit = Some(1);
    cluster.create_deployment(&d).await;
    cluster.rolled_out("web").await;
    for version in 2..=4 {
        set_image(&cluster, "web", &format!("registry.example/web:{version}")).await;
        cluster
            .until(
                &format!("revision {version}"),
                Duration::from_secs(30),
                || async {
                    let rss = cluster.all::<ReplicaSet>().await;
                    rss.iter().any(|rs| revision(rs) == version.to_string())
                },
            )
            .await;
        cluster.rolled_out("web").await;
    }
    cluster
        .until("two ReplicaSets left", Duration::from_secs(30), || async {
            let rss = cluster.replica_sets_by_revision().await;
            rss.iter().map(revision).collect::<Vec<_>>() == ["3", "4"]
        })
        .await;
}
