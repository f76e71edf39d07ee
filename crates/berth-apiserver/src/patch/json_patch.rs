//! JSON Patch (RFC 6902, `application/json-patch+json`), applied with the
//! `json-patch` crate and answered as upstream's handler answers
//! `evanphx/json-patch` (v4): a body that is not a list of operations is
//! 400, more than [`MAX_JSON_PATCH_OPERATIONS`] operations is 413, and an
//! operation that fails (or that evanphx only rejects when applying it,
//! such as an unknown `op`) is 422.

use json_patch::{PatchErrorKind, PatchOperation};
use serde::Deserialize;
use serde_json::Value;

use super::{PatchError, json_kind_name};

/// Upstream's `maxJSONPatchOperations`.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

pub(super) fn apply(original: &Value, ops: &Value) -> Result<Value, PatchError> {
    let ops = match ops {
        // Go decodes `null` into an empty patch, which changes nothing.
        Value::Null => return Ok(original.clone()),
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest {
                message: format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                    json_kind_name(other)
                ),
            });
        }
    };
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::RequestEntityTooLarge {
            message: format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                ops.len()
            ),
        });
    }
    // evanphx decodes each operation as a JSON object of raw values, so a
    // non-object fails decoding (400); the fields are read only when the
    // operation is applied.
    if let Some(bad) = ops.iter().find(|op| !op.is_object()) {
        return Err(PatchError::BadRequest {
            message: format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                json_kind_name(bad)
            ),
        });
    }

    // Upstream applies the patch to a serialized copy; a clone here, so
    // the crate's undo log is not needed.
    let mut doc = original.clone();
    for op in ops {
        let parsed = PatchOperation::deserialize(op)
            .map_err(|e| unprocessable(describe_undecodable(op, &e)))?;
        json_patch::patch_unsafe(&mut doc, std::slice::from_ref(&parsed))
            .map_err(|e| unprocessable(describe_failure(&parsed, &e.kind)))?;
    }
    Ok(doc)
}

fn unprocessable(detail: String) -> PatchError {
    PatchError::Unprocessable { detail }
}

/// An operation the crate cannot decode: evanphx's texts for an unknown
/// `op`, the decoder's otherwise.
fn describe_undecodable(op: &Value, e: &serde_json::Error) -> String {
    match op.get("op").and_then(Value::as_str) {
        Some("add" | "remove" | "replace" | "move" | "copy" | "test") => {
            format!("invalid operation {op}: {e}")
        }
        Some(kind) => format!("Unexpected kind: {kind}"),
        None => "Unexpected kind: unknown".to_owned(),
    }
}

/// evanphx's texts for an operation that does not apply.
fn describe_failure(op: &PatchOperation, kind: &PatchErrorKind) -> String {
    let path = op.path().as_str();
    match (op, kind) {
        (PatchOperation::Test(_), PatchErrorKind::TestFailed) => {
            format!("testing value {path} failed: test failed")
        }
        (PatchOperation::Test(_), _) => {
            format!("test operation does not apply: is missing path: {path}: missing value")
        }
        (PatchOperation::Add(_), _) => {
            format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
        }
        (PatchOperation::Remove(_), _) => format!(
            "remove operation does not apply: doc is missing path: \"{path}\": missing value"
        ),
        (PatchOperation::Replace(_), _) => {
            format!("replace operation does not apply: doc is missing key: {path}: missing value")
        }
        (PatchOperation::Move(m), PatchErrorKind::InvalidFromPointer) => format!(
            "move operation does not apply: doc is missing from path: {}: missing value",
            m.from.as_str()
        ),
        (PatchOperation::Copy(c), PatchErrorKind::InvalidFromPointer) => format!(
            "copy operation does not apply: doc is missing from path: {}: missing value",
            c.from.as_str()
        ),
        (PatchOperation::Move(_), _) => {
            format!(
                "move operation does not apply: doc is missing destination path: {path}: {kind}"
            )
        }
        (PatchOperation::Copy(_), _) => {
            format!(
                "copy operation does not apply: doc is missing destination path: {path}: {kind}"
            )
        }
    }
}
