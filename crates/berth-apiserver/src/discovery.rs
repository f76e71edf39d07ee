//! Discovery: `/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`, both
//! the legacy documents and the aggregated form (`apidiscovery.k8s.io/v2`)
//! that kubectl asks for first. Everything is derived from
//! [`crate::resources::RESOURCES`].
//!
//! The `policy` group is advertised (with no resources of its own) because
//! `kubectl drain` looks for it before using the `pods/eviction`
//! subresource.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::auth::User;
use crate::resources::{RESOURCES, ResourceType, groups};
use crate::status::ApiError;

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Groups advertised without resource types of their own: the resource
/// metrics API (not stored, see [`crate::resource_metrics`]).
const EXTRA_GROUPS: &[(&str, &str)] = &[(
    crate::resource_metrics::GROUP,
    crate::resource_metrics::VERSION,
)];

fn respond(content_type: &'static str, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Which aggregated discovery version the client accepts, if any.
fn aggregated(headers: &HeaderMap) -> Option<&'static str> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    for media in accept.split(',') {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if has("g=apidiscovery.k8s.io") && has("as=APIGroupDiscoveryList") {
            if has("v=v2") {
                return Some(AGGREGATED_V2);
            }
            if has("v=v2beta1") {
                return Some(AGGREGATED_V2BETA1);
            }
        }
    }
    None
}

fn scope(rt: &ResourceType) -> &'static str {
    if rt.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

fn legacy_resources(group: &str, version: &str) -> Vec<Value> {
    if (group, version)
        == (
            crate::resource_metrics::GROUP,
            crate::resource_metrics::VERSION,
        )
    {
        return crate::resource_metrics::legacy_resources();
    }
    let mut out = Vec::new();
    for rt in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let mut resource = json!({
            "name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
            "kind": rt.kind, "verbs": rt.verbs,
        });
        if !rt.short_names.is_empty() {
            resource["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            resource["categories"] = json!(rt.categories);
        }
        out.push(resource);
        for sub in rt.subresources {
            let mut resource = json!({
                "name": format!("{}/{}", rt.plural, sub.name), "singularName": "",
                "namespaced": rt.namespaced,
                "kind": if sub.kind.is_empty() { rt.kind } else { sub.kind },
                "verbs": sub.verbs,
            });
            if !sub.group.is_empty() {
                resource["group"] = json!(sub.group);
                resource["version"] = json!(sub.version);
            }
            out.push(resource);
        }
    }
    out
}

fn aggregated_resources(group: &str, version: &str) -> Vec<Value> {
    if (group, version)
        == (
            crate::resource_metrics::GROUP,
            crate::resource_metrics::VERSION,
        )
    {
        return crate::resource_metrics::aggregated_resources();
    }
    RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .map(|rt| {
            let subresources: Vec<Value> = rt
                .subresources
                .iter()
                .map(|sub| {
                    let (g, v, k) = if sub.kind.is_empty() {
                        (rt.group, rt.version, rt.kind)
                    } else {
                        (sub.group, sub.version, sub.kind)
                    };
                    json!({"subresource": sub.name, "responseKind": {"group": g, "version": v, "kind": k}, "verbs": sub.verbs})
                })
                .collect();
            let mut resource = json!({
                "resource": rt.plural,
                "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                "scope": scope(rt), "singularResource": rt.singular, "verbs": rt.verbs,
            });
            if !rt.short_names.is_empty() {
                resource["shortNames"] = json!(rt.short_names);
            }
            if !rt.categories.is_empty() {
                resource["categories"] = json!(rt.categories);
            }
            if !subresources.is_empty() {
                resource["subresources"] = json!(subresources);
            }
            resource
        })
        .collect()
}

fn all_groups() -> Vec<(&'static str, &'static str)> {
    let mut all = groups();
    all.extend_from_slice(EXTRA_GROUPS);
    all
}

/// Serves a non-resource path (discovery and OpenAPI), or 404.
pub fn serve(path: &str, headers: &HeaderMap, _user: &User) -> Result<Response, ApiError> {
    let aggregated = aggregated(headers);
    match path.trim_end_matches('/') {
        "/api" => Ok(match aggregated {
            Some(ct) => respond(
                ct,
                &json!({
                    "kind": "APIGroupDiscoveryList", "apiVersion": ct_api_version(ct), "metadata": {},
                    "items": [{"metadata": {"creationTimestamp": null}, "versions": [
                        {"version": "v1", "resources": aggregated_resources("", "v1"), "freshness": "Current"}
                    ]}],
                }),
            ),
            None => respond(
                "application/json",
                &json!({
                    "kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
                }),
            ),
        }),
        "/apis" => Ok(match aggregated {
            Some(ct) => respond(
                ct,
                &json!({
                    "kind": "APIGroupDiscoveryList", "apiVersion": ct_api_version(ct), "metadata": {},
                    "items": all_groups().iter().map(|(g, v)| json!({
                        "metadata": {"name": g, "creationTimestamp": null},
                        "versions": [{"version": v, "resources": aggregated_resources(g, v), "freshness": "Current"}],
                    })).collect::<Vec<_>>(),
                }),
            ),
            None => respond(
                "application/json",
                &json!({
                    "kind": "APIGroupList", "apiVersion": "v1",
                    "groups": all_groups().iter().map(|(g, v)| {
                        let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
                        json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
                    }).collect::<Vec<_>>(),
                }),
            ),
        }),
        "/api/v1" => Ok(respond(
            "application/json",
            &json!({
                "kind": "APIResourceList", "groupVersion": "v1", "resources": legacy_resources("", "v1"),
            }),
        )),
        other => {
            if let Some(rest) = other.strip_prefix("/apis/")
                && let Some((group, version)) = rest.split_once('/')
                && all_groups().contains(&(group, version))
            {
                return Ok(respond(
                    "application/json",
                    &json!({
                        "kind": "APIResourceList", "apiVersion": "v1",
                        "groupVersion": format!("{group}/{version}"),
                        "resources": legacy_resources(group, version),
                    }),
                ));
            }
            Err(ApiError::path_not_found(path))
        }
    }
}

