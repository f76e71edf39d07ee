//! The agent's Prometheus metrics, with upstream's kubelet names:
//! `kubelet_graceful_shutdown_start_time_seconds` and
//! `kubelet_graceful_shutdown_end_time_seconds` (Unix seconds).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The agent's metrics and their registry.
#[derive(Debug)]
pub struct AgentMetrics {
    registry: Mutex<Registry>,
    pub graceful_shutdown_start_time_seconds: Gauge<f64, AtomicU64>,
    pub graceful_shutdown_end_time_seconds: Gauge<f64, AtomicU64>,
}

impl Default for AgentMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kubelet");
        let start = Gauge::<f64, AtomicU64>::default();
        let end = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "graceful_shutdown_start_time_seconds",
            "Last graceful shutdown start time since unix epoch in seconds",
            start.clone(),
        );
        registry.register(
            "graceful_shutdown_end_time_seconds",
            "Last graceful shutdown end time since unix epoch in seconds",
            end.clone(),
        );
        AgentMetrics {
            registry: Mutex::new(registry),
            graceful_shutdown_start_time_seconds: start,
            graceful_shutdown_end_time_seconds: end,
        }
    }
}

impl AgentMetrics {
    /// The metrics in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Unix seconds of a timestamp, with fractions.
pub fn unix_seconds(t: jiff::Timestamp) -> f64 {
    t.as_millisecond() as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_times_render_under_upstream_names() {
        let m = AgentMetrics::default();
        m.graceful_shutdown_start_time_seconds.set(1700000000.5);
        let text = m.render();
        assert!(
            text.contains("kubelet_graceful_shutdown_start_time_seconds 1700000000.5"),
            "{text}"
        );
        assert!(
            text.contains("kubelet_graceful_shutdown_end_time_seconds 0"),
            "{text}"
        );
    }
}
