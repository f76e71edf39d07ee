//! The API calls a node makes, on behalf of one node.
//!
//! A [`NodeClient`] is a shared `kube::Client` plus, optionally, the
//! node's own bearer token put on each request. One agent uses a client
//! built from its kubeconfig (no extra token); thousands of simulated
//! nodes share one client, and so one connection pool, each request
//! carrying the token of the node it is for, so the server authorizes
//! every node as itself (NodeRestriction applies as to a real agent).

use std::sync::Arc;

use http::HeaderValue;
use http::header::AUTHORIZATION;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, PodStatus};
use kube::core::ObjectList;
use kube::core::Request;
use kube::core::params::{
    DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use serde::de::DeserializeOwned;

/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// A request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("building a request: {0}")]
    Build(#[from] kube::core::request::Error),
    #[error("encoding a request body: {0}")]
    Encode(#[from] serde_json::Error),
}

impl ClientError {
    /// The HTTP status of an API error (`None` for transport failures).
    pub fn code(&self) -> Option<u16> {
        match self {
            ClientError::Kube(kube::Error::Api(status)) => Some(status.code),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }
}

/// `base` with `bearer` put on every request that carries no token of
/// its own: the shared client of simulated nodes, whose watches go out as
/// one of them.
pub fn with_default_bearer(base: kube::Client, bearer: HeaderValue) -> kube::Client {
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let base = base.clone();
        if !request.headers().contains_key(AUTHORIZATION) {
            request.headers_mut().insert(AUTHORIZATION, bearer.clone());
        }
        async move { base.send(request).await }
    });
    kube::Client::new(service, "default")
}

/// One node's view of the API.
#[derive(Clone)]
pub struct NodeClient {
    client: kube::Client,
    bearer: Option<HeaderValue>,
    node: Arc<str>,
}

impl std::fmt::Debug for NodeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeClient")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// A bearer token as a header value (invisible in debug output).
pub fn bearer_header(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

impl NodeClient {
    /// `node`'s calls through `client`, which authenticates them itself.
    pub fn new(client: kube::Client, node: &str) -> NodeClient {
        NodeClient {
            client,
            bearer: None,
            node: node.into(),
        }
    }

    /// `node`'s calls through a shared `client`, each with `bearer`.
    pub fn with_bearer(client: kube::Client, node: &str, bearer: HeaderValue) -> NodeClient {
        NodeClient {
            client,
            bearer: Some(bearer),
            node: node.into(),
        }
    }

    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// The shared client (watches use it directly).
    pub fn kube_client(&self) -> &kube::Client {
        &self.client
    }

    async fn send<T: DeserializeOwned>(
        &self,
        mut request: http::Request<Vec<u8>>,
    ) -> Result<T, ClientError> {
        if let Some(bearer) = &self.bearer {
            request.headers_mut().insert(AUTHORIZATION, bearer.clone());
        }
        Ok(self.client.request(request).await?)
    }

    pub async fn get_node(&self) -> Result<Node, ClientError> {
        let r = Request::new("/api/v1/nodes").get(&self.node, &GetParams::default())?;
        self.send(r).await
    }

    pub async fn create_node(&self, node: &Node) -> Result<Node, ClientError> {
        let r = Request::new("/api/v1/nodes")
            .create(&PostParams::default(), serde_json::to_vec(node)?)?;
        self.send(r).await
    }

    /// A strategic merge patch of the node's status.
    pub async fn patch_node_status(&self, patch: &serde_json::Value) -> Result<Node, ClientError> {
        let r = Request::new("/api/v1/nodes").patch_subresource(
            "status",
            &self.node,
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )?;
        self.send(r).await
    }

    fn leases() -> Request {
        Request::new(format!(
            "/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases"
        ))
    }

    pub async fn get_lease(&self) -> Result<Lease, ClientError> {
        let r = Self::leases().get(&self.node, &GetParams::default())?;
        self.send(r).await
    }

    pub async fn create_lease(&self, lease: &Lease) -> Result<Lease, ClientError> {
        let r = Self::leases().create(&PostParams::default(), serde_json::to_vec(lease)?)?;
        self.send(r).await
    }

    /// Replaces the Lease (compare-and-swap on its resourceVersion).
    pub async fn update_lease(&self, lease: &Lease) -> Result<Lease, ClientError> {
        let r = Self::leases().replace(
            &self.node,
            &PostParams::default(),
            serde_json::to_vec(lease)?,
        )?;
        self.send(r).await
    }

    fn pods(namespace: &str) -> Request {
        Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
    }

    /// The pods bound to the node (as upstream's node authorizer lets a
    /// node list them: by `spec.nodeName`).
    pub async fn list_pods(&self) -> Result<Vec<Pod>, ClientError> {
        let selector = format!("spec.nodeName={}", self.node);
        let r = Request::new("/api/v1/pods").list(&ListParams::default().fields(&selector))?;
        let list: ObjectList<Pod> = self.send(r).await?;
        Ok(list.items)
    }

    /// A merge patch of a pod's status; the status the pod has afterwards
    /// (the rest of the answer is skipped, not decoded).
    pub async fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<Option<PodStatus>, ClientError> {
        /// The part of the answer the caller keeps.
        #[derive(serde::Deserialize)]
        struct StatusOf {
            status: Option<PodStatus>,
        }
        let r = Self::pods(namespace).patch_subresource(
            "status",
            name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )?;
        let patched: StatusOf = self.send(r).await?;
        Ok(patched.status)
    }

    /// Completes a graceful deletion: deletes the pod with UID `uid` now.
    pub async fn delete_pod_now(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), ClientError> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let r = Self::pods(namespace).delete(name, &params)?;
        self.send::<serde_json::Value>(r).await.map(|_| ())
    }
}
