//! Versions of one stored resource: `events.k8s.io/v1` Events are core/v1
//! Events in the store (upstream keeps both in `/registry/events`), renamed
//! on the way in and out as upstream's conversion functions do
//! (`pkg/apis/events/v1/conversion.go`): `involvedObject` is `regarding`,
//! `message` is `note`, `reportingComponent` is `reportingController`,
//! `source` is `deprecatedSource`, and `firstTimestamp`, `lastTimestamp`,
//! `count` carry a `deprecated` prefix.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use serde_json::{Map, Value};

use crate::request_info::RequestInfo;
use crate::resources::ResourceType;
use crate::status::ApiError;

/// (core/v1 field, events.k8s.io/v1 field)
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn rename(object: &Value, api_version: &str, from_core: bool) -> Value {
    let Some(map) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let renamed = EVENT_FIELDS.iter().find_map(|(core, v1)| {
            if from_core && key == core {
                Some(*v1)
            } else if !from_core && key == v1 {
                Some(*core)
            } else {
                None
            }
        });
        out.insert(renamed.unwrap_or(key).to_string(), value.clone());
    }
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    Value::Object(out)
}

/// A stored core/v1 Event as an events.k8s.io/v1 Event.
pub fn event_to_v1(core: &Value) -> Value {
    rename(core, "events.k8s.io/v1", true)
}

/// An events.k8s.io/v1 Event as the core/v1 Event the store keeps.
pub fn event_to_core(v1: &Value) -> Value {
    rename(v1, "v1", false)
}

/// Renames the top-level field names of a merge or strategic-merge patch
/// (the patch is a partial object), or the first path segment of each JSON
/// patch operation.
fn patch_to_core(patch: &Value) -> Value {
    match patch {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let renamed = EVENT_FIELDS
                    .iter()
                    .find(|(_, v1)| key == v1)
                    .map(|(core, _)| *core);
                out.insert(renamed.unwrap_or(key).to_string(), value.clone());
            }
            Value::Object(out)
        }
        Value::Array(ops) => Value::Array(
            ops.iter()
                .map(|op| {
                    let mut op = op.clone();
                    for field in ["path", "from"] {
                        if let Some(path) = op.get(field).and_then(Value::as_str) {
                            let rest = path.strip_prefix('/').unwrap_or(path);
                            let (first, tail) =
                                rest.split_once('/').map_or((rest, ""), |(f, t)| (f, t));
                            let first = EVENT_FIELDS
                                .iter()
                                .find(|(_, v1)| *v1 == first)
                                .map_or(first, |(core, _)| *core);
                            let path = if tail.is_empty() {
                                format!("/{first}")
                            } else {
                                format!("/{first}/{tail}")
                            };
                            op[field] = Value::String(path);
                        }
                    }
                    op
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A request body for `external` (events.k8s.io/v1) in the stored form.
pub fn request_to_stored(
    external: &ResourceType,
    info: &RequestInfo,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Bytes, ApiError> {
    if body.is_empty() || !matches!(info.verb.as_str(), "create" | "update" | "patch") {
        return Ok(body.clone());
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.contains("yaml") {
        // YAML bodies are decoded by the handler; only JSON is renamed here.
        return Err(ApiError::unsupported_media_type(content_type));
    }
    // A protobuf body is converted as protobuf (an events.k8s.io Event
    // becomes a core/v1 Event, which the handler then decodes as sent).
    let protobuf = content_type.starts_with(berth_proto::CONTENT_TYPE);
    let value: Value = if protobuf {
        berth_proto::decode_object(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?
    };
    let converted = if info.verb == "patch" {
        patch_to_core(&value)
    } else {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or(external.kind);
        let version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if kind != external.kind || (!version.is_empty() && version != external.api_version()) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({})",
                external.api_version()
            )));
        }
        event_to_core(&value)
    };
    if protobuf {
        return berth_proto::encode_object(&converted)
            .map(Bytes::from)
            .map_err(ApiError::internal);
    }
    Ok(Bytes::from(converted.to_string()))
}

/// A response of the stored form (an Event, an EventList) as `external`;
/// Statuses, Tables and streams pass through.
pub async fn response_from_stored(
    external: &ResourceType,
    response: Response,
) -> Result<Response, ApiError> {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct == "application/json");
    let streaming = response.headers().contains_key(header::TRANSFER_ENCODING);
    if !is_json || streaming {
        return Ok(response);
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(ApiError::internal)?;
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(Response::from_parts(parts, Body::from(bytes)));
    };
    match value.get("kind").and_then(Value::as_str) {
        Some("Event") => value = event_to_v1(&value),
        Some("EventList") => {
            value["apiVersion"] = Value::String(external.api_version());
            if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
                for item in items.iter_mut() {
                    *item = event_to_v1(item);
                }
            }
        }
        _ => return Ok(Response::from_parts(parts, Body::from(bytes))),
    }
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Body::from(value.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_convert_both_ways_as_upstream_names_them() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web"},
            "message": "Marking for deletion Pod default/web",
            "reason": "TaintManagerEviction", "type": "Normal",
            "reportingComponent": "taint-eviction-controller",
            "source": {"component": "taint-eviction-controller"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "count": 1,
        });
        let v1 = event_to_v1(&core);
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        assert_eq!(v1["regarding"]["name"], "web");
        assert_eq!(v1["note"], "Marking for deletion Pod default/web");
        assert_eq!(v1["reportingController"], "taint-eviction-controller");
        assert_eq!(
            v1["deprecatedSource"]["component"],
            "taint-eviction-controller"
        );
        assert_eq!(v1["deprecatedCount"], 1);
        assert_eq!(v1["reason"], "TaintManagerEviction");
        assert!(v1.get("message").is_none());
        assert_eq!(event_to_core(&v1), core);
    }
}
