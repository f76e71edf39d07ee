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
/// The identity of the simulated nodes' shared watches (`berth server
/// --sim-nodes`): one Node watch and one pod watch serve thousands of
/// simulated nodes, which no node credential may do; it reads Nodes and
/// pods and writes nothing (each simulated node writes as itself).
pub const SIM_FLEET_USER: &str = "system:berth:sim";
/// Where a node agent trades the join token for its node credential.
pub const NODE_CREDENTIAL_PATH: &str = "/berth/v1/node-credential";
/// Where node Leases live.
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

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

    /// berth's scheduler, as upstream's kube-scheduler authenticates.
    pub fn kube_scheduler() -> User {
        User {
            name: crate::flow_control::KUBE_SCHEDULER_USER.into(),
            groups: vec![GROUP_AUTHENTICATED.into()],
        }
    }

    /// berth's controllers, as upstream's kube-controller-manager
    /// authenticates.
    pub fn kube_controller_manager() -> User {
        User {
            name: crate::flow_control::KUBE_CONTROLLER_MANAGER_USER.into(),
            groups: vec![GROUP_AUTHENTICATED.into()],
        }
    }

    /// The in-process simulated fleet's shared watcher (see
    /// [`SIM_FLEET_USER`]).
    pub fn sim_fleet() -> User {
        User {
            name: SIM_FLEET_USER.into(),
            groups: vec![GROUP_AUTHENTICATED.into()],
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
/// that several servers share (see `cluster_credentials`, which follows it).
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

/// Where node credentials live in a shared store, one key per node.
pub const NODE_PREFIX: &str = "/registry/berth.dev/node-credentials/";

fn node_key(node: &str) -> String {
    format!("{NODE_PREFIX}{node}")
}

/// Stores `node`'s credential; `AlreadyExists` when one was issued (by any
/// server) before.
pub async fn publish_node_token<S: berth_store::Store>(
    store: &S,
    node: &str,
    token: &str,
) -> Result<(), berth_store::StoreError> {
    let value = serde_json::json!({"nodeName": node, "token": token});
    store
        .create(&node_key(node), value.to_string().into_bytes())
        .await
        .map(|_| ())
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
    /// node, also through different servers sharing a store. `registered` is
    /// the Node of that name when the join token asks for it: the join token
    /// joins only names not yet registered, or Nodes an admin created
    /// inviting a join ([`JOIN_ALLOWED_ANNOTATION`]), else 403. The
    /// credential is durable before it is returned.
    pub async fn issue_node_token(
        &self,
        node: &str,
        registered: Option<&serde_json::Value>,
    ) -> Result<String, ApiError> {
        if self.node_credential(node).is_some() {
            return Err(already_issued(node));
        }
        if let Some(registered) = registered {
            check_join_allowed(node, registered)?;
        }
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
        match publish_node_token(&store, node, &token).await {
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

/// The annotation an admin puts on a Node it creates (`"true"`) to let the
/// join token obtain that node's credential; without it the join token
/// joins only names not yet registered.
pub const JOIN_ALLOWED_ANNOTATION: &str = "berth.dev/join-allowed";

/// The join token may take a registered name only when its Node invites a
/// join: a join token holder cannot become a node an admin made for
/// another purpose, nor one registered by its own agent.
fn check_join_allowed(node: &str, registered: &serde_json::Value) -> Result<(), ApiError> {
    let invited = registered
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(JOIN_ALLOWED_ANNOTATION))
        .and_then(serde_json::Value::as_str)
        == Some("true");
    if invited {
        return Ok(());
    }
    Err(ApiError::forbidden_message(
        "",
        "nodes",
        node,
        format!(
            "node {node:?} is already registered: the join token joins only new node names, or a Node created with the annotation {JOIN_ALLOWED_ANNOTATION}: \"true\""
        ),
    ))
}

/// What the node authorizer decides about one of a node's requests.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NodeDecision {
    Allow,
    /// Allowed if the named pod is bound to the node (upstream follows its
    /// graph of pods to nodes; berth reads the pod).
    IfPodBound,
    /// Refused, with upstream's reason (empty where upstream gives none).
    Deny(String),
}

/// Upstream's `NodeAuthorizer` with `AuthorizeNodeWithSelectors` (on by
/// default since 1.32) for the resources berth serves: its own Node only
/// (list and watch with `fieldSelector=metadata.name=<itself>`), pods only
/// with `fieldSelector=spec.nodeName=<itself>` or by name when bound to
/// it, its own Lease (never a list), and the static node rules for
/// namespaces and events. Writes to Nodes and pods pass here and are
/// limited by NodeRestriction admission, as upstream. `pods/log` is
/// berth's (the handler serves a node only its own pods' logs).
fn authorize_node(node: &str, info: &RequestInfo) -> NodeDecision {
    use NodeDecision::{Allow, Deny, IfPodBound};
    let verb = info.verb.as_str();
    let read = matches!(verb, "get" | "list" | "watch");
    match (
        info.api_group.as_str(),
        info.resource.as_str(),
        info.subresource.as_str(),
    ) {
        // authorizeNode
        ("", "nodes", "") => match verb {
            "create" | "update" | "patch" => Allow,
            "get" | "list" | "watch" if info.name == node => Allow,
            "get" | "list" | "watch" if info.name.is_empty() => Deny(format!(
                "node '{node}' cannot read all nodes, only its own Node object"
            )),
            "get" | "list" | "watch" => Deny(format!(
                "node '{node}' cannot read '{}', only its own Node object",
                info.name
            )),
            _ => Deny(String::new()),
        },
        ("", "nodes", "status") if matches!(verb, "update" | "patch") => Allow,
        // authorizePod
        ("", "pods", "") => match verb {
            "get" => IfPodBound,
            "list" | "watch" if lists_pods_of(node, &info.field_selector) => Allow,
            "list" | "watch" if !info.name.is_empty() => IfPodBound,
            "list" | "watch" => {
                Deny("can only list/watch pods with spec.nodeName field selector".into())
            }
            "create" | "delete" => Allow,
            _ => Deny(String::new()),
        },
        ("", "pods", "status") if matches!(verb, "update" | "patch") => Allow,
        ("", "pods", "eviction") if verb == "create" => Allow,
        ("", "pods", "log") if read => Allow,
        // authorizeLease
        ("coordination.k8s.io", "leases", "") => {
            if !matches!(verb, "get" | "create" | "update" | "patch" | "delete") {
                Deny("can only get, create, update, patch, or delete a node lease".into())
            } else if info.namespace != NODE_LEASE_NAMESPACE {
                Deny(format!(
                    "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
                ))
            } else if verb != "create" && info.name != node {
                Deny("can only access node lease with the same name as the requesting node".into())
            } else {
                Allow
            }
        }
        // The static node rules (upstream's NodeRules: services for the
        // kubelet's service environment variables).
        ("", "namespaces", "") | ("", "services", "") if read => Allow,
        ("", "events", "") | ("events.k8s.io", "events", "")
            if read || matches!(verb, "create" | "update" | "patch") =>
        {
            Allow
        }
        _ => Deny(String::new()),
    }
}

/// Whether a field selector holds `spec.nodeName=<node>` (`=` or `==`).
fn lists_pods_of(node: &str, field_selector: &str) -> bool {
    crate::selectors::fields::FieldSelector::parse(field_selector).is_ok_and(|selector| {
        selector.terms().iter().any(|t| {
            t.field == "spec.nodeName"
                && t.operator == crate::selectors::fields::FieldOperator::Equals
                && t.value == node
        })
    })
}

/// `system:berth:sim`, the in-process simulated fleet's shared watcher,
/// reads Nodes and pods.
fn allowed_for_sim_fleet(info: &RequestInfo) -> bool {
    matches!(info.verb.as_str(), "get" | "list" | "watch")
        && info.api_group.is_empty()
        && matches!(info.resource.as_str(), "nodes" | "pods")
        && info.subresource.is_empty()
}

/// A request that may go ahead, perhaps on a condition the caller checks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a request may be authorized only on a condition"]
pub enum Authorized {
    Yes,
    /// If the named pod is bound to this node ([`require_pod_bound`]).
    IfPodBoundTo(String),
}

/// RBAC's 403 for the request, with the authorizer's reason appended as
/// upstream's `responsewriters.Forbidden` does.
fn forbidden(user: &User, info: &RequestInfo, reason: &str) -> ApiError {
    let mut err = ApiError::forbidden(
        &user.name,
        &info.verb,
        &info.api_group,
        &info.resource,
        &info.subresource,
        &info.namespace,
        &info.name,
    );
    if !reason.is_empty() {
        err.message = format!("{}: {reason}", err.message);
    }
    err
}

/// What the authorizer decides about a resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Allowed if the named pod is bound to this node.
    IfPodBoundTo(String),
    /// Refused, with the authorizer's reason (empty where upstream gives
    /// none).
    Deny(String),
}

/// Decides a resource request: admins (and berth's own components) may
/// do everything, every user may ask about its own access (upstream's
/// `system:basic-user`), nodes what the node authorizer allows, the
/// simulated fleet's watcher read Nodes and pods.
pub fn decide(user: &User, info: &RequestInfo) -> Decision {
    // berth's own scheduler and controllers may do what an admin may: they
    // have users of their own so that flow control and logs tell them apart
    // (upstream's ClusterRoles for them cover what they use).
    if is_admin(user) || is_self_review(info) {
        return Decision::Allow;
    }
    if let Some(node) = user.node_name() {
        return match authorize_node(node, info) {
            NodeDecision::Allow => Decision::Allow,
            NodeDecision::IfPodBound => Decision::IfPodBoundTo(node.to_string()),
            NodeDecision::Deny(reason) => Decision::Deny(reason),
        };
    }
    if user.name == SIM_FLEET_USER && allowed_for_sim_fleet(info) {
        return Decision::Allow;
    }
    Decision::Deny(String::new())
}

/// Decides a resource request; a refusal is RBAC's 403.
pub fn authorize(user: &User, info: &RequestInfo) -> Result<Authorized, ApiError> {
    match decide(user, info) {
        Decision::Allow => Ok(Authorized::Yes),
        Decision::IfPodBoundTo(node) => Ok(Authorized::IfPodBoundTo(node)),
        Decision::Deny(reason) => Err(forbidden(user, info, &reason)),
    }
}

/// Upstream's `system:basic-user`, bound to every authenticated user:
/// creating the reviews of one's own access and identity.
fn is_self_review(info: &RequestInfo) -> bool {
    info.verb == "create"
        && info.subresource.is_empty()
        && matches!(
            (info.api_group.as_str(), info.resource.as_str()),
            (
                "authorization.k8s.io",
                "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
            ) | ("authentication.k8s.io", "selfsubjectreviews")
        )
}

/// The non-resource paths every authenticated user may get (upstream's
/// `system:discovery` and `system:public-info-viewer`); `*` ends a prefix.
pub const DISCOVERY_PATHS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];

/// Whether `user` may `verb` the non-resource `path`, as the server
/// decides it: admins anything, the join token's holder its node
/// credential, everyone discovery, OpenAPI, health and version.
pub fn non_resource_allowed(user: &User, path: &str, verb: &str) -> bool {
    if is_admin(user) {
        return true;
    }
    if path == NODE_CREDENTIAL_PATH {
        return verb == "post" && user.in_group(GROUP_BOOTSTRAPPERS);
    }
    verb == "get"
        && DISCOVERY_PATHS
            .iter()
            .any(|allowed| match allowed.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == *allowed,
            })
}

