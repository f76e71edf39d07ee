//! client-go's rate-limited work queue (`workqueue.NewNamedRateLimitingQueue`
//! with `DefaultControllerRateLimiter`), the queue of object keys a
//! workload controller's workers take their syncs from:
//!
//! - a key waits at most once, however often it is added;
//! - a key is handed to one worker at a time: added while a worker has it,
//!   it waits until that worker is [`WorkQueue::done`], so two syncs of one
//!   object never run together;
//! - [`WorkQueue::add_after`] adds a key later (a `minReadySeconds` check,
//!   a backoff), [`WorkQueue::add_rate_limited`] after the key's own
//!   exponential delay (5 ms doubling to 1,000 s, reset by
//!   [`WorkQueue::forget`]) for a sync that failed.
//!
//! Delays run on tokio's clock, so on a paused (virtual) clock they pass
//! in no real time. Upstream's overall token bucket (10 per second, burst
//! 100, on retries only) is left out: a controller's retries here are
//! bounded by the per-key delay alone.
//!
//! `workqueue_depth`, `workqueue_adds_total`, `workqueue_retries_total`,
//! `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds`
//! are kept with the queue's name as their `name` label, as upstream.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::Notify;
use tokio::time::Instant;

/// `ItemExponentialFailureRateLimiter`'s base delay.
const RETRY_BASE: Duration = Duration::from_millis(5);
/// ... and its cap.
const RETRY_MAX: Duration = Duration::from_secs(1000);

/// The `name` label of the queue metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    pub name: String,
}

type HistogramFamily = Family<QueueLabel, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    // Upstream's buckets: 10 ns to 1,000 s, by tens.
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// The work queues' metrics, shared by every queue (one series per name).
#[derive(Clone)]
pub struct QueueMetrics {
    pub depth: Family<QueueLabel, Gauge>,
    pub adds: Family<QueueLabel, Counter>,
    pub retries: Family<QueueLabel, Counter>,
    pub queue_duration: HistogramFamily,
    pub work_duration: HistogramFamily,
}

impl std::fmt::Debug for QueueMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueMetrics").finish_non_exhaustive()
    }
}

impl QueueMetrics {
    /// The metrics, registered in `registry` with upstream's names.
    pub fn register(registry: &mut Registry) -> QueueMetrics {
        let metrics = QueueMetrics {
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
        };
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            metrics.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            metrics.adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            metrics.retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            metrics.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            metrics.work_duration.clone(),
        );
        metrics
    }
}

#[derive(Default)]
struct State {
    /// Keys ready for a worker, in the order added.
    queue: VecDeque<String>,
    /// Keys waiting (in `queue`, or for their worker to finish), with the
    /// time they were first added.
    dirty: HashMap<String, Instant>,
    /// Keys a worker has, since when.
    processing: HashMap<String, Instant>,
    /// Keys added for later: at most one entry per key, the earliest.
    later: BTreeMap<(Instant, u64), String>,
    later_keys: HashMap<String, (Instant, u64)>,
    sequence: u64,
    /// Consecutive failures per key (`NumRequeues`).
    failures: HashMap<String, u32>,
}

/// See the module documentation.
pub struct WorkQueue {
    label: QueueLabel,
    state: Mutex<State>,
    notify: Notify,
    metrics: QueueMetrics,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.label.name)
            .finish_non_exhaustive()
    }
}

/// The delay after `failures` consecutive failures.
fn retry_delay(failures: u32) -> Duration {
    let factor = 2_u32.checked_pow(failures).unwrap_or(u32::MAX);
    RETRY_BASE.saturating_mul(factor).min(RETRY_MAX)
}

