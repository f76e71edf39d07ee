//! The fuzzing harness of the API server's parsers (issue 18): every parser
//! that takes input from outside the process, fed random and mutated input
//! by proptest, in CI, for a fixed number of cases each from a fixed seed.
//! Every target checks the same contract: no panic, a bounded time per
//! input, and for bad input a 4xx-class refusal (or success), never a 5xx.
//!
//! | target | input |
//! | --- | --- |
//! | `request_bodies_decode_or_are_refused` | JSON and YAML bodies ([`berth_apiserver::body`]) |
//! | `patches_apply_or_are_refused_with_4xx` | the four patch types against a realistic pod |
//! | `selectors_parse_or_are_refused_with_400` | label and field selectors |
//! | `continue_tokens_decode_or_are_refused_with_400` | `continue` tokens |
//! | `malformed_requests_get_statuses_and_the_server_keeps_serving` | whole requests through the router |
//!
//! Inputs are random bytes, random text over each grammar's alphabet, and
//! seeds (valid inputs) with random edits. The other parsers of outside
//! input have their targets in their own crates: quantities, taint specs
//! and durations in `berth-core/tests/fuzz.rs`, scenario files in
//! `berth-sim/tests/fuzz.rs`. Case counts and seed corpora are recorded in
//! docs/benchmarks.md.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::body::{BodyLimits, DecodeError, Format};
use berth_apiserver::patch::{PatchKind, PatchType, apply_patch};
use berth_apiserver::server::router;
use berth_core::clock::Clock;
use berth_core::fuzz::{PER_INPUT, config as fuzz_config, mutated, seeds, text_over};
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
        yaml_text().prop_map(String::into_bytes),
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
    "/api/v1/pods?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi94In0",
    "/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact",
    "/api/v1/pods?resourceVersion=99999999&resourceVersionMatch=Exact",
    "/api/v1/pods?resourceVersionMatch=bogus",
    "/api/v1/nodes/n1?fieldValidation=Strict",
    "/api/v1/namespaces/default/pods/p1?fieldValidation=Strict&fieldManager=f",
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
    #![proptest_config(fuzz_config(600))]

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
                let started = std::time::Instant::now();
                let (status, bytes) = call(server, method, target, content_type, body).await;
                prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
                prop_assert!((200..500).contains(&status), "status {status}: {}", String::from_utf8_lossy(&bytes));
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

/// Cases per target (each case of the parser targets runs every input it
/// draws).
const BODY_CASES: u32 = 2_000;
const PARSER_CASES: u32 = 2_000;

