//! `berth-bench store`: durable write throughput, write latency and watch delivery latency of
//! the store backends, measured in one run on the same machine.
//!
//! `--writers` tasks each loop over their own keys under `/registry/benchpods/default/`,
//! creating each key once and then updating it with the revision the last write returned, one
//! request outstanding per writer (a closed loop, as API server handlers are). Every value is
//! `--value-size` bytes and starts with the time just before its write call, so one watcher on
//! the prefix measures delivery from there to the moment it receives the event (which includes
//! the write's own commit: the delay a controller sees after a client's write). Figures cover
//! the `--seconds` after a `--warmup-seconds` warm-up; writes still in flight at either edge
//! are left out.
//!
//! The redb backend runs in a temporary directory, etcd is a private `/usr/bin/etcd` on a free
//! loopback port with its data in a temporary directory on the same file system (or an
//! existing one at `--etcd-endpoint`). Every acknowledged write is durable on both: no
//! measurement weakens that. Memory is the benchmark process's VmRSS/VmHWM (the peak is reset
//! before each backend where the kernel allows it), plus etcd's own process for etcd.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use berth_store::testing::EtcdServer;
use berth_store::{AnyStore, EtcdStore, RedbStore, Revision, Store};
use clap::{Args, ValueEnum};
use serde::Serialize;
use tokio::sync::watch;

use crate::harness::process::cpu_seconds_of;
use crate::measure::{Histogram, LatencySummary, Machine};

/// Where the benchmark writes (the layout the API server uses for pods).
const PREFIX: &str = "/registry/benchpods/default/";
/// The send time at the head of every value: nanoseconds since the run's epoch, u64 LE.
const STAMP: usize = 8;
/// How long the watcher may take to catch up after the writers stop.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    Redb,
    Etcd,
    Both,
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Which backend(s) to measure; `both` measures etcd, then redb, in this run.
    #[arg(long, value_enum, default_value_t = BackendChoice::Both)]
    backend: BackendChoice,
    /// Concurrent writers, each with one request outstanding.
    #[arg(long, default_value_t = 64)]
    writers: usize,
    /// Bytes per value (at least 8: the send time is stored in it).
    #[arg(long, default_value_t = 1024)]
    value_size: usize,
    /// Measured seconds per backend, after the warm-up.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Warm-up seconds per backend, not measured.
    #[arg(long, default_value_t = 2.0)]
    warmup_seconds: f64,
    /// Keys each writer cycles through (created once, then updated).
    #[arg(long, default_value_t = 16)]
    keys_per_writer: usize,
    /// Use this etcd instead of starting a private one (its data is left there).
    #[arg(long)]
    etcd_endpoint: Option<String>,
    /// Directory under which the temporary data directories are made (default: the system's
    /// temporary directory). It should be on the disk under test, not tmpfs.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Tokio worker threads (default: one per CPU).
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct StoreReport {
    bench: &'static str,
    machine: Machine,
    params: Params,
    /// Median of 200 `write(4 KiB)` + `fdatasync` in the data directory: the disk's floor
    /// for one durable commit.
    fsync_p50_us: f64,
    results: Vec<BackendReport>,
    /// redb's figure over etcd's, when both were measured.
    redb_over_etcd: Option<Ratios>,
    goals: Goals,
}

#[derive(Debug, Serialize)]
struct Params {
    backend: BackendChoice,
    writers: usize,
    value_size: usize,
    seconds: f64,
    warmup_seconds: f64,
    keys_per_writer: usize,
    runtime_threads: usize,
    data_dir: String,
    data_dir_fs: String,
    etcd: String,
}

