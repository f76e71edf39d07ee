//! `patch`: JSON, merge, strategic merge and apply patches ([`crate::patch`]),
//! decoded once and applied per attempt; a first attempt on the newest
//! copy this server knows, then on the stored object, re-applied on a
//! conflict as upstream does. Server-side apply creates what is missing.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::scope::Scope;
use super::server::ApiServer;
use crate::body::StrictProblem;
use crate::field_validation::Directive;
use crate::objects;
use crate::patch::{PatchDocument, PatchError, PatchKind, PatchType};
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::strategy;

type ApiResult<T> = Result<T, ApiError>;

impl ApiServer {
    pub(super) async fn patch(&self, scope: &Scope<'_>, body: &Bytes) -> ApiResult<Response> {
        let (rt, ns, name) = (scope.rt, scope.namespace, scope.name);
        let kind = PatchKind::from_group_kind(rt.group, rt.kind);
        let dry_run = scope.query.dry_run()?;
        let field_manager = scope.query.get("fieldManager");
        let directive = scope.query.field_validation()?;
        let document = self.patch_document(scope, body).await?;
        let patch_type = document.patch_type();
        // A first attempt on the watch cache's copy; anything but a write
        // that went through is decided again below on the stored object.
        if !dry_run
            && let Some((old, revision)) = self.registry.newest(rt, ns, name).await
            && let Ok(patched) = crate::patch::apply_document(&document, &kind, &old, field_manager)
            && !objects::equal_except_resource_version(&patched, &old)
            && validate_patched_fields(directive, rt, &document, &patched).is_ok()
            && let Ok(response) = self.replace(scope, patched, &old, revision, false).await
        {
            return Ok(response);
        }
        // Patches are re-applied on a conflict, as upstream does: the client
        // did not ask for a particular revision unless the patch names one.
        for _ in 0..5 {
            let current = match self.registry.read(rt, ns, name).await {
                Ok(found) => Some(found),
                // Server-side apply creates what does not exist yet.
                Err(e)
                    if e.code == 404
                        && patch_type == PatchType::Apply
                        && scope.subresource.is_empty() =>
                {
                    None
                }
                Err(e) => return Err(e),
            };
            let base = current
                .as_ref()
                .map(|(o, _)| o.clone())
                .unwrap_or_else(|| json!({}));
            let patched = crate::patch::apply_document(&document, &kind, &base, field_manager)
                .map_err(patch_error)?;
            validate_patched_fields(directive, rt, &document, &patched)?;
            let Some((old, revision)) = current else {
                let bytes = Bytes::from(serde_json::to_vec(&patched).map_err(ApiError::internal)?);
                let mut create_headers = HeaderMap::new();
                create_headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                let create = Scope {
                    headers: &create_headers,
                    ..scope.clone()
                };
                return self.create(&create, &bytes).await;
            };
            match self.replace(scope, patched, &old, revision, dry_run).await {
                Err(err) if err.code == 409 && err.reason == "Conflict" => {
                    let (_, now) = self.registry.read(rt, ns, name).await?;
                    if now == revision {
                        return Err(err);
                    }
                }
                result => return result,
            }
        }
        Err(ApiError::modified(rt.group, rt.plural, name))
    }
}

impl ApiServer {
    /// The request's patch, decoded by its Content-Type (off the workers
    /// when large).
    pub(super) async fn patch_document(
        &self,
        scope: &Scope<'_>,
        body: &Bytes,
    ) -> ApiResult<PatchDocument> {
        let content_type = scope.content_type();
        let patch_type = PatchType::from_content_type(content_type)
            .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
        let limits = self.config.body;
        crate::body::decode_off_worker(body.clone(), move |bytes| {
            PatchDocument::decode(patch_type, bytes, limits)
        })
        .await
        .map_err(patch_error)
    }
}

/// `fieldValidation` for a patch: the patch's own duplicate fields and the
/// fields the patched object's type lacks. With `Strict`, upstream's
/// answers: for an apply patch, the 400 of its strict YAML decoding
/// (`error strict decoding patch: ...`) when it repeats a key; otherwise
/// the 422 on `patch` that names the patched object.
fn validate_patched_fields(
    directive: Directive,
    rt: &ResourceType,
    document: &PatchDocument,
    patched: &Value,
) -> ApiResult<()> {
    if !directive.checks() {
        return Ok(());
    }
    let apply = document.patch_type() == PatchType::Apply;
    let duplicates = document.duplicates();
    if apply && !duplicates.is_empty() {
        directive.enforce(duplicates, || {
            let error = crate::body::strict_decoding_error(duplicates);
            let yaml = error
                .trim_start_matches("strict decoding error: ")
                .to_string();
            ApiError::bad_request(format!(
                "error strict decoding patch: error converting YAML to JSON: {yaml}"
            ))
        })?;
    }
    let mut problems: Vec<StrictProblem> = if apply {
        Vec::new()
    } else {
        duplicates
            .iter()
            .map(|p| match (document.patch_type(), p) {
                (PatchType::Json, StrictProblem::DuplicateField { path }) => {
                    StrictProblem::JsonPatchDuplicateField { path: path.clone() }
                }
                _ => p.clone(),
            })
            .collect()
    };
    problems.extend(strategy::unknown_fields(rt, patched));
    directive.enforce(&problems, || {
        let errors = vec![berth_core::validation::FieldError::invalid(
            &berth_core::validation::Path::new("patch"),
            patched.to_string(),
            crate::body::strict_decoding_error(&problems),
        )];
        ApiError::invalid("", "", "", &errors)
    })
}

/// A patch engine refusal as the API reports it.
pub(super) fn patch_error(e: PatchError) -> ApiError {
    let mut err = ApiError::new(e.http_status(), e.reason(), e.to_string());
    if let PatchError::Unprocessable { detail } = &e {
        err = err.with_details(
            json!({"causes": [{"reason": "UnexpectedServerResponse", "message": detail}]}),
        );
    }
    err
}
