//! The disruption controller (upstream `pkg/controller/disruption`): for
//! every PodDisruptionBudget, the pods it selects, how many it expects
//! (its pods' controllers' scale, or the pods themselves for an integer
//! `minAvailable`), how many are healthy, and so how many may be
//! disrupted, written to the budget's status with `observedGeneration`
//! and the `DisruptionAllowed` condition. The Eviction API reads that
//! status and spends it; the controller drops the `disruptedPods` entries
//! of evicted pods once they are being deleted, or after two minutes if
//! they never were. The arithmetic is berth-core's
//! ([`berth_core::disruption`]); [`state`] holds the copies and syncs one
//! budget.
//!
//! A budget is synced when it changes, when a pod or a pod owner
//! (ReplicaSet, Deployment, StatefulSet) of its namespace changes, and
//! when its earliest `disruptedPods` entry expires. A status write that
//! conflicts is dropped: the watch then brings the newer budget, which is
//! synced again (so a status the eviction handler just wrote is never
//! overwritten with a stale count).

pub mod state;

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::time::Duration;

use berth_client::{Change, SharedWatch, SharedWatches, changes_of};
use berth_core::clock::Clock;
use berth_core::object_key::ObjectKey;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;

use crate::metrics::ControllerMetrics;
use state::State;

/// Upstream's controller name, also the `--controllers` name.
pub const CONTROLLER_NAME: &str = "disruption-controller";

/// Settings of the disruption controller.
#[derive(Debug, Clone)]
pub struct DisruptionConfig {
    /// How long a failed status write waits before the budget is synced
    /// again (upstream's rate-limited requeue, at its first step's order).
    pub retry_after: Duration,
}

impl Default for DisruptionConfig {
    fn default() -> Self {
        DisruptionConfig {
            retry_after: Duration::from_secs(1),
        }
    }
}

/// See the module documentation.
pub struct DisruptionController {
    client: kube::Client,
    clock: Clock,
    config: DisruptionConfig,
    pods: SharedWatch<Pod>,
}

/// Folds `change` into `map`; the namespace it touched. Objects are owned
/// (a watch of its own) or shared (`Arc`: the process's pod watch).
fn upsert<K: Borrow<V>, V: kube::Resource>(
    map: &mut BTreeMap<ObjectKey, K>,
    change: Change<K>,
) -> Option<String> {
    match change {
        Change::Upsert(object) => {
            let key = ObjectKey::of_meta(object.borrow().meta());
            let ns = key.namespace.clone();
            map.insert(key, object);
            Some(ns)
        }
        Change::Delete(gone) => {
            map.remove(&gone.key);
            Some(gone.key.namespace)
        }
        Change::Synced => None,
    }
}