/// An admin (`system:masters`), or berth's own scheduler and controllers,
/// which may do what an admin may.
pub fn is_admin(user: &User) -> bool {
    user.in_group(GROUP_MASTERS) || is_builtin_component(user)
}

/// berth's scheduler or controllers (in-process, never from a token).
fn is_builtin_component(user: &User) -> bool {
    matches!(
        user.name.as_str(),
        crate::flow_control::KUBE_SCHEDULER_USER
            | crate::flow_control::KUBE_CONTROLLER_MANAGER_USER
    )
}

/// The condition of [`Authorized::IfPodBoundTo`]: `pod` (the stored pod,
/// `None` if there is none) is bound to `node`; else upstream's 403 (no
/// relationship, whether or not the pod exists).
pub fn require_pod_bound(
    user: &User,
    info: &RequestInfo,
    node: &str,
    pod: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    let bound = pod
        .and_then(|p| p.pointer("/spec/nodeName"))
        .and_then(serde_json::Value::as_str)
        == Some(node);
    if bound {
        return Ok(());
    }
    Err(forbidden(
        user,
        info,
        &format!("no relationship found between node '{node}' and this object"),
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
    async fn the_join_token_takes_a_registered_name_only_when_its_node_invites_a_join() {
        struct Case {
            name: &'static str,
            registered: Option<serde_json::Value>,
            want: Result<(), u16>,
        }
        let node = |annotations: serde_json::Value| serde_json::json!({"metadata": {"name": "n1", "annotations": annotations}});
        let cases = [
            Case {
                name: "not registered",
                registered: None,
                want: Ok(()),
            },
            Case {
                name: "registered, no annotation",
                registered: Some(serde_json::json!({"metadata": {"name": "n1"}})),
                want: Err(403),
            },
            Case {
                name: "registered, invited",
                registered: Some(node(serde_json::json!({JOIN_ALLOWED_ANNOTATION: "true"}))),
                want: Ok(()),
            },
            Case {
                name: "registered, annotation not \"true\"",
                registered: Some(node(serde_json::json!({JOIN_ALLOWED_ANNOTATION: "yes"}))),
                want: Err(403),
            },
        ];
        for case in cases {
            let auth = Authenticator::new();
            let got = auth
                .issue_node_token("n1", case.registered.as_ref())
                .await
                .map(|_| ())
                .map_err(|e| e.code);
            assert_eq!(got, case.want, "{}", case.name);
        }
        let err = check_join_allowed("n1", &serde_json::json!({})).err();
        assert_eq!(
            err.map(|e| e.message).as_deref(),
            Some(
                "nodes \"n1\" is forbidden: node \"n1\" is already registered: the join token joins only new node names, or a Node created with the annotation berth.dev/join-allowed: \"true\""
            )
        );
    }

    #[tokio::test]
    async fn issued_node_credentials_survive_a_restart() {
        let path = std::env::temp_dir().join(format!("berth-node-tokens-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let first = Authenticator::new();
        first.load_node_tokens(&path).expect("load");
        let token = first.issue_node_token("n1", None).await.expect("issued");
        assert!(first.issue_node_token("n1", None).await.is_err());
        let restarted = Authenticator::new();
        restarted.load_node_tokens(&path).expect("reload");
        let user = restarted
            .authenticate(Some(&format!("Bearer {token}")))
            .expect("known after restart");
        assert_eq!(user, User::node("n1"));
        assert!(
            restarted.issue_node_token("n1", None).await.is_err(),
            "still held after restart"
        );
        let _ = std::fs::remove_file(&path);
    }

    /// Upstream's `TestNodeAuthorizer` (selector authorization enabled),
    /// the rows for the resources berth serves, as requests.
    #[test]
    fn the_node_authorizer_with_selectors_as_upstream() {
        #[derive(Debug, PartialEq)]
        enum Want {
            Allow,
            IfPodBound,
            Deny,
        }
        struct Case {
            name: &'static str,
            method: &'static str,
            path: &'static str,
            query: &'static str,
            want: Want,
        }
        let case = |name, method, path, query, want| Case {
            name,
            method,
            path,
            query,
            want,
        };
        const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
        const LEASE_NODE0: &str =
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node0";
        const LEASE_NODE1: &str =
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node1";
        let cases = [
            // pods
            case(
                "get related pod",
                "GET",
                "/api/v1/namespaces/ns0/pods/pod0-node0",
                "",
                Want::IfPodBound,
            ),
            case(
                "list related pods",
                "GET",
                "/api/v1/pods",
                "fieldSelector=spec.nodeName%3Dnode0",
                Want::Allow,
            ),
            case(
                "list related pods - alternate selector",
                "GET",
                "/api/v1/pods",
                "fieldSelector=spec.nodeName%3D%3Dnode0",
                Want::Allow,
            ),
            case(
                "list related pods with another term",
                "GET",
                "/api/v1/pods",
                "fieldSelector=status.phase%3DRunning,spec.nodeName%3Dnode0",
                Want::Allow,
            ),
            case(
                "list single pod",
                "GET",
                "/api/v1/namespaces/ns0/pods",
                "fieldSelector=metadata.name%3Dpod0-node0",
                Want::IfPodBound,
            ),
            case("list unrelated pods", "GET", "/api/v1/pods", "", Want::Deny),
            case(
                "list another node's pods",
                "GET",
                "/api/v1/pods",
                "fieldSelector=spec.nodeName%3Dnode1",
                Want::Deny,
            ),
            case(
                "list pods not on the node",
                "GET",
                "/api/v1/pods",
                "fieldSelector=spec.nodeName!%3Dnode0",
                Want::Deny,
            ),
            case(
                "watch related pods",
                "GET",
                "/api/v1/pods",
                "watch=true&fieldSelector=spec.nodeName%3Dnode0",
                Want::Allow,
            ),
            case(
                "watch single pod",
                "GET",
                "/api/v1/namespaces/ns0/pods",
                "watch=1&fieldSelector=metadata.name%3Dpod0-node0",
                Want::IfPodBound,
            ),
            case(
                "watch unrelated pods",
                "GET",
                "/api/v1/pods",
                "watch=true",
                Want::Deny,
            ),
            case(
                "create unnamed pod",
                "POST",
                "/api/v1/namespaces/ns0/pods",
                "",
                Want::Allow,
            ),
            case(
                "delete unrelated pod",
                "DELETE",
                "/api/v1/namespaces/ns0/pods/pod0-node1",
                "",
                Want::Allow,
            ),
            case(
                "update unrelated pod status",
                "PUT",
                "/api/v1/namespaces/ns0/pods/pod0-node1/status",
                "",
                Want::Allow,
            ),
            case(
                "patch related pod status",
                "PATCH",
                "/api/v1/namespaces/ns0/pods/pod0-node0/status",
                "",
                Want::Allow,
            ),
            case(
                "get pod status",
                "GET",
                "/api/v1/namespaces/ns0/pods/pod0-node0/status",
                "",
                Want::Deny,
            ),
            case(
                "create unrelated pod eviction",
                "POST",
                "/api/v1/namespaces/ns0/pods/pod0-node1/eviction",
                "",
                Want::Allow,
            ),
            case(
                "update a pod",
                "PUT",
                "/api/v1/namespaces/ns0/pods/pod0-node0",
                "",
                Want::Deny,
            ),
            case(
                "delete all pods",
                "DELETE",
                "/api/v1/namespaces/ns0/pods",
                "",
                Want::Deny,
            ),
            // nodes
            case(
                "get related node",
                "GET",
                "/api/v1/nodes/node0",
                "",
                Want::Allow,
            ),
            case(
                "get unrelated node",
                "GET",
                "/api/v1/nodes/node1",
                "",
                Want::Deny,
            ),
            case(
                "list single related node",
                "GET",
                "/api/v1/nodes",
                "fieldSelector=metadata.name%3Dnode0",
                Want::Allow,
            ),
            case(
                "list single unrelated node",
                "GET",
                "/api/v1/nodes",
                "fieldSelector=metadata.name%3Dnode1",
                Want::Deny,
            ),
            case("list all nodes", "GET", "/api/v1/nodes", "", Want::Deny),
            case(
                "watch single related node",
                "GET",
                "/api/v1/nodes",
                "watch=true&fieldSelector=metadata.name%3Dnode0",
                Want::Allow,
            ),
            case(
                "watch all nodes",
                "GET",
                "/api/v1/nodes",
                "watch=true",
                Want::Deny,
            ),
            case("create node", "POST", "/api/v1/nodes", "", Want::Allow),
            case(
                "update unrelated node (NodeRestriction refuses)",
                "PUT",
                "/api/v1/nodes/node1",
                "",
                Want::Allow,
            ),
            case(
                "patch related node",
                "PATCH",
                "/api/v1/nodes/node0",
                "",
                Want::Allow,
            ),
            case(
                "patch unrelated node status (NodeRestriction refuses)",
                "PATCH",
                "/api/v1/nodes/node1/status",
                "",
                Want::Allow,
            ),
            case(
                "get node status",
                "GET",
                "/api/v1/nodes/node0/status",
                "",
                Want::Deny,
            ),
            case(
                "delete node",
                "DELETE",
                "/api/v1/nodes/node0",
                "",
                Want::Deny,
            ),
            // leases
            case("get node lease", "GET", LEASE_NODE0, "", Want::Allow),
            case("create node lease", "POST", LEASES, "", Want::Allow),
            case("update node lease", "PUT", LEASE_NODE0, "", Want::Allow),
            case("patch node lease", "PATCH", LEASE_NODE0, "", Want::Allow),
            case("delete node lease", "DELETE", LEASE_NODE0, "", Want::Allow),
            case(
                "get another node's lease",
                "GET",
                LEASE_NODE1,
                "",
                Want::Deny,
            ),
            case(
                "update another node's lease",
                "PUT",
                LEASE_NODE1,
                "",
                Want::Deny,
            ),
            case("list node leases", "GET", LEASES, "", Want::Deny),
            case("watch node leases", "GET", LEASES, "watch=true", Want::Deny),
            case(
                "get lease in another namespace",
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/foo/leases/node0",
                "",
                Want::Deny,
            ),
            case(
                "create lease in another namespace",
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/foo/leases",
                "",
                Want::Deny,
            ),
            // static rules
            case(
                "create event",
                "POST",
                "/api/v1/namespaces/ns0/events",
                "",
                Want::Allow,
            ),
            case(
                "get namespace",
                "GET",
                "/api/v1/namespaces/ns0",
                "",
                Want::Allow,
            ),
            case(
                "create namespace",
                "POST",
                "/api/v1/namespaces",
                "",
                Want::Deny,
            ),
        ];
        let node0 = User::node("node0");
        for case in &cases {
            let info = parse(case.method, case.path, case.query);
            let got = match authorize(&node0, &info) {
                Ok(Authorized::Yes) => Want::Allow,
                Ok(Authorized::IfPodBoundTo(node)) => {
                    assert_eq!(node, "node0", "{}", case.name);
                    Want::IfPodBound
                }
                Err(e) => {
                    assert_eq!(e.code, 403, "{}", case.name);
                    Want::Deny
                }
            };
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn node_refusals_carry_upstream_reasons() {
        let node = User::node("n1");
        struct Case {
            method: &'static str,
            path: &'static str,
            query: &'static str,
            want: &'static str,
        }
        let cases: &[Case] = &[
            Case {
                method: "GET",
                path: "/api/v1/nodes",
                query: "",
                want: "nodes is forbidden: User \"system:node:n1\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read all nodes, only its own Node object",
            },
            Case {
                method: "GET",
                path: "/api/v1/nodes/n2",
                query: "",
                want: "nodes \"n2\" is forbidden: User \"system:node:n1\" cannot get resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object",
            },
            Case {
                method: "GET",
                path: "/api/v1/nodes",
                query: "watch=true&fieldSelector=metadata.name%3Dn2",
                want: "nodes \"n2\" is forbidden: User \"system:node:n1\" cannot watch resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object",
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/default/pods",
                query: "",
                want: "pods is forbidden: User \"system:node:n1\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": can only list/watch pods with spec.nodeName field selector",
            },
            Case {
                method: "GET",
                path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                query: "",
                want: "leases.coordination.k8s.io is forbidden: User \"system:node:n1\" cannot list resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only get, create, update, patch, or delete a node lease",
            },
            Case {
                method: "PUT",
                path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2",
                query: "",
                want: "leases.coordination.k8s.io \"n2\" is forbidden: User \"system:node:n1\" cannot update resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only access node lease with the same name as the requesting node",
            },
            Case {
                method: "GET",
                path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/n1",
                query: "",
                want: "leases.coordination.k8s.io \"n1\" is forbidden: User \"system:node:n1\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-system\": can only access leases in the \"kube-node-lease\" system namespace",
            },
            Case {
                method: "DELETE",
                path: "/api/v1/nodes/n1",
                query: "",
                want: "nodes \"n1\" is forbidden: User \"system:node:n1\" cannot delete resource \"nodes\" in API group \"\" at the cluster scope",
            },
        ];
        for Case {
            method,
            path,
            query,
            want,
        } in cases
        {
            let err = authorize(&node, &parse(method, path, query)).err();
            assert_eq!(
                err.map(|e| e.message).as_deref(),
                Some(*want),
                "{method} {path}?{query}"
            );
        }
        let info = parse("GET", "/api/v1/namespaces/default/pods/web", "");
        let elsewhere = serde_json::json!({"spec": {"nodeName": "n2"}});
        let here = serde_json::json!({"spec": {"nodeName": "n1"}});
        assert!(require_pod_bound(&node, &info, "n1", Some(&here)).is_ok());
        for pod in [Some(&elsewhere), None] {
            let err = require_pod_bound(&node, &info, "n1", pod).err();
            assert_eq!(
                err.map(|e| e.message).as_deref(),
                Some(
                    "pods \"web\" is forbidden: User \"system:node:n1\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
                )
            );
        }
    }

    #[test]
    fn only_admins_do_everything_and_the_sim_fleet_only_reads_nodes_and_pods() {
        let admin = User::admin();
        assert_eq!(
            authorize(&admin, &parse("DELETE", "/api/v1/nodes/n2", "")).ok(),
            Some(Authorized::Yes)
        );
        let fleet = User::sim_fleet();
        struct Case {
            method: &'static str,
            path: &'static str,
            query: &'static str,
            allowed: bool,
        }
        let cases = [
            Case {
                method: "GET",
                path: "/api/v1/pods",
                query: "watch=true&fieldSelector=spec.nodeName!%3D",
                allowed: true,
            },
            Case {
                method: "GET",
                path: "/api/v1/nodes",
                query: "watch=true",
                allowed: true,
            },
            Case {
                method: "GET",
                path: "/api/v1/nodes/sim-000001",
                query: "",
                allowed: true,
            },
            Case {
                method: "PATCH",
                path: "/api/v1/nodes/sim-000001/status",
                query: "",
                allowed: false,
            },
            Case {
                method: "POST",
                path: "/api/v1/namespaces/default/pods",
                query: "",
                allowed: false,
            },
            Case {
                method: "GET",
                path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                query: "",
                allowed: false,
            },
        ];
        for Case {
            method,
            path,
            query,
            allowed,
        } in cases
        {
            assert_eq!(
                authorize(&fleet, &parse(method, path, query)).is_ok(),
                allowed,
                "{method} {path}"
            );
        }
        let stranger = User {
            name: "bob".into(),
            groups: vec![GROUP_AUTHENTICATED.into()],
        };
        assert!(authorize(&stranger, &parse("GET", "/api/v1/pods", "")).is_err());
    }
}
