//! The StatefulSet controller (upstream `pkg/controller/statefulset`):
//! pods with stable names `<set>-<ordinal>`, created in order and each
//! only once its predecessors are Running and Ready (`OrderedReady`), or
//! all at once (`Parallel`), deleted highest ordinal first, rolled to a
//! new template from the highest ordinal down to the `partition`.
//!
//! The rules are berth-core's ([`berth_core::workloads::statefulset`]);
//! this module is the controller around them:
//!
//! - this file: the controller's state, which StatefulSets a watch event
//!   wakes (upstream's event handlers), and the task that runs it all;
//! - [`sync`]: `sync` and `UpdateStatefulSet`: revisions, one sync's plan
//!   carried out, the status, history truncation.
//!
//! A pod is created by name, so the API server refuses a second pod of
//! one identity: a pod stuck terminating (its node dead) blocks its
//! replacement until it is force-deleted, which the taint eviction
//! controller does once the node has the `node.kubernetes.io/out-of-service`
//! taint; the controller then creates it again on a healthy node.

pub mod sync;
#[cfg(test)]
mod tests;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use berth_client::{ObjectKey, SharedWatches, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::runtime::watcher;

use crate::cache::{ObjectCache, Observed};
use crate::events::EventRecorder;
use crate::metrics::{ControllerMetrics, StatefulSetLabels};
use crate::shared::{read, write};
use crate::work_queue::{WorkQueue, Workers};
use crate::workload::owners::{became_ready, react_to};
use crate::workload::writes::{KubeWrites, Writes};

/// Upstream's controller name: the `--controllers` name and the Events'
/// source.
pub const CONTROLLER_NAME: &str = "statefulset-controller";
/// The work queue's name (its metrics' `name` label).
pub const QUEUE_NAME: &str = "statefulset";

/// Settings of the StatefulSet controller.
#[derive(Debug, Clone)]
pub struct StatefulSetConfig {
    /// `--concurrent-statefulset-syncs`: StatefulSets synced at once.
    pub workers: usize,
    /// `MaxUnavailableStatefulSet` among them.
    pub gates: FeatureGates,
}

impl Default for StatefulSetConfig {
    fn default() -> Self {
        StatefulSetConfig {
            workers: 5,
            gates: FeatureGates::default(),
        }
    }
}

/// See the module documentation. Cheap to clone (shared state).
#[derive(Clone)]
pub struct StatefulSetController<W> {
    inner: Arc<Inner<W>>,
    // The process's shared watches; `None` (a test's controller, never
    // run) for watches of its own.
    watches: Option<SharedWatches>,
}

struct Inner<W> {
    writes: W,
    clock: Clock,
    config: StatefulSetConfig,
    metrics: ControllerMetrics,
    sets: RwLock<ObjectCache<StatefulSet>>,
    pods: RwLock<ObjectCache<Pod>>,
    revisions: RwLock<ObjectCache<ControllerRevision>>,
    queue: Arc<WorkQueue>,
}

fn selector_of(set: &StatefulSet) -> &LabelSelector {
    &set.spec.selector
}

/// The labels of the set's gauges.
fn gauge_labels(set: &StatefulSet) -> StatefulSetLabels {
    StatefulSetLabels {
        statefulset_namespace: set.metadata.namespace.clone().unwrap_or_default(),
        statefulset_name: set.metadata.name.clone().unwrap_or_default(),
        pod_management_policy: set
            .spec
            .pod_management_policy
            .clone()
            .unwrap_or_else(|| berth_core::workloads::statefulset::POLICY_ORDERED_READY.into()),
    }
}

impl StatefulSetController<KubeWrites> {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: StatefulSetConfig,
        metrics: ControllerMetrics,
    ) -> StatefulSetController<KubeWrites> {
        let client = watches.client().clone();
        let recorder = EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME);
        let writes = KubeWrites::new(client, recorder);
        StatefulSetController {
            watches: Some(watches),
            ..StatefulSetController::with_writes(writes, clock, config, &metrics)
        }
    }

    /// Runs until dropped: the watches feed the caches and the queue; the
    /// workers start once every watch has listed.
    pub async fn run(self) {
        let client = self.inner.writes.client().clone();
        let watches = (self.watches.clone()).unwrap_or_else(|| SharedWatches::new(client.clone()));
        let config = watcher::Config::default;
        let sets = changes_of(Api::<StatefulSet>::all(client.clone()), config());
        let revisions = changes_of(Api::<ControllerRevision>::all(client), config());
        let pods = watches.pods().changes();
        let mut sets = std::pin::pin!(sets);
        let mut revisions = std::pin::pin!(revisions);
        let mut pods = std::pin::pin!(pods);
        let mut workers = Workers::new(
            CONTROLLER_NAME,
            self.inner.config.workers,
            None,
            self.inner.clone(),
            self.inner.queue.clone(),
        );
        let inner = &self.inner;
        loop {
            tokio::select! {
                // In order, not at random: the simulator replays a run exactly.
                biased;
                Some(change) = sets.next() => {
                    let observed = write(&inner.sets).apply(change);
                    if let Some(observed) = observed {
                        self.on_stateful_set(&observed);
                    }
                }
                // Revisions are read at each sync; their changes wake
                // nobody (as upstream, which only lists them).
                Some(change) = revisions.next() => {
                    write(&inner.revisions).apply(change);
                }
                Some(change) = pods.next() => {
                    let observed = write(&inner.pods).apply_shared_for_kind(change, <StatefulSet as k8s_openapi::Resource>::KIND);
                    if let Some(observed) = observed {
                        self.on_pod(&observed);
                    }
                }
                else => break,
            }
            let synced = read(&inner.sets).is_synced()
                && read(&inner.revisions).is_synced()
                && read(&inner.pods).is_synced();
            workers.start_when(synced, |inner, key| async move {
                StatefulSetController {
                    inner,
                    watches: None,
                }
                .sync(&key)
                .await
            });
        }
    }
}

