//! `berth-bench taint-write`: what the warnings before a taint (issue 23)
//! cost a node write. Starts `berth server` (a child process; scheduler and
//! controllers off, so only the benchmark writes), makes `--nodes` Ready
//! nodes and `--pods-on-node` pods bound to the first (none, 300 s and
//! forever tolerations in turn) and `--pending` unbound pods (half of them
//! pinned to the first node by `nodeSelector`, so every NoExecute write
//! turns them away and the server looks through every other node for
//! them), then patches the first node's taints `--writes` times, taking
//! turns between a new NoExecute taint (the warnings are computed) and a
//! new PreferNoSchedule taint (the same write, with nothing to compute:
//! berth without the warnings). Reports each kind's latency.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use hyper::Method;
use serde::Serialize;

use crate::harness::{
    Protocol, bench_runtime, berth_binary, node_json, ready_target, start_server_with,
};
use crate::measure::{Histogram, LatencySummary, Machine};

#[derive(Debug, Args)]
pub struct TaintWriteArgs {
    /// Nodes, the tainted one included.
    #[arg(long, default_value_t = 100)]
    nodes: usize,
    /// Pods bound to the tainted node.
    #[arg(long, default_value_t = 110)]
    pods_on_node: usize,
    /// Unbound pods (half pinned to the tainted node).
    #[arg(long, default_value_t = 100)]
    pending: usize,
    /// Taint writes of each kind.
    #[arg(long, default_value_t = 300)]
    writes: usize,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct TaintWriteReport {
    bench: &'static str,
    machine: Machine,
    nodes: usize,
    pods_on_node: usize,
    pending: usize,
    /// Adding a NoExecute taint: the warnings computed and sent.
    no_execute: LatencySummary,
    /// Adding a PreferNoSchedule taint: nothing to warn of.
    prefer_no_schedule: LatencySummary,
    /// Warning headers on the last NoExecute write.
    warnings: usize,
}

const PODS: &str = "/api/v1/namespaces/default/pods";
const NODE: &str = "/api/v1/nodes/node-00000";

fn pod(name: &str, spec: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"c","image":"busybox","resources":{{"requests":{{"cpu":"10m","memory":"16Mi"}}}}}}]{spec}}}}}"#
    ))
}

pub fn run(args: &TaintWriteArgs) -> anyhow::Result<TaintWriteReport> {
    let berth = berth_binary(args.berth_bin.as_deref())?;
    bench_runtime(2)?.block_on(async {
        let dir = tempfile::tempdir().context("server data directory")?;
        let flags = [
            "--disable-scheduler",
            "--controllers=-node-lifecycle-controller,-taint-eviction-controller",
        ];
        let server = start_server_with(&berth, dir.path(), &flags).await?;
        let (_, client) = ready_target(&server, dir.path(), Protocol::Http2).await?;
        for i in 0..args.nodes.max(1) {
            client.create("/api/v1/nodes", Bytes::from(node_json(i))).await?;
            // Without the not-ready taint admission gives a new node, so the
            // pending pods fit the other nodes.
            client
                .merge_patch(
                    &format!("/api/v1/nodes/node-{i:05}"),
                    Bytes::from_static(br#"{"spec":{"taints":null}}"#),
                )
                .await?;
        }
        let tolerations = [
            "",
            r#","tolerations":[{"key":"bench","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]"#,
            r#","tolerations":[{"operator":"Exists"}]"#,
        ];
        for i in 0..args.pods_on_node {
            let spec = format!(r#","nodeName":"node-00000"{}"#, tolerations[i % 3]);
            client.create(PODS, pod(&format!("bound-{i}"), &spec)).await?;
        }
        for i in 0..args.pending {
            let spec = if i % 2 == 0 {
                r#","nodeSelector":{"kubernetes.io/hostname":"node-00000"}"#
            } else {
                ""
            };
            client.create(PODS, pod(&format!("pending-{i}"), spec)).await?;
        }
        let mut no_execute = Histogram::default();
        let mut prefer_no_schedule = Histogram::default();
        let mut warnings = 0;
        for i in 0..args.writes * 2 {
            let effect = if i % 2 == 0 {
                "NoExecute"
            } else {
                "PreferNoSchedule"
            };
            let patch = format!(
                r#"{{"spec":{{"taints":[{{"key":"bench","value":"v{i}","effect":"{effect}"}}]}}}}"#
            );
            let mut request = client.request(Method::PATCH, NODE, Bytes::from(patch))?;
            request.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/merge-patch+json"),
            );
            let started = Instant::now();
            let response = client.send(request).await?;
            let status = response.status();
            let count = response.headers().get_all("warning").iter().count();
            http_body_util::BodyExt::collect(response.into_body()).await?;
            let elapsed = started.elapsed();
            anyhow::ensure!(status.is_success(), "PATCH {NODE}: {status}");
            if i % 2 == 0 {
                no_execute.record(elapsed);
                warnings = count;
            } else {
                prefer_no_schedule.record(elapsed);
            }
        }
        Ok(TaintWriteReport {
            bench: "taint-write",
            machine: Machine::describe(),
            nodes: args.nodes,
            pods_on_node: args.pods_on_node,
            pending: args.pending,
            no_execute: no_execute.summary_us(),
            prefer_no_schedule: prefer_no_schedule.summary_us(),
            warnings,
        })
    })
}
