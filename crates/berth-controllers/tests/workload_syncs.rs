//! One sync of the ReplicaSet or Deployment controller at a time, against
//! the API server on the in-memory store (upstream's
//! `replica_set_test.go` and `deployment_controller_test.go`, which run a
//! sync over informer caches filled by hand and count what its fake
//! clients were asked). The caches here are filled from the server, the
//! sync runs once, and the test reads what it wrote; pod creates go
//! through a client that can refuse them past a limit, as upstream's
//! `FakePodControl.CreateLimit`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use berth_client::Change;
use berth_controllers::cache::ObjectCache;
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::{deployment, replicaset};
use berth_core::object_key::ObjectKey;
use berth_core::workloads::ownership::{controller_of, is_controlled_by};
use berth_testing::TestServer;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Resource;
use kube::api::{Api, ListParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Pod creates seen, and how many may succeed.
#[derive(Default)]
struct CreateLimit {
    calls: AtomicUsize,
    limit: Option<usize>,
}

/// `admin` with pod creates counted and, past `limit`, refused with a 403
/// as a quota would.
fn counting_client(admin: kube::Client, limit: Option<usize>) -> (kube::Client, Arc<CreateLimit>) {
    let creates = Arc::new(CreateLimit {
        calls: AtomicUsize::new(0),
        limit,
    });
    let counted = creates.clone();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let admin = admin.clone();
        let creates = counted.clone();
        async move {
            let is_pod_create =
                request.method() == http::Method::POST && request.uri().path().ends_with("/pods");
            if is_pod_create {
                let call = creates.calls.fetch_add(1, Ordering::SeqCst) + 1;
                if creates.limit.is_some_and(|limit| call > limit) {
                    let body = json!({
                        "kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "message": "exceeded quota: pods", "reason": "Forbidden", "code": 403,
                    });
                    let response = http::Response::builder()
                        .status(403)
                        .header("content-type", "application/json")
                        .body(kube::client::Body::from(body.to_string().into_bytes()))
                        .map_err(kube::Error::HttpError)?;
                    return Ok::<_, kube::Error>(response);
                }
            }
            admin.send(request).await
        }
    });
    (kube::Client::new(service, "default"), creates)
}

async fn create<K>(server: &TestServer, object: Value) -> K
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).expect("a valid object");
    Api::<K>::namespaced(server.admin.clone(), "default")
        .create(&PostParams::default(), &object)
        .await
        .expect("created")
}

/// Fills `cache` with every `K` of the server, as a watch's first list.
async fn fill<K>(server: &TestServer, cache: &RwLock<ObjectCache<K>>)
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let listed = Api::<K>::namespaced(server.admin.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("listed");
    let mut cache = cache.write().expect("the cache");
    for object in listed.items {
        cache.apply(Change::Upsert(object));
    }
    cache.apply(Change::Synced);
}

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}
    })
}

fn replica_set(name: &str, replicas: i32) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name),
        }
    })
}

fn pod(name: &str, app: &str, owner: Option<&ReplicaSet>) -> Value {
    let owners: Vec<Value> = owner
        .map(|rs| {
            json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": rs.metadata.name, "uid": rs.metadata.uid,
                "controller": true, "blockOwnerDeletion": true,
            })
        })
        .into_iter()
        .collect();
    json!({
        "metadata": {"name": name, "labels": {"app": app}, "ownerReferences": owners},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}
    })
}

