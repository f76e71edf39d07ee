//! The kube client every berth process makes from a kubeconfig: kube-rs's
//! layers (base URI, credentials, extra headers, retries of 429, 503 and
//! 504) over a hyper client that speaks HTTP/2 when the server offers it,
//! as client-go's transport does. kube-rs's own `Client::try_from(Config)`
//! speaks HTTP/1.1 only, one connection per request in flight: a fleet of
//! simulated nodes then pays a system call on each side for every request
//! and every response. Over HTTP/2 one connection carries them all, and
//! the frames of many requests share a read and a write.
//!
//! A connection is checked as client-go checks it (`ReadIdleTimeout`,
//! `PingTimeout`): after 30 s without a frame it is pinged, and closed when
//! the ping goes unanswered for 15 s, so a dead server is noticed without a
//! deadline on the long-running requests (watches) it carries.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use tower::BoxError;
use tower::retry::RetryLayer;

/// client-go's HTTP/2 health check: a ping after this long without a frame.
const HTTP2_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// ... and the connection closed when the ping is unanswered this long.
const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// Go's HTTP/2 transport's flow-control windows (`transportDefaultStreamFlow`,
/// `transportDefaultConnFlow`): a watch its reader has stopped reading
/// holds at most its stream's window, never the connection's, so the
/// other requests on the connection go on.
const HTTP2_STREAM_WINDOW: u32 = 4 << 20;
/// See [`HTTP2_STREAM_WINDOW`].
const HTTP2_CONNECTION_WINDOW: u32 = 1 << 30;

/// A client of the API server `config` names, over HTTP/2 when the server
/// negotiates it (ALPN), HTTP/1.1 otherwise.
pub fn kube_client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(config.connect_timeout);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp);
    let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .http2_keep_alive_interval(Some(HTTP2_READ_IDLE_TIMEOUT))
        .http2_keep_alive_timeout(HTTP2_PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .http2_initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .http2_initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
        .build(https);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(http);
    Ok(kube::Client::new(service, config.default_namespace))
}
