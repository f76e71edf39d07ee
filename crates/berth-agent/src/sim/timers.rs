//! The fleet's timers: every node's next registration attempt, Lease
//! renewal and status write (a change, or a routine report), in time
//! order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use tokio::time::Instant;

/// What a node has to do at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Work {
    Register,
    Renew,
    /// A routine status write: the first report, then one every report
    /// period.
    Status,
    /// A status write that carries a change: it goes before routine ones.
    StatusChange,
}

type Timer = Reverse<(Instant, usize, Work)>;

/// How many renewals start in a row while a status change is also due
/// before one goes, at each [`Lag`] of the renewals.
const RENEWALS_BEFORE_CHANGE: Shares = Shares([3, 8, 16, 32]);
/// The same for a registration. The further the renewals are behind, the
/// smaller the share, so the renewals catch up before any Lease nears its
/// end; never nothing, so registration still ends. Registering a node
/// costs the server about six renewals (its Node with its conditions, its
/// Lease, its first status report, the lift of its `not-ready` taint): at
/// one per 32 renewals it takes a sixth of the server, at one per 8 almost
/// half.
const RENEWALS_BEFORE_REGISTRATION: Shares = Shares([3, 8, 32, 128]);
/// The same for a routine status write: more renewals than for a
/// registration, as a simulated node registers with its conditions (as a
/// kubelet's initial Node carries them), so a status write refreshes what
/// the server already holds, and each costs the server about two renewals.
const RENEWALS_BEFORE_STATUS: Shares = Shares([16, 32, 64, 256]);

/// Renewals to start in a row before one piece of other work, by [`Lag`].
struct Shares([u32; 4]);

impl Shares {
    fn renewals(&self, lag: Lag) -> u32 {
        self.0[lag as usize]
    }
}

/// How late the earliest due renewal is, in half renew periods: its node's
/// Lease is then at least 2, 2.5 or 3 renew periods old (of the 4 its
/// duration lasts: the kubelet renews every 10 s a Lease of 40).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lag {
    /// Less than a renew period late.
    KeepingUp,
    /// A renew period late.
    Behind,
    /// One and a half.
    FurtherBehind,
    /// Two renew periods late or more: the Lease is 30 s old of 40.
    FarBehind,
}

impl Lag {
    fn of(overdue: Duration, period: Duration) -> Lag {
        let halves = overdue.as_nanos() * 2 / period.as_nanos().max(1);
        match halves {
            0 | 1 => Lag::KeepingUp,
            2 => Lag::Behind,
            3 => Lag::FurtherBehind,
            _ => Lag::FarBehind,
        }
    }
}

/// The fleet's timers: Lease renewals first when several are due, but not
/// only renewals: with the server saturated, renewals are always due, and
/// strict priority starved the registration of the rest of the fleet (at
/// 150,000 nodes it never finished), which kubelets, each on its own, do
/// not do. So while other work waits, one status change and one
/// registration start every few renewals ([`RENEWALS_BEFORE_CHANGE`],
/// [`RENEWALS_BEFORE_REGISTRATION`]) and one routine status write every
/// some more ([`RENEWALS_BEFORE_STATUS`]), fewer of each the further the
/// renewals are behind ([`Lag`]). Between themselves, changes go first,
/// then registrations, then routine status writes.
pub(super) struct Timers {
    renewals: BinaryHeap<Timer>,
    /// Status changes, registrations and routine status writes, in the
    /// order they go between themselves.
    others: [Queue; 3],
    /// The renew period, which the renewals' [`Lag`] is counted in.
    period: Duration,
}

/// One kind of work other than renewals: its timers, its share, and the
/// renewals started in a row while it had work due.
struct Queue {
    heap: BinaryHeap<Timer>,
    shares: Shares,
    waited: u32,
}

impl Queue {
    fn new(shares: Shares) -> Queue {
        Queue {
            heap: BinaryHeap::new(),
            shares,
            waited: 0,
        }
    }
}

fn is_due(heap: &BinaryHeap<Timer>, now: Instant) -> bool {
    heap.peek().is_some_and(|Reverse((due, _, _))| *due <= now)
}

impl Timers {
    /// Timers whose renewals' lag is counted in `period`, the renew
    /// period.
    pub(super) fn new(period: Duration) -> Timers {
        Timers {
            renewals: BinaryHeap::new(),
            others: [
                Queue::new(RENEWALS_BEFORE_CHANGE),
                Queue::new(RENEWALS_BEFORE_REGISTRATION),
                Queue::new(RENEWALS_BEFORE_STATUS),
            ],
            period,
        }
    }

