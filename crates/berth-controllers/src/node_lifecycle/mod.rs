//! The node lifecycle controller (upstream `pkg/controller/nodelifecycle`).
//!
//! - Every `--node-monitor-period` a monitor pass checks each node's last
//!   heartbeat ([`health`]) and sets a silent node's conditions to Unknown,
//!   marks its pods not Ready, and queues it for the not-ready/unreachable
//!   NoExecute taint in its zone's rate-limited queue
//!   ([`rate_limited_queue`]); the zones' disruption states ([`zone`]) set
//!   the queues' rates, and when every zone is down the health taints are
//!   lifted everywhere.
//! - On every node change it keeps the NoSchedule condition taints and the
//!   unschedulable taint in step ([`taints`]).
//! - berth's expiring taints: it removes a taint at the time the node's
//!   `berth.dev/taint-expiry` annotation gives ([`berth_core::taint_expiry`]),
//!   sleeping until the earliest such time; one that passed while the
//!   controller was not running is removed as soon as it lists the node.
//!
//! The pass works on state kept from watch events ([`ClusterState`]);
//! [`ClusterState::plan`] is a plain function of that state and the time,
//! and only its results go to the API server.

pub mod health;
pub mod rate_limited_queue;
pub mod taints;
pub mod writes;
pub mod zone;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::PollNext;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::watcher;

use berth_client::{Change, SharedWatches, changes_of};
use berth_core::clock::Clock;
use berth_core::taint_expiry;
use berth_core::taint_spec::format_taint;
use berth_core::toleration::EFFECT_NO_EXECUTE;
use tokio::task::{Id, JoinSet};

use crate::events::{EventRecorder, TYPE_NORMAL, node_ref};
use crate::metrics::ControllerMetrics;
use berth_core::pod::{PodKey, pod_key};
use health::{GracePeriods, HealthVerdict, NodeHealth, ReadyStatus, STATUS_FALSE, STATUS_UNKNOWN};
use rate_limited_queue::{RateLimitedTimedQueue, TimedValue};
use taints::{
    CONDITION_READY, TAINT_NOT_READY, TAINT_UNREACHABLE, TaintChange, condition, has_taint,
    lift_no_execute_health_taints, no_execute_swap, no_schedule_change,
};
use writes::{Job, JobDone, NodeWork, TaintPurpose, WRITES_IN_FLIGHT, WorkQueue};
use zone::{DisruptionOutcome, ZoneRates, ZoneTracker, excluded_from_disruption, zone_key};

/// Upstream's controller name (`--controllers`).
pub const CONTROLLER_NAME: &str = "node-lifecycle-controller";
/// The events' source component (upstream's recorder).
pub const EVENT_COMPONENT: &str = "node-controller";
/// Where node heartbeats live.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// A change of one of the controller's three watches. Sized like the
/// watcher's own items (moved once per event), so not boxed.
#[allow(clippy::large_enum_variant)]
enum Watched {
    Node(Change<Arc<Node>>),
    Lease(Change<Lease>),
    Pod(Change<Arc<Pod>>),
}

/// Settings, with upstream's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLifecycleConfig {
    /// `--node-monitor-period`.
    pub node_monitor_period: Duration,
    /// `--node-monitor-grace-period`, `--node-startup-grace-period`.
    pub grace: GracePeriods,
    /// `--node-eviction-rate`, `--secondary-node-eviction-rate`,
    /// `--large-cluster-size-threshold`, `--unhealthy-zone-threshold`.
    pub rates: ZoneRates,
}

impl Default for NodeLifecycleConfig {
    fn default() -> Self {
        NodeLifecycleConfig {
            node_monitor_period: Duration::from_secs(5),
            grace: GracePeriods::default(),
            rates: ZoneRates::default(),
        }
    }
}

/// What a monitor pass asks of one node (`processTaintBaseEviction` and the
/// pod marking).
#[derive(Debug, Clone, PartialEq)]
pub enum TaintStep {
    /// Nothing to write.
    None,
    /// Swap not-ready and unreachable NoExecute taints at once (the node
    /// already carries the other one).
    SwapNow(TaintChange),
    /// Lift both NoExecute health taints (the node is Ready).
    Lift,
}

/// One node's part of a monitor pass.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeAction {
    pub name: String,
    pub verdict: HealthVerdict,
    pub taints: TaintStep,
    /// Ready went from True to something else: record `NodeNotReady`.
    pub became_not_ready: bool,
    /// Set the node's pods' Ready condition to False.
    pub mark_pods_not_ready: bool,
}

/// A monitor pass's decisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonitorPlan {
    pub registered: Vec<String>,
    pub removed: Vec<String>,
    /// Only nodes that need something written.
    pub actions: Vec<NodeAction>,
    pub disruption: DisruptionOutcome,
}

