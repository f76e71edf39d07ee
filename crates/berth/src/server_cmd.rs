//! `berth server`: the API server (and, as they arrive, the scheduler and
//! controllers) in one process, on the embedded store or etcd.

use berth_core::duration::parse_duration;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use berth_apiserver::allocators::range::{PortRange, ServiceCidr};
use berth_apiserver::api::ApiConfig;
use berth_apiserver::auth::User;
use berth_apiserver::cache::CacheLimits;
use berth_apiserver::server::{ServerOptions, start};
use berth_apiserver::watch_limits::WatchLimits;
use berth_core::FeatureGates;
use clap::Args;

/// Where `berth server` keeps a component's Lease: upstream's
/// `kube-system/<component>`.
fn lock(component: &str) -> (String, String) {
    ("kube-system".to_string(), component.to_string())
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Where the store, certificates, tokens and kubeconfig live.
    #[arg(long, default_value = "/var/lib/berth", value_name = "DIR")]
    data_dir: PathBuf,
    /// Address to serve HTTPS on.
    #[arg(long, default_value = "127.0.0.1:6443", value_name = "ADDR")]
    listen: SocketAddr,
    /// etcd endpoints (comma-separated); without it the embedded store is used.
    #[arg(long, value_delimiter = ',', value_name = "URL,...")]
    etcd: Vec<String>,
    /// Feature gates, e.g. `TaintTolerationComparisonOperators=false`.
    #[arg(long = "feature-gates", value_name = "NAME=BOOL,...", default_value = "", value_parser = crate::check::parse_gates)]
    feature_gates: FeatureGates,
    /// tolerationSeconds of the not-ready toleration added to every pod.
    #[arg(long, default_value_t = 300)]
    default_not_ready_toleration_seconds: i64,
    /// tolerationSeconds of the unreachable toleration added to every pod.
    #[arg(long, default_value_t = 300)]
    default_unreachable_toleration_seconds: i64,
    /// Do not run the scheduler in this process.
    #[arg(long)]
    disable_scheduler: bool,
    #[command(flatten)]
    scheduler: crate::scheduler_flags::SchedulerFlags,
    #[command(flatten)]
    pub leader_election: crate::leader_election::LeaderElectionFlags,
    #[command(flatten)]
    controllers: crate::controllers_flags::ControllerFlags,
    /// Simulated nodes to run inside the server (a whole cluster in one
    /// command): `sim-000000`, `sim-000001`, ...
    #[arg(long, default_value_t = 0, value_name = "N")]
    sim_nodes: usize,
    /// Spread the simulated nodes over this many zones.
    #[arg(long, default_value_t = 1, value_name = "Z")]
    sim_zones: usize,
    /// Largest request body read; bigger ones get 413 (upstream's 3 MiB).
    #[arg(long, default_value_t = berth_apiserver::api::MAX_BODY_BYTES, value_name = "BYTES",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=64 * 1024 * 1024))]
    max_request_body_bytes: usize,
    /// Deepest nesting of objects and lists a JSON or YAML request body may
    /// have; deeper ones get 400 "exceeded max depth of N".
    #[arg(long, default_value_t = berth_apiserver::body::DEFAULT_MAX_DEPTH, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=berth_apiserver::body::DEFAULT_MAX_DEPTH as u64))]
    max_body_depth: usize,
    /// The most bytes of object JSON the watch caches keep as history for
    /// watches that resume, all types together (the oldest go first;
    /// resuming from before them is 410 Gone).
    #[arg(long, default_value = "512Mi", value_name = "BYTES", value_parser = parse_bytes)]
    watch_cache_history_bytes: usize,
    /// A watch this many bytes of changes behind is closed (its client
    /// resumes from the last change it read).
    #[arg(long, default_value = "64Mi", value_name = "BYTES", value_parser = parse_bytes)]
    watch_max_lag_bytes: usize,
    /// The embedded store's page cache: pages read and written are kept in
    /// memory up to this much.
    #[arg(long, default_value = "1Gi", value_name = "BYTES", value_parser = parse_bytes)]
    store_cache_bytes: usize,
    /// Concurrent watches one user may have open; more get 429.
    #[arg(long, default_value_t = WatchLimits::default().per_client, value_name = "N")]
    max_watches_per_client: usize,
    /// Concurrent watches of all users together; more get 429.
    #[arg(long, default_value_t = WatchLimits::default().total, value_name = "N")]
    max_watches: usize,
    /// API Priority and Fairness: with `--max-mutating-requests-inflight`,
    /// the requests (but watches and logs) served at once, split among
    /// upstream's priority levels by their shares; a request finding its
    /// level full waits in a fair queue up to 15 s, then gets 429.
    #[arg(long, default_value_t = 400, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    max_requests_inflight: usize,
    /// See `--max-requests-inflight` (upstream's 200).
    #[arg(long, default_value_t = 200, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    max_mutating_requests_inflight: usize,
    /// On SIGTERM or SIGINT: how long requests in flight may take to finish
    /// before their connections are dropped and the store is closed.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    shutdown_grace_period: Duration,
    /// The CIDR Services' cluster IPs come from (one IP family). Its first
    /// address goes to the `default/kubernetes` Service.
    #[arg(long, default_value = "10.96.0.0/12", value_name = "CIDR")]
    service_cluster_ip_range: ServiceCidr,
    /// The ports NodePort and LoadBalancer Services' node ports come from.
    #[arg(long, default_value = "30000-32767", value_name = "FROM-TO")]
    service_node_port_range: PortRange,
}