async fn pods(server: &TestServer) -> Vec<Pod> {
    Api::<Pod>::namespaced(server.admin.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
}

async fn events(server: &TestServer, reason: &str) -> Vec<String> {
    Api::<Event>::namespaced(server.admin.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| e.message.unwrap_or_default())
        .collect()
}

/// A ReplicaSet controller's state over `server`, with pod creates
/// counted (and limited).
async fn replica_set_context(
    server: &TestServer,
    limit: Option<usize>,
) -> (replicaset::Context, Arc<CreateLimit>) {
    let (client, creates) = counting_client(server.admin.clone(), limit);
    let ctx = replicaset::Context::new(client, server.clock.clone(), ControllerMetrics::default());
    fill(server, &ctx.replica_sets).await;
    fill(server, &ctx.pods).await;
    (ctx, creates)
}

/// Lets the Event writer run (it writes in the background).
async fn settle() {
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
}

/// Upstream `TestSyncReplicaSetDoesNothing`, `TestSyncReplicaSetCreateFailures`,
/// `TestDoNotPatchPodWithOtherControlRef`, `TestDoNotAdoptOrCreateIfBeingDeleted`
/// and the adoption cases of `TestPatchPodFails`: one sync's creates,
/// deletes and adoptions.
#[tokio::test(start_paused = true)]
async fn one_replica_set_sync() {
    struct Case {
        name: &'static str,
        replicas: i32,
        /// Pods made first: (name, owned by the ReplicaSet, by someone else).
        pods: &'static [(&'static str, bool, bool)],
        rs_being_deleted: bool,
        create_limit: Option<usize>,
        want_create_calls: usize,
        want_owned: usize,
        want_failure: Option<&'static str>,
        /// Creates and deletes still expected (nothing feeds the cache).
        want_expectations: Option<(i64, i64)>,
    }
    for case in [
        Case {
            name: "2 pods for 2 replicas: nothing to do",
            replicas: 2,
            pods: &[("a", true, false), ("b", true, false)],
            rs_being_deleted: false,
            create_limit: None,
            want_create_calls: 0,
            want_owned: 2,
            want_failure: None,
            want_expectations: None,
        },
        Case {
            name: "100 wanted, creates refused past 10: slow start stops at the failing batch",
            replicas: 100,
            pods: &[],
            rs_being_deleted: false,
            create_limit: Some(10),
            // Batches of 1, 2, 4, then 8 of which 3 succeed.
            want_create_calls: 15,
            want_owned: 10,
            want_failure: Some("FailedCreate"),
            want_expectations: Some((10, 0)),
        },
        Case {
            name: "an orphan selected is adopted, and only the rest created",
            replicas: 2,
            pods: &[("orphan", false, false)],
            rs_being_deleted: false,
            create_limit: None,
            want_create_calls: 1,
            want_owned: 2,
            want_failure: None,
            want_expectations: Some((1, 0)),
        },
        Case {
            name: "a pod another controller owns is left alone",
            replicas: 1,
            pods: &[("theirs", false, true)],
            rs_being_deleted: false,
            create_limit: None,
            want_create_calls: 1,
            want_owned: 1,
            want_failure: None,
            want_expectations: Some((1, 0)),
        },
        Case {
            name: "3 pods for 1 replica: 2 deleted",
            replicas: 1,
            pods: &[("a", true, false), ("b", true, false), ("c", true, false)],
            rs_being_deleted: false,
            create_limit: None,
            want_create_calls: 0,
            want_owned: 1,
            want_failure: None,
            want_expectations: Some((0, 2)),
        },
        Case {
            name: "a ReplicaSet being deleted neither adopts nor creates",
            replicas: 2,
            pods: &[("orphan", false, false)],
            rs_being_deleted: true,
            create_limit: None,
            want_create_calls: 0,
            want_owned: 0,
            want_failure: None,
            want_expectations: None,
        },
    ] {
        let server = TestServer::start().await;
        let rs: ReplicaSet = create(&server, replica_set("web", case.replicas)).await;
        let other: ReplicaSet = create(&server, replica_set("other", 0)).await;
        for (name, ours, theirs) in case.pods {
            let owner = match (ours, theirs) {
                (true, _) => Some(&rs),
                (_, true) => Some(&other),
                _ => None,
            };
            create::<Pod>(&server, pod(name, "web", owner)).await;
        }
        let (ctx, creates) = replica_set_context(&server, case.create_limit).await;
        if case.rs_being_deleted {
            let mut deleting = rs.clone();
            deleting.metadata.deletion_timestamp = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(server.clock.now()),
            );
            ctx.replica_sets
                .write()
                .expect("cache")
                .apply(Change::Upsert(deleting));
        }
        let key = ObjectKey::new("default", "web");
        let result = replicaset::sync::sync_replica_set(&ctx, &key).await;
        assert_eq!(
            result.is_err(),
            case.want_failure.is_some(),
            "{}: {result:?}",
            case.name
        );
        assert_eq!(
            creates.calls.load(Ordering::SeqCst),
            case.want_create_calls,
            "{}: create calls",
            case.name
        );
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        let owned = pods(&server)
            .await
            .iter()
            .filter(|p| {
                is_controlled_by(&p.metadata, &uid) && p.metadata.deletion_timestamp.is_none()
            })
            .count();
        assert_eq!(owned, case.want_owned, "{}: pods owned", case.name);
        let theirs = pods(&server)
            .await
            .into_iter()
            .filter(|p| p.metadata.name.as_deref() == Some("theirs"))
            .filter_map(|p| controller_of(&p.metadata).map(|r| r.name.clone()))
            .collect::<Vec<_>>();
        assert!(
            theirs.iter().all(|n| n == "other"),
            "{}: {theirs:?}",
            case.name
        );
        // Every create and delete asked for is accounted for: either seen
        // (nothing here feeds the cache) or given back on failure.
        let expected = ctx
            .expectations
            .lock()
            .expect("expectations")
            .get("default/web");
        let status = Api::<ReplicaSet>::namespaced(server.admin.clone(), "default")
            .get("web")
            .await
            .expect("rs")
            .status
            .unwrap_or_default();
        let failure = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_.as_deref() == Some("ReplicaFailure"))
            .and_then(|c| c.reason.clone());
        assert_eq!(
            failure.as_deref(),
            case.want_failure,
            "{}: condition",
            case.name
        );
        assert_eq!(
            expected, case.want_expectations,
            "{}: expectations",
            case.name
        );
    }
}

