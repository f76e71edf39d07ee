//! The REST API over the store: one entry point, [`ApiServer::handle`],
//! that authenticates, reads the request the way upstream does
//! ([`crate::request_info`]), authorizes, and runs the verb on the resource
//! type's store and cache.
//!
//! Reads of single objects go to the store; lists without `limit` and all
//! watches are served from the watch cache after it has caught up with the
//! store (a consistent read); paginated lists read the store at one
//! revision. Writes go to the store with compare-and-swap on the object's
//! revision, so an update from a stale `resourceVersion` is a 409.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::Response;
use berth_core::clock::Clock;
use berth_store::{AnyStore, KeyValue, ListOptions, Store, StoreError};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::auth::{Authenticator, Authorized, User, authorize};
use crate::body::{BodyLimits, Decoded, Format};
use crate::cache::{Cached, Change, ChangeType, ResourceCache};
use crate::field_validation::Directive;
use crate::objects::{
    self, StoredJson, for_storage, format_time, name_of, prepare_for_create, prepare_for_update,
    resource_version_of, set_resource_version,
};
use crate::request_info::{self, RequestInfo};
use crate::resources::{self, NAMESPACES, PODS, RESOURCES, ResourceType};
use crate::status::{ApiError, success_status};
use crate::strategy;

/// Bodies above this are refused with 413, as kube-apiserver's
/// `MaxRequestBodyBytes` (3 MiB) refuses them (the default of
/// `--max-request-body-bytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Where a node agent trades the join token for its node credential.
pub const NODE_CREDENTIAL_PATH: &str = "/berth/v1/node-credential";

/// Namespaces that exist from the start and may not be deleted.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Server settings that change API behaviour.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub strategy: strategy::StrategyConfig,
    /// The watch caches' history and slow-watcher limits.
    pub watch_cache: crate::cache::CacheLimits,
    /// Concurrent watches per client and in total.
    pub watches: crate::watch_limits::WatchLimits,
    pub version: VersionInfo,
    /// Largest request body read (413 past it).
    pub max_request_body_bytes: usize,
    /// How request bodies are decoded (nesting depth).
    pub body: BodyLimits,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            strategy: strategy::StrategyConfig::default(),
            watch_cache: crate::cache::CacheLimits::default(),
            watches: crate::watch_limits::WatchLimits::default(),
            version: VersionInfo::default(),
            max_request_body_bytes: MAX_BODY_BYTES,
            body: BodyLimits::default(),
        }
    }
}

/// What `/version` reports.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    pub major: String,
    pub minor: String,
    pub git_version: String,
}

impl Default for VersionInfo {
    fn default() -> Self {
        VersionInfo {
            major: "1".into(),
            minor: "37".into(),
            git_version: format!("v1.37.0-berth.{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// A resource request, once authenticated and authorized.
struct StoredRequest<'a> {
    method: &'a Method,
    raw_query: &'a str,
    headers: &'a HeaderMap,
    body: Bytes,
    info: &'a RequestInfo,
    user: &'a User,
}

/// The API server's state.
pub struct ApiServer {
    pub store: AnyStore,
    caches: Vec<Arc<ResourceCache>>,
    pub clock: Clock,
    pub auth: Authenticator,
    pub config: ApiConfig,
    /// The watches open now (see [`crate::watch_limits`]).
    pub watches: Arc<crate::watch_limits::WatchCounter>,
    /// The watch caches' shared history budget.
    pub history_budget: Arc<crate::cache::HistoryBudget>,
    /// The revision of the last namespace deletion this server made. With the embedded store
    /// this server makes every write, so a namespace in the watch cache once the cache has
    /// reached this revision still exists for any request that started after that deletion
    /// answered (see [`ApiServer::ensure_namespace`]).
    namespace_deleted_at: std::sync::atomic::AtomicI64,
}

type ApiResult<T> = Result<T, ApiError>;

fn store_error(rt: &ResourceType, name: &str, err: StoreError) -> ApiError {
    match err {
        StoreError::NotFound { .. } => ApiError::not_found(rt.group, rt.plural, name),
        StoreError::AlreadyExists { .. } => ApiError::already_exists(rt.group, rt.plural, name),
        StoreError::Conflict { .. } => ApiError::modified(rt.group, rt.plural, name),
        StoreError::Gone {
            requested,
            compacted,
        } => ApiError::expired(requested, compacted.unwrap_or(0)),
        StoreError::ValueTooLarge { .. } => ApiError::object_too_large(),
        StoreError::InvalidKey { .. } | StoreError::InvalidArgument(_) => {
            ApiError::bad_request(err.to_string())
        }
        StoreError::InvalidContinue(why) => {
            ApiError::bad_request(format!("invalid continue token: {why}"))
        }
        other => ApiError::internal(other),
    }
}

/// The query parameters the API reads.
#[derive(Debug, Default)]
struct Query {
    params: BTreeMap<String, String>,
}

impl Query {
    fn parse(raw: &str) -> Query {
        Query {
            params: form_urlencoded::parse(raw.as_bytes())
                .into_owned()
                .collect(),
        }
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }
    fn flag(&self, name: &str) -> bool {
        matches!(
            self.get(name),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }
    fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!("invalid value {v:?} for query parameter {name}"))
            }),
        }
    }
    /// The parameters that choose what a list or watch reads.
    fn list_params(&self, watch: bool) -> crate::list_options::ListParams<'_> {
        crate::list_options::ListParams {
            watch,
            resource_version: self.get("resourceVersion"),
            resource_version_match: self.get("resourceVersionMatch"),
            continue_token: self.get("continue"),
            send_initial_events: self.get("sendInitialEvents"),
        }
    }

    /// `fieldValidation` (see [`Directive`]).
    fn field_validation(&self) -> ApiResult<Directive> {
        Directive::parse(self.get("fieldValidation"))
    }

    fn dry_run(&self) -> ApiResult<bool> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid dry run value: {other}. The only accepted value is \"All\""
            ))),
        }
    }
}

fn json_response(code: u16, body: &Value) -> Response {
    bytes_response(code, objects::to_json_bytes(body))
}

fn bytes_response(code: u16, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub fn error_response(err: &ApiError) -> Response {
    let mut response = json_response(err.code, &err.to_status());
    if let Some(seconds) = err.retry_after_seconds() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Reads a request body as JSON or YAML into an object, under `limits`,
/// off the runtime's workers when it is big (see [`crate::body`]).
async fn parse_body(headers: &HeaderMap, body: &Bytes, limits: BodyLimits) -> ApiResult<Decoded> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media == berth_proto::CONTENT_TYPE {
        let value = crate::protobuf::decode_request_body(body)?;
        return Ok(Decoded {
            value,
            duplicates: Vec::new(),
        });
    }
    let format =
        Format::of_media_type(media).ok_or_else(|| ApiError::unsupported_media_type(media))?;
    let decoded = crate::body::decode_off_worker(body.clone(), move |bytes| {
        crate::body::decode(format, bytes, limits)
    })
    .await
    .map_err(|e| match format {
        Format::Json => ApiError::bad_request(format!("error decoding request body: {e}")),
        Format::Yaml => ApiError::bad_request(format!("error decoding YAML: {e}")),
    })?;
    if !decoded.value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(decoded)
}

/// `fieldValidation` for a created or updated object: its duplicate
/// fields and the fields its type lacks.
fn validate_fields(directive: Directive, rt: &ResourceType, decoded: &Decoded) -> ApiResult<()> {
    if !directive.checks() {
        return Ok(());
    }
    let mut problems = decoded.duplicates.clone();
    problems.extend(strategy::unknown_fields(rt, &decoded.value));
    directive.enforce_on_object(rt.kind, rt.version, &problems)
}

/// Checks an object's `kind` and `apiVersion` against what the URL serves.
fn check_kind(value: &Value, kind: &str, api_version: &str) -> ApiResult<()> {
    let got_kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let got_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if (!got_kind.is_empty() && got_kind != kind)
        || (!got_version.is_empty() && got_version != api_version)
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({got_version}) does not match the expected API version ({api_version})"
        ))
        .with_kind_mismatch(got_kind, kind));
    }
    Ok(())
}

trait KindMismatch {
    fn with_kind_mismatch(self, got: &str, want: &str) -> Self;
}

impl KindMismatch for ApiError {
    fn with_kind_mismatch(mut self, got: &str, want: &str) -> Self {
        if !got.is_empty() && got != want {
            self.message =
                format!("the kind in the data ({got}) does not match the expected kind ({want})");
        }
        self
    }
}

fn random_u32() -> u32 {
    let mut buf = [0u8; 4];
    // The OS random source failing is not worth failing a request over: a
    // generated name then only risks a collision, which create reports.
    let _ = getrandom::fill(&mut buf);
    u32::from_le_bytes(buf)
}

