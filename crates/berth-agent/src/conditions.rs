//! The node conditions an agent reports, as upstream's node status setters
//! (`pkg/kubelet/nodestatus/setters.go`) compute them: MemoryPressure,
//! DiskPressure and PIDPressure from the host's signals against the hard
//! eviction thresholds, and Ready from the agent's own health. Each carries
//! upstream's reason and message; `lastHeartbeatTime` is the time of
//! computation and `lastTransitionTime` moves only when the status does.

use std::collections::BTreeMap;

use berth_core::node_status::Decided;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::NodeCondition;

use crate::host::HostSignals;

/// One eviction threshold: an absolute amount or a share of capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Bytes(u64),
    Percent(f64),
}

impl Threshold {
    /// Parses `100Mi`, `1Gi`, `4096` or `10%`.
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let text = text.trim();
        if let Some(percent) = text.strip_suffix('%') {
            let p: f64 = percent
                .parse()
                .map_err(|_| format!("invalid percentage {text:?}"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("percentage {text:?} out of range"));
            }
            return Ok(Threshold::Percent(p));
        }
        let q: berth_core::quantity::Quantity = text
            .parse()
            .map_err(|e| format!("invalid quantity {text:?}: {e}"))?;
        u64::try_from(q.value())
            .map(Threshold::Bytes)
            .map_err(|_| format!("negative threshold {text:?}"))
    }

    /// The threshold in units for a resource of `capacity` units.
    pub fn absolute(&self, capacity: u64) -> u64 {
        match *self {
            Threshold::Bytes(b) => b,
            Threshold::Percent(p) => (capacity as f64 * p / 100.0) as u64,
        }
    }

    /// Whether `available` of `capacity` is below the threshold.
    pub fn crossed(&self, available: u64, capacity: u64) -> bool {
        available < self.absolute(capacity)
    }
}

/// The hard eviction thresholds the pressure conditions use.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    pub memory_available: Threshold,
    pub nodefs_available: Threshold,
    pub nodefs_inodes_free: Option<Threshold>,
    pub pid_available: Option<Threshold>,
}

impl Thresholds {
    /// From `evictionHard` (`memory.available: 100Mi`, ...); signals berth
    /// does not watch (`imagefs.*`) are accepted and ignored.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Thresholds, String> {
        let get = |signal: &str| -> Result<Option<Threshold>, String> {
            map.get(signal)
                .map(|v| Threshold::parse(v).map_err(|e| format!("evictionHard[{signal}]: {e}")))
                .transpose()
        };
        Ok(Thresholds {
            memory_available: get("memory.available")?.unwrap_or(Threshold::Bytes(0)),
            nodefs_available: get("nodefs.available")?.unwrap_or(Threshold::Bytes(0)),
            nodefs_inodes_free: get("nodefs.inodesFree")?,
            pid_available: get("pid.available")?,
        })
    }

    /// Which pressures the signals show: (memory, disk, pid).
    pub fn pressures(&self, s: &HostSignals) -> (bool, bool, bool) {
        let memory = self
            .memory_available
            .crossed(s.memory_available, s.memory_capacity);
        let disk = self
            .nodefs_available
            .crossed(s.nodefs_available, s.nodefs_capacity)
            || self.nodefs_inodes_free.is_some_and(|t| {
                s.nodefs_inodes > 0 && t.crossed(s.nodefs_inodes_free, s.nodefs_inodes)
            });
        let pid = self
            .pid_available
            .is_some_and(|t| t.crossed(s.pid_max.saturating_sub(s.pids_in_use), s.pid_max));
        (memory, disk, pid)
    }
}

/// Upstream's reasons and messages: (type, (reason, message) when False,
/// (reason, message) when True).
type PressureText = (
    &'static str,
    (&'static str, &'static str),
    (&'static str, &'static str),
);

const MEMORY: PressureText = (
    "MemoryPressure",
    (
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    (
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
    ),
);
const DISK: PressureText = (
    "DiskPressure",
    ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("KubeletHasDiskPressure", "kubelet has disk pressure"),
);
const PID: PressureText = (
    "PIDPressure",
    (
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
    ),
    (
        "KubeletHasInsufficientPID",
        "kubelet has insufficient PID available",
    ),
);

/// Ready=True's reason and message.
pub const READY_REASON: &str = "KubeletReady";
pub const READY_MESSAGE: &str = "kubelet is posting ready status";
/// Ready=False's reason; the message lists what is wrong.
pub const NOT_READY_REASON: &str = "KubeletNotReady";
/// The not-ready error while the node shuts down (upstream's
/// `ShutdownStatus`).
pub const SHUTTING_DOWN: &str = "node is shutting down";

/// What the conditions are computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Health {
    pub memory_pressure: bool,
    pub disk_pressure: bool,
    pub pid_pressure: bool,
}

fn pressure(text: PressureText, on: bool) -> Decided<'static> {
    let (type_, off_text, on_text) = text;
    let (reason, message) = if on { on_text } else { off_text };
    Decided {
        type_,
        status: if on { "True" } else { "False" },
        reason,
        message,
    }
}