/// Upstream `TestSyncReplicaSetDormancy` and `TestRSSyncExpectations`:
/// creates asked for and not yet seen hold back the next sync (only the
/// status is written); seen, or given up on after five minutes, the
/// ReplicaSet is managed again.
#[tokio::test(start_paused = true)]
async fn expectations_hold_back_the_next_sync() {
    let server = TestServer::start().await;
    let rs: ReplicaSet = create(&server, replica_set("web", 2)).await;
    create::<Pod>(&server, pod("a", "web", Some(&rs))).await;
    let (ctx, creates) = replica_set_context(&server, None).await;
    let key = ObjectKey::new("default", "web");
    let sync = || replicaset::sync::sync_replica_set(&ctx, &key);
    sync().await.expect("first sync");
    assert_eq!(creates.calls.load(Ordering::SeqCst), 1);
    // The cache has not seen the new pod: without expectations this sync
    // would create it again.
    sync().await.expect("dormant sync");
    assert_eq!(creates.calls.load(Ordering::SeqCst), 1, "no second create");
    // Past the expectations' timeout the stale view is acted on again.
    tokio::time::sleep(std::time::Duration::from_secs(5 * 60 + 1)).await;
    sync().await.expect("sync after the timeout");
    assert_eq!(creates.calls.load(Ordering::SeqCst), 2);
    // Seen in the cache (both created pods), the count is right.
    fill(&server, &ctx.pods).await;
    ctx.expectations
        .lock()
        .expect("expectations")
        .delete("default/web");
    sync().await.expect("sync with the pods seen");
    let active = pods(&server)
        .await
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count();
    assert_eq!(active, 2, "the extra pod is deleted again");
    settle().await;
    assert_eq!(events(&server, "SuccessfulCreate").await.len(), 2);
    assert_eq!(events(&server, "SuccessfulDelete").await.len(), 1);
}

/// Upstream `TestControllerBurstReplicas`: at most 500 creates per sync.
#[tokio::test(start_paused = true)]
async fn a_sync_creates_at_most_the_burst() {
    let server = TestServer::start().await;
    create::<ReplicaSet>(&server, replica_set("web", 600)).await;
    let (ctx, creates) = replica_set_context(&server, None).await;
    let key = ObjectKey::new("default", "web");
    replicaset::sync::sync_replica_set(&ctx, &key)
        .await
        .expect("sync");
    assert_eq!(creates.calls.load(Ordering::SeqCst), 500);
    assert_eq!(
        ctx.expectations
            .lock()
            .expect("expectations")
            .get("default/web"),
        Some((500, 0))
    );
}

fn deployment_object(name: &str, selector: Value) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 3,
            "selector": selector,
            "template": template(name),
            "progressDeadlineSeconds": 600,
        }
    })
}

