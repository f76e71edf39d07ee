//! The PodDisruptionBudgets the scheduler watches (upstream's PDB lister,
//! which `DefaultPreemption` reads in `getPodDisruptionBudgets`): kept by
//! namespace, and weighed in preemption through berth-core's one port of
//! `filterPodsWithPDBViolation`.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_core::disruption::pdb_violations;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::preemption::DisruptionBudgets;

/// The budgets of the cluster, by namespace then name.
#[derive(Debug, Default, Clone)]
pub struct Budgets {
    by_namespace: BTreeMap<String, BTreeMap<String, Arc<PodDisruptionBudget>>>,
    /// How many times a budget was added, changed or deleted.
    version: u64,
}

impl Budgets {
    pub fn new() -> Self {
        Budgets::default()
    }

    /// A budget was added or changed (its status carries the disruptions
    /// allowed and the pods already being disrupted).
    pub fn upsert(&mut self, pdb: PodDisruptionBudget) {
        self.version += 1;
        let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
        let name = pdb.metadata.name.clone().unwrap_or_default();
        self.by_namespace
            .entry(namespace)
            .or_default()
            .insert(name, Arc::new(pdb));
    }

    /// A budget was deleted.
    pub fn delete(&mut self, namespace: &str, name: &str) {
        self.version += 1;
        if let Some(budgets) = self.by_namespace.get_mut(namespace) {
            budgets.remove(name);
            if budgets.is_empty() {
                self.by_namespace.remove(namespace);
            }
        }
    }

    /// Changes when any budget is added, changed or deleted: preemption's
    /// verdicts on a node are reused only while it stays the same.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// How many budgets there are.
    pub fn len(&self) -> usize {
        self.by_namespace.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_namespace.is_empty()
    }
}

impl DisruptionBudgets for Budgets {
    fn violations(&self, pods: &[&Pod]) -> Vec<bool> {
        if self.by_namespace.is_empty() {
            return vec![false; pods.len()];
        }
        // Only the budgets of the pods' namespaces can cover them (a
        // node's victims mostly share a few namespaces).
        let mut namespaces: Vec<&str> = pods
            .iter()
            .map(|p| p.metadata.namespace.as_deref().unwrap_or_default())
            .collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        let pdbs: Vec<&PodDisruptionBudget> = namespaces
            .iter()
            .filter_map(|ns| self.by_namespace.get(*ns))
            .flat_map(|budgets| budgets.values().map(|pdb| &**pdb))
            .collect();
        pdb_violations(pods, &pdbs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_pod, pdb};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;

    /// `test_util::pdb` in `namespace`, `allowed` disruptions in its status.
    fn budget(namespace: &str, name: &str, app: &str, allowed: i32) -> PodDisruptionBudget {
        let mut budget = pdb(name, &[("app", app)], None, None);
        budget.metadata.namespace = Some(namespace.into());
        budget.status = Some(PodDisruptionBudgetStatus {
            disruptions_allowed: Some(allowed),
            ..PodDisruptionBudgetStatus::default()
        });
        budget
    }

    fn labelled(namespace: &str, name: &str, app: &str) -> Pod {
        make_pod()
            .name(name)
            .namespace(namespace)
            .label("app", app)
            .obj()
    }

    #[test]
    fn a_budget_covers_the_pods_of_its_namespace_until_deleted() {
        let a = labelled("default", "a", "web");
        let b = labelled("default", "b", "web");
        let other = labelled("team", "c", "web");
        let mut budgets = Budgets::new();
        assert_eq!(budgets.violations(&[&a, &b]), [false, false], "no budgets");
        budgets.upsert(budget("default", "web", "web", 1));
        assert_eq!(budgets.len(), 1);
        assert_eq!(
            budgets.violations(&[&a, &b, &other]),
            [false, true, false],
            "one disruption allowed, in the order given; not across namespaces"
        );
        budgets.upsert(budget("default", "web", "web", 2));
        assert_eq!(budgets.violations(&[&a, &b]), [false, false], "replaced");
        budgets.upsert(budget("team", "web", "web", 0));
        assert_eq!(budgets.violations(&[&other, &a]), [true, false]);
        budgets.delete("default", "web");
        budgets.delete("team", "web");
        assert!(budgets.is_empty());
        assert_eq!(budgets.violations(&[&a, &b]), [false, false], "deleted");
    }
}
