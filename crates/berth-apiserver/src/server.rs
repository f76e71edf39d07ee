//! Running the API server: credentials in the data dir, the store
//! (embedded redb, or etcd), the API, and HTTPS on the listen address, with
//! upstream's connection timeouts ([`crate::connections`]); and stopping it
//! gracefully ([`RunningServer::shutdown`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::Request;
use axum::response::Response;
use axum_server::Handle;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use berth_core::clock::Clock;
use berth_store::{AnyStore, EtcdStore, RedbStore};

use crate::api::{ApiConfig, ApiServer};
use crate::auth::User;
use crate::bootstrap::{self, BootstrapError, Credentials};
use crate::connections::{ConnectionTimeouts, TimeoutAcceptor};
use crate::status::ApiError;

/// How to run a server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// etcd endpoints; empty means the embedded store in `data_dir`.
    pub etcd: Vec<String>,
    pub api: ApiConfig,
    pub connections: ConnectionTimeouts,
    /// The embedded store's page cache, in bytes.
    pub store_cache_bytes: usize,
}

impl ServerOptions {
    /// A server on the embedded store in `data_dir` with every other
    /// setting at its default.
    pub fn new(data_dir: PathBuf, listen: SocketAddr) -> ServerOptions {
        ServerOptions {
            data_dir,
            listen,
            etcd: Vec::new(),
            api: crate::api::ApiConfig::default(),
            connections: ConnectionTimeouts::default(),
            store_cache_bytes: berth_store::REDB_DEFAULT_CACHE_BYTES,
        }
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    #[error(transparent)]
    Identity(#[from] crate::cluster_identity::IdentityError),
    #[error(transparent)]
    SharedCredentials(#[from] crate::cluster_credentials::SharedCredentialsError),
    #[error("opening the store: {0}")]
    Store(#[from] berth_store::StoreError),
    #[error("starting the API: {0}")]
    Api(#[from] ApiError),
    #[error("serving on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A started server.
pub struct RunningServer {
    pub api: Arc<ApiServer>,
    pub credentials: Credentials,
    /// The address it listens on (the real port when asked for port 0).
    pub addr: SocketAddr,
    pub url: String,
    store: AnyStore,
    handle: Handle<SocketAddr>,
    /// `None` once it has ended (see [`RunningServer::wait`]).
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl RunningServer {
    /// Stops gracefully, as kube-apiserver does on SIGTERM: stops accepting
    /// connections, ends every watch, lets the requests in flight finish
    /// (for `grace` at most; then their connections are dropped), and
    /// closes the store, so that every acknowledged write is in it and the
    /// next start has nothing to replay or repair.
    pub async fn shutdown(mut self, grace: std::time::Duration) -> Result<(), ServerError> {
        self.api.watches.close_all();
        self.handle.graceful_shutdown(Some(grace));
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let AnyStore::Redb(store) = &self.store {
            store.close().await?;
        }
        Ok(())
    }

    /// Serves until the listener fails; returns at once if it already has.
    pub async fn wait(&mut self) -> std::io::Result<()> {
        let Some(task) = self.task.as_mut() else {
            return Ok(());
        };
        let result = task.await;
        self.task = None;
        match result {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

/// The API as a `tower` service, for HTTPS or for in-process clients.
pub fn router(api: Arc<ApiServer>) -> Router {
    async fn handle(State(api): State<Arc<ApiServer>>, request: Request<Body>) -> Response {
        api.handle(request).await
    }
    Router::new().fallback(handle).with_state(api)
}

/// How often the store's history is compacted, and how many revisions of
/// it are kept (watches and paginated lists older than that get 410), as
/// kube-apiserver compacts etcd every five minutes.
/// Streams one HTTP/2 connection may have open at once.
const HTTP2_MAX_STREAMS_PER_CONNECTION: u32 = 250;
const COMPACTION_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);
const COMPACTION_WINDOW: i64 = 100_000;

async fn compact_periodically(store: AnyStore) {
    use berth_store::Store;
    let mut ticks = tokio::time::interval(COMPACTION_INTERVAL);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Err(e) = store.compact_keeping(COMPACTION_WINDOW).await {
            tracing::warn!(error = %e, "compaction failed");
        }
    }
}

/// Starts a server: credentials, store, API, HTTPS.
pub async fn start(options: ServerOptions) -> Result<RunningServer, ServerError> {
    // One process-wide TLS provider (ring, as kube-rs uses); a second
    // install attempt in the same process is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let shared = !options.etcd.is_empty();
    let (store, store_name) = if options.etcd.is_empty() {
        let store = RedbStore::open_with_cache(&options.data_dir, options.store_cache_bytes)?;
        let name = format!("embedded, {}", store.path().display());
        (AnyStore::Redb(store), name)
    } else {
        let store = EtcdStore::connect(&options.etcd).await?;
        (
            AnyStore::Etcd(store),
            format!("etcd {}", options.etcd.join(",")),
        )
    };
    // Before anything is written: a lost store must not become an empty cluster.
    if let Err(e) = crate::cluster_identity::ensure(&options.data_dir, &store, &store_name).await {
        if let AnyStore::Redb(store) = &store {
            let _ = store.close().await;
        }
        return Err(e.into());
    }
    let api = ApiServer::new(store.clone(), Clock::real(), options.api.clone()).await?;
    tokio::spawn(compact_periodically(store.clone()));
    // The listener comes first so port 0 resolves before the kubeconfig
    // names the URL.
    let std_listener =
        std::net::TcpListener::bind(options.listen).map_err(|source| ServerError::Listen {
            addr: options.listen,
            source,
        })?;
    let addr = std_listener
        .local_addr()
        .map_err(|source| ServerError::Listen {
            addr: options.listen,
            source,
        })?;
    std_listener
        .set_nonblocking(true)
        .map_err(|source| ServerError::Listen { addr, source })?;
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    let url = format!("https://{host}:{}", addr.port());
    // On etcd, several servers may share the cluster: they share its CA and
    // tokens too (see `cluster_credentials`).
    let credentials = if shared {
        crate::cluster_credentials::ensure(&store, &options.data_dir, addr, &url).await?
    } else {
        bootstrap::ensure(&options.data_dir, addr, &url)?
    };
    api.auth
        .add_token(credentials.admin_token.clone(), User::admin());
    // Node agents join with the join token and get a credential of their
    // own, kept (and reloaded after a restart) in the data dir.
    api.auth
        .add_token(credentials.join_token.clone(), User::bootstrapper());
    let node_tokens = options.data_dir.join("node-tokens");
    if shared {
        crate::cluster_credentials::share_node_credentials(&api, store.clone(), &node_tokens)
            .await?;
    } else {
        api.auth.load_node_tokens(&node_tokens).map_err(|source| {
            ServerError::Bootstrap(BootstrapError::Io {
                path: node_tokens.clone(),
                source,
            })
        })?;
    }
    api.publish_kubernetes_service(addr).await;
    // Upstream's kube-scheduler and kube-controller-manager read the
    // cluster's client CA from kube-system at start (see
    // api::authentication_trust).
    match std::fs::read_to_string(&credentials.ca_cert) {
        Ok(ca_pem) => api.publish_authentication_trust(&ca_pem).await,
        Err(e) => {
            tracing::warn!(path = %credentials.ca_cert.display(), error = %e, "the CA was not read: kube-system/extension-apiserver-authentication not published")
        }
    }
    let tls = RustlsConfig::from_pem_file(&credentials.server_cert, &credentials.server_key)
        .await
        .map_err(|source| ServerError::Listen { addr, source })?;
    let handle: Handle<SocketAddr> = Handle::new();
    let timeouts = options.connections;
    let acceptor = TimeoutAcceptor::new(
        RustlsAcceptor::new(tls).handshake_timeout(timeouts.tls_handshake),
        timeouts,
    );
    let mut server = axum_server::from_tcp(std_listener)
        .map_err(|source| ServerError::Listen { addr, source })?
        .acceptor(acceptor)
        .handle(handle.clone());
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    // Go's HTTP/2 default, which kube-apiserver keeps
    // (`--http2-max-streams-per-connection` 0); hyper's is 200.
    server
        .http_builder()
        .http2()
        .max_concurrent_streams(HTTP2_MAX_STREAMS_PER_CONNECTION);
    let app = router(api.clone());
    let task = tokio::spawn(async move { server.serve(app.into_make_service()).await });
    Ok(RunningServer {
        api,
        credentials,
        addr,
        url,
        store,
        handle,
        task: Some(task),
    })
}
