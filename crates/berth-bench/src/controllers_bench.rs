//! `berth-bench controllers`: the node lifecycle monitor pass and the
//! punctuality of taint-based evictions.
//!
//! - **Monitor pass**: the node lifecycle controller's in-memory state with
//!   `--nodes` healthy nodes (10 zones, a Lease each) and `--pods` bound
//!   pods, and the time of one pass's decisions
//!   (`ClusterState::plan`, what runs every `--node-monitor-period`; with
//!   every node healthy it asks for no writes). Single-threaded, so wall
//!   time is CPU time.
//! - **Eviction lateness**: the API server in-process (no TCP/TLS) on the
//!   chosen store with the real clock, the taint eviction controller over an
//!   in-process client, `--eviction-pods` pods spread over 10 nodes that
//!   tolerate a NoExecute taint for 3 s, and that taint put on every node
//!   with the same `timeAdded`: every pod falls due at the same instant.
//!   Lateness is the real time from the due time until the controller has
//!   the API server's answer to the delete (acknowledged), and until a
//!   watcher sees the pod's deletion (its `deletionTimestamp`, observed).
//!   CPU per eviction is this process's CPU time (API server, controller
//!   and the observing watcher) from just before the due time until every
//!   deletion is observed and the Events are written, divided by the
//!   evictions; burst CPU per eviction the same until the last eviction is
//!   acknowledged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::node_lifecycle::{ClusterState, NodeLifecycleConfig};
use berth_controllers::taint_eviction::{
    Acknowledged, TaintEvictionConfig, TaintEvictionController,
};
use berth_controllers::watched_pod::WatchedPod;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore, RedbStore};
use clap::{Args, ValueEnum};
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::Api;
use kube::api::PostParams;
use kube::runtime::watcher;
use serde::Serialize;

use crate::harness::cpu_seconds;
use crate::measure::{Machine, Timing, thread_run_time, time};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Memory,
    Redb,
}

#[derive(Debug, Args)]
pub struct ControllersArgs {
    /// Nodes in the monitor pass.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Bound pods in the monitor pass's state.
    #[arg(long, default_value_t = 150_000)]
    pods: usize,
    /// Timed samples of the monitor pass.
    #[arg(long, default_value_t = 21)]
    samples: usize,
    /// Pods that fall due in the same instant.
    #[arg(long, default_value_t = 1000)]
    eviction_pods: usize,
    /// The API server's store for the eviction run.
    #[arg(long, value_enum, default_value_t = StoreKind::Redb)]
    store: StoreKind,
    /// Evictions the controller carries out at once (default: the
    /// controller's own default).
    #[arg(long, default_value_t = TaintEvictionConfig::default().concurrency)]
    concurrency: usize,
}

#[derive(Debug, Serialize)]
pub struct ControllersReport {
    bench: &'static str,
    machine: Machine,
    nodes: usize,
    pods: usize,
    /// One monitor pass over every node (all healthy).
    monitor_pass: Timing,
    monitor_pass_per_node_ns: f64,
    eviction: EvictionReport,
}

#[derive(Debug, Serialize)]
pub struct EvictionReport {
    setup: &'static str,
    store: StoreKind,
    pods: usize,
    concurrency: usize,
    evicted: usize,
    /// Due time → the API server's answer to the controller's delete.
    acknowledged: Lateness,
    /// Due time → deletion seen by a watcher, real time.
    observed: Lateness,
    /// This process's CPU (API server, controller, observer) during the
    /// evictions, per eviction.
    cpu_per_eviction_us: f64,
    /// This process's CPU from just before the due time until the last
    /// eviction was acknowledged, per eviction: what the burst itself cost
    /// (the Events written after it are in `cpu_per_eviction_us`). Read
    /// from the process CPU clock, so exact to the microsecond.
    burst_cpu_per_eviction_us: Option<f64>,
    /// The redb store's group commits during the burst (due time to the
    /// last acknowledgement).
    store_in_burst: Option<StoreBurst>,
    /// The worst lateness of a 1 ms timer in this process during the run:
    /// how long the machine kept the process off the CPU.
    timer_stall_max_ms: f64,
}

