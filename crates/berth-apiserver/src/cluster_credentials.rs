//! The credentials every server of one cluster shares, kept in the store, so
//! that several `berth server`s on one etcd are one cluster to their
//! clients: any server (or a load balancer in front of them) accepts the
//! admin kubeconfig, the join token and every node's credential, and
//! presents a serving certificate signed by the one CA.
//!
//! - **CA and tokens** (`/registry/berth.dev/cluster-credentials`): the
//!   first server to reach an empty etcd publishes its data dir's CA, admin
//!   token and join token; every later server takes them into its own data
//!   dir on its first start, then signs its serving certificate with that
//!   CA. A data dir that already holds another CA is refused with the way
//!   out: it belongs to another cluster.
//! - **Node credentials** (`/registry/berth.dev/node-credentials/<node>`):
//!   issued with a create, so a name is issued once across all servers, and
//!   followed by a watch on every server, so an agent may talk to any of
//!   them (and `kubectl logs` through any of them reaches its agent). A
//!   server's older `node-tokens` file is imported once.
//!
//! The store holds these secrets in the clear, as Kubernetes keeps Secrets
//! in etcd unless told to encrypt them: who can read etcd owns the cluster.
//! With the embedded store there is one server and the data dir holds
//! everything (see `bootstrap`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use berth_store::{AnyStore, EventKind, ListOptions, Store, StoreError};
use serde::{Deserialize, Serialize};

use crate::api::ApiServer;
use crate::auth::{NODE_PREFIX, publish_node_token};
use crate::bootstrap::{self, BootstrapError, Credentials};

/// Where the cluster's CA and tokens live in the store.
pub const CLUSTER_KEY: &str = "/registry/berth.dev/cluster-credentials";

/// How long the follower waits before watching again after its watch failed.
const REWATCH_AFTER: Duration = Duration::from_secs(1);

/// The data dir's files that make a cluster's identity, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClusterCredentials {
    ca_cert: String,
    ca_key: String,
    admin_token: String,
    join_token: String,
}

/// Why the shared credentials could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SharedCredentialsError {
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    #[error("shared credentials in the store: {0}")]
    Store(#[from] StoreError),
}

impl ClusterCredentials {
    /// What `data_dir` holds (after `bootstrap::ensure`, all four files).
    fn read(data_dir: &Path) -> Result<ClusterCredentials, BootstrapError> {
        let read = |name: &str| {
            let path = data_dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| BootstrapError::Io { path, source })
        };
        Ok(ClusterCredentials {
            ca_cert: read(bootstrap::CA_CERT)?,
            ca_key: read(bootstrap::CA_KEY)?,
            admin_token: read(bootstrap::ADMIN_TOKEN)?.trim().to_string(),
            join_token: read(bootstrap::JOIN_TOKEN)?.trim().to_string(),
        })
    }

    /// Writes these credentials into `data_dir`; a serving certificate signed
    /// by another CA is removed so that `bootstrap::ensure` signs a new one.
    fn write(&self, data_dir: &Path) -> Result<(), BootstrapError> {
        std::fs::create_dir_all(data_dir).map_err(|source| BootstrapError::Io {
            path: data_dir.to_path_buf(),
            source,
        })?;
        let ca_cert = data_dir.join(bootstrap::CA_CERT);
        if std::fs::read_to_string(&ca_cert).ok().as_deref() != Some(self.ca_cert.as_str()) {
            for name in [bootstrap::SERVER_CERT, bootstrap::SERVER_KEY] {
                let _ = std::fs::remove_file(data_dir.join(name));
            }
        }
        bootstrap::write_secret(&data_dir.join(bootstrap::CA_KEY), self.ca_key.as_bytes())?;
        std::fs::write(&ca_cert, &self.ca_cert).map_err(|source| BootstrapError::Io {
            path: ca_cert.clone(),
            source,
        })?;
        for (name, token) in [
            (bootstrap::ADMIN_TOKEN, &self.admin_token),
            (bootstrap::JOIN_TOKEN, &self.join_token),
        ] {
            bootstrap::write_secret(&data_dir.join(name), format!("{token}\n").as_bytes())?;
        }
        Ok(())
    }
}

