//! `kubectl get` asks for a server-side `Table`
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json`);
//! this turns a list (or one object) into one with [`crate::table`].

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use serde_json::Value;

use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::table::{
    IncludeObject, ListMeta, TableOptions, TableVersion, table_version_from_accept,
    to_table_with_options,
};

/// What the client asked for: a Table of this version, rows carrying this.
#[derive(Debug, Clone, Copy)]
pub struct Include {
    pub version: TableVersion,
    pub include_object: IncludeObject,
}

/// The Table the `Accept` header asks for, if any; `includeObject` comes
/// from the query.
pub fn wants_table(
    headers: &HeaderMap,
    include_object: Option<&str>,
) -> Result<Option<Include>, ApiError> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(version) = table_version_from_accept(accept) else {
        return Ok(None);
    };
    let include_object =
        IncludeObject::parse(include_object.unwrap_or("")).map_err(ApiError::bad_request)?;
    Ok(Some(Include {
        version,
        include_object,
    }))
}

fn content_type(version: TableVersion) -> &'static str {
    match version {
        TableVersion::V1 => "application/json;as=Table;v=v1;g=meta.k8s.io",
        TableVersion::V1Beta1 => "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
    }
}

/// A Table of `items` (JSON text of objects of `rt`).
pub fn respond(
    rt: &ResourceType,
    items: &[Arc<str>],
    rv: i64,
    next: Option<&str>,
    include: Include,
    now: jiff::Timestamp,
) -> Result<Response, ApiError> {
    let objects: Vec<Value> = items
        .iter()
        .map(|item| serde_json::from_str(item).map_err(ApiError::internal))
        .collect::<Result<_, _>>()?;
    let options = TableOptions {
        version: include.version,
        include_object: include.include_object,
        no_headers: false,
        list_meta: ListMeta {
            resource_version: Some(rv.to_string()),
            continue_token: next.map(str::to_string),
            remaining_item_count: None,
        },
    };
    let table = to_table_with_options(rt.kind, &objects, &options, now);
    let mut response = Response::new(Body::from(table.to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(include.version)),
    );
    Ok(response)
}
