//! The disruption controller's copies of what it watches, and one budget's
//! sync over them (upstream's `trySync` and `failSafe`): berth-core's
//! arithmetic decides, this file only finds the objects.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use berth_core::disruption::{self, Workloads};
use berth_core::object_key::ObjectKey;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};

/// What one sync of a budget decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Synced {
    /// The status to write, `None` when the stored one already says it.
    pub status: Option<PodDisruptionBudgetStatus>,
    /// When to sync again (the earliest `disruptedPods` entry expiring).
    pub recheck: Option<Timestamp>,
    /// The sync failed: the status is the fail-safe one with this error.
    pub error: Option<String>,
}

/// The controller's copies of the budgets, pods and pod owners.
#[derive(Debug, Default)]
pub struct State {
    pub budgets: BTreeMap<ObjectKey, PodDisruptionBudget>,
    /// Shared with the process's other pod watchers.
    pub pods: BTreeMap<ObjectKey, Arc<Pod>>,
    pub replica_sets: BTreeMap<ObjectKey, ReplicaSet>,
    pub deployments: BTreeMap<ObjectKey, Deployment>,
    pub stateful_sets: BTreeMap<ObjectKey, StatefulSet>,
    /// Budgets to sync.
    pub dirty: BTreeSet<ObjectKey>,
}

fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(namespace, name)
}

impl Workloads for State {
    fn replica_set(&self, namespace: &str, name: &str) -> Option<&ReplicaSet> {
        self.replica_sets.get(&key(namespace, name))
    }
    fn deployment(&self, namespace: &str, name: &str) -> Option<&Deployment> {
        self.deployments.get(&key(namespace, name))
    }
    fn stateful_set(&self, namespace: &str, name: &str) -> Option<&StatefulSet> {
        self.stateful_sets.get(&key(namespace, name))
    }
    /// berth serves no ReplicationControllers.
    fn replication_controller(&self, _: &str, _: &str) -> Option<&ReplicationController> {
        None
    }
}

impl State {
    /// Every budget of `namespace` is to be synced: a pod or an owner
    /// there changed (a superset of upstream's `getPdbForPod`, which also
    /// re-syncs when an owner's scale changes).
    pub fn touch_namespace(&mut self, namespace: &str) {
        let keys: Vec<ObjectKey> = self
            .budgets
            .keys()
            .filter(|k| k.namespace == namespace)
            .cloned()
            .collect();
        self.dirty.extend(keys);
    }

    /// One budget's sync at `now`; `None` if the budget is gone.
    pub fn sync(&self, budget: &ObjectKey, now: Timestamp) -> Option<Synced> {
        let pdb = self.budgets.get(budget)?;
        let pods = self
            .pods
            .range(ObjectKey::new(&budget.namespace, "")..)
            .take_while(|(k, _)| k.namespace == budget.namespace)
            .map(|(_, p)| p.as_ref());
        Some(match disruption::compute(pdb, pods, self, now) {
            Ok(computed) => Synced {
                status: disruption::status_for(
                    pdb,
                    computed.current_healthy,
                    &computed.expected,
                    computed.disrupted,
                    now,
                ),
                recheck: computed.recheck,
                error: None,
            },
            Err(error) => Synced {
                status: Some(disruption::fail_safe_status(pdb, &error, now)),
                recheck: None,
                error: Some(error),
            },
        })
    }
}