/// One node as the controller keeps it: the object, its health, and what
/// every pass needs from it, worked out once per change.
#[derive(Debug, Clone)]
struct NodeEntry {
    node: Node,
    health: NodeHealth,
    zone: String,
    excluded: bool,
    uid: String,
    has_unreachable: bool,
    has_not_ready: bool,
}

impl NodeEntry {
    fn new(node: Node, health: NodeHealth) -> NodeEntry {
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        NodeEntry {
            zone: zone_key(&node),
            excluded: excluded_from_disruption(&node),
            uid: node.metadata.uid.clone().unwrap_or_default(),
            has_unreachable: has_taint(taints, TAINT_UNREACHABLE, EFFECT_NO_EXECUTE),
            has_not_ready: has_taint(taints, TAINT_NOT_READY, EFFECT_NO_EXECUTE),
            node,
            health,
        }
    }
}

/// What the controller knows, from watch events. Plain data.
#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    nodes: BTreeMap<String, NodeEntry>,
    leases: HashMap<String, Timestamp>,
    pods_by_node: HashMap<String, BTreeSet<PodKey>>,
    pod_node: HashMap<PodKey, String>,
    known: foldhash::HashSet<String>,
    zones: ZoneTracker,
    queues: BTreeMap<String, RateLimitedTimedQueue>,
    needs_retry: HashSet<String>,
    /// Each node's next taint expiry, in time order (and by node).
    expiries: BTreeSet<(Timestamp, String)>,
    node_expiry: HashMap<String, Timestamp>,
}

