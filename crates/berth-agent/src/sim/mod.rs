//! Many simulated nodes in one process, the way KWOK simulates them, but
//! with one task driving every node's timers instead of a task per node:
//! `berth sim fleet`, `berth server --sim-nodes`, and the nodes of every
//! `berth sim scenario`.
//!
//! Every node has its own identity (its own bearer token, so the server
//! authorizes each as itself and NodeRestriction applies; or, joined to
//! any cluster with an admin's kubeconfig, the shared client's, as KWOK's
//! nodes write with its admin credential), its own
//! registration (its own template: labels, taints, capacity), its own
//! Lease renewed every 10 s with backoff, and its own status: Ready with no
//! pressure unless told otherwise ([`NodeCommand::SetCondition`]), carried
//! by the registration itself (as a kubelet's initial Node carries its
//! conditions), written again as the first report once registered, then
//! every `nodeStatusReportFrequency`, and at once
//! when it changes or the Node on the server says otherwise (the node
//! lifecycle controller set it Unknown), as a kubelet that compares its
//! status with the server's does. Instead of a read of each Node every
//! 10 s, one watch of every Node tells the fleet when a node's conditions
//! on the server differ from its own ([`node`]).
//!
//! A node's heartbeats come with upstream's 4% jitter, or, when it has a
//! phase ([`SimNode::phase`]), on a fixed grid at that offset from its
//! registration, so that a run on a virtual clock repeats byte for byte
//! (a scenario draws each node's phase from its seed). A node can be cut
//! off ([`NodeCommand::Pause`]): no Lease, no status, no pods until it is
//! resumed, as a node that lost the API server.
//!
//! The timers live in time-ordered heaps ([`timers`]), one each for Lease
//! renewals, status changes, registrations and routine status reports:
//! when several have work due, renewals go first within a share for the
//! others (a late renewal makes a node look dead; a late registration or
//! status write does not). Due work is sent through one shared
//! `kube::Client` (one connection pool) with a bound on requests in
//! flight. Pods bound to simulated nodes are admitted and run by one
//! [`PodWorker`] over one simulated runtime, fed by one watch.
//!
//! The two shared watches (every Node, every pod bound to a node) are
//! more than any node credential may read (a node reads only its own Node
//! and pods); they go out as the shared client's own identity, which must
//! be one that may: `system:berth:sim` inside `berth server` and
//! `berth sim scenario`, an admin's for `berth sim fleet` against a
//! cluster.

mod node;
mod template;
mod timers;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use berth_client::{Change, SharedWatch, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_runtime::Runtime;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use http::HeaderValue;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::runtime::watcher;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::AgentConfig;
use crate::heartbeat::{LeaseRenewer, backoff};
use crate::node_client::NodeClient;
use crate::pods::{NodeDirectory, PodEvent, PodWorker, feed, feed_shared};
use crate::registration::NodeTemplate;
use crate::status::status_patch;
use node::{NodeState, Periods};
use template::node_template;
use timers::{Timers, Work};

/// What a process hosting a fleet says once its nodes are up (every one
/// registered, renewed and reported once), after their count: benchmarks
/// wait for this line.
pub const NODES_UP: &str = "simulated node(s) up";

pub use node::ConditionOverride;
pub use template::{ZONE_LABEL, default_template, sim_node_name, sim_zone};

/// One simulated node.
#[derive(Debug, Clone)]
pub struct SimNode {
    pub name: String,
    /// Its `topology.kubernetes.io/zone` label, when the fleet gives it one
    /// (a template's own labels may carry it instead).
    pub zone: Option<String>,
    /// Its own bearer token, put on each of its requests so the server
    /// authorizes it as `system:node:<name>`; `None` when every node
    /// writes with the shared client's credential (an admin's, as KWOK's
    /// nodes do: `berth sim fleet --kubeconfig` alone).
    pub bearer: Option<HeaderValue>,
    /// The labels, taints, capacity, allocatable and nodeInfo it registers
    /// with; nodes that look alike share one.
    pub template: Arc<NodeTemplate>,
    /// `None`: the node renews its Lease and reports its status as
    /// upstream's kubelet, each interval stretched by up to 4% jitter.
    /// `Some(phase)`: on a fixed grid instead, at `phase` from registration
    /// and every interval after it, with no jitter.
    pub phase: Option<Duration>,
}

/// Counters of a fleet's work.
#[derive(Debug, Default)]
pub struct SimStats {
    pub registered: AtomicU64,
    pub register_failures: AtomicU64,
    pub lease_renewals: AtomicU64,
    pub lease_failures: AtomicU64,
    pub status_writes: AtomicU64,
    pub status_failures: AtomicU64,
    /// Renewals that came later than `leaseDurationSeconds` after the
    /// node's previous one: the node looked dead in between.
    pub late_renewals: AtomicU64,
    /// Nodes with at least one late renewal.
    pub late_nodes: AtomicU64,
    /// The longest time between two renewals of one node, in ms.
    pub max_renew_gap_ms: AtomicU64,
}

/// How a fleet runs.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub config: AgentConfig,
    pub gates: FeatureGates,
    /// Requests in flight at most.
    pub max_in_flight: usize,
}

