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
    /// A kubeconfig allowed to list and watch every Node and pod (the
    /// server's `admin.kubeconfig`): the fleet's two shared watches use it,
    /// as no node credential may read other nodes' objects. Every node
    /// still writes with its own credential.
    #[arg(long, value_name = "FILE")]
    kubeconfig: PathBuf,
    /// Where the fleet serves its nodes' kubelet endpoints (`kubectl logs`,
    /// `kubectl top`) to the API server, over HTTPS: one port for every
    /// node, told apart by the node credential the API server presents.
    /// Every node advertises this address (127.0.0.1 for an unspecified
    /// one) and port in its status.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "IP:PORT")]
    kubelet_address: std::net::SocketAddr,
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
    let template = read_template(args.node_template.as_deref())?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca_pem =
        std::fs::read(&args.join.ca_file).map_err(|e| InputError::new(&args.join.ca_file, e))?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let watcher = watcher_bearer(&args.kubeconfig)?;
    // One client (one connection pool) for every node: each node's request
    // carries its node's token, the shared watches the kubeconfig's.
    let base =
        client_from_kubeconfig(&render_kubeconfig(&args.join.server, &ca_pem, "sim", None)).await?;
    let client = with_default_bearer(base.clone(), watcher);
    check_watcher(&client, &args.kubeconfig).await?;
    let tokens_path = args.data_dir.join("node-tokens");
    let mut tokens = read_tokens(&tokens_path)?;
    // The kept credentials are one cluster's: the first one tells.
    if let Some((name, token)) = tokens.iter().next() {
        let node = with_default_bearer(base, bearer_header(token).context("token header")?);
        if let Err(problem) = check_credential(&node, name).await {
            refused(
                problem,
                &tokens_path,
                &args.join.server,
                args.join.token.is_some(),
            )?;
            std::fs::remove_file(&tokens_path).map_err(|e| InputError::new(&tokens_path, e))?;
            tokens.clear();
        }
    }
    let names: Vec<String> = (0..args.nodes)
        .map(|i| sim::sim_node_name(&args.name_prefix, i))
        .collect();
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
                let token = request_node_token(&args.join.server, &ca, join_token, name).await;
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
    let clock = Clock::real();
    let runtime = Arc::new(berth_runtime::sim::SimRuntime::new(clock.clone()));
    let kubelets = serve_kubelets(args, &runtime, &tokens, &clock).await?;
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
                bearer: bearer_header(tokens.get(name)?)?,
                template: template.clone(),
                phase: None,
            })
        })
        .collect();
    let stats = Arc::new(SimStats::default());
    let stop = crate::agent_cmd::shutdown_signal();
    eprintln!(
        "berth sim: {} nodes in {} zone(s) against {}",
        nodes.len(),
        args.zones.max(1),
        args.join.server
    );
    Fleet {
        client,
        nodes,
        runtime,
        clock,
        options: fleet_options(args.max_in_flight),
        stats,
    }
    .run(stop)
    .await;
    kubelets.shutdown().await;
    Ok(())
}

/// The fleet's kubelet endpoints over HTTPS at `--kubelet-address`, as a
/// real agent serves its own (the API server reaches both the same way),
/// with a self-signed certificate kept in the data dir.
async fn serve_kubelets(
    args: &FleetArgs,
    runtime: &Arc<berth_runtime::sim::SimRuntime>,
    tokens: &BTreeMap<String, String>,
    clock: &Clock,
) -> anyhow::Result<berth_runtime::log_server::RunningLogServer> {
    let ip = advertised_ip(args.kubelet_address.ip());
    let cert = berth_runtime::log_server::ensure_serving_cert(&args.data_dir, "berth-sim", &[ip])?;
    let router = berth_runtime::sim_kubelet::router(
        runtime.clone(),
        tokens
            .iter()
            .map(|(name, token)| (name.clone(), token.clone())),
        clock.clone(),
    );
    let server = berth_runtime::log_server::serve(args.kubelet_address, router, &cert)
        .await
        .with_context(|| {
            format!(
                "serving the nodes' kubelet endpoints on {}",
                args.kubelet_address
            )
        })?;
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
/// its shared watches go out as `system:berth:sim`.
pub fn spawn_in_process(
    api: &Arc<berth_apiserver::api::ApiServer>,
    count: usize,
    zones: usize,
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
            bearer,
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
    };
    Ok(tokio::spawn(fleet.run(stop)))
}
