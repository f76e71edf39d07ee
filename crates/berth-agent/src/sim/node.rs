//! One simulated node's kubelet state in the fleet: when its heartbeats
//! come, whether it is cut off, and the conditions it reports (healthy,
//! or what it was told) against what the server holds of them.

use std::time::Duration;

use berth_core::node_status::{Decided, condition_since, differs_from_server, held_since};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use tokio::time::Instant;

use crate::conditions::{Health, decide};
use crate::heartbeat::{LeaseRenewer, jittered, random_fraction};
use crate::node_client::NodeClient;

use super::timers::Work;

/// A condition a simulated node is told to report (a scenario's step)
/// instead of the one it computes, or besides them for another type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionOverride {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl ConditionOverride {
    fn decided(&self) -> Decided<'_> {
        Decided {
            type_: &self.type_,
            status: &self.status,
            reason: &self.reason,
            message: &self.message,
        }
    }
}

/// The fleet's periods, from the agent configuration.
#[derive(Debug, Clone, Copy)]
pub(super) struct Periods {
    /// The Lease renew interval.
    pub renew: Duration,
    /// `nodeStatusUpdateFrequency`: how often a kubelet computes its status.
    pub status_update: Duration,
    /// `nodeStatusReportFrequency`: an unchanged status is written this often.
    pub status_report: Duration,
}

/// The first point of the grid `origin + k × period` (k ≥ 0) at or after `t`.
fn at_or_after(origin: Instant, period: Duration, t: Instant) -> Instant {
    if t <= origin || period.is_zero() {
        return origin.max(t);
    }
    let since = t.duration_since(origin).as_nanos();
    let period_nanos = period.as_nanos();
    let steps = since.div_ceil(period_nanos);
    let offset = steps.saturating_mul(period_nanos);
    origin + Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX))
}

/// What one node reports: the kubelet's four conditions, healthy, with the
/// ones it was told put over them, each with the transition time the
/// server holds for it.
#[derive(Debug, Default)]
pub(super) struct Reported {
    overrides: Vec<ConditionOverride>,
    /// For each condition of [`decided`], in its order: the transition time
    /// the server holds when it holds that condition with the same status
    /// (carried over); `None`: it transitions at the next write.
    held_since: Box<[Option<Timestamp>]>,
    /// The server holds other conditions than the node reports (the node
    /// lifecycle controller's Unknown): a write is due.
    differs: bool,
}

/// The conditions a node with `overrides` reports, before their times.
fn decided(overrides: &[ConditionOverride]) -> Vec<Decided<'_>> {
    let mut list = decide(Health::default(), None).to_vec();
    for told in overrides {
        let told = told.decided();
        match list.iter_mut().find(|c| c.type_ == told.type_) {
            Some(c) => *c = told,
            None => list.push(told),
        }
    }
    list
}

impl Reported {
    /// The conditions to write at `now`.
    pub fn conditions(&self, now: Timestamp) -> Vec<NodeCondition> {
        decided(&self.overrides)
            .into_iter()
            .enumerate()
            .map(|(i, d)| condition_since(d, self.held_since.get(i).copied().flatten(), now))
            .collect()
    }

    /// The server holds `server`: takes its transition times, and says
    /// whether a write is due (it holds something else than `now`'s
    /// conditions, other than in heartbeat times).
    pub fn observe(&mut self, server: &[NodeCondition], now: Timestamp) -> bool {
        self.held_since = decided(&self.overrides)
            .into_iter()
            .map(|d| held_since(server, d))
            .collect();
        self.differs = differs_from_server(server, &self.conditions(now));
        self.differs
    }

    pub fn differs(&self) -> bool {
        self.differs
    }

    /// Reports `told` from now on; returns whether what the node reports
    /// changed. A condition whose status stays keeps its transition time.
    pub fn set(&mut self, told: ConditionOverride) -> bool {
        let before: Vec<(String, String, String, String, Option<Timestamp>)> =
            decided(&self.overrides)
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    (
                        d.type_.to_string(),
                        d.status.to_string(),
                        d.reason.to_string(),
                        d.message.to_string(),
                        self.held_since.get(i).copied().flatten(),
                    )
                })
                .collect();
        match self.overrides.iter_mut().find(|o| o.type_ == told.type_) {
            Some(o) => *o = told,
            None => self.overrides.push(told),
        }
        let after = decided(&self.overrides);
        let changed = after.len() != before.len()
            || after.iter().zip(&before).any(|(d, b)| {
                (d.type_, d.status, d.reason, d.message)
                    != (b.0.as_str(), b.1.as_str(), b.2.as_str(), b.3.as_str())
            });
        self.held_since = after
            .iter()
            .map(|d| {
                before
                    .iter()
                    .find(|b| b.0 == d.type_ && b.1 == d.status)
                    .and_then(|b| b.4)
            })
            .collect();
        changed
    }
}

