//! Per-key exponential backoff, client-go's `flowcontrol.Backoff`: the
//! DaemonSet controller backs off deleting a node's failed daemon pod
//! (`failedPodsBackoff`, 1 s doubling to 15 min), because a kubelet that
//! keeps rejecting the pod would otherwise make it delete and recreate
//! the pod as fast as the API allows.
//!
//! A key's delay starts at the initial duration and doubles with each
//! [`Backoff::next`], capped at the maximum; a key left alone for more
//! than twice the maximum starts over. Time is an argument.

use std::collections::HashMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    backoff: Duration,
    last_update: Timestamp,
}

/// Delays by key.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, Entry>,
}

/// `failedPodsBackoff`'s initial delay.
pub const FAILED_PODS_BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// `failedPodsBackoff`'s longest delay.
pub const FAILED_PODS_BACKOFF_MAX: Duration = Duration::from_secs(15 * 60);

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            entries: HashMap::new(),
        }
    }

    /// `Get`: the key's current delay (zero for an unknown key).
    pub fn get(&self, id: &str) -> Duration {
        self.entries.get(id).map_or(Duration::ZERO, |e| e.backoff)
    }

    /// `Next`: the key's delay doubles (capped), or starts at the initial
    /// delay when new or expired; the key was updated `now`.
    pub fn next(&mut self, id: &str, now: Timestamp) {
        let backoff = match self.entries.get(id) {
            Some(e) if !self.expired(now, e.last_update) => (e.backoff * 2).min(self.max),
            _ => self.initial,
        };
        self.entries.insert(
            id.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// `Reset`: the key starts over.
    pub fn reset(&mut self, id: &str) {
        self.entries.remove(id);
    }

    /// `IsInBackOffSince`: less than the key's delay has passed since
    /// `event_time`, read at `now`.
    pub fn is_in_back_off_since(&self, id: &str, event_time: Timestamp, now: Timestamp) -> bool {
        self.entries.get(id).is_some_and(|e| {
            !self.expired(event_time, e.last_update) && elapsed(event_time, now) < e.backoff
        })
    }

    /// `IsInBackOffSinceUpdate`: less than the key's delay has passed from
    /// its last update to `now`.
    pub fn is_in_back_off_since_update(&self, id: &str, now: Timestamp) -> bool {
        self.entries.get(id).is_some_and(|e| {
            !self.expired(now, e.last_update) && elapsed(e.last_update, now) < e.backoff
        })
    }

    /// `GC`: forgets keys not updated for twice the maximum delay.
    pub fn gc(&mut self, now: Timestamp) {
        let max = self.max;
        self.entries
            .retain(|_, e| elapsed(e.last_update, now) <= max.saturating_mul(2));
    }

    /// `hasExpired`: more than twice the maximum since the last update.
    fn expired(&self, event_time: Timestamp, last_update: Timestamp) -> bool {
        elapsed(last_update, event_time) > self.max.saturating_mul(2)
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `to - from`, zero when `to` is earlier.
fn elapsed(from: Timestamp, to: Timestamp) -> Duration {
    let d: SignedDuration = to.duration_since(from);
    d.try_into().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::t;

    const STEP: Duration = Duration::from_secs(1);

    fn at(seconds: u64) -> Timestamp {
        t(i64::try_from(seconds).unwrap_or(0))
    }

    /// Upstream `TestSlowBackoff`: 0, 1, 2, 4 ... capped at 50; `Reset`
    /// clears it.
    #[test]
    fn delays_double_up_to_the_maximum() {
        let mut b = Backoff::new(STEP, 50 * STEP);
        let want = [0, 1, 2, 4, 8, 16, 32, 50, 50, 50];
        for (ix, (tick, w)) in (1..).zip(want).enumerate() {
            assert_eq!(b.get("id"), w * STEP, "input {ix}");
            b.next("id", at(tick));
        }
        b.next("id", at(11));
        b.reset("id");
        assert_eq!(b.get("id"), Duration::ZERO, "reset clears the backoff");
    }

    /// Upstream `TestBackoffReset`: after more than twice the maximum,
    /// an event is no longer in backoff.
    #[test]
    fn a_key_left_alone_twice_the_maximum_is_out_of_backoff() {
        let max = 5 * STEP;
        let mut b = Backoff::new(STEP, max);
        for tick in 1..=6 {
            b.next("id", at(tick));
        }
        assert!(b.is_in_back_off_since("id", at(6), at(6)));
        let last_update = at(6);
        let now = at(6 + 11);
        assert!(!b.is_in_back_off_since("id", last_update, now));
    }

    /// Upstream `TestBackoffHighWaterMark`: within twice the maximum the
    /// delay stays at the maximum.
    #[test]
    fn the_delay_stays_at_the_high_water_mark() {
        let max = 5 * STEP;
        let mut b = Backoff::new(STEP, max);
        for tick in 1..=6 {
            b.next("id", at(tick));
        }
        b.next("id", at(6 + 6));
        assert_eq!(b.get("id"), max);
    }

    /// Upstream `TestBackoffGC`: an entry goes after twice the maximum.
    #[test]
    fn gc_forgets_entries_after_twice_the_maximum() {
        let max = 5 * STEP;
        let mut b = Backoff::new(STEP, max);
        for tick in 1..=6 {
            b.next("id", at(tick));
        }
        b.gc(at(6 + 6));
        assert_eq!(b.len(), 1, "kept within twice the maximum");
        b.gc(at(6 + 12));
        assert!(b.is_empty(), "collected after twice the maximum");
    }

    /// Upstream `TestIsInBackOffSinceUpdate`: each row is a tick; out of
    /// backoff, the caller calls `next`.
    #[test]
    fn in_backoff_since_update_as_upstream() {
        struct Case {
            tick: u64,
            in_back_off: bool,
            value: u32,
        }
        let row = |tick, in_back_off, value| Case {
            tick,
            in_back_off,
            value,
        };
        let cases = [
            row(0, false, 0),
            row(1, false, 1),
            row(2, true, 2),
            row(3, false, 2),
            row(4, true, 4),
            row(5, true, 4),
            row(6, true, 4),
            row(7, false, 4),
            row(8, true, 8),
            row(9, true, 8),
            row(10, true, 8),
            row(11, true, 8),
            row(12, true, 8),
            row(13, true, 8),
            row(14, true, 8),
            row(15, false, 8),
            row(16, true, 10),
            row(20, true, 10),
            row(24, true, 10),
            row(25, false, 10),
            row(26, true, 10),
            row(34, true, 10),
            row(35, false, 10),
            row(56, false, 0),
            row(57, false, 1),
        ];
        let mut b = Backoff::new(STEP, 10 * STEP);
        for case in cases {
            let now = at(case.tick);
            assert_eq!(
                b.is_in_back_off_since_update("id", now),
                case.in_back_off,
                "tick {}",
                case.tick
            );
            if case.in_back_off {
                assert_eq!(b.get("id"), case.value * STEP, "tick {}", case.tick);
            } else {
                b.next("id", now);
            }
        }
    }
}
