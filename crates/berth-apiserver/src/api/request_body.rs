//! Request bodies: decoded by their `Content-Type` (JSON, YAML, or
//! Kubernetes protobuf) into a JSON object, and checked against the URL's
//! type (`kind`, `apiVersion`, `fieldValidation`).

use axum::body::Bytes;
use axum::http::{HeaderMap, header};
use serde_json::Value;

use crate::body::{BodyLimits, Decoded, Format};
use crate::field_validation::Directive;
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::strategy;

type ApiResult<T> = Result<T, ApiError>;

/// Reads a request body as JSON or YAML into an object, under `limits`,
/// off the runtime's workers when it is big (see [`crate::body`]).
pub(super) async fn parse_body(
    headers: &HeaderMap,
    body: &Bytes,
    limits: BodyLimits,
) -> ApiResult<Decoded> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media == berth_proto::CONTENT_TYPE {
        let value = crate::protobuf::decode_request_body(body)?;
        return Ok(Decoded {
            value,
            duplicates: Vec::new(),
        });
    }
    let format =
        Format::of_media_type(media).ok_or_else(|| ApiError::unsupported_media_type(media))?;
    let decoded = crate::body::decode_off_worker(body.clone(), move |bytes| {
        crate::body::decode(format, bytes, limits)
    })
    .await
    .map_err(|e| match format {
        Format::Json => ApiError::bad_request(format!("error decoding request body: {e}")),
        Format::Yaml => ApiError::bad_request(format!("error decoding YAML: {e}")),
    })?;
    if !decoded.value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(decoded)
}

/// `fieldValidation` for a created or updated object: its duplicate
/// fields and the fields its type lacks.
pub(super) fn validate_fields(
    directive: Directive,
    rt: &ResourceType,
    decoded: &Decoded,
) -> ApiResult<()> {
    if !directive.checks() {
        return Ok(());
    }
    let mut problems = decoded.duplicates.clone();
    problems.extend(strategy::unknown_fields(rt, &decoded.value));
    directive.enforce_on_object(rt.kind, rt.version, &problems)
}

/// Checks an object's `kind` and `apiVersion` against what the URL serves.
pub(super) fn check_kind(value: &Value, rt: &ResourceType) -> ApiResult<()> {
    let kind = rt.kind;
    let api_version = rt.api_version();
    let got_kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let got_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if (!got_kind.is_empty() && got_kind != kind)
        || (!got_version.is_empty() && got_version != api_version)
    {
        let mut err = ApiError::bad_request(format!(
            "the API version in the data ({got_version}) does not match the expected API version ({api_version})"
        ));
        if !got_kind.is_empty() && got_kind != kind {
            err.message = format!(
                "the kind in the data ({got_kind}) does not match the expected kind ({kind})"
            );
        }
        return Err(err);
    }
    Ok(())
}
