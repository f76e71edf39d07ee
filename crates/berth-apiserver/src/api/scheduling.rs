//! `GET /api/v1/namespaces/NS/pods/NAME/scheduling`: why the pod goes
//! where it goes (issue 23's live explanation, `berth explain pod`), with
//! `?taint=NODE=key=value:Effect` (repeatable; `NODE=key:Effect-` removes)
//! as a what-if.
//!
//! The API server holds no scheduling rule: it reads the cluster from its
//! watch caches (after a consistent read), applies the what-if taints with
//! berth-core's `kubectl taint` rules and admission's `timeAdded`, and asks
//! a [`SchedulingExplainer`], which the `berth` binary wires to
//! berth-scheduler's own framework (its profiles, the ones the in-process
//! scheduler runs). berth-scheduler depends on no part of the API server, so
//! the dependency stays one way. What the changed nodes' taints do to their
//! pods is the write warnings' computation ([`super::node_impact`]).

use std::fmt;
use std::sync::Arc;

use axum::response::Response;
use berth_core::taint_spec::{apply_taint_spec, parse_taint_specs};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::response::json_response;
use super::scope::Scope;
use super::server::ApiServer;
use crate::admission::taint_time_added;
use crate::cache::Cached;
use crate::resources::{NAMESPACES, NODES, PODS};
use crate::status::ApiError;

/// The cluster as the watch caches hold it, for an explanation.
#[derive(Debug, Clone, Default)]
pub struct SchedulingQuestion {
    /// The pod explained.
    pub pod: Pod,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub namespaces: Vec<Namespace>,
    /// What-if: nodes as the taints would leave them (replacing the nodes
    /// of the same name); empty without a what-if.
    pub changed_nodes: Vec<Node>,
}

/// Answers a [`SchedulingQuestion`] with the scheduler's own framework: the
/// explanation as JSON, or why there is none (a message for a 400).
pub trait SchedulingExplainer: Send + Sync {
    fn explain(&self, question: &SchedulingQuestion) -> Result<Value, String>;
}

/// The explainer a server was given (none: no scheduler in this process).
#[derive(Clone, Default)]
pub struct Explainer(pub Option<Arc<dyn SchedulingExplainer>>);

impl fmt::Debug for Explainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Explainer(Some)"
        } else {
            "Explainer(None)"
        })
    }
}

/// A `taint=NODE=spec` parameter's two halves.
fn split_taint_param(param: &str) -> Result<(&str, &str), ApiError> {
    param
        .split_once('=')
        .filter(|(node, spec)| !node.is_empty() && !spec.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "taint {param:?}: want NODE=key=value:Effect (or NODE=key:Effect- to remove)"
            ))
        })
}

fn decode_all<T: DeserializeOwned>(items: &[Arc<Cached>]) -> Vec<T> {
    items
        .iter()
        .filter_map(|c| serde_json::from_str(&c.json).ok())
        .collect()
}

