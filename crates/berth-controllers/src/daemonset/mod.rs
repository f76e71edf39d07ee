//! The DaemonSet controller (upstream `pkg/controller/daemon`): one pod
//! of each DaemonSet on every node its node selector, affinity and taints
//! allow, following nodes as they come, go and change.
//!
//! Where a pod belongs and what a sync does are berth-core's
//! ([`berth_core::workloads::daemon`]); this module is the controller
//! around them:
//!
//! - this file: the controller's state (its stores, expectations, the
//!   failed-pod backoff, the work queue), which DaemonSets a watch event
//!   wakes (upstream's event handlers), and the task that runs it all;
//! - [`sync`]: `syncDaemonSet`: `manage` (creates in slow-start batches,
//!   at most 250 per sync, each pod pinned to its node by a required
//!   node affinity on `metadata.name` for the default scheduler to bind;
//!   deletes), the rolling update (maxUnavailable, maxSurge), the status;
//! - [`history`]: the ControllerRevisions that record the templates
//!   (`constructHistory`, `cleanupHistory`).
//!
//! Expectations keep a sync from acting on a stale cache: after asking for
//! creates and deletes, the controller only updates the status until the
//! watch has shown them, so a node never gets two daemon pods.

pub mod history;
pub mod sync;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use berth_client::{ObjectKey, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_core::workloads::backoff::{Backoff, FAILED_PODS_BACKOFF_INITIAL, FAILED_PODS_BACKOFF_MAX};
use berth_core::workloads::daemon::{BURST_REPLICAS, DaemonPod, should_ignore_node_update};
use berth_core::workloads::pod_control::Expectations;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::runtime::watcher;
use tokio::task::JoinSet;

use crate::events::EventRecorder;
use crate::metrics::ControllerMetrics;
use crate::store::{Applied, Store};
use crate::workload::owners::{applied_key, became_ready, react_to_applied};
use crate::workload::writes::{KubeWrites, Writes};
use crate::workload::{queue_key, run_workers};
use crate::workqueue::WorkQueue;

/// Upstream's controller name: the `--controllers` name and the Events'
/// source.
pub const CONTROLLER_NAME: &str = "daemonset-controller";
/// The work queue's name (its metrics' `name` label).
const QUEUE_NAME: &str = "daemonset";
/// The kind of the objects this controller owns pods for.
const KIND: &str = "DaemonSet";
/// How often the failed-pod backoff forgets old entries.
const BACKOFF_GC_INTERVAL: Duration = Duration::from_secs(60);

/// Settings of the DaemonSet controller.
#[derive(Debug, Clone)]
pub struct DaemonSetConfig {
    /// `--concurrent-daemonset-syncs`: DaemonSets synced at once.
    pub workers: usize,
    /// Creates (and deletes) per sync at most (`BurstReplicas`).
    pub burst_replicas: usize,
    pub gates: FeatureGates,
}

impl Default for DaemonSetConfig {
    fn default() -> Self {
        DaemonSetConfig {
            workers: 2,
            burst_replicas: BURST_REPLICAS,
            gates: FeatureGates::default(),
        }
    }
}

/// See the module documentation. Cheap to clone (shared state).
pub struct DaemonSetController<W> {
    inner: Arc<Inner<W>>,
}

impl<W> Clone for DaemonSetController<W> {
    fn clone(&self) -> Self {
        DaemonSetController {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<W> {
    writes: W,
    clock: Clock,
    config: DaemonSetConfig,
    daemon_sets: Store<DaemonSet>,
    nodes: Store<Node>,
    pods: Store<Pod>,
    revisions: Store<ControllerRevision>,
    expectations: Mutex<Expectations>,
    /// `failedPodsBackoff`, keyed by DaemonSet UID, observed generation
    /// and node.
    failed_pods_backoff: Mutex<Backoff>,
    queue: Arc<WorkQueue>,
}

fn selector_of(ds: &DaemonSet) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
    &ds.spec.selector
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a single call into plain data: a panic
    // elsewhere cannot leave it half-done.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl DaemonSetController<KubeWrites> {
    pub fn new(
        client: kube::Client,
        clock: Clock,
        config: DaemonSetConfig,
        metrics: &ControllerMetrics,
    ) -> DaemonSetController<KubeWrites> {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME);
        DaemonSetController::with_writes(
            KubeWrites::new(client, recorder),
            clock,
            config,
            metrics,
        )
    }

    /// Runs until dropped: the watches feed the stores and the queue; the
    /// workers start once every watch has listed.
    pub async fn run(self, client: kube::Client) {
        let config = watcher::Config::default;
        let daemon_sets = changes_of(Api::<DaemonSet>::all(client.clone()), config());
        let revisions = changes_of(Api::<ControllerRevision>::all(client.clone()), config());
        let pods = changes_of(Api::<Pod>::all(client.clone()), config());
        let nodes = changes_of(Api::<Node>::all(client), config());
        let mut daemon_sets = std::pin::pin!(daemon_sets);
        let mut revisions = std::pin::pin!(revisions);
        let mut pods = std::pin::pin!(pods);
        let mut nodes = std::pin::pin!(nodes);
        let mut synced = [false; 4];
        let mut workers = JoinSet::new();
        let mut placements = Placements::default();
        loop {
            if workers.is_empty() && synced.iter().all(|s| *s) {
                tracing::info!(controller = CONTROLLER_NAME, "caches synced, starting workers");
                let this = self.clone();
                run_workers(
                    &mut workers,
                    CONTROLLER_NAME,
                    &self.inner.queue,
                    self.inner.config.workers,
                    move |key| {
                        let this = this.clone();
                        async move { this.sync(&key).await }
                    },
                );
            }
            tokio::select! {
                Some(change) = daemon_sets.next() => {
                    let applied = self.inner.daemon_sets.apply(change);
                    synced[0] |= matches!(applied, Applied::Synced);
                    self.on_daemon_set(applied, &mut placements);
                }
                Some(change) = revisions.next() => {
                    let applied = self.inner.revisions.apply(change);
                    synced[1] |= matches!(applied, Applied::Synced);
                    self.on_revision(applied);
                }
                Some(change) = pods.next() => {
                    let applied = self.inner.pods.apply(change);
                    synced[2] |= matches!(applied, Applied::Synced);
                    self.on_pod(applied);
                }
                Some(change) = nodes.next() => {
                    let applied = self.inner.nodes.apply(change);
                    synced[3] |= matches!(applied, Applied::Synced);
                    self.on_node(applied, &mut placements);
                }
                () = self.inner.clock.sleep(BACKOFF_GC_INTERVAL) => {
                    lock(&self.inner.failed_pods_backoff).gc(self.inner.clock.now());
                }
            }
        }
    }
}

/// Each DaemonSet's pod as the placement rules see it, prepared once per
/// version of the DaemonSet: a node's change is checked against every
/// DaemonSet.
#[derive(Default)]
struct Placements {
    by_daemon_set: HashMap<ObjectKey, (Option<String>, Arc<DaemonPod>)>,
}

impl Placements {
    fn of(&mut self, ds: &DaemonSet) -> Arc<DaemonPod> {
        let key = ObjectKey::of_meta(&ds.metadata);
        let version = ds.metadata.resource_version.clone();
        match self.by_daemon_set.get(&key) {
            Some((v, daemon)) if *v == version && version.is_some() => daemon.clone(),
            _ => {
                let daemon = Arc::new(DaemonPod::of(ds));
                self.by_daemon_set.insert(key, (version, daemon.clone()));
                daemon
            }
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.by_daemon_set.remove(key);
    }
}

impl<W: Writes> DaemonSetController<W> {
    /// A controller writing through `writes` (a fake, in tests).
    pub fn with_writes(
        writes: W,
        clock: Clock,
        config: DaemonSetConfig,
        metrics: &ControllerMetrics,
    ) -> DaemonSetController<W> {
        DaemonSetController {
            inner: Arc::new(Inner {
                writes,
                clock,
                config,
                daemon_sets: Store::default(),
                nodes: Store::default(),
                pods: Store::default(),
                revisions: Store::default(),
                expectations: Mutex::new(Expectations::default()),
                failed_pods_backoff: Mutex::new(Backoff::new(
                    FAILED_PODS_BACKOFF_INITIAL,
                    FAILED_PODS_BACKOFF_MAX,
                )),
                queue: Arc::new(WorkQueue::new(QUEUE_NAME, metrics.workqueue.clone())),
            }),
        }
    }

