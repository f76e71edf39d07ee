//! `berth sim fleet`: many simulated nodes in one process against a cluster,
//! and the same fleet inside `berth server --sim-nodes`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use berth_agent::config::AgentConfig;
use berth_agent::credential::{
    JoinError, check_credential, client_from_kubeconfig, refused, render_kubeconfig,
    request_node_token,
};
use berth_agent::node_client::{bearer_header, with_default_bearer};
use berth_agent::rate_limit::{RateLimit, rate_limited};
use berth_agent::registration::NodeTemplate;
use berth_agent::sim::{self, Fleet, FleetOptions, SimNode, SimStats};
use berth_core::clock::Clock;
use clap::Args;
use k8s_openapi::api::core::v1::Node;
use tokio_util::sync::CancellationToken;

use crate::input::InputError;

#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(flatten)]
    join: crate::agent_cmd::JoinArgs,
    /// How many nodes to simulate.
    #[arg(long, value_name = "N")]
    pub nodes: usize,
    /// Spread the nodes over this many zones (`topology.kubernetes.io/zone`).
    #[arg(long, default_value_t = 1, value_name = "Z")]
    zones: usize,
    /// A Node manifest whose labels, taints, capacity and allocatable every
    /// simulated node takes.
    #[arg(long, value_name = "FILE")]
    node_template: Option<PathBuf>,
    /// Node names are this prefix and a number.
    #[arg(long, default_value = "sim-", value_name = "PREFIX")]
    name_prefix: String,
    /// Where the nodes' credentials are kept across restarts.
    #[arg(long, default_value = "berth-sim-data", value_name = "DIR")]
    data_dir: PathBuf,
    /// Requests in flight at most.
    #[arg(long, default_value_t = 256, value_name = "N")]
    max_in_flight: usize,
    /// A kubeconfig allowed to list and watch every Node and pod (an
    /// admin's). Alone (no `--server`), it is the fleet's way into any
    /// Kubernetes cluster, as KWOK's: every node registers, renews its
    /// Lease, writes its status and runs its pods with this credential
    /// (any kind the kubeconfig holds: token, client certificate, exec).
    /// With `--server` and the join token, only the fleet's two shared
    /// watches use it (its token), and every node writes with its own
    /// node credential from berth's join endpoint.
    #[arg(long, value_name = "FILE")]
    kubeconfig: PathBuf,
    /// Where the fleet serves its nodes' kubelet endpoints (`kubectl logs`,
    /// `kubectl top`) to a berth API server, over HTTPS: one port for every
    /// node, told apart by the node credential the API server presents.
    /// Every node advertises this address (127.0.0.1 for an unspecified
    /// one) and port in its status. Only with `--server` (default
    /// 127.0.0.1:0 there): through a kubeconfig alone there are no node
    /// credentials to tell the API server's calls by, so none is served.
    #[arg(long, value_name = "IP:PORT", requires = "server")]
    kubelet_address: Option<std::net::SocketAddr>,
    /// Requests a second to the API server, on average, for the whole
    /// fleet (client-go's `--kube-api-qps`); 0, the default, sets no limit
    /// but `--max-in-flight` (a fleet needs about N/10 Lease renewals a
    /// second, so a fixed limit would starve a large one).
    #[arg(long, default_value_t = 0.0, value_name = "QPS")]
    kube_api_qps: f64,
    /// Requests allowed at once above `--kube-api-qps`.
    #[arg(long, default_value_t = 100, value_name = "N")]
    kube_api_burst: u32,
}

/// The template every simulated node takes: the default, or labels,
/// taints, capacity and allocatable from a Node manifest.
pub fn read_template(path: Option<&Path>) -> anyhow::Result<NodeTemplate> {
    let mut template = sim::default_template();
    let Some(path) = path else {
        return Ok(template);
    };
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, e))?;
    let node: Node = serde_yaml::from_str(&text).map_err(|e| InputError::new(path, e))?;
    if let Some(labels) = node.metadata.labels {
        template.labels = labels;
    }
    if let Some(taints) = node.spec.and_then(|s| s.taints) {
        template.taints = taints;
    }
    if let Some(status) = node.status {
        if let Some(capacity) = status.capacity {
            template.allocatable = status.allocatable.unwrap_or_else(|| capacity.clone());
            template.capacity = capacity;
        } else if let Some(allocatable) = status.allocatable {
            template.capacity = allocatable.clone();
            template.allocatable = allocatable;
        }
    }
    Ok(template)
}

