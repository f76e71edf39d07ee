//! berth-controllers: the controllers that keep node health and taints true,
//! evict what must leave, run the workloads, and collect what nothing owns
//! any more.
//!
//! - [`node_lifecycle`]: upstream's node lifecycle controller. Heartbeats
//!   ([`node_lifecycle::health`]), condition taints
//!   ([`node_lifecycle::taints`]), zone disruption states
//!   ([`node_lifecycle::zone`]) and per-zone rate-limited NoExecute tainting
//!   ([`node_lifecycle::rate_limited_queue`]).
//! - [`taint_eviction`]: upstream's taint eviction controller, with due
//!   times computed from the objects ([`taint_eviction::due`]) and kept in
//!   a [`taint_eviction::schedule::EvictionSchedule`], so a pod that
//!   tolerates a NoExecute taint for N seconds leaves N seconds after the
//!   taint was added, also across restarts.
//! - [`garbage_collector`]: upstream's garbage collector over every served
//!   type: dependents of deleted owners deleted, orphaned or deleted first
//!   as `propagationPolicy` asked.
//! - [`pod_gc`]: upstream's pod garbage collector: pods of deleted nodes,
//!   terminating pods no kubelet will finish, terminated pods over the
//!   threshold.
//! - [`replicaset`]: upstream's ReplicaSet controller: pods created and
//!   deleted to match `replicas` (slow start, expectations, upstream's
//!   deletion ranking), adoption and release, status.
//! - [`deployment`]: upstream's Deployment controller: ReplicaSets per
//!   template, RollingUpdate and Recreate rollouts, proportional scaling,
//!   revisions and their cleanup, pause, the Progressing and Available
//!   conditions.
//! - [`daemonset`]: upstream's DaemonSet controller: a pod on every node
//!   that should run one, scheduled by the default scheduler through a
//!   per-node affinity, rolled by maxUnavailable/maxSurge or on delete.
//! - [`statefulset`]: upstream's StatefulSet controller: stable pod
//!   names, ordered or parallel creation, partitioned rolling updates.
//! - [`disruption`]: upstream's disruption controller: each
//!   PodDisruptionBudget's expected, desired and healthy pods and the
//!   disruptions allowed, which the Eviction API spends.
//! - What the controllers share: [`work_queue`] (client-go's work queue,
//!   as plain data and as the rate-limited queue the workload controllers'
//!   workers take keys from), [`watched_pod`] (what the controllers decode
//!   of a Pod), [`pod_writes`] (the pod writes of taint eviction and pod
//!   GC); the workload controllers' [`cache`] (their copies of the watched
//!   types), [`controller_refs`] (adoption and release), [`pod_control`]
//!   (pod creates and deletes with their Events) and [`workload`] (the
//!   DaemonSet and StatefulSet controllers' writes behind one trait with a
//!   recording fake, and which controller an object's change wakes).
//! - [`metrics`]: `node_collector_*`, `taint_eviction_controller_*`,
//!   `pod_gc_collector_*`, `garbagecollector_controller_*`,
//!   `replicaset_controller_*`, `statefulset_controller_*` and
//!   `workqueue_*`.
//!
//! Each controller is an ordinary Kubernetes client (`kube::Client`) that
//! watches what it needs and keeps it in memory; inside `berth server` the
//! client is the in-process one. The controllers [`spawn`] starts share one
//! watch of Pods and one of Nodes (berth-client's `SharedWatches`): each
//! change is decoded once and the same `Arc` handed to each. Every timestamp and wait goes through
//! [`berth_core::clock::Clock`], so a whole cluster runs on virtual time in
//! tests.
//!
//! ```no_run
//! # async fn f(client: kube::Client) {
//! use berth_controllers::{ControllerOptions, spawn};
//! let metrics = berth_controllers::metrics::ControllerMetrics::default();
//! let clock = berth_core::clock::Clock::real();
//! let tasks = spawn(client, clock, ControllerOptions::default(), metrics, None);
//! # drop(tasks);
//! # }
//! ```

pub mod cache;
pub mod controller_refs;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod events;
pub mod garbage_collector;
pub mod metrics;
pub mod node_lifecycle;
pub mod pod_control;
pub mod pod_gc;
pub mod pod_writes;
pub mod replicaset;
mod shared;
pub mod statefulset;
pub mod sync_error;
pub mod taint_eviction;
pub mod watched_pod;
pub mod work_queue;
pub mod workload;

use berth_client::SharedWatches;
use berth_core::clock::Clock;
use tokio::sync::watch;
use tokio::task::JoinSet;

use daemonset::{DaemonSetConfig, DaemonSetController};
use deployment::{DeploymentConfig, DeploymentController};
use disruption::{DisruptionConfig, DisruptionController};
use garbage_collector::{GarbageCollector, GarbageCollectorConfig};
use metrics::ControllerMetrics;
use node_lifecycle::{NodeLifecycleConfig, NodeLifecycleController};
use pod_gc::{PodGcConfig, PodGcController};
use replicaset::{ReplicaSetConfig, ReplicaSetController};
use statefulset::{StatefulSetConfig, StatefulSetController};
use taint_eviction::{TaintEvictionConfig, TaintEvictionController};

