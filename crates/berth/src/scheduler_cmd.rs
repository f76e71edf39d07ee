//! `berth scheduler`: berth's scheduler against any Kubernetes API server,
//! as kube-scheduler runs: a second scheduler (pods with `schedulerName:
//! berth`, by `--scheduler-name` or `--config`) or its replacement.

use berth_core::clock::Clock;
use clap::Args;

use crate::kubeconfig_flags::{ComponentFlags, stop_signal};

#[derive(Debug, Args)]
pub struct SchedulerArgs {
    #[command(flatten)]
    pub component: ComponentFlags,
    #[command(flatten)]
    scheduler: crate::scheduler_flags::SchedulerFlags,
}

pub async fn run(args: &SchedulerArgs) -> anyhow::Result<()> {
    let setup = args.scheduler.setup(args.component.feature_gates)?;
    let client = args.component.kubeconfig.client().await?;
    // On by default, as kube-scheduler's `--leader-elect`.
    let election = args.component.leader_election.election(true);
    let names: Vec<String> = setup
        .profiles
        .iter()
        .map(|p| p.scheduler_name.clone())
        .collect();
    let scheduler = crate::components::start_scheduler(
        client.clone(),
        berth_client::SharedWatches::new(client),
        Clock::real(),
        setup,
        election
            .as_ref()
            .map(|e| (e, args.component.lease.lock("kube-scheduler"))),
    );
    match &election {
        Some(election) => eprintln!(
            "berth scheduler: scheduling {} as {} once leading {}/{}",
            names.join(", "),
            election.identity,
            args.component.lease.lock("kube-scheduler").0,
            args.component.lease.lock("kube-scheduler").1
        ),
        None => eprintln!("berth scheduler: scheduling {}", names.join(", ")),
    }
    let signal = stop_signal().await?;
    eprintln!("berth scheduler: {signal}, stopping");
    // The Lease released once the scheduler's tasks are stopped, so another
    // scheduler leads at once and never while this one still binds.
    scheduler.stop().await;
    eprintln!("berth scheduler: stopped");
    Ok(())
}
