//! Prometheus metrics with upstream's names and labels:
//! `apiserver_request_total{verb,group,version,resource,subresource,scope,component,code}`
//! and `apiserver_request_duration_seconds` (same labels but `code`),
//! served at `/metrics` in the text exposition format.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::request_info::RequestInfo;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: String,
    component: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: String,
    component: String,
}

struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<DurationLabels, Histogram, fn() -> Histogram>,
}

/// Upstream's buckets for `apiserver_request_duration_seconds`.
const BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

fn new_histogram() -> Histogram {
    Histogram::new(BUCKETS.iter().copied())
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = Family::<DurationLabels, Histogram, fn() -> Histogram>::new_with_constructor(new_histogram);
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            durations.clone(),
        );
        Metrics { registry, requests, durations }
    })
}

/// Upstream's scope label: `resource` (one named object), `namespace`,
/// `cluster`.
fn scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    }
}

/// Records one served request.
pub fn observe(info: &RequestInfo, code: u16, elapsed: Duration) {
    if !info.is_resource_request {
        return;
    }
    let verb = match info.verb.as_str() {
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" | "deletecollection" => "DELETE",
        "watch" => "WATCH",
        "list" => "LIST",
        _ => "GET",
    };
    let m = metrics();
    let labels = DurationLabels {
        verb: verb.into(),
        group: info.api_group.clone(),
        version: info.api_version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        scope: scope(info).into(),
        component: "apiserver".into(),
    };
    m.durations
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
    m.requests
        .get_or_create(&RequestLabels {
            verb: labels.verb,
            group: labels.group,
            version: labels.version,
            resource: labels.resource,
            subresource: labels.subresource,
            scope: labels.scope,
            component: labels.component,
            code: code.to_string(),
        })
        .inc();
}

/// Registries of the components running in this process (scheduler,
/// controllers, simulated nodes), served at `/metrics` after the API
/// server's own metrics.
static COMPONENTS: std::sync::Mutex<Vec<Registry>> = std::sync::Mutex::new(Vec::new());

/// Adds a component's metrics to what `/metrics` serves.
pub fn add_component_registry(registry: Registry) {
    COMPONENTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(registry);
}

/// The text exposition of every metric.
pub fn render() -> String {
    use prometheus_client::encoding::text::{encode_eof, encode_registry};
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode_registry(&mut out, &metrics().registry);
    for registry in COMPONENTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        let _ = encode_registry(&mut out, registry);
    }
    let _ = encode_eof(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::parse;

    #[test]
    fn requests_are_counted_with_upstream_labels() {
        observe(
            &parse("GET", "/api/v1/namespaces/default/pods/web", ""),
            200,
            Duration::from_millis(3),
        );
        observe(
            &parse("GET", "/api/v1/nodes", ""),
            200,
            Duration::from_millis(3),
        );
        let text = render();
        assert!(text.contains("apiserver_request_total{verb=\"GET\",group=\"\",version=\"v1\",resource=\"pods\",subresource=\"\",scope=\"resource\",component=\"apiserver\",code=\"200\"}"), "{text}");
        assert!(
            text.contains(
                "apiserver_request_total{verb=\"LIST\",group=\"\",version=\"v1\",resource=\"nodes\""
            ),
            "{text}"
        );
        assert!(
            text.contains("apiserver_request_duration_seconds_bucket{"),
            "{text}"
        );
    }

    #[test]
    fn component_metrics_are_served_after_the_api_servers_with_one_eof() {
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        registry.register(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods.",
            counter.clone(),
        );
        counter.inc();
        add_component_registry(registry);
        let text = render();
        assert!(
            text.contains("scheduler_schedule_attempts_total 1"),
            "{text}"
        );
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
