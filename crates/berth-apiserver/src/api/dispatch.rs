//! The one entry point, [`ApiServer::handle`]: the public paths (health,
//! version), authentication, the non-resource paths (metrics, the node
//! credential, OpenAPI, discovery), then for a resource request its type,
//! authorization, the body, and the verb it runs.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Request, header};
use axum::response::Response;
use serde_json::json;

use super::query::Query;
use super::response::{error_response, json_response};
use super::scope::Scope;
use super::server::{ApiServer, NODE_CREDENTIAL_PATH};
use crate::auth::{Authorized, authorize};
use crate::request_info::{self, RequestInfo};
use crate::resources::{self, PODS};
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// A request's parts the dispatcher reads.
struct Incoming<'a> {
    method: &'a Method,
    path: &'a str,
    raw_query: &'a str,
    headers: &'a HeaderMap,
    info: &'a RequestInfo,
}

impl ApiServer {
    /// Serves one HTTP request.
    pub async fn handle(self: Arc<Self>, request: Request<Body>) -> Response {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_string();
        let query = parts.uri.query().unwrap_or("").to_string();
        let started = std::time::Instant::now();
        let info = request_info::parse(parts.method.as_str(), &path, &query);
        let incoming = Incoming {
            method: &parts.method,
            path: &path,
            raw_query: &query,
            headers: &parts.headers,
            info: &info,
        };
        let mut served = None;
        let response = crate::warnings::collect(async {
            // Boxed: the verbs' state machines are tens of kilobytes, and a
            // request's future is moved through the layers before it runs.
            match Box::pin(self.serve(&incoming, body, &mut served)).await {
                Ok(response) => response,
                Err(err) => error_response(&err),
            }
        })
        .await;
        let response =
            crate::protobuf::negotiate_response(&parts.headers, info.verb == "watch", response)
                .await;
        if let Some(served) = served {
            let content_type = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            crate::metrics::observe(
                &info,
                served,
                content_type,
                response.status().as_u16(),
                started.elapsed(),
            );
        }
        response
    }