    fn enqueue(&self, key: &ObjectKey) {
        self.inner.queue.add(&queue_key(key));
    }

    /// `addDaemonset`/`updateDaemonset`/`deleteDaemonset`.
    fn on_daemon_set(&self, applied: Applied<DaemonSet>, placements: &mut Placements) {
        match applied {
            Applied::Upsert { old, new } => {
                let key = ObjectKey::of_meta(&new.metadata);
                if old.is_some_and(|old| old.metadata.uid != new.metadata.uid) {
                    // Deleted and recreated under the name between two
                    // observations: the new one starts clean.
                    lock(&self.inner.expectations).delete(&queue_key(&key));
                }
                placements.forget(&key);
                self.enqueue(&key);
            }
            Applied::Delete { key, .. } => {
                lock(&self.inner.expectations).delete(&queue_key(&key));
                placements.forget(&key);
                self.enqueue(&key);
            }
            Applied::Synced => {}
        }
    }

    /// `addHistory`/`updateHistory`/`deleteHistory`.
    fn on_revision(&self, applied: Applied<ControllerRevision>) {
        let reaction = react_to_applied(&applied, KIND, &self.inner.daemon_sets, selector_of);
        for key in reaction.iter().flat_map(|r| &r.enqueue) {
            self.enqueue(key);
        }
    }

