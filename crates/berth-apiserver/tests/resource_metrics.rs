//! `metrics.k8s.io/v1beta1` and `pods/log` of simulated nodes, in one
//! process: two simulated nodes serve their kubelet endpoints to the API
//! server in process (`berth_runtime::sim_kubelet`), a third has an agent
//! that cannot be reached, a fourth none at all.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_core::clock::Clock;
use berth_core::node_stats::{SIMULATED_SYSTEM, Usage, WINDOW, seed_of, simulated_usage};
use berth_runtime::Runtime;
use berth_runtime::sim::SimRuntime;
use berth_store::{AnyStore, MemStore};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Cluster {
    api: Arc<ApiServer>,
    router: axum::Router,
    clock: Clock,
}

impl Cluster {
    /// `method path` as the admin: the status code and the body as JSON
    /// (or as a string when it is not JSON).
    async fn call(&self, method: &str, path: &str) -> (u16, Value) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", "Bearer admin-token")
            .header("content-type", "application/json")
            .body(Body::from(if method == "GET" { "" } else { "{}" }))
            .expect("request");
        let response = self.router.clone().oneshot(request).await.expect("served");
        let code = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (code, body)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path).await
    }

    async fn create(&self, path: &str, object: Value) {
        let request = Request::post(path)
            .header("authorization", "Bearer admin-token")
            .header("content-type", "application/json")
            .body(Body::from(object.to_string()))
            .expect("request");
        let response = self.router.clone().oneshot(request).await.expect("served");
        assert_eq!(response.status().as_u16(), 201, "create {path} {object}");
    }
}

/// Nodes `sim-a` and `sim-b` (simulated, in process), `gone` (an agent at
/// an address nothing listens on), `bare` (no agent credential); pods
/// `web` on sim-a, `db` (two containers) on sim-b, `waiting` unbound.
async fn cluster() -> Cluster {
    let clock = Clock::virtual_from("2026-03-01T12:00:05Z".parse().expect("time"));
    let api = ApiServer::new(
        AnyStore::Memory(MemStore::new()),
        clock.clone(),
        ApiConfig::default(),
    )
    .await
    .expect("api server");
    api.auth.add_token("admin-token", User::admin());
    let router = berth_apiserver::server::router(api.clone());
    let cluster = Cluster {
        api,
        router,
        clock: clock.clone(),
    };
    for (name, labels, address) in [
        ("sim-a", json!({"pool": "sim"}), "10.0.0.1"),
        ("sim-b", json!({"pool": "sim"}), "10.0.0.2"),
        ("gone", json!({"pool": "real"}), "127.0.0.1"),
        ("bare", json!({"pool": "real"}), "127.0.0.1"),
    ] {
        cluster
            .create(
                "/api/v1/nodes",
                json!({"metadata": {"name": name, "labels": labels}, "status": {
                    "addresses": [{"type": "InternalIP", "address": address}],
                    // Port 1: nothing listens there.
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": 1}},
                }}),
            )
            .await;
    }
    let runtime = Arc::new(SimRuntime::new(clock.clone()));
    let tokens = [
        ("sim-a", "token-a"),
        ("sim-b", "token-b"),
        ("gone", "token-g"),
    ];
    for (node, token) in tokens {
        cluster.api.auth.add_node_credential(node, token);
    }
    let sim_nodes = tokens[..2]
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()));
    cluster.api.kubelets.attach(
        ["sim-a".to_string(), "sim-b".to_string()],
        berth_runtime::sim_kubelet::router(runtime.clone(), sim_nodes, clock.clone()),
    );
    let container = |name: &str, image: &str, requests: Value| json!({"name": name, "image": image, "resources": {"requests": requests}});
    let pods = [
        json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"nodeName": "sim-a",
            "containers": [container("app", "nginx:1", json!({"cpu": "250m", "memory": "64Mi"}))]}}),
        json!({"metadata": {"name": "db", "labels": {"app": "db"}}, "spec": {"nodeName": "sim-b",
            "containers": [container("db", "postgres:17", json!({"cpu": "1", "memory": "1Gi"})),
                           container("sidecar", "busybox", json!({}))]}}),
        json!({"metadata": {"name": "waiting"}, "spec": {
            "containers": [container("app", "nginx:1", json!({}))]}}),
    ];
    for pod in pods {
        cluster.create("/api/v1/namespaces/default/pods", pod).await;
    }
    for name in ["web", "db"] {
        let (_, pod) = cluster
            .get(&format!("/api/v1/namespaces/default/pods/{name}"))
            .await;
        let pod = serde_json::from_value(pod).expect("a pod");
        runtime.start_pod(&pod).await.expect("started");
    }
    cluster
}

