//! The API server through its router, in process, on the embedded store
//! in a temporary directory, with an admin, a node and a join token: what
//! the API's integration tests share.
#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::server::router;
use berth_core::clock::Clock;
use berth_store::{AnyStore, RedbStore};
use serde_json::Value;
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
