//! `berth-bench apiserver`: the API server over HTTPS, as clients see it.
//!
//! The benchmark starts `berth server` as a child process (so the memory figure is the
//! server's alone) on a fresh data directory and a free loopback port, trusts the CA the
//! server writes there and authenticates with its admin token. Then, in order:
//!
//! 1. **creates**: `--clients` tasks, each on its own keep-alive connection (TLS, HTTP/2 by
//!    default as client-go negotiates it, or HTTP/1.1), create `--creates` pods with one
//!    request outstanding each (a closed loop); creates/s and the latency of each call;
//! 2. **load**: the same clients create `--nodes` nodes and the rest of the `--pods` pods
//!    (reported too: the rate with a growing store);
//! 3. **list**: `GET /api/v1/pods` (every pod, full JSON) `--lists` times, one at a time, from
//!    request to last byte of the body; the median is the figure;
//! 4. **watch**: `--watchers` watches on all pods (each its own connection, from the current
//!    resourceVersion), then `--watch-writes` pod creates paced at `--watch-rate` per second;
//!    each pod carries the time just before its create call, and each watcher records the delay
//!    from there to the moment it has read the event, and which writes it saw;
//! 5. **memory**: the server's VmRSS and VmHWM from `/proc/<pid>/status`, with everything
//!    loaded and the watches still open.
//!
//! Every request's status is checked: a failed create fails the run rather than inflating the
//! rate. The server's CPU time per create (from `/proc/<pid>/stat`) is reported too: unlike
//! throughput it barely moves with other load on the machine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde::Serialize;

use crate::harness::{
    API_SERVER_ONLY, Client, Memory, Protocol, Target, bench_runtime, berth_binary, cpu_seconds,
    data_parent, memory_of, node_json, ready_target, start_server_with,
};
use crate::measure::{Histogram, LatencySummary, Machine, round1};

