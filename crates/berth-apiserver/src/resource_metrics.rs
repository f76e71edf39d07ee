//! The resource metrics API, `metrics.k8s.io/v1beta1` (what metrics-server
//! serves and `kubectl top` reads): NodeMetrics and PodMetrics made from
//! the agents' Summaries (`/stats/summary`, [`berth_core::node_stats`]).
//! Here: the discovery entries and the conversion of figures into
//! objects, with metrics-server's shapes and quantities; fetching and
//! serving is `api/resource_metrics.rs`.
//!
//! k8s-openapi has no type for these (metrics-server's, not the API
//! server's), so objects are JSON in upstream's field names; the protobuf
//! encoding knows their messages (berth-proto).

use berth_core::node_stats::{ContainerStats, CpuStats, MemoryStats, NodeStats, PodStats};
use serde_json::{Value, json};

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";

/// The served resources: (plural, kind, namespaced).
const RESOURCES: [(&str, &str, bool); 2] = [
    ("nodes", "NodeMetrics", false),
    ("pods", "PodMetrics", true),
];

/// Read-only, as metrics-server serves them.
const VERBS: [&str; 2] = ["get", "list"];

/// The resources of the legacy discovery document.
pub fn legacy_resources() -> Vec<Value> {
    RESOURCES
        .iter()
        .map(|(plural, kind, namespaced)| {
            json!({"name": plural, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": VERBS})
        })
        .collect()
}

/// The resources of aggregated discovery.
pub fn aggregated_resources() -> Vec<Value> {
    RESOURCES
        .iter()
        .map(|(plural, kind, namespaced)| {
            json!({
                "resource": plural,
                "responseKind": {"group": GROUP, "version": VERSION, "kind": kind},
                "scope": if *namespaced { "Namespaced" } else { "Cluster" },
                "singularResource": "", "verbs": VERBS,
            })
        })
        .collect()
}

/// The kind of a served plural.
pub fn kind(plural: &str) -> Option<&'static str> {
    RESOURCES
        .iter()
        .find(|(p, _, _)| *p == plural)
        .map(|(_, kind, _)| *kind)
}

/// CPU in nanocores as metrics-server writes it
/// (`resource.NewScaledQuantity(n, -9)`, canonical): the largest of
/// cores, m, u, n that holds it exactly.
pub fn cpu_quantity(nano_cores: u64) -> String {
    if nano_cores == 0 {
        return "0".into();
    }
    for (divisor, suffix) in [(1_000_000_000, ""), (1_000_000, "m"), (1_000, "u")] {
        if nano_cores.is_multiple_of(divisor) {
            return format!("{}{suffix}", nano_cores / divisor);
        }
    }
    format!("{nano_cores}n")
}

/// Memory in bytes as metrics-server writes it (`resource.BinarySI`,
/// canonical): the largest of Ei..Ki that holds it exactly, else bytes.
pub fn memory_quantity(bytes: u64) -> String {
    if bytes == 0 {
        return "0".into();
    }
    for (shift, suffix) in [
        (60, "Ei"),
        (50, "Pi"),
        (40, "Ti"),
        (30, "Gi"),
        (20, "Mi"),
        (10, "Ki"),
    ] {
        if bytes.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// `usage` from a cpu and a memory figure; `None` when either is missing
/// (metrics-server leaves such an object out).
fn usage(cpu: Option<&CpuStats>, memory: Option<&MemoryStats>) -> Option<(Value, String)> {
    let cpu_stats = cpu?;
    let nano = cpu_stats.usage_nano_cores?;
    let bytes = memory?.working_set_bytes?;
    Some((
        json!({"cpu": cpu_quantity(nano), "memory": memory_quantity(bytes)}),
        cpu_stats.time.clone(),
    ))
}

/// The `window` field: how long a figure is averaged over.
fn window() -> String {
    format!("{}s", berth_core::node_stats::WINDOW.as_secs())
}

/// A Node's NodeMetrics from its agent's figures, `now` its creation time
/// (metrics-server's objects are made when asked for); `None` without
/// figures.
pub fn node_metrics(node: &Value, stats: &NodeStats, now: &str) -> Option<Value> {
    let (usage, timestamp) = usage(stats.cpu.as_ref(), stats.memory.as_ref())?;
    let mut metadata = json!({"name": node.pointer("/metadata/name")?, "creationTimestamp": now});
    if let Some(labels) = node.pointer("/metadata/labels") {
        metadata["labels"] = labels.clone();
    }
    Some(json!({
        "kind": "NodeMetrics", "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": metadata, "timestamp": timestamp, "window": window(), "usage": usage,
    }))
}

/// A pod's PodMetrics from its agent's figures; `None` when a container
/// lacks figures (metrics-server leaves the pod out then).
pub fn pod_metrics(pod: &Value, stats: &PodStats, now: &str) -> Option<Value> {
    let mut timestamp = String::new();
    let containers = stats
        .containers
        .iter()
        .map(|ContainerStats { name, cpu, memory }| {
            let (usage, time) = usage(cpu.as_ref(), memory.as_ref())?;
            timestamp = time;
            Some(json!({"name": name, "usage": usage}))
        })
        .collect::<Option<Vec<Value>>>()?;
    let mut metadata = json!({
        "name": pod.pointer("/metadata/name")?,
        "namespace": pod.pointer("/metadata/namespace")?,
        "creationTimestamp": now,
    });
    if let Some(labels) = pod.pointer("/metadata/labels") {
        metadata["labels"] = labels.clone();
    }
    Some(json!({
        "kind": "PodMetrics", "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": metadata, "timestamp": timestamp, "window": window(),
        "containers": containers,
    }))
}

/// A list of `kind` (`NodeMetricsList`, `PodMetricsList`).
pub fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({
        "kind": format!("{kind}List"), "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {}, "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::node_stats::{PodReference, Usage};

    #[test]
    fn quantities_are_written_as_metrics_server_writes_them() {
        struct Case {
            nano_cores: u64,
            bytes: u64,
            cpu: &'static str,
            memory: &'static str,
        }
        let cases = [
            Case {
                nano_cores: 250_000_000,
                bytes: 64 << 20,
                cpu: "250m",
                memory: "64Mi",
            },
            Case {
                nano_cores: 2_000_000_000,
                bytes: 3 << 30,
                cpu: "2",
                memory: "3Gi",
            },
            Case {
                nano_cores: 123_456_789,
                bytes: 1_536_000,
                cpu: "123456789n",
                memory: "1500Ki",
            },
            Case {
                nano_cores: 5_000,
                bytes: 1_000_001,
                cpu: "5u",
                memory: "1000001",
            },
            Case {
                nano_cores: 0,
                bytes: 0,
                cpu: "0",
                memory: "0",
            },
        ];
        for Case {
            nano_cores,
            bytes,
            cpu,
            memory,
        } in cases
        {
            assert_eq!(cpu_quantity(nano_cores), cpu, "{nano_cores}");
            assert_eq!(memory_quantity(bytes), memory, "{bytes}");
        }
    }

    #[test]
    fn metrics_objects_have_metrics_servers_shape() {
        let figures = Usage {
            nano_cores: 250_000_000,
            memory_bytes: 64 << 20,
        };
        let (cpu, memory) = figures.stats("2026-01-01T00:00:10Z");
        let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a"}}});
        let stats = NodeStats {
            node_name: "n1".into(),
            cpu: Some(cpu.clone()),
            memory: Some(memory.clone()),
        };
        assert_eq!(
            node_metrics(&node, &stats, "2026-01-01T00:00:11Z"),
            Some(json!({
                "kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:11Z", "labels": {"zone": "a"}},
                "timestamp": "2026-01-01T00:00:10Z", "window": "10s",
                "usage": {"cpu": "250m", "memory": "64Mi"},
            }))
        );
        let pod = json!({"metadata": {"name": "web", "namespace": "shop"}});
        let container = |memory: Option<MemoryStats>| ContainerStats {
            name: "app".into(),
            cpu: Some(cpu.clone()),
            memory,
        };
        let pod_stats = |memory| PodStats {
            pod_ref: PodReference {
                name: "web".into(),
                namespace: "shop".into(),
                uid: "u".into(),
            },
            containers: vec![container(memory)],
        };
        assert_eq!(
            pod_metrics(&pod, &pod_stats(Some(memory)), "2026-01-01T00:00:11Z"),
            Some(json!({
                "kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:11Z"},
                "timestamp": "2026-01-01T00:00:10Z", "window": "10s",
                "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}}],
            }))
        );
        assert_eq!(
            pod_metrics(&pod, &pod_stats(None), "t"),
            None,
            "a container without figures leaves the pod out"
        );
    }
}
