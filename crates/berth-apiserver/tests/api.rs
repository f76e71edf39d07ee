//! The REST API through its router, in process: status codes and Status
//! bodies for every class of failure, the write semantics (optimistic
//! concurrency, dry run, generateName, binding, eviction, graceful
//! deletion), and lists and watches with selectors and resourceVersions.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::api::ApiConfig;
use berth_apiserver::server::router;
use common::{
    ADMIN, Api, JOIN, NODE1, allocatable_node, api, api_with, assert_status, collection_path,
    sample, web_pod,
};
use futures::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;

#[tokio::test]
async fn failures_are_statuses_with_the_right_code() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    api.create(pods, web_pod("web")).await;
    api.create("/api/v1/nodes", allocatable_node("node2")).await;

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
    // The node authorizer lets node writes through; NodeRestriction
    // refuses another node's, as upstream.
    assert_eq!(
        v["message"],
        "nodes \"node2\" is forbidden: node \"node1\" is not allowed to modify node \"node2\""
    );

    let (s, v) = api.req("GET", &format!("{pods}/nope"), Value::Null).await;
    assert_eq!(s, 404);
    assert_status(&v, 404, "NotFound");
    assert_eq!(v["message"], "pods \"nope\" not found");
    let (s, v) = api.req("GET", "/apis/batch/v1/jobs", Value::Null).await;
    assert_eq!(s, 404);
    assert_eq!(v["kind"], "Status");

    let (s, v) = api.req("POST", pods, web_pod("web")).await;
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

    let mut bad = web_pod("bad");
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
    let mut typo = web_pod("typo");
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
    // Upstream's patch handler: 422 on `patch`, naming the patched object.
    assert_eq!(s, 422, "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{")
            && message.ends_with("\": strict decoding error: unknown field \"spec.bogus\""),
        "{message}"
    );
    let (s, _) = api
        .req(
            "POST",
            &format!("{pods}?fieldValidation=Sometimes"),
            web_pod("x"),
        )
        .await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn updates_are_compare_and_swap_on_resource_version() {
    let api = api().await;
    let created = api.create("/api/v1/nodes", allocatable_node("n1")).await;
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
        .req("POST", &format!("{pods}?dryRun=All"), web_pod("ghost"))
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
        .req("POST", "/api/v1/namespaces/nowhere/pods", web_pod("x"))
        .await;
    assert_eq!(s, 404);
    assert_eq!(v["message"], "namespaces \"nowhere\" not found");
}

