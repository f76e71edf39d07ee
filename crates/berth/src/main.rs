//! The `berth` binary: subcommands that wire berth's libraries together.
//! The work lives in the libraries; this crate parses flags, reads files
//! and prints.

mod agent_cmd;
mod check;
mod components;
mod controllers_cmd;
mod controllers_flags;
mod explain_cmd;
mod fleet_cmd;
mod input;
mod kubeconfig_flags;
mod leader_election;
mod scenario_cmd;
mod scheduler_cmd;
mod scheduler_flags;
mod server_cmd;
mod sim_cmd;
mod taint_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's malloc: the server's request path allocates
/// and frees many small JSON nodes per request across threads, where glibc
/// spent ~18% of the API server's CPU (malloc, free, consolidation) in a
/// profile of the create benchmark.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// No transparent huge pages for this process (inherited by its children).
/// With THP, a fresh 2 MiB region of the heap is zeroed (and, when the
/// kernel defragments on fault, compacted) in one page fault: stalls of
/// 1–10 ms on whatever thread touched it, which were the whole tail of the
/// store's write and watch latency (p99 5.3–6.7 ms with THP, 1.5–1.7 ms
/// without, on tmpfs with 64 writers) and ~18 % of the CPU of a burst of
/// evictions (the kernel's `clear_page`). Redis and MongoDB give the same
/// advice. Best effort: a kernel without the prctl keeps its default.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // Before logging is set up, and not worth a line on every command.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// Raises this process's soft limit on open file descriptors to its hard
/// limit, as servers commonly do (Go's runtime does it for every Go
/// program since 1.19, kube-apiserver included): each client connection and
/// watch is a descriptor, and the usual soft default of 1,024 let a
/// thousand idle connections lock every other client out. Children get the
/// old soft limit back from the runtimes that start them where it matters
/// (`select`-based programs); berth's do not care. Best effort.
fn raise_open_files_limit() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            limit.current = limit.maximum;
            let _ = setrlimit(Resource::Nofile, limit);
        }
    }
}

/// Logs of the long-running commands go to stderr, at `info` unless
/// `RUST_LOG` says otherwise (`warn`, `berth_store=debug,info`, ...).
fn init_logging(verbose: u8) {
    use tracing_subscriber::filter::LevelFilter;
    // RUST_LOG, when set, says it all (per module: `berth_agent=debug`);
    // else info, `-v` debug, `-vv` trace.
    let level = match verbose {
        0 => LevelFilter::INFO,
        1 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| spec.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(level));
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        )
        .with(filter)
        .try_init();
}

/// berth: a Kubernetes-compatible control plane for where pods may run and
/// when they must leave.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
struct Cli {
    /// More log detail: `-v` debug, `-vv` trace (`RUST_LOG` overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Offline: does this pod fit these nodes, and why.
    Check(check::CheckArgs),
    /// The control plane: a Kubernetes API server on the embedded store or etcd.
    Server(server_cmd::ServerArgs),
    /// berth's scheduler against any Kubernetes API server (`--kubeconfig`),
    /// as kube-scheduler runs.
    Scheduler(scheduler_cmd::SchedulerArgs),
    /// berth's controllers against any Kubernetes API server
    /// (`--kubeconfig`), as kube-controller-manager runs them.
    Controllers(controllers_cmd::ControllersArgs),
    /// The node agent: join this host to a cluster and run its pods.
    Agent(agent_cmd::AgentArgs),
    /// Simulated nodes: a fleet joined to a running cluster, or a failure
    /// rehearsed on a virtual clock.
    Sim(sim_cmd::SimArgs),
    /// `kubectl taint`, whose taints may expire (`--for 2h`).
    Taint(taint_cmd::TaintArgs),
    /// Why a pod goes where it goes, node by node; what a taint would do.
    Explain(explain_cmd::ExplainArgs),
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
    disable_transparent_huge_pages();
    raise_open_files_limit();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let leader_election = match &cli.command {
        Command::Server(args) => Some(&args.leader_election),
        Command::Scheduler(args) => Some(&args.component.leader_election),
        Command::Controllers(args) => Some(&args.component.leader_election),
        _ => None,
    };
    if let Some(Err(e)) = leader_election.map(|flags| flags.validate()) {
        use clap::CommandFactory;
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit();
    }
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Server(args) => run_async(server_cmd::run(&args)),
        Command::Scheduler(args) => run_async(scheduler_cmd::run(&args)),
        Command::Controllers(args) => run_async(controllers_cmd::run(&args)),
        Command::Agent(args) => run_async(agent_cmd::run(&args)),
        Command::Sim(args) => match args.command().unwrap_or_else(|e| e.exit()) {
            sim_cmd::SimCommand::Fleet(args) => run_async(fleet_cmd::run(&args)),
            sim_cmd::SimCommand::Scenario(args) => scenario_cmd::run(&args),
        },
        Command::Taint(args) => run_async(taint_cmd::run(&args)),
        Command::Explain(args) => run_async(explain_cmd::run(&args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // An answer, not a failure: the pod fits nowhere (exit 1).
        Err(err) if err.downcast_ref::<check::FitsNowhere>().is_some() => {
            eprintln!("berth check: {err}");
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("error: {}", error_chain(&err));
            // Bad input is the user's to fix (exit 2, like a usage error);
            // anything else is berth's or the machine's (exit 1).
            if err.downcast_ref::<input::InputError>().is_some()
                || err.downcast_ref::<input::UsageError>().is_some()
                || scenario_cmd::is_scenario_error(&err)
                || agent_cmd::is_join_error_to_fix(&err)
            {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// `err` and its causes, `: `-separated as `{:#}` prints them, but without
/// a cause whose message the one before it already spelled out (errors
/// that put their source in their own message, as many do, would
/// otherwise say it twice: "serving on ...: Address already in use ...:
/// Address already in use ...").
fn error_chain(err: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut previous = String::new();
    for cause in err.chain() {
        let message = cause.to_string();
        if !previous.is_empty() && previous.contains(&message) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&message);
        previous = message;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    /// An error that writes its source into its own message.
    #[derive(Debug)]
    struct Listen(std::io::Error);

    impl std::fmt::Display for Listen {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "serving on 127.0.0.1:6443: {}", self.0)
        }
    }

    impl std::error::Error for Listen {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_is_said_once() {
        struct Case {
            name: &'static str,
            err: anyhow::Error,
            want: &'static str,
        }
        let in_use =
            || std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use");
        let cases = [
            Case {
                name: "a source inside the message",
                err: anyhow::Error::new(Listen(in_use())).context("starting the server"),
                want: "starting the server: serving on 127.0.0.1:6443: Address already in use",
            },
            Case {
                name: "a context over a plain error",
                err: anyhow::Error::new(in_use()).context("binding"),
                want: "binding: Address already in use",
            },
        ];
        for case in cases {
            assert_eq!(error_chain(&case.err), case.want, "{}", case.name);
        }
    }
}
