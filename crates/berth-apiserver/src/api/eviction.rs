//! `pods/{name}/eviction`: a delete that a PodDisruptionBudget may refuse
//! (upstream's `pkg/registry/core/pod/storage/eviction.go`). The decisions
//! are berth-core's ([`berth_core::disruption::decide`]); this file reads
//! the pod and its namespace's budgets, writes the spent budget with a
//! compare-and-swap on its revision (re-read and re-decided on conflict,
//! so concurrent evictions never spend one disruption twice), then deletes
//! the pod.

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use berth_core::disruption::{
    self, DISRUPTION_BUDGET_CAUSE, EVICTION_REFUSED_MESSAGE, EvictionDecision, EvictionRefusal,
    MULTIPLE_BUDGETS_MESSAGE,
};
use berth_store::StoreError;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::query::Query;
use super::request_body::parse_body;
use super::response::json_response;
use super::scope::Scope;
use super::server::ApiServer;
use crate::registry::store_error;
use crate::resources::{POD_DISRUPTION_BUDGETS, PODS};
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// Upstream's `EvictionsRetry`: attempts at a write that conflicts.
const EVICTION_RETRIES: usize = 20;

/// The 429 of a refused eviction: upstream's message, a `DisruptionBudget`
/// cause saying why, and `retryAfterSeconds` when upstream gives one.
fn too_many_requests(cause: &str, retry_after_seconds: i32) -> ApiError {
    let mut details = json!({
        "causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}],
    });
    if retry_after_seconds > 0 {
        details["retryAfterSeconds"] = json!(retry_after_seconds);
    }
    ApiError::too_many_requests(EVICTION_REFUSED_MESSAGE, 0).with_details(details)
}

fn refusal(refusal: EvictionRefusal) -> ApiError {
    match refusal {
        EvictionRefusal::TooManyRequests {
            cause_message,
            retry_after_seconds,
        } => too_many_requests(&cause_message, retry_after_seconds),
        EvictionRefusal::Forbidden { budget, message } => {
            ApiError::forbidden_message("policy", "poddisruptionbudgets", &budget, message)
        }
    }
}