#[tokio::test]
async fn a_generated_name_that_is_taken_is_generated_again() {
    let pods = "/api/v1/namespaces/default/pods";
    let seeded = || ApiConfig {
        name_seed: Some(7),
        ..ApiConfig::default()
    };
    let generate = json!({"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    // The first name the seed makes, learnt from a server of its own.
    let first = api_with(seeded())
        .await
        .create(pods, generate.clone())
        .await;
    let first = first["metadata"]["name"].as_str().unwrap_or("").to_string();
    assert!(first.starts_with("web-"), "{first}");

    // A second server with the same seed, where that name is already taken:
    // upstream's RetryGenerateName makes up another instead of a 409.
    let api = api_with(seeded()).await;
    api.create(pods, web_pod(&first)).await;
    let (s, v) = api.req("POST", pods, generate).await;
    assert_eq!(s, 201, "{v}");
    let second = v["metadata"]["name"].as_str().unwrap_or("");
    assert!(
        second.starts_with("web-") && second != first,
        "{second} after {first}"
    );
}

#[tokio::test]
async fn binding_sets_node_name_and_pod_scheduled_once() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    api.create(pods, web_pod("web")).await;
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
    let mut bound = web_pod("bound");
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
    api.create(pods, web_pod("loose")).await;
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "loose", "namespace": "default"}});
    let (s, v) = api
        .req("POST", &format!("{pods}/loose/eviction"), eviction)
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, _) = api.req("GET", &format!("{pods}/loose"), Value::Null).await;
    assert_eq!(s, 404);

    // Preconditions.
    api.create(pods, web_pod("pre")).await;
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
        let mut p = web_pod(&format!("p{i}"));
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
    let first = api.create(pods, web_pod("a")).await;
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    api.create(pods, web_pod("b")).await;
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
    let first = api.create(pods, web_pod("a")).await;
    let rv: i64 = first["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .expect("rv");
    for name in ["b", "c", "d", "e"] {
        api.create(pods, web_pod(name)).await;
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
            allocatable_node("node1").to_string().into_bytes(),
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
            allocatable_node("node9").to_string().into_bytes(),
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

/// A node credential reads its own Node and the pods bound to it, and
/// nothing else of the kind (upstream's node authorizer with selectors);
/// refusals are 403 in upstream's words.
#[tokio::test]
async fn a_node_credential_reads_only_its_own_node_and_pods() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    for name in ["node1", "node2"] {
        api.create("/api/v1/nodes", allocatable_node(name)).await;
    }
    for (pod_name, node_name) in [("mine", "node1"), ("theirs", "node2")] {
        let mut p = web_pod(pod_name);
        p["spec"]["nodeName"] = json!(node_name);
        api.create(pods, p).await;
    }
    let api = &api;
    let get = |uri: String| async move {
        api.call(Some(NODE1), "GET", &uri, "application/json", Vec::new())
            .await
    };
    struct Case {
        name: &'static str,
        uri: String,
        want: StatusCode,
        message: &'static str,
    }
    let cases = [
        Case {
            name: "its own Node",
            uri: "/api/v1/nodes/node1".into(),
            want: StatusCode::OK,
            message: "",
        },
        Case {
            name: "its own Node by a list's field selector",
            uri: "/api/v1/nodes?fieldSelector=metadata.name%3Dnode1".into(),
            want: StatusCode::OK,
            message: "",
        },
        Case {
            name: "another Node",
            uri: "/api/v1/nodes/node2".into(),
            want: StatusCode::FORBIDDEN,
            message: "nodes \"node2\" is forbidden: User \"system:node:node1\" cannot get resource \"nodes\" in API group \"\" at the cluster scope: node 'node1' cannot read 'node2', only its own Node object",
        },
        Case {
            name: "every Node",
            uri: "/api/v1/nodes".into(),
            want: StatusCode::FORBIDDEN,
            message: "nodes is forbidden: User \"system:node:node1\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: node 'node1' cannot read all nodes, only its own Node object",
        },
        Case {
            name: "its pods",
            uri: "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1".into(),
            want: StatusCode::OK,
            message: "",
        },
        Case {
            name: "every pod",
            uri: "/api/v1/pods".into(),
            want: StatusCode::FORBIDDEN,
            message: "pods is forbidden: User \"system:node:node1\" cannot list resource \"pods\" in API group \"\" at the cluster scope: can only list/watch pods with spec.nodeName field selector",
        },
        Case {
            name: "a pod bound to it",
            uri: format!("{pods}/mine"),
            want: StatusCode::OK,
            message: "",
        },
        Case {
            name: "a pod bound elsewhere",
            uri: format!("{pods}/theirs"),
            want: StatusCode::FORBIDDEN,
            message: "pods \"theirs\" is forbidden: User \"system:node:node1\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\": no relationship found between node 'node1' and this object",
        },
        Case {
            name: "a pod that does not exist",
            uri: format!("{pods}/nope"),
            want: StatusCode::FORBIDDEN,
            message: "pods \"nope\" is forbidden: User \"system:node:node1\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\": no relationship found between node 'node1' and this object",
        },
        Case {
            name: "the node Leases",
            uri: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases".into(),
            want: StatusCode::FORBIDDEN,
            message: "leases.coordination.k8s.io is forbidden: User \"system:node:node1\" cannot list resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only get, create, update, patch, or delete a node lease",
        },
    ];
    for case in cases {
        let (status, value) = get(case.uri.clone()).await;
        assert_eq!(status, case.want, "{}: {value}", case.name);
        if !case.message.is_empty() {
            assert_status(&value, 403, "Forbidden");
            assert_eq!(value["message"], case.message, "{}", case.name);
        }
    }
    let (_, listed) = get("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1".into()).await;
    let names: Vec<&str> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["mine"]);
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
            allocatable_node("worker-7").to_string().into_bytes(),
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

/// The join token joins a name not yet registered, or a Node an admin
/// created inviting a join (`berth.dev/join-allowed: "true"`), not any
/// Node an admin made.
#[tokio::test]
async fn the_join_token_joins_only_new_names_or_nodes_inviting_a_join() {
    let api = api().await;
    api.create("/api/v1/nodes", allocatable_node("made-by-admin"))
        .await;
    let mut invited = allocatable_node("invited");
    invited["metadata"]["annotations"] = json!({"berth.dev/join-allowed": "true"});
    api.create("/api/v1/nodes", invited).await;
    let join = |name: &'static str| {
        let api = &api;
        async move {
            api.call(
                Some(JOIN),
                "POST",
                "/berth/v1/node-credential",
                "application/json",
                json!({"nodeName": name}).to_string().into_bytes(),
            )
            .await
        }
    };
    let (s, v) = join("made-by-admin").await;
    assert_eq!(s, 403, "{v}");
    assert_status(&v, 403, "Forbidden");
    assert_eq!(
        v["message"],
        "nodes \"made-by-admin\" is forbidden: node \"made-by-admin\" is already registered: the join token joins only new node names, or a Node created with the annotation berth.dev/join-allowed: \"true\""
    );
    let (s, v) = join("invited").await;
    assert_eq!(s, 201, "{v}");
    let token = v["token"].as_str().expect("token").to_string();
    let (s, v) = api
        .call(
            Some(&token),
            "GET",
            "/api/v1/nodes/invited",
            "application/json",
            Vec::new(),
        )
        .await;
    assert_eq!(s, 200, "the invited node's agent reads its Node: {v}");
    let (s, _) = join("brand-new").await;
    assert_eq!(s, 201);
    let (s, v) = join("invited").await;
    assert_eq!(s, 409, "issued once: {v}");
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
        let mut n = allocatable_node(&format!("n{i}"));
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
        let mut p = web_pod(&format!("t{i}"));
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
    let mut p = web_pod("upd");
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
    // A node may watch only the pods bound to it (the node authorizer).
    let watch = |token: &'static str| {
        let server = api.server.clone();
        let uri = if token == NODE1 {
            "/api/v1/pods?watch=true&timeoutSeconds=60&fieldSelector=spec.nodeName%3Dnode1"
        } else {
            "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=60"
        };
        async move {
            let request = Request::builder()
                .uri(uri)
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
    let first = api.create(pods, web_pod("big")).await;
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

fn warnings_of(headers: &axum::http::HeaderMap) -> Vec<String> {
    headers
        .get_all("warning")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect()
}

/// Issue 18, defect 11: a duplicate field was accepted silently (last
/// wins). Upstream: `Strict` refuses it with 400 naming the field; `Warn`
/// (the default) answers 201 with a `Warning` header per unknown and
/// duplicate field; `Ignore` says nothing.
#[tokio::test]
async fn duplicate_and_unknown_fields_are_refused_with_strict_and_warned_about_by_default() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"x","name":"{name}"}},"spec":{{"foo":1,"containers":[{{"name":"c","image":"busybox"}}]}}}}"#
        )
        .into_bytes()
    };
    struct Case {
        name: &'static str,
        method: &'static str,
        uri: String,
        content_type: &'static str,
        body: Vec<u8>,
        code: u16,
        /// The Warning headers, or the refusal's message.
        want: Vec<&'static str>,
    }
    let cases = [
        Case {
            name: "strict refuses duplicate and unknown fields",
            method: "POST",
            uri: format!("{pods}?fieldValidation=Strict"),
            content_type: "application/json",
            body: body("strict"),
            code: 400,
            want: vec![
                "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: duplicate field \"metadata.name\", unknown field \"spec.foo\"",
            ],
        },
        Case {
            name: "warn (the default) names them, the last duplicate wins",
            method: "POST",
            uri: pods.to_string(),
            content_type: "application/json",
            body: body("warned"),
            code: 201,
            want: vec![
                r#"299 - "duplicate field \"metadata.name\"""#,
                r#"299 - "unknown field \"spec.foo\"""#,
            ],
        },
        Case {
            name: "ignore says nothing",
            method: "POST",
            uri: format!("{pods}?fieldValidation=Ignore"),
            content_type: "application/json",
            body: body("ignored"),
            code: 201,
            want: vec![],
        },
        Case {
            name: "yaml's duplicates are named by line, as go-yaml names them",
            method: "POST",
            uri: pods.to_string(),
            content_type: "application/yaml",
            body: b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: yamlpod\nspec:\n  containers: [{name: c, image: busybox}]\n".to_vec(),
            code: 201,
            want: vec![r#"299 - "line 5: key \"name\" already set in map""#],
        },
        Case {
            name: "a patch's own duplicates and the patched object's unknown fields",
            method: "PATCH",
            uri: format!("{pods}/warned"),
            content_type: "application/merge-patch+json",
            body: br#"{"metadata":{"labels":{"a":"1","a":"2"}},"spec":{"bar":1}}"#.to_vec(),
            code: 200,
            want: vec![
                r#"299 - "duplicate field \"metadata.labels.a\"""#,
                r#"299 - "unknown field \"spec.bar\"""#,
            ],
        },
        Case {
            name: "a strict apply patch with a repeated key",
            method: "PATCH",
            uri: format!("{pods}/warned?fieldValidation=Strict&fieldManager=m"),
            content_type: "application/apply-patch+yaml",
            body: b"apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    b: x\n    b: y\n".to_vec(),
            code: 400,
            want: vec![
                "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 6: key \"b\" already set in map",
            ],
        },
    ];
    for case in cases {
        let (s, headers, v) = api
            .call_with_headers(
                Some(ADMIN),
                case.method,
                &case.uri,
                case.content_type,
                case.body,
            )
            .await;
        assert_eq!(s, case.code, "{}: {v}", case.name);
        if s.is_success() {
            assert_eq!(warnings_of(&headers), case.want, "{}", case.name);
        } else {
            assert_eq!(v["message"], case.want[0], "{}", case.name);
        }
    }
    let (_, v) = api.req("GET", &format!("{pods}/warned"), Value::Null).await;
    assert_eq!(v["metadata"]["name"], "warned");
}