pub fn fleet_options(max_in_flight: usize) -> FleetOptions {
    FleetOptions {
        config: AgentConfig::default(),
        gates: berth_core::FeatureGates::default(),
        max_in_flight,
    }
}

/// The credentials file: one `name token` per line.
fn read_tokens(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(n, t)| (n.to_string(), t.trim().to_string()))
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(InputError::new(path, e).into()),
    }
}

pub async fn run(args: &FleetArgs) -> anyhow::Result<()> {
    if args.nodes == 0 {
        anyhow::bail!("--nodes must be at least 1");
    }
    let limit = RateLimit::from_flags(args.kube_api_qps, args.kube_api_burst)?;
    let template = read_template(args.node_template.as_deref())?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let names: Vec<String> = (0..args.nodes)
        .map(|i| sim::sim_node_name(&args.name_prefix, i))
        .collect();
    let runtime = Arc::new(berth_runtime::sim::SimRuntime::new(Clock::real()));
    let (client, nodes, kubelets, server) = match (&args.join.server, &args.join.ca_file) {
        (Some(server), Some(ca_file)) => {
            let (client, nodes, kubelets) = join_with_node_credentials(
                args, server, ca_file, &names, template, &runtime, limit,
            )
            .await?;
            (client, nodes, Some(kubelets), server.clone())
        }
        _ => {
            let (client, nodes) = join_with_kubeconfig(args, &names, template, limit).await?;
            (
                client,
                nodes,
                None,
                crate::kubeconfig_flags::server_of(&args.kubeconfig),
            )
        }
    };
    let stats = Arc::new(SimStats::default());
    let stop = crate::agent_cmd::shutdown_signal();
    eprintln!(
        "berth sim: {} nodes in {} zone(s) against {server}",
        nodes.len(),
        args.zones.max(1),
    );
    let reporter = tokio::spawn(report_every(stats.clone(), STATS_EVERY));
    Fleet {
        client,
        nodes,
        runtime,
        clock: Clock::real(),
        options: fleet_options(args.max_in_flight),
        stats: stats.clone(),
        pods: None,
    }
    .run(stop)
    .await;
    reporter.abort();
    eprintln!("berth sim: stopped; {}", stats_line(&stats));
    if let Some(kubelets) = kubelets {
        kubelets.shutdown().await;
    }
    Ok(())
}

/// How often the fleet says how its nodes fare.
const STATS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The fleet's counters in one line: what an operator watching a scale
/// test needs (a late renewal is a node that looked dead for a while).
fn stats_line(stats: &SimStats) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    format!(
        "registered {} (failures {}), lease renewals {} (failures {}, late {} on {} nodes, longest gap {:.1} s), status writes {} (failures {})",
        stats.registered.load(Relaxed),
        stats.register_failures.load(Relaxed),
        stats.lease_renewals.load(Relaxed),
        stats.lease_failures.load(Relaxed),
        stats.late_renewals.load(Relaxed),
        stats.late_nodes.load(Relaxed),
        std::time::Duration::from_millis(stats.max_renew_gap_ms.load(Relaxed)).as_secs_f64(),
        stats.status_writes.load(Relaxed),
        stats.status_failures.load(Relaxed),
    )
}

async fn report_every(stats: Arc<SimStats>, every: std::time::Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        eprintln!("berth sim: {}", stats_line(&stats));
    }
}

/// `base`, rate limited when the flags say so.
fn limited(base: kube::Client, limit: Option<RateLimit>) -> kube::Client {
    match limit {
        Some(limit) => rate_limited(base, limit),
        None => base,
    }
}

/// Any cluster, through an admin's kubeconfig, as KWOK: every node writes
/// with the kubeconfig's credential. Nothing of berth's own is needed (no
/// join endpoint, no kubelet endpoints); NodeRestriction, which limits
/// what `system:node:*` credentials may write, does not apply to an admin.
async fn join_with_kubeconfig(
    args: &FleetArgs,
    names: &[String],
    template: NodeTemplate,
    limit: Option<RateLimit>,
) -> anyhow::Result<(kube::Client, Vec<SimNode>)> {
    if args.join.token.is_some() {
        anyhow::bail!("--token joins a berth server: give --server and --ca-file with it");
    }
    let client = limited(
        crate::kubeconfig_flags::client_from_file(&args.kubeconfig).await?,
        limit,
    );
    check_watcher(&client, &args.kubeconfig).await?;
    let template = Arc::new(template);
    let nodes = names
        .iter()
        .enumerate()
        .map(|(i, name)| SimNode {
            name: name.clone(),
            zone: Some(sim::sim_zone(i, args.zones)),
            bearer: None,
            template: template.clone(),
            phase: None,
        })
        .collect();
    Ok((client, nodes))
}

