//! The controllers' Prometheus metrics, with upstream's names:
//! `node_collector_evictions_total{zone}`, `node_collector_zone_health{zone}`,
//! `node_collector_zone_size{zone}`, `node_collector_unhealthy_nodes_in_zone{zone}`
//! (node lifecycle), `taint_eviction_controller_pod_deletions_total`,
//! `taint_eviction_controller_pod_deletion_duration_seconds` (taint eviction),
//! `pod_gc_collector_force_delete_pods_total{namespace,reason}`,
//! `pod_gc_collector_force_delete_pod_errors_total{namespace,reason}` (pod
//! garbage collector),
//! `garbagecollector_controller_resources_sync_error_total` (garbage
//! collector), `replicaset_controller_sorting_deletion_age_ratio` (ReplicaSet),
//! `statefulset_controller_statefulset_max_unavailable` and
//! `statefulset_controller_statefulset_unavailable_replicas`
//! `{statefulset_namespace, statefulset_name, pod_management_policy}`
//! (StatefulSet; a set's series go with it), and
//! client-go's `workqueue_depth`, `workqueue_adds_total`,
//! `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds` and
//! `workqueue_retries_total` per work queue (`name`: `replicaset`,
//! `deployment`, `daemonset`, `statefulset`).
//!
//! [`ControllerMetrics::register`] adds them to a [`Registry`] (the server
//! hands that to its `/metrics`).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ZoneLabel {
    pub zone: String,
}

/// The pod garbage collector's labels: the pod's namespace and why it was
/// collected (one of four reasons).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodGcLabels {
    pub namespace: String,
    pub reason: String,
}

/// The labels of the StatefulSet gauges (upstream's).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatefulSetLabels {
    pub statefulset_namespace: String,
    pub statefulset_name: String,
    pub pod_management_policy: String,
}

/// A work queue's name (a fixed set: one per controller).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    pub name: &'static str,
}

/// client-go's work queue latency buckets: 10 ns to 10 s, tenfold.
fn queue_latency() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1e-8, 10.0, 10,
    ))
}

type QueueHistograms = Family<QueueLabel, Histogram, fn() -> Histogram>;

/// One work queue's metrics (see [`ControllerMetrics::queue`]).
#[derive(Clone, Debug)]
pub struct QueueMetrics {
    pub depth: Gauge,
    pub adds: Counter,
    pub queue_duration: Histogram,
    pub work_duration: Histogram,
    pub retries: Counter,
}

/// Upstream's buckets for the pod deletion latency (seconds from the due
/// time to the deletion).
const DELETION_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 30.0, 60.0, 120.0, 180.0, 240.0,
];

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric of the controllers. Cheap to clone (shared handles).
#[derive(Clone)]
pub struct ControllerMetrics {
    pub evictions: Family<ZoneLabel, Counter>,
    pub zone_health: Family<ZoneLabel, FloatGauge>,
    pub zone_size: Family<ZoneLabel, FloatGauge>,
    pub unhealthy_nodes: Family<ZoneLabel, FloatGauge>,
    pub pod_deletions: Counter,
    pub pod_deletion_duration: Histogram,
    pub pod_gc_force_deletes: Family<PodGcLabels, Counter>,
    pub pod_gc_force_delete_errors: Family<PodGcLabels, Counter>,
    pub gc_resources_sync_errors: Counter,
    pub sorting_deletion_age_ratio: Histogram,
    pub statefulset_max_unavailable: Family<StatefulSetLabels, Gauge>,
    pub statefulset_unavailable_replicas: Family<StatefulSetLabels, Gauge>,
    queue_depth: Family<QueueLabel, Gauge>,
    queue_adds: Family<QueueLabel, Counter>,
    queue_duration: QueueHistograms,
    work_duration: QueueHistograms,
    queue_retries: Family<QueueLabel, Counter>,
}

impl std::fmt::Debug for ControllerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerMetrics").finish_non_exhaustive()
    }
}

impl Default for ControllerMetrics {
    /// Metrics in no registry (tests, benchmarks).
    fn default() -> Self {
        ControllerMetrics::register(&mut Registry::default())
    }
}

