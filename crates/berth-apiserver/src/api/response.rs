//! Responses: JSON objects, byte bodies already encoded, plain text,
//! errors as `Status` objects, and list bodies built from cached JSON.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::objects;
use crate::resources::ResourceType;
use crate::status::ApiError;

pub(super) fn json_response(code: u16, body: &Value) -> Response {
    bytes_response(code, objects::to_json_bytes(body))
}

pub(super) fn bytes_response(code: u16, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An error as the API answers it: a `Status` object, with `Retry-After`
/// when the error names one.
pub fn error_response(err: &ApiError) -> Response {
    let mut response = json_response(err.code, &err.to_status());
    if let Some(seconds) = err.retry_after_seconds() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

pub(super) fn plain(code: u16, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A list body, built from the cached JSON without re-encoding objects.
pub(super) fn list_response(
    rt: &ResourceType,
    items: &[Arc<str>],
    rv: i64,
    next: Option<&str>,
) -> Response {
    let mut out = String::with_capacity(128 + items.iter().map(|i| i.len() + 1).sum::<usize>());
    out.push_str(&format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"",
        rt.list_kind(),
        rt.api_version()
    ));
    if let Some(token) = next {
        out.push_str(&format!(
            ",\"continue\":{}",
            Value::String(token.to_string())
        ));
    }
    out.push_str("},\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push_str("]}");
    bytes_response(200, out.into_bytes())
}
