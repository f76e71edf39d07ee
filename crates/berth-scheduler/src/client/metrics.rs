//! The scheduler's Prometheus metrics, with upstream's names:
//! `scheduler_schedule_attempts_total{result,profile}`,
//! `scheduler_scheduling_attempt_duration_seconds{result,profile}`,
//! `scheduler_pending_pods{queue}`, `scheduler_preemption_attempts_total`
//! and `scheduler_preemption_victims`. One set per process, like upstream's
//! legacy registry; [`registry`] hands it to whoever serves `/metrics`.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::queue::PendingCounts;

/// An attempt's outcome, upstream's `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    Scheduled,
    Unschedulable,
    Error,
}

impl AttemptResult {
    fn label(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttemptLabels {
    result: &'static str,
    profile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
}

struct Metrics {
    attempts: Family<AttemptLabels, Counter>,
    durations: Family<AttemptLabels, Histogram, fn() -> Histogram>,
    pending: Family<QueueLabels, Gauge>,
    preemption_attempts: Counter,
    preemption_victims: Histogram,
}

/// Upstream's buckets: `ExponentialBuckets(0.001, 2, 15)`.
fn new_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        attempts: Family::default(),
        durations: Family::new_with_constructor(new_histogram),
        pending: Family::default(),
        preemption_attempts: Counter::default(),
        // Upstream's: `ExponentialBuckets(1, 2, 7)`.
        preemption_victims: Histogram::new(exponential_buckets(1.0, 2.0, 7)),
    })
}

/// A registry holding the scheduler's metrics (they share their values
/// with every other registry made here).
pub fn registry() -> Registry {
    let m = metrics();
    let mut registry = Registry::default();
    registry.register(
        "scheduler_schedule_attempts",
        "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
        m.attempts.clone(),
    );
    registry.register(
        "scheduler_scheduling_attempt_duration_seconds",
        "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
        m.durations.clone(),
    );
    registry.register(
        "scheduler_pending_pods",
        "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
        m.pending.clone(),
    );
    registry.register(
        "scheduler_preemption_attempts",
        "Total preemption attempts in the cluster till now",
        m.preemption_attempts.clone(),
    );
    registry.register(
        "scheduler_preemption_victims",
        "Number of selected preemption victims",
        m.preemption_victims.clone(),
    );
    registry
}

/// One run of the PostFilter (upstream counts every one, eligible or not).
pub fn observe_preemption_attempt() {
    metrics().preemption_attempts.inc();
}

/// The victims of one preemption.
pub fn observe_preemption_victims(victims: usize) {
    metrics().preemption_victims.observe(victims as f64);
}

/// Counts one attempt and its duration.
pub fn observe_attempt(profile: &str, result: AttemptResult, duration: Duration) {
    let labels = AttemptLabels {
        result: result.label(),
        profile: profile.to_string(),
    };
    let m = metrics();
    m.attempts.get_or_create(&labels).inc();
    m.durations
        .get_or_create(&labels)
        .observe(duration.as_secs_f64());
}

/// How many attempts ended with `result` so far (for tests and benchmarks).
pub fn attempts(profile: &str, result: AttemptResult) -> u64 {
    metrics()
        .attempts
        .get_or_create(&AttemptLabels {
            result: result.label(),
            profile: profile.to_string(),
        })
        .get()
}

/// Sets the pending-pods gauges.
pub fn set_pending(counts: PendingCounts) {
    let m = metrics();
    let set = |queue: &'static str, n: usize| {
        m.pending
            .get_or_create(&QueueLabels { queue })
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    };
    set("active", counts.active);
    set("backoff", counts.backoff);
    set("unschedulable", counts.unschedulable);
    set("gated", counts.gated);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_have_upstream_names_and_labels() {
        observe_attempt(
            "metrics-test",
            AttemptResult::Scheduled,
            Duration::from_millis(3),
        );
        set_pending(PendingCounts {
            active: 1,
            backoff: 2,
            unschedulable: 3,
            gated: 0,
        });
        observe_preemption_attempt();
        observe_preemption_victims(3);
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry());
        for want in [
            "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"metrics-test\"} 1",
            "scheduler_scheduling_attempt_duration_seconds_bucket{le=\"0.004\",result=\"scheduled\",profile=\"metrics-test\"} 1",
            "scheduler_pending_pods{queue=\"unschedulable\"} 3",
            "scheduler_preemption_attempts_total ",
            "scheduler_preemption_victims_bucket{le=\"4.0\"} ",
        ] {
            assert!(text.contains(want), "{want} not in {text}");
        }
        assert_eq!(attempts("metrics-test", AttemptResult::Scheduled), 1);
    }
}