/// `bootstrap::ensure` for a server on a shared store: the data dir ends up
/// holding the cluster's CA and tokens (published by this server if it is the
/// first), and a serving certificate for `listen` signed by that CA.
pub async fn ensure<S: Store>(
    store: &S,
    data_dir: &Path,
    listen: SocketAddr,
    server_url: &str,
) -> Result<Credentials, SharedCredentialsError> {
    // A CA key made by this very start may give way to one another server
    // published meanwhile; one that was there before may not.
    let had_ca = data_dir.join(bootstrap::CA_KEY).exists();
    loop {
        if let Some(stored) = store.get(CLUSTER_KEY).await? {
            let shared: ClusterCredentials =
                serde_json::from_slice(&stored.value).map_err(|e| BootstrapError::Invalid {
                    path: PathBuf::from(CLUSTER_KEY),
                    problem: format!("not the cluster's credentials: {e}"),
                })?;
            let local_key = std::fs::read_to_string(data_dir.join(bootstrap::CA_KEY)).ok();
            if had_ca && local_key.as_deref().is_some_and(|key| key != shared.ca_key) {
                return Err(BootstrapError::Invalid {
                    path: data_dir.join(bootstrap::CA_KEY),
                    problem: format!(
                        "this data dir holds the CA of another cluster than the one in the store \
                         ({CLUSTER_KEY}): start with an empty --data-dir to join the cluster in \
                         the store (its CA and tokens are copied in), or point --etcd at the \
                         etcd of this data dir's cluster"
                    ),
                }
                .into());
            }
            if ClusterCredentials::read(data_dir).ok().as_ref() != Some(&shared) {
                shared.write(data_dir)?;
                tracing::info!(data_dir = %data_dir.display(), "took the cluster's CA and tokens from the store");
            }
            return Ok(bootstrap::ensure(data_dir, listen, server_url)?);
        }
        let credentials = bootstrap::ensure(data_dir, listen, server_url)?;
        let local = ClusterCredentials::read(data_dir)?;
        let value = serde_json::to_vec(&local).map_err(|e| BootstrapError::Invalid {
            path: data_dir.to_path_buf(),
            problem: e.to_string(),
        })?;
        match store.create(CLUSTER_KEY, value).await {
            Ok(_) => {
                tracing::info!("published this data dir's CA and tokens as the cluster's");
                return Ok(credentials);
            }
            // Another server was first: take its credentials (next turn).
            Err(StoreError::AlreadyExists { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A node credential as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeCredential {
    node_name: String,
    token: String,
}

/// Keeps `api`'s node credentials in `store`: imports the ones in the
/// `node_tokens` file of an older start (a name already in the store keeps
/// the stored one), loads every stored credential, issues new ones there,
/// and follows the store so credentials other servers issue work here at
/// once.
pub async fn share_node_credentials(
    api: &Arc<ApiServer>,
    store: AnyStore,
    node_tokens: &Path,
) -> Result<(), SharedCredentialsError> {
    let imported =
        crate::auth::read_node_tokens(node_tokens).map_err(|source| BootstrapError::Io {
            path: node_tokens.to_path_buf(),
            source,
        })?;
    for (token, node) in imported {
        match publish_node_token(&store, &node, &token).await {
            Ok(()) | Err(StoreError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let revision = load_node_credentials(api, &store).await?;
    api.auth.share_node_tokens(store.clone());
    tokio::spawn(follow_node_credentials(api.clone(), store, revision));
    Ok(())
}

/// Adds every stored node credential to `api`; the revision they were read at.
async fn load_node_credentials(api: &ApiServer, store: &AnyStore) -> Result<i64, StoreError> {
    let mut options = ListOptions::default();
    loop {
        let page = store.list(NODE_PREFIX, options.clone()).await?;
        for kv in &page.items {
            apply_put(api, &kv.key, &kv.value);
        }
        match page.next {
            Some(next) => options.continue_from = Some(next),
            None => return Ok(page.revision),
        }
    }
}

fn apply_put(api: &ApiServer, key: &str, value: &[u8]) {
    match serde_json::from_slice::<NodeCredential>(value) {
        Ok(credential) => api
            .auth
            .add_node_credential(&credential.node_name, &credential.token),
        Err(e) => tracing::warn!(key, error = %e, "ignoring a stored node credential"),
    }
}

/// Follows the stored node credentials from `revision` on, for as long as
/// the server runs: a watch that fails (compacted past, etcd unreachable)
/// is started again from a fresh list.
async fn follow_node_credentials(api: Arc<ApiServer>, store: AnyStore, mut revision: i64) {
    loop {
        match store.watch(NODE_PREFIX, revision).await {
            Ok(mut watch) => {
                while let Some(event) = watch.next_event().await {
                    match event {
                        Ok(event) => {
                            revision = event.revision;
                            match event.kind {
                                EventKind::Created | EventKind::Updated => {
                                    apply_put(&api, &event.kv.key, &event.kv.value);
                                }
                                EventKind::Deleted => {
                                    if let Some(node) = event.kv.key.strip_prefix(NODE_PREFIX) {
                                        api.auth.forget_node_credential(node);
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "watching node credentials");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "watching node credentials"),
        }
        tokio::time::sleep(REWATCH_AFTER).await;
        match load_node_credentials(&api, &store).await {
            Ok(at) => revision = at,
            Err(e) => tracing::warn!(error = %e, "listing node credentials"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_store::MemStore;

    fn addr() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 6443))
    }

    fn dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("berth-shared-{name}-"))
            .tempdir()
            .expect("temp dir")
    }

    #[tokio::test]
    async fn servers_on_one_store_share_the_first_ones_ca_and_tokens() {
        let store = MemStore::new();
        let (a, b) = (dir("a"), dir("b"));
        let first = ensure(&store, a.path(), addr(), "https://127.0.0.1:6443")
            .await
            .expect("first server");
        let second = ensure(&store, b.path(), addr(), "https://127.0.0.1:6444")
            .await
            .expect("second server");
        assert_eq!(first.admin_token, second.admin_token);
        assert_eq!(first.join_token, second.join_token);
        let read = |d: &Path, f: &str| std::fs::read(d.join(f)).expect("file");
        assert_eq!(
            read(a.path(), bootstrap::CA_KEY),
            read(b.path(), bootstrap::CA_KEY)
        );
        // Each serves with its own certificate, signed by the one CA.
        assert_ne!(
            read(a.path(), bootstrap::SERVER_KEY),
            read(b.path(), bootstrap::SERVER_KEY)
        );
        // A restart changes nothing.
        let again = ensure(&store, b.path(), addr(), "https://127.0.0.1:6444")
            .await
            .expect("restart");
        assert_eq!(again.admin_token, first.admin_token);
    }

    #[tokio::test]
    async fn a_data_dir_of_another_cluster_is_refused_with_the_way_out() {
        let store = MemStore::new();
        let (a, other) = (dir("a"), dir("other"));
        ensure(&store, a.path(), addr(), "https://127.0.0.1:6443")
            .await
            .expect("first server");
        bootstrap::ensure(other.path(), addr(), "https://127.0.0.1:6445").expect("other cluster");
        let err = ensure(&store, other.path(), addr(), "https://127.0.0.1:6445")
            .await
            .expect_err("another cluster's data dir")
            .to_string();
        assert!(
            err.contains("ca.key") && err.contains("another cluster") && err.contains("--data-dir"),
            "{err}"
        );
    }

    /// Two servers on one store: a credential issued through one works on the
    /// other at once (by the time it is issued, the other may not have seen
    /// it: the test waits for the watch), an older server's file is imported,
    /// and a name is issued once across both.
    #[tokio::test]
    async fn node_credentials_issued_by_one_server_work_on_the_other() {
        let store = AnyStore::Memory(MemStore::new());
        let server = || async {
            ApiServer::new(
                store.clone(),
                berth_core::clock::Clock::real(),
                crate::api::ApiConfig::default(),
            )
            .await
            .expect("api server")
        };
        let (a, b) = (server().await, server().await);
        let old = dir("old");
        let file = old.path().join("node-tokens");
        std::fs::write(&file, "oldtoken n0\n").expect("node-tokens");
        share_node_credentials(&a, store.clone(), &file)
            .await
            .expect("share a");
        share_node_credentials(&b, store.clone(), &old.path().join("none"))
            .await
            .expect("share b");
        let bearer = |token: &str| format!("Bearer {token}");
        assert_eq!(
            b.auth.authenticate(Some(&bearer("oldtoken"))).ok(),
            Some(crate::auth::User::node("n0")),
            "imported from a's file"
        );
        let token = a
            .auth
            .issue_node_token("n1", None)
            .await
            .expect("issued by a");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while b.auth.authenticate(Some(&bearer(&token))).is_err() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "b never learnt n1's credential"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(b.auth.node_credential("n1"), Some(token));
        let twice = b
            .auth
            .issue_node_token("n1", None)
            .await
            .err()
            .map(|e| e.code);
        assert_eq!(twice, Some(409), "issued once across servers");
    }

    #[tokio::test]
    async fn a_node_name_is_issued_once_across_servers() {
        let store = MemStore::new();
        publish_node_token(&store, "n1", "t1").await.expect("first");
        let again = publish_node_token(&store, "n1", "t2").await;
        assert!(matches!(again, Err(StoreError::AlreadyExists { .. })));
    }
}