/// Every controller this crate has, by upstream name.
pub const ALL_CONTROLLERS: &[&str] = &[
    node_lifecycle::CONTROLLER_NAME,
    taint_eviction::CONTROLLER_NAME,
    garbage_collector::CONTROLLER_NAME,
    pod_gc::CONTROLLER_NAME,
    replicaset::CONTROLLER_NAME,
    deployment::CONTROLLER_NAME,
    daemonset::CONTROLLER_NAME,
    statefulset::CONTROLLER_NAME,
    disruption::CONTROLLER_NAME,
];

/// The older names upstream still accepts in `--controllers`, each with the
/// name it stands for (kube-controller-manager's `ControllerDescriptor`
/// aliases, from before the controllers were named `*-controller`).
/// taint-eviction-controller came after the rename and has none.
pub const CONTROLLER_ALIASES: &[(&str, &str)] = &[
    ("nodelifecycle", node_lifecycle::CONTROLLER_NAME),
    ("garbagecollector", garbage_collector::CONTROLLER_NAME),
    ("podgc", pod_gc::CONTROLLER_NAME),
    ("replicaset", replicaset::CONTROLLER_NAME),
    ("deployment", deployment::CONTROLLER_NAME),
    ("daemonset", daemonset::CONTROLLER_NAME),
    ("statefulset", statefulset::CONTROLLER_NAME),
];

/// A bad `--controllers` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllersError {
    #[error("unknown controller {0:?} (known: {known})", known = ALL_CONTROLLERS.join(", "))]
    Unknown(String),
}

/// `--controllers`: upstream's syntax. `*` turns on every controller that
/// is on by default, `name` turns one on, `-name` turns it off; the
/// default is `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnabledControllers {
    items: Vec<String>,
}

impl Default for EnabledControllers {
    fn default() -> Self {
        EnabledControllers {
            items: vec!["*".into()],
        }
    }
}

impl EnabledControllers {
    /// Parses a comma-separated list; an alias (`nodelifecycle`) stands
    /// for its controller's name, as upstream translates it.
    pub fn parse(value: &str) -> Result<EnabledControllers, ControllersError> {
        let items: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| {
                let (minus, name) = match item.strip_prefix('-') {
                    Some(name) => ("-", name),
                    None => ("", item),
                };
                let name = CONTROLLER_ALIASES
                    .iter()
                    .find(|(alias, _)| *alias == name)
                    .map_or(name, |(_, canonical)| canonical);
                format!("{minus}{name}")
            })
            .collect();
        for item in &items {
            let name = item.strip_prefix('-').unwrap_or(item);
            if name != "*" && !ALL_CONTROLLERS.contains(&name) {
                return Err(ControllersError::Unknown(name.to_string()));
            }
        }
        Ok(EnabledControllers { items })
    }

    /// upstream `IsControllerEnabled`: an explicit `name` or `-name` wins,
    /// else `*` (all of this crate's are on by default).
    pub fn is_enabled(&self, name: &str) -> bool {
        let mut star = false;
        for item in &self.items {
            if item == name {
                return true;
            }
            if item.strip_prefix('-') == Some(name) {
                return false;
            }
            if item == "*" {
                star = true;
            }
        }
        star
    }
}

/// Settings of every controller.
#[derive(Debug, Clone, Default)]
pub struct ControllerOptions {
    pub enabled: EnabledControllers,
    pub node_lifecycle: NodeLifecycleConfig,
    pub taint_eviction: TaintEvictionConfig,
    pub garbage_collector: GarbageCollectorConfig,
    pub pod_gc: PodGcConfig,
    pub replicaset: ReplicaSetConfig,
    pub deployment: DeploymentConfig,
    pub daemonset: DaemonSetConfig,
    pub statefulset: StatefulSetConfig,
    pub disruption: DisruptionConfig,
}

/// Starts the enabled controllers as tasks of the returned set (dropping it
/// stops them). With a `leading` signal each runs only while it reads true
/// (see `berth_leader::run_while_leading`: a lost lease stops it at once); without one they run unconditionally.
pub fn spawn(
    client: kube::Client,
    clock: Clock,
    options: ControllerOptions,
    metrics: ControllerMetrics,
    leading: Option<watch::Receiver<berth_leader::Standing>>,
) -> JoinSet<()> {
    spawn_sharing(SharedWatches::new(client), clock, options, metrics, leading)
}

