//! `berth-bench sim`: N simulated nodes heart-beating against one
//! `berth server` child process (embedded store in a temporary directory),
//! at the default 10 s lease interval.
//!
//! The nodes are berth's simulated fleet (`berth_agent::sim`, what
//! `berth sim` runs) inside this process, so the figures for "sim" are
//! this process's. Each node authenticates as itself: the benchmark writes
//! the N node credentials into the server's `node-tokens` file before the
//! server starts (what the join endpoint would have issued one by one).
//!
//! Phases: **register** (every node creates its Node, first Lease and
//! status; time until all have), then a **steady** window of `--seconds`
//! in which lease renewals/s and the CPU and memory of server and sim are
//! measured. A node is counted as falsely Unknown when two of its
//! successful renewals were more than `leaseDurationSeconds` (40 s) apart:
//! in that gap its Lease had expired (the node lifecycle controller allows
//! 50 s, so this count is the stricter one); the longest gap is reported.
//! The server's own verdict is counted too: a watch on Nodes (admin
//! token, from the revision at which registration finished) records every
//! node whose `Ready` condition the node lifecycle controller ever set to
//! `Unknown`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use berth_agent::config::AgentConfig;
use berth_agent::credential::{client_from_kubeconfig, render_kubeconfig};
use berth_agent::node_client::{bearer_header, with_default_bearer};
use berth_agent::sim::{self, Fleet, FleetOptions, SimNode, SimStats};
use berth_core::clock::Clock;
use clap::Args;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::harness::{Memory, berth_binary, cpu_seconds, memory_of, start_server_with};
use crate::measure::Machine;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Simulated nodes.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// Zones the nodes are spread over.
    #[arg(long, default_value_t = 3)]
    zones: usize,
    /// Length of the measured steady window, in seconds (600 for the record).
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Requests in flight at most.
    #[arg(long, default_value_t = 1024)]
    max_in_flight: usize,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
    /// Directory under which the server's temporary data directory is made.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Extra flags for `berth server` (repeat it; e.g. `--server-arg=--max-requests-inflight=800`).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SimReport {
    bench: &'static str,
    machine: Machine,
    params: Params,
    register: RegisterFigures,
    steady: SteadyFigures,
    /// Nodes with two successful renewals more than 40 s apart, over the
    /// whole run (lease expired in between: what a node lifecycle
    /// controller would have marked Unknown).
    falsely_unknown_nodes_lease_gap_over_40s: u64,
    /// Nodes whose `Ready` condition the server (node lifecycle
    /// controller) set to `Unknown` during the steady window, seen by a
    /// watch on Nodes.
    nodes_marked_unknown_by_server: u64,
    /// Whether that watch ran the whole window without a gap (a failed or
    /// expired watch is resumed; a gap would make the count a lower bound).
    node_watch_unbroken: bool,
    max_renew_gap_seconds: f64,
    holds: bool,
}

#[derive(Debug, Serialize)]
struct Params {
    nodes: usize,
    zones: usize,
    seconds: u64,
    lease_renew_interval_seconds: f64,
    lease_duration_seconds: i32,
    max_in_flight: usize,
    berth_bin: String,
    server_args: Vec<String>,
    false_unknown_measured_by: &'static str,
}

#[derive(Debug, Serialize)]
struct RegisterFigures {
    seconds: f64,
    registered: u64,
    register_failures: u64,
}