impl DisruptionController {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: DisruptionConfig,
        _metrics: ControllerMetrics,
    ) -> DisruptionController {
        DisruptionController {
            client: watches.client().clone(),
            clock,
            config,
            pods: watches.pods().clone(),
        }
    }

    /// Runs until dropped: syncs start once every watch has listed.
    pub async fn run(self) {
        tracing::info!(controller = CONTROLLER_NAME, "Starting controller");
        let c = &self.client;
        let cfg = watcher::Config::default;
        let mut budgets = std::pin::pin!(changes_of(
            Api::<PodDisruptionBudget>::all(c.clone()),
            cfg()
        ));
        let mut pods = std::pin::pin!(self.pods.changes());
        let mut replica_sets = std::pin::pin!(changes_of(Api::<ReplicaSet>::all(c.clone()), cfg()));
        let mut deployments = std::pin::pin!(changes_of(Api::<Deployment>::all(c.clone()), cfg()));
        let mut stateful_sets =
            std::pin::pin!(changes_of(Api::<StatefulSet>::all(c.clone()), cfg()));
        let mut state = State::default();
        let mut synced = [false; 5];
        let mut rechecks: BTreeMap<ObjectKey, Timestamp> = BTreeMap::new();
        loop {
            let next_recheck = rechecks.values().min().copied();
            let wake = self.clock.sleep_until_some(next_recheck);
            tokio::select! {
                biased;
                Some(change) = budgets.next() => match change {
                    Change::Upsert(pdb) => {
                        let key = ObjectKey::of_meta(&pdb.metadata);
                        state.budgets.insert(key.clone(), pdb);
                        state.dirty.insert(key);
                    }
                    Change::Delete(gone) => {
                        state.budgets.remove(&gone.key);
                        rechecks.remove(&gone.key);
                    }
                    Change::Synced => synced[0] = true,
                },
                Some(change) = pods.next() => {
                    synced[1] |= matches!(change, Change::Synced);
                    if let Some(ns) = upsert::<_, Pod>(&mut state.pods, change) {
                        state.touch_namespace(&ns);
                    }
                }
                Some(change) = replica_sets.next() => {
                    synced[2] |= matches!(change, Change::Synced);
                    if let Some(ns) = upsert(&mut state.replica_sets, change) {
                        state.touch_namespace(&ns);
                    }
                }
                Some(change) = deployments.next() => {
                    synced[3] |= matches!(change, Change::Synced);
                    if let Some(ns) = upsert(&mut state.deployments, change) {
                        state.touch_namespace(&ns);
                    }
                }
                Some(change) = stateful_sets.next() => {
                    synced[4] |= matches!(change, Change::Synced);
                    if let Some(ns) = upsert(&mut state.stateful_sets, change) {
                        state.touch_namespace(&ns);
                    }
                }
                () = wake => {
                    let now = self.clock.now();
                    let due: Vec<ObjectKey> = rechecks
                        .iter()
                        .filter(|(_, at)| **at <= now)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for key in due {
                        rechecks.remove(&key);
                        state.dirty.insert(key);
                    }
                }
            }
            if synced.iter().all(|s| *s) {
                self.sync_dirty(&mut state, &mut rechecks).await;
            }
        }
    }

    /// Syncs every budget marked dirty, writing the statuses that changed.
    async fn sync_dirty(&self, state: &mut State, rechecks: &mut BTreeMap<ObjectKey, Timestamp>) {
        let dirty = std::mem::take(&mut state.dirty);
        for key in dirty {
            let now = self.clock.now();
            let Some(synced) = state.sync(&key, now) else {
                continue;
            };
            if let Some(error) = &synced.error {
                tracing::warn!(budget = %key, %error, "Failed to sync PDB");
            }
            if let Some(at) = synced.recheck {
                // An entry expiring right now is dropped only once it is
                // strictly past (upstream's `Before`): look again a
                // moment later, not now again (which would spin on a
                // paused clock).
                let soon = now
                    .saturating_add(SignedDuration::from_millis(1))
                    .unwrap_or(Timestamp::MAX);
                rechecks.insert(key.clone(), at.max(soon));
            }
            let Some(status) = synced.status else {
                continue;
            };
            let Some(mut pdb) = state.budgets.get(&key).cloned() else {
                continue;
            };
            pdb.status = Some(status);
            let api = Api::<PodDisruptionBudget>::namespaced(self.client.clone(), &key.namespace);
            match api
                .replace_status(&key.name, &PostParams::default(), &pdb)
                .await
            {
                Ok(written) => {
                    tracing::debug!(budget = %key, "PDB status written");
                    state.budgets.insert(key, written);
                }
                // The budget changed since the watch brought it (an
                // eviction spent it): the watch brings the new one, which
                // is synced then.
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    tracing::warn!(budget = %key, error = %e, "PDB status write failed; retrying");
                    let retry = SignedDuration::try_from(self.config.retry_after)
                        .unwrap_or(SignedDuration::from_secs(1));
                    rechecks.insert(key, now.saturating_add(retry).unwrap_or(Timestamp::MAX));
                }
            }
        }
    }
}
