//! client-go's work queue (`k8s.io/client-go/util/workqueue`), in two
//! layers:
//!
//! - [`QueueState`]: the queue as plain data, with time passed in (the
//!   caller's Clock): an item waits once however often it is added; an
//!   item handed out is not handed out again until it is done (added
//!   meanwhile, it comes back after); an item added for later waits until
//!   then (the earlier time wins, as the delaying queue's); a failed item
//!   comes back after its own exponential backoff, 5 ms doubling to
//!   1,000 s (the per-item part of `DefaultTypedControllerRateLimiter`),
//!   until it is forgotten. The garbage collector's `attemptToDelete` and
//!   `attemptToOrphan` queues and the pod GC's node quarantine are each
//!   one of these, driven by their controller's own loop.
//! - [`WorkQueue`]: a [`QueueState`] of object keys shared by a
//!   controller's workers (the workload controllers'): [`WorkQueue::get`]
//!   waits for a key on the [`Clock`] (virtual in tests);
//!   [`WorkQueue::add_rate_limited`] is upstream's
//!   `DefaultControllerRateLimiter`: the larger of the per-key backoff and
//!   an overall token bucket (10 per second, burst 100); its metrics carry
//!   upstream's `workqueue_*` names, labelled with the queue's name.
//!   [`Workers`] call [`WorkQueue::get`], sync the key, then `done` (and
//!   `forget` on success or `add_rate_limited` on failure), as upstream's
//!   `processNextWorkItem` does.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use berth_core::clock::Clock;
use berth_core::object_key::ObjectKey;
use jiff::{SignedDuration, Timestamp};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::QueueMetrics;
use crate::sync_error::SyncError;

/// The first retry's delay.
const BASE_DELAY: Duration = Duration::from_millis(5);
/// The longest delay between retries.
const MAX_DELAY: Duration = Duration::from_secs(1000);
/// The overall bucket's rate (per second) and burst.
const BUCKET_QPS: f64 = 10.0;
const BUCKET_BURST: f64 = 100.0;

/// What [`QueueState::add`] did with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// It was waiting already.
    AlreadyWaiting,
    /// It is handed out: it comes back once done.
    AfterDone,
    /// It is ready to be handed out.
    Ready,
}

/// A work queue as plain data (see the module documentation).
#[derive(Debug)]
pub struct QueueState<T> {
    /// Ready, in the order added.
    queue: VecDeque<T>,
    /// Ready or to be made ready once done.
    dirty: HashSet<T>,
    /// Handed out and not done.
    processing: HashSet<T>,
    /// Added for later: when each is due, in time order.
    waiting: BTreeMap<(Timestamp, u64), T>,
    due: HashMap<T, (Timestamp, u64)>,
    next_seq: u64,
    /// Failures since the item was last forgotten.
    failures: HashMap<T, u32>,
}

impl<T> Default for QueueState<T> {
    fn default() -> Self {
        QueueState {
            queue: VecDeque::new(),
            dirty: HashSet::new(),
            processing: HashSet::new(),
            waiting: BTreeMap::new(),
            due: HashMap::new(),
            next_seq: 0,
            failures: HashMap::new(),
        }
    }
}

impl<T: Clone + Eq + Hash> QueueState<T> {
    /// Makes `item` ready (once, however often added).
    pub fn add(&mut self, item: T) -> Added {
        if !self.dirty.insert(item.clone()) {
            return Added::AlreadyWaiting;
        }
        if self.processing.contains(&item) {
            return Added::AfterDone;
        }
        self.queue.push_back(item);
        Added::Ready
    }

    /// Makes `item` ready at `at` (or at an earlier time it already waits
    /// for).
    pub fn add_after(&mut self, item: T, at: Timestamp) {
        if let Some(&(when, seq)) = self.due.get(&item) {
            if when <= at {
                return;
            }
            self.waiting.remove(&(when, seq));
        }
        let key = (at, self.next_seq);
        self.next_seq += 1;
        self.waiting.insert(key, item.clone());
        self.due.insert(item, key);
    }

    /// Counts a failure of `item`; its backoff, which doubles with each
    /// failure until [`QueueState::forget`].
    pub fn backoff(&mut self, item: &T) -> Duration {
        let failures = self.failures.entry(item.clone()).or_insert(0);
        let delay = backoff(*failures);
        *failures = failures.saturating_add(1);
        delay
    }

