//! The agent's HTTPS endpoint for container logs, the kubelet's
//! `GET /containerLogs/{namespace}/{pod}/{container}`, which the API
//! server calls for `pods/{name}/log` (so `kubectl logs` works).
//!
//! The node publishes the port in `status.daemonEndpoints.kubeletEndpoint`
//! (upstream's default is [`DEFAULT_PORT`]) and the API server connects to
//! the node's InternalIP.
//!
//! **Who may call it.** A request must carry `Authorization: Bearer
//! <token>` with the node's own credential: the token the API server issued
//! to this node when it joined, which only the API server and this agent
//! know. The API server presents the credential of the node it calls, so a
//! node cannot read another node's logs through it and nothing else on the
//! network can read any. The agent serves a self-signed certificate and
//! the API server does not verify it (as kube-apiserver without
//! `--kubelet-certificate-authority`): someone who can intercept the
//! API server's connections to a node could learn that node's credential.
//!
//! How an agent runs it (the port then goes into its Node's
//! `status.daemonEndpoints.kubeletEndpoint.Port`, next to an InternalIP
//! address):
//!
//! ```no_run
//! # async fn agent(runtime: std::sync::Arc<dyn berth_runtime::Runtime>, node_token: &str)
//! # -> Result<(), berth_runtime::log_server::LogServerError> {
//! use berth_runtime::log_server;
//! let data_dir = std::path::Path::new("/var/lib/berth-agent");
//! let ip = "10.0.0.7".parse().unwrap();
//! let cert = log_server::ensure_serving_cert(data_dir, "node-1", &[ip])?;
//! let router = log_server::router(runtime, node_token, berth_core::clock::Clock::real());
//! let server = log_server::serve(([0, 0, 0, 0], log_server::DEFAULT_PORT).into(), router, &cert).await?;
//! let port = server.addr.port(); // publish in daemonEndpoints
//! # let _ = port; Ok(()) }
//! ```
//!
//! Query parameters, as the kubelet reads them: `follow` (keep streaming
//! until the container instance ends), `tailLines`, `limitBytes`,
//! `previous`, `timestamps`, `sinceSeconds` and `sinceTime`. Logs are CRI
//! records ([`crate::cri_log`]); a line that is not one is shown as it is.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use berth_core::clock::Clock;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use jiff::{SignedDuration, Timestamp};

use crate::cri_log;
use crate::{LogFile, Runtime, RuntimeError};

/// The kubelet's default port.
pub const DEFAULT_PORT: u16 = 10250;

