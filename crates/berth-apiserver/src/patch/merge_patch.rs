//! JSON Merge Patch (RFC 7386, `application/merge-patch+json`), as
//! upstream applies it with `evanphx/json-patch` v4 `MergePatch`: a null
//! deletes a key, objects merge recursively, anything else replaces.
//!
//! evanphx differs from a literal reading of the RFC in ways clients can
//! see, and this port keeps them: a body that is not JSON, `null`, or a
//! scalar is 400 "Invalid JSON Patch"; a list body replaces the whole
//! document (which then fails to decode as an object, 422); nulls are
//! pruned from objects inside a value that is added or that replaces a
//! non-object, but not from one that replaces an object.

use serde_json::{Map, Value};

use super::PatchError;

/// evanphx's `ErrBadJSONPatch`.
const ERR_BAD_JSON_PATCH: &str = "Invalid JSON Patch";

pub(super) fn bad_patch() -> PatchError {
    PatchError::BadRequest {
        message: ERR_BAD_JSON_PATCH.to_owned(),
    }
}

/// A body that is not JSON is refused as [`bad_patch`] by the caller.
pub(super) fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch.clone() {
        Value::Object(patch) => {
            let mut doc = match original {
                Value::Object(map) => map.clone(),
                // A document that is not an object is replaced by the patch.
                _ => Map::new(),
            };
            merge_docs(&mut doc, patch);
            Ok(Value::Object(doc))
        }
        Value::Array(mut items) => {
            items.iter_mut().for_each(prune_nulls);
            Ok(Value::Array(items))
        }
        _ => Err(bad_patch()),
    }
}

/// evanphx `mergeDocs` (without `mergeMerge`).
fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, mut value) in patch {
        if value.is_null() {
            doc.remove(&key);
            continue;
        }
        match doc.get_mut(&key) {
            None | Some(Value::Null) => {
                prune_nulls(&mut value);
                doc.insert(key, value);
            }
            Some(current) => merge(current, value),
        }
    }
}

/// evanphx `merge`: objects merge; a value replacing a non-object has its
/// nulls pruned; a non-object replacing an object is taken as it is.
fn merge(current: &mut Value, mut patch: Value) {
    match (current, &mut patch) {
        (Value::Object(cur), Value::Object(_)) => {
            if let Value::Object(p) = patch {
                merge_docs(cur, p);
            }
        }
        (cur @ Value::Object(_), _) => *cur = patch,
        (cur, _) => {
            prune_nulls(&mut patch);
            *cur = patch;
        }
    }
}

/// evanphx `pruneNulls`: drops null fields of objects, at every depth;
/// null list items stay.
fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}