/// [`spawn`] with the process's shared watches (and their client): one
/// watch of Pods and one of Nodes for all the controllers (and every lease
/// they hold in turn) and whatever else of the process subscribes, each
/// change decoded once: upstream's shared informer factory.
pub fn spawn_sharing(
    watches: SharedWatches,
    clock: Clock,
    options: ControllerOptions,
    metrics: ControllerMetrics,
    leading: Option<watch::Receiver<berth_leader::Standing>>,
) -> JoinSet<()> {
    let c = (&watches, &clock, &metrics);
    let controllers = [
        (
            node_lifecycle::CONTROLLER_NAME,
            starter(
                c,
                options.node_lifecycle,
                NodeLifecycleController::new,
                |x| x.run(),
            ),
        ),
        (
            taint_eviction::CONTROLLER_NAME,
            starter(
                c,
                options.taint_eviction,
                TaintEvictionController::new,
                |x| x.run(),
            ),
        ),
        (
            garbage_collector::CONTROLLER_NAME,
            starter(c, options.garbage_collector, GarbageCollector::new, |x| {
                x.run()
            }),
        ),
        (
            pod_gc::CONTROLLER_NAME,
            starter(c, options.pod_gc, PodGcController::new, |x| x.run()),
        ),
        (
            replicaset::CONTROLLER_NAME,
            starter(c, options.replicaset, ReplicaSetController::new, |x| {
                x.run()
            }),
        ),
        (
            deployment::CONTROLLER_NAME,
            starter(c, options.deployment, DeploymentController::new, |x| {
                x.run()
            }),
        ),
        (
            daemonset::CONTROLLER_NAME,
            starter(
                c,
                options.daemonset,
                DaemonSetController::new,
                |x: DaemonSetController<_>| x.run(),
            ),
        ),
        (
            statefulset::CONTROLLER_NAME,
            starter(
                c,
                options.statefulset,
                StatefulSetController::new,
                |x: StatefulSetController<_>| x.run(),
            ),
        ),
        (
            disruption::CONTROLLER_NAME,
            starter(c, options.disruption, DisruptionController::new, |x| {
                x.run()
            }),
        ),
    ];
    let mut tasks = JoinSet::new();
    for (name, make) in controllers {
        if !options.enabled.is_enabled(name) {
            continue;
        }
        match leading.clone() {
            Some(leading) => tasks.spawn(berth_leader::run_while_leading(leading, make)),
            None => tasks.spawn(make()),
        };
    }
    tasks
}

/// A controller's run, as [`spawn`] starts it (again after each lost and
/// regained lease).
type ControllerFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// What a controller is built from: the process's shared watches (the
/// controllers that follow every Pod or Node, the taint eviction controller
/// and pod GC taking their projections from them), or just the client
/// (those that follow other types only).
trait Source: Sized {
    fn of(watches: &SharedWatches) -> Self;
}

impl Source for SharedWatches {
    fn of(watches: &SharedWatches) -> Self {
        watches.clone()
    }
}

impl Source for kube::Client {
    fn of(watches: &SharedWatches) -> Self {
        watches.client().clone()
    }
}

/// How [`spawn`] makes a controller's run: every controller is built from
/// its source, the clock, its settings and the metrics, then run.
fn starter<S, C, X, F>(
    (watches, clock, metrics): (&SharedWatches, &Clock, &ControllerMetrics),
    config: C,
    new: fn(S, Clock, C, ControllerMetrics) -> X,
    run: fn(X) -> F,
) -> Box<dyn Fn() -> ControllerFuture + Send + Sync>
where
    S: Source + 'static,
    C: Clone + Send + Sync + 'static,
    X: 'static,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let (watches, clock, metrics) = (watches.clone(), clock.clone(), metrics.clone());
    Box::new(move || {
        let controller = new(
            S::of(&watches),
            clock.clone(),
            config.clone(),
            metrics.clone(),
        );
        Box::pin(run(controller))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream `--controllers` semantics.
    #[test]
    fn controllers_flag_as_upstream() {
        let nl = node_lifecycle::CONTROLLER_NAME;
        let te = taint_eviction::CONTROLLER_NAME;
        let cases: &[(&str, bool, bool)] = &[
            ("*", true, true),
            ("", false, false),
            ("*,-taint-eviction-controller", true, false),
            ("-node-lifecycle-controller,*", false, true),
            ("node-lifecycle-controller", true, false),
            ("nodelifecycle,taint-eviction-controller", true, true),
            ("*,-nodelifecycle", false, true),
        ];
        for (value, want_nl, want_te) in cases {
            let enabled = EnabledControllers::parse(value).unwrap_or_default();
            assert_eq!(enabled.is_enabled(nl), *want_nl, "{value:?} {nl}");
            assert_eq!(enabled.is_enabled(te), *want_te, "{value:?} {te}");
        }
        assert_eq!(
            EnabledControllers::parse("*,-bogus"),
            Err(ControllersError::Unknown("bogus".into()))
        );
        assert!(EnabledControllers::default().is_enabled(nl));
        let workloads = EnabledControllers::parse("*,-daemonset-controller");
        assert_eq!(
            workloads.map(|e| (
                e.is_enabled(daemonset::CONTROLLER_NAME),
                e.is_enabled(statefulset::CONTROLLER_NAME)
            )),
            Ok((false, true))
        );
    }
}