/// What the redb store's writer did during the burst.
#[derive(Debug, Serialize)]
pub struct StoreBurst {
    /// Durable transactions (one fsync each).
    commits: u64,
    writes: u64,
    /// CPU time of the writer thread (from /proc's schedstat, in ns).
    writer_thread_cpu_ms: Option<f64>,
}

/// Lateness figures in ms of real time.
#[derive(Debug, Serialize)]
pub struct Lateness {
    count: usize,
    min_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Lateness {
    fn of(mut ms: Vec<f64>) -> Lateness {
        ms.sort_by(f64::total_cmp);
        let pick = |q: f64| -> f64 {
            if ms.is_empty() {
                return f64::NAN;
            }
            let i = ((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1;
            ms[i]
        };
        Lateness {
            count: ms.len(),
            min_ms: ms.first().copied().unwrap_or(f64::NAN),
            p50_ms: pick(0.50),
            p99_ms: pick(0.99),
            max_ms: pick(1.0),
        }
    }
}

pub fn run(args: &ControllersArgs) -> anyhow::Result<ControllersReport> {
    let (monitor_pass, per_node) = monitor_pass(args);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let eviction = runtime.block_on(eviction_lateness(args))?;
    Ok(ControllersReport {
        bench: "controllers",
        machine: Machine::describe(),
        nodes: args.nodes,
        pods: args.pods,
        monitor_pass,
        monitor_pass_per_node_ns: per_node,
        eviction,
    })
}

fn healthy_node(name: &str, zone: usize, now: Timestamp) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            creation_timestamp: Some(Time(now)),
            labels: Some(
                [
                    (
                        "topology.kubernetes.io/zone".to_string(),
                        format!("zone-{zone}"),
                    ),
                    ("kubernetes.io/hostname".to_string(), name.to_string()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            conditions: Some(
                [
                    ("Ready", "True"),
                    ("MemoryPressure", "False"),
                    ("DiskPressure", "False"),
                    ("PIDPressure", "False"),
                ]
                .iter()
                .map(|(t, s)| NodeCondition {
                    type_: t.to_string(),
                    status: s.to_string(),
                    last_heartbeat_time: Some(Time(now)),
                    last_transition_time: Some(Time(now)),
                    ..NodeCondition::default()
                })
                .collect(),
            ),
            ..NodeStatus::default()
        }),
    }
}

fn lease(name: &str, now: Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("kube-node-lease".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.into()),
            renew_time: Some(MicroTime(now)),
            lease_duration_seconds: Some(40),
            ..LeaseSpec::default()
        }),
    }
}

/// Built by hand, not with berth_core::test_util (a dev-dependency feature
/// that would otherwise be compiled into every workspace build of
/// berth-core).
fn pod(name: &str, node: &str, tolerations: Vec<Toleration>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                ..Container::default()
            }],
            tolerations: Some(tolerations),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// This process's CPU time so far (all threads), exact to the nanosecond
/// where /proc's figures count 10 ms ticks.
#[cfg(target_os = "linux")]
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

#[cfg(not(target_os = "linux"))]
fn process_cpu() -> Duration {
    Duration::from_secs_f64(cpu_seconds(std::process::id()))
}

fn monitor_pass(args: &ControllersArgs) -> (Timing, f64) {
    let now = Timestamp::now();
    let mut state = ClusterState::default();
    for i in 0..args.nodes {
        let name = format!("node-{i:05}");
        state.observe_node(healthy_node(&name, i % 10, now), now);
        state.observe_lease(&lease(&name, now), now);
    }
    for i in 0..args.pods {
        let node = format!("node-{:05}", i % args.nodes.max(1));
        state.observe_pod(&pod(&format!("pod-{i:06}"), &node, vec![]));
    }
    let config = NodeLifecycleConfig::default();
    let at = now + SignedDuration::from_secs(1);
    // The first pass registers every node; time the steady state.
    let first = state.plan(at, &config);
    debug_assert_eq!(first.registered.len(), args.nodes);
    let timing = time("monitor_pass", args.samples, || {
        state.plan(at, &config).actions.len()
    });
    let per_node = timing.median_ns / args.nodes.max(1) as f64;
    (timing, per_node)
}

