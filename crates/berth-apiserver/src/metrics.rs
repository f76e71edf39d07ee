//! Prometheus metrics with upstream's names and labels:
//! `apiserver_request_total{verb,group,version,resource,subresource,scope,component,code}`
//! and `apiserver_request_duration_seconds` (same labels but `code`),
//! `authentication_attempts{result}` and
//! `authorization_attempts_total{result}`, served at `/metrics` in the text
//! exposition format.
//!
//! Every label value comes from a fixed set, never from the request's
//! path, so no client can grow the number of series: as upstream, whose
//! request metrics are recorded by the handlers of installed routes only,
//! `apiserver_request_*` counts only requests that were authenticated,
//! authorized and routed to a served resource (its group, version,
//! resource and subresource are then the server's own names), with
//! upstream's verbs (`cleanVerb`: anything else is `other`). Requests
//! refused before that are counted by result only (authentication and
//! authorization attempts).

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
    #[prometheus(flatten)]
    route: DurationLabels,
    code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: &'static str,
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    subresource: &'static str,
    scope: &'static str,
    component: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<DurationLabels, Histogram, fn() -> Histogram>,
    authentications: Family<ResultLabels, Counter>,
    authorizations: Family<ResultLabels, Counter>,
}

/// How an authentication attempt ended (upstream's `result` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthenticationResult {
    Success,
    /// No credential, or one no authenticator knows.
    Failure,
    /// The authenticator itself failed.
    Error,
}

impl AuthenticationResult {
    const ALL: [AuthenticationResult; 3] = [
        AuthenticationResult::Success,
        AuthenticationResult::Failure,
        AuthenticationResult::Error,
    ];

    fn label(self) -> &'static str {
        match self {
            AuthenticationResult::Success => "success",
            AuthenticationResult::Failure => "failure",
            AuthenticationResult::Error => "error",
        }
    }
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
        let authentications = Family::<ResultLabels, Counter>::default();
        registry.register(
            "authentication_attempts",
            "Counter of authenticated attempts.",
            authentications.clone(),
        );
        let authorizations = Family::<ResultLabels, Counter>::default();
        registry.register(
            "authorization_attempts",
            "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
            authorizations.clone(),
        );
        // Every result from the start, so the set of series never changes
        // with what clients send.
        for result in AuthenticationResult::ALL {
            let _ = authentications.get_or_create(&ResultLabels { result: result.label() });
        }
        for result in ["allowed", "denied"] {
            let _ = authorizations.get_or_create(&ResultLabels { result });
        }
        Metrics { registry, requests, durations, authentications, authorizations }
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

/// Upstream's verb label (`cleanVerb`): the HTTP verb of the route, WATCH
/// and LIST told apart, APPLY for apply patches, CONNECT for log, exec,
/// attach, portforward and proxy subresources, `other` for the rest.
fn clean_verb(info: &RequestInfo, content_type: &str) -> &'static str {
    const CONNECT_SUBRESOURCES: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];
    if CONNECT_SUBRESOURCES.contains(&info.subresource.as_str()) {
        return "CONNECT";
    }
    match info.verb.as_str() {
        "get" => "GET",
        "list" => "LIST",
        "watch" => "WATCH",
        "create" => "POST",
        "update" => "PUT",
        "patch" if content_type.starts_with("application/apply-patch") => "APPLY",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => "other",
    }
}

/// Records one request that reached the handler of `served` (the resource
/// type and subresource the server matched it to).
pub fn observe(
    info: &RequestInfo,
    served: Served,
    content_type: &str,
    code: u16,
    elapsed: Duration,
) {
    let m = metrics();
    let labels = DurationLabels {
        verb: clean_verb(info, content_type),
        group: served.resource.group,
        version: served.resource.version,
        resource: served.resource.plural,
        subresource: served.subresource,
        scope: scope(info),
        component: "apiserver",
    };
    m.durations
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
    m.requests
        .get_or_create(&RequestLabels {
            route: labels,
            code,
        })
        .inc();
}

/// A request routed to a served resource: the server's own names for it.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    pub resource: &'static crate::resources::ResourceType,
    /// `""`, or one of the resource's subresources.
    pub subresource: &'static str,
}

/// Records one authentication attempt.
pub fn authentication_attempt(result: AuthenticationResult) {
    metrics()
        .authentications
        .get_or_create(&ResultLabels {
            result: result.label(),
        })
        .inc();
}

/// Records one authorization decision.
pub fn authorization_attempt(allowed: bool) {
    let result = if allowed { "allowed" } else { "denied" };
    metrics()
        .authorizations
        .get_or_create(&ResultLabels { result })
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
    crate::flow_control::encode_metrics(&mut out);
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

    fn served(resource: &'static crate::resources::ResourceType) -> Served {
        Served {
            resource,
            subresource: "",
        }
    }

    #[test]
    fn requests_are_counted_with_upstream_labels() {
        use crate::resources::{NODES, PODS};
        observe(
            &parse("GET", "/api/v1/namespaces/default/pods/web", ""),
            served(&PODS),
            "",
            200,
            Duration::from_millis(3),
        );
        observe(
            &parse("GET", "/api/v1/nodes", ""),
            served(&NODES),
            "",
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
    fn verbs_are_upstreams_clean_verbs() {
        struct Case {
            method: &'static str,
            path: &'static str,
            query: &'static str,
            content_type: &'static str,
            want: &'static str,
        }
        let pods = "/api/v1/namespaces/default/pods";
        let cases = [
            Case {
                method: "GET",
                path: "/api/v1/namespaces/default/pods/p",
                query: "",
                content_type: "",
                want: "GET",
            },
            Case {
                method: "GET",
                path: pods,
                query: "",
                content_type: "",
                want: "LIST",
            },
            Case {
                method: "GET",
                path: pods,
                query: "watch=true",
                content_type: "",
                want: "WATCH",
            },
            Case {
                method: "POST",
                path: pods,
                query: "",
                content_type: "",
                want: "POST",
            },
            Case {
                method: "PUT",
                path: "/api/v1/nodes/n",
                query: "",
                content_type: "",
                want: "PUT",
            },
            Case {
                method: "PATCH",
                path: "/api/v1/nodes/n",
                query: "",
                content_type: "application/merge-patch+json",
                want: "PATCH",
            },
            Case {
                method: "PATCH",
                path: "/api/v1/nodes/n",
                query: "",
                content_type: "application/apply-patch+yaml",
                want: "APPLY",
            },
            Case {
                method: "DELETE",
                path: pods,
                query: "",
                content_type: "",
                want: "DELETECOLLECTION",
            },
            Case {
                method: "GET",
                path: "/api/v1/namespaces/default/pods/p/log",
                query: "",
                content_type: "",
                want: "CONNECT",
            },
            Case {
                method: "BREW",
                path: pods,
                query: "",
                content_type: "",
                want: "other",
            },
        ];
        for case in cases {
            let info = parse(case.method, case.path, case.query);
            assert_eq!(
                clean_verb(&info, case.content_type),
                case.want,
                "{} {}",
                case.method,
                case.path
            );
        }
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
