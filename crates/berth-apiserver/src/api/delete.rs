//! `delete` and `deletecollection`: `DeleteOptions` (from the body, or the
//! query without one) validated as upstream's `ValidateDeleteOptions`,
//! preconditions, the type's admission on delete, then what the deletion
//! does to the object ([`crate::deletion`]: graceful deletion, the garbage
//! collector's finalizers for `propagationPolicy`/`orphanDependents`, an
//! object held by finalizers marked deleting) carried out as a
//! compare-and-swap write or delete in the store, and a deleted
//! namespace's contents with it; with `dryRun=All` all of it but the
//! store's part.

use axum::body::Bytes;
use axum::response::Response;
use berth_core::deletion::{DependentsOption, Propagation, validate_delete_options};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde::Deserialize;
use serde_json::{Value, json};

use super::list::Filter;
use super::query::dry_run_of;
use super::request_body::parse_body;
use super::response::{bytes_response, json_response};
use super::scope::Scope;
use super::server::ApiServer;
use crate::allocators::Claims;
use crate::deletion::{Planned, Request, plan};
use crate::objects::{self, format_time, set_resource_version};
use crate::registry::store_error;
use crate::resources::NAMESPACES;
use crate::status::ApiError;
use crate::strategy::ResourceType;

type ApiResult<T> = Result<T, ApiError>;

/// What a delete request asks for, validated.
struct Deletion {
    preconditions_uid: Option<String>,
    preconditions_resource_version: Option<String>,
    grace: Option<i64>,
    dry_run: bool,
    dependents: DependentsOption,
}

/// What became of the object.
enum Deleted {
    /// Removed from the store; its last state.
    Gone(Value),
    /// Still there (marked deleting, or already being deleted).
    Kept(Value),
    /// Written marked deleting; the stored JSON.
    Marked(std::sync::Arc<str>),
}

impl ApiServer {
    pub(super) async fn delete(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let deletion = self.deletion_of(scope, body).await?;
        rt.strategy.check_deletable(name)?;
        // A first attempt on the watch cache's copy (see `Registry::newest`);
        // if it does not end in a write, the stored object decides.
        let cached = if deletion.dry_run {
            None
        } else {
            self.registry.newest(rt, ns, name).await
        };
        let deleted = if let Some(current) = cached
            && let Ok(deleted) = self.delete_current(scope, &deletion, current).await
        {
            deleted
        } else {
            let current = self.registry.read(rt, ns, name).await?;
            self.delete_current(scope, &deletion, current).await?
        };
        // Upstream answers 202 only for an object kept after a deletion that
        // asked, with the old `orphanDependents: false`, for its dependents.
        let accepted = deletion.dependents.orphan_dependents == Some(false);
        Ok(match deleted {
            Deleted::Gone(object) => json_response(200, &object),
            Deleted::Kept(object) => json_response(if accepted { 202 } else { 200 }, &object),
            Deleted::Marked(json) => {
                bytes_response(if accepted { 202 } else { 200 }, json.as_bytes().to_vec())
            }
        })
    }