impl ClusterState {
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name).map(|e| &e.node)
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn zones(&self) -> &ZoneTracker {
        &self.zones
    }

    /// The tainting queue of a zone.
    pub fn queue(&self, zone: &str) -> Option<&RateLimitedTimedQueue> {
        self.queues.get(zone)
    }

    pub fn observe_node(&mut self, node: Node, now: Timestamp) {
        let Some(name) = node.metadata.name.clone() else {
            return;
        };
        let previous = self.nodes.remove(&name).map(|e| e.health);
        self.set_expiry(&name, taint_expiry::next(&node));
        let mut health = NodeHealth::observe_node(previous, &node, now);
        if let Some(renew) = self.leases.get(&name) {
            health.observe_lease(Some(*renew), now);
        }
        self.nodes.insert(name, NodeEntry::new(node, health));
    }

    /// A copy of a node the controller wrote or read itself: taken only for
    /// a node still known and only if newer than the watched copy (the
    /// watch may already have brought a later write).
    pub fn observe_written(&mut self, node: Node, now: Timestamp) {
        fn revision(node: &Node) -> Option<u64> {
            node.metadata.resource_version.as_deref()?.parse().ok()
        }
        let Some(entry) = node
            .metadata
            .name
            .as_deref()
            .and_then(|name| self.nodes.get(name))
        else {
            return;
        };
        if let (Some(known), Some(written)) = (revision(&entry.node), revision(&node))
            && written <= known
        {
            return;
        }
        self.observe_node(node, now);
    }

    pub fn remove_node(&mut self, name: &str) {
        self.nodes.remove(name);
        self.set_expiry(name, None);
    }

    /// When the node's next taint expires (`None`: none does).
    fn set_expiry(&mut self, name: &str, at: Option<Timestamp>) {
        if self.node_expiry.get(name).copied() == at {
            return;
        }
        if let Some(old) = self.node_expiry.remove(name) {
            self.expiries.remove(&(old, name.to_string()));
        }
        if let Some(at) = at {
            self.node_expiry.insert(name.to_string(), at);
            self.expiries.insert((at, name.to_string()));
        }
    }

    /// When the next taint of any node expires.
    pub fn next_expiry(&self) -> Option<Timestamp> {
        self.expiries.first().map(|(at, _)| *at)
    }

    /// The nodes with a taint expired at `now`, taken off the schedule (a
    /// node comes back on it with its next change, or [`Self::retry_expiry`]).
    pub fn due_expiries(&mut self, now: Timestamp) -> Vec<String> {
        let mut due = Vec::new();
        while let Some((at, name)) = self.expiries.first().cloned() {
            if at > now {
                break;
            }
            self.expiries.remove(&(at, name.clone()));
            self.node_expiry.remove(&name);
            due.push(name);
        }
        due
    }

    /// Looks at the node's expiries again at `at` (a write that failed).
    pub fn retry_expiry(&mut self, name: &str, at: Timestamp) {
        if self.nodes.contains_key(name) {
            self.set_expiry(name, Some(at));
        }
    }

    pub fn observe_lease(&mut self, lease: &Lease, now: Timestamp) {
        let Some(name) = lease.metadata.name.clone() else {
            return;
        };
        let renew = lease
            .spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .map(|t| t.0);
        let Some(renew) = renew else { return };
        if let Some(entry) = self.nodes.get_mut(&name) {
            entry.health.observe_lease(Some(renew), now);
        }
        let saved = self.leases.entry(name).or_insert(renew);
        if *saved < renew {
            *saved = renew;
        }
    }

    pub fn remove_lease(&mut self, name: &str) {
        self.leases.remove(name);
    }

    pub fn observe_pod(&mut self, pod: &Pod) {
        let key = pod_key(pod);
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        if self.pod_node.get(&key) == Some(&node) {
            return;
        }
        self.remove_pod(&key);
        if !node.is_empty() {
            self.pods_by_node
                .entry(node.clone())
                .or_default()
                .insert(key.clone());
            self.pod_node.insert(key, node);
        }
    }

    pub fn remove_pod(&mut self, key: &PodKey) {
        if let Some(node) = self.pod_node.remove(key)
            && let Some(set) = self.pods_by_node.get_mut(&node)
        {
            set.remove(key);
            if set.is_empty() {
                self.pods_by_node.remove(&node);
            }
        }
    }

    pub fn pods_on(&self, node: &str) -> Vec<PodKey> {
        self.pods_by_node
            .get(node)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The monitor pass's decisions at `now` (upstream `monitorNodeHealth`
    /// up to the API writes). Updates the zone states and queues; the
    /// writes it asks for are the caller's.
    pub fn plan(&mut self, now: Timestamp, config: &NodeLifecycleConfig) -> MonitorPlan {
        let mut plan = MonitorPlan::default();
        let mut zone_ready: BTreeMap<String, Vec<Option<bool>>> = BTreeMap::new();
        let ClusterState {
            nodes,
            known,
            zones,
            queues,
            needs_retry,
            ..
        } = self;
        for (name, entry) in nodes.iter() {
            if !known.contains(name) {
                known.insert(name.clone());
                plan.registered.push(name.clone());
            }
            let zone = entry.zone.as_str();
            let queue = match queues.get_mut(zone) {
                Some(q) => q,
                None => queues
                    .entry(zone.to_string())
                    .or_insert_with(|| RateLimitedTimedQueue::new(config.rates.eviction_qps, now)),
            };
            if zones.state(zone).is_none() {
                zones.ensure(zone);
            }
            let verdict = health::check(&entry.node, &entry.health, now, &config.grace);
            if !entry.excluded {
                let ready = verdict.current_ready.map(|s| s == ReadyStatus::True);
                match zone_ready.get_mut(zone) {
                    Some(list) => list.push(ready),
                    None => {
                        zone_ready.insert(zone.to_string(), vec![ready]);
                    }
                }
            }
            let Some(current) = verdict.current_ready else {
                if verdict.status_update.is_some() {
                    plan.actions.push(NodeAction {
                        name: name.clone(),
                        verdict,
                        taints: TaintStep::None,
                        became_not_ready: false,
                        mark_pods_not_ready: false,
                    });
                }
                continue;
            };
            // processTaintBaseEviction, on the Ready status this pass leaves:
            // a node this pass marks Unknown is queued for its taint now, so
            // the taint comes with the Unknown, as the kube-controller-manager
            // measured beside berth did (decided on the status seen before
            // the pass, it came one monitor period later). The write that
            // taints reads the status it writes first (`job_for`).
            let taint_step = match current {
                ReadyStatus::False if entry.has_unreachable => {
                    TaintStep::SwapNow(no_execute_swap(STATUS_FALSE).unwrap_or_default())
                }
                ReadyStatus::Unknown if entry.has_not_ready => {
                    TaintStep::SwapNow(no_execute_swap(STATUS_UNKNOWN).unwrap_or_default())
                }
                ReadyStatus::False | ReadyStatus::Unknown => {
                    // markNodeForTainting
                    let tainted = if current == ReadyStatus::False {
                        entry.has_not_ready
                    } else {
                        entry.has_unreachable
                    };
                    if !tainted {
                        queue.remove(name);
                    }
                    queue.add(name, &entry.uid, now);
                    TaintStep::None
                }
                ReadyStatus::True => {
                    // markNodeAsReachable
                    if queue.contains(name) {
                        queue.remove(name);
                    }
                    if entry.has_unreachable || entry.has_not_ready {
                        TaintStep::Lift
                    } else {
                        TaintStep::None
                    }
                }
                ReadyStatus::Other => TaintStep::None,
            };
            let became_not_ready =
                current != ReadyStatus::True && verdict.observed_ready == ReadyStatus::True;
            let retry = verdict.observed_ready != ReadyStatus::True && needs_retry.contains(name);
            if !retry && !needs_retry.is_empty() {
                needs_retry.remove(name);
            }
            let mark_pods_not_ready = became_not_ready || retry;
            if verdict.status_update.is_some()
                || taint_step != TaintStep::None
                || mark_pods_not_ready
            {
                plan.actions.push(NodeAction {
                    name: name.clone(),
                    verdict,
                    taints: taint_step,
                    became_not_ready,
                    mark_pods_not_ready,
                });
            }
        }
        // Every node of the map is known now, so nodes were removed only if
        // more are known than there are: the look-up of every known node is
        // skipped on the passes (nearly all) when none was.
        if self.known.len() > self.nodes.len() {
            let removed: Vec<String> = self
                .known
                .iter()
                .filter(|n| !self.nodes.contains_key(*n))
                .cloned()
                .collect();
            for name in removed {
                self.known.remove(&name);
                self.needs_retry.remove(&name);
                for queue in self.queues.values_mut() {
                    queue.remove(&name);
                }
                plan.removed.push(name);
            }
        }
        plan.disruption = self.zones.handle(&zone_ready, &config.rates);
        for (zone, qps) in &plan.disruption.limiters {
            if let Some(queue) = self.queues.get_mut(zone) {
                queue.swap_limiter(*qps, now);
            }
        }
        if plan.disruption.exit_master_disruption {
            for entry in self.nodes.values_mut() {
                entry.health.reset(now);
            }
        }
        plan
    }

    /// Nodes due for their NoExecute taint now, by zone, as the rate limits
    /// allow (`doNoExecuteTaintingPass`, up to the writes).
    pub fn due_for_tainting(&mut self, now: Timestamp) -> Vec<(String, TimedValue)> {
        let mut out = Vec::new();
        for (zone, queue) in self.queues.iter_mut() {
            while let Some(value) = queue.next_due(now) {
                out.push((zone.clone(), value));
            }
        }
        out
    }

    /// When the tainting pass should next look at the queues: as soon as a
    /// queue may hand out a node (upstream polls every 100 ms).
    pub fn next_tainting(&self) -> Option<Timestamp> {
        self.queues.values().filter_map(|q| q.next_attempt()).min()
    }

    fn retry_tainting(&mut self, zone: &str, value: TimedValue, now: Timestamp, wait: Duration) {
        if let Some(queue) = self.queues.get_mut(zone) {
            queue.retry(value, now, wait);
        }
    }
}

