//! `berth-bench hostile-yaml`: does a client sending deeply nested YAML
//! starve everyone else? (issue 18, defect 1: two such clients made every
//! other client time out for 31 s.)
//!
//! A `berth server` child process on a fresh data directory; one pod in it.
//! First a **baseline**: a reader GETs that pod every `--interval-ms` on a
//! keep-alive connection for `--seconds`, and a second reader opens a new
//! TLS connection for each GET (the handshake is what timed out). Then the
//! **attack**: `--attackers` clients, each on its own connection, send a
//! `--depth`-deep YAML body (`a: [[[...]]]`, about 2 bytes a level: 200 KB at
//! the default) in a closed loop, as a create (`application/yaml`) and an
//! apply patch (`application/apply-patch+yaml`) in turn, while the readers
//! read as before. The goal: the reader's p99 under attack below 100 ms.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use hyper::{Method, StatusCode};
use serde::Serialize;

use crate::harness::{
    API_SERVER_ONLY, Protocol, Target, berth_binary, ready_target, start_server_with,
};
use crate::measure::{Histogram, LatencySummary, Machine};

#[derive(Debug, Args)]
pub struct HostileYamlArgs {
    /// Clients sending nested YAML at once.
    #[arg(long, default_value_t = 2)]
    attackers: usize,
    /// Nesting depth of each hostile body.
    #[arg(long, default_value_t = 100_000)]
    depth: usize,
    /// Length of the baseline and of the attack, each.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Time between two GETs of a reader.
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
    /// Where the server's data directory is made (default: the temp dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct HostileYamlReport {
    pub machine: Machine,
    pub attackers: usize,
    pub depth: usize,
    pub body_bytes: usize,
    pub seconds: u64,
    /// GET of a pod on a kept-alive connection, no attack.
    pub baseline_get: LatencySummary,
    /// The same GET while the attackers send.
    pub attacked_get: LatencySummary,
    /// Connect + TLS handshake + GET, no attack / under attack.
    pub baseline_new_connection_get: LatencySummary,
    pub attacked_new_connection_get: LatencySummary,
    /// Hostile requests answered, and how long each took to be refused.
    pub hostile_requests: u64,
    pub hostile_refusal: LatencySummary,
    /// Status codes of the hostile requests (all should be 400).
    pub hostile_statuses: Vec<(u16, u64)>,
    /// A GET that failed (should be 0).
    pub failed_gets: u64,
    pub goal_p99_under_100ms: bool,
}

const POD_PATH: &str = "/api/v1/namespaces/default/pods/target";

fn nested_yaml(depth: usize) -> Bytes {
    let mut body = String::with_capacity(2 * depth + 128);
    body.push_str("apiVersion: v1\nkind: Pod\nmetadata:\n  name: hostile\nspec:\n  a: ");
    body.push_str(&"[".repeat(depth));
    body.push_str(&"]".repeat(depth));
    body.push('\n');
    Bytes::from(body)
}

/// GETs the pod every `interval` until `stop`; `fresh` opens a new
/// connection for each.
async fn reader(
    target: Arc<Target>,
    interval: Duration,
    fresh: bool,
    stop: Arc<AtomicBool>,
    failed: Arc<AtomicU64>,
) -> anyhow::Result<Histogram> {
    let mut histogram = Histogram::default();
    let mut kept = Some(target.connect().await?);
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        ticks.tick().await;
        let started = Instant::now();
        let client = match (&kept, fresh) {
            (Some(client), false) => client.clone(),
            _ => target.connect().await?,
        };
        match client.call(Method::GET, POD_PATH, Bytes::new()).await {
            Ok((StatusCode::OK, _)) => histogram.record(started.elapsed()),
            _ => {
                failed.fetch_add(1, Ordering::Relaxed);
                kept = Some(target.connect().await?);
            }
        }
    }
    Ok(histogram)
}