/// A byte count as a Kubernetes quantity (`512Mi`, `1Gi`, `1000000`).
fn parse_bytes(text: &str) -> Result<usize, String> {
    let quantity = berth_core::quantity::Quantity::parse(text).map_err(|e| e.to_string())?;
    usize::try_from(quantity.value())
        .map_err(|_| format!("{text:?} is not a byte count (it must not be negative)"))
}

pub async fn run(args: &ServerArgs) -> anyhow::Result<()> {
    let scheduler_setup = args.scheduler.setup(args.feature_gates)?;
    let mut api = ApiConfig::default();
    api.strategy.admission.gates = args.feature_gates;
    api.strategy.admission.default_not_ready_toleration_seconds =
        args.default_not_ready_toleration_seconds;
    api.strategy
        .admission
        .default_unreachable_toleration_seconds = args.default_unreachable_toleration_seconds;
    api.watch_cache = CacheLimits {
        history_bytes: args.watch_cache_history_bytes,
        watcher_lag_bytes: args.watch_max_lag_bytes,
        ..CacheLimits::default()
    };
    api.watches = WatchLimits {
        per_client: args.max_watches_per_client,
        total: args.max_watches,
    };
    api.max_request_body_bytes = args.max_request_body_bytes;
    api.flow_control.server_concurrency =
        args.max_requests_inflight + args.max_mutating_requests_inflight;
    api.body.max_depth = args.max_body_depth;
    api.service_cluster_ip_range = args.service_cluster_ip_range;
    api.service_node_port_range = args.service_node_port_range;
    api.zone_rates = args.controllers.zone_rates();
    if !args.disable_scheduler {
        api.explainer = berth_apiserver::api::explainer::Explainer(Some(std::sync::Arc::new(
            crate::components::FrameworkExplainer {
                profiles: scheduler_setup.profiles.clone(),
            },
        )));
    }
    let options = ServerOptions {
        data_dir: args.data_dir.clone(),
        listen: args.listen,
        etcd: args.etcd.clone(),
        api,
        connections: Default::default(),
        store_cache_bytes: args.store_cache_bytes,
    };
    let mut server = start(options).await.context("starting berth server")?;
    let election = args.leader_election.election(!args.etcd.is_empty());
    // One watch of Pods and one of Nodes for the controllers and the
    // scheduler of this process, each change decoded once (as the
    // controller manager's: both may list and watch every Pod and Node).
    let watches = berth_client::SharedWatches::new(crate::components::in_process_client(
        &server.api,
        User::kube_controller_manager(),
    )?);
    let controllers = crate::controllers_flags::start(
        watches.clone(),
        server.api.clock.clone(),
        &args.controllers,
        args.feature_gates,
        election
            .as_ref()
            .map(|e| (e, lock("kube-controller-manager"))),
    );
    let store = if args.etcd.is_empty() {
        "embedded store".to_string()
    } else {
        format!("etcd {}", args.etcd.join(","))
    };
    eprintln!("berth server listening on {} ({store})", server.url);
    if let Some(election) = &election {
        eprintln!(
            "berth server: leader election as {} (lease {:?}, renew deadline {:?}, retry {:?})",
            election.identity,
            election.timing.lease_duration,
            election.timing.renew_deadline,
            election.timing.retry_period
        );
    }
    let stop_sim = tokio_util::sync::CancellationToken::new();
    if args.sim_nodes > 0 {
        crate::fleet_cmd::spawn_in_process(
            &server.api,
            args.sim_nodes,
            args.sim_zones,
            watches.pods().clone(),
            stop_sim.clone(),
        )?;
        eprintln!(
            "berth server: {} simulated node(s) in {} zone(s)",
            args.sim_nodes,
            args.sim_zones.max(1)
        );
    }
    // Absolute paths, so that the lines work from any directory; the join
    // token goes by environment, not on a command line others can read.
    eprintln!(
        "join a node: BERTH_JOIN_TOKEN=$(cat {}) berth agent --server {} --ca-file {} --node-name NAME",
        absolute(&args.data_dir.join("join-token")).display(),
        server.url,
        absolute(&server.credentials.ca_cert).display()
    );
    // The admin token is not printed: logs are read by others. The link
    // carries a one-time code instead, worth nothing once used or after
    // a few minutes; else the page asks for the token once.
    let token_file = absolute(&args.data_dir.join("admin-token"));
    match server.api.ui_login_link(&server.url) {
        Ok(link) => eprintln!(
            "live cluster page: {link} (works once, for {} min; or open {}/ui/ with the token: $(cat {}))",
            berth_apiserver::ui_login::LOGIN_CODE_TTL.as_secs() / 60,
            server.url,
            token_file.display()
        ),
        Err(e) => eprintln!(
            "live cluster page: {}/ui/ (token: $(cat {}); no login link: {e})",
            server.url,
            token_file.display()
        ),
    }
    println!(
        "export KUBECONFIG={}",
        absolute(&server.credentials.kubeconfig).display()
    );
    let scheduler = if args.disable_scheduler {
        None
    } else {
        berth_apiserver::metrics::add_component_registry(
            berth_scheduler::client::metrics::registry(),
        );
        Some(crate::components::start_scheduler(
            crate::components::in_process_client(&server.api, User::kube_scheduler())?,
            watches,
            server.api.clock.clone(),
            scheduler_setup,
            election.as_ref().map(|e| (e, lock("kube-scheduler"))),
        ))
    };
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    let signal = tokio::select! {
        result = server.wait() => {
            stop_sim.cancel();
            return result.context("serving");
        }
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    };
    eprintln!("berth server: {signal}, stopping");
    tracing::info!(
        signal,
        "stopping: no new connections, watches closed, requests in flight finishing"
    );
    stop_sim.cancel();
    // The in-process components first, so they write nothing to a store
    // being closed (their Leases released, so another server leads at
    // once); then the API (requests in flight finish) and the store.
    if let Some(scheduler) = scheduler {
        scheduler.stop().await;
        tracing::info!("shutdown: scheduler stopped");
    }
    controllers.stop().await;
    tracing::info!("shutdown: controllers stopped");
    server
        .shutdown(args.shutdown_grace_period)
        .await
        .context("stopping berth server")?;
    tracing::info!("shutdown: API server stopped, store closed");
    eprintln!("berth server: stopped");
    Ok(())
}

/// `path` made absolute against the working directory (as given when that
/// cannot be read).
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
