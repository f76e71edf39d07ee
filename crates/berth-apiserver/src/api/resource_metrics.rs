//! `metrics.k8s.io/v1beta1` nodes and pods, get and list (what
//! `kubectl top` asks): each Node's figures fetched from its agent's
//! `/stats/summary` as the node ([`ApiServer::kubelet_get`]), turned into
//! NodeMetrics and PodMetrics ([`crate::resource_metrics`]). As
//! metrics-server does: a node whose agent cannot be reached is left out
//! of a list (a get of it is 404), label selectors select the Nodes and
//! pods, and other verbs are 405.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::response::Response;
use berth_core::node_stats::Summary;
use futures::StreamExt;
use serde_json::Value;

use super::list::Filter;
use super::query::Query;
use super::response::json_response;
use super::server::ApiServer;
use crate::request_info::RequestInfo;
use crate::resource_metrics::{self as rm, GROUP, VERSION};
use crate::resources::{NODES, PODS, ResourceType};
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// Agents asked at once for a list.
const IN_FLIGHT: usize = 32;

/// How long an agent may take to answer (metrics-server's scrape timeout
/// is a fraction of its 15 s resolution).
const AGENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest Summary read from an agent.
const MAX_SUMMARY_BYTES: usize = 64 * 1024 * 1024;

impl ApiServer {
    /// Serves a request under `/apis/metrics.k8s.io/`.
    pub(super) async fn resource_metrics(
        &self,
        info: &RequestInfo,
        raw_query: &str,
        path: &str,
    ) -> ApiResult<Response> {
        let Some(kind) = rm::kind(&info.resource).filter(|_| info.api_version == VERSION) else {
            return Err(ApiError::path_not_found(path));
        };
        if !info.subresource.is_empty() {
            return Err(ApiError::path_not_found(path));
        }
        let query = Query::parse(raw_query);
        let now = creation_time(self.now());
        match (info.resource.as_str(), info.verb.as_str()) {
            ("nodes", "get") => {
                let not_found = || ApiError::not_found(GROUP, "nodemetrics", &info.name);
                let (node, _) = self
                    .registry
                    .read(&NODES, "", &info.name)
                    .await
                    .map_err(|_| not_found())?;
                let summary = self.summary(&info.name).await.map_err(|_| not_found())?;
                let metrics = rm::node_metrics(&node, &summary.node, &now).ok_or_else(not_found)?;
                Ok(json_response(200, &metrics))
            }
            ("nodes", "list") => {
                let nodes = self.objects(&NODES, "", &query).await?;
                let names: Vec<String> = nodes.iter().filter_map(name).collect();
                let summaries = self.summaries(names).await;
                let items = nodes
                    .iter()
                    .filter_map(|node| {
                        let summary = summaries.get(&name(node)?)?;
                        rm::node_metrics(node, &summary.node, &now)
                    })
                    .collect();
                Ok(json_response(200, &rm::list(kind, items)))
            }
            ("pods", "get") => {
                let key = format!("{}/{}", info.namespace, info.name);
                let not_found = || ApiError::not_found(GROUP, "podmetrics", &key);
                let (pod, _) = self
                    .registry
                    .read(&PODS, &info.namespace, &info.name)
                    .await
                    .map_err(|_| not_found())?;
                let node = node_of(&pod).ok_or_else(not_found)?;
                let summary = self.summary(&node).await.map_err(|_| not_found())?;
                let metrics = pod_metrics(&pod, &summary, &now).ok_or_else(not_found)?;
                Ok(json_response(200, &metrics))
            }
            ("pods", "list") => {
                let pods = self.objects(&PODS, &info.namespace, &query).await?;
                let mut nodes: Vec<String> = pods.iter().filter_map(node_of).collect();
                nodes.sort();
                nodes.dedup();
                let summaries = self.summaries(nodes).await;
                let items = pods
                    .iter()
                    .filter_map(|pod| pod_metrics(pod, summaries.get(&node_of(pod)?)?, &now))
                    .collect();
                Ok(json_response(200, &rm::list(kind, items)))
            }
            (plural, verb) => Err(ApiError::method_not_allowed(verb, plural)),
        }
    }

    /// The objects of `rt` in `namespace` that the query's selectors
    /// select, from the watch cache.
    async fn objects(
        &self,
        rt: &ResourceType,
        namespace: &str,
        query: &Query,
    ) -> ApiResult<Vec<Value>> {
        let filter = Filter::new(rt, namespace, query)?;
        let cache = self.registry.wait_current(rt).await?;
        let (items, _) = cache.list(namespace, |c| filter.matches(c)).await;
        Ok(items
            .iter()
            .filter_map(|c| serde_json::from_str(&c.json).ok())
            .collect())
    }

    /// A node's Summary from its agent.
    async fn summary(&self, node: &str) -> ApiResult<Summary> {
        let fetch = async {
            let response = self.kubelet_get(node, "/stats/summary").await?;
            let body = axum::body::to_bytes(response.into_body(), MAX_SUMMARY_BYTES)
                .await
                .map_err(ApiError::internal)?;
            serde_json::from_slice::<Summary>(&body).map_err(ApiError::internal)
        };
        let result = tokio::time::timeout(AGENT_TIMEOUT, fetch)
            .await
            .unwrap_or_else(|_| Err(ApiError::internal("the agent did not answer in time")));
        if let Err(e) = &result {
            tracing::debug!(node, error = %e.message, "no figures from the node's agent");
        }
        result
    }

    /// The Summaries of `nodes` whose agents answered.
    async fn summaries(&self, nodes: Vec<String>) -> BTreeMap<String, Summary> {
        futures::stream::iter(nodes)
            .map(|node| async move {
                let summary = self.summary(&node).await.ok();
                summary.map(|s| (node, s))
            })
            .buffer_unordered(IN_FLIGHT)
            .filter_map(futures::future::ready)
            .collect()
            .await
    }
}

fn name(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The node a pod runs on, for a pod bound and not finished.
fn node_of(pod: &Value) -> Option<String> {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// A pod's PodMetrics from its node's Summary.
fn pod_metrics(pod: &Value, summary: &Summary, now: &str) -> Option<Value> {
    let namespace = pod.pointer("/metadata/namespace").and_then(Value::as_str)?;
    let name = pod.pointer("/metadata/name").and_then(Value::as_str)?;
    let stats = summary
        .pods
        .iter()
        .find(|p| p.pod_ref.namespace == namespace && p.pod_ref.name == name)?;
    rm::pod_metrics(pod, stats, now)
}

/// An object's creation time, as RFC 3339 in whole seconds.
fn creation_time(now: jiff::Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
