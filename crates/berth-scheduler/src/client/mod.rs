//! The scheduler as a Kubernetes client: kube-rs watchers (Pods and Nodes
//! through berth-client's shared watches, which `berth server` shares with
//! its controllers) feed the [`Scheduler`] state machine, and its decisions go back to the API server
//! as `pods/binding` requests (many in flight), `PodScheduled` conditions
//! and Events. It works against any API server; `berth server` runs it
//! over the in-process transport.
//!
//! One task owns the state machine. It applies every watch event already
//! delivered, then runs scheduling cycles in small batches, so decisions
//! always see the latest cluster state the watches have delivered plus
//! every pod assumed so far. Bindings and status patches are separate
//! tasks whose results come back to the owner; they belong to [`run`]'s
//! future and are aborted with it. Events go through one writer task.
//!
//! Leader election is the caller's: wrap [`run`] in
//! `berth_leader::run_while_leading` (state is rebuilt from the watches
//! each time leadership is gained; dropping the future on a lost lease
//! also abandons the bindings in flight, so none lands after it).

pub mod metrics;
pub mod report;

use std::sync::Arc;

use berth_client::{Change, SharedWatches, changes};
use berth_core::clock::Clock;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Binding, Namespace, Node, ObjectReference, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cycle::{Profile, ScheduleError};
use crate::queue::QueueConfig;
use crate::scheduler::{Decision, Refusal, Scheduler, pod_key};

use metrics::AttemptResult;
use report::{PodEvent, Recorder};

/// How many cycles run between two looks at the watches.
const CYCLES_PER_BATCH: usize = 128;

/// How the scheduler runs.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// The profile, whose name is the `schedulerName` this scheduler takes.
    pub profile: Profile,
    pub queue: QueueConfig,
    /// Bindings in flight at once, at most.
    pub max_binds_in_flight: usize,
    /// The Events' `reportingInstance`.
    pub instance: String,
    /// Seeds the tie-breaker; random when `None`.
    pub seed: Option<u64>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            profile: Profile::default(),
            queue: QueueConfig::default(),
            max_binds_in_flight: 512,
            instance: "default-scheduler".into(),
            seed: None,
        }
    }
}

/// A binding's result, back to the owner of the state machine.
struct BindOutcome {
    key: String,
    pod: Arc<Pod>,
    node: String,
    started: Instant,
    result: Result<(), kube::Error>,
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::process::id())
}

/// Runs the scheduler until the watches end (they retry on errors, so in
/// practice until the task is dropped), with Pod and Node watches of its
/// own.
pub async fn run(client: kube::Client, clock: Clock, config: SchedulerConfig) {
    let watches = SharedWatches::new(client.clone());
    run_sharing(client, watches, clock, config).await;
}