/// The namespace every benchmark pod lives in.
pub(crate) const NAMESPACE: &str = "bench";
/// Annotations of the watch phase's pods: the send time (ns since the run's epoch) and the
/// write's sequence number.
const SENT_ANNOTATION: &str = "berth-bench/sent";
const SEQ_ANNOTATION: &str = "berth-bench/seq";
/// How long watchers may take to receive the last events after the writes end.
const WATCH_DRAIN: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub struct ApiserverArgs {
    /// Concurrent clients, each on its own keep-alive connection, one request outstanding.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Pods created in the measured create phase (they count towards --pods).
    #[arg(long, default_value_t = 30_000)]
    creates: usize,
    /// Nodes loaded before the list and memory figures.
    #[arg(long, default_value_t = 5_000)]
    nodes: usize,
    /// Pods loaded before the list and memory figures.
    #[arg(long, default_value_t = 150_000)]
    pods: usize,
    /// Concurrent watches on all pods.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Pod creates while the watches are open.
    #[arg(long, default_value_t = 2_000)]
    watch_writes: usize,
    /// Pace of those creates, per second (every watcher receives every one).
    #[arg(long, default_value_t = 200.0)]
    watch_rate: f64,
    /// Full lists of all pods; the median is reported.
    #[arg(long, default_value_t = 5)]
    lists: usize,
    /// The protocol the clients negotiate (ALPN).
    #[arg(long, value_enum, default_value_t = Protocol::Http2)]
    protocol: Protocol,
    /// The `berth` binary (default: next to this one, as `cargo build --release` puts it).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
    /// Directory under which the server's temporary data directory is made (default: the
    /// system's temporary directory). It should be on the disk under test, not tmpfs.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Tokio worker threads of the benchmark's clients (default: one per CPU).
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct ApiserverReport {
    bench: &'static str,
    machine: Machine,
    params: Params,
    creates: Phase,
    load: LoadPhase,
    list: ListFigures,
    watch: WatchFigures,
    server_memory: Memory,
    /// The data directory's redb file after the run.
    store_file_bytes: Option<u64>,
    goals: Goals,
}

#[derive(Debug, Serialize)]
struct Params {
    clients: usize,
    creates: usize,
    nodes: usize,
    pods: usize,
    watchers: usize,
    watch_writes: usize,
    watch_rate: f64,
    lists: usize,
    protocol: Protocol,
    client_threads: usize,
    berth_bin: String,
    data_dir: String,
}

/// One closed-loop phase of creates.
#[derive(Debug, Serialize)]
pub(crate) struct Phase {
    objects: usize,
    seconds: f64,
    per_sec: f64,
    /// From just before the call to the last byte of the response.
    latency: LatencySummary,
    /// The server's CPU time (user + system, all its threads) per create in this phase.
    server_cpu_us_per_create: f64,
    /// Request and response body bytes of one create (the last one).
    request_bytes: usize,
    response_bytes: usize,
}

#[derive(Debug, Serialize)]
struct LoadPhase {
    nodes: Phase,
    pods: Phase,
}

#[derive(Debug, Serialize)]
struct ListFigures {
    items: usize,
    body_bytes: usize,
    /// Each list, request to last byte, in ms.
    runs_ms: Vec<f64>,
    median_ms: f64,
}

#[derive(Debug, Serialize)]
struct WatchFigures {
    watchers: usize,
    writes: usize,
    /// The pace the writes kept (below `--watch-rate` when the server could not keep up).
    achieved_write_rate: f64,
    write_latency: LatencySummary,
    /// Write call start to event read, over every watcher and every write.
    delivery: LatencySummary,
    /// Events received (all watchers) and expected (writes × watchers).
    events_received: u64,
    events_expected: u64,
    /// Whether every watcher received every write exactly once.
    every_watcher_saw_every_event: bool,
    /// Seconds to open all watches.
    open_seconds: f64,
}

/// The goals for this machine (2 cores), checked on this run.
#[derive(Debug, Serialize)]
struct Goals {
    creates_per_sec_at_least_10000: bool,
    list_150k_pods_at_most_1s: Option<bool>,
    rss_at_most_1gib_with_5k_nodes_150k_pods: Option<bool>,
    every_watcher_saw_every_event: bool,
}

/// A pod of a typical size (about 1 KiB as sent, 1.6 KiB once defaulted), bound to a node.
fn pod_json(name: &str, node: &str, app: usize, annotations: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{NAMESPACE}","labels":{{"app":"app-{app}","tier":"web","pod-template-hash":"5d8f7c9b6"}},"annotations":{{{annotations}}}}},"spec":{{"nodeName":"{node}","containers":[{{"name":"app","image":"registry.k8s.io/pause:3.10","ports":[{{"containerPort":8080,"protocol":"TCP"}}],"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}},"limits":{{"cpu":"200m","memory":"256Mi"}}}},"env":[{{"name":"MODE","value":"bench"}},{{"name":"POD_INDEX","value":"{app}"}}]}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30}}}}"#
    )
}

pub(crate) fn bulk_pod(i: usize, nodes: usize) -> String {
    pod_json(
        &format!("pod-{i:06}"),
        &format!("node-{:05}", i % nodes.max(1)),
        i % 1000,
        r#""team":"bench""#,
    )
}