#[derive(Debug, Serialize)]
struct BackendReport {
    backend: &'static str,
    /// Writes acknowledged inside the measured window.
    writes: u64,
    writes_per_sec: f64,
    /// From just before the call to its acknowledgement.
    write_latency: LatencySummary,
    /// From just before the write call to the watcher receiving the event.
    watch_delivery: LatencySummary,
    /// Events the watcher received over the whole run, and writes acknowledged (equal when
    /// nothing was lost).
    watch_events_total: u64,
    writes_total: u64,
    /// CPU time (user + system) per acknowledged write over the whole run, warm-up included:
    /// of this process (the writers, the watcher and, for redb, the store), of the redb writer
    /// thread alone, and of the etcd server. Unlike throughput, barely affected by other load
    /// on the machine.
    process_cpu_us_per_write: f64,
    writer_thread_cpu_us_per_write: Option<f64>,
    server_cpu_us_per_write: Option<f64>,
    /// Bytes this process wrote to files and sockets per acknowledged write: for redb, the
    /// database file's write amplification (a value is `--value-size` bytes).
    process_bytes_written_per_write: u64,
    /// This process, after the run.
    process_memory: Memory,
    /// The etcd server process, when the benchmark started it.
    server_memory: Option<Memory>,
    /// redb only: durable commits and writes per commit during the whole run, and the size
    /// of the database file at the end (redb's page cache, 1 GiB by default, holds up to that
    /// much of it in memory).
    commits: Option<u64>,
    writes_per_commit: Option<f64>,
    file_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct Memory {
    vm_rss_kib: u64,
    vm_hwm_kib: u64,
    /// Whether the peak was reset before this backend ran (else it covers the whole process).
    hwm_reset: bool,
}

#[derive(Debug, Serialize)]
struct Ratios {
    writes_per_sec: f64,
    write_p99: f64,
    watch_delivery_p99: f64,
}

/// The goals (stated for 64 writers and 1 KiB values), checked on this run.
#[derive(Debug, Serialize)]
struct Goals {
    redb_writes_per_sec_at_least_50000: Option<bool>,
    redb_at_least_3x_etcd: Option<bool>,
    redb_watch_delivery_p99_at_most_5ms: Option<bool>,
}

/// Reads `VmRSS` and `VmHWM` (KiB) of a process from `/proc/<pid>/status`.
fn memory_of(pid: &str, hwm_reset: bool) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some(Memory {
        vm_rss_kib: field("VmRSS:")?,
        vm_hwm_kib: field("VmHWM:")?,
        hwm_reset,
    })
}

/// CPU seconds of this process's thread called `name` (the first one), if any.
fn thread_cpu_seconds(name: &str) -> Option<f64> {
    crate::measure::thread_run_time(name).map(|t| t.as_secs_f64())
}

/// Bytes this process has passed to write calls (`wchar` of `/proc/self/io`).
fn written_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/io")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("wchar:"))?
        .trim()
        .parse()
        .ok()
}

/// CPU time per write in µs, rounded to 0.1.
fn per_write_us(cpu_seconds: f64, writes: u64) -> f64 {
    (cpu_seconds * 1e6 / writes.max(1) as f64 * 10.0).round() / 10.0
}

/// Resets this process's peak RSS (VmHWM) to its current RSS (Linux ≥ 4.0); `false` if the
/// kernel refused.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The file system type of the mount holding `path`, from `/proc/mounts` (longest prefix).
fn filesystem_of(path: &Path) -> String {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return "unknown".into();
    };
    let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mount, fs) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), fs.to_owned()))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, fs)| fs)
}

