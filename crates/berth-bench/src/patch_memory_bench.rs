//! `berth-bench patch-memory`: the server's memory while one client patches
//! one object again and again with a large annotation (issue 18, defect 4:
//! the watch cache's history counted events, not bytes, so 300 patches of
//! 1 MiB took a server from 41 MB to 1 GB).
//!
//! Starts `berth server` (a child process, `--server-flag`s passed on),
//! creates one pod, merge-patches it `--patches` times with a fresh
//! `--bytes`-byte annotation each time, and reports the server's VmRSS
//! before and after, and its high-water mark.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use serde::Serialize;

use crate::harness::{Memory, Protocol, berth_binary, memory_of, ready_target, start_server_with};
use crate::measure::{Machine, round1};

#[derive(Debug, Args)]
pub struct PatchMemoryArgs {
    /// Patches of the one pod.
    #[arg(long, default_value_t = 300)]
    patches: usize,
    /// Bytes of the annotation each patch writes.
    #[arg(long, default_value_t = 1 << 20)]
    bytes: usize,
    /// A `berth server` flag (repeat for more), e.g. `--server-flag=--watch-cache-history-bytes=64Mi`.
    #[arg(long = "server-flag", allow_hyphen_values = true)]
    server_flags: Vec<String>,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct PatchMemoryReport {
    bench: &'static str,
    machine: Machine,
    patches: usize,
    bytes: usize,
    server_flags: Vec<String>,
    patches_per_second: f64,
    /// After the pod is created, before the first patch.
    memory_before: Memory,
    /// After the last patch (and a second for the cache to apply it).
    memory_after: Memory,
}

pub fn run(args: &PatchMemoryArgs) -> anyhow::Result<PatchMemoryReport> {
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    runtime.block_on(async {
        let dir = tempfile::tempdir().context("server data directory")?;
        let mut flags = vec!["--disable-scheduler"];
        flags.extend(args.server_flags.iter().map(String::as_str));
        let server = start_server_with(&berth, dir.path(), &flags).await?;
        let (_, client) = ready_target(&server, dir.path(), Protocol::Http2).await?;
        let pods = "/api/v1/namespaces/default/pods";
        client
            .create(
                pods,
                Bytes::from(
                    r#"{"metadata":{"name":"big"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#,
                ),
            )
            .await?;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let memory_before = memory_of(server.pid).context("server memory")?;
        let filler = "x".repeat(args.bytes);
        let started = Instant::now();
        for i in 0..args.patches {
            let patch = format!(r#"{{"metadata":{{"annotations":{{"big":"{i}-{filler}"}}}}}}"#);
            client
                .merge_patch(&format!("{pods}/big"), Bytes::from(patch))
                .await?;
        }
        let elapsed = started.elapsed();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let memory_after = memory_of(server.pid).context("server memory")?;
        Ok(PatchMemoryReport {
            bench: "patch-memory",
            machine: Machine::describe(),
            patches: args.patches,
            bytes: args.bytes,
            server_flags: args.server_flags.clone(),
            patches_per_second: round1(args.patches as f64 / elapsed.as_secs_f64()),
            memory_before,
            memory_after,
        })
    })
}
