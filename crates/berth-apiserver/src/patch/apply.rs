//! Server-side apply (`application/apply-patch+yaml`), reduced to what
//! `kubectl apply --server-side` needs on simple objects.
//!
//! What is done: the body is decoded as YAML (JSON is YAML; see
//! [`crate::body`]); upstream's
//! checks that come before the merge are made (a `fieldManager` is
//! required, `metadata.managedFields` must not be set, the `apiVersion`
//! must be the live object's); then the applied configuration, with its
//! nulls dropped, is merged into the live object with strategic-merge
//! semantics for the kind (lists of containers, conditions, ... merged by
//! key; untagged lists such as taints replaced).
//!
//! What is not done, plainly: there are no managed fields. So a field the
//! applier set before and has now dropped from its configuration is not
//! removed, list items are not removed either, no conflict with another
//! manager is ever reported (no 409), `force` has no meaning, and
//! `metadata.managedFields` is not written. Lists merge by the
//! strategic-merge keys, which for some fields differ from the
//! server-side-apply list keys (container `ports` merge by
//! `containerPort` alone, not with `protocol`). Creating the object when it
//! does not exist is the caller's job: it passes an empty object (`{}`) as
//! the original, and then the `apiVersion` check is the caller's too.

use serde_json::{Map, Value};

use super::schema::Type;
use super::strategic;
use super::{PatchError, json_kind_name};

pub(super) fn apply(
    ty: &'static Type,
    original: &Value,
    config: &Value,
) -> Result<Value, PatchError> {
    let mut config = match config.clone() {
        Value::Object(map) => map,
        // An empty document decodes to no object at all.
        Value::Null => Map::new(),
        other => {
            return Err(PatchError::BadRequest {
                message: format!(
                    "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind_name(&other)
                ),
            });
        }
    };

    let managed_fields = config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|f| !f.is_null());
    if managed_fields {
        return Err(PatchError::BadRequest {
            message: "metadata.managedFields must be nil".to_owned(),
        });
    }

    let live = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    if let Some(expected) = live.get("apiVersion").and_then(Value::as_str)
        && !expected.is_empty()
    {
        let specified = config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if specified != expected {
            return Err(PatchError::BadRequest {
                message: format!(
                    "Incorrect version specified in apply patch. Specified patch version: {specified}, expected: {expected}"
                ),
            });
        }
    }

    // An applied configuration has no directives, and a null in it sets
    // nothing: both are dropped before merging, so that the strategic
    // merge below neither deletes a field nor obeys a `$patch`.
    sanitize(&mut config);
    let merged = strategic::strategic_merge(live, config, Some(ty))?;
    Ok(Value::Object(merged))
}

fn sanitize(m: &mut Map<String, Value>) {
    m.retain(|k, v| !v.is_null() && !k.starts_with('$'));
    for v in m.values_mut() {
        sanitize_value(v);
    }
}

fn sanitize_value(v: &mut Value) {
    match v {
        Value::Object(m) => sanitize(m),
        Value::Array(items) => items.iter_mut().for_each(sanitize_value),
        _ => {}
    }
}
