//! Malformed input never panics the server or stops it serving: random
//! bytes, random JSON, and random patches of every content type, thrown at
//! every verb, each answered with a `Status` (or a success), after which
//! the server still answers a plain read.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::server::router;
use berth_core::clock::Clock;
use berth_store::{AnyStore, RedbStore};
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn server(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> Arc<ApiServer> {
    rt.block_on(async {
        let store = AnyStore::Redb(RedbStore::open(dir).expect("store"));
        let server = ApiServer::new(store, Clock::real(), ApiConfig::default()).await.expect("server");
        server.auth.add_token("t", User::admin());
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
        for (uri, body) in [("/api/v1/nodes", node), ("/api/v1/namespaces/default/pods", pod)] {
            let _ = call(&server, "POST", uri, "application/json", body.to_string().into_bytes()).await;
        }
        server
    })
}

async fn call(
    server: &Arc<ApiServer>,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .header("authorization", "Bearer t")
        .body(Body::from(body));
    let Ok(request) = request else {
        return (0, Vec::new());
    };
    let response = router(server.clone())
        .oneshot(request)
        .await
        .expect("the router always answers");
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, bytes.to_vec())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z$/.:-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "metadata",
                    "spec",
                    "status",
                    "name",
                    "labels",
                    "taints",
                    "tolerations",
                    "key",
                    "effect",
                    "op",
                    "path",
                    "value",
                    "$patch",
                    "kind",
                    "apiVersion",
                    "containers",
                    "nodeName",
                    "resourceVersion"
                ])
                .prop_map(String::from),
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        json_value().prop_map(|v| json!([{"op": "replace", "path": "/spec", "value": v}])
            .to_string()
            .into_bytes()),
    ]
}

const TARGETS: &[&str] = &[
    "/api/v1/nodes",
    "/api/v1/nodes/n1",
    "/api/v1/nodes/n1/status",
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/p1",
    "/api/v1/namespaces/default/pods/p1/status",
    "/api/v1/namespaces/default/pods/p1/binding",
    "/api/v1/namespaces/default/pods/p1/eviction",
    "/api/v1/namespaces/default/pods?labelSelector=%28%28",
    "/api/v1/pods?fieldSelector=a%3D%3D%3D",
    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
    "/api/v1/namespaces",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn malformed_requests_get_statuses_and_the_server_keeps_serving(
        method in prop::sample::select(vec!["POST", "PUT", "PATCH", "DELETE", "GET"]),
        target in prop::sample::select(TARGETS.to_vec()),
        content_type in prop::sample::select(CONTENT_TYPES.to_vec()),
        body in body(),
    ) {
        thread_local! {
            static STATE: (tokio::runtime::Runtime, Arc<ApiServer>) = {
                let rt = runtime();
                let dir = std::env::temp_dir().join(format!("berth-fuzz-{}-{:?}", std::process::id(), std::thread::current().id()));
                let _ = std::fs::remove_dir_all(&dir);
                let server = server(&rt, &dir);
                (rt, server)
            };
        }
        STATE.with(|(rt, server)| {
            rt.block_on(async {
                let (status, bytes) = call(server, method, target, content_type, body).await;
                prop_assert!((200..600).contains(&status), "status {status}");
                if status >= 400 {
                    let value: Value = serde_json::from_slice(&bytes).map_err(|e| TestCaseError::fail(format!("not JSON: {e}")))?;
                    prop_assert_eq!(&value["kind"], "Status");
                    prop_assert_eq!(value["code"].as_u64(), Some(u64::from(status)));
                }
                let (status, _) = call(server, "GET", "/api/v1/nodes", "application/json", Vec::new()).await;
                prop_assert_eq!(status, 200);
                Ok(())
            })
        })?;
    }
}