#[derive(Debug, Serialize)]
struct SteadyFigures {
    seconds: f64,
    lease_renewals: u64,
    lease_renewals_per_sec: f64,
    expected_renewals_per_sec: f64,
    lease_failures: u64,
    status_writes: u64,
    status_failures: u64,
    server_cpu_cores: f64,
    sim_cpu_cores: f64,
    server_memory: Option<Memory>,
    sim_memory: Option<Memory>,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

async fn run_async(args: &SimArgs, berth: &Path, parent: &Path) -> anyhow::Result<SimReport> {
    let dir = tempfile::tempdir_in(parent).context("server data directory")?;
    // The node credentials, as the join endpoint would have issued them.
    let mut nodes = Vec::with_capacity(args.nodes);
    let template = Arc::new(sim::default_template());
    let mut tokens_file = String::with_capacity(args.nodes * 64);
    for i in 0..args.nodes {
        let name = sim::sim_node_name("sim-", i);
        let token = random_token()?;
        tokens_file.push_str(&format!("{token} {name}\n"));
        nodes.push(SimNode {
            zone: Some(sim::sim_zone(i, args.zones)),
            bearer: Some(bearer_header(&token).context("token header")?),
            name,
            template: template.clone(),
            phase: None,
        });
    }
    std::fs::write(dir.path().join("node-tokens"), tokens_file).context("node-tokens")?;
    let flags: Vec<&str> = args.server_args.iter().map(String::as_str).collect();
    let server = start_server_with(berth, dir.path(), &flags).await?;
    let ca = std::fs::read(dir.path().join("ca.crt")).context("ca.crt")?;
    let base = client_from_kubeconfig(&render_kubeconfig(&server.url, &ca, "sim", None)).await?;
    let admin_token = std::fs::read_to_string(dir.path().join("admin-token"))
        .context("reading the admin token")?;
    // The fleet's shared Node and pod watches need an identity that may
    // read every node's objects; each node writes as itself.
    let watcher = bearer_header(admin_token.trim()).context("admin token header")?;
    let client = with_default_bearer(base, watcher);

    let config = AgentConfig::default();
    let stats = Arc::new(SimStats::default());
    let stop = CancellationToken::new();
    let clock = Clock::real();
    let fleet = tokio::spawn(
        Fleet {
            client,
            nodes,
            runtime: Arc::new(berth_runtime::sim::SimRuntime::new(clock.clone())),
            clock,
            options: FleetOptions {
                config: config.clone(),
                gates: berth_core::FeatureGates::default(),
                max_in_flight: args.max_in_flight,
            },
            stats: stats.clone(),
            pods: None,
        }
        .run(stop.clone()),
    );

    let started = Instant::now();
    let total = args.nodes as u64;
    let mut last_report = Instant::now();
    while stats.registered.load(Ordering::Relaxed) < total {
        if started.elapsed() > Duration::from_secs(1800) {
            anyhow::bail!(
                "only {} of {total} nodes registered in 30 minutes",
                stats.registered.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The registered nodes renew while the rest register: their longest
        // gap so far, as the window's lines give it later.
        if last_report.elapsed() >= Duration::from_secs(30) {
            last_report = Instant::now();
            eprintln!(
                "sim: registering, {:.0} s, {} registered, {} renewals, max gap {:.1} s",
                started.elapsed().as_secs_f64(),
                stats.registered.load(Ordering::Relaxed),
                stats.lease_renewals.load(Ordering::Relaxed),
                stats.max_renew_gap_ms.load(Ordering::Relaxed) as f64 / 1000.0,
            );
        }
    }
    let register = RegisterFigures {
        seconds: round3(started.elapsed().as_secs_f64()),
        registered: stats.registered.load(Ordering::Relaxed),
        register_failures: stats.register_failures.load(Ordering::Relaxed),
    };
    eprintln!("sim: {total} nodes registered in {:.1} s", register.seconds);

    let admin = client_from_kubeconfig(&render_kubeconfig(
        &server.url,
        &ca,
        "admin",
        Some(admin_token.trim()),
    ))
    .await?;
    let unknown_watch = tokio::spawn(watch_unknown_nodes(admin, stop.clone()));

    let me = std::process::id();
    let window_start = Instant::now();
    let renewals0 = stats.lease_renewals.load(Ordering::Relaxed);
    let lease_failures0 = stats.lease_failures.load(Ordering::Relaxed);
    let status0 = stats.status_writes.load(Ordering::Relaxed);
    let status_failures0 = stats.status_failures.load(Ordering::Relaxed);
    let server_cpu0 = cpu_seconds(server.pid);
    let sim_cpu0 = cpu_seconds(me);
    last_report = Instant::now();
    while window_start.elapsed() < Duration::from_secs(args.seconds) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if last_report.elapsed() >= Duration::from_secs(30) {
            last_report = Instant::now();
            eprintln!(
                "sim: {:.0} s, {} renewals, {} late, max gap {:.1} s, {} status writes",
                window_start.elapsed().as_secs_f64(),
                stats.lease_renewals.load(Ordering::Relaxed) - renewals0,
                stats.late_renewals.load(Ordering::Relaxed),
                stats.max_renew_gap_ms.load(Ordering::Relaxed) as f64 / 1000.0,
                stats.status_writes.load(Ordering::Relaxed) - status0
            );
        }
    }
    let seconds = window_start.elapsed().as_secs_f64();
    let server_cpu = cpu_seconds(server.pid) - server_cpu0;
    let sim_cpu = cpu_seconds(me) - sim_cpu0;
    let renewals = stats.lease_renewals.load(Ordering::Relaxed) - renewals0;
    let steady = SteadyFigures {
        seconds: round3(seconds),
        lease_renewals: renewals,
        lease_renewals_per_sec: round3(renewals as f64 / seconds),
        expected_renewals_per_sec: round3(
            args.nodes as f64 / config.lease_renew_interval().as_secs_f64() / 1.02,
        ),
        lease_failures: stats.lease_failures.load(Ordering::Relaxed) - lease_failures0,
        status_writes: stats.status_writes.load(Ordering::Relaxed) - status0,
        status_failures: stats.status_failures.load(Ordering::Relaxed) - status_failures0,
        server_cpu_cores: round3(server_cpu / seconds),
        sim_cpu_cores: round3(sim_cpu / seconds),
        server_memory: memory_of(server.pid),
        sim_memory: memory_of(me),
    };
    stop.cancel();
    let _ = fleet.await;
    let (marked_unknown, node_watch_unbroken) = match unknown_watch.await {
        Ok(Ok(seen)) => seen,
        Ok(Err(e)) => {
            eprintln!("sim: node watch failed: {e:#}");
            (0, false)
        }
        Err(e) => {
            eprintln!("sim: node watch task: {e}");
            (0, false)
        }
    };
    let late = stats.late_nodes.load(Ordering::Relaxed);
    let max_gap = stats.max_renew_gap_ms.load(Ordering::Relaxed) as f64 / 1000.0;
    drop(server);
    Ok(SimReport {
        bench: "sim",
        machine: Machine::describe(),
        params: Params {
            nodes: args.nodes,
            zones: args.zones,
            seconds: args.seconds,
            lease_renew_interval_seconds: config.lease_renew_interval().as_secs_f64(),
            lease_duration_seconds: config.node_lease_duration_seconds,
            max_in_flight: args.max_in_flight,
            berth_bin: berth.display().to_string(),
            server_args: args.server_args.clone(),
            false_unknown_measured_by: "lease renewal gaps > leaseDurationSeconds seen by the sim, and Ready=Unknown set by the server's node lifecycle controller (watch on Nodes)",
        },
        register,
        holds: late == 0
            && steady.lease_failures == 0
            && marked_unknown == 0
            && node_watch_unbroken,
        steady,
        falsely_unknown_nodes_lease_gap_over_40s: late,
        nodes_marked_unknown_by_server: marked_unknown,
        node_watch_unbroken,
        max_renew_gap_seconds: round3(max_gap),
    })
}

/// Watches Nodes from the current revision until `stop`, and returns how
/// many distinct nodes were ever seen with `Ready` = `Unknown`, and whether
/// the watch ran without a gap. It starts from a one-item list's revision
/// so it never lists the whole fleet.
async fn watch_unknown_nodes(
    admin: kube::Client,
    stop: CancellationToken,
) -> anyhow::Result<(u64, bool)> {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Api, ListParams, WatchEvent, WatchParams};

    let nodes: Api<Node> = Api::all(admin);
    let first = nodes
        .list_metadata(&ListParams::default().limit(1))
        .await
        .context("listing one node for a revision")?;
    let mut revision = first
        .metadata
        .resource_version
        .context("the list has no resourceVersion")?;
    let mut unknown = std::collections::HashSet::new();
    let mut unbroken = true;
    let params = WatchParams::default().timeout(290);
    while !stop.is_cancelled() {
        let mut stream = match nodes.watch(&params, &revision).await {
            Ok(stream) => stream.boxed(),
            Err(e) => {
                // 410 on the call itself (the revision left the server's
                // history): resume from a fresh revision; the gap makes the
                // count a lower bound.
                eprintln!("sim: node watch: {e}");
                unbroken = false;
                tokio::time::sleep(Duration::from_secs(1)).await;
                if matches!(&e, kube::Error::Api(s) if s.code == 410)
                    && let Ok(fresh) = nodes.list_metadata(&ListParams::default().limit(1)).await
                {
                    revision = fresh.metadata.resource_version.unwrap_or(revision);
                }
                continue;
            }
        };
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return Ok((unknown.len() as u64, unbroken)),
                event = stream.next() => event,
            };
            let node = match event {
                None => break,
                Some(Ok(WatchEvent::Added(node) | WatchEvent::Modified(node))) => node,
                Some(Ok(WatchEvent::Bookmark(b))) => {
                    revision = b.metadata.resource_version;
                    continue;
                }
                Some(Ok(WatchEvent::Deleted(_))) => continue,
                Some(Ok(WatchEvent::Error(e))) => {
                    // 410 Gone: resume from a fresh revision; the gap
                    // makes the count a lower bound.
                    eprintln!("sim: node watch: {e}");
                    unbroken = false;
                    let fresh = nodes.list_metadata(&ListParams::default().limit(1)).await?;
                    revision = fresh.metadata.resource_version.unwrap_or(revision);
                    break;
                }
                Some(Err(e)) => {
                    eprintln!("sim: node watch stream: {e}");
                    break;
                }
            };
            if let Some(rv) = node.metadata.resource_version.clone() {
                revision = rv;
            }
            let ready_unknown = node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "Unknown")
                });
            if ready_unknown
                && let Some(name) = node.metadata.name
                && unknown.insert(name.clone())
            {
                eprintln!("sim: the server marked {name} Unknown");
            }
        }
    }
    Ok((unknown.len() as u64, unbroken))
}

pub fn run(args: &SimArgs) -> anyhow::Result<SimReport> {
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_async(args, &berth, &parent))
}
