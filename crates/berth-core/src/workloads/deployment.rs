//! Deployment decisions, ported from upstream's
//! `pkg/controller/deployment` (`rolling.go`, `recreate.go`, `sync.go`,
//! `progress.go`) and `pkg/controller/deployment/util`:
//!
//! - rollout arithmetic: `ResolveFenceposts` (surge rounds up,
//!   unavailability down, both 0 means 1 unavailable), `MaxSurge`,
//!   `MaxUnavailable`, `MinAvailable`, `NewRSNewReplicas`;
//! - a rolling step: `reconcileNewReplicaSet`, and `reconcileOldReplicaSets`
//!   (`cleanupUnhealthyReplicas`, then
//!   `scaleDownOldReplicaSetsForRollingUpdate`);
//! - Recreate: scale the old ReplicaSets to 0, wait until no old pod runs
//!   (`oldPodsRunning`), then scale the new one up;
//! - a resize mid-rollout: `scale` with `FindActiveOrLatest`,
//!   `IsSaturated`, `GetReplicaSetProportion` and the
//!   desired/max-replicas annotations; `isScalingEvent`;
//! - ReplicaSets and revisions: `FindNewReplicaSet`, `FindOldReplicaSets`,
//!   `EqualIgnoreHash`, the new ReplicaSet of `getNewReplicaSet` (named by
//!   [`super::template_hash::compute_hash`]), `MaxRevision`,
//!   `LastRevision`, `SetNewReplicaSetAnnotations` (revision max+1,
//!   revision history), `SetDeploymentAnnotationsTo` (rollback),
//!   `cleanupDeployment` (`revisionHistoryLimit`: old ReplicaSets scaled
//!   to 0, lowest revision first);
//! - status: `calculateStatus`, the `Available` condition
//!   (MinimumReplicasAvailable/Unavailable), `syncRolloutStatus`'s
//!   `Progressing` condition (NewReplicaSetAvailable, ReplicaSetUpdated,
//!   ProgressDeadlineExceeded, with `DeploymentComplete`,
//!   `DeploymentProgressing`, `DeploymentTimedOut`), the paused and
//!   resumed conditions, `requeueStuckDeployment`.
//!
//! A step returns the ReplicaSet scales it decided ([`ReplicaSetScale`]);
//! the controller writes them, in order, and stops at the first failure as
//! upstream does. The `TerminatingReplicas` status field (behind a feature
//! gate upstream) is not computed.

use std::collections::{BTreeMap, HashMap};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ownership::new_controller_ref;
use super::replicaset;
use super::template_hash::{canonical_json, compute_hash};
use crate::int_or_string::{IntOrStringError, scaled_value};

/// `apps.DefaultDeploymentUniqueLabelKey`: the label that ties a
/// ReplicaSet and its pods to one template.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// `apps.DeprecatedRollbackTo`.
const DEPRECATED_ROLLBACK_TO_ANNOTATION: &str = "deprecated.deployment.rollback.to";
/// `v1.LastAppliedConfigAnnotation`.
const LAST_APPLIED_CONFIG_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The longest `revision-history` annotation the controller writes
/// (`maxRevHistoryLengthInChars`).
pub const MAX_REVISION_HISTORY_CHARS: usize = 2000;

pub const STRATEGY_ROLLING_UPDATE: &str = "RollingUpdate";
pub const STRATEGY_RECREATE: &str = "Recreate";

pub const CONDITION_PROGRESSING: &str = "Progressing";
pub const CONDITION_AVAILABLE: &str = "Available";
pub const CONDITION_REPLICA_FAILURE: &str = "ReplicaFailure";

pub const REASON_REPLICA_SET_UPDATED: &str = "ReplicaSetUpdated";
pub const REASON_FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
pub const REASON_NEW_REPLICA_SET_CREATED: &str = "NewReplicaSetCreated";
pub const REASON_FOUND_NEW_REPLICA_SET: &str = "FoundNewReplicaSet";
pub const REASON_NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const REASON_TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const REASON_PAUSED: &str = "DeploymentPaused";
pub const REASON_RESUMED: &str = "DeploymentResumed";
pub const REASON_MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const REASON_MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

/// A ReplicaSet to scale, by name, to `replicas`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSetScale {
    pub name: String,
    pub replicas: i32,
}

/// Why a rollout step cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeploymentError {
    #[error(transparent)]
    IntOrString(#[from] IntOrStringError),
    #[error("deployment type {0:?} isn't supported")]
    UnsupportedStrategy(String),
}

/// `spec.replicas`, 1 when absent (the API default).
pub fn replicas(d: &Deployment) -> i32 {
    d.spec.replicas.unwrap_or(1)
}

fn rs_replicas(rs: &ReplicaSet) -> i32 {
    replicaset::replicas(rs)
}

fn name(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

fn scale_to(rs: &ReplicaSet, replicas: i32) -> ReplicaSetScale {
    ReplicaSetScale {
        name: name(&rs.metadata),
        replicas,
    }
}

/// `spec.strategy.type`, RollingUpdate when absent (the API default).
pub fn strategy_type(d: &Deployment) -> &str {
    d.spec
        .strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(STRATEGY_ROLLING_UPDATE)
}

/// `IsRollingUpdate` (absent: the API default, RollingUpdate).
pub fn is_rolling_update(d: &Deployment) -> bool {
    strategy_type(d) == STRATEGY_ROLLING_UPDATE
}

/// The rolling update's `maxSurge` and `maxUnavailable`, each 25% when
/// absent (the API defaults).
fn rolling_parameters(d: &Deployment) -> (IntOrString, IntOrString) {
    let rolling = d
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let quarter = || IntOrString::String("25%".into());
    (
        rolling
            .and_then(|r| r.max_surge.clone())
            .unwrap_or_else(quarter),
        rolling
            .and_then(|r| r.max_unavailable.clone())
            .unwrap_or_else(quarter),
    )
}

/// `ResolveFenceposts`: `(surge, unavailable)` against `desired`; surge
/// rounds up and unavailability down, an absent value is 0, and when both
/// come to 0 one pod may be unavailable (validation refuses 0 and 0, but
/// rounding down can produce it; surge might be blocked by quota).
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), IntOrStringError> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, true)?;
    let unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, false)?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1));
    }
    Ok((surge, unavailable))
}

fn fenceposts(d: &Deployment) -> (i32, i32) {
    let (surge, unavailable) = rolling_parameters(d);
    // Validation refuses what does not resolve; upstream ignores the
    // error here the same way (it reads as 0 and 0, so 1 unavailable).
    resolve_fenceposts(Some(&surge), Some(&unavailable), replicas(d)).unwrap_or((0, 1))
}

/// `MaxUnavailable`: at most `replicas` pods may be unavailable; 0 for
/// Recreate or no replicas.
pub fn max_unavailable(d: &Deployment) -> i32 {
    if !is_rolling_update(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

/// `MinAvailable`: `replicas - maxUnavailable` for RollingUpdate, 0 for
/// Recreate.
pub fn min_available(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    replicas(d) - max_unavailable(d)
}

/// `MaxSurge`: 0 for Recreate.
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    fenceposts(d).0
}

/// `GetReplicaCountForReplicaSets`: the sum of `spec.replicas`.
pub fn replica_count(rss: &[&ReplicaSet]) -> i32 {
    rss.iter().map(|rs| rs_replicas(rs)).sum()
}

fn status_sum(
    rss: &[&ReplicaSet],
    field: impl Fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> i32,
) -> i32 {
    rss.iter()
        .filter_map(|rs| rs.status.as_ref())
        .map(field)
        .sum()
}

/// `GetActualReplicaCountForReplicaSets`: the sum of `status.replicas`.
pub fn actual_replica_count(rss: &[&ReplicaSet]) -> i32 {
    status_sum(rss, |s| s.replicas)
}

/// `GetReadyReplicaCountForReplicaSets`.
pub fn ready_replica_count(rss: &[&ReplicaSet]) -> i32 {
    status_sum(rss, |s| s.ready_replicas.unwrap_or(0))
}

/// `GetAvailableReplicaCountForReplicaSets`.
pub fn available_replica_count(rss: &[&ReplicaSet]) -> i32 {
    status_sum(rss, |s| s.available_replicas.unwrap_or(0))
}

fn available(rs: &ReplicaSet) -> i32 {
    available_replica_count(&[rs])
}

/// `NewRSNewReplicas`: the new ReplicaSet's size this step. Rolling: grow
/// by what keeps all pods within `replicas + maxSurge`, never past
/// `replicas`; Recreate: `replicas` at once.
pub fn new_rs_new_replicas(
    d: &Deployment,
    all_rss: &[&ReplicaSet],
    new_rs: &ReplicaSet,
) -> Result<i32, DeploymentError> {
    match strategy_type(d) {
        STRATEGY_ROLLING_UPDATE => {
            let (surge, _) = rolling_parameters(d);
            let max_surge = scaled_value(&surge, replicas(d), true)?;
            let current = replica_count(all_rss);
            let max_total = replicas(d).saturating_add(max_surge);
            if current >= max_total {
                return Ok(rs_replicas(new_rs));
            }
            let scale_up = (max_total - current).min(replicas(d) - rs_replicas(new_rs));
            Ok(rs_replicas(new_rs) + scale_up)
        }
        STRATEGY_RECREATE => Ok(replicas(d)),
        other => Err(DeploymentError::UnsupportedStrategy(other.to_string())),
    }
}

/// `reconcileNewReplicaSet`: the new ReplicaSet's next size, if it
/// changes (down to `replicas` if above, else [`new_rs_new_replicas`]).
pub fn reconcile_new_replica_set(
    all_rss: &[&ReplicaSet],
    new_rs: &ReplicaSet,
    d: &Deployment,
) -> Result<Option<ReplicaSetScale>, DeploymentError> {
    let current = rs_replicas(new_rs);
    let target = if current > replicas(d) {
        replicas(d)
    } else {
        new_rs_new_replicas(d, all_rss, new_rs)?
    };
    Ok((target != current).then(|| scale_to(new_rs, target)))
}

/// `ReplicaSetsByCreationTimestamp`: oldest first, then by name.
pub fn by_creation_timestamp(a: &ReplicaSet, b: &ReplicaSet) -> std::cmp::Ordering {
    let created = |rs: &ReplicaSet| rs.metadata.creation_timestamp.as_ref().map(|t| t.0);
    created(a)
        .cmp(&created(b))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// A ReplicaSet with the size a step has decided so far.
struct Sized<'a> {
    rs: &'a ReplicaSet,
    replicas: i32,
}

fn sized<'a>(rss: &[&'a ReplicaSet]) -> Vec<Sized<'a>> {
    let mut out: Vec<Sized<'a>> = rss
        .iter()
        .map(|&rs| Sized {
            rs,
            replicas: rs_replicas(rs),
        })
        .collect();
    out.sort_by(|a, b| by_creation_timestamp(a.rs, b.rs));
    out
}

/// `cleanupUnhealthyReplicas`' "got invalid request to scale down": an
/// old ReplicaSet reports more available pods than it wants. Its status
/// predates a scale-down its controller has not carried out yet (the
/// pods it is deleting still count), so nothing can be concluded from it
/// this time, and the rolling step scales nothing down: scaling down on
/// that stale count would take availability below `minAvailable`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "when cleaning up unhealthy replicas, got invalid request to scale down {name} {from} -> {to}"
)]
pub struct InvalidScaleDown {
    pub name: String,
    pub from: i32,
    pub to: i32,
}

/// `cleanupUnhealthyReplicas`: scale old ReplicaSets down by their
/// unavailable pods, oldest first, at most `max_cleanup` pods in all:
/// deleting pods that are not available cannot lower availability, and
/// they would otherwise block the rollout. Returns the scales and their
/// total, or [`InvalidScaleDown`] for an old ReplicaSet whose status
/// counts more available pods than it wants.
pub fn cleanup_unhealthy_replicas(
    old_rss: &[&ReplicaSet],
    max_cleanup: i32,
) -> Result<(Vec<ReplicaSetScale>, i32), InvalidScaleDown> {
    let mut olds = sized(old_rss);
    let cleanup = cleanup_unhealthy(&mut olds, max_cleanup);
    match cleanup.invalid {
        Some(invalid) => Err(invalid),
        None => Ok((cleanup.scales, cleanup.total)),
    }
}

/// What `cleanupUnhealthyReplicas` did before it stopped.
struct Cleanup {
    scales: Vec<ReplicaSetScale>,
    total: i32,
    invalid: Option<InvalidScaleDown>,
}