/// The four conditions before their times, in upstream's order:
/// MemoryPressure, DiskPressure, PIDPressure, Ready. `not_ready` says what
/// keeps the node from being Ready (`None`: Ready).
pub fn decide(health: Health, not_ready: Option<&str>) -> [Decided<'_>; 4] {
    let ready = match not_ready {
        None => Decided {
            type_: "Ready",
            status: "True",
            reason: READY_REASON,
            message: READY_MESSAGE,
        },
        Some(message) => Decided {
            type_: "Ready",
            status: "False",
            reason: NOT_READY_REASON,
            message,
        },
    };
    [
        pressure(MEMORY, health.memory_pressure),
        pressure(DISK, health.disk_pressure),
        pressure(PID, health.pid_pressure),
        ready,
    ]
}

/// The four conditions of [`decide`] at `now`. `not_ready` lists what
/// keeps the node from being Ready (empty: Ready); `server` are the Node's
/// conditions on the server, whose transition times carry over while a
/// status holds.
pub fn node_conditions(
    health: Health,
    not_ready: &[String],
    server: &[NodeCondition],
    now: Timestamp,
) -> Vec<NodeCondition> {
    let message = not_ready.join(", ");
    decide(health, (!not_ready.is_empty()).then_some(message.as_str()))
        .into_iter()
        .map(|decided| berth_core::node_status::condition(server, decided, now))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::node_status::differs_from_server;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    const GI: u64 = 1024 * 1024 * 1024;
    const MI: u64 = 1024 * 1024;

    fn healthy() -> HostSignals {
        HostSignals {
            memory_capacity: 8 * GI,
            memory_available: 4 * GI,
            nodefs_capacity: 100 * GI,
            nodefs_available: 50 * GI,
            nodefs_inodes: 1_000_000,
            nodefs_inodes_free: 900_000,
            pid_max: 4_194_304,
            pids_in_use: 500,
        }
    }

    #[test]
    fn thresholds_parse_like_eviction_hard_values() {
        let cases: &[(&str, Option<Threshold>)] = &[
            ("100Mi", Some(Threshold::Bytes(100 * MI))),
            ("10%", Some(Threshold::Percent(10.0))),
            ("1Gi", Some(Threshold::Bytes(GI))),
            ("150%", None),
            ("lots", None),
            ("-1", None),
        ];
        for (text, want) in cases {
            assert_eq!(Threshold::parse(text).ok(), *want, "{text}");
        }
    }

    #[test]
    fn pressure_comes_from_upstream_hard_eviction_defaults() {
        let thresholds =
            Thresholds::from_map(&crate::config::default_eviction_hard()).expect("thresholds");
        let cases: &[(&str, HostSignals, (bool, bool, bool))] = &[
            ("healthy host", healthy(), (false, false, false)),
            (
                "memory.available < 100Mi",
                HostSignals {
                    memory_available: 99 * MI,
                    ..healthy()
                },
                (true, false, false),
            ),
            (
                "memory.available exactly 100Mi is not pressure",
                HostSignals {
                    memory_available: 100 * MI,
                    ..healthy()
                },
                (false, false, false),
            ),
            (
                "nodefs.available < 10%",
                HostSignals {
                    nodefs_available: 9 * GI,
                    ..healthy()
                },
                (false, true, false),
            ),
            (
                "nodefs.inodesFree < 5%",
                HostSignals {
                    nodefs_inodes_free: 40_000,
                    ..healthy()
                },
                (false, true, false),
            ),
            (
                "pid.available < 10%",
                HostSignals {
                    pid_max: 1000,
                    pids_in_use: 950,
                    ..healthy()
                },
                (false, false, true),
            ),
        ];
        for (name, signals, want) in cases {
            assert_eq!(thresholds.pressures(signals), *want, "{name}");
        }
    }

    #[test]
    fn conditions_carry_upstream_reasons_and_messages() {
        let c = node_conditions(Health::default(), &[], &[], t(0));
        let got: Vec<(&str, &str, &str, &str)> = c
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status.as_str(),
                    c.reason.as_deref().unwrap_or(""),
                    c.message.as_deref().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available"
                ),
                (
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure"
                ),
                (
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available"
                ),
                (
                    "Ready",
                    "True",
                    "KubeletReady",
                    "kubelet is posting ready status"
                ),
            ]
        );
        let pressured = node_conditions(
            Health {
                memory_pressure: true,
                disk_pressure: true,
                pid_pressure: true,
            },
            &[SHUTTING_DOWN.to_string()],
            &[],
            t(0),
        );
        let reasons: Vec<&str> = pressured
            .iter()
            .filter_map(|c| c.reason.as_deref())
            .collect();
        assert_eq!(
            reasons,
            vec![
                "KubeletHasInsufficientMemory",
                "KubeletHasDiskPressure",
                "KubeletHasInsufficientPID",
                "KubeletNotReady"
            ]
        );
        assert_eq!(
            pressured[3].message.as_deref(),
            Some("node is shutting down")
        );
    }

    #[test]
    fn transition_time_moves_only_when_the_status_does() {
        let first = node_conditions(Health::default(), &[], &[], t(0));
        let same = node_conditions(Health::default(), &[], &first, t(10));
        assert_eq!(same[3].last_transition_time, Some(Time(t(0))));
        assert_eq!(same[3].last_heartbeat_time, Some(Time(t(10))));
        assert!(!differs_from_server(&first, &same), "only heartbeats moved");
        let pressured = node_conditions(
            Health {
                memory_pressure: true,
                ..Health::default()
            },
            &[],
            &same,
            t(20),
        );
        assert_eq!(pressured[0].last_transition_time, Some(Time(t(20))));
        assert_eq!(pressured[1].last_transition_time, Some(Time(t(0))));
        assert!(differs_from_server(&same, &pressured));
    }
}
