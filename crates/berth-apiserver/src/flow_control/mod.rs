//! API Priority and Fairness with upstream's default configuration: every
//! request (but watches, which hold no seat once started, and the exempt
//! ones) is classified by the suggested FlowSchemas into a priority level,
//! and runs only in one of that level's seats; a request that finds its
//! level full waits in the level's queue, fairly among flows (round robin
//! over the users or namespaces that are waiting), for at most a quarter of
//! the request timeout, then gets upstream's 429.
//!
//! What this buys: no client can take the server from the others. A flood
//! of list or write requests from one user fills its own level's seats and
//! its own queue, not the seats of node heartbeats (`node-high`: a node's
//! Node, its status and Leases), of the scheduler and controllers
//! (`workload-high`) or of leader election. Seats are split by upstream's
//! nominal concurrency shares of the server's concurrency limit
//! (`--max-requests-inflight` + `--max-mutating-requests-inflight`, 400 +
//! 200 as upstream's).
//!
//! Node heartbeats first: inside `node-high`, a node's Lease requests
//! (its heartbeat) go before its Node writes (registration, status). When
//! the server is saturated every seat's request shares the same CPU, so a
//! seat given to a Node write is CPU taken from renewals; while Leases
//! wait, Node writes hold at most a quarter of the level's seats (and are
//! guaranteed that quarter, so they are never starved). A late status
//! write costs nothing while the Lease is fresh (the node lifecycle
//! controller reads either); a late renewal makes a node look dead.
//!
//! Where berth differs: no FlowSchema or PriorityLevelConfiguration objects
//! are served (the default configuration is fixed), levels do not lend
//! each other seats, a queue is one per flow rather than shuffle
//! sharding's hand of queues (the fairness it approximates is exact here),
//! and the two lanes above (upstream's levels have one).

mod classify;
mod metrics;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::status::ApiError;

pub use classify::{
    Classification, KUBE_CONTROLLER_MANAGER_USER, KUBE_SCHEDULER_USER, Lane, classify,
};
pub use metrics::encode as encode_metrics;

/// Upstream's priority levels, in their bootstrap order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PriorityLevel {
    Exempt,
    System,
    NodeHigh,
    LeaderElection,
    WorkloadHigh,
    WorkloadLow,
    GlobalDefault,
    CatchAll,
}

/// The limited levels, in the order of [`FlowControl::levels`].
const LIMITED: [PriorityLevel; 7] = [
    PriorityLevel::System,
    PriorityLevel::NodeHigh,
    PriorityLevel::LeaderElection,
    PriorityLevel::WorkloadHigh,
    PriorityLevel::WorkloadLow,
    PriorityLevel::GlobalDefault,
    PriorityLevel::CatchAll,
];

impl PriorityLevel {
    pub fn name(self) -> &'static str {
        match self {
            PriorityLevel::Exempt => "exempt",
            PriorityLevel::System => "system",
            PriorityLevel::NodeHigh => "node-high",
            PriorityLevel::LeaderElection => "leader-election",
            PriorityLevel::WorkloadHigh => "workload-high",
            PriorityLevel::WorkloadLow => "workload-low",
            PriorityLevel::GlobalDefault => "global-default",
            PriorityLevel::CatchAll => "catch-all",
        }
    }

    /// Upstream's `nominalConcurrencyShares` (0 for exempt: unlimited).
    fn shares(self) -> usize {
        match self {
            PriorityLevel::Exempt => 0,
            PriorityLevel::System => 30,
            PriorityLevel::NodeHigh => 40,
            PriorityLevel::LeaderElection => 10,
            PriorityLevel::WorkloadHigh => 40,
            PriorityLevel::WorkloadLow => 100,
            PriorityLevel::GlobalDefault => 20,
            PriorityLevel::CatchAll => 5,
        }
    }

    /// Requests that may wait: upstream's `queues × queueLengthLimit`
    /// (catch-all rejects rather than queues).
    fn queue_limit(self) -> usize {
        match self {
            PriorityLevel::Exempt | PriorityLevel::CatchAll => 0,
            PriorityLevel::System | PriorityLevel::NodeHigh => 64 * 50,
            PriorityLevel::LeaderElection => 16 * 50,
            PriorityLevel::WorkloadHigh
            | PriorityLevel::WorkloadLow
            | PriorityLevel::GlobalDefault => 128 * 50,
        }
    }

    fn index(self) -> Option<usize> {
        LIMITED.iter().position(|l| *l == self)
    }
}

