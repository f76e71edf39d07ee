//! The Eviction API's decisions (`pkg/registry/core/pod/storage/eviction.go`):
//! which pods skip the budget, which budget guards a pod, when an
//! unhealthy pod may go without spending a disruption, and the
//! check-and-decrement the handler writes with a compare-and-swap.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::status::set_disruption_allowed_condition;
use super::{ALWAYS_ALLOW, MAX_DISRUPTED_POD_SIZE, budgets_for_pod};
use crate::pod::is_ready;

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// `canIgnorePDB`: a pod that is Pending, has finished, or is already
/// being deleted is deleted without consulting any budget (it disrupts
/// nothing that is not disrupted already).
pub fn can_ignore_budget(pod: &Pod) -> bool {
    matches!(phase(pod), Some("Succeeded" | "Failed" | "Pending"))
        || pod.metadata.deletion_timestamp.is_some()
}

/// `shouldEnforceResourceVersion`: when skipping the budget, delete with
/// the pod's resourceVersion as precondition unless it has finished or is
/// being deleted, so a Pending pod that turned Ready meanwhile is not
/// deleted behind the budget's back.
pub fn should_enforce_resource_version(pod: &Pod) -> bool {
    !matches!(phase(pod), Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

/// Several budgets cover the pod: upstream's 500 with
/// [`super::MULTIPLE_BUDGETS_MESSAGE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultipleBudgets;

/// `getPodDisruptionBudgets` and the handler's count check: the one budget
/// covering the pod, or none.
pub fn budget_for_eviction<'a>(
    pdbs: impl IntoIterator<Item = &'a PodDisruptionBudget>,
    pod: &Pod,
) -> Result<Option<&'a PodDisruptionBudget>, MultipleBudgets> {
    let covering = budgets_for_pod(pdbs, pod);
    match covering.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        _ => Err(MultipleBudgets),
    }
}

/// The unhealthy-pod shortcut: a pod that is not Ready counts for nothing
/// in `currentHealthy`, so it may be deleted without spending a
/// disruption when the budget's `unhealthyPodEvictionPolicy` is
/// `AlwaysAllow`, or (unset or `IfHealthyBudget`) when the budget is
/// healthy and guards something (`currentHealthy >= desiredHealthy > 0`).
/// The delete then carries the pod's resourceVersion as precondition.
pub fn unhealthy_pod_may_go(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    if is_ready(pod) {
        return false;
    }
    let policy = pdb
        .spec
        .as_ref()
        .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref());
    if policy == Some(ALWAYS_ALLOW) {
        return true;
    }
    let status = pdb.status.as_ref();
    let current = status.and_then(|s| s.current_healthy).unwrap_or(0);
    let desired = status.and_then(|s| s.desired_healthy).unwrap_or(0);
    current >= desired && desired > 0
}

/// Why the handler refuses an eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionRefusal {
    /// 429 with [`super::EVICTION_REFUSED_MESSAGE`], a `DisruptionBudget`
    /// cause with this message, and `Retry-After` seconds (`retryAfter`).
    TooManyRequests {
        cause_message: String,
        retry_after_seconds: i32,
    },
    /// 403 on `poddisruptionbudgets.policy` with this reason.
    Forbidden { budget: String, message: String },
}

/// `checkAndDecrement`: refuse while the controller has not seen the
/// budget's generation, when its status is corrupt or too many evictions
/// wait to be noticed, or when no disruption is left; otherwise the budget
/// with one disruption spent and (unless `dry_run`) the pod recorded in
/// `disruptedPods` at `now`. The caller writes it with the budget's
/// resourceVersion as precondition and retries from a fresh read on
/// conflict, so concurrent evictions never spend the same disruption.
pub fn check_and_decrement(
    pdb: &PodDisruptionBudget,
    pod_name: &str,
    dry_run: bool,
    now: Timestamp,
) -> Result<PodDisruptionBudget, EvictionRefusal> {
    let name = pdb.metadata.name.clone().unwrap_or_default();
    let status = pdb.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < pdb.metadata.generation.unwrap_or(0) {
        return Err(EvictionRefusal::TooManyRequests {
            cause_message: format!(
                "The disruption budget {name} is still being processed by the server."
            ),
            retry_after_seconds: 10,
        });
    }
    let allowed = status.disruptions_allowed.unwrap_or(0);
    if allowed < 0 {
        return Err(EvictionRefusal::Forbidden {
            budget: name,
            message: "pdb disruptions allowed is negative".into(),
        });
    }
    if status.disrupted_pods.as_ref().map_or(0, |d| d.len()) > MAX_DISRUPTED_POD_SIZE {
        return Err(EvictionRefusal::Forbidden {
            budget: name,
            message:
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
                    .into(),
        });
    }
    if allowed == 0 {
        return Err(EvictionRefusal::TooManyRequests {
            cause_message: format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status.desired_healthy.unwrap_or(0),
                status.current_healthy.unwrap_or(0)
            ),
            retry_after_seconds: 0,
        });
    }
    let mut updated = pdb.clone();
    let new_status = updated.status.get_or_insert_with(Default::default);
    new_status.disruptions_allowed = Some(allowed - 1);
    if allowed == 1 {
        set_disruption_allowed_condition(new_status, now);
    }
    if !dry_run {
        new_status
            .disrupted_pods
            .get_or_insert_with(Default::default)
            .insert(pod_name.to_string(), Time(now));
    }
    Ok(updated)
}

/// What the eviction handler does with a pod, given the budgets of its
/// namespace (upstream's `Create`, before any write).
#[derive(Debug, Clone, PartialEq)]
pub enum EvictionDecision {
    /// Delete the pod without spending a disruption; with the pod's
    /// resourceVersion as precondition when `enforce_resource_version`
    /// (so a pod that turned Ready meanwhile is not deleted unguarded).
    Delete { enforce_resource_version: bool },
    /// Spend a disruption: write this budget (compare-and-swap on the
    /// resourceVersion it was read at), then delete the pod.
    Spend(Box<PodDisruptionBudget>),
    /// Several budgets cover the pod: upstream's 500.
    MultipleBudgets,
    /// Refused.
    Refuse(EvictionRefusal),
}

/// The handler's first pass: [`can_ignore_budget`], then the covering
/// budget ([`budget_for_eviction`]), the unhealthy-pod shortcut
/// ([`unhealthy_pod_may_go`]) and [`check_and_decrement`].
pub fn decide<'a>(
    pod: &Pod,
    pdbs: impl IntoIterator<Item = &'a PodDisruptionBudget>,
    dry_run: bool,
    now: Timestamp,
) -> EvictionDecision {
    if can_ignore_budget(pod) {
        return EvictionDecision::Delete {
            enforce_resource_version: should_enforce_resource_version(pod),
        };
    }
    let pdb = match budget_for_eviction(pdbs, pod) {
        Err(MultipleBudgets) => return EvictionDecision::MultipleBudgets,
        Ok(None) => {
            return EvictionDecision::Delete {
                enforce_resource_version: false,
            };
        }
        Ok(Some(pdb)) => pdb,
    };
    if unhealthy_pod_may_go(pdb, pod) {
        return EvictionDecision::Delete {
            enforce_resource_version: true,
        };
    }
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    match check_and_decrement(pdb, pod_name, dry_run, now) {
        Ok(updated) => EvictionDecision::Spend(Box::new(updated)),
        Err(refusal) => EvictionDecision::Refuse(refusal),
    }
}