fn cleanup_unhealthy(olds: &mut [Sized<'_>], max_cleanup: i32) -> Cleanup {
    let mut cleanup = Cleanup {
        scales: Vec::new(),
        total: 0,
        invalid: None,
    };
    for old in olds.iter_mut() {
        if cleanup.total >= max_cleanup {
            break;
        }
        if old.replicas == 0 || old.replicas == available(old.rs) {
            continue;
        }
        let down = (max_cleanup - cleanup.total).min(old.replicas - available(old.rs));
        if down < 0 {
            cleanup.invalid = Some(InvalidScaleDown {
                name: name(&old.rs.metadata),
                from: old.replicas,
                to: old.replicas - down,
            });
            break;
        }
        old.replicas -= down;
        cleanup.total += down;
        cleanup.scales.push(scale_to(old.rs, old.replicas));
    }
    cleanup
}

/// `scaleDownOldReplicaSetsForRollingUpdate`: with more pods available
/// than `minAvailable`, scale old ReplicaSets down by the excess, oldest
/// first.
pub fn scale_down_old_replica_sets_for_rolling_update(
    all_rss: &[&ReplicaSet],
    old_rss: &[&ReplicaSet],
    d: &Deployment,
) -> Vec<ReplicaSetScale> {
    scale_down_for_rolling_update(available_replica_count(all_rss), &mut sized(old_rss), d)
}

fn scale_down_for_rolling_update(
    available_pods: i32,
    olds: &mut [Sized<'_>],
    d: &Deployment,
) -> Vec<ReplicaSetScale> {
    let min_available = replicas(d) - max_unavailable(d);
    if available_pods <= min_available {
        return Vec::new();
    }
    let to_scale_down = available_pods - min_available;
    let mut scaled_down = 0;
    let mut scales = Vec::new();
    for old in olds.iter_mut() {
        if scaled_down >= to_scale_down {
            break;
        }
        if old.replicas == 0 {
            continue;
        }
        let down = old.replicas.min(to_scale_down - scaled_down);
        old.replicas -= down;
        scaled_down += down;
        scales.push(scale_to(old.rs, old.replicas));
    }
    scales
}

/// `reconcileOldReplicaSets`: how far old ReplicaSets may shrink now.
/// At most `all pods - minAvailable - new pods not yet available` go (so
/// a crash-looping new ReplicaSet does not drain the old one), first the
/// old pods that are unavailable anyway, then available ones down to
/// `minAvailable`; nothing more once an old ReplicaSet's status is seen
/// to predate its last scale-down ([`InvalidScaleDown`]). `old_rss` are the active old ReplicaSets. Scales of
/// one ReplicaSet in both phases appear twice, the later one final.
pub fn reconcile_old_replica_sets(
    all_rss: &[&ReplicaSet],
    old_rss: &[&ReplicaSet],
    new_rs: &ReplicaSet,
    d: &Deployment,
) -> Vec<ReplicaSetScale> {
    if replica_count(old_rss) == 0 {
        return Vec::new();
    }
    let min_available = replicas(d) - max_unavailable(d);
    let new_unavailable = rs_replicas(new_rs) - available(new_rs);
    let max_scaled_down = replica_count(all_rss) - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut olds = sized(old_rss);
    let Cleanup {
        mut scales,
        invalid,
        ..
    } = cleanup_unhealthy(&mut olds, max_scaled_down);
    if invalid.is_some() {
        // Upstream returns from the step here: what was scaled stays.
        return scales;
    }
    let mut available_pods: i32 = olds.iter().map(|o| available(o.rs)).sum();
    available_pods += available(new_rs);
    for later in scale_down_for_rolling_update(available_pods, &mut olds, d) {
        match scales.iter_mut().find(|s| s.name == later.name) {
            Some(earlier) => earlier.replicas = later.replicas,
            None => scales.push(later),
        }
    }
    scales
}

/// `FilterActiveReplicaSets`: the ReplicaSets that want pods.
pub fn active<'a>(rss: &[&'a ReplicaSet]) -> Vec<&'a ReplicaSet> {
    rss.iter()
        .copied()
        .filter(|rs| rs_replicas(rs) > 0)
        .collect()
}

/// `scaleDownOldReplicaSetsForRecreate`: every active old ReplicaSet to 0.
pub fn scale_down_old_replica_sets_for_recreate(old_rss: &[&ReplicaSet]) -> Vec<ReplicaSetScale> {
    active(old_rss)
        .into_iter()
        .map(|rs| scale_to(rs, 0))
        .collect()
}

/// `scaleUpNewReplicaSetForRecreate`: the new ReplicaSet to `replicas`.
pub fn scale_up_new_replica_set_for_recreate(
    new_rs: &ReplicaSet,
    d: &Deployment,
) -> Option<ReplicaSetScale> {
    (rs_replicas(new_rs) != replicas(d)).then(|| scale_to(new_rs, replicas(d)))
}

/// `oldPodsRunning`: Recreate waits for this to be false before it
/// scales the new ReplicaSet up. True while an old ReplicaSet reports
/// pods, or while a pod of another ReplicaSet than the new one (by owner
/// UID in `pods_by_rs`) is not finished (Unknown counts as running).
pub fn old_pods_running(
    new_rs: Option<&ReplicaSet>,
    old_rss: &[&ReplicaSet],
    pods_by_rs: &HashMap<String, Vec<&Pod>>,
) -> bool {
    if actual_replica_count(old_rss) > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.as_deref());
    pods_by_rs
        .iter()
        .filter(|(uid, _)| Some(uid.as_str()) != new_uid)
        .flat_map(|(_, pods)| pods.iter())
        .any(|p| !crate::pod::is_terminal(p))
}

fn int_annotation(meta: &ObjectMeta, key: &str) -> Option<i32> {
    meta.annotations.as_ref()?.get(key)?.parse().ok()
}

/// `GetDesiredReplicasAnnotation`.
pub fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(&rs.metadata, DESIRED_REPLICAS_ANNOTATION)
}

/// `SetReplicasAnnotations`: record the Deployment's size and maximum
/// (`replicas + maxSurge`) on a ReplicaSet, so that a later resize can be
/// told from a rollout and distributed proportionally. Returns whether
/// anything changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut updated = false;
    for (key, value) in [
        (DESIRED_REPLICAS_ANNOTATION, desired),
        (MAX_REPLICAS_ANNOTATION, max),
    ] {
        let value = value.to_string();
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.into(), value);
            updated = true;
        }
    }
    updated
}

/// `ReplicasAnnotationsNeedUpdate`.
pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    let current = |key: &str| {
        rs.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
    };
    current(DESIRED_REPLICAS_ANNOTATION) != Some(desired.to_string())
        || current(MAX_REPLICAS_ANNOTATION) != Some(max.to_string())
}

/// `IsSaturated`: the ReplicaSet alone runs the whole Deployment: its
/// size, its desired-replicas annotation and its available pods all equal
/// `replicas`.
pub fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else {
        return false;
    };
    desired_replicas_annotation(rs) == Some(replicas(d))
        && rs_replicas(rs) == replicas(d)
        && available(rs) == replicas(d)
}

/// `FindActiveOrLatest`: the one active ReplicaSet; with none, the new
/// one or else the newest old one; with several, `None` (they scale
/// proportionally).
pub fn find_active_or_latest<'a>(
    new_rs: Option<&'a ReplicaSet>,
    old_rss: &[&'a ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let mut all: Vec<&ReplicaSet> = old_rss.to_vec();
    all.extend(new_rs);
    let actives = active(&all);
    match actives.as_slice() {
        [only] => Some(only),
        [] => new_rs.or_else(|| {
            old_rss
                .iter()
                .copied()
                .max_by(|a, b| by_creation_timestamp(a, b))
        }),
        _ => None,
    }
}

/// `getReplicaSetFraction`: how many replicas this ReplicaSet gains (or
/// loses) when the Deployment's maximum moves from the one recorded on it
/// (`max-replicas`, or the Deployment's current pod count without it) to
/// `replicas + maxSurge`.
fn replica_set_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    if replicas(d) == 0 {
        return -rs_replicas(rs);
    }
    let max_now = replicas(d) + max_surge(d);
    let max_before = match int_annotation(&rs.metadata, MAX_REPLICAS_ANNOTATION) {
        Some(max) if max != 0 => max,
        _ => {
            let current = d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0);
            if current == 0 {
                // The annotation was tampered with and no pod runs: no
                // base to scale from.
                return 0;
            }
            current
        }
    };
    let size = f64::from(rs_replicas(rs)) * f64::from(max_now) / f64::from(max_before);
    // Go's math.Round rounds half away from zero, as f64::round does.
    size.round() as i32 - rs_replicas(rs)
}

/// `GetReplicaSetProportion`: this ReplicaSet's share of `to_add`
/// (negative: to remove), given `added` so far, never past what is left.
pub fn replica_set_proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// `scale` (sync.go): a resize of the Deployment, mid-rollout or paused.
/// One active (or, with none, the latest) ReplicaSet simply takes the new
/// size; a saturated new ReplicaSet sends the old ones to 0; otherwise,
/// for RollingUpdate, the difference to `replicas + maxSurge` is shared
/// out in proportion to each active ReplicaSet's size, the largest first
/// (newer first when scaling up, older first when scaling down), and
/// what rounding leaves goes to the first. The result lists every
/// ReplicaSet whose size or replica annotations must be written.
pub fn scale(
    d: &Deployment,
    new_rs: Option<&ReplicaSet>,
    old_rss: &[&ReplicaSet],
) -> Vec<ReplicaSetScale> {
    if let Some(rs) = find_active_or_latest(new_rs, old_rss) {
        if rs_replicas(rs) == replicas(d) {
            return Vec::new();
        }
        return vec![scale_to(rs, replicas(d))];
    }
    if is_saturated(d, new_rs) {
        return scale_down_old_replica_sets_for_recreate(old_rss);
    }
    if !is_rolling_update(d) {
        return Vec::new();
    }
    let mut all: Vec<&ReplicaSet> = old_rss.to_vec();
    all.extend(new_rs);
    let mut all = active(&all);
    let allowed_size = if replicas(d) > 0 {
        replicas(d) + max_surge(d)
    } else {
        0
    };
    let to_add = allowed_size - replica_count(&all);
    // Largest first; equal sizes: newer first scaling up, older first
    // scaling down (`ReplicaSetsBySizeNewer`/`ReplicaSetsBySizeOlder`).
    all.sort_by(|a, b| {
        rs_replicas(b).cmp(&rs_replicas(a)).then_with(|| {
            if to_add > 0 {
                by_creation_timestamp(b, a)
            } else {
                by_creation_timestamp(a, b)
            }
        })
    });
    let mut added = 0;
    let mut sizes: Vec<i32> = all
        .iter()
        .map(|rs| {
            let proportion = replica_set_proportion(rs, d, to_add, added);
            added += proportion;
            rs_replicas(rs) + proportion
        })
        .collect();
    if let Some(first) = sizes.first_mut()
        && to_add != 0
    {
        *first = (*first + to_add - added).max(0);
    }
    let max = replicas(d) + max_surge(d);
    all.iter()
        .zip(sizes)
        .filter(|(rs, size)| {
            rs_replicas(rs) != *size || replicas_annotations_need_update(rs, replicas(d), max)
        })
        .map(|(rs, size)| scale_to(rs, size))
        .collect()
}

/// `isScalingEvent`: an active ReplicaSet records another desired size
/// than the Deployment's (`kubectl scale` during a rollout or a pause).
pub fn is_scaling_event(d: &Deployment, all_rss: &[&ReplicaSet]) -> bool {
    active(all_rss)
        .into_iter()
        .filter_map(desired_replicas_annotation)
        .any(|desired| desired != replicas(d))
}

/// `Revision`: the revision annotation, 0 when absent, an error when not
/// a number.
pub fn revision(meta: &ObjectMeta) -> Result<i64, std::num::ParseIntError> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(REVISION_ANNOTATION))
        .map_or(Ok(0), |v| v.parse())
}

/// `MaxRevision`: the highest revision (unparsable ones skipped).
pub fn max_revision(rss: &[&ReplicaSet]) -> i64 {
    rss.iter()
        .filter_map(|rs| revision(&rs.metadata).ok())
        .max()
        .unwrap_or(0)
        .max(0)
}

/// `LastRevision`: the second highest revision (the one `rollout undo`
/// goes back to).
pub fn last_revision(rss: &[&ReplicaSet]) -> i64 {
    let (mut max, mut second) = (0, 0);
    for v in rss.iter().filter_map(|rs| revision(&rs.metadata).ok()) {
        if v >= max {
            second = max;
            max = v;
        } else if v > second {
            second = v;
        }
    }
    second
}

/// Annotations never copied between a Deployment and its ReplicaSets
/// (`annotationsToSkip`).
fn skip_copy_annotation(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED_CONFIG_ANNOTATION
            | REVISION_ANNOTATION
            | REVISION_HISTORY_ANNOTATION
            | DESIRED_REPLICAS_ANNOTATION
            | MAX_REPLICAS_ANNOTATION
            | DEPRECATED_ROLLBACK_TO_ANNOTATION
    )
}

