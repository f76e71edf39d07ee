//! `delete` and `deletecollection`: preconditions, the type's admission on
//! delete, graceful deletion of bound pods (marked, removed once their
//! node confirms), a compare-and-swap delete in the store, and a deleted
//! namespace's contents with it; with `dryRun=All` all of it but the
//! store's part.

use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};

use super::list::Filter;
use super::query::dry_run_of;
use super::request_body::parse_body;
use super::response::{bytes_response, json_response};
use super::scope::Scope;
use super::server::ApiServer;
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
        let (options, dry_run) = self.delete_options(scope, body).await?;
        let grace = match options.get("gracePeriodSeconds").and_then(Value::as_i64) {
            Some(g) => Some(g),
            None => scope.query.int("gracePeriodSeconds")?,
        };
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
        if std::ptr::eq(rt, &NAMESPACES) {
            self.registry.delete_namespace_contents(name).await;
        }
        set_resource_version(&mut object, deleted_at);
        Ok(json_response(200, &object))
    }

    /// A delete's `DeleteOptions` and whether it is a dry run. As upstream
    /// reads them: from the body when there is one (its `dryRun` then
    /// decides, whatever the query says), else from the query.
    async fn delete_options(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<(Value, bool)> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok((json!({}), scope.query.dry_run("DeleteOptions")?));
        }
        let options = parse_body(scope.headers, body, self.config.body)
            .await?
            .value;
        let dry_run = match options.get("dryRun") {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) => {
                let values: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect();
                let values = values.ok_or_else(|| {
                    ApiError::bad_request(
                        "json: cannot unmarshal into Go struct field DeleteOptions.dryRun of type string",
                    )
                })?;
                dry_run_of("DeleteOptions", &values)?
            }
            Some(_) => {
                return Err(ApiError::bad_request(
                    "json: cannot unmarshal into Go struct field DeleteOptions.dryRun of type []string",
                ));
            }
        };
        Ok((options, dry_run))
    }

    /// `deletecollection`: each listed object deleted as `delete` would (a
    /// dry run lists what would go and deletes nothing).
    pub(super) async fn delete_collection(
        &self,
        scope: &Scope<'_>,
        body: &Bytes,
    ) -> ApiResult<Response> {
        let (rt, ns) = (scope.rt, scope.namespace);
        let (_, dry_run) = self.delete_options(scope, body).await?;
        let filter = Filter::new(rt, ns, &scope.query)?;
        let cache = self.registry.wait_current(rt).await?;
        let (items, rv) = cache.list(ns, |c| filter.matches(c)).await;
        let ctx = self.strategy_context(scope.user);
        let mut deleted = Vec::new();
        for item in items {
            let object: Value = serde_json::from_str(&item.json).map_err(ApiError::internal)?;
            rt.strategy.on_delete(&object, &ctx)?;
            if dry_run {
                deleted.push(object);
                continue;
            }
            match self
                .registry
                .delete(rt, &rt.key(&item.namespace, &item.name), item.rv)
                .await
            {
                Ok(_) => deleted.push(object),
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