/// See the module documentation.
pub struct NodeLifecycleController {
    client: kube::Client,
    watches: SharedWatches,
    clock: Clock,
    config: NodeLifecycleConfig,
    metrics: ControllerMetrics,
    recorder: EventRecorder,
    state: ClusterState,
    writes: WorkQueue,
}

/// Which of the controller's watches have listed once: the monitor pass
/// waits for all three.
#[derive(Default)]
struct Listed {
    nodes: bool,
    leases: bool,
    pods: bool,
}

impl Listed {
    fn all(&self) -> bool {
        self.nodes && self.leases && self.pods
    }
}

impl NodeLifecycleController {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: NodeLifecycleConfig,
        metrics: ControllerMetrics,
    ) -> NodeLifecycleController {
        let client = watches.client().clone();
        let recorder = EventRecorder::new(client.clone(), clock.clone(), EVENT_COMPONENT);
        NodeLifecycleController {
            client,
            watches,
            clock,
            config,
            metrics,
            recorder,
            state: ClusterState::default(),
            writes: WorkQueue::default(),
        }
    }

    /// Runs until dropped.
    pub async fn run(mut self) {
        let config = watcher::Config::default;
        let nodes = self.watches.nodes().changes();
        let leases = changes_of(
            Api::<Lease>::namespaced(self.client.clone(), NODE_LEASE_NAMESPACE),
            config(),
        );
        let pods = self.watches.pods().changes();
        // One stream, Leases first: a node's Lease is its heartbeat, and an
        // unread renewal ages the node towards Unknown. With a backlog of
        // Node events (150,000 simulated nodes registering: a Node is ~5 KiB
        // to decode, a Lease a tenth of that) a select that always preferred
        // Nodes read renewals more slowly than they came, and healthy nodes
        // were marked Unknown. Leases take 3 of every 4 turns while the
        // others wait, so nothing starves; the turns are counted, not drawn,
        // so virtual-time runs stay reproducible.
        let leases_first = |turn: &mut u8| {
            *turn = (*turn + 1) % 4;
            if *turn == 0 {
                PollNext::Right
            } else {
                PollNext::Left
            }
        };
        let watched = futures::stream::select_with_strategy(
            leases.map(Watched::Lease),
            futures::stream::select(nodes.map(Watched::Node), pods.map(Watched::Pod)),
            leases_first,
        );
        let mut watched = std::pin::pin!(watched);
        let mut listed = Listed::default();
        let mut next_monitor: Option<Timestamp> = None;
        // The writes run here, so dropping the controller (a lost lease)
        // stops them too.
        let mut jobs: JoinSet<JobDone> = JoinSet::new();
        let mut running: HashMap<Id, String> = HashMap::new();
        loop {
            let synced = listed.all();
            if synced && next_monitor.is_none() {
                next_monitor = Some(self.clock.now());
            }
            let next_taint = if synced {
                self.state.next_tainting()
            } else {
                None
            };
            let monitor = self.clock.sleep_until_some(next_monitor);
            let taint = self.clock.sleep_until_some(next_taint);
            let expiry = self.clock.sleep_until_some(self.state.next_expiry());
            tokio::select! {
                biased;
                Some(watched) = watched.next() => match watched {
                    Watched::Node(change) => self.node_change(change, &mut listed.nodes),
                    Watched::Lease(change) => self.lease_change(change, &mut listed.leases),
                    Watched::Pod(change) => self.pod_change(change, &mut listed.pods),
                },
                Some(done) = jobs.join_next_with_id(), if !jobs.is_empty() => match done {
                    Ok((id, done)) => {
                        running.remove(&id);
                        self.write_done(done);
                    }
                    Err(err) => {
                        // Not expected (the tasks do not panic); free the
                        // node so its next work can start.
                        if let Some(name) = running.remove(&err.id()) {
                            tracing::warn!(node = %name, %err, "node write task ended");
                            self.writes.finished(&name);
                        }
                    }
                },
                _ = monitor => {
                    self.monitor_pass();
                    let period = SignedDuration::try_from(self.config.node_monitor_period)
                        .unwrap_or(SignedDuration::from_secs(5));
                    next_monitor = Some(self.clock.now().checked_add(period).unwrap_or(Timestamp::MAX));
                }
                _ = taint => self.tainting_pass(),
                _ = expiry => self.expiry_pass(),
            }
            self.start_writes(&mut jobs, &mut running);
        }
    }

    fn node_change(&mut self, change: Change<Arc<Node>>, listed: &mut bool) {
        match change {
            Change::Upsert(node) => {
                // The state keeps its own copy; the shared one is the
                // other watchers'.
                let node = Arc::unwrap_or_clone(node);
                let name = node.metadata.name.clone().unwrap_or_default();
                let no_schedule = !no_schedule_change(&node).is_empty();
                self.state.observe_node(node, self.clock.now());
                if no_schedule {
                    self.writes.add(
                        &name,
                        NodeWork {
                            no_schedule,
                            ..NodeWork::default()
                        },
                    );
                }
            }
            Change::Delete(gone) => self.state.remove_node(&gone.key.name),
            Change::Synced => *listed = true,
        }
    }

    fn lease_change(&mut self, change: Change<Lease>, listed: &mut bool) {
        match change {
            Change::Upsert(lease) => self.state.observe_lease(&lease, self.clock.now()),
            Change::Delete(gone) => self.state.remove_lease(&gone.key.name),
            Change::Synced => *listed = true,
        }
    }

    fn pod_change(&mut self, change: Change<Arc<Pod>>, listed: &mut bool) {
        match change {
            Change::Upsert(pod) => self.state.observe_pod(&pod),
            Change::Delete(gone) => self.state.remove_pod(&gone.key),
            Change::Synced => *listed = true,
        }
    }

    /// A Normal event about a node the controller knows.
    fn record_node_event(&self, name: &str, reason: &str, message: String) {
        let uid = self.state.node(name).and_then(|n| n.metadata.uid.clone());
        self.recorder
            .record(node_ref(name, uid.as_deref()), TYPE_NORMAL, reason, message);
    }

    /// One monitor pass: plan, then queue the writes.
    fn monitor_pass(&mut self) {
        let now = self.clock.now();
        let plan = self.state.plan(now, &self.config);
        for name in &plan.registered {
            tracing::info!(node = %name, "Controller observed a new Node");
            self.record_node_event(
                name,
                "RegisteredNode",
                format!("Registered Node {name} in Controller"),
            );
        }
        for name in &plan.removed {
            tracing::info!(node = %name, "Controller observed a Node deletion");
            self.recorder.record(
                node_ref(name, None),
                TYPE_NORMAL,
                "RemovingNode",
                format!("Removing Node {name} from Controller"),
            );
        }
        for action in plan.actions {
            if action.became_not_ready {
                tracing::info!(node = %action.name, "Node is NotReady");
            }
            if action.taints == TaintStep::Lift {
                tracing::info!(node = %action.name, "Node is Ready again; lifting its NoExecute taints");
            }
            let monitor_taints = match action.taints {
                TaintStep::None => None,
                TaintStep::SwapNow(change) => Some(change),
                TaintStep::Lift => Some(lift_no_execute_health_taints()),
            };
            self.writes.add(
                &action.name,
                NodeWork {
                    status: action.verdict.status_update.is_some(),
                    became_not_ready: action.became_not_ready,
                    monitor_taints,
                    mark_pods_not_ready: action.mark_pods_not_ready,
                    ..NodeWork::default()
                },
            );
        }
        let disruption = &plan.disruption;
        for figures in &disruption.figures {
            let zone = ControllerMetrics::zone(&figures.zone);
            self.metrics
                .zone_size
                .get_or_create(&zone)
                .set(figures.size as f64);
            self.metrics
                .zone_health
                .get_or_create(&zone)
                .set(figures.health);
            self.metrics
                .unhealthy_nodes
                .get_or_create(&zone)
                .set(figures.unhealthy as f64);
            let _ = self.metrics.evictions.get_or_create(&zone);
        }
        for zone in &disruption.removed {
            let zone = ControllerMetrics::zone(zone);
            self.metrics.zone_size.get_or_create(&zone).set(0.0);
            self.metrics.zone_health.get_or_create(&zone).set(100.0);
            self.metrics.unhealthy_nodes.get_or_create(&zone).set(0.0);
        }
        if disruption.enter_master_disruption {
            tracing::info!(
                "Controller detected that all Nodes are not-Ready. Entering master disruption mode"
            );
            let tainted: Vec<String> = self
                .state
                .nodes
                .iter()
                .filter(|(_, e)| e.has_unreachable || e.has_not_ready)
                .map(|(k, _)| k.clone())
                .collect();
            for name in tainted {
                self.writes.add(
                    &name,
                    NodeWork {
                        monitor_taints: Some(lift_no_execute_health_taints()),
                        ..NodeWork::default()
                    },
                );
            }
        }
        if disruption.exit_master_disruption {
            tracing::info!(
                "Controller detected that some Nodes are Ready. Exiting master disruption mode"
            );
        }
    }

    /// Queues the NoExecute taints the zones' queues allow now.
    fn tainting_pass(&mut self) {
        let now = self.clock.now();
        for (zone, value) in self.state.due_for_tainting(now) {
            let node = value.value.clone();
            self.writes.add(
                &node,
                NodeWork {
                    evict: vec![(zone, value)],
                    ..NodeWork::default()
                },
            );
        }
    }

    /// Queues the removal of the taints whose time has come.
    fn expiry_pass(&mut self) {
        for name in self.state.due_expiries(self.clock.now()) {
            self.writes.add(
                &name,
                NodeWork {
                    expire_taints: true,
                    ..NodeWork::default()
                },
            );
        }
    }

    /// Starts queued writes while there is room.
    fn start_writes(&mut self, jobs: &mut JoinSet<JobDone>, running: &mut HashMap<Id, String>) {
        while jobs.len() < WRITES_IN_FLIGHT {
            let Some((name, work)) = self.writes.start_next() else {
                break;
            };
            match self.job_for(&name, work) {
                Some(job) => {
                    let task = jobs.spawn(writes::run_job(
                        self.client.clone(),
                        self.clock.clone(),
                        self.recorder.clone(),
                        job,
                    ));
                    running.insert(task.id(), name);
                }
                None => self.writes.finished(&name),
            }
        }
    }

    /// What a node's queued work comes to now, decided from the newest copy
    /// of the node (`None`: nothing to write).
    fn job_for(&mut self, name: &str, work: NodeWork) -> Option<Job> {
        let now = self.clock.now();
        // A node gone since: nothing to write, its queued taints are done.
        let entry = self.state.nodes.get(name)?;
        let mut job = Job {
            name: name.to_string(),
            node: entry.node.clone(),
            health: entry.health.clone(),
            grace: self.config.grace,
            status: None,
            became_not_ready: false,
            taints: Vec::new(),
            expire_taints: false,
            mark_pods: None,
        };
        // The pass's decision holds only if the node is still silent; if it
        // has spoken since, the next pass decides again.
        let mut monitor = true;
        if work.status {
            job.status = health::check(&job.node, &job.health, now, &job.grace).status_update;
            monitor = job.status.is_some();
        }
        if monitor {
            job.became_not_ready = work.became_not_ready;
            if let Some(change) = work.monitor_taints {
                job.taints.push((change, TaintPurpose::Monitor));
            }
            if work.mark_pods_not_ready {
                job.mark_pods = Some(self.state.pods_on(name));
            }
        }
        if work.expire_taints {
            let mut node = job.node.clone();
            job.expire_taints = taint_expiry::expire(&mut node, now).1;
        }
        if work.no_schedule {
            let change = no_schedule_change(&job.node);
            if !change.is_empty() {
                job.taints.push((change, TaintPurpose::NoSchedule));
            }
        }
        // The Ready status the node has once this job's own status write
        // (done first) is in: a node marked Unknown by this pass's write is
        // tainted by the same job.
        let ready_after = job
            .status
            .as_deref()
            .and_then(|conditions| conditions.iter().find(|c| c.type_ == CONDITION_READY))
            .or_else(|| condition(&job.node, CONDITION_READY))
            .map(|c| c.status.clone());
        for (zone, value) in work.evict {
            let ready = ready_after.clone();
            match ready {
                None => {
                    self.state
                        .retry_tainting(&zone, value, now, Duration::from_millis(50));
                }
                Some(status) => {
                    // Ready again: nothing to taint.
                    if let Some(change) = no_execute_swap(&status) {
                        job.taints
                            .push((change, TaintPurpose::Evict { zone, value }));
                    }
                }
            }
        }
        (!job.is_empty()).then_some(job)
    }

    /// Applies what a write task came back with.
    fn write_done(&mut self, done: JobDone) {
        let now = self.clock.now();
        let name = done.name.as_str();
        self.writes.finished(name);
        if let Some(node) = done.node {
            self.state.observe_written(node, now);
        }
        match done.status {
            None => {}
            Some(Ok(())) => {
                if let Some(entry) = self.state.nodes.get_mut(name) {
                    entry.health.marked_unknown(now);
                }
            }
            Some(Err(err)) => {
                tracing::warn!(node = %name, %err, "Update health of Node from Controller error, Skipping - no pods will be evicted");
            }
        }
        if done.became_not_ready {
            self.record_node_event(
                name,
                "NodeNotReady",
                format!("Node {name} status is now: NodeNotReady"),
            );
        }
        for (purpose, result) in done.taints {
            match (purpose, result) {
                (TaintPurpose::Evict { zone, .. }, Ok(true)) => {
                    self.metrics
                        .evictions
                        .get_or_create(&ControllerMetrics::zone(&zone))
                        .inc();
                }
                (_, Ok(_)) => {}
                (TaintPurpose::Evict { zone, value }, Err(err)) => {
                    tracing::warn!(node = %name, %err, "failed to taint node");
                    self.state.retry_tainting(&zone, value, now, Duration::ZERO);
                }
                (TaintPurpose::Monitor, Err(err)) => {
                    tracing::warn!(node = %name, %err, "failed to update NoExecute taints; next pass retries");
                }
                (TaintPurpose::NoSchedule, Err(err)) => {
                    tracing::warn!(node = %name, %err, "failed to update NoSchedule taints");
                }
            }
        }
        match done.expired {
            None => {}
            Some(Ok(expired)) => {
                for gone in expired {
                    let taint = format_taint(&gone.taint);
                    let at = taint_expiry::format_time(gone.at);
                    tracing::info!(node = %name, %taint, expired = %at, "removed an expired taint");
                    self.record_node_event(
                        name,
                        "TaintExpired",
                        format!("Removed taint {taint}, which expired at {at}"),
                    );
                }
            }
            Some(Err(err)) => {
                tracing::warn!(node = %name, %err, "failed to remove expired taints; retrying");
                let period = SignedDuration::try_from(self.config.node_monitor_period)
                    .unwrap_or(SignedDuration::from_secs(5));
                self.state
                    .retry_expiry(name, now.checked_add(period).unwrap_or(Timestamp::MAX));
            }
        }
        match done.mark_pods {
            None => {}
            Some(Ok(())) => {
                self.state.needs_retry.remove(name);
            }
            Some(Err(err)) => {
                tracing::warn!(node = %name, %err, "unable to mark all pods NotReady; queuing for retry");
                self.state.needs_retry.insert(name.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::make_node;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_420_113_600 + s).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// A node of `zone`, Ready `ready` since long ago, last heard of at
    /// `heartbeat`.
    fn zoned(name: &str, zone: &str, ready: &str, heartbeat: i64) -> Node {
        make_node()
            .name(name)
            .uid(&format!("uid-{name}"))
            .created_at(t(-10_000))
            .label(zone::LABEL_TOPOLOGY_ZONE, zone)
            .condition_at("Ready", ready, t(heartbeat), t(-10_000))
            .obj()
    }

    /// node0 and node1 of zone `z`, Ready and last heard of at 0, and the
    /// first pass at 0, which registers both.
    fn two_ready_nodes(config: &NodeLifecycleConfig) -> (ClusterState, MonitorPlan) {
        let mut state = ClusterState::default();
        state.observe_node(zoned("node0", "z", "True", 0), t(0));
        state.observe_node(zoned("node1", "z", "True", 0), t(0));
        let first = state.plan(t(0), config);
        assert_eq!(first.registered, ["node0", "node1"]);
        (state, first)
    }

    /// Upstream `TestMonitorNodeHealthEvictPods`, reduced to the plan: a
    /// node silent past the grace period is set Unknown and, in the same
    /// pass, queued for the unreachable taint, which the queue hands out at
    /// once (burst 1); the next pass, on the Unknown status written, keeps
    /// it queued without handing it out again.
    #[test]
    fn silent_node_is_marked_unknown_and_queued_for_tainting_in_one_pass() {
        let config = NodeLifecycleConfig::default();
        let (mut state, first) = two_ready_nodes(&config);
        assert!(first.actions.is_empty());
        // node1 keeps posting; node0 goes silent.
        state.observe_node(zoned("node1", "z", "True", 55), t(55));
        let second = state.plan(t(55), &config);
        assert_eq!(second.actions.len(), 1);
        let action = &second.actions[0];
        assert_eq!(action.name, "node0");
        assert!(action.became_not_ready && action.mark_pods_not_ready);
        assert_eq!(action.verdict.current_ready, Some(ReadyStatus::Unknown));
        let due = state.due_for_tainting(t(55));
        assert_eq!(due.len(), 1, "queued by the pass that marks it Unknown");
        assert_eq!(due[0].1.value, "node0");
        // The controller's own writes (the status, then the taint) come
        // back through the watch.
        let mut unknown = zoned("node0", "z", "Unknown", 0);
        unknown.status = Some(NodeStatus {
            conditions: action.verdict.status_update.clone(),
            ..NodeStatus::default()
        });
        unknown.spec = Some(NodeSpec {
            taints: Some(vec![taints::taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE)]),
            ..NodeSpec::default()
        });
        state.observe_node(unknown, t(55));
        let third = state.plan(t(60), &config);
        assert!(third.actions.is_empty(), "{third:?}");
        assert!(state.due_for_tainting(t(80)).is_empty(), "handed out once");
    }

    /// Upstream's `classifyNodes`: the pass reports the nodes it sees for
    /// the first time and those gone since the last pass, also when one
    /// came and one went between two passes (as many known as there are),
    /// and forgets a gone node's place in its zone's tainting queue.
    #[test]
    fn a_pass_reports_nodes_registered_and_removed_since_the_last() {
        let config = NodeLifecycleConfig::default();
        let (mut state, first) = two_ready_nodes(&config);
        assert!(first.removed.is_empty());
        // node1 goes silent: queued for its taint.
        state.observe_node(zoned("node0", "z", "True", 55), t(55));
        state.plan(t(55), &config);
        let queued =
            |state: &ClusterState, name: &str| state.queues.values().any(|q| q.contains(name));
        assert!(queued(&state, "node1"));

        // One goes and one comes between two passes.
        state.remove_node("node1");
        state.observe_node(zoned("node2", "z", "True", 56), t(56));
        let second = state.plan(t(56), &config);
        assert_eq!(second.registered, ["node2"]);
        assert_eq!(second.removed, ["node1"]);
        assert!(!queued(&state, "node1"), "a gone node leaves its queue");

        let third = state.plan(t(57), &config);
        assert!(third.registered.is_empty() && third.removed.is_empty());
    }

    #[test]
    fn a_ready_node_with_health_taints_gets_them_lifted() {
        let config = NodeLifecycleConfig::default();
        let mut state = ClusterState::default();
        let mut n = zoned("node0", "z", "True", 0);
        n.spec = Some(NodeSpec {
            taints: Some(vec![taints::taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE)]),
            ..NodeSpec::default()
        });
        state.observe_node(n, t(0));
        let plan = state.plan(t(1), &config);
        assert_eq!(plan.actions.len(), 1);
        assert_eq!(plan.actions[0].taints, TaintStep::Lift);
    }

    #[test]
    fn a_not_ready_node_with_the_unreachable_taint_is_swapped_at_once() {
        let config = NodeLifecycleConfig::default();
        let mut state = ClusterState::default();
        let mut n = zoned("node0", "z", "False", 0);
        n.spec = Some(NodeSpec {
            taints: Some(vec![taints::taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE)]),
            ..NodeSpec::default()
        });
        state.observe_node(n, t(0));
        state.observe_node(zoned("node1", "z", "True", 0), t(0));
        let plan = state.plan(t(1), &config);
        assert_eq!(plan.actions.len(), 1);
        assert_eq!(
            plan.actions[0].taints,
            TaintStep::SwapNow(no_execute_swap("False").unwrap_or_default())
        );
    }

    /// The expiry schedule follows the nodes' annotations: the earliest
    /// first, handed out once when due, back with the node's next change
    /// (its write failed, or the taint was put back).
    #[test]
    fn taint_expiries_are_due_in_time_order_and_come_back_with_the_node() {
        let mut state = ClusterState::default();
        let expiring = |name: &str, at: i64| {
            let mut node = zoned(name, "z", "True", 0);
            let taint = taints::taint("maintenance", "NoSchedule");
            node.spec = Some(NodeSpec {
                taints: Some(vec![taint.clone()]),
                ..NodeSpec::default()
            });
            taint_expiry::set(&mut node, &taint, t(at));
            node
        };
        state.observe_node(expiring("a", 30), t(0));
        state.observe_node(expiring("b", 20), t(0));
        state.observe_node(zoned("c", "z", "True", 0), t(0));
        assert_eq!(state.next_expiry(), Some(t(20)));
        assert!(state.due_expiries(t(19)).is_empty());
        assert_eq!(state.due_expiries(t(20)), ["b"]);
        assert_eq!(state.next_expiry(), Some(t(30)));
        // A later time replaces the node's earlier one.
        state.observe_node(expiring("a", 40), t(25));
        assert_eq!(state.due_expiries(t(35)), Vec::<String>::new());
        state.retry_expiry("b", t(36));
        assert_eq!(state.due_expiries(t(40)), ["b", "a"]);
        state.observe_node(expiring("a", 50), t(41));
        state.remove_node("a");
        assert_eq!(state.next_expiry(), None);
        state.retry_expiry("a", t(60));
        assert_eq!(state.next_expiry(), None, "a node gone is not retried");
    }
}