/// `SetNewReplicaSetAnnotations`: copy the Deployment's annotations (but
/// the skipped ones) to its new ReplicaSet; raise the ReplicaSet's
/// revision to `new_revision` if lower, keeping the old one in the
/// revision history (a rollback re-uses a ReplicaSet) within
/// `max_history_chars`; for a ReplicaSet about to be created (`!exists`),
/// set the replica annotations. Returns whether anything changed; an
/// unparsable revision changes nothing more than the copy.
pub fn set_new_replica_set_annotations(
    d: &Deployment,
    new_rs: &mut ReplicaSet,
    new_revision: &str,
    exists: bool,
    max_history_chars: usize,
) -> bool {
    let annotations = new_rs
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if !skip_copy_annotation(k) && annotations.get(k) != Some(v) {
            annotations.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    let old_revision = annotations.get(REVISION_ANNOTATION).cloned();
    let old_number = match old_revision.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) => return changed,
        },
    };
    let Ok(new_number) = new_revision.parse::<i64>() else {
        return changed;
    };
    if old_number < new_number {
        annotations.insert(REVISION_ANNOTATION.into(), new_revision.into());
        changed = true;
        if let Some(old) = old_revision {
            let history = annotations
                .get(REVISION_HISTORY_ANNOTATION)
                .cloned()
                .unwrap_or_default();
            if history.is_empty() {
                annotations.insert(REVISION_HISTORY_ANNOTATION.into(), old);
            } else {
                let mut revisions: Vec<&str> = history.split(',').collect();
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > max_history_chars && start < revisions.len() {
                    total -= revisions[start].len() + 1;
                    start += 1;
                }
                if total <= max_history_chars {
                    revisions.drain(..start);
                    revisions.push(&old);
                    let joined = revisions.join(",");
                    annotations.insert(REVISION_HISTORY_ANNOTATION.into(), joined);
                }
            }
        }
    }
    if !exists {
        let max = replicas(d) + max_surge(d);
        changed |= set_replicas_annotations(new_rs, replicas(d), max);
    }
    changed
}

/// `SetDeploymentAnnotationsTo`: on rollback, the Deployment takes the
/// ReplicaSet's annotations, keeping its own skipped ones.
pub fn set_deployment_annotations_to(d: &mut Deployment, rollback_to: &ReplicaSet) {
    let mut annotations: BTreeMap<String, String> = d
        .metadata
        .annotations
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| skip_copy_annotation(k))
        .collect();
    for (k, v) in rollback_to.metadata.annotations.iter().flatten() {
        if !skip_copy_annotation(k) {
            annotations.insert(k.clone(), v.clone());
        }
    }
    d.metadata.annotations = Some(annotations);
}

/// `EqualIgnoreHash`: the templates are equal but for the
/// `pod-template-hash` label (absent, empty and null fields alike, as
/// `Semantic.DeepEqual` treats nil and empty lists and maps).
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    let without_hash = |t: &PodTemplateSpec| {
        let mut t = t.clone();
        if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.remove(POD_TEMPLATE_HASH_LABEL);
        }
        canonical_json(&t)
    };
    without_hash(a) == without_hash(b)
}

fn rs_template(rs: &ReplicaSet) -> PodTemplateSpec {
    rs.spec.template.clone().unwrap_or_default()
}

/// `FindNewReplicaSet`: the oldest ReplicaSet with the Deployment's
/// template (more than one can exist after an upgrade changes hashing).
pub fn find_new_replica_set<'a>(d: &Deployment, rss: &[&'a ReplicaSet]) -> Option<&'a ReplicaSet> {
    let mut sorted = rss.to_vec();
    sorted.sort_by(|a, b| by_creation_timestamp(a, b));
    sorted
        .into_iter()
        .find(|rs| equal_ignore_hash(&rs_template(rs), &d.spec.template))
}

/// `FindOldReplicaSets`: every ReplicaSet but the new one, and those of
/// them that want pods.
pub fn find_old_replica_sets<'a>(
    d: &Deployment,
    rss: &[&'a ReplicaSet],
) -> (Vec<&'a ReplicaSet>, Vec<&'a ReplicaSet>) {
    let new_rs = find_new_replica_set(d, rss);
    let all: Vec<&ReplicaSet> = rss
        .iter()
        .copied()
        .filter(|rs| !new_rs.is_some_and(|new| std::ptr::eq(new, *rs)))
        .collect();
    (active(&all), all)
}

/// The ReplicaSet `getNewReplicaSet` creates for the Deployment's current
/// template: named `<deployment>-<hash>`, the hash label added to its
/// labels, selector and template, owned by the Deployment, sized by
/// [`new_rs_new_replicas`] against `old_rss`, annotated with
/// `max(old revisions) + 1`.
pub fn new_replica_set(
    d: &Deployment,
    old_rss: &[&ReplicaSet],
) -> Result<ReplicaSet, DeploymentError> {
    let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
    let hash = compute_hash(&d.spec.template, collision_count);
    let mut template = d.spec.template.clone();
    template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
    let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    let mut selector = d.spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
    let mut rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(format!("{}-{hash}", name(&d.metadata))),
            namespace: d.metadata.namespace.clone(),
            owner_references: Some(vec![new_controller_ref(
                &d.metadata,
                "apps/v1",
                "Deployment",
            )]),
            labels,
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(0),
            min_ready_seconds: d.spec.min_ready_seconds,
            selector,
            template: Some(template),
        },
        status: None,
    };
    let mut all = old_rss.to_vec();
    all.push(&rs);
    let size = new_rs_new_replicas(d, &all, &rs)?;
    rs.spec.replicas = Some(size);
    let revision = (max_revision(old_rss) + 1).to_string();
    set_new_replica_set_annotations(d, &mut rs, &revision, false, MAX_REVISION_HISTORY_CHARS);
    Ok(rs)
}

/// `getNewReplicaSet` for an existing new ReplicaSet: its annotations
/// (revision `max(old revisions) + 1`) and `minReadySeconds` brought up to
/// date; `None` when nothing changes.
pub fn sync_new_replica_set(
    d: &Deployment,
    new_rs: &ReplicaSet,
    old_rss: &[&ReplicaSet],
) -> Option<ReplicaSet> {
    let mut rs = new_rs.clone();
    let revision = (max_revision(old_rss) + 1).to_string();
    let annotations_changed =
        set_new_replica_set_annotations(d, &mut rs, &revision, true, MAX_REVISION_HISTORY_CHARS);
    let min_ready_changed = rs.spec.min_ready_seconds != d.spec.min_ready_seconds;
    rs.spec.min_ready_seconds = d.spec.min_ready_seconds;
    (annotations_changed || min_ready_changed).then_some(rs)
}

/// `HasRevisionHistoryLimit`: a limit other than "unlimited" (`MaxInt32`);
/// absent reads as the API default, 10.
fn revision_history_limit(d: &Deployment) -> Option<usize> {
    let limit = d.spec.revision_history_limit.unwrap_or(10);
    (limit != i32::MAX).then(|| usize::try_from(limit).unwrap_or(0))
}

/// `ReplicaSetsByRevision`: lowest revision first; unparsable or equal
/// revisions by creation time.
fn by_revision(a: &ReplicaSet, b: &ReplicaSet) -> std::cmp::Ordering {
    match (revision(&a.metadata), revision(&b.metadata)) {
        (Ok(x), Ok(y)) if x != y => x.cmp(&y),
        _ => by_creation_timestamp(a, b),
    }
}

/// `cleanupDeployment`: the old ReplicaSets to delete beyond
/// `revisionHistoryLimit`, lowest revision first, skipping any that still
/// has or wants pods, whose controller has not seen its latest spec, or
/// that is already being deleted.
pub fn cleanup_deployment(old_rss: &[&ReplicaSet], d: &Deployment) -> Vec<String> {
    let Some(limit) = revision_history_limit(d) else {
        return Vec::new();
    };
    let mut alive: Vec<&ReplicaSet> = old_rss
        .iter()
        .copied()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .collect();
    let excess = alive.len().saturating_sub(limit);
    alive.sort_by(|a, b| by_revision(a, b));
    alive
        .into_iter()
        .take(excess)
        .filter(|rs| {
            let status = rs.status.clone().unwrap_or_default();
            status.replicas == 0
                && rs_replicas(rs) == 0
                && rs.metadata.generation.unwrap_or(0) <= status.observed_generation.unwrap_or(0)
        })
        .map(|rs| name(&rs.metadata))
        .collect()
}

/// `NewDeploymentCondition`, at `now`.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: Some(type_.into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// `GetDeploymentCondition`.
pub fn condition<'a>(status: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some(type_))
}

/// `SetDeploymentCondition`: replace the condition of that type, unless
/// it already has the same status and reason; keep its transition time
/// while the status holds.
pub fn set_condition(status: &mut DeploymentStatus, mut new: DeploymentCondition) {
    if let Some(current) = condition(status, new.type_.as_deref().unwrap_or("")) {
        if current.status == new.status && current.reason == new.reason {
            return;
        }
        if current.status == new.status {
            new.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, new.type_.as_deref().unwrap_or(""));
    status.conditions.get_or_insert_with(Vec::new).push(new);
}

/// `RemoveDeploymentCondition`.
pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_.as_deref() != Some(type_));
        if conditions.is_empty() {
            status.conditions = None;
        }
    }
}

/// The counts of a status, with absent read as 0.
fn counts(s: &DeploymentStatus) -> (i32, i32, i32, i32) {
    (
        s.replicas.unwrap_or(0),
        s.updated_replicas.unwrap_or(0),
        s.ready_replicas.unwrap_or(0),
        s.available_replicas.unwrap_or(0),
    )
}

/// `DeploymentComplete`: every desired replica updated and available, no
/// old pod left, the latest spec observed.
pub fn deployment_complete(d: &Deployment, new_status: &DeploymentStatus) -> bool {
    let (replicas_now, updated, _, available_now) = counts(new_status);
    let want = replicas(d);
    updated == want
        && replicas_now == want
        && available_now == want
        && new_status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// `DeploymentProgressing`: compared with the Deployment's current
/// status, more pods updated, fewer old pods, or more ready or available.
pub fn deployment_progressing(d: &Deployment, new_status: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let (old_replicas, old_updated, old_ready, old_available) = counts(&old);
    let (new_replicas, new_updated, new_ready, new_available) = counts(new_status);
    new_updated > old_updated
        || (new_replicas - new_updated) < (old_replicas - old_updated)
        || new_ready > old_ready
        || new_available > old_available
}

/// `HasProgressDeadline`.
pub fn has_progress_deadline(d: &Deployment) -> bool {
    progress_deadline(d).is_some()
}

/// `SetDeploymentRevision`: record `revision` on the Deployment (its
/// new ReplicaSet's); whether it changed.
pub fn set_deployment_revision(d: &mut Deployment, revision: &str) -> bool {
    let annotations = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if annotations.get(REVISION_ANNOTATION).map(String::as_str) == Some(revision) {
        return false;
    }
    annotations.insert(REVISION_ANNOTATION.into(), revision.into());
    true
}

/// Whether the Deployment's selector is empty, which upstream refuses
/// to act on (`SelectingAll`): it would select every pod.
pub fn selects_everything(d: &Deployment) -> bool {
    let selector = &d.spec.selector;
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}

/// `HasProgressDeadline`: set and not `MaxInt32` (absent means none, as
/// upstream reads a nil pointer).
fn progress_deadline(d: &Deployment) -> Option<SignedDuration> {
    d.spec
        .progress_deadline_seconds
        .filter(|&s| s != i32::MAX)
        .map(|s| SignedDuration::from_secs(i64::from(s)))
}

/// `DeploymentTimedOut`: no progress recorded for longer than
/// `progressDeadlineSeconds` (strictly), unless the last rollout
/// completed; once timed out, it stays so.
pub fn deployment_timed_out(d: &Deployment, new_status: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(progressing) = condition(new_status, CONDITION_PROGRESSING) else {
        return false;
    };
    match progressing.reason.as_deref() {
        Some(REASON_NEW_RS_AVAILABLE) => false,
        Some(REASON_TIMED_OUT) => true,
        // A missing update time is Go's zero time: long past.
        _ => progressing
            .last_update_time
            .as_ref()
            .is_none_or(|from| from.0.checked_add(deadline).is_ok_and(|due| due < now)),
    }
}

fn rs_condition_to_deployment(
    c: &k8s_openapi::api::apps::v1::ReplicaSetCondition,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        last_transition_time: c.last_transition_time.clone(),
        last_update_time: c.last_transition_time.clone(),
    }
}

/// `calculateStatus`: the counts over all ReplicaSets (updated: the new
/// one's pods; unavailable: wanted pods not available, at least 0) and
/// the `Available` condition: True (MinimumReplicasAvailable) when at
/// least `replicas - maxUnavailable` pods are available.
pub fn calculate_status(
    all_rss: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    d: &Deployment,
    now: Timestamp,
) -> DeploymentStatus {
    let available_now = available_replica_count(all_rss);
    let current = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(actual_replica_count(all_rss)),
        updated_replicas: Some(new_rs.map_or(0, |rs| actual_replica_count(&[rs]))),
        ready_replicas: Some(ready_replica_count(all_rss)),
        available_replicas: Some(available_now),
        unavailable_replicas: Some((replica_count(all_rss) - available_now).max(0)),
        collision_count: current.collision_count,
        conditions: current.conditions,
        terminating_replicas: None,
    };
    let condition = if available_now >= replicas(d) - max_unavailable(d) {
        new_condition(
            CONDITION_AVAILABLE,
            "True",
            REASON_MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            now,
        )
    } else {
        new_condition(
            CONDITION_AVAILABLE,
            "False",
            REASON_MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    };
    set_condition(&mut status, condition);
    status
}

