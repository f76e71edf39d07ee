//! The kubelet's rules for the node conditions it reports, decided against
//! the Node on the server (upstream's `tryUpdateNodeStatus`: the node is
//! read, the status setters of `pkg/kubelet/nodestatus/setters.go` run on
//! it, and the status is patched when `nodeStatusHasChanged`, or when the
//! last report is `nodeStatusReportFrequency` old).
//!
//! Comparing with the server, not with the agent's own last write, is what
//! brings a node back at once after the node lifecycle controller set its
//! conditions to Unknown: the agent's last write still says Ready, the
//! server does not.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A condition as a kubelet decides it, before its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided<'a> {
    pub type_: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
}

/// The condition to report at `now`: `lastHeartbeatTime` is now, and
/// `lastTransitionTime` carries over from the server's condition of the
/// same type while its status is the same, else it is now (the setters).
pub fn condition(server: &[NodeCondition], decided: Decided, now: Timestamp) -> NodeCondition {
    condition_since(decided, held_since(server, decided), now)
}

/// The transition time the server holds for `decided`'s type, when it
/// holds it with the same status: what [`condition`] carries over.
pub fn held_since(server: &[NodeCondition], decided: Decided) -> Option<Timestamp> {
    server
        .iter()
        .find(|c| c.type_ == decided.type_ && c.status == decided.status)
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// [`condition`] with the carried-over transition time already known
/// ([`held_since`]; `None`: it transitions now).
pub fn condition_since(
    decided: Decided,
    since: Option<Timestamp>,
    now: Timestamp,
) -> NodeCondition {
    NodeCondition {
        type_: decided.type_.to_string(),
        status: decided.status.to_string(),
        reason: Some(decided.reason.to_string()),
        message: Some(decided.message.to_string()),
        last_heartbeat_time: Some(Time(now)),
        last_transition_time: Some(Time(since.unwrap_or(now))),
    }
}

/// Whether the computed conditions differ from the server's other than in
/// heartbeat times: a status to write at once rather than at the report
/// frequency (`nodeConditionsHaveChanged`). Conditions the kubelet does not
/// set (another component's) are left as they are on the server, on both
/// sides of upstream's comparison, so they do not count.
pub fn differs_from_server(server: &[NodeCondition], computed: &[NodeCondition]) -> bool {
    computed.iter().any(|c| {
        !server.iter().any(|s| {
            s.type_ == c.type_
                && s.status == c.status
                && s.reason == c.reason
                && s.message == c.message
                && s.last_transition_time == c.last_transition_time
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn on_server(type_: &str, status: &str, reason: &str, transition: i64) -> NodeCondition {
        NodeCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(format!("{reason} message")),
            last_heartbeat_time: Some(Time(t(transition))),
            last_transition_time: Some(Time(t(transition))),
        }
    }

    const READY: Decided = Decided {
        type_: "Ready",
        status: "True",
        reason: "KubeletReady",
        message: "KubeletReady message",
    };

    #[test]
    fn the_transition_time_comes_from_the_server_while_the_status_holds() {
        struct Case {
            name: &'static str,
            server: Vec<NodeCondition>,
            want_transition: i64,
            want_differs: bool,
        }
        let cases = [
            Case {
                name: "never reported",
                server: vec![],
                want_transition: 100,
                want_differs: true,
            },
            Case {
                name: "Ready on the server: only the heartbeat moves",
                server: vec![on_server("Ready", "True", "KubeletReady", 10)],
                want_transition: 10,
                want_differs: false,
            },
            Case {
                name: "the controller set it Unknown: Ready again, now",
                server: vec![on_server("Ready", "Unknown", "NodeStatusUnknown", 60)],
                want_transition: 100,
                want_differs: true,
            },
            Case {
                name: "same status, another reason: carried over, but a change",
                server: vec![on_server("Ready", "True", "SomethingElse", 10)],
                want_transition: 10,
                want_differs: true,
            },
            Case {
                name: "another component's condition does not count",
                server: vec![
                    on_server("NetworkUnavailable", "False", "RouteCreated", 5),
                    on_server("Ready", "True", "KubeletReady", 10),
                ],
                want_transition: 10,
                want_differs: false,
            },
        ];
        for case in cases {
            let computed = condition(&case.server, READY, t(100));
            assert_eq!(
                computed.last_transition_time,
                Some(Time(t(case.want_transition))),
                "{}",
                case.name
            );
            assert_eq!(computed.last_heartbeat_time, Some(Time(t(100))));
            assert_eq!(
                differs_from_server(&case.server, &[computed]),
                case.want_differs,
                "{}",
                case.name
            );
        }
    }
}
