//! Strategic merge patch (`application/strategic-merge-patch+json`), the
//! apply half of upstream `k8s.io/apimachinery/pkg/util/strategicpatch`
//! (`StrategicMergeMapPatch` with `MergeParallelList` and
//! `IgnoreUnmatchedNulls`, as kube-apiserver calls it).
//!
//! The functions keep upstream's names and order of operations, so that a
//! reader can hold this file next to `patch.go`. Where upstream relies on
//! Go behaviour that has no meaning here, the port says so:
//! - Go's `reflect.TypeOf` on decoded JSON becomes [`GoType`]; integers and
//!   floats are different types, as with `UnmarshalCaseSensitivePreserveInts`.
//! - Go mutates slices in place and sometimes through shared backing
//!   arrays; this port works on owned values and takes the clean reading.
//! - Go's `sort.SliceStable` is called with a comparison that is not a
//!   strict order when an item is missing from the order list; Rust's sort
//!   may panic on such a comparison, so [`go_stable_sort`] is a port of Go's
//!   own insertion-sort-plus-SymMerge, which gives the same result as
//!   upstream and cannot panic.
//! - Upstream decodes the merged map into a typed Go struct, which drops the
//!   `$`-directive keys that can be left in newly added subtrees; berth has
//!   no typed decode here, so [`strategic_merge`] strips them itself.

use serde_json::{Map, Value};

use super::schema::{self, FieldMeta, Strategy, Type};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

// Upstream's sentinel errors (`k8s.io/apimachinery/pkg/util/mergepatch`),
// with the texts clients see.
pub(crate) const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";
pub(crate) const ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST: &str =
    "invalid patch format of primitive list";
pub(crate) const ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
pub(crate) const ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST: &str =
    "invalid patch format of setElementOrder list";

/// A failure, classified the way upstream's
/// `interpretStrategicMergePatchError` classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SmpError {
    /// A malformed directive: 400.
    BadRequest(String),
    /// `ErrNoListOfLists`: 422.
    Unprocessable(String),
    /// Anything else upstream returns unclassified, which kube-apiserver
    /// answers with 500 and the error text.
    Internal(String),
}

type JsonMap = Map<String, Value>;
type Result<T> = std::result::Result<T, SmpError>;

/// Applies a strategic merge patch to `original` with the schema `ty`.
pub(crate) fn strategic_merge(
    original: JsonMap,
    patch: JsonMap,
    ty: Option<&'static Type>,
) -> Result<JsonMap> {
    let mut merged = merge_map(original, patch, ty)?;
    strip_directive_keys(&mut merged);
    Ok(merged)
}

/// The type of a decoded JSON value as Go's `reflect.TypeOf` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

pub(crate) fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        // `UnmarshalCaseSensitivePreserveInts` keeps what fits in an int64
        // as int64 and makes everything else a float64.
        Value::Number(n) if n.as_i64().is_some() => GoType::Int,
        Value::Number(_) => GoType::Float,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

fn go_type_name(v: &Value) -> &'static str {
    match go_type(v) {
        GoType::Nil => "<nil>",
        GoType::Bool => "bool",
        GoType::Int => "int64",
        GoType::Float => "float64",
        GoType::String => "string",
        GoType::Slice => "[]interface {}",
        GoType::Map => "map[string]interface {}",
    }
}

/// Go's `%v` rendering of a decoded JSON value, for error texts that
/// quote values the way upstream's do.
pub(crate) fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_fmt).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => go_fmt_map(m),
    }
}

fn go_fmt_map(m: &JsonMap) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    // Go prints map keys sorted.
    keys.sort();
    let parts: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{k}:{}", m.get(k).map_or_else(String::new, go_fmt)))
        .collect();
    format!("map[{}]", parts.join(" "))
}

fn err_bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::Internal(format!(
        "expected a {expected}, but received a {}",
        go_type_name(actual)
    ))
}

fn err_bad_arg_map(actual: &Value) -> SmpError {
    err_bad_arg_type("map[string]interface {}", actual)
}

fn err_bad_arg_slice(actual: &Value) -> SmpError {
    err_bad_arg_type("[]interface {}", actual)
}

fn err_no_merge_key(m: &JsonMap, key: &str) -> SmpError {
    SmpError::Internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_fmt_map(m)
    ))
}

fn err_bad_patch_type(t: &Value, m: &JsonMap) -> SmpError {
    SmpError::Internal(format!(
        "unknown patch type: {} in map: {}",
        go_fmt(t),
        go_fmt_map(m)
    ))
}

