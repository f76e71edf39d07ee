//! Authentication (bearer tokens) and authorization.
//!
//! Every request but the health and version endpoints must carry a token
//! the server knows; there is no anonymous access. The admin (group
//! `system:masters`) may do everything. A node agent authenticates as
//! `system:node:<name>` in group `system:nodes` and gets what upstream's
//! Node authorizer and the `system:node` role allow: reading nodes, pods
//! and namespaces, writing its own Node and Lease, writing pod status and
//! deleting pods (which admission then limits to pods bound to it), and
//! writing events. Anything else is 403 in RBAC's wording.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::request_info::RequestInfo;
use crate::status::ApiError;

pub const GROUP_MASTERS: &str = "system:masters";
pub const GROUP_NODES: &str = "system:nodes";
pub const GROUP_AUTHENTICATED: &str = "system:authenticated";
pub const NODE_USER_PREFIX: &str = "system:node:";

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    pub fn admin() -> User {
        User {
            name: "admin".into(),
            groups: vec![GROUP_MASTERS.into(), GROUP_AUTHENTICATED.into()],
        }
    }

    pub fn node(node_name: &str) -> User {
        User {
            name: format!("{NODE_USER_PREFIX}{node_name}"),
            groups: vec![GROUP_NODES.into(), GROUP_AUTHENTICATED.into()],
        }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The node this user is the agent of, if it is one.
    pub fn node_name(&self) -> Option<&str> {
        if self.in_group(GROUP_NODES) {
            self.name.strip_prefix(NODE_USER_PREFIX)
        } else {
            None
        }
    }
}

/// Bearer tokens and the users they stand for.
#[derive(Debug, Default)]
pub struct Authenticator {
    tokens: RwLock<HashMap<String, User>>,
}

impl Authenticator {
    pub fn new() -> Self {
        Authenticator::default()
    }

    pub fn add_token(&self, token: impl Into<String>, user: User) {
        if let Ok(mut tokens) = self.tokens.write() {
            tokens.insert(token.into(), user);
        }
    }

    /// The user behind an `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<User, ApiError> {
        let token = authorization
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(ApiError::unauthorized)?;
        let tokens = self
            .tokens
            .read()
            .map_err(|_| ApiError::internal("token table poisoned"))?;
        tokens
            .get(token)
            .cloned()
            .ok_or_else(ApiError::unauthorized)
    }
}

fn allowed_for_node(node: &str, info: &RequestInfo) -> bool {
    let verb = info.verb.as_str();
    let read = matches!(verb, "get" | "list" | "watch");
    match (
        info.api_group.as_str(),
        info.resource.as_str(),
        info.subresource.as_str(),
    ) {
        ("", "nodes", "") => {
            read || (matches!(verb, "create" | "update" | "patch")
                && (info.name == node || (verb == "create" && info.name.is_empty())))
        }
        ("", "nodes", "status") => matches!(verb, "get" | "update" | "patch") && info.name == node,
        ("", "pods", "") => read || verb == "delete",
        ("", "pods", "status") => matches!(verb, "get" | "update" | "patch"),
        ("", "pods", "log") => read,
        ("", "namespaces", "") => read,
        ("", "events", "") | ("events.k8s.io", "events", "") => {
            matches!(verb, "create" | "update" | "patch") || read
        }
        ("coordination.k8s.io", "leases", "") => {
            info.namespace == "kube-node-lease"
                && (read
                    || (matches!(verb, "create" | "update" | "patch")
                        && (info.name == node || (verb == "create" && info.name.is_empty()))))
        }
        _ => false,
    }
}

/// Decides a resource request.
pub fn authorize(user: &User, info: &RequestInfo) -> Result<(), ApiError> {
    if user.in_group(GROUP_MASTERS) {
        return Ok(());
    }
    if let Some(node) = user.node_name()
        && allowed_for_node(node, info)
    {
        return Ok(());
    }
    Err(ApiError::forbidden(
        &user.name,
        &info.verb,
        &info.api_group,
        &info.resource,
        &info.subresource,
        &info.namespace,
        &info.name,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::parse;

    #[test]
    fn tokens_authenticate_and_nothing_else_does() {
        let auth = Authenticator::new();
        auth.add_token("secret", User::admin());
        let cases: &[(Option<&str>, Option<&str>)] = &[
            (Some("Bearer secret"), Some("admin")),
            (Some("Bearer wrong"), None),
            (Some("Basic c2VjcmV0"), None),
            (Some("Bearer "), None),
            (None, None),
        ];
        for (header, want) in cases {
            let got = auth.authenticate(*header);
            assert_eq!(
                got.as_ref().ok().map(|u| u.name.as_str()),
                *want,
                "{header:?}"
            );
            if want.is_none() {
                assert_eq!(got.err().map(|e| e.code), Some(401));
            }
        }
    }

    #[test]
    fn node_agents_may_change_only_their_own_node_and_lease() {
        let node = User::node("n1");
        let cases: &[(&str, &str, bool)] = &[
            ("GET", "/api/v1/nodes", true),
            ("GET", "/api/v1/nodes/n2", true),
            ("POST", "/api/v1/nodes", true),
            ("PUT", "/api/v1/nodes/n1", true),
            ("PATCH", "/api/v1/nodes/n1/status", true),
            ("PATCH", "/api/v1/nodes/n2", false),
            ("PUT", "/api/v1/nodes/n2/status", false),
            ("DELETE", "/api/v1/nodes/n1", false),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                true,
            ),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2",
                false,
            ),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/n1",
                false,
            ),
            ("GET", "/api/v1/pods", true),
            ("PATCH", "/api/v1/namespaces/default/pods/web/status", true),
            ("POST", "/api/v1/namespaces/default/pods", false),
            ("PUT", "/api/v1/namespaces/default/pods/web", false),
            ("POST", "/api/v1/namespaces/default/events", true),
            ("POST", "/api/v1/namespaces", false),
        ];
        for (method, path, allowed) in cases {
            let info = parse(method, path, "");
            assert_eq!(authorize(&node, &info).is_ok(), *allowed, "{method} {path}");
        }
        let err = authorize(&node, &parse("PATCH", "/api/v1/nodes/n2", "")).err();
        assert_eq!(
            err.map(|e| e.message),
            Some("nodes \"n2\" is forbidden: User \"system:node:n1\" cannot patch resource \"nodes\" in API group \"\" at the cluster scope".into())
        );
        assert!(authorize(&User::admin(), &parse("DELETE", "/api/v1/nodes/n2", "")).is_ok());
        let stranger = User {
            name: "bob".into(),
            groups: vec![GROUP_AUTHENTICATED.into()],
        };
        assert!(authorize(&stranger, &parse("GET", "/api/v1/pods", "")).is_err());
    }
}
