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
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use berth_client::{ObjectKey, SharedWatches, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_core::workloads::backoff::{
    Backoff, FAILED_PODS_BACKOFF_INITIAL, FAILED_PODS_BACKOFF_MAX,
};
use berth_core::workloads::daemon::{BURST_REPLICAS, DaemonPod, should_ignore_node_update};
use berth_core::workloads::pod_control::Expectations;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::runtime::watcher;

use crate::cache::{ObjectCache, Observed};
use crate::events::EventRecorder;
use crate::metrics::ControllerMetrics;
use crate::shared::{lock, read, write};
use crate::work_queue::{WorkQueue, Workers};
use crate::workload::owners::{became_ready, observed_key, react_to};
use crate::workload::writes::{KubeWrites, Writes};

/// Upstream's controller name: the `--controllers` name and the Events'
/// source.
pub const CONTROLLER_NAME: &str = "daemonset-controller";
/// The work queue's name (its metrics' `name` label).
pub const QUEUE_NAME: &str = "daemonset";
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
#[derive(Clone)]
pub struct DaemonSetController<W> {
    inner: Arc<Inner<W>>,
    // The process's shared watches; `None` (a test's controller, never
    // run) for watches of its own.
    watches: Option<SharedWatches>,
}

struct Inner<W> {
    writes: W,
    clock: Clock,
    config: DaemonSetConfig,
    daemon_sets: RwLock<ObjectCache<DaemonSet>>,
    nodes: RwLock<ObjectCache<Node>>,
    pods: RwLock<ObjectCache<Pod>>,
    revisions: RwLock<ObjectCache<ControllerRevision>>,
    expectations: Mutex<Expectations>,
    /// `failedPodsBackoff`, keyed by DaemonSet UID, observed generation
    /// and node.
    failed_pods_backoff: Mutex<Backoff>,
    queue: Arc<WorkQueue>,
}

fn selector_of(ds: &DaemonSet) -> &LabelSelector {
    &ds.spec.selector
}

/// Every object of a cache (the nodes; the DaemonSets of all namespaces).
fn all<K: kube::Resource>(cache: &RwLock<ObjectCache<K>>) -> Vec<Arc<K>> {
    read(cache).iter().cloned().collect()
}

impl DaemonSetController<KubeWrites> {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: DaemonSetConfig,
        metrics: ControllerMetrics,
    ) -> DaemonSetController<KubeWrites> {
        let client = watches.client().clone();
        let recorder = EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME);
        let writes = KubeWrites::new(client, recorder);
        DaemonSetController {
            watches: Some(watches),
            ..DaemonSetController::with_writes(writes, clock, config, &metrics)
        }
    }

    /// Runs until dropped: the watches feed the caches and the queue; the
    /// workers start once every watch has listed.
    pub async fn run(self) {
        let client = self.inner.writes.client().clone();
        let watches = (self.watches.clone()).unwrap_or_else(|| SharedWatches::new(client.clone()));
        let config = watcher::Config::default;
        let daemon_sets = changes_of(Api::<DaemonSet>::all(client.clone()), config());
        let revisions = changes_of(Api::<ControllerRevision>::all(client), config());
        let pods = watches.pods().changes();
        let nodes = watches.nodes().changes();
        let mut daemon_sets = std::pin::pin!(daemon_sets);
        let mut revisions = std::pin::pin!(revisions);
        let mut pods = std::pin::pin!(pods);
        let mut nodes = std::pin::pin!(nodes);
        let mut workers = Workers::new(
            CONTROLLER_NAME,
            self.inner.config.workers,
            None,
            self.inner.clone(),
            self.inner.queue.clone(),
        );
        let mut placements = Placements::default();
        let inner = &self.inner;
        let mut backoff_gc = tokio::time::interval_at(
            tokio::time::Instant::now() + BACKOFF_GC_INTERVAL,
            BACKOFF_GC_INTERVAL,
        );
        loop {
            tokio::select! {
                // In order, not at random: the simulator replays a run exactly.
                biased;
                Some(change) = daemon_sets.next() => {
                    let observed = write(&inner.daemon_sets).apply(change);
                    if let Some(observed) = observed {
                        self.on_daemon_set(&observed, &mut placements);
                    }
                }
                Some(change) = revisions.next() => {
                    let observed = write(&inner.revisions).apply(change);
                    if let Some(observed) = observed {
                        self.on_revision(&observed);
                    }
                }
                Some(change) = pods.next() => {
                    let observed = write(&inner.pods).apply_shared_for_kind(change, <DaemonSet as k8s_openapi::Resource>::KIND);
                    if let Some(observed) = observed {
                        self.on_pod(&observed);
                    }
                }
                Some(change) = nodes.next() => {
                    let observed = write(&inner.nodes).apply_shared(change);
                    if let Some(observed) = observed {
                        self.on_node(&observed, &mut placements);
                    }
                }
                _ = backoff_gc.tick() => {
                    lock(&inner.failed_pods_backoff).gc(inner.clock.now());
                }
            }
            let synced = read(&inner.daemon_sets).is_synced()
                && read(&inner.revisions).is_synced()
                && read(&inner.pods).is_synced()
                && read(&inner.nodes).is_synced();
            workers.start_when(synced, |inner, key| async move {
                DaemonSetController {
                    inner,
                    watches: None,
                }
                .sync(&key)
                .await
            });
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
        let queue = Arc::new(WorkQueue::new(clock.clone(), metrics.queue(QUEUE_NAME)));
        DaemonSetController {
            watches: None,
            inner: Arc::new(Inner {
                writes,
                clock,
                config,
                daemon_sets: RwLock::default(),
                nodes: RwLock::default(),
                pods: RwLock::default(),
                revisions: RwLock::default(),
                expectations: Mutex::new(Expectations::default()),
                failed_pods_backoff: Mutex::new(Backoff::new(
                    FAILED_PODS_BACKOFF_INITIAL,
                    FAILED_PODS_BACKOFF_MAX,
                )),
                queue,
            }),
        }
    }

    fn enqueue(&self, key: &ObjectKey) {
        self.inner.queue.add(key.clone());
    }

    /// `addDaemonset`/`updateDaemonset`/`deleteDaemonset`.
    fn on_daemon_set(&self, observed: &Observed<DaemonSet>, placements: &mut Placements) {
        let key = match observed {
            Observed::Added(ds) => ObjectKey::of_meta(&ds.metadata),
            Observed::Updated { old, new } => {
                let key = ObjectKey::of_meta(&new.metadata);
                if old.metadata.uid != new.metadata.uid {
                    // Deleted and recreated under the name between two
                    // observations: the new one starts clean.
                    lock(&self.inner.expectations).delete(&key.to_string());
                }
                key
            }
            Observed::Deleted(ds) => {
                let key = ObjectKey::of_meta(&ds.metadata);
                lock(&self.inner.expectations).delete(&key.to_string());
                key
            }
            Observed::Synced => return,
        };
        placements.forget(&key);
        self.enqueue(&key);
    }

    /// `addHistory`/`updateHistory`/`deleteHistory`.
    fn on_revision(&self, observed: &Observed<ControllerRevision>) {
        let reaction = react_to(observed, &read(&self.inner.daemon_sets), selector_of);
        for key in reaction.iter().flat_map(|r| &r.enqueue) {
            self.enqueue(key);
        }
    }

    /// `addPod`/`updatePod`/`deletePod`: the owning DaemonSet is synced
    /// and its expectations lowered; orphans wake the DaemonSets that may
    /// adopt them; a pod turning ready is looked at again once it counts
    /// as available.
    fn on_pod(&self, observed: &Observed<Pod>) {
        let daemon_sets = read(&self.inner.daemon_sets);
        let Some(reaction) = react_to(observed, &daemon_sets, selector_of) else {
            return;
        };
        {
            let mut expectations = lock(&self.inner.expectations);
            if let Some(ds) = &reaction.created_for {
                expectations.creation_observed(&ds.to_string());
            }
            if let (Some(ds), Some(pod)) = (&reaction.deleted_for, observed_key(observed)) {
                expectations.pod_deletion_observed(&ds.to_string(), &pod.to_string());
            }
        }
        let became_ready = became_ready(observed);
        for key in &reaction.enqueue {
            self.enqueue(key);
            if became_ready
                && let Some(ds) = daemon_sets.get(key)
                && let Some(min_ready) = ds.spec.min_ready_seconds.filter(|s| *s > 0)
            {
                // A second more, against rounding (upstream does the same).
                let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                self.inner.queue.add_after(key.clone(), delay);
            }
        }
    }

    /// `addNode`/`updateNode`, and a deleted node: the DaemonSets whose
    /// placement on the node changed (a new node that should run them, a
    /// node whose labels or taints changed what it runs, a node gone that
    /// ran them).
    fn on_node(&self, observed: &Observed<Node>, placements: &mut Placements) {
        let gates = self.inner.config.gates;
        let daemon_sets = all(&self.inner.daemon_sets);
        let affected: Vec<&Arc<DaemonSet>> = match observed {
            Observed::Added(node) => daemon_sets
                .iter()
                .filter(|ds| placements.of(ds).placement_on(node, gates).should_run)
                .collect(),
            Observed::Updated { old, new } => {
                if should_ignore_node_update(old, new) {
                    return;
                }
                daemon_sets
                    .iter()
                    .filter(|ds| {
                        let daemon = placements.of(ds);
                        daemon.placement_on(old, gates) != daemon.placement_on(new, gates)
                    })
                    .collect()
            }
            // Upstream leaves a deleted node to pod GC; the status counts
            // change at once, so the DaemonSets that ran there look again.
            Observed::Deleted(node) => daemon_sets
                .iter()
                .filter(|ds| {
                    placements
                        .of(ds)
                        .placement_on(node, gates)
                        .should_continue_running
                })
                .collect(),
            Observed::Synced => return,
        };
        for ds in affected {
            self.enqueue(&ObjectKey::of_meta(&ds.metadata));
        }
    }
}