    pub(super) fn push(&mut self, due: Instant, index: usize, work: Work) {
        let heap = match work {
            Work::Renew => &mut self.renewals,
            Work::StatusChange => &mut self.others[0].heap,
            Work::Register => &mut self.others[1].heap,
            Work::Status => &mut self.others[2].heap,
        };
        heap.push(Reverse((due, index, work)));
    }

    /// The next due piece of work and when it was due: renewals first,
    /// within the others' shares.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize, Work)> {
        let renewal_due = is_due(&self.renewals, now);
        let lag = self
            .renewals
            .peek()
            .map_or(Lag::KeepingUp, |Reverse((due, _, _))| {
                Lag::of(now.saturating_duration_since(*due), self.period)
            });
        let due = self.others.each_ref().map(|q| is_due(&q.heap, now));
        // The first kind whose turn has come; else, with no renewal due,
        // the first kind with work due.
        let turn = (0..due.len())
            .find(|&i| due[i] && self.others[i].waited >= self.others[i].shares.renewals(lag))
            .or_else(|| {
                (!renewal_due)
                    .then(|| due.iter().position(|d| *d))
                    .flatten()
            });
        let heap = match turn {
            Some(i) => {
                self.others[i].waited = 0;
                &mut self.others[i].heap
            }
            None if renewal_due => {
                for (queue, due) in self.others.iter_mut().zip(due) {
                    if due {
                        queue.waited += 1;
                    }
                }
                &mut self.renewals
            }
            None => return None,
        };
        heap.pop().map(|Reverse(timer)| timer)
    }

    pub(super) fn next_due(&self) -> Option<Instant> {
        std::iter::once(&self.renewals)
            .chain(self.others.iter().map(|q| &q.heap))
            .filter_map(|h| h.peek().map(|Reverse((due, _, _))| *due))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The renewal period the tests' timers count renewals behind from.
    const RENEW: Duration = Duration::from_secs(10);

    /// Which work starts, in order, when `renewals` renewals,
    /// `registrations` registrations and `statuses` status writes are all
    /// due at once: `R`, `G` and `S`.
    fn order(renewals: usize, registrations: usize, statuses: usize) -> String {
        order_at(renewals, registrations, statuses, Duration::ZERO)
    }

    /// [`order`] with every renewal due `overdue` ago, the rest due now.
    fn order_at(
        renewals: usize,
        registrations: usize,
        statuses: usize,
        overdue: Duration,
    ) -> String {
        order_with_changes(renewals, 0, registrations, statuses, overdue)
    }

    /// [`order_at`] with `changes` status changes due too (`C`).
    fn order_with_changes(
        renewals: usize,
        changes: usize,
        registrations: usize,
        statuses: usize,
        overdue: Duration,
    ) -> String {
        let mut timers = Timers::new(RENEW);
        let now = Instant::now() + overdue;
        for i in 0..renewals {
            timers.push(now - overdue, i, Work::Renew);
        }
        for i in 0..changes {
            timers.push(now, 3000 + i, Work::StatusChange);
        }
        for i in 0..registrations {
            timers.push(now, 1000 + i, Work::Register);
        }
        for i in 0..statuses {
            timers.push(now, 2000 + i, Work::Status);
        }
        std::iter::from_fn(|| timers.pop_due(now))
            .map(|(_, _, work)| match work {
                Work::Renew => 'R',
                Work::Register => 'G',
                Work::Status => 'S',
                Work::StatusChange => 'C',
            })
            .collect()
    }

    #[test]
    fn renewals_go_first_but_leave_registrations_and_status_writes_a_share() {
        struct Case {
            renewals: usize,
            registrations: usize,
            statuses: usize,
            started: &'static str,
        }
        let cases = [
            Case {
                renewals: 0,
                registrations: 0,
                statuses: 0,
                started: "",
            },
            Case {
                renewals: 5,
                registrations: 0,
                statuses: 0,
                started: "RRRRR",
            },
            Case {
                renewals: 0,
                registrations: 3,
                statuses: 0,
                started: "GGG",
            },
            Case {
                renewals: 0,
                registrations: 0,
                statuses: 2,
                started: "SS",
            },
            Case {
                renewals: 0,
                registrations: 1,
                statuses: 1,
                started: "GS",
            },
            Case {
                renewals: 3,
                registrations: 1,
                statuses: 0,
                started: "RRRG",
            },
            Case {
                renewals: 8,
                registrations: 2,
                statuses: 0,
                started: "RRRGRRRGRR",
            },
            Case {
                renewals: 2,
                registrations: 4,
                statuses: 0,
                started: "RRGGGG",
            },
            // A status write waits for sixteen renewals, a registration for three.
            Case {
                renewals: 20,
                registrations: 0,
                statuses: 2,
                started: "RRRRRRRRRRRRRRRRSRRRRS",
            },
            Case {
                renewals: 16,
                registrations: 0,
                statuses: 1,
                started: "RRRRRRRRRRRRRRRRS",
            },
            Case {
                renewals: 8,
                registrations: 2,
                statuses: 1,
                started: "RRRGRRRGRRS",
            },
        ];
        for case in cases {
            assert_eq!(
                order(case.renewals, case.registrations, case.statuses),
                case.started,
                "{} renewals, {} registrations, {} status writes",
                case.renewals,
                case.registrations,
                case.statuses
            );
        }
    }

    #[test]
    fn the_further_renewals_are_behind_the_smaller_the_others_share() {
        struct Case {
            overdue: Duration,
            renewals: usize,
            registrations: usize,
            statuses: usize,
            started: String,
        }
        let r = |n: usize| "R".repeat(n);
        let half = RENEW / 2;
        let ms = Duration::from_millis(1);
        let cases = [
            // Just under a period late: the usual shares.
            Case {
                overdue: RENEW - ms,
                renewals: 4,
                registrations: 1,
                statuses: 0,
                started: "RRRGR".into(),
            },
            // A period late: a registration waits for eight renewals.
            Case {
                overdue: RENEW,
                renewals: 12,
                registrations: 2,
                statuses: 0,
                started: format!("{}G{}G", r(8), r(4)),
            },
            // ... still just under one and a half.
            Case {
                overdue: RENEW + half - ms,
                renewals: 9,
                registrations: 1,
                statuses: 0,
                started: format!("{}G{}", r(8), r(1)),
            },
            // One and a half periods late: for 32.
            Case {
                overdue: RENEW + half,
                renewals: 33,
                registrations: 1,
                statuses: 0,
                started: format!("{}G{}", r(32), r(1)),
            },
            // Two periods late (the Lease is 30 s old of 40): for 128.
            Case {
                overdue: 2 * RENEW,
                renewals: 129,
                registrations: 1,
                statuses: 0,
                started: format!("{}G{}", r(128), r(1)),
            },
            // A status write waits for 32 renewals a period late, 64 at one
            // and a half, 256 at two.
            Case {
                overdue: RENEW,
                renewals: 33,
                registrations: 0,
                statuses: 1,
                started: format!("{}S{}", r(32), r(1)),
            },
            Case {
                overdue: RENEW + half,
                renewals: 65,
                registrations: 0,
                statuses: 1,
                started: format!("{}S{}", r(64), r(1)),
            },
            Case {
                overdue: Duration::from_secs(25),
                renewals: 257,
                registrations: 0,
                statuses: 1,
                started: format!("{}S{}", r(256), r(1)),
            },
        ];
        for case in cases {
            assert_eq!(
                order_at(
                    case.renewals,
                    case.registrations,
                    case.statuses,
                    case.overdue
                ),
                case.started,
                "renewals {:?} late",
                case.overdue
            );
        }
    }

    #[test]
    fn status_changes_go_before_registrations_and_routine_status_writes() {
        struct Case {
            overdue: Duration,
            renewals: usize,
            changes: usize,
            registrations: usize,
            statuses: usize,
            started: &'static str,
        }
        let cases = [
            // With no renewal due, changes first, then registrations, then
            // routine reports.
            Case {
                overdue: Duration::ZERO,
                renewals: 0,
                changes: 2,
                registrations: 1,
                statuses: 1,
                started: "CCGS",
            },
            // A change has a registration's share of the renewals, and its
            // own turn: both go after three renewals.
            Case {
                overdue: Duration::ZERO,
                renewals: 7,
                changes: 2,
                registrations: 2,
                statuses: 0,
                started: "RRRCGRRRCGR",
            },
            // A change does not wait behind a backlog of routine reports.
            Case {
                overdue: Duration::ZERO,
                renewals: 3,
                changes: 1,
                registrations: 0,
                statuses: 5,
                started: "RRRCSSSSS",
            },
            // Behind, eight renewals go before a change.
            Case {
                overdue: RENEW,
                renewals: 9,
                changes: 1,
                registrations: 0,
                statuses: 0,
                started: "RRRRRRRRCR",
            },
        ];
        for case in cases {
            assert_eq!(
                order_with_changes(
                    case.renewals,
                    case.changes,
                    case.registrations,
                    case.statuses,
                    case.overdue
                ),
                case.started,
                "{} renewals, {} changes, {} registrations, {} status writes, renewals {:?} late",
                case.renewals,
                case.changes,
                case.registrations,
                case.statuses,
                case.overdue
            );
        }
    }

    #[test]
    fn work_not_yet_due_never_starts() {
        let mut timers = Timers::new(RENEW);
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
