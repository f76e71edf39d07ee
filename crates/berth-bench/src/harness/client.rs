//! A benchmark's HTTPS client of `berth server`: keep-alive connections
//! (HTTP/1.1 or HTTP/2, as client-go negotiates) that trust the server's CA
//! and carry its admin token, with whole-body calls and checked creates.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::ValueEnum;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde::Serialize;
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/1.1: one request at a time per connection.
    Http1,
    /// HTTP/2 (what client-go negotiates when the server offers it).
    Http2,
}

/// One keep-alive connection to the server.
#[derive(Clone)]
enum Sender {
    H1(Arc<tokio::sync::Mutex<http1::SendRequest<Full<Bytes>>>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// What every connection needs: where the server is and how to trust and address it.
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    pub(crate) authority: String,
    pub(crate) token: String,
    pub(crate) tls: Arc<rustls::ClientConfig>,
    pub(crate) protocol: Protocol,
}

pub(crate) struct Client {
    sender: Sender,
    target: Arc<Target>,
}

impl Target {
    pub(crate) async fn connect(self: &Arc<Self>) -> anyhow::Result<Client> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .with_context(|| format!("connecting to {}", self.addr))?;
        // Requests are small and latency-bound: no Nagle delay (Go's default too).
        tcp.set_nodelay(true)?;
        let server_name = ServerName::IpAddress(self.addr.ip().into());
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(server_name, tcp)
            .await
            .context("TLS handshake")?;
        let io = TokioIo::new(tls);
        let sender = match self.protocol {
            Protocol::Http1 => {
                let (send, conn) = http1::handshake(io).await.context("HTTP/1.1 handshake")?;
                tokio::spawn(conn);
                Sender::H1(Arc::new(tokio::sync::Mutex::new(send)))
            }
            Protocol::Http2 => {
                // Go's HTTP/2 transport windows (4 MiB per stream, 1 GiB per connection), so
                // a large list is not throttled by flow control more than client-go's is.
                let (send, conn) = http2::Builder::new(TokioExecutor::new())
                    .initial_stream_window_size(4 << 20)
                    .initial_connection_window_size(1 << 30)
                    .handshake(io)
                    .await
                    .context("HTTP/2 handshake (does the server offer h2?)")?;
                tokio::spawn(conn);
                Sender::H2(send)
            }
        };
        Ok(Client {
            sender,
            target: self.clone(),
        })
    }
}

impl Clone for Client {
    fn clone(&self) -> Self {
        Client {
            sender: self.sender.clone(),
            target: self.target.clone(),
        }
    }
}

impl Client {
    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
    ) -> anyhow::Result<Request<Full<Bytes>>> {
        // HTTP/2 needs the scheme and authority (pseudo-headers); HTTP/1.1 the origin form.
        let uri = match self.target.protocol {
            Protocol::Http2 => format!("https://{}{path}", self.target.authority),
            Protocol::Http1 => path.to_string(),
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, &self.target.token)
            .header(header::ACCEPT, "application/json");
        if self.target.protocol == Protocol::Http1 {
            builder = builder.header(header::HOST, &self.target.authority);
        }
        if !body.is_empty() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        Ok(builder.body(Full::new(body))?)
    }

    pub(crate) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> anyhow::Result<hyper::Response<hyper::body::Incoming>> {
        Ok(match &self.sender {
            Sender::H1(send) => {
                let mut send = send.lock().await;
                send.ready().await.context("connection closed")?;
                send.send_request(request).await?
            }
            Sender::H2(send) => {
                let mut send = send.clone();
                send.ready().await.context("connection closed")?;
                send.send_request(request).await?
            }
        })
    }

    /// One request with the whole response body read.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let response = self.send(self.request(method, path, body)?).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// One request with a body of `content_type`, the whole response read.
    pub(crate) async fn call_as(
        &self,
        method: Method,
        path: &str,
        content_type: &'static str,
        body: Bytes,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let mut request = self.request(method, path, body)?;
        request.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
        let response = self.send(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// A JSON merge patch that must succeed (200).
    pub(crate) async fn merge_patch(&self, path: &str, body: Bytes) -> anyhow::Result<()> {
        let (status, body) = self
            .call_as(Method::PATCH, path, "application/merge-patch+json", body)
            .await?;
        if status != StatusCode::OK {
            bail!(
                "PATCH {path}: {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(500)])
            );
        }
        Ok(())
    }

    /// A create that must succeed (201).
    pub(crate) async fn create(&self, path: &str, body: Bytes) -> anyhow::Result<usize> {
        let (status, response) = self.call(Method::POST, path, body).await?;
        if status != StatusCode::CREATED {
            bail!(
                "POST {path}: {status}: {}",
                String::from_utf8_lossy(&response[..response.len().min(500)])
            );
        }
        Ok(response.len())
    }
}

pub(crate) fn tls_config(
    ca_pem: &Path,
    protocol: Protocol,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem)
        .with_context(|| format!("reading {}", ca_pem.display()))?
    {
        roots.add(cert.context("CA certificate")?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = match protocol {
        Protocol::Http1 => vec![b"http/1.1".to_vec()],
        Protocol::Http2 => vec![b"h2".to_vec()],
    };
    Ok(Arc::new(config))
}