/// How often a follower looks for new output.
const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// What the log server can fail at.
#[derive(Debug, thiserror::Error)]
pub enum LogServerError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("making the serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("serving on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A PEM certificate and its key.
#[derive(Debug, Clone)]
pub struct ServingCert {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The serving certificate in `dir` (`agent-serving.crt`, `.key`), made
/// self-signed for the node name, `localhost` and `ips` on first use.
pub fn ensure_serving_cert(
    dir: &Path,
    node_name: &str,
    ips: &[IpAddr],
) -> Result<ServingCert, LogServerError> {
    let cert_path = dir.join("agent-serving.crt");
    let key_path = dir.join("agent-serving.key");
    if let (Ok(cert_pem), Ok(key_pem)) = (
        std::fs::read_to_string(&cert_path),
        std::fs::read_to_string(&key_path),
    ) {
        return Ok(ServingCert { cert_pem, key_pem });
    }
    let mut names = vec![node_name.to_string(), "localhost".to_string()];
    names.extend(ips.iter().map(IpAddr::to_string));
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(names)?.self_signed(&key)?;
    let serving = ServingCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    };
    std::fs::create_dir_all(dir).map_err(|source| LogServerError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    write_private(&key_path, serving.key_pem.as_bytes())?;
    std::fs::write(&cert_path, &serving.cert_pem).map_err(|source| LogServerError::Io {
        path: cert_path,
        source,
    })?;
    Ok(serving)
}

fn write_private(path: &Path, contents: &[u8]) -> Result<(), LogServerError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| LogServerError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    file.write_all(contents).map_err(io)
}

#[derive(Clone)]
struct LogState {
    runtime: Arc<dyn Runtime>,
    token: Arc<str>,
    clock: Clock,
}

/// The log endpoint over `runtime`, accepting only `token` (the node's
/// credential).
pub fn router(runtime: Arc<dyn Runtime>, token: &str, clock: Clock) -> Router {
    Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .with_state(LogState {
            runtime,
            token: Arc::from(token),
            clock,
        })
}

/// What answers `/stats/summary`: the node's figures now.
pub type SummarySource = Arc<dyn Fn() -> berth_core::node_stats::Summary + Send + Sync>;

/// `GET /stats/summary` (the kubelet's Summary API, for the API server's
/// resource metrics) over `source`, accepting only `token`: merged with
/// [`router`] on the agent's endpoint.
pub fn summary_router(token: &str, source: SummarySource) -> Router {
    let token: Arc<str> = Arc::from(token);
    Router::new().route(
        "/stats/summary",
        get(move |headers: HeaderMap| {
            let (token, source) = (token.clone(), source.clone());
            async move {
                if !authorized(&headers, &token) {
                    return plain(StatusCode::UNAUTHORIZED, "Unauthorized");
                }
                axum::Json(source()).into_response()
            }
        }),
    )
}

/// A running log server.
pub struct RunningLogServer {
    /// The address it listens on (the real port when asked for port 0).
    pub addr: SocketAddr,
    handle: Handle<SocketAddr>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningLogServer {
    /// Stops accepting requests and waits for the listener to end.
    pub async fn shutdown(self) {
        self.handle.shutdown();
        let _ = self.task.await;
    }
}

/// Serves `router` over HTTPS on `listen`.
pub async fn serve(
    listen: SocketAddr,
    router: Router,
    cert: &ServingCert,
) -> Result<RunningLogServer, LogServerError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listen_error = |source| LogServerError::Listen {
        addr: listen,
        source,
    };
    let listener = std::net::TcpListener::bind(listen).map_err(listen_error)?;
    let addr = listener.local_addr().map_err(listen_error)?;
    listener.set_nonblocking(true).map_err(listen_error)?;
    let tls = RustlsConfig::from_pem(
        cert.cert_pem.as_bytes().to_vec(),
        cert.key_pem.as_bytes().to_vec(),
    )
    .await
    .map_err(listen_error)?;
    let handle: Handle<SocketAddr> = Handle::new();
    let server = axum_server::from_tcp_rustls(listener, tls)
        .map_err(listen_error)?
        .handle(handle.clone());
    let task = tokio::spawn(async move { server.serve(router.into_make_service()).await });
    Ok(RunningLogServer { addr, handle, task })
}

/// The query of a log request.
#[derive(Debug, Default, PartialEq)]
struct LogOptions {
    follow: bool,
    previous: bool,
    timestamps: bool,
    tail_lines: Option<usize>,
    limit_bytes: Option<usize>,
    since_seconds: Option<u64>,
    since_time: Option<Timestamp>,
}

impl LogOptions {
    fn parse(raw: &str) -> Result<LogOptions, String> {
        let mut options = LogOptions::default();
        for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
            let flag = || matches!(&*value, "1" | "t" | "T" | "true" | "TRUE" | "True");
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("invalid value {value:?} for {name}"))
            };
            let size = || number().and_then(|n| usize::try_from(n).map_err(|e| e.to_string()));
            match &*name {
                "follow" => options.follow = flag(),
                "previous" => options.previous = flag(),
                "timestamps" => options.timestamps = flag(),
                "tailLines" => options.tail_lines = Some(size()?),
                "limitBytes" => options.limit_bytes = Some(size()?),
                "sinceSeconds" => options.since_seconds = Some(number()?),
                "sinceTime" => {
                    options.since_time = Some(
                        value
                            .parse()
                            .map_err(|_| format!("invalid value {value:?} for sinceTime"))?,
                    )
                }
                _ => {}
            }
        }
        Ok(options)
    }

    /// The earliest record to show, from `sinceSeconds` (before `now`)
    /// or `sinceTime`.
    fn since(&self, now: Timestamp) -> Option<Timestamp> {
        let by_seconds = self.since_seconds.map(|s| {
            i64::try_from(s)
                .ok()
                .and_then(|s| now.checked_sub(SignedDuration::from_secs(s)).ok())
                .unwrap_or(Timestamp::MIN)
        });
        by_seconds.or(self.since_time)
    }
}

