//! `update` (PUT, the main resource or `/status`), and the replacement of
//! a stored object that update and patch end in: checks against the URL
//! and the stored revision, server-owned metadata kept, the type's
//! strategy, then a compare-and-swap in the store.

use axum::body::Bytes;
use axum::response::Response;
use serde_json::Value;

use super::request_body::{check_kind, parse_body, validate_fields};
use super::response::{bytes_response, json_response};
use super::scope::Scope;
use super::server::ApiServer;
use crate::allocators::Claims;
use crate::objects::{
    self, format_time, name_of, prepare_for_update, resource_version_of, set_resource_version,
};
use crate::registry::store_error;
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

impl ApiServer {
    pub(super) async fn update(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let decoded = parse_body(scope.headers, body, self.config.body).await?;
        validate_fields(scope.query.field_validation()?, scope.rt, &decoded)?;
        let object = decoded.value;
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let (old, revision) = match self.registry.cached_as_sent(rt, ns, name, &object).await {
            Some(found) => found,
            None => self.registry.read(rt, ns, name).await?,
        };
        let dry_run = scope.query.dry_run()?;
        self.replace(scope, object, &old, revision, dry_run).await
    }

    /// Update (and the second half of patch): the new object replaces the
    /// stored one at `expected` revision.
    pub(super) async fn replace(
        &self,
        scope: &Scope<'_>,
        mut object: Value,
        old: &Value,
        expected: i64,
        dry_run: bool,
    ) -> ApiResult<Response> {
        let (rt, name) = (scope.rt, scope.name);
        check_kind(&object, rt)?;
        let body_name = name_of(&object);
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if body_name.is_empty()
            && let Some(meta) = objects::metadata_mut(&mut object)
        {
            meta.insert("name".into(), Value::String(name.into()));
        }
        let sent_rv = resource_version_of(&object).to_string();
        if !sent_rv.is_empty() && sent_rv != expected.to_string() {
            return Err(ApiError::modified(rt.group, rt.plural, name));
        }
        prepare_for_update(&mut object, old);
        // What the changed object needs and the stored one does not hold is
        // taken first (a /status write changes nothing it holds).
        let now = format_time(self.now());
        let taken = if scope.subresource.is_empty() {
            rt.strategy
                .allocate(rt, &mut object, Some(old), &self.allocators, &now)
                .await?
        } else {
            Claims::default()
        };
        let written = self
            .write_update(scope, &mut object, old, expected, dry_run)
            .await;
        match &written {
            // What the stored object held and the new one does not is free.
            Ok(Some(_)) => {
                let released = rt.strategy.held(old).without(&rt.strategy.held(&object));
                self.allocators.release(&released, &now).await;
            }
            _ => self.allocators.release(&taken, &now).await,
        }
        match written? {
            Some(json) => Ok(bytes_response(200, json.as_bytes().to_vec())),
            None => {
                set_resource_version(&mut object, expected);
                Ok(json_response(200, &object))
            }
        }
    }

    /// The strategy's update, then the write: the object as stored, or
    /// `None` when nothing was written (a dry run, or no change: upstream's
    /// GuaranteedUpdate skips those, so the object keeps its
    /// resourceVersion and watchers see no event).
    async fn write_update(
        &self,
        scope: &Scope<'_>,
        object: &mut Value,
        old: &Value,
        expected: i64,
        dry_run: bool,
    ) -> ApiResult<Option<std::sync::Arc<str>>> {
        let (rt, name) = (scope.rt, scope.name);
        let ctx = self.strategy_context(scope.user);
        rt.strategy
            .update(rt, scope.subresource, object, old, &ctx)?;
        if dry_run || objects::equal_except_resource_version(object, old) {
            return Ok(None);
        }
        let key = rt.key(scope.namespace, name);
        let (_, json) = self
            .registry
            .write(rt, &key, object, Some(expected))
            .await
            .map_err(|e| store_error(rt, name, e))?;
        Ok(Some(json))
    }
}
