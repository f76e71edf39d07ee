//! Protobuf on the wire (`application/vnd.kubernetes.protobuf`), chosen as kube-apiserver
//! chooses it: a request body by its Content-Type, a response by the request's Accept
//! header. The API itself works in JSON throughout; this module converts at the edge with
//! berth-proto: a request body before it is read ([`decode_request_body`]), a response after
//! it is written ([`negotiate_response`]): the whole body, or a watch stream line by line
//! into length-prefixed frames.
//!
//! A response whose JSON has no protobuf form (a Table, discovery documents, OpenAPI, a
//! kind outside berth-proto's schema) stays JSON, as clients that ask for protobuf also
//! accept JSON (client-go sends `application/vnd.kubernetes.protobuf, */*`).

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;

use crate::status::ApiError;

/// The JSON object of a protobuf request body (`k8s\x00` + runtime.Unknown). Go clients
/// write every non-pointer field, zero or not; the zeros Go's JSON leaves out are left out
/// here too, so the object is the one a JSON client would have sent.
pub fn decode_request_body(body: &[u8]) -> Result<Value, ApiError> {
    berth_proto::decode_object_with(body, berth_proto::Zeros::AsGoJson)
        .map_err(|error| ApiError::bad_request(format!("error decoding request body: {error}")))
}

/// Whether the client prefers protobuf: of the media ranges of its Accept header that berth
/// serves, the one with the highest quality (the first among equals) is protobuf.
pub fn prefers_protobuf(headers: &HeaderMap) -> bool {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let mut best: Option<(f32, bool)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let mut quality = 1.0f32;
        let mut as_other_kind = false;
        for parameter in parts {
            match parameter.split_once('=') {
                Some(("q", value)) => quality = value.trim().parse().unwrap_or(0.0),
                // `as=Table` and the like: a server-side transformation only JSON carries.
                Some(("as", _)) => as_other_kind = true,
                _ => {}
            }
        }
        let protobuf = match media {
            berth_proto::CONTENT_TYPE if !as_other_kind => true,
            "application/json" | "application/yaml" | "application/*" | "*/*" => false,
            _ => continue,
        };
        if quality > 0.0 && best.is_none_or(|(best_quality, _)| quality > best_quality) {
            best = Some((quality, protobuf));
        }
    }
    best.is_some_and(|(_, protobuf)| protobuf)
}

/// The response in protobuf when the client prefers it and its JSON has a protobuf form;
/// otherwise the response as it is.
pub async fn negotiate_response(request: &HeaderMap, watch: bool, response: Response) -> Response {
    let is_json =
        content_type(&response).is_some_and(|media| media.starts_with("application/json"));
    if !is_json || !prefers_protobuf(request) {
        return response;
    }
    if watch && response.status() == StatusCode::OK {
        return watch_frames(response);
    }
    let (mut parts, body) = response.into_parts();
    let Ok(json) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let protobuf = serde_json::from_slice::<Value>(&json)
        .ok()
        .and_then(|object| berth_proto::encode_object(&object).ok());
    match protobuf {
        Some(bytes) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(berth_proto::CONTENT_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(bytes))
        }
        None => Response::from_parts(parts, Body::from(json)),
    }
}

fn content_type(response: &Response) -> Option<&str> {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
}

/// A JSON watch stream (one `{"type", "object"}` line per event) as protobuf frames. A line
/// that does not convert ends the stream with an ERROR event, as a watch that fails does.
fn watch_frames(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let mut pending: Vec<u8> = Vec::new();
    let mut failed = false;
    let frames = body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        let mut out = Vec::new();
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if failed {
                continue;
            }
            if let Err(error) = event_frame(&mut out, &line) {
                failed = true;
                let status = ApiError::internal(error).to_status();
                // A Status always has a protobuf form.
                let _ = berth_proto::watch::encode_event_into(&mut out, "ERROR", &status);
            }
        }
        Ok::<Bytes, std::io::Error>(Bytes::from(out))
    });
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(berth_proto::WATCH_CONTENT_TYPE),
    );
    Response::from_parts(parts, Body::from_stream(frames))
}

fn event_frame(out: &mut Vec<u8>, line: &[u8]) -> Result<(), String> {
    let event: Value = serde_json::from_slice(line).map_err(|error| error.to_string())?;
    let event_type = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let object = event
        .get("object")
        .ok_or("a watch event without an object")?;
    berth_proto::watch::encode_event_into(out, event_type, object)
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_is_chosen_as_the_accept_header_prefers() {
        struct Case {
            name: &'static str,
            accept: Option<&'static str>,
            want: bool,
        }
        let cases = [
            Case {
                name: "no Accept",
                accept: None,
                want: false,
            },
            Case {
                name: "client-go's protobuf default",
                accept: Some("application/vnd.kubernetes.protobuf, */*"),
                want: true,
            },
            Case {
                name: "protobuf alone",
                accept: Some("application/vnd.kubernetes.protobuf"),
                want: true,
            },
            Case {
                name: "JSON first",
                accept: Some("application/json, application/vnd.kubernetes.protobuf"),
                want: false,
            },
            Case {
                name: "JSON preferred by quality",
                accept: Some("application/vnd.kubernetes.protobuf;q=0.5, application/json"),
                want: false,
            },
            Case {
                name: "protobuf preferred by quality",
                accept: Some("application/json;q=0.9, application/vnd.kubernetes.protobuf"),
                want: true,
            },
            Case {
                name: "a Table as protobuf is not served",
                accept: Some(
                    "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
                ),
                want: false,
            },
            Case {
                name: "an unknown type first",
                accept: Some("text/html, application/vnd.kubernetes.protobuf"),
                want: true,
            },
            Case {
                name: "refused by q=0",
                accept: Some("application/vnd.kubernetes.protobuf;q=0, */*"),
                want: false,
            },
        ];
        for case in cases {
            let mut headers = HeaderMap::new();
            if let Some(accept) = case.accept {
                headers.insert(header::ACCEPT, HeaderValue::from_static(accept));
            }
            assert_eq!(prefers_protobuf(&headers), case.want, "{}", case.name);
        }
    }
}