/// What happens to one node of a running fleet (a scenario's steps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeCommand {
    /// Cuts the node off from the API server (`paused`), or brings it
    /// back: then it renews its Lease, writes its status if it differs
    /// from the server's (or is a report period old) and looks at its
    /// pods at once.
    Pause { node: String, paused: bool },
    /// Reports this condition from now on, written at once.
    SetCondition {
        node: String,
        condition: ConditionOverride,
    },
}

/// A node the API server refused to register (403 or 422): the fleet
/// gives up on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {node}: {message}")]
pub struct Refused {
    pub node: String,
    pub message: String,
}

/// Whether every node of a fleet is up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Readiness {
    Starting,
    Up,
    Refused(Refused),
}

/// A running fleet ([`Fleet::spawn`]): what to tell its nodes, and when
/// they are all up.
pub struct FleetHandle {
    commands: mpsc::UnboundedSender<NodeCommand>,
    readiness: watch::Receiver<Readiness>,
}

impl FleetHandle {
    /// Tells a node something; commands for nodes the fleet does not run,
    /// or after it stopped, are dropped.
    pub fn send(&self, command: NodeCommand) {
        let _ = self.commands.send(command);
    }

    /// Waits until every node has registered, renewed its Lease and
    /// written its status once, or the server refused one.
    pub async fn up(&mut self) -> Result<(), Refused> {
        let readiness = self
            .readiness
            .wait_for(|r| *r != Readiness::Starting)
            .await
            .map(|r| r.clone());
        match readiness {
            Ok(Readiness::Refused(refused)) => Err(refused),
            // Up, or the fleet stopped: nothing to wait for.
            _ => Ok(()),
        }
    }
}

/// A fleet of simulated nodes and what it runs with. `client` must
/// authenticate requests that carry no token of their own (the Node and
/// pod watches) as an identity that may list and watch every Node and
/// pod; see [`crate::node_client::with_default_bearer`].
pub struct Fleet {
    pub client: kube::Client,
    pub nodes: Vec<SimNode>,
    pub runtime: Arc<dyn Runtime>,
    pub clock: Clock,
    pub options: FleetOptions,
    pub stats: Arc<SimStats>,
    /// The API server's own shared pod watch, for a fleet inside its
    /// process; `None`: the fleet watches the bound pods itself.
    pub pods: Option<SharedWatch<Pod>>,
}

/// The fleet's node clients by name, for the pod worker; a node cut off
/// has none.
struct Directory(HashMap<String, Served>);

struct Served {
    client: NodeClient,
    paused: AtomicBool,
    /// The node as the fleet's Node watch last delivered it.
    watched: std::sync::Mutex<Option<Arc<Node>>>,
}

impl Directory {
    fn pause(&self, node: &str, paused: bool) {
        if let Some(served) = self.0.get(node) {
            served.paused.store(paused, Ordering::Relaxed);
        }
    }

    /// Keeps `node` as its node's newest watched copy.
    fn remember(&self, node: Arc<Node>) {
        let Some(served) = node.metadata.name.as_deref().and_then(|n| self.0.get(n)) else {
            return;
        };
        *served
            .watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(node);
    }
}

impl NodeDirectory for Directory {
    fn client(&self, node: &str) -> Option<NodeClient> {
        self.0
            .get(node)
            .filter(|served| !served.paused.load(Ordering::Relaxed))
            .map(|served| served.client.clone())
    }

    fn node(&self, node: &str) -> Option<Arc<Node>> {
        self.0.get(node).and_then(|served| {
            served
                .watched
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        })
    }
}

enum Outcome {
    /// Registered: the Node's UID.
    Registered(Option<String>),
    RegisterFailed,
    Refused(String),
    Renewed(Box<LeaseRenewer>, bool),
    Status(bool),
    /// A resumed node's pods, to look at again.
    Pods(Vec<Pod>),
}

