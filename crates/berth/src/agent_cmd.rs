//! `berth agent`: join a host to a berth cluster and run its pods.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use berth_agent::agent::{self, AgentOptions};
use berth_agent::config::AgentConfig;
use berth_agent::credential::{
    CredentialProblem, JoinError, check_credential, client_from_kubeconfig, node_kubeconfig,
};
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

/// How a node joins a berth cluster with its join token: `berth agent`
/// and `berth sim fleet` share these. Both can join any cluster through a
/// kubeconfig instead (`--kubeconfig`), without them.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The berth API server's URL, e.g. https://10.0.0.1:6443, to join
    /// with the join token.
    #[arg(long, value_name = "URL", requires = "ca_file")]
    pub server: Option<String>,
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
    #[arg(long, value_name = "CA.crt", requires = "server")]
    pub ca_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    join: JoinArgs,
    /// Join any Kubernetes cluster with this kubeconfig, as a kubelet's
    /// `--kubeconfig`: a credential of `system:node:<name>` (client
    /// certificate or token). With `--bootstrap-kubeconfig`, where it is
    /// written once TLS bootstrap has the node's certificate (and
    /// bootstrapped again when it is missing or the server rejects it).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "server",
        conflicts_with = "server"
    )]
    kubeconfig: Option<PathBuf>,
    /// A kubeconfig with a bootstrap token (group `system:bootstrappers`),
    /// as a kubelet's: the agent asks the cluster's certificates API for a
    /// client certificate (signer `kubernetes.io/kube-apiserver-client-kubelet`),
    /// waits for the controller manager to approve and sign it, and writes
    /// `--kubeconfig`. berth server has no certificates API: this is for
    /// other clusters.
    #[arg(long, value_name = "FILE", requires = "kubeconfig")]
    bootstrap_kubeconfig: Option<PathBuf>,
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

/// The node's client, its bearer token when it has one (the log server
/// checks it), and the server's URL: through `--kubeconfig` (TLS
/// bootstrap first when it is missing or rejected and a bootstrap
/// kubeconfig is given), or berth's join token.
async fn node_client(args: &AgentArgs) -> anyhow::Result<(kube::Client, Option<String>, String)> {
    let (server, ca_file) = match (&args.kubeconfig, &args.join.server, &args.join.ca_file) {
        (Some(path), _, _) => return kubeconfig_client(args, path).await,
        (None, Some(server), Some(ca_file)) => (server, ca_file),
        // clap asks for --kubeconfig or --server with --ca-file.
        _ => anyhow::bail!("give --kubeconfig, or --server and --ca-file"),
    };
    let kubeconfig = node_kubeconfig(
        &args.data_dir,
        server,
        ca_file,
        args.join.token.as_deref(),
        &args.node_name,
    )
    .await
    .context("joining the cluster")?;
    let client = client_from_kubeconfig(&kubeconfig).await?;
    let token = berth_agent::credential::kubeconfig_token(&kubeconfig)
        .context("the node kubeconfig has no token")?;
    Ok((client, Some(token), server.clone()))
}

/// The client of `--kubeconfig`, bootstrapped first with
/// `--bootstrap-kubeconfig` when it is missing, or when the server
/// rejects it (expired, or another cluster's), as a kubelet does.
async fn kubeconfig_client(
    args: &AgentArgs,
    path: &std::path::Path,
) -> anyhow::Result<(kube::Client, Option<String>, String)> {
    let bootstrap = |why: &'static str| async move {
        let Some(bootstrap) = &args.bootstrap_kubeconfig else {
            return Ok::<(), anyhow::Error>(());
        };
        eprintln!(
            "berth agent: {why}; TLS bootstrap with {} (a CertificateSigningRequest for system:node:{})",
            bootstrap.display(),
            args.node_name
        );
        berth_agent::tls_bootstrap::bootstrap(
            bootstrap,
            path,
            &args.node_name,
            berth_agent::tls_bootstrap::CERTIFICATE_WAIT,
        )
        .await?;
        Ok(())
    };
    if !path.exists() {
        bootstrap("no kubeconfig yet").await?;
    }
    let mut client = crate::kubeconfig_flags::client_from_file(path).await?;
    if let Err(problem) = check_credential(&client, &args.node_name).await {
        let detail = match problem {
            CredentialProblem::Untrusted(detail) => {
                return Err(InputError::new(
                    path,
                    format!("the server's certificate does not verify with this CA: {detail}"),
                )
                .into());
            }
            CredentialProblem::Rejected(reason) => reason,
        };
        if args.bootstrap_kubeconfig.is_none() {
            return Err(InputError::new(
                path,
                format!("the server rejected this credential: {detail}"),
            )
            .into());
        }
        tracing::warn!(kubeconfig = %path.display(), %detail, "the server rejected the node's kubeconfig");
        bootstrap("the server rejected the kubeconfig").await?;
        client = crate::kubeconfig_flags::client_from_file(path).await?;
    }
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, e))?;
    let token = berth_agent::credential::kubeconfig_token(&text);
    let server = crate::kubeconfig_flags::server_of(path);
    Ok((client, token, server))
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
    let (client, token, server) = node_client(args).await?;
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
    // accepts only this node's own credential, so a node without a token
    // (a client certificate, from TLS bootstrap) serves none: the API
    // server would call it with its own kubelet client certificate, which
    // the agent has no CA to check.
    let logs = match &token {
        Some(token) => {
            let ips: Vec<IpAddr> = facts
                .addresses
                .iter()
                .filter(|a| a.type_ == "InternalIP")
                .filter_map(|a| a.address.parse().ok())
                .collect();
            let cert = berth_runtime::log_server::ensure_serving_cert(
                &args.data_dir,
                &args.node_name,
                &ips,
            )?;
            let addr = SocketAddr::new(args.address, args.port);
            let logs = berth_runtime::log_server::serve(
                addr,
                berth_runtime::log_server::router(runtime.clone(), token, clock.clone())
                    .merge(berth_runtime::log_server::summary_router(token, figures)),
                &cert,
            )
            .await
            .with_context(|| format!("serving logs on {addr}"))?;
            Some(logs)
        }
        None => None,
    };
    let template = NodeTemplate {
        name: args.node_name.clone(),
        labels,
        taints,
        capacity,
        allocatable,
        addresses: facts.addresses.clone(),
        node_info: facts.node_info.clone(),
        kubelet_port: logs.as_ref().map(|logs| i32::from(logs.addr.port())),
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
    let serving = match &logs {
        Some(logs) => format!("serving its logs and figures on https://{}", logs.addr),
        None => "no log server (the credential is not a token)".to_string(),
    };
    eprintln!(
        "berth agent: node {} joining {server} ({:?} runtime); {serving}",
        args.node_name, args.runtime
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
    if let Some(logs) = logs {
        logs.shutdown().await;
    }
    eprintln!("berth agent: stopped");
    Ok(())
}
