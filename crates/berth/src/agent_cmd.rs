//! `berth agent`: join a host to a berth cluster and run its pods.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use berth_agent::agent::{self, AgentOptions};
use berth_agent::config::AgentConfig;
use berth_agent::credential::{JoinError, client_from_kubeconfig, node_kubeconfig};
use berth_agent::eviction_thresholds::{Thresholds, capacity_and_allocatable};
use berth_agent::metrics::AgentMetrics;
use berth_agent::node_client::NodeClient;
use berth_agent::registration::{NodeTemplate, parse_node_labels};
use berth_core::clock::Clock;
use berth_runtime::Runtime;
use berth_runtime::log_server::SummarySource;
use clap::{Args, ValueEnum};
use tokio_util::sync::CancellationToken;

use crate::input::InputError;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RuntimeKind {
    /// Each container's command runs as a host process.
    Process,
    /// Pods go Running at once; nothing runs on the host.
    Sim,
}

/// How a node joins a cluster: `berth agent` and `berth sim` share these.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The API server's URL, e.g. https://10.0.0.1:6443.
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// The cluster's join token (the server's `join-token` file): needed to
    /// join, and to join again when the server rejects the credential kept
    /// in the data dir (another cluster's).
    #[arg(
        long,
        env = "BERTH_JOIN_TOKEN",
        hide_env_values = true,
        value_name = "JOIN_TOKEN"
    )]
    pub token: Option<String>,
    /// The cluster CA certificate (the server's `ca.crt`).
    #[arg(long, value_name = "CA.crt")]
    pub ca_file: PathBuf,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    join: JoinArgs,
    /// This node's name (a DNS subdomain).
    #[arg(long, value_name = "NAME")]
    node_name: String,
    /// Where the node credential, pod logs and state are kept.
    #[arg(long, default_value = "/var/lib/berth-agent", value_name = "DIR")]
    data_dir: PathBuf,
    /// Register the Node; `false` waits for an admin to create it (with the
    /// annotation `berth.dev/join-allowed: "true"`, without which the join
    /// token does not join a name already registered).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    register_node: bool,
    /// Taints to register with: `key=value:Effect,...`.
    #[arg(long, default_value = "", value_name = "TAINTS")]
    register_with_taints: String,
    /// Labels to register with: `key=value,...`.
    #[arg(long, default_value = "", value_name = "LABELS")]
    node_labels: String,
    /// The address reported as the node's InternalIP.
    #[arg(long, value_name = "IP")]
    node_ip: Option<IpAddr>,
    /// How pods run.
    #[arg(long, value_enum, default_value = "process")]
    runtime: RuntimeKind,
    /// A KubeletConfiguration file (status frequencies, shutdown grace
    /// periods, eviction thresholds).
    #[arg(long, value_name = "agent.yaml")]
    config: Option<PathBuf>,
    /// The IP address the HTTPS log server binds (the kubelet's
    /// `--address`): every interface by default.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    address: IpAddr,
    /// The HTTPS port for container logs (`kubectl logs`), published in the
    /// Node's `daemonEndpoints`.
    #[arg(long, default_value_t = berth_runtime::log_server::DEFAULT_PORT, value_name = "PORT")]
    port: u16,
    /// Serve Prometheus metrics over HTTP on this address.
    #[arg(long, value_name = "ADDR")]
    metrics_bind_address: Option<SocketAddr>,
}

/// A join that failed on what the user gave (a rejected credential, a CA
/// that does not verify the server, no join token): exit 2.
pub fn is_join_error_to_fix(err: &anyhow::Error) -> bool {
    err.downcast_ref::<JoinError>()
        .is_some_and(JoinError::is_users_to_fix)
}

/// Cancelled on SIGTERM or Ctrl-C.
pub fn shutdown_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = tokio::signal::ctrl_c() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        cancel.cancel();
    });
    token
}

/// Serves `metrics` as `/metrics` over plain HTTP.
async fn serve_metrics(addr: SocketAddr, metrics: Arc<AgentMetrics>) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("metrics on {addr}"))?;
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request).await;
                let body = metrics.render();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    Ok(())
}

