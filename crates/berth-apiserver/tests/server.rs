//! The server as an operator runs it: connections that send nothing (or
//! one header byte at a time) are closed, a lost store is not mistaken for
//! a new cluster, and a full disk fails writes cleanly and recovers.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::connections::ConnectionTimeouts;
use berth_apiserver::server::{RunningServer, ServerOptions, router, start};
use berth_core::clock::Clock;
use berth_store::testing::SmallDisk;
use berth_store::{AnyStore, RedbStore};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

async fn start_in(data_dir: &Path, connections: ConnectionTimeouts) -> RunningServer {
    start(options(data_dir, connections))
        .await
        .unwrap_or_else(|e| panic!("server starts: {e}"))
}

async fn stop(server: RunningServer) {
    server
        .shutdown(Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("stopping the server: {e}"));
}

fn options(data_dir: &Path, connections: ConnectionTimeouts) -> ServerOptions {
    ServerOptions {
        data_dir: data_dir.to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        etcd: Vec::new(),
        api: ApiConfig::default(),
        connections,
        store_cache_bytes: berth_store::REDB_DEFAULT_CACHE_BYTES,
    }
}

/// A TLS connection to the server (HTTP/1.1: no ALPN), trusting its CA.
async fn tls_connect(
    server: &RunningServer,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let ca = rustls::pki_types::CertificateDer::from_pem_file(&server.credentials.ca_cert)
        .unwrap_or_else(|e| panic!("CA: {e}"));
    roots.add(ca).unwrap_or_else(|e| panic!("CA: {e}"));
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|e| panic!("{e}"))
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let name =
        rustls::pki_types::ServerName::try_from("localhost").unwrap_or_else(|e| panic!("{e}"));
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap_or_else(|e| panic!("TLS handshake: {e}"))
}

/// How long until the server closes the connection (reads end or fail),
/// reading at most 10 s; everything read on the way.
async fn until_closed(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (started.elapsed(), read),
            Ok(Ok(n)) => read.extend_from_slice(&buf[..n]),
            Err(_) => panic!("still open after 10 s"),
        }
    }
}

const SHORT: ConnectionTimeouts = ConnectionTimeouts {
    header_read: Duration::from_secs(1),
    idle: Duration::from_secs(2),
    tls_handshake: Duration::from_secs(1),
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_or_dribble_headers_are_closed() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = start_in(dir.path(), SHORT).await;

    // No TLS handshake at all.
    let mut tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (lasted, _) = until_closed(&mut tcp).await;
    assert!(
        lasted < Duration::from_secs(4),
        "no handshake: open {lasted:?}"
    );

    // A handshake, then nothing.
    let mut idle = tls_connect(&server).await;
    let (lasted, _) = until_closed(&mut idle).await;
    assert!(
        lasted >= Duration::from_millis(500) && lasted < Duration::from_secs(4),
        "idle TLS connection: open {lasted:?}"
    );

    // Slowloris: one header byte every 100 ms, never a whole header.
    let mut slow = tls_connect(&server).await;
    let started = Instant::now();
    let header = b"GET /version HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    for byte in header {
        if slow.write_all(&[*byte]).await.is_err() || slow.flush().await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut buf = [0u8; 1024];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(1), slow.read(&mut buf)).await
        {
            break;
        }
    }
    let lasted = started.elapsed();
    assert!(
        lasted < Duration::from_secs(4),
        "slowloris connection: open {lasted:?} (the whole header takes {} s)",
        header.len() / 10
    );

    // A request, then nothing: closed once idle.
    let mut kept = tls_connect(&server).await;
    kept.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (lasted, read) = until_closed(&mut kept).await;
    assert!(
        read.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&read)
    );
    assert!(
        lasted < Duration::from_secs(5),
        "kept-alive connection: open {lasted:?}"
    );

    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_keeps_its_connection_past_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = start_in(dir.path(), SHORT).await;
    let mut watch = tls_connect(&server).await;
    let request = format!(
        "GET /api/v1/namespaces/default/pods?watch=true&timeoutSeconds=4 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        server.credentials.admin_token
    );
    watch
        .write_all(request.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (lasted, read) = until_closed(&mut watch).await;
    let text = String::from_utf8_lossy(&read);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        lasted >= Duration::from_millis(3_500),
        "the watch's connection was closed after {lasted:?}, before the watch's own end"
    );
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_store_is_refused_not_served_as_an_empty_cluster() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = start_in(dir.path(), ConnectionTimeouts::default()).await;
    stop(server).await;
    // A restart is fine.
    let server = start_in(dir.path(), ConnectionTimeouts::default()).await;
    stop(server).await;
    let file = dir.path().join(berth_store::REDB_FILE_NAME);
    std::fs::File::create(&file).unwrap_or_else(|e| panic!("{e}"));
    for (name, damage) in [("truncated", None::<()>), ("deleted", Some(()))] {
        if damage.is_some() {
            let _ = std::fs::remove_file(&file);
        }
        let refused = start(options(dir.path(), ConnectionTimeouts::default()))
            .await
            .err()
            .unwrap_or_else(|| panic!("{name}: a server started on an empty store"));
        let message = refused.to_string();
        assert!(
            message.contains("holds no objects") && message.contains("restore the store"),
            "{name}: {message}"
        );
        let _ = std::fs::remove_file(&file);
    }
}

