//! One node agent: registration, then the Lease, the status loop and the
//! pod sync loop side by side until shutdown, then graceful node shutdown.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_runtime::Runtime;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::conditions::{Health, SHUTTING_DOWN, node_conditions};
use crate::config::AgentConfig;
use crate::eviction_thresholds::Thresholds;
use crate::heartbeat::{self, LeaseRenewer};
use crate::metrics::{AgentMetrics, unix_seconds};
use crate::node_client::{ClientError, NodeClient};
use crate::pods::{PodEvent, PodWorker, feed};
use crate::registration::{NodeTemplate, register, wait_for_node};
use crate::status::StatusReporter;

/// How one agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The Node registered (name, labels, taints, capacity, ...).
    pub template: NodeTemplate,
    /// `--register-node`: create the Node, or wait for an admin to.
    pub register_node: bool,
    pub config: AgentConfig,
    pub gates: FeatureGates,
    /// Where the host's pressure signals are read (the data dir); `None`
    /// for a simulated node, which never reports pressure.
    pub host_signals: Option<PathBuf>,
}

/// An agent failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("registering node {node:?}: {source}")]
    Register { node: String, source: ClientError },
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Runs the agent until `shutdown` is cancelled, then shuts the node down
/// gracefully (when the configuration asks for it) and returns.
pub async fn run(
    client: NodeClient,
    runtime: Arc<dyn Runtime>,
    clock: Clock,
    options: AgentOptions,
    metrics: Arc<AgentMetrics>,
    shutdown: CancellationToken,
) -> Result<(), AgentError> {
    let name = options.template.name.clone();
    let thresholds =
        Thresholds::from_map(&options.config.eviction_hard).map_err(AgentError::Config)?;
    let node = if options.register_node {
        // The Node is created with the node's conditions, as a kubelet's
        // initial Node carries them: Ready from its registration.
        let conditions =
            node_conditions(current_health(&options, &thresholds), &[], &[], clock.now());
        let node = options.template.node_with_conditions(conditions);
        register(&client, &node, &clock, &shutdown).await
    } else {
        wait_for_node(&client, &clock, &shutdown).await
    }
    .map_err(|source| AgentError::Register {
        node: name.clone(),
        source,
    })?;
    tracing::info!(node = %name, "node registered: joined the cluster");

    let loops = CancellationToken::new();
    let renewer = LeaseRenewer::new(
        &name,
        node.metadata.uid.clone(),
        options.config.node_lease_duration_seconds,
    );
    // Every loop below is aborted when this function's future is dropped
    // (the agent hosted in a process that goes on, killed without its
    // shutdown): an orphaned heartbeat would keep a dead node Ready.
    let lease = AbortOnDropHandle::new(tokio::spawn(heartbeat::run(
        renewer,
        client.clone(),
        clock.clone(),
        options.config.lease_renew_interval(),
        loops.clone(),
    )));

    let shutting_down = Arc::new(AtomicBool::new(false));
    let sync_now = Arc::new(Notify::new());
    let status = AbortOnDropHandle::new(tokio::spawn(status_loop(
        client.clone(),
        clock.clone(),
        options.clone(),
        thresholds,
        StatusReporter::new(options.config.node_status_report_frequency),
        shutting_down.clone(),
        sync_now.clone(),
        loops.clone(),
    )));

    let worker = PodWorker::new(
        runtime.clone(),
        Arc::new(client.clone()),
        clock.clone(),
        options.gates,
    );
    let (events, receiver) = tokio::sync::mpsc::unbounded_channel::<PodEvent>();
    let worker_task = AbortOnDropHandle::new(tokio::spawn(worker.clone().run(receiver)));
    let feed_task = AbortOnDropHandle::new(tokio::spawn(feed(
        client.kube_client().clone(),
        format!("spec.nodeName={name}"),
        runtime,
        events,
    )));

    shutdown.cancelled().await;
    let phases = options.config.shutdown_phases();
    if !phases.is_empty() {
        tracing::info!(node = %name, "graceful node shutdown");
        shutting_down.store(true, Ordering::SeqCst);
        sync_now.notify_one();
        metrics
            .graceful_shutdown_start_time_seconds
            .set(unix_seconds(clock.now()));
        worker.shutdown(&phases).await;
        metrics
            .graceful_shutdown_end_time_seconds
            .set(unix_seconds(clock.now()));
        tracing::info!(node = %name, "graceful node shutdown done");
    }
    loops.cancel();
    feed_task.abort();
    worker_task.abort();
    let _ = lease.await;
    let _ = status.await;
    Ok(())
}

/// The node's pressures now, from the host's signals when the agent reads
/// them (none otherwise, or when they cannot be read).
fn current_health(options: &AgentOptions, thresholds: &Thresholds) -> Health {
    match &options.host_signals {
        Some(dir) => match crate::host::read_signals(dir) {
            Ok(signals) => {
                let (memory_pressure, disk_pressure, pid_pressure) = thresholds.pressures(&signals);
                Health {
                    memory_pressure,
                    disk_pressure,
                    pid_pressure,
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the host failed");
                Health::default()
            }
        },
        None => Health::default(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn status_loop(
    client: NodeClient,
    clock: Clock,
    options: AgentOptions,
    thresholds: Thresholds,
    mut reporter: StatusReporter,
    shutting_down: Arc<AtomicBool>,
    sync_now: Arc<Notify>,
    stop: CancellationToken,
) {
    loop {
        let health = current_health(&options, &thresholds);
        let not_ready: Vec<String> = if shutting_down.load(Ordering::SeqCst) {
            vec![SHUTTING_DOWN.to_string()]
        } else {
            Vec::new()
        };
        // Compared with the Node on the server, not with this agent's last
        // write: the node lifecycle controller may have set it Unknown.
        match client.get_node().await {
            Ok(node) => {
                let server = node.status.and_then(|s| s.conditions).unwrap_or_default();
                let instant = clock.instant();
                if let Some(patch) = reporter.due(
                    &options.template,
                    &server,
                    health,
                    &not_ready,
                    clock.now(),
                    instant,
                ) {
                    match client.patch_node_status(&patch).await {
                        Ok(_) => reporter.reported(instant),
                        Err(e) => tracing::warn!(error = %e, "writing the node status failed"),
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the node for its status failed"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = sync_now.notified() => {}
            _ = clock.sleep(options.config.node_status_update_frequency) => {}
        }
    }
}
