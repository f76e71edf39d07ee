//! `berth controllers`: berth's controllers against any Kubernetes API
//! server, as kube-controller-manager runs them. With
//! `--controllers=node-lifecycle-controller,taint-eviction-controller` it
//! replaces upstream's (run kube-controller-manager with
//! `--controllers=*,-taint-eviction-controller,-node-lifecycle-controller`).

use berth_core::clock::Clock;
use clap::Args;

use crate::kubeconfig_flags::{ComponentFlags, stop_signal};

#[derive(Debug, Args)]
pub struct ControllersArgs {
    #[command(flatten)]
    pub component: ComponentFlags,
    #[command(flatten)]
    controllers: crate::controllers_flags::ControllerFlags,
}

pub async fn run(args: &ControllersArgs) -> anyhow::Result<()> {
    let client = args.component.kubeconfig.client().await?;
    // On by default, as kube-controller-manager's `--leader-elect`.
    let election = args.component.leader_election.election(true);
    let lock = args.component.lease.lock("kube-controller-manager");
    let controllers = crate::controllers_flags::start(
        berth_client::SharedWatches::new(client),
        Clock::real(),
        &args.controllers,
        args.component.feature_gates,
        election.as_ref().map(|e| (e, lock.clone())),
    );
    match &election {
        Some(election) => eprintln!(
            "berth controllers: {} as {} once leading {}/{}",
            args.controllers.enabled_names().join(", "),
            election.identity,
            lock.0,
            lock.1
        ),
        None => eprintln!(
            "berth controllers: {}",
            args.controllers.enabled_names().join(", ")
        ),
    }
    let signal = stop_signal().await?;
    eprintln!("berth controllers: {signal}, stopping");
    controllers.stop().await;
    eprintln!("berth controllers: stopped");
    Ok(())
}