/// When a node's periodic work comes: upstream's jitter, or a fixed grid
/// at its phase from registration.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cadence {
    /// See [`super::SimNode::phase`].
    phase: Option<Duration>,
    /// The fixed grid's origin: registration plus the phase.
    grid: Option<Instant>,
}

impl Cadence {
    pub fn new(phase: Option<Duration>) -> Cadence {
        Cadence { phase, grid: None }
    }

    /// The node registered at `now`: a fixed grid counts from here.
    pub fn start(&mut self, now: Instant) {
        self.grid = self.phase.map(|phase| now + phase);
    }

    /// When the Lease renewal after one at `now` is due.
    pub fn next_renewal(&self, now: Instant, periods: &Periods) -> Instant {
        match self.grid {
            Some(origin) => at_or_after(origin, periods.renew, now + Duration::from_nanos(1)),
            None => now + jittered(periods.renew, random_fraction()),
        }
    }

    /// When the node next computes its status at or after `now`, to find
    /// that the server holds something else: every status update period
    /// on a fixed grid (as the kubelet); at once otherwise (one watch
    /// tells the fleet instead of a read per node every period).
    pub fn next_computation(&self, now: Instant, periods: &Periods) -> Instant {
        match self.grid {
            Some(origin) => at_or_after(origin, periods.status_update, now),
            None => now,
        }
    }

    /// When the periodic status write after one at `last` is due: at the
    /// first status computation once the report period is over.
    pub fn next_report(&self, last: Instant, periods: &Periods) -> Instant {
        match self.grid {
            Some(origin) => {
                at_or_after(origin, periods.status_update, last + periods.status_report)
            }
            None => last + jittered(periods.status_report, random_fraction()),
        }
    }
}

/// One node of the fleet.
pub(super) struct NodeState {
    pub client: NodeClient,
    pub renewer: Option<LeaseRenewer>,
    pub failures: u32,
    pub last_renewal: Option<Instant>,
    pub was_late: bool,
    pub registered: bool,
    /// Cut off from the API server: no Lease, no status, no pods.
    pub paused: bool,
    /// When the node's one Lease renewal is due; a timer for another time
    /// is stale.
    pub renew_due: Option<Instant>,
    /// When the node's one status write is due; a timer for another time
    /// is stale (the write was moved sooner).
    pub status_due: Option<Instant>,
    /// When the node last wrote its status.
    pub last_report: Option<Instant>,
    pub reported: Reported,
    pub cadence: Cadence,
}

impl NodeState {
    pub fn new(client: NodeClient, phase: Option<Duration>) -> NodeState {
        NodeState {
            client,
            renewer: None,
            failures: 0,
            last_renewal: None,
            was_late: false,
            registered: false,
            paused: false,
            renew_due: None,
            status_due: None,
            last_report: None,
            reported: Reported::default(),
            cadence: Cadence::new(phase),
        }
    }

    /// Registered at `now`.
    pub fn registered_at(&mut self, now: Instant) {
        self.registered = true;
        self.cadence.start(now);
    }

    /// Whether a timer of `work` set for `due` is to run now: it is the
    /// node's pending one (taken) and the node is not cut off (it renews
    /// and writes again when resumed). Registrations always run.
    pub fn take_timer(&mut self, work: Work, due: Instant) -> bool {
        let pending = match work {
            Work::Register => return true,
            Work::Renew => &mut self.renew_due,
            Work::Status | Work::StatusChange => &mut self.status_due,
        };
        if *pending != Some(due) {
            return false;
        }
        *pending = None;
        !self.paused
    }

    /// Whether the node has renewed its Lease and made its first status
    /// report (its start-up writes are over).
    pub fn is_up(&self) -> bool {
        self.last_renewal.is_some() && self.last_report.is_some()
    }

    /// Whether the last status write is a report period old (or there was
    /// none).
    pub fn report_is_stale(&self, now: Instant, periods: &Periods) -> bool {
        self.last_report
            .is_none_or(|last| now.duration_since(last) >= periods.status_report)
    }