fn plain(code: StatusCode, message: impl Into<String>) -> Response {
    (code, message.into()).into_response()
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    constant_time_eq(presented.as_bytes(), token.as_bytes()) && !token.is_empty()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn container_logs(
    State(state): State<LogState>,
    UrlPath((namespace, pod, container)): UrlPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if !authorized(&headers, &state.token) {
        return plain(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let options = match LogOptions::parse(query.as_deref().unwrap_or("")) {
        Ok(options) => options,
        Err(message) => return plain(StatusCode::BAD_REQUEST, message),
    };
    let log = match state
        .runtime
        .log_file(&namespace, &pod, &container, options.previous)
    {
        Ok(log) => log,
        Err(e @ (RuntimeError::UnknownPod(_) | RuntimeError::UnknownContainer { .. })) => {
            return plain(StatusCode::NOT_FOUND, e.to_string());
        }
        Err(e @ RuntimeError::NoPreviousInstance { .. }) => {
            return plain(StatusCode::BAD_REQUEST, e.to_string());
        }
        Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let start = match tail_offset(&log.path, options.tail_lines).await {
        Ok(start) => start,
        Err(e) => {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading {}: {e}", log.path.display()),
            );
        }
    };
    let follower = Follower {
        render: Render {
            timestamps: options.timestamps,
            since: options.since(state.clock.now()),
        },
        state,
        namespace,
        pod,
        container,
        log,
        offset: start,
        remaining: options.limit_bytes.unwrap_or(usize::MAX),
        follow: options.follow,
    };
    let mut response = Response::new(Body::from_stream(futures::stream::unfold(
        follower,
        Follower::next,
    )));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// The response to a log request over a whole log held in memory (`CRI
/// records`, a container that writes nothing more): the same options as
/// [`router`]'s, `follow` ending at once; `Err` is the 400's message.
pub fn render_whole(log: &[u8], raw_query: &str, now: Timestamp) -> Result<Vec<u8>, String> {
    let options = LogOptions::parse(raw_query)?;
    let start = options.tail_lines.map_or(0, |n| tail_start(log, n));
    let render = Render {
        timestamps: options.timestamps,
        since: options.since(now),
    };
    let (mut out, _) = render.records(&log[start..]);
    if let Some(limit) = options.limit_bytes {
        out.truncate(limit);
    }
    Ok(out)
}

/// Where the last `tail_lines` records of the log begin (the start
/// without a tail).
async fn tail_offset(path: &Path, tail_lines: Option<usize>) -> std::io::Result<u64> {
    let Some(n) = tail_lines else {
        return Ok(0);
    };
    let bytes = match tokio::fs::read(path).await {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(u64::try_from(tail_start(&bytes, n)).unwrap_or(0))
}

/// Where the last `n` lines of `bytes` begin (a final line without a
/// newline counts as a line).
fn tail_start(bytes: &[u8], n: usize) -> usize {
    if n == 0 {
        return bytes.len();
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 1)
        .map_or(0, |(i, _)| i + 1)
}

/// How records become the response: the kubelet's output.
#[derive(Debug, Clone, Copy)]
struct Render {
    timestamps: bool,
    since: Option<Timestamp>,
}

impl Render {
    /// The output of the complete records in `bytes`, and how many bytes
    /// they took (an incomplete last record waits for the rest).
    fn records(&self, bytes: &[u8]) -> (Vec<u8>, usize) {
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut out = Vec::with_capacity(complete);
        for line in bytes[..complete].split(|b| *b == b'\n') {
            if line.is_empty() {
                continue;
            }
            match cri_log::parse(line) {
                Some(record) => {
                    if self.since.is_some_and(|since| record.time < since) {
                        continue;
                    }
                    if self.timestamps {
                        out.extend_from_slice(cri_log::format_time(record.time).as_bytes());
                        out.push(b' ');
                    }
                    out.extend_from_slice(record.content);
                    if !record.partial {
                        out.push(b'\n');
                    }
                }
                // Not a record: shown as it is.
                None => {
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
            }
        }
        (out, complete)
    }
}

/// Streams a log: what was there, then (with `follow`) what the container
/// instance writes until it ends.
struct Follower {
    state: LogState,
    render: Render,
    namespace: String,
    pod: String,
    container: String,
    log: LogFile,
    offset: u64,
    remaining: usize,
    follow: bool,
}

impl Follower {
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Follower)> {
        loop {
            if self.remaining == 0 {
                return None;
            }
            // Whether this instance has ended, read before the file so
            // that nothing it wrote before ending is missed.
            let ended = !self.follow
                || match self.state.runtime.log_file(
                    &self.namespace,
                    &self.pod,
                    &self.container,
                    false,
                ) {
                    Ok(now) => now.path != self.log.path || !now.running,
                    Err(_) => true,
                };
            match self.read_more().await {
                Ok(mut chunk) if !chunk.is_empty() => {
                    chunk.truncate(self.remaining);
                    self.remaining -= chunk.len();
                    return Some((Ok(Bytes::from(chunk)), self));
                }
                Ok(_) => {}
                Err(e) => {
                    self.remaining = 0;
                    return Some((Err(e), self));
                }
            }
            if ended {
                return None;
            }
            self.state.clock.sleep(FOLLOW_POLL).await;
        }
    }

    /// The output of the records written since the last read.
    async fn read_more(&mut self) -> std::io::Result<Vec<u8>> {
        let mut file = match tokio::fs::File::open(&self.log.path).await {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        file.seek(std::io::SeekFrom::Start(self.offset)).await?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).await?;
        let (out, used) = self.render.records(&bytes);
        self.offset += u64::try_from(used).unwrap_or(0);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_lines_takes_the_last_lines() {
        let cases: [(&[u8], usize, &[u8]); 7] = [
            (b"a\nb\nc\n", 2, b"b\nc\n"),
            (b"a\nb\nc\n", 3, b"a\nb\nc\n"),
            (b"a\nb\nc\n", 10, b"a\nb\nc\n"),
            (b"a\nb\nc", 1, b"c"),
            (b"a\nb\nc\n", 0, b""),
            (b"", 3, b""),
            (b"a\n\nb\n", 2, b"\nb\n"),
        ];
        for (log, n, want) in cases {
            assert_eq!(&log[tail_start(log, n)..], want, "{log:?} tail {n}");
        }
    }

    #[test]
    fn options_parse_like_the_kubelet() {
        assert_eq!(
            LogOptions::parse("follow=true&tailLines=5&limitBytes=100&previous=1&timestamps=true"),
            Ok(LogOptions {
                follow: true,
                previous: true,
                timestamps: true,
                tail_lines: Some(5),
                limit_bytes: Some(100),
                since_seconds: None,
                since_time: None,
            })
        );
        let since = LogOptions::parse("sinceTime=2026-01-01T00:00:00Z").map(|o| o.since_time);
        assert_eq!(since, Ok(Some(at("2026-01-01T00:00:00Z"))));
        let now = at("2026-01-01T00:10:00Z");
        let since = LogOptions::parse("sinceSeconds=60").map(|o| o.since(now));
        assert_eq!(since, Ok(Some(at("2026-01-01T00:09:00Z"))));
        assert!(LogOptions::parse("sinceTime=yesterday").is_err());
        assert_eq!(LogOptions::parse(""), Ok(LogOptions::default()));
        assert!(LogOptions::parse("tailLines=-1").is_err());
        assert!(LogOptions::parse("limitBytes=x").is_err());
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn records_render_as_the_kubelet_writes_them() {
        let mut log = Vec::new();
        let t1 = at("2026-01-01T00:00:01Z");
        let t2 = at("2026-01-01T00:00:02.5Z");
        log.extend(cri_log::encode(t1, cri_log::Stream::Stdout, false, b"one"));
        log.extend(cri_log::encode(t2, cri_log::Stream::Stderr, true, b"two "));
        log.extend(cri_log::encode(
            t2,
            cri_log::Stream::Stderr,
            false,
            b"halves",
        ));
        log.extend_from_slice(b"plain line\n2026-01-01T00:00:03Z stdout F torn");
        let cases = [
            (false, None, "one\ntwo halves\nplain line\n"),
            (
                true,
                None,
                "2026-01-01T00:00:01.000000000Z one\n2026-01-01T00:00:02.500000000Z two 2026-01-01T00:00:02.500000000Z halves\nplain line\n",
            ),
            (false, Some(t2), "two halves\nplain line\n"),
        ];
        for (timestamps, since, want) in cases {
            let (out, used) = Render { timestamps, since }.records(&log);
            assert_eq!(
                String::from_utf8_lossy(&out),
                want,
                "{timestamps} {since:?}"
            );
            assert_eq!(&log[used..], b"2026-01-01T00:00:03Z stdout F torn");
        }
    }

    #[test]
    fn only_the_node_token_is_accepted() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(header::AUTHORIZATION, v);
            }
            headers
        };
        assert!(authorized(&with("Bearer secret"), "secret"));
        assert!(!authorized(&with("Bearer secreT"), "secret"));
        assert!(!authorized(&with("Bearer secret2"), "secret"));
        assert!(!authorized(&with("Basic secret"), "secret"));
        assert!(!authorized(&HeaderMap::new(), "secret"));
        assert!(!authorized(&with("Bearer "), ""));
    }

    #[test]
    fn the_serving_certificate_is_made_once_and_kept() -> Result<(), LogServerError> {
        let dir = tempfile::tempdir().map_err(|source| LogServerError::Io {
            path: "tempdir".into(),
            source,
        })?;
        let first = ensure_serving_cert(
            dir.path(),
            "n1",
            &["127.0.0.1"
                .parse()
                .map_err(|_| rcgen::Error::CouldNotParseCertificate)?],
        )?;
        let second = ensure_serving_cert(dir.path(), "n1", &[])?;
        assert_eq!(first.cert_pem, second.cert_pem);
        assert!(first.key_pem.contains("PRIVATE KEY"));
        Ok(())
    }
}
