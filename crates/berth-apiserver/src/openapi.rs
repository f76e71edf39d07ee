//! OpenAPI documents for the served types: `/openapi/v3` (the index of
//! group-versions), `/openapi/v3/<api|apis/group>/<version>` and
//! `/openapi/v2`.
//!
//! kubectl reads them before `apply`, `create` and `edit` to learn whether
//! the server validates fields itself (a PATCH operation tagged with the
//! object's group-version-kind that accepts the `fieldValidation` query
//! parameter); when it does, kubectl leaves validation to the server and
//! sends `fieldValidation=Strict`. The schemas are open objects tagged with
//! their group-version-kind: enough for that negotiation; full schemas
//! (for `kubectl explain`) are not served yet.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::resources::{RESOURCES, ResourceType};
use crate::status::ApiError;

fn gv_path(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        format!("api/{}", rt.version)
    } else {
        format!("apis/{}/{}", rt.group, rt.version)
    }
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

/// The schema name upstream uses, e.g. `io.k8s.api.core.v1.Pod`.
fn definition_name(rt: &ResourceType) -> String {
    let package = match rt.group {
        "" => "core".to_string(),
        g => g.split('.').next().unwrap_or(g).to_string(),
    };
    format!("io.k8s.api.{package}.{}.{}", rt.version, rt.kind)
}

const QUERY_PARAMS: &[&str] = &[
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "pretty",
];

fn item_path(rt: &ResourceType) -> String {
    let base = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    if rt.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}/{{name}}", rt.plural)
    } else {
        format!("{base}/{}/{{name}}", rt.plural)
    }
}

fn operation(rt: &ResourceType, verb: &str, v3: bool) -> Value {
    let params: Vec<Value> = QUERY_PARAMS
        .iter()
        .map(|name| {
            if v3 {
                json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
            } else {
                json!({"name": name, "in": "query", "type": "string", "uniqueItems": true})
            }
        })
        .collect();
    json!({
        "operationId": format!("{verb}{}", rt.kind),
        "parameters": params,
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": gvk(rt),
    })
}

fn schema(rt: &ResourceType) -> Value {
    json!({
        "type": "object",
        "description": format!("{} ({}): served by berth.", rt.kind, rt.api_version()),
        "x-kubernetes-group-version-kind": [gvk(rt)],
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

fn paths_for(types: &[&ResourceType], v3: bool) -> Map<String, Value> {
    types
        .iter()
        .map(|rt| {
            (
                item_path(rt),
                json!({
                    "get": operation(rt, "get", v3),
                    "put": operation(rt, "put", v3),
                    "patch": operation(rt, "patch", v3),
                    "delete": operation(rt, "delete", v3),
                }),
            )
        })
        .collect()
}

fn v3_document(gv: &str) -> Option<Value> {
    let types: Vec<&ResourceType> = RESOURCES
        .iter()
        .copied()
        .filter(|rt| gv_path(rt) == gv)
        .collect();
    if types.is_empty() {
        return None;
    }
    let schemas: Map<String, Value> = types
        .iter()
        .map(|rt| (definition_name(rt), schema(rt)))
        .collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths_for(&types, true),
        "components": {"schemas": schemas},
    }))
}

fn v3_index() -> Value {
    let mut paths = Map::new();
    for rt in RESOURCES {
        let gv = gv_path(rt);
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash=berth")}),
        );
    }
    json!({"paths": paths})
}

fn v2_document() -> Value {
    let definitions: Map<String, Value> = RESOURCES
        .iter()
        .map(|rt| (definition_name(rt), schema(rt)))
        .collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths_for(RESOURCES, false),
        "definitions": definitions,
    })
}

fn respond(body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Serves an `/openapi/...` path.
pub fn serve(path: &str, _headers: &HeaderMap) -> Result<Response, ApiError> {
    match path {
        "/openapi/v2" => Ok(respond(&v2_document())),
        "/openapi/v3" => Ok(respond(&v3_index())),
        other => other
            .strip_prefix("/openapi/v3/")
            .and_then(v3_document)
            .map(|doc| respond(&doc))
            .ok_or_else(|| ApiError::path_not_found(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_index_points_at_every_group_version() {
        let index = v3_index();
        assert_eq!(
            index["paths"]["api/v1"]["serverRelativeURL"],
            "/openapi/v3/api/v1?hash=berth"
        );
        assert!(index["paths"]["apis/coordination.k8s.io/v1"].is_object());
    }

    #[test]
    fn patch_operations_advertise_field_validation_for_their_kind() {
        let doc = v3_document("api/v1").expect("core document");
        let pod = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        assert!(pod["parameters"].as_array().is_some_and(|p| {
            p.iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        }));
        assert!(doc["components"]["schemas"]["io.k8s.api.core.v1.Node"].is_object());
        assert!(v3_document("apis/apps/v1").is_none());
        let lease = v3_document("apis/coordination.k8s.io/v1").expect("lease document");
        assert!(lease["components"]["schemas"]["io.k8s.api.coordination.v1.Lease"].is_object());
    }
}