    /// The Node on the server changed: whether its status is to be written
    /// now (it differs from what the node reports, and the node is not cut
    /// off).
    pub fn observe(&mut self, node: &Node, now: Timestamp) -> bool {
        let server = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        // Before the node's first status write its conditions are the
        // registration's to set.
        if !self.registered || server.is_empty() {
            return false;
        }
        self.reported.observe(server, now) && !self.paused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_fixed_heartbeat_falls_on_its_grid() {
        struct Case {
            name: &'static str,
            t: u64,
            want: u64,
        }
        let origin = Instant::now();
        let at = |ms: u64| origin + Duration::from_millis(ms);
        for case in [
            Case {
                name: "before the origin: the origin",
                t: 0,
                want: 0,
            },
            Case {
                name: "on a point: that point",
                t: 20_000,
                want: 20_000,
            },
            Case {
                name: "between points: the next",
                t: 20_001,
                want: 30_000,
            },
        ] {
            assert_eq!(
                at_or_after(at(0), Duration::from_secs(10), at(case.t)),
                at(case.want),
                "{}",
                case.name
            );
        }
        assert_eq!(
            at_or_after(at(3_000), Duration::from_secs(10), at(0)),
            at(3_000),
            "a phase after registration comes first"
        );
    }

    #[test]
    fn a_phased_node_renews_and_reports_on_its_grid() {
        let periods = Periods {
            renew: Duration::from_secs(10),
            status_update: Duration::from_secs(10),
            status_report: Duration::from_secs(300),
        };
        let mut state = Cadence::new(Some(Duration::from_secs(3)));
        let registered = Instant::now();
        state.start(registered);
        let at = |ms: u64| registered + Duration::from_millis(ms);
        // The Lease is created at registration, then renewed at the phase
        // and every 10 s after it.
        assert_eq!(state.next_renewal(at(0), &periods), at(3_000));
        assert_eq!(state.next_renewal(at(3_000), &periods), at(13_000));
        // Resumed between two points: the next point.
        assert_eq!(state.next_renewal(at(57_500), &periods), at(63_000));
        // The server's Unknown seen at 60 s is found at 63 s.
        assert_eq!(state.next_computation(at(60_000), &periods), at(63_000));
        // A report at 0 is repeated at the first computation 300 s on; one
        // at 61.5 s (a condition set by a step) at the first after 361.5 s.
        assert_eq!(state.next_report(at(0), &periods), at(303_000));
        assert_eq!(state.next_report(at(61_500), &periods), at(363_000));
    }

    fn told(type_: &str, status: &str) -> ConditionOverride {
        ConditionOverride {
            type_: type_.into(),
            status: status.into(),
            reason: format!("Scenario{type_}"),
            message: "set by the scenario".into(),
        }
    }

    fn status_of<'a>(conditions: &'a [NodeCondition], type_: &str) -> (&'a str, Option<Timestamp>) {
        conditions
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| {
                (
                    c.status.as_str(),
                    c.last_transition_time.as_ref().map(|t| t.0),
                )
            })
            .unwrap_or(("", None))
    }

    #[test]
    fn told_conditions_are_reported_over_the_computed_ones() {
        let mut reported = Reported::default();
        let first = reported.conditions(t(0));
        assert_eq!(
            first.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        assert!(!reported.observe(&first, t(0)), "the server holds them");
        assert!(reported.set(told("MemoryPressure", "True")));
        assert!(!reported.set(told("MemoryPressure", "True")), "told again");
        assert!(reported.set(told("NetworkUnavailable", "True")));
        let written = reported.conditions(t(60));
        assert_eq!(status_of(&written, "MemoryPressure"), ("True", Some(t(60))));
        assert_eq!(status_of(&written, "Ready"), ("True", Some(t(0))));
        assert_eq!(
            status_of(&written, "NetworkUnavailable"),
            ("True", Some(t(60)))
        );
        assert!(!reported.observe(&written, t(70)));
        // Back to False at 600 s: a new transition; the others keep theirs.
        assert!(reported.set(told("MemoryPressure", "False")));
        let written = reported.conditions(t(600));
        assert_eq!(
            status_of(&written, "MemoryPressure"),
            ("False", Some(t(600)))
        );
        assert_eq!(
            status_of(&written, "NetworkUnavailable"),
            ("True", Some(t(60)))
        );
    }

    #[test]
    fn a_node_marked_unknown_differs_until_it_writes_again() {
        let mut reported = Reported::default();
        let mut server = reported.conditions(t(0));
        for c in &mut server {
            c.status = "Unknown".into();
            c.reason = Some("NodeStatusUnknown".into());
            c.last_transition_time = Some(Time(t(62)));
        }
        assert!(reported.observe(&server, t(62)));
        assert!(reported.differs());
        // Written later (a node cut off until 120 s): Ready since then.
        let written = reported.conditions(t(120));
        assert_eq!(status_of(&written, "Ready"), ("True", Some(t(120))));
        assert!(!reported.observe(&written, t(120)));
    }
}
