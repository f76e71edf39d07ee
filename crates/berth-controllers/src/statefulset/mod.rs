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

use std::sync::Arc;
use std::time::Duration;

use berth_client::{ObjectKey, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::runtime::watcher;
use tokio::task::JoinSet;

use crate::events::EventRecorder;
use crate::metrics::{ControllerMetrics, StatefulSetLabels};
use crate::store::{Applied, Store};
use crate::workload::owners::{became_ready, react_to_applied};
use crate::workload::writes::{KubeWrites, Writes};
use crate::workload::{queue_key, run_workers};
use crate::workqueue::WorkQueue;

/// Upstream's controller name: the `--controllers` name and the Events'
/// source.
pub const CONTROLLER_NAME: &str = "statefulset-controller";
/// The work queue's name (its metrics' `name` label).
const QUEUE_NAME: &str = "statefulset";
/// The kind of the objects this controller owns pods for.
const KIND: &str = "StatefulSet";

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
pub struct StatefulSetController<W> {
    inner: Arc<Inner<W>>,
}

impl<W> Clone for StatefulSetController<W> {
    fn clone(&self) -> Self {
        StatefulSetController {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<W> {
    writes: W,
    clock: Clock,
    config: StatefulSetConfig,
    metrics: ControllerMetrics,
    sets: Store<StatefulSet>,
    pods: Store<Pod>,
    revisions: Store<ControllerRevision>,
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
        client: kube::Client,
        clock: Clock,
        config: StatefulSetConfig,
        metrics: &ControllerMetrics,
    ) -> StatefulSetController<KubeWrites> {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME);
        StatefulSetController::with_writes(
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
        let sets = changes_of(Api::<StatefulSet>::all(client.clone()), config());
        let revisions = changes_of(Api::<ControllerRevision>::all(client.clone()), config());
        let pods = changes_of(Api::<Pod>::all(client), config());
        let mut sets = std::pin::pin!(sets);
        let mut revisions = std::pin::pin!(revisions);
        let mut pods = std::pin::pin!(pods);
        let mut synced = [false; 3];
        let mut workers = JoinSet::new();
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
                Some(change) = sets.next() => {
                    let applied = self.inner.sets.apply(change);
                    synced[0] |= matches!(applied, Applied::Synced);
                    self.on_stateful_set(applied);
                }
                // Revisions are read at each sync; their changes wake
                // nobody (as upstream, which only lists them).
                Some(change) = revisions.next() => {
                    let applied = self.inner.revisions.apply(change);
                    synced[1] |= matches!(applied, Applied::Synced);
                }
                Some(change) = pods.next() => {
                    let applied = self.inner.pods.apply(change);
                    synced[2] |= matches!(applied, Applied::Synced);
                    self.on_pod(applied);
                }
            }
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
        StatefulSetController {
            inner: Arc::new(Inner {
                writes,
                clock,
                config,
                metrics: metrics.clone(),
                sets: Store::default(),
                pods: Store::default(),
                revisions: Store::default(),
                queue: Arc::new(WorkQueue::new(QUEUE_NAME, metrics.workqueue.clone())),
            }),
        }
    }

    fn enqueue(&self, key: &ObjectKey) {
        self.inner.queue.add(&queue_key(key));
    }

    /// `addStatefulSet`/`updateStatefulSet`/`deleteStatefulSet`; a set
    /// gone takes its gauges with it.
    fn on_stateful_set(&self, applied: Applied<StatefulSet>) {
        match applied {
            Applied::Upsert { new, .. } => self.enqueue(&ObjectKey::of_meta(&new.metadata)),
            Applied::Delete { key, last } => {
                if let Some(last) = last {
                    let labels = gauge_labels(&last);
                    self.inner.metrics.statefulset_max_unavailable.remove(&labels);
                    self.inner
                        .metrics
                        .statefulset_unavailable_replicas
                        .remove(&labels);
                }
                self.enqueue(&key);
            }
            Applied::Synced => {}
        }
    }

    /// `addPod`/`updatePod`/`deletePod`: the owning set is synced (and,
    /// with `minReadySeconds`, again once a pod that turned ready counts
    /// as available); orphans wake the sets that may adopt them.
    fn on_pod(&self, applied: Applied<Pod>) {
        let Some(reaction) = react_to_applied(&applied, KIND, &self.inner.sets, selector_of) else {
            return;
        };
        let became_ready = became_ready(&applied);
        for key in &reaction.enqueue {
            self.enqueue(key);
            if became_ready
                && let Some(set) = self.inner.sets.get(key)
                && let Some(min_ready) = set.spec.min_ready_seconds.filter(|s| *s > 0)
            {
                let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                self.inner.queue.add_after(&queue_key(key), delay);
            }
        }
    }
}
