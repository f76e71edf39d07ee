//! `GET /api/v1/namespaces/{ns}/pods/{name}/log`: the API server proxies
//! to the agent of the pod's node, as kube-apiserver proxies to the
//! kubelet (upstream `pkg/registry/core/pod/strategy.go` `LogLocation`).
//!
//! The agent listens at the node's InternalIP (else ExternalIP, else
//! Hostname) on `status.daemonEndpoints.kubeletEndpoint.Port` (10250 when
//! unset) and serves `/containerLogs/{ns}/{pod}/{container}`. The API
//! server authenticates with the node's own credential (the token it
//! issued when the node joined; see `berth_runtime::log_server`) and, like
//! kube-apiserver without `--kubelet-certificate-authority`, does not
//! verify the agent's serving certificate.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Request, header};
use axum::response::Response;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::Value;

use crate::status::ApiError;

/// The kubelet's default port.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// Log query parameters passed on to the agent.
const FORWARDED: &[&str] = &[
    "follow",
    "previous",
    "timestamps",
    "sinceSeconds",
    "sinceTime",
    "tailLines",
    "limitBytes",
];

/// Where a pod's log is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLocation {
    pub node: String,
    pub container: String,
}

/// The container whose log is asked for, and the node the pod is bound to;
/// `None` for a pod not bound yet (upstream answers with an empty log).
pub fn log_location(pod: &Value, container: Option<&str>) -> Result<Option<LogLocation>, ApiError> {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = pod.get("spec");
    let names = |kind: &str| -> Vec<&str> {
        spec.and_then(|s| s.get(kind))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str))
            .collect()
    };
    let containers = names("containers");
    let container = match container {
        Some(c) => {
            let all = [
                names("initContainers"),
                containers.clone(),
                names("ephemeralContainers"),
            ];
            if !all.iter().flatten().any(|n| *n == c) {
                return Err(ApiError::bad_request(format!(
                    "container {c} is not valid for pod {name}"
                )));
            }
            c.to_string()
        }
        None => match containers.as_slice() {
            [only] => (*only).to_string(),
            [] => {
                return Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                )));
            }
            _ => {
                let all: Vec<&str> = [
                    names("initContainers"),
                    containers,
                    names("ephemeralContainers"),
                ]
                .concat();
                return Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                )));
            }
        },
    };
    let node = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Ok(None);
    }
    Ok(Some(LogLocation {
        node: node.to_string(),
        container,
    }))
}

/// The agent's address from its Node: host and port.
pub fn agent_address(node: &Value) -> Result<(String, u16), ApiError> {
    let name = node
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let addresses: Vec<(&str, &str)> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a.get("type")?.as_str()?, a.get("address")?.as_str()?)))
        .collect();
    let host = ["InternalIP", "ExternalIP", "Hostname"]
        .iter()
        .find_map(|kind| addresses.iter().find(|(t, _)| t == kind).map(|(_, a)| *a))
        .ok_or_else(|| {
            ApiError::internal(format!(
                "no preferred addresses found; known addresses: [] (node {name})"
            ))
        })?;
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0)
        .unwrap_or(DEFAULT_KUBELET_PORT);
    Ok((host.to_string(), port))
}

/// The agent's path and query for a log request.
pub fn agent_path(namespace: &str, pod: &str, container: &str, raw_query: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(raw_query.as_bytes()) {
        if FORWARDED.contains(&&*k) {
            query.append_pair(&k, &v);
        }
    }
    let query = query.finish();
    let path = format!("/containerLogs/{namespace}/{pod}/{container}");
    if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    }
}