async fn deployment_context(server: &TestServer) -> deployment::Context {
    let ctx = deployment::Context::new(
        server.admin.clone(),
        server.clock.clone(),
        &ControllerMetrics::default(),
    );
    fill(server, &ctx.deployments).await;
    fill(server, &ctx.replica_sets).await;
    fill(server, &ctx.pods).await;
    ctx
}

/// The Deployment as the controller's cache has it.
fn cached_deployment(ctx: &deployment::Context, key: &ObjectKey) -> Arc<Deployment> {
    ctx.deployments
        .read()
        .expect("cache")
        .get(key)
        .expect("cached")
}

/// A server with the Deployment `web`, and a controller's state over it.
async fn with_web_deployment() -> (TestServer, deployment::Context) {
    let server = TestServer::start().await;
    create::<Deployment>(
        &server,
        deployment_object("web", json!({"matchLabels": {"app": "web"}})),
    )
    .await;
    let ctx = deployment_context(&server).await;
    (server, ctx)
}

async fn replica_sets(server: &TestServer) -> Vec<ReplicaSet> {
    Api::<ReplicaSet>::namespaced(server.admin.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("replica sets")
        .items
}

/// Upstream `TestSyncDeploymentCreatesReplicaSet`: a new Deployment gets
/// its ReplicaSet `<name>-<hash>` (revision 1, all replicas at once: no
/// old pods to surge over), the ScalingReplicaSet Event, its revision
/// annotation and the NewReplicaSetCreated condition.
#[tokio::test(start_paused = true)]
async fn a_new_deployment_gets_its_replica_set() {
    let (server, ctx) = with_web_deployment().await;
    let key = ObjectKey::new("default", "web");
    deployment::sync::sync_deployment(&ctx, &key)
        .await
        .expect("sync");
    let rss = replica_sets(&server).await;
    assert_eq!(rss.len(), 1);
    let rs = &rss[0];
    let hash = rs
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("pod-template-hash"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(rs.metadata.name, Some(format!("web-{hash}")));
    assert_eq!(rs.spec.replicas, Some(3));
    assert_eq!(
        rs.spec
            .selector
            .match_labels
            .as_ref()
            .and_then(|l| l.get("pod-template-hash")),
        Some(&hash)
    );
    let annotations = rs.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/revision")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/desired-replicas")
            .map(String::as_str),
        Some("3")
    );
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/max-replicas")
            .map(String::as_str),
        Some("4")
    );
    let d = Api::<Deployment>::namespaced(server.admin.clone(), "default")
        .get("web")
        .await
        .expect("deployment");
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision")),
        Some(&"1".to_string())
    );
    let progressing = d
        .status
        .unwrap_or_default()
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .and_then(|c| c.reason);
    assert_eq!(progressing.as_deref(), Some("NewReplicaSetCreated"));
    settle().await;
    assert_eq!(
        events(&server, "ScalingReplicaSet").await,
        vec![format!("Scaled up replica set web-{hash} from 0 to 3")]
    );
}

/// Upstream `TestDontSyncDeploymentsWithEmptyPodSelector` and
/// `TestSyncDeploymentDontDoAnythingDuringDeletion`: no ReplicaSet for a
/// Deployment selecting everything (a Warning instead) or being deleted.
#[tokio::test(start_paused = true)]
async fn deployments_that_must_not_roll_out() {
    let (server, ctx) = with_web_deployment().await;
    // The API refuses an empty selector; the controller is given one.
    let key = ObjectKey::new("default", "web");
    let cached = cached_deployment(&ctx, &key);
    let mut everything = Deployment::clone(&cached);
    everything.spec.selector = Default::default();
    ctx.deployments
        .write()
        .expect("cache")
        .apply(Change::Upsert(everything));
    deployment::sync::sync_deployment(&ctx, &key)
        .await
        .expect("sync");
    assert!(replica_sets(&server).await.is_empty());
    settle().await;
    assert_eq!(
        events(&server, "SelectingAll").await,
        vec!["This deployment is selecting all pods. A non-empty selector is required."]
    );

    // The watch would have brought the status the first sync wrote.
    fill(&server, &ctx.deployments).await;
    let cached = cached_deployment(&ctx, &key);
    let mut deleting = Deployment::clone(&cached);
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(server.clock.now()),
    );
    ctx.deployments
        .write()
        .expect("cache")
        .apply(Change::Upsert(deleting));
    deployment::sync::sync_deployment(&ctx, &key)
        .await
        .expect("sync");
    assert!(
        replica_sets(&server).await.is_empty(),
        "no rollout while deleted"
    );
}