/// `syncRolloutStatus`: [`calculate_status`], then the `Progressing`
/// condition while a progress deadline is set and the last rollout is
/// not complete: NewReplicaSetAvailable once complete, ReplicaSetUpdated
/// (its update time refreshed, its transition time kept) while making
/// progress, ProgressDeadlineExceeded (False) when stuck past the
/// deadline. Without a deadline the condition is removed. The
/// `ReplicaFailure` condition follows the new ReplicaSet's (or else any
/// old one's). The controller writes the result if it differs from the
/// current status.
pub fn sync_rollout_status(
    all_rss: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    d: &Deployment,
    now: Timestamp,
) -> DeploymentStatus {
    let mut status = calculate_status(all_rss, new_rs, d, now);
    if progress_deadline(d).is_none() {
        remove_condition(&mut status, CONDITION_PROGRESSING);
    }
    let current = d
        .status
        .as_ref()
        .and_then(|s| condition(s, CONDITION_PROGRESSING))
        .cloned();
    let complete_before = status.replicas == status.updated_replicas
        && current
            .as_ref()
            .is_some_and(|c| c.reason.as_deref() == Some(REASON_NEW_RS_AVAILABLE));
    if progress_deadline(d).is_some() && !complete_before {
        let subject = match new_rs {
            Some(rs) => format!("ReplicaSet {:?}", name(&rs.metadata)),
            None => format!("Deployment {:?}", name(&d.metadata)),
        };
        if deployment_complete(d, &status) {
            let message = format!("{subject} has successfully progressed.");
            set_condition(
                &mut status,
                new_condition(
                    CONDITION_PROGRESSING,
                    "True",
                    REASON_NEW_RS_AVAILABLE,
                    &message,
                    now,
                ),
            );
        } else if deployment_progressing(d, &status) {
            let message = format!("{subject} is progressing.");
            let mut progressing = new_condition(
                CONDITION_PROGRESSING,
                "True",
                REASON_REPLICA_SET_UPDATED,
                &message,
                now,
            );
            if let Some(current) = &current {
                if current.status.as_deref() == Some("True") {
                    progressing.last_transition_time = current.last_transition_time.clone();
                }
                remove_condition(&mut status, CONDITION_PROGRESSING);
            }
            set_condition(&mut status, progressing);
        } else if deployment_timed_out(d, &status, now) {
            let message = format!("{subject} has timed out progressing.");
            set_condition(
                &mut status,
                new_condition(
                    CONDITION_PROGRESSING,
                    "False",
                    REASON_TIMED_OUT,
                    &message,
                    now,
                ),
            );
        }
    }
    let failure = |rs: &ReplicaSet| {
        rs.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.type_.as_deref() == Some(CONDITION_REPLICA_FAILURE))
            })
            .map(rs_condition_to_deployment)
    };
    match new_rs
        .and_then(failure)
        .or_else(|| all_rss.iter().find_map(|rs| failure(rs)))
    {
        Some(c) => set_condition(&mut status, c),
        None => remove_condition(&mut status, CONDITION_REPLICA_FAILURE),
    }
    status
}

/// `requeueStuckDeployment`: when to look again at a rollout that shows
/// no progress, so the deadline is noticed on time: `None` without a
/// deadline or Progressing condition, or when complete or already timed
/// out; zero when due within a second; otherwise the time left.
pub fn requeue_stuck_after(
    d: &Deployment,
    new_status: &DeploymentStatus,
    now: Timestamp,
) -> Option<SignedDuration> {
    let deadline = progress_deadline(d)?;
    let current = d
        .status
        .as_ref()
        .and_then(|s| condition(s, CONDITION_PROGRESSING))?;
    if deployment_complete(d, new_status) || current.reason.as_deref() == Some(REASON_TIMED_OUT) {
        return None;
    }
    let from = current
        .last_update_time
        .as_ref()
        .map_or(Timestamp::MIN, |t| t.0);
    let after = from
        .checked_add(deadline)
        .map_or(SignedDuration::ZERO, |due| due.duration_since(now));
    Some(if after < SignedDuration::from_secs(1) {
        SignedDuration::ZERO
    } else {
        after
    })
}