impl ApiServer {
    /// A server over `store`; spawns the watch caches and creates the
    /// system namespaces. Call from within a tokio runtime.
    pub async fn new(
        store: AnyStore,
        clock: Clock,
        config: ApiConfig,
    ) -> Result<Arc<ApiServer>, ApiError> {
        let budget = crate::cache::HistoryBudget::new(config.watch_cache.history_bytes);
        let caches = RESOURCES
            .iter()
            .filter(|rt| rt.stored_as.is_none())
            .map(|rt| {
                ResourceCache::with_limits(
                    rt,
                    &config.watch_cache,
                    budget.clone(),
                    strategy::selectable_fields,
                )
            })
            .collect::<Vec<_>>();
        crate::cache::spawn(caches.clone(), store.clone());
        let server = Arc::new(ApiServer {
            store,
            caches,
            clock,
            auth: Authenticator::new(),
            watches: crate::watch_limits::WatchCounter::new(config.watches),
            history_budget: budget,
            config,
            namespace_deleted_at: std::sync::atomic::AtomicI64::new(0),
        });
        for ns in SYSTEM_NAMESPACES {
            let key = NAMESPACES.key("", ns);
            if server
                .store
                .get(&key)
                .await
                .map_err(ApiError::internal)?
                .is_none()
            {
                let mut object = json!({"metadata": {"name": ns}});
                server.prepare_new(&NAMESPACES, &mut object, "")?;
                let admin = User::admin();
                let ctx = strategy::Context {
                    user: &admin,
                    now: server.now(),
                    config: &server.config.strategy,
                };
                strategy::on_create(&NAMESPACES, &mut object, &ctx)?;
                match server.store.create(&key, for_storage(&object)).await {
                    Ok(_) | Err(StoreError::AlreadyExists { .. }) => {}
                    Err(e) => return Err(ApiError::internal(e)),
                }
            }
        }
        Ok(server)
    }

    fn cache(&self, rt: &ResourceType) -> ApiResult<&Arc<ResourceCache>> {
        let rt = rt.stored_as.unwrap_or(rt);
        self.caches
            .iter()
            .find(|c| std::ptr::eq(c.resource, rt))
            .ok_or_else(|| ApiError::internal(format!("no cache for {}", rt.plural)))
    }

    /// Whether every watch cache has loaded.
    pub async fn is_ready(&self) -> bool {
        for cache in &self.caches {
            if !cache.is_ready().await {
                return false;
            }
        }
        true
    }

