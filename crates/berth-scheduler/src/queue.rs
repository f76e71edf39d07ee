//! The scheduling queue, after upstream's `PriorityQueue`
//! (`pkg/scheduler/backend/queue/scheduling_queue.go`): three places a
//! pending pod can wait.
//!
//! - **activeQ**: ready to be tried, highest `spec.priority` first, then
//!   the earliest to arrive (upstream's PrioritySort).
//! - **backoffQ**: failed recently; waits `1 s · 2^(attempts-1)`, capped at
//!   10 s, after its last failure, then moves to activeQ.
//! - **unschedulable pods**: rejected by some plugins; they stay until a
//!   cluster event one of those plugins says may help them
//!   ([`crate::hints`]), or 5 minutes pass.
//!
//! Pods with scheduling gates wait apart until their gates are gone.
//! The queue is plain data: every method takes the current instant, so
//! tests drive it with virtual time.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;

use crate::framework::PodInfo;

/// Upstream's `DefaultPodInitialBackoffDuration`.
pub const DEFAULT_POD_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Upstream's `DefaultPodMaxBackoffDuration`.
pub const DEFAULT_POD_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Upstream's `DefaultPodMaxInUnschedulablePodsDuration`: an unschedulable
/// pod is retried after this long even if no event moved it.
pub const DEFAULT_MAX_IN_UNSCHEDULABLE: Duration = Duration::from_secs(5 * 60);

/// The queue's timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    pub pod_initial_backoff: Duration,
    pub pod_max_backoff: Duration,
    pub max_in_unschedulable: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            pod_initial_backoff: DEFAULT_POD_INITIAL_BACKOFF,
            pod_max_backoff: DEFAULT_POD_MAX_BACKOFF,
            max_in_unschedulable: DEFAULT_MAX_IN_UNSCHEDULABLE,
        }
    }
}

/// A pending pod and what the queue knows of its attempts
/// (`QueuedPodInfo`).
#[derive(Debug, Clone)]
pub struct QueuedPod {
    pub pod: PodInfo,
    /// `namespace/name`.
    pub key: String,
    /// When the pod last entered the queue (arrival, or its last failure):
    /// the order within a priority, and where its backoff starts.
    pub timestamp: Instant,
    /// When it was first popped, for the attempt-duration metrics.
    pub initial_attempt: Option<Instant>,
    /// How many times it was popped.
    pub attempts: u32,
    /// The plugins that rejected it in its last attempt. Empty after an
    /// error or a rejection nobody claimed: then any event moves it.
    pub unschedulable_plugins: Vec<&'static str>,
}

impl QueuedPod {
    pub fn priority(&self) -> i32 {
        pod_priority(self.pod.pod())
    }
}

/// `spec.priority`, 0 when unset.
pub fn pod_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

fn is_gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

/// Which sub-queue a pod is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Active,
    Backoff,
    Unschedulable,
    Gated,
    /// Popped and being scheduled or bound.
    InFlight,
}

/// How many pods wait where (`scheduler_pending_pods{queue}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingCounts {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
    pub gated: usize,
}

struct Entry {
    info: QueuedPod,
    place: Place,
    /// Bumped whenever the pod enters a heap, so stale heap items (the pod
    /// moved or left since) are recognised and dropped.
    generation: u64,
}

#[derive(Debug, PartialEq, Eq)]
struct ActiveItem {
    priority: i32,
    timestamp: Instant,
    seq: u64,
    key: String,
    generation: u64,
}

impl Ord for ActiveItem {
    /// The max-heap's greatest item is the next pod: higher priority, then
    /// the earlier timestamp, then the earlier arrival.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.timestamp.cmp(&self.timestamp))
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for ActiveItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

type BackoffItem = Reverse<(Instant, u64, String, u64)>;

/// The scheduling queue.
pub struct SchedulingQueue {
    config: QueueConfig,
    entries: HashMap<String, Entry>,
    /// The keys of the entries in [`Place::Unschedulable`]: every cluster
    /// event looks through them, and there may be few among thousands of
    /// pods waiting elsewhere.
    unschedulable: HashSet<String>,
    active: BinaryHeap<ActiveItem>,
    backoff: BinaryHeap<BackoffItem>,
    counts: PendingCounts,
    seq: u64,
}

impl SchedulingQueue {
    pub fn new(config: QueueConfig) -> Self {
        SchedulingQueue {
            config,
            entries: HashMap::new(),
            unschedulable: HashSet::new(),
            active: BinaryHeap::new(),
            backoff: BinaryHeap::new(),
            counts: PendingCounts::default(),
            seq: 0,
        }
    }

    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// How many pods wait in each sub-queue (in-flight pods are in none).
    pub fn pending(&self) -> PendingCounts {
        self.counts
    }

