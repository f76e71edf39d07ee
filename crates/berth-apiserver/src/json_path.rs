//! Lenient reads from JSON objects for the pure modules: a missing field,
//! or one of the wrong type, reads as Go's zero value ("", false, 0, empty
//! list), which is what upstream sees after decoding into its structs.
//! Nothing here panics on any input.

use serde_json::Value;

/// The value at `path` (object keys), if every step exists.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, key| cur.get(key))
}

/// The string at `path`, or "" when absent or not a string.
pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

/// The boolean at `path`, or false when absent or not a boolean.
pub(crate) fn bool_at(v: &Value, path: &[&str]) -> bool {
    at(v, path).and_then(Value::as_bool).unwrap_or(false)
}

/// The integer at `path`, or 0 when absent or not an integer.
pub(crate) fn i64_at(v: &Value, path: &[&str]) -> i64 {
    at(v, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The array at `path`, or an empty slice.
pub(crate) fn arr_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}