/// Sends the hostile body until `stop`, a create and an apply in turn.
async fn attacker(
    target: Arc<Target>,
    body: Bytes,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<(Histogram, Vec<(u16, u64)>)> {
    let client = target.connect().await?;
    let mut histogram = Histogram::default();
    let mut statuses: Vec<(u16, u64)> = Vec::new();
    let mut apply = false;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let (status, _) = if apply {
            client
                .call_as(
                    Method::PATCH,
                    "/api/v1/namespaces/default/pods/hostile?fieldManager=bench",
                    "application/apply-patch+yaml",
                    body.clone(),
                )
                .await?
        } else {
            client
                .call_as(
                    Method::POST,
                    "/api/v1/namespaces/default/pods",
                    "application/yaml",
                    body.clone(),
                )
                .await?
        };
        histogram.record(started.elapsed());
        apply = !apply;
        match statuses.iter_mut().find(|(s, _)| *s == status.as_u16()) {
            Some((_, n)) => *n += 1,
            None => statuses.push((status.as_u16(), 1)),
        }
    }
    Ok((histogram, statuses))
}

/// Both readers for `seconds`, with `attackers` sending meanwhile.
async fn phase(
    target: &Arc<Target>,
    args: &HostileYamlArgs,
    attackers: usize,
    body: &Bytes,
) -> anyhow::Result<(Histogram, Histogram, Histogram, Vec<(u16, u64)>, u64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let interval = Duration::from_millis(args.interval_ms.max(1));
    let kept = tokio::spawn(reader(
        target.clone(),
        interval,
        false,
        stop.clone(),
        failed.clone(),
    ));
    let fresh = tokio::spawn(reader(
        target.clone(),
        interval * 10,
        true,
        stop.clone(),
        failed.clone(),
    ));
    let hostile: Vec<_> = (0..attackers)
        .map(|_| tokio::spawn(attacker(target.clone(), body.clone(), stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let kept = kept.await.context("reader")??;
    let fresh = fresh.await.context("reader")??;
    let mut refusals = Histogram::default();
    let mut statuses: Vec<(u16, u64)> = Vec::new();
    for task in hostile {
        let (histogram, counts) = task.await.context("attacker")??;
        refusals.merge(&histogram);
        for (status, n) in counts {
            match statuses.iter_mut().find(|(s, _)| *s == status) {
                Some((_, total)) => *total += n,
                None => statuses.push((status, n)),
            }
        }
    }
    statuses.sort_unstable();
    Ok((
        kept,
        fresh,
        refusals,
        statuses,
        failed.load(Ordering::Relaxed),
    ))
}

async fn run_async(
    args: &HostileYamlArgs,
    berth: &Path,
    parent: &Path,
) -> anyhow::Result<HostileYamlReport> {
    let dir = tempfile::tempdir_in(parent).context("server data directory")?;
    let server = start_server_with(berth, dir.path(), API_SERVER_ONLY).await?;
    let (target, client) = ready_target(&server, dir.path(), Protocol::Http2).await?;
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#;
    client
        .create(
            "/api/v1/namespaces/default/pods",
            Bytes::from_static(pod.as_bytes()),
        )
        .await?;
    let body = nested_yaml(args.depth);
    let (baseline, baseline_fresh, _, _, failed_before) = phase(&target, args, 0, &body).await?;
    let (attacked, attacked_fresh, refusals, statuses, failed_during) =
        phase(&target, args, args.attackers, &body).await?;
    if attacked.count() == 0 {
        bail!("no GET answered under attack");
    }
    let attacked_get = attacked.summary_us();
    Ok(HostileYamlReport {
        machine: Machine::describe(),
        attackers: args.attackers,
        depth: args.depth,
        body_bytes: body.len(),
        seconds: args.seconds,
        baseline_get: baseline.summary_us(),
        goal_p99_under_100ms: attacked_get.p99_us < 100_000.0,
        attacked_get,
        baseline_new_connection_get: baseline_fresh.summary_us(),
        attacked_new_connection_get: attacked_fresh.summary_us(),
        hostile_requests: refusals.count(),
        hostile_refusal: refusals.summary_us(),
        hostile_statuses: statuses,
        failed_gets: failed_before + failed_during,
    })
}

pub fn run(args: &HostileYamlArgs) -> anyhow::Result<HostileYamlReport> {
    anyhow::ensure!(args.attackers > 0, "--attackers must be positive");
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let parent = crate::harness::data_parent(args.data_dir.as_deref())?;
    let runtime = crate::harness::bench_runtime(2)?;
    runtime.block_on(run_async(args, &berth, &parent))
}
