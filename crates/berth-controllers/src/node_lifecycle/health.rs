//! What the controller knows of each node's heartbeats (upstream
//! `nodeHealthData` and `tryUpdateNodeHealth`), kept from watch events
//! rather than re-read every pass.
//!
//! A node is heard from when its Lease in `kube-node-lease` is renewed (a
//! newer `renewTime`) or its Ready condition gets a new
//! `lastHeartbeatTime`; the controller stamps that moment with its own
//! clock (the probe timestamp), as upstream does, so clock skew between
//! nodes and the control plane does not matter. A node not heard from for
//! the grace period gets Ready, MemoryPressure, DiskPressure and
//! PIDPressure set to Unknown.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::taints::{
    CONDITION_DISK_PRESSURE, CONDITION_MEMORY_PRESSURE, CONDITION_PID_PRESSURE, CONDITION_READY,
    condition,
};

pub const STATUS_TRUE: &str = "True";
pub const STATUS_FALSE: &str = "False";
pub const STATUS_UNKNOWN: &str = "Unknown";

/// A Ready condition's status, without its string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyStatus {
    True,
    False,
    Unknown,
    /// Anything else (not a valid status).
    Other,
}

impl ReadyStatus {
    pub fn of(status: &str) -> ReadyStatus {
        match status {
            STATUS_TRUE => ReadyStatus::True,
            STATUS_FALSE => ReadyStatus::False,
            STATUS_UNKNOWN => ReadyStatus::Unknown,
            _ => ReadyStatus::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReadyStatus::True => STATUS_TRUE,
            ReadyStatus::False => STATUS_FALSE,
            ReadyStatus::Unknown => STATUS_UNKNOWN,
            ReadyStatus::Other => "",
        }
    }
}

/// The conditions set to Unknown when a node goes silent (NetworkUnavailable
/// is the control plane's, not the kubelet's, and is left alone).
pub const CONDITIONS_SET_UNKNOWN: [&str; 4] = [
    CONDITION_READY,
    CONDITION_MEMORY_PRESSURE,
    CONDITION_DISK_PRESSURE,
    CONDITION_PID_PRESSURE,
];

/// The grace periods (`--node-monitor-grace-period`,
/// `--node-startup-grace-period`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GracePeriods {
    pub monitor: Duration,
    pub startup: Duration,
}