    /// The request's `DeleteOptions`: the body's, or the query's when there
    /// is no body (upstream's order), validated.
    async fn deletion_of(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Deletion> {
        let options = if body.iter().all(u8::is_ascii_whitespace) {
            let query = &scope.query;
            DeleteOptions {
                grace_period_seconds: query.int("gracePeriodSeconds")?,
                orphan_dependents: query
                    .get("orphanDependents")
                    .map(|_| query.flag("orphanDependents")),
                propagation_policy: query.get("propagationPolicy").map(str::to_string),
                dry_run: Some(query.dry_run_values().to_vec()),
                ..DeleteOptions::default()
            }
        } else {
            let value = parse_body(scope.headers, body, self.config.body)
                .await?
                .value;
            DeleteOptions::deserialize(&value).map_err(|e| {
                ApiError::bad_request(format!(
                    "DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: {e}"
                ))
            })?
        };
        // ValidateDryRun first, with upstream's own rendering of the list.
        let dry_run = dry_run_of(
            "DeleteOptions",
            &options.dry_run.clone().unwrap_or_default(),
        )?;
        let errors = validate_delete_options(
            options.orphan_dependents,
            options.propagation_policy.as_deref(),
            &[],
        );
        if !errors.is_empty() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &errors,
            ));
        }
        let preconditions = options.preconditions.unwrap_or_default();
        Ok(Deletion {
            preconditions_uid: preconditions.uid,
            preconditions_resource_version: preconditions.resource_version,
            grace: options.grace_period_seconds,
            dry_run,
            dependents: DependentsOption {
                orphan_dependents: options.orphan_dependents,
                propagation: options
                    .propagation_policy
                    .as_deref()
                    .and_then(Propagation::parse),
            },
        })
    }

    /// The delete of `current` (the object and its revision).
    async fn delete_current(
        &self,
        scope: &Scope<'_>,
        deletion: &Deletion,
        current: (Value, i64),
    ) -> ApiResult<Deleted> {
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let (mut object, revision) = current;
        check_preconditions(rt, name, deletion, &object, revision)?;
        let ctx = self.strategy_context(scope.user);
        rt.strategy.on_delete(&object, &ctx)?;
        let request = Request {
            grace: deletion.grace,
            dependents: deletion.dependents,
            default_policy: rt.strategy.default_garbage_collection_policy(),
            now: self.now(),
        };
        match plan(&mut object, request, |o, g| {
            rt.strategy.graceful_deletion(o, g)
        }) {
            Planned::AlreadyPending => Ok(Deleted::Kept(object)),
            Planned::Mark if deletion.dry_run => Ok(Deleted::Kept(object)),
            Planned::Mark => {
                let (_, json) = self
                    .registry
                    .write(rt, &rt.key(ns, name), &object, Some(revision))
                    .await
                    .map_err(|e| store_error(rt, name, e))?;
                Ok(Deleted::Marked(json))
            }
            Planned::DeleteNow if deletion.dry_run => Ok(Deleted::Gone(object)),
            Planned::DeleteNow => {
                self.remove(rt, ns, name, &mut object, revision).await?;
                Ok(Deleted::Gone(object))
            }
        }
    }

    /// Removes `object` from the store at `revision` (a deleted namespace's
    /// contents with it), giving back what they held of the allocators;
    /// `object` gets the deletion's resourceVersion.
    pub(super) async fn remove(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        object: &mut Value,
        revision: i64,
    ) -> ApiResult<()> {
        let deleted_at = self
            .registry
            .delete(rt, &rt.key(ns, name), revision)
            .await
            .map_err(|e| store_error(rt, name, e))?;
        let mut held = vec![rt.strategy.held(object)];
        if std::ptr::eq(rt, &NAMESPACES) {
            held.extend(self.registry.delete_namespace_contents(name).await);
        }
        self.release_all(&held).await;
        set_resource_version(object, deleted_at);
        Ok(())
    }

    /// Gives back what deleted objects held.
    async fn release_all(&self, held: &[Claims]) {
        let now = format_time(self.now());
        for claims in held.iter().filter(|c| !c.is_empty()) {
            self.allocators.release(claims, &now).await;
        }
    }

    /// Every object the list selects, deleted as one delete of it would
    /// (its options apply to each); the answer lists them as they ended.
    pub(super) async fn delete_collection(
        &self,
        scope: &Scope<'_>,
        body: &Bytes,
    ) -> ApiResult<Response> {
        let (rt, ns) = (scope.rt, scope.namespace);
        let deletion = self.deletion_of(scope, body).await?;
        let filter = Filter::new(rt, ns, &scope.query)?;
        let cache = self.registry.wait_current(rt).await?;
        let (items, rv) = cache.list(ns, |c| filter.matches(c)).await;
        let mut deleted = Vec::new();
        for item in items {
            let object: Value = serde_json::from_str(&item.json).map_err(ApiError::internal)?;
            let one = Scope {
                namespace: &item.namespace,
                name: &item.name,
                ..scope.clone()
            };
            match self
                .delete_current(&one, &deletion, (object.clone(), item.rv))
                .await
            {
                Ok(Deleted::Gone(object) | Deleted::Kept(object)) => deleted.push(object),
                Ok(Deleted::Marked(json)) => {
                    deleted.push(serde_json::from_str(&json).map_err(ApiError::internal)?)
                }
                // Deleted (or changed) since the list: what the list saw.
                Err(e) if e.code == 404 || e.code == 409 => deleted.push(object),
                Err(e) => return Err(e),
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

/// `DeleteOptions.preconditions` against the object.
fn check_preconditions(
    rt: &ResourceType,
    name: &str,
    deletion: &Deletion,
    object: &Value,
    revision: i64,
) -> ApiResult<()> {
    let uid = objects::meta_str(object, "uid");
    if let Some(want) = &deletion.preconditions_uid
        && want != uid
    {
        return Err(ApiError::conflict(
            rt.group,
            rt.plural,
            name,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    if let Some(want) = &deletion.preconditions_resource_version
        && *want != revision.to_string()
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
    Ok(())
}
