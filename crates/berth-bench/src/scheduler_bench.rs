//! `berth-bench scheduler`: upstream scheduler_perf's shapes, end to end
//! through `berth server` over HTTPS.
//!
//! For each shape:
//! 1. `berth server --disable-scheduler` on a fresh data directory (the
//!    embedded redb store): create the nodes (5,000 by default, as
//!    `node-default.yaml`: ~8 cpus, 110 pods), clear admission's not-ready
//!    taint as the node lifecycle controller would (taint-heavy: put a
//!    `dedicated=bench:NoSchedule` taint on the first `--tainted` nodes
//!    instead), then create the pending pods through the API (10,000 by
//!    default, as `pod-default.yaml`: 100m cpu, 500Mi; taint-heavy: every
//!    other pod tolerates the taint). None is bound yet.
//! 2. Stop the server and start it again with its scheduler: the scheduler
//!    lists the cluster and binds every pod through `pods/binding`
//!    (each binding durable when it returns). The benchmark polls the
//!    server's `scheduler_schedule_attempts_total{result="scheduled"}`
//!    every `--poll-ms` and reports pods/s from the first bind to the last,
//!    and from the server's start to the last bind (listing included).
//! 3. Lists the pods and checks the outcome: every pod bound, no node over
//!    its allocatable pods or cpu, no pod on a taint it does not tolerate.
//!
//! The shapes of upstream's default-profile plugins (scheduler_perf's
//! `topology_spreading` and `affinity` configs, at 5,000 nodes in 3 zones):
//! - `topology-spread` (TopologySpreading 5000Nodes_5000Pods): 5,000 plain
//!   pods already bound (`--init-pods`), then 5,000 pods with
//!   `maxSkew: 5` over `topology.kubernetes.io/zone`, `DoNotSchedule`,
//!   selecting their own label `color: blue`;
//! - `node-inclusion-policy` (SchedulingWithNodeInclusionPolicy 5000Nodes):
//!   1,000 nodes tainted `foo:NoSchedule`, 4,000 pods with `maxSkew: 1`
//!   over `kubernetes.io/hostname`, `nodeAffinityPolicy` and
//!   `nodeTaintsPolicy` `Honor`;
//! - `anti-affinity` (SchedulingPodAntiAffinity 5000Nodes): 1,000 pods
//!   already bound in namespace `bench-init`, then 1,000 pods, all labelled
//!   `color: green` with required anti-affinity to `color: green` in both
//!   namespaces per hostname.
//!
//! Bound pods of the first and last are created with `spec.nodeName` (one
//! per node, round robin), as scheduler_perf's init pods are scheduled
//! before its measurement starts. The checks then verify the constraints.
//!
//! The server's CPU time is reported per pod: the API server (bindings,
//! watch fan-out) and the scheduler share one process, as in `berth server`.
//! It is read at every poll, so the scheduling phase proper (first bind to
//! last, per pod bound in it) is reported apart from the start-up before
//! the first bind (the watch caches and the scheduler's initial lists),
//! which does not grow with the rate and would otherwise be charged to it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, ValueEnum};
use hyper::{Method, StatusCode};
use serde::Serialize;

use crate::harness::{
    Client, Protocol, ServerProcess, bench_runtime, berth_binary, cpu_seconds, data_parent,
    node_json, ready_target, start_server_with,
};
use crate::measure::{Machine, round1};

mod preemption;

const NAMESPACE: &str = "bench";
const SCHEDULE_TIMEOUT: Duration = Duration::from_secs(600);
const SCHEDULED_METRIC: &str =
    "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"default-scheduler\"}";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// SchedulingBasic: plain pods on plain nodes.
    Basic,
    /// SchedulingBasic with `--tainted` nodes tainted NoSchedule and every
    /// other pod tolerating the taint.
    TaintHeavy,
    /// TopologySpreading: zone spreading with maxSkew 5.
    TopologySpread,
    /// SchedulingWithNodeInclusionPolicy: hostname spreading, maxSkew 1,
    /// taints and affinity honoured.
    NodeInclusionPolicy,
    /// SchedulingPodAntiAffinity: required anti-affinity per hostname.
    AntiAffinity,
    /// PreemptionAsync: nodes filled with low-priority pods, then
    /// high-priority pods that each must preempt (`--in-process` only).
    Preemption,
    /// Basic and taint-heavy, one after the other.
    All,
}