/// Upstream `TestGetReplicaSetsForDeployment` and
/// `TestGetReplicaSetsForDeploymentAdoptRelease`: an orphan ReplicaSet
/// the Deployment selects is adopted, one it owns but no longer selects
/// is released, another's is left alone.
#[tokio::test(start_paused = true)]
async fn a_deployment_adopts_and_releases_replica_sets() {
    let server = TestServer::start().await;
    let d: Deployment = create(
        &server,
        deployment_object("web", json!({"matchLabels": {"app": "web"}})),
    )
    .await;
    let other: Deployment = create(
        &server,
        deployment_object("other", json!({"matchLabels": {"app": "other"}})),
    )
    .await;
    let owned_by = |owner: &Deployment| {
        json!([{
            "apiVersion": "apps/v1", "kind": "Deployment",
            "name": owner.metadata.name, "uid": owner.metadata.uid,
            "controller": true, "blockOwnerDeletion": true,
        }])
    };
    let rs = |name: &str, app: &str, owners: Value| {
        json!({
            "metadata": {"name": name, "labels": {"app": app}, "ownerReferences": owners},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": app}},
                "template": template(app),
            }
        })
    };
    create::<ReplicaSet>(&server, rs("orphan", "web", json!([]))).await;
    create::<ReplicaSet>(&server, rs("strayed", "elsewhere", owned_by(&d))).await;
    create::<ReplicaSet>(&server, rs("theirs", "web", owned_by(&other))).await;
    let ctx = deployment_context(&server).await;
    deployment::sync::sync_deployment(&ctx, &ObjectKey::new("default", "web"))
        .await
        .expect("sync");
    let uid = d.metadata.uid.clone().unwrap_or_default();
    let owner_of = |name: &str, rss: &[ReplicaSet]| {
        rss.iter()
            .find(|rs| rs.metadata.name.as_deref() == Some(name))
            .and_then(|rs| controller_of(&rs.metadata).map(|r| r.uid.clone()))
    };
    let rss = replica_sets(&server).await;
    assert_eq!(owner_of("orphan", &rss), Some(uid.clone()), "adopted");
    assert_eq!(owner_of("strayed", &rss), None, "released");
    assert_eq!(
        owner_of("theirs", &rss),
        other.metadata.uid.clone(),
        "left alone"
    );
}

/// `getNewReplicaSet`'s hash collision: a ReplicaSet of the new name that
/// is not this Deployment's raises `collisionCount`, and the next sync
/// creates its ReplicaSet under another name.
#[tokio::test(start_paused = true)]
async fn a_hash_collision_raises_the_collision_count() {
    let (server, ctx) = with_web_deployment().await;
    let key = ObjectKey::new("default", "web");
    let cached = cached_deployment(&ctx, &key);
    let intended = berth_core::workloads::deployment::new_replica_set(&cached, &[])
        .expect("the new ReplicaSet");
    let squatter = json!({
        "metadata": {"name": intended.metadata.name, "labels": {"app": "squatter"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "squatter"}},
            "template": template("squatter"),
        }
    });
    create::<ReplicaSet>(&server, squatter).await;
    let ctx = deployment_context(&server).await;
    let failed = deployment::sync::sync_deployment(&ctx, &key).await;
    assert!(failed.is_err(), "the create meets the squatter");
    let d = Api::<Deployment>::namespaced(server.admin.clone(), "default")
        .get("web")
        .await
        .expect("deployment");
    assert_eq!(d.status.as_ref().and_then(|s| s.collision_count), Some(1));
    let ctx = deployment_context(&server).await;
    deployment::sync::sync_deployment(&ctx, &key)
        .await
        .expect("the second sync");
    let names: Vec<Option<String>> = replica_sets(&server)
        .await
        .into_iter()
        .filter(|rs| controller_of(&rs.metadata).is_some())
        .map(|rs| rs.metadata.name)
        .collect();
    assert_eq!(names.len(), 1);
    assert_ne!(names[0], intended.metadata.name);
}