#[cfg(test)]
mod api_tests {
    use std::sync::Arc;

    use axum::http::Request;
    use berth_core::clock::Clock;
    use berth_store::{AnyStore, MemStore};
    use serde_json::json;
    use tower::ServiceExt;

    use super::*;
    use crate::api::{ApiConfig, ApiServer};
    use crate::auth::User;

    const TOKEN: &str = "admin";
    const CLIENT_GO_ACCEPT: &str = "application/vnd.kubernetes.protobuf, */*";

    async fn server() -> Arc<ApiServer> {
        let server = ApiServer::new(
            AnyStore::Memory(MemStore::new()),
            Clock::real(),
            ApiConfig::default(),
        )
        .await
        .expect("server starts");
        server.auth.add_token(TOKEN, User::admin());
        for _ in 0..200 {
            if server.is_ready().await {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        server
    }

    async fn call(
        server: &Arc<ApiServer>,
        method: &str,
        uri: &str,
        body: Option<&Value>,
    ) -> Response {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::ACCEPT, CLIENT_GO_ACCEPT);
        let body = match body {
            Some(object) => {
                request = request.header(header::CONTENT_TYPE, berth_proto::CONTENT_TYPE);
                Body::from(berth_proto::encode_object(object).expect("encodes"))
            }
            None => Body::empty(),
        };
        crate::server::router(server.clone())
            .oneshot(request.body(body).expect("request"))
            .await
            .expect("router answers")
    }

    async fn protobuf_body(response: Response) -> Value {
        assert_eq!(content_type(&response), Some(berth_proto::CONTENT_TYPE));
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        berth_proto::decode_object(&bytes).expect("a protobuf object")
    }

    /// What kubectl and client-go do by default: protobuf bodies (every non-pointer field
    /// written, zero or not) and `Accept: application/vnd.kubernetes.protobuf, */*`.
    #[tokio::test]
    async fn a_protobuf_client_creates_reads_lists_and_gets_errors_in_protobuf() {
        let server = server().await;
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "generateName": "", "namespace": "", "selfLink": "", "uid": "",
                         "resourceVersion": "", "generation": 0},
            "spec": {}, "status": {"phase": ""}
        });
        let created = call(&server, "POST", "/api/v1/namespaces", Some(&namespace)).await;
        assert_eq!(created.status(), StatusCode::CREATED);
        let created = protobuf_body(created).await;
        assert_eq!(created["metadata"]["name"], "team-a");
        assert!(
            created["metadata"]["uid"]
                .as_str()
                .is_some_and(|uid| !uid.is_empty()),
            "{created}"
        );

        let got =
            protobuf_body(call(&server, "GET", "/api/v1/namespaces/team-a", None).await).await;
        assert_eq!(got["kind"], "Namespace");
        assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);

        let list = protobuf_body(call(&server, "GET", "/api/v1/namespaces", None).await).await;
        assert_eq!(list["kind"], "NamespaceList");
        let names: Vec<&str> = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item["metadata"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert!(names.contains(&"team-a"), "{names:?}");

        let missing = call(&server, "GET", "/api/v1/namespaces/nope", None).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let status = protobuf_body(missing).await;
        assert_eq!(
            (status["kind"].as_str(), status["reason"].as_str()),
            (Some("Status"), Some("NotFound"))
        );
    }

    #[tokio::test]
    async fn a_protobuf_watch_is_length_prefixed_watch_events() {
        let server = server().await;
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}});
        let created = call(&server, "POST", "/api/v1/nodes", Some(&node)).await;
        assert_eq!(created.status(), StatusCode::CREATED);
        let watch = call(
            &server,
            "GET",
            "/api/v1/nodes?watch=true&resourceVersion=0",
            None,
        )
        .await;
        assert_eq!(content_type(&watch), Some(berth_proto::WATCH_CONTENT_TYPE));
        let mut chunks = watch.into_body().into_data_stream();
        let mut received = Vec::new();
        let frame = loop {
            if let Ok(Some((frame, _))) = berth_proto::watch::split_frame(&received, 1 << 20) {
                break frame.to_vec();
            }
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), chunks.next())
                .await
                .ok()
                .flatten()
                .and_then(Result::ok)
                .expect("a watch event arrives");
            received.extend_from_slice(&chunk);
        };
        let (event_type, object) = berth_proto::watch::decode_event(&frame).expect("a watch event");
        assert_eq!(event_type, "ADDED");
        assert_eq!(
            (object["kind"].as_str(), object["metadata"]["name"].as_str()),
            (Some("Node"), Some("worker-1"))
        );
    }
}
