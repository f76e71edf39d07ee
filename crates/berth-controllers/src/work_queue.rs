//! The work queue of the workload controllers: client-go's rate-limiting
//! work queue (`k8s.io/client-go/util/workqueue`) for object keys.
//!
//! - A key added while it waits is not added twice; a key added while a
//!   worker processes it waits until that worker is [`WorkQueue::done`],
//!   so no key is ever processed by two workers at once.
//! - [`WorkQueue::add_after`] waits on the [`Clock`] (virtual in tests);
//!   of several delays for one key the earliest counts.
//! - [`WorkQueue::add_rate_limited`] is upstream's
//!   `DefaultControllerRateLimiter`: the larger of a per-key exponential
//!   backoff (5 ms doubling to 1,000 s, reset by [`WorkQueue::forget`])
//!   and an overall token bucket (10 per second, burst 100).
//! - The queue's metrics carry upstream's `workqueue_*` names, labelled
//!   with the queue's name.
//!
//! Workers call [`WorkQueue::get`], sync the key, then `done` (and
//! `forget` on success or `add_rate_limited` on failure), as upstream's
//! `processNextWorkItem` does.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use berth_core::clock::Clock;
use berth_core::object_key::ObjectKey;
use jiff::{SignedDuration, Timestamp};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::QueueMetrics;
use crate::sync_error::SyncError;

/// `ItemExponentialFailureRateLimiter`'s base delay...
const BACKOFF_BASE: Duration = Duration::from_millis(5);
/// ...and its cap.
const BACKOFF_MAX: Duration = Duration::from_secs(1000);
/// The overall bucket's rate (per second) and burst.
const BUCKET_QPS: f64 = 10.0;
const BUCKET_BURST: f64 = 100.0;

/// What an event handler asks of a work queue: a key synced now, or
/// after a while (upstream's `Add` and `AddAfter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    Now(ObjectKey),
    After(ObjectKey, Duration),
}

/// See the module documentation.
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
    /// Keys ready for a worker, oldest first.
    ready: VecDeque<ObjectKey>,
    /// Keys waiting to be processed: in `ready`, or added again while a
    /// worker has them.
    dirty: HashSet<ObjectKey>,
    /// Keys a worker has, with when it took them.
    processing: HashMap<ObjectKey, Instant>,
    /// When each key in `ready` was added.
    queued_at: HashMap<ObjectKey, Instant>,
    /// Keys waiting for a time, by (due, sequence).
    delayed: BTreeMap<(Timestamp, u64), ObjectKey>,
    /// Each delayed key's entry in `delayed`.
    delayed_entry: HashMap<ObjectKey, (Timestamp, u64)>,
    sequence: u64,
    /// Failures per key since it was last forgotten.
    failures: HashMap<ObjectKey, u32>,
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
        if !self.dirty.insert(key.clone()) {
            return false;
        }
        metrics.adds.inc();
        if self.processing.contains_key(&key) {
            return false;
        }
        self.queued_at.insert(key.clone(), now);
        self.ready.push_back(key);
        metrics.depth.set(self.ready.len() as i64);
        true
    }

    /// Moves the keys whose time has come to `ready`.
    fn promote_due(&mut self, now: Timestamp, instant: Instant, metrics: &QueueMetrics) {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            self.delayed_entry.remove(&key);
            self.add(key, instant, metrics);
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
        let due = self
            .clock
            .now()
            .checked_add(SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX))
            .unwrap_or(Timestamp::MAX);
        let mut state = self.state();
        if let Some(&(current, sequence)) = state.delayed_entry.get(&key) {
            if current <= due {
                return;
            }
            state.delayed.remove(&(current, sequence));
        }
        state.sequence += 1;
        let entry = (due, state.sequence);
        state.delayed.insert(entry, key.clone());
        state.delayed_entry.insert(key, entry);
        drop(state);
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
            let failures = state.failures.entry(key.clone()).or_insert(0);
            let exponent = (*failures).min(63);
            *failures = failures.saturating_add(1);
            let backoff = BACKOFF_BASE
                .checked_mul(2u32.saturating_pow(exponent.min(31)))
                .unwrap_or(BACKOFF_MAX)
                .min(BACKOFF_MAX);
            backoff.max(state.bucket.reserve(self.clock.now()))
        };
        self.metrics.retries.inc();
        self.add_after(key, delay);
    }

    /// Clears `key`'s failures (its sync succeeded).
    pub fn forget(&self, key: &ObjectKey) {
        self.state().failures.remove(key);
    }

    /// How often `key` has failed since it was last forgotten.
    pub fn num_requeues(&self, key: &ObjectKey) -> u32 {
        self.state().failures.get(key).copied().unwrap_or(0)
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
                state.promote_due(self.clock.now(), instant, &self.metrics);
                if let Some(key) = state.ready.pop_front() {
                    state.dirty.remove(&key);
                    if let Some(queued) = state.queued_at.remove(&key) {
                        self.metrics
                            .queue_duration
                            .observe((instant - queued).as_secs_f64());
                    }
                    state.processing.insert(key.clone(), instant);
                    self.metrics.depth.set(state.ready.len() as i64);
                    let more = !state.ready.is_empty();
                    drop(state);
                    if more {
                        self.wake.notify_one();
                    }
                    return key;
                }
                state.delayed.keys().next().map(|(due, _)| *due)
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
        if let Some(started) = state.processing.remove(key) {
            self.metrics
                .work_duration
                .observe((instant - started).as_secs_f64());
        }
        if state.dirty.contains(key) {
            state.queued_at.insert(key.clone(), instant);
            state.ready.push_back(key.clone());
            self.metrics.depth.set(state.ready.len() as i64);
            drop(state);
            self.wake.notify_one();
        }
    }

    /// Keys ready for a worker now (upstream's `Len`).
    pub fn len(&self) -> usize {
        self.state().ready.len()
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
    async fn failures_back_off_exponentially_until_forgotten() {
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