/// A berth server, through its join endpoint: every node gets (once, kept
/// in the data dir) and writes with its own node credential, and the
/// fleet serves the nodes' kubelet endpoints.
async fn join_with_node_credentials(
    args: &FleetArgs,
    server: &str,
    ca_file: &Path,
    names: &[String],
    template: NodeTemplate,
    runtime: &Arc<berth_runtime::sim::SimRuntime>,
    limit: Option<RateLimit>,
) -> anyhow::Result<(
    kube::Client,
    Vec<SimNode>,
    berth_runtime::log_server::RunningLogServer,
)> {
    let ca_pem = std::fs::read(ca_file).map_err(|e| InputError::new(ca_file, e))?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let watcher = watcher_bearer(&args.kubeconfig)?;
    // One client (one connection pool) for every node: each node's request
    // carries its node's token, the shared watches the kubeconfig's.
    let base = limited(
        client_from_kubeconfig(&render_kubeconfig(server, &ca_pem, "sim", None)).await?,
        limit,
    );
    let client = with_default_bearer(base.clone(), watcher);
    check_watcher(&client, &args.kubeconfig).await?;
    let tokens_path = args.data_dir.join("node-tokens");
    let mut tokens = read_tokens(&tokens_path)?;
    // The kept credentials are one cluster's: the first one tells.
    if let Some((name, token)) = tokens.iter().next() {
        let node = with_default_bearer(base, bearer_header(token).context("token header")?);
        if let Err(problem) = check_credential(&node, name).await {
            refused(problem, &tokens_path, server, args.join.token.is_some())?;
            std::fs::remove_file(&tokens_path).map_err(|e| InputError::new(&tokens_path, e))?;
            tokens.clear();
        }
    }
    let missing: Vec<&String> = names.iter().filter(|n| !tokens.contains_key(*n)).collect();
    if !missing.is_empty() {
        let join_token = args
            .join
            .token
            .as_deref()
            .ok_or_else(|| JoinError::NoCredential {
                path: tokens_path.clone(),
            })?
            .trim();
        eprintln!("berth sim: joining {} nodes", missing.len());
        use futures::StreamExt;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&tokens_path)
            .map_err(|e| InputError::new(&tokens_path, e))?;
        let mut joins = futures::stream::iter(missing.into_iter().map(|name| {
            let ca = ca_pem.clone();
            async move {
                let token = request_node_token(server, &ca, join_token, name).await;
                (name.clone(), token)
            }
        }))
        .buffer_unordered(32);
        while let Some((name, token)) = joins.next().await {
            let token = token.with_context(|| format!("joining node {name}"))?;
            use std::io::Write;
            writeln!(file, "{name} {token}").map_err(|e| InputError::new(&tokens_path, e))?;
            tokens.insert(name, token);
        }
    }
    let kubelet_address = args
        .kubelet_address
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let kubelets = serve_kubelets(args, kubelet_address, runtime, &tokens).await?;
    let mut template = template;
    template.addresses = vec![k8s_openapi::api::core::v1::NodeAddress {
        type_: "InternalIP".into(),
        address: advertised_ip(kubelets.addr.ip()).to_string(),
    }];
    template.kubelet_port = Some(i32::from(kubelets.addr.port()));
    let template = Arc::new(template);
    let nodes: Vec<SimNode> = names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            Some(SimNode {
                name: name.clone(),
                zone: Some(sim::sim_zone(i, args.zones)),
                bearer: Some(bearer_header(tokens.get(name)?)?),
                template: template.clone(),
                phase: None,
            })
        })
        .collect();
    Ok((client, nodes, kubelets))
}

