//! The node status loop, as upstream's `syncNodeStatus` /
//! `tryUpdateNodeStatus`: every `nodeStatusUpdateFrequency` (10 s) the
//! agent reads its Node from the server, computes its conditions against
//! it ([`berth_core::node_status`]), and patches the status when it differs
//! from the server's (other than in heartbeat times) or when the last
//! report is `nodeStatusReportFrequency` (5 min) old. A node the node
//! lifecycle controller marked Unknown is so Ready again at the next
//! computation, not at the next report.

use std::time::Duration;

use berth_core::node_status::differs_from_server;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::NodeCondition;
use serde_json::{Value, json};

use crate::conditions::{Health, node_conditions};
use crate::registration::NodeTemplate;

/// When the status was last reported.
#[derive(Debug, Clone)]
pub struct StatusReporter {
    report_frequency: Duration,
    last_report: Option<tokio::time::Instant>,
}

impl StatusReporter {
    pub fn new(report_frequency: Duration) -> Self {
        StatusReporter {
            report_frequency,
            last_report: None,
        }
    }

    /// The status patch to write now, if any: the conditions computed from
    /// `health` and `not_ready` against `server` (the Node's conditions on
    /// the server), plus capacity, allocatable, addresses and nodeInfo from
    /// `template`. Only the conditions are compared with the server's: the
    /// rest is fixed for the agent's life and goes with its first report.
    pub fn due(
        &self,
        template: &NodeTemplate,
        server: &[NodeCondition],
        health: Health,
        not_ready: &[String],
        now: Timestamp,
        instant: tokio::time::Instant,
    ) -> Option<Value> {
        let conditions = node_conditions(health, not_ready, server, now);
        let stale = self
            .last_report
            .is_none_or(|last| instant.duration_since(last) >= self.report_frequency);
        if !stale && !differs_from_server(server, &conditions) {
            return None;
        }
        Some(status_patch(template, &conditions))
    }

    /// Records a successful report.
    pub fn reported(&mut self, instant: tokio::time::Instant) {
        self.last_report = Some(instant);
    }
}

/// The strategic merge patch of a node's status (conditions merge by type).
pub fn status_patch(template: &NodeTemplate, conditions: &[NodeCondition]) -> Value {
    let mut patch = json!({
        "status": {
            "conditions": conditions,
            "capacity": template.capacity,
            "allocatable": template.allocatable,
            "addresses": template.addresses,
            "nodeInfo": template.node_info,
        }
    });
    if let Some(endpoints) = template.daemon_endpoints() {
        patch["status"]["daemonEndpoints"] = json!(endpoints);
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// The conditions a patch carries, as the server then holds them.
    fn conditions(patch: &Value) -> Vec<NodeCondition> {
        serde_json::from_value(patch["status"]["conditions"].clone()).unwrap_or_default()
    }

    /// A reporter that made its first report at `at(0)` of a healthy node,
    /// the conditions on the server after it, and `at` (seconds to instants).
    fn first_report() -> (
        StatusReporter,
        Vec<NodeCondition>,
        impl Fn(u64) -> tokio::time::Instant,
    ) {
        let mut reporter = StatusReporter::new(Duration::from_secs(300));
        let start = tokio::time::Instant::now();
        let at = move |s: u64| start + Duration::from_secs(s);
        let first = reporter
            .due(
                &NodeTemplate::default(),
                &[],
                Health::default(),
                &[],
                t(0),
                at(0),
            )
            .expect("the first status is written");
        reporter.reported(at(0));
        (reporter, conditions(&first), at)
    }

    #[tokio::test(start_paused = true)]
    async fn status_is_written_when_it_differs_from_the_server_or_every_report_period() {
        let template = NodeTemplate::default();
        let healthy = Health::default();
        let (mut reporter, mut server, at) = first_report();
        for s in (10..300).step_by(10) {
            assert!(
                reporter
                    .due(&template, &server, healthy, &[], t(s as i64), at(s))
                    .is_none(),
                "unchanged at {s}s"
            );
        }
        let report = reporter
            .due(&template, &server, healthy, &[], t(300), at(300))
            .expect("written after 5 minutes unchanged");
        reporter.reported(at(300));
        server = conditions(&report);
        let pressured = Health {
            disk_pressure: true,
            ..healthy
        };
        let patch = reporter
            .due(&template, &server, pressured, &[], t(310), at(310))
            .expect("a change is written at once");
        assert_eq!(patch["status"]["conditions"][1]["status"], "True");
        reporter.reported(at(310));
        server = conditions(&patch);
        assert!(
            reporter
                .due(&template, &server, pressured, &[], t(320), at(320))
                .is_none()
        );
    }

    /// The node lifecycle controller overwrote Ready with Unknown while the
    /// agent was paused: the agent's own last report still said Ready, and
    /// comparing with it wrote nothing until the report period ran out.
    #[tokio::test(start_paused = true)]
    async fn a_node_marked_unknown_by_the_controller_is_ready_again_at_the_next_computation() {
        let (reporter, mut server, at) = first_report();
        for c in &mut server {
            c.status = "Unknown".into();
            c.reason = Some("NodeStatusUnknown".into());
            c.message = Some("Kubelet stopped posting node status.".into());
            c.last_transition_time =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(62)));
        }
        let patch = reporter
            .due(
                &NodeTemplate::default(),
                &server,
                Health::default(),
                &[],
                t(70),
                at(70),
            )
            .expect("Ready again 70 s after the last report, not at 300 s");
        let ready = &patch["status"]["conditions"][3];
        assert_eq!(
            (&ready["type"], &ready["status"]),
            (&json!("Ready"), &json!("True"))
        );
        let written: Vec<NodeCondition> = conditions(&patch);
        assert!(
            written
                .iter()
                .all(|c| c.last_transition_time.as_ref().map(|t| t.0) == Some(t(70))),
            "every condition changed status: {written:?}"
        );
    }
}
