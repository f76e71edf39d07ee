//! `berth-bench scenario`: how long a whole-cluster scenario takes in real time.
//!
//! The scenario is generated: `--nodes` simulated nodes in three zones,
//! `--pods` pods for the scheduler to place, a NoExecute taint on one node
//! at 10m and a whole zone cut off at 20m, for `--hours` of virtual time,
//! with the scheduler and controllers running. The goal (issue 8): an hour
//! of a small cluster in well under a second.

use std::fmt::Write;
use std::time::Instant;

use berth_sim::components::default_components;
use berth_sim::run::run_blocking;
use berth_sim::scenario;
use clap::Args;
use serde::Serialize;

use crate::measure::Machine;

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// Simulated nodes (in three zones).
    #[arg(long, default_value_t = 10)]
    nodes: u32,
    /// Pods the scheduler places at t=0.
    #[arg(long, default_value_t = 30)]
    pods: u32,
    /// Virtual time to run, in hours.
    #[arg(long, default_value_t = 1)]
    hours: u32,
    /// Runs to time (the report gives each and the median).
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    bench: &'static str,
    machine: Machine,
    nodes: u32,
    pods: u32,
    virtual_seconds: u64,
    timeline_entries: usize,
    wall_ms: Vec<f64>,
    median_wall_ms: f64,
    /// CPU time of the run's thread (the whole cluster runs on one
    /// current-thread runtime), from `/proc/thread-self/schedstat`: the
    /// figure to compare on a shared machine, where wall time also counts
    /// waiting for a core.
    cpu_ms: Vec<f64>,
    median_cpu_ms: f64,
    /// Virtual seconds per real second, at the median wall time.
    speedup: f64,
}

/// CPU time this thread has run, in ms (Linux; 0 elsewhere).
fn thread_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e6)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The generated scenario file.
fn scenario_text(args: &ScenarioArgs) -> String {
    let per_zone = args.nodes.div_ceil(3).max(1);
    let mut s = String::from("nodes:\n");
    for zone in ["a", "b", "c"] {
        let _ = writeln!(
            s,
            "  - {{generate: {per_zone}, prefix: {zone}-, zone: {zone}}}"
        );
    }
    s.push_str("objects:\n");
    for i in 0..args.pods {
        let _ = writeln!(
            s,
            "  - {{apiVersion: v1, kind: Pod, metadata: {{name: p{i}}}, spec: {{containers: [{{name: c, image: i, resources: {{requests: {{cpu: 10m}}}}}}]}}}}"
        );
    }
    s.push_str("steps:\n  - {at: 10m, taint: \"a-1 maintenance=true:NoExecute\"}\n");
    s.push_str("  - {at: 20m, heartbeat: {zone: b, stop: true}}\n");
    let _ = writeln!(s, "run: {}h", args.hours.max(1));
    s
}

pub fn run(args: &ScenarioArgs) -> anyhow::Result<ScenarioReport> {
    let scenario = scenario::parse("generated.yaml", &scenario_text(args))?;
    let components = default_components();
    let mut wall_ms = Vec::new();
    let mut cpu_ms = Vec::new();
    let mut entries = 0;
    for seed in 0..args.runs.max(1) {
        let started = Instant::now();
        let cpu_before = thread_cpu_ms();
        let recording = run_blocking(&scenario, &components, seed as u64)?;
        cpu_ms.push(thread_cpu_ms() - cpu_before);
        wall_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        entries = recording.entries.len();
    }
    let median_wall = median(&wall_ms);
    let virtual_seconds = scenario.run.as_secs();
    Ok(ScenarioReport {
        bench: "scenario",
        machine: Machine::describe(),
        nodes: args.nodes.div_ceil(3).max(1) * 3,
        pods: args.pods,
        virtual_seconds,
        timeline_entries: entries,
        median_wall_ms: median_wall,
        median_cpu_ms: median(&cpu_ms),
        wall_ms,
        cpu_ms,
        speedup: virtual_seconds as f64 / (median_wall / 1000.0),
    })
}