fn success() -> Response {
    json_response(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

fn typed<T: serde::de::DeserializeOwned>(object: &Value) -> ApiResult<T> {
    serde_json::from_value(object.clone()).map_err(ApiError::internal)
}

impl ApiServer {
    /// An eviction. The request's `dryRun` goes into the eviction's
    /// `deleteOptions` unless they name their own, which must then be the
    /// same (upstream's `propagateDryRun`).
    pub(super) async fn evict(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        scope.query.dry_run("CreateOptions")?;
        let eviction = parse_body(scope.headers, body, self.config.body)
            .await?
            .value;
        if let Some(name) = eviction.pointer("/metadata/name").and_then(Value::as_str)
            && name != scope.name
        {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
        let mut options = eviction
            .get("deleteOptions")
            .cloned()
            .filter(|o| !o.is_null())
            .unwrap_or_else(|| json!({}));
        let asked = scope.query.dry_run_values();
        let own = options.get("dryRun").filter(|v| !v.is_null());
        match own {
            _ if asked.is_empty() => {}
            Some(own) if own.as_array().is_some_and(|a| !a.is_empty()) => {
                if *own != json!(asked) {
                    return Err(ApiError::bad_request(
                        "dryRun in eviction and deleteOptions must match",
                    ));
                }
            }
            _ => options["dryRun"] = json!(asked),
        }
        let dry_run = options
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let caller_rv = options
            .pointer("/preconditions/resourceVersion")
            .is_some_and(|v| !v.is_null());

        for _ in 0..EVICTION_RETRIES {
            let (pod_value, _) = self
                .registry
                .read(&PODS, scope.namespace, scope.name)
                .await?;
            let pod: Pod = typed(&pod_value)?;
            let budgets = self.budgets(scope.namespace).await?;
            let decision =
                disruption::decide(&pod, budgets.iter().map(|(b, _)| b), dry_run, self.now());
            let mut delete_options = options.clone();
            let budget_name = match &decision {
                EvictionDecision::MultipleBudgets => {
                    return Ok(json_response(
                        500,
                        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": MULTIPLE_BUDGETS_MESSAGE,
                                "code": 500}),
                    ));
                }
                EvictionDecision::Refuse(r) => return Err(refusal(r.clone())),
                EvictionDecision::Delete {
                    enforce_resource_version,
                } => {
                    if *enforce_resource_version && !caller_rv {
                        delete_options["preconditions"]["resourceVersion"] =
                            json!(pod.metadata.resource_version);
                    }
                    disruption::budget_for_eviction(budgets.iter().map(|(b, _)| b), &pod)
                        .ok()
                        .flatten()
                        .and_then(|b| b.metadata.name.clone())
                }
                EvictionDecision::Spend(updated) => {
                    let name = updated.metadata.name.clone().unwrap_or_default();
                    if !dry_run {
                        self.spend(scope.namespace, &name, scope.name, &budgets)
                            .await?;
                    }
                    None
                }
            };
            let spent = matches!(decision, EvictionDecision::Spend(_));
            match self.delete_pod(scope, &delete_options).await {
                Ok(()) => return Ok(success()),
                // A disruption is spent: never spend another for this pod.
                Err(e) if spent => return Err(e),
                Err(e) if e.code == 409 && !caller_rv => {
                    // The pod changed since it was read: upstream retries
                    // the budget-free shortcut, and answers an unhealthy
                    // pod's lost race with a 429 so the client retries.
                    if let Some(name) = budget_name {
                        return Err(too_many_requests(
                            &format!(
                                "The disruption budget {name} is still being processed by the server."
                            ),
                            10,
                        ));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::timeout(format!(
            "couldn't evict pod {:?} due to conflicts",
            scope.name
        )))
    }

    /// The namespace's budgets, with their revisions, as a consistent read
    /// (upstream lists them from the store): the watch cache once it has
    /// caught up with the store's revision. A budget written since fails
    /// the compare-and-swap and is read again.
    async fn budgets(&self, ns: &str) -> ApiResult<Vec<(PodDisruptionBudget, i64)>> {
        let (entries, _) = self
            .registry
            .wait_current(&POD_DISRUPTION_BUDGETS)
            .await?
            .list(ns, |_| true)
            .await;
        entries
            .iter()
            .map(|entry| {
                let budget = serde_json::from_str(&entry.json).map_err(ApiError::internal)?;
                Ok((budget, entry.rv))
            })
            .collect()
    }

    /// Spends one disruption of budget `name` for `pod`: check-and-decrement
    /// on the copy read, written only if the budget is still at that
    /// revision; on conflict the stored budget is read and decided again
    /// (upstream's `RetryOnConflict` around `checkAndDecrement`).
    async fn spend(
        &self,
        ns: &str,
        name: &str,
        pod: &str,
        budgets: &[(PodDisruptionBudget, i64)],
    ) -> ApiResult<()> {
        let key = POD_DISRUPTION_BUDGETS.key(ns, name);
        let mut current = budgets
            .iter()
            .find(|(b, _)| b.metadata.name.as_deref() == Some(name))
            .cloned();
        for _ in 0..EVICTION_RETRIES {
            let (budget, revision) = match current.take() {
                Some(found) => found,
                None => {
                    let (value, revision) = self
                        .registry
                        .read(&POD_DISRUPTION_BUDGETS, ns, name)
                        .await?;
                    (typed(&value)?, revision)
                }
            };
            let updated = disruption::check_and_decrement(&budget, pod, false, self.now())
                .map_err(refusal)?;
            let value = serde_json::to_value(&updated).map_err(ApiError::internal)?;
            match self
                .registry
                .write(&POD_DISRUPTION_BUDGETS, &key, &value, Some(revision))
                .await
            {
                Ok(_) => {
                    tracing::info!(
                        namespace = ns,
                        budget = name,
                        pod,
                        "eviction spent a disruption"
                    );
                    return Ok(());
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(store_error(&POD_DISRUPTION_BUDGETS, name, e)),
            }
        }
        Err(ApiError::timeout(format!(
            "couldn't update PodDisruptionBudget {name:?} due to conflicts"
        )))
    }

    /// The pod's delete with `options` as its body.
    async fn delete_pod(&self, scope: &Scope<'_>, options: &Value) -> ApiResult<()> {
        let options = Bytes::from(serde_json::to_vec(options).map_err(ApiError::internal)?);
        let json_headers = HeaderMap::new();
        let delete = Scope {
            rt: &PODS,
            subresource: "",
            query: Query::default(),
            headers: &json_headers,
            ..scope.clone()
        };
        self.delete(&delete, &options).await.map(|_| ())
    }
}