/// Creates `count` objects, `make(i)` → (path, body), with every client in a closed loop.
pub(crate) async fn create_phase(
    clients: &[Client],
    count: usize,
    pid: u32,
    make: Arc<dyn Fn(usize) -> (String, String) + Send + Sync>,
) -> anyhow::Result<Phase> {
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|c| {
            let client = c.clone();
            let next = next.clone();
            let make = make.clone();
            tokio::spawn(async move {
                let mut latency = Histogram::default();
                let mut sizes = (0, 0);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let (path, body) = make(i);
                    let request_bytes = body.len();
                    let t0 = Instant::now();
                    let response_bytes = client.create(&path, Bytes::from(body)).await?;
                    latency.record(t0.elapsed());
                    sizes = (request_bytes, response_bytes);
                }
                anyhow::Ok((latency, sizes))
            })
        })
        .collect();
    let mut latency = Histogram::default();
    let mut sizes = (0, 0);
    for task in tasks {
        let (h, s) = task.await.context("client task")??;
        latency.merge(&h);
        if s.0 > 0 {
            sizes = s;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    Ok(Phase {
        objects: count,
        seconds: (seconds * 1000.0).round() / 1000.0,
        per_sec: if seconds > 0.0 {
            (count as f64 / seconds).round()
        } else {
            0.0
        },
        latency: latency.summary_us(),
        server_cpu_us_per_create: round1(cpu * 1e6 / count.max(1) as f64),
        request_bytes: sizes.0,
        response_bytes: sizes.1,
    })
}

/// The list phase: full lists of all pods, one at a time.
async fn list_phase(client: &Client, runs: usize) -> anyhow::Result<ListFigures> {
    let mut runs_ms = Vec::new();
    let mut items = 0;
    let mut body_bytes = 0;
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        let (status, body) = client
            .call(Method::GET, "/api/v1/pods", Bytes::new())
            .await?;
        let elapsed = t0.elapsed();
        if status != StatusCode::OK {
            bail!("GET /api/v1/pods: {status}");
        }
        runs_ms.push(round1(elapsed.as_secs_f64() * 1000.0));
        body_bytes = body.len();
        // Counted outside the timing: what a client would then decode.
        items = count_items(&body)?;
    }
    let mut sorted = runs_ms.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(ListFigures {
        items,
        body_bytes,
        median_ms: sorted[sorted.len() / 2],
        runs_ms,
    })
}

fn count_items(body: &[u8]) -> anyhow::Result<usize> {
    #[derive(serde::Deserialize)]
    struct List {
        items: Vec<serde::de::IgnoredAny>,
    }
    let list: List = serde_json::from_slice(body).context("the list is not a JSON list")?;
    Ok(list.items.len())
}