/// `checkPausedConditions`: the Progressing condition to set when a
/// Deployment is paused (Unknown, DeploymentPaused) or resumed (Unknown,
/// DeploymentResumed), so that time spent paused does not count against
/// the progress deadline; `None` when nothing changes or without a
/// deadline, and never over a ProgressDeadlineExceeded condition.
pub fn paused_condition(d: &Deployment, now: Timestamp) -> Option<DeploymentCondition> {
    d.spec.progress_deadline_seconds?;
    let current = d
        .status
        .as_ref()
        .and_then(|s| condition(s, CONDITION_PROGRESSING));
    let reason = current.and_then(|c| c.reason.as_deref());
    if reason == Some(REASON_TIMED_OUT) {
        return None;
    }
    let paused_recorded = reason == Some(REASON_PAUSED);
    match (d.spec.paused == Some(true), paused_recorded) {
        (true, false) => Some(new_condition(
            CONDITION_PROGRESSING,
            "Unknown",
            REASON_PAUSED,
            "Deployment is paused",
            now,
        )),
        (false, true) => Some(new_condition(
            CONDITION_PROGRESSING,
            "Unknown",
            REASON_RESUMED,
            "Deployment is resumed",
            now,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{
        DeploymentSpec, DeploymentStrategy, ReplicaSetCondition, ReplicaSetStatus,
        RollingUpdateDeployment,
    };
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    use super::*;
    use crate::test_util::{label_map, make_pod, pod_template, strings, t};

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// Upstream's `newDeployment`: RollingUpdate, maxSurge and
    /// maxUnavailable 0 unless given.
    fn deployment(
        replicas: i32,
        max_surge: Option<IntOrString>,
        max_unavailable: Option<IntOrString>,
    ) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("foo".into()),
                namespace: Some("default".into()),
                uid: Some("d-uid".into()),
                annotations: Some(BTreeMap::new()),
                ..ObjectMeta::default()
            },
            spec: DeploymentSpec {
                replicas: Some(replicas),
                selector: LabelSelector {
                    match_labels: Some(label_map(&[("foo", "bar")])),
                    match_expressions: None,
                },
                strategy: Some(DeploymentStrategy {
                    type_: Some(STRATEGY_ROLLING_UPDATE.into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(max_surge.unwrap_or(IntOrString::Int(0))),
                        max_unavailable: Some(max_unavailable.unwrap_or(IntOrString::Int(0))),
                    }),
                }),
                template: pod_template("foo/bar"),
                ..DeploymentSpec::default()
            },
            status: None,
        }
    }

    fn recreate(replicas: i32) -> Deployment {
        let mut d = deployment(replicas, None, None);
        d.spec.strategy = Some(DeploymentStrategy {
            type_: Some(STRATEGY_RECREATE.into()),
            rolling_update: None,
        });
        d
    }

    /// Upstream's `rs(name, replicas, selector, timestamp)`.
    fn rs(name: &str, replicas: i32, created: i64) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(format!("{name}-uid")),
                creation_timestamp: Some(Time(t(created))),
                ..ObjectMeta::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(replicas),
                selector: LabelSelector::default(),
                template: Some(PodTemplateSpec::default()),
                min_ready_seconds: None,
            },
            status: None,
        }
    }

    /// Upstream's `newRSWithStatus(name, specReplicas, statusReplicas)`.
    fn rs_with_status(name: &str, spec_replicas: i32, status_replicas: i32) -> ReplicaSet {
        let mut out = rs(name, spec_replicas, 0);
        out.status = Some(ReplicaSetStatus {
            replicas: status_replicas,
            ..ReplicaSetStatus::default()
        });
        out
    }

    fn with_available(mut rs: ReplicaSet, available: i32) -> ReplicaSet {
        rs.status
            .get_or_insert_with(ReplicaSetStatus::default)
            .available_replicas = Some(available);
        rs
    }

    fn scales(pairs: &[(&str, i32)]) -> Vec<ReplicaSetScale> {
        pairs
            .iter()
            .map(|(name, replicas)| ReplicaSetScale {
                name: name.to_string(),
                replicas: *replicas,
            })
            .collect()
    }

    /// `SetDeploymentRevision`, `HasProgressDeadline` and the empty
    /// selector of `syncDeployment`.
    #[test]
    fn revision_deadline_and_selector_helpers() {
        let mut d = deployment(1, None, None);
        assert!(set_deployment_revision(&mut d, "2"));
        assert!(!set_deployment_revision(&mut d, "2"));
        assert_eq!(revision(&d.metadata), Ok(2));
        assert!(!has_progress_deadline(&d));
        d.spec.progress_deadline_seconds = Some(600);
        assert!(has_progress_deadline(&d));
        d.spec.progress_deadline_seconds = Some(i32::MAX);
        assert!(!has_progress_deadline(&d), "MaxInt32 means none");
        assert!(!selects_everything(&d));
        d.spec.selector = LabelSelector::default();
        assert!(selects_everything(&d));
        d.spec.selector.match_labels = Some(BTreeMap::new());
        assert!(selects_everything(&d));
    }

    /// Upstream `TestResolveFenceposts`.
    #[test]
    fn resolve_fenceposts_as_upstream() {
        struct Case {
            max_surge: &'static str,
            max_unavailable: &'static str,
            desired: i32,
            want: Result<(i32, i32), ()>,
        }
        for case in [
            Case {
                max_surge: "0%",
                max_unavailable: "0%",
                desired: 0,
                want: Ok((0, 1)),
            },
            Case {
                max_surge: "39%",
                max_unavailable: "39%",
                desired: 10,
                want: Ok((4, 3)),
            },
            Case {
                max_surge: "oops",
                max_unavailable: "39%",
                desired: 10,
                want: Err(()),
            },
            Case {
                max_surge: "55%",
                max_unavailable: "urg",
                desired: 10,
                want: Err(()),
            },
        ] {
            let surge = IntOrString::String(case.max_surge.into());
            let unavailable = IntOrString::String(case.max_unavailable.into());
            let got =
                resolve_fenceposts(Some(&surge), Some(&unavailable), case.desired).map_err(|_| ());
            assert_eq!(got, case.want, "maxSurge={}", case.max_surge);
        }
        assert_eq!(
            resolve_fenceposts(None, None, 10),
            Ok((0, 1)),
            "absent values are 0"
        );
    }

    /// Upstream `TestMaxUnavailable`.
    #[test]
    fn max_unavailable_as_upstream() {
        let pct = |s: &str| IntOrString::String(s.into());
        let with = |replicas, unavailable| {
            deployment(replicas, Some(IntOrString::Int(1)), Some(unavailable))
        };
        struct Case {
            name: &'static str,
            deployment: Deployment,
            want: i32,
        }
        for case in [
            Case {
                name: "maxUnavailable less than replicas",
                deployment: with(10, IntOrString::Int(5)),
                want: 5,
            },
            Case {
                name: "maxUnavailable equal replicas",
                deployment: with(10, IntOrString::Int(10)),
                want: 10,
            },
            Case {
                name: "maxUnavailable greater than replicas",
                deployment: with(5, IntOrString::Int(10)),
                want: 5,
            },
            Case {
                name: "maxUnavailable with replicas is 0",
                deployment: with(0, IntOrString::Int(10)),
                want: 0,
            },
            Case {
                name: "maxUnavailable with Recreate deployment strategy",
                deployment: recreate(3),
                want: 0,
            },
            Case {
                name: "maxUnavailable less than replicas with percents",
                deployment: with(10, pct("50%")),
                want: 5,
            },
            Case {
                name: "maxUnavailable equal replicas with percents",
                deployment: with(10, pct("100%")),
                want: 10,
            },
            Case {
                name: "maxUnavailable greater than replicas with percents",
                deployment: with(5, pct("100%")),
                want: 5,
            },
        ] {
            assert_eq!(
                max_unavailable(&case.deployment),
                case.want,
                "{}",
                case.name
            );
        }
        let mut defaults = deployment(4, None, None);
        defaults.spec.strategy = None;
        assert_eq!(
            (max_surge(&defaults), max_unavailable(&defaults)),
            (1, 1),
            "25% each by default"
        );
    }

    /// Upstream `TestNewRSNewReplicas`.
    #[test]
    fn new_rs_new_replicas_as_upstream() {
        struct Case {
            name: &'static str,
            strategy: &'static str,
            deployment_replicas: i32,
            new_rs_replicas: i32,
            max_surge: i32,
            want: i32,
        }
        for case in [
            Case {
                name: "can not scale up - to newRSReplicas",
                strategy: STRATEGY_ROLLING_UPDATE,
                deployment_replicas: 1,
                new_rs_replicas: 5,
                max_surge: 1,
                want: 5,
            },
            Case {
                name: "scale up - to depReplicas",
                strategy: STRATEGY_ROLLING_UPDATE,
                deployment_replicas: 6,
                new_rs_replicas: 2,
                max_surge: 10,
                want: 6,
            },
            Case {
                name: "recreate - to depReplicas",
                strategy: STRATEGY_RECREATE,
                deployment_replicas: 3,
                new_rs_replicas: 1,
                max_surge: 1,
                want: 3,
            },
        ] {
            let mut d = deployment(
                case.deployment_replicas,
                Some(IntOrString::Int(case.max_surge)),
                Some(IntOrString::Int(1)),
            );
            if let Some(s) = d.spec.strategy.as_mut() {
                s.type_ = Some(case.strategy.into());
            }
            let rs5 = rs("rs5", 5, 0);
            let new_rs = rs("new", case.new_rs_replicas, 0);
            assert_eq!(
                new_rs_new_replicas(&d, &[&rs5], &new_rs),
                Ok(case.want),
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestDeploymentController_reconcileNewReplicaSet`.
    #[test]
    fn reconcile_new_replica_set_as_upstream() {
        struct Case {
            deployment_replicas: i32,
            max_surge: i32,
            old_replicas: i32,
            new_replicas: i32,
            want: Option<i32>,
        }
        for (i, case) in [
            Case {
                deployment_replicas: 10,
                max_surge: 0,
                old_replicas: 10,
                new_replicas: 0,
                want: None,
            },
            Case {
                deployment_replicas: 10,
                max_surge: 2,
                old_replicas: 10,
                new_replicas: 0,
                want: Some(2),
            },
            Case {
                deployment_replicas: 10,
                max_surge: 2,
                old_replicas: 5,
                new_replicas: 0,
                want: Some(7),
            },
            Case {
                deployment_replicas: 10,
                max_surge: 2,
                old_replicas: 10,
                new_replicas: 2,
                want: None,
            },
            Case {
                deployment_replicas: 10,
                max_surge: 2,
                old_replicas: 2,
                new_replicas: 11,
                want: Some(10),
            },
        ]
        .into_iter()
        .enumerate()
        {
            let new_rs = rs("foo-v2", case.new_replicas, 0);
            let old_rs = rs("foo-v1", case.old_replicas, 0);
            let d = deployment(
                case.deployment_replicas,
                Some(IntOrString::Int(case.max_surge)),
                None,
            );
            let got = reconcile_new_replica_set(&[&new_rs, &old_rs], &new_rs, &d);
            assert_eq!(
                got,
                Ok(case.want.map(|r| scales(&[("foo-v2", r)])[0].clone())),
                "scenario {i}"
            );
        }
    }

    /// Upstream `TestDeploymentController_reconcileOldReplicaSets`.
    #[test]
    fn reconcile_old_replica_sets_as_upstream() {
        struct Case {
            name: &'static str,
            deployment_replicas: i32,
            max_unavailable: i32,
            old_replicas: i32,
            new_replicas: i32,
            ready_from_old: i32,
            ready_from_new: i32,
            want_old: Option<i32>,
        }
        for case in [
            Case {
                name: "maxUnavailable 0: one at a time",
                deployment_replicas: 10,
                max_unavailable: 0,
                old_replicas: 10,
                new_replicas: 0,
                ready_from_old: 10,
                ready_from_new: 0,
                want_old: Some(9),
            },
            Case {
                name: "maxUnavailable 2",
                deployment_replicas: 10,
                max_unavailable: 2,
                old_replicas: 10,
                new_replicas: 0,
                ready_from_old: 10,
                ready_from_new: 0,
                want_old: Some(8),
            },
            Case {
                name: "unhealthy old replicas are cleaned up",
                deployment_replicas: 10,
                max_unavailable: 2,
                old_replicas: 10,
                new_replicas: 0,
                ready_from_old: 8,
                ready_from_new: 0,
                want_old: Some(8),
            },
            Case {
                name: "1 unhealthy old replica cleaned up, 1 ready one scaled down",
                deployment_replicas: 10,
                max_unavailable: 2,
                old_replicas: 10,
                new_replicas: 0,
                ready_from_old: 9,
                ready_from_new: 0,
                want_old: Some(8),
            },
            Case {
                name: "unavailable new pods do not make the old ones go",
                deployment_replicas: 10,
                max_unavailable: 2,
                old_replicas: 8,
                new_replicas: 2,
                ready_from_old: 8,
                ready_from_new: 0,
                want_old: None,
            },
            Case {
                name: "an old status that predates its scale-down stops the step",
                deployment_replicas: 4,
                max_unavailable: 1,
                old_replicas: 3,
                new_replicas: 2,
                ready_from_old: 4,
                ready_from_new: 2,
                want_old: None,
            },
        ] {
            let new_rs = with_available(rs("foo-new", case.new_replicas, 1), case.ready_from_new);
            let old_rs = with_available(rs("foo-old", case.old_replicas, 0), case.ready_from_old);
            let d = deployment(
                case.deployment_replicas,
                None,
                Some(IntOrString::Int(case.max_unavailable)),
            );
            let got = reconcile_old_replica_sets(&[&old_rs, &new_rs], &[&old_rs], &new_rs, &d);
            let want = case
                .want_old
                .map(|r| scales(&[("foo-old", r)]))
                .unwrap_or_default();
            assert_eq!(got, want, "{}", case.name);
        }
    }

    /// Upstream `TestDeploymentController_cleanupUnhealthyReplicas`.
    #[test]
    fn cleanup_unhealthy_replicas_as_upstream() {
        struct Case {
            ready: i32,
            max_cleanup: i32,
            want: i32,
        }
        for (i, case) in [
            Case {
                ready: 8,
                max_cleanup: 1,
                want: 1,
            },
            Case {
                ready: 8,
                max_cleanup: 3,
                want: 2,
            },
            Case {
                ready: 8,
                max_cleanup: 0,
                want: 0,
            },
            Case {
                ready: 10,
                max_cleanup: 3,
                want: 0,
            },
        ]
        .into_iter()
        .enumerate()
        {
            let old = with_available(rs("foo-v2", 10, 0), case.ready);
            let (got, total) =
                cleanup_unhealthy_replicas(&[&old], case.max_cleanup).unwrap_or_default();
            assert_eq!(total, case.want, "scenario {i}");
            let want = if case.want == 0 {
                vec![]
            } else {
                scales(&[("foo-v2", 10 - case.want)])
            };
            assert_eq!(got, want, "scenario {i}");
        }
        let stale = with_available(rs("foo-v2", 3, 0), 4);
        assert_eq!(
            cleanup_unhealthy_replicas(&[&stale], 2),
            Err(InvalidScaleDown {
                name: "foo-v2".into(),
                from: 3,
                to: 4
            })
        );
    }

    /// Upstream `TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate`.
    #[test]
    fn scale_down_old_replica_sets_for_rolling_update_as_upstream() {
        struct Case {
            max_unavailable: i32,
            ready: i32,
            old_replicas: i32,
            want: Option<i32>,
        }
        for (i, case) in [
            Case {
                max_unavailable: 0,
                ready: 10,
                old_replicas: 10,
                want: Some(9),
            },
            Case {
                max_unavailable: 2,
                ready: 10,
                old_replicas: 10,
                want: Some(8),
            },
            Case {
                max_unavailable: 2,
                ready: 8,
                old_replicas: 10,
                want: None,
            },
            Case {
                max_unavailable: 2,
                ready: 10,
                old_replicas: 0,
                want: None,
            },
            Case {
                max_unavailable: 2,
                ready: 1,
                old_replicas: 10,
                want: None,
            },
        ]
        .into_iter()
        .enumerate()
        {
            let old = with_available(rs("foo-v2", case.old_replicas, 0), case.ready);
            let d = deployment(10, None, Some(IntOrString::Int(case.max_unavailable)));
            let got = scale_down_old_replica_sets_for_rolling_update(&[&old], &[&old], &d);
            assert_eq!(
                got,
                case.want
                    .map(|r| scales(&[("foo-v2", r)]))
                    .unwrap_or_default(),
                "scenario {i}"
            );
        }
    }

    /// A whole rolling update stepped to the end: old 3, maxSurge 1,
    /// maxUnavailable 0, pods available as soon as they exist.
    #[test]
    fn rolling_update_walks_from_old_to_new() {
        let d = deployment(3, Some(IntOrString::Int(1)), Some(IntOrString::Int(0)));
        let (mut old, mut new) = (3, 0);
        let mut steps = Vec::new();
        while old > 0 || new < 3 {
            let old_rs = with_available(rs("old", old, 0), old);
            let new_rs = with_available(rs("new", new, 1), new);
            let all = [&old_rs, &new_rs];
            if let Ok(Some(scale)) = reconcile_new_replica_set(&all, &new_rs, &d) {
                new = scale.replicas;
            } else if let Some(scale) =
                reconcile_old_replica_sets(&all, &[&old_rs], &new_rs, &d).pop()
            {
                old = scale.replicas;
            } else {
                break;
            }
            steps.push((old, new));
        }
        assert_eq!(steps, vec![(3, 1), (2, 1), (2, 2), (1, 2), (1, 3), (0, 3)]);
    }

    /// Upstream `TestScale` (sync_test.go): every ReplicaSet carries the
    /// replica annotations of the Deployment before the resize.
    #[test]
    fn scale_as_upstream() {
        struct Case {
            name: &'static str,
            deployment: Deployment,
            old_deployment: Deployment,
            new_rs: Option<ReplicaSet>,
            old_rss: Vec<ReplicaSet>,
            want_new: Option<i32>,
            want_old: Vec<i32>,
            desired_annotations: &'static [(&'static str, i32)],
        }
        let d = |replicas| deployment(replicas, None, None);
        let surge = |replicas, surge| deployment(replicas, Some(IntOrString::Int(surge)), None);
        let (new_ts, old_ts, older_ts) = (7200, 3600, 0);
        let mut updated_template = d(14);
        updated_template.spec.template = pod_template("other");
        let mut broken = rs("foo-v2", 2, new_ts);
        broken.status = Some(ReplicaSetStatus {
            available_replicas: Some(0),
            ..ReplicaSetStatus::default()
        });
        let cases = vec![
            Case {
                name: "normal scaling event: 10 -> 12",
                deployment: d(12),
                old_deployment: d(10),
                new_rs: Some(rs("foo-v1", 10, new_ts)),
                old_rss: vec![],
                want_new: Some(12),
                want_old: vec![],
                desired_annotations: &[],
            },
            Case {
                name: "normal scaling event: 10 -> 5",
                deployment: d(5),
                old_deployment: d(10),
                new_rs: Some(rs("foo-v1", 10, new_ts)),
                old_rss: vec![],
                want_new: Some(5),
                want_old: vec![],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 5 -> 10",
                deployment: d(10),
                old_deployment: d(5),
                new_rs: Some(rs("foo-v2", 2, new_ts)),
                old_rss: vec![rs("foo-v1", 3, old_ts)],
                want_new: Some(4),
                want_old: vec![6],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 5 -> 3",
                deployment: d(3),
                old_deployment: d(5),
                new_rs: Some(rs("foo-v2", 2, new_ts)),
                old_rss: vec![rs("foo-v1", 3, old_ts)],
                want_new: Some(1),
                want_old: vec![2],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 9 -> 4",
                deployment: d(4),
                old_deployment: d(9),
                new_rs: Some(rs("foo-v2", 8, new_ts)),
                old_rss: vec![rs("foo-v1", 1, old_ts)],
                want_new: Some(4),
                want_old: vec![0],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 7 -> 10",
                deployment: d(10),
                old_deployment: d(7),
                new_rs: Some(rs("foo-v3", 2, new_ts)),
                old_rss: vec![rs("foo-v2", 3, old_ts), rs("foo-v1", 2, older_ts)],
                want_new: Some(3),
                want_old: vec![4, 3],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 13 -> 8",
                deployment: d(8),
                old_deployment: d(13),
                new_rs: Some(rs("foo-v3", 2, new_ts)),
                old_rss: vec![rs("foo-v2", 8, old_ts), rs("foo-v1", 3, older_ts)],
                want_new: Some(1),
                want_old: vec![5, 2],
                desired_annotations: &[],
            },
            Case {
                name: "leftover distribution: 3 -> 4 (scales up the new replica set)",
                deployment: d(4),
                old_deployment: d(3),
                new_rs: Some(rs("foo-v3", 1, new_ts)),
                old_rss: vec![rs("foo-v2", 1, old_ts), rs("foo-v1", 1, older_ts)],
                want_new: Some(2),
                want_old: vec![1, 1],
                desired_annotations: &[],
            },
            Case {
                name: "leftover distribution: 3 -> 2 (scales down the older replica set)",
                deployment: d(2),
                old_deployment: d(3),
                new_rs: Some(rs("foo-v3", 1, new_ts)),
                old_rss: vec![rs("foo-v2", 1, old_ts), rs("foo-v1", 1, older_ts)],
                want_new: Some(1),
                want_old: vec![1, 0],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling (no new rs): 4 -> 5 (the latest first)",
                deployment: d(5),
                old_deployment: d(4),
                new_rs: None,
                old_rss: vec![rs("foo-v2", 2, old_ts), rs("foo-v1", 2, older_ts)],
                want_new: None,
                want_old: vec![3, 2],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 6 -> 0",
                deployment: d(0),
                old_deployment: d(6),
                new_rs: Some(rs("foo-v3", 3, new_ts)),
                old_rss: vec![rs("foo-v2", 2, old_ts), rs("foo-v1", 1, older_ts)],
                want_new: Some(0),
                want_old: vec![0, 0],
                desired_annotations: &[],
            },
            Case {
                name: "proportional scaling: 0 -> 6",
                deployment: d(6),
                old_deployment: d(6),
                new_rs: Some(rs("foo-v3", 0, new_ts)),
                old_rss: vec![rs("foo-v2", 0, old_ts), rs("foo-v1", 0, older_ts)],
                want_new: Some(6),
                want_old: vec![0, 0],
                desired_annotations: &[],
            },
            Case {
                name: "failed rs update",
                deployment: d(5),
                old_deployment: d(5),
                new_rs: Some(rs("foo-v3", 2, new_ts)),
                old_rss: vec![rs("foo-v2", 1, old_ts), rs("foo-v1", 1, older_ts)],
                want_new: Some(2),
                want_old: vec![2, 1],
                desired_annotations: &[("foo-v2", 3)],
            },
            Case {
                name: "deployment with surge pods",
                deployment: surge(20, 2),
                old_deployment: surge(10, 2),
                new_rs: Some(rs("foo-v2", 6, new_ts)),
                old_rss: vec![rs("foo-v1", 6, old_ts)],
                want_new: Some(11),
                want_old: vec![11],
                desired_annotations: &[],
            },
            Case {
                name: "change both surge and size",
                deployment: surge(50, 6),
                old_deployment: surge(10, 3),
                new_rs: Some(rs("foo-v2", 5, new_ts)),
                old_rss: vec![rs("foo-v1", 8, old_ts)],
                want_new: Some(22),
                want_old: vec![34],
                desired_annotations: &[],
            },
            Case {
                name: "change both size and template",
                deployment: updated_template,
                old_deployment: d(10),
                new_rs: None,
                old_rss: vec![rs("foo-v2", 7, new_ts), rs("foo-v1", 3, old_ts)],
                want_new: None,
                want_old: vec![10, 4],
                desired_annotations: &[],
            },
            Case {
                name: "saturated but broken new replica set does not affect old pods",
                deployment: deployment(2, Some(IntOrString::Int(1)), Some(IntOrString::Int(1))),
                old_deployment: deployment(2, Some(IntOrString::Int(1)), Some(IntOrString::Int(1))),
                new_rs: Some(broken),
                old_rss: vec![rs("foo-v1", 1, old_ts)],
                want_new: Some(2),
                want_old: vec![1],
                desired_annotations: &[],
            },
        ];
        for mut case in cases {
            let annotate = |rs: &mut ReplicaSet| {
                let desired = case
                    .desired_annotations
                    .iter()
                    .find(|(n, _)| Some(*n) == rs.metadata.name.as_deref())
                    .map_or(replicas(&case.old_deployment), |(_, d)| *d);
                set_replicas_annotations(rs, desired, desired + max_surge(&case.old_deployment));
            };
            case.new_rs.iter_mut().for_each(annotate);
            case.old_rss.iter_mut().for_each(annotate);
            let olds: Vec<&ReplicaSet> = case.old_rss.iter().collect();
            let result = scale(&case.deployment, case.new_rs.as_ref(), &olds);
            let size = |rs: &ReplicaSet| {
                result
                    .iter()
                    .find(|s| Some(s.name.as_str()) == rs.metadata.name.as_deref())
                    .map_or(rs_replicas(rs), |s| s.replicas)
            };
            assert_eq!(
                case.new_rs.as_ref().map(size),
                case.want_new,
                "{}: new",
                case.name
            );
            assert_eq!(
                case.old_rss.iter().map(size).collect::<Vec<_>>(),
                case.want_old,
                "{}: old",
                case.name
            );
        }
    }

    /// Upstream `TestDeploymentController_cleanupDeployment`.
    #[test]
    fn cleanup_deployment_as_upstream() {
        let mut already_deleted = rs_with_status("foo-1", 0, 0);
        already_deleted.metadata.deletion_timestamp = Some(Time(t(0)));
        struct Case {
            old_rss: Vec<ReplicaSet>,
            limit: i32,
            want: usize,
        }
        for (i, case) in [
            Case {
                old_rss: vec![
                    rs_with_status("foo-1", 0, 0),
                    rs_with_status("foo-2", 0, 0),
                    rs_with_status("foo-3", 0, 0),
                ],
                limit: 1,
                want: 2,
            },
            Case {
                old_rss: vec![
                    rs_with_status("foo-1", 0, 0),
                    rs_with_status("foo-2", 0, 1),
                    rs_with_status("foo-3", 1, 0),
                    rs_with_status("foo-4", 1, 1),
                ],
                limit: 0,
                want: 1,
            },
            Case {
                old_rss: vec![rs_with_status("foo-1", 0, 0), rs_with_status("foo-2", 0, 0)],
                limit: 0,
                want: 2,
            },
            Case {
                old_rss: vec![rs_with_status("foo-1", 1, 1), rs_with_status("foo-2", 1, 1)],
                limit: 0,
                want: 0,
            },
            Case {
                old_rss: vec![already_deleted],
                limit: 0,
                want: 0,
            },
            Case {
                old_rss: vec![
                    rs_with_status("foo-1", 0, 0),
                    rs_with_status("foo-2", 0, 0),
                    rs_with_status("foo-3", 0, 0),
                ],
                limit: i32::MAX,
                want: 0,
            },
        ]
        .into_iter()
        .enumerate()
        {
            let mut d = deployment(1, None, None);
            d.spec.revision_history_limit = Some(case.limit);
            let olds: Vec<&ReplicaSet> = case.old_rss.iter().collect();
            assert_eq!(
                cleanup_deployment(&olds, &d).len(),
                case.want,
                "scenario {i}"
            );
        }
        let revision = |name: &str, rev: &str| {
            let mut out = rs_with_status(name, 0, 0);
            out.metadata.annotations =
                Some([(REVISION_ANNOTATION.to_string(), rev.to_string())].into());
            out
        };
        let (r3, r1, r2) = (revision("c", "3"), revision("a", "1"), revision("b", "2"));
        let mut d = deployment(1, None, None);
        d.spec.revision_history_limit = Some(1);
        assert_eq!(
            cleanup_deployment(&[&r3, &r1, &r2], &d),
            strings(&["a", "b"]),
            "lowest revisions first"
        );
    }

    /// Upstream `TestFindNewReplicaSet` and `TestFindOldReplicaSets`.
    #[test]
    fn find_new_and_old_replica_sets_as_upstream() {
        let d = deployment(1, None, None);
        let from_template =
            |name: &str, tmpl: PodTemplateSpec, hash: &str, created: i64, replicas: i32| {
                let mut out = rs(name, replicas, created);
                let mut tmpl = tmpl;
                if let Some(labels) = tmpl.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
                    labels.insert(POD_TEMPLATE_HASH_LABEL.into(), hash.into());
                }
                out.spec.template = Some(tmpl);
                out
            };
        let new_rs = from_template("new", pod_template("foo/bar"), "hash", 60, 1);
        let new_dup = from_template("new-dup", pod_template("foo/bar"), "different-hash", 0, 0);
        let old_rs = from_template("old", pod_template("nginx-old-1"), "old", -60, 0);
        let name_of = |rs: Option<&ReplicaSet>| rs.and_then(|r| r.metadata.name.clone());
        assert_eq!(
            name_of(find_new_replica_set(&d, &[&new_rs, &old_rs])),
            Some("new".into()),
            "same template, other hash"
        );
        assert_eq!(
            name_of(find_new_replica_set(&d, &[&new_rs, &old_rs, &new_dup])),
            Some("new-dup".into()),
            "the oldest of two"
        );
        assert_eq!(name_of(find_new_replica_set(&d, &[&old_rs])), None, "none");
        struct Case<'a> {
            name: &'static str,
            rss: Vec<&'a ReplicaSet>,
            want_all: Vec<&'static str>,
            want_required: Vec<&'static str>,
        }
        for case in [
            Case {
                name: "Get old ReplicaSets",
                rss: vec![&new_rs, &old_rs],
                want_all: vec!["old"],
                want_required: vec![],
            },
            Case {
                name: "Get old ReplicaSets with no new ReplicaSet",
                rss: vec![&old_rs],
                want_all: vec!["old"],
                want_required: vec![],
            },
            Case {
                name: "Get old ReplicaSets with two new ReplicaSets, only the oldest new ReplicaSet is seen as new ReplicaSet",
                rss: vec![&old_rs, &new_rs, &new_dup],
                want_all: vec!["old", "new"],
                want_required: vec!["new"],
            },
            Case {
                name: "Get empty old ReplicaSets",
                rss: vec![&new_rs],
                want_all: vec![],
                want_required: vec![],
            },
        ] {
            let (required, all) = find_old_replica_sets(&d, &case.rss);
            let names = |rss: Vec<&ReplicaSet>| {
                rss.iter()
                    .filter_map(|r| r.metadata.name.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(all), strings(&case.want_all), "{}", case.name);
            assert_eq!(
                names(required),
                strings(&case.want_required),
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestEqualIgnoreHash`, both ways round.
    #[test]
    fn equal_ignore_hash_as_upstream() {
        let spec = |name: &str,
                    node: &str,
                    annotations: &[(&str, &str)],
                    pairs: &[(&str, &str)]| PodTemplateSpec {
            metadata: Some(ObjectMeta {
                name: Some(name.into()),
                annotations: Some(label_map(annotations)),
                labels: Some(label_map(pairs)),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..PodSpec::default()
            }),
        };
        let h = POD_TEMPLATE_HASH_LABEL;
        struct Case {
            name: &'static str,
            former: PodTemplateSpec,
            latter: PodTemplateSpec,
            want: bool,
        }
        for case in [
            Case {
                name: "Same spec, same labels",
                former: spec(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                latter: spec(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                want: true,
            },
            Case {
                name: "Same spec, only pod-template-hash label value is different",
                former: spec(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                latter: spec(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                want: true,
            },
            Case {
                name: "Same spec, the former doesn't have pod-template-hash label",
                former: spec("foo", "foo-node", &[], &[("something", "else")]),
                latter: spec(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                want: true,
            },
            Case {
                name: "Same spec, the label is different, and the pod-template-hash label value is the same",
                former: spec("foo", "foo-node", &[], &[(h, "value-1")]),
                latter: spec(
                    "foo",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                want: false,
            },
            Case {
                name: "Different spec, same labels",
                former: spec(
                    "foo",
                    "foo-node",
                    &[("former", "value")],
                    &[(h, "value-1"), ("something", "else")],
                ),
                latter: spec(
                    "foo",
                    "foo-node",
                    &[("latter", "value")],
                    &[(h, "value-1"), ("something", "else")],
                ),
                want: false,
            },
            Case {
                name: "Different spec, different pod-template-hash label value",
                former: spec(
                    "foo-1",
                    "foo-node",
                    &[],
                    &[(h, "value-1"), ("something", "else")],
                ),
                latter: spec(
                    "foo-2",
                    "foo-node",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                want: false,
            },
            Case {
                name: "Different spec, the former doesn't have pod-template-hash label",
                former: spec("foo-1", "foo-node-1", &[], &[("something", "else")]),
                latter: spec(
                    "foo-2",
                    "foo-node-2",
                    &[],
                    &[(h, "value-2"), ("something", "else")],
                ),
                want: false,
            },
            Case {
                name: "Different spec, different labels",
                former: spec("foo", "foo-node-1", &[], &[("something", "else")]),
                latter: spec("foo", "foo-node-2", &[], &[("nothing", "else")]),
                want: false,
            },
        ] {
            assert_eq!(
                equal_ignore_hash(&case.former, &case.latter),
                case.want,
                "{}",
                case.name
            );
            assert_eq!(
                equal_ignore_hash(&case.latter, &case.former),
                case.want,
                "{} (reverse order)",
                case.name
            );
        }
    }

    /// Upstream `TestAnnotationUtils`, plus the revision history a
    /// rollback leaves and its length limit.
    #[test]
    fn revision_annotations_as_upstream() {
        let mut d = deployment(1, None, None);
        d.metadata.annotations = Some(
            [
                (REVISION_ANNOTATION.to_string(), "1".to_string()),
                ("team".to_string(), "a".to_string()),
            ]
            .into(),
        );
        let mut new_rs = rs("foo-v1", 1, 0);
        for i in 1..=20 {
            set_new_replica_set_annotations(
                &d,
                &mut new_rs,
                &i.to_string(),
                true,
                MAX_REVISION_HISTORY_CHARS,
            );
            assert_eq!(
                revision(&new_rs.metadata),
                Ok(i),
                "SetNewReplicaSetAnnotations {i}"
            );
        }
        let annotations = new_rs.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.get("team").map(String::as_str),
            Some("a"),
            "copied from the deployment"
        );
        let history: Vec<String> = (1..20).map(|i| i.to_string()).collect();
        assert_eq!(
            annotations.get(REVISION_HISTORY_ANNOTATION),
            Some(&history.join(","))
        );
        assert!(
            set_replicas_annotations(&mut new_rs, 10, 11),
            "SetReplicasAnnotations"
        );
        assert!(!replicas_annotations_need_update(&new_rs, 10, 11));
        assert!(replicas_annotations_need_update(&new_rs, 10, 12));
        assert_eq!(desired_replicas_annotation(&new_rs), Some(10));
        set_replicas_annotations(&mut new_rs, 1, 1);
        new_rs.status = Some(ReplicaSetStatus {
            available_replicas: Some(1),
            ..ReplicaSetStatus::default()
        });
        assert!(is_saturated(&d, Some(&new_rs)), "IsSaturated");
        let mut short = rs("short", 1, 0);
        short.metadata.annotations = Some(
            [
                (REVISION_ANNOTATION.to_string(), "4".to_string()),
                (REVISION_HISTORY_ANNOTATION.to_string(), "1,2,3".to_string()),
            ]
            .into(),
        );
        set_new_replica_set_annotations(&d, &mut short, "5", true, 6);
        let history = short
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_HISTORY_ANNOTATION))
            .cloned();
        assert_eq!(
            history,
            Some("2,3,4".into()),
            "the oldest revisions give way to the limit"
        );
        let revs = [rs("a", 0, 0), rs("b", 0, 0), rs("c", 0, 0)];
        let mut with_revs = revs.clone();
        for (rs, rev) in with_revs.iter_mut().zip(["3", "7", "5"]) {
            rs.metadata.annotations =
                Some([(REVISION_ANNOTATION.to_string(), rev.to_string())].into());
        }
        let refs: Vec<&ReplicaSet> = with_revs.iter().collect();
        assert_eq!((max_revision(&refs), last_revision(&refs)), (7, 5));
        let plain: Vec<&ReplicaSet> = revs.iter().collect();
        assert_eq!((max_revision(&plain), last_revision(&plain)), (0, 0));
    }

    /// The ReplicaSet created for a new template, and rollback's
    /// annotation copy.
    #[test]
    fn new_replica_set_is_named_by_the_template_hash() {
        let d = deployment(3, Some(IntOrString::Int(1)), Some(IntOrString::Int(0)));
        let mut old = rs("foo-old", 3, 0);
        old.metadata.annotations =
            Some([(REVISION_ANNOTATION.to_string(), "4".to_string())].into());
        let Ok(created) = new_replica_set(&d, &[&old]) else {
            panic!("a valid deployment gets a replica set");
        };
        let hash = compute_hash(&d.spec.template, None);
        assert_eq!(created.metadata.name, Some(format!("foo-{hash}")));
        assert_eq!(created.spec.replicas, Some(1), "3 old + 1 surge");
        assert_eq!(revision(&created.metadata), Ok(5));
        assert_eq!(desired_replicas_annotation(&created), Some(3));
        assert_eq!(
            created
                .spec
                .selector
                .match_labels
                .as_ref()
                .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL)),
            Some(&hash)
        );
        assert!(equal_ignore_hash(&rs_template(&created), &d.spec.template));
        assert!(crate::workloads::ownership::is_controlled_by(
            &created.metadata,
            "d-uid"
        ));
        assert_eq!(
            sync_new_replica_set(&d, &created, &[&old]),
            None,
            "already in sync"
        );
        let mut rolled = d.clone();
        rolled.metadata.annotations = Some(
            [
                (REVISION_ANNOTATION.to_string(), "9".to_string()),
                ("old".to_string(), "x".to_string()),
            ]
            .into(),
        );
        let mut source = rs("src", 0, 0);
        source.metadata.annotations = Some(
            [
                ("kept".to_string(), "y".to_string()),
                (REVISION_ANNOTATION.to_string(), "2".to_string()),
            ]
            .into(),
        );
        set_deployment_annotations_to(&mut rolled, &source);
        assert_eq!(
            rolled.metadata.annotations,
            Some(
                [
                    (REVISION_ANNOTATION.to_string(), "9".to_string()),
                    ("kept".to_string(), "y".to_string())
                ]
                .into()
            )
        );
    }

    fn status(replicas: i32, updated: i32, ready: i32, available: i32) -> DeploymentStatus {
        DeploymentStatus {
            replicas: Some(replicas),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            ..DeploymentStatus::default()
        }
    }

    /// Upstream `TestDeploymentComplete`.
    #[test]
    fn deployment_complete_as_upstream() {
        struct Case {
            name: &'static str,
            desired: i32,
            status: DeploymentStatus,
            max_unavailable: i32,
            max_surge: i32,
            want: bool,
        }
        for case in [
            Case {
                name: "not complete: min but not all pods become available",
                desired: 5,
                status: status(5, 5, 0, 4),
                max_unavailable: 1,
                max_surge: 0,
                want: false,
            },
            Case {
                name: "not complete: min availability is not honored",
                desired: 5,
                status: status(5, 5, 0, 3),
                max_unavailable: 1,
                max_surge: 0,
                want: false,
            },
            Case {
                name: "complete",
                desired: 5,
                status: status(5, 5, 0, 5),
                max_unavailable: 0,
                max_surge: 0,
                want: true,
            },
            Case {
                name: "not complete: all pods are available but not updated",
                desired: 5,
                status: status(5, 4, 0, 5),
                max_unavailable: 0,
                max_surge: 0,
                want: false,
            },
            Case {
                name: "not complete: still running old pods",
                desired: 1,
                status: status(2, 1, 0, 1),
                max_unavailable: 0,
                max_surge: 1,
                want: false,
            },
            Case {
                name: "not complete: one replica deployment never comes up",
                desired: 1,
                status: status(1, 1, 0, 0),
                max_unavailable: 1,
                max_surge: 1,
                want: false,
            },
        ] {
            let d = deployment(
                case.desired,
                Some(IntOrString::Int(case.max_surge)),
                Some(IntOrString::Int(case.max_unavailable)),
            );
            assert_eq!(
                deployment_complete(&d, &case.status),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestDeploymentProgressing`.
    #[test]
    fn deployment_progressing_as_upstream() {
        struct Case {
            name: &'static str,
            current: DeploymentStatus,
            new: DeploymentStatus,
            want: bool,
        }
        for case in [
            Case {
                name: "progressing: updated pods",
                current: status(10, 4, 4, 4),
                new: status(10, 6, 4, 4),
                want: true,
            },
            Case {
                name: "not progressing",
                current: status(10, 4, 4, 4),
                new: status(10, 4, 4, 4),
                want: false,
            },
            Case {
                name: "progressing: old pods removed",
                current: status(10, 4, 6, 6),
                new: status(8, 4, 6, 6),
                want: true,
            },
            Case {
                name: "not progressing: less new pods",
                current: status(10, 7, 3, 3),
                new: status(10, 6, 3, 3),
                want: false,
            },
            Case {
                name: "progressing: less overall but more new pods",
                current: status(10, 4, 7, 7),
                new: status(8, 8, 5, 5),
                want: true,
            },
            Case {
                name: "progressing: more ready pods",
                current: status(10, 10, 9, 8),
                new: status(10, 10, 10, 8),
                want: true,
            },
            Case {
                name: "progressing: more available pods",
                current: status(10, 10, 10, 9),
                new: status(10, 10, 10, 10),
                want: true,
            },
        ] {
            let mut d = deployment(10, None, None);
            d.status = Some(case.current);
            assert_eq!(
                deployment_progressing(&d, &case.new),
                case.want,
                "{}",
                case.name
            );
        }
    }

    fn with_progressing(
        mut d: Deployment,
        deadline: Option<i32>,
        status: &str,
        reason: &str,
        updated: Timestamp,
    ) -> Deployment {
        d.spec.progress_deadline_seconds = deadline;
        let mut c = new_condition(CONDITION_PROGRESSING, status, reason, "", updated);
        if reason.is_empty() {
            c.reason = None;
        }
        let s = d.status.get_or_insert_with(DeploymentStatus::default);
        s.conditions = Some(vec![c]);
        d
    }

    /// Upstream `TestDeploymentTimedOut`.
    #[test]
    fn deployment_timed_out_as_upstream() {
        let time = |min: i64, sec: i64| {
            at("2016-01-01T00:00:00Z") + SignedDuration::from_secs(min * 60 + sec)
        };
        struct Case {
            name: &'static str,
            deadline: Option<i32>,
            reason: &'static str,
            from: Timestamp,
            now: Timestamp,
            want: bool,
        }
        for case in [
            Case {
                name: "no progressDeadlineSeconds specified - no timeout",
                deadline: None,
                reason: "",
                from: time(1, 9),
                now: time(1, 20),
                want: false,
            },
            Case {
                name: "progressDeadlineSeconds: 10s, now - started => 00:01:20 - 00:01:09 => 11s",
                deadline: Some(10),
                reason: "",
                from: time(1, 9),
                now: time(1, 20),
                want: true,
            },
            Case {
                name: "progressDeadlineSeconds: 10s, now - started => 00:01:20 - 00:01:11 => 9s",
                deadline: Some(10),
                reason: "",
                from: time(1, 11),
                now: time(1, 20),
                want: false,
            },
            Case {
                name: "previous status was a complete deployment",
                deadline: None,
                reason: REASON_NEW_RS_AVAILABLE,
                from: time(0, 0),
                now: time(1, 20),
                want: false,
            },
            Case {
                name: "already timed out stays timed out",
                deadline: Some(600),
                reason: REASON_TIMED_OUT,
                from: time(1, 19),
                now: time(1, 20),
                want: true,
            },
        ] {
            let d = with_progressing(
                deployment(1, None, None),
                case.deadline,
                "True",
                case.reason,
                case.from,
            );
            let s = d.status.clone().unwrap_or_default();
            assert_eq!(
                deployment_timed_out(&d, &s, case.now),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestRequeueStuckDeployment` (progress_test.go).
    #[test]
    fn requeue_stuck_deployment_as_upstream() {
        let stuck_since = at("2017-02-15T18:49:00Z");
        let deadline = Some(60);
        let current = |replicas: i32,
                       pds: Option<i32>,
                       condition: Option<(&str, &str)>,
                       status_: DeploymentStatus| {
            let mut d = recreate(replicas);
            d.status = Some(status_);
            match condition {
                Some((status, reason)) => with_progressing(d, pds, status, reason, stuck_since),
                None => {
                    d.spec.progress_deadline_seconds = pds;
                    d
                }
            }
        };
        let secs = |s: i64| Some(SignedDuration::from_secs(s));
        struct Case {
            name: &'static str,
            d: Deployment,
            new: DeploymentStatus,
            now: Timestamp,
            want: Option<SignedDuration>,
        }
        let stuck = || current(3, deadline, Some(("True", "")), status(3, 3, 0, 1));
        for case in [
            Case {
                name: "no progressDeadlineSeconds specified",
                d: current(4, None, None, status(3, 3, 0, 2)),
                new: status(3, 3, 0, 2),
                now: stuck_since,
                want: None,
            },
            Case {
                name: "no progressing condition found",
                d: current(4, deadline, None, status(3, 3, 0, 2)),
                new: status(3, 3, 0, 2),
                now: stuck_since,
                want: None,
            },
            Case {
                name: "complete deployment does not need to be requeued",
                d: current(3, deadline, Some(("True", "")), status(3, 3, 0, 3)),
                new: status(3, 3, 0, 3),
                now: stuck_since,
                want: None,
            },
            Case {
                name: "already failed deployment does not need to be requeued",
                d: current(
                    3,
                    deadline,
                    Some(("False", REASON_TIMED_OUT)),
                    status(3, 3, 0, 0),
                ),
                new: status(3, 3, 0, 0),
                now: stuck_since,
                want: None,
            },
            Case {
                name: "stuck deployment - 30s",
                d: stuck(),
                new: status(3, 3, 0, 1),
                now: at("2017-02-15T18:49:30Z"),
                want: secs(30),
            },
            Case {
                name: "stuck deployment - 1s",
                d: stuck(),
                new: status(3, 3, 0, 1),
                now: at("2017-02-15T18:49:59Z"),
                want: secs(1),
            },
            Case {
                name: "failed deployment - less than a second => now",
                d: stuck(),
                new: status(3, 3, 0, 1),
                now: at("2017-02-15T18:49:59.000000001Z"),
                want: secs(0),
            },
            Case {
                name: "failed deployment - now",
                d: stuck(),
                new: status(3, 3, 0, 1),
                now: at("2017-02-15T18:50:00Z"),
                want: secs(0),
            },
            Case {
                name: "failed deployment - 1s after deadline",
                d: stuck(),
                new: status(3, 3, 0, 1),
                now: at("2017-02-15T18:50:01Z"),
                want: secs(0),
            },
            Case {
                name: "failed deployment - 60s after deadline",
                d: stuck(),
                new: status(3, 3, 0, 1),
                now: at("2017-02-15T18:51:00Z"),
                want: secs(0),
            },
        ] {
            assert_eq!(
                requeue_stuck_after(&case.d, &case.new, case.now),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestSetCondition`/`TestRemoveCondition` (deployment util).
    #[test]
    fn set_and_remove_conditions_as_upstream() {
        let cond = |type_: &str, status: &str, reason: &str, when: i64| {
            new_condition(type_, status, reason, "", t(when))
        };
        let progressing = cond(CONDITION_PROGRESSING, "False", "ForSomeReason", 0);
        let progressing_2 = cond(CONDITION_PROGRESSING, "True", "BecauseItIs", 0);
        let available = cond(CONDITION_AVAILABLE, "True", "AwesomeController", 0);
        let with = |cs: Vec<DeploymentCondition>| DeploymentStatus {
            conditions: Some(cs),
            ..DeploymentStatus::default()
        };
        let mut s = DeploymentStatus::default();
        set_condition(&mut s, available.clone());
        assert_eq!(s, with(vec![available.clone()]), "set for the first time");
        let mut s = with(vec![progressing.clone()]);
        set_condition(&mut s, available.clone());
        assert_eq!(
            s,
            with(vec![progressing.clone(), available.clone()]),
            "simple set"
        );
        let mut s = with(vec![progressing.clone()]);
        set_condition(&mut s, progressing_2.clone());
        assert_eq!(s, with(vec![progressing_2.clone()]), "overwrite");
        let mut s = with(vec![progressing_2.clone()]);
        set_condition(&mut s, cond(CONDITION_PROGRESSING, "True", "Other", 50));
        let kept =
            condition(&s, CONDITION_PROGRESSING).and_then(|c| c.last_transition_time.clone());
        assert_eq!(
            kept,
            Some(Time(t(0))),
            "same status: the transition time stays"
        );
        let mut s = DeploymentStatus::default();
        remove_condition(&mut s, CONDITION_PROGRESSING);
        assert_eq!(s, DeploymentStatus::default(), "remove from empty status");
        let mut s = with(vec![progressing.clone()]);
        remove_condition(&mut s, CONDITION_PROGRESSING);
        assert_eq!(s, DeploymentStatus::default(), "simple remove");
        let mut s = with(vec![progressing.clone(), available.clone()]);
        remove_condition(&mut s, CONDITION_REPLICA_FAILURE);
        assert_eq!(
            s,
            with(vec![progressing, available]),
            "doesn't remove anything"
        );
    }

    fn reasons(s: &DeploymentStatus) -> Vec<(String, String, String)> {
        s.conditions
            .iter()
            .flatten()
            .map(|c| {
                (
                    c.type_.clone().unwrap_or_default(),
                    c.status.clone().unwrap_or_default(),
                    c.reason.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// `syncRolloutStatus`: the Available and Progressing conditions
    /// through a rollout.
    #[test]
    fn rollout_status_conditions() {
        let deadline = Some(600);
        let rs_status = |replicas: i32, available: i32| ReplicaSetStatus {
            replicas,
            ready_replicas: Some(available),
            available_replicas: Some(available),
            ..ReplicaSetStatus::default()
        };
        let sized = |name: &str, replicas: i32, available: i32| {
            let mut out = rs(name, replicas, 0);
            out.status = Some(rs_status(replicas, available));
            out
        };
        let condition_row =
            |t: &str, s: &str, r: &str| (t.to_string(), s.to_string(), r.to_string());
        struct Case {
            name: &'static str,
            deadline: Option<i32>,
            current: Option<(&'static str, &'static str, i64)>,
            current_status: DeploymentStatus,
            new_rs: ReplicaSet,
            old_rs: ReplicaSet,
            now: i64,
            want: Vec<(String, String, String)>,
        }
        for case in [
            Case {
                name: "no deadline: Available only",
                deadline: None,
                current: None,
                current_status: status(3, 3, 3, 3),
                new_rs: sized("new", 3, 3),
                old_rs: sized("old", 0, 0),
                now: 0,
                want: vec![condition_row(
                    CONDITION_AVAILABLE,
                    "True",
                    REASON_MINIMUM_REPLICAS_AVAILABLE,
                )],
            },
            Case {
                name: "complete: NewReplicaSetAvailable",
                deadline,
                current: Some(("True", REASON_REPLICA_SET_UPDATED, 0)),
                current_status: status(3, 3, 3, 2),
                new_rs: sized("new", 3, 3),
                old_rs: sized("old", 0, 0),
                now: 10,
                want: vec![
                    condition_row(
                        CONDITION_AVAILABLE,
                        "True",
                        REASON_MINIMUM_REPLICAS_AVAILABLE,
                    ),
                    condition_row(CONDITION_PROGRESSING, "True", REASON_NEW_RS_AVAILABLE),
                ],
            },
            Case {
                name: "progress: ReplicaSetUpdated",
                deadline,
                current: Some(("True", REASON_NEW_REPLICA_SET_CREATED, 0)),
                current_status: status(3, 0, 3, 3),
                new_rs: sized("new", 1, 0),
                old_rs: sized("old", 3, 3),
                now: 10,
                want: vec![
                    condition_row(
                        CONDITION_AVAILABLE,
                        "True",
                        REASON_MINIMUM_REPLICAS_AVAILABLE,
                    ),
                    condition_row(CONDITION_PROGRESSING, "True", REASON_REPLICA_SET_UPDATED),
                ],
            },
            Case {
                name: "no progress past the deadline: ProgressDeadlineExceeded",
                deadline,
                current: Some(("True", REASON_REPLICA_SET_UPDATED, 0)),
                current_status: status(4, 1, 3, 3),
                new_rs: sized("new", 1, 0),
                old_rs: sized("old", 3, 3),
                now: 601,
                want: vec![
                    condition_row(
                        CONDITION_AVAILABLE,
                        "True",
                        REASON_MINIMUM_REPLICAS_AVAILABLE,
                    ),
                    condition_row(CONDITION_PROGRESSING, "False", REASON_TIMED_OUT),
                ],
            },
            Case {
                name: "no progress within the deadline: unchanged",
                deadline,
                current: Some(("True", REASON_REPLICA_SET_UPDATED, 0)),
                current_status: status(4, 1, 3, 3),
                new_rs: sized("new", 1, 0),
                old_rs: sized("old", 3, 3),
                now: 600,
                want: vec![
                    condition_row(CONDITION_PROGRESSING, "True", REASON_REPLICA_SET_UPDATED),
                    condition_row(
                        CONDITION_AVAILABLE,
                        "True",
                        REASON_MINIMUM_REPLICAS_AVAILABLE,
                    ),
                ],
            },
            Case {
                name: "too few available: MinimumReplicasUnavailable",
                deadline: None,
                current: None,
                current_status: status(3, 3, 1, 1),
                new_rs: sized("new", 3, 1),
                old_rs: sized("old", 0, 0),
                now: 0,
                want: vec![condition_row(
                    CONDITION_AVAILABLE,
                    "False",
                    REASON_MINIMUM_REPLICAS_UNAVAILABLE,
                )],
            },
        ] {
            let mut d = deployment(3, Some(IntOrString::Int(1)), Some(IntOrString::Int(0)));
            d.status = Some(case.current_status);
            if let Some((s, r, when)) = case.current {
                d = with_progressing(d, case.deadline, s, r, t(when));
            }
            d.spec.progress_deadline_seconds = case.deadline;
            let got = sync_rollout_status(
                &[&case.old_rs, &case.new_rs],
                Some(&case.new_rs),
                &d,
                t(case.now),
            );
            assert_eq!(reasons(&got), case.want, "{}", case.name);
        }
        let mut failing = rs("new", 3, 0);
        failing.status = Some(ReplicaSetStatus {
            conditions: Some(vec![ReplicaSetCondition {
                type_: Some(CONDITION_REPLICA_FAILURE.into()),
                status: Some("True".into()),
                reason: Some("FailedCreate".into()),
                message: Some("quota".into()),
                last_transition_time: None,
            }]),
            ..ReplicaSetStatus::default()
        });
        let d = deployment(3, None, Some(IntOrString::Int(1)));
        let got = sync_rollout_status(&[&failing], Some(&failing), &d, t(0));
        assert!(
            reasons(&got).contains(&condition_row(
                CONDITION_REPLICA_FAILURE,
                "True",
                "FailedCreate"
            )),
            "the ReplicaSet's failure is the Deployment's"
        );
    }

    /// `checkPausedConditions`.
    #[test]
    fn paused_and_resumed_conditions() {
        let mut d = deployment(1, None, None);
        d.spec.progress_deadline_seconds = Some(600);
        d.spec.paused = Some(true);
        let reason = |c: Option<DeploymentCondition>| c.and_then(|c| c.reason);
        assert_eq!(
            reason(paused_condition(&d, t(0))),
            Some(REASON_PAUSED.into())
        );
        let paused = with_progressing(d.clone(), Some(600), "Unknown", REASON_PAUSED, t(0));
        assert_eq!(
            reason(paused_condition(&paused, t(0))),
            None,
            "already recorded"
        );
        let mut resumed = paused.clone();
        resumed.spec.paused = Some(false);
        assert_eq!(
            reason(paused_condition(&resumed, t(0))),
            Some(REASON_RESUMED.into())
        );
        let timed_out = with_progressing(d.clone(), Some(600), "False", REASON_TIMED_OUT, t(0));
        assert_eq!(
            reason(paused_condition(&timed_out, t(0))),
            None,
            "a timeout is not overwritten"
        );
        d.spec.progress_deadline_seconds = None;
        assert_eq!(reason(paused_condition(&d, t(0))), None, "no deadline");
    }

    /// Upstream `TestOldPodsRunning` (recreate_test.go).
    #[test]
    fn old_pods_running_as_upstream() {
        let phase = |p: &str| make_pod().namespace("default").name(p).phase(p).obj();
        struct Case {
            name: &'static str,
            old_rss: Vec<ReplicaSet>,
            pods: Vec<(&'static str, Vec<Pod>)>,
            want: bool,
        }
        for case in [
            Case {
                name: "no old RSs",
                old_rss: vec![],
                pods: vec![],
                want: false,
            },
            Case {
                name: "old RSs with running pods",
                old_rss: vec![rs("some", 1, 0), rs("other", 1, 0)],
                pods: vec![
                    ("some-uid", vec![phase("Running")]),
                    ("other-uid", vec![phase("Running")]),
                ],
                want: true,
            },
            Case {
                name: "old RSs without pods but with non-zero status replicas",
                old_rss: vec![rs_with_status("rs-1", 0, 1)],
                pods: vec![],
                want: true,
            },
            Case {
                name: "old RSs without pods or non-zero status replicas",
                old_rss: vec![rs_with_status("rs-1", 0, 0)],
                pods: vec![],
                want: false,
            },
            Case {
                name: "old RSs with zero status replicas but pods in terminal state are present",
                old_rss: vec![rs_with_status("rs-1", 0, 0)],
                pods: vec![("uid-1", vec![phase("Failed"), phase("Succeeded")])],
                want: false,
            },
            Case {
                name: "old RSs with zero status replicas but pod in unknown phase present",
                old_rss: vec![rs_with_status("rs-1", 0, 0)],
                pods: vec![("uid-1", vec![phase("Unknown")])],
                want: true,
            },
            Case {
                name: "old RSs with zero status replicas with pending pod present",
                old_rss: vec![rs_with_status("rs-1", 0, 0)],
                pods: vec![("uid-1", vec![phase("Pending")])],
                want: true,
            },
            Case {
                name: "old RSs with zero status replicas with running pod present",
                old_rss: vec![rs_with_status("rs-1", 0, 0)],
                pods: vec![("uid-1", vec![phase("Running")])],
                want: true,
            },
            Case {
                name: "old RSs with zero status replicas with pods in terminal state and pending are present",
                old_rss: vec![rs_with_status("rs-1", 0, 0)],
                pods: vec![(
                    "uid-1",
                    vec![phase("Failed"), phase("Succeeded"), phase("Pending")],
                )],
                want: true,
            },
            Case {
                name: "pods of the new replica set do not count",
                old_rss: vec![],
                pods: vec![("new-uid", vec![phase("Running")])],
                want: false,
            },
        ] {
            let new_rs = rs("new", 1, 0);
            let olds: Vec<&ReplicaSet> = case.old_rss.iter().collect();
            let by_rs: HashMap<String, Vec<&Pod>> = case
                .pods
                .iter()
                .map(|(uid, pods)| (uid.to_string(), pods.iter().collect()))
                .collect();
            assert_eq!(
                old_pods_running(Some(&new_rs), &olds, &by_rs),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Recreate: old ReplicaSets to 0 first, then the new one up.
    #[test]
    fn recreate_scales_down_then_up() {
        let d = recreate(3);
        let (old_1, old_2, empty) = (rs("old-1", 2, 0), rs("old-2", 1, 1), rs("old-3", 0, 2));
        assert_eq!(
            scale_down_old_replica_sets_for_recreate(&[&old_1, &old_2, &empty]),
            scales(&[("old-1", 0), ("old-2", 0)])
        );
        assert_eq!(
            scale_up_new_replica_set_for_recreate(&rs("new", 0, 3), &d),
            Some(scales(&[("new", 3)])[0].clone())
        );
        assert_eq!(
            scale_up_new_replica_set_for_recreate(&rs("new", 3, 3), &d),
            None
        );
        assert_eq!(new_rs_new_replicas(&d, &[&old_1], &rs("new", 0, 3)), Ok(3));
    }

    /// Upstream `TestGetReplicaCountForReplicaSets`, and `isScalingEvent`.
    #[test]
    fn replica_counts_and_scaling_events() {
        let rs1 = rs_with_status("rs1", 1, 2);
        let rs2 = rs_with_status("rs2", 2, 3);
        assert_eq!(
            (replica_count(&[&rs1]), actual_replica_count(&[&rs1])),
            (1, 2),
            "1:2 Replicas"
        );
        assert_eq!(
            (
                replica_count(&[&rs1, &rs2]),
                actual_replica_count(&[&rs1, &rs2])
            ),
            (3, 5),
            "3:5 Replicas"
        );
        let mut annotated = rs("a", 2, 0);
        set_replicas_annotations(&mut annotated, 4, 5);
        assert!(is_scaling_event(&deployment(5, None, None), &[&annotated]));
        assert!(!is_scaling_event(&deployment(4, None, None), &[&annotated]));
        let mut inactive = annotated.clone();
        inactive.spec.replicas = Some(0);
        assert!(
            !is_scaling_event(&deployment(5, None, None), &[&inactive]),
            "only active replica sets count"
        );
    }
}