    /// Where the pod with `key` is, if queued.
    pub fn place(&self, key: &str) -> Option<Place> {
        self.entries.get(key).map(|e| e.place)
    }

    /// The queued pod with `key`.
    pub fn get(&self, key: &str) -> Option<&QueuedPod> {
        self.entries.get(key).map(|e| &e.info)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether a pod is ready to pop.
    pub fn has_active(&self) -> bool {
        self.counts.active > 0
    }

    /// A new pending pod (`Add`), or a newer version of a queued one.
    pub fn add(&mut self, key: String, pod: PodInfo, now: Instant) {
        if self.entries.contains_key(&key) {
            self.update(&key, pod, now);
            return;
        }
        let gated = is_gated(pod.pod());
        let info = QueuedPod {
            pod,
            key: key.clone(),
            timestamp: now,
            initial_attempt: None,
            attempts: 0,
            unschedulable_plugins: Vec::new(),
        };
        self.entries.insert(
            key.clone(),
            Entry {
                info,
                place: Place::InFlight,
                generation: 0,
            },
        );
        self.put(&key, if gated { Place::Gated } else { Place::Active });
    }

    /// A queued pod changed (`Update`). An unschedulable or gated pod whose
    /// spec changed is tried again, since the change may be what it needed.
    pub fn update(&mut self, key: &str, pod: PodInfo, now: Instant) {
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        let spec_changed = entry.info.pod.pod().spec != pod.pod().spec;
        let gated = is_gated(pod.pod());
        entry.info.pod = pod;
        match entry.place {
            Place::Gated if !gated => {
                entry.info.timestamp = now;
                self.put(key, Place::Active);
            }
            Place::Unschedulable if spec_changed => {
                let place = self.active_or_backoff(key, now);
                self.put(key, place);
            }
            _ => {}
        }
    }

    /// The pod left (deleted, bound by someone else, no longer ours).
    pub fn delete(&mut self, key: &str) {
        if let Some(entry) = self.entries.remove(key) {
            self.uncount(entry.place);
            if entry.place == Place::Unschedulable {
                self.unschedulable.remove(key);
            }
        }
    }

    /// The next pod to schedule (`Pop`), now in flight until
    /// [`SchedulingQueue::done`] or [`SchedulingQueue::requeue`].
    pub fn pop(&mut self, now: Instant) -> Option<QueuedPod> {
        while let Some(item) = self.active.pop() {
            let Some(entry) = self.entries.get_mut(&item.key) else {
                continue;
            };
            if entry.place != Place::Active || entry.generation != item.generation {
                continue;
            }
            entry.info.attempts = entry.info.attempts.saturating_add(1);
            entry.info.initial_attempt.get_or_insert(now);
            let info = entry.info.clone();
            self.put(&item.key, Place::InFlight);
            return Some(info);
        }
        None
    }

    /// The in-flight pod was bound (or given up): it leaves the queue.
    pub fn done(&mut self, key: &str) {
        if self.place(key) == Some(Place::InFlight) {
            self.delete(key);
        }
    }

    /// The in-flight pod failed (`AddUnschedulableIfNotPresent`). Rejected
    /// by `plugins`: it waits among the unschedulable pods for an event one
    /// of them cares about. After an error (`error`), or a rejection no
    /// plugin claimed, it backs off and is retried anyway.
    pub fn requeue(&mut self, key: &str, plugins: Vec<&'static str>, error: bool, now: Instant) {
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        if entry.place != Place::InFlight {
            return;
        }
        entry.info.timestamp = now;
        entry.info.unschedulable_plugins = plugins;
        let place = if error || entry.info.unschedulable_plugins.is_empty() {
            Place::Backoff
        } else {
            Place::Unschedulable
        };
        self.put(key, place);
    }

    /// When the pod's backoff ends (`getBackoffTime`).
    pub fn backoff_expiry(&self, info: &QueuedPod) -> Instant {
        info.timestamp + self.backoff_duration(info.attempts)
    }

    /// `calculateBackoffDuration`: the initial backoff doubled per attempt
    /// after the first, capped.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let max = self.config.pod_max_backoff;
        let mut d = self.config.pod_initial_backoff;
        for _ in 1..attempts {
            if d > max.saturating_sub(d) {
                return max;
            }
            d += d;
        }
        d.min(max)
    }