/// The number after `"<annotation>":"` in a watch event line, if any.
fn annotation_number(line: &[u8], annotation: &str) -> Option<u64> {
    let needle = format!("\"{annotation}\":\"");
    let at = line
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())?;
    let digits = &line[at + needle.len()..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

struct WatcherResult {
    delivery: Histogram,
    seen: Vec<u32>,
}

/// One watcher: reads events until it has seen every write or `stop` fires.
async fn watcher(
    client: Client,
    path: String,
    epoch: Instant,
    writes: usize,
    opened: tokio::sync::mpsc::Sender<()>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<WatcherResult> {
    let response = client
        .send(client.request(Method::GET, &path, Bytes::new())?)
        .await?;
    if response.status() != StatusCode::OK {
        bail!("watch: {}", response.status());
    }
    // Headers received: the watch is registered with the cache.
    let _ = opened.send(()).await;
    let mut body = response.into_body();
    let mut delivery = Histogram::default();
    let mut seen = vec![0u32; writes];
    let mut seen_count = 0;
    let mut pending: Vec<u8> = Vec::new();
    while seen_count < writes {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = stop.changed() => break,
        };
        let Some(frame) = frame else { break };
        let received = Instant::now();
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        let mut start = 0;
        while let Some(nl) = pending[start..].iter().position(|&b| b == b'\n') {
            let line = &pending[start..start + nl];
            start += nl + 1;
            let (Some(seq), Some(sent)) = (
                annotation_number(line, SEQ_ANNOTATION),
                annotation_number(line, SENT_ANNOTATION),
            ) else {
                continue;
            };
            let Some(slot) = usize::try_from(seq).ok().and_then(|s| seen.get_mut(s)) else {
                continue;
            };
            *slot += 1;
            if *slot == 1 {
                seen_count += 1;
            }
            if let Some(sent_at) = epoch.checked_add(Duration::from_nanos(sent)) {
                delivery.record(received.saturating_duration_since(sent_at));
            }
        }
        pending.drain(..start);
    }
    Ok(WatcherResult { delivery, seen })
}

async fn watch_phase(
    target: &Arc<Target>,
    writers: &[Client],
    args: &ApiserverArgs,
) -> anyhow::Result<WatchFigures> {
    let probe = target.connect().await?;
    // Start the watches at the current revision: no replay of the loaded pods.
    let (status, body) = probe
        .call(Method::GET, "/api/v1/pods?limit=1", Bytes::new())
        .await?;
    if status != StatusCode::OK {
        bail!("GET /api/v1/pods?limit=1: {status}");
    }
    let list: serde_json::Value = serde_json::from_slice(&body)?;
    let rv = list
        .pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .context("no resourceVersion in the list")?
        .to_string();
    let path = format!("/api/v1/pods?watch=1&resourceVersion={rv}");
    let epoch = Instant::now();
    let writes = args.watch_writes;
    let (opened_tx, mut opened_rx) = tokio::sync::mpsc::channel(args.watchers.max(1));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let open_started = Instant::now();
    let mut watchers = Vec::new();
    for _ in 0..args.watchers {
        let client = target.connect().await?;
        watchers.push(tokio::spawn(watcher(
            client,
            path.clone(),
            epoch,
            writes,
            opened_tx.clone(),
            stop_rx.clone(),
        )));
    }
    drop(opened_tx);
    for _ in 0..args.watchers {
        opened_rx.recv().await.context("a watch failed to open")?;
    }
    let open_seconds = open_started.elapsed().as_secs_f64();
    // Paced writes: write k is due at k / rate; the clients share them round-robin.
    let rate = args.watch_rate.max(0.001);
    let write_start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = writers
        .iter()
        .map(|c| {
            let client = c.clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut latency = Histogram::default();
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= writes {
                        break;
                    }
                    let due = write_start + Duration::from_secs_f64(k as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                    let t0 = Instant::now();
                    let sent = u64::try_from((t0 - epoch).as_nanos()).unwrap_or(u64::MAX);
                    let body = pod_json(
                        &format!("watched-{k:06}"),
                        "node-00000",
                        k % 1000,
                        &format!(r#""{SENT_ANNOTATION}":"{sent}","{SEQ_ANNOTATION}":"{k}""#),
                    );
                    client
                        .create(
                            &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
                            Bytes::from(body),
                        )
                        .await?;
                    latency.record(t0.elapsed());
                }
                anyhow::Ok(latency)
            })
        })
        .collect();
    let mut write_latency = Histogram::default();
    for task in tasks {
        write_latency.merge(&task.await.context("writer task")??);
    }
    let write_seconds = write_start.elapsed().as_secs_f64();
    // Give the watchers time to drain, then stop those still short of events.
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(WATCH_DRAIN).await;
        let _ = stop_tx.send(true);
    });
    let mut delivery = Histogram::default();
    let mut received = 0u64;
    let mut complete = true;
    for task in watchers {
        let result = task.await.context("watcher task")??;
        delivery.merge(&result.delivery);
        received += result.seen.iter().map(|&n| u64::from(n)).sum::<u64>();
        complete &= result.seen.iter().all(|&n| n == 1);
    }
    stopper.abort();
    Ok(WatchFigures {
        watchers: args.watchers,
        writes,
        achieved_write_rate: round1(writes as f64 / write_seconds.max(1e-9)),
        write_latency: write_latency.summary_us(),
        delivery: delivery.summary_us(),
        events_received: received,
        events_expected: (writes * args.watchers) as u64,
        every_watcher_saw_every_event: complete,
        open_seconds: round1(open_seconds * 1000.0) / 1000.0,
    })
}

