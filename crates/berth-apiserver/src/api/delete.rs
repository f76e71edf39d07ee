//! `delete` and `deletecollection`: preconditions, the type's admission on
//! delete, graceful deletion of bound pods (marked, removed once their
//! node confirms), a compare-and-swap delete in the store, and a deleted
//! namespace's contents with it.

use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};

use super::list::Filter;
use super::request_body::parse_body;
use super::response::{bytes_response, json_response};
use super::scope::Scope;
use super::server::ApiServer;
use crate::allocators::Claims;
use crate::objects::{self, format_time, set_resource_version};
use crate::registry::store_error;
use crate::resources::NAMESPACES;
use crate::status::ApiError;
use berth_store::StoreError;

type ApiResult<T> = Result<T, ApiError>;

/// What a delete request asks for: its `DeleteOptions` (preconditions),
/// grace period and dry run.
struct Deletion {
    options: Value,
    grace: Option<i64>,
    dry_run: bool,
}

impl ApiServer {
    pub(super) async fn delete(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let options = if body.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            parse_body(scope.headers, body, self.config.body)
                .await?
                .value
        };
        let grace = match options.get("gracePeriodSeconds").and_then(Value::as_i64) {
            Some(g) => Some(g),
            None => scope.query.int("gracePeriodSeconds")?,
        };
        let dry_run = scope.query.dry_run()?
            || options
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == "All"));
        rt.strategy.check_deletable(name)?;
        let deletion = Deletion {
            options,
            grace,
            dry_run,
        };
        // A first attempt on the watch cache's copy (see `Registry::newest`);
        // if it does not end in a write, the stored object decides.
        if !dry_run
            && let Some(current) = self.registry.newest(rt, ns, name).await
            && let Ok(response) = self.delete_current(scope, &deletion, current).await
        {
            return Ok(response);
        }
        let current = self.registry.read(rt, ns, name).await?;
        self.delete_current(scope, &deletion, current).await
    }

    /// The delete of `current` (the object and its revision).
    async fn delete_current(
        &self,
        scope: &Scope<'_>,
        deletion: &Deletion,
        current: (Value, i64),
    ) -> ApiResult<Response> {
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let (mut object, revision) = current;
        if let Some(pre) = deletion.options.get("preconditions") {
            let uid = objects::meta_str(&object, "uid");
            if let Some(want) = pre.get("uid").and_then(Value::as_str)
                && want != uid
            {
                return Err(ApiError::conflict(
                    rt.group,
                    rt.plural,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                    ),
                ));
            }
            if let Some(want) = pre.get("resourceVersion").and_then(Value::as_str)
                && want != revision.to_string()
            {
                return Err(ApiError::conflict(
                    rt.group,
                    rt.plural,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {revision}"
                    ),
                ));
            }
        }
        let ctx = self.strategy_context(scope.user);
        rt.strategy.on_delete(&object, &ctx)?;
        // A graceful deletion (a pod bound to a node) marks the object; it
        // is removed later (a pod's once its node's agent confirms, with a
        // delete of grace period 0).
        if let Some(grace) = rt.strategy.graceful_deletion(&object, deletion.grace) {
            let already = objects::meta_str(&object, "deletionTimestamp").to_string();
            if let Some(meta) = objects::metadata_mut(&mut object) {
                if already.is_empty() {
                    let deadline = self.now() + jiff::SignedDuration::from_secs(grace);
                    meta.insert(
                        "deletionTimestamp".into(),
                        Value::String(format_time(deadline)),
                    );
                }
                meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
            }
            if deletion.dry_run {
                return Ok(json_response(200, &object));
            }
            let key = rt.key(ns, name);
            let (_, json) = self
                .registry
                .write(rt, &key, &object, Some(revision))
                .await
                .map_err(|e| store_error(rt, name, e))?;
            return Ok(bytes_response(200, json.as_bytes().to_vec()));
        }
        if deletion.dry_run {
            return Ok(json_response(200, &object));
        }
        let deleted_at = self
            .registry
            .delete(rt, &rt.key(ns, name), revision)
            .await
            .map_err(|e| store_error(rt, name, e))?;
        let mut held = vec![rt.strategy.held(&object)];
        if std::ptr::eq(rt, &NAMESPACES) {
            held.extend(self.registry.delete_namespace_contents(name).await);
        }
        self.release_all(&held).await;
        set_resource_version(&mut object, deleted_at);
        Ok(json_response(200, &object))
    }

    /// Gives back what deleted objects held.
    async fn release_all(&self, held: &[Claims]) {
        let now = format_time(self.now());
        for claims in held.iter().filter(|c| !c.is_empty()) {
            self.allocators.release(claims, &now).await;
        }
    }

    pub(super) async fn delete_collection(&self, scope: &Scope<'_>) -> ApiResult<Response> {
        let (rt, ns) = (scope.rt, scope.namespace);
        let filter = Filter::new(rt, ns, &scope.query)?;
        let cache = self.registry.wait_current(rt).await?;
        let (items, rv) = cache.list(ns, |c| filter.matches(c)).await;
        let ctx = self.strategy_context(scope.user);
        let mut deleted = Vec::new();
        for item in items {
            let object: Value = serde_json::from_str(&item.json).map_err(ApiError::internal)?;
            rt.strategy.on_delete(&object, &ctx)?;
            match self
                .registry
                .delete(rt, &rt.key(&item.namespace, &item.name), item.rv)
                .await
            {
                Ok(_) => {
                    self.release_all(&[rt.strategy.held(&object)]).await;
                    deleted.push(object);
                }
                Err(StoreError::NotFound { .. }) => deleted.push(object),
                Err(e) => return Err(store_error(rt, &item.name, e)),
            }
        }
        Ok(json_response(
            200,
            &json!({
                "kind": rt.list_kind(), "apiVersion": rt.api_version(),
                "metadata": {"resourceVersion": rv.to_string()}, "items": deleted,
            }),
        ))
    }
}
