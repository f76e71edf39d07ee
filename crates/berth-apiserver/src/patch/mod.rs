//! The PATCH engine: applies a request body of any of the four Kubernetes
//! patch content types to the live object, as pure functions over JSON,
//! with kube-apiserver's status codes and messages.
//!
//! | Content-Type | [`PatchType`] | semantics |
//! | --- | --- | --- |
//! | `application/json-patch+json` | [`PatchType::Json`] | RFC 6902, via the `json-patch` crate |
//! | `application/merge-patch+json` | [`PatchType::Merge`] | RFC 7386 |
//! | `application/strategic-merge-patch+json` | [`PatchType::StrategicMerge`] | port of upstream `strategicpatch` |
//! | `application/apply-patch+yaml` | [`PatchType::Apply`] | a subset of server-side apply |
//!
//! The status codes follow upstream
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`: a body
//! that does not decode is 400, a JSON patch that does not apply is 422
//! with the generic message and the detail as a cause, more than 10,000
//! JSON patch operations is 413, and strategic-merge errors are classified
//! as upstream's `interpretStrategicMergePatchError` does (400 for
//! malformed directives, 422 for lists of lists; the rest, which upstream
//! leaves a 500, are 400 here: no malformed patch is a server error).
//!
//! What the caller does, as upstream's handler does around this step:
//! answer 415 for an unknown Content-Type
//! ([`PatchError::unsupported_media_type`]); answer 404 (or, for apply,
//! create the object) when the object does not exist; decode the result
//! into the typed object and answer 422 when it does not decode; check the
//! name and namespace; run admission and validation.
//!
//! Gaps, plainly:
//! - Server-side apply is not implemented: there are no managed fields, no
//!   ownership and no conflicts ([`PatchError::Conflict`] is never produced
//!   yet). [`PatchType::Apply`] merges the applied configuration into the
//!   live object with strategic-merge semantics, so it adds and changes
//!   fields but never removes a field the applier stopped setting. See
//!   [`apply`].
//! - The strategic-merge schemas cover Pod, Node, Namespace, and the
//!   metadata of every kind ([`PatchKind`]); custom resources have no
//!   strategic merge upstream (415), which is the caller's to answer.
//! - Error texts that upstream takes from Go's JSON decoder or from
//!   `evanphx/json-patch` are close to, not identical with, upstream's.
//! - `fieldValidation=Strict|Warn` (unknown and duplicate field
//!   detection) is not done here.

mod apply;
mod json_patch;
mod merge_patch;
mod schema;
mod strategic;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::body::{BodyLimits, DecodeError, Format, StrictProblem};
use schema::Type;
/// The strategic-merge tags of a struct, which the OpenAPI documents
/// publish as `x-kubernetes-patch-strategy` and `-merge-key`.
pub(crate) use schema::Type as PatchSchema;

/// The four patch content types kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`: RFC 6902 JSON Patch.
    Json,
    /// `application/merge-patch+json`: RFC 7386 JSON Merge Patch.
    Merge,
    /// `application/strategic-merge-patch+json`: Kubernetes strategic merge
    /// patch.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

impl PatchType {
    /// Every patch type, in the order upstream lists them in its 415
    /// message for built-in resources.
    pub const ALL: [PatchType; 4] = [
        PatchType::Json,
        PatchType::Merge,
        PatchType::StrategicMerge,
        PatchType::Apply,
    ];

    /// The patch type of a `Content-Type` header. Parameters (`;
    /// charset=utf-8`) are ignored; the media type itself must match
    /// exactly, as upstream compares it. `application/apply-patch+cbor` is
    /// not accepted (upstream serves it only behind a feature gate).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        // Upstream cuts at the first ';' only when it is not the first
        // character.
        let media_type = match content_type.find(';') {
            Some(idx) if idx > 0 => &content_type[..idx],
            _ => content_type,
        };
        PatchType::ALL
            .into_iter()
            .find(|t| t.content_type() == media_type)
    }

    /// The media type of the patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// The kind being patched; it selects the strategic-merge schema (merge