    /// Serves one HTTP request.
    pub async fn handle(self: Arc<Self>, request: Request<Body>) -> Response {
        let (parts, body) = request.into_parts();
        let method = parts.method.clone();
        let path = parts.uri.path().to_string();
        let query = parts.uri.query().unwrap_or("").to_string();
        let started = std::time::Instant::now();
        let info = request_info::parse(method.as_str(), &path, &query);
        let mut served = None;
        let response = crate::warnings::collect(async {
            match self
                .serve(
                    &parts.method,
                    &path,
                    &query,
                    &parts.headers,
                    body,
                    &info,
                    &mut served,
                )
                .await
            {
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
    #[allow(clippy::too_many_arguments)]
    async fn serve(
        self: &Arc<Self>,
        method: &Method,
        path: &str,
        raw_query: &str,
        headers: &HeaderMap,
        body: Body,
        info: &RequestInfo,
        served: &mut Option<crate::metrics::Served>,
    ) -> ApiResult<Response> {
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
            _ => {}
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
        if path == NODE_CREDENTIAL_PATH {
            return self.issue_node_credential(method, &user, body).await;
        }
        if path.starts_with("/openapi/") {
            return crate::openapi::serve(path, raw_query, headers);
        }
        if !info.is_resource_request {
            return crate::discovery::serve(path, headers, &user);
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
            let pod = self.find(&PODS, &info.namespace, &info.name).await?;
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
        if let Some(stored) = rt.stored_as {
            let body = crate::conversion::request_to_stored(rt, info, headers, &body)?;
            let request = StoredRequest {
                method,
                raw_query,
                headers,
                body,
                info,
                user: &user,
            };
            let response = Box::pin(self.serve_stored(request, stored, Some(rt))).await?;
            return crate::conversion::response_from_stored(rt, response).await;
        }
        let request = StoredRequest {
            method,
            raw_query,
            headers,
            body,
            info,
            user: &user,
        };
        self.serve_stored(request, rt, None).await
    }

    /// Runs the verb on a resource type in its stored form; `external` is
    /// the version the client asked for when it differs.
    async fn serve_stored(
        self: &Arc<Self>,
        request: StoredRequest<'_>,
        rt: &'static ResourceType,
        external: Option<&'static ResourceType>,
    ) -> ApiResult<Response> {
        let StoredRequest {
            method,
            raw_query,
            headers,
            body,
            info,
            user,
        } = request;
        let query = Query::parse(raw_query);
        let ns = if rt.namespaced {
            info.namespace.as_str()
        } else {
            ""
        };
        let name = info.name.as_str();
        match (
            method.as_str(),
            info.verb.as_str(),
            info.subresource.as_str(),
        ) {
            (_, "get", "") | (_, "get", "status") => self.get(rt, ns, name, headers, &query).await,
            (_, "get", "log") if rt == &PODS => self.pod_log(ns, name, raw_query, user).await,
            (_, "list", _) => self.list(rt, ns, &query, headers).await,
            (_, "watch", _) => self.watch(rt, ns, &query, headers, external, user).await,
            // Namespaced types are created in a namespace: upstream serves
            // no POST on the all-namespaces path (405).
            (_, "create", "") if rt.namespaced && ns.is_empty() => {
                Err(ApiError::method_not_allowed("POST", rt.plural))
            }
            (_, "create", "") => self.create(rt, ns, headers, &body, &query, user).await,
            (_, "create", "binding") => self.bind(ns, name, headers, &body).await,
            (_, "create", "eviction") => self.evict(ns, name, headers, &body, user).await,
            (_, "update", sub) => {
                let decoded = parse_body(headers, &body, self.config.body).await?;
                validate_fields(query.field_validation()?, rt, &decoded)?;
                self.update(rt, ns, name, sub, decoded.value, &query, user)
                    .await
            }
            (_, "patch", sub) => {
                self.patch(rt, ns, name, sub, headers, &body, &query, user)
                    .await
            }
            (_, "delete", "") => {
                self.delete(rt, ns, name, headers, &body, &query, user)
                    .await
            }
            (_, "deletecollection", "") => self.delete_collection(rt, ns, &query, user).await,
            _ => Err(ApiError::method_not_allowed(&info.verb, &info.resource)),
        }
    }

    /// `pods/{name}/log`: the pod's node's agent serves it (see
    /// [`crate::pod_logs`]); a pod not bound yet has an empty log. A node
    /// may read the logs of its own pods only.
    async fn pod_log(
        &self,
        ns: &str,
        name: &str,
        raw_query: &str,
        user: &crate::auth::User,
    ) -> ApiResult<Response> {
        let query = Query::parse(raw_query);
        let (pod, _) = self.read(&PODS, ns, name).await?;
        if let Some(node) = user.node_name()
            && pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(node)
        {
            return Err(ApiError::forbidden_message(
                "",
                "pods",
                name,
                format!(
                    "User {:?} cannot get resource \"pods/log\" in API group \"\" in the namespace {ns:?}: no relationship found between node '{node}' and this object",
                    user.name
                ),
            ));
        }
        let Some(location) = crate::pod_logs::log_location(&pod, query.get("container"))? else {
            return Ok(plain(200, ""));
        };
        let (node, _) = self.read(&resources::NODES, "", &location.node).await?;
        let (host, port) = crate::pod_logs::agent_address(&node)?;
        let token = self.auth.node_credential(&location.node).ok_or_else(|| {
            ApiError::internal(format!(
                "node {:?} joined without an agent credential: its agent serves no logs",
                location.node
            ))
        })?;
        let path = crate::pod_logs::agent_path(ns, name, &location.container, raw_query);
        crate::pod_logs::fetch(&host, port, &path, &token).await
    }

    /// `POST /berth/v1/node-credential {"nodeName": "n1"}` with the join
    /// token: the bearer token of `system:node:n1`, issued once per name.
    async fn issue_node_credential(
        &self,
        method: &Method,
        user: &User,
        body: Body,
    ) -> ApiResult<Response> {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(
                method.as_str(),
                "node-credential",
            ));
        }
        if !user.in_group(crate::auth::GROUP_BOOTSTRAPPERS)
            && !user.in_group(crate::auth::GROUP_MASTERS)
        {
            return Err(ApiError::forbidden_raw(format!(
                "forbidden: User {:?} cannot create node credentials",
                user.name
            )));
        }
        let limit = self.config.max_request_body_bytes;
        let body = axum::body::to_bytes(body, limit)
            .await
            .map_err(|_| ApiError::too_large(limit))?;
        let request: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
        let node = request
            .get("nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let problems = berth_core::validation::names::is_dns1123_subdomain(node);
        if !problems.is_empty() {
            let errors: Vec<berth_core::validation::FieldError> = problems
                .into_iter()
                .map(|p| {
                    berth_core::validation::FieldError::invalid(
                        &berth_core::validation::Path::new("nodeName"),
                        node,
                        p,
                    )
                })
                .collect();
            return Err(ApiError::invalid("", "NodeCredential", node, &errors));
        }
        let registered = if user.in_group(crate::auth::GROUP_BOOTSTRAPPERS) {
            self.find(&resources::NODES, "", node)
                .await?
                .map(|(n, _)| n)
        } else {
            None
        };
        let token = self
            .auth
            .issue_node_token(node, registered.as_ref())
            .await?;
        Ok(json_response(
            201,
            &json!({"kind": "NodeCredential", "apiVersion": "berth/v1", "nodeName": node, "user": format!("system:node:{node}"), "token": token}),
        ))
    }

    fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    fn prepare_new(&self, rt: &ResourceType, object: &mut Value, ns: &str) -> ApiResult<()> {
        if name_of(object).is_empty() {
            let generate = objects::meta_str(object, "generateName").to_string();
            if !generate.is_empty() {
                let name = objects::generate_name(&generate, random_u32);
                if let Some(meta) = objects::metadata_mut(object) {
                    meta.insert("name".into(), Value::String(name));
                }
            }
        }
        let uid = uuid::Uuid::new_v4().to_string();
        prepare_for_create(rt, object, ns, uid, self.now());
        Ok(())
    }

    async fn read(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<(Value, i64)> {
        self.find(rt, ns, name)
            .await?
            .ok_or_else(|| ApiError::not_found(rt.group, rt.plural, name))
    }

    /// The stored object and its revision, `None` if there is none.
    async fn find(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> ApiResult<Option<(Value, i64)>> {
        let kv = self
            .store
            .get(&rt.key(ns, name))
            .await
            .map_err(|e| store_error(rt, name, e))?;
        kv.map(|kv| decode(rt, name, &kv)).transpose()
    }

    /// The stored object an update replaces, from the watch cache, when
    /// the update names a resourceVersion and the cache holds the object at
    /// exactly that revision (a kubelet's Lease renewal, a controller's
    /// PUT): the store read is then spared. That is as exact as reading the
    /// store: the write is a compare-and-swap on that revision, so if the
    /// object moved since, the store refuses it with the same conflict.
    /// Anything else (no resourceVersion, a cache behind or ahead) reads
    /// the store.
    async fn cached_as_sent(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        object: &Value,
    ) -> Option<(Value, i64)> {
        let sent: i64 = resource_version_of(object).parse().ok()?;
        if rt.stored_as.is_some() {
            return None;
        }
        let cached = self.cache(rt).ok()?.get_at(&rt.key(ns, name), sent).await?;
        let old = serde_json::from_str(&cached.json).ok()?;
        Some((old, sent))
    }

    async fn get(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        headers: &HeaderMap,
        query: &Query,
    ) -> ApiResult<Response> {
        let (object, revision) = self.read(rt, ns, name).await?;
        if let Some(include) =
            crate::table_output::wants_table(headers, query.get("includeObject"))?
        {
            let item: Arc<str> = Arc::from(object.to_string());
            return crate::table_output::respond(rt, &[item], revision, None, include, self.now());
        }
        Ok(json_response(200, &object))
    }

    /// Records a namespace deletion at `revision`, before the deletion is answered.
    fn namespace_deleted(&self, revision: i64) {
        self.namespace_deleted_at
            .fetch_max(revision, std::sync::atomic::Ordering::AcqRel);
    }

    async fn ensure_namespace(&self, ns: &str) -> ApiResult<()> {
        let key = NAMESPACES.key("", ns);
        // Every create checks its namespace. A store read costs a blocking-pool hop and a
        // read transaction per create; the namespace watch cache answers a present namespace
        // in memory. That is exact with the embedded store, where this server makes every
        // write: once the cache reflects the last namespace deletion this server answered, a
        // namespace still in it was not deleted before this request began. (Upstream's
        // NamespaceLifecycle admission reads its informer cache first too.) A namespace
        // absent from the cache, or a shared etcd, goes to the store as before. (The same
        // holds for the in-memory store.)
        if matches!(self.store, AnyStore::Redb(_) | AnyStore::Memory(_)) {
            let deleted_at = self
                .namespace_deleted_at
                .load(std::sync::atomic::Ordering::Acquire);
            if self.cache(&NAMESPACES)?.holds(&key, deleted_at).await {
                return Ok(());
            }
        }
        let exists = self.store.get(&key).await.map_err(ApiError::internal)?;
        match exists {
            Some(_) => Ok(()),
            None => Err(ApiError::not_found("", "namespaces", ns)),
        }
    }

    async fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        headers: &HeaderMap,
        body: &Bytes,
        query: &Query,
        user: &User,
    ) -> ApiResult<Response> {
        let decoded = parse_body(headers, body, self.config.body).await?;
        check_kind(&decoded.value, rt.kind, &rt.api_version())?;
        validate_fields(query.field_validation()?, rt, &decoded)?;
        let mut object = decoded.value;
        let body_ns = objects::meta_str(&object, "namespace");
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if rt.namespaced {
            self.ensure_namespace(ns).await?;
        }
        self.prepare_new(rt, &mut object, ns)?;
        let name = name_of(&object).to_string();
        let ctx = strategy::Context {
            user,
            now: self.now(),
            config: &self.config.strategy,
        };
        let metadata_errors = objects::validate_metadata(rt, &object);
        strategy::create(rt, &mut object, &ctx, metadata_errors)?;
        if query.dry_run()? {
            return Ok(json_response(201, &object));
        }
        let key = rt.key(ns, &name);
        let (_, json) = self
            .write_object(rt, &key, &object, None)
            .await
            .map_err(|e| store_error(rt, &name, e))?;
        Ok(bytes_response(201, json.as_bytes().to_vec()))
    }

    /// Stores `object` under `key`: a create when `expected` is `None`,
    /// else a compare-and-swap on that revision. The watch cache is told of
    /// the write before it goes out and of its revision after
    /// ([`ResourceCache::expect`]), so that the write's store event costs
    /// the cache no parse, whichever comes first. Returns the revision and
    /// the object as the API reports it (the store's bytes with
    /// `resourceVersion` spliced in).
    async fn write_object(
        &self,
        rt: &ResourceType,
        key: &str,
        object: &Value,
        expected: Option<i64>,
    ) -> Result<(i64, Arc<str>), StoreError> {
        let stored = Arc::new(StoredJson::encode(object));
        // Types stored in another type's form (events.k8s.io events) are
        // cached in that form: those are decoded from the store's bytes.
        let cache = match rt.stored_as {
            None => self.cache(rt).ok(),
            Some(_) => None,
        };
        let expectation = cache.and_then(|cache| cache.expect(key, object, stored.clone()));
        let written = match expected {
            None => self.store.create(key, stored.bytes.clone()).await,
            Some(revision) => self.store.update(key, stored.bytes.clone(), revision).await,
        };
        match (written, cache.zip(expectation)) {
            (Ok(revision), own) => {
                let json: Arc<str> = Arc::from(stored.with_resource_version(revision));
                if let Some((cache, expectation)) = own {
                    cache.acknowledge(expectation, revision, json.clone());
                }
                Ok((revision, json))
            }
            (Err(e), own) => {
                if let Some((cache, expectation)) = own {
                    cache.withdraw(expectation);
                }
                Err(e)
            }
        }
    }

    /// Update (and the second half of patch): the new object replaces the
    /// stored one at `expected` revision.
    #[allow(clippy::too_many_arguments)]
    async fn replace(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        subresource: &str,
        mut object: Value,
        old: &Value,
        expected: i64,
        dry_run: bool,
        user: &User,
    ) -> ApiResult<Response> {
        check_kind(&object, rt.kind, &rt.api_version())?;
        let body_name = name_of(&object);
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if body_name.is_empty()
            && let Some(meta) = objects::metadata_mut(&mut object)
        {
            meta.insert("name".into(), Value::String(name.into()));
        }
        let sent_rv = resource_version_of(&object).to_string();
        if !sent_rv.is_empty() && sent_rv != expected.to_string() {
            return Err(ApiError::modified(rt.group, rt.plural, name));
        }
        prepare_for_update(&mut object, old);
        let ctx = strategy::Context {
            user,
            now: self.now(),
            config: &self.config.strategy,
        };
        strategy::update(rt, subresource, &mut object, old, &ctx)?;
        // An update that changes nothing is not written, as upstream's
        // GuaranteedUpdate skips it: the object keeps its resourceVersion
        // and watchers see no event.
        if dry_run || objects::equal_except_resource_version(&object, old) {
            set_resource_version(&mut object, expected);
            return Ok(json_response(200, &object));
        }
        let key = rt.key(ns, name);
        let (_, json) = self
            .write_object(rt, &key, &object, Some(expected))
            .await
            .map_err(|e| store_error(rt, name, e))?;
        Ok(bytes_response(200, json.as_bytes().to_vec()))
    }

    #[allow(clippy::too_many_arguments)]
    async fn update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        subresource: &str,
        object: Value,
        query: &Query,
        user: &User,
    ) -> ApiResult<Response> {
        let (old, revision) = match self.cached_as_sent(rt, ns, name, &object).await {
            Some(found) => found,
            None => self.read(rt, ns, name).await?,
        };
        self.replace(
            rt,
            ns,
            name,
            subresource,
            object,
            &old,
            revision,
            query.dry_run()?,
            user,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn patch(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        subresource: &str,
        headers: &HeaderMap,
        body: &Bytes,
        query: &Query,
        user: &User,
    ) -> ApiResult<Response> {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let patch_type = crate::patch::PatchType::from_content_type(content_type)
            .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
        let kind = crate::patch::PatchKind::from_group_kind(rt.group, rt.kind);
        let dry_run = query.dry_run()?;
        let field_manager = query.get("fieldManager");
        let directive = query.field_validation()?;
        let limits = self.config.body;
        let document = crate::body::decode_off_worker(body.clone(), move |bytes| {
            crate::patch::PatchDocument::decode(patch_type, bytes, limits)
        })
        .await
        .map_err(patch_error)?;
        // A first attempt on the watch cache's copy; anything but a write
        // that went through is decided again below on the stored object.
        if !dry_run
            && let Some((old, revision)) = self.cached_object(rt, ns, name).await
            && let Ok(patched) = crate::patch::apply_document(&document, &kind, &old, field_manager)
            && !objects::equal_except_resource_version(&patched, &old)
            && validate_patched_fields(directive, rt, &document, &patched).is_ok()
            && let Ok(response) = self
                .replace(
                    rt,
                    ns,
                    name,
                    subresource,
                    patched,
                    &old,
                    revision,
                    false,
                    user,
                )
                .await
        {
            return Ok(response);
        }
        // Patches are re-applied on a conflict, as upstream does: the client
        // did not ask for a particular revision unless the patch names one.
        for _ in 0..5 {
            let current = match self.read(rt, ns, name).await {
                Ok(found) => Some(found),
                // Server-side apply creates what does not exist yet.
                Err(e)
                    if e.code == 404
                        && patch_type == crate::patch::PatchType::Apply
                        && subresource.is_empty() =>
                {
                    None
                }
                Err(e) => return Err(e),
            };
            let base = current
                .as_ref()
                .map(|(o, _)| o.clone())
                .unwrap_or_else(|| json!({}));
            let patched = crate::patch::apply_document(&document, &kind, &base, field_manager)
                .map_err(patch_error)?;
            validate_patched_fields(directive, rt, &document, &patched)?;
            let Some((old, revision)) = current else {
                let bytes = Bytes::from(serde_json::to_vec(&patched).map_err(ApiError::internal)?);
                let mut create_headers = HeaderMap::new();
                create_headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                return self
                    .create(rt, ns, &create_headers, &bytes, query, user)
                    .await;
            };
            match self
                .replace(
                    rt,
                    ns,
                    name,
                    subresource,
                    patched,
                    &old,
                    revision,
                    dry_run,
                    user,
                )
                .await
            {
                Err(err) if err.code == 409 && err.reason == "Conflict" => {
                    let (_, now) = self.read(rt, ns, name).await?;
                    if now == revision {
                        return Err(err);
                    }
                }
                result => return result,
            }
        }
        Err(ApiError::modified(rt.group, rt.plural, name))
    }

    #[allow(clippy::too_many_arguments)]
    async fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        headers: &HeaderMap,
        body: &Bytes,
        query: &Query,
        user: &User,
    ) -> ApiResult<Response> {
        let options = if body.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            parse_body(headers, body, self.config.body).await?.value
        };
        let grace = match options.get("gracePeriodSeconds").and_then(Value::as_i64) {
            Some(g) => Some(g),
            None => query.int("gracePeriodSeconds")?,
        };
        let dry_run = query.dry_run()?
            || options
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == "All"));
        if std::ptr::eq(rt, &NAMESPACES) && SYSTEM_NAMESPACES[..3].contains(&name) {
            return Err(ApiError::forbidden_message(
                "",
                "namespaces",
                name,
                "this namespace may not be deleted",
            ));
        }
        // A first attempt on the watch cache's copy (see `cached_object`);
        // if it does not end in a write, the stored object decides.
        if !dry_run
            && let Some(current) = self.cached_object(rt, ns, name).await
            && let Ok(response) = self
                .delete_current(rt, ns, name, &options, grace, dry_run, user, current)
                .await
        {
            return Ok(response);
        }
        let current = self.read(rt, ns, name).await?;
        self.delete_current(rt, ns, name, &options, grace, dry_run, user, current)
            .await
    }

    /// The delete of `current` (the object and its revision).
    #[allow(clippy::too_many_arguments)]
    async fn delete_current(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        options: &Value,
        grace: Option<i64>,
        dry_run: bool,
        user: &User,
        current: (Value, i64),
    ) -> ApiResult<Response> {
        let (mut object, revision) = current;
        if let Some(pre) = options.get("preconditions") {
            let uid = objects::meta_str(&object, "uid");
            if let Some(want) = pre.get("uid").and_then(Value::as_str)
                && want != uid
            {
                return Err(ApiError::conflict(
                    rt.group,
                    rt.plural,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                    ),
                ));
            }
            if let Some(want) = pre.get("resourceVersion").and_then(Value::as_str)
                && want != revision.to_string()
            {
                return Err(ApiError::conflict(
                    rt.group,
                    rt.plural,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {revision}"
                    ),
                ));
            }
        }
        let ctx = strategy::Context {
            user,
            now: self.now(),
            config: &self.config.strategy,
        };
        strategy::on_delete(rt, &object, &ctx)?;
        // Pods bound to a node are deleted gracefully: marked, and removed
        // once the node's agent confirms (a delete with grace period 0).
        if std::ptr::eq(rt, &PODS) {
            let bound = object
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            let finished = matches!(
                object.pointer("/status/phase").and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            );
            let default_grace = object
                .pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(30);
            let grace = grace.unwrap_or(default_grace).max(0);
            if bound && !finished && grace > 0 {
                let already = objects::meta_str(&object, "deletionTimestamp").to_string();
                if let Some(meta) = objects::metadata_mut(&mut object) {
                    if already.is_empty() {
                        let deadline = self.now() + jiff::SignedDuration::from_secs(grace);
                        meta.insert(
                            "deletionTimestamp".into(),
                            Value::String(format_time(deadline)),
                        );
                    }
                    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
                }
                if dry_run {
                    return Ok(json_response(200, &object));
                }
                let key = rt.key(ns, name);
                let (_, json) = self
                    .write_object(rt, &key, &object, Some(revision))
                    .await
                    .map_err(|e| store_error(rt, name, e))?;
                return Ok(bytes_response(200, json.as_bytes().to_vec()));
            }
        }
        if dry_run {
            return Ok(json_response(200, &object));
        }
        let deleted_at = self
            .store
            .delete(&rt.key(ns, name), revision)
            .await
            .map_err(|e| store_error(rt, name, e))?;
        if std::ptr::eq(rt, &NAMESPACES) {
            self.namespace_deleted(deleted_at);
            self.delete_namespace_contents(name).await;
        }
        set_resource_version(&mut object, deleted_at);
        Ok(json_response(200, &object))
    }

