//! `berth-bench ui`: the live page at `/ui/` with 5,000 nodes and 150,000
//! pods (issue 25). Starts `berth server` (a child process; scheduler and
//! node controllers off: the nodes have no agent), fills it through the
//! API (`--nodes` Ready nodes in three zones, `--pods-per-node` pods bound
//! to each, by `--clients` connections in closed loops), then runs
//! `crates/berth/tests/browser/ui-bench.js` (headless Chromium driven by
//! playwright-core), which reloads the page `--runs` times and reports
//! the first paint of the node rows, the paint of their pods, and how
//! long a watch event takes to show in its row.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use serde::Serialize;

use crate::apiserver_bench::{NAMESPACE, Phase, bulk_pod, create_phase};
use crate::harness::{
    API_SERVER_ONLY, Protocol, bench_runtime, berth_binary, data_parent, node_json, ready_target,
    start_server_with,
};
use crate::measure::{Machine, load_average};

#[derive(Debug, Args)]
pub struct UiArgs {
    #[arg(long, default_value_t = 5_000)]
    nodes: usize,
    #[arg(long, default_value_t = 30)]
    pods_per_node: usize,
    /// Connections filling the server.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Reloads of the page measured.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The browser script (default: the one in this source tree).
    #[arg(long)]
    script: Option<PathBuf>,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
    /// Where the server's data directory goes (default: the temp dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct UiReport {
    bench: &'static str,
    machine: Machine,
    /// `/proc/loadavg` before the fill, before the page, and at the end.
    load_average: [String; 3],
    nodes: usize,
    pods: usize,
    fill_nodes: Phase,
    fill_pods: Phase,
    /// What the browser script measured (milliseconds).
    page: serde_json::Value,
    goals: Goals,
}

#[derive(Debug, Serialize)]
struct Goals {
    /// Every run's node rows drawn within 2 s of the navigation.
    first_paint_under_2s: bool,
    /// Every watch event shown within 200 ms of its write's answer.
    watch_event_under_200ms: bool,
}

fn script(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = given.map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../berth/tests/browser/ui-bench.js"),
        Path::to_path_buf,
    );
    anyhow::ensure!(
        path.exists(),
        "{} not found (pass --script)",
        path.display()
    );
    let modules = path.with_file_name("node_modules").join("playwright-core");
    anyhow::ensure!(
        modules.exists(),
        "{} is missing: run `npm ci` in {}",
        modules.display(),
        path.parent()
            .map_or_else(String::new, |p| p.display().to_string())
    );
    Ok(path)
}

pub fn run(args: &UiArgs) -> anyhow::Result<UiReport> {
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let script = script(args.script.as_deref())?;
    let parent = data_parent(args.data_dir.as_deref())?;
    let load_start = load_average();
    bench_runtime(2)?.block_on(async {
        let dir = tempfile::tempdir_in(&parent).context("server data directory")?;
        let mut server = start_server_with(&berth, dir.path(), API_SERVER_ONLY).await?;
        let (target, probe) = ready_target(&server, dir.path(), Protocol::Http2).await?;
        probe
            .create(
                "/api/v1/namespaces",
                Bytes::from(format!(r#"{{"metadata":{{"name":"{NAMESPACE}"}}}}"#)),
            )
            .await?;
        let mut clients = Vec::new();
        for _ in 0..args.clients.max(1) {
            clients.push(target.connect().await?);
        }
        eprintln!("fill: {} nodes", args.nodes);
        let fill_nodes = create_phase(
            &clients,
            args.nodes,
            server.pid,
            Arc::new(|i| ("/api/v1/nodes".to_string(), node_json(i))),
        )
        .await?;
        let pods = args.nodes * args.pods_per_node;
        eprintln!("fill: {pods} pods");
        let nodes = args.nodes;
        let path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
        let fill_pods = create_phase(
            &clients,
            pods,
            server.pid,
            Arc::new(move |i| (path.clone(), bulk_pod(i, nodes))),
        )
        .await?;
        drop(clients);
        let load_page = load_average();
        let token = std::fs::read_to_string(dir.path().join("admin-token"))
            .context("reading the admin token")?;
        eprintln!("page: {} reloads in chromium", args.runs);
        let out = tokio::process::Command::new("node")
            .arg(&script)
            .arg(&server.url)
            .arg(token.trim())
            .arg(args.nodes.to_string())
            .arg(args.pods_per_node.to_string())
            .arg("--filled")
            .arg(format!("--runs={}", args.runs.max(1)))
            .output()
            .await
            .context("running node (Debian package nodejs)")?;
        let _ = server.child.kill().await;
        anyhow::ensure!(
            out.status.success(),
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let page: serde_json::Value =
            serde_json::from_slice(&out.stdout).context("the script's JSON")?;
        let all_under = |key: &str, limit: u64| {
            page[key].as_array().is_some_and(|runs| {
                runs.iter()
                    .all(|ms| ms.as_u64().is_some_and(|ms| ms < limit))
            })
        };
        let goals = Goals {
            first_paint_under_2s: all_under("nodeRowsPaintMs", 2000),
            watch_event_under_200ms: page["watchEventMs"]["max"]
                .as_u64()
                .is_some_and(|ms| ms < 200),
        };
        Ok(UiReport {
            bench: "ui",
            machine: Machine::describe(),
            load_average: [load_start, load_page, load_average()],
            nodes: args.nodes,
            pods,
            fill_nodes,
            fill_pods,
            page,
            goals,
        })
    })
}
