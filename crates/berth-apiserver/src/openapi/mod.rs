//! OpenAPI documents for the served types, as kube-apiserver serves them:
//! `/openapi/v2` (one Swagger 2.0 document for everything),
//! `/openapi/v3` (the index of group-versions, each URL carrying its
//! document's hash) and `/openapi/v3/<api/v1|apis/group/version>`.
//!
//! The schemas are generated from the k8s-openapi types (their `schemars`
//! support) with upstream's definition names, descriptions, references and
//! extensions ([`definitions`]); a served type only names its k8s-openapi
//! type ([`kinds`]). kubectl reads these documents for `explain`, for
//! `apply`'s strategic merge patches, and to learn that the server
//! validates fields itself (the PATCH operations take `fieldValidation`),
//! in which case it sends `fieldValidation=Strict` instead of validating
//! client-side.
//!
//! The documents are built once, at the first request for any of them (a
//! server that is never asked pays nothing at startup), and then served
//! from bytes with a strong `ETag` (upstream's: the SHA-512 of the body, in
//! upper-case hex); `If-None-Match` answers 304. A v3 document asked for
//! with its `?hash=` is immutable (`Cache-Control: public, immutable`, as
//! kubectl's disk cache expects); with a stale hash it redirects to the
//! current one. `/openapi/v2` is also served as gnostic's protobuf
//! `openapi_v2.Document` ([`v2_protobuf`]), which client-go asks for; any
//! other media type is 406.

mod definitions;
pub(crate) mod kinds;
mod list_types;
mod paths;
mod v2_protobuf;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::resources::{RESOURCES, ResourceType};
use crate::status::ApiError;
use definitions::Dialect;

/// The `info` of every document.
const INFO_TITLE: &str = "Kubernetes";
const INFO_VERSION: &str = "v1.37.0";

const JSON: &str = "application/json";
/// The protobuf media types of `/openapi/v2`: the one client-go asks for,
/// and the one upstream answers with (and also accepts).
const V2_PROTOBUF_ASKED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// One document, ready to serve.
struct Served {
    /// Shared by every response (a clone is a reference count).
    body: Bytes,
    /// Upper-case hex SHA-512 of the body (upstream's `computeETag`),
    /// unquoted.
    hash: String,
}

impl Served {
    fn new(body: Vec<u8>) -> Served {
        let digest = ring::digest::digest(&ring::digest::SHA512, &body);
        let hash = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
        Served {
            body: Bytes::from(body),
            hash,
        }
    }

    fn json(document: &Value) -> Served {
        Served::new(document.to_string().into_bytes())
    }
}

/// Every document, built once.
struct Documents {
    v2_json: Served,
    v2_protobuf: Served,
    v3_index: Served,
    /// By group-version path (`api/v1`, `apis/coordination.k8s.io/v1`).
    v3: BTreeMap<String, Served>,
}

static DOCUMENTS: OnceLock<Documents> = OnceLock::new();

fn documents() -> &'static Documents {
    DOCUMENTS.get_or_init(build_documents)
}

fn build_documents() -> Documents {
    let started = std::time::Instant::now();
    let v2 = v2_document();
    let v2_protobuf = Served::new(v2_protobuf::encode(&v2));
    let v2_json = Served::json(&v2);
    let v3: BTreeMap<String, Served> = group_versions()
        .into_iter()
        .map(|(gv, types)| {
            let document = v3_document(&types);
            (gv, Served::json(&document))
        })
        .collect();
    let index: Map<String, Value> = v3
        .iter()
        .map(|(gv, served)| {
            (
                gv.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={}", served.hash)}),
            )
        })
        .collect();
    let v3_index = Served::json(&json!({ "paths": index }));
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        v2_bytes = v2_json.body.len(),
        "built the OpenAPI documents"
    );
    Documents {
        v2_json,
        v2_protobuf,
        v3_index,
        v3,
    }
}

/// The size in bytes of each document (`v2`, `v2.pb`, `v3`, `v3/<gv>`),
/// built afresh rather than taken from the cache: for `berth-bench
/// openapi`, which times this.
pub fn build_uncached() -> Vec<(String, usize)> {
    let documents = build_documents();
    let mut sizes = vec![
        ("v2".to_string(), documents.v2_json.body.len()),
        ("v2.pb".to_string(), documents.v2_protobuf.body.len()),
        ("v3".to_string(), documents.v3_index.body.len()),
    ];
    sizes.extend(
        documents
            .v3
            .iter()
            .map(|(gv, served)| (format!("v3/{gv}"), served.body.len())),
    );
    sizes
}

/// `api/v1` or `apis/<group>/<version>`.
fn gv_path(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        format!("api/{}", rt.version)
    } else {
        format!("apis/{}/{}", rt.group, rt.version)
    }
}

/// The served types by group-version path.
fn group_versions() -> BTreeMap<String, Vec<&'static ResourceType>> {
    let mut by_gv: BTreeMap<String, Vec<&'static ResourceType>> = BTreeMap::new();
    for rt in RESOURCES {
        by_gv.entry(gv_path(rt)).or_default().push(rt);
    }
    by_gv
}

