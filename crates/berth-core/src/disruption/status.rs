//! The disruption controller's arithmetic (`getExpectedPodCount`,
//! `countHealthyPods`, `buildDisruptedPodMap`, `updatePdbStatus`,
//! `failSafe`) and the `DisruptionAllowed` condition
//! (component-helpers' `UpdateDisruptionAllowedCondition`).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::finders::{Workloads, expected_scale};
use super::{
    DELETION_TIMEOUT, DISRUPTION_ALLOWED_CONDITION, INSUFFICIENT_PODS_REASON,
    SUFFICIENT_PODS_REASON, SYNC_FAILED_REASON,
};
use crate::int_or_string::scaled_value;
use crate::pod::is_ready;

/// What the budget expects: `expectedPods`, `desiredHealthy`, and the
/// selected pods no controller owns (reported, not an error).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expected {
    pub expected_count: i32,
    pub desired_healthy: i32,
    pub unmanaged_pods: Vec<String>,
}

/// `getExpectedPodCount`. `maxUnavailable` (integer or percentage) and a
/// percentage `minAvailable` need the controllers' scale; an integer
/// `minAvailable` expects the selected pods as they are. A percentage
/// rounds up either way, as upstream's `GetScaledValueFromIntOrPercent(...,
/// true)`.
pub fn expected_pod_count(
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
    lookup: &impl Workloads,
) -> Result<Expected, String> {
    let spec = pdb.spec.as_ref();
    let mut out = Expected::default();
    if let Some(max_unavailable) = spec.and_then(|s| s.max_unavailable.as_ref()) {
        let (count, unmanaged) = expected_scale(lookup, pods)?;
        let max = scaled_value(max_unavailable, count, true).map_err(|e| e.to_string())?;
        out.expected_count = count;
        out.unmanaged_pods = unmanaged;
        out.desired_healthy = count.saturating_sub(max).max(0);
    } else if let Some(min_available) = spec.and_then(|s| s.min_available.as_ref()) {
        match min_available {
            IntOrString::Int(n) => {
                out.desired_healthy = *n;
                out.expected_count = i32::try_from(pods.len()).unwrap_or(i32::MAX);
            }
            IntOrString::String(_) => {
                let (count, unmanaged) = expected_scale(lookup, pods)?;
                out.expected_count = count;
                out.unmanaged_pods = unmanaged;
                out.desired_healthy =
                    scaled_value(min_available, count, true).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(out)
}

fn is_being_deleted(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn expires_after(disrupted_at: &Time, now: Timestamp) -> bool {
    disrupted_at
        .0
        .checked_add(DELETION_TIMEOUT)
        .is_ok_and(|expected_deletion| expected_deletion > now)
}

/// `countHealthyPods`: ready pods, not being deleted, and not evicted in
/// the last [`DELETION_TIMEOUT`].
pub fn count_healthy_pods(
    pods: &[&Pod],
    disrupted: &BTreeMap<String, Time>,
    now: Timestamp,
) -> i32 {
    let healthy = pods
        .iter()
        .filter(|pod| !is_being_deleted(pod))
        .filter(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            !disrupted.get(name).is_some_and(|at| expires_after(at, now))
        })
        .filter(|pod| is_ready(pod))
        .count();
    i32::try_from(healthy).unwrap_or(i32::MAX)
}

/// `buildDisruptedPodMap`: the budget's `disruptedPods` kept only for
/// pods still there, not yet being deleted and evicted less than
/// [`DELETION_TIMEOUT`] ago; and when the earliest of those expires (the
/// controller syncs the budget again then).
pub fn build_disrupted_pod_map(
    pods: &[&Pod],
    pdb: &PodDisruptionBudget,
    now: Timestamp,
) -> (BTreeMap<String, Time>, Option<Timestamp>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let Some(disrupted) = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref()) else {
        return (kept, recheck);
    };
    for pod in pods {
        if is_being_deleted(pod) {
            continue;
        }
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let Some(at) = disrupted.get(name) else {
            continue;
        };
        let Ok(expected_deletion) = at.0.checked_add(DELETION_TIMEOUT) else {
            continue;
        };
        // Upstream drops the entry (and warns "NotDeleted") only when the
        // deadline is strictly before now (`expectedDeletion.Before`).
        if expected_deletion < now {
            continue;
        }
        recheck = Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
        kept.insert(name.to_string(), at.clone());
    }
    (kept, recheck)
}

/// `disruptionsAllowed`: healthy pods beyond the desired, and none while
/// the budget expects no pods (so a budget whose pods have just appeared
/// is safe before the controller has seen them).
pub fn disruptions_allowed(current_healthy: i32, desired_healthy: i32, expected: i32) -> i32 {
    let allowed = current_healthy.saturating_sub(desired_healthy);
    if expected <= 0 || allowed <= 0 {
        0
    } else {
        allowed
    }
}

/// `apimeta.SetStatusCondition`: replace the condition of the same type,
/// keeping its transition time unless the status changes.
fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) {
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) {
        if existing.status == new.status {
            new.last_transition_time = existing.last_transition_time.clone();
        }
        *existing = new;
    } else {
        conditions.push(new);
    }
}

