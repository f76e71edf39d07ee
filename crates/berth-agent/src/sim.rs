//! Many simulated nodes in one process, the way KWOK simulates them, but
//! with one task driving every node's timers instead of a task per node.
//!
//! Every node has its own identity (its own bearer token, so the server
//! authorizes each as itself and NodeRestriction applies), its own Lease
//! renewed every 10 s with upstream's 4% jitter and backoff, and its own
//! status: Ready with no pressure, written at registration and then every
//! `nodeStatusReportFrequency`, and at once when the Node on the server
//! says otherwise (the node lifecycle controller set it Unknown), as a
//! kubelet that compares its status with the server's does. Instead of a
//! read of each Node every 10 s, one watch of every Node tells the fleet
//! when a node's conditions on the server differ from its own.
//!
//! The timers live in time-ordered heaps, one for Lease renewals and one
//! for the rest: when both have work due, renewals go first (a late
//! renewal makes a node look dead; a late registration or status write
//! does not). Due work is sent through one shared `kube::Client` (one
//! connection pool) with a bound on requests in flight. Pods bound to
//! simulated nodes are admitted and run by one [`PodWorker`] over one
//! simulated runtime, fed by one watch.
//!
//! The two shared watches (every Node, every pod bound to a node) are
//! more than any node credential may read (a node reads only its own Node
//! and pods); they go out as the shared client's own identity, which must
//! be one that may: `system:berth:sim` inside `berth server`, an admin's
//! for `berth sim` against a cluster.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_runtime::Runtime;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use http::HeaderValue;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use berth_core::node_status::differs_from_server;

use crate::conditions::{Health, node_conditions};
use crate::config::AgentConfig;
use crate::heartbeat::{LeaseRenewer, backoff, jittered, random_fraction};
use crate::node_client::NodeClient;
use crate::pods::{NodeDirectory, PodEvent, PodWorker, feed};
use crate::registration::NodeTemplate;
use crate::status::status_patch;