/// Merges fields from a patch map into the original map (upstream
/// `mergeMap`).
fn merge_map(
    mut original: JsonMap,
    mut patch: JsonMap,
    ty: Option<&'static Type>,
) -> Result<JsonMap> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER).cloned() {
        return handle_directive_in_merge_map(&directive, patch);
    }

    apply_retain_keys_directive(&mut original, &mut patch)?;

    // Process `$setElementOrder` lists and the lists they order; they are
    // removed from the patch so the loop below does not see them again.
    merge_patch_into_original(&mut original, &mut patch, ty)?;

    for (key, patch_v) in patch {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            let original_key = extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?;
            // Upstream keeps the prefixed key when nothing follows the `/`.
            if original_key.is_empty() {
                (key, true)
            } else {
                (original_key, true)
            }
        } else {
            (key, false)
        };

        // A null deletes the key; with IgnoreUnmatchedNulls it is never
        // kept.
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }

        let Some(original_v) = original.get_mut(&key) else {
            // Not in the original: take the patch value, unless it is a
            // deletion list, which has nothing to delete from.
            if !is_delete_list {
                set_without_directives(&mut original, key, patch_v);
            }
            continue;
        };

        if go_type(original_v) != go_type(&patch_v) {
            if !is_delete_list {
                set_without_directives(&mut original, key, patch_v);
            }
            continue;
        }

        match (original_v.take(), patch_v) {
            (Value::Object(original_map), Value::Object(patch_map)) => {
                let meta = schema::lookup(ty, &key);
                let merged = if meta.strategy == Strategy::Replace {
                    patch_map
                } else {
                    merge_map(original_map, patch_map, meta.ty)?
                };
                original.insert(key, Value::Object(merged));
            }
            (Value::Array(original_list), Value::Array(patch_list)) => {
                let meta = schema::lookup(ty, &key);
                let merged = merge_slice_handler(original_list, patch_list, meta, is_delete_list)?;
                original.insert(key, Value::Array(merged));
            }
            (_, scalar) => match remove_directives(scalar) {
                Some(v) => {
                    original.insert(key, v);
                }
                None => {
                    original.remove(&key);
                }
            },
        }
    }
    Ok(original)
}

/// Stores a patch value for a key the original lacks (or holds with
/// another type): nulls inside it are dropped, and so are maps carrying a
/// `$patch` directive, as upstream does.
fn set_without_directives(original: &mut JsonMap, key: String, mut patch_v: Value) {
    discard_null_values(&mut patch_v);
    match remove_directives(patch_v) {
        Some(v) => {
            original.insert(key, v);
        }
        None => {
            original.remove(&key);
        }
    }
}

/// Upstream `handleDirectiveInMergeMap`: `$patch: replace` returns the
/// patch itself, `$patch: delete` an empty map.
fn handle_directive_in_merge_map(directive: &Value, mut patch: JsonMap) -> Result<JsonMap> {
    match directive.as_str() {
        Some(REPLACE_DIRECTIVE) => {
            patch.remove(DIRECTIVE_MARKER);
            Ok(patch)
        }
        Some(DELETE_DIRECTIVE) => Ok(JsonMap::new()),
        _ => Err(err_bad_patch_type(directive, &patch)),
    }
}

/// Upstream `discardNullValuesFromPatch`.
fn discard_null_values(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_null_values);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_null_values),
        _ => {}
    }
}

/// Upstream `removeDirectives`: `None` when the value itself is a map with
/// a `$patch` directive and should not be kept.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            let kept = m
                .into_iter()
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(kept))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE_MARKER
        || k == RETAIN_KEYS_DIRECTIVE
        || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
        || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
}

/// Drops directive keys left in the merged object, which upstream's typed
/// decode would drop as unknown fields. Kubernetes object keys never start
/// with `$` (field names are Go identifiers, and label, annotation and data
/// keys are validated), so nothing real is lost.
fn strip_directive_keys(m: &mut JsonMap) {
    m.retain(|k, _| !is_directive_key(k));
    for v in m.values_mut() {
        strip_directive_keys_value(v);
    }
}

fn strip_directive_keys_value(v: &mut Value) {
    match v {
        Value::Object(m) => strip_directive_keys(m),
        Value::Array(items) => items.iter_mut().for_each(strip_directive_keys_value),
        _ => {}
    }
}

/// Upstream `extractKey`: the list's key after `<prefix>/`.
fn extract_key(s: &str, prefix: &str) -> Result<String> {
    match s.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_owned()),
        _ => Err(SmpError::BadRequest(
            if prefix == SET_ELEMENT_ORDER_PREFIX {
                ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST
            } else {
                ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST
            }
            .to_owned(),
        )),
    }
}

