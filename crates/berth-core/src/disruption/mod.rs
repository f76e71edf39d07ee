//! PodDisruptionBudgets: which pods a budget covers, how many it expects
//! and how many may be disrupted (upstream's disruption controller,
//! `pkg/controller/disruption`), and whether the Eviction API may evict a
//! pod under it (`pkg/registry/core/pod/storage/eviction.go`). One copy of
//! each rule, called by the disruption controller, the API server's
//! eviction subresource and the scheduler's preemption.

mod eviction;
mod finders;
mod status;

pub use eviction::{
    EvictionDecision, EvictionRefusal, MultipleBudgets, budget_for_eviction, can_ignore_budget,
    check_and_decrement, decide, should_enforce_resource_version, unhealthy_pod_may_go,
};
pub use finders::{ControllerScale, Workloads, expected_scale, find_controller_scale};
pub use status::{
    Computed, Expected, build_disrupted_pod_map, compute, conditions_are_up_to_date,
    count_healthy_pods, disruptions_allowed, expected_pod_count, fail_safe_status,
    set_disruption_allowed_condition, status_for,
};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::labels::{LabelSelector, label_selector_as_selector};

/// How long after an eviction a pod still listed in `disruptedPods` is
/// taken to be on its way out (upstream's `DeletionTimeout`): past it the
/// controller assumes the delete never happened and counts the pod again.
pub const DELETION_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// `MaxDisruptedPodSize`: the eviction handler refuses once this many
/// evictions wait for the controller to notice them.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;

/// The status condition the controller keeps (`DisruptionAllowedCondition`).
pub const DISRUPTION_ALLOWED_CONDITION: &str = "DisruptionAllowed";
/// Its reasons (`SufficientPodsReason`, `InsufficientPodsReason`,
/// `SyncFailedReason`).
pub const SUFFICIENT_PODS_REASON: &str = "SufficientPods";
pub const INSUFFICIENT_PODS_REASON: &str = "InsufficientPods";
pub const SYNC_FAILED_REASON: &str = "SyncFailed";

/// The cause type of a refused eviction (`policyv1.DisruptionBudgetCause`).
pub const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";
/// Upstream's message when an eviction would violate a budget.
pub const EVICTION_REFUSED_MESSAGE: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";
/// Upstream's message when more than one budget covers the pod (a 500).
pub const MULTIPLE_BUDGETS_MESSAGE: &str = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// `unhealthyPodEvictionPolicy` values.
pub const IF_HEALTHY_BUDGET: &str = "IfHealthyBudget";
pub const ALWAYS_ALLOW: &str = "AlwaysAllow";

/// The budget's selector, parsed. A missing selector selects nothing; an
/// empty one selects every pod of the namespace (policy/v1's meaning). An
/// invalid selector is an error (the controller's fail-safe reports it).
pub fn budget_selector(
    pdb: &PodDisruptionBudget,
) -> Result<Option<LabelSelector>, crate::labels::LabelSelectorError> {
    label_selector_as_selector(pdb.spec.as_ref().and_then(|s| s.selector.as_ref()))
}

/// Whether the budget covers the pod: same namespace and the selector
/// matches its labels. An invalid selector covers nothing, as the eviction
/// handler treats it.
pub fn selects(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    if pdb.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    matches!(budget_selector(pdb), Ok(Some(sel)) if sel.matches(pod.metadata.labels.as_ref()))
}

/// The budgets among `pdbs` that cover the pod.
pub fn budgets_for_pod<'a>(
    pdbs: impl IntoIterator<Item = &'a PodDisruptionBudget>,
    pod: &Pod,
) -> Vec<&'a PodDisruptionBudget> {
    pdbs.into_iter().filter(|pdb| selects(pdb, pod)).collect()
}

/// Preemption's `filterPodsWithPDBViolation`: for each pod (in the order
/// given, which is the order victims are considered), whether removing it
/// would take some budget covering it below zero, counting the pods before
/// it against the same budgets. A pod a budget already lists in
/// `disruptedPods` costs that budget nothing (the API server has already
/// counted it). Unlike the eviction handler, a budget with an empty
/// selector matches nothing here, as upstream's scheduler does.
pub fn pdb_violations(pods: &[&Pod], pdbs: &[&PodDisruptionBudget]) -> Vec<bool> {
    let mut allowed: Vec<i32> = pdbs
        .iter()
        .map(|pdb| {
            pdb.status
                .as_ref()
                .and_then(|s| s.disruptions_allowed)
                .unwrap_or(0)
        })
        .collect();
    let selectors: Vec<Option<LabelSelector>> = pdbs
        .iter()
        .map(|pdb| {
            budget_selector(pdb)
                .ok()
                .flatten()
                .filter(|s| !s.is_empty())
        })
        .collect();
    pods.iter()
        .map(|pod| {
            let labels = pod.metadata.labels.as_ref().filter(|l| !l.is_empty());
            let Some(labels) = labels else {
                return false;
            };
            let mut violated = false;
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.metadata.namespace != pod.metadata.namespace {
                    continue;
                }
                let Some(selector) = &selectors[i] else {
                    continue;
                };
                if !selector.matches(labels) {
                    continue;
                }
                let disrupted = pdb
                    .status
                    .as_ref()
                    .and_then(|s| s.disrupted_pods.as_ref())
                    .zip(pod.metadata.name.as_ref())
                    .is_some_and(|(d, name)| d.contains_key(name));
                if disrupted {
                    continue;
                }
                allowed[i] -= 1;
                violated |= allowed[i] < 0;
            }
            violated
        })
        .collect()
}

#[cfg(test)]
mod tests;
