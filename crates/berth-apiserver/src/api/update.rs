//! `update` (PUT, the main resource or `/status`), and the replacement of
//! a stored object that update and patch end in: checks against the URL
//! and the stored revision, server-owned metadata kept, the type's
//! strategy, a Node's impact warnings (`node_impact`), then a
//! compare-and-swap in the store (or, for an update that takes the last
//! finalizer off an object marked deleting, its deletion). What the new
//! object needs of the allocators is taken before the strategy runs and
//! given back if nothing is written; what only the old one held is given
//! back once the write is done.

use axum::body::Bytes;
use axum::response::Response;
use berth_core::validation::{FieldError, Path};
use serde_json::Value;

use super::node_impact;
use super::request_body::{check_kind, parse_body, validate_fields};
use super::response::bytes_response;
use super::scope::Scope;
use super::server::ApiServer;
use crate::allocators::Claims;
use crate::deletion::should_delete_during_update;
use crate::objects::{
    self, format_time, name_of, prepare_for_update, resource_version_of, set_resource_version,
};
use crate::registry::store_error;
use crate::resources::NODES;
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

impl ApiServer {
    pub(super) async fn update(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let dry_run = scope.query.dry_run("UpdateOptions")?;
        let decoded = parse_body(scope.headers, body, self.config.body).await?;
        validate_fields(scope.query.field_validation()?, scope.rt, &decoded)?;
        let object = decoded.value;
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let (old, revision) = match self.registry.cached_as_sent(rt, ns, name, &object).await {
            Some(found) => found,
            None => self.registry.read(rt, ns, name).await?,
        };
        self.replace(scope, object, &old, revision, dry_run).await
    }

    /// Update (and the second half of patch): the new object replaces the
    /// stored one at `expected` revision.
    pub(super) async fn replace(
        &self,
        scope: &Scope<'_>,
        object: Value,
        old: &Value,
        expected: i64,
        dry_run: bool,
    ) -> ApiResult<Response> {
        let written = self
            .replace_stored(scope, object, old, expected, dry_run)
            .await?;
        Ok(bytes_response(200, written.into_bytes()))
    }

    /// [`ApiServer::replace`]'s work: the object as written (or as it
    /// would be, on a dry run or a write that changes nothing), as JSON
    /// with its `resourceVersion`.
    pub(super) async fn replace_stored(
        &self,
        scope: &Scope<'_>,
        mut object: Value,
        old: &Value,
        expected: i64,
        dry_run: bool,
    ) -> ApiResult<String> {
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
        // A UID sent must be the object's (upstream's ValidateObjectMetaUpdate):
        // a patch or update carrying it is a precondition on the object.
        let sent_uid = objects::meta_str(&object, "uid");
        let uid = objects::meta_str(old, "uid");
        if !sent_uid.is_empty() && sent_uid != uid {
            let path = Path::new("metadata").child("uid");
            return Err(ApiError::invalid(
                rt.group,
                rt.kind,
                name,
                &vec![FieldError::invalid(&path, sent_uid, "field is immutable")],
            ));
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
        let released = match &written {
            // What the stored object held and the new one does not is free.
            Ok((_, true)) => rt.strategy.held(old).without(&rt.strategy.held(&object)),
            _ => taken,
        };
        self.allocators.release(&released, &now).await;
        written.map(|(json, _)| json)
    }

    /// The strategy's update, then the write: the object as written (or as
    /// it would be) and whether the store was changed (not on a dry run,
    /// nor for a write that changes nothing).
    async fn write_update(
        &self,
        scope: &Scope<'_>,
        object: &mut Value,
        old: &Value,
        expected: i64,
        dry_run: bool,
    ) -> ApiResult<(String, bool)> {
        let (rt, name) = (scope.rt, scope.name);
        let ctx = self.strategy_context(scope.user);
        rt.strategy
            .update(rt, scope.subresource, object, old, &ctx)?;
        // What the write will do, said before it is done (also for a dry
        // run, which is then its preview).
        if *rt == NODES && scope.subresource.is_empty() && node_impact::warns(scope.user) {
            self.warn_node_impact(old, object).await;
        }
        // Taking the last finalizer off an object marked deleting deletes
        // it (upstream's ShouldDeleteDuringUpdate).
        if should_delete_during_update(object, old) {
            if !dry_run {
                self.remove(rt, scope.namespace, name, object, expected)
                    .await?;
            }
            return Ok((object.to_string(), !dry_run));
        }
        // An update that changes nothing is not written, as upstream's
        // GuaranteedUpdate skips it: the object keeps its resourceVersion
        // and watchers see no event.
        if dry_run || objects::equal_except_resource_version(object, old) {
            set_resource_version(object, expected);
            return Ok((object.to_string(), false));
        }
        let key = rt.key(scope.namespace, name);
        let (_, json) = self
            .registry
            .write(rt, &key, object, Some(expected))
            .await
            .map_err(|e| store_error(rt, name, e))?;
        Ok((json.to_string(), true))
    }
}