/// Upstream `applyRetainKeysDirective`: drops the keys of `original` that
/// the `$retainKeys` list does not name, after checking that the patch
/// sets no key outside it.
fn apply_retain_keys_directive(original: &mut JsonMap, patch: &mut JsonMap) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(SmpError::BadRequest(
            ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS.to_owned(),
        ));
    };
    let retained = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(k) {
            return Err(SmpError::BadRequest(
                ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS.to_owned(),
            ));
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

fn as_list(v: Option<&Value>) -> Result<Option<Vec<Value>>> {
    match v {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(err_bad_arg_slice(other)),
    }
}

/// Upstream `mergePatchIntoOriginal`: merges each list that has a
/// `$setElementOrder/<list>` directive and orders the result by it
/// (`$setElementOrder` first, then the patch's order, then the live
/// order).
fn merge_patch_into_original(
    original: &mut JsonMap,
    patch: &mut JsonMap,
    ty: Option<&'static Type>,
) -> Result<()> {
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for key in order_keys {
        let Some(set_order) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(set_order) = set_order else {
            return Err(err_bad_arg_slice(&set_order));
        };
        let original_key = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;
        let original_list = as_list(original.get(&original_key))?;
        let patch_list = as_list(patch.get(&original_key))?;
        let meta = schema::lookup(ty, &original_key);
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or_default(),
            &set_order,
            meta.merge_key,
        )?;

        let original_field = original_list.clone().unwrap_or_default();
        let patch_field = patch_list.clone().unwrap_or_default();
        let merged = match (original_list, patch_list) {
            (Some(original_list), None) => original_list,
            (None, Some(patch_list)) => patch_list
                .into_iter()
                .filter_map(remove_directives)
                .collect(),
            (Some(original_list), Some(patch_list)) => {
                merge_slice_handler(original_list, patch_list, meta, false)?
            }
            (None, None) => continue,
        };

        let (patch_items, server_only) = if meta.merge_key.is_empty() {
            partition_primitives_by_present_in_list(merged, &set_order)
        } else {
            partition_maps_by_present_in_list(merged, &set_order, meta.merge_key)?
        };
        let kind = slice_element_type(&[&original_field, &patch_field])?;
        let both = normalize_element_order(
            patch_items,
            server_only,
            &set_order,
            &original_field,
            meta.merge_key,
            kind,
        )?;
        original.insert(original_key.clone(), Value::Array(both));
        patch.remove(&original_key);
    }
    Ok(())
}

/// Upstream `validatePatchWithSetOrderList`: the patch list (deletions
/// aside) must be a subsequence of the `$setElementOrder` list.
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    set_order: &[Value],
    merge_key: &str,
) -> Result<()> {
    if patch_list.is_empty() || set_order.is_empty() {
        return Ok(());
    }
    let non_delete = if merge_key.is_empty() {
        patch_list.to_vec()
    } else {
        extract_to_delete_items(patch_list.to_vec())?.0
    };
    let (mut patch_index, mut order_index) = (0, 0);
    while let (Some(item), Some(ordered)) =
        (non_delete.get(patch_index), set_order.get(order_index))
    {
        if contains_directive_marker(item) {
            patch_index += 1;
            continue;
        }
        if merge_key_value_equal(item, ordered, merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < non_delete.len() && order_index >= set_order.len() {
        return Err(SmpError::Internal(format!(
            "the order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}",
            go_fmt(&Value::Array(patch_list.to_vec())),
            go_fmt(&Value::Array(set_order.to_vec()))
        )));
    }
    Ok(())
}

fn contains_directive_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let l = left.as_object().ok_or_else(|| err_bad_arg_map(left))?;
    let r = right.as_object().ok_or_else(|| err_bad_arg_map(right))?;
    let lv = l
        .get(merge_key)
        .ok_or_else(|| err_no_merge_key(l, merge_key))?;
    let rv = r
        .get(merge_key)
        .ok_or_else(|| err_no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}

/// Upstream `mergeSliceHandler`: lists with the merge strategy (and
/// deletion lists, whatever the strategy) are merged; others replaced.
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: FieldMeta,
    is_delete_list: bool,
) -> Result<Vec<Value>> {
    if meta.strategy == Strategy::Merge || is_delete_list {
        merge_slice(original, patch, meta.ty, meta.merge_key, is_delete_list)
    } else {
        Ok(patch)
    }
}

/// Upstream `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    ty: Option<&'static Type>,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = slice_element_type(&[&original, &patch])?;

    let (original, patch, merged) = if kind != GoType::Map {
        if is_delete_list {
            return Ok(delete_from_slice(original, &patch));
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        (original, patch, deduplicate_scalars(both))
    } else {
        if merge_key.is_empty() {
            return Err(SmpError::Internal(
                "cannot merge lists without merge key for type map".to_owned(),
            ));
        }
        let (original, patch) = merge_slice_with_special_elements(original, patch, merge_key)?;
        let merged = merge_slice_without_special_elements(original.clone(), &patch, merge_key, ty)?;
        (original, patch, merged)
    };

    // Enforce the order: patch items in the patch's order, server-only
    // items where they were.
    let (patch_items, server_only) = if merge_key.is_empty() {
        partition_primitives_by_present_in_list(merged, &patch)
    } else {
        partition_maps_by_present_in_list(merged, &patch, merge_key)?
    };
    normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)
}