/// One measured workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    Basic,
    TaintHeavy,
    TopologySpread,
    NodeInclusionPolicy,
    AntiAffinity,
    Preemption,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Basic => "scheduling-basic",
            Workload::TaintHeavy => "taint-heavy",
            Workload::TopologySpread => "topology-spread",
            Workload::NodeInclusionPolicy => "node-inclusion-policy",
            Workload::AntiAffinity => "anti-affinity",
            Workload::Preemption => "preemption",
        }
    }

    /// Measured pods when `--pods` is not given (upstream's figures).
    fn default_pods(self) -> usize {
        match self {
            Workload::Basic | Workload::TaintHeavy => 10_000,
            Workload::TopologySpread | Workload::Preemption => 5_000,
            Workload::NodeInclusionPolicy => 4_000,
            Workload::AntiAffinity => 1_000,
        }
    }

    /// The project's goal in pods/s on a 2-core machine (issues 5 and 22).
    fn goal(self) -> Option<u32> {
        match self {
            Workload::Basic | Workload::TaintHeavy => Some(10_000),
            Workload::TopologySpread | Workload::Preemption => Some(5_000),
            Workload::AntiAffinity => Some(1_000),
            Workload::NodeInclusionPolicy => None,
        }
    }

    /// Pods bound before the measurement (`--init-pods` overrides).
    fn default_init_pods(self) -> usize {
        match self {
            Workload::TopologySpread => 5_000,
            Workload::AntiAffinity => 1_000,
            Workload::Preemption => 20_000,
            _ => 0,
        }
    }

    /// Nodes tainted, and with which taint.
    fn taint(self, tainted: usize) -> Option<(usize, &'static str)> {
        match self {
            Workload::TaintHeavy => Some((
                tainted,
                r#"[{"key":"dedicated","value":"bench","effect":"NoSchedule"}]"#,
            )),
            Workload::NodeInclusionPolicy => {
                Some((1_000, r#"[{"key":"foo","effect":"NoSchedule"}]"#))
            }
            _ => None,
        }
    }
}

const INIT_NAMESPACE: &str = "bench-init";

#[derive(Debug, Args)]
pub struct SchedulerArgs {
    #[arg(long, value_enum, default_value_t = Shape::All)]
    shape: Shape,
    #[arg(long, default_value_t = 5_000)]
    nodes: usize,
    /// Pods to schedule (measured); the shape's upstream figure by default.
    #[arg(long)]
    pods: Option<usize>,
    /// Pods bound before the measurement (topology-spread, anti-affinity);
    /// the shape's upstream figure by default.
    #[arg(long)]
    init_pods: Option<usize>,
    /// Nodes tainted in the taint-heavy shape.
    #[arg(long, default_value_t = 1_000)]
    tainted: usize,
    /// Concurrent clients loading the cluster.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// How often the scheduled-pods counter is read.
    #[arg(long, default_value_t = 20)]
    poll_ms: u64,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
    /// Where the server's data directories go (default: the temp dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// The scheduler's state machine alone, in this process: the same
    /// nodes and pods, no API server, store or network, every decision
    /// counted as bound at once. What the cycles cost by themselves.
    #[arg(long)]
    in_process: bool,
}

#[derive(Debug, Serialize)]
pub struct SchedulerReport {
    bench: &'static str,
    machine: Machine,
    params: Params,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    runs: Vec<ShapeRun>,
    /// `--in-process`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    in_process_runs: Vec<InProcessRun>,
    /// Upstream kube-scheduler's scheduler_perf CI thresholds for these
    /// shapes, for comparison (pods/s).
    upstream_thresholds: UpstreamThresholds,
}

#[derive(Debug, Serialize)]
struct Params {
    nodes: usize,
    pods: Option<usize>,
    tainted: usize,
    clients: usize,
    poll_ms: u64,
    berth_bin: String,
}

#[derive(Debug, Serialize)]
struct UpstreamThresholds {
    scheduling_basic_5000_nodes_10000_pods: u32,
    taint_heavy: u32,
    topology_spreading_5000_nodes_5000_pods: u32,
    scheduling_with_node_inclusion_policy_5000_nodes: u32,
    scheduling_pod_anti_affinity: u32,
    preemption_async: u32,
}

#[derive(Debug, Serialize)]
struct ShapeRun {
    shape: &'static str,
    pods: usize,
    init_pods: usize,
    load_seconds: f64,
    /// From the first binding seen to the last (the scheduler's rate).
    pods_per_sec_first_to_last_bind: f64,
    /// From the server's start (its initial list included) to the last.
    pods_per_sec_from_server_start: f64,
    seconds_first_to_last_bind: f64,
    seconds_server_start_to_first_bind: f64,
    /// Server CPU (API server + scheduler, one process) from the first
    /// bind seen to the last, per pod bound in that window.
    server_cpu_us_per_pod: f64,
    server_cpu_seconds: f64,
    /// Server CPU from the server answering (ready) to the last bind, per
    /// pod: the start-up lists included (the figure reported before
    /// 2026-11-23 as `server_cpu_us_per_pod`).
    server_cpu_us_per_pod_from_ready: f64,
    /// Server CPU from ready to the first bind seen (start-up lists).
    server_cpu_seconds_ready_to_first_bind: f64,
    checks: Checks,
    /// This project's goal for the shape on a 2-core machine (pods/s,
    /// first to last bind), and whether the run met it.
    #[serde(skip_serializing_if = "Option::is_none")]
    goal_pods_per_sec: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    goal_met: Option<bool>,
}

/// One shape through the state machine alone (`--in-process`).
#[derive(Debug, Serialize)]
struct InProcessRun {
    shape: &'static str,
    pods: usize,
    init_pods: usize,
    /// Handing the nodes and pods to the state machine (parsing included).
    setup_seconds: f64,
    /// From the first cycle to the last decision.
    seconds: f64,
    pods_per_sec: f64,
    /// This process's CPU over the cycles, per pod (one thread: about
    /// the wall time).
    cpu_us_per_pod: f64,
    checks: Checks,
    /// The preemption shape's own checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    preemption: Option<preemption::PreemptionChecks>,
}

#[derive(Debug, Serialize)]
struct Checks {
    pods_bound: usize,
    pods_unbound: usize,
    max_pods_on_a_node: usize,
    nodes_over_allocatable: usize,
    pods_on_an_untolerated_taint: usize,
    /// topology-spread: the largest zone count minus the smallest (≤ 5);
    /// node-inclusion-policy: the same per untainted node (≤ 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    spread_skew: Option<usize>,
    /// anti-affinity: nodes with two green pods, or a measured pod beside
    /// a bound one (0).
    #[serde(skip_serializing_if = "Option::is_none")]
    anti_affinity_violations: Option<usize>,
    /// `Scheduled` events written (the rest were dropped by the scheduler's
    /// bounded event queue, as client-go's broadcaster drops them).
    scheduled_events_written: usize,
}

fn pod_json(i: usize, workload: Workload) -> String {
    let (labels, extra) = match workload {
        Workload::TaintHeavy if i.is_multiple_of(2) => (
            r#""app":"bench""#,
            r#","tolerations":[{"key":"dedicated","operator":"Equal","value":"bench","effect":"NoSchedule"}]"#,
        ),
        Workload::Basic | Workload::TaintHeavy => (r#""app":"bench""#, ""),
        Workload::TopologySpread => (
            r#""color":"blue""#,
            r#","topologySpreadConstraints":[{"maxSkew":5,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"color":"blue"}}}]"#,
        ),
        Workload::NodeInclusionPolicy => (
            r#""foo":"bar""#,
            r#","topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule","nodeAffinityPolicy":"Honor","nodeTaintsPolicy":"Honor","labelSelector":{"matchLabels":{"foo":"bar"}}}]"#,
        ),
        Workload::AntiAffinity => (r#""color":"green""#, ANTI_AFFINITY),
        Workload::Preemption => return preemption_pod_json("pod", i, "", HIGH_PRIORITY),
    };
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"pod-{i:06}","namespace":"{NAMESPACE}","labels":{{{labels}}}}},"spec":{{"containers":[{{"name":"pause","image":"registry.k8s.io/pause:3.10","ports":[{{"containerPort":80}}],"resources":{{"requests":{{"cpu":"100m","memory":"500Mi"}}}}}}]{extra}}}}}"#
    )
}