/// keys and strategies of its fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchKind {
    /// core/v1 Pod.
    Pod,
    /// core/v1 Node.
    Node,
    /// core/v1 Namespace.
    Namespace,
    /// core/v1 Event or events.k8s.io/v1 Event: no tagged fields beyond
    /// metadata.
    Event,
    /// coordination.k8s.io/v1 Lease: no tagged fields beyond metadata.
    Lease,
    /// apps/v1 Deployment: its template, `strategy` (retainKeys) and
    /// status conditions.
    Deployment,
    /// apps/v1 ReplicaSet, DaemonSet and StatefulSet: their template and
    /// status conditions.
    Workload,
    /// core/v1 Service: ports merge by port.
    Service,
    /// core/v1 ServiceAccount: secrets merge by name.
    ServiceAccount,
    /// Any other built-in kind: only the metadata tags apply
    /// (`finalizers`, `ownerReferences`), every other list is replaced.
    Other,
}

impl PatchKind {
    /// The kind for an API group and kind name (the version does not
    /// change the tags of these kinds).
    pub fn from_group_kind(group: &str, kind: &str) -> PatchKind {
        match (group, kind) {
            ("", "Pod") => PatchKind::Pod,
            ("", "Node") => PatchKind::Node,
            ("", "Namespace") => PatchKind::Namespace,
            ("" | "events.k8s.io", "Event") => PatchKind::Event,
            ("coordination.k8s.io", "Lease") => PatchKind::Lease,
            ("apps", "Deployment") => PatchKind::Deployment,
            ("apps", "ReplicaSet" | "DaemonSet" | "StatefulSet") => PatchKind::Workload,
            ("", "Service") => PatchKind::Service,
            ("", "ServiceAccount") => PatchKind::ServiceAccount,
            _ => PatchKind::Other,
        }
    }

    pub(crate) fn schema(self) -> &'static Type {
        match self {
            PatchKind::Pod => &schema::POD,
            PatchKind::Node => &schema::NODE,
            PatchKind::Namespace => &schema::NAMESPACE,
            PatchKind::Deployment => &schema::DEPLOYMENT,
            PatchKind::Workload => &schema::WORKLOAD,
            PatchKind::Service => &schema::SERVICE,
            PatchKind::ServiceAccount => &schema::SERVICE_ACCOUNT,
            PatchKind::Event | PatchKind::Lease | PatchKind::Other => &schema::METADATA_ONLY,
        }
    }
}

/// The generic message of upstream's 422 `NewGenericServerResponse`; the
/// specific failure goes in the status's causes.
pub const UNPROCESSABLE_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// Why a patch was refused, with the HTTP status kube-apiserver answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// 400 BadRequest: the body (or a directive in it) is malformed.
    #[error("{message}")]
    BadRequest { message: String },
    /// 422 Invalid, upstream's `NewGenericServerResponse(422, ...)`: the
    /// patch is well formed but does not apply (a JSON patch `test` failed,
    /// a path is missing). The Status message is [`UNPROCESSABLE_MESSAGE`];
    /// `detail` is its single cause (type `UnexpectedServerResponse`).
    #[error("{UNPROCESSABLE_MESSAGE}")]
    Unprocessable { detail: String },
    /// 422 Invalid, upstream's `NewInvalid`: the request's options are
    /// invalid, or the patched object is not an object.
    #[error("{message}")]
    Invalid { message: String },
    /// 409 Conflict: reserved for server-side apply conflicts, which are
    /// not detected yet (see the module doc).
    #[error("{message}")]
    Conflict { message: String },
    /// 413 RequestEntityTooLarge: too many JSON patch operations.
    #[error("{message}")]
    RequestEntityTooLarge { message: String },
    /// 415 UnsupportedMediaType: the Content-Type is not a patch type the
    /// resource accepts.
    #[error("{message}")]
    UnsupportedMediaType { message: String },
}