const YAML_SEEDS: &[&str] = &[
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    image: nginx\n    args: [\"--a\", '--b']\n",
    "a: &x {b: [1, 2.5, yes, ~, 0x1f, 012]}\nc: *x\nd:\n  <<: *x\n  e: |\n    text\n",
    "metadata:\n  name: a\n  name: b\n",
    "- [a, {b: c}]\n- ? k\n  : v\n",
    "a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
    "---\na: 1\n...\n",
    "{\"json\": {\"in\": [\"yaml\", 1, null, true]}}",
];

fn yaml_text() -> impl Strategy<Value = String> {
    prop_oneof![
        mutated(seeds(YAML_SEEDS), " \n-:[]{},&*!|>'\"#?%@`~.0aZ<"),
        text_over(" \n\t-:[]{},&*!|>'\"#?a1", 120),
        // Deep nesting, flow and block, past any depth limit.
        (1usize..3000, any::<bool>()).prop_map(|(depth, flow)| if flow {
            format!("a: {}{}", "[".repeat(depth), "]".repeat(depth))
        } else {
            (0..depth.min(400))
                .map(|i| format!("{}a:\n", " ".repeat(i)))
                .collect()
        }),
    ]
}

fn json_text() -> impl Strategy<Value = String> {
    prop_oneof![
        json_value().prop_map(|v| v.to_string()),
        mutated(
            seeds(&[
                r#"{"metadata":{"name":"a","name":"b"},"spec":{"x":[1,2,{"y":null}]}}"#,
                "[1e400, -0, 1.5e-9, \"\\ud800\"]"
            ]),
            "{}[]\",:0123456789.eE+-ntrufals\\ "
        ),
        (1usize..3000).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
    ]
}

proptest! {
    #![proptest_config(fuzz_config(BODY_CASES))]

    #[test]
    fn request_bodies_decode_or_are_refused(
        yaml in yaml_text(),
        json in json_text(),
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        max_depth in 1usize..=128,
    ) {
        let limits = BodyLimits { max_depth };
        for (format, input) in [(Format::Yaml, yaml.as_bytes()), (Format::Json, json.as_bytes()), (Format::Yaml, &bytes), (Format::Json, &bytes)] {
            let started = std::time::Instant::now();
            match berth_apiserver::body::decode(format, input, limits) {
                Ok(decoded) => prop_assert!(depth(&decoded.value) <= max_depth, "{format:?} {max_depth}"),
                Err(DecodeError::TooDeep { max_depth: named, .. }) => prop_assert_eq!(named, max_depth),
                Err(DecodeError::Syntax(message)) => prop_assert!(!message.is_empty()),
            }
            prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
        }
    }
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn realistic_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7",
            "labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["x/y"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}]},
        "spec": {
            "nodeName": "n1",
            "containers": [
                {"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}],
                 "resources": {"requests": {"cpu": "100m"}}, "volumeMounts": [{"name": "d", "mountPath": "/d"}]},
                {"name": "side", "image": "envoy"}
            ],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "d", "emptyDir": {}}]
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

const PATCH_SEEDS: &[&str] = &[
    r#"{"metadata":{"labels":{"app":null,"x":"y"}},"spec":{"containers":[{"name":"app","image":"v2"}]}}"#,
    r#"{"spec":{"containers":[{"name":"app","$patch":"delete"}],"$setElementOrder/containers":[{"name":"side"}]}}"#,
    r#"{"spec":{"tolerations":[{"key":"k","$patch":"replace"}],"$retainKeys":["tolerations"]}}"#,
    r#"[{"op":"add","path":"/metadata/labels/a","value":"b"},{"op":"test","path":"/spec/nodeName","value":"n1"},{"op":"move","from":"/spec/nodeName","path":"/spec/x"}]"#,
    r#"[{"op":"remove","path":"/spec/containers/0"},{"op":"copy","from":"/status","path":"/spec/s"}]"#,
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: v3\n",
    r#"{"apiVersion":"v1","kind":"Pod","spec":{"containers":[1]}}"#,
];

proptest! {
    #![proptest_config(fuzz_config(PARSER_CASES))]

    #[test]
    fn patches_apply_or_are_refused_with_4xx(
        patch_type in prop::sample::select(PatchType::ALL.to_vec()),
        patch in prop_oneof![
            mutated(seeds(PATCH_SEEDS), "{}[]\",:$/0a-~ \nnull"),
            json_value().prop_map(|v| v.to_string()),
            yaml_text(),
        ],
        manager in prop::option::of(prop_oneof![Just("m".to_string()), "[ -~]{0,140}"]),
    ) {
        let started = std::time::Instant::now();
        let result = apply_patch(patch_type, &PatchKind::Pod, &realistic_pod(), patch.as_bytes(), manager.as_deref());
        prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
        match result {
            Ok(patched) => prop_assert!(patched.is_object()),
            Err(e) => prop_assert!((400..500).contains(&e.http_status()), "{patch_type:?} {patch}: {} {e}", e.http_status()),
        }
    }

    #[test]
    fn selectors_parse_or_are_refused_with_400(
        labels in prop_oneof![
            mutated(seeds(&["app=web,tier!=db", "env in (prod, qa),!x,y", "a notin (b),c>3,d<1", "k8s.io/app==v,x"]), "=!,() <>a-z./_0123456789inot"),
            text_over("=!,() <>az./_9", 60),
        ],
        fields in prop_oneof![
            mutated(seeds(&["spec.nodeName=n1,metadata.namespace!=kube-system", "status.phase=Running", "metadata.name==a\\,b"]), "=!,\\.abcdefghijklmnopqrstuvwxyzN "),
            text_over("=!,\\.az ", 60),
        ],
    ) {
        let started = std::time::Instant::now();
        let _ = berth_apiserver::selectors::LabelSelector::parse(&labels);
        let _ = berth_apiserver::selectors::FieldSelector::parse(&fields);
        match berth_apiserver::strategy::field_selector(&berth_apiserver::resources::PODS, &fields) {
            Ok(_) => {}
            Err(e) => prop_assert_eq!(e.code, 400),
        }
        prop_assert!(started.elapsed() < PER_INPUT, "{:?}", started.elapsed());
    }

    #[test]
    fn continue_tokens_decode_or_are_refused_with_400(
        token in prop_oneof![
            "[A-Za-z0-9_=+/%-]{0,80}",
            mutated(seeds(&[r#"{"v":"meta.k8s.io/v1","rv":5,"start":"web\u0000"}"#, r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"../a//b/./c"}"#]), "{}\":,./\\0123456789-a").prop_map(|json| {
                use base64::Engine;
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
            }),
        ],
    ) {
        let prefix = "/registry/pods/default/";
        match berth_apiserver::list_options::decode_continue(&token, prefix) {
            Ok(next) => prop_assert!(next.start_key.starts_with(prefix), "{}", next.start_key),
            Err(e) => {
                prop_assert_eq!(e.code, 400);
                prop_assert!(e.message.starts_with("invalid continue token: "), "{}", e.message);
            }
        }
    }
}