/// The fleet's state while it runs: its nodes and their timers.
struct Running {
    nodes: Vec<SimNode>,
    states: Vec<NodeState>,
    index_of: HashMap<String, usize>,
    directory: Arc<Directory>,
    timers: Timers,
    in_flight: FuturesUnordered<BoxFuture<'static, (usize, Outcome)>>,
    clock: Clock,
    config: AgentConfig,
    periods: Periods,
    stats: Arc<SimStats>,
    pod_events: mpsc::UnboundedSender<PodEvent>,
    readiness: watch::Sender<Readiness>,
    /// Nodes not yet up.
    starting: usize,
}

impl Fleet {
    /// Runs the fleet until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let (_commands, inbox) = mpsc::unbounded_channel();
        let (readiness, _) = watch::channel(Readiness::Starting);
        self.run_with(inbox, readiness, stop).await;
    }

    /// Runs the fleet on a task of its own until `stop`.
    pub fn spawn(self, stop: CancellationToken) -> (FleetHandle, tokio::task::JoinHandle<()>) {
        let (commands, inbox) = mpsc::unbounded_channel();
        let (readiness, watching) = watch::channel(Readiness::Starting);
        let task = tokio::spawn(self.run_with(inbox, readiness, stop));
        let handle = FleetHandle {
            commands,
            readiness: watching,
        };
        (handle, task)
    }

    async fn run_with(
        self,
        mut commands: mpsc::UnboundedReceiver<NodeCommand>,
        readiness: watch::Sender<Readiness>,
        stop: CancellationToken,
    ) {
        let Fleet {
            client,
            nodes,
            runtime,
            clock,
            options,
            stats,
            pods: shared_pods,
        } = self;
        let states: Vec<NodeState> = nodes
            .iter()
            .map(|n| {
                let client = match &n.bearer {
                    Some(bearer) => {
                        NodeClient::with_bearer(client.clone(), &n.name, bearer.clone())
                    }
                    None => NodeClient::new(client.clone(), &n.name),
                };
                NodeState::new(client, n.phase)
            })
            .collect();
        let index_of = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        let directory = Arc::new(Directory(
            states
                .iter()
                .map(|s| {
                    let served = Served {
                        client: s.client.clone(),
                        paused: AtomicBool::new(false),
                        watched: std::sync::Mutex::new(None),
                    };
                    (s.client.node_name().to_string(), served)
                })
                .collect(),
        ));
        let worker = PodWorker::new(
            runtime.clone(),
            directory.clone(),
            clock.clone(),
            options.gates,
        );
        let (pod_events, receiver) = mpsc::unbounded_channel::<PodEvent>();
        let worker_task = tokio::spawn(worker.run(receiver));
        let feed_task = match shared_pods {
            Some(pods) => tokio::spawn(feed_shared(pods, runtime, pod_events.clone())),
            None => tokio::spawn(feed(
                client.clone(),
                "spec.nodeName!=".to_string(),
                runtime,
                pod_events.clone(),
            )),
        };
        let mut node_changes = changes_of(
            kube::Api::<Node>::all(client.clone()),
            watcher::Config::default(),
        )
        .boxed();

        let mut fleet = Running {
            starting: nodes.len(),
            nodes,
            states,
            index_of,
            directory,
            timers: Timers::new(options.config.lease_renew_interval()),
            in_flight: FuturesUnordered::new(),
            periods: Periods {
                renew: options.config.lease_renew_interval(),
                status_update: options.config.node_status_update_frequency,
                status_report: options.config.node_status_report_frequency,
            },
            config: options.config,
            clock: clock.clone(),
            stats,
            pod_events,
            readiness,
        };
        if fleet.starting == 0 {
            fleet.readiness.send_replace(Readiness::Up);
        }
        let now = clock.instant();
        for index in 0..fleet.states.len() {
            fleet.timers.push(now, index, Work::Register);
        }
        let max_in_flight = options.max_in_flight.max(1);

        loop {
            fleet.start_due(max_in_flight);
            let next_due = fleet.timers.next_due();
            let room = fleet.in_flight.len() < max_in_flight;
            tokio::select! {
                _ = stop.cancelled() => break,
                Some(command) = commands.recv() => fleet.command(command),
                Some((index, outcome)) = fleet.in_flight.next(), if !fleet.in_flight.is_empty() => {
                    fleet.outcome(index, outcome);
                }
                Some(change) = node_changes.next() => {
                    if let Change::Upsert(node) = change {
                        fleet.observe(&node);
                        fleet.directory.remember(Arc::new(node));
                    }
                }
                _ = async {
                    match next_due {
                        Some(due) => clock.sleep(due.saturating_duration_since(clock.instant())).await,
                        None => std::future::pending::<()>().await,
                    }
                }, if room => {}
            }
        }
        feed_task.abort();
        worker_task.abort();
    }
}

