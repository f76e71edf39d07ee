//! The REST API through its router, in process: status codes and Status
//! bodies for every class of failure, the write semantics (optimistic
//! concurrency, dry run, generateName, binding, eviction, graceful
//! deletion), and lists and watches with selectors and resourceVersions.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::server::router;
use berth_core::clock::Clock;
use berth_store::{AnyStore, RedbStore};
use futures::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const ADMIN: &str = "admin-token";
const NODE1: &str = "node1-token";
const JOIN: &str = "join-token";

struct Api {
    server: Arc<ApiServer>,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn api_with(config: ApiConfig) -> Api {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("berth-api-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = AnyStore::Redb(RedbStore::open(&dir).expect("store opens"));
    let server = ApiServer::new(store, Clock::real(), config)
        .await
        .expect("server starts");
    server.auth.add_token(ADMIN, User::admin());
    server.auth.add_token(NODE1, User::node("node1"));
    server.auth.add_token(JOIN, User::bootstrapper());
    for _ in 0..200 {
        if server.is_ready().await {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Api {
        server,
        _dir: TempDir(dir),
    }
}

async fn api() -> Api {
    api_with(ApiConfig::default()).await
}

impl Api {
    async fn call(
        &self,
        token: Option<&str>,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", content_type);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(Body::from(body)).expect("request");
        let response = router(self.server.clone())
            .oneshot(request)
            .await
            .expect("response");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    async fn req(&self, method: &str, uri: &str, body: Value) -> (StatusCode, Value) {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        self.call(Some(ADMIN), method, uri, "application/json", bytes)
            .await
    }

    async fn create(&self, uri: &str, body: Value) -> Value {
        let (status, value) = self.req("POST", uri, body).await;
        assert_eq!(status, StatusCode::CREATED, "{value}");
        value
    }
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

fn assert_status(value: &Value, code: u16, reason: &str) {
    assert_eq!(value["kind"], "Status", "{value}");
    assert_eq!(value["code"], code, "{value}");
    assert_eq!(value["reason"], reason, "{value}");
}

#[tokio::test]
async fn failures_are_statuses_with_the_right_code() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    api.create(pods, pod("web")).await;
    api.create("/api/v1/nodes", node("node2")).await;

    let (s, v) = api
        .call(None, "GET", pods, "application/json", Vec::new())
        .await;
    assert_eq!(s, 401);
    assert_status(&v, 401, "Unauthorized");
    let (s, _) = api
        .call(Some("wrong"), "GET", pods, "application/json", Vec::new())
        .await;
    assert_eq!(s, 401);

    let (s, v) = api
        .call(
            Some(NODE1),
            "PATCH",
            "/api/v1/nodes/node2",
            "application/merge-patch+json",
            br#"{"metadata":{"labels":{"a":"b"}}}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 403);
    assert_status(&v, 403, "Forbidden");
    assert_eq!(
        v["message"],
        "nodes \"node2\" is forbidden: User \"system:node:node1\" cannot patch resource \"nodes\" in API group \"\" at the cluster scope"
    );

    let (s, v) = api.req("GET", &format!("{pods}/nope"), Value::Null).await;
    assert_eq!(s, 404);
    assert_status(&v, 404, "NotFound");
    assert_eq!(v["message"], "pods \"nope\" not found");
    let (s, v) = api
        .req("GET", "/apis/apps/v1/deployments", Value::Null)
        .await;
    assert_eq!(s, 404);
    assert_eq!(v["kind"], "Status");

    let (s, v) = api.req("POST", pods, pod("web")).await;
    assert_eq!(s, 409);
    assert_status(&v, 409, "AlreadyExists");

    let (s, v) = api
        .call(
            Some(ADMIN),
            "POST",
            pods,
            "application/json",
            b"{not json".to_vec(),
        )
        .await;
    assert_eq!(s, 400);
    assert_status(&v, 400, "BadRequest");

    let huge = vec![b' '; 3 * 1024 * 1024 + 1];
    let (s, v) = api
        .call(Some(ADMIN), "POST", pods, "application/json", huge)
        .await;
    assert_eq!(s, 413);
    assert_status(&v, 413, "RequestEntityTooLarge");

    let mut bad = pod("bad");
    bad["spec"]["tolerations"] = json!([{"key": "k", "operator": "Gt", "value": "0950", "effect": "NoSchedule"}, {"key": "bad key", "operator": "Exists"}]);
    let (s, v) = api.req("POST", pods, bad).await;
    assert_eq!(s, 422);
    assert_status(&v, 422, "Invalid");
    let fields: Vec<&str> = v["details"]["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
        .unwrap_or_default();
    assert!(fields.contains(&"spec.tolerations[0].value"), "{v}");
    assert!(fields.contains(&"spec.tolerations[1].key"), "{v}");

    let (s, v) = api
        .req(
            "GET",
            &format!("{pods}?fieldSelector=spec.bogus%3Dx"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(v["message"], "field label not supported: spec.bogus");
    let (s, v) = api
        .req(
            "GET",
            &format!("{pods}?labelSelector=a%20in%20(b"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 400, "{v}");
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields() {
    let api = api().await;
    let mut typo = pod("typo");
    typo["spec"]["containers"][0]["imagee"] = json!("x");
    let pods = "/api/v1/namespaces/default/pods";
    let (s, v) = api
        .req(
            "POST",
            &format!("{pods}?fieldValidation=Strict"),
            typo.clone(),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(
        v["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].imagee\""
    );
    // Without Strict the field is dropped, as upstream's Ignore/Warn do.
    let (s, v) = api.req("POST", pods, typo).await;
    assert_eq!(s, 201, "{v}");
    assert!(v["spec"]["containers"][0].get("imagee").is_none());
    let (s, v) = api
        .call(
            Some(ADMIN),
            "PATCH",
            &format!("{pods}/typo?fieldValidation=Strict"),
            "application/merge-patch+json",
            br#"{"spec":{"bogus":1}}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    let (s, _) = api
        .req(
            "POST",
            &format!("{pods}?fieldValidation=Sometimes"),
            pod("x"),
        )
        .await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn updates_are_compare_and_swap_on_resource_version() {
    let api = api().await;
    let created = api.create("/api/v1/nodes", node("n1")).await;
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let mut first = created.clone();
    first["metadata"]["labels"] = json!({"a": "1"});
    let (s, updated) = api.req("PUT", "/api/v1/nodes/n1", first).await;
    assert_eq!(s, 200, "{updated}");
    assert_ne!(updated["metadata"]["resourceVersion"], rv);
    let mut stale = created.clone();
    stale["metadata"]["labels"] = json!({"a": "2"});
    let (s, v) = api.req("PUT", "/api/v1/nodes/n1", stale).await;
    assert_eq!(s, 409);
    assert_status(&v, 409, "Conflict");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("the object has been modified"))
    );
    // The name in the body must be the name in the URL.
    let mut renamed = updated.clone();
    renamed["metadata"]["name"] = json!("n2");
    let (s, _) = api.req("PUT", "/api/v1/nodes/n1", renamed).await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn dry_run_and_generate_name() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    let (s, v) = api
        .req("POST", &format!("{pods}?dryRun=All"), pod("ghost"))
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, _) = api.req("GET", &format!("{pods}/ghost"), Value::Null).await;
    assert_eq!(s, 404, "a dry run writes nothing");
    let generated = api.create(pods, json!({"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})).await;
    let name = generated["metadata"]["name"].as_str().unwrap_or("");
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    assert!(
        generated["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );
    // Creating in a namespace that does not exist is a 404 for the namespace.
    let (s, v) = api
        .req("POST", "/api/v1/namespaces/nowhere/pods", pod("x"))
        .await;
    assert_eq!(s, 404);
    assert_eq!(v["message"], "namespaces \"nowhere\" not found");
}

#[tokio::test]
async fn binding_sets_node_name_and_pod_scheduled_once() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    api.create(pods, pod("web")).await;
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}, "target": {"kind": "Node", "name": "node1"}});
    let (s, v) = api
        .req("POST", &format!("{pods}/web/binding"), binding.clone())
        .await;
    assert_eq!(s, 201, "{v}");
    let (_, bound) = api.req("GET", &format!("{pods}/web"), Value::Null).await;
    assert_eq!(bound["spec"]["nodeName"], "node1");
    let scheduled = bound["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(scheduled["status"], "True");
    let (s, v) = api
        .req("POST", &format!("{pods}/web/binding"), binding)
        .await;
    assert_eq!(s, 409);
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("already assigned to node")),
        "{v}"
    );
}

#[tokio::test]
async fn bound_pods_are_deleted_gracefully_and_evictions_delete() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    let mut bound = pod("bound");
    bound["spec"]["nodeName"] = json!("node1");
    api.create(pods, bound).await;
    let (s, v) = api
        .req("DELETE", &format!("{pods}/bound"), Value::Null)
        .await;
    assert_eq!(s, 200);
    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 30);
    let (s, _) = api.req("GET", &format!("{pods}/bound"), Value::Null).await;
    assert_eq!(s, 200, "still there until the agent confirms");
    // The agent confirms with grace period 0.
    let (s, _) = api
        .call(
            Some(NODE1),
            "DELETE",
            &format!("{pods}/bound"),
            "application/json",
            br#"{"gracePeriodSeconds":0}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = api.req("GET", &format!("{pods}/bound"), Value::Null).await;
    assert_eq!(s, 404);

    // An unbound pod goes at once, also through an eviction.
    api.create(pods, pod("loose")).await;
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "loose", "namespace": "default"}});
    let (s, v) = api
        .req("POST", &format!("{pods}/loose/eviction"), eviction)
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, _) = api.req("GET", &format!("{pods}/loose"), Value::Null).await;
    assert_eq!(s, 404);

    // Preconditions.
    api.create(pods, pod("pre")).await;
    let (s, v) = api
        .req(
            "DELETE",
            &format!("{pods}/pre"),
            json!({"preconditions": {"uid": "not-it"}}),
        )
        .await;
    assert_eq!(s, 409);
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("Precondition failed: UID in precondition: not-it")),
        "{v}"
    );
}

#[tokio::test]
async fn lists_filter_by_selectors_and_page_with_continue() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    for i in 0..5 {
        let mut p = pod(&format!("p{i}"));
        if i % 2 == 0 {
            p["spec"]["nodeName"] = json!("node1");
            p["metadata"]["labels"] = json!({"app": "db"});
        }
        api.create(pods, p).await;
    }
    let names = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .map(|i| {
                i.iter()
                    .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (_, all) = api.req("GET", pods, Value::Null).await;
    assert_eq!(all["kind"], "PodList");
    assert_eq!(names(&all).len(), 5);
    let (_, db) = api
        .req(
            "GET",
            &format!("{pods}?labelSelector=app%3Ddb"),
            Value::Null,
        )
        .await;
    assert_eq!(names(&db), ["p0", "p2", "p4"]);
    let (_, on_node) = api
        .req(
            "GET",
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1",
            Value::Null,
        )
        .await;
    assert_eq!(names(&on_node), ["p0", "p2", "p4"]);
    let (_, web) = api
        .req(
            "GET",
            &format!("{pods}?labelSelector=app%20notin%20(db)"),
            Value::Null,
        )
        .await;
    assert_eq!(names(&web), ["p1", "p3"]);

    let (_, page1) = api
        .req("GET", &format!("{pods}?limit=2"), Value::Null)
        .await;
    assert_eq!(names(&page1), ["p0", "p1"]);
    let token = page1["metadata"]["continue"]
        .as_str()
        .expect("continue token")
        .to_string();
    let (_, page2) = api
        .req(
            "GET",
            &format!("{pods}?limit=2&continue={token}"),
            Value::Null,
        )
        .await;
    assert_eq!(names(&page2), ["p2", "p3"]);
    assert_eq!(
        page2["metadata"]["resourceVersion"],
        page1["metadata"]["resourceVersion"]
    );
    let (s, _) = api
        .req(
            "GET",
            &format!("{pods}?limit=2&continue=garbage"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 400);
}

async fn watch_lines(api: &Api, uri: &str, count: usize) -> Vec<Value> {
    let request = Request::builder()
        .uri(uri)
        .header("authorization", format!("Bearer {ADMIN}"))
        .body(Body::empty())
        .expect("request");
    let response = router(api.server.clone())
        .oneshot(request)
        .await
        .expect("response");
    assert_eq!(response.status(), 200);
    let mut stream = response.into_body().into_data_stream();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    while events.len() < count {
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next()).await;
        let Ok(Some(Ok(chunk))) = next else { break };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                events.push(v);
            }
        }
    }
    events
}

#[tokio::test]
async fn watches_resume_from_a_resource_version_in_order() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    let first = api.create(pods, pod("a")).await;
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    api.create(pods, pod("b")).await;
    api.call(
        Some(ADMIN),
        "PATCH",
        &format!("{pods}/a"),
        "application/merge-patch+json",
        br#"{"metadata":{"labels":{"v":"2"}}}"#.to_vec(),
    )
    .await;
    api.req("DELETE", &format!("{pods}/b"), Value::Null).await;
    let events = watch_lines(
        &api,
        &format!("{pods}?watch=true&resourceVersion={rv}&timeoutSeconds=5"),
        3,
    )
    .await;
    let seen: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED".to_string(), "b".to_string()),
            ("MODIFIED".into(), "a".into()),
            ("DELETED".into(), "b".into())
        ]
    );
    let rvs: Vec<i64> = events
        .iter()
        .filter_map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()?
                .parse()
                .ok()
        })
        .collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");

    // From "now" (no resourceVersion): the current objects as ADDED.
    let events = watch_lines(&api, &format!("{pods}?watch=true&timeoutSeconds=5"), 1).await;
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "a");
}