    /// What the namespace controller does upstream, done at once: every
    /// namespaced object of a deleted namespace goes with it.
    async fn delete_namespace_contents(&self, ns: &str) {
        for rt in RESOURCES.iter().filter(|r| r.namespaced) {
            let Ok(page) = self
                .store
                .list(&rt.prefix(Some(ns)), ListOptions::default())
                .await
            else {
                continue;
            };
            for kv in page.items {
                let _ = self.store.delete(&kv.key, kv.mod_revision).await;
            }
        }
    }

    async fn delete_collection(
        &self,
        rt: &ResourceType,
        ns: &str,
        query: &Query,
        user: &User,
    ) -> ApiResult<Response> {
        let filter = Filter::new(rt, ns, query)?;
        let cache = self.cache(rt)?;
        let current = self
            .store
            .current_revision()
            .await
            .map_err(ApiError::internal)?;
        cache.wait_for(current).await?;
        let (items, rv) = cache.list(ns, |c| filter.matches(c)).await;
        let ctx = strategy::Context {
            user,
            now: self.now(),
            config: &self.config.strategy,
        };
        let mut deleted = Vec::new();
        for item in items {
            let object: Value = serde_json::from_str(&item.json).map_err(ApiError::internal)?;
            strategy::on_delete(rt, &object, &ctx)?;
            match self
                .store
                .delete(&rt.key(&item.namespace, &item.name), item.rv)
                .await
            {
                Ok(revision) => {
                    if std::ptr::eq(rt, &NAMESPACES) {
                        self.namespace_deleted(revision);
                    }
                    deleted.push(object);
                }
                Err(StoreError::NotFound { .. }) => deleted.push(object),
                Err(e) => return Err(store_error(rt, &item.name, e)),
            }
        }
        Ok(json_response(
            200,
            &json!({
                "kind": rt.list_kind(), "apiVersion": rt.api_version(),
                "metadata": {"resourceVersion": rv.to_string()}, "items": deleted,
            }),
        ))
    }