    /// Makes a failed `item` ready after its [`QueueState::backoff`].
    pub fn add_rate_limited(&mut self, item: T, now: Timestamp) {
        let delay = self.backoff(&item);
        self.add_after(item, after(now, delay));
    }

    /// The item succeeded: its next failure starts the backoff afresh.
    pub fn forget(&mut self, item: &T) {
        self.failures.remove(item);
    }

    /// How often `item` has failed since it was last forgotten (upstream's
    /// `NumRequeues`).
    pub fn failures(&self, item: &T) -> u32 {
        self.failures.get(item).copied().unwrap_or(0)
    }

    /// Takes one item whose time has come at `now` off the waiting list.
    pub fn take_due(&mut self, now: Timestamp) -> Option<T> {
        let entry = self.waiting.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let item = entry.remove();
        self.due.remove(&item);
        Some(item)
    }

    /// Makes ready what is due at `now`.
    pub fn promote_due(&mut self, now: Timestamp) {
        while let Some(item) = self.take_due(now) {
            self.add(item);
        }
    }

    /// When the earliest item added for later is due.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.waiting.keys().next().map(|(at, _)| *at)
    }

    /// The next ready item, handed out until [`QueueState::done`].
    pub fn get(&mut self) -> Option<T> {
        let item = self.queue.pop_front()?;
        self.dirty.remove(&item);
        self.processing.insert(item.clone());
        Some(item)
    }

    /// The handed-out `item` is done; added meanwhile, it is ready again
    /// (then true).
    pub fn done(&mut self, item: &T) -> bool {
        self.processing.remove(item);
        if self.dirty.contains(item) {
            self.queue.push_back(item.clone());
            return true;
        }
        false
    }

    /// Items ready to be handed out (upstream's `Len`).
    pub fn ready(&self) -> usize {
        self.queue.len()
    }

    /// Hands out and finishes every ready item, in order (for tests).
    #[cfg(test)]
    pub fn drain(&mut self) -> Vec<T> {
        let mut got = Vec::new();
        while let Some(item) = self.get() {
            self.done(&item);
            got.push(item);
        }
        got
    }

    /// Whether `item` is ready, waiting or handed out.
    pub fn contains(&self, item: &T) -> bool {
        self.dirty.contains(item) || self.due.contains_key(item) || self.processing.contains(item)
    }
}

/// `ItemExponentialFailureRateLimiter`: 5 ms × 2^failures, at most 1,000 s.
fn backoff(failures: u32) -> Duration {
    let factor = 2u32.checked_pow(failures).unwrap_or(u32::MAX);
    BASE_DELAY
        .checked_mul(factor)
        .unwrap_or(MAX_DELAY)
        .min(MAX_DELAY)
}

/// `now + delay`, saturating.
fn after(now: Timestamp, delay: Duration) -> Timestamp {
    let delay = SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
    now.checked_add(delay).unwrap_or(Timestamp::MAX)
}

/// What an event handler asks of a work queue: a key synced now, or
/// after a while (upstream's `Add` and `AddAfter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    Now(ObjectKey),
    After(ObjectKey, Duration),
}

/// A controller's work queue of object keys, shared by its workers (see
/// the module documentation).
pub struct WorkQueue {
    clock: Clock,
    state: Mutex<State>,
    wake: Notify,
    metrics: QueueMetrics,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    keys: QueueState<ObjectKey>,
    /// When each ready key was added (for `workqueue_queue_duration`).
    queued_at: HashMap<ObjectKey, Instant>,
    /// When a worker took each key it has (for `workqueue_work_duration`).
    started_at: HashMap<ObjectKey, Instant>,
    bucket: TokenBucket,
}

/// golang.org/x/time/rate's limiter, reservations only.
struct TokenBucket {
    tokens: f64,
    last: Option<Timestamp>,
}

impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket {
            tokens: BUCKET_BURST,
            last: None,
        }
    }
}

impl TokenBucket {
    /// Takes a token at `now`; how long until it is really there.
    fn reserve(&mut self, now: Timestamp) -> Duration {
        let elapsed = self
            .last
            .map_or(0.0, |last| now.duration_since(last).as_secs_f64().max(0.0));
        self.last = Some(now);
        self.tokens = (self.tokens + elapsed * BUCKET_QPS).min(BUCKET_BURST) - 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / BUCKET_QPS)
        }
    }
}