const ANTI_AFFINITY: &str = r#","affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"color":"green"}},"topologyKey":"kubernetes.io/hostname","namespaces":["bench","bench-init"]}]}}"#;

/// The preemption shape's priorities (as the Priority admission would
/// have set them from two classes) and requests: four low pods fill a
/// node (`node_json`'s 7,910m), and a high pod needs three of them gone.
const LOW_PRIORITY: i32 = 0;
const HIGH_PRIORITY: i32 = 1_000;
const LOW_CPU_MILLI: i64 = 1_900;
const HIGH_CPU_MILLI: i64 = 6_000;
const NODE_CPU_MILLI: i64 = 7_910;

/// A pod of the preemption shape: `name-i`, bound to `node` when not "".
fn preemption_pod_json(name: &str, i: usize, node: &str, priority: i32) -> String {
    let (namespace, cpu) = if priority == HIGH_PRIORITY {
        (NAMESPACE, HIGH_CPU_MILLI)
    } else {
        (INIT_NAMESPACE, LOW_CPU_MILLI)
    };
    let node_name = if node.is_empty() {
        String::new()
    } else {
        format!(r#""nodeName":"{node}","#)
    };
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}-{i:06}","namespace":"{namespace}","uid":"{name}-{i:06}"}},"spec":{{{node_name}"priority":{priority},"containers":[{{"name":"pause","image":"registry.k8s.io/pause:3.10","resources":{{"requests":{{"cpu":"{cpu}m","memory":"500Mi"}}}}}}]}}}}"#
    )
}