    async fn bind(
        &self,
        ns: &str,
        name: &str,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Response> {
        let binding = parse_body(headers, body, self.config.body).await?.value;
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                ApiError::invalid(
                    "",
                    "Binding",
                    name,
                    &vec![berth_core::validation::FieldError::required(
                        &berth_core::validation::Path::new("target").child("name"),
                        "",
                    )],
                )
            })?
            .to_string();
        let cached = self.cached_object(&PODS, ns, name).await;
        self.bind_to(ns, name, &node, cached).await
    }

    /// The object as the watch cache holds it (decoded) and its revision;
    /// `None` when the cache does not hold it or is still loading. It may be
    /// behind the store: callers act on it only through a compare-and-swap
    /// on its revision, and decide anything that does not end in a write
    /// (a no-op, an error) again on the stored object.
    async fn cached_object(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<(Value, i64)> {
        if rt.stored_as.is_some() {
            return None;
        }
        let cached = self.cache(rt).ok()?.latest(&rt.key(ns, name)).await?;
        let object = serde_json::from_str(&cached.json).ok()?;
        Some((object, cached.rv))
    }

    /// Binds pod `ns/name` to `node`. `cached` is the pod as the watch cache
    /// holds it: when it looks bindable, it is bound with a compare-and-swap
    /// on its cached revision, which spares the store read. The cache may be
    /// behind the store (the pod since bound, marked for deletion, deleted,
    /// or deleted and created again): the swap then fails and the pod is read
    /// from the store and decided on as it is there. A cached pod that looks
    /// unbindable is never refused on the cache's word either, since the
    /// stored one may be a newer pod of the same name.
    async fn bind_to(
        &self,
        ns: &str,
        name: &str,
        node: &str,
        cached: Option<(Value, i64)>,
    ) -> ApiResult<Response> {
        let key = PODS.key(ns, name);
        if let Some((mut pod, revision)) = cached
            && objects::meta_str(&pod, "deletionTimestamp").is_empty()
            && assigned_node(&pod).is_empty()
        {
            strategy::bind_pod(&mut pod, node, self.now());
            match self.write_object(&PODS, &key, &pod, Some(revision)).await {
                Ok(_) => return Ok(json_response(201, &success_status("", "pods", name, None))),
                Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => {}
                Err(e) => return Err(store_error(&PODS, name, e)),
            }
        }
        for _ in 0..5 {
            let (mut pod, revision) = self.read(&PODS, ns, name).await?;
            if !objects::meta_str(&pod, "deletionTimestamp").is_empty() {
                return Err(ApiError::conflict(
                    "",
                    "pods",
                    name,
                    "pod is being deleted, cannot be assigned to a host",
                ));
            }
            let current = assigned_node(&pod);
            if !current.is_empty() {
                return Err(ApiError::conflict(
                    "",
                    "pods",
                    name,
                    &format!("pod {name} is already assigned to node {current:?}"),
                ));
            }
            strategy::bind_pod(&mut pod, node, self.now());
            match self.write_object(&PODS, &key, &pod, Some(revision)).await {
                Ok(_) => return Ok(json_response(201, &success_status("", "pods", name, None))),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(store_error(&PODS, name, e)),
            }
        }
        Err(ApiError::modified("", "pods", name))
    }

    async fn evict(
        &self,
        ns: &str,
        name: &str,
        headers: &HeaderMap,
        body: &Bytes,
        user: &User,
    ) -> ApiResult<Response> {
        let eviction = parse_body(headers, body, self.config.body).await?.value;
        let options = eviction
            .get("deleteOptions")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let options = Bytes::from(serde_json::to_vec(&options).map_err(ApiError::internal)?);
        let json_headers = HeaderMap::new();
        // No PodDisruptionBudgets are served, so every eviction is allowed.
        self.delete(
            &PODS,
            ns,
            name,
            &json_headers,
            &options,
            &Query::default(),
            user,
        )
        .await?;
        Ok(json_response(
            201,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        ))
    }

    async fn list(
        &self,
        rt: &ResourceType,
        ns: &str,
        query: &Query,
        headers: &HeaderMap,
    ) -> ApiResult<Response> {
        let params = query.list_params(false);
        let matching = params.validate()?;
        let filter = Filter::new(rt, ns, query)?;
        let limit = query.int("limit")?.unwrap_or(0).max(0) as usize;
        let table = crate::table_output::wants_table(headers, query.get("includeObject"))?;
        // Paginated lists and lists at exactly one revision read the store.
        if limit > 0
            || params.continue_token.is_some()
            || matching == crate::list_options::Match::Exact
        {
            let prefix = rt.prefix(Some(ns));
            let (continue_from, revision) = params.paginated_start(matching, limit, &prefix)?;
            let options = ListOptions {
                limit,
                continue_from,
                revision,
            };
            return self.list_paged(rt, &prefix, &filter, options, table).await;
        }
        let cache = self.cache(rt)?;
        match params.resource_version {
            // "0": any cached state will do.
            Some("0") => {}
            Some(rv) => {
                let rv = crate::list_options::parse_resource_version(rv)?;
                cache.wait_for(rv).await?;
            }
            None => {
                let current = self
                    .store
                    .current_revision()
                    .await
                    .map_err(ApiError::internal)?;
                cache.wait_for(current).await?;
            }
        }
        let (items, rv) = cache.list(ns, |c| filter.matches(c)).await;
        let jsons: Vec<Arc<str>> = items.iter().map(|c| c.json.clone()).collect();
        if let Some(include) = table {
            return crate::table_output::respond(rt, &jsons, rv, None, include, self.now());
        }
        Ok(list_response(rt, &jsons, rv, None))
    }

    async fn list_paged(
        &self,
        rt: &ResourceType,
        prefix: &str,
        filter: &Filter,
        options: ListOptions,
        table: Option<crate::table_output::Include>,
    ) -> ApiResult<Response> {
        let continues = options.continue_from.is_some();
        let page = self
            .store
            .list(prefix, options)
            .await
            .map_err(|e| match e {
                StoreError::Gone { .. } if continues => ApiError::continue_expired(),
                e => store_error(rt, "", e),
            })?;
        let mut jsons = Vec::new();
        for kv in &page.items {
            let (object, _) = decode(rt, "", kv)?;
            let cached_fields = strategy::selectable_fields(rt, &object);
            if filter.matches_parts(
                objects::meta_str(&object, "namespace"),
                &crate::selectors::object_labels(&object),
                &cached_fields,
            ) {
                jsons.push(Arc::<str>::from(object.to_string()));
            }
        }
        let token = page
            .next
            .as_ref()
            .map(|next| crate::list_options::encode_continue(next, prefix));
        if let Some(include) = table {
            return crate::table_output::respond(
                rt,
                &jsons,
                page.revision,
                token.as_deref(),
                include,
                self.now(),
            );
        }
        Ok(list_response(rt, &jsons, page.revision, token.as_deref()))
    }

    async fn watch(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        query: &Query,
        headers: &HeaderMap,
        external: Option<&'static ResourceType>,
        user: &User,
    ) -> ApiResult<Response> {
        query.list_params(true).validate()?;
        let permit = self.watches.admit(&user.name)?;
        let filter = Arc::new(Filter::new(rt, ns, query)?);
        let table = crate::table_output::wants_table(headers, query.get("includeObject"))?;
        let cache = self.cache(rt)?.clone();
        let send_initial = query.flag("sendInitialEvents");
        let requested: Option<i64> =
            match query.get("resourceVersion") {
                None => None,
                Some(rv) => Some(rv.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {rv}"))
                })?),
            };
        match requested {
            // "0": any state will do, as upstream serves it from its cache.
            Some(0) if !send_initial => {}
            Some(rv) if !send_initial => cache.wait_for(rv).await?,
            // Unset (or streaming the initial list): the most recent state,
            // as a consistent read.
            _ => {
                let current = self
                    .store
                    .current_revision()
                    .await
                    .map_err(ApiError::internal)?;
                cache.wait_for(current).await?;
            }
        }
        let from = if send_initial { None } else { requested };
        let (initial, receiver, start_rv) = cache.watch_from(from).await?;
        let revisions = cache.revisions();
        let bookmarks = query.flag("allowWatchBookmarks");
        let timeout = query
            .int("timeoutSeconds")?
            .map(|s| Duration::from_secs(s.max(0) as u64))
            .unwrap_or(Duration::from_secs(1800));
        let render = EventRenderer {
            rt: external.unwrap_or(rt),
            converts: external.is_some(),
            table,
            clock: self.clock.clone(),
            headers_sent: std::sync::atomic::AtomicBool::new(false),
        };
        let stream = watch_stream(
            rt,
            filter,
            Arc::new(render),
            WatchFeed {
                initial,
                receiver,
                revisions,
                start_rv,
            },
            send_initial,
            bookmarks,
            timeout,
        )
        // Ended when the server shuts down; the watch holds its place until
        // its response ends.
        .take_until(permit.closed())
        .inspect(move |_| {
            let _ = &permit;
        });
        let mut response = Response::new(Body::from_stream(stream));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response.headers_mut().insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        Ok(response)
    }
}