impl Default for GracePeriods {
    fn default() -> Self {
        GracePeriods {
            monitor: Duration::from_secs(50),
            startup: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SavedReady {
    heartbeat: Option<Timestamp>,
    transition: Option<Timestamp>,
}

/// One node's health as the controller last observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHealth {
    /// When the controller last heard from the node (its own clock).
    pub probe: Timestamp,
    /// When the controller saw the Ready condition last change.
    pub ready_transition: Timestamp,
    saved_ready: Option<SavedReady>,
    lease_renew: Option<Timestamp>,
}

fn ts(t: &Option<Time>) -> Option<Timestamp> {
    t.as_ref().map(|t| t.0)
}

fn creation(node: &Node) -> Timestamp {
    node.metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}

impl NodeHealth {
    /// Folds a node object into its health (the first half of
    /// `tryUpdateNodeHealth`), at `now`.
    pub fn observe_node(previous: Option<NodeHealth>, node: &Node, now: Timestamp) -> NodeHealth {
        let current = condition(node, CONDITION_READY).map(|c| SavedReady {
            heartbeat: ts(&c.last_heartbeat_time),
            transition: ts(&c.last_transition_time),
        });
        let fresh = |saved: Option<SavedReady>, lease| NodeHealth {
            probe: now,
            ready_transition: now,
            saved_ready: saved,
            lease_renew: lease,
        };
        match (previous, current) {
            // Never reported: count from the node's creation.
            (None, None) => NodeHealth {
                probe: creation(node),
                ready_transition: creation(node),
                saved_ready: None,
                lease_renew: None,
            },
            (Some(h), None) if h.saved_ready.is_none() => h,
            // The Ready condition was removed: start over.
            (Some(h), None) => fresh(None, h.lease_renew),
            (None, Some(c)) => fresh(Some(c), None),
            (Some(h), Some(c)) => match &h.saved_ready {
                None => fresh(Some(c), h.lease_renew),
                Some(saved) if saved.heartbeat != c.heartbeat => NodeHealth {
                    probe: now,
                    ready_transition: if saved.transition != c.transition {
                        now
                    } else {
                        h.ready_transition
                    },
                    saved_ready: Some(c),
                    lease_renew: h.lease_renew,
                },
                Some(_) => h,
            },
        }
    }

    /// A Lease renewal: newer than the last one seen counts as hearing from
    /// the node.
    pub fn observe_lease(&mut self, renew: Option<Timestamp>, now: Timestamp) {
        let Some(renew) = renew else { return };
        if self.lease_renew.is_none_or(|saved| saved < renew) {
            self.lease_renew = Some(renew);
            self.probe = now;
        }
    }

    /// The controller wrote Ready=Unknown itself.
    pub fn marked_unknown(&mut self, now: Timestamp) {
        self.ready_transition = now;
    }

    /// Leaving the all-zones-down mode: every node starts a fresh grace
    /// period.
    pub fn reset(&mut self, now: Timestamp) {
        self.probe = now;
        self.ready_transition = now;
    }
}

/// The outcome of checking one node at a monitor pass.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthVerdict {
    /// The Ready status before this pass (`Unknown` if the node never
    /// posted one).
    pub observed_ready: ReadyStatus,
    /// The Ready status after this pass (`None`: no Ready condition and
    /// still within the startup grace).
    pub current_ready: Option<ReadyStatus>,
    /// New conditions to write with the status, when the grace expired
    /// and Ready changes.
    pub status_update: Option<Vec<NodeCondition>>,
}

/// The second half of `tryUpdateNodeHealth`: past the grace period since
/// the probe, the kubelet's conditions become Unknown.
pub fn check(
    node: &Node,
    health: &NodeHealth,
    now: Timestamp,
    grace: &GracePeriods,
) -> HealthVerdict {
    let ready = condition(node, CONDITION_READY);
    let (observed_ready, grace_period) = match ready {
        Some(c) => (ReadyStatus::of(&c.status), grace.monitor),
        None => (ReadyStatus::Unknown, grace.startup),
    };
    let deadline = health
        .probe
        .checked_add(SignedDuration::try_from(grace_period).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX);
    // The common case, every pass for every healthy node: nothing copied.
    if now <= deadline {
        return HealthVerdict {
            observed_ready,
            current_ready: ready.map(|c| ReadyStatus::of(&c.status)),
            status_update: None,
        };
    }
    let observed = match ready {
        Some(c) => c.clone(),
        None => NodeCondition {
            type_: CONDITION_READY.into(),
            status: STATUS_UNKNOWN.into(),
            last_heartbeat_time: node.metadata.creation_timestamp.clone(),
            last_transition_time: node.metadata.creation_timestamp.clone(),
            ..NodeCondition::default()
        },
    };
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    for type_ in CONDITIONS_SET_UNKNOWN {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.into(),
                status: STATUS_UNKNOWN.into(),
                reason: Some("NodeStatusNeverUpdated".into()),
                message: Some("Kubelet never posted node status.".into()),
                last_heartbeat_time: node.metadata.creation_timestamp.clone(),
                last_transition_time: Some(Time(now)),
            }),
            Some(c) if c.status != STATUS_UNKNOWN => {
                c.status = STATUS_UNKNOWN.into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some("Kubelet stopped posting node status.".into());
                c.last_transition_time = Some(Time(now));
            }
            Some(_) => {}
        }
    }
    let current = conditions
        .iter()
        .find(|c| c.type_ == CONDITION_READY)
        .cloned();
    let changed = current.as_ref() != Some(&observed);
    HealthVerdict {
        observed_ready,
        current_ready: current.map(|c| ReadyStatus::of(&c.status)),
        status_update: changed.then_some(conditions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::make_node;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_420_113_600 + s).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// node0, created at `t(created)`, with conditions (type, status,
    /// heartbeat, transition).
    fn node0(created: i64, conditions: &[(&str, &str, i64, i64)]) -> Node {
        conditions
            .iter()
            .fold(
                make_node().name("node0").created_at(t(created)),
                |node, (type_, status, heartbeat, transition)| {
                    node.condition_at(type_, status, t(*heartbeat), t(*transition))
                },
            )
            .obj()
    }

    fn statuses(conditions: &[NodeCondition]) -> Vec<(String, String, Option<String>)> {
        conditions
            .iter()
            .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
            .collect()
    }

    /// Upstream `TestMonitorNodeHealthUpdateStatus`, row by row: the first
    /// pass observes the node at `now`, the second runs `elapsed` later.
    #[test]
    fn silent_nodes_get_unknown_conditions() {
        struct Case {
            name: &'static str,
            node: Node,
            elapsed: i64,
            want: Option<Vec<(&'static str, &'static str, Option<&'static str>)>>,
        }
        let cases = vec![
            Case {
                name: "never reported, within startup grace: nothing",
                node: node0(0, &[]),
                elapsed: 0,
                want: None,
            },
            Case {
                name: "never reported, past startup grace: NodeStatusNeverUpdated",
                node: node0(-61, &[]),
                elapsed: 0,
                want: Some(vec![
                    ("Ready", "Unknown", Some("NodeStatusNeverUpdated")),
                    ("MemoryPressure", "Unknown", Some("NodeStatusNeverUpdated")),
                    ("DiskPressure", "Unknown", Some("NodeStatusNeverUpdated")),
                    ("PIDPressure", "Unknown", Some("NodeStatusNeverUpdated")),
                ]),
            },
            Case {
                name: "ready, heard from within the grace period: nothing",
                node: node0(-1000, &[("Ready", "True", 0, 0)]),
                elapsed: 50,
                want: None,
            },
            Case {
                name: "ready, silent past the grace period: NodeStatusUnknown",
                node: node0(
                    -1000,
                    &[
                        ("Ready", "True", 0, 0),
                        ("MemoryPressure", "False", 0, 0),
                        ("NetworkUnavailable", "False", 0, 0),
                    ],
                ),
                elapsed: 51,
                want: Some(vec![
                    ("Ready", "Unknown", Some("NodeStatusUnknown")),
                    ("MemoryPressure", "Unknown", Some("NodeStatusUnknown")),
                    ("NetworkUnavailable", "False", None),
                    ("DiskPressure", "Unknown", Some("NodeStatusNeverUpdated")),
                    ("PIDPressure", "Unknown", Some("NodeStatusNeverUpdated")),
                ]),
            },
            Case {
                name: "already unknown: no further update",
                node: node0(-1000, &[("Ready", "Unknown", 0, 0)]),
                elapsed: 500,
                want: None,
            },
        ];
        let grace = GracePeriods::default();
        for case in cases {
            let health = NodeHealth::observe_node(None, &case.node, t(0));
            let now = t(case.elapsed);
            let verdict = check(&case.node, &health, now, &grace);
            let got = verdict.status_update.as_deref().map(statuses);
            let want = case.want.map(|w| {
                w.into_iter()
                    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.map(str::to_string)))
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, want, "{}", case.name);
            if let Some(update) = verdict.status_update {
                let ready = update.iter().find(|c| c.type_ == "Ready");
                assert_eq!(
                    ready.and_then(|c| c.last_transition_time.clone()),
                    Some(Time(now)),
                    "{}",
                    case.name
                );
                assert_eq!(verdict.current_ready, Some(ReadyStatus::Unknown));
            }
        }
    }

    #[test]
    fn a_new_heartbeat_or_lease_renewal_moves_the_probe() {
        let n = node0(-1000, &[("Ready", "True", 0, 0)]);
        let mut h = NodeHealth::observe_node(None, &n, t(0));
        assert_eq!(h.probe, t(0));
        // Same heartbeat seen again later: no news.
        h = NodeHealth::observe_node(Some(h), &n, t(30));
        assert_eq!(h.probe, t(0));
        // A lease renewal is news.
        h.observe_lease(Some(t(25)), t(31));
        assert_eq!(h.probe, t(31));
        // The same renewal again is not.
        h.observe_lease(Some(t(25)), t(40));
        assert_eq!(h.probe, t(31));
        // A new heartbeat with the same transition: probe moves, transition stays.
        let n2 = node0(-1000, &[("Ready", "True", 40, 0)]);
        h = NodeHealth::observe_node(Some(h), &n2, t(41));
        assert_eq!((h.probe, h.ready_transition), (t(41), t(0)));
        // A new heartbeat with a new transition moves both.
        let n3 = node0(-1000, &[("Ready", "False", 45, 45)]);
        h = NodeHealth::observe_node(Some(h), &n3, t(46));
        assert_eq!((h.probe, h.ready_transition), (t(46), t(46)));
        let grace = GracePeriods::default();
        assert_eq!(check(&n3, &h, t(96), &grace).status_update, None);
        assert!(check(&n3, &h, t(97), &grace).status_update.is_some());
    }

    #[test]
    fn a_node_that_only_renews_its_lease_is_healthy() {
        let n = node0(-1000, &[]);
        let mut h = NodeHealth::observe_node(None, &n, t(0));
        h.observe_lease(Some(t(0)), t(0));
        let grace = GracePeriods::default();
        assert_eq!(check(&n, &h, t(60), &grace).status_update, None);
        assert!(check(&n, &h, t(61), &grace).status_update.is_some());
    }
}