impl<W: Writes> StatefulSetController<W> {
    /// A controller writing through `writes` (a fake, in tests).
    pub fn with_writes(
        writes: W,
        clock: Clock,
        config: StatefulSetConfig,
        metrics: &ControllerMetrics,
    ) -> StatefulSetController<W> {
        let queue = Arc::new(WorkQueue::new(clock.clone(), metrics.queue(QUEUE_NAME)));
        StatefulSetController {
            watches: None,
            inner: Arc::new(Inner {
                writes,
                clock,
                config,
                metrics: metrics.clone(),
                sets: RwLock::default(),
                pods: RwLock::default(),
                revisions: RwLock::default(),
                queue,
            }),
        }
    }

    /// `addStatefulSet`/`updateStatefulSet`/`deleteStatefulSet`; a set
    /// gone takes its gauges with it.
    fn on_stateful_set(&self, observed: &Observed<StatefulSet>) {
        let set = match observed {
            Observed::Added(set) | Observed::Updated { new: set, .. } => set,
            Observed::Deleted(set) => {
                let labels = gauge_labels(set);
                let metrics = &self.inner.metrics;
                metrics.statefulset_max_unavailable.remove(&labels);
                metrics.statefulset_unavailable_replicas.remove(&labels);
                set
            }
            Observed::Synced => return,
        };
        self.inner.queue.add(ObjectKey::of_meta(&set.metadata));
    }

    /// `addPod`/`updatePod`/`deletePod`: the owning set is synced (and,
    /// with `minReadySeconds`, again once a pod that turned ready counts
    /// as available); orphans wake the sets that may adopt them.
    fn on_pod(&self, observed: &Observed<Pod>) {
        let sets = read(&self.inner.sets);
        let Some(reaction) = react_to(observed, &sets, selector_of) else {
            return;
        };
        let became_ready = became_ready(observed);
        for key in reaction.enqueue {
            if became_ready
                && let Some(set) = sets.get(&key)
                && let Some(min_ready) = set.spec.min_ready_seconds.filter(|s| *s > 0)
            {
                let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                self.inner.queue.add_after(key.clone(), delay);
            }
            self.inner.queue.add(key);
        }
    }
}