/// GETs `path` from the agent at `host:port` over HTTPS with `token`, and
/// streams its answer back.
pub async fn fetch(host: &str, port: u16, path: &str, token: &str) -> Result<Response, ApiError> {
    let url = format!("https://{}:{port}{path}", bracket(host));
    let fail = |e: &dyn std::fmt::Display| ApiError::internal(format!("Get {url:?}: {e}"));
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| fail(&e))?;
    let server_name = match host.parse::<IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_string()).map_err(|e| fail(&e))?,
    };
    let tls = tokio_rustls::TlsConnector::from(Arc::new(client_config().map_err(|e| fail(&e))?))
        .connect(server_name, tcp)
        .await
        .map_err(|e| fail(&e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| fail(&e))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "agent log connection");
        }
    });
    let request = Request::get(path)
        .header(header::HOST, format!("{}:{port}", bracket(host)))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(http_body_util::Empty::<axum::body::Bytes>::new())
        .map_err(|e| fail(&e))?;
    let response = sender.send_request(request).await.map_err(|e| fail(&e))?;
    let status = response.status();
    if !status.is_success() {
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default();
        return Err(agent_error(status, &body));
    }
    let mut out = Response::new(Body::new(response.into_body()));
    out.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(out)
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyServerCert(provider.clone()));
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// Accepts the agent's certificate whatever it is (kube-apiserver without
/// `--kubelet-certificate-authority`), still checking the handshake's
/// signatures so the connection is to the certificate's key holder.
#[derive(Debug)]
struct AnyServerCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// An agent's answer that is not a success, as the API error it becomes:
/// the agent's code, the reason of that code, and the agent's words as
/// the message (upstream's `GenericHttpResponseChecker`).
pub fn agent_error(status: axum::http::StatusCode, body: &str) -> ApiError {
    let reason = match status.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        _ => "InternalError",
    };
    let message = match body.trim() {
        "" => format!("the agent answered {status}"),
        words => words.to_string(),
    };
    ApiError::new(status.as_u16(), reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_container, make_pod};
    use serde_json::json;

    /// Pod `web` with init container `init`, a container of each name, and
    /// bound to `node` if there is one.
    fn web_pod(containers: &[&str], node: Option<&str>) -> Value {
        let named = |name: &str| make_container().name(name).obj();
        let pod = make_pod()
            .name("web")
            .init_containers(vec![named("init")])
            .containers(containers.iter().map(|c| named(c)).collect());
        match node {
            Some(node) => pod.node(node),
            None => pod,
        }
        .json()
    }

    #[test]
    fn the_container_is_chosen_as_upstream_does() {
        struct Case {
            pod: Value,
            container: Option<&'static str>,
            /// The container chosen, or the 400's message.
            want: Result<Option<&'static str>, &'static str>,
        }
        let cases = [
            Case {
                pod: web_pod(&["app"], Some("n1")),
                container: None,
                want: Ok(Some("app")),
            },
            Case {
                pod: web_pod(&["app", "side"], Some("n1")),
                container: Some("side"),
                want: Ok(Some("side")),
            },
            Case {
                pod: web_pod(&["app"], Some("n1")),
                container: Some("init"),
                want: Ok(Some("init")),
            },
            Case {
                pod: web_pod(&["app", "side"], Some("n1")),
                container: None,
                want: Err(
                    "a container name must be specified for pod web, choose one of: [init app side]",
                ),
            },
            Case {
                pod: web_pod(&[], Some("n1")),
                container: None,
                want: Err("a container name must be specified for pod web"),
            },
            Case {
                pod: web_pod(&["app"], Some("n1")),
                container: Some("nope"),
                want: Err("container nope is not valid for pod web"),
            },
            Case {
                pod: web_pod(&["app"], None),
                container: None,
                want: Ok(None),
            },
        ];
        for Case {
            pod,
            container,
            want,
        } in cases
        {
            let got = log_location(&pod, container);
            match want {
                Ok(want) => {
                    let got = got.map(|l| l.map(|l| l.container)).map_err(|e| e.message);
                    assert_eq!(got, Ok(want.map(str::to_string)), "{container:?}");
                }
                Err(message) => {
                    let err = got.err().map(|e| (e.code, e.message));
                    assert_eq!(err, Some((400, message.to_string())), "{container:?}");
                }
            }
        }
    }

    #[test]
    fn the_agent_is_found_at_the_internal_ip_and_kubelet_port() {
        // Raw JSON: one case's port is null, which a typed Node cannot hold.
        let node = |addresses: Value, port: Value| json!({"metadata": {"name": "n1"}, "status": {"addresses": addresses, "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}});
        let cases = [
            (
                node(
                    json!([{"type": "Hostname", "address": "h"}, {"type": "InternalIP", "address": "10.0.0.1"}]),
                    json!(10251),
                ),
                Some(("10.0.0.1", 10251)),
            ),
            (
                node(json!([{"type": "Hostname", "address": "h"}]), json!(0)),
                Some(("h", 10250)),
            ),
            (
                node(
                    json!([{"type": "ExternalIP", "address": "1.2.3.4"}]),
                    Value::Null,
                ),
                Some(("1.2.3.4", 10250)),
            ),
            (node(json!([]), json!(10250)), None),
        ];
        for (node, want) in cases {
            let got = agent_address(&node).ok();
            assert_eq!(got, want.map(|(h, p)| (h.to_string(), p)), "{node}");
        }
    }

    #[test]
    fn only_log_options_are_passed_on() {
        assert_eq!(
            agent_path(
                "ns",
                "web",
                "app",
                "container=app&follow=true&tailLines=10&pretty=1"
            ),
            "/containerLogs/ns/web/app?follow=true&tailLines=10"
        );
        assert_eq!(
            agent_path("ns", "web", "app", ""),
            "/containerLogs/ns/web/app"
        );
    }
}