/// The disk-full test's API: the admin's requests through the router.
struct Api(Arc<ApiServer>);

impl Api {
    async fn call(&self, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .header("authorization", "Bearer admin")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap_or_else(|e| panic!("{e}"));
        let response = router(self.0.clone())
            .oneshot(request)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    async fn create_pod(&self, name: &str) -> (StatusCode, Value) {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {"padding": "x".repeat(100 * 1024)}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        self.call("POST", "/api/v1/namespaces/default/pods", Some(pod))
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_with_a_5xx_keeps_reads_and_recovers_without_a_restart() {
    let disk = SmallDisk::mount(24 << 20).unwrap_or_else(|e| panic!("{e}"));
    let store = RedbStore::open(disk.path().join("data")).unwrap_or_else(|e| panic!("{e}"));
    let server = ApiServer::new(
        AnyStore::Redb(store.clone()),
        Clock::real(),
        ApiConfig::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    server.auth.add_token("admin", User::admin());
    let api = Api(server);
    let mut acknowledged = Vec::new();
    for i in 0..10 {
        let (status, _) = api.create_pod(&format!("before-{i}")).await;
        assert_eq!(status, StatusCode::CREATED);
        acknowledged.push(format!("before-{i}"));
    }
    let filler = disk.path().join("filler");
    SmallDisk::fill(&filler, 64 << 20).unwrap_or_else(|e| panic!("{e}"));
    let mut refusal = None;
    for i in 0..300 {
        let name = format!("after-{i}");
        match api.create_pod(&name).await {
            (StatusCode::CREATED, _) => acknowledged.push(name),
            other => {
                refusal = Some(other);
                break;
            }
        }
    }
    let (status, body) = refusal.unwrap_or_else(|| panic!("writes never failed on a full disk"));
    assert!(status.is_server_error(), "{status}: {body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("No space left on device")),
        "{body}"
    );
    // Not ready (with the reason), but alive; reads work.
    let (ready, why) = api.call("GET", "/readyz", None).await;
    assert_eq!(ready, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        why.as_str()
            .is_some_and(|w| w.contains("[-]store failed") && w.contains("No space left")),
        "{why}"
    );
    assert_eq!(api.call("GET", "/livez", None).await.0, StatusCode::OK);
    for name in &acknowledged {
        let (status, pod) = api
            .call(
                "GET",
                &format!("/api/v1/namespaces/default/pods/{name}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{name}: {pod}");
    }
    // Space freed: writes succeed again, without a restart.
    std::fs::remove_file(&filler).unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = api.create_pod("after-space").await;
        if status == StatusCode::CREATED {
            break;
        }
        assert!(Instant::now() < deadline, "writes never recovered: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(api.call("GET", "/readyz", None).await.0, StatusCode::OK);
    let (_, list) = api
        .call("GET", "/api/v1/namespaces/default/pods", None)
        .await;
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(acknowledged.len() + 1),
        "every acknowledged pod and the new one"
    );
    store.close().await.unwrap_or_else(|e| panic!("{e}"));
}
