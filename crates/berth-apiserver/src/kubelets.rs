//! How the API server reaches a node's kubelet endpoints (`pods/log`,
//! the resource metrics API): one request, `GET path` as the node (its
//! own credential as bearer token), to wherever the node's agent serves.
//!
//! - A real agent: over HTTPS at the node's address and kubelet port
//!   ([`crate::pod_logs::fetch`]).
//! - Simulated nodes in this process (`berth server --sim-nodes`, a
//!   scenario's nodes): their fleet attaches its kubelet router
//!   ([`Kubelets::attach`], `berth_runtime::sim_kubelet`) and the request
//!   goes to it without a network, with the same credential.
//!
//! Either way an answer that is not a success becomes an error with the
//! agent's status code and words ([`crate::pod_logs::agent_error`]), never a 500 of the
//! server's own.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use axum::response::Response;
use tower::ServiceExt;

use crate::api::ApiServer;
use crate::resources;
use crate::status::ApiError;

/// The kubelet routers of simulated nodes served in this process.
#[derive(Default)]
pub struct Kubelets {
    in_process: RwLock<Vec<InProcess>>,
}

struct InProcess {
    nodes: Arc<HashSet<String>>,
    router: Router,
}

impl std::fmt::Debug for Kubelets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kubelets")
    }
}

impl Kubelets {
    /// Serves the kubelet endpoints of `nodes` with `router`, in process.
    pub fn attach(&self, nodes: impl IntoIterator<Item = String>, router: Router) {
        if let Ok(mut in_process) = self.in_process.write() {
            in_process.push(InProcess {
                nodes: Arc::new(nodes.into_iter().collect()),
                router,
            });
        }
    }

    /// The in-process router serving `node`, if one does.
    fn router(&self, node: &str) -> Option<Router> {
        let in_process = self.in_process.read().ok()?;
        in_process
            .iter()
            .find(|k| k.nodes.contains(node))
            .map(|k| k.router.clone())
    }
}

impl ApiServer {
    /// `GET path` from node `node`'s agent as the node, streamed back.
    pub async fn kubelet_get(&self, node: &str, path: &str) -> Result<Response, ApiError> {
        let token = self.auth.node_credential(node).ok_or_else(|| {
            ApiError::internal(format!(
                "node {node:?} joined without an agent credential: its agent serves nothing"
            ))
        })?;
        if let Some(router) = self.kubelets.router(node) {
            let request = Request::get(path)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::empty())
                .map_err(ApiError::internal)?;
            let response = router.oneshot(request).await.map_err(ApiError::internal)?;
            let status = response.status();
            if !status.is_success() {
                let body = axum::body::to_bytes(response.into_body(), 64 * 1024)
                    .await
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                return Err(crate::pod_logs::agent_error(status, &body));
            }
            return Ok(response);
        }
        let (object, _) = self.registry.read(&resources::NODES, "", node).await?;
        let (host, port) = crate::pod_logs::agent_address(&object)?;
        crate::pod_logs::fetch(&host, port, path, &token).await
    }
}
