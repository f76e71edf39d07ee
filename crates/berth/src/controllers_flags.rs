//! The controllers' flags, with kube-controller-manager's names and
//! defaults, shared by `berth server` and `berth controllers`, and the
//! controllers' start over a client (the in-process one or a kubeconfig's).

use berth_core::duration::parse_duration;
use std::time::Duration;

use crate::components::Running;
use crate::leader_election::Election;
use berth_client::SharedWatches;
use berth_controllers::daemonset::DaemonSetConfig;
use berth_controllers::deployment::DeploymentConfig;
use berth_controllers::disruption::DisruptionConfig;
use berth_controllers::garbage_collector::GarbageCollectorConfig;
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::node_lifecycle::NodeLifecycleConfig;
use berth_controllers::node_lifecycle::health::GracePeriods;
use berth_controllers::pod_gc::PodGcConfig;
use berth_controllers::replicaset::ReplicaSetConfig;
use berth_controllers::statefulset::StatefulSetConfig;
use berth_controllers::taint_eviction::TaintEvictionConfig;
use berth_controllers::{ControllerOptions, EnabledControllers};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_core::zone::ZoneRates;
use clap::Args;

#[derive(Debug, Args)]
pub struct ControllerFlags {
    /// Controllers to run: '*' all, 'foo' one, '-foo' not that one
    /// (node-lifecycle-controller, taint-eviction-controller,
    /// garbage-collector-controller, pod-garbage-collector-controller,
    /// replicaset-controller, deployment-controller, daemonset-controller,
    /// statefulset-controller; upstream's aliases too: nodelifecycle,
    /// garbagecollector, podgc, replicaset, deployment, daemonset,
    /// statefulset).
    #[arg(long, default_value = "*", value_name = "NAME,...", value_parser = parse_controllers)]
    controllers: EnabledControllers,
    /// How often the node lifecycle controller checks node health.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    node_monitor_period: Duration,
    /// How long a node may be silent before it is marked Unknown.
    #[arg(long, default_value = "50s", value_parser = parse_duration)]
    node_monitor_grace_period: Duration,
    /// How long a new node may take to report Ready before it is marked Unknown.
    #[arg(long, default_value = "1m0s", value_parser = parse_duration)]
    node_startup_grace_period: Duration,
    /// Nodes per second to taint NoExecute in a healthy zone.
    #[arg(long, default_value_t = 0.1)]
    node_eviction_rate: f32,
    /// Nodes per second to taint NoExecute in a partially disrupted large zone.
    #[arg(long, default_value_t = 0.01)]
    secondary_node_eviction_rate: f32,
    /// Share of not-Ready nodes (more than 2) that makes a zone partially disrupted.
    #[arg(long, default_value_t = 0.55)]
    unhealthy_zone_threshold: f32,
    /// Zones of at most this many nodes stop tainting when partially disrupted.
    #[arg(long, default_value_t = 50)]
    large_cluster_size_threshold: u32,
    /// Terminated pods kept before the pod garbage collector deletes the
    /// oldest; 0 or less keeps them all.
    #[arg(long, default_value_t = 12500, allow_negative_numbers = true)]
    terminated_pod_gc_threshold: i64,
    /// How often the pod garbage collector runs a pass. Not a
    /// kube-controller-manager flag (upstream's constant `gcCheckPeriod`):
    /// berth's, so that tests need not wait for it.
    #[arg(long, default_value = "20s", value_name = "DURATION", value_parser = parse_period)]
    pod_gc_check_period: Duration,
    /// How long the pod garbage collector waits, after it first misses a
    /// pod's node, before it asks the API whether the node is gone and
    /// deletes the pod. Not a kube-controller-manager flag (upstream's
    /// constant `quarantineTime`): berth's, so that tests need not wait for it.
    #[arg(long, default_value = "40s", value_name = "DURATION", value_parser = parse_duration)]
    pod_gc_quarantine_time: Duration,
    /// Garbage collector workers per queue.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    concurrent_gc_syncs: u32,
    /// ReplicaSets synced at once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    concurrent_replicaset_syncs: u32,
    /// Deployments synced at once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    concurrent_deployment_syncs: u32,
    /// DaemonSets synced at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    concurrent_daemonset_syncs: u32,
    /// StatefulSets synced at once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    concurrent_statefulset_syncs: u32,
}