/// The fleet's kubelet endpoints over HTTPS at `--kubelet-address`, as a
/// real agent serves its own (the API server reaches both the same way),
/// with a self-signed certificate kept in the data dir.
async fn serve_kubelets(
    args: &FleetArgs,
    address: std::net::SocketAddr,
    runtime: &Arc<berth_runtime::sim::SimRuntime>,
    tokens: &BTreeMap<String, String>,
) -> anyhow::Result<berth_runtime::log_server::RunningLogServer> {
    let ip = advertised_ip(address.ip());
    let cert = berth_runtime::log_server::ensure_serving_cert(&args.data_dir, "berth-sim", &[ip])?;
    let router = berth_runtime::sim_kubelet::router(
        runtime.clone(),
        tokens
            .iter()
            .map(|(name, token)| (name.clone(), token.clone())),
        Clock::real(),
    );
    let server = berth_runtime::log_server::serve(address, router, &cert)
        .await
        .with_context(|| format!("serving the nodes' kubelet endpoints on {address}"))?;
    eprintln!(
        "berth sim: kubelet endpoints (logs, figures) on https://{}",
        server.addr
    );
    Ok(server)
}

/// The address nodes advertise for `listen`: itself, or loopback when it
/// is unspecified (0.0.0.0 names no one host).
fn advertised_ip(listen: std::net::IpAddr) -> std::net::IpAddr {
    if listen.is_unspecified() {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        listen
    }
}

/// The bearer token of `--kubeconfig`, for the fleet's shared watches.
fn watcher_bearer(path: &Path) -> anyhow::Result<http::HeaderValue> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, e))?;
    berth_agent::credential::kubeconfig_token(&text)
        .and_then(|token| bearer_header(&token))
        .ok_or_else(|| {
            InputError::new(
                path,
                "no bearer token for the current context (the fleet's watches need one)",
            )
            .into()
        })
}

/// The fleet's watches need to read every Node and pod: a kubeconfig that
/// may not is the user's to fix, said before the fleet starts.
async fn check_watcher(client: &kube::Client, kubeconfig: &Path) -> anyhow::Result<()> {
    let nodes: kube::Api<Node> = kube::Api::all(client.clone());
    match nodes.list(&kube::api::ListParams::default().limit(1)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if matches!(status.code, 401 | 403) => Err(InputError::new(
            kubeconfig,
            format!(
                "this credential may not list Nodes ({} {}); the fleet's watches need one that may (an admin's)",
                status.code, status.message
            ),
        )
        .into()),
        // Not reachable yet: the fleet's own retries will say so.
        Err(e) => {
            tracing::warn!(error = %e, "could not check --kubeconfig; going on");
            Ok(())
        }
    }
}

/// Simulated nodes inside `berth server`: each node's token is registered
/// with the API directly, and the fleet talks to the router in-process;
/// its Node watch goes out as `system:berth:sim`, and it takes its pods
/// from `pods`, the process's shared pod watch (already decoded for the
/// controllers and the scheduler).
pub fn spawn_in_process(
    api: &Arc<berth_apiserver::api::ApiServer>,
    count: usize,
    zones: usize,
    pods: berth_client::SharedWatch<k8s_openapi::api::core::v1::Pod>,
    stop: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let names: Vec<String> = (0..count).map(|i| sim::sim_node_name("sim-", i)).collect();
    let joined = berth_sim::fleet::join_in_process(api, &names)?;
    let template = Arc::new(sim::default_template());
    let clock = Clock::real();
    let runtime = Arc::new(berth_runtime::sim::SimRuntime::new(clock.clone()));
    joined.serve_kubelets(api, &runtime, &clock);
    let nodes = names
        .into_iter()
        .zip(joined.bearers)
        .enumerate()
        .map(|(i, (name, bearer))| SimNode {
            zone: Some(sim::sim_zone(i, zones)),
            bearer: Some(bearer),
            name,
            template: template.clone(),
            phase: None,
        })
        .collect();
    let fleet = Fleet {
        client: joined.client,
        nodes,
        runtime,
        clock,
        options: fleet_options(64),
        stats: Arc::new(SimStats::default()),
        pods: Some(pods),
    };
    let (mut handle, task) = fleet.spawn(stop);
    // Said once every node has registered, renewed its Lease and made its
    // first status report: the cluster is settled (benchmarks wait for it).
    tokio::spawn(async move {
        if handle.up().await.is_ok() {
            eprintln!("berth server: {count} {}", sim::NODES_UP);
        }
    });
    Ok(task)
}
