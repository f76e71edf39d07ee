//! `/livez`, `/readyz` and `/healthz`, as upstream answers them: `ok`, or
//! 500 with one `[-]<check> failed: <reason>` line per failing check.
//!
//! Ready means the watch caches have loaded and the store serves reads and
//! writes. Live means the process can still serve at all: a store whose
//! file could not be reopened after a storage failure fails it, so that a
//! supervisor restarts the process; a store that reopened its file and
//! only waits for its disk to take writes again does not (a restart would
//! not help, and reads still work).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use berth_store::StoreHealth;

use crate::api::ApiServer;

/// The answer to a health path (`/livez`, `/readyz`, `/healthz`).
pub async fn check(api: &ApiServer, path: &str) -> Response {
    let readiness = path == "/readyz";
    let mut failed = Vec::new();
    match api.store.health() {
        StoreHealth::Healthy => {}
        StoreHealth::Degraded(reason) if readiness => {
            failed.push(format!("[-]store failed: {reason}"));
        }
        StoreHealth::Degraded(_) => {}
        StoreHealth::Failed(reason) => failed.push(format!("[-]store failed: {reason}")),
    }
    if readiness && !api.is_ready().await {
        failed.push("[-]informer-sync failed: watch caches are loading".to_string());
    }
    if failed.is_empty() {
        return text(StatusCode::OK, "ok".to_string());
    }
    let name = path.trim_start_matches('/');
    text(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("{}\n{name} check failed", failed.join("\n")),
    )
}

fn text(code: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