fn nested_yaml(depth: usize) -> Vec<u8> {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: deep\nspec:\n  a: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    )
    .into_bytes()
}

/// Issue 18, defect 1: a YAML body nested 100,000 deep (200 KB) took
/// minutes to be refused, on a runtime worker. It is refused with a 400
/// naming the depth limit, at once (a generous bound: seconds, on a
/// debug build of a shared machine), as a create and as an apply patch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deeply_nested_yaml_body_is_refused_quickly_naming_the_depth_limit() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    let body = nested_yaml(100_000);
    assert!(body.len() > 200_000);
    for (method, uri, content_type) in [
        ("POST", pods.to_string(), "application/yaml"),
        (
            "PATCH",
            format!("{pods}/deep?fieldManager=m"),
            "application/apply-patch+yaml",
        ),
    ] {
        let started = std::time::Instant::now();
        let (s, v) = api
            .call(Some(ADMIN), method, &uri, content_type, body.clone())
            .await;
        let elapsed = started.elapsed();
        assert_eq!(s, 400, "{method}: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains("exceeded max depth of 128"), "{message}");
        assert!(
            elapsed < std::time::Duration::from_secs(5),
            "{method}: {elapsed:?}"
        );
    }
    // The limit is the server's to lower; below it the body is read.
    let api = api_with(ApiConfig {
        body: berth_apiserver::body::BodyLimits { max_depth: 8 },
        ..ApiConfig::default()
    })
    .await;
    let (s, v) = api
        .call(
            Some(ADMIN),
            "POST",
            pods,
            "application/yaml",
            nested_yaml(8),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or_default()
            .contains("exceeded max depth of 8"),
        "{v}"
    );
    let (s, v) = api
        .call(
            Some(ADMIN),
            "POST",
            pods,
            "application/yaml",
            nested_yaml(2),
        )
        .await;
    assert_eq!(s, 201, "{v}");
}

