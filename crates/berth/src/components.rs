//! The components `berth server` runs beside the API server, each an
//! ordinary Kubernetes client over the in-process transport.

use std::sync::Arc;

use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::FeatureGates;
use berth_scheduler::client::{self as scheduler, SchedulerConfig};
use berth_scheduler::cycle::Profile;

use crate::leader_election::Election;

/// Keeps a component's leader election alive; dropping it ends the election.
pub struct Running {
    _leadership: Option<berth_leader::Leadership>,
}

/// Starts the scheduler as the admin; with an `election`, only while this
/// process holds the `kube-system/kube-scheduler` Lease.
pub fn start_scheduler(
    api: &Arc<ApiServer>,
    scheduler_name: String,
    gates: FeatureGates,
    election: Option<&Election>,
) -> anyhow::Result<Running> {
    let client = in_process::client(api, User::admin(), "default")
        .map_err(|e| anyhow::anyhow!("making the scheduler's client: {e}"))?;
    let clock = api.clock.clone();
    berth_apiserver::metrics::add_component_registry(scheduler::metrics::registry());
    let instance = match election {
        Some(election) => election.identity.clone(),
        None => berth_leader::default_identity(&std::process::id().to_string()),
    };
    let config = SchedulerConfig {
        profile: Profile::new(scheduler_name, gates),
        instance,
        ..SchedulerConfig::default()
    };
    let leadership =
        election.map(|election| election.spawn(client.clone(), clock.clone(), "kube-scheduler"));
    let leading = leadership
        .as_ref()
        .map_or_else(berth_leader::always_leading, |l| l.subscribe());
    tokio::spawn(berth_leader::run_while_leading(leading, move || {
        scheduler::run(client.clone(), clock.clone(), config.clone())
    }));
    Ok(Running {
        _leadership: leadership,
    })
}