impl Running {
    /// Starts due work while there is room.
    fn start_due(&mut self, max_in_flight: usize) {
        let now = self.clock.instant();
        while self.in_flight.len() < max_in_flight {
            let Some((due, index, work)) = self.timers.pop_due(now) else {
                break;
            };
            let Some(state) = self.states.get_mut(index) else {
                continue;
            };
            if !state.take_timer(work, due) {
                continue;
            }
            let client = state.client.clone();
            let clock = self.clock.clone();
            match work {
                Work::Register => {
                    let template = node_template(&self.nodes[index], index);
                    let conditions = state.reported.conditions(clock.now());
                    self.in_flight.push(Box::pin(async move {
                        let node = template.node_with_conditions(conditions);
                        let result = match client.create_node(&node).await {
                            Ok(n) => Ok(n),
                            Err(e) if e.is_conflict() => client.get_node().await,
                            Err(e) => Err(e),
                        };
                        let outcome = match result {
                            Ok(n) => Outcome::Registered(n.metadata.uid),
                            Err(e) if e.code().is_some_and(|c| c == 403 || c == 422) => {
                                Outcome::Refused(e.to_string())
                            }
                            Err(e) => {
                                tracing::debug!(error = %e, "registering a simulated node failed");
                                Outcome::RegisterFailed
                            }
                        };
                        (index, outcome)
                    }));
                }
                Work::Renew => {
                    let Some(mut renewer) = state.renewer.take() else {
                        continue;
                    };
                    self.in_flight.push(Box::pin(async move {
                        let ok = renewer.renew(&client, clock.now()).await.is_ok();
                        (index, Outcome::Renewed(Box::new(renewer), ok))
                    }));
                }
                Work::Status | Work::StatusChange => {
                    let template = node_template(&self.nodes[index], index);
                    let conditions = state.reported.conditions(clock.now());
                    self.in_flight.push(Box::pin(async move {
                        let patch = status_patch(&template, &conditions);
                        let ok = client.patch_node_status(&patch).await.is_ok();
                        (index, Outcome::Status(ok))
                    }));
                }
            }
        }
    }

    fn schedule_renewal(&mut self, index: usize, due: Instant) {
        if let Some(state) = self.states.get_mut(index) {
            state.renew_due = Some(due);
            self.timers.push(due, index, Work::Renew);
        }
    }

    /// Moves the node's routine status write (a report) to `due`, unless
    /// one is due sooner.
    fn schedule_status(&mut self, index: usize, due: Instant) {
        if let Some(state) = self.states.get_mut(index)
            && state.status_due.is_none_or(|pending| due < pending)
        {
            state.status_due = Some(due);
            self.timers.push(due, index, Work::Status);
        }
    }

    /// Schedules a status write that carries a change (the node's
    /// conditions, or the server's copy of them, differ) at `due`, or at
    /// the node's pending write if that is sooner: either way as a change,
    /// which goes before the routine reports waiting.
    fn schedule_status_change(&mut self, index: usize, due: Instant) {
        if let Some(state) = self.states.get_mut(index) {
            let due = state.status_due.map_or(due, |pending| pending.min(due));
            state.status_due = Some(due);
            self.timers.push(due, index, Work::StatusChange);
        }
    }

    /// Counts a node that just came up.
    fn came_up(&mut self) {
        self.starting = self.starting.saturating_sub(1);
        if self.starting == 0 && *self.readiness.borrow() == Readiness::Starting {
            self.readiness.send_replace(Readiness::Up);
        }
    }

