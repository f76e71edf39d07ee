//! `/ui/api/evictions`: the upcoming evictions the live page counts down
//! to. The due times come from berth-core's eviction rule
//! (`pod_due_with_cause`, the one the taint eviction controller runs),
//! rather than from a second copy of the rule in JavaScript that could
//! drift from it; the page asks again whenever a node's taints or a pod on
//! a tainted node change.

use std::sync::Arc;

use axum::response::Response;
use berth_core::eviction::{TaintStarts, is_eviction_taint, pod_due_with_cause};
use berth_core::taint_spec::{format_taint, format_toleration};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::super::response::json_response;
use super::super::server::ApiServer;
use crate::auth::User;
use crate::cache::Cached;
use crate::resources::{NODES, PODS};
use crate::status::ApiError;

/// Whether a node's JSON may hold a taint that evicts: a cheap test that
/// spares decoding the thousands of untainted nodes.
fn may_evict(node: &Cached) -> bool {
    node.json.contains("NoExecute") || node.json.contains("out-of-service")
}

impl ApiServer {
    /// Every pod due to be evicted: on a node with a taint that evicts,
    /// with its due time, the taint and the toleration that decided it.
    /// For cluster admins only, as `/metrics`.
    pub(super) async fn ui_evictions(&self, user: &User) -> Result<Response, ApiError> {
        super::admins_only(user, super::EVICTIONS_PATH)?;
        let nodes = self.registry.wait_current(&NODES).await?;
        let (tainted, _) = nodes.list("", may_evict).await;
        let names: std::collections::BTreeSet<String> =
            tainted.iter().map(|n| n.name.clone()).collect();
        let pods = self.registry.wait_current(&PODS).await?;
        let (bound, _) = pods
            .list("", |p| {
                p.fields
                    .get("spec.nodeName")
                    .is_some_and(|n| names.contains(n))
            })
            .await;
        let (now, gates) = (self.now(), self.config.strategy.admission.gates);
        let rows = tokio::task::spawn_blocking(move || due_rows(&tainted, &bound, gates))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(json_response(
            200,
            &json!({"now": now.to_string(), "evictions": rows}),
        ))
    }
}

/// The rows of the pods in `bound` due to leave their node in `nodes`.
fn due_rows(
    nodes: &[Arc<Cached>],
    bound: &[Arc<Cached>],
    gates: berth_core::FeatureGates,
) -> Vec<serde_json::Value> {
    let nodes: std::collections::BTreeMap<&str, Node> = nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), serde_json::from_str(&n.json).ok()?)))
        .filter(|(_, n): &(&str, Node)| {
            n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|ts| ts.iter().any(is_eviction_taint))
        })
        .collect();
    let starts = TaintStarts::default();
    let mut rows = Vec::new();
    for cached in bound {
        let Some(node) = cached
            .fields
            .get("spec.nodeName")
            .and_then(|n| nodes.get(n.as_str()))
        else {
            continue;
        };
        let Ok(pod) = serde_json::from_str::<Pod>(&cached.json) else {
            continue;
        };
        let Some(cause) = pod_due_with_cause(&pod, node, &starts, gates) else {
            continue;
        };
        rows.push(json!({
            "namespace": cached.namespace,
            "name": cached.name,
            "node": node.metadata.name,
            "due": cause.due.at.to_string(),
            "force": cause.due.force,
            "taint": format_taint(cause.taint),
            "toleration": cause.toleration.map_or_else(|| "none".to_owned(), format_toleration),
        }));
    }
    rows
}
