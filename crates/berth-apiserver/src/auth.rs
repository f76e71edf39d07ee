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
pub const GROUP_BOOTSTRAPPERS: &str = "system:bootstrappers";

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

    /// The holder of the join token: it may only ask for a node credential.
    pub fn bootstrapper() -> User {
        User {
            name: "system:bootstrap:berth-join".into(),
            groups: vec![GROUP_BOOTSTRAPPERS.into(), GROUP_AUTHENTICATED.into()],
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

/// Bearer tokens and the users they stand for. Node credentials issued for
/// the join token are kept where every server that may be asked knows
/// them: appended to a file in the data dir (one server), or in the store
/// that several servers share (see `cluster_credentials`).
#[derive(Debug, Default)]
pub struct Authenticator {
    tokens: RwLock<HashMap<String, User>>,
    node_tokens_file: RwLock<Option<std::path::PathBuf>>,
    /// The shared store, once node credentials are kept there.
    shared: RwLock<Option<SharedStore>>,
    /// The credential issued to each node (node name → token): the API
    /// server presents it to the node's agent (see `pod_logs`).
    node_credentials: RwLock<HashMap<String, String>>,
}

/// The store node credentials are kept in when several servers share it.
#[derive(Clone)]
struct SharedStore(berth_store::AnyStore);

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedStore")
    }
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

    /// Loads the node credentials issued before (lines of `token node`)
    /// and appends new ones to the same file.
    pub fn load_node_tokens(&self, path: &std::path::Path) -> std::io::Result<()> {
        for (token, node) in read_node_tokens(path)? {
            self.add_node_credential(&node, &token);
        }
        if let Ok(mut file) = self.node_tokens_file.write() {
            *file = Some(path.to_path_buf());
        }
        Ok(())
    }

    /// Keeps node credentials in `store` from now on, shared with every
    /// server on it, instead of in a file.
    pub fn share_node_tokens(&self, store: berth_store::AnyStore) {
        if let Ok(mut shared) = self.shared.write() {
            *shared = Some(SharedStore(store));
        }
    }

    /// Makes `token` authenticate as `node`'s agent.
    pub fn add_node_credential(&self, node: &str, token: &str) {
        self.add_token(token, User::node(node));
        self.remember_node_credential(node, token);
    }

    /// Revokes the credential of `node`, if one is known.
    pub fn forget_node_credential(&self, node: &str) {
        let token = self
            .node_credentials
            .write()
            .ok()
            .and_then(|mut credentials| credentials.remove(node));
        if let (Some(token), Ok(mut tokens)) = (token, self.tokens.write()) {
            tokens.remove(&token);
        }
    }

    /// Issues the credential of `node`, once: a second agent asking for a
    /// name already held is refused (409), so two agents cannot hold one
    /// node, also through different servers sharing a store. The credential
    /// is durable before it is returned.
    pub async fn issue_node_token(&self, node: &str) -> Result<String, ApiError> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes).map_err(ApiError::internal)?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let shared = self
            .shared
            .read()
            .map_err(|_| ApiError::internal("shared store poisoned"))?
            .clone();
        let Some(SharedStore(store)) = shared else {
            return self.issue_node_token_in_file(node, token);
        };
        match crate::cluster_credentials::publish_node_token(&store, node, &token).await {
            Ok(()) => {}
            Err(berth_store::StoreError::AlreadyExists { .. }) => return Err(already_issued(node)),
            Err(e) => return Err(ApiError::internal(e)),
        }
        self.add_node_credential(node, &token);
        Ok(token)
    }

    fn issue_node_token_in_file(&self, node: &str, token: String) -> Result<String, ApiError> {
        let user = User::node(node);
        let mut tokens = self
            .tokens
            .write()
            .map_err(|_| ApiError::internal("token table poisoned"))?;
        if tokens.values().any(|u| *u == user) {
            return Err(already_issued(node));
        }
        if let Some(path) = self
            .node_tokens_file
            .read()
            .map_err(|_| ApiError::internal("token file poisoned"))?
            .as_ref()
        {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(ApiError::internal)?;
            writeln!(file, "{token} {node}").map_err(ApiError::internal)?;
            file.sync_all().map_err(ApiError::internal)?;
        }
        tokens.insert(token.clone(), user);
        drop(tokens);
        self.remember_node_credential(node, &token);
        Ok(token)
    }

    fn remember_node_credential(&self, node: &str, token: &str) {
        let old = self
            .node_credentials
            .write()
            .ok()
            .and_then(|mut credentials| credentials.insert(node.to_string(), token.to_string()));
        // A credential issued again for the name (the shared store edited by
        // hand) replaces the old one.
        if let Some(old) = old.filter(|old| old != token)
            && let Ok(mut tokens) = self.tokens.write()
        {
            tokens.remove(&old);
        }
    }

    /// The credential issued to `node`'s agent, if one was.
    pub fn node_credential(&self, node: &str) -> Option<String> {
        self.node_credentials.read().ok()?.get(node).cloned()
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

/// The node credentials in a `node-tokens` file (lines of `token node`).
pub fn read_node_tokens(path: &std::path::Path) -> std::io::Result<Vec<(String, String)>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(token, node)| (token.to_string(), node.trim().to_string()))
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn already_issued(node: &str) -> ApiError {
    ApiError::new(
        409,
        "AlreadyExists",
        format!(
            "a credential for node {node:?} was already issued; the node's agent keeps it in its data dir"
        ),
    )
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

    #[tokio::test]
    async fn issued_node_credentials_survive_a_restart() {
        let path = std::env::temp_dir().join(format!("berth-node-tokens-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let first = Authenticator::new();
        first.load_node_tokens(&path).expect("load");
        let token = first.issue_node_token("n1").await.expect("issued");
        assert!(first.issue_node_token("n1").await.is_err());
        let restarted = Authenticator::new();
        restarted.load_node_tokens(&path).expect("reload");
        let user = restarted
            .authenticate(Some(&format!("Bearer {token}")))
            .expect("known after restart");
        assert_eq!(user, User::node("n1"));
        assert!(
            restarted.issue_node_token("n1").await.is_err(),
            "still held after restart"
        );
        let _ = std::fs::remove_file(&path);
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
