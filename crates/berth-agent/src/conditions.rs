//! The node conditions an agent reports, as upstream's node status setters
//! (`pkg/kubelet/nodestatus/setters.go`) compute them: MemoryPressure,
//! DiskPressure and PIDPressure from the agent's [`Health`] (the host's
//! signals against the hard eviction thresholds,
//! [`crate::eviction_thresholds`]), and Ready from the agent's own health. Each carries
//! upstream's reason and message; `lastHeartbeatTime` is the time of
//! computation and `lastTransitionTime` moves only when the status does.

use berth_core::node_status::Decided;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::NodeCondition;

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