    /// Serves a request; `served` is set once it is routed to a served
    /// resource and authorized (what the request metrics count).
    async fn serve(
        self: &Arc<Self>,
        incoming: &Incoming<'_>,
        body: Body,
        served: &mut Option<crate::metrics::Served>,
    ) -> ApiResult<Response> {
        let Incoming {
            method,
            path,
            raw_query,
            headers,
            info,
        } = *incoming;
        // Health and version are public, as upstream's default RBAC makes them.
        match path {
            "/healthz" | "/livez" | "/readyz" => return Ok(crate::health::check(self, path).await),
            "/version" => {
                let v = &self.config.version;
                return Ok(json_response(
                    200,
                    &json!({
                        "major": v.major, "minor": v.minor, "gitVersion": v.git_version,
                        "gitCommit": "", "gitTreeState": "clean", "buildDate": "",
                        "goVersion": "", "compiler": "rustc", "platform": "linux/amd64",
                    }),
                ));
            }
            // The live page's static files: no data in them.
            path if path.starts_with("/ui") && !path.starts_with(super::ui::API_PREFIX) => {
                if let Some(asset) = super::ui::asset(path) {
                    return Ok(asset);
                }
            }
            _ => {}
        }
        // A printed login link's code is its own credential.
        if path == super::ui::LOGIN_PATH {
            return self.ui_login(method, body).await;
        }
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let authenticated = self.auth.authenticate(authorization);
        crate::metrics::authentication_attempt(match &authenticated {
            Ok(_) => crate::metrics::AuthenticationResult::Success,
            Err(e) if e.code == 401 => crate::metrics::AuthenticationResult::Failure,
            Err(_) => crate::metrics::AuthenticationResult::Error,
        });
        let user = authenticated?;
        // Long-running requests (watches, logs) hold no seat, as upstream's
        // `BasicLongRunningRequestCheck` exempts them.
        let _seat = if info.verb == "watch" || info.subresource == "log" {
            None
        } else {
            let class = crate::flow_control::classify(&user, info);
            Some(self.flow_control.admit(&class).await?)
        };
        if path == "/metrics" {
            if !user.in_group(crate::auth::GROUP_MASTERS) {
                return Err(ApiError::forbidden_raw(format!(
                    "forbidden: User {:?} cannot get path \"/metrics\"",
                    user.name
                )));
            }
            let mut response = Response::new(Body::from(crate::metrics::render()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            return Ok(response);
        }
        if path.starts_with(super::ui::API_PREFIX) {
            return self.ui_api(path, &user).await;
        }
        if path == NODE_CREDENTIAL_PATH {
            return self.issue_node_credential(method, &user, body).await;
        }
        if path.starts_with("/openapi/") {
            return crate::openapi::serve(path, raw_query, headers);
        }
        if !info.is_resource_request {
            return crate::discovery::serve(path, headers, &user);
        }
        // The resource metrics API: not stored, answered from the agents.
        if info.api_group == crate::resource_metrics::GROUP {
            let authorized = authorize(&user, info);
            crate::metrics::authorization_attempt(authorized.is_ok());
            // Only an unconditional yes: no figures are a node's own pod's.
            if let Authorized::IfPodBoundTo(_) = authorized? {
                return Err(ApiError::forbidden(
                    &user.name,
                    &info.verb,
                    &info.api_group,
                    &info.resource,
                    "",
                    &info.namespace,
                    &info.name,
                ));
            }
            return self.resource_metrics(info, raw_query, path).await;
        }
        let Some(rt) = resources::lookup(&info.api_group, &info.api_version, &info.resource) else {
            return Err(ApiError::path_not_found(path));
        };
        let subresource = match info.subresource.as_str() {
            "" => "",
            sub => {
                rt.subresource(sub)
                    .ok_or_else(|| ApiError::path_not_found(path))?
                    .name
            }
        };
        let authorized = authorize(&user, info);
        crate::metrics::authorization_attempt(authorized.is_ok());
        if let Authorized::IfPodBoundTo(node) = authorized? {
            let pod = self
                .registry
                .find(&PODS, &info.namespace, &info.name)
                .await?;
            crate::auth::require_pod_bound(&user, info, &node, pod.as_ref().map(|(p, _)| p))?;
        }
        *served = Some(crate::metrics::Served {
            resource: rt,
            subresource,
        });
        let limit = self.config.max_request_body_bytes;
        let body = axum::body::to_bytes(body, limit)
            .await
            .map_err(|_| ApiError::too_large(limit))?;
        // Another version of a stored resource: requests are converted to
        // the stored form, responses back (watches convert per event).
        let (stored, external, body) = match rt.stored_as {
            Some(stored) => {
                let body = crate::conversion::request_to_stored(rt, info, headers, &body)?;
                (stored, Some(rt), body)
            }
            None => (rt, None, body),
        };
        let scope = Scope {
            rt: stored,
            external,
            namespace: if stored.namespaced {
                info.namespace.as_str()
            } else {
                ""
            },
            name: info.name.as_str(),
            subresource: info.subresource.as_str(),
            user: &user,
            query: Query::parse(raw_query),
            raw_query,
            headers,
        };
        match external {
            Some(external) => {
                let response = Box::pin(self.run_verb(&scope, &info.verb, &body)).await?;
                crate::conversion::response_from_stored(external, response).await
            }
            None => self.run_verb(&scope, &info.verb, &body).await,
        }
    }

    /// Runs the verb on a resource type in its stored form.
    async fn run_verb(
        self: &Arc<Self>,
        scope: &Scope<'_>,
        verb: &str,
        body: &Bytes,
    ) -> ApiResult<Response> {
        let rt = scope.rt;
        // Types that are not stored (the reviews) are only created.
        if !rt.strategy.is_stored() && (verb, scope.subresource) != ("create", "") {
            return Err(ApiError::method_not_allowed(verb, rt.plural));
        }
        match (verb, scope.subresource) {
            ("get", "" | "status") => self.get(scope).await,
            ("get", "log") if rt == &PODS => self.pod_log(scope).await,
            ("get", "scheduling") if rt == &PODS => self.pod_scheduling(scope).await,
            ("list", _) => self.list(scope).await,
            ("watch", _) => self.watch(scope).await,
            // Namespaced types are created in a namespace: upstream serves
            // no POST on the all-namespaces path (405).
            ("create", "") if rt.namespaced && scope.namespace.is_empty() => {
                Err(ApiError::method_not_allowed("POST", rt.plural))
            }
            ("create", "") => self.create(scope, body).await,
            ("create", "binding") => self.bind(scope, body).await,
            ("create", "eviction") => self.evict(scope, body).await,
            ("get", "scale") => self.get_scale(scope).await,
            ("update", "scale") => self.update_scale(scope, body).await,
            ("patch", "scale") => self.patch_scale(scope, body).await,
            ("update", _) => self.update(scope, body).await,
            ("patch", _) => self.patch(scope, body).await,
            ("delete", "") => self.delete(scope, body).await,
            ("deletecollection", "") => self.delete_collection(scope, body).await,
            _ => Err(ApiError::method_not_allowed(verb, rt.plural)),
        }
    }
}
