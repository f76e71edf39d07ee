//! client-go's work queue (`workqueue.TypedRateLimitingInterface`) as
//! plain data, with time passed in (the caller's Clock): an item waits once
//! however often it is added; an item handed out is not handed out again
//! until it is done (added meanwhile, it comes back after); an item added
//! for later waits until then (the earlier time wins, as the delaying
//! queue's); a failed item comes back after its own exponential backoff,
//! 5 ms doubling to 1,000 s (the per-item part of
//! `DefaultTypedControllerRateLimiter`), until it is forgotten.
//!
//! The garbage collector's `attemptToDelete` and `attemptToOrphan` queues
//! and the pod GC's node quarantine are each one of these.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// The first retry's delay.
const BASE_DELAY: Duration = Duration::from_millis(5);
/// The longest delay between retries.
const MAX_DELAY: Duration = Duration::from_secs(1000);

/// See the module documentation.
#[derive(Debug)]
pub struct WorkQueue<T> {
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

impl<T> Default for WorkQueue<T> {
    fn default() -> Self {
        WorkQueue {
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

impl<T: Clone + Eq + Hash> WorkQueue<T> {
    /// Makes `item` ready (once, however often added).
    pub fn add(&mut self, item: T) {
        if !self.dirty.insert(item.clone()) {
            return;
        }
        if !self.processing.contains(&item) {
            self.queue.push_back(item);
        }
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

    /// Makes a failed `item` ready after its backoff, which doubles with
    /// each failure until [`WorkQueue::forget`].
    pub fn add_rate_limited(&mut self, item: T, now: Timestamp) {
        let failures = self.failures.entry(item.clone()).or_insert(0);
        let delay = backoff(*failures);
        *failures = failures.saturating_add(1);
        let delay = SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
        self.add_after(item, now.saturating_add(delay).unwrap_or(Timestamp::MAX));
    }

    /// The item succeeded: its next failure starts the backoff afresh.
    pub fn forget(&mut self, item: &T) {
        self.failures.remove(item);
    }

    /// Makes ready what is due at `now`.
    pub fn promote_due(&mut self, now: Timestamp) {
        while let Some(entry) = self.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            self.due.remove(&item);
            self.add(item);
        }
    }

    /// When the earliest item added for later is due.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.waiting.keys().next().map(|(at, _)| *at)
    }

    /// The next ready item, handed out until [`WorkQueue::done`].
    pub fn get(&mut self) -> Option<T> {
        let item = self.queue.pop_front()?;
        self.dirty.remove(&item);
        self.processing.insert(item.clone());
        Some(item)
    }

    /// The handed-out `item` is done; added meanwhile, it is ready again.
    pub fn done(&mut self, item: &T) {
        self.processing.remove(item);
        if self.dirty.contains(item) {
            self.queue.push_back(item.clone());
        }
    }

    /// Items ready to be handed out.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::UNIX_EPOCH + SignedDuration::from_millis(ms)
    }

    #[test]
    fn an_item_waits_once_in_the_order_first_added() {
        let mut q = WorkQueue::default();
        for item in ["a", "b", "a", "c", "b"] {
            q.add(item);
        }
        assert_eq!(q.drain(), vec!["a", "b", "c"]);
    }

    #[test]
    fn an_item_added_while_handed_out_comes_back_once_done() {
        let mut q = WorkQueue::default();
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
        let mut q = WorkQueue::default();
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
        let mut q = WorkQueue::default();
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
}
