//! The seam where the control plane's components plug into a run.
//!
//! A component (the scheduler, the controllers) is an ordinary Kubernetes
//! client of the in-process API server. The run starts each one on the
//! virtual clock and stops and starts it again for a `restart` step.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_controllers::ControllerOptions;
use berth_controllers::daemonset::DaemonSetConfig;
use berth_controllers::metrics::ControllerMetrics;
use berth_controllers::node_lifecycle::NodeLifecycleConfig;
use berth_controllers::node_lifecycle::health::GracePeriods;
use berth_controllers::statefulset::StatefulSetConfig;
use berth_controllers::taint_eviction::TaintEvictionConfig;
use berth_core::clock::Clock;
use berth_core::zone::ZoneRates;
use berth_scheduler::client::SchedulerConfig;
use berth_scheduler::cycle::Profile;
use tokio_util::sync::CancellationToken;

use crate::config::SimConfig;

/// A running component: a future the run spawns and, to stop it, cancels
/// `stop` for and then drops.
pub type ComponentFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What a component gets when it starts.
#[derive(Clone)]
pub struct ComponentContext {
    /// The API server; make clients with `berth_apiserver::in_process`.
    pub api: Arc<ApiServer>,
    pub clock: Clock,
    pub config: SimConfig,
    /// Seed for every random choice the component makes (tie-breaks,
    /// jitter), so runs repeat. Differs per component and per start.
    pub seed: u64,
    /// Cancelled when the component must stop.
    pub stop: CancellationToken,
}

/// A part of the control plane a scenario runs.
pub trait Component: Send + Sync {
    /// The name `restart` steps use: `scheduler` or `controllers`.
    fn name(&self) -> &'static str;
    /// Starts the component; it runs until the future ends or is dropped.
    fn start(&self, ctx: ComponentContext) -> ComponentFuture;
}

/// The components this build of berth runs in a scenario: the scheduler
/// and the controllers.
pub fn default_components() -> Vec<Box<dyn Component>> {
    vec![Box::new(SchedulerComponent), Box::new(ControllersComponent)]
}

/// An admin client of the run's API server, or `None` (logged) if the OS
/// random source could not make its token.
fn admin_client(ctx: &ComponentContext, component: &str) -> Option<kube::Client> {
    match in_process::client(&ctx.api, User::admin(), "default") {
        Ok(client) => Some(client),
        Err(e) => {
            tracing::error!(component, error = %e, "no client: not started");
            None
        }
    }
}

/// berth-scheduler's loop (`berth_scheduler::client::run`), its ties
/// broken by the run's seed.
pub struct SchedulerComponent;

impl Component for SchedulerComponent {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn start(&self, ctx: ComponentContext) -> ComponentFuture {
        Box::pin(async move {
            let Some(client) = admin_client(&ctx, "scheduler") else {
                return;
            };
            let config = SchedulerConfig {
                profile: Profile::new("default-scheduler", ctx.config.feature_gates),
                seed: Some(ctx.seed),
                ..SchedulerConfig::default()
            };
            tokio::select! {
                () = ctx.stop.cancelled() => {}
                () = berth_scheduler::client::run(client, ctx.clock.clone(), config) => {}
            }
        })
    }
}

/// berth-controllers: node lifecycle, taint eviction, DaemonSets and
/// StatefulSets, configured from the scenario's flags.
pub struct ControllersComponent;

impl Component for ControllersComponent {
    fn name(&self) -> &'static str {
        "controllers"
    }

    fn start(&self, ctx: ComponentContext) -> ComponentFuture {
        Box::pin(async move {
            let Some(client) = admin_client(&ctx, "controllers") else {
                return;
            };
            let c = &ctx.config;
            let options = ControllerOptions {
                node_lifecycle: NodeLifecycleConfig {
                    node_monitor_period: c.node_monitor_period,
                    grace: GracePeriods {
                        monitor: c.node_monitor_grace_period,
                        startup: c.node_startup_grace_period,
                    },
                    rates: ZoneRates {
                        eviction_qps: c.node_eviction_rate as f32,
                        secondary_eviction_qps: c.secondary_node_eviction_rate as f32,
                        large_cluster_threshold: u32::try_from(c.large_cluster_size_threshold)
                            .unwrap_or(0),
                        unhealthy_zone_threshold: c.unhealthy_zone_threshold as f32,
                    },
                },
                taint_eviction: TaintEvictionConfig {
                    gates: c.feature_gates,
                    ..TaintEvictionConfig::default()
                },
                daemonset: DaemonSetConfig {
                    gates: c.feature_gates,
                    ..DaemonSetConfig::default()
                },
                statefulset: StatefulSetConfig {
                    gates: c.feature_gates,
                    ..StatefulSetConfig::default()
                },
                ..ControllerOptions::default()
            };
            // Dropping the set (when stopped) aborts the controllers.
            let _tasks = berth_controllers::spawn(
                client,
                ctx.clock.clone(),
                options,
                ControllerMetrics::default(),
                None,
            );
            ctx.stop.cancelled().await;
        })
    }
}

/// A component that is started, with the means to stop it.
pub(crate) struct Started {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Started {
    pub(crate) fn spawn(component: &dyn Component, ctx: ComponentContext) -> Started {
        let stop = ctx.stop.clone();
        let task = tokio::spawn(component.start(ctx));
        Started { stop, task }
    }

    /// Cancels the component and drops its future.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        self.task.abort();
        let _ = self.task.await;
    }
}