/// What the simulated figures are now for these parts.
fn figure(clock: &Clock, requested: Usage, parts: &[&str]) -> Usage {
    let window = u64::try_from(clock.now().as_second()).unwrap_or(0) / WINDOW.as_secs();
    simulated_usage(requested, seed_of(parts, window))
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn node_metrics_leave_out_nodes_whose_agent_cannot_be_reached() {
    let cluster = cluster().await;
    let (code, list) = cluster.get("/apis/metrics.k8s.io/v1beta1/nodes").await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "NodeMetricsList");
    assert_eq!(names(&list), ["sim-a", "sim-b"], "{list}");
    // sim-a: its system's figures and web's, each with its own noise.
    let (_, uid) = cluster.get("/api/v1/namespaces/default/pods/web").await;
    let uid = uid["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let web = Usage {
        nano_cores: 250_000_000,
        memory_bytes: 64 << 20,
    };
    let want = figure(&cluster.clock, SIMULATED_SYSTEM, &["sim-a"]).plus(figure(
        &cluster.clock,
        web,
        &["sim-a", &uid, "app"],
    ));
    let sim_a = &list["items"][0];
    assert_eq!(
        sim_a["usage"],
        json!({
            "cpu": berth_apiserver::resource_metrics::cpu_quantity(want.nano_cores),
            "memory": berth_apiserver::resource_metrics::memory_quantity(want.memory_bytes),
        })
    );
    assert_eq!(sim_a["window"], "10s");
    assert_eq!(sim_a["timestamp"], "2026-03-01T12:00:05.000000000Z");
    assert_eq!(sim_a["metadata"]["labels"], json!({"pool": "sim"}));

    // A label selector selects Nodes; a get of a node without figures is
    // metrics-server's 404.
    let (_, real) = cluster
        .get("/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=pool%3Dreal")
        .await;
    assert_eq!(names(&real), Vec::<&str>::new(), "{real}");
    for node in ["gone", "bare", "nope"] {
        let (code, status) = cluster
            .get(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{node}"))
            .await;
        assert_eq!(code, 404, "{status}");
        assert_eq!(
            status["message"],
            format!("nodemetrics.metrics.k8s.io {node:?} not found")
        );
    }
    let (code, one) = cluster
        .get("/apis/metrics.k8s.io/v1beta1/nodes/sim-b")
        .await;
    assert_eq!(
        (code, one["kind"].as_str()),
        (200, Some("NodeMetrics")),
        "{one}"
    );
}

#[tokio::test(start_paused = true)]
async fn pod_metrics_are_listed_per_namespace_and_selector_and_got_by_name() {
    let cluster = cluster().await;
    let (code, all) = cluster.get("/apis/metrics.k8s.io/v1beta1/pods").await;
    assert_eq!(code, 200, "{all}");
    assert_eq!(all["kind"], "PodMetricsList");
    let mut got = names(&all);
    got.sort();
    assert_eq!(got, ["db", "web"], "the unbound pod has no figures: {all}");
    let (_, selected) = cluster
        .get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dweb")
        .await;
    assert_eq!(names(&selected), ["web"], "{selected}");
    let (_, elsewhere) = cluster
        .get("/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods")
        .await;
    assert_eq!(names(&elsewhere), Vec::<&str>::new(), "{elsewhere}");

    let (code, db) = cluster
        .get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/db")
        .await;
    assert_eq!(code, 200, "{db}");
    let containers: Vec<&str> = db["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(containers, ["db", "sidecar"], "{db}");
    let (code, waiting) = cluster
        .get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/waiting")
        .await;
    assert_eq!(code, 404, "{waiting}");
    assert_eq!(
        waiting["message"],
        "podmetrics.metrics.k8s.io \"default/waiting\" not found"
    );
}

#[tokio::test(start_paused = true)]
async fn the_metrics_api_is_read_only_and_discovered() {
    let cluster = cluster().await;
    for (method, path) in [
        ("DELETE", "/apis/metrics.k8s.io/v1beta1/nodes/sim-a"),
        (
            "POST",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
        ),
        ("PATCH", "/apis/metrics.k8s.io/v1beta1/nodes/sim-a"),
    ] {
        let (code, status) = cluster.call(method, path).await;
        assert_eq!(code, 405, "{method} {path}: {status}");
    }
    let (code, _) = cluster.get("/apis/metrics.k8s.io/v1beta1/services").await;
    assert_eq!(code, 404);
    let (_, groups) = cluster.get("/apis").await;
    let metrics = groups["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["name"] == "metrics.k8s.io")
        .cloned();
    assert_eq!(
        metrics.map(|g| g["preferredVersion"]["groupVersion"].clone()),
        Some(json!("metrics.k8s.io/v1beta1"))
    );
    let (_, resources) = cluster.get("/apis/metrics.k8s.io/v1beta1").await;
    assert_eq!(
        resources["resources"],
        json!([
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn logs_of_a_pod_on_a_simulated_node_are_its_made_up_output_or_a_400() {
    let cluster = cluster().await;
    let log = "/api/v1/namespaces/default/pods";
    let (code, text) = cluster.get(&format!("{log}/web/log")).await;
    assert_eq!(code, 200, "{text}");
    assert_eq!(
        text.as_str().unwrap_or_default(),
        "starting nginx:1 (container app of pod default/web, simulated by berth on node sim-a)\n\
         nothing runs on a simulated node: these lines are made up by berth\n\
         ready\n"
    );
    struct Case {
        name: &'static str,
        path: &'static str,
        code: u16,
        want: &'static str,
    }
    let cases = [
        Case {
            name: "the last line",
            path: "web/log?tailLines=1",
            code: 200,
            want: "ready\n",
        },
        Case {
            name: "with timestamps, from when the pod started",
            path: "web/log?tailLines=1&timestamps=true",
            code: 200,
            want: "2026-03-01T12:00:05.300000000Z ready\n",
        },
        Case {
            name: "a byte limit",
            path: "web/log?limitBytes=8",
            code: 200,
            want: "starting",
        },
        Case {
            name: "a simulated container never restarted",
            path: "web/log?previous=true",
            code: 400,
            want: "previous terminated container \"app\" in pod \"web\" not found",
        },
        Case {
            name: "two containers, none named",
            path: "db/log",
            code: 400,
            want: "a container name must be specified for pod db, choose one of: [db sidecar]",
        },
        Case {
            name: "a container the pod lacks",
            path: "web/log?container=nope",
            code: 400,
            want: "container nope is not valid for pod web",
        },
        Case {
            name: "an unbound pod has an empty log",
            path: "waiting/log",
            code: 200,
            want: "",
        },
    ];
    for Case {
        name,
        path,
        code,
        want,
    } in cases
    {
        let (got_code, body) = cluster.get(&format!("{log}/{path}")).await;
        let text = body["message"]
            .as_str()
            .or(body.as_str())
            .unwrap_or_default();
        assert_eq!(got_code, code, "{name}: {body}");
        assert!(text.contains(want), "{name}: {text:?} lacks {want:?}");
    }
}
