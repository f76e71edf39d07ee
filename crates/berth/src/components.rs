//! The components `berth server` runs beside the API server (each an
//! ordinary Kubernetes client over the in-process transport) and `berth
//! scheduler` and `berth controllers` run against any API server (over a
//! kubeconfig's client): the same start for both.

use std::sync::Arc;
use std::time::Duration;

use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_client::SharedWatches;
use berth_core::clock::Clock;
use berth_scheduler::client::{self as scheduler, SchedulerConfig};
use berth_scheduler::config::SchedulerFileConfig;
use tokio::task::JoinSet;

use crate::leader_election::Election;

/// How long a stopping server tries to release a Lease (the store may be
/// what failed): a successor waits out the lease duration otherwise.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// A running component: its tasks and its leader election. Dropping it
/// aborts the tasks and ends the election as a crash would (the Lease is
/// not released); [`Running::stop`] is the graceful way.
pub struct Running {
    tasks: JoinSet<()>,
    leadership: Option<berth_leader::Leadership>,
}

impl Running {
    pub fn new(tasks: JoinSet<()>, leadership: Option<berth_leader::Leadership>) -> Running {
        Running { tasks, leadership }
    }

    /// Stops the component's tasks, then releases its Lease (as upstream's
    /// `ReleaseOnCancel`), so another server leads at once instead of
    /// after the lease duration, and never while these tasks still run.
    pub async fn stop(mut self) {
        self.tasks.shutdown().await;
        if let Some(leadership) = self.leadership.take()
            && tokio::time::timeout(RELEASE_TIMEOUT, leadership.stop())
                .await
                .is_err()
        {
            tracing::warn!("could not release a leader election Lease in time");
        }
    }
}

/// `pods/{name}/scheduling`'s answers, from berth-scheduler's framework
/// with the profiles the in-process scheduler runs: the API server asks,
/// the scheduler's code answers, and neither crate depends on the other.
pub struct FrameworkExplainer {
    pub profiles: Vec<berth_scheduler::cycle::Profile>,
}

impl berth_apiserver::api::explainer::SchedulingExplainer for FrameworkExplainer {
    fn explain(
        &self,
        question: &berth_apiserver::api::explainer::SchedulingQuestion,
    ) -> Result<serde_json::Value, String> {
        let cluster = berth_scheduler::explain::ClusterObjects {
            nodes: question.nodes.clone(),
            pods: question.pods.clone(),
            namespaces: question.namespaces.clone(),
        };
        let report = berth_scheduler::explain::report(
            &self.profiles,
            &question.pod,
            &cluster,
            &question.changed_nodes,
        )?;
        serde_json::to_value(report).map_err(|e| e.to_string())
    }
}

/// A client of `api` over the in-process transport, as `user`.
pub fn in_process_client(api: &Arc<ApiServer>, user: User) -> anyhow::Result<kube::Client> {
    in_process::client(api, user.clone(), "default")
        .map_err(|e| anyhow::anyhow!("making the in-process client of {}: {e}", user.name))
}

/// Starts the scheduler, one per profile, over `client`, the profiles
/// following Pods and Nodes through `watches` (in `berth server` the
/// controllers' too); with an `election`, only while this process holds
/// the Lease `(namespace, name)`.
pub fn start_scheduler(
    client: kube::Client,
    watches: SharedWatches,
    clock: Clock,
    setup: SchedulerFileConfig,
    election: Option<(&Election, (String, String))>,
) -> Running {
    let instance = match election {
        Some((election, _)) => election.identity.clone(),
        None => berth_leader::default_identity(&std::process::id().to_string()),
    };
    let configs: Vec<SchedulerConfig> = setup
        .profiles
        .into_iter()
        .map(|profile| SchedulerConfig {
            profile,
            queue: setup.queue,
            instance: instance.clone(),
            ..SchedulerConfig::default()
        })
        .collect();
    let leadership =
        election.map(|(election, lock)| election.spawn(client.clone(), clock.clone(), lock));
    let leading = leadership
        .as_ref()
        .map_or_else(berth_leader::always_leading, |l| l.subscribe());
    let mut tasks = JoinSet::new();
    tasks.spawn(berth_leader::run_while_leading(leading, move || {
        let runs: Vec<_> = configs
            .iter()
            .map(|config| {
                scheduler::run_sharing(
                    client.clone(),
                    watches.clone(),
                    clock.clone(),
                    config.clone(),
                )
            })
            .collect();
        async move {
            futures::future::join_all(runs).await;
        }
    }));
    Running::new(tasks, leadership)
}
