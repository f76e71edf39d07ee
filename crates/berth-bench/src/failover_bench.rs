//! `berth-bench failover`: how long a cluster of `berth server`s on one etcd
//! goes without a scheduler and controllers when their leader dies.
//!
//! Each run starts a private etcd of three members on loopback and three
//! `berth server` child processes on it with the given election timing. The
//! first takes both Leases (`kube-system/kube-scheduler` and
//! `kube-controller-manager`) before the other two start. After a random
//! part of a retry period (so the kill falls anywhere in the leader's
//! renewal cycle) the leader is killed with SIGKILL, and the benchmark
//! measures, from the kill:
//!
//! - **takeover**: until another server holds both Leases (the later of
//!   the two `acquireTime`s the new holders wrote);
//! - **first binding**: until a pod created at the kill is bound (its
//!   `PodScheduled` time, whole seconds, so the poll's own time is used);
//! - **first eviction**: until a pod on a node tainted NoExecute at the
//!   kill, not tolerating it, is marked for deletion.
//!
//! The figures are wall-clock times of one machine, read through the third
//! server (never killed), polled every 10 ms.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use berth_agent::credential::client_from_kubeconfig;
use clap::Args;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;

use crate::harness::{ServerProcess, berth_binary, start_server_with};
use crate::measure::Machine;

#[derive(Debug, Args)]
pub struct FailoverArgs {
    /// Failovers to measure.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// --leader-elect-lease-duration of the servers.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    lease_duration: Duration,
    /// --leader-elect-renew-deadline of the servers.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    renew_deadline: Duration,
    /// --leader-elect-retry-period of the servers.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    retry_period: Duration,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
}

fn parse_duration(value: &str) -> Result<Duration, String> {
    berth_core::duration::parse_duration(value).map_err(|e| e.to_string())
}

#[derive(Debug, Serialize)]
pub struct FailoverReport {
    bench: &'static str,
    machine: Machine,
    lease_duration_s: f64,
    renew_deadline_s: f64,
    retry_period_s: f64,
    runs: Vec<RunFigures>,
    takeover_s: Summary,
    first_binding_s: Summary,
    first_eviction_s: Summary,
    /// Whether every takeover came within the lease duration plus one
    /// jittered retry period (2.2 retry periods), the election's bound.
    every_takeover_within_bound: bool,
}

/// One failover, in seconds from the kill.
#[derive(Debug, Clone, Serialize)]
pub struct RunFigures {
    /// The random delay before the kill, up to one retry period after the
    /// first server was seen holding both Leases (so that the kill falls
    /// anywhere in its renewal cycle).
    kill_delay_s: f64,
    scheduler_lease_s: f64,
    controllers_lease_s: f64,
    takeover_s: f64,
    first_binding_s: f64,
    first_eviction_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    min: f64,
    median: f64,
    max: f64,
}

impl Summary {
    fn of(values: impl Iterator<Item = f64>) -> Summary {
        let mut sorted: Vec<f64> = values.collect();
        sorted.sort_by(f64::total_cmp);
        let at = |i: usize| sorted.get(i).copied().unwrap_or(0.0);
        Summary {
            min: at(0),
            median: at(sorted.len() / 2),
            max: at(sorted.len().saturating_sub(1)),
        }
    }
}

/// How long any one wait of a run may take.
const STEP: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(10);

/// A wait's deadline: [`STEP`] from now.
struct Deadline {
    what: &'static str,
    at: Instant,
}

impl Deadline {
    fn new(what: &'static str) -> Deadline {
        Deadline {
            what,
            at: Instant::now() + STEP,
        }
    }

    /// Sleeps one poll interval, or fails once the deadline has passed.
    async fn tick(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            Instant::now() < self.at,
            "timed out waiting for {}",
            self.what
        );
        tokio::time::sleep(POLL).await;
        Ok(())
    }
}

/// The pid in a server's identity (`<host>_<pid>-<random>`) and the
/// acquireTime of `lease`, once it is held.
async fn holder(leases: &Api<Lease>, lease: &str) -> anyhow::Result<Option<(u32, Timestamp)>> {
    let Some(spec) = leases.get_opt(lease).await?.and_then(|l| l.spec) else {
        return Ok(None);
    };
    let pid = spec
        .holder_identity
        .as_deref()
        .and_then(|id| id.rsplit_once('_'))
        .and_then(|(_, unique)| unique.split('-').next()?.parse().ok());
    Ok(pid.zip(spec.acquire_time.map(|t| t.0)))
}

async fn admin_client(dir: &std::path::Path) -> anyhow::Result<kube::Client> {
    let text = std::fs::read_to_string(dir.join("kubeconfig.yaml")).context("kubeconfig")?;
    Ok(client_from_kubeconfig(&text).await?)
}

fn seconds_since(start: Timestamp, end: Timestamp) -> f64 {
    end.duration_since(start).as_secs_f64()
}