fn ct_api_version(content_type: &str) -> &'static str {
    if content_type == AGGREGATED_V2 {
        "apidiscovery.k8s.io/v2"
    } else {
        "apidiscovery.k8s.io/v2beta1"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(response: Response) -> (String, Value) {
        let ct = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes =
            futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
                .unwrap_or_default();
        (ct, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    #[test]
    fn legacy_core_discovery_lists_resources_and_subresources() {
        let (ct, doc) = body(serve("/api/v1", &HeaderMap::new(), &User::admin()).expect("served"));
        assert_eq!(ct, "application/json");
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .map(|r| r.iter().filter_map(|x| x["name"].as_str()).collect())
            .unwrap_or_default();
        for want in [
            "pods",
            "pods/status",
            "pods/binding",
            "pods/eviction",
            "nodes",
            "nodes/status",
            "namespaces",
            "events",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        let eviction = doc["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|x| x["name"] == "pods/eviction"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(eviction["group"], "policy");
        assert_eq!(eviction["kind"], "Eviction");
    }

    #[test]
    fn aggregated_discovery_is_served_when_asked_for() {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"));
        let (ct, doc) = body(serve("/apis", &headers, &User::admin()).expect("served"));
        assert_eq!(ct, AGGREGATED_V2);
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        let groups: Vec<&str> = doc["items"]
            .as_array()
            .map(|i| {
                i.iter()
                    .filter_map(|g| g["metadata"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            groups,
            [
                "coordination.k8s.io",
                "events.k8s.io",
                "apps",
                "discovery.k8s.io",
                "authorization.k8s.io",
                "authentication.k8s.io",
                "scheduling.k8s.io",
                "storage.k8s.io",
                "resource.k8s.io",
                "policy",
                "metrics.k8s.io"
            ]
        );
        let apps = doc["items"]
            .as_array()
            .and_then(|items| items.iter().find(|g| g["metadata"]["name"] == "apps"))
            .cloned()
            .unwrap_or_default();
        let resource = |name: &str| {
            apps["versions"][0]["resources"]
                .as_array()
                .and_then(|r| r.iter().find(|x| x["resource"] == name))
                .cloned()
                .unwrap_or_default()
        };
        for (name, short) in [
            ("deployments", json!(["deploy"])),
            ("replicasets", json!(["rs"])),
            ("daemonsets", json!(["ds"])),
            ("statefulsets", json!(["sts"])),
        ] {
            let workload = resource(name);
            assert_eq!(workload["shortNames"], short, "{name}");
            assert_eq!(workload["categories"], json!(["all"]), "{name}");
            assert_eq!(workload["subresources"][0]["subresource"], "status");
        }
        let revisions = resource("controllerrevisions");
        assert_eq!(revisions["responseKind"]["kind"], "ControllerRevision");
        assert!(revisions.get("shortNames").is_none() && revisions.get("categories").is_none());
        // The reviews are create-only, as upstream lists them.
        let (_, authorization) = body(serve("/apis", &headers, &User::admin()).expect("served"));
        let reviews: Vec<Value> = authorization["items"]
            .as_array()
            .and_then(|i| {
                i.iter()
                    .find(|g| g["metadata"]["name"] == "authorization.k8s.io")
            })
            .and_then(|g| g["versions"][0]["resources"].as_array().cloned())
            .unwrap_or_default();
        let review_verbs: Vec<(&str, &Value)> = reviews
            .iter()
            .map(|r| (r["resource"].as_str().unwrap_or(""), &r["verbs"]))
            .collect();
        assert_eq!(
            review_verbs,
            [
                ("selfsubjectaccessreviews", &json!(["create"])),
                ("selfsubjectrulesreviews", &json!(["create"]))
            ]
        );
        let (_, core) = body(serve("/api", &headers, &User::admin()).expect("served"));
        let pods = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|x| x["resource"] == "pods"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["shortNames"], json!(["po"]));
    }

    #[test]
    fn unknown_paths_are_404_statuses() {
        let err = serve("/apis/batch/v1", &HeaderMap::new(), &User::admin()).err();
        assert_eq!(err.map(|e| e.code), Some(404));
    }
}
