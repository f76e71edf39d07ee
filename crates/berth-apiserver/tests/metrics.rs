//! Issue 18, defect 2: request paths became Prometheus labels before
//! authentication (20,000 unauthenticated GETs of random paths added
//! 700,000 series). The metrics live in one registry per process, so this
//! file is its own test binary with one test.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::server::router;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use tower::ServiceExt;

async fn status_of(server: &Arc<ApiServer>, method: &str, uri: &str, token: Option<&str>) -> u16 {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let Ok(request) = request.body(Body::empty()) else {
        return 0;
    };
    match router(server.clone()).oneshot(request).await {
        Ok(response) => response.status().as_u16(),
        Err(never) => match never {},
    }
}

/// The series `/metrics` shows (one line each, comments aside).
fn series() -> Vec<String> {
    berth_apiserver::metrics::render()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit_once(' ').map_or(l, |(name, _)| name).to_string())
        .collect()
}

/// SplitMix64: random enough paths, the same on every run.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn random_path(state: &mut u64) -> String {
    let n = next(state);
    match n % 6 {
        0 => format!("/api/v1/{n:x}"),
        1 => format!("/api/v1/namespaces/ns{n:x}/pods/p{n:x}"),
        2 => format!("/apis/g{n:x}.example/v{}/r{n:x}/x/y", n % 97),
        3 => format!("/api/v1/nodes/n{n:x}/s{n:x}"),
        4 => format!("/api/v{n:x}/pods"),
        _ => format!("/{n:x}/{n:x}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_paths_never_add_metric_series() {
    let store = AnyStore::Memory(MemStore::new());
    let server = ApiServer::new(store, Clock::real(), ApiConfig::default())
        .await
        .unwrap_or_else(|e| panic!("server: {e}"));
    server.auth.add_token("admin", User::admin());
    let before = series();
    let mut state = 18;
    for i in 0..20_000 {
        let method = ["GET", "POST", "PATCH", "DELETE", "BREW"][i % 5];
        let status = status_of(&server, method, &random_path(&mut state), None).await;
        assert_eq!(status, 401);
    }
    assert_eq!(series(), before, "unauthenticated requests added series");

    // Authenticated requests for paths the server does not serve (404)
    // add none either; served resources add series from a fixed set (the
    // resource's own names, the scope, the code), whatever the names in
    // the path.
    for _ in 0..2_000 {
        let path = random_path(&mut state);
        let status = status_of(&server, "GET", &path, Some("admin")).await;
        assert!(status == 404 || status == 200, "{path}: {status}");
    }
    let served_gets = series();
    for _ in 0..2_000 {
        let n = next(&mut state);
        let status = status_of(
            &server,
            "GET",
            &format!("/api/v1/namespaces/ns{n:x}/pods/p{n:x}"),
            Some("admin"),
        )
        .await;
        assert_eq!(status, 404);
    }
    assert_eq!(series(), served_gets, "names in paths became labels");
    let new: Vec<&String> = served_gets.iter().filter(|s| !before.contains(s)).collect();
    assert!(
        new.iter()
            .all(|s| !s.contains("ns") && !s.contains("p0") && s.len() < 400),
        "{new:#?}"
    );
}