fn v2_document() -> Value {
    let mut definitions = definitions::definitions(RESOURCES);
    definitions::to_dialect(&mut definitions, Dialect::V2);
    json!({
        "swagger": "2.0",
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "paths": paths::paths(RESOURCES, Dialect::V2),
        "definitions": definitions,
    })
}

fn v3_document(types: &[&ResourceType]) -> Value {
    let mut definitions = definitions::definitions(types);
    definitions::to_dialect(&mut definitions, Dialect::V3);
    let mut document = json!({
        "openapi": "3.0.0",
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "paths": paths::paths(types, Dialect::V3),
        "components": {"schemas": definitions},
    });
    definitions::v3_references(&mut document);
    document
}

/// The media ranges of an `Accept` header, best first: by q-value, then
/// the more specific first, then in the header's order (goautoneg's
/// order, which upstream's handlers use). A missing header is `*/*`.
fn media_ranges(headers: &HeaderMap) -> Vec<String> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty())
        .unwrap_or("*/*");
    let mut ranges: Vec<(f32, u8, usize, String)> = accept
        .split(',')
        .enumerate()
        .filter_map(|(order, clause)| {
            let mut parts = clause.split(';');
            let range = parts.next()?.trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let wildcards = range.matches('*').count() as u8;
            (q > 0.0 && !range.is_empty()).then_some((q, wildcards, order, range))
        })
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    ranges.into_iter().map(|(_, _, _, range)| range).collect()
}

/// The first of `offered` (media types, in the server's order of
/// preference) that the request accepts, as upstream's handlers pick it.
fn negotiate<'a>(headers: &HeaderMap, offered: &[&'a str]) -> Option<&'a str> {
    let matches = |range: &str, offer: &str| {
        let (range_type, range_sub) = range.split_once('/').unwrap_or((range, "*"));
        let (offer_type, offer_sub) = offer.split_once('/').unwrap_or((offer, ""));
        (range_type == "*" || range_type == offer_type)
            && (range_sub == "*" || range_sub == offer_sub)
    };
    media_ranges(headers)
        .iter()
        .find_map(|range| offered.iter().copied().find(|offer| matches(range, offer)))
}

/// Whether `If-None-Match` names this entity tag (or `*`).
fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag)
}

fn header_value(value: &str) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(value).map_err(ApiError::internal)
}

/// A 200 with the document (or a 304 when the client has it), tagged with
/// its entity tag.
fn respond(
    headers: &HeaderMap,
    served: &Served,
    content_type: &'static str,
    immutable: bool,
) -> Result<Response, ApiError> {
    let etag = format!("\"{}\"", served.hash);
    let mut response = if not_modified(headers, &etag) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Body::from(served.body.clone()));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        response
    };
    let response_headers = response.headers_mut();
    response_headers.insert(header::ETAG, header_value(&etag)?);
    response_headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    if immutable {
        response_headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        let in_a_year = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(365 * 24);
        let expires = jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&in_a_year)
            .map_err(ApiError::internal)?;
        response_headers.insert(header::EXPIRES, header_value(&expires)?);
    }
    Ok(response)
}

/// 406 with no body, as upstream's OpenAPI handlers answer a media type
/// they do not serve.
fn not_acceptable() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NOT_ACCEPTABLE;
    response
}

/// A 301 to the document's current URL (its hash changed).
fn moved(location: &str) -> Result<Response, ApiError> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
    response
        .headers_mut()
        .insert(header::LOCATION, header_value(location)?);
    Ok(response)
}

/// The `hash` parameter of a query string.
fn hash_param(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == "hash")
        .map(|(_, value)| value.into_owned())
        .filter(|hash| !hash.is_empty())
}

/// Serves an `/openapi/...` path (`query` is the raw query string).
pub fn serve(path: &str, query: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    match path.trim_end_matches('/') {
        "/openapi/v2" => {
            let docs = documents();
            match negotiate(headers, &[JSON, V2_PROTOBUF_ASKED, V2_PROTOBUF]) {
                Some(JSON) => respond(headers, &docs.v2_json, JSON, false),
                Some(_) => respond(headers, &docs.v2_protobuf, V2_PROTOBUF, false),
                None => Ok(not_acceptable()),
            }
        }
        "/openapi/v3" => respond(headers, &documents().v3_index, JSON, false),
        other => {
            let served = other
                .strip_prefix("/openapi/v3/")
                .and_then(|gv| Some((gv, documents().v3.get(gv)?)))
                .ok_or_else(|| ApiError::path_not_found(path))?;
            let (gv, served) = served;
            // v3 protobuf is not produced: only JSON is offered.
            if negotiate(headers, &[JSON]).is_none() {
                return Ok(not_acceptable());
            }
            match hash_param(query) {
                Some(hash) if hash != served.hash => {
                    moved(&format!("/openapi/v3/{gv}?hash={}", served.hash))
                }
                Some(_) => respond(headers, served, JSON, true),
                None => respond(headers, served, JSON, false),
            }
        }
    }
}

#[cfg(test)]
mod tests;