impl ControllerMetrics {
    /// The metrics, registered in `registry`.
    pub fn register(registry: &mut Registry) -> ControllerMetrics {
        let evictions = Family::<ZoneLabel, Counter>::default();
        let zone_health = Family::<ZoneLabel, FloatGauge>::default();
        let zone_size = Family::<ZoneLabel, FloatGauge>::default();
        let unhealthy_nodes = Family::<ZoneLabel, FloatGauge>::default();
        let pod_deletions = Counter::default();
        let pod_deletion_duration = Histogram::new(DELETION_BUCKETS.iter().copied());
        let pod_gc_force_deletes = Family::<PodGcLabels, Counter>::default();
        let pod_gc_force_delete_errors = Family::<PodGcLabels, Counter>::default();
        let gc_resources_sync_errors = Counter::default();
        // Upstream's ExponentialBuckets(0.25, 2, 6).
        let sorting_deletion_age_ratio = Histogram::new(
            prometheus_client::metrics::histogram::exponential_buckets(0.25, 2.0, 6),
        );
        let queue_depth = Family::<QueueLabel, Gauge>::default();
        let queue_adds = Family::<QueueLabel, Counter>::default();
        let queue_duration = QueueHistograms::new_with_constructor(queue_latency);
        let work_duration = QueueHistograms::new_with_constructor(queue_latency);
        let queue_retries = Family::<QueueLabel, Counter>::default();
        // prometheus-client appends `_total` to counters.
        registry.register(
            "node_collector_evictions",
            "Number of Node evictions that happened since current instance of NodeController started.",
            evictions.clone(),
        );
        registry.register(
            "node_collector_zone_health",
            "Gauge measuring percentage of healthy nodes per zone.",
            zone_health.clone(),
        );
        registry.register(
            "node_collector_zone_size",
            "Gauge measuring number of registered Nodes per zones.",
            zone_size.clone(),
        );
        registry.register(
            "node_collector_unhealthy_nodes_in_zone",
            "Gauge measuring number of not Ready Nodes per zones.",
            unhealthy_nodes.clone(),
        );
        registry.register(
            "taint_eviction_controller_pod_deletions",
            "Total number of Pods deleted by TaintEvictionController since its start.",
            pod_deletions.clone(),
        );
        registry.register(
            "taint_eviction_controller_pod_deletion_duration_seconds",
            "Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion via TaintEvictionController.",
            pod_deletion_duration.clone(),
        );
        registry.register(
            "pod_gc_collector_force_delete_pods",
            "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
            pod_gc_force_deletes.clone(),
        );
        registry.register(
            "pod_gc_collector_force_delete_pod_errors",
            "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
            pod_gc_force_delete_errors.clone(),
        );
        registry.register(
            "garbagecollector_controller_resources_sync_error",
            "Number of garbage collector resources sync errors",
            gc_resources_sync_errors.clone(),
        );
        registry.register(
            "replicaset_controller_sorting_deletion_age_ratio",
            "The ratio of chosen deleted pod's ages to the current youngest pod's age (at the time). Should be <2. The intent of this metric is to measure the rough efficacy of the LogarithmicScaleDown feature gate's effect on the sorting (and deletion) of pods when a replicaset scales down. This only considers Ready pods when calculating and reporting.",
            sorting_deletion_age_ratio.clone(),
        );
        let statefulset_max_unavailable = Family::<StatefulSetLabels, Gauge>::default();
        let statefulset_unavailable_replicas = Family::<StatefulSetLabels, Gauge>::default();
        registry.register(
            "statefulset_controller_statefulset_max_unavailable",
            "Maximum number of unavailable pods allowed during StatefulSet rolling updates",
            statefulset_max_unavailable.clone(),
        );
        registry.register(
            "statefulset_controller_statefulset_unavailable_replicas",
            "Current number of unavailable pods in StatefulSet",
            statefulset_unavailable_replicas.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            queue_depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            queue_adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            work_duration.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            queue_retries.clone(),
        );
        ControllerMetrics {
            evictions,
            zone_health,
            zone_size,
            unhealthy_nodes,
            pod_deletions,
            pod_deletion_duration,
            pod_gc_force_deletes,
            pod_gc_force_delete_errors,
            gc_resources_sync_errors,
            sorting_deletion_age_ratio,
            statefulset_max_unavailable,
            statefulset_unavailable_replicas,
            queue_depth,
            queue_adds,
            queue_duration,
            work_duration,
            queue_retries,
        }
    }

    /// The metrics of the work queue called `name`.
    pub fn queue(&self, name: &'static str) -> QueueMetrics {
        let label = QueueLabel { name };
        QueueMetrics {
            depth: self.queue_depth.get_or_create(&label).clone(),
            adds: self.queue_adds.get_or_create(&label).clone(),
            queue_duration: self.queue_duration.get_or_create(&label).clone(),
            work_duration: self.work_duration.get_or_create(&label).clone(),
            retries: self.queue_retries.get_or_create(&label).clone(),
        }
    }

    pub fn zone(zone: &str) -> ZoneLabel {
        ZoneLabel {
            zone: zone.to_string(),
        }
    }

    pub fn pod_gc(namespace: &str, reason: &str) -> PodGcLabels {
        PodGcLabels {
            namespace: namespace.to_string(),
            reason: reason.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_names_are_exposed() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry);
        m.evictions
            .get_or_create(&ControllerMetrics::zone("z1"))
            .inc();
        m.zone_size
            .get_or_create(&ControllerMetrics::zone("z1"))
            .set(3.0);
        m.pod_deletions.inc();
        m.pod_deletion_duration.observe(0.01);
        m.pod_gc_force_deletes
            .get_or_create(&ControllerMetrics::pod_gc("default", "orphaned"))
            .inc();
        m.gc_resources_sync_errors.inc();
        m.sorting_deletion_age_ratio.observe(1.0);
        m.statefulset_max_unavailable
            .get_or_create(&StatefulSetLabels {
                statefulset_namespace: "default".into(),
                statefulset_name: "web".into(),
                pod_management_policy: "OrderedReady".into(),
            })
            .set(2);
        let queue = m.queue("replicaset");
        queue.adds.inc();
        queue.depth.set(2);
        queue.queue_duration.observe(0.001);
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode_registry(&mut text, &registry);
        for name in [
            "node_collector_evictions_total{zone=\"z1\"} 1",
            "node_collector_zone_size{zone=\"z1\"} 3.0",
            "taint_eviction_controller_pod_deletions_total 1",
            "taint_eviction_controller_pod_deletion_duration_seconds_bucket",
            "pod_gc_collector_force_delete_pods_total{namespace=\"default\",reason=\"orphaned\"} 1",
            "garbagecollector_controller_resources_sync_error_total 1",
            "replicaset_controller_sorting_deletion_age_ratio_bucket",
            "statefulset_controller_statefulset_max_unavailable{statefulset_namespace=\"default\",statefulset_name=\"web\",pod_management_policy=\"OrderedReady\"} 2",
            "workqueue_adds_total{name=\"replicaset\"} 1",
            "workqueue_depth{name=\"replicaset\"} 2",
            "workqueue_queue_duration_seconds_count{name=\"replicaset\"} 1",
        ] {
            assert!(text.contains(name), "{name} in\n{text}");
        }
    }
}
