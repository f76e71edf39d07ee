//! Flow control's metrics, with upstream's names and labels (every label
//! value is a fixed FlowSchema or priority level name):
//! `apiserver_flowcontrol_dispatched_requests_total`,
//! `apiserver_flowcontrol_rejected_requests_total` (`reason`: `queue-full`,
//! `time-out`), `apiserver_flowcontrol_current_inqueue_requests`,
//! `apiserver_flowcontrol_current_executing_seats`,
//! `apiserver_flowcontrol_request_wait_duration_seconds` and
//! `apiserver_flowcontrol_nominal_limit_seats`.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    flow_schema: &'static str,
    priority_level: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectedLabels {
    #[prometheus(flatten)]
    flow: FlowLabels,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    priority_level: &'static str,
}

struct Metrics {
    registry: Registry,
    dispatched: Family<FlowLabels, Counter>,
    rejected: Family<RejectedLabels, Counter>,
    in_queue: Family<FlowLabels, Gauge>,
    executing: Family<FlowLabels, Gauge>,
    wait: Family<FlowLabels, Histogram, fn() -> Histogram>,
    nominal: Family<LevelLabels, Gauge>,
}

/// Upstream's buckets for the wait histogram.
fn wait_histogram() -> Histogram {
    Histogram::new([
        0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
    ])
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::default();
        let dispatched = Family::default();
        registry.register(
            "apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            dispatched.clone(),
        );
        let rejected = Family::default();
        registry.register(
            "apiserver_flowcontrol_rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            rejected.clone(),
        );
        let in_queue = Family::default();
        registry.register(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            in_queue.clone(),
        );
        let executing = Family::default();
        registry.register(
            "apiserver_flowcontrol_current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
            executing.clone(),
        );
        let wait = Family::<FlowLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            wait_histogram,
        );
        registry.register(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            wait.clone(),
        );
        let nominal = Family::default();
        registry.register(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            nominal.clone(),
        );
        Metrics {
            registry,
            dispatched,
            rejected,
            in_queue,
            executing,
            wait,
            nominal,
        }
    })
}

pub(super) fn dispatched(
    flow_schema: &'static str,
    priority_level: &'static str,
    waited: Duration,
) {
    let labels = FlowLabels {
        flow_schema,
        priority_level,
    };
    let m = metrics();
    m.dispatched.get_or_create(&labels).inc();
    m.wait.get_or_create(&labels).observe(waited.as_secs_f64());
}

pub(super) fn rejected(
    flow_schema: &'static str,
    priority_level: &'static str,
    reason: &'static str,
) {
    let flow = FlowLabels {
        flow_schema,
        priority_level,
    };
    metrics()
        .rejected
        .get_or_create(&RejectedLabels { flow, reason })
        .inc();
}

pub(super) fn executing(flow_schema: &'static str, priority_level: &'static str, delta: i64) {
    let labels = FlowLabels {
        flow_schema,
        priority_level,
    };
    metrics().executing.get_or_create(&labels).inc_by(delta);
}

pub(super) fn nominal_seats(priority_level: &'static str, seats: usize) {
    let seats = i64::try_from(seats).unwrap_or(i64::MAX);
    metrics()
        .nominal
        .get_or_create(&LevelLabels { priority_level })
        .set(seats);
}

/// A request counted in its queue while it waits.
pub(super) struct InQueue(FlowLabels);

impl InQueue {
    pub(super) fn enter(flow_schema: &'static str, priority_level: &'static str) -> InQueue {
        let labels = FlowLabels {
            flow_schema,
            priority_level,
        };
        metrics().in_queue.get_or_create(&labels).inc();
        InQueue(labels)
    }
}

impl Drop for InQueue {
    fn drop(&mut self) {
        metrics().in_queue.get_or_create(&self.0).dec();
    }
}

/// Appends the flow-control metrics to a text exposition.
pub fn encode(out: &mut String) {
    let _ = prometheus_client::encoding::text::encode_registry(out, &metrics().registry);
}
