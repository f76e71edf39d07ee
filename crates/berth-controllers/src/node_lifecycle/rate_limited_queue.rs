//! Upstream's `RateLimitedTimedQueue` (nodelifecycle/scheduler): a queue
//! of node names, each present at most once until removed, ordered by the
//! time it may be processed, and drained no faster than a token bucket
//! (burst 1) allows. One per zone; its rate is the zone's tainting rate.
//!
//! Time is passed in, never read, so the queue is plain data that tests and
//! the virtual clock drive alike.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// `EvictionRateLimiterBurst`.
pub const EVICTION_RATE_LIMITER_BURST: f64 = 1.0;
/// `NodeEvictionPeriod`: how often the controller tries the queues.
pub const NODE_EVICTION_PERIOD: Duration = Duration::from_millis(100);

/// A token bucket (`flowcontrol.NewTokenBucketRateLimiter`, which starts
/// full); a rate of zero or less never accepts
/// (`NewFakeNeverRateLimiter`).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f32,
    tokens: f64,
    last: Timestamp,
}

impl TokenBucket {
    pub fn new(qps: f32, now: Timestamp) -> TokenBucket {
        TokenBucket {
            qps,
            tokens: if qps > 0.0 {
                EVICTION_RATE_LIMITER_BURST
            } else {
                0.0
            },
            last: now,
        }
    }

    pub fn qps(&self) -> f32 {
        self.qps
    }

    fn refill(&mut self, now: Timestamp) {
        if self.qps <= 0.0 {
            return;
        }
        let elapsed = now.duration_since(self.last).as_secs_f64();
        if elapsed > 0.0 {
            self.tokens =
                (self.tokens + elapsed * f64::from(self.qps)).min(EVICTION_RATE_LIMITER_BURST);
            self.last = now;
        }
    }

    /// When the next token will be there (`None`: never).
    pub fn ready_at(&self) -> Option<Timestamp> {
        if self.qps <= 0.0 {
            return None;
        }
        let missing = (1.0 - 1e-6 - self.tokens).max(0.0);
        let wait = (missing / f64::from(self.qps) * 1e9).ceil() as i64;
        Some(
            self.last
                .checked_add(SignedDuration::from_nanos(wait))
                .unwrap_or(Timestamp::MAX),
        )
    }

    /// Takes a token if one is there.
    pub fn try_accept(&mut self, now: Timestamp) -> bool {
        self.refill(now);
        // The rate is an f32 (as upstream's): allow for its rounding, so 100 s
        // at 0.01/s make a whole token.
        if self.qps > 0.0 && self.tokens >= 1.0 - 1e-6 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }
}

/// A value to process at a time (`TimedValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedValue {
    pub value: String,
    pub uid: String,
    pub added_at: Timestamp,
    pub process_at: Timestamp,
}

/// `RateLimitedTimedQueue`.
#[derive(Debug, Clone)]
pub struct RateLimitedTimedQueue {
    /// The queue proper, by (process_at, insertion order).
    queue: BTreeMap<(Timestamp, u64), TimedValue>,
    /// Every value added and not removed, with its queue position if it is
    /// still queued (`None`: processed, kept so it is not added again).
    set: HashMap<String, Option<(Timestamp, u64)>>,
    limiter: TokenBucket,
    seq: u64,
}

impl RateLimitedTimedQueue {
    pub fn new(qps: f32, now: Timestamp) -> RateLimitedTimedQueue {
        RateLimitedTimedQueue {
            queue: BTreeMap::new(),
            set: HashMap::new(),
            limiter: TokenBucket::new(qps, now),
            seq: 0,
        }
    }

    /// Adds `value` to be processed now, unless it was added before and not
    /// removed; true if added.
    pub fn add(&mut self, value: &str, uid: &str, now: Timestamp) -> bool {
        if self.set.contains_key(value) {
            return false;
        }
        self.push(TimedValue {
            value: value.to_string(),
            uid: uid.to_string(),
            added_at: now,
            process_at: now,
        });
        true
    }

    fn push(&mut self, value: TimedValue) {
        self.seq += 1;
        let key = (value.process_at, self.seq);
        self.set.insert(value.value.clone(), Some(key));
        self.queue.insert(key, value);
    }