async fn run_async(
    args: &ApiserverArgs,
    berth: &Path,
    parent: &Path,
) -> anyhow::Result<ApiserverReport> {
    let dir = tempfile::tempdir_in(parent).context("server data directory")?;
    let mut server = start_server_with(berth, dir.path(), API_SERVER_ONLY).await?;
    let pid = server.pid;
    let (target, probe) = ready_target(&server, dir.path(), args.protocol).await?;
    probe
        .create(
            "/api/v1/namespaces",
            Bytes::from(format!(
                r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{NAMESPACE}"}}}}"#
            )),
        )
        .await?;
    let mut clients = Vec::new();
    for _ in 0..args.clients {
        clients.push(target.connect().await?);
    }
    let nodes = args.nodes;
    let pods_path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    let make_pod: Arc<dyn Fn(usize) -> (String, String) + Send + Sync> = {
        let path = pods_path.clone();
        Arc::new(move |i| (path.clone(), bulk_pod(i, nodes)))
    };
    eprintln!("creates: {} pods", args.creates);
    let creates = create_phase(&clients, args.creates, pid, make_pod).await?;
    eprintln!("load: {} nodes", args.nodes);
    let node_phase = create_phase(
        &clients,
        args.nodes,
        pid,
        Arc::new(|i| ("/api/v1/nodes".to_string(), node_json(i))),
    )
    .await?;
    let first = args.creates;
    let rest = args.pods.saturating_sub(first);
    eprintln!("load: {rest} more pods");
    let make_rest: Arc<dyn Fn(usize) -> (String, String) + Send + Sync> = {
        let path = pods_path.clone();
        Arc::new(move |i| (path.clone(), bulk_pod(first + i, nodes)))
    };
    let pod_phase = create_phase(&clients, rest, pid, make_rest).await?;
    eprintln!("list: {} full lists", args.lists);
    let list = list_phase(&probe, args.lists).await?;
    eprintln!(
        "watch: {} watchers, {} writes",
        args.watchers, args.watch_writes
    );
    let watch = watch_phase(&target, &clients, args).await?;
    let server_memory = memory_of(pid).context("reading the server's memory")?;
    let store_file_bytes = std::fs::metadata(dir.path().join("berth-store.redb"))
        .ok()
        .map(|m| m.len());
    drop(clients);
    drop(probe);
    // Our own child: stop it before its data directory goes.
    let _ = server.child.kill().await;
    let loaded = args.pods >= 150_000 && args.nodes >= 5_000;
    let goals = Goals {
        creates_per_sec_at_least_10000: creates.per_sec >= 10_000.0,
        list_150k_pods_at_most_1s: (args.pods >= 150_000).then_some(list.median_ms <= 1000.0),
        rss_at_most_1gib_with_5k_nodes_150k_pods: loaded
            .then_some(server_memory.vm_rss_kib <= 1024 * 1024),
        every_watcher_saw_every_event: watch.every_watcher_saw_every_event,
    };
    Ok(ApiserverReport {
        bench: "apiserver",
        machine: Machine::describe(),
        params: Params {
            clients: args.clients,
            creates: args.creates,
            nodes: args.nodes,
            pods: args.pods,
            watchers: args.watchers,
            watch_writes: args.watch_writes,
            watch_rate: args.watch_rate,
            lists: args.lists,
            protocol: args.protocol,
            client_threads: 0,
            berth_bin: berth.display().to_string(),
            data_dir: parent.display().to_string(),
        },
        creates,
        load: LoadPhase {
            nodes: node_phase,
            pods: pod_phase,
        },
        list,
        watch,
        server_memory,
        store_file_bytes,
        goals,
    })
}

pub fn run(args: &ApiserverArgs) -> anyhow::Result<ApiserverReport> {
    anyhow::ensure!(args.clients > 0, "--clients must be positive");
    anyhow::ensure!(
        args.creates <= args.pods,
        "--creates must not exceed --pods"
    );
    anyhow::ensure!(
        args.watch_rate > 0.0 && args.watch_rate.is_finite(),
        "--watch-rate must be positive"
    );
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let parent = data_parent(args.data_dir.as_deref())?;
    let runtime = bench_runtime(threads)?;
    let mut report = runtime.block_on(run_async(args, &berth, &parent))?;
    report.params.client_threads = threads;
    Ok(report)
}
