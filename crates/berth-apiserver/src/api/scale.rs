//! `/scale` of Deployments, ReplicaSets and StatefulSets, as upstream's
//! `ScaleREST`: an autoscaling/v1 `Scale` made from the object (its
//! identity and `resourceVersion`, `spec.replicas`, `status.replicas`, the
//! selector as a string); a write of one (`update`, or a patch applied to
//! the Scale) validated, its `resourceVersion` a precondition when set,
//! and its replicas written to the object through the type's main-resource
//! strategy (so the generation moves on) with a compare-and-swap.

use axum::body::Bytes;
use axum::response::Response;
use k8s_openapi::api::autoscaling::v1::Scale;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::patch::patch_error;
use super::request_body::parse_body;
use super::response::json_response;
use super::scope::Scope;
use super::server::ApiServer;
use crate::objects::{self, name_of};
use crate::patch::{PatchDocument, PatchKind};
use crate::resources::ResourceType;
use crate::selectors::spec_selector_query;
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// The API group and kind of a Scale, for its errors.
const GROUP: &str = "autoscaling";
const KIND: &str = "Scale";

/// Attempts of a write that lost a race with another writer.
const ATTEMPTS: usize = 5;

impl ApiServer {
    /// `GET .../scale`.
    pub(super) async fn get_scale(&self, scope: &Scope<'_>) -> ApiResult<Response> {
        let (object, _) = self
            .registry
            .read(scope.rt, scope.namespace, scope.name)
            .await?;
        Ok(json_response(200, &scale_of(scope.rt, &object)?))
    }

    /// `PUT .../scale`: the Scale sent replaces the object's replicas.
    pub(super) async fn update_scale(
        &self,
        scope: &Scope<'_>,
        body: &Bytes,
    ) -> ApiResult<Response> {
        let scale = parse_body(scope.headers, body, self.config.body)
            .await?
            .value;
        let dry_run = scope.query.dry_run()?;
        for _ in 0..ATTEMPTS {
            let (object, revision) = self
                .registry
                .read(scope.rt, scope.namespace, scope.name)
                .await?;
            match self
                .write_scale(scope, &scale, object, revision, dry_run)
                .await
            {
                Err(e) if retry(&e, &scale) => continue,
                result => return result,
            }
        }
        Err(ApiError::modified(
            scope.rt.group,
            scope.rt.plural,
            scope.name,
        ))
    }

    /// `PATCH .../scale`: the patch applied to the current Scale, then
    /// written as an update (applied again if another write came first).
    pub(super) async fn patch_scale(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let document: PatchDocument = self.patch_document(scope, body).await?;
        let dry_run = scope.query.dry_run()?;
        let field_manager = scope.query.get("fieldManager");
        for _ in 0..ATTEMPTS {
            let (object, revision) = self
                .registry
                .read(scope.rt, scope.namespace, scope.name)
                .await?;
            let current = scale_of(scope.rt, &object)?;
            let patched =
                crate::patch::apply_document(&document, &PatchKind::Other, &current, field_manager)
                    .map_err(patch_error)?;
            match self
                .write_scale(scope, &patched, object, revision, dry_run)
                .await
            {
                // The patched Scale carries the revision it was made from.
                Err(e) if e.code == 409 && e.reason == "Conflict" => continue,
                result => return result,
            }
        }
        Err(ApiError::modified(
            scope.rt.group,
            scope.rt.plural,
            scope.name,
        ))
    }

    /// `scale` (as sent or patched) written to `object`, read at
    /// `revision`; the answer is the Scale of the object as written.
    async fn write_scale(
        &self,
        scope: &Scope<'_>,
        scale: &Value,
        object: Value,
        revision: i64,
        dry_run: bool,
    ) -> ApiResult<Response> {
        let (rt, name) = (scope.rt, scope.name);
        let typed = checked_scale(scale, name)?;
        let errors = berth_core::validation::validate_scale(&typed);
        if !errors.is_empty() {
            return Err(ApiError::invalid(GROUP, KIND, name, &errors));
        }
        let precondition = typed.metadata.resource_version.as_deref().unwrap_or("");
        if !precondition.is_empty() && precondition != revision.to_string() {
            return Err(ApiError::modified(rt.group, rt.plural, name));
        }
        let replicas = typed.spec.and_then(|s| s.replicas).unwrap_or(0);
        let mut scaled = object.clone();
        if let Some(spec) = scaled.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("replicas".into(), json!(replicas));
        }
        let written = self
            .replace_stored(scope, scaled, &object, revision, dry_run)
            .await?;
        let written: Value = serde_json::from_str(&written).map_err(ApiError::internal)?;
        Ok(json_response(200, &scale_of(rt, &written)?))
    }
}

/// A conflict of an update that named no `resourceVersion` is retried on
/// the newer object; one that named it is the client's to resolve.
fn retry(error: &ApiError, scale: &Value) -> bool {
    error.code == 409
        && error.reason == "Conflict"
        && objects::resource_version_of(scale).is_empty()
}

/// The Scale as its type has it, for the object `name`: the kind it says
/// it is, the name on the URL.
fn checked_scale(scale: &Value, name: &str) -> ApiResult<Scale> {
    let kind = scale.get("kind").and_then(Value::as_str).unwrap_or(KIND);
    if kind != KIND {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({KIND})"
        )));
    }
    let body_name = name_of(scale);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    Scale::deserialize(scale).map_err(|e| {
        ApiError::bad_request(format!(
            "Scale in version \"v1\" cannot be handled as a Scale: {e}"
        ))
    })
}

/// The autoscaling/v1 Scale of a workload (`scaleFromDeployment` and its
/// kin): the object's identity and `resourceVersion`, `spec.replicas`
/// (left out when 0, as Go's `omitempty` does), `status.replicas` and the
/// selector in the label query syntax.
fn scale_of(rt: &ResourceType, object: &Value) -> ApiResult<Value> {
    let mut metadata = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = object.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), value.clone());
        }
    }
    let replicas = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let spec = if replicas == 0 {
        json!({})
    } else {
        json!({"replicas": replicas})
    };
    let mut status = json!({
        "replicas": object.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
    });
    let selector = spec_selector_query(object).map_err(|e| {
        ApiError::internal(format!(
            "{} {:?} has a selector that does not parse: {e}",
            rt.kind,
            name_of(object)
        ))
    })?;
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": KIND, "apiVersion": "autoscaling/v1",
        "metadata": metadata, "spec": spec, "status": status,
    }))
}
