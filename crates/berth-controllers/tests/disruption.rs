//! The disruption controller against the API server on the in-memory
//! store, on virtual time: a budget's status follows its pods and its
//! pods' controller's scale, and an eviction recorded in `disruptedPods`
//! keeps the pod out of the healthy count until DeletionTimeout passes.

use std::time::Duration;

use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::{ControllerOptions, EnabledControllers, spawn};
use berth_testing::TestServer;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::task::JoinSet;

struct Cluster {
    server: TestServer,
    _controllers: JoinSet<()>,
}

impl Cluster {
    async fn new() -> Cluster {
        let server = TestServer::start().await;
        let options = ControllerOptions {
            enabled: EnabledControllers::parse("disruption-controller").expect("controllers"),
            ..ControllerOptions::default()
        };
        let client = in_process::client(&server.api, User::admin(), "default").expect("client");
        let controllers = spawn(
            client,
            server.clock.clone(),
            options,
            ControllerMetrics::default(),
            None,
        );
        Cluster {
            server,
            _controllers: controllers,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.server.admin.clone(), "default")
    }

    async fn create<K>(&self, object: Value) -> K
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let object: K = serde_json::from_value(object).expect("a valid object");
        self.api::<K>()
            .create(&PostParams::default(), &object)
            .await
            .expect("created")
    }

    /// A Running, Ready pod labelled app=web, owned by `owner` if given.
    async fn ready_pod(&self, name: &str, owner: Option<&ReplicaSet>) {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        if let Some(rs) = owner {
            pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
                "kind": "ReplicaSet", "name": rs.metadata.name, "uid": rs.metadata.uid,
                "controller": true}]);
        }
        let mut created: Pod = self.create(pod).await;
        created.status = Some(
            serde_json::from_value(json!({"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}))
            .expect("a status"),
        );
        self.api::<Pod>()
            .replace_status(name, &PostParams::default(), &created)
            .await
            .expect("status written");
    }

    /// Waits (in virtual time) until the budget's status satisfies `ok`.
    async fn status_until(
        &self,
        name: &str,
        ok: impl Fn(&PodDisruptionBudgetStatus) -> bool,
    ) -> PodDisruptionBudgetStatus {
        let pdbs = self.api::<PodDisruptionBudget>();
        let mut last = None;
        for _ in 0..400 {
            let status = pdbs.get(name).await.expect("the budget").status;
            if let Some(status) = &status
                && ok(status)
            {
                return status.clone();
            }
            last = status;
            self.server.clock.sleep(Duration::from_millis(500)).await;
        }
        panic!("the budget's status never got there: {last:?}");
    }
}

fn counts(s: &PodDisruptionBudgetStatus) -> (i32, i32, i32, i32) {
    (
        s.disruptions_allowed.unwrap_or(0),
        s.current_healthy.unwrap_or(0),
        s.desired_healthy.unwrap_or(0),
        s.expected_pods.unwrap_or(0),
    )
}

fn condition(s: &PodDisruptionBudgetStatus) -> (String, String) {
    let c = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionAllowed")
        .expect("the DisruptionAllowed condition");
    (c.status.clone(), c.reason.clone())
}

#[tokio::test(start_paused = true)]
async fn budget_status_follows_pods_and_the_owners_scale() {
    let c = Cluster::new().await;
    let rs: ReplicaSet = c
        .create(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}))
        .await;
    for i in 0..3 {
        c.ready_pod(&format!("web-{i}"), Some(&rs)).await;
    }
    let _: PodDisruptionBudget = c
        .create(
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
    let status = c
        .status_until("web", |s| {
            s.observed_generation == Some(1) && s.expected_pods == Some(3)
        })
        .await;
    assert_eq!(counts(&status), (1, 3, 2, 3));
    assert_eq!(condition(&status), ("True".into(), "SufficientPods".into()));

    // The ReplicaSet scaled to 5 (its pods not there yet): 4 must be healthy.
    c.api::<ReplicaSet>()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("scaled");
    let status = c.status_until("web", |s| s.expected_pods == Some(5)).await;
    assert_eq!(counts(&status), (0, 3, 4, 5));
    assert_eq!(
        condition(&status),
        ("False".into(), "InsufficientPods".into())
    );
}

#[tokio::test(start_paused = true)]
async fn an_evicted_pod_is_not_healthy_until_the_deletion_timeout() {
    let c = Cluster::new().await;
    for i in 0..3 {
        c.ready_pod(&format!("web-{i}"), None).await;
    }
    let _: PodDisruptionBudget = c
        .create(
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
    let status = c
        .status_until("web", |s| {
            s.observed_generation == Some(1) && s.current_healthy == Some(3)
        })
        .await;
    assert_eq!(counts(&status), (1, 3, 2, 3));

    // The eviction handler's record of web-0, whose delete never came.
    let pdbs = c.api::<PodDisruptionBudget>();
    let mut pdb = pdbs.get("web").await.expect("the budget");
    let evicted_at = c.server.clock.now();
    if let Some(s) = pdb.status.as_mut() {
        s.disruptions_allowed = Some(0);
        s.disrupted_pods = Some(
            [(
                "web-0".to_string(),
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(evicted_at),
            )]
            .into(),
        );
    }
    pdbs.replace_status("web", &PostParams::default(), &pdb)
        .await
        .expect("status written");
    let status = c
        .status_until("web", |s| s.current_healthy == Some(2))
        .await;
    assert_eq!(counts(&status), (0, 2, 2, 3));
    assert_eq!(status.disrupted_pods.map(|d| d.len()), Some(1));

    // Two minutes later the controller stops waiting for the delete.
    let status = c
        .status_until("web", |s| {
            s.disrupted_pods.as_ref().is_none_or(|d| d.is_empty())
        })
        .await;
    assert_eq!(counts(&status), (1, 3, 2, 3));
    let waited = c.server.clock.now().duration_since(evicted_at);
    assert!(
        waited >= jiff::SignedDuration::from_secs(120),
        "dropped after {waited:?}"
    );
}