impl State {
    /// `Add`'s bookkeeping; whether a worker should be woken.
    fn add(&mut self, key: ObjectKey, now: Instant, metrics: &QueueMetrics) -> bool {
        match self.keys.add(key.clone()) {
            Added::AlreadyWaiting => false,
            Added::AfterDone => {
                metrics.adds.inc();
                false
            }
            Added::Ready => {
                metrics.adds.inc();
                self.queued_at.insert(key, now);
                metrics.depth.set(self.keys.ready() as i64);
                true
            }
        }
    }
}

impl WorkQueue {
    pub fn new(clock: Clock, metrics: QueueMetrics) -> WorkQueue {
        WorkQueue {
            clock,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            metrics,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        crate::shared::lock(&self.state)
    }

    /// Queues `key` unless it already waits.
    pub fn add(&self, key: ObjectKey) {
        let woken = self.state().add(key, self.clock.instant(), &self.metrics);
        if woken {
            self.wake.notify_one();
        }
    }

    /// Queues `key` after `delay` (at once when zero); an earlier pending
    /// delay of the same key wins.
    pub fn add_after(&self, key: ObjectKey, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let due = after(self.clock.now(), delay);
        self.state().keys.add_after(key, due);
        // A worker asleep until a later due time must look again.
        self.wake.notify_one();
    }

    /// Does what handlers asked.
    pub fn wake(&self, wakes: impl IntoIterator<Item = Wake>) {
        for wake in wakes {
            match wake {
                Wake::Now(key) => self.add(key),
                Wake::After(key, delay) => self.add_after(key, delay),
            }
        }
    }

    /// Queues `key` after its rate limiter's delay, and counts a retry.
    pub fn add_rate_limited(&self, key: ObjectKey) {
        let delay = {
            let mut state = self.state();
            let backoff = state.keys.backoff(&key);
            backoff.max(state.bucket.reserve(self.clock.now()))
        };
        self.metrics.retries.inc();
        self.add_after(key, delay);
    }

    /// Clears `key`'s failures (its sync succeeded).
    pub fn forget(&self, key: &ObjectKey) {
        self.state().keys.forget(key);
    }

    /// How often `key` has failed since it was last forgotten.
    pub fn num_requeues(&self, key: &ObjectKey) -> u32 {
        self.state().keys.failures(key)
    }

    /// Waits for the next key to process; the caller owns it until
    /// [`WorkQueue::done`].
    pub async fn get(&self) -> ObjectKey {
        loop {
            let notified = self.wake.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let next_due = {
                let mut state = self.state();
                let instant = self.clock.instant();
                let now = self.clock.now();
                while let Some(key) = state.keys.take_due(now) {
                    state.add(key, instant, &self.metrics);
                }
                if let Some(key) = state.keys.get() {
                    if let Some(queued) = state.queued_at.remove(&key) {
                        self.metrics
                            .queue_duration
                            .observe((instant - queued).as_secs_f64());
                    }
                    state.started_at.insert(key.clone(), instant);
                    self.metrics.depth.set(state.keys.ready() as i64);
                    let more = state.keys.ready() > 0;
                    drop(state);
                    if more {
                        self.wake.notify_one();
                    }
                    return key;
                }
                state.keys.next_due()
            };
            match next_due {
                Some(due) => {
                    tokio::select! {
                        () = notified => {}
                        () = self.clock.sleep_until(due) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// The worker is finished with `key`; if it was added meanwhile, it
    /// is queued again.
    pub fn done(&self, key: &ObjectKey) {
        let mut state = self.state();
        let instant = self.clock.instant();
        if let Some(started) = state.started_at.remove(key) {
            self.metrics
                .work_duration
                .observe((instant - started).as_secs_f64());
        }
        if state.keys.done(key) {
            state.queued_at.insert(key.clone(), instant);
            self.metrics.depth.set(state.keys.ready() as i64);
            drop(state);
            self.wake.notify_one();
        }
    }

    /// Keys ready for a worker now (upstream's `Len`).
    pub fn len(&self) -> usize {
        self.state().keys.ready()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A controller's workers (upstream's `--concurrent-*-syncs`): started
/// once its caches have synced (upstream's `WaitForCacheSync`), stopped
/// when dropped. Each takes keys from the queue and syncs them, as
/// upstream's `processNextWorkItem`: a success forgets the key's
/// failures, a failure queues it again with its backoff, and after
/// `max_retries` failures in a row (when set) the key is dropped until
/// something else adds it.
pub struct Workers<C> {
    pub controller: &'static str,
    pub count: usize,
    pub max_retries: Option<u32>,
    pub context: std::sync::Arc<C>,
    pub queue: std::sync::Arc<WorkQueue>,
    tasks: tokio::task::JoinSet<()>,
}

impl<C: Send + Sync + 'static> Workers<C> {
    pub fn new(
        controller: &'static str,
        count: usize,
        max_retries: Option<u32>,
        context: std::sync::Arc<C>,
        queue: std::sync::Arc<WorkQueue>,
    ) -> Workers<C> {
        tracing::info!(controller, "Starting controller");
        Workers {
            controller,
            count,
            max_retries,
            context,
            queue,
            tasks: tokio::task::JoinSet::new(),
        }
    }

    /// Starts the workers, each running `sync(context, key)`, the first
    /// time `synced` holds.
    pub fn start_when<Fut>(&mut self, synced: bool, sync: fn(std::sync::Arc<C>, ObjectKey) -> Fut)
    where
        Fut: std::future::Future<Output = Result<(), SyncError>> + Send + 'static,
    {
        if !synced || !self.tasks.is_empty() {
            return;
        }
        tracing::info!(controller = self.controller, "Caches are synced");
        let context = self.context.clone();
        self.tasks.spawn(run_workers(
            self.controller,
            self.queue.clone(),
            self.count,
            self.max_retries,
            move |key| sync(context.clone(), key),
        ));
    }
}

/// Runs `workers` tasks that take keys from `queue` and `sync` them, as
/// upstream's `processNextWorkItem` (see [`Workers`]). Runs until
/// dropped.
pub async fn run_workers<F, Fut>(
    controller: &'static str,
    queue: std::sync::Arc<WorkQueue>,
    workers: usize,
    max_retries: Option<u32>,
    sync: F,
) where
    F: Fn(ObjectKey) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), SyncError>> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let sync = sync.clone();
        tasks.spawn(async move {
            loop {
                let key = queue.get().await;
                let started = tokio::time::Instant::now();
                let result = sync(key.clone()).await;
                queue.done(&key);
                tracing::debug!(controller, key = %key, duration = ?started.elapsed(), "Finished syncing");
                match result {
                    Ok(()) => queue.forget(&key),
                    Err(err) if max_retries.is_some_and(|max| queue.num_requeues(&key) >= max) => {
                        tracing::warn!(controller, key = %key, %err, "sync failed too often, dropping the key");
                        queue.forget(&key);
                    }
                    Err(err) => {
                        tracing::info!(controller, key = %key, %err, "sync failed, retrying");
                        queue.add_rate_limited(key);
                    }
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ControllerMetrics;

    fn at(ms: i64) -> Timestamp {
        Timestamp::UNIX_EPOCH + SignedDuration::from_millis(ms)
    }

    #[test]
    fn an_item_waits_once_in_the_order_first_added() {
        let mut q = QueueState::default();
        for item in ["a", "b", "a", "c", "b"] {
            q.add(item);
        }
        assert_eq!(q.drain(), vec!["a", "b", "c"]);
    }

    #[test]
    fn an_item_added_while_handed_out_comes_back_once_done() {
        let mut q = QueueState::default();
        q.add("a");
        let item = q.get();
        assert_eq!(item, Some("a"));
        q.add("a");
        assert_eq!(q.get(), None, "not handed out twice at once");
        q.done(&"a");
        assert_eq!(q.drain(), vec!["a"]);
        assert!(!q.contains(&"a"));
    }

    #[test]
    fn items_added_for_later_come_when_due_and_the_earlier_time_wins() {
        let mut q = QueueState::default();
        q.add_after("a", at(100));
        q.add_after("b", at(50));
        q.add_after("a", at(200));
        q.add_after("b", at(20));
        assert_eq!(q.next_due(), Some(at(20)));
        q.promote_due(at(30));
        assert_eq!(q.drain(), vec!["b"]);
        q.promote_due(at(99));
        assert!(q.drain().is_empty());
        q.promote_due(at(100));
        assert_eq!(q.drain(), vec!["a"]);
        assert_eq!(q.next_due(), None);
    }

    #[test]
    fn failures_back_off_exponentially_until_forgotten() {
        let mut q = QueueState::default();
        let mut delays = Vec::new();
        for _ in 0..4 {
            q.add_rate_limited("a", at(0));
            delays.push(q.next_due().map(|t| t.duration_since(at(0)).as_millis()));
            q.promote_due(at(1_000_000_000));
            q.drain();
        }
        assert_eq!(delays, vec![Some(5), Some(10), Some(20), Some(40)]);
        q.forget(&"a");
        q.add_rate_limited("a", at(0));
        assert_eq!(q.next_due(), Some(at(5)));
        assert_eq!(backoff(40), MAX_DELAY);
    }

    fn queue() -> (WorkQueue, Clock) {
        let clock = Clock::virtual_from(Timestamp::UNIX_EPOCH);
        let metrics = ControllerMetrics::default().queue("test");
        (WorkQueue::new(clock.clone(), metrics), clock)
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    /// Upstream `TestBasic`/`TestAddWhileProcessing`: a key waits once,
    /// and a key added while processed comes back after `done`.
    #[tokio::test(start_paused = true)]
    async fn keys_are_deduplicated_and_never_processed_twice_at_once() {
        let (q, _) = queue();
        q.add(key("a"));
        q.add(key("b"));
        q.add(key("a"));
        assert_eq!(q.len(), 2);
        let first = q.get().await;
        assert_eq!(first, key("a"));
        q.add(key("a"));
        assert_eq!(q.len(), 1, "a waits for its worker, not in the queue");
        assert_eq!(q.get().await, key("b"));
        q.done(&key("b"));
        assert!(q.is_empty());
        q.done(&key("a"));
        assert_eq!(q.len(), 1, "a is back once its worker is done");
        assert_eq!(q.get().await, key("a"));
    }

    /// Upstream `TestSimpleQueue` (delaying queue): nothing before its
    /// time; the earliest of two delays wins.
    #[tokio::test(start_paused = true)]
    async fn delayed_keys_come_at_their_time() {
        let (q, clock) = queue();
        let start = clock.now();
        q.add_after(key("a"), Duration::from_secs(50));
        q.add_after(key("a"), Duration::from_secs(10));
        q.add_after(key("a"), Duration::from_secs(30));
        assert!(q.is_empty());
        assert_eq!(q.get().await, key("a"));
        assert_eq!(
            clock.now().duration_since(start),
            SignedDuration::from_secs(10)
        );
        q.done(&key("a"));
        // The superseded delays are gone.
        let waited = tokio::time::timeout(Duration::from_secs(3600), q.get()).await;
        assert!(waited.is_err(), "no second a: {waited:?}");
    }

    /// A key added with a delay while a worker sleeps until a later one
    /// still comes on time.
    #[tokio::test(start_paused = true)]
    async fn a_sleeping_worker_sees_an_earlier_delay() {
        let (q, clock) = queue();
        let q = std::sync::Arc::new(q);
        let start = clock.now();
        q.add_after(key("late"), Duration::from_secs(100));
        let worker = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        q.add_after(key("early"), Duration::from_secs(5));
        let got = worker.await.unwrap_or_default();
        assert_eq!(got, key("early"));
        assert_eq!(
            clock.now().duration_since(start),
            SignedDuration::from_secs(6)
        );
    }

    /// `DefaultControllerRateLimiter`: 5 ms doubling per failure, reset
    /// by `forget`.
    #[tokio::test(start_paused = true)]
    async fn a_shared_queue_backs_off_failures_until_forgotten() {
        let (q, clock) = queue();
        let mut waits = Vec::new();
        for _ in 0..4 {
            let start = clock.now();
            q.add_rate_limited(key("a"));
            let got = q.get().await;
            q.done(&got);
            waits.push(clock.now().duration_since(start).as_millis());
        }
        assert_eq!(waits, vec![5, 10, 20, 40]);
        assert_eq!(q.num_requeues(&key("a")), 4);
        q.forget(&key("a"));
        assert_eq!(q.num_requeues(&key("a")), 0);
    }

    /// The overall bucket: after a burst of 100 retries, one per 100 ms.
    #[test]
    fn the_bucket_limits_retries_overall() {
        let mut bucket = TokenBucket::default();
        let now = Timestamp::UNIX_EPOCH;
        for _ in 0..100 {
            assert_eq!(bucket.reserve(now), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(now), Duration::from_millis(100));
        assert_eq!(bucket.reserve(now), Duration::from_millis(200));
    }
}