/// A pod bound before the measurement, on node `i % nodes`.
fn init_pod_json(i: usize, nodes: usize, workload: Workload) -> String {
    let (labels, extra) = match workload {
        Workload::AntiAffinity => (r#""color":"green""#, ANTI_AFFINITY),
        Workload::Preemption => {
            let node = format!("node-{:05}", i % nodes.max(1));
            return preemption_pod_json("init", i, &node, LOW_PRIORITY);
        }
        _ => ("", ""),
    };
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"init-{i:06}","namespace":"{INIT_NAMESPACE}","labels":{{{labels}}}}},"spec":{{"nodeName":"node-{n:05}","containers":[{{"name":"pause","image":"registry.k8s.io/pause:3.10","ports":[{{"containerPort":80}}],"resources":{{"requests":{{"cpu":"100m","memory":"500Mi"}}}}}}]{extra}}}}}"#,
        n = i % nodes.max(1)
    )
}

struct Connected {
    server: ServerProcess,
    clients: Vec<Client>,
    probe: Client,
}

async fn connect(
    berth: &Path,
    dir: &Path,
    extra: &[&str],
    clients: usize,
) -> anyhow::Result<(Connected, Instant)> {
    let started = Instant::now();
    let server = start_server_with(berth, dir, extra).await?;
    let (target, probe) = ready_target(&server, dir, Protocol::Http2).await?;
    let mut all = Vec::new();
    for _ in 0..clients {
        all.push(target.connect().await?);
    }
    Ok((
        Connected {
            server,
            clients: all,
            probe,
        },
        started,
    ))
}

