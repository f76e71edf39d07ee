//! `berth server`: the API server (and, as they arrive, the scheduler and
//! controllers) in one process, on the embedded store or etcd.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use berth_apiserver::api::ApiConfig;
use berth_apiserver::server::{ServerOptions, start};
use berth_core::FeatureGates;
use clap::Args;

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
    /// The `spec.schedulerName` of the pods the scheduler takes.
    #[arg(long, default_value = berth_scheduler::cycle::DEFAULT_SCHEDULER_NAME)]
    scheduler_name: String,
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
}

pub async fn run(args: &ServerArgs) -> anyhow::Result<()> {
    let mut api = ApiConfig::default();
    api.strategy.admission.gates = args.feature_gates;
    api.strategy.admission.default_not_ready_toleration_seconds =
        args.default_not_ready_toleration_seconds;
    api.strategy
        .admission
        .default_unreachable_toleration_seconds = args.default_unreachable_toleration_seconds;
    let options = ServerOptions {
        data_dir: args.data_dir.clone(),
        listen: args.listen,
        etcd: args.etcd.clone(),
        api,
    };
    let server = start(options).await.context("starting berth server")?;
    let election = args.leader_election.election(!args.etcd.is_empty());
    let _controllers = crate::controllers_flags::start(
        &server.api,
        &args.controllers,
        args.feature_gates,
        election.as_ref(),
    )?;
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
        crate::sim_cmd::spawn_in_process(
            &server.api,
            args.sim_nodes,
            args.sim_zones,
            stop_sim.clone(),
        )?;
        eprintln!(
            "berth server: {} simulated node(s) in {} zone(s)",
            args.sim_nodes,
            args.sim_zones.max(1)
        );
    }
    eprintln!(
        "join a node: berth agent --server {} --token $(cat {}) --ca-file {} --node-name NAME",
        server.url,
        args.data_dir.join("join-token").display(),
        server.credentials.ca_cert.display()
    );
    println!(
        "export KUBECONFIG={}",
        server.credentials.kubeconfig.display()
    );
    let _scheduler = if args.disable_scheduler {
        None
    } else {
        Some(crate::components::start_scheduler(
            &server.api,
            args.scheduler_name.clone(),
            args.feature_gates,
            election.as_ref(),
        )?)
    };
    let wait = server.wait();
    tokio::select! {
        result = wait => result.context("serving")?,
        _ = tokio::signal::ctrl_c() => eprintln!("berth server: interrupted, stopping"),
    }
    stop_sim.cancel();
    Ok(())
}