async fn eviction_lateness(args: &ControllersArgs) -> anyhow::Result<EvictionReport> {
    let dir = tempfile::tempdir()?;
    let store = match args.store {
        StoreKind::Memory => AnyStore::Memory(MemStore::new()),
        StoreKind::Redb => AnyStore::Redb(RedbStore::open(dir.path())?),
    };
    let writer_stats = {
        let store = store.clone();
        move || match &store {
            AnyStore::Redb(redb) => Some(redb.stats()),
            _ => None,
        }
    };
    let clock = Clock::real();
    let api = ApiServer::new(store, clock.clone(), ApiConfig::default())
        .await
        .map_err(|e| anyhow::anyhow!("api server: {e:?}"))?;
    let admin = in_process::client(&api, User::admin(), "default")
        .map_err(|e| anyhow::anyhow!("in-process client: {e}"))?;
    let nodes: Api<Node> = Api::all(admin.clone());
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let node_count = 10;
    for i in 0..node_count {
        nodes
            .create(
                &PostParams::default(),
                &healthy_node(&format!("node-{i}"), i, clock.now()),
            )
            .await?;
    }
    let key = "bench.berth.dev/drain";
    let tolerate = Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some("NoExecute".into()),
        toleration_seconds: Some(3),
        ..Toleration::default()
    };
    let names: Vec<String> = (0..args.eviction_pods)
        .map(|i| format!("pod-{i:05}"))
        .collect();
    for chunk in names.chunks(64) {
        let creates = chunk.iter().enumerate().map(|(i, name)| {
            let p = pod(
                name,
                &format!("node-{}", i % node_count),
                vec![tolerate.clone()],
            );
            let pods = pods.clone();
            async move { pods.create(&PostParams::default(), &p).await }
        });
        for result in futures::future::join_all(creates).await {
            result?;
        }
    }

    // Watch deletions, decoding what the controller decodes of each Pod:
    // the harness's own CPU is in the figures, and decoding whole Pods (in
    // the controller and here) was ~7 % of the burst's.
    let deleted: Arc<Mutex<HashMap<String, Timestamp>>> = Arc::default();
    let seen = deleted.clone();
    let watch_pods: Api<WatchedPod> = Api::all(admin.clone());
    let observer = tokio::spawn(async move {
        let mut events = watcher(watch_pods, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let pod = match event {
                Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::Delete(p)) => p,
                _ => continue,
            };
            if pod.metadata.deletion_timestamp.is_some() {
                let now = Timestamp::now();
                let name = pod.metadata.name.unwrap_or_default();
                if let Ok(mut seen) = seen.lock() {
                    seen.entry(name).or_insert(now);
                }
            }
        }
    });

    let client = in_process::client(&api, User::admin(), "default")
        .map_err(|e| anyhow::anyhow!("in-process client: {e}"))?;
    let (acknowledged_tx, mut acknowledged_rx) =
        tokio::sync::mpsc::unbounded_channel::<Acknowledged>();
    let config = TaintEvictionConfig {
        concurrency: args.concurrency,
        acknowledged: Some(acknowledged_tx),
        ..TaintEvictionConfig::default()
    };
    let controller = TaintEvictionController::new(
        berth_client::SharedWatches::new(client),
        clock.clone(),
        config,
        ControllerMetrics::default(),
    );
    let controller = tokio::spawn(controller.run());
    // Let the controller and the observer list everything.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Every node gets the taint with the same timeAdded: the next whole
    // second plus one, so the taints are on well before the pods fall due.
    let added = Timestamp::from_second(clock.now().as_second() + 2)?;
    let due = added + SignedDuration::from_secs(3);
    for i in 0..node_count {
        let name = format!("node-{i}");
        let mut node = nodes.get(&name).await?;
        node.spec
            .get_or_insert_with(Default::default)
            .taints
            .get_or_insert_with(Vec::new)
            .push(Taint {
                key: key.into(),
                effect: "NoExecute".into(),
                time_added: Some(Time(added)),
                value: None,
            });
        nodes.replace(&name, &PostParams::default(), &node).await?;
    }
    // How late this process's own timers fire meanwhile: on a loaded
    // machine the process is descheduled, and that shows in every figure.
    let stall = tokio::spawn(async move {
        let mut worst = Duration::ZERO;
        let end = Instant::now() + Duration::from_secs(6);
        while Instant::now() < end {
            let before = Instant::now();
            tokio::time::sleep(Duration::from_millis(1)).await;
            worst = worst.max(before.elapsed().saturating_sub(Duration::from_millis(1)));
        }
        worst
    });
    // CPU from just before the due time: the process is idle until then.
    let until_due = due
        .duration_since(clock.now())
        .checked_sub(SignedDuration::from_millis(20))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or(Duration::ZERO);
    // A marker for a profiler attached to the eviction window only.
    eprintln!(
        "controllers: {} evictions fall due in {} ms",
        args.eviction_pods,
        until_due.as_millis() + 20
    );
    tokio::time::sleep(until_due).await;
    let cpu_before = cpu_seconds(std::process::id());
    let burst_before = process_cpu();
    let stats_before = writer_stats();
    let writer_before = thread_run_time("berth-store-wri");
    let mut store_burst = None;
    let started = Instant::now();
    let mut acknowledged = Vec::with_capacity(args.eviction_pods);
    let mut burst_cpu = None;
    loop {
        let count = deleted.lock().map(|d| d.len()).unwrap_or(0);
        if (count >= args.eviction_pods && burst_cpu.is_some())
            || started.elapsed() > Duration::from_secs(120)
        {
            break;
        }
        // Polled, not awaited: a receiver woken by each acknowledgement
        // cost the burst ~4 % of its CPU in cross-thread wake-ups.
        while let Ok(ack) = acknowledged_rx.try_recv() {
            acknowledged.push(ack.at.duration_since(ack.due).as_secs_f64() * 1000.0);
        }
        if burst_cpu.is_none() && acknowledged.len() >= args.eviction_pods {
            burst_cpu = Some(process_cpu().saturating_sub(burst_before));
            store_burst = match (stats_before, writer_stats()) {
                (Some(before), Some(after)) => Some(StoreBurst {
                    commits: after.commits - before.commits,
                    writes: after.writes - before.writes,
                    writer_thread_cpu_ms: match (writer_before, thread_run_time("berth-store-wri"))
                    {
                        (Some(before), Some(after)) => {
                            Some(after.saturating_sub(before).as_secs_f64() * 1000.0)
                        }
                        _ => None,
                    },
                }),
                _ => None,
            };
        }
        tokio::time::sleep(Duration::from_millis(if burst_cpu.is_none() {
            2
        } else {
            50
        }))
        .await;
    }
    // The Events written after the last eviction are part of its cost.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu = cpu_seconds(std::process::id()) - cpu_before;
    let stall = stall.await.unwrap_or_default();
    observer.abort();
    controller.abort();
    let observed: Vec<f64> = deleted
        .lock()
        .map(|d| {
            d.values()
                .map(|t| t.duration_since(due).as_secs_f64() * 1000.0)
                .collect()
        })
        .unwrap_or_default();
    while let Ok(ack) = acknowledged_rx.try_recv() {
        acknowledged.push(ack.at.duration_since(ack.due).as_secs_f64() * 1000.0);
    }
    let evicted = observed.len();
    Ok(EvictionReport {
        setup: "in-process API server (no TCP/TLS), real clock, taint-eviction-controller over an in-process client",
        store: args.store,
        pods: args.eviction_pods,
        concurrency: args.concurrency,
        evicted,
        acknowledged: Lateness::of(acknowledged),
        observed: Lateness::of(observed),
        cpu_per_eviction_us: cpu * 1e6 / evicted.max(1) as f64,
        store_in_burst: store_burst,
        burst_cpu_per_eviction_us: burst_cpu
            .map(|cpu| cpu.as_secs_f64() * 1e6 / args.eviction_pods.max(1) as f64),
        timer_stall_max_ms: stall.as_secs_f64() * 1000.0,
    })
}