fn continue_token(json: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

/// Issue 18, defect 11: answers that differed from upstream's.
#[tokio::test]
async fn request_inputs_get_upstreams_answers() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    for i in 0..3 {
        api.create(pods, web_pod(&format!("p{i}"))).await;
    }
    let (s, page) = api
        .req("GET", &format!("{pods}?limit=2"), Value::Null)
        .await;
    assert_eq!(s, 200, "{page}");
    let token = page["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (s, rest) = api
        .req(
            "GET",
            &format!("{pods}?limit=2&continue={token}"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 200, "{rest}");
    assert_eq!(rest["items"][0]["metadata"]["name"], "p2");
    // A crafted, well-formed token reaching outside the list: 400, where a
    // token naming another prefix was a 500; and upstream's list options.
    let rv = page["metadata"]["resourceVersion"].as_str().unwrap_or("1");
    let crafted = continue_token(&format!(
        r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"../../secrets/x"}}"#
    ));
    struct Case {
        query: String,
        code: u16,
        message: &'static str,
    }
    let cases = [
        Case {
            query: format!("limit=2&continue={crafted}"),
            code: 400,
            message: "invalid continue token: continue key is not valid: ../../secrets/x",
        },
        Case {
            query: format!("limit=2&continue={token}&resourceVersion=5"),
            code: 400,
            message: "specifying resource version is not allowed when using continue",
        },
        Case {
            query: "resourceVersion=1&resourceVersionMatch=bogus".into(),
            code: 422,
            message: "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        },
        Case {
            query: "resourceVersionMatch=NotOlderThan".into(),
            code: 422,
            message: "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        },
    ];
    for case in cases {
        let (s, v) = api
            .req("GET", &format!("{pods}?{}", case.query), Value::Null)
            .await;
        assert_eq!(s, case.code, "{}: {v}", case.query);
        assert_eq!(v["message"], case.message, "{}", case.query);
    }
    // Exact reads the list as it was at that revision.
    let (s, v) = api
        .req(
            "GET",
            &format!("{pods}?resourceVersion={rv}&resourceVersionMatch=Exact"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["metadata"]["resourceVersion"], rv);
    assert_eq!(v["items"].as_array().map(Vec::len), Some(3));
    // Annotations over 256 KiB in all: upstream's 422 on metadata.annotations.
    let mut big = web_pod("annotated");
    big["metadata"]["annotations"] =
        json!({"a": "x".repeat(128 * 1024), "b": "y".repeat(128 * 1024)});
    let (s, v) = api.req("POST", pods, big).await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(
        v["message"],
        "Pod \"annotated\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"
    );
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.annotations");
    // An object the store cannot keep (over etcd's 1.5 MiB): 413 with
    // etcd's words, not a 500.
    let mut huge = web_pod("huge");
    huge["spec"]["containers"][0]["args"] = json!(vec!["z".repeat(1024); 1600]);
    let (s, v) = api.req("POST", pods, huge).await;
    assert_eq!(s, 413, "{v}");
    assert_eq!(v["message"], "etcdserver: request is too large");
    // Found by the fuzzing harness: a create on the all-namespaces path of
    // a namespaced type was a 500; upstream serves no POST there (405).
    let (s, v) = api.req("POST", "/api/v1/pods", web_pod("nowhere")).await;
    assert_eq!(s, 405, "{v}");
}

/// Issue 18, defect 11: an apply patch with a wrong type inside a list was
/// a 500 from the strategic-merge path. No malformed patch of any type is
/// a server error.
#[tokio::test]
async fn patches_that_do_not_fit_the_object_are_client_errors() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    api.create(pods, web_pod("web")).await;
    struct Case {
        content_type: &'static str,
        body: &'static str,
    }
    let cases = [
        Case {
            content_type: "application/apply-patch+yaml",
            body: r#"{"apiVersion":"v1","kind":"Pod","spec":{"containers":[1]}}"#,
        },
        Case {
            content_type: "application/apply-patch+yaml",
            body: "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - [a]\n",
        },
        Case {
            content_type: "application/strategic-merge-patch+json",
            body: r#"{"spec":{"containers":["x"]}}"#,
        },
        Case {
            content_type: "application/strategic-merge-patch+json",
            body: r#"{"spec":{"containers":[{"image":"x"}]}}"#,
        },
        Case {
            content_type: "application/strategic-merge-patch+json",
            body: r#"{"spec":{"tolerations":{"a":1}}}"#,
        },
        Case {
            content_type: "application/merge-patch+json",
            body: r#"{"spec":{"containers":[1]}}"#,
        },
        Case {
            content_type: "application/json-patch+json",
            body: r#"[{"op":"add","path":"/spec/containers/0","value":1}]"#,
        },
    ];
    for case in cases {
        let (s, v) = api
            .call(
                Some(ADMIN),
                "PATCH",
                &format!("{pods}/web?fieldManager=m"),
                case.content_type,
                case.body.as_bytes().to_vec(),
            )
            .await;
        assert!(
            s.is_client_error(),
            "{} {}: {s} {v}",
            case.content_type,
            case.body
        );
        assert_eq!(v["kind"], "Status", "{v}");
    }
}

/// `dryRun=All` on every write of every served type, as upstream: the
/// answer is the object as it would be (admission and validation run, a
/// create of an existing name refused), and nothing is stored; any other
/// value is the 422 of the verb's options.
#[tokio::test]
async fn dry_run_is_honoured_on_every_write_of_every_served_type() {
    let api = api().await;
    for (index, rt) in berth_apiserver::resources::RESOURCES.iter().enumerate() {
        let kind = format!("{}.{}", rt.kind, rt.group);
        let list = collection_path(rt);
        // Types may share their storage (Events): a name per type.
        let name = format!("dry-{index}");
        let one = format!("{list}/{name}");
        if !rt.strategy.is_stored() {
            // A review is answered, never stored: its dryRun is checked as
            // any create's, and a dry run is answered as a real one.
            let (s, v) = api
                .req("POST", &format!("{list}?dryRun=All"), sample(rt, &name))
                .await;
            assert_eq!(s, 201, "{kind}: dry-run review: {v}");
            assert!(v.get("status").is_some(), "{kind}: answered: {v}");
            let (s, v) = api
                .req("POST", &format!("{list}?dryRun=server"), sample(rt, &name))
                .await;
            assert_eq!(s, 422, "{kind}: {v}");
            continue;
        }

        let (s, v) = api
            .req("POST", &format!("{list}?dryRun=All"), sample(rt, &name))
            .await;
        assert_eq!(s, 201, "{kind}: dry-run create: {v}");
        assert_eq!(v["metadata"]["name"], name, "{kind}");
        assert!(
            v["metadata"]["uid"].is_string(),
            "{kind}: as it would be: {v}"
        );
        assert_eq!(
            api.req("GET", &one, Value::Null).await.0,
            404,
            "{kind}: nothing stored"
        );
        let (s, v) = api
            .req("POST", &format!("{list}?dryRun=server"), sample(rt, &name))
            .await;
        assert_eq!(s, 422, "{kind}: {v}");
        assert_eq!(
            v["message"],
            r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"server"}: supported values: "All""#
        );

        let stored = api.create(&list, sample(rt, &name)).await;
        let (s, v) = api
            .req("POST", &format!("{list}?dryRun=All"), sample(rt, &name))
            .await;
        assert_eq!(
            s, 409,
            "{kind}: a dry run of a create that would fail fails: {v}"
        );

        let mut labelled = stored.clone();
        labelled["metadata"]["labels"] = json!({"dry": "run"});
        let (s, v) = api
            .req("PUT", &format!("{one}?dryRun=All"), labelled.clone())
            .await;
        assert_eq!(s, 200, "{kind}: dry-run update: {v}");
        assert_eq!(v["metadata"]["labels"]["dry"], "run", "{kind}");
        let (s, v) = api
            .call(
                Some(ADMIN),
                "PATCH",
                &format!("{one}?dryRun=All"),
                "application/merge-patch+json",
                br#"{"metadata":{"labels":{"dry":"patch"}}}"#.to_vec(),
            )
            .await;
        assert_eq!(s, 200, "{kind}: dry-run patch: {v}");
        assert_eq!(v["metadata"]["labels"]["dry"], "patch", "{kind}");
        let mut applied = sample(rt, "applied");
        applied["metadata"]["labels"] = json!({"dry": "apply"});
        // (berth converts events.k8s.io Events for JSON bodies only.)
        let (s, v) = if rt.stored_as.is_some() {
            (StatusCode::CREATED, Value::Null)
        } else {
            api.call(
                Some(ADMIN),
                "PATCH",
                &format!("{list}/applied?dryRun=All&fieldManager=test"),
                "application/apply-patch+yaml",
                applied.to_string().into_bytes(),
            )
            .await
        };
        assert_eq!(s, 201, "{kind}: dry-run apply that creates: {v}");
        assert_eq!(
            api.req("GET", &format!("{list}/applied"), Value::Null)
                .await
                .0,
            404,
            "{kind}"
        );
        if rt.subresource("status").is_some() {
            let (s, v) = api
                .req("PUT", &format!("{one}/status?dryRun=All"), labelled.clone())
                .await;
            assert_eq!(s, 200, "{kind}: dry-run status update: {v}");
            let (s, v) = api
                .call(
                    Some(ADMIN),
                    "PATCH",
                    &format!("{one}/status?dryRun=All"),
                    "application/merge-patch+json",
                    br#"{"status":{"phase":"Dry"}}"#.to_vec(),
                )
                .await;
            assert_eq!(s, 200, "{kind}: dry-run status patch: {v}");
        }
        for (method, options) in [("PUT", "UpdateOptions"), ("PATCH", "PatchOptions")] {
            let (s, v) = api
                .call(
                    Some(ADMIN),
                    method,
                    &format!("{one}?dryRun=Some"),
                    "application/merge-patch+json",
                    labelled.to_string().into_bytes(),
                )
                .await;
            assert_eq!(s, 422, "{kind} {method}: {v}");
            assert!(
                v["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(&format!("{options}.meta.k8s.io"))),
                "{kind} {method}: {v}"
            );
        }

        let (s, v) = api
            .req("DELETE", &format!("{one}?dryRun=All"), Value::Null)
            .await;
        assert_eq!(s, 200, "{kind}: dry-run delete: {v}");
        let (s, v) = api.req("DELETE", &one, json!({"dryRun": ["All"]})).await;
        assert_eq!(s, 200, "{kind}: dry-run delete in DeleteOptions: {v}");
        let (s, v) = api.req("DELETE", &one, json!({"dryRun": ["Some"]})).await;
        assert_eq!(s, 422, "{kind}: {v}");
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("DeleteOptions.meta.k8s.io")),
            "{v}"
        );
        if rt.verbs.contains(&"deletecollection") {
            let (s, v) = api
                .req("DELETE", &format!("{list}?dryRun=All"), Value::Null)
                .await;
            assert_eq!(s, 200, "{kind}: dry-run deletecollection: {v}");
            let names: Vec<&str> = v["items"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i["metadata"]["name"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            assert!(names.contains(&name.as_str()), "{kind}: what would go: {v}");
        }

        let (s, now) = api.req("GET", &one, Value::Null).await;
        assert_eq!(s, 200, "{kind}: still there");
        assert_eq!(
            now["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"],
            "{kind}: never written: {now}"
        );
        assert!(now["metadata"]["labels"]["dry"].is_null(), "{kind}: {now}");
        assert!(
            now["metadata"]["deletionTimestamp"].is_null(),
            "{kind}: {now}"
        );
    }
}

/// The pod subresources that write, under `dryRun=All`: a binding is
/// checked and not made, an eviction deletes nothing (the request's dryRun
/// and its deleteOptions' must agree).
#[tokio::test]
async fn binding_and_eviction_honour_dry_run() {
    let api = api().await;
    let pods = "/api/v1/namespaces/default/pods";
    api.create(pods, web_pod("web")).await;
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}, "target": {"kind": "Node", "name": "node1"}});
    let (s, v) = api
        .req("POST", &format!("{pods}/web/binding?dryRun=All"), binding)
        .await;
    assert_eq!(s, 201, "{v}");
    let (_, stored) = api.req("GET", &format!("{pods}/web"), Value::Null).await;
    assert!(stored["spec"]["nodeName"].is_null(), "not bound: {stored}");

    let eviction = |options: Value| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}, "deleteOptions": options});
    for (query, options, want) in [
        ("?dryRun=All", Value::Null, 201),
        ("", json!({"dryRun": ["All"]}), 201),
        ("?dryRun=All", json!({"dryRun": ["All"]}), 201),
        ("?dryRun=All", json!({"dryRun": ["All", "All"]}), 400),
    ] {
        let (s, v) = api
            .req(
                "POST",
                &format!("{pods}/web/eviction{query}"),
                eviction(options.clone()),
            )
            .await;
        assert_eq!(s, want, "{query} {options}: {v}");
        let (s, _) = api.req("GET", &format!("{pods}/web"), Value::Null).await;
        assert_eq!(s, 200, "{query} {options}: nothing deleted");
    }
}

