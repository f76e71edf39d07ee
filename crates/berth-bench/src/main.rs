//! berth-bench: the one benchmark harness. Every benchmark is a subcommand
//! that prints one JSON object on stdout (the figures, the parameters and
//! the machine), so runs can be recorded in `docs/benchmarks.md` and
//! compared by tools.

mod apiserver_bench;
mod controllers_bench;
mod core_bench;
mod failover_bench;
mod harness;
mod hostile_yaml_bench;
mod measure;
mod openapi_bench;
mod patch_memory_bench;
mod proto_bench;
mod scenario_bench;
mod scheduler_bench;
mod sim_bench;
mod store_bench;
mod taint_write_bench;
mod ui_bench;
mod workloads_bench;

use clap::{Parser, Subcommand};

/// The allocator `berth server` ships with (crates/berth/src/main.rs), so
/// that benchmarks hosting the store, the API server or the controllers in
/// this process measure what the server does, not glibc's malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// As `berth` does at start-up (crates/berth/src/main.rs): no transparent
/// huge pages, so in-process benches measure the server as shipped. The
/// `berth server` children inherit it and set it again themselves.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("berth-bench: prctl(PR_SET_THP_DISABLE) failed: {e}");
    }
}

#[derive(Debug, Parser)]
#[command(name = "berth-bench", about = "berth's benchmarks; JSON on stdout")]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// Taint/toleration matching: one tolerates() check, and the
    /// TaintToleration filter of one pod over many nodes.
    Core(core_bench::CoreArgs),
    /// Store backends: durable writes/s, write latency and watch delivery latency of redb
    /// and etcd under concurrent closed-loop writers, and memory.
    Store(store_bench::StoreArgs),
    /// The API server over HTTPS (a `berth server` child process): pod creates/s and latency
    /// with concurrent clients, the list of every pod, watch fan-out, and the server's memory.
    Apiserver(apiserver_bench::ApiserverArgs),
    /// The scheduler end to end through `berth server`: upstream scheduler_perf's
    /// SchedulingBasic (5,000 nodes, 10,000 pods) and a taint-heavy variant; pods/s.
    Scheduler(scheduler_bench::SchedulerArgs),
    /// The controllers: CPU of one node lifecycle monitor pass (5,000 nodes, 150,000 pods),
    /// and the lateness of taint evictions when 1,000 pods fall due in the same instant.
    Controllers(controllers_bench::ControllersArgs),
    /// N simulated nodes heart-beating against a `berth server` child process: lease
    /// renewals/s, server and sim CPU and memory, nodes whose lease ever lapsed.
    Sim(sim_bench::SimArgs),
    /// Failover over etcd: three `berth server`s on a three-member etcd, the
    /// leader killed; time until another holds both Leases, binds and evicts.
    Failover(failover_bench::FailoverArgs),
    /// The server's memory while one pod is patched again and again with a
    /// large annotation (the watch cache's history is bounded in bytes).
    PatchMemory(patch_memory_bench::PatchMemoryArgs),
    /// Kubernetes protobuf (berth-proto): encode and decode of one Pod, a watch frame of
    /// it, and the same Pod as JSON for scale.
    Proto(proto_bench::ProtoArgs),
    /// Clients sending deeply nested YAML bodies to a `berth server` child
    /// process: latency of another client's GET of a pod meanwhile.
    HostileYaml(hostile_yaml_bench::HostileYamlArgs),
    /// What the warnings before a taint cost: latency of a node write that
    /// adds a NoExecute taint (110 pods on the node) beside one that adds a
    /// PreferNoSchedule taint (nothing to warn of).
    TaintWrite(taint_write_bench::TaintWriteArgs),
    /// Whole-cluster scenarios in virtual time (`berth sim --scenario`): real
    /// time for hours of a small cluster with the scheduler and controllers.
    Scenario(scenario_bench::ScenarioArgs),
    /// The OpenAPI documents: the time to build all of them (done once, at
    /// the first /openapi request) and the size of each.
    Openapi(openapi_bench::OpenapiArgs),
    /// The workload controllers through `berth server --sim-nodes`: a
    /// Deployment scaled 0 to 10,000 on 1,000 nodes, a DaemonSet on 5,000
    /// nodes; seconds until Running, and every pod created counted.
    Workloads(workloads_bench::WorkloadsArgs),
    /// The live page at /ui/ with 5,000 nodes and 150,000 pods in headless
    /// Chromium: first paint of the node rows and of their pods, and the
    /// time from a watch event to its row.
    Ui(ui_bench::UiArgs),
}

fn main() -> anyhow::Result<()> {
    disable_transparent_huge_pages();
    let cli = Cli::parse();
    let report = match cli.bench {
        Bench::Core(args) => serde_json::to_value(core_bench::run(&args)?)?,
        Bench::Store(args) => serde_json::to_value(store_bench::run(&args)?)?,
        Bench::Apiserver(args) => serde_json::to_value(apiserver_bench::run(&args)?)?,
        Bench::Scheduler(args) => serde_json::to_value(scheduler_bench::run(&args)?)?,
        Bench::Controllers(args) => serde_json::to_value(controllers_bench::run(&args)?)?,
        Bench::Sim(args) => serde_json::to_value(sim_bench::run(&args)?)?,
        Bench::PatchMemory(args) => serde_json::to_value(patch_memory_bench::run(&args)?)?,
        Bench::Scenario(args) => serde_json::to_value(scenario_bench::run(&args)?)?,
        Bench::Openapi(args) => serde_json::to_value(openapi_bench::run(&args))?,
        Bench::Failover(args) => serde_json::to_value(failover_bench::run(&args)?)?,
        Bench::Proto(args) => serde_json::to_value(proto_bench::run(&args)?)?,
        Bench::HostileYaml(args) => serde_json::to_value(hostile_yaml_bench::run(&args)?)?,
        Bench::TaintWrite(args) => serde_json::to_value(taint_write_bench::run(&args)?)?,
        Bench::Workloads(args) => serde_json::to_value(workloads_bench::run(&args)?)?,
        Bench::Ui(args) => serde_json::to_value(ui_bench::run(&args)?)?,
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