    fn outcome(&mut self, index: usize, outcome: Outcome) {
        let now = self.clock.instant();
        let stats = self.stats.clone();
        let periods = self.periods;
        let Some(state) = self.states.get_mut(index) else {
            return;
        };
        let was_up = state.is_up();
        match outcome {
            Outcome::Registered(uid) => {
                stats.registered.fetch_add(1, Ordering::Relaxed);
                state.registered_at(now);
                state.renewer = Some(LeaseRenewer::new(
                    state.client.node_name(),
                    uid,
                    self.config.node_lease_duration_seconds,
                ));
                self.schedule_renewal(index, now);
                self.schedule_status(index, now);
            }
            Outcome::RegisterFailed => {
                stats.register_failures.fetch_add(1, Ordering::Relaxed);
                state.failures = state.failures.saturating_add(1);
                self.timers
                    .push(now + backoff(state.failures), index, Work::Register);
            }
            Outcome::Refused(message) => {
                stats.register_failures.fetch_add(1, Ordering::Relaxed);
                let node = state.client.node_name().to_string();
                tracing::error!(%node, %message, "the server refused a simulated node");
                if *self.readiness.borrow() == Readiness::Starting {
                    self.readiness
                        .send_replace(Readiness::Refused(Refused { node, message }));
                }
            }
            Outcome::Renewed(renewer, ok) => {
                state.renewer = Some(*renewer);
                let next = if ok {
                    stats.lease_renewals.fetch_add(1, Ordering::Relaxed);
                    let lease_duration = Duration::from_secs(
                        u64::try_from(self.config.node_lease_duration_seconds).unwrap_or(40),
                    );
                    if let Some(last) = state.last_renewal {
                        let gap = now.duration_since(last);
                        let gap_ms = u64::try_from(gap.as_millis()).unwrap_or(u64::MAX);
                        stats.max_renew_gap_ms.fetch_max(gap_ms, Ordering::Relaxed);
                        if gap > lease_duration {
                            stats.late_renewals.fetch_add(1, Ordering::Relaxed);
                            if !state.was_late {
                                state.was_late = true;
                                stats.late_nodes.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    state.last_renewal = Some(now);
                    state.failures = 0;
                    state.cadence.next_renewal(now, &periods)
                } else {
                    stats.lease_failures.fetch_add(1, Ordering::Relaxed);
                    state.failures = state.failures.saturating_add(1);
                    now + backoff(state.failures)
                };
                // A node resumed meanwhile has a renewal due already.
                if state.renew_due.is_none() {
                    self.schedule_renewal(index, next);
                }
            }
            Outcome::Status(ok) => {
                let counter = if ok {
                    &stats.status_writes
                } else {
                    &stats.status_failures
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let next = if ok {
                    state.last_report = Some(now);
                    state.cadence.next_report(now, &periods)
                } else {
                    now + backoff(1)
                };
                // A write moved sooner since this one started is still
                // due; otherwise the next report.
                if state.status_due.is_none() {
                    self.schedule_status(index, next);
                }
            }
            Outcome::Pods(pods) => {
                for pod in pods {
                    let _ = self.pod_events.send(PodEvent::Applied(Arc::new(pod)));
                }
            }
        }
        if !was_up && self.states.get(index).is_some_and(NodeState::is_up) {
            self.came_up();
        }
    }

    /// The Node on the server changed.
    fn observe(&mut self, node: &Node) {
        let Some(&index) = node
            .metadata
            .name
            .as_deref()
            .and_then(|n| self.index_of.get(n))
        else {
            return;
        };
        let now = self.clock.now();
        let periods = self.periods;
        let Some(state) = self.states.get_mut(index) else {
            return;
        };
        if state.observe(node, now) {
            let at = state
                .cadence
                .next_computation(self.clock.instant(), &periods);
            self.schedule_status_change(index, at);
        }
    }

    fn command(&mut self, command: NodeCommand) {
        let node = match &command {
            NodeCommand::Pause { node, .. } | NodeCommand::SetCondition { node, .. } => node,
        };
        let Some(&index) = self.index_of.get(node) else {
            tracing::warn!(%node, "no such simulated node");
            return;
        };
        let now = self.clock.instant();
        let periods = self.periods;
        let Some(state) = self.states.get_mut(index) else {
            return;
        };
        match command {
            NodeCommand::Pause { node, paused } => {
                let resumed = state.paused && !paused;
                state.paused = paused;
                self.directory.pause(&node, paused);
                if !resumed || !state.registered {
                    return;
                }
                let differs = state.reported.differs();
                let status_at = if differs || state.report_is_stale(now, &periods) {
                    now
                } else {
                    let last = state.last_report.unwrap_or(now);
                    state.cadence.next_report(last, &periods)
                };
                let client = state.client.clone();
                self.schedule_renewal(index, now);
                if differs {
                    self.schedule_status_change(index, status_at);
                } else {
                    self.schedule_status(index, status_at);
                }
                self.in_flight.push(Box::pin(async move {
                    let pods = match client.list_pods().await {
                        Ok(pods) => pods,
                        Err(e) => {
                            tracing::warn!(node = %client.node_name(), error = %e, "listing a resumed node's pods");
                            Vec::new()
                        }
                    };
                    (index, Outcome::Pods(pods))
                }));
            }
            NodeCommand::SetCondition { condition, .. } => {
                if state.reported.set(condition) && state.registered && !state.paused {
                    self.schedule_status_change(index, now);
                }
            }
        }
    }
}