/// Median time of a 4 KiB write plus `fdatasync` in `dir`, in µs.
fn fsync_probe(dir: &Path) -> anyhow::Result<f64> {
    use std::io::Write;
    let mut file = tempfile::tempfile_in(dir).context("fsync probe file")?;
    let block = [0x5au8; 4096];
    let mut samples: Vec<f64> = (0..200)
        .map(|_| -> anyhow::Result<f64> {
            let started = Instant::now();
            file.write_all(&block)?;
            file.sync_data()?;
            Ok(started.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<anyhow::Result<_>>()?;
    samples.sort_by(f64::total_cmp);
    Ok((samples[samples.len() / 2] * 10.0).round() / 10.0)
}

/// The shared clock of one backend's run.
#[derive(Clone, Copy)]
struct Window {
    epoch: Instant,
    warm_end: Instant,
    end: Instant,
}

impl Window {
    fn contains(&self, started: Instant, finished: Instant) -> bool {
        started >= self.warm_end && finished <= self.end
    }
}

struct WriterResult {
    latency: Histogram,
    writes_total: u64,
    last_revision: Revision,
}

/// One closed-loop writer: create each of its keys, then update them round-robin.
async fn writer(
    store: AnyStore,
    keys: Vec<String>,
    value_size: usize,
    window: Window,
) -> anyhow::Result<WriterResult> {
    let mut revisions: Vec<Revision> = vec![0; keys.len()];
    // A recognisable filler; the first STAMP bytes are overwritten per write.
    let mut value: Vec<u8> = (0..value_size).map(|i| b'a' + (i % 26) as u8).collect();
    let mut latency = Histogram::default();
    let mut writes_total = 0;
    let mut last_revision = 0;
    for slot in (0..keys.len()).cycle() {
        let started = Instant::now();
        if started >= window.end {
            break;
        }
        let sent = u64::try_from((started - window.epoch).as_nanos()).unwrap_or(u64::MAX);
        value[..STAMP].copy_from_slice(&sent.to_le_bytes());
        let key = &keys[slot];
        let result = match revisions[slot] {
            0 => store.create(key, value.clone()).await,
            expected => store.update(key, value.clone(), expected).await,
        };
        let finished = Instant::now();
        // Each writer owns its keys, so a refusal is a store bug, not contention.
        let revision = result.with_context(|| format!("write of {key}"))?;
        revisions[slot] = revision;
        writes_total += 1;
        last_revision = last_revision.max(revision);
        if window.contains(started, finished) {
            latency.record(finished - started);
        }
    }
    Ok(WriterResult {
        latency,
        writes_total,
        last_revision,
    })
}

struct WatcherResult {
    delivery: Histogram,
    events: u64,
}

/// Receives every event under the prefix until it has seen revision `*until` (set once the
/// writers are done), recording delivery latency of the writes sent inside the window.
async fn watcher(
    mut stream: berth_store::WatchStream,
    window: Window,
    mut until: watch::Receiver<Revision>,
) -> anyhow::Result<WatcherResult> {
    let mut delivery = Histogram::default();
    let mut events = 0;
    let mut last = 0;
    loop {
        if last >= *until.borrow_and_update() {
            break;
        }
        tokio::select! {
            event = stream.next_event() => {
                let received = Instant::now();
                let event = event
                    .context("the watch ended early")?
                    .context("the watch failed")?;
                events += 1;
                last = event.revision;
                let Some(stamp) = event.kv.value.get(..STAMP) else {
                    continue;
                };
                let mut bytes = [0u8; STAMP];
                bytes.copy_from_slice(stamp);
                // A foreign value (a shared etcd) may hold anything: no panic on overflow.
                let sent = Duration::from_nanos(u64::from_le_bytes(bytes));
                let Some(started) = window.epoch.checked_add(sent) else {
                    continue;
                };
                if window.contains(started, received) {
                    delivery.record(received.saturating_duration_since(started));
                }
            }
            changed = until.changed() => {
                changed.context("the benchmark stopped the watcher")?;
            }
        }
    }
    Ok(WatcherResult { delivery, events })
}

/// Runs the writers and the watcher against one store.
async fn measure(
    label: &'static str,
    store: AnyStore,
    args: &StoreArgs,
    run_tag: &str,
) -> anyhow::Result<BackendReport> {
    let hwm_reset = reset_peak_rss();
    let start_revision = store.current_revision().await?;
    let stream = store.watch(PREFIX, start_revision).await?;
    let epoch = Instant::now();
    let warm_end = epoch + Duration::from_secs_f64(args.warmup_seconds);
    let window = Window {
        epoch,
        warm_end,
        end: warm_end + Duration::from_secs_f64(args.seconds),
    };
    let cpu_before = cpu_seconds_of("/proc/self/stat").unwrap_or(0.0);
    let written_before = written_bytes().unwrap_or(0);
    let (until_tx, until_rx) = watch::channel(Revision::MAX);
    let watch_task = tokio::spawn(watcher(stream, window, until_rx));
    let writers: Vec<_> = (0..args.writers)
        .map(|w| {
            let keys = (0..args.keys_per_writer)
                .map(|k| format!("{PREFIX}{run_tag}-w{w}-k{k}"))
                .collect();
            tokio::spawn(writer(store.clone(), keys, args.value_size, window))
        })
        .collect();
    let mut latency = Histogram::default();
    let mut writes_total = 0;
    let mut last_revision = start_revision;
    for task in writers {
        let result = task.await.context("writer task")??;
        latency.merge(&result.latency);
        writes_total += result.writes_total;
        last_revision = last_revision.max(result.last_revision);
    }
    until_tx.send_replace(last_revision);
    let watched = tokio::time::timeout(DRAIN_TIMEOUT, watch_task)
        .await
        .context("the watcher did not catch up")?
        .context("watcher task")??;
    let write_latency = latency.summary_us();
    let cpu = cpu_seconds_of("/proc/self/stat").unwrap_or(0.0) - cpu_before;
    let written = written_bytes().unwrap_or(0).saturating_sub(written_before);
    Ok(BackendReport {
        backend: label,
        writes: latency.count(),
        writes_per_sec: (latency.count() as f64 / args.seconds).round(),
        write_latency,
        watch_delivery: watched.delivery.summary_us(),
        watch_events_total: watched.events,
        writes_total,
        process_cpu_us_per_write: per_write_us(cpu, writes_total),
        writer_thread_cpu_us_per_write: None,
        server_cpu_us_per_write: None,
        process_bytes_written_per_write: written / writes_total.max(1),
        process_memory: memory_of("self", hwm_reset).unwrap_or(Memory {
            vm_rss_kib: 0,
            vm_hwm_kib: 0,
            hwm_reset,
        }),
        server_memory: None,
        commits: None,
        writes_per_commit: None,
        file_bytes: None,
    })
}

async fn run_redb(args: &StoreArgs, parent: &Path, run_tag: &str) -> anyhow::Result<BackendReport> {
    let dir = tempfile::tempdir_in(parent).context("redb data directory")?;
    let store = RedbStore::open(dir.path())?;
    let before = store.stats();
    // The writer thread's name, truncated by the kernel to 15 bytes.
    let writer_cpu_before = thread_cpu_seconds("berth-store-wri").unwrap_or(0.0);
    let mut report = measure("redb", AnyStore::Redb(store.clone()), args, run_tag).await?;
    let after = store.stats();
    report.writer_thread_cpu_us_per_write = thread_cpu_seconds("berth-store-wri")
        .map(|cpu| per_write_us(cpu - writer_cpu_before, report.writes_total));
    let commits = after.commits - before.commits;
    report.commits = Some(commits);
    report.writes_per_commit =
        Some(((after.writes - before.writes) as f64 / commits.max(1) as f64 * 10.0).round() / 10.0);
    report.file_bytes = std::fs::metadata(store.path()).ok().map(|m| m.len());
    store.close().await?;
    Ok(report)
}

async fn run_etcd(args: &StoreArgs, parent: &Path, run_tag: &str) -> anyhow::Result<BackendReport> {
    let (server, store) = match &args.etcd_endpoint {
        Some(url) => (None, EtcdStore::connect(&[url]).await?),
        None => {
            let server = EtcdServer::start_under(parent).await?;
            let store = server.store().await?;
            (Some(server), store)
        }
    };
    let mut report = measure("etcd", AnyStore::Etcd(store), args, run_tag).await?;
    if let Some(server) = &server {
        // etcd's peak covers its whole (short) life: it only ran this benchmark.
        report.server_memory = memory_of(&server.pid().to_string(), false);
        // etcd did nothing else in its life but start up.
        report.server_cpu_us_per_write = cpu_seconds_of(&format!("/proc/{}/stat", server.pid()))
            .map(|cpu| per_write_us(cpu, report.writes_total));
    }
    // Dropping the server stops etcd and removes its data.
    drop(server);
    Ok(report)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a / b * 100.0).round() / 100.0
    } else {
        0.0
    }
}

pub fn run(args: &StoreArgs) -> anyhow::Result<StoreReport> {
    anyhow::ensure!(args.writers > 0, "--writers must be positive");
    anyhow::ensure!(
        args.keys_per_writer > 0,
        "--keys-per-writer must be positive"
    );
    anyhow::ensure!(
        args.value_size >= STAMP && args.value_size <= berth_store::MAX_VALUE_BYTES,
        "--value-size must be between {STAMP} and {} bytes",
        berth_store::MAX_VALUE_BYTES
    );
    anyhow::ensure!(
        args.seconds > 0.0 && args.seconds.is_finite(),
        "--seconds must be positive"
    );
    anyhow::ensure!(
        args.warmup_seconds >= 0.0 && args.warmup_seconds.is_finite(),
        "--warmup-seconds must not be negative"
    );
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("data directory {}", parent.display()))?;
    let fsync_p50_us = fsync_probe(&parent)?;
    // Keys unique to this run, so an existing etcd with earlier runs' keys works too.
    let run_tag = format!(
        "run{:x}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let results = runtime.block_on(async {
        let mut results = Vec::new();
        // etcd first: its client leaves little behind in this process, while redb's page
        // cache, once freed, can stay in the process's RSS and would inflate etcd's figure.
        if matches!(args.backend, BackendChoice::Etcd | BackendChoice::Both) {
            results.push(run_etcd(args, &parent, &run_tag).await?);
        }
        if matches!(args.backend, BackendChoice::Redb | BackendChoice::Both) {
            results.push(run_redb(args, &parent, &run_tag).await?);
        }
        anyhow::Ok(results)
    })?;
    let redb = results.iter().find(|r| r.backend == "redb");
    let etcd = results.iter().find(|r| r.backend == "etcd");
    let redb_over_etcd = redb.zip(etcd).map(|(r, e)| Ratios {
        writes_per_sec: ratio(r.writes_per_sec, e.writes_per_sec),
        write_p99: ratio(r.write_latency.p99_us, e.write_latency.p99_us),
        watch_delivery_p99: ratio(r.watch_delivery.p99_us, e.watch_delivery.p99_us),
    });
    let goals = Goals {
        redb_writes_per_sec_at_least_50000: redb.map(|r| r.writes_per_sec >= 50_000.0),
        redb_at_least_3x_etcd: redb_over_etcd.as_ref().map(|r| r.writes_per_sec >= 3.0),
        redb_watch_delivery_p99_at_most_5ms: redb.map(|r| r.watch_delivery.p99_us <= 5_000.0),
    };
    Ok(StoreReport {
        bench: "store",
        machine: Machine::describe(),
        params: Params {
            backend: args.backend,
            writers: args.writers,
            value_size: args.value_size,
            seconds: args.seconds,
            warmup_seconds: args.warmup_seconds,
            keys_per_writer: args.keys_per_writer,
            runtime_threads: threads,
            data_dir: parent.display().to_string(),
            data_dir_fs: filesystem_of(&parent),
            etcd: args.etcd_endpoint.clone().unwrap_or_else(|| {
                format!("private {}", berth_store::testing::etcd_binary().display())
            }),
        },
        fsync_p50_us,
        results,
        redb_over_etcd,
        goals,
    })
}