/// A period between passes: a duration above zero (zero would run the
/// passes back to back, a busy loop).
fn parse_period(value: &str) -> Result<Duration, String> {
    match parse_duration(value) {
        Ok(period) if period.is_zero() => Err("must be more than 0s".to_string()),
        Ok(period) => Ok(period),
        Err(e) => Err(e.to_string()),
    }
}

impl ControllerFlags {
    /// The controllers these flags turn on, by upstream name.
    pub fn enabled_names(&self) -> Vec<&'static str> {
        berth_controllers::ALL_CONTROLLERS
            .iter()
            .copied()
            .filter(|name| self.controllers.is_enabled(name))
            .collect()
    }

    /// The node lifecycle controller's zone rates and thresholds (the
    /// controller and the live page's zone states both use them).
    pub fn zone_rates(&self) -> ZoneRates {
        ZoneRates {
            eviction_qps: self.node_eviction_rate,
            secondary_eviction_qps: self.secondary_node_eviction_rate,
            large_cluster_threshold: self.large_cluster_size_threshold,
            unhealthy_zone_threshold: self.unhealthy_zone_threshold,
        }
    }
}

fn parse_controllers(value: &str) -> Result<EnabledControllers, String> {
    EnabledControllers::parse(value).map_err(|e| e.to_string())
}

/// Starts the controllers over `watches` (the process's shared Pod and Node
/// watches, and the client of everything else), with an `election` only while
/// this process holds the Lease `(namespace, name)`; their metrics join
/// the API server's `/metrics` when it runs in this process. Dropping the
/// returned set stops them.
pub fn start(
    watches: SharedWatches,
    clock: Clock,
    flags: &ControllerFlags,
    gates: FeatureGates,
    election: Option<(&Election, (String, String))>,
) -> Running {
    let options = ControllerOptions {
        enabled: flags.controllers.clone(),
        node_lifecycle: NodeLifecycleConfig {
            node_monitor_period: flags.node_monitor_period,
            grace: GracePeriods {
                monitor: flags.node_monitor_grace_period,
                startup: flags.node_startup_grace_period,
            },
            rates: flags.zone_rates(),
        },
        taint_eviction: TaintEvictionConfig {
            gates,
            ..TaintEvictionConfig::default()
        },
        garbage_collector: GarbageCollectorConfig {
            workers: flags.concurrent_gc_syncs as usize,
            ..GarbageCollectorConfig::default()
        },
        pod_gc: PodGcConfig {
            terminated_pod_threshold: flags.terminated_pod_gc_threshold,
            check_period: flags.pod_gc_check_period,
            quarantine_time: flags.pod_gc_quarantine_time,
        },
        replicaset: ReplicaSetConfig {
            workers: flags.concurrent_replicaset_syncs as usize,
        },
        deployment: DeploymentConfig {
            workers: flags.concurrent_deployment_syncs as usize,
        },
        daemonset: DaemonSetConfig {
            workers: usize::try_from(flags.concurrent_daemonset_syncs).unwrap_or(1),
            gates,
            ..DaemonSetConfig::default()
        },
        statefulset: StatefulSetConfig {
            workers: usize::try_from(flags.concurrent_statefulset_syncs).unwrap_or(1),
            gates,
        },
        disruption: DisruptionConfig::default(),
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ControllerMetrics::register(&mut registry);
    berth_apiserver::metrics::add_component_registry(registry);
    let leadership = election
        .map(|(election, lock)| election.spawn(watches.client().clone(), clock.clone(), lock));
    let leading = leadership.as_ref().map(berth_leader::Leadership::subscribe);
    let tasks = berth_controllers::spawn_sharing(watches, clock, options, metrics, leading);
    Running::new(tasks, leadership)
}