impl WorkQueue {
    pub fn new(name: &str, metrics: QueueMetrics) -> WorkQueue {
        WorkQueue {
            label: QueueLabel { name: name.into() },
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            metrics,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A worker that panicked holding the lock left the state whole
        // (every change is one statement), so keep going.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `Add`: the key is synced once a worker is free (and the key's last
    /// sync has finished).
    pub fn add(&self, key: &str) {
        let mut state = self.lock();
        self.add_locked(&mut state, key, Instant::now());
    }

    fn add_locked(&self, state: &mut State, key: &str, now: Instant) {
        if state.dirty.contains_key(key) {
            return;
        }
        self.metrics.adds.get_or_create(&self.label).inc();
        state.dirty.insert(key.to_string(), now);
        if state.processing.contains_key(key) {
            return;
        }
        state.queue.push_back(key.to_string());
        self.metrics.depth.get_or_create(&self.label).inc();
        self.notify.notify_waiters();
    }

    /// `AddAfter`: [`WorkQueue::add`] once `delay` has passed; an earlier
    /// wait for the same key wins.
    pub fn add_after(&self, key: &str, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        let mut state = self.lock();
        if let Some(&(existing, _)) = state.later_keys.get(key)
            && existing <= at
        {
            return;
        }
        if let Some(old) = state.later_keys.remove(key) {
            state.later.remove(&old);
        }
        state.sequence += 1;
        let slot = (at, state.sequence);
        state.later.insert(slot, key.to_string());
        state.later_keys.insert(key.to_string(), slot);
        drop(state);
        // A worker asleep until a later deadline must look again.
        self.notify.notify_waiters();
    }

    /// `AddRateLimited`: added after the key's failure delay, which
    /// doubles with each call until [`WorkQueue::forget`].
    pub fn add_rate_limited(&self, key: &str) {
        let delay = {
            let mut state = self.lock();
            let failures = state.failures.entry(key.to_string()).or_insert(0);
            let delay = retry_delay(*failures);
            *failures = failures.saturating_add(1);
            delay
        };
        self.metrics.retries.get_or_create(&self.label).inc();
        self.add_after(key, delay);
    }

    /// `Forget`: the key's sync succeeded; its failure delay starts over.
    pub fn forget(&self, key: &str) {
        self.lock().failures.remove(key);
    }

    /// `NumRequeues`.
    pub fn num_requeues(&self, key: &str) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Keys waiting for a worker now.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `Get`: the next key, once there is one; the caller must call
    /// [`WorkQueue::done`] with it when its sync ends.
    pub async fn get(&self) -> String {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let next_deadline = {
                let mut state = self.lock();
                let now = Instant::now();
                while let Some(entry) = state.later.first_entry() {
                    if entry.key().0 > now {
                        break;
                    }
                    let key = entry.remove();
                    state.later_keys.remove(&key);
                    self.add_locked(&mut state, &key, now);
                }
                if let Some(key) = state.queue.pop_front() {
                    self.metrics.depth.get_or_create(&self.label).dec();
                    if let Some(added) = state.dirty.remove(&key) {
                        self.metrics
                            .queue_duration
                            .get_or_create(&self.label)
                            .observe((now - added).as_secs_f64());
                    }
                    state.processing.insert(key.clone(), now);
                    return key;
                }
                state.later.first_key_value().map(|((at, _), _)| *at)
            };
            match next_deadline {
                Some(at) => {
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// `Done`: the key's sync ended; if it was added meanwhile, it waits
    /// for a worker again.
    pub fn done(&self, key: &str) {
        let mut state = self.lock();
        if let Some(started) = state.processing.remove(key) {
            self.metrics
                .work_duration
                .get_or_create(&self.label)
                .observe(started.elapsed().as_secs_f64());
        }
        if state.dirty.contains_key(key) {
            state.queue.push_back(key.to_string());
            self.metrics.depth.get_or_create(&self.label).inc();
            drop(state);
            self.notify.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> WorkQueue {
        WorkQueue::new("test", QueueMetrics::register(&mut Registry::default()))
    }

    /// Upstream `TestBasic`/`TestAddWhileProcessing`: a key waits once,
    /// and a key added while a worker has it comes back after `done`.
    #[tokio::test(start_paused = true)]
    async fn a_key_waits_once_and_never_runs_twice_at_once() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2, "a is queued once");
        let first = q.get().await;
        assert_eq!(first, "a");
        q.add("a");
        assert_eq!(q.len(), 1, "a waits for its worker, not in the queue");
        assert_eq!(q.get().await, "b");
        q.done("b");
        q.done("a");
        assert_eq!(q.get().await, "a", "added while processing: back after done");
        q.done("a");
        assert!(q.is_empty());
    }

    /// `AddAfter`: the key comes when its delay has passed, on the
    /// (paused) clock; an earlier wait for the same key wins.
    #[tokio::test(start_paused = true)]
    async fn add_after_waits_on_the_clock() {
        let q = queue();
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(3));
        q.add_after("a", Duration::from_secs(20));
        assert!(q.is_empty());
        assert_eq!(q.get().await, "a");
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        q.done("a");
        let waiting = tokio::time::timeout(Duration::from_secs(60), q.get()).await;
        assert!(waiting.is_err(), "the later waits were folded into one");
    }

    /// `ItemExponentialFailureRateLimiter`: 5 ms, 10 ms, 20 ms, ... capped
    /// at 1,000 s; `Forget` starts over.
    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_until_forgotten() {
        struct Case {
            failures: u32,
            want: Duration,
        }
        for case in [
            Case {
                failures: 0,
                want: Duration::from_millis(5),
            },
            Case {
                failures: 1,
                want: Duration::from_millis(10),
            },
            Case {
                failures: 5,
                want: Duration::from_millis(160),
            },
            Case {
                failures: 40,
                want: RETRY_MAX,
            },
        ] {
            assert_eq!(retry_delay(case.failures), case.want, "{}", case.failures);
        }
        let q = queue();
        for want_ms in [5, 10, 20] {
            let start = Instant::now();
            q.add_rate_limited("a");
            assert_eq!(q.get().await, "a");
            q.done("a");
            assert_eq!(start.elapsed(), Duration::from_millis(want_ms));
        }
        assert_eq!(q.num_requeues("a"), 3);
        q.forget("a");
        assert_eq!(q.num_requeues("a"), 0);
    }

    /// Several workers wait; each add wakes one that takes it.
    #[tokio::test(start_paused = true)]
    async fn waiting_workers_are_woken_by_adds() {
        let q = std::sync::Arc::new(queue());
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..3 {
            let q = q.clone();
            workers.spawn(async move {
                let key = q.get().await;
                q.done(&key);
                key
            });
        }
        tokio::task::yield_now().await;
        for key in ["x", "y", "z"] {
            q.add(key);
        }
        let mut got = Vec::new();
        while let Some(key) = workers.join_next().await {
            got.push(key.unwrap_or_default());
        }
        got.sort();
        assert_eq!(got, ["x", "y", "z"]);
    }
}
