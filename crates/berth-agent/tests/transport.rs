//! The client a kubeconfig makes (`client_from_kubeconfig`, through
//! `berth_client::transport`) against a real API server over HTTPS: it
//! speaks HTTP/2, as client-go does, and more requests at once than the
//! server lets one connection carry all get their answer.

use berth_agent::credential::{client_from_kubeconfig, render_kubeconfig};
use berth_apiserver::server::{ServerOptions, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_speaks_http2_and_queues_requests_beyond_the_stream_limit() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(ServerOptions::new(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().expect("address"),
    ))
    .await
    .expect("server starts");
    let ca = std::fs::read(&server.credentials.ca_cert).expect("the CA");
    let kubeconfig = render_kubeconfig(
        &server.url,
        &ca,
        "admin",
        Some(&server.credentials.admin_token),
    );
    let client = client_from_kubeconfig(&kubeconfig).await.expect("client");
    let request = || {
        http::Request::get("/api/v1/namespaces/default")
            .body(Vec::new())
            .expect("request")
    };

    let response = client
        .send(request().map(kube::client::Body::from))
        .await
        .expect("answered");
    assert_eq!(response.version(), http::Version::HTTP_2);

    // The server allows 250 streams on a connection: the rest wait their
    // turn in the client rather than fail.
    let answers = futures::future::join_all((0..600).map(|_| client.request_text(request()))).await;
    let failed: Vec<_> = answers.iter().filter_map(|a| a.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );
}