impl PatchError {
    /// The HTTP status code kube-apiserver answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::BadRequest { .. } => 400,
            PatchError::Unprocessable { .. } | PatchError::Invalid { .. } => 422,
            PatchError::Conflict { .. } => 409,
            PatchError::RequestEntityTooLarge { .. } => 413,
            PatchError::UnsupportedMediaType { .. } => 415,
        }
    }

    /// The `reason` of the `metav1.Status` upstream answers with.
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest { .. } => "BadRequest",
            PatchError::Unprocessable { .. } | PatchError::Invalid { .. } => "Invalid",
            PatchError::Conflict { .. } => "Conflict",
            PatchError::RequestEntityTooLarge { .. } => "RequestEntityTooLarge",
            PatchError::UnsupportedMediaType { .. } => "UnsupportedMediaType",
        }
    }

    /// The 415 for a Content-Type outside `accepted`, with upstream's
    /// message (`negotiation.NewUnsupportedMediaTypeError`).
    pub fn unsupported_media_type(accepted: &[PatchType]) -> PatchError {
        let types: Vec<&str> = accepted.iter().map(|t| t.content_type()).collect();
        PatchError::UnsupportedMediaType {
            message: format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                types.join(", ")
            ),
        }
    }

    fn bad_request(message: impl Into<String>) -> PatchError {
        PatchError::BadRequest {
            message: message.into(),
        }
    }
}

impl From<strategic::SmpError> for PatchError {
    fn from(e: strategic::SmpError) -> PatchError {
        match e {
            strategic::SmpError::BadRequest(message) => PatchError::BadRequest { message },
            strategic::SmpError::Unprocessable(detail) => PatchError::Unprocessable { detail },
            // Upstream leaves these unclassified, so a strategic merge
            // patch that does not fit the object (a number where the
            // schema has a list of objects) was a 500, and berth's apply,
            // merged the same way, too. They are the patch's fault: 400,
            // as upstream's apply answers a patch that does not fit the
            // schema.
            strategic::SmpError::Internal(message) => PatchError::BadRequest { message },
        }
    }
}

/// Upstream's `FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// A patch body, decoded once: a patch retried on a conflict is applied
/// again without reading its body again.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchDocument {
    patch_type: PatchType,
    patch: Value,
    duplicates: Vec<StrictProblem>,
}

impl PatchDocument {
    /// Decodes a body of `patch_type` under `limits` (JSON for the first
    /// three types, YAML for apply), with upstream's 400 for one that does
    /// not decode.
    pub fn decode(
        patch_type: PatchType,
        body: &[u8],
        limits: BodyLimits,
    ) -> Result<PatchDocument, PatchError> {
        let format = match patch_type {
            PatchType::Apply => Format::Yaml,
            _ => Format::Json,
        };
        let decoded =
            crate::body::decode(format, body, limits).map_err(|e| match (patch_type, e) {
                (_, e @ DecodeError::TooDeep { .. }) => {
                    PatchError::bad_request(format!("error decoding patch: {e}"))
                }
                (PatchType::Merge, DecodeError::Syntax(_)) => merge_patch::bad_patch(),
                (PatchType::Apply, DecodeError::Syntax(e)) => {
                    PatchError::bad_request(format!("error decoding YAML: {e}"))
                }
                (_, DecodeError::Syntax(e)) => PatchError::bad_request(e),
            })?;
        Ok(PatchDocument {
            patch_type,
            patch: decoded.value,
            duplicates: decoded.duplicates,
        })
    }

    pub fn patch_type(&self) -> PatchType {
        self.patch_type
    }

    /// The patch's own duplicate fields, as upstream's strict decoding of
    /// the patch reports them.
    pub fn duplicates(&self) -> &[StrictProblem] {
        &self.duplicates
    }
}

/// Applies `patch` (the request body) of type `patch_type` to `original`
/// (the live object), returning the patched object: [`PatchDocument::decode`]
/// then [`apply_document`].
pub fn apply_patch(
    patch_type: PatchType,
    kind: &PatchKind,
    original: &Value,
    patch: &[u8],
    field_manager: Option<&str>,
) -> Result<Value, PatchError> {
    validate_patch_options(patch_type, field_manager)?;
    let document = PatchDocument::decode(patch_type, patch, BodyLimits::default())?;
    apply_document(&document, kind, original, field_manager)
}

