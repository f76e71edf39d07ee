//! The components `berth server` runs beside the API server, each an
//! ordinary Kubernetes client over the in-process transport.

use std::sync::Arc;

use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_scheduler::client::{self as scheduler, SchedulerConfig};
use berth_scheduler::config::SchedulerFileConfig;

/// Keeps a component's leader election alive; dropping it ends the election.
pub struct Running {
    _leadership: Option<berth_leader::Leadership>,
}

/// Starts the scheduler as the admin, one per profile; with
/// `leader_elect`, only while this process holds the
/// `kube-system/kube-scheduler` Lease.
pub fn start_scheduler(
    api: &Arc<ApiServer>,
    setup: SchedulerFileConfig,
    leader_elect: bool,
) -> anyhow::Result<Running> {
    let client = in_process::client(api, User::admin(), "default")
        .map_err(|e| anyhow::anyhow!("making the scheduler's client: {e}"))?;
    let clock = api.clock.clone();
    berth_apiserver::metrics::add_component_registry(scheduler::metrics::registry());
    let identity = berth_leader::default_identity(&std::process::id().to_string());
    let configs: Vec<SchedulerConfig> = setup
        .profiles
        .into_iter()
        .map(|profile| SchedulerConfig {
            profile,
            queue: setup.queue,
            instance: identity.clone(),
            ..SchedulerConfig::default()
        })
        .collect();
    let leadership = leader_elect.then(|| {
        berth_leader::spawn(
            client.clone(),
            clock.clone(),
            berth_leader::Config::new("kube-scheduler", identity),
        )
    });
    let leading = leadership
        .as_ref()
        .map_or_else(berth_leader::always_leading, |l| l.subscribe());
    tokio::spawn(berth_leader::run_while_leading(leading, move || {
        let runs: Vec<_> = configs
            .iter()
            .map(|config| scheduler::run(client.clone(), clock.clone(), config.clone()))
            .collect();
        async move {
            futures::future::join_all(runs).await;
        }
    }));
    Ok(Running {
        _leadership: leadership,
    })
}