/// `fieldValidation` for a patch: the patch's own duplicate fields and the
/// fields the patched object's type lacks. With `Strict`, upstream's
/// answers: for an apply patch, the 400 of its strict YAML decoding
/// (`error strict decoding patch: ...`) when it repeats a key; otherwise
/// the 422 on `patch` that names the patched object.
fn validate_patched_fields(
    directive: Directive,
    rt: &ResourceType,
    document: &crate::patch::PatchDocument,
    patched: &Value,
) -> ApiResult<()> {
    if !directive.checks() {
        return Ok(());
    }
    let apply = document.patch_type() == crate::patch::PatchType::Apply;
    let duplicates = document.duplicates();
    if apply && !duplicates.is_empty() {
        directive.enforce(duplicates, || {
            let error = crate::body::strict_decoding_error(duplicates);
            let yaml = error
                .trim_start_matches("strict decoding error: ")
                .to_string();
            ApiError::bad_request(format!(
                "error strict decoding patch: error converting YAML to JSON: {yaml}"
            ))
        })?;
    }
    let mut problems: Vec<crate::body::StrictProblem> = if apply {
        Vec::new()
    } else {
        duplicates
            .iter()
            .map(|p| match (document.patch_type(), p) {
                (
                    crate::patch::PatchType::Json,
                    crate::body::StrictProblem::DuplicateField { path },
                ) => crate::body::StrictProblem::JsonPatchDuplicateField { path: path.clone() },
                _ => p.clone(),
            })
            .collect()
    };
    problems.extend(strategy::unknown_fields(rt, patched));
    directive.enforce(&problems, || {
        let errors = vec![berth_core::validation::FieldError::invalid(
            &berth_core::validation::Path::new("patch"),
            patched.to_string(),
            crate::body::strict_decoding_error(&problems),
        )];
        ApiError::invalid("", "", "", &errors)
    })
}

/// A patch engine refusal as the API reports it.
fn patch_error(e: crate::patch::PatchError) -> ApiError {
    let mut err = ApiError::new(e.http_status(), e.reason(), e.to_string());
    if let crate::patch::PatchError::Unprocessable { detail } = &e {
        err = err.with_details(
            json!({"causes": [{"reason": "UnexpectedServerResponse", "message": detail}]}),
        );
    }
    err
}

fn plain(code: u16, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `spec.nodeName`, "" when unset.
fn assigned_node(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn decode(rt: &ResourceType, name: &str, kv: &KeyValue) -> ApiResult<(Value, i64)> {
    let mut object: Value = serde_json::from_slice(&kv.value).map_err(|e| {
        ApiError::internal(format!("stored {} {name:?} is unreadable: {e}", rt.plural))
    })?;
    set_resource_version(&mut object, kv.mod_revision);
    Ok((object, kv.mod_revision))
}

/// A list body, built from the cached JSON without re-encoding objects.
fn list_response(rt: &ResourceType, items: &[Arc<str>], rv: i64, next: Option<&str>) -> Response {
    let mut out = String::with_capacity(128 + items.iter().map(|i| i.len() + 1).sum::<usize>());
    out.push_str(&format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"",
        rt.list_kind(),
        rt.api_version()
    ));
    if let Some(token) = next {
        out.push_str(&format!(
            ",\"continue\":{}",
            Value::String(token.to_string())
        ));
    }
    out.push_str("},\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push_str("]}");
    bytes_response(200, out.into_bytes())
}

/// Which objects a list or watch returns: the namespace and the selectors.
pub struct Filter {
    namespace: String,
    labels: Option<crate::selectors::LabelSelector>,
    fields: Option<crate::selectors::FieldSelector>,
}

impl Filter {
    fn new(rt: &ResourceType, ns: &str, query: &Query) -> ApiResult<Filter> {
        let labels = match query.get("labelSelector") {
            Some(s) => Some(
                crate::selectors::LabelSelector::parse(s)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?,
            ),
            None => None,
        };
        let fields = match query.get("fieldSelector") {
            Some(s) => Some(strategy::field_selector(rt, s)?),
            None => None,
        };
        Ok(Filter {
            namespace: ns.to_string(),
            labels,
            fields,
        })
    }

    fn matches(&self, object: &Cached) -> bool {
        self.matches_parts(&object.namespace, &object.labels, &object.fields)
    }

    fn matches_parts(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        fields: &BTreeMap<String, String>,
    ) -> bool {
        (self.namespace.is_empty() || self.namespace == namespace)
            && self.labels.as_ref().is_none_or(|s| s.matches(labels))
            && self.fields.as_ref().is_none_or(|s| s.matches(fields))
    }
}

/// Writes watch events: the object as stored, or (for `kubectl get -w`) a
/// one-row Table, with the column definitions in the first event only.
struct EventRenderer {
    rt: &'static ResourceType,
    /// The watch is of another version of the stored type (events.k8s.io).
    converts: bool,
    table: Option<crate::table_output::Include>,
    clock: Clock,
    headers_sent: std::sync::atomic::AtomicBool,
}

impl EventRenderer {
    fn line(&self, kind: &str, object: &str) -> Bytes {
        if self.table.is_none() && !self.converts {
            return event_line(kind, object);
        }
        let Ok(mut value) = serde_json::from_str::<Value>(object) else {
            return event_line(kind, object);
        };
        if self.converts {
            value = crate::conversion::event_to_v1(&value);
        }
        let Some(include) = self.table else {
            return event_line(kind, &value.to_string());
        };
        let no_headers = self
            .headers_sent
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        let options = crate::table::TableOptions {
            version: include.version,
            include_object: include.include_object,
            no_headers,
            list_meta: crate::table::ListMeta {
                resource_version: Some(resource_version_of(&value).to_string()),
                ..crate::table::ListMeta::default()
            },
        };
        let table =
            crate::table::to_table_with_options(self.rt.kind, &[value], &options, self.clock.now());
        event_line(kind, &table.to_string())
    }
}

fn event_line(kind: &str, object: &str) -> Bytes {
    Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n"))
}

fn bookmark_line(rt: &ResourceType, rv: i64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let object = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta});
    event_line("BOOKMARK", &object.to_string())
}

/// What one change means to a watcher with `filter`: upstream sends
/// DELETED when an object stops matching and ADDED when it starts to.
fn filtered(filter: &Filter, change: &Change) -> Option<(&'static str, Arc<str>)> {
    let now = filter.matches(&change.object);
    let before = change.previous.as_ref().is_some_and(|p| filter.matches(p));
    let kind = match (change.kind, before, now) {
        (ChangeType::Deleted, _, true) => "DELETED",
        (ChangeType::Deleted, _, false) => return None,
        (_, false, true) => "ADDED",
        (_, true, true) => "MODIFIED",
        (_, true, false) => "DELETED",
        (_, false, false) => return None,
    };
    let kind = if change.kind == ChangeType::Added && now {
        "ADDED"
    } else {
        kind
    };
    Some((kind, change.object.json.clone()))
}

/// What a watch is fed from: the changes it replays, the live ones, and
/// the cache's revision (for bookmarks).
struct WatchFeed {
    initial: Vec<Change>,
    receiver: crate::cache::WatchReceiver,
    revisions: tokio::sync::watch::Receiver<i64>,
    start_rv: i64,
}

/// How long a watch waits without an event before it sends a bookmark.
const BOOKMARK_AFTER: Duration = Duration::from_secs(60);