/// Upstream `mergeSliceWithSpecialElements`: applies `$patch: delete`
/// items to the original and `$patch: replace` to the whole list, and
/// returns the original and the patch without those items.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut without_special = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(map) = item.as_object() else {
            return Err(err_bad_arg_map(&item));
        };
        let Some(directive) = map.get(DIRECTIVE_MARKER) else {
            without_special.push(item);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => match map.get(merge_key) {
                Some(merge_value) => {
                    original = delete_matching_entries(original, merge_key, merge_value)?;
                }
                None => return Err(err_no_merge_key(map, merge_key)),
            },
            // Keep going, to prune any other `$patch` items.
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => {
                return Err(SmpError::Internal(
                    "merging lists cannot yet be specified in the patch".to_owned(),
                ));
            }
            _ => return Err(err_bad_patch_type(directive, map)),
        }
    }
    if replace {
        Ok((without_special, Vec::new()))
    } else {
        Ok((original, without_special))
    }
}

/// Upstream `deleteMatchingEntries`: removes every item whose merge key
/// has the value.
fn delete_matching_entries(
    mut original: Vec<Value>,
    merge_key: &str,
    merge_value: &Value,
) -> Result<Vec<Value>> {
    while let Some(index) = find_map_in_slice(&original, merge_key, merge_value)? {
        original.remove(index);
    }
    Ok(original)
}

/// Upstream `mergeSliceWithoutSpecialElements`: merges each patch item
/// into the original item with the same merge key, or appends it.
fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    ty: Option<&'static Type>,
) -> Result<Vec<Value>> {
    for item in patch {
        let map = item.as_object().ok_or_else(|| err_bad_arg_map(item))?;
        let merge_value = map
            .get(merge_key)
            .ok_or_else(|| err_no_merge_key(map, merge_key))?;
        match find_map_in_slice(&original, merge_key, merge_value)? {
            Some(index) => {
                let slot = original
                    .get_mut(index)
                    .ok_or_else(|| SmpError::Internal("merge index out of range".to_owned()))?;
                let Value::Object(original_map) = slot.take() else {
                    return Err(err_bad_arg_map(item));
                };
                *slot = Value::Object(merge_map(original_map, map.clone(), ty)?);
            }
            None => original.push(item.clone()),
        }
    }
    Ok(original)
}

/// Upstream `deleteFromSlice`: the parallel deletion list of a primitive
/// list.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current
        .into_iter()
        .filter(|v| !to_delete.contains(v))
        .collect()
}

