//! The Deployment controller (upstream `pkg/controller/deployment`): rolls
//! a Deployment's pods from one template to the next through ReplicaSets
//! named `<deployment>-<pod-template-hash>`.
//!
//! One task watches Deployments, ReplicaSets and pods into
//! [`ObjectCache`]s and wakes Deployments in a [`WorkQueue`]
//! ([`handlers`]); once the caches have synced,
//! `--concurrent-deployment-syncs` workers sync one Deployment at a time
//! each ([`sync`], made of [`steps`]): claim its ReplicaSets, then, in upstream's order, the
//! status only (being deleted), the Progressing condition of a pause or
//! resume, a paused or resized Deployment's proportional scaling, or a
//! rollout step ([`rollout`]: RollingUpdate or Recreate), each ending in
//! the Deployment's status. The decisions are berth-core's
//! [`deployment`](berth_core::workloads::deployment) functions; what this
//! module adds is the order of the writes and their Events
//! (`ScalingReplicaSet`, `SelectingAll`, `ReplicaSetCreateError`).
//!
//! A sync that fails is retried with backoff, 15 times at most in a row
//! (upstream's `maxRetries`), then dropped until the next change.

pub mod handlers;
pub mod rollout;
pub mod steps;
pub mod sync;

use std::sync::{Arc, RwLock};

use berth_client::{SharedWatch, SharedWatches, changes_of};
use berth_core::clock::Clock;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::watcher;

use crate::cache::{ObjectCache, Observed};
use crate::events::EventRecorder;
use crate::metrics::ControllerMetrics;
use crate::shared::{read, write};
use crate::work_queue::{WorkQueue, Workers};

/// Upstream's controller name (`--controllers`, the Events' source).
pub const CONTROLLER_NAME: &str = "deployment-controller";
/// The work queue's name in the `workqueue_*` metrics.
pub const QUEUE_NAME: &str = "deployment";
/// Failures in a row before a Deployment is dropped from the queue.
pub const MAX_RETRIES: u32 = 15;

/// Settings of the Deployment controller.
#[derive(Debug, Clone)]
pub struct DeploymentConfig {
    /// Deployments synced at once (`--concurrent-deployment-syncs`).
    pub workers: usize,
}

impl Default for DeploymentConfig {
    fn default() -> Self {
        DeploymentConfig { workers: 5 }
    }
}

/// What the watch task and the workers share.
pub struct Context {
    pub client: kube::Client,
    pub clock: Clock,
    pub recorder: EventRecorder,
    pub deployments: RwLock<ObjectCache<Deployment>>,
    pub replica_sets: RwLock<ObjectCache<ReplicaSet>>,
    pub pods: RwLock<ObjectCache<Pod>>,
    pub queue: Arc<WorkQueue>,
}

impl Context {
    pub fn new(client: kube::Client, clock: Clock, metrics: &ControllerMetrics) -> Context {
        Context {
            recorder: EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME),
            queue: Arc::new(WorkQueue::new(clock.clone(), metrics.queue(QUEUE_NAME))),
            client,
            clock,
            deployments: RwLock::default(),
            replica_sets: RwLock::default(),
            pods: RwLock::default(),
        }
    }

    fn synced(&self) -> bool {
        read(&self.deployments).is_synced()
            && read(&self.replica_sets).is_synced()
            && read(&self.pods).is_synced()
    }
}

/// See the module documentation.
pub struct DeploymentController {
    context: Arc<Context>,
    config: DeploymentConfig,
    pods: SharedWatch<Pod>,
}

impl DeploymentController {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: DeploymentConfig,
        metrics: ControllerMetrics,
    ) -> DeploymentController {
        DeploymentController {
            context: Arc::new(Context::new(watches.client().clone(), clock, &metrics)),
            config,
            pods: watches.pods().clone(),
        }
    }

    /// Runs until dropped.
    pub async fn run(self) {
        let ctx = self.context;
        let config = watcher::Config::default;
        let deployments = changes_of(Api::<Deployment>::all(ctx.client.clone()), config());
        let replica_sets = changes_of(Api::<ReplicaSet>::all(ctx.client.clone()), config());
        let pods = self.pods.changes();
        let mut deployments = std::pin::pin!(deployments);
        let mut replica_sets = std::pin::pin!(replica_sets);
        let mut pods = std::pin::pin!(pods);
        let mut workers = Workers::new(
            CONTROLLER_NAME,
            self.config.workers,
            Some(MAX_RETRIES),
            ctx.clone(),
            ctx.queue.clone(),
        );
        loop {
            tokio::select! {
                // In order, not at random: the simulator replays a run exactly.
                biased;
                Some(change) = deployments.next() => {
                    let observed = write(&ctx.deployments).apply(change);
                    if let Some(observed) = observed {
                        ctx.queue.wake(handlers::deployment_changed(&observed));
                    }
                }
                Some(change) = replica_sets.next() => {
                    let observed = write(&ctx.replica_sets).apply(change);
                    if let Some(observed) = observed {
                        let wakes = handlers::replica_set_changed(&observed, &read(&ctx.deployments));
                        ctx.queue.wake(wakes);
                    }
                }
                Some(change) = pods.next() => {
                    let observed = write(&ctx.pods).apply_shared_for_kind(change, <ReplicaSet as k8s_openapi::Resource>::KIND);
                    if let Some(Observed::Deleted(pod)) = observed {
                        let wakes = handlers::pod_deleted(
                            &pod,
                            &read(&ctx.deployments),
                            &read(&ctx.replica_sets),
                            &read(&ctx.pods),
                        );
                        ctx.queue.wake(wakes);
                    }
                }
                else => break,
            }
            workers.start_when(ctx.synced(), |ctx, key| async move {
                sync::sync_deployment(&ctx, &key).await
            });
        }
    }
}
