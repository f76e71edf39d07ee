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
    let caches_loaded = !readiness || api.is_ready().await;
    let failed = failed_checks(readiness, &api.store.health(), caches_loaded);
    if failed.is_empty() {
        return text(StatusCode::OK, "ok".to_string());
    }
    let name = path.trim_start_matches('/');
    text(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("{}\n{name} check failed", failed.join("\n")),
    )
}

/// The failing checks' lines, for readiness or (`readiness` false)
/// liveness.
fn failed_checks(readiness: bool, store: &StoreHealth, caches_loaded: bool) -> Vec<String> {
    let mut failed = Vec::new();
    match store {
        StoreHealth::Healthy => {}
        StoreHealth::Degraded(_) if !readiness => {}
        StoreHealth::Degraded(reason) | StoreHealth::Failed(reason) => {
            failed.push(format!("[-]store failed: {reason}"));
        }
    }
    if !caches_loaded {
        failed.push("[-]informer-sync failed: watch caches are loading".to_string());
    }
    failed
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_degraded_store_is_not_ready_and_a_failed_one_not_live() {
        struct Case {
            name: &'static str,
            store: StoreHealth,
            caches_loaded: bool,
            want_ready: bool,
            want_live: bool,
        }
        let cases = [
            Case {
                name: "healthy",
                store: StoreHealth::Healthy,
                caches_loaded: true,
                want_ready: true,
                want_live: true,
            },
            Case {
                name: "caches loading",
                store: StoreHealth::Healthy,
                caches_loaded: false,
                want_ready: false,
                want_live: true,
            },
            Case {
                name: "disk full, file reopened",
                store: StoreHealth::Degraded("No space left on device".into()),
                caches_loaded: true,
                want_ready: false,
                want_live: true,
            },
            Case {
                name: "file cannot be reopened",
                store: StoreHealth::Failed("cannot reopen".into()),
                caches_loaded: true,
                want_ready: false,
                want_live: false,
            },
        ];
        for case in cases {
            let ready = failed_checks(true, &case.store, case.caches_loaded);
            let live = failed_checks(false, &case.store, true);
            assert_eq!(
                ready.is_empty(),
                case.want_ready,
                "{}: {ready:?}",
                case.name
            );
            assert_eq!(live.is_empty(), case.want_live, "{}: {live:?}", case.name);
            if let StoreHealth::Degraded(reason) | StoreHealth::Failed(reason) = &case.store {
                assert!(
                    ready.iter().any(|l| l.contains(reason.as_str())),
                    "{}",
                    case.name
                );
            }
        }
    }
}