/// Applies a decoded patch to `original` (the live object).
///
/// `field_manager` is the `fieldManager` query parameter; it is required
/// for [`PatchType::Apply`] and checked (length, printable characters) for
/// every type, as upstream's `ValidatePatchOptions` does. Never panics,
/// whatever the patch, and never fails with a 5xx: a patch that does not
/// fit the object is the client's error.
pub fn apply_document(
    document: &PatchDocument,
    kind: &PatchKind,
    original: &Value,
    field_manager: Option<&str>,
) -> Result<Value, PatchError> {
    validate_patch_options(document.patch_type, field_manager)?;
    let patch = &document.patch;
    let patched = match document.patch_type {
        PatchType::Json => json_patch::apply(original, patch)?,
        PatchType::Merge => merge_patch::apply(original, patch)?,
        PatchType::StrategicMerge => apply_strategic(kind.schema(), original, patch)?,
        PatchType::Apply => apply::apply(kind.schema(), original, patch)?,
    };
    ensure_object(patched)
}

/// Upstream decodes the patched JSON into the typed object; anything but a
/// JSON object fails that decode, with a 422 `NewInvalid` on the `patch`
/// field.
fn ensure_object(patched: Value) -> Result<Value, PatchError> {
    if patched.is_object() {
        return Ok(patched);
    }
    let kind = json_kind_name(&patched);
    Err(PatchError::Invalid {
        message: format!(
            " \"\" is invalid: patch: Invalid value: {}: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}",
            serde_json::to_string(&serde_json::to_string(&patched).unwrap_or_default())
                .unwrap_or_default()
        ),
    })
}

/// Upstream `ValidatePatchOptions`, the part about the field manager.
fn validate_patch_options(
    patch_type: PatchType,
    field_manager: Option<&str>,
) -> Result<(), PatchError> {
    let manager = field_manager.unwrap_or_default();
    let mut errs = Vec::new();
    if patch_type == PatchType::Apply && manager.is_empty() {
        errs.push("fieldManager: Required value: is required for apply patch".to_owned());
    }
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(format!(
            "fieldManager: Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"
        ));
    }
    for (pos, c) in manager.char_indices() {
        if !is_go_printable(c) {
            errs.push(format!(
                "fieldManager: Invalid value: {}: invalid character U+{:04X} (at position {pos})",
                serde_json::to_string(manager).unwrap_or_default(),
                u32::from(c)
            ));
        }
    }
    // `field.ErrorList.ToAggregate()` prints one error bare and several in
    // brackets.
    let aggregate = match errs.len() {
        0 => return Ok(()),
        1 => errs.join(""),
        _ => format!("[{}]", errs.join(", ")),
    };
    Err(PatchError::Invalid {
        message: format!("PatchOptions.meta.k8s.io \"\" is invalid: {aggregate}"),
    })
}

/// An approximation of Go's `unicode.IsPrint`: graphic characters and the
/// ASCII space, not control, format or other space characters.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format_char = matches!(
        u32::from(c),
        0xAD | 0x600..=0x605 | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x206F | 0xFEFF
    );
    !(c.is_control() || c.is_whitespace() || format_char)
}

/// Strategic merge patch: the body must be a JSON object.
fn apply_strategic(
    ty: &'static Type,
    original: &Value,
    patch: &Value,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(map) => map.clone(),
        // Go's json.Unmarshal of `null` into a map leaves it empty.
        Value::Null => serde_json::Map::new(),
        other => {
            return Err(PatchError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind_name(other)
            )));
        }
    };
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => return Err(PatchError::bad_request(strategic_err_bad_json_doc())),
    };
    let merged = strategic::strategic_merge(original, patch, Some(ty))?;
    Ok(Value::Object(merged))
}

/// Upstream `mergepatch.ErrBadJSONDoc`.
fn strategic_err_bad_json_doc() -> &'static str {
    "invalid JSON document"
}

/// The word Go's JSON decoder uses for a value's kind in "cannot
/// unmarshal X into ..." errors.
fn json_kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
