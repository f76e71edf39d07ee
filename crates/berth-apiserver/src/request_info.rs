//! What a request asks for, read off its method, path and query the way
//! upstream's `RequestInfoFactory` does: the verb (`get`, `list`, `watch`,
//! `create`, `update`, `patch`, `delete`, `deletecollection`), the API group
//! and version, the namespace, the resource, the name and the subresource.
//! Authorization and routing both work from this.

/// A parsed request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub is_resource_request: bool,
    pub path: String,
    pub verb: String,
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The path segments after group/version (and the namespace, when the
    /// request is not for a namespace itself).
    pub parts: Vec<String>,
    /// The `fieldSelector` of a list, watch or deletecollection (decoded,
    /// unparsed): authorization may depend on it (a node lists only its
    /// own pods).
    pub field_selector: String,
}

/// Subresources of a namespace object, which must not be read as a
/// resource inside the namespace.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

fn query_flag(query: &str, name: &str) -> bool {
    query.split('&').any(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        k == name && matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
    })
}

/// The first value of a query parameter, decoded.
fn query_value(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// apimachinery's `path.IsValidPathSegmentName`: the name could be a path
/// segment.
fn is_valid_path_segment_name(name: &str) -> bool {
    !matches!(name, "" | "." | "..") && !name.contains(['/', '%'])
}

/// Reads a request. `query` is the raw query string (without `?`).
pub fn parse(method: &str, path: &str, query: &str) -> RequestInfo {
    let verb = match method {
        "POST" => "create",
        "GET" | "HEAD" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        other => other,
    };
    let mut info = RequestInfo {
        path: path.to_string(),
        verb: verb.to_lowercase(),
        ..RequestInfo::default()
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut parts: &[&str] = &segments;
    match parts {
        ["api", version, rest @ ..] => {
            info.api_prefix = "api".into();
            info.api_version = (*version).into();
            parts = rest;
        }
        ["apis", group, version, rest @ ..] => {
            info.api_prefix = "apis".into();
            info.api_group = (*group).into();
            info.api_version = (*version).into();
            parts = rest;
        }
        _ => return info,
    }
    if parts.is_empty() {
        // /api/v1 and /apis/g/v are discovery, not resources.
        return info;
    }
    info.is_resource_request = true;
    // The deprecated /watch/ prefix.
    if parts.first() == Some(&"watch") {
        info.verb = "watch".into();
        parts = &parts[1..];
    }
    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        info.namespace = parts[1].into();
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts = &parts[2..];
        }
    }
    info.parts = parts.iter().map(|s| s.to_string()).collect();
    if let Some(resource) = parts.first() {
        info.resource = (*resource).into();
    }
    if let Some(name) = parts.get(1) {
        info.name = (*name).into();
    }
    if let Some(sub) = parts.get(2) {
        info.subresource = (*sub).into();
    }
    if info.name.is_empty() && info.verb == "get" {
        info.verb = if query_flag(query, "watch") {
            "watch"
        } else {
            "list"
        }
        .into();
        // A list or watch of one object by `metadata.name` names it, so
        // authorization sees the name (a node may read its own Node).
        let selector = query_value(query, "fieldSelector").unwrap_or_default();
        if let Ok(selector) = crate::selectors::fields::FieldSelector::parse(&selector)
            && let Some(name) = selector.requires_exact_match("metadata.name")
            && is_valid_path_segment_name(name)
        {
            info.name = name.to_string();
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".into();
    }
    if matches!(info.verb.as_str(), "list" | "watch" | "deletecollection") {
        info.field_selector = query_value(query, "fieldSelector").unwrap_or_default();
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases from upstream's `TestGetAPIRequestInfo`.
    #[test]
    fn request_info_as_upstream() {
        struct Case {
            method: &'static str,
            path: &'static str,
            query: &'static str,
            /// verb, prefix, group, version, namespace, resource, name,
            /// subresource
            want: [&'static str; 8],
        }
        let cases: &[Case] = &[
            Case {
                method: "GET",
                path: "/api/v1/namespaces",
                query: "",
                want: ["list", "api", "", "v1", "", "namespaces", "", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/other",
                query: "",
                want: ["get", "api", "", "v1", "other", "namespaces", "other", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/other/pods",
                query: "",
                want: ["list", "api", "", "v1", "other", "pods", "", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/other/pods/foo",
                query: "",
                want: ["get", "api", "", "v1", "other", "pods", "foo", ""],
            },
            Case {
                method: "HEAD",
                path: "/api/v1/namespaces/other/pods/foo",
                query: "",
                want: ["get", "api", "", "v1", "other", "pods", "foo", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/pods",
                query: "",
                want: ["list", "api", "", "v1", "", "pods", "", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/other/pods",
                query: "watch=true",
                want: ["watch", "api", "", "v1", "other", "pods", "", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/watch/namespaces/other/pods",
                query: "",
                want: ["watch", "api", "", "v1", "other", "pods", "", ""],
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/other/pods/foo/status",
                query: "",
                want: ["get", "api", "", "v1", "other", "pods", "foo", "status"],
            },
            Case {
                method: "PUT",
                path: "/api/v1/namespaces/other/finalize",
                query: "",
                want: [
                    "update",
                    "api",
                    "",
                    "v1",
                    "other",
                    "namespaces",
                    "other",
                    "finalize",
                ],
            },
            Case {
                method: "PUT",
                path: "/api/v1/namespaces/other/status",
                query: "",
                want: [
                    "update",
                    "api",
                    "",
                    "v1",
                    "other",
                    "namespaces",
                    "other",
                    "status",
                ],
            },
            Case {
                method: "POST",
                path: "/api/v1/namespaces/other/pods",
                query: "",
                want: ["create", "api", "", "v1", "other", "pods", "", ""],
            },
            Case {
                method: "POST",
                path: "/api/v1/namespaces/other/pods/foo/eviction",
                query: "",
                want: [
                    "create", "api", "", "v1", "other", "pods", "foo", "eviction",
                ],
            },
            Case {
                method: "PATCH",
                path: "/api/v1/nodes/n1",
                query: "",
                want: ["patch", "api", "", "v1", "", "nodes", "n1", ""],
            },
            Case {
                method: "DELETE",
                path: "/api/v1/namespaces/other/pods/foo",
                query: "",
                want: ["delete", "api", "", "v1", "other", "pods", "foo", ""],
            },
            Case {
                method: "DELETE",
                path: "/api/v1/namespaces/other/pods",
                query: "",
                want: ["deletecollection", "api", "", "v1", "other", "pods", "", ""],
            },
            Case {
                method: "GET",
                path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                query: "",
                want: [
                    "get",
                    "apis",
                    "coordination.k8s.io",
                    "v1",
                    "kube-node-lease",
                    "leases",
                    "n1",
                    "",
                ],
            },
        ];
        for Case {
            method,
            path,
            query,
            want,
        } in cases
        {
            let info = parse(method, path, query);
            let got = [
                info.verb.as_str(),
                info.api_prefix.as_str(),
                info.api_group.as_str(),
                info.api_version.as_str(),
                info.namespace.as_str(),
                info.resource.as_str(),
                info.name.as_str(),
                info.subresource.as_str(),
            ];
            assert_eq!(&got, want, "{method} {path}?{query}");
            assert!(info.is_resource_request, "{path}");
        }
    }

    /// Upstream's `TestFieldSelectorParsing`.
    #[test]
    fn a_metadata_name_field_selector_names_the_listed_object() {
        struct Case {
            name: &'static str,
            query: &'static str,
            want_name: &'static str,
            want_verb: &'static str,
        }
        let cases = [
            Case {
                name: "no selector",
                query: "",
                want_name: "",
                want_verb: "list",
            },
            Case {
                name: "metadata.name selector",
                query: "fieldSelector=metadata.name=name1",
                want_name: "name1",
                want_verb: "list",
            },
            Case {
                name: "metadata.name selector, encoded",
                query: "fieldSelector=metadata.name%3D%3Dname1",
                want_name: "name1",
                want_verb: "list",
            },
            Case {
                name: "metadata.name selector with watch",
                query: "watch=true&fieldSelector=metadata.name=name1",
                want_name: "name1",
                want_verb: "watch",
            },
            Case {
                name: "random selector",
                query: "fieldSelector=foo=bar",
                want_name: "",
                want_verb: "list",
            },
            Case {
                name: "invalid selector with metadata.name",
                query: "fieldSelector=metadata.name=name1,foo",
                want_name: "",
                want_verb: "list",
            },
            Case {
                name: "invalid selector with metadata.name with watch",
                query: "fieldSelector=metadata.name=name1,foo&watch=true",
                want_name: "",
                want_verb: "watch",
            },
            Case {
                name: "invalid selector with metadata.name with watch false",
                query: "fieldSelector=metadata.name=name1,foo&watch=false",
                want_name: "",
                want_verb: "list",
            },
            Case {
                name: "a name that is no path segment",
                query: "fieldSelector=metadata.name=a%2Fb",
                want_name: "",
                want_verb: "list",
            },
        ];
        for case in cases {
            let info = parse("GET", "/apis/group/version/resource", case.query);
            assert_eq!(
                (info.name.as_str(), info.verb.as_str()),
                (case.want_name, case.want_verb),
                "{}",
                case.name
            );
        }
        let info = parse("GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1");
        assert_eq!(info.field_selector, "spec.nodeName=n1");
        let info = parse("GET", "/api/v1/pods/x", "fieldSelector=spec.nodeName%3Dn1");
        assert_eq!(info.field_selector, "", "a get has no selector");
    }

    #[test]
    fn non_resource_paths_are_not_resource_requests() {
        for path in [
            "/",
            "/healthz",
            "/version",
            "/api",
            "/api/v1",
            "/apis",
            "/apis/coordination.k8s.io/v1",
            "/openapi/v2",
        ] {
            assert!(!parse("GET", path, "").is_resource_request, "{path}");
        }
    }
}