    /// `addPod`/`updatePod`/`deletePod`: the owning DaemonSet is synced
    /// and its expectations lowered; orphans wake the DaemonSets that may
    /// adopt them; a pod turning ready is looked at again once it counts
    /// as available.
    fn on_pod(&self, applied: Applied<Pod>) {
        let Some(reaction) = react_to_applied(&applied, KIND, &self.inner.daemon_sets, selector_of)
        else {
            return;
        };
        {
            let mut expectations = lock(&self.inner.expectations);
            if let Some(ds) = &reaction.created_for {
                expectations.creation_observed(&queue_key(ds));
            }
            if let (Some(ds), Some(pod)) = (&reaction.deleted_for, applied_key(&applied)) {
                expectations.pod_deletion_observed(&queue_key(ds), &pod.to_string());
            }
        }
        let became_ready = became_ready(&applied);
        for key in &reaction.enqueue {
            self.enqueue(key);
            if became_ready
                && let Some(ds) = self.inner.daemon_sets.get(key)
                && let Some(min_ready) = ds.spec.min_ready_seconds.filter(|s| *s > 0)
            {
                // A second more, against rounding (upstream does the same).
                let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                self.inner.queue.add_after(&queue_key(key), delay);
            }
        }
    }

    /// `addNode`/`updateNode`, and a deleted node: the DaemonSets whose
    /// placement on the node changed (a new node that should run them, a
    /// node whose labels or taints changed what it runs, a node gone that
    /// ran them).
    fn on_node(&self, applied: Applied<Node>, placements: &mut Placements) {
        let gates = self.inner.config.gates;
        match applied {
            Applied::Upsert { old: None, new } => {
                for ds in self.inner.daemon_sets.list() {
                    if placements.of(&ds).placement_on(&new, gates).should_run {
                        self.enqueue(&ObjectKey::of_meta(&ds.metadata));
                    }
                }
            }
            Applied::Upsert {
                old: Some(old),
                new,
            } => {
                if should_ignore_node_update(&old, &new) {
                    return;
                }
                for ds in self.inner.daemon_sets.list() {
                    let daemon = placements.of(&ds);
                    if daemon.placement_on(&old, gates) != daemon.placement_on(&new, gates) {
                        self.enqueue(&ObjectKey::of_meta(&ds.metadata));
                    }
                }
            }
            // Upstream leaves a deleted node to pod GC; the status counts
            // change at once, so the DaemonSets that ran there look again.
            Applied::Delete { last, .. } => {
                for ds in self.inner.daemon_sets.list() {
                    let ran_there = last.as_ref().is_none_or(|node| {
                        placements
                            .of(&ds)
                            .placement_on(node, gates)
                            .should_continue_running
                    });
                    if ran_there {
                        self.enqueue(&ObjectKey::of_meta(&ds.metadata));
                    }
                }
            }
            Applied::Synced => {}
        }
    }
}