    /// Moves backed-off pods whose time is up to activeQ
    /// (`flushBackoffQCompleted`) and pods unschedulable for too long back
    /// into the game (`flushUnschedulablePodsLeftover`).
    pub fn flush(&mut self, now: Instant) {
        while let Some(Reverse((expiry, _, key, generation))) = self.backoff.peek() {
            if *expiry > now {
                break;
            }
            let (key, generation) = (key.clone(), *generation);
            self.backoff.pop();
            let current = self
                .entries
                .get(&key)
                .is_some_and(|e| e.place == Place::Backoff && e.generation == generation);
            if current {
                self.put(&key, Place::Active);
            }
        }
        if self.counts.unschedulable > 0 {
            let max = self.config.max_in_unschedulable;
            let mut stale: Vec<String> = self
                .unschedulable_entries()
                .filter(|(_, e)| now.saturating_duration_since(e.info.timestamp) > max)
                .map(|(k, _)| k.to_string())
                .collect();
            stale.sort_unstable();
            for key in stale {
                let place = self.active_or_backoff(&key, now);
                self.put(&key, place);
            }
        }
    }

    /// When [`SchedulingQueue::flush`] next has something to do: the
    /// earliest backoff expiry, or when the oldest unschedulable pod's
    /// 5 minutes are up.
    pub fn next_wakeup(&mut self) -> Option<Instant> {
        while let Some(Reverse((_, _, key, generation))) = self.backoff.peek() {
            let current = self
                .entries
                .get(key)
                .is_some_and(|e| e.place == Place::Backoff && e.generation == *generation);
            if current {
                break;
            }
            self.backoff.pop();
        }
        let backoff = self.backoff.peek().map(|Reverse((t, ..))| *t);
        let unschedulable = if self.counts.unschedulable > 0 {
            self.unschedulable_entries()
                .map(|(_, e)| e.info.timestamp + self.config.max_in_unschedulable)
                .min()
        } else {
            None
        };
        match (backoff, unschedulable) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A cluster event happened (`MoveAllToActiveOrBackoffQueue` with
    /// queueing hints): every unschedulable pod that `helps` says may now
    /// fit moves to backoffQ if still backing off, else to activeQ. A pod
    /// no plugin claimed moves on any event. Returns how many moved.
    pub fn move_on_event(
        &mut self,
        now: Instant,
        mut helps: impl FnMut(&QueuedPod) -> bool,
    ) -> usize {
        if self.counts.unschedulable == 0 {
            return 0;
        }
        let mut moved: Vec<String> = self
            .unschedulable_entries()
            .filter(|(_, e)| e.info.unschedulable_plugins.is_empty() || helps(&e.info))
            .map(|(k, _)| k.to_string())
            .collect();
        // In key order, not the set's: pods moved at once with equal
        // priority and timestamp then pop in the same order every run.
        moved.sort_unstable();
        for key in &moved {
            let place = self.active_or_backoff(key, now);
            self.put(key, place);
        }
        moved.len()
    }

    /// The entries in [`Place::Unschedulable`], with their keys.
    fn unschedulable_entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.unschedulable
            .iter()
            .filter_map(|k| self.entries.get(k).map(|e| (k.as_str(), e)))
    }

    fn active_or_backoff(&self, key: &str, now: Instant) -> Place {
        match self.entries.get(key) {
            Some(e) if self.backoff_expiry(&e.info) > now => Place::Backoff,
            _ => Place::Active,
        }
    }

    fn uncount(&mut self, place: Place) {
        let c = &mut self.counts;
        let n = match place {
            Place::Active => &mut c.active,
            Place::Backoff => &mut c.backoff,
            Place::Unschedulable => &mut c.unschedulable,
            Place::Gated => &mut c.gated,
            Place::InFlight => return,
        };
        *n = n.saturating_sub(1);
    }

    /// Moves the pod with `key` to `place`, keeping counts and heaps right.
    fn put(&mut self, key: &str, place: Place) {
        let Some(entry) = self.entries.get(key) else {
            return;
        };
        let old = entry.place;
        let priority = entry.info.priority();
        let timestamp = entry.info.timestamp;
        let expiry = timestamp + self.backoff_duration(entry.info.attempts);
        self.uncount(old);
        if old == Place::Unschedulable && place != Place::Unschedulable {
            self.unschedulable.remove(key);
        }
        self.seq += 1;
        let seq = self.seq;
        if let Some(entry) = self.entries.get_mut(key) {
            entry.place = place;
            entry.generation = seq;
        }
        match place {
            Place::Active => {
                self.counts.active += 1;
                self.active.push(ActiveItem {
                    priority,
                    timestamp,
                    seq,
                    key: key.to_string(),
                    generation: seq,
                });
            }
            Place::Backoff => {
                self.counts.backoff += 1;
                self.backoff
                    .push(Reverse((expiry, seq, key.to_string(), seq)));
            }
            Place::Unschedulable => {
                self.counts.unschedulable += 1;
                self.unschedulable.insert(key.to_string());
            }
            Place::Gated => self.counts.gated += 1,
            Place::InFlight => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::make_pod;
    use k8s_openapi::api::core::v1::PodSchedulingGate;

    fn queue() -> SchedulingQueue {
        SchedulingQueue::new(QueueConfig::default())
    }

    fn pop_names(q: &mut SchedulingQueue, now: Instant) -> Vec<String> {
        std::iter::from_fn(|| q.pop(now).map(|p| p.key)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn active_queue_orders_by_priority_then_arrival() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "low-1".into(),
            PodInfo::from(
                make_pod()
                    .name("low-1")
                    .namespace("default")
                    .priority(0)
                    .obj(),
            ),
            t0,
        );
        q.add(
            "high".into(),
            PodInfo::from(
                make_pod()
                    .name("high")
                    .namespace("default")
                    .priority(100)
                    .obj(),
            ),
            t0 + Duration::from_millis(1),
        );
        q.add(
            "low-2".into(),
            PodInfo::from(
                make_pod()
                    .name("low-2")
                    .namespace("default")
                    .priority(0)
                    .obj(),
            ),
            t0 + Duration::from_millis(2),
        );
        q.add(
            "low-0".into(),
            PodInfo::from(
                make_pod()
                    .name("low-0")
                    .namespace("default")
                    .priority(0)
                    .obj(),
            ),
            t0 + Duration::from_millis(2),
        );
        q.add(
            "neg".into(),
            PodInfo::from(
                make_pod()
                    .name("neg")
                    .namespace("default")
                    .priority(-5)
                    .obj(),
            ),
            t0,
        );
        assert_eq!(q.pending().active, 5);
        assert_eq!(
            pop_names(&mut q, t0),
            ["high", "low-1", "low-2", "low-0", "neg"]
        );
        assert_eq!(q.pending(), PendingCounts::default());
    }

    #[test]
    fn backoff_doubles_from_one_second_to_ten() {
        let q = queue();
        let got: Vec<u64> = (0..7).map(|a| q.backoff_duration(a).as_secs()).collect();
        assert_eq!(got, [0, 1, 2, 4, 8, 10, 10]);
        assert_eq!(q.backoff_duration(u32::MAX), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_backs_off_then_returns_to_active() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "p".into(),
            PodInfo::from(make_pod().name("p").namespace("default").priority(0).obj()),
            t0,
        );
        assert_eq!(q.pop(t0).map(|p| p.attempts), Some(1));
        assert_eq!(q.place("p"), Some(Place::InFlight));
        q.requeue("p", vec![], true, t0);
        assert_eq!(q.place("p"), Some(Place::Backoff));
        assert_eq!(q.next_wakeup(), Some(t0 + Duration::from_secs(1)));
        q.flush(t0 + Duration::from_millis(999));
        assert_eq!(q.place("p"), Some(Place::Backoff));
        q.flush(t0 + Duration::from_secs(1));
        assert_eq!(q.place("p"), Some(Place::Active));
        // Second failure: two seconds.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(q.pop(t1).map(|p| p.attempts), Some(2));
        q.requeue("p", vec![], true, t1);
        assert_eq!(q.next_wakeup(), Some(t1 + Duration::from_secs(2)));
    }

    #[tokio::test(start_paused = true)]
    async fn unschedulable_pods_move_only_on_a_helpful_event() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "a".into(),
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj()),
            t0,
        );
        q.add(
            "b".into(),
            PodInfo::from(make_pod().name("b").namespace("default").priority(0).obj()),
            t0,
        );
        q.pop(t0);
        q.pop(t0);
        q.requeue("a", vec!["TaintToleration"], false, t0);
        q.requeue("b", vec!["NodeAffinity"], false, t0);
        assert_eq!(q.pending().unschedulable, 2);
        // Unschedulable pods do not come back by themselves within 5 minutes.
        q.flush(t0 + Duration::from_secs(60));
        assert_eq!(q.pending().unschedulable, 2);

        let moved = q.move_on_event(t0 + Duration::from_secs(5), |p| {
            p.unschedulable_plugins.contains(&"TaintToleration")
        });
        assert_eq!(moved, 1);
        assert_eq!(q.place("a"), Some(Place::Active), "backoff (1 s) is over");
        assert_eq!(q.place("b"), Some(Place::Unschedulable));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pod_moved_while_backing_off_waits_in_backoff() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "a".into(),
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj()),
            t0,
        );
        q.pop(t0);
        q.requeue("a", vec!["TaintToleration"], false, t0);
        q.move_on_event(t0 + Duration::from_millis(300), |_| true);
        assert_eq!(q.place("a"), Some(Place::Backoff));
        q.flush(t0 + Duration::from_secs(1));
        assert_eq!(q.place("a"), Some(Place::Active));
    }

    #[tokio::test(start_paused = true)]
    async fn unschedulable_pods_are_retried_after_five_minutes() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "a".into(),
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj()),
            t0,
        );
        q.pop(t0);
        q.requeue("a", vec!["NodeAffinity"], false, t0);
        assert_eq!(q.next_wakeup(), Some(t0 + Duration::from_secs(300)));
        q.flush(t0 + Duration::from_secs(300));
        assert_eq!(q.place("a"), Some(Place::Unschedulable));
        q.flush(t0 + Duration::from_secs(301));
        assert_eq!(q.place("a"), Some(Place::Active));
    }

    #[tokio::test(start_paused = true)]
    async fn a_spec_change_retries_an_unschedulable_pod_but_a_status_change_does_not() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "a".into(),
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj()),
            t0,
        );
        q.pop(t0);
        q.requeue("a", vec!["TaintToleration"], false, t0);
        let later = t0 + Duration::from_secs(20);
        let mut same_spec =
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj())
                .pod()
                .clone();
        same_spec.status = Some(Default::default());
        q.update("a", PodInfo::from(same_spec), later);
        assert_eq!(q.place("a"), Some(Place::Unschedulable));
        let mut new_spec =
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj())
                .pod()
                .clone();
        if let Some(s) = new_spec.spec.as_mut() {
            s.node_selector = Some([("zone".to_string(), "a".to_string())].into());
        }
        q.update("a", PodInfo::from(new_spec), later);
        assert_eq!(q.place("a"), Some(Place::Active));
    }

    #[tokio::test(start_paused = true)]
    async fn gated_pods_wait_until_their_gates_are_removed() {
        let mut q = queue();
        let t0 = Instant::now();
        let mut gated = PodInfo::from(make_pod().name("g").namespace("default").priority(0).obj())
            .pod()
            .clone();
        if let Some(s) = gated.spec.as_mut() {
            s.scheduling_gates = Some(vec![PodSchedulingGate {
                name: "example.com/wait".into(),
            }]);
        }
        q.add("g".into(), PodInfo::from(gated), t0);
        assert_eq!(q.pending().gated, 1);
        assert!(q.pop(t0).is_none());
        q.update(
            "g",
            PodInfo::from(make_pod().name("g").namespace("default").priority(0).obj()),
            t0,
        );
        assert_eq!(q.pending().active, 1);
        assert_eq!(q.pop(t0).map(|p| p.key), Some("g".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn deleted_and_done_pods_leave_no_trace() {
        let mut q = queue();
        let t0 = Instant::now();
        q.add(
            "a".into(),
            PodInfo::from(make_pod().name("a").namespace("default").priority(0).obj()),
            t0,
        );
        q.add(
            "b".into(),
            PodInfo::from(make_pod().name("b").namespace("default").priority(0).obj()),
            t0,
        );
        q.delete("a");
        assert_eq!(pop_names(&mut q, t0), ["b"]);
        q.done("b");
        assert!(q.is_empty());
        assert_eq!(q.pending(), PendingCounts::default());
    }
}