/// [`run`] with the Pods and Nodes of `watches`, which other schedulers
/// (profiles) and controllers of the process may follow too: each change
/// decoded once. `client` makes every other request.
pub async fn run_sharing(
    client: kube::Client,
    watches: SharedWatches,
    clock: Clock,
    config: SchedulerConfig,
) {
    let profile_name = config.profile.scheduler_name.clone();
    let mut core = Scheduler::new(
        config.profile.clone(),
        config.queue,
        config.seed.unwrap_or_else(random_seed),
    );
    let mut nodes = watches.nodes().changes().boxed();
    let mut pods = watches.pods().changes().boxed();
    // Namespace labels, for InterPodAffinity's namespace selectors.
    let mut namespaces = changes(
        watcher(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
    )
    .boxed();
    // PodDisruptionBudgets, which preemption weighs (upstream's PDB
    // informer).
    let mut pdbs = changes(
        watcher(
            Api::<PodDisruptionBudget>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
    )
    .boxed();
    // Bindings and PodScheduled patches in flight: owned by this future, so
    // they end with it (a lost lease drops it) rather than land afterwards.
    let mut bindings: JoinSet<BindOutcome> = JoinSet::new();
    let binds = Arc::new(Semaphore::new(config.max_binds_in_flight.max(1)));
    let mut reports = Reports {
        recorder: Recorder::spawn(
            client.clone(),
            clock.clone(),
            profile_name.clone(),
            config.instance.clone(),
        ),
        status_writes: JoinSet::new(),
        preemptions: JoinSet::new(),
        client: client.clone(),
        clock: clock.clone(),
        profile: profile_name.clone(),
    };
    let mut nodes_synced = false;
    let mut pods_synced = false;
    let mut namespaces_synced = false;
    let mut pdbs_synced = false;
    tracing::info!(scheduler = %profile_name, "scheduler started");

    loop {
        // Everything already delivered, without waiting.
        loop {
            let mut progressed = false;
            while let Some(event) = nodes.next().now_or_never() {
                let Some(event) = event else { return };
                nodes_synced |= on_node_change(&mut core, event, clock.instant());
                progressed = true;
            }
            while let Some(event) = pods.next().now_or_never() {
                let Some(event) = event else { return };
                pods_synced |= on_pod_change(&mut core, event, clock.instant());
                progressed = true;
            }
            while let Some(event) = namespaces.next().now_or_never() {
                let Some(event) = event else { return };
                namespaces_synced |= on_namespace_change(&mut core, event, clock.instant());
                progressed = true;
            }
            while let Some(event) = pdbs.next().now_or_never() {
                let Some(event) = event else { return };
                pdbs_synced |= on_pdb_change(&mut core, event);
                progressed = true;
            }
            while let Some(outcome) = bindings.try_join_next() {
                if let Ok(outcome) = outcome {
                    reports.bind_outcome(&mut core, outcome);
                }
                progressed = true;
            }
            reports.reap(&mut core);
            if !progressed {
                break;
            }
        }
        core.flush(clock.instant());

        if nodes_synced && pods_synced && namespaces_synced && pdbs_synced && core.has_work() {
            for _ in 0..CYCLES_PER_BATCH {
                let started = clock.instant();
                let Some(decision) = core.schedule_one(started) else {
                    break;
                };
                match decision {
                    Decision::Bind(binding) => {
                        // Waiting for a slot holds the loop: the bindings in
                        // flight are the backlog, not the queue.
                        let Ok(permit) = binds.clone().acquire_owned().await else {
                            return;
                        };
                        let client = client.clone();
                        bindings.spawn(async move {
                            let result = bind(client, &binding.pod, &binding.result.node).await;
                            drop(permit);
                            BindOutcome {
                                key: binding.key,
                                pod: binding.pod,
                                node: binding.result.node,
                                started,
                                result,
                            }
                        });
                    }
                    Decision::Refuse(refusal) => {
                        let result = if refusal.error.is_error() {
                            AttemptResult::Error
                        } else {
                            AttemptResult::Unschedulable
                        };
                        metrics::observe_attempt(&profile_name, result, started.elapsed());
                        if matches!(refusal.error, ScheduleError::Fit(_)) {
                            metrics::observe_preemption_attempt();
                        }
                        let message = refusal.error.to_string();
                        let reason = refusal.reason();
                        tracing::debug!(pod = %refusal.key, %message, "pod not scheduled");
                        reports.failure(
                            refusal.pod.clone(),
                            reason,
                            message,
                            refusal.nominate.clone(),
                        );
                        reports.preempt(&refusal);
                    }
                }
            }
            metrics::set_pending(core.pending());
            tokio::task::yield_now().await;
            continue;
        }
        metrics::set_pending(core.pending());

        // Nothing to do: wait for an event, a binding, or a backoff to end.
        let wake = core.next_wakeup();
        let sleep = async {
            match wake {
                Some(at) => {
                    clock
                        .sleep(at.saturating_duration_since(clock.instant()))
                        .await
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            // In order, not at random: the simulator replays a run exactly.
            biased;
            event = nodes.next() => {
                let Some(event) = event else { return };
                nodes_synced |= on_node_change(&mut core, event, clock.instant());
            }
            event = pods.next() => {
                let Some(event) = event else { return };
                pods_synced |= on_pod_change(&mut core, event, clock.instant());
            }
            event = namespaces.next() => {
                let Some(event) = event else { return };
                namespaces_synced |= on_namespace_change(&mut core, event, clock.instant());
            }
            event = pdbs.next() => {
                let Some(event) = event else { return };
                pdbs_synced |= on_pdb_change(&mut core, event);
            }
            Some(outcome) = bindings.join_next(), if !bindings.is_empty() => {
                if let Ok(outcome) = outcome {
                    reports.bind_outcome(&mut core, outcome);
                }
            }
            () = sleep => {}
        }
    }
}

/// Applies a node change; true once the node view is complete.
fn on_node_change(core: &mut Scheduler, change: Change<Arc<Node>>, now: Instant) -> bool {
    match change {
        Change::Upsert(node) => core.upsert_node(node, now),
        Change::Delete(gone) => core.delete_node(&gone.key.name, now),
        Change::Synced => return true,
    }
    false
}

/// Applies a pod change; true once the pod view is complete.
fn on_pod_change(core: &mut Scheduler, change: Change<Arc<Pod>>, now: Instant) -> bool {
    match change {
        Change::Upsert(pod) => core.upsert_pod(pod, now),
        Change::Delete(gone) => core.delete_pod(&gone.key.to_string(), now),
        Change::Synced => return true,
    }
    false
}

/// Applies a namespace change; true once the namespace view is complete.
fn on_namespace_change(core: &mut Scheduler, change: Change<Namespace>, now: Instant) -> bool {
    match change {
        Change::Upsert(ns) => core.upsert_namespace(ns, now),
        Change::Delete(gone) => core.delete_namespace(&gone.key.name, now),
        Change::Synced => return true,
    }
    false
}

/// Applies a PodDisruptionBudget change; true once the budget view is
/// complete.
fn on_pdb_change(core: &mut Scheduler, change: Change<PodDisruptionBudget>) -> bool {
    match change {
        Change::Upsert(pdb) => core.upsert_pdb(pdb),
        Change::Delete(gone) => core.delete_pdb(&gone.key.namespace, &gone.key.name),
        Change::Synced => return true,
    }
    false
}

/// What the scheduler reports of its decisions: Events, and `PodScheduled`
/// patches as tasks that belong to [`run`]'s future.
struct Reports {
    recorder: Recorder,
    status_writes: JoinSet<()>,
    /// Victims being preempted: the key of one whose deletion failed.
    preemptions: JoinSet<Option<String>>,
    client: kube::Client,
    clock: Clock,
    profile: String,
}

impl Reports {
    /// Forgets the status patches that have finished; tells the state
    /// machine of victims whose deletion failed.
    fn reap(&mut self, core: &mut Scheduler) {
        while self.status_writes.try_join_next().is_some() {}
        while let Some(done) = self.preemptions.try_join_next() {
            if let Ok(Some(victim)) = done {
                core.preemption_failed(&victim);
            }
        }
    }

    /// Carries out a preemption (upstream's `prepareCandidate`): each
    /// victim gets the `DisruptionTarget` condition and is deleted
    /// gracefully, with a `Preempted` event; lower-priority pods nominated
    /// to the node lose their nomination.
    fn preempt(&mut self, refusal: &Refusal) {
        let Some(preemption) = &refusal.preemption else {
            return;
        };
        metrics::observe_preemption_victims(preemption.victims.len());
        let preemptor_uid = refusal.pod.metadata.uid.clone().unwrap_or_default();
        for victim in &preemption.victims {
            self.recorder.record(PodEvent {
                pod: victim.clone(),
                type_: "Normal",
                reason: "Preempted",
                action: "Preempting",
                note: format!(
                    "Preempted by pod {preemptor_uid} on node {}",
                    preemption.node
                ),
            });
            let client = self.client.clone();
            let victim = victim.clone();
            let scheduler = self.profile.clone();
            let now = self.clock.now();
            self.preemptions.spawn(async move {
                match report::preempt_pod(client, &victim, &scheduler, now).await {
                    Ok(()) => None,
                    Err(kube::Error::Api(s)) if s.code == 404 => None,
                    Err(e) => {
                        tracing::warn!(victim = %pod_key(&victim), error = %e, "preempting a pod failed");
                        Some(pod_key(&victim))
                    }
                }
            });
        }
        for pod in &refusal.unnominated {
            let client = self.client.clone();
            let pod = pod.clone();
            self.status_writes.spawn(async move {
                if let Err(e) = report::clear_nominated_node_name(client, &pod).await {
                    tracing::debug!(error = %e, "clearing nominatedNodeName failed");
                }
            });
        }
    }

    /// Applies a binding's result to the state machine and reports it.
    fn bind_outcome(&mut self, core: &mut Scheduler, outcome: BindOutcome) {
        let profile = self.profile.as_str();
        match outcome.result {
            Ok(()) => {
                core.bind_succeeded(&outcome.key);
                metrics::observe_attempt(
                    profile,
                    AttemptResult::Scheduled,
                    outcome.started.elapsed(),
                );
                let ns = outcome
                    .pod
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or("default");
                let name = outcome.pod.metadata.name.as_deref().unwrap_or("");
                self.recorder.record(PodEvent {
                    note: format!("Successfully assigned {ns}/{name} to {}", outcome.node),
                    pod: outcome.pod,
                    type_: "Normal",
                    reason: "Scheduled",
                    action: "Binding",
                });
            }
            Err(e) => {
                core.bind_failed(&outcome.key, self.clock.instant());
                metrics::observe_attempt(profile, AttemptResult::Error, outcome.started.elapsed());
                let gone = matches!(&e, kube::Error::Api(s) if s.code == 404);
                tracing::debug!(pod = %outcome.key, error = %e, "binding failed");
                if !gone {
                    let message = format!("running Bind plugin \"DefaultBinder\": {e}");
                    self.failure(outcome.pod, "SchedulerError", message, None);
                }
            }
        }
    }

    /// Sets the pod's `PodScheduled=False` condition (when it changed) and
    /// records a `FailedScheduling` event.
    fn failure(
        &mut self,
        pod: Arc<Pod>,
        reason: &'static str,
        message: String,
        nominate: Option<String>,
    ) {
        self.recorder.record(PodEvent {
            pod: pod.clone(),
            type_: "Warning",
            reason: "FailedScheduling",
            action: "Scheduling",
            note: message.clone(),
        });
        let client = self.client.clone();
        let now = self.clock.now();
        self.status_writes.spawn(async move {
            let nominate = nominate.as_deref();
            if let Err(e) =
                report::set_unschedulable(client, &pod, reason, &message, nominate, now).await
            {
                tracing::debug!(error = %e, "updating PodScheduled failed");
            }
        });
    }
}

/// POSTs the pod's `pods/binding`.
pub async fn bind(client: kube::Client, pod: &Pod, node: &str) -> Result<(), kube::Error> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(ns.to_string()),
            uid: pod.metadata.uid.clone(),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.to_string()),
            ..ObjectReference::default()
        },
    };
    let api: Api<Pod> = Api::namespaced(client, ns);
    api.create_subresource::<_, serde_json::Value>(
        "binding",
        name,
        &PostParams::default(),
        &binding,
    )
    .await
    .map(|_| ())
}
