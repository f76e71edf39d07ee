//! The fleet's timers: every node's next registration attempt, Lease
//! renewal and status write, in time order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tokio::time::Instant;

/// What a node has to do at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Work {
    Register,
    Renew,
    Status,
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
pub(super) struct Timers {
    renewals: BinaryHeap<Timer>,
    other: BinaryHeap<Timer>,
    /// Renewals started in a row while other work was due.
    renewals_in_a_row: u32,
}

impl Timers {
    pub(super) fn push(&mut self, due: Instant, index: usize, work: Work) {
        let heap = match work {
            Work::Renew => &mut self.renewals,
            Work::Register | Work::Status => &mut self.other,
        };
        heap.push(Reverse((due, index, work)));
    }

    /// The next due piece of work and when it was due: renewals first,
    /// within their share.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize, Work)> {
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

    pub(super) fn next_due(&self) -> Option<Instant> {
        [&self.renewals, &self.other]
            .into_iter()
            .filter_map(|h| h.peek().map(|Reverse((due, _, _))| *due))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
