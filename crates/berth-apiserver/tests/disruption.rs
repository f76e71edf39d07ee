//! policy/v1 PodDisruptionBudgets and the Eviction API as the API serves
//! them, through an in-process kube client: the type served with its
//! validation and `/status`, and evictions refused with upstream's 429
//! when the budget has no disruption left, never overshooting it under
//! concurrent evictions.

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{EvictParams, PostParams};
use serde_json::json;

async fn cluster() -> kube::Client {
    let store = AnyStore::Memory(MemStore::new());
    let server = ApiServer::new(store, Clock::real(), ApiConfig::default()).await;
    let server = server.expect("the API server starts");
    in_process::client(&server, User::admin(), "default").expect("a client")
}

fn budget(name: &str, spec: serde_json::Value) -> PodDisruptionBudget {
    serde_json::from_value(
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                  "metadata": {"name": name}, "spec": spec}),
    )
    .expect("a PodDisruptionBudget")
}

/// Creates budget `name` over the app=web pods.
async fn create_budget(pdbs: &Api<PodDisruptionBudget>, name: &str, spec: serde_json::Value) {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": "web"}});
    pdbs.create(&PostParams::default(), &budget(name, spec))
        .await
        .expect("created");
}

/// Creates `n` pods labelled app=web, Running and Ready.
async fn ready_pods(client: &kube::Client, n: usize) {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for i in 0..n {
        let pod: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("web-{i}"), "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}))
        .expect("a Pod");
        let created = pods
            .create(&PostParams::default(), &pod)
            .await
            .expect("created");
        let mut status = created.clone();
        status.status = Some(
            serde_json::from_value(json!({"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}))
            .expect("a status"),
        );
        pods.replace_status(&format!("web-{i}"), &PostParams::default(), &status)
            .await
            .expect("status written");
    }
}

/// The budget's status as the disruption controller would write it.
async fn set_status(pdbs: &Api<PodDisruptionBudget>, name: &str, allowed: i32, healthy: i32) {
    let mut current = pdbs.get(name).await.expect("the budget");
    current.status = Some(
        serde_json::from_value(json!({"disruptionsAllowed": allowed,
            "currentHealthy": healthy, "desiredHealthy": healthy - allowed,
            "expectedPods": healthy, "observedGeneration": 1}))
        .expect("a status"),
    );
    pdbs.replace_status(name, &PostParams::default(), &current)
        .await
        .expect("status written");
}

#[tokio::test]
async fn budgets_are_served_validated_and_keep_status_apart() {
    let client = cluster().await;
    let pdbs: Api<PodDisruptionBudget> = Api::default_namespaced(client);
    let created = pdbs
        .create(
            &PostParams::default(),
            &budget(
                "web",
                json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
            ),
        )
        .await
        .expect("created");
    let status = created.status.expect("an empty status");
    assert_eq!(
        (status.disruptions_allowed, status.expected_pods),
        (Some(0), Some(0))
    );
    assert_eq!(
        created.spec.and_then(|s| s.unhealthy_pod_eviction_policy),
        None
    );

    let both = pdbs
        .create(
            &PostParams::default(),
            &budget("both", json!({"minAvailable": 1, "maxUnavailable": 1})),
        )
        .await;
    match both {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message
                    .contains("minAvailable and maxUnavailable cannot be both set"),
                "{}",
                s.message
            );
        }
        other => panic!("both set must be refused: {other:?}"),
    }

    set_status(&pdbs, "web", 1, 3).await;
    // A spec write keeps the status the controller wrote.
    let mut changed = pdbs.get("web").await.expect("the budget");
    changed.spec.as_mut().expect("a spec").min_available =
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1));
    changed.status = None;
    let replaced = pdbs
        .replace("web", &PostParams::default(), &changed)
        .await
        .expect("replaced");
    assert_eq!(replaced.status.and_then(|s| s.disruptions_allowed), Some(1));
    assert_eq!(replaced.metadata.generation, Some(2));
}

#[tokio::test]
async fn an_eviction_past_the_budget_is_refused_with_upstreams_429() {
    let client = cluster().await;
    ready_pods(&client, 2).await;
    let pdbs: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    create_budget(&pdbs, "web", json!({"minAvailable": 2})).await;
    set_status(&pdbs, "web", 0, 2).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    match pods.evict("web-0", &EvictParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (429, "TooManyRequests"));
            assert_eq!(
                s.message,
                "Cannot evict pod as it would violate the pod's disruption budget."
            );
        }
        other => panic!("the eviction must be refused: {other:?}"),
    }
    assert!(pods.get_opt("web-0").await.expect("a get").is_some());

    // A second budget over the same pods: upstream's 500.
    create_budget(&pdbs, "web2", json!({"maxUnavailable": 1})).await;
    match pods.evict("web-0", &EvictParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 500);
            assert_eq!(
                s.message,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            );
        }
        other => panic!("two budgets must be refused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_evictions_spend_exactly_the_budget() {
    const PODS: usize = 8;
    const ALLOWED: i32 = 3;
    let client = cluster().await;
    ready_pods(&client, PODS).await;
    let pdbs: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    create_budget(&pdbs, "web", json!({"minAvailable": 5})).await;
    set_status(&pdbs, "web", ALLOWED, PODS as i32).await;

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let evictions = (0..PODS).map(|i| {
        let pods = pods.clone();
        tokio::spawn(async move {
            pods.evict(&format!("web-{i}"), &EvictParams::default())
                .await
        })
    });
    let results = futures::future::join_all(evictions).await;
    let mut allowed = 0;
    for result in results {
        match result.expect("the task ran") {
            Ok(_) => allowed += 1,
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 429, "{}", s.message),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(allowed, ALLOWED, "exactly the budget's disruptions succeed");
    let left = pods
        .list(&Default::default())
        .await
        .expect("a list")
        .items
        .len();
    assert_eq!(left, PODS - ALLOWED as usize);
    let status = pdbs
        .get("web")
        .await
        .expect("the budget")
        .status
        .expect("a status");
    assert_eq!(status.disruptions_allowed, Some(0));
    assert_eq!(
        status.disrupted_pods.map(|d| d.len()),
        Some(ALLOWED as usize)
    );
}