/// Runs `count` requests `op(client, i)` over the clients, closed loop.
async fn run_all<F, Fut>(clients: &[Client], count: usize, op: F) -> anyhow::Result<()>
where
    F: Fn(Client, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let op = Arc::new(op);
    let tasks: Vec<_> = clients
        .iter()
        .map(|c| {
            let (client, next, op) = (c.clone(), next.clone(), op.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return anyhow::Ok(());
                    }
                    op(client.clone(), i).await?;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.context("client task")??;
    }
    Ok(())
}

fn scheduled_count(metrics: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(SCHEDULED_METRIC))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

async fn load(args: &SchedulerArgs, c: &Connected, workload: Workload) -> anyhow::Result<()> {
    for ns in [NAMESPACE, INIT_NAMESPACE] {
        c.probe
            .create(
                "/api/v1/namespaces",
                Bytes::from(format!(
                    r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}"}}}}"#
                )),
            )
            .await?;
    }
    eprintln!("load: {} nodes", args.nodes);
    run_all(&c.clients, args.nodes, |client, i| async move {
        client
            .create("/api/v1/nodes", Bytes::from(node_json(i)))
            .await
            .map(|_| ())
    })
    .await?;
    let (tainted, taint) = workload.taint(args.tainted).unwrap_or((0, "[]"));
    run_all(&c.clients, args.nodes, move |client, i| async move {
        let taints = if i < tainted { taint } else { "[]" };
        client
            .merge_patch(
                &format!("/api/v1/nodes/node-{i:05}"),
                Bytes::from(format!(r#"{{"spec":{{"taints":{taints}}}}}"#)),
            )
            .await
    })
    .await?;
    let init = args.init_pods.unwrap_or(workload.default_init_pods());
    if init > 0 {
        eprintln!("load: {init} bound pods");
        let nodes = args.nodes;
        let path = format!("/api/v1/namespaces/{INIT_NAMESPACE}/pods");
        run_all(&c.clients, init, move |client, i| {
            let path = path.clone();
            async move {
                client
                    .create(&path, Bytes::from(init_pod_json(i, nodes, workload)))
                    .await
                    .map(|_| ())
            }
        })
        .await?;
    }
    let pods = args.pods.unwrap_or(workload.default_pods());
    eprintln!("load: {pods} pending pods");
    let path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    run_all(&c.clients, pods, move |client, i| {
        let path = path.clone();
        async move {
            client
                .create(&path, Bytes::from(pod_json(i, workload)))
                .await
                .map(|_| ())
        }
    })
    .await
}

#[derive(serde::Deserialize)]
struct PodList {
    items: Vec<ListedPod>,
}

#[derive(serde::Deserialize)]
struct ListedPod {
    spec: ListedSpec,
}

#[derive(serde::Deserialize)]
struct ListedSpec {
    #[serde(rename = "nodeName")]
    node_name: Option<String>,
    #[serde(default)]
    tolerations: Vec<serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct EventList {
    items: Vec<ListedEvent>,
}

#[derive(serde::Deserialize)]
struct ListedEvent {
    reason: Option<String>,
}

async fn check(args: &SchedulerArgs, probe: &Client, workload: Workload) -> anyhow::Result<Checks> {
    let (status, body) = probe
        .call(
            Method::GET,
            &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
            Bytes::new(),
        )
        .await?;
    anyhow::ensure!(status == StatusCode::OK, "listing pods: {status}");
    let list: PodList = serde_json::from_slice(&body).context("decoding the pod list")?;
    let (status, body) = probe
        .call(
            Method::GET,
            &format!("/api/v1/namespaces/{NAMESPACE}/events"),
            Bytes::new(),
        )
        .await?;
    anyhow::ensure!(status == StatusCode::OK, "listing events: {status}");
    let events: EventList = serde_json::from_slice(&body).context("decoding the event list")?;
    let scheduled_events_written = events
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Scheduled"))
        .count();
    let placed = list.items.iter().map(|pod| {
        let tolerates = pod.spec.tolerations.iter().any(|t| t["key"] == "dedicated");
        (pod.spec.node_name.as_deref(), tolerates)
    });
    Ok(evaluate(args, workload, placed, scheduled_events_written))
}

/// The checks over the measured pods, each as (its node if bound, whether
/// it tolerates the taint-heavy shape's taint).
fn evaluate<'a>(
    args: &SchedulerArgs,
    workload: Workload,
    placed: impl Iterator<Item = (Option<&'a str>, bool)>,
    scheduled_events_written: usize,
) -> Checks {
    let taint_heavy = workload == Workload::TaintHeavy;
    let index = |node: &str| -> usize {
        node.strip_prefix("node-")
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX)
    };
    let mut per_node: HashMap<&str, usize> = HashMap::new();
    let mut bound = 0;
    let mut unbound = 0;
    let mut untolerated = 0;
    for (node, tolerates) in placed {
        match node {
            Some(node) => {
                bound += 1;
                *per_node.entry(node).or_default() += 1;
                if taint_heavy && index(node) < args.tainted && !tolerates {
                    untolerated += 1;
                }
            }
            None => unbound += 1,
        }
    }
    // node_json's allocatable: 7910m cpu, 110 pods; every pod asks 100m.
    let over = per_node.values().filter(|&&n| n > 79).count();
    let skew =
        |counts: Vec<usize>| counts.iter().max().unwrap_or(&0) - counts.iter().min().unwrap_or(&0);
    let spread_skew = match workload {
        Workload::TopologySpread => {
            let mut zones = [0usize; 3];
            for (node, n) in &per_node {
                zones[index(node) % 3] += n;
            }
            Some(skew(zones.to_vec()))
        }
        Workload::NodeInclusionPolicy => Some(skew(
            (1_000..args.nodes)
                .map(|i| {
                    per_node
                        .get(format!("node-{i:05}").as_str())
                        .copied()
                        .unwrap_or(0)
                })
                .collect(),
        )),
        _ => None,
    };
    let anti_affinity_violations = (workload == Workload::AntiAffinity).then(|| {
        let init = args.init_pods.unwrap_or(workload.default_init_pods());
        per_node
            .iter()
            .filter(|(node, n)| **n > 1 || index(node) < init)
            .count()
    });
    let untolerated = if workload == Workload::NodeInclusionPolicy {
        per_node
            .iter()
            .filter(|(node, _)| index(node) < 1_000)
            .map(|(_, n)| n)
            .sum()
    } else {
        untolerated
    };
    Checks {
        pods_bound: bound,
        pods_unbound: unbound,
        max_pods_on_a_node: per_node.values().copied().max().unwrap_or(0),
        nodes_over_allocatable: over,
        pods_on_an_untolerated_taint: untolerated,
        spread_skew,
        anti_affinity_violations,
        scheduled_events_written,
    }
}

async fn run_shape(
    args: &SchedulerArgs,
    berth: &Path,
    parent: &Path,
    workload: Workload,
) -> anyhow::Result<ShapeRun> {
    let pods = args.pods.unwrap_or(workload.default_pods());
    let init_pods = args.init_pods.unwrap_or(workload.default_init_pods());
    let dir = tempfile::tempdir_in(parent).context("server data directory")?;
    let load_started = Instant::now();
    let (mut loader, _) =
        connect(berth, dir.path(), &["--disable-scheduler"], args.clients).await?;
    load(args, &loader, workload).await?;
    let load_seconds = load_started.elapsed().as_secs_f64();
    drop(loader.clients);
    drop(loader.probe);
    let _ = loader.server.child.kill().await;

    eprintln!("schedule: restarting the server with its scheduler");
    let (mut running, started) = connect(berth, dir.path(), &[], 0).await?;
    let pid = running.server.pid;
    let cpu_before = cpu_seconds(pid);
    let target = pods as u64;
    let poll = Duration::from_millis(args.poll_ms.max(1));
    let deadline = Instant::now() + SCHEDULE_TIMEOUT;
    // (when, CPU seconds, pods bound) at the first poll that saw a binding.
    let mut first: Option<(Instant, f64, u64)> = None;
    let (last, cpu_last) = loop {
        let (status, body) = running
            .probe
            .call(Method::GET, "/metrics", Bytes::new())
            .await?;
        anyhow::ensure!(status == StatusCode::OK, "reading /metrics: {status}");
        let now = Instant::now();
        let cpu_now = cpu_seconds(pid);
        let n = scheduled_count(&String::from_utf8_lossy(&body));
        if n > 0 && first.is_none() {
            first = Some((now, cpu_now, n));
        }
        if n >= target {
            break (now, cpu_now);
        }
        if now > deadline {
            bail!("only {n} of {target} pods bound after {SCHEDULE_TIMEOUT:?}");
        }
        tokio::time::sleep(poll).await;
    };
    let (first, cpu_first, bound_at_first) = first.unwrap_or((last, cpu_last, target));
    let cpu_from_ready = cpu_last - cpu_before;
    let cpu = cpu_last - cpu_first;
    // The pods bound between the two polls; at least one, so a run whose
    // first poll already saw every pod bound reports its CPU whole.
    let bound_in_window = target.saturating_sub(bound_at_first).max(1);
    let checks = check(args, &running.probe, workload).await?;
    drop(running.probe);
    let _ = running.server.child.kill().await;

    let span = last.duration_since(first).as_secs_f64();
    let total = last.duration_since(started).as_secs_f64();
    let rate = |s: f64| {
        if s > 0.0 {
            (pods as f64 / s).round()
        } else {
            0.0
        }
    };
    let per_sec = rate(span);
    Ok(ShapeRun {
        shape: workload.name(),
        pods,
        init_pods,
        load_seconds: round1(load_seconds),
        pods_per_sec_first_to_last_bind: per_sec,
        pods_per_sec_from_server_start: rate(total),
        seconds_first_to_last_bind: (span * 1000.0).round() / 1000.0,
        seconds_server_start_to_first_bind: (first.duration_since(started).as_secs_f64() * 1000.0)
            .round()
            / 1000.0,
        server_cpu_us_per_pod: round1(cpu * 1e6 / bound_in_window as f64),
        server_cpu_seconds: (cpu * 100.0).round() / 100.0,
        server_cpu_us_per_pod_from_ready: round1(cpu_from_ready * 1e6 / pods.max(1) as f64),
        server_cpu_seconds_ready_to_first_bind: ((cpu_first - cpu_before) * 100.0).round() / 100.0,
        checks,
        goal_pods_per_sec: workload.goal(),
        goal_met: workload.goal().map(|g| per_sec >= f64::from(g)),
    })
}

/// `--in-process`: the shape's cluster handed to berth-scheduler's state
/// machine directly, then every pod scheduled, each decision counted as
/// bound at once (as the scheduler's cache counts an assumed pod).
fn run_in_process(args: &SchedulerArgs, workload: Workload) -> anyhow::Result<InProcessRun> {
    use berth_scheduler::cycle::Profile;
    use berth_scheduler::queue::QueueConfig;
    use berth_scheduler::scheduler::{Decision, Scheduler};
    use k8s_openapi::api::core::v1::{Node, Pod};

    let setup = Instant::now();
    let now = tokio::time::Instant::now();
    let mut scheduler = Scheduler::new(Profile::default(), QueueConfig::default(), 1);
    let (tainted, taints) = workload.taint(args.tainted).unwrap_or((0, "[]"));
    let taints: serde_json::Value = serde_json::from_str(taints).context("taints")?;
    for i in 0..args.nodes {
        let mut node: serde_json::Value = serde_json::from_str(&node_json(i)).context("node")?;
        if i < tainted {
            node["spec"]["taints"] = taints.clone();
        }
        let node: Node = serde_json::from_value(node).context("node")?;
        scheduler.upsert_node(node, now);
    }
    let init_pods = args.init_pods.unwrap_or(workload.default_init_pods());
    for i in 0..init_pods {
        let pod: Pod =
            serde_json::from_str(&init_pod_json(i, args.nodes, workload)).context("bound pod")?;
        scheduler.upsert_pod(pod, now);
    }
    let pods = args.pods.unwrap_or(workload.default_pods());
    let mut tolerates = HashMap::new();
    for i in 0..pods {
        let pod: Pod = serde_json::from_str(&pod_json(i, workload)).context("pod")?;
        let tolerating = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_ref())
            .is_some_and(|t| t.iter().any(|t| t.key.as_deref() == Some("dedicated")));
        tolerates.insert(berth_scheduler::scheduler::pod_key(&pod), tolerating);
        scheduler.upsert_pod(pod, now);
    }
    scheduler.flush(now);
    let setup_seconds = setup.elapsed().as_secs_f64();
    eprintln!("in process: {pods} pods on {} nodes", args.nodes);

    let cpu_before = cpu_seconds(std::process::id());
    let started = Instant::now();
    let mut placed: Vec<(String, Option<String>)> = Vec::with_capacity(pods);
    while let Some(decision) = scheduler.schedule_one(now) {
        match decision {
            Decision::Bind(binding) => {
                scheduler.bind_succeeded(&binding.key);
                placed.push((binding.key, Some(binding.result.node)));
            }
            Decision::Refuse(refusal) => placed.push((refusal.key, None)),
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(std::process::id()) - cpu_before;
    let checks = evaluate(
        args,
        workload,
        placed.iter().map(|(key, node)| {
            (
                node.as_deref(),
                tolerates.get(key).copied().unwrap_or(false),
            )
        }),
        0,
    );
    Ok(InProcessRun {
        shape: workload.name(),
        pods,
        init_pods,
        setup_seconds: round1(setup_seconds),
        seconds: (seconds * 1000.0).round() / 1000.0,
        pods_per_sec: (pods as f64 / seconds.max(1e-9)).round(),
        cpu_us_per_pod: round1(cpu * 1e6 / pods.max(1) as f64),
        checks,
        preemption: None,
    })
}

pub fn run(args: &SchedulerArgs) -> anyhow::Result<SchedulerReport> {
    anyhow::ensure!(args.clients > 0, "--clients must be positive");
    anyhow::ensure!(
        args.pods != Some(0) && args.nodes > 0,
        "--pods and --nodes must be positive"
    );
    let shapes: &[Workload] = match args.shape {
        Shape::Basic => &[Workload::Basic],
        Shape::TaintHeavy => &[Workload::TaintHeavy],
        Shape::TopologySpread => &[Workload::TopologySpread],
        Shape::NodeInclusionPolicy => &[Workload::NodeInclusionPolicy],
        Shape::AntiAffinity => &[Workload::AntiAffinity],
        Shape::Preemption => &[Workload::Preemption],
        Shape::All => &[Workload::Basic, Workload::TaintHeavy],
    };
    let mut runs = Vec::new();
    let mut in_process_runs = Vec::new();
    anyhow::ensure!(
        args.in_process || args.shape != Shape::Preemption,
        "--shape preemption runs --in-process only: end to end, the victims' graceful deletions wait for node agents the benchmark's server does not run"
    );
    let berth_bin = if args.in_process {
        for &workload in shapes {
            in_process_runs.push(if workload == Workload::Preemption {
                preemption::run(args)?
            } else {
                run_in_process(args, workload)?
            });
        }
        String::from("(in process: no server)")
    } else {
        let berth = berth_binary(args.berth_bin.as_deref())?;
        let parent = data_parent(args.data_dir.as_deref())?;
        let runtime = bench_runtime(2)?;
        for &workload in shapes {
            runs.push(runtime.block_on(run_shape(args, &berth, &parent, workload))?);
        }
        berth.display().to_string()
    };
    Ok(SchedulerReport {
        bench: "scheduler",
        machine: Machine::describe(),
        params: Params {
            nodes: args.nodes,
            pods: args.pods,
            tainted: args.tainted,
            clients: args.clients,
            poll_ms: args.poll_ms,
            berth_bin,
        },
        runs,
        in_process_runs,
        upstream_thresholds: UpstreamThresholds {
            scheduling_basic_5000_nodes_10000_pods: 680,
            taint_heavy: 270,
            topology_spreading_5000_nodes_5000_pods: 460,
            scheduling_with_node_inclusion_policy_5000_nodes: 270,
            scheduling_pod_anti_affinity: 60,
            preemption_async: 570,
        },
    })
}