/// The server's concurrency limit and how long a request may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowControlLimits {
    /// Seats of all limited levels together (upstream: the sum of
    /// `--max-requests-inflight` and `--max-mutating-requests-inflight`).
    pub server_concurrency: usize,
    /// The longest a request waits for a seat (upstream: a quarter of the
    /// 60 s request timeout).
    pub max_wait: Duration,
}

impl Default for FlowControlLimits {
    fn default() -> Self {
        FlowControlLimits {
            server_concurrency: 600,
            max_wait: Duration::from_secs(15),
        }
    }
}

/// A request waiting for a seat: the seat is sent to it, so a seat handed
/// to a request that has stopped waiting is freed when the channel drops.
#[derive(Debug)]
struct Waiter {
    flow_schema: &'static str,
    seat: oneshot::Sender<Seat>,
}

/// One lane's waiting requests: a queue per flow, served round robin.
#[derive(Debug, Default)]
struct Queues {
    waiting: usize,
    /// Flows with waiters, in round-robin order.
    turns: VecDeque<String>,
    queues: HashMap<String, VecDeque<Waiter>>,
}

impl Queues {
    fn push(&mut self, flow: &str, waiter: Waiter) {
        let queue = match self.queues.get_mut(flow) {
            Some(queue) => queue,
            None => self.queues.entry(flow.to_string()).or_default(),
        };
        if queue.is_empty() {
            self.turns.push_back(flow.to_string());
        }
        queue.push_back(waiter);
        self.waiting += 1;
    }

    /// The next flow's oldest waiter, round robin over the flows.
    fn pop(&mut self) -> Option<Waiter> {
        let flow = self.turns.pop_front()?;
        let queue = self.queues.get_mut(&flow)?;
        let next = queue.pop_front();
        if queue.is_empty() {
            self.queues.remove(&flow);
        } else {
            self.turns.push_back(flow);
        }
        self.waiting -= 1;
        next
    }
}

/// One level's seats and queues: the first lane's (node heartbeats) and
/// the other requests'.
#[derive(Debug, Default)]
struct Level {
    seats: usize,
    in_use: usize,
    /// Seats held by requests of the other lane.
    other_in_use: usize,
    first: Queues,
    other: Queues,
}

impl Level {
    fn waiting(&self) -> usize {
        self.first.waiting + self.other.waiting
    }

    /// The seats the other lane keeps while the first lane waits: a
    /// quarter of the level's (at least one).
    fn other_share(&self) -> usize {
        (self.seats / 4).max(1)
    }

    /// Whether a request of `lane` may take a free seat now: the other
    /// lane only within its share while the first lane waits.
    fn may_take(&self, lane: Lane) -> bool {
        self.in_use < self.seats
            && match lane {
                Lane::First => true,
                Lane::Other => self.first.waiting == 0 || self.other_in_use < self.other_share(),
            }
    }

    /// Who gets a freed seat: the other lane up to its share, then the
    /// first lane, then the other lane beyond its share.
    fn next_waiter(&mut self) -> Option<(Waiter, Lane)> {
        if self.other.waiting > 0 && self.other_in_use < self.other_share() {
            return self.other.pop().map(|w| (w, Lane::Other));
        }
        if let Some(waiter) = self.first.pop() {
            return Some((waiter, Lane::First));
        }
        self.other.pop().map(|w| (w, Lane::Other))
    }

    fn take(&mut self, lane: Lane) {
        self.in_use += 1;
        if lane == Lane::Other {
            self.other_in_use += 1;
        }
    }

    fn give_back(&mut self, lane: Lane) {
        self.in_use -= 1;
        if lane == Lane::Other {
            self.other_in_use -= 1;
        }
    }
}

/// The server's flow control.
#[derive(Debug)]
pub struct FlowControl {
    limits: FlowControlLimits,
    levels: Mutex<Vec<Level>>,
}

/// A seat of a level; dropping it (when the response is ready) hands it to
/// the next waiter or frees it.
#[derive(Debug)]
pub struct Seat {
    held: Option<Held>,
}

#[derive(Debug)]
struct Held {
    control: Arc<FlowControl>,
    level: usize,
    lane: Lane,
    flow_schema: &'static str,
}

