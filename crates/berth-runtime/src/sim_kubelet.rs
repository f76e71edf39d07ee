//! The kubelet endpoints of simulated nodes: one router for a whole fleet
//! over its [`SimRuntime`], serving each node what a real agent serves
//! ([`crate::log_server`] and the agent's `/stats/summary`), so that the
//! API server reaches a simulated node the way it reaches a real one.
//!
//! - `GET /containerLogs/{namespace}/{pod}/{container}`: the container's
//!   made-up output ([`SimRuntime::log`]) with the kubelet's options
//!   (`tailLines`, `limitBytes`, `timestamps`, `sinceSeconds`, ...).
//! - `GET /stats/summary`: the node's figures ([`SimRuntime::summary`]).
//!
//! Which node is asked is told by the credential presented: the API server
//! presents the node's own token, as to a real agent, and the fleet knows
//! each of its nodes' tokens. A request with no token of the fleet's is
//! 401, as a real agent answers it.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use berth_core::clock::Clock;

use crate::RuntimeError;
use crate::sim::SimRuntime;

#[derive(Clone)]
struct Fleet {
    runtime: Arc<SimRuntime>,
    /// Each node's token → its name.
    nodes: Arc<HashMap<String, String>>,
    clock: Clock,
}

impl Fleet {
    /// The node whose token the request carries.
    fn node(&self, headers: &HeaderMap) -> Option<&str> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))?;
        self.nodes.get(token).map(String::as_str)
    }
}

/// The endpoints of the fleet's nodes, given as (node name, token).
pub fn router(
    runtime: Arc<SimRuntime>,
    nodes: impl IntoIterator<Item = (String, String)>,
    clock: Clock,
) -> Router {
    let nodes = nodes
        .into_iter()
        .map(|(name, token)| (token, name))
        .collect();
    Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .route("/stats/summary", get(summary))
        .with_state(Fleet {
            runtime,
            nodes: Arc::new(nodes),
            clock,
        })
}

fn plain(code: StatusCode, message: impl Into<String>) -> Response {
    (code, message.into()).into_response()
}

fn unauthorized() -> Response {
    plain(StatusCode::UNAUTHORIZED, "Unauthorized")
}

async fn container_logs(
    State(fleet): State<Fleet>,
    UrlPath((namespace, pod, container)): UrlPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let Some(node) = fleet.node(&headers) else {
        return unauthorized();
    };
    let query = query.unwrap_or_default();
    let previous = form_urlencoded::parse(query.as_bytes())
        .any(|(k, v)| k == "previous" && matches!(&*v, "1" | "t" | "T" | "true" | "TRUE" | "True"));
    let log = match fleet
        .runtime
        .log(node, &namespace, &pod, &container, previous)
    {
        Ok(log) => log,
        Err(e @ (RuntimeError::UnknownPod(_) | RuntimeError::UnknownContainer { .. })) => {
            return plain(StatusCode::NOT_FOUND, e.to_string());
        }
        Err(e) => return plain(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match crate::log_server::render_whole(&log, &query, fleet.clock.now()) {
        Ok(out) => {
            let mut response = out.into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            response
        }
        Err(message) => plain(StatusCode::BAD_REQUEST, message),
    }
}

async fn summary(State(fleet): State<Fleet>, headers: HeaderMap) -> Response {
    let Some(node) = fleet.node(&headers) else {
        return unauthorized();
    };
    axum::Json(fleet.runtime.summary(node)).into_response()
}