#[tokio::test]
async fn a_watch_from_before_the_history_is_gone() {
    let config = ApiConfig {
        watch_cache: berth_apiserver::cache::CacheLimits {
            history_events: 2,
            ..Default::default()
        },
        ..ApiConfig::default()
    };
    let api = api_with(config).await;
    let pods = "/api/v1/namespaces/default/pods";
    let first = api.create(pods, pod("a")).await;
    let rv: i64 = first["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .expect("rv");
    for name in ["b", "c", "d", "e"] {
        api.create(pods, pod(name)).await;
    }
    // Let the cache see every write.
    let (_, _) = api.req("GET", pods, Value::Null).await;
    let (s, v) = api
        .req(
            "GET",
            &format!("{pods}?watch=true&resourceVersion={}", rv - 1),
            Value::Null,
        )
        .await;
    assert_eq!(s, 410, "{v}");
    assert_status(&v, 410, "Expired");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("too old resource version:"))
    );
}

#[tokio::test]
async fn node_agents_write_only_their_own_node() {
    let api = api().await;
    let (s, v) = api
        .call(
            Some(NODE1),
            "POST",
            "/api/v1/nodes",
            "application/json",
            node("node1").to_string().into_bytes(),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert!(
        v["spec"]["taints"].as_array().is_some_and(|t| t
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/not-ready" && t["effect"] == "NoSchedule")),
        "TaintNodesByCondition: {v}"
    );
    let (s, v) = api
        .call(
            Some(NODE1),
            "POST",
            "/api/v1/nodes",
            "application/json",
            node("node9").to_string().into_bytes(),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node1"}, "spec": {"holderIdentity": "node1", "leaseDurationSeconds": 40}});
    let (s, v) = api
        .call(
            Some(NODE1),
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            "application/json",
            lease.to_string().into_bytes(),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let mut other = lease.clone();
    other["metadata"]["name"] = json!("node2");
    let (s, _) = api
        .call(
            Some(NODE1),
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            "application/json",
            other.to_string().into_bytes(),
        )
        .await;
    assert_eq!(s, 403);
}

#[tokio::test]
async fn events_are_served_in_both_api_versions() {
    let api = api().await;
    let v1 = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web"},
        "reason": "TaintManagerEviction", "note": "Marking for deletion Pod default/web",
        "type": "Normal", "action": "Delete",
        "reportingController": "taint-eviction-controller", "reportingInstance": "berth",
    });
    let created = api
        .create("/apis/events.k8s.io/v1/namespaces/default/events", v1)
        .await;
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "Marking for deletion Pod default/web");
    let (s, core) = api
        .req(
            "GET",
            "/api/v1/namespaces/default/events/web.1",
            Value::Null,
        )
        .await;
    assert_eq!(s, 200, "{core}");
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "Marking for deletion Pod default/web");
    assert_eq!(core["involvedObject"]["name"], "web");
    let (_, list) = api.req("GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb,reason%3DTaintManagerEviction", Value::Null).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    let (_, list) = api
        .req("GET", "/apis/events.k8s.io/v1/events", Value::Null)
        .await;
    assert_eq!(list["apiVersion"], "events.k8s.io/v1");
    assert_eq!(list["items"][0]["regarding"]["name"], "web");
    let (s, patched) = api
        .call(
            Some(ADMIN),
            "PATCH",
            "/apis/events.k8s.io/v1/namespaces/default/events/web.1",
            "application/merge-patch+json",
            br#"{"note":"changed"}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 200, "{patched}");
    assert_eq!(patched["note"], "changed");
    let events = watch_lines(
        &api,
        "/apis/events.k8s.io/v1/namespaces/default/events?watch=true&timeoutSeconds=5",
        1,
    )
    .await;
    assert_eq!(
        events[0]["object"]["apiVersion"], "events.k8s.io/v1",
        "{events:?}"
    );
    assert_eq!(events[0]["object"]["note"], "changed");
}

#[tokio::test]
async fn the_join_token_buys_one_node_credential_per_name_and_nothing_else() {
    let api = api().await;
    let path = "/berth/v1/node-credential";
    let (s, v) = api
        .call(
            Some(JOIN),
            "POST",
            path,
            "application/json",
            br#"{"nodeName":"worker-7"}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["user"], "system:node:worker-7");
    let token = v["token"].as_str().expect("token").to_string();
    let (s, v) = api
        .call(
            Some(&token),
            "POST",
            "/api/v1/nodes",
            "application/json",
            node("worker-7").to_string().into_bytes(),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = api
        .call(
            Some(JOIN),
            "POST",
            path,
            "application/json",
            br#"{"nodeName":"worker-7"}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 409, "a second agent cannot hold the same name: {v}");
    let (s, _) = api
        .call(
            Some(JOIN),
            "POST",
            path,
            "application/json",
            br#"{"nodeName":"Not_A_Name"}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 422);
    let (s, _) = api
        .call(
            Some(JOIN),
            "GET",
            "/api/v1/pods",
            "application/json",
            Vec::new(),
        )
        .await;
    assert_eq!(s, 403, "the join token reads nothing");
    let (s, _) = api
        .call(
            Some(NODE1),
            "POST",
            path,
            "application/json",
            br#"{"nodeName":"worker-8"}"#.to_vec(),
        )
        .await;
    assert_eq!(s, 403, "a node cannot mint credentials");
}

/// Every taint and toleration rule of the foundation, reached through the
/// API: a 422 Status whose causes name the field.
#[tokio::test]
async fn every_taint_and_toleration_rule_is_a_422_with_the_field() {
    let api = api().await;
    let taint_cases: &[(&str, Value, &str)] = &[
        (
            "bad key",
            json!([{"key": "bad key", "effect": "NoSchedule"}]),
            "spec.taints[0].key",
        ),
        (
            "empty key",
            json!([{"key": "", "effect": "NoSchedule"}]),
            "spec.taints[0].key",
        ),
        (
            "bad value",
            json!([{"key": "k", "value": "some\\bad\\value", "effect": "NoSchedule"}]),
            "spec.taints[0].value",
        ),
        (
            "missing effect",
            json!([{"key": "k"}]),
            "spec.taints[0].effect",
        ),
        (
            "unsupported effect",
            json!([{"key": "k", "effect": "NoScheduleNoAdmit"}]),
            "spec.taints[0].effect",
        ),
        (
            "duplicate key and effect",
            json!([{"key": "k", "value": "a", "effect": "NoSchedule"}, {"key": "k", "value": "b", "effect": "NoSchedule"}]),
            "spec.taints[1]",
        ),
    ];
    for (i, (name, taints, field)) in taint_cases.iter().enumerate() {
        let mut n = node(&format!("n{i}"));
        n["spec"] = json!({"taints": taints});
        let (s, v) = api.req("POST", "/api/v1/nodes", n).await;
        assert_eq!(s, 422, "{name}: {v}");
        assert_status(&v, 422, "Invalid");
        let fields: Vec<&str> = v["details"]["causes"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
            .unwrap_or_default();
        assert!(fields.contains(field), "{name}: {fields:?}");
    }
    let toleration_cases: &[(&str, Value, &str)] = &[
        (
            "bad key",
            json!({"key": "bad key", "operator": "Exists"}),
            "spec.tolerations[0].key",
        ),
        (
            "empty key needs Exists",
            json!({"key": "", "operator": "Equal", "value": "v"}),
            "spec.tolerations[0].operator",
        ),
        (
            "seconds need NoExecute",
            json!({"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}),
            "spec.tolerations[0].effect",
        ),
        // Upstream reports this one on `operator` (validateTolerations' quirk).
        (
            "Equal needs a label value",
            json!({"key": "k", "operator": "Equal", "value": "bad value"}),
            "spec.tolerations[0].operator",
        ),
        (
            "Exists takes no value",
            json!({"key": "k", "operator": "Exists", "value": "v"}),
            "spec.tolerations[0].operator",
        ),
        (
            "Gt needs an integer",
            json!({"key": "k", "operator": "Gt", "value": "high"}),
            "spec.tolerations[0].value",
        ),
        (
            "Lt refuses leading zeros",
            json!({"key": "k", "operator": "Lt", "value": "0950"}),
            "spec.tolerations[0].value",
        ),
        (
            "Gt refuses overflow",
            json!({"key": "k", "operator": "Gt", "value": "9223372036854775808"}),
            "spec.tolerations[0].value",
        ),
        (
            "unknown operator",
            json!({"key": "k", "operator": "In", "value": "v"}),
            "spec.tolerations[0].operator",
        ),
        (
            "unknown effect",
            json!({"key": "k", "operator": "Exists", "effect": "Sometimes"}),
            "spec.tolerations[0].effect",
        ),
    ];
    for (i, (name, toleration, field)) in toleration_cases.iter().enumerate() {
        let mut p = pod(&format!("t{i}"));
        p["spec"]["tolerations"] = json!([toleration]);
        let (s, v) = api.req("POST", "/api/v1/namespaces/default/pods", p).await;
        assert_eq!(s, 422, "{name}: {v}");
        let fields: Vec<&str> = v["details"]["causes"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
            .unwrap_or_default();
        assert!(
            fields.iter().any(|f| f.starts_with(field)),
            "{name}: {fields:?} {v}"
        );
    }
    // An update may add tolerations or change tolerationSeconds, nothing else.
    let mut p = pod("upd");
    p["spec"]["tolerations"] =
        json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]);
    let created = api.create("/api/v1/namespaces/default/pods", p).await;
    let uri = "/api/v1/namespaces/default/pods/upd";
    let mut longer = created.clone();
    longer["spec"]["tolerations"][0]["tolerationSeconds"] = json!(20);
    let (s, v) = api.req("PUT", uri, longer).await;
    assert_eq!(s, 200, "changing tolerationSeconds is allowed: {v}");
    let mut changed = v.clone();
    changed["spec"]["tolerations"][0]["key"] = json!("other");
    let (s, v) = api.req("PUT", uri, changed).await;
    assert_eq!(s, 422, "{v}");
    assert_status(&v, 422, "Invalid");
}

#[tokio::test]
async fn watches_over_the_per_client_or_total_limit_get_429_with_retry_after() {
    let config = ApiConfig {
        watches: berth_apiserver::watch_limits::WatchLimits {
            per_client: 2,
            total: 3,
        },
        ..ApiConfig::default()
    };
    let api = api_with(config).await;
    let watch = |token: &'static str| {
        let server = api.server.clone();
        async move {
            let request = Request::builder()
                .uri("/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=60")
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .expect("request");
            router(server).oneshot(request).await.expect("response")
        }
    };
    let first = watch(ADMIN).await;
    let second = watch(ADMIN).await;
    assert_eq!(
        (first.status(), second.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    let refused = watch(ADMIN).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let body = axum::body::to_bytes(refused.into_body(), usize::MAX)
        .await
        .expect("body");
    let status: Value = serde_json::from_slice(&body).expect("a Status");
    assert_status(&status, 429, "TooManyRequests");
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-watches-per-client")),
        "{status}"
    );
    // Another client still has room, until the total is reached.
    let third = watch(NODE1).await;
    assert_eq!(third.status(), StatusCode::OK);
    let over_total = watch(NODE1).await;
    assert_eq!(over_total.status(), StatusCode::TOO_MANY_REQUESTS);
    // A watch that ends (its client went away) frees its place.
    drop(first);
    assert_eq!(watch(ADMIN).await.status(), StatusCode::OK);
    drop((second, third));
}

#[tokio::test]
async fn patching_one_pod_with_large_annotations_keeps_the_history_within_its_budget() {
    const BUDGET: usize = 1 << 20;
    let config = ApiConfig {
        watch_cache: berth_apiserver::cache::CacheLimits {
            history_bytes: BUDGET,
            ..Default::default()
        },
        ..ApiConfig::default()
    };
    let api = api_with(config).await;
    let pods = "/api/v1/namespaces/default/pods";
    let first = api.create(pods, pod("big")).await;
    let first_rv = first["metadata"]["resourceVersion"].clone();
    let mut most = 0;
    for i in 0..20 {
        let patch = json!({"metadata": {"annotations": {"big": format!("{i}-{}", "x".repeat(200 * 1024))}}});
        let (status, body) = api
            .call(
                Some(ADMIN),
                "PATCH",
                &format!("{pods}/big"),
                "application/merge-patch+json",
                patch.to_string().into_bytes(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // A list is a consistent read: the cache has applied the patch.
        api.req("GET", pods, Value::Null).await;
        most = most.max(api.server.history_budget.used());
    }
    assert!(most <= BUDGET, "the history held {most} bytes");
    let (status, body) = api
        .req(
            "GET",
            &format!(
                "{pods}?watch=true&resourceVersion={}",
                first_rv.as_str().unwrap_or("1")
            ),
            Value::Null,
        )
        .await;
    assert_eq!(status, 410, "a watch from the first write: {body}");
}