impl Drop for Seat {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            held.control
                .release(held.level, held.lane, held.flow_schema);
        }
    }
}

/// Upstream's `tooManyRequests`: 429 with `Retry-After`.
fn too_many_requests() -> ApiError {
    ApiError::too_many_requests("Too many requests, please try again later.", 1)
}

impl FlowControl {
    pub fn new(limits: FlowControlLimits) -> Arc<FlowControl> {
        let total_shares: usize = LIMITED.iter().map(|l| l.shares()).sum();
        let levels: Vec<Level> = LIMITED
            .iter()
            .map(|l| Level {
                // Upstream's nominal concurrency limit: ceil(SCL × shares / Σ shares).
                seats: (limits.server_concurrency * l.shares())
                    .div_ceil(total_shares)
                    .max(1),
                ..Level::default()
            })
            .collect();
        for (level, seats) in LIMITED.iter().zip(&levels) {
            metrics::nominal_seats(level.name(), seats.seats);
        }
        Arc::new(FlowControl {
            limits,
            levels: Mutex::new(levels),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Level>> {
        self.levels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The seats of a level (`None`: exempt, unlimited).
    pub fn seats(&self, level: PriorityLevel) -> Option<usize> {
        level.index().map(|i| self.lock()[i].seats)
    }

    /// Waits for a seat of the request's level: at once when one is free
    /// (and its lane may take it), else in its lane's queue of its flow;
    /// 429 when the level's queues are full or the wait runs out.
    pub async fn admit(self: &Arc<Self>, class: &Classification) -> Result<Seat, ApiError> {
        let Some(index) = class.level.index() else {
            return Ok(Seat { held: None });
        };
        let (schema, level_name) = (class.flow_schema, class.level.name());
        let receiver = {
            let mut levels = self.lock();
            let level = &mut levels[index];
            if level.may_take(class.lane) {
                level.take(class.lane);
                drop(levels);
                metrics::dispatched(schema, level_name, Duration::ZERO);
                metrics::executing(schema, level_name, 1);
                return Ok(self.seat(index, class.lane, schema));
            }
            if level.waiting() >= class.level.queue_limit() {
                drop(levels);
                metrics::rejected(schema, level_name, "queue-full");
                return Err(too_many_requests());
            }
            let (sender, receiver) = oneshot::channel();
            let waiter = Waiter {
                flow_schema: schema,
                seat: sender,
            };
            match class.lane {
                Lane::First => level.first.push(&class.flow, waiter),
                Lane::Other => level.other.push(&class.flow, waiter),
            }
            receiver
        };
        let queued = tokio::time::Instant::now();
        let _in_queue = metrics::InQueue::enter(schema, level_name);
        match tokio::time::timeout(self.limits.max_wait, receiver).await {
            Ok(Ok(seat)) => {
                metrics::dispatched(schema, level_name, queued.elapsed());
                Ok(seat)
            }
            // Timed out: a seat sent later finds the receiver gone and
            // goes to the next waiter.
            Ok(Err(_)) | Err(_) => {
                metrics::rejected(schema, level_name, "time-out");
                Err(too_many_requests())
            }
        }
    }

    /// A seat of `level` held in `lane` (taken already, counted by the caller).
    fn seat(self: &Arc<Self>, level: usize, lane: Lane, flow_schema: &'static str) -> Seat {
        Seat {
            held: Some(Held {
                control: self.clone(),
                level,
                lane,
                flow_schema,
            }),
        }
    }

    fn release(self: &Arc<Self>, index: usize, lane: Lane, flow_schema: &'static str) {
        metrics::executing(flow_schema, LIMITED[index].name(), -1);
        let mut levels = self.lock();
        let level = &mut levels[index];
        level.give_back(lane);
        while let Some((waiter, lane)) = level.next_waiter() {
            let seat = self.seat(index, lane, waiter.flow_schema);
            level.take(lane);
            match waiter.seat.send(seat) {
                Ok(()) => {
                    metrics::executing(waiter.flow_schema, LIMITED[index].name(), 1);
                    return;
                }
                // Its request stopped waiting: the seat comes back unused
                // (the lock is held here, so it is given back by hand).
                Err(mut seat) => {
                    seat.held = None;
                    level.give_back(lane);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