async fn one_run(args: &FailoverArgs, berth: &std::path::Path) -> anyhow::Result<RunFigures> {
    let etcd = berth_store::testing::EtcdServer::start_cluster(3).await?;
    let endpoints = etcd.endpoints().join(",");
    let go = |d: Duration| format!("{}ms", d.as_millis());
    let flags = [
        "--etcd".to_string(),
        endpoints,
        format!("--leader-elect-lease-duration={}", go(args.lease_duration)),
        format!("--leader-elect-renew-deadline={}", go(args.renew_deadline)),
        format!("--leader-elect-retry-period={}", go(args.retry_period)),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let dirs: Vec<tempfile::TempDir> = (0..3)
        .map(|_| tempfile::tempdir())
        .collect::<Result<_, _>>()?;
    let mut leader = start_server_with(berth, dirs[0].path(), &flags).await?;
    let leases: Api<Lease> = Api::namespaced(admin_client(dirs[0].path()).await?, "kube-system");
    let wait = Deadline::new("the first server to hold both Leases");
    loop {
        let both = (
            holder(&leases, "kube-scheduler").await?,
            holder(&leases, "kube-controller-manager").await?,
        );
        if matches!(both, (Some((a, _)), Some((b, _))) if a == leader.pid && b == leader.pid) {
            break;
        }
        wait.tick().await?;
    }
    let mut others: Vec<ServerProcess> = Vec::new();
    for dir in &dirs[1..] {
        others.push(start_server_with(berth, dir.path(), &flags).await?);
    }
    let client = admin_client(dirs[2].path()).await?;
    let wait = Deadline::new("the third server to answer");
    while client
        .request_text(hyper::Request::get("/readyz").body(Vec::new())?)
        .await
        .is_err()
    {
        wait.tick().await?;
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // A node to bind to and one to evict from, and a pod on the latter;
    // every pod tolerates every NoSchedule taint (no kubelet reports here).
    for name in ["bind-0", "evict-0"] {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]},
        }))?;
        nodes.create(&PostParams::default(), &node).await?;
    }
    let pod = |name: &str, node: Option<&str>| -> anyhow::Result<Pod> {
        Ok(serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}],
                "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]},
        }))?)
    };
    pods.create(&PostParams::default(), &pod("evicted", Some("evict-0"))?)
        .await?;

    // Kill the leader somewhere in its renewal cycle.
    let mut phase = [0u8; 4];
    getrandom::fill(&mut phase).map_err(|e| anyhow::anyhow!("random: {e}"))?;
    let kill_delay = args
        .retry_period
        .mul_f64(f64::from(u32::from_le_bytes(phase)) / f64::from(u32::MAX));
    tokio::time::sleep(kill_delay).await;
    leader.child.kill().await?;
    let killed_at = Timestamp::now();
    pods.create(&PostParams::default(), &pod("bound", None)?)
        .await?;
    nodes
        .patch(
            "evict-0",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"taints": [
                {"key": "failover", "effect": "NoExecute"}]}})),
        )
        .await?;
    let pids: Vec<u32> = others.iter().map(|s| s.pid).collect();
    let held = |h: Option<(u32, Timestamp)>| h.filter(|(pid, _)| pids.contains(pid));
    let (mut bound_at, mut evicted_at, mut scheduler, mut controllers) = (None, None, None, None);
    let wait = Deadline::new("another server to take over, bind and evict");
    loop {
        let now = Timestamp::now();
        let bound = pods.get("bound").await?.spec.and_then(|s| s.node_name);
        bound_at = bound_at.or(bound.map(|_| now));
        let evicted = pods.get("evicted").await?.metadata.deletion_timestamp;
        evicted_at = evicted_at.or(evicted.map(|_| now));
        scheduler = scheduler.or(held(holder(&leases, "kube-scheduler").await?));
        controllers = controllers.or(held(holder(&leases, "kube-controller-manager").await?));
        if let (Some(bound_at), Some(evicted_at), Some((_, scheduler)), Some((_, controllers))) =
            (bound_at, evicted_at, scheduler, controllers)
        {
            drop(others);
            drop(etcd);
            return Ok(RunFigures {
                kill_delay_s: kill_delay.as_secs_f64(),
                scheduler_lease_s: seconds_since(killed_at, scheduler),
                controllers_lease_s: seconds_since(killed_at, controllers),
                takeover_s: seconds_since(killed_at, scheduler.max(controllers)),
                first_binding_s: seconds_since(killed_at, bound_at),
                first_eviction_s: seconds_since(killed_at, evicted_at),
            });
        }
        wait.tick().await?;
    }
}

pub fn run(args: &FailoverArgs) -> anyhow::Result<FailoverReport> {
    let timing = berth_leader::Timing {
        lease_duration: args.lease_duration,
        renew_deadline: args.renew_deadline,
        retry_period: args.retry_period,
    };
    timing.validate()?;
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let mut runs = Vec::new();
    for run in 0..args.runs.max(1) {
        let figures = runtime.block_on(one_run(args, &berth))?;
        eprintln!("failover run {run}: {figures:?}");
        runs.push(figures);
    }
    let bound = (args.lease_duration + args.retry_period.mul_f64(2.2)).as_secs_f64();
    Ok(FailoverReport {
        bench: "failover",
        machine: Machine::describe(),
        lease_duration_s: args.lease_duration.as_secs_f64(),
        renew_deadline_s: args.renew_deadline.as_secs_f64(),
        retry_period_s: args.retry_period.as_secs_f64(),
        takeover_s: Summary::of(runs.iter().map(|r| r.takeover_s)),
        first_binding_s: Summary::of(runs.iter().map(|r| r.first_binding_s)),
        first_eviction_s: Summary::of(runs.iter().map(|r| r.first_eviction_s)),
        every_takeover_within_bound: runs.iter().all(|r| r.takeover_s <= bound),
        runs,
    })
}