/// Upstream `findMapInSliceBasedOnKeyValue`.
fn find_map_in_slice(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>> {
    for (index, item) in list.iter().enumerate() {
        let map = item
            .as_object()
            .ok_or_else(|| SmpError::Internal(format!("value for key {index} is not a map")))?;
        if map.get(key) == Some(value) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// Upstream `deduplicateScalars`, including its order: a duplicate is
/// replaced by the last item (the order is normalised afterwards).
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if s[i] == s[j] {
                s.swap_remove(j);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// Upstream `sliceElementType`: all items of all the lists must have one
/// type, which must not be a list.
fn slice_element_type(lists: &[&[Value]]) -> Result<GoType> {
    let mut prev: Option<GoType> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        let current = go_type(item);
        match prev {
            None => {
                if current == GoType::Slice {
                    return Err(SmpError::Unprocessable(ERR_NO_LIST_OF_LISTS.to_owned()));
                }
                prev = Some(current);
            }
            Some(p) if p != current => {
                let rendered: Vec<String> = lists
                    .iter()
                    .map(|l| go_fmt(&Value::Array(l.to_vec())))
                    .collect();
                return Err(SmpError::Internal(format!(
                    "list element types are not identical: [{}]",
                    rendered.join(" ")
                )));
            }
            Some(_) => {}
        }
    }
    prev.ok_or_else(|| SmpError::Internal("no elements in any of the given slices".to_owned()))
}

fn partition_primitives_by_present_in_list(
    list: Vec<Value>,
    partition_by: &[Value],
) -> (Vec<Value>, Vec<Value>) {
    list.into_iter().partition(|v| partition_by.contains(v))
}

fn partition_maps_by_present_in_list(
    list: Vec<Value>,
    partition_by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut in_patch = Vec::with_capacity(list.len());
    let mut server_only = Vec::with_capacity(list.len());
    for item in list {
        let map = item.as_object().ok_or_else(|| err_bad_arg_map(&item))?;
        let merge_value = map
            .get(merge_key)
            .ok_or_else(|| err_no_merge_key(map, merge_key))?;
        if find_map_in_slice(partition_by, merge_key, merge_value)?.is_some() {
            in_patch.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((in_patch, server_only))
}

/// Upstream `normalizeElementOrder`: sorts the patch items by the patch
/// order and the server-only items by the server order, then interleaves
/// them.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted_slice(
        &server_only,
        &patch,
        server_order,
        merge_key,
        kind,
    ))
}

/// Upstream `mergeSortedSlice`: inserts the server-only items (`left`)
/// among the patch items (`right`), keeping each list's relative order.
fn merge_sorted_slice(
    left: &[Value],
    right: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Vec<Value> {
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    loop {
        match (left.get(i), right.get(j)) {
            (None, None) => break,
            (None, Some(r)) => {
                merged.push(r.clone());
                j += 1;
            }
            (Some(l), None) => {
                merged.push(l.clone());
                i += 1;
            }
            (Some(l), Some(r)) => {
                let li = index(server_order, l, merge_key, kind);
                let ri = index(server_order, r, merge_key, kind);
                if matches!((li, ri), (Some(li), Some(ri)) if li < ri) {
                    merged.push(l.clone());
                    i += 1;
                } else {
                    merged.push(r.clone());
                    j += 1;
                }
            }
        }
    }
    merged
}

/// Upstream `index`: the position of an item in a list, by merge key for
/// maps (a map without the key matches another without it, as Go's
/// `nil == nil`).
fn index(list: &[Value], item: &Value, merge_key: &str, kind: GoType) -> Option<usize> {
    if kind == GoType::Map {
        let key_of = |v: &Value| v.as_object().and_then(|m| m.get(merge_key)).cloned();
        let wanted = key_of(item);
        list.iter().position(|v| key_of(v) == wanted)
    } else {
        list.iter().position(|v| v == item)
    }
}

/// Upstream `normalizeSliceOrder`: sorts `to_sort` by `order`, with the
/// `$patch: delete` items moved to the end.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let (mut to_sort, to_delete) = if kind == GoType::Map {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    go_stable_sort(&mut to_sort, &|a: &Value, b: &Value| {
        match (
            index(order, a, merge_key, kind),
            index(order, b, merge_key, kind),
        ) {
            (Some(ia), Some(ib)) => ia < ib,
            // Upstream's comparison: "less" whenever either is unknown.
            _ => true,
        }
    });
    to_sort.extend(to_delete);
    Ok(to_sort)
}

fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> Result<()> {
    for item in lists.iter().flat_map(|l| l.iter()) {
        let map = item.as_object().ok_or_else(|| err_bad_arg_map(item))?;
        if !map.contains_key(merge_key) {
            return Err(err_no_merge_key(map, merge_key));
        }
    }
    Ok(())
}

/// Upstream `extractToDeleteItems`: splits off the `$patch: delete` items.
fn extract_to_delete_items(list: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut keep = Vec::with_capacity(list.len());
    let mut delete = Vec::new();
    for item in list {
        let map = item.as_object().ok_or_else(|| err_bad_arg_map(&item))?;
        if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(item);
        } else {
            keep.push(item);
        }
    }
    Ok((keep, delete))
}

/// Go's `sort.Stable` (insertion sort on blocks of 20, then SymMerge),
/// ported so that upstream's order comes out even for comparisons that are
/// not a strict weak order, where the result depends on the algorithm.
pub(crate) fn go_stable_sort<T>(data: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    const BLOCK: usize = 20;
    let n = data.len();
    let mut block = BLOCK;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Go's `symMerge`: merges the sorted runs `data[a..m]` and `data[m..b]`
/// in place (Kim and Kutzner's SymMerge).
fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        // Binary search for the first index in data[m..b] not less than
        // data[a], then rotate data[a] into place.
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i - 1 {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

/// Go's `rotate`: swaps the blocks `data[a..m]` and `data[m..b]`.
fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}