    /// Forgets `value`, so it is not processed and may be added again; true
    /// if it was known.
    pub fn remove(&mut self, value: &str) -> bool {
        match self.set.remove(value) {
            Some(Some(key)) => {
                self.queue.remove(&key);
                true
            }
            Some(None) => true,
            None => false,
        }
    }

    /// Whether `value` is queued or was processed and not removed.
    pub fn contains(&self, value: &str) -> bool {
        self.set.contains_key(value)
    }

    /// Values still waiting to be processed.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        self.queue.clear();
        self.set.clear();
    }

    pub fn qps(&self) -> f32 {
        self.limiter.qps()
    }

    /// `SwapLimiter`: a new rate; if the old bucket was empty, the new one
    /// starts empty too.
    pub fn swap_limiter(&mut self, qps: f32, now: Timestamp) {
        if self.limiter.qps() == qps {
            return;
        }
        let mut new = TokenBucket::new(qps, now);
        if qps > 0.0 && !self.limiter.try_accept(now) {
            new.try_accept(now);
        }
        self.limiter = new;
    }

    /// When [`Self::next_due`] may next hand out a value: the head's time
    /// or the next token, whichever is later (`None`: empty or rate 0).
    pub fn next_attempt(&self) -> Option<Timestamp> {
        let (&(at, _), _) = self.queue.first_key_value()?;
        Some(at.max(self.limiter.ready_at()?))
    }

    /// One step of `Try`: takes a token, then the head if it is due. The
    /// value stays known (not re-added) until [`Self::retry`] or
    /// [`Self::remove`]. `None` when rate limited, empty or nothing is due.
    pub fn next_due(&mut self, now: Timestamp) -> Option<TimedValue> {
        let (&key, _) = self.queue.first_key_value()?;
        if !self.limiter.try_accept(now) {
            return None;
        }
        if now < key.0 {
            return None;
        }
        let value = self.queue.remove(&key)?;
        self.set.insert(value.value.clone(), None);
        Some(value)
    }

    /// The action on `value` failed: process it again after `wait` (plus a
    /// nanosecond, as upstream).
    pub fn retry(&mut self, mut value: TimedValue, now: Timestamp, wait: Duration) {
        if !matches!(self.set.get(&value.value), Some(None)) {
            return; // removed meanwhile
        }
        let wait = SignedDuration::try_from(wait).unwrap_or(SignedDuration::ZERO)
            + SignedDuration::from_nanos(1);
        value.process_at = now.checked_add(wait).unwrap_or(now);
        self.push(value);
    }

    /// Drains the queue the way upstream's `Try` does, calling `action` on
    /// each value due; `action` returns `Err(wait)` to be retried later.
    pub fn try_each(
        &mut self,
        now: Timestamp,
        mut action: impl FnMut(&TimedValue) -> Result<(), Duration>,
    ) {
        while let Some(value) = self.next_due(now) {
            if let Err(wait) = action(&value) {
                self.retry(value, now, wait);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> Timestamp {
        Timestamp::from_second(1_420_113_600).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn at(ms: i64) -> Timestamp {
        t0() + SignedDuration::from_millis(ms)
    }

    fn queue_values(q: &RateLimitedTimedQueue) -> Vec<String> {
        q.queue.values().map(|v| v.value.clone()).collect()
    }

    /// Upstream `TestAddNode`.
    #[test]
    fn add_keeps_insertion_order_for_equal_times() {
        let mut q = RateLimitedTimedQueue::new(1000.0, t0());
        for v in ["first", "second", "third"] {
            assert!(q.add(v, "uid", t0()));
        }
        assert_eq!(queue_values(&q), ["first", "second", "third"]);
        assert!(!q.add("second", "uid", t0()), "added twice");
    }

    /// Upstream `TestDelNode`.
    #[test]
    fn remove_takes_a_value_out_and_allows_it_again() {
        let cases: &[(&str, &[&str])] = &[
            ("first", &["second", "third"]),
            ("second", &["first", "third"]),
            ("third", &["first", "second"]),
        ];
        for (removed, left) in cases {
            let mut q = RateLimitedTimedQueue::new(1000.0, t0());
            for v in ["first", "second", "third"] {
                q.add(v, "uid", t0());
            }
            assert!(q.remove(removed));
            assert_eq!(queue_values(&q), *left, "removing {removed}");
            assert!(q.add(removed, "uid", t0()));
        }
    }

    /// Upstream `TestTry`: a failing action requeues its value; a
    /// successful one is kept out until removed.
    #[test]
    fn try_requeues_failures_and_keeps_successes_known() {
        let mut q = RateLimitedTimedQueue::new(1000.0, t0());
        for v in ["first", "second", "third"] {
            q.add(v, "uid", t0());
        }
        q.remove("second");
        let mut seen = Vec::new();
        // Enough time for tokens for every value.
        q.try_each(at(10), |v| {
            seen.push(v.value.clone());
            if v.value == "first" {
                Err(Duration::from_secs(1))
            } else {
                Ok(())
            }
        });
        assert_eq!(seen, ["first"], "one token, burst 1");
        let mut now = at(10);
        for _ in 0..3 {
            now += SignedDuration::from_millis(2);
            q.try_each(now, |v| {
                seen.push(v.value.clone());
                Ok(())
            });
        }
        assert_eq!(seen, ["first", "third"]);
        assert_eq!(queue_values(&q), ["first"], "first retried later");
        assert!(!q.add("third", "uid", now), "processed values stay known");
        assert!(q.remove("third"));
        assert!(q.add("third", "uid", now));
    }

    /// Upstream `TestTryOrdering`: values come out by process time.
    #[test]
    fn try_processes_in_time_order() {
        let mut q = RateLimitedTimedQueue::new(1_000_000.0, t0());
        q.add("first", "uid", at(0));
        q.add("second", "uid", at(1));
        q.add("third", "uid", at(2));
        let mut order = Vec::new();
        let mut failed_once = false;
        for step in 0..10 {
            q.try_each(at(3 + step), |v| {
                order.push(v.value.clone());
                if v.value == "first" && !failed_once {
                    failed_once = true;
                    return Err(Duration::from_millis(1));
                }
                Ok(())
            });
        }
        assert_eq!(order, ["first", "second", "third", "first"]);
    }

    /// Upstream `TestClear`.
    #[test]
    fn clear_empties_queue_and_set() {
        let mut q = RateLimitedTimedQueue::new(1000.0, t0());
        q.add("first", "uid", t0());
        q.clear();
        assert!(q.is_empty());
        assert!(q.add("first", "uid", t0()));
    }

    /// Upstream `TestSwapLimiter`: zero never accepts; a new rate starts
    /// drained when the old bucket was.
    #[test]
    fn swap_limiter_keeps_an_empty_bucket_empty() {
        let mut q = RateLimitedTimedQueue::new(0.1, t0());
        assert_eq!(q.qps(), 0.1);
        q.swap_limiter(0.0, t0());
        assert_eq!(q.qps(), 0.0);
        q.add("n", "uid", t0());
        assert!(q.next_due(at(1_000_000)).is_none(), "rate 0 never accepts");
        q.swap_limiter(0.01, at(1_000_000));
        assert_eq!(q.qps(), 0.01);
        // The old (never) bucket was empty: the new one starts drained.
        assert!(q.next_due(at(1_000_000)).is_none());
        assert!(
            q.next_due(at(1_000_000 + 100_000)).is_some(),
            "one token per 100 s"
        );
    }

    #[test]
    fn next_attempt_is_when_the_next_token_comes() {
        let mut q = RateLimitedTimedQueue::new(0.01, t0());
        assert_eq!(q.next_attempt(), None, "empty");
        q.add("a", "uid", t0());
        q.add("b", "uid", t0());
        assert_eq!(q.next_attempt(), Some(t0()));
        assert!(q.next_due(t0()).is_some());
        let next = q.next_attempt().unwrap_or(Timestamp::MAX);
        assert!(next <= at(100_000) && next > at(99_999), "{next}");
        assert!(q.next_due(next).is_some());
        q.swap_limiter(0.0, next);
        q.add("c", "uid", next);
        assert_eq!(q.next_attempt(), None, "rate 0");
    }

    #[test]
    fn token_bucket_paces_at_its_rate() {
        let mut bucket = TokenBucket::new(0.1, t0());
        assert!(bucket.try_accept(t0()), "starts full");
        assert!(!bucket.try_accept(at(9_999)));
        assert!(bucket.try_accept(at(10_000)));
        assert!(!bucket.try_accept(at(10_000)));
        // Burst 1: a long pause does not bank tokens.
        assert!(bucket.try_accept(at(100_000)));
        assert!(!bucket.try_accept(at(100_001)));
    }
}
