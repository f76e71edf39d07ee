//! berth-bench: the one benchmark harness. Every benchmark is a subcommand
//! that prints one JSON object on stdout (the figures, the parameters and
//! the machine), so runs can be recorded in `docs/benchmarks.md` and
//! compared by tools.

mod core_bench;
mod measure;

use clap::{Parser, Subcommand};

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let report = match cli.bench {
        Bench::Core(args) => core_bench::run(&args)?,
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
