//! The ReplicaSet controller (upstream `pkg/controller/replicaset`): keeps
//! each ReplicaSet's count of active pods at `spec.replicas`.
//!
//! One task watches ReplicaSets (berth-client's `changes_of`) and pods
//! (the process's shared pod watch)
//! into [`ObjectCache`]s, runs upstream's event handlers ([`handlers`]) and
//! wakes ReplicaSets in a [`WorkQueue`]; once both caches have synced,
//! `--concurrent-replicaset-syncs` workers sync one ReplicaSet at a time
//! each ([`sync`]): claim its pods (adopt orphans it selects, release
//! what it no longer selects), create or delete pods to match `replicas`
//! (creates in slow-start batches, at most 500 per sync, deletions in
//! upstream's rank order), and write its status. Expectations (creates
//! and deletes asked for but not yet seen in the watch) keep a worker
//! from acting twice on one stale view: a ReplicaSet with outstanding
//! expectations only has its status written.

mod counted;
pub mod handlers;
pub mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use berth_client::{SharedWatch, SharedWatches, changes_of};
use berth_core::clock::Clock;
use berth_core::object_key::ObjectKey;
use berth_core::workloads::pod_control::Expectations;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::watcher;

use self::counted::CountedPods;
use crate::cache::ObjectCache;
use crate::events::EventRecorder;
use crate::metrics::ControllerMetrics;
use crate::pod_control::PodControl;
use crate::shared::{lock, read, write};
use crate::work_queue::{WorkQueue, Workers};

/// Upstream's controller name (`--controllers`, the Events' source).
pub const CONTROLLER_NAME: &str = "replicaset-controller";
/// The work queue's name in the `workqueue_*` metrics.
pub const QUEUE_NAME: &str = "replicaset";

/// Settings of the ReplicaSet controller.
#[derive(Debug, Clone)]
pub struct ReplicaSetConfig {
    /// ReplicaSets synced at once (`--concurrent-replicaset-syncs`).
    pub workers: usize,
}

impl Default for ReplicaSetConfig {
    fn default() -> Self {
        ReplicaSetConfig { workers: 5 }
    }
}

/// What the watch task and the workers share.
pub struct Context {
    pub client: kube::Client,
    pub clock: Clock,
    pub metrics: ControllerMetrics,
    pub pod_control: PodControl,
    pub recorder: EventRecorder,
    pub replica_sets: RwLock<ObjectCache<ReplicaSet>>,
    pub pods: RwLock<ObjectCache<Pod>>,
    pub expectations: Mutex<Expectations>,
    /// What each ReplicaSet's last sync read of its pods.
    counted: Mutex<HashMap<ObjectKey, CountedPods>>,
    pub queue: Arc<WorkQueue>,
}

impl Context {
    pub fn new(client: kube::Client, clock: Clock, metrics: ControllerMetrics) -> Context {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME);
        let queue = Arc::new(WorkQueue::new(clock.clone(), metrics.queue(QUEUE_NAME)));
        Context {
            pod_control: PodControl::new(client.clone(), recorder.clone()),
            recorder,
            client,
            clock,
            metrics,
            replica_sets: RwLock::default(),
            pods: RwLock::default(),
            expectations: Mutex::default(),
            counted: Mutex::default(),
            queue,
        }
    }
}

/// See the module documentation.
pub struct ReplicaSetController {
    context: Arc<Context>,
    config: ReplicaSetConfig,
    pods: SharedWatch<Pod>,
}

impl ReplicaSetController {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: ReplicaSetConfig,
        metrics: ControllerMetrics,
    ) -> ReplicaSetController {
        ReplicaSetController {
            context: Arc::new(Context::new(watches.client().clone(), clock, metrics)),
            config,
            pods: watches.pods().clone(),
        }
    }

    /// Runs until dropped.
    pub async fn run(self) {
        let ctx = self.context;
        let replica_sets = changes_of(
            Api::<ReplicaSet>::all(ctx.client.clone()),
            watcher::Config::default(),
        );
        let pods = self.pods.changes();
        let mut replica_sets = std::pin::pin!(replica_sets);
        let mut pods = std::pin::pin!(pods);
        let mut workers = Workers::new(
            CONTROLLER_NAME,
            self.config.workers,
            None,
            ctx.clone(),
            ctx.queue.clone(),
        );
        loop {
            tokio::select! {
                // In order, not at random: the simulator replays a run exactly.
                biased;
                Some(change) = replica_sets.next() => {
                    let observed = write(&ctx.replica_sets).apply(change);
                    if let Some(observed) = observed {
                        let wakes = handlers::replica_set_changed(&observed, &mut lock(&ctx.expectations));
                        ctx.queue.wake(wakes);
                    }
                }
                Some(change) = pods.next() => {
                    let observed = write(&ctx.pods).apply_shared(change);
                    if let Some(observed) = observed {
                        let wakes = handlers::pod_changed(
                            &observed,
                            &read(&ctx.replica_sets),
                            &mut lock(&ctx.expectations),
                        );
                        ctx.queue.wake(wakes);
                    }
                }
                else => break,
            }
            workers.start_when(
                read(&ctx.replica_sets).is_synced() && read(&ctx.pods).is_synced(),
                |ctx, key| async move { sync::sync_replica_set(&ctx, &key).await },
            );
        }
    }
}