/// `UpdateDisruptionAllowedCondition`: `True`/`SufficientPods` while a
/// disruption is allowed, `False`/`InsufficientPods` otherwise.
pub fn set_disruption_allowed_condition(status: &mut PodDisruptionBudgetStatus, now: Timestamp) {
    let (state, reason) = if status.disruptions_allowed.unwrap_or(0) > 0 {
        ("True", SUFFICIENT_PODS_REASON)
    } else {
        ("False", INSUFFICIENT_PODS_REASON)
    };
    let observed = status.observed_generation;
    set_condition(
        status.conditions.get_or_insert_with(Vec::new),
        Condition {
            type_: DISRUPTION_ALLOWED_CONDITION.into(),
            status: state.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: observed,
            last_transition_time: Time(now),
        },
    );
}

/// `ConditionsAreUpToDate`: the condition agrees with `disruptionsAllowed`
/// for the budget's current generation.
pub fn conditions_are_up_to_date(pdb: &PodDisruptionBudget) -> bool {
    let Some(status) = pdb.status.as_ref() else {
        return false;
    };
    let Some(cond) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_ALLOWED_CONDITION)
    else {
        return false;
    };
    if status.observed_generation != pdb.metadata.generation {
        return false;
    }
    if status.disruptions_allowed.unwrap_or(0) > 0 {
        cond.status == "True" && cond.reason == SUFFICIENT_PODS_REASON
    } else {
        cond.status == "False" && cond.reason == INSUFFICIENT_PODS_REASON
    }
}

/// `updatePdbStatus`: the status the controller writes, or `None` when the
/// budget already says so (no write).
pub fn status_for(
    pdb: &PodDisruptionBudget,
    current_healthy: i32,
    expected: &Expected,
    disrupted: BTreeMap<String, Time>,
    now: Timestamp,
) -> Option<PodDisruptionBudgetStatus> {
    let allowed = disruptions_allowed(
        current_healthy,
        expected.desired_healthy,
        expected.expected_count,
    );
    let old = pdb.status.clone().unwrap_or_default();
    let old_disrupted = old.disrupted_pods.clone().unwrap_or_default();
    if old.current_healthy.unwrap_or(0) == current_healthy
        && old.desired_healthy.unwrap_or(0) == expected.desired_healthy
        && old.expected_pods.unwrap_or(0) == expected.expected_count
        && old.disruptions_allowed.unwrap_or(0) == allowed
        && old_disrupted == disrupted
        && old.observed_generation == pdb.metadata.generation
        && conditions_are_up_to_date(pdb)
    {
        return None;
    }
    let mut status = PodDisruptionBudgetStatus {
        current_healthy: Some(current_healthy),
        desired_healthy: Some(expected.desired_healthy),
        expected_pods: Some(expected.expected_count),
        disruptions_allowed: Some(allowed),
        disrupted_pods: Some(disrupted),
        observed_generation: pdb.metadata.generation,
        conditions: old.conditions,
    };
    set_disruption_allowed_condition(&mut status, now);
    Some(status)
}

/// `failSafe`: when a sync fails, at least stop evictions: no disruption
/// allowed and the condition `False`/`SyncFailed` with the error. The
/// rest of the status stays as it was.
pub fn fail_safe_status(
    pdb: &PodDisruptionBudget,
    error: &str,
    now: Timestamp,
) -> PodDisruptionBudgetStatus {
    let mut status = pdb.status.clone().unwrap_or_default();
    status.disruptions_allowed = Some(0);
    let observed = status.observed_generation;
    set_condition(
        status.conditions.get_or_insert_with(Vec::new),
        Condition {
            type_: DISRUPTION_ALLOWED_CONDITION.into(),
            status: "False".into(),
            reason: SYNC_FAILED_REASON.into(),
            message: error.into(),
            observed_generation: observed,
            last_transition_time: Time(now),
        },
    );
    status
}

/// Everything one sync computes for a budget (`trySync` before the write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Computed {
    pub expected: Expected,
    pub current_healthy: i32,
    pub disrupted: BTreeMap<String, Time>,
    /// When the earliest `disruptedPods` entry expires: sync again then.
    pub recheck: Option<Timestamp>,
}

/// `trySync`'s arithmetic: the budget's pods among `namespace_pods`, what
/// it expects, the disruptedPods still pending and the healthy count. An
/// error (an invalid selector, a pod whose controller is unknown) is for
/// [`fail_safe_status`].
pub fn compute<'a>(
    pdb: &PodDisruptionBudget,
    namespace_pods: impl IntoIterator<Item = &'a Pod>,
    lookup: &impl Workloads,
    now: Timestamp,
) -> Result<Computed, String> {
    let selector = super::budget_selector(pdb).map_err(|e| e.to_string())?;
    let pods: Vec<&Pod> = match &selector {
        None => Vec::new(),
        Some(sel) => namespace_pods
            .into_iter()
            .filter(|p| p.metadata.namespace == pdb.metadata.namespace)
            .filter(|p| sel.matches(p.metadata.labels.as_ref()))
            .collect(),
    };
    let expected = expected_pod_count(pdb, &pods, lookup)?;
    let (disrupted, recheck) = build_disrupted_pod_map(&pods, pdb, now);
    let current_healthy = count_healthy_pods(&pods, &disrupted, now);
    Ok(Computed {
        expected,
        current_healthy,
        disrupted,
        recheck,
    })
}
