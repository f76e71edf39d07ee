//! The node status loop, as upstream's `syncNodeStatus`: status is
//! computed every `nodeStatusUpdateFrequency` (10 s) and written when it
//! changed (other than heartbeat times) or when the last write is
//! `nodeStatusReportFrequency` (5 min) old.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::NodeCondition;
use serde_json::{Value, json};

use crate::conditions::{Health, conditions_changed, node_conditions};
use crate::registration::NodeTemplate;

/// What was last written, and when.
#[derive(Debug, Clone)]
pub struct StatusReporter {
    report_frequency: Duration,
    last_conditions: Vec<NodeCondition>,
    last_write: Option<tokio::time::Instant>,
}

impl StatusReporter {
    /// A reporter that starts from the conditions the stored Node carries.
    pub fn new(report_frequency: Duration, stored: Vec<NodeCondition>) -> Self {
        StatusReporter {
            report_frequency,
            last_conditions: stored,
            last_write: None,
        }
    }

    /// The status patch to write now, if any: the conditions computed from
    /// `health` and `not_ready`, plus capacity, allocatable, addresses and
    /// nodeInfo from `template`.
    pub fn due(
        &self,
        template: &NodeTemplate,
        health: Health,
        not_ready: &[String],
        now: Timestamp,
        instant: tokio::time::Instant,
    ) -> Option<(Value, Vec<NodeCondition>)> {
        let conditions = node_conditions(health, not_ready, &self.last_conditions, now);
        let stale = self
            .last_write
            .is_none_or(|last| instant.duration_since(last) >= self.report_frequency);
        if !stale && !conditions_changed(&self.last_conditions, &conditions) {
            return None;
        }
        Some((status_patch(template, &conditions), conditions))
    }

    /// Records a successful write.
    pub fn written(&mut self, conditions: Vec<NodeCondition>, instant: tokio::time::Instant) {
        self.last_conditions = conditions;
        self.last_write = Some(instant);
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

    #[tokio::test(start_paused = true)]
    async fn status_is_written_when_it_changes_or_every_report_period() {
        let template = NodeTemplate::default();
        let mut reporter = StatusReporter::new(Duration::from_secs(300), Vec::new());
        let start = tokio::time::Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let healthy = Health::default();
        let (_, first) = reporter
            .due(&template, healthy, &[], t(0), at(0))
            .expect("the first status is written");
        reporter.written(first, at(0));
        for s in (10..300).step_by(10) {
            assert!(
                reporter
                    .due(&template, healthy, &[], t(s as i64), at(s))
                    .is_none(),
                "unchanged at {s}s"
            );
        }
        let (_, c) = reporter
            .due(&template, healthy, &[], t(300), at(300))
            .expect("written after 5 minutes unchanged");
        reporter.written(c, at(300));
        let pressured = Health {
            disk_pressure: true,
            ..healthy
        };
        let (patch, c) = reporter
            .due(&template, pressured, &[], t(310), at(310))
            .expect("a change is written at once");
        assert_eq!(patch["status"]["conditions"][1]["status"], "True");
        reporter.written(c, at(310));
        assert!(
            reporter
                .due(&template, pressured, &[], t(320), at(320))
                .is_none()
        );
    }
}