pub async fn run(args: &AgentArgs) -> anyhow::Result<()> {
    let problems = berth_core::validation::names::is_dns1123_subdomain(&args.node_name);
    if !problems.is_empty() {
        anyhow::bail!("--node-name {:?}: {}", args.node_name, problems.join("; "));
    }
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, e))?;
            AgentConfig::from_yaml(&text).map_err(|e| InputError::new(path, e))?
        }
        None => AgentConfig::default(),
    };
    let taints = berth_core::taint_spec::parse_register_with_taints(&args.register_with_taints)
        .context("--register-with-taints")?;
    let labels = parse_node_labels(&args.node_labels)
        .map_err(anyhow::Error::msg)
        .context("--node-labels")?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = node_kubeconfig(
        &args.data_dir,
        &args.join.server,
        &args.join.ca_file,
        args.join.token.as_deref(),
        &args.node_name,
    )
    .await
    .context("joining the cluster")?;
    let client = client_from_kubeconfig(&kubeconfig).await?;
    let clock = Clock::real();
    let sampling = tokio_util::sync::CancellationToken::new();
    // The node's figures: the host's and its processes' from /proc, or a
    // simulated node's made up from its pods' requests.
    let (runtime, runtime_version, figures): (Arc<dyn Runtime>, &str, SummarySource) = match args
        .runtime
    {
        RuntimeKind::Process => {
            let runtime: Arc<dyn Runtime> = Arc::new(berth_runtime::process::ProcessRuntime::new(
                clock.clone(),
                args.data_dir.join("pods"),
            ));
            let latest = berth_agent::usage::spawn_sampler(
                args.node_name.clone(),
                runtime.clone(),
                clock.clone(),
                sampling.clone(),
            );
            let figures: SummarySource =
                Arc::new(move || latest.lock().map(|s| s.clone()).unwrap_or_default());
            (runtime, "berth-process://0.1.0", figures)
        }
        RuntimeKind::Sim => {
            let runtime = Arc::new(berth_runtime::sim::SimRuntime::new(clock.clone()));
            let (sim, node) = (runtime.clone(), args.node_name.clone());
            let figures: SummarySource = Arc::new(move || sim.summary(&node));
            (runtime, "berth-sim://0.1.0", figures)
        }
    };
    let thresholds = Thresholds::from_map(&config.eviction_hard).map_err(anyhow::Error::msg)?;
    let facts = berth_agent::host::read_facts(&args.data_dir, args.node_ip, runtime_version)?;
    let (capacity, allocatable) = capacity_and_allocatable(&facts, &thresholds, config.max_pods);
    // The log server, so the API server can serve `pods/<name>/log`; it
    // accepts only this node's own credential.
    let token = berth_agent::credential::kubeconfig_token(&kubeconfig)
        .context("the node kubeconfig has no token")?;
    let ips: Vec<IpAddr> = facts
        .addresses
        .iter()
        .filter(|a| a.type_ == "InternalIP")
        .filter_map(|a| a.address.parse().ok())
        .collect();
    let cert =
        berth_runtime::log_server::ensure_serving_cert(&args.data_dir, &args.node_name, &ips)?;
    let logs = berth_runtime::log_server::serve(
        SocketAddr::new(args.address, args.port),
        berth_runtime::log_server::router(runtime.clone(), &token, clock.clone())
            .merge(berth_runtime::log_server::summary_router(&token, figures)),
        &cert,
    )
    .await
    .with_context(|| {
        format!(
            "serving logs on {}",
            SocketAddr::new(args.address, args.port)
        )
    })?;
    let template = NodeTemplate {
        name: args.node_name.clone(),
        labels,
        taints,
        capacity,
        allocatable,
        addresses: facts.addresses.clone(),
        node_info: facts.node_info.clone(),
        kubelet_port: Some(i32::from(logs.addr.port())),
    };
    let metrics = Arc::new(AgentMetrics::default());
    if let Some(addr) = args.metrics_bind_address {
        serve_metrics(addr, metrics.clone()).await?;
    }
    let options = AgentOptions {
        template,
        register_node: args.register_node,
        config,
        gates: berth_core::FeatureGates::default(),
        host_signals: Some(args.data_dir.clone()),
    };
    eprintln!(
        "berth agent: node {} joining {} ({:?} runtime); serving its logs and figures on https://{}",
        args.node_name, args.join.server, args.runtime, logs.addr
    );
    agent::run(
        NodeClient::new(client, &args.node_name),
        runtime,
        clock,
        options,
        metrics,
        shutdown_signal(),
    )
    .await?;
    sampling.cancel();
    logs.shutdown().await;
    eprintln!("berth agent: stopped");
    Ok(())
}
