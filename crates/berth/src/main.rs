//! The `berth` binary: subcommands that wire berth's libraries together.
//! The work lives in the libraries; this crate parses flags, reads files
//! and prints.

mod check;
mod components;
mod input;
mod scenario_cmd;
mod server_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// berth: a Kubernetes-compatible control plane for where pods may run and
/// when they must leave.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Offline: does this pod fit these nodes, and why.
    Check(check::CheckArgs),
    /// The control plane: a Kubernetes API server on the embedded store or etcd.
    Server(server_cmd::ServerArgs),
    /// Rehearse a failure: run a scenario on a virtual clock, write its timeline and report.
    Sim(scenario_cmd::ScenarioArgs),
}

/// Runs an async command on a multi-threaded runtime.
fn run_async(command: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?
        .block_on(command)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Server(args) => run_async(server_cmd::run(&args)),
        Command::Sim(args) => scenario_cmd::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            // Bad input is the user's to fix (exit 2, like a usage error);
            // anything else is berth's or the machine's (exit 1).
            if err.downcast_ref::<input::InputError>().is_some()
                || scenario_cmd::is_scenario_error(&err)
            {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
