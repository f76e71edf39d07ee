//! The API server through its router, in process, on the embedded store
//! in a temporary directory, with an admin, a node and a join token: what
//! the API's integration tests share.
#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::resources::ResourceType;
use berth_apiserver::server::router;
use berth_core::clock::Clock;
use berth_core::test_util::{make_container, make_node, make_pod};
use berth_store::{AnyStore, RedbStore};
use serde_json::{Value, json};
use tower::ServiceExt;

pub const ADMIN: &str = "admin-token";
pub const NODE1: &str = "node1-token";
pub const JOIN: &str = "join-token";

pub struct Api {
    pub server: Arc<ApiServer>,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub async fn api_with(config: ApiConfig) -> Api {
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

pub async fn api() -> Api {
    api_with(ApiConfig::default()).await
}

impl Api {
    pub async fn call(
        &self,
        token: Option<&str>,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let (status, _, value) = self
            .call_with_headers(token, method, uri, content_type, body)
            .await;
        (status, value)
    }

    /// [`Api::call`], with the response's headers.
    pub async fn call_with_headers(
        &self,
        token: Option<&str>,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, axum::http::HeaderMap, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", content_type);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(Body::from(body)).expect("request");
        let (status, headers, bytes) = send(&self.server, request).await;
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, headers, value)
    }

    pub async fn req(&self, method: &str, uri: &str, body: Value) -> (StatusCode, Value) {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        self.call(Some(ADMIN), method, uri, "application/json", bytes)
            .await
    }

    pub async fn create(&self, uri: &str, body: Value) -> Value {
        let (status, value) = self.req("POST", uri, body).await;
        assert_eq!(status, StatusCode::CREATED, "{value}");
        value
    }
}

pub fn assert_status(value: &Value, code: u16, reason: &str) {
    assert_eq!(value["kind"], "Status", "{value}");
    assert_eq!(value["code"], code, "{value}");
    assert_eq!(value["reason"], reason, "{value}");
}

/// `request` through the server's router: the status, headers and body.
pub async fn send(
    server: &Arc<ApiServer>,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let response = router(server.clone())
        .oneshot(request)
        .await
        .expect("response");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, headers, bytes.to_vec())
}

/// Pod `name` labelled `app=web` with one busybox container `c`, as a
/// client sends it.
pub fn web_pod(name: &str) -> Value {
    let busybox = make_container().name("c").image("busybox").obj();
    make_pod()
        .name(name)
        .label("app", "web")
        .containers(vec![busybox])
        .json()
}

/// Node `name` with room for 110 pods, as a client sends it.
pub fn allocatable_node(name: &str) -> Value {
    make_node()
        .name(name)
        .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
        .json()
}

/// A valid object of each served type named `name` (a review's request,
/// for the types that are not stored), for the tests that go over all of
/// them.
pub fn sample(rt: &ResourceType, name: &str) -> Value {
    let mut object = match (rt.group, rt.kind) {
        ("", "Namespace") => json!({}),
        ("", "Node") => allocatable_node(name),
        ("", "Pod") => web_pod(name),
        ("", "Event") => {
            json!({"involvedObject": {"kind": "Pod", "name": "x", "namespace": "default"}, "reason": "Tested", "message": "m", "type": "Normal"})
        }
        ("events.k8s.io", "Event") => {
            json!({"regarding": {"kind": "Pod", "name": "x", "namespace": "default"}, "reason": "Tested", "note": "n", "type": "Normal", "action": "Test", "reportingController": "berth.dev/test", "reportingInstance": "i", "eventTime": "2026-01-01T00:00:00.000000Z"})
        }
        ("coordination.k8s.io", "Lease") => {
            json!({"spec": {"holderIdentity": "h", "leaseDurationSeconds": 40}})
        }
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet") => {
            let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}})
        }
        ("apps", "ControllerRevision") => json!({"data": {"spec": {}}, "revision": 1}),
        ("scheduling.k8s.io", "PriorityClass") => json!({"value": 100}),
        ("", "ConfigMap") => json!({"data": {"k": "v"}, "binaryData": {"b": "AAH/"}}),
        ("", "Secret") => json!({"data": {"k": "AAH/"}}),
        ("", "ServiceAccount") => json!({"automountServiceAccountToken": false}),
        ("", "Service") => {
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": "http"}]}})
        }
        ("", "Endpoints") => {
            json!({"subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80, "protocol": "TCP"}]}]})
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": true}}], "ports": [{"port": 80}]})
        }
        ("", "ResourceQuota") => json!({"spec": {"hard": {"pods": "10", "requests.cpu": "500m"}}}),
        ("", "LimitRange") => {
            json!({"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}})
        }
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            json!({"spec": {"namespace": "default"}})
        }
        ("authentication.k8s.io", "SelfSubjectReview") => json!({}),
        ("", "PersistentVolume") => {
            json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/srv/pv"}}})
        }
        ("", "PersistentVolumeClaim") => {
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        }
        ("", "ReplicationController") => {
            let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
            json!({"spec": {"replicas": 1, "selector": {"app": "web"}, "template": template}})
        }
        ("storage.k8s.io", "StorageClass") => json!({"provisioner": "csi.example.com"}),
        ("storage.k8s.io", "CSIDriver") => json!({"spec": {"attachRequired": true}}),
        ("storage.k8s.io", "CSINode") => {
            json!({"spec": {"drivers": [{"name": "csi.example.com", "nodeID": "node1"}]}})
        }
        ("storage.k8s.io", "CSIStorageCapacity") => {
            json!({"storageClassName": "fast", "capacity": "10Gi"})
        }
        ("storage.k8s.io", "VolumeAttachment") => {
            json!({"spec": {"attacher": "csi.example.com", "nodeName": "node1", "source": {"persistentVolumeName": "pv1"}}})
        }
        ("resource.k8s.io", "DeviceClass") => {
            json!({"spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}})
        }
        ("resource.k8s.io", "ResourceClaim") => {
            json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
        }
        ("resource.k8s.io", "ResourceSlice") => {
            json!({"spec": {"driver": "gpu.example.com", "pool": {"name": "node1", "generation": 1, "resourceSliceCount": 1}, "nodeName": "node1", "devices": [{"name": "gpu-0"}]}})
        }
        ("policy", "PodDisruptionBudget") => {
            json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
        }
        (group, kind) => panic!("no sample of {kind}.{group}: add one"),
    };
    object["apiVersion"] = json!(rt.api_version());
    object["kind"] = json!(rt.kind);
    object["metadata"] = json!({"name": name});
    object
}

/// Where `rt`'s objects in namespace `default` (or cluster-wide) are listed and created.
pub fn collection_path(rt: &ResourceType) -> String {
    let base = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    if rt.namespaced {
        format!("{base}/namespaces/default/{}", rt.plural)
    } else {
        format!("{base}/{}", rt.plural)
    }
}
