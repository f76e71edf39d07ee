//! The pod subresources: `binding` (the scheduler's) and `log` (proxied
//! to the pod's node's agent). `eviction` is in `eviction.rs`.

use axum::body::Bytes;
use axum::response::Response;
use berth_store::StoreError;
use std::sync::Arc;

use serde_json::Value;

use super::request_body::parse_body;
use super::response::{json_response, plain};
use super::scope::Scope;
use super::server::ApiServer;
use crate::cache::Cached;
use crate::objects;
use crate::registry::store_error;
use crate::resources::PODS;
use crate::status::{ApiError, success_status};
use crate::strategy::pod::{assigned_node, bind_pod, bind_pod_json};

type ApiResult<T> = Result<T, ApiError>;

impl ApiServer {
    pub(super) async fn bind(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let (ns, name) = (scope.namespace, scope.name);
        let dry_run = scope.query.dry_run("CreateOptions")?;
        let binding = parse_body(scope.headers, body, self.config.body)
            .await?
            .value;
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                ApiError::invalid(
                    "",
                    "Binding",
                    name,
                    &vec![berth_core::validation::FieldError::required(
                        &berth_core::validation::Path::new("target").child("name"),
                        "",
                    )],
                )
            })?
            .to_string();
        if dry_run {
            // Every check the binding makes, on the stored pod; nothing
            // written.
            let (pod, _) = self.registry.read(&PODS, ns, name).await?;
            bindable(&pod, name)?;
            return Ok(json_response(201, &success_status("", "pods", name, None)));
        }
        let cached = self.registry.newest_cached(&PODS, ns, name).await;
        self.bind_to(ns, name, &node, cached).await
    }

    /// Binds pod `ns/name` to `node`. `cached` is the pod as the watch cache
    /// holds it: when it looks bindable, it is bound with a compare-and-swap
    /// on its cached revision, which spares the store read (and, for a pod
    /// of the usual shape, decoding it: [`bind_pod_json`]). The cache may be
    /// behind the store (the pod since bound, marked for deletion, deleted,
    /// or deleted and created again): the swap then fails and the pod is read
    /// from the store and decided on as it is there. A cached pod that looks
    /// unbindable is never refused on the cache's word either, since the
    /// stored one may be a newer pod of the same name.
    pub(super) async fn bind_to(
        &self,
        ns: &str,
        name: &str,
        node: &str,
        cached: Option<Arc<Cached>>,
    ) -> ApiResult<Response> {
        let key = PODS.key(ns, name);
        if let Some(cached) = cached {
            let written = match bind_pod_json(&cached.json, node, self.now()) {
                Some(stored) => {
                    let changed = [("spec.nodeName", node)];
                    let write = self
                        .registry
                        .write_derived(&PODS, &key, stored, &cached, &changed, cached.rv);
                    Some(write.await)
                }
                // Not the usual shape, or not bindable as cached: decided
                // on the decoded copy, as it always was.
                None => match serde_json::from_str::<Value>(&cached.json) {
                    Ok(mut pod) if bindable(&pod, name).is_ok() => {
                        bind_pod(&mut pod, node, self.now());
                        Some(
                            self.registry
                                .write(&PODS, &key, &pod, Some(cached.rv))
                                .await,
                        )
                    }
                    _ => None,
                },
            };
            match written {
                Some(Ok(_)) => {
                    return Ok(json_response(201, &success_status("", "pods", name, None)));
                }
                Some(Err(StoreError::Conflict { .. } | StoreError::NotFound { .. })) | None => {}
                Some(Err(e)) => return Err(store_error(&PODS, name, e)),
            }
        }
        for _ in 0..5 {
            let (mut pod, revision) = self.registry.read(&PODS, ns, name).await?;
            bindable(&pod, name)?;
            bind_pod(&mut pod, node, self.now());
            match self.registry.write(&PODS, &key, &pod, Some(revision)).await {
                Ok(_) => return Ok(json_response(201, &success_status("", "pods", name, None))),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(store_error(&PODS, name, e)),
            }
        }
        Err(ApiError::modified("", "pods", name))
    }

    /// `pods/{name}/log`: the pod's node's agent serves it (see
    /// [`crate::pod_logs`]); a pod not bound yet has an empty log. A node
    /// may read the logs of its own pods only.
    pub(super) async fn pod_log(&self, scope: &Scope<'_>) -> ApiResult<Response> {
        let (ns, name, user) = (scope.namespace, scope.name, scope.user);
        let (pod, _) = self.registry.read(&PODS, ns, name).await?;
        if let Some(node) = user.node_name()
            && pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(node)
        {
            return Err(ApiError::forbidden_message(
                "",
                "pods",
                name,
                format!(
                    "User {:?} cannot get resource \"pods/log\" in API group \"\" in the namespace {ns:?}: no relationship found between node '{node}' and this object",
                    user.name
                ),
            ));
        }
        let Some(location) = crate::pod_logs::log_location(&pod, scope.query.get("container"))?
        else {
            return Ok(plain(200, ""));
        };
        let path = crate::pod_logs::agent_path(ns, name, &location.container, scope.raw_query);
        self.kubelet_get(&location.node, &path).await
    }
}

/// Whether a pod may be bound (upstream's `assignPod` checks): not being
/// deleted, not bound already.
fn bindable(pod: &Value, name: &str) -> ApiResult<()> {
    if !objects::meta_str(pod, "deletionTimestamp").is_empty() {
        return Err(ApiError::conflict(
            "",
            "pods",
            name,
            "pod is being deleted, cannot be assigned to a host",
        ));
    }
    let current = assigned_node(pod);
    if !current.is_empty() {
        return Err(ApiError::conflict(
            "",
            "pods",
            name,
            &format!("pod {name} is already assigned to node {current:?}"),
        ));
    }
    Ok(())
}