/// The watch's lines: the replayed changes (rendered as they are sent, so
/// a watch resumed far back costs no copy of the history), the
/// initial-events-end bookmark when asked, then live changes until
/// `timeout`, which ends the watch whether or not changes keep coming, as
/// upstream's does. A bookmark after a quiet minute carries the cache's
/// revision, which moves with every type's writes: a client resuming from
/// it after a long quiet spell of its own type is not sent away with 410
/// because other types' writes moved on (upstream's bookmarks carry etcd's
/// progress the same way). A watcher the cache closed for falling too far
/// behind ends without an error, as upstream's does: its client resumes
/// from the last change it read.
fn watch_stream(
    rt: &'static ResourceType,
    filter: Arc<Filter>,
    render: Arc<EventRenderer>,
    feed: WatchFeed,
    send_initial: bool,
    bookmarks: bool,
    timeout: Duration,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    use crate::cache::Missed;
    let WatchFeed {
        initial,
        receiver,
        revisions,
        start_rv,
    } = feed;
    let last_rv = initial.iter().map(|c| c.object.rv).fold(start_rv, i64::max);
    let replay = {
        let filter = filter.clone();
        let render = render.clone();
        futures::stream::iter(initial).filter_map(move |change| {
            let line = filtered(&filter, &change).map(|(kind, json)| Ok(render.line(kind, &json)));
            std::future::ready(line)
        })
    };
    let initial_end =
        futures::stream::iter(send_initial.then(|| Ok(bookmark_line(rt, last_rv, true))));
    let deadline = tokio::time::Instant::now() + timeout;
    let live = futures::stream::unfold(
        (receiver, last_rv, false),
        move |(mut rx, mut last_rv, done)| {
            let filter = filter.clone();
            let render = render.clone();
            let revisions = revisions.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    let now = tokio::time::Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    let next =
                        tokio::time::timeout_at(deadline.min(now + BOOKMARK_AFTER), rx.recv())
                            .await;
                    let next = match next {
                        Err(_) if tokio::time::Instant::now() >= deadline => return None,
                        Err(_) if !bookmarks => continue,
                        Err(_) => {
                            // The revision first, then the queue: a change
                            // is queued before its revision is published, so
                            // an empty queue means every change up to it
                            // was delivered.
                            let current = *revisions.borrow();
                            match rx.try_recv().await {
                                Ok(None) => {
                                    last_rv = last_rv.max(current);
                                    return Some((
                                        Ok(bookmark_line(rt, last_rv, false)),
                                        (rx, last_rv, false),
                                    ));
                                }
                                Ok(Some(change)) => Ok(change),
                                Err(missed) => Err(missed),
                            }
                        }
                        Ok(next) => next,
                    };
                    match next {
                        Ok(change) => {
                            if change.object.rv <= last_rv {
                                continue;
                            }
                            last_rv = change.object.rv;
                            if let Some((kind, json)) = filtered(&filter, &change) {
                                return Some((Ok(render.line(kind, &json)), (rx, last_rv, false)));
                            }
                        }
                        Err(Missed::Lagged) => {
                            // Too far behind to deliver every change: end the
                            // watch with 410 so the client re-lists.
                            let status = ApiError::expired(last_rv, last_rv).to_status();
                            return Some((
                                Ok(event_line("ERROR", &status.to_string())),
                                (rx, last_rv, true),
                            ));
                        }
                        Err(Missed::TooSlow | Missed::Closed) => return None,
                    }
                }
            }
        },
    );
    replay.chain(initial_end).chain(live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_store::MemStore;

    /// What happens in the store after the watch cache's copy of the pod
    /// was taken (so the cache is that far behind).
    #[derive(Clone, Copy, Debug)]
    enum Since {
        Nothing,
        BoundElsewhere,
        MarkedForDeletion,
        Deleted,
        DeletedAndCreatedAgain,
    }

    fn pod_bytes(uid: &str, extra_meta: Value, node: Option<&str>) -> Vec<u8> {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Pending"},
        });
        if let (Some(meta), Some(extra)) = (pod["metadata"].as_object_mut(), extra_meta.as_object())
        {
            meta.extend(extra.clone());
        }
        if let Some(node) = node {
            pod["spec"]["nodeName"] = json!(node);
        }
        objects::to_json_bytes(&pod)
    }

    async fn apply(server: &ApiServer, key: &str, since: Since) {
        let store = &server.store;
        let current = store
            .get(key)
            .await
            .ok()
            .flatten()
            .map(|kv| kv.mod_revision);
        let rev = current.unwrap_or(0);
        let result = match since {
            Since::Nothing => return,
            Since::BoundElsewhere => store
                .update(key, pod_bytes("u1", json!({}), Some("other")), rev)
                .await
                .map(|_| ()),
            Since::MarkedForDeletion => store
                .update(
                    key,
                    pod_bytes(
                        "u1",
                        json!({"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}),
                        None,
                    ),
                    rev,
                )
                .await
                .map(|_| ()),
            Since::Deleted => store.delete(key, rev).await.map(|_| ()),
            Since::DeletedAndCreatedAgain => {
                let deleted = store.delete(key, rev).await;
                assert!(deleted.is_ok(), "delete: {deleted:?}");
                store
                    .create(key, pod_bytes("u2", json!({}), None))
                    .await
                    .map(|_| ())
            }
        };
        assert!(result.is_ok(), "{since:?}: {result:?}");
    }

    /// The watch cache may be behind the store when a binding arrives: the
    /// binding is then decided on the stored pod, never on the stale copy.
    /// It binds exactly once, never a deleted or terminating pod, and
    /// refuses with upstream's errors.
    #[tokio::test]
    async fn binding_from_a_stale_cache_entry_decides_on_the_stored_pod() {
        struct Case {
            since: Since,
            /// The cached copy says the pod is bound / terminating (an older
            /// pod of the same name).
            cached_bound: bool,
            cached_terminating: bool,
            want: Result<(), (u16, &'static str)>,
            /// spec.nodeName and metadata.uid in the store afterwards
            /// (None: no pod).
            stored: Option<(&'static str, &'static str)>,
        }
        let cases = [
            Case {
                since: Since::Nothing,
                cached_bound: false,
                cached_terminating: false,
                want: Ok(()),
                stored: Some(("node1", "u1")),
            },
            Case {
                since: Since::BoundElsewhere,
                cached_bound: false,
                cached_terminating: false,
                want: Err((
                    409,
                    "Operation cannot be fulfilled on pods \"web\": pod web is already assigned to node \"other\"",
                )),
                stored: Some(("other", "u1")),
            },
            Case {
                since: Since::MarkedForDeletion,
                cached_bound: false,
                cached_terminating: false,
                want: Err((
                    409,
                    "Operation cannot be fulfilled on pods \"web\": pod is being deleted, cannot be assigned to a host",
                )),
                stored: Some(("", "u1")),
            },
            Case {
                since: Since::Deleted,
                cached_bound: false,
                cached_terminating: false,
                want: Err((404, "pods \"web\" not found")),
                stored: None,
            },
            Case {
                since: Since::DeletedAndCreatedAgain,
                cached_bound: false,
                cached_terminating: false,
                want: Ok(()),
                stored: Some(("node1", "u2")),
            },
            Case {
                since: Since::DeletedAndCreatedAgain,
                cached_bound: true,
                cached_terminating: false,
                want: Ok(()),
                stored: Some(("node1", "u2")),
            },
            Case {
                since: Since::DeletedAndCreatedAgain,
                cached_bound: false,
                cached_terminating: true,
                want: Ok(()),
                stored: Some(("node1", "u2")),
            },
        ];
        for case in cases {
            let store = AnyStore::Memory(MemStore::new());
            let server = ApiServer::new(store, Clock::real(), ApiConfig::default())
                .await
                .expect("server starts");
            let key = PODS.key("default", "web");
            let created = server
                .store
                .create(&key, pod_bytes("u1", json!({}), None))
                .await;
            assert!(created.is_ok());
            // The copy the cache holds: the pod as it was, resourceVersion set.
            let (mut cached, rv) = server
                .read(&PODS, "default", "web")
                .await
                .expect("pod readable");
            if case.cached_bound {
                cached["spec"]["nodeName"] = json!("old-node");
            }
            if case.cached_terminating {
                cached["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            apply(&server, &key, case.since).await;

            let got = server
                .bind_to("default", "web", "node1", Some((cached.clone(), rv)))
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| (e.code, e.message));
            let want = case
                .want
                .map(|()| 201)
                .map_err(|(code, message)| (code, message.to_string()));
            assert_eq!(got, want, "{:?}", case.since);

            let stored = server.store.get(&key).await.ok().flatten().map(|kv| {
                let pod: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
                (
                    pod.pointer("/spec/nodeName")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    objects::meta_str(&pod, "uid").to_string(),
                )
            });
            let want_stored = case.stored.map(|(n, u)| (n.to_string(), u.to_string()));
            assert_eq!(stored, want_stored, "{:?}", case.since);

            // A second binding with the same stale copy never binds again.
            if want_stored.is_some_and(|(n, _)| n == "node1") {
                let again = server
                    .bind_to("default", "web", "node2", Some((cached, rv)))
                    .await
                    .map(|r| r.status().as_u16())
                    .map_err(|e| (e.code, e.message));
                assert_eq!(
                    again,
                    Err((
                        409,
                        "Operation cannot be fulfilled on pods \"web\": pod web is already assigned to node \"node1\""
                            .to_string()
                    )),
                    "{:?}",
                    case.since
                );
            }
        }
    }

    /// Patches and deletes try the watch cache's copy first. When that copy
    /// is behind the store, the outcome must be the one the stored object
    /// gives: a patch that is a no-op on the stale copy still writes, a
    /// delete of a pod that has since finished is not graceful, a UID
    /// precondition is checked against the stored pod.
    #[tokio::test]
    async fn patches_and_deletes_on_a_stale_cache_copy_decide_on_the_stored_object() {
        #[derive(Debug)]
        enum Op {
            MergePatchLabel(&'static str),
            Delete {
                uid_precondition: Option<&'static str>,
            },
        }
        struct Case {
            /// The stored pod after the cache took its copy (labels app=<v>, uid, phase).
            stored_since: (&'static str, &'static str, &'static str),
            op: Op,
            want_code: u16,
            /// label app, deletionTimestamp set (None: the pod is gone).
            want_stored: Option<(&'static str, bool)>,
        }
        let cases = [
            Case {
                stored_since: ("two", "u1", "Running"),
                op: Op::MergePatchLabel("three"),
                want_code: 200,
                want_stored: Some(("three", false)),
            },
            // A no-op on the cache's copy (app=one) is a change on the store's.
            Case {
                stored_since: ("two", "u1", "Running"),
                op: Op::MergePatchLabel("one"),
                want_code: 200,
                want_stored: Some(("one", false)),
            },
            // The cache thinks the pod runs (graceful); it has finished.
            Case {
                stored_since: ("one", "u1", "Failed"),
                op: Op::Delete {
                    uid_precondition: None,
                },
                want_code: 200,
                want_stored: None,
            },
            Case {
                stored_since: ("one", "u1", "Running"),
                op: Op::Delete {
                    uid_precondition: None,
                },
                want_code: 200,
                want_stored: Some(("one", true)),
            },
            // Deleted and created again: the precondition names the new pod.
            Case {
                stored_since: ("one", "u2", "Running"),
                op: Op::Delete {
                    uid_precondition: Some("u2"),
                },
                want_code: 200,
                want_stored: Some(("one", true)),
            },
            Case {
                stored_since: ("one", "u2", "Running"),
                op: Op::Delete {
                    uid_precondition: Some("u1"),
                },
                want_code: 409,
                want_stored: Some(("one", false)),
            },
        ];
        let pod = |app: &str, uid: &str, phase: &str| {
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default", "uid": uid, "labels": {"app": app}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
                "status": {"phase": phase},
            })
            .to_string()
            .into_bytes()
        };
        for case in cases {
            let store = AnyStore::Memory(MemStore::new());
            let server = ApiServer::new(store, Clock::real(), ApiConfig::default())
                .await
                .expect("server starts");
            let key = PODS.key("default", "web");
            let first = server
                .store
                .create(&key, pod("one", "u1", "Running"))
                .await
                .expect("create");
            let cache = server.cache(&PODS).expect("pods cache").clone();
            for _ in 0..100_000 {
                if cache.get(&key).await.is_some_and(|c| c.rv == first) {
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert!(
                cache.get(&key).await.is_some_and(|c| c.rv == first),
                "cache caught up"
            );
            let (app, uid, phase) = case.stored_since;
            let moved = if uid == "u1" {
                server.store.update(&key, pod(app, uid, phase), first).await
            } else {
                let deleted = server.store.delete(&key, first).await;
                assert!(deleted.is_ok());
                server.store.create(&key, pod(app, uid, phase)).await
            };
            let moved = moved.expect("store write");
            // Nothing yielded to the cache's feeder since (one thread): stale.
            assert!(
                cache.get(&key).await.is_some_and(|c| c.rv < moved),
                "{:?}: the cache is behind",
                case.op
            );
            let user = User::admin();
            let got = match case.op {
                Op::MergePatchLabel(value) => {
                    let mut headers = HeaderMap::new();
                    headers.insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/merge-patch+json"),
                    );
                    let body = json!({"metadata": {"labels": {"app": value}}}).to_string();
                    server
                        .patch(
                            &PODS,
                            "default",
                            "web",
                            "",
                            &headers,
                            &Bytes::from(body),
                            &Query::parse(""),
                            &user,
                        )
                        .await
                }
                Op::Delete { uid_precondition } => {
                    let body = match uid_precondition {
                        Some(uid) => json!({"preconditions": {"uid": uid}}).to_string(),
                        None => String::new(),
                    };
                    let mut headers = HeaderMap::new();
                    headers.insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                    server
                        .delete(
                            &PODS,
                            "default",
                            "web",
                            &headers,
                            &Bytes::from(body),
                            &Query::parse(""),
                            &user,
                        )
                        .await
                }
            };
            let code = got.map(|r| r.status().as_u16()).unwrap_or_else(|e| e.code);
            assert_eq!(code, case.want_code, "{:?}", case.op);
            let stored = server.store.get(&key).await.ok().flatten().map(|kv| {
                let pod: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
                (
                    pod.pointer("/metadata/labels/app")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    !objects::meta_str(&pod, "deletionTimestamp").is_empty(),
                )
            });
            let want = case.want_stored.map(|(a, d)| (a.to_string(), d));
            assert_eq!(stored, want, "{:?}", case.op);
        }
    }
}

#[cfg(test)]
mod watch_stream_tests {
    use super::*;
    use crate::cache::{Cached, Change, ChangeType};
    use crate::resources::NODES;
    use futures::StreamExt;

    fn node_change(rv: i64) -> Change {
        let object = Arc::new(Cached {
            namespace: String::new(),
            name: "n1".into(),
            rv,
            json: Arc::from(format!(
                r#"{{"kind":"Node","apiVersion":"v1","metadata":{{"name":"n1","resourceVersion":"{rv}"}}}}"#
            )),
            labels: BTreeMap::new(),
            fields: BTreeMap::new(),
        });
        Change {
            kind: ChangeType::Modified,
            previous: Some(object.clone()),
            object,
        }
    }

    fn stream_for(
        start_rv: i64,
        receiver: tokio::sync::broadcast::Receiver<Change>,
        revisions: tokio::sync::watch::Receiver<i64>,
        timeout: Duration,
    ) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
        let filter = Filter {
            namespace: String::new(),
            labels: None,
            fields: None,
        };
        let render = EventRenderer {
            rt: &NODES,
            converts: false,
            table: None,
            clock: Clock::real(),
            headers_sent: std::sync::atomic::AtomicBool::new(false),
        };
        watch_stream(
            &NODES,
            Arc::new(filter),
            Arc::new(render),
            WatchFeed {
                initial: Vec::new(),
                receiver: crate::cache::WatchReceiver::unmanaged(receiver),
                revisions,
                start_rv,
            },
            false,
            true,
            timeout,
        )
    }

    fn line_of(item: Option<Result<Bytes, std::io::Error>>) -> Value {
        let bytes = item.and_then(Result::ok).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_ends_at_its_timeout_while_changes_keep_coming() {
        let (tx, rx) = tokio::sync::broadcast::channel(1024);
        let (_rv_tx, rv_rx) = tokio::sync::watch::channel(10);
        let producer = tokio::spawn(async move {
            for rv in 11..1_000 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let _ = tx.send(node_change(rv));
            }
        });
        let started = tokio::time::Instant::now();
        let mut stream = std::pin::pin!(stream_for(10, rx, rv_rx, Duration::from_secs(10)));
        let mut events = 0;
        while let Some(item) = stream.next().await {
            assert!(item.is_ok());
            events += 1;
        }
        let lasted = started.elapsed();
        producer.abort();
        assert!(
            lasted >= Duration::from_secs(10) && lasted < Duration::from_secs(11),
            "the watch lasted {lasted:?}"
        );
        assert!((18..=20).contains(&events), "{events} events");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_watch_bookmarks_the_caches_revision() {
        let (tx, rx) = tokio::sync::broadcast::channel(16);
        let (rv_tx, rv_rx) = tokio::sync::watch::channel(10);
        let mut stream = std::pin::pin!(stream_for(10, rx, rv_rx, Duration::from_secs(600)));
        let _ = tx.send(node_change(11));
        let event = line_of(stream.next().await);
        assert_eq!(event["type"], "MODIFIED");
        assert_eq!(event["object"]["metadata"]["resourceVersion"], "11");
        // Other types' writes move the cache on; this type stays quiet.
        rv_tx.send_replace(5_000);
        let bookmark = line_of(stream.next().await);
        assert_eq!(bookmark["type"], "BOOKMARK");
        assert_eq!(bookmark["object"]["metadata"]["resourceVersion"], "5000");
        // A change the bookmark already covers is not sent again; later ones are.
        let _ = tx.send(node_change(4_999));
        let _ = tx.send(node_change(5_001));
        let event = line_of(stream.next().await);
        assert_eq!(event["object"]["metadata"]["resourceVersion"], "5001");
    }

    #[tokio::test(start_paused = true)]
    async fn a_bookmark_waits_for_changes_already_queued() {
        let (tx, rx) = tokio::sync::broadcast::channel(16);
        let (rv_tx, rv_rx) = tokio::sync::watch::channel(10);
        let stream = stream_for(10, rx, rv_rx, Duration::from_secs(600));
        let mut stream = std::pin::pin!(stream);
        // Nothing for 59 s, then a change queued with its revision published
        // just as the quiet minute ends: the change goes out, not a
        // bookmark past it.
        tokio::time::sleep(Duration::from_secs(59)).await;
        let _ = tx.send(node_change(12));
        rv_tx.send_replace(12);
        let event = line_of(stream.next().await);
        assert_eq!(event["type"], "MODIFIED");
        assert_eq!(event["object"]["metadata"]["resourceVersion"], "12");
    }
}