/// The zone label simulated nodes carry.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// KWOK's default simulated node: 32 CPUs, 256 GiB, 110 pods.
pub fn default_template() -> NodeTemplate {
    let q = |s: &str| k8s_openapi::apimachinery::pkg::api::resource::Quantity(s.to_string());
    let resources = std::collections::BTreeMap::from([
        ("cpu".to_string(), q("32")),
        ("memory".to_string(), q("256Gi")),
        ("ephemeral-storage".to_string(), q("100Gi")),
        ("pods".to_string(), q("110")),
    ]);
    NodeTemplate {
        capacity: resources.clone(),
        allocatable: resources,
        node_info: k8s_openapi::api::core::v1::NodeSystemInfo {
            architecture: crate::host::go_arch().into(),
            operating_system: "linux".into(),
            container_runtime_version: "berth-sim://0.1.0".into(),
            kubelet_version: crate::host::KUBELET_VERSION.into(),
            os_image: "berth simulated node".into(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// One simulated node's identity.
#[derive(Debug, Clone)]
pub struct SimNode {
    pub name: String,
    pub zone: String,
    pub bearer: HeaderValue,
}

/// The name of simulated node `index` (`sim-000042`).
pub fn sim_node_name(prefix: &str, index: usize) -> String {
    format!("{prefix}{index:06}")
}

/// The zone of simulated node `index` among `zones` (`zone-a`, `zone-b`, ...).
pub fn sim_zone(index: usize, zones: usize) -> String {
    let z = index % zones.max(1);
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    match letters.get(z) {
        Some(&c) if zones <= letters.len() => format!("zone-{}", char::from(c)),
        _ => format!("zone-{z}"),
    }
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
    /// Capacity, allocatable, labels and taints every node shares (name,
    /// zone and addresses are per node).
    pub template: NodeTemplate,
    pub config: AgentConfig,
    pub gates: FeatureGates,
    /// Requests in flight at most.
    pub max_in_flight: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    Register,
    Renew,
    Status,
}

struct NodeState {
    client: NodeClient,
    renewer: Option<LeaseRenewer>,
    failures: u32,
    last_renewal: Option<Instant>,
    was_late: bool,
    registered: bool,
    /// When the node's one status write is due; a timer for another time
    /// is stale (the write was moved sooner).
    status_due: Option<Instant>,
    /// The transition time of the node's healthy conditions on the server
    /// (the fleet's start, or when it last came back from another status).
    healthy_since: Timestamp,
}

impl NodeState {
    /// Moves the node's status write to `due`.
    fn schedule_status(&mut self, timers: &mut Timers, index: usize, due: Instant) {
        self.status_due = Some(due);
        timers.push(due, index, Work::Status);
    }

    /// The Node on the server changed: when its conditions differ from the
    /// ones the node reports (computed against them, as the kubelet's
    /// setters do), its status is written now.
    fn observe(
        &mut self,
        node: &Node,
        timers: &mut Timers,
        index: usize,
        now: Timestamp,
        instant: Instant,
    ) {
        let server = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        // Before the node's first status write its conditions are the
        // registration's to set.
        if !self.registered || server.is_empty() {
            return;
        }
        let reported = node_conditions(Health::default(), &[], server, now);
        if let Some(since) = reported
            .iter()
            .find(|c| c.type_ == "Ready")
            .and_then(|c| c.last_transition_time.as_ref())
        {
            self.healthy_since = since.0;
        }
        if differs_from_server(server, &reported) {
            self.schedule_status(timers, index, instant);
        }
    }
}

enum Outcome {
    Registered(Option<String>),
    RegisterFailed,
    Renewed(Box<LeaseRenewer>, bool),
    Status(bool),
}

type Timer = Reverse<(Instant, usize, Work)>;

/// Of the starts made while both kinds of work are due, renewals take at
/// most this many in a row before one registration or status write goes.
const RENEWALS_BEFORE_OTHER: u32 = 3;

/// The fleet's timers: Lease renewals first when several are due, but not
/// only renewals: with the server saturated, renewals are always due, and
/// strict priority starved the registration of the rest of the fleet (at
/// 150,000 nodes it never finished), which kubelets, each on its own, do
/// not do. So every [`RENEWALS_BEFORE_OTHER`] renewals started while other
/// work waits, one other piece of work starts.
#[derive(Default)]
struct Timers {
    renewals: BinaryHeap<Timer>,
    other: BinaryHeap<Timer>,
    /// Renewals started in a row while other work was due.
    renewals_in_a_row: u32,
}

impl Timers {
    fn push(&mut self, due: Instant, index: usize, work: Work) {
        let heap = match work {
            Work::Renew => &mut self.renewals,
            Work::Register | Work::Status => &mut self.other,
        };
        heap.push(Reverse((due, index, work)));
    }

    /// The next due piece of work and when it was due: renewals first,
    /// within their share.
    fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize, Work)> {
        let is_due =
            |heap: &BinaryHeap<Timer>| heap.peek().is_some_and(|Reverse((due, _, _))| *due <= now);
        let renewal_due = is_due(&self.renewals);
        let other_due = is_due(&self.other);
        let heap = match (renewal_due, other_due) {
            (true, true) if self.renewals_in_a_row < RENEWALS_BEFORE_OTHER => {
                self.renewals_in_a_row += 1;
                &mut self.renewals
            }
            (true, false) => {
                self.renewals_in_a_row = 0;
                &mut self.renewals
            }
            (_, true) => {
                self.renewals_in_a_row = 0;
                &mut self.other
            }
            (false, false) => return None,
        };
        heap.pop().map(|Reverse(timer)| timer)
    }

    fn next_due(&self) -> Option<Instant> {
        [&self.renewals, &self.other]
            .into_iter()
            .filter_map(|h| h.peek().map(|Reverse((due, _, _))| *due))
            .min()
    }
}

/// The fleet's node clients by name, for the pod worker.
struct Directory(HashMap<String, NodeClient>);

impl NodeDirectory for Directory {
    fn client(&self, node: &str) -> Option<NodeClient> {
        self.0.get(node).cloned()
    }
}

/// The template of one node of the fleet.
fn node_template(base: &NodeTemplate, node: &SimNode, index: usize) -> NodeTemplate {
    let mut t = base.clone();
    t.name = node.name.clone();
    t.labels.insert(ZONE_LABEL.to_string(), node.zone.clone());
    let ip = format!(
        "10.{}.{}.{}",
        (index >> 16) & 0xff,
        (index >> 8) & 0xff,
        index & 0xff
    );
    t.addresses = vec![
        NodeAddress {
            type_: "InternalIP".into(),
            address: ip,
        },
        NodeAddress {
            type_: "Hostname".into(),
            address: node.name.clone(),
        },
    ];
    t
}

/// Runs `nodes` against the API behind `client` until `stop`. `client`
/// must authenticate requests that carry no token of their own (the Node
/// and pod watches) as an identity that may list and watch every Node and
/// pod; see [`crate::node_client::with_default_bearer`].
pub async fn run_fleet(
    client: kube::Client,
    nodes: Vec<SimNode>,
    runtime: Arc<dyn Runtime>,
    clock: Clock,
    options: FleetOptions,
    stats: Arc<SimStats>,
    stop: CancellationToken,
) {
    let mut states: Vec<NodeState> = nodes
        .iter()
        .map(|n| NodeState {
            client: NodeClient::with_bearer(client.clone(), &n.name, n.bearer.clone()),
            renewer: None,
            failures: 0,
            last_renewal: None,
            was_late: false,
            registered: false,
            status_due: None,
            healthy_since: Timestamp::UNIX_EPOCH,
        })
        .collect();
    let index_of: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let directory = Arc::new(Directory(
        states
            .iter()
            .map(|s| (s.client.node_name().to_string(), s.client.clone()))
            .collect(),
    ));
    let worker = PodWorker::new(runtime.clone(), directory, clock.clone(), options.gates);
    let (events, receiver) = tokio::sync::mpsc::unbounded_channel::<PodEvent>();
    let worker_task = tokio::spawn(worker.run(receiver));
    let feed_task = tokio::spawn(feed(
        client.clone(),
        "spec.nodeName!=".to_string(),
        runtime,
        events,
    ));

    let renew_interval = options.config.lease_renew_interval();
    let lease_duration = Duration::from_secs(
        u64::try_from(options.config.node_lease_duration_seconds).unwrap_or(40),
    );
    let report = options.config.node_status_report_frequency;
    let started = clock.now();
    for state in &mut states {
        state.healthy_since = started;
    }
    let mut node_events = watcher::watcher(
        kube::Api::<Node>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .boxed();
    let mut timers = Timers::default();
    let now = clock.instant();
    for index in 0..states.len() {
        timers.push(now, index, Work::Register);
    }
    let mut in_flight: FuturesUnordered<BoxFuture<'static, (usize, Work, Outcome)>> =
        FuturesUnordered::new();
    let max_in_flight = options.max_in_flight.max(1);

    loop {
        // Start due work while there is room.
        let now = clock.instant();
        while in_flight.len() < max_in_flight {
            let Some((due, index, work)) = timers.pop_due(now) else {
                break;
            };
            let Some(state) = states.get_mut(index) else {
                continue;
            };
            if work == Work::Status && state.status_due != Some(due) {
                continue;
            }
            let client = state.client.clone();
            let clock = clock.clone();
            match work {
                Work::Register => {
                    let node = &nodes[index];
                    let template = node_template(&options.template, node, index);
                    in_flight.push(Box::pin(async move {
                        let node = template.node();
                        let result = match client.create_node(&node).await {
                            Ok(n) => Ok(n),
                            Err(e) if e.is_conflict() => client.get_node().await,
                            Err(e) => Err(e),
                        };
                        let outcome = match result {
                            Ok(n) => Outcome::Registered(n.metadata.uid),
                            Err(e) => {
                                tracing::debug!(error = %e, "registering a simulated node failed");
                                Outcome::RegisterFailed
                            }
                        };
                        (index, Work::Register, outcome)
                    }));
                }
                Work::Renew => {
                    let Some(mut renewer) = state.renewer.take() else {
                        continue;
                    };
                    in_flight.push(Box::pin(async move {
                        let ok = renewer.renew(&client, clock.now()).await.is_ok();
                        (index, Work::Renew, Outcome::Renewed(Box::new(renewer), ok))
                    }));
                }
                Work::Status => {
                    state.status_due = None;
                    let template = node_template(&options.template, &nodes[index], index);
                    let conditions = healthy_conditions(state.healthy_since, clock.now());
                    in_flight.push(Box::pin(async move {
                        let patch = status_patch(&template, &conditions);
                        let ok = client.patch_node_status(&patch).await.is_ok();
                        (index, Work::Status, Outcome::Status(ok))
                    }));
                }
            }
        }

        let next_due = timers.next_due();
        let room = in_flight.len() < max_in_flight;
        tokio::select! {
            _ = stop.cancelled() => break,
            Some((index, work, outcome)) = in_flight.next(), if !in_flight.is_empty() => {
                let now = clock.instant();
                let Some(state) = states.get_mut(index) else { continue };
                match (work, outcome) {
                    (_, Outcome::Registered(uid)) => {
                        stats.registered.fetch_add(1, Ordering::Relaxed);
                        state.registered = true;
                        state.renewer = Some(LeaseRenewer::new(
                            state.client.node_name(),
                            uid,
                            options.config.node_lease_duration_seconds,
                        ));
                        timers.push(now, index, Work::Renew);
                        state.schedule_status(&mut timers, index, now);
                    }
                    (_, Outcome::RegisterFailed) => {
                        stats.register_failures.fetch_add(1, Ordering::Relaxed);
                        state.failures = state.failures.saturating_add(1);
                        timers.push(now + backoff(state.failures), index, Work::Register);
                    }
                    (_, Outcome::Renewed(renewer, ok)) => {
                        state.renewer = Some(*renewer);
                        if ok {
                            stats.lease_renewals.fetch_add(1, Ordering::Relaxed);
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
                            timers.push(now + jittered(renew_interval, random_fraction()), index, Work::Renew);
                        } else {
                            stats.lease_failures.fetch_add(1, Ordering::Relaxed);
                            state.failures = state.failures.saturating_add(1);
                            timers.push(now + backoff(state.failures), index, Work::Renew);
                        }
                    }
                    (_, Outcome::Status(ok)) => {
                        let counter = if ok { &stats.status_writes } else { &stats.status_failures };
                        counter.fetch_add(1, Ordering::Relaxed);
                        let next = if ok { jittered(report, random_fraction()) } else { backoff(1) };
                        // A write moved sooner since this one started is
                        // still due; otherwise the next report.
                        if state.status_due.is_none() {
                            state.schedule_status(&mut timers, index, now + next);
                        }
                    }
                }
            }
            Some(event) = node_events.next() => match event {
                Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) => {
                    if let Some(&index) = node.metadata.name.as_deref().and_then(|n| index_of.get(n))
                        && let Some(state) = states.get_mut(index)
                    {
                        state.observe(&node, &mut timers, index, clock.now(), clock.instant());
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "watching the simulated nodes"),
            },
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

/// A simulated node's conditions: healthy, in transition since `since`,
/// heartbeat `now`.
fn healthy_conditions(since: Timestamp, now: Timestamp) -> Vec<NodeCondition> {
    let on_server = node_conditions(Health::default(), &[], &[], since);
    node_conditions(Health::default(), &[], &on_server, now)
}

#[cfg(test)]
mod timer_tests {
    use super::*;

    /// Which work starts, in order, when `renewals` renewals and `other`
    /// other pieces of work are all due at once.
    fn order(renewals: usize, other: usize) -> String {
        let mut timers = Timers::default();
        let now = Instant::now();
        for i in 0..renewals {
            timers.push(now, i, Work::Renew);
        }
        for i in 0..other {
            timers.push(now, 100 + i, Work::Status);
        }
        std::iter::from_fn(|| timers.pop_due(now))
            .map(|(_, _, work)| if work == Work::Renew { 'R' } else { 'O' })
            .collect()
    }

    #[test]
    fn renewals_go_first_but_leave_other_work_a_share() {
        let cases = [
            // (renewals due, other due, order started)
            (0, 0, ""),
            (5, 0, "RRRRR"),
            (0, 3, "OOO"),
            (3, 1, "RRRO"),
            (8, 2, "RRRORRRORR"),
            (2, 4, "RROOOO"),
        ];
        for (renewals, other, want) in cases {
            assert_eq!(
                order(renewals, other),
                want,
                "{renewals} renewals, {other} other"
            );
        }
    }

    #[test]
    fn work_not_yet_due_never_starts() {
        let mut timers = Timers::default();
        let now = Instant::now();
        timers.push(now + Duration::from_secs(1), 0, Work::Renew);
        timers.push(now + Duration::from_secs(2), 1, Work::Register);
        assert_eq!(timers.pop_due(now), None);
        assert_eq!(timers.next_due(), Some(now + Duration::from_secs(1)));
        assert_eq!(
            timers.pop_due(now + Duration::from_secs(1)),
            Some((now + Duration::from_secs(1), 0, Work::Renew))
        );
    }
}