/// A Warning header's text (`299 - "text"`).
fn warning_texts(headers: &axum::http::HeaderMap) -> Vec<String> {
    warnings_of(headers)
        .iter()
        .map(|w| {
            w.trim_start_matches("299 - \"")
                .trim_end_matches('"')
                .replace("\\\"", "\"")
        })
        .collect()
}

/// Issue 23: a write that taints a node says what the taint will do, by
/// the taint eviction controller's rule and the scheduler's filters, and
/// the same with `dryRun=All`, which stores nothing.
#[tokio::test]
async fn a_taint_write_warns_what_it_will_do_and_a_dry_run_previews_it() {
    let api = api().await;
    let mut n1 = allocatable_node("n1");
    n1["metadata"]["labels"] = json!({"pool": "gpu"});
    api.create("/api/v1/nodes", n1).await;
    api.create("/api/v1/nodes", allocatable_node("n2")).await;
    let pods = "/api/v1/namespaces/default/pods";
    let bound = |name: &str, tolerations: Value| {
        let mut p = web_pod(name);
        p["spec"]["nodeName"] = json!("n1");
        p["spec"]["tolerations"] = tolerations;
        p
    };
    for name in ["web-1", "web-2"] {
        api.create(pods, bound(name, json!([]))).await;
    }
    api.create(
        pods,
        bound(
            "batch",
            json!([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]),
        ),
    )
    .await;
    api.create(pods, bound("daemon", json!([{"operator": "Exists"}])))
        .await;
    let mut pinned = web_pod("pinned");
    pinned["spec"]["nodeSelector"] = json!({"pool": "gpu"});
    api.create(pods, pinned).await;
    api.create(pods, web_pod("anywhere")).await;
    // Ready nodes: without the not-ready taint TaintNodesByCondition puts
    // on a new node. A removal says nothing.
    for name in ["n1", "n2"] {
        let warnings = patch_node(&api, name, br#"{"spec":{"taints":null}}"#).await;
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    let taint = br#"{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoExecute"}]}}"#;
    let (_, before) = api.req("GET", "/api/v1/nodes/n1", Value::Null).await;
    for query in ["?dryRun=All", ""] {
        let warnings = patch_node(&api, &format!("n1{query}"), taint).await;
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        assert_eq!(
            warnings[0],
            "2 pods do not tolerate dedicated=gpu:NoExecute and are evicted now: default/web-1, default/web-2"
        );
        assert!(
            warnings[1].starts_with("1 pod is evicted at ")
                && warnings[1].ends_with("Z (tolerationSeconds 300)"),
            "{warnings:?}"
        );
        assert_eq!(
            warnings[2],
            "1 other pod on n1 tolerates its taints and stays"
        );
        assert_eq!(
            warnings[3],
            "1 pending pod can no longer be scheduled anywhere: default/pinned"
        );
        if query == "?dryRun=All" {
            let (_, after) = api.req("GET", "/api/v1/nodes/n1", Value::Null).await;
            assert_eq!(after, before, "a preview changes nothing");
        }
    }
    let (_, after) = api.req("GET", "/api/v1/nodes/n1", Value::Null).await;
    assert_eq!(after["spec"]["taints"][0]["key"], "dedicated");

    let pinned = ["1 pending pod can no longer be scheduled anywhere: default/pinned"];
    let anywhere = ["1 pending pod can no longer be scheduled anywhere: default/anywhere"];
    let cases: [(&str, &[u8], &[&str]); 4] = [
        // The same taint again: nothing new, nothing said. Removing it:
        // the same.
        ("n1", taint, &[]),
        ("n1", br#"{"spec":{"taints":null}}"#, &[]),
        // A NoSchedule taint and a cordon turn pending pods away too: n2
        // is the only other node.
        (
            "n1",
            br#"{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}"#,
            &pinned,
        ),
        (
            "n2?dryRun=All",
            br#"{"spec":{"unschedulable":true}}"#,
            &anywhere,
        ),
    ];
    for (node, patch, want) in cases {
        assert_eq!(patch_node(&api, node, patch).await, want, "{node}");
    }
}

/// A merge patch of `/api/v1/nodes/{node}` that must succeed; its warnings.
async fn patch_node(api: &Api, node: &str, patch: &[u8]) -> Vec<String> {
    let (s, headers, v) = api
        .call_with_headers(
            Some(ADMIN),
            "PATCH",
            &format!("/api/v1/nodes/{node}"),
            "application/merge-patch+json",
            patch.to_vec(),
        )
        .await;
    assert_eq!(s, 200, "{node}: {v}");
    warning_texts(&headers)
}

/// Expiring taints at the API: an expiry annotation that does not read is
/// a 422 naming it; a taint removed takes its expiry entry with it (a taint
/// added again later must not inherit a stale time).
#[tokio::test]
async fn the_taint_expiry_annotation_is_checked_and_follows_its_taint() {
    let api = api().await;
    let mut n1 = allocatable_node("n1");
    n1["spec"] = json!({"taints": [{"key": "maint", "effect": "NoSchedule"}]});
    n1["metadata"]["annotations"] =
        json!({"berth.dev/taint-expiry": "maint:NoSchedule=2026-07-01T12:00:00Z"});
    api.create("/api/v1/nodes", n1).await;
    let (s, v) = api
        .call(
            Some(ADMIN),
            "PATCH",
            "/api/v1/nodes/n1",
            "application/merge-patch+json",
            br#"{"metadata":{"annotations":{"berth.dev/taint-expiry":"maint:NoSchedule=tomorrow"}}}"#
                .to_vec(),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(
        v["details"]["causes"][0]["field"],
        "metadata.annotations[berth.dev/taint-expiry]"
    );
    let warnings = patch_node(&api, "n1", br#"{"spec":{"taints":null}}"#).await;
    assert!(warnings.is_empty());
    let (_, stored) = api.req("GET", "/api/v1/nodes/n1", Value::Null).await;
    assert!(
        stored["metadata"]["annotations"]["berth.dev/taint-expiry"].is_null(),
        "{stored}"
    );
}