impl ApiServer {
    /// `pods/{name}/scheduling`.
    pub(super) async fn pod_scheduling(&self, scope: &Scope<'_>) -> Result<Response, ApiError> {
        let Some(explainer) = self.config.explainer.0.clone() else {
            return Err(ApiError::new(
                503,
                "ServiceUnavailable",
                "no scheduler runs in this server: nothing to explain with",
            ));
        };
        let taint_params: Vec<String> = form_urlencoded::parse(scope.raw_query.as_bytes())
            .filter(|(name, _)| name == "taint")
            .map(|(_, value)| value.into_owned())
            .collect();
        let (pod_json, _) = self
            .registry
            .read(&PODS, scope.namespace, scope.name)
            .await?;
        let pod: Pod = serde_json::from_value(pod_json).map_err(ApiError::internal)?;
        let (pods, nodes, namespaces) = (
            self.registry.wait_current(&PODS).await?,
            self.registry.wait_current(&NODES).await?,
            self.registry.wait_current(&NAMESPACES).await?,
        );
        let (pods, nodes, namespaces) = (
            pods.list("", |_| true).await.0,
            nodes.list("", |_| true).await.0,
            namespaces.list("", |_| true).await.0,
        );
        // Decoding a cluster's worth of objects: not on the request's worker.
        let question = tokio::task::spawn_blocking(move || SchedulingQuestion {
            pod,
            nodes: decode_all(&nodes),
            pods: decode_all(&pods),
            namespaces: decode_all(&namespaces),
            changed_nodes: Vec::new(),
        })
        .await
        .map_err(ApiError::internal)?;
        let mut question = question;
        question.changed_nodes = self.what_if_nodes(&question.nodes, &taint_params)?;
        let mut impact = serde_json::Map::new();
        for new in &question.changed_nodes {
            let name = new.metadata.name.clone().unwrap_or_default();
            let Some(old) = question
                .nodes
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(name.as_str()))
            else {
                continue;
            };
            let lines = self.node_impact(old.clone(), new.clone()).await;
            impact.insert(name, json!(lines));
        }
        let answered = tokio::task::spawn_blocking(move || explainer.explain(&question))
            .await
            .map_err(ApiError::internal)?;
        let mut answer = answered.map_err(ApiError::bad_request)?;
        if let Some(object) = answer.as_object_mut() {
            object.insert("kind".into(), json!("PodScheduling"));
            object.insert("apiVersion".into(), json!("berth.dev/v1alpha1"));
            if let Some(what_if) = object.get_mut("whatIf").and_then(Value::as_object_mut) {
                what_if.insert("taints".into(), json!(taint_params));
                what_if.insert("impact".into(), Value::Object(impact));
            }
        }
        Ok(json_response(200, &answer))
    }

    /// The nodes the `taint=` parameters change, as the write would store
    /// them (kubectl's add/overwrite/remove rules, `timeAdded` stamped).
    fn what_if_nodes(&self, nodes: &[Node], params: &[String]) -> Result<Vec<Node>, ApiError> {
        let mut changed: Vec<Node> = Vec::new();
        for param in params {
            let (node_name, spec) = split_taint_param(param)?;
            let spec = parse_taint_specs(&[spec])
                .map_err(|e| ApiError::bad_request(format!("taint {param:?}: {e}")))?;
            let position = changed
                .iter()
                .position(|n| n.metadata.name.as_deref() == Some(node_name));
            let node = match position {
                Some(i) => &mut changed[i],
                None => {
                    let found = nodes
                        .iter()
                        .find(|n| n.metadata.name.as_deref() == Some(node_name))
                        .ok_or_else(|| ApiError::not_found("", "nodes", node_name))?;
                    changed.push(found.clone());
                    let last = changed.len() - 1;
                    &mut changed[last]
                }
            };
            let current = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default();
            let (taints, _) = apply_taint_spec(&current, &spec, true)
                .map_err(|e| ApiError::bad_request(format!("taint {param:?}: {e}")))?;
            node.spec.get_or_insert_default().taints = Some(taints);
        }
        for node in &mut changed {
            let old = nodes
                .iter()
                .find(|n| n.metadata.name == node.metadata.name)
                .cloned();
            taint_time_added::stamp(node, old.as_ref(), self.now());
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taint_parameters_name_a_node_and_a_spec() {
        struct Case {
            name: &'static str,
            param: &'static str,
            want: Option<(&'static str, &'static str)>,
        }
        let cases = [
            Case {
                name: "add",
                param: "n1=dedicated=gpu:NoSchedule",
                want: Some(("n1", "dedicated=gpu:NoSchedule")),
            },
            Case {
                name: "remove",
                param: "n1=dedicated:NoSchedule-",
                want: Some(("n1", "dedicated:NoSchedule-")),
            },
            Case {
                name: "no node",
                param: "=k=v:NoSchedule",
                want: None,
            },
            Case {
                name: "no spec",
                param: "n1",
                want: None,
            },
        ];
        for case in cases {
            assert_eq!(
                split_taint_param(case.param).ok(),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
