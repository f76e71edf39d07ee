//! The `berth server` child process a benchmark measures: the binary to
//! run, its data directory, starting it on a free loopback port, and the
//! first connection once it is ready; and the benchmark's own runtime.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use hyper::{Method, StatusCode};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::client::{Client, Protocol, Target, tls_config};

/// How long the server may take to start and load.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The `berth` server child process and what it wrote to its data directory.
pub(crate) struct ServerProcess {
    pub(crate) child: tokio::process::Child,
    pub(crate) pid: u32,
    pub(crate) url: String,
    /// Becomes true when the server says its simulated nodes are up
    /// (`--sim-nodes`: each registered, renewed and reported once).
    pub(crate) sim_nodes_up: tokio::sync::watch::Receiver<bool>,
}

/// The `berth` binary to run: `given`, or the one next to this binary.
pub(crate) fn berth_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let berth = match given {
        Some(path) => path.to_path_buf(),
        None => std::env::current_exe()
            .context("locating this binary")?
            .with_file_name("berth"),
    };
    anyhow::ensure!(
        berth.exists(),
        "{} not found: build it (cargo build --release -p berth) or pass --berth-bin",
        berth.display()
    );
    Ok(berth)
}

/// Where a benchmark makes its server's data directory (`given`, else the
/// temp dir), created if need be.
pub(crate) fn data_parent(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let parent = given.map_or_else(std::env::temp_dir, Path::to_path_buf);
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("data directory {}", parent.display()))?;
    Ok(parent)
}

/// The benchmark's own runtime, with `threads` workers.
pub(crate) fn bench_runtime(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("tokio runtime")
}

/// `berth server` flags that leave the API server alone in its process: the
/// pods this benchmark loads are bound to nodes that never heart-beat, so
/// the node lifecycle controller would start tainting and evicting them a
/// minute in, and the scheduler would cache every pod.
pub(crate) const API_SERVER_ONLY: &[&str] = &[
    "--disable-scheduler",
    "--controllers=-node-lifecycle-controller,-taint-eviction-controller",
];

/// Starts `berth server` with `extra` flags.
pub(crate) async fn start_server_with(
    berth: &Path,
    data_dir: &Path,
    extra: &[&str],
) -> anyhow::Result<ServerProcess> {
    let mut child = tokio::process::Command::new(berth)
        .arg("server")
        .args(extra)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--listen")
        .arg("127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", berth.display()))?;
    let pid = child.id().context("the server exited at once")?;
    let stderr = child.stderr.take().context("server stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let url = tokio::time::timeout(START_TIMEOUT, async {
        while let Some(line) = lines.next_line().await? {
            eprintln!("server: {line}");
            if let Some(rest) = line.split("listening on ").nth(1) {
                let url = rest.split_whitespace().next().unwrap_or("").to_string();
                return anyhow::Ok(url);
            }
        }
        bail!("the server exited before listening")
    })
    .await
    .context("the server did not start")??;
    // Keep reading the server's log so it never blocks on a full pipe.
    let (up, sim_nodes_up) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("server: {line}");
            if line.ends_with(berth_agent::sim::NODES_UP) {
                up.send_replace(true);
            }
        }
    });
    Ok(ServerProcess {
        child,
        pid,
        url,
        sim_nodes_up,
    })
}

/// The server's address, CA and admin token as a [`Target`], and a first
/// connection on which `/readyz` answered 200 (every watch cache loaded).
pub(crate) async fn ready_target(
    server: &ServerProcess,
    data_dir: &Path,
    protocol: Protocol,
) -> anyhow::Result<(Arc<Target>, Client)> {
    let authority = server
        .url
        .strip_prefix("https://")
        .context("the server URL is not https")?
        .to_string();
    let addr: SocketAddr = authority.parse().context("the server address")?;
    let token = std::fs::read_to_string(data_dir.join("admin-token"))
        .context("reading the admin token")?
        .trim()
        .to_string();
    let target = Arc::new(Target {
        addr,
        authority,
        token: format!("Bearer {token}"),
        tls: tls_config(&data_dir.join("ca.crt"), protocol)?,
        protocol,
    });
    let probe = target.connect().await?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let (status, _) = probe.call(Method::GET, "/readyz", Bytes::new()).await?;
        if status == StatusCode::OK {
            break;
        }
        if Instant::now() > deadline {
            bail!("the server is not ready after {START_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((target, probe))
}
