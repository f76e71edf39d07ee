//! StatefulSet decisions, ported from upstream's
//! `pkg/controller/statefulset` (`stateful_set_utils.go`,
//! `stateful_set_control.go`):
//!
//! - identities: `getPodName` (`<set>-<ordinal>`),
//!   `getParentNameAndOrdinal`, `getStartOrdinal`/`getEndOrdinal`
//!   (`.spec.ordinals.start`), `podInOrdinalRange`, `isMemberOf`,
//!   `identityMatches`, `updateIdentity`/`initIdentity` (the pod-name and
//!   pod-index labels, hostname and subdomain), `newStatefulSetPod` with
//!   its claim volumes (`getPersistentVolumeClaimName`), and which
//!   revision a new pod gets (`newVersionedStatefulSetPod`);
//! - one sync (`updateStatefulSet`, `processReplica`, `processCondemned`,
//!   the rolling update with and without `maxUnavailable`) as a
//!   [`SyncPlan`]: pods to create, recreate, relabel and delete, in the
//!   order upstream issues them;
//! - status: `computeReplicaStatus` and `completeRollingUpdate`.
//!
//! The rules that make a StatefulSet one: with `OrderedReady` (the
//! default) pods are created one at a time, lowest missing ordinal first,
//! each only once every lower one is Running, Ready and available, and
//! deleted one at a time, highest ordinal first; with `Parallel` all at
//! once. A pod is never created while a pod of its name exists, even one
//! that is terminating: two pods never share an identity, so a pod stuck
//! terminating on a dead node blocks its replacement until it is
//! force-deleted (or the node gets the out-of-service taint).
//!
//! Differences from upstream: a pod counts as existing when it is in the
//! list given, where upstream also asks for a phase (`isCreated`); the
//! claims' creation and retention (`StatefulSetAutoDeletePVC`) and the
//! ControllerRevision history are the controller's, which passes the
//! current and update revision names in.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::CONTROLLER_REVISION_HASH_LABEL;
use super::history;
use super::ownership::new_controller_ref;
use crate::int_or_string::{IntOrStringError, scaled_value};
use crate::pod;

/// `apps.StatefulSetPodNameLabel`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// `apps.PodIndexLabel`.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

pub const POLICY_ORDERED_READY: &str = "OrderedReady";
pub const POLICY_PARALLEL: &str = "Parallel";
pub const STRATEGY_ROLLING_UPDATE: &str = "RollingUpdate";
pub const STRATEGY_ON_DELETE: &str = "OnDelete";

/// `spec.replicas`, 1 when absent (the API default).
pub fn replicas(set: &StatefulSet) -> i32 {
    set.spec.replicas.unwrap_or(1)
}

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or("")
}

/// `getPodName`: `<set>-<ordinal>`.
pub fn pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// `getParentNameAndOrdinal` on a name: `(.*)-([0-9]+)$`, the ordinal an
/// int32; `None` for any other name.
pub fn parent_name_and_ordinal(name: &str) -> Option<(&str, i32)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse().ok()?))
}

/// `getOrdinal`: the pod's ordinal, `None` when its name has none.
pub fn ordinal(pod: &Pod) -> Option<i32> {
    parent_name_and_ordinal(pod.metadata.name.as_deref()?).map(|(_, o)| o)
}

/// `getStartOrdinal`: `.spec.ordinals.start`, else 0.
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .ordinals
        .as_ref()
        .and_then(|o| o.start)
        .unwrap_or(0)
}

/// `getEndOrdinal`: the last ordinal in range.
pub fn end_ordinal(set: &StatefulSet) -> i32 {
    start_ordinal(set) + replicas(set) - 1
}

/// `podInOrdinalRange`.
pub fn in_ordinal_range(pod: &Pod, set: &StatefulSet) -> bool {
    ordinal(pod).is_some_and(|o| o >= start_ordinal(set) && o <= end_ordinal(set))
}

/// `isMemberOf`: the pod's name is `<set>-<ordinal>`.
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    pod.metadata
        .name
        .as_deref()
        .and_then(parent_name_and_ordinal)
        .is_some_and(|(parent, _)| parent == set_name(set))
}

/// `allowsBurst`: `podManagementPolicy: Parallel`.
pub fn allows_burst(set: &StatefulSet) -> bool {
    set.spec.pod_management_policy.as_deref() == Some(POLICY_PARALLEL)
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// `isRunningAndReady`.
pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && pod::is_ready(pod)
}

/// `isRunningAndAvailable`, at `now`.
pub fn is_running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    pod::is_available(pod, min_ready_seconds, now)
}

/// `isHealthy`: running, ready and not terminating.
pub fn is_healthy(pod: &Pod) -> bool {
    is_running_and_ready(pod) && !pod::is_terminating(pod)
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// `getPodRevision`: the pod's `controller-revision-hash` label.
pub fn pod_revision(pod: &Pod) -> &str {
    label(pod, CONTROLLER_REVISION_HASH_LABEL).unwrap_or("")
}

/// `identityMatches`: the pod's name, namespace and pod-name label are
/// those of its ordinal in this set.
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some((parent, ordinal)) = pod
        .metadata
        .name
        .as_deref()
        .and_then(parent_name_and_ordinal)
    else {
        return false;
    };
    let name = pod_name(set, ordinal);
    parent == set_name(set)
        && pod.metadata.name.as_deref() == Some(name.as_str())
        && pod.metadata.namespace == set.metadata.namespace
        && label(pod, POD_NAME_LABEL) == Some(name.as_str())
}

/// `getPersistentVolumeClaimName`: `<claim>-<set>-<ordinal>`.
pub fn persistent_volume_claim_name(set: &StatefulSet, claim: &str, ordinal: i32) -> String {
    format!("{claim}-{}-{ordinal}", set_name(set))
}

/// `storageMatches`: every claim template has its volume, naming this
/// ordinal's claim.
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = ordinal(pod) else {
        return false;
    };
    let volumes: BTreeMap<&str, &Volume> = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .map(|v| (v.name.as_str(), v))
        .collect();
    claim_names(set).all(|claim| {
        volumes.get(claim).is_some_and(|v| {
            v.persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str())
                == Some(persistent_volume_claim_name(set, claim, ordinal).as_str())
        })
    })
}

fn claim_names(set: &StatefulSet) -> impl Iterator<Item = &str> {
    set.spec
        .volume_claim_templates
        .iter()
        .flatten()
        .filter_map(|c| c.metadata.name.as_deref())
}

/// `updateIdentity`: the pod's name and namespace from its ordinal, and
/// the pod-name and pod-index labels (upstream's `PodIndexLabel`, on by
/// default).
pub fn update_identity(set: &StatefulSet, pod: &mut Pod) {
    let Some(ordinal) = ordinal(pod) else {
        return;
    };
    let name = pod_name(set, ordinal);
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.into(), name);
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
}

/// `updateStorage`: a volume per claim template naming this ordinal's
/// claim, replacing a template volume of the same name.
pub fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let Some(ordinal) = ordinal(pod) else {
        return;
    };
    let claims: Vec<String> = claim_names(set).map(String::from).collect();
    if claims.is_empty() {
        return;
    }
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| !claims.contains(&v.name));
    for claim in claims {
        volumes.push(Volume {
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: persistent_volume_claim_name(set, &claim, ordinal),
                read_only: Some(false),
            }),
            name: claim,
            ..Volume::default()
        });
    }
}

/// `newStatefulSetPod`: the set's template as the pod of `ordinal`, owned
/// by the set (`initIdentity`: hostname and subdomain too; and its claim
/// volumes).
pub fn new_stateful_set_pod(set: &StatefulSet, ordinal: i32) -> Pod {
    let template = &set.spec.template;
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(set, ordinal)),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            finalizers: template_meta.finalizers,
            owner_references: Some(vec![new_controller_ref(
                &set.metadata,
                "apps/v1",
                "StatefulSet",
            )]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    update_identity(set, &mut pod);
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    spec.hostname = Some(pod_name(set, ordinal));
    spec.subdomain = set.spec.service_name.clone();
    update_storage(set, &mut pod);
    pod
}

/// Which of the set's two revisions a pod is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// `status.currentRevision`: the template pods had before the update.
    Current,
    /// `status.updateRevision`: the template in the spec now.
    Update,
}

fn strategy_type(set: &StatefulSet) -> &str {
    set.spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(STRATEGY_ROLLING_UPDATE)
}

fn partition(set: &StatefulSet) -> Option<i32> {
    set.spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .map(|r| r.partition.unwrap_or(0))
}

/// `newVersionedStatefulSetPod`'s choice: below the partition (or, for a
/// RollingUpdate without parameters, below the current replica count) a
/// recreated pod keeps the current revision; above, the update revision.
pub fn new_pod_revision(set: &StatefulSet, ordinal: i32) -> Revision {
    let start = start_ordinal(set);
    let current_replicas = set
        .status
        .as_ref()
        .and_then(|s| s.current_replicas)
        .unwrap_or(0);
    // Go's `A && B || C` is `(A && B) || C`.
    let below_current = strategy_type(set) == STRATEGY_ROLLING_UPDATE
        && partition(set).is_none()
        && ordinal < start + current_replicas;
    let below_partition = partition(set).is_some_and(|p| ordinal < start + p);
    if below_current || below_partition {
        Revision::Current
    } else {
        Revision::Update
    }
}

/// `newVersionedStatefulSetPod` once [`new_pod_revision`] has chosen the
/// revision: the pod of `ordinal` made from the set with `revision`'s
/// template, labelled with the revision's name (`setPodRevision`).
pub fn new_pod_of_revision(set: &StatefulSet, revision: &ControllerRevision, ordinal: i32) -> Pod {
    let mut pod = new_stateful_set_pod(&apply_revision(set, revision), ordinal);
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(
            CONTROLLER_REVISION_HASH_LABEL.into(),
            revision.metadata.name.clone().unwrap_or_default(),
        );
    pod
}

/// `getStatefulSetMaxUnavailable`: the rolling update's `maxUnavailable`
/// (default 1) against the replicas, rounded down, at least 1.
pub fn max_unavailable(set: &StatefulSet) -> Result<i32, IntOrStringError> {
    let value = set
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.clone())
        .unwrap_or(IntOrString::Int(1));
    Ok(scaled_value(&value, replicas(set), false)?.max(1))
}

/// `newRevision`: the revision recording the set's current template,
/// numbered `revision`, carrying the set's annotations.
pub fn new_revision(
    set: &StatefulSet,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let template = &set.spec.template;
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    let mut cr = history::new_controller_revision(
        &set.metadata,
        "StatefulSet",
        labels,
        history::template_patch(template),
        revision,
        collision_count,
    );
    let annotations = cr.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in set.metadata.annotations.iter().flatten() {
        annotations.insert(k.clone(), v.clone());
    }
    cr
}

/// `ApplyRevision`: the set with the revision's template (the set itself
/// when the revision holds none).
pub fn apply_revision(set: &StatefulSet, revision: &ControllerRevision) -> StatefulSet {
    let mut out = set.clone();
    if let Some(template) = history::revision_template(revision) {
        out.spec.template = template;
    }
    out
}

/// The update revision `getStatefulSetRevisions` settles on.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateRevision<'a> {
    /// The latest revision already records the template.
    Latest(&'a ControllerRevision),
    /// An older revision records it (a rollback): renumber it to
    /// `revision`, making it the latest.
    Renumber {
        revision: &'a ControllerRevision,
        to: i64,
    },
    /// No revision records it: create this one.
    Create(Box<ControllerRevision>),
}

/// `getStatefulSetRevisions`' update revision, from the set's revisions
/// sorted with [`history::sort_controller_revisions`].
pub fn update_revision<'a>(
    set: &StatefulSet,
    sorted: &[&'a ControllerRevision],
) -> UpdateRevision<'a> {
    let collision_count = set
        .status
        .as_ref()
        .and_then(|s| s.collision_count)
        .unwrap_or(0);
    let candidate = new_revision(set, history::next_revision(sorted), Some(collision_count));
    let equal = history::find_equal_revisions(sorted, &candidate);
    match (equal.last(), sorted.last()) {
        (Some(found), Some(latest)) if history::equal_revision(latest, found) => {
            UpdateRevision::Latest(latest)
        }
        (Some(found), _) => UpdateRevision::Renumber {
            revision: found,
            to: candidate.revision.unwrap_or(0),
        },
        (None, _) => UpdateRevision::Create(Box::new(candidate)),
    }
}

/// `getStatefulSetRevisions`' current revision: the one named in
/// `status.currentRevision`, `None` for a new set (the update revision
/// then serves as both).
pub fn current_revision<'a>(
    set: &StatefulSet,
    revisions: &[&'a ControllerRevision],
) -> Option<&'a ControllerRevision> {
    let name = set.status.as_ref()?.current_revision.as_deref()?;
    revisions
        .iter()
        .copied()
        .find(|r| r.metadata.name.as_deref() == Some(name))
}

/// `truncateHistory`: the revisions to delete beyond
/// `revisionHistoryLimit` (default 10), oldest first, never the current
/// or update revision nor one a pod still runs.
pub fn truncate_history(
    set: &StatefulSet,
    pods: &[&Pod],
    sorted: &[&ControllerRevision],
    current: &str,
    update: &str,
) -> Vec<String> {
    let live = |name: &str| {
        name == current || name == update || pods.iter().any(|p| pod_revision(p) == name)
    };
    let history: Vec<&ControllerRevision> = sorted
        .iter()
        .copied()
        .filter(|r| !live(r.metadata.name.as_deref().unwrap_or("")))
        .collect();
    let limit = usize::try_from(set.spec.revision_history_limit.unwrap_or(10)).unwrap_or(0);
    let excess = history.len().saturating_sub(limit);
    history
        .into_iter()
        .take(excess)
        .filter_map(|r| r.metadata.name.clone())
        .collect()
}

/// What one sync does, in the order upstream does it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncPlan {
    /// Ordinals to create a pod for ([`new_stateful_set_pod`]), with the
    /// revision to make it from. `OrderedReady` creates at most one.
    pub create: Vec<(i32, Revision)>,
    /// Pods whose identity or claim volumes drifted, to rewrite
    /// ([`update_identity`], [`update_storage`]).
    pub update_identity: Vec<String>,
    /// Pods to delete: failed or succeeded replicas (recreated on a later
    /// sync, once gone), condemned pods (ordinals out of range, highest
    /// first), and pods of the old revision for the rolling update.
    pub delete: Vec<String>,
    /// What the sync stopped at, when `OrderedReady` had to wait.
    pub waiting_for: Option<Wait>,
}

/// Why an `OrderedReady` sync stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// The pod is terminating; its successor (or replacement) waits.
    Terminating(String),
    /// The pod is not Running and Ready.
    NotReady(String),
    /// The pod is ready but not yet for `minReadySeconds`.
    NotAvailable(String),
    /// A pod just asked for must show up first.
    Created(i32),
    /// A failed or succeeded pod must go before it is replaced.
    Replaced(String),
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// What to do with one replica (`processReplica`); `Some(wait)` stops an
/// `OrderedReady` sync.
fn process_replica(
    set: &StatefulSet,
    ordinal: i32,
    replica: Option<&Pod>,
    monotonic: bool,
    now: Timestamp,
    plan: &mut SyncPlan,
) -> Option<Wait> {
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    let Some(pod) = replica else {
        plan.create.push((ordinal, new_pod_revision(set, ordinal)));
        return monotonic.then_some(Wait::Created(ordinal));
    };
    if matches!(phase(pod), "Failed" | "Succeeded") {
        // Evicted or stopped pods end in either phase; both are replaced,
        // by a new pod once this one is gone.
        if !pod::is_terminating(pod) {
            plan.delete.push(name(pod));
        }
        return Some(Wait::Replaced(name(pod)));
    }
    if monotonic {
        if pod::is_terminating(pod) {
            return Some(Wait::Terminating(name(pod)));
        }
        if !is_running_and_ready(pod) {
            return Some(Wait::NotReady(name(pod)));
        }
        if !is_running_and_available(pod, min_ready, now) {
            return Some(Wait::NotAvailable(name(pod)));
        }
    }
    if !identity_matches(set, pod) || !storage_matches(set, pod) {
        plan.update_identity.push(name(pod));
    }
    None
}

/// `updateStatefulSet`: one sync over the set's (claimed) pods, given the
/// names of the current and update revisions. `max_unavailable_enabled`
/// is upstream's `MaxUnavailableStatefulSet` gate: with it, a rolling
/// update replaces up to `maxUnavailable` pods at once instead of one.
///
/// Replicas are visited in ordinal order: missing ones are created,
/// failed or succeeded ones deleted, drifted identities rewritten; under
/// `OrderedReady` the first that is missing, terminating, not ready or
/// not available ends the sync. Then pods with ordinals out of range are
/// deleted, highest first (under `OrderedReady` one at a time, and only
/// while every lower pod is healthy, the first unhealthy pod excepted).
/// Then, for RollingUpdate, the highest-ordinal pod above the partition
/// that is not of the update revision is deleted (its replacement comes
/// at the update revision on the next sync), or the sync waits for an
/// unhealthy updated pod. A set being deleted only gets its status.
pub fn sync(
    set: &StatefulSet,
    pods: &[&Pod],
    update_revision: &str,
    now: Timestamp,
    max_unavailable_enabled: bool,
) -> Result<SyncPlan, IntOrStringError> {
    let mut plan = SyncPlan::default();
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(plan);
    }
    let start = start_ordinal(set);
    let count = usize::try_from(replicas(set)).unwrap_or(0);
    let mut replicas: Vec<Option<&Pod>> = vec![None; count];
    let mut condemned: Vec<(i32, &Pod)> = Vec::new();
    for &p in pods {
        let Some(ord) = ordinal(p) else {
            continue;
        };
        match usize::try_from(i64::from(ord) - i64::from(start)) {
            Ok(index) if index < count => replicas[index] = Some(p),
            _ => condemned.push((ord, p)),
        }
    }
    condemned.sort_by_key(|(ord, _)| std::cmp::Reverse(*ord));
    // Under OrderedReady the condemned pods are reached only once every
    // replica is healthy, so the first unhealthy pod is then the lowest
    // unhealthy condemned one, which may go first.
    let first_unhealthy: Option<&Pod> = replicas
        .iter()
        .copied()
        .flatten()
        .find(|p| !is_healthy(p))
        .or_else(|| {
            condemned
                .iter()
                .rev()
                .map(|(_, p)| *p)
                .find(|p| !is_healthy(p))
        });
    let monotonic = !allows_burst(set);
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);

    for (index, replica) in replicas.iter().enumerate() {
        let ord = start + i32::try_from(index).unwrap_or(i32::MAX);
        if let Some(wait) = process_replica(set, ord, *replica, monotonic, now, &mut plan)
            && monotonic
        {
            plan.waiting_for = Some(wait);
            return Ok(plan);
        }
    }

    for (_, pod) in &condemned {
        if pod::is_terminating(pod) {
            if monotonic {
                plan.waiting_for = Some(Wait::Terminating(name(pod)));
                return Ok(plan);
            }
            continue;
        }
        let is_first_unhealthy = first_unhealthy.is_some_and(|f| std::ptr::eq(f, *pod));
        if monotonic && !is_first_unhealthy {
            if !is_running_and_ready(pod) {
                plan.waiting_for = first_unhealthy.map(|f| Wait::NotReady(name(f)));
                return Ok(plan);
            }
            if !is_running_and_available(pod, min_ready, now) {
                plan.waiting_for = first_unhealthy.map(|f| Wait::NotAvailable(name(f)));
                return Ok(plan);
            }
        }
        plan.delete.push(name(pod));
        if monotonic {
            return Ok(plan);
        }
    }

    if strategy_type(set) == STRATEGY_ON_DELETE {
        return Ok(plan);
    }
    let update_min = usize::try_from(partition(set).unwrap_or(0)).unwrap_or(0);
    let outdated = |p: &Pod| pod_revision(p) != update_revision && !pod::is_terminating(p);
    let targets = replicas.iter().enumerate().skip(update_min).rev();
    if max_unavailable_enabled {
        let allowed = usize::try_from(max_unavailable(set)?).unwrap_or(1);
        let unavailable = replicas
            .iter()
            .filter(|r| !r.is_some_and(is_healthy))
            .count();
        plan.delete.extend(
            targets
                .filter_map(|(_, r)| r.filter(|p| outdated(p)))
                .take(allowed.saturating_sub(unavailable))
                .map(name),
        );
        return Ok(plan);
    }
    for (index, replica) in targets {
        match replica {
            Some(pod) if outdated(pod) => {
                plan.delete.push(name(pod));
                return Ok(plan);
            }
            Some(pod) if !is_healthy(pod) => {
                plan.waiting_for = Some(Wait::NotReady(name(pod)));
                return Ok(plan);
            }
            Some(_) => {}
            None => {
                // Created this sync (Parallel): wait for it.
                plan.waiting_for = Some(Wait::Created(start + i32::try_from(index).unwrap_or(0)));
                return Ok(plan);
            }
        }
    }
    Ok(plan)
}

/// `computeReplicaStatus` over the set's pods, and
/// `completeRollingUpdate`: once every pod is updated and ready, the
/// update revision becomes the current one.
pub fn status(
    set: &StatefulSet,
    pods: &[&Pod],
    current_revision: &str,
    update_revision: &str,
    now: Timestamp,
) -> StatefulSetStatus {
    let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
    let count = |f: &dyn Fn(&Pod) -> bool| {
        i32::try_from(pods.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX)
    };
    let live = |p: &Pod| !pod::is_terminating(p);
    let mut status = StatefulSetStatus {
        observed_generation: set.metadata.generation,
        replicas: count(&|_| true),
        ready_replicas: Some(count(&is_running_and_ready)),
        available_replicas: Some(count(&|p| {
            is_running_and_ready(p) && is_running_and_available(p, min_ready, now)
        })),
        current_replicas: Some(count(&|p| live(p) && pod_revision(p) == current_revision)),
        updated_replicas: Some(count(&|p| live(p) && pod_revision(p) == update_revision)),
        current_revision: Some(current_revision.into()),
        update_revision: Some(update_revision.into()),
        collision_count: set.status.as_ref().and_then(|s| s.collision_count),
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
    };
    if strategy_type(set) == STRATEGY_ROLLING_UPDATE
        && status.updated_replicas == Some(status.replicas)
        && status.ready_replicas == Some(status.replicas)
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
    status
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{
        RollingUpdateStatefulSetStrategy, StatefulSetOrdinals, StatefulSetSpec,
        StatefulSetUpdateStrategy,
    };
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    use super::*;
    use crate::test_util::{PodWrapper, label_map, pod_template, strings, t};

    const CURRENT: &str = "web-old";
    const UPDATE: &str = "web-new";

    /// Upstream's `newStatefulSet(replicas)`, named `web`, with a claim
    /// template `datadir`.
    fn stateful_set(replicas: i32) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some("set-uid".into()),
                ..ObjectMeta::default()
            },
            spec: StatefulSetSpec {
                replicas: Some(replicas),
                selector: LabelSelector {
                    match_labels: Some(label_map(&[("foo", "bar")])),
                    match_expressions: None,
                },
                template: pod_template("nginx"),
                service_name: Some("governing".into()),
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some("datadir".into()),
                        ..ObjectMeta::default()
                    },
                    ..PersistentVolumeClaim::default()
                }]),
                ..StatefulSetSpec::default()
            },
            status: None,
        }
    }

    fn parallel(mut set: StatefulSet) -> StatefulSet {
        set.spec.pod_management_policy = Some(POLICY_PARALLEL.into());
        set
    }

    fn with_strategy(
        mut set: StatefulSet,
        kind: &str,
        partition: Option<i32>,
        max_unavailable: Option<IntOrString>,
    ) -> StatefulSet {
        set.spec.update_strategy = Some(StatefulSetUpdateStrategy {
            type_: Some(kind.into()),
            rolling_update: (partition.is_some() || max_unavailable.is_some()).then_some(
                RollingUpdateStatefulSetStrategy {
                    partition,
                    max_unavailable,
                },
            ),
        });
        set
    }

    /// The set's pod of `ordinal` at `revision`, in a state.
    fn member(set: &StatefulSet, ordinal: i32, revision: &str, state: State) -> Pod {
        let p = PodWrapper(new_stateful_set_pod(set, ordinal))
            .label(CONTROLLER_REVISION_HASH_LABEL, revision);
        match state {
            State::Pending => p.phase("Pending"),
            State::Ready => p.ready_since(t(0)),
            State::ReadyAt(since) => p.ready_since(t(since)),
            State::Failed => p.phase("Failed"),
            State::Terminating => p.ready_since(t(0)).terminating(t(0)),
        }
        .obj()
    }

    #[derive(Clone, Copy)]
    enum State {
        Pending,
        Ready,
        ReadyAt(i64),
        Failed,
        Terminating,
    }

    /// Upstream `TestGetParentNameAndOrdinal`, with the edge cases of the
    /// `(.*)-([0-9]+)$` pattern.
    #[test]
    fn parent_name_and_ordinal_as_upstream() {
        struct Case {
            name: &'static str,
            want: Option<(&'static str, i32)>,
        }
        for case in [
            Case {
                name: "web-1",
                want: Some(("web", 1)),
            },
            Case {
                name: "1-bar",
                want: None,
            },
            Case {
                name: "lws-samples-132",
                want: Some(("lws-samples", 132)),
            },
            Case {
                name: "lws-samples-132-u",
                want: None,
            },
            Case {
                name: "lws-samples-",
                want: None,
            },
            Case {
                name: "lws-samples-0",
                want: Some(("lws-samples", 0)),
            },
            Case {
                name: "lws-samples--1",
                want: Some(("lws-samples-", 1)),
            },
            Case {
                name: "lws-samples1",
                want: None,
            },
            Case {
                name: "lws-samples-1-0",
                want: Some(("lws-samples-1", 0)),
            },
            Case {
                name: "web-2147483648",
                want: None,
            },
            Case {
                name: "web-+1",
                want: None,
            },
        ] {
            assert_eq!(
                parent_name_and_ordinal(case.name),
                case.want,
                "{}",
                case.name
            );
        }
        let set = stateful_set(3);
        let pod = new_stateful_set_pod(&set, 1);
        assert_eq!(ordinal(&pod), Some(1));
        assert!(is_member_of(&set, &pod), "TestIsMemberOf");
        let mut other = set.clone();
        other.metadata.name = Some("web2".into());
        assert!(!is_member_of(&other, &pod), "TestIsMemberOf: another set");
    }

    /// Upstream `TestIdentityMatches` and `TestUpdateIdentity`.
    #[test]
    fn identity_matches_and_is_restored() {
        let set = stateful_set(3);
        let good = new_stateful_set_pod(&set, 1);
        assert!(identity_matches(&set, &good), "a new pod has its identity");
        struct Case {
            name: &'static str,
            break_it: fn(&mut Pod),
            fixable: bool,
        }
        for case in [
            Case {
                name: "wrong name",
                break_it: |p| p.metadata.name = Some("web-x".into()),
                fixable: false,
            },
            Case {
                name: "wrong namespace",
                break_it: |p| p.metadata.namespace = Some("other".into()),
                fixable: true,
            },
            Case {
                name: "missing pod-name label",
                break_it: |p| {
                    if let Some(l) = p.metadata.labels.as_mut() {
                        l.remove(POD_NAME_LABEL);
                    }
                },
                fixable: true,
            },
            Case {
                name: "wrong pod-name label",
                break_it: |p| {
                    p.metadata
                        .labels
                        .get_or_insert_with(BTreeMap::new)
                        .insert(POD_NAME_LABEL.into(), "web-2".into());
                },
                fixable: true,
            },
        ] {
            let mut pod = good.clone();
            (case.break_it)(&mut pod);
            assert!(!identity_matches(&set, &pod), "{}", case.name);
            update_identity(&set, &mut pod);
            assert_eq!(
                identity_matches(&set, &pod),
                case.fixable,
                "{}: after updateIdentity",
                case.name
            );
        }
        assert_eq!(
            good.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(POD_INDEX_LABEL))
                .map(String::as_str),
            Some("1")
        );
        let spec = good.spec.clone().unwrap_or_default();
        assert_eq!(
            (spec.hostname.as_deref(), spec.subdomain.as_deref()),
            (Some("web-1"), Some("governing"))
        );
        assert!(
            crate::workloads::ownership::is_controlled_by(&good.metadata, "set-uid"),
            "TestNewPodControllerRef"
        );
    }

    /// Upstream `TestStorageMatches` and `TestUpdateStorage`.
    #[test]
    fn storage_matches_and_is_restored() {
        let set = stateful_set(3);
        let good = new_stateful_set_pod(&set, 2);
        assert!(storage_matches(&set, &good));
        let volumes = good
            .spec
            .as_ref()
            .and_then(|s| s.volumes.clone())
            .unwrap_or_default();
        assert_eq!(
            volumes
                .iter()
                .filter_map(|v| v
                    .persistent_volume_claim
                    .as_ref()
                    .map(|c| c.claim_name.clone()))
                .collect::<Vec<_>>(),
            strings(&["datadir-web-2"])
        );
        let mut missing = good.clone();
        if let Some(spec) = missing.spec.as_mut() {
            spec.volumes = None;
        }
        assert!(!storage_matches(&set, &missing), "missing volume");
        update_storage(&set, &mut missing);
        assert!(storage_matches(&set, &missing), "restored");
        let mut wrong = good.clone();
        if let Some(claim) = wrong
            .spec
            .as_mut()
            .and_then(|s| s.volumes.as_mut())
            .and_then(|v| v.first_mut())
            .and_then(|v| v.persistent_volume_claim.as_mut())
        {
            claim.claim_name = "datadir-web-0".into();
        }
        assert!(!storage_matches(&set, &wrong), "another ordinal's claim");
        update_storage(&set, &mut wrong);
        assert!(storage_matches(&set, &wrong));
        assert_eq!(
            wrong.spec.and_then(|s| s.volumes).map(|v| v.len()),
            Some(1),
            "replaced, not added"
        );
    }

    fn plan(
        create: &[i32],
        update_identity: &[&str],
        delete: &[&str],
        waiting_for: Option<Wait>,
    ) -> SyncPlan {
        SyncPlan {
            create: create.iter().map(|&o| (o, Revision::Update)).collect(),
            update_identity: strings(update_identity),
            delete: strings(delete),
            waiting_for,
        }
    }

    fn run(set: &StatefulSet, pods: &[Pod], now: i64, max_unavailable: bool) -> SyncPlan {
        let refs: Vec<&Pod> = pods.iter().collect();
        sync(set, &refs, UPDATE, t(now), max_unavailable).unwrap_or_default()
    }

    /// OrderedReady, one sync at a time (after upstream
    /// `TestStatefulSetControlScaleUp`/`ScaleDown`,
    /// `TestStatefulSetControlReplacesPods`,
    /// `TestStatefulSetControlRecreatesFailedPods` and the terminating
    /// pod cases).
    #[test]
    fn ordered_ready_sync_steps() {
        let set = stateful_set(3);
        let m = |o, state| member(&set, o, UPDATE, state);
        let mut drifted = m(1, State::Ready);
        drifted.metadata.namespace = Some("other".into());
        let mut slow = set.clone();
        slow.spec.min_ready_seconds = Some(30);
        struct Case {
            name: &'static str,
            set: StatefulSet,
            pods: Vec<Pod>,
            want: SyncPlan,
        }
        let cases = vec![
            Case {
                name: "scale up from nothing: ordinal 0 only",
                set: set.clone(),
                pods: vec![],
                want: plan(&[0], &[], &[], Some(Wait::Created(0))),
            },
            Case {
                name: "pod 0 pending: wait",
                set: set.clone(),
                pods: vec![m(0, State::Pending)],
                want: plan(&[], &[], &[], Some(Wait::NotReady("web-0".into()))),
            },
            Case {
                name: "pod 0 ready: create 1",
                set: set.clone(),
                pods: vec![m(0, State::Ready)],
                want: plan(&[1], &[], &[], Some(Wait::Created(1))),
            },
            Case {
                name: "pod 0 ready for less than minReadySeconds: wait",
                set: slow.clone(),
                pods: vec![member(&slow, 0, UPDATE, State::ReadyAt(90))],
                want: plan(&[], &[], &[], Some(Wait::NotAvailable("web-0".into()))),
            },
            Case {
                name: "a terminating pod blocks its own replacement and its successors",
                set: set.clone(),
                pods: vec![m(0, State::Ready), m(1, State::Terminating)],
                want: plan(&[], &[], &[], Some(Wait::Terminating("web-1".into()))),
            },
            Case {
                name: "a failed pod is deleted, and replaced once gone",
                set: set.clone(),
                pods: vec![m(0, State::Ready), m(1, State::Failed), m(2, State::Ready)],
                want: plan(&[], &[], &["web-1"], Some(Wait::Replaced("web-1".into()))),
            },
            Case {
                name: "all ready: nothing to do",
                set: set.clone(),
                pods: vec![m(0, State::Ready), m(1, State::Ready), m(2, State::Ready)],
                want: plan(&[], &[], &[], None),
            },
            Case {
                name: "a drifted identity is restored",
                set: set.clone(),
                pods: vec![m(0, State::Ready), drifted, m(2, State::Ready)],
                want: plan(&[], &["web-1"], &[], None),
            },
            Case {
                name: "scale down: the highest ordinal only",
                set: stateful_set(2),
                pods: vec![
                    m(0, State::Ready),
                    m(1, State::Ready),
                    m(2, State::Ready),
                    m(3, State::Ready),
                ],
                want: plan(&[], &[], &["web-3"], None),
            },
            Case {
                name: "scale down waits for the terminating pod",
                set: stateful_set(2),
                pods: vec![
                    m(0, State::Ready),
                    m(1, State::Ready),
                    m(2, State::Ready),
                    m(3, State::Terminating),
                ],
                want: plan(&[], &[], &[], Some(Wait::Terminating("web-3".into()))),
            },
            Case {
                name: "scale down: the first unhealthy pod may go",
                set: stateful_set(2),
                pods: vec![
                    m(0, State::Ready),
                    m(1, State::Ready),
                    m(2, State::Ready),
                    m(3, State::Pending),
                ],
                want: plan(&[], &[], &["web-3"], None),
            },
            Case {
                name: "scale down waits while a lower condemned pod is unhealthy",
                set: stateful_set(2),
                pods: vec![
                    m(0, State::Ready),
                    m(1, State::Ready),
                    m(2, State::Pending),
                    m(3, State::Pending),
                ],
                want: plan(&[], &[], &[], Some(Wait::NotReady("web-2".into()))),
            },
            Case {
                name: "no scale down before the replicas are healthy",
                set: stateful_set(2),
                pods: vec![m(0, State::Ready), m(1, State::Pending), m(2, State::Ready)],
                want: plan(&[], &[], &[], Some(Wait::NotReady("web-1".into()))),
            },
        ];
        for case in cases {
            assert_eq!(
                run(&case.set, &case.pods, 100, false),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Parallel: everything at once (upstream's burst tests).
    #[test]
    fn parallel_sync_steps() {
        let set = parallel(stateful_set(3));
        let m = |o, state| member(&set, o, UPDATE, state);
        struct Case {
            name: &'static str,
            set: StatefulSet,
            pods: Vec<Pod>,
            want: SyncPlan,
        }
        for case in [
            Case {
                name: "scale up: every missing ordinal",
                set: set.clone(),
                pods: vec![m(1, State::Pending)],
                want: plan(&[0, 2], &[], &[], Some(Wait::Created(2))),
            },
            Case {
                name: "scale down: every condemned pod, terminating ones skipped",
                set: parallel(stateful_set(1)),
                pods: vec![
                    m(0, State::Ready),
                    m(1, State::Pending),
                    m(2, State::Terminating),
                    m(3, State::Ready),
                ],
                want: plan(&[], &[], &["web-3", "web-1"], None),
            },
            Case {
                name: "failed pods go, missing ones come, in one sync",
                set: set.clone(),
                pods: vec![m(0, State::Failed), m(2, State::Ready)],
                want: plan(&[1], &[], &["web-0"], Some(Wait::Created(1))),
            },
            Case {
                name: "a terminating pod still blocks its own identity",
                set: set.clone(),
                pods: vec![
                    m(0, State::Terminating),
                    m(1, State::Ready),
                    m(2, State::Ready),
                ],
                want: plan(&[], &[], &[], Some(Wait::NotReady("web-0".into()))),
            },
        ] {
            assert_eq!(
                run(&case.set, &case.pods, 100, false),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// RollingUpdate from the highest ordinal down to the partition, one
    /// pod at a time or `maxUnavailable` at a time; OnDelete never.
    #[test]
    fn rolling_update_steps() {
        let set = stateful_set(3);
        let at = |o, revision, state| member(&set, o, revision, state);
        let all_old = || {
            vec![
                at(0, CURRENT, State::Ready),
                at(1, CURRENT, State::Ready),
                at(2, CURRENT, State::Ready),
            ]
        };
        struct Case {
            name: &'static str,
            set: StatefulSet,
            pods: Vec<Pod>,
            max_unavailable: bool,
            want: SyncPlan,
        }
        let rolling = |partition, max_unavailable| {
            with_strategy(
                stateful_set(3),
                STRATEGY_ROLLING_UPDATE,
                partition,
                max_unavailable,
            )
        };
        for case in [
            Case {
                name: "the highest ordinal goes first",
                set: set.clone(),
                pods: all_old(),
                max_unavailable: false,
                want: plan(&[], &[], &["web-2"], None),
            },
            Case {
                name: "wait for the updated pod to be healthy",
                set: set.clone(),
                pods: vec![
                    at(0, CURRENT, State::Ready),
                    at(1, CURRENT, State::Ready),
                    at(2, UPDATE, State::Pending),
                ],
                max_unavailable: false,
                want: plan(&[], &[], &[], Some(Wait::NotReady("web-2".into()))),
            },
            Case {
                name: "then the next one down",
                set: set.clone(),
                pods: vec![
                    at(0, CURRENT, State::Ready),
                    at(1, CURRENT, State::Ready),
                    at(2, UPDATE, State::Ready),
                ],
                max_unavailable: false,
                want: plan(&[], &[], &["web-1"], None),
            },
            Case {
                name: "never below the partition",
                set: rolling(Some(2), None),
                pods: vec![
                    at(0, CURRENT, State::Ready),
                    at(1, CURRENT, State::Ready),
                    at(2, UPDATE, State::Ready),
                ],
                max_unavailable: false,
                want: plan(&[], &[], &[], None),
            },
            Case {
                name: "OnDelete: pods change only when deleted",
                set: with_strategy(stateful_set(3), STRATEGY_ON_DELETE, None, None),
                pods: all_old(),
                max_unavailable: false,
                want: plan(&[], &[], &[], None),
            },
            Case {
                name: "maxUnavailable 2: two at a time",
                set: rolling(None, Some(IntOrString::Int(2))),
                pods: all_old(),
                max_unavailable: true,
                want: plan(&[], &[], &["web-2", "web-1"], None),
            },
            Case {
                name: "maxUnavailable 2 with one pod unavailable: one more",
                set: parallel(rolling(None, Some(IntOrString::Int(2)))),
                pods: vec![
                    at(0, CURRENT, State::Ready),
                    at(1, CURRENT, State::Ready),
                    at(2, UPDATE, State::Pending),
                ],
                max_unavailable: true,
                want: plan(&[], &[], &["web-1"], None),
            },
            Case {
                name: "maxUnavailable without the gate: one at a time",
                set: rolling(None, Some(IntOrString::Int(2))),
                pods: all_old(),
                max_unavailable: false,
                want: plan(&[], &[], &["web-2"], None),
            },
        ] {
            assert_eq!(
                run(&case.set, &case.pods, 100, case.max_unavailable),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// `.spec.ordinals.start` moves the range: pods below it are
    /// condemned, new ones start at it.
    #[test]
    fn start_ordinal_shifts_the_range() {
        let mut set = parallel(stateful_set(2));
        set.spec.ordinals = Some(StatefulSetOrdinals { start: Some(5) });
        assert_eq!((start_ordinal(&set), end_ordinal(&set)), (5, 6));
        let old = member(&set, 0, UPDATE, State::Ready);
        assert!(!in_ordinal_range(&old, &set));
        assert_eq!(
            run(&set, &[old], 100, false),
            plan(&[5, 6], &[], &["web-0"], Some(Wait::Created(6)))
        );
        assert_eq!(pod_name(&set, 5), "web-5");
    }

    /// `newVersionedStatefulSetPod`'s revision choice.
    #[test]
    fn new_pods_below_the_partition_keep_the_current_revision() {
        let partitioned = with_strategy(stateful_set(5), STRATEGY_ROLLING_UPDATE, Some(3), None);
        let revisions: Vec<Revision> = (0..5).map(|o| new_pod_revision(&partitioned, o)).collect();
        use Revision::{Current, Update};
        assert_eq!(revisions, vec![Current, Current, Current, Update, Update]);
        let mut unparameterised = stateful_set(5);
        unparameterised.status = Some(StatefulSetStatus {
            current_replicas: Some(2),
            ..StatefulSetStatus::default()
        });
        let revisions: Vec<Revision> = (0..5)
            .map(|o| new_pod_revision(&unparameterised, o))
            .collect();
        assert_eq!(revisions, vec![Current, Current, Update, Update, Update]);
    }

    /// `newVersionedStatefulSetPod`: the chosen revision's template and
    /// name; identity from the set.
    #[test]
    fn a_new_pod_is_made_from_its_revision() {
        let v1 = stateful_set(3);
        let mut v2 = v1.clone();
        v2.spec.template = pod_template("nginx:2");
        let r1 = new_revision(&v1, 1, Some(0));
        let pod = new_pod_of_revision(&v2, &r1, 2);
        let image = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone());
        assert_eq!(image.as_deref(), Some("nginx"), "the revision's template");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-2"));
        assert_eq!(
            pod_revision(&pod),
            r1.metadata.name.as_deref().unwrap_or("")
        );
        assert!(identity_matches(&v2, &pod) && storage_matches(&v2, &pod));
    }

    #[test]
    fn max_unavailable_rounds_down_but_is_at_least_one() {
        struct Case {
            value: Option<IntOrString>,
            replicas: i32,
            want: i32,
        }
        for case in [
            Case {
                value: None,
                replicas: 5,
                want: 1,
            },
            Case {
                value: Some(IntOrString::String("50%".into())),
                replicas: 5,
                want: 2,
            },
            Case {
                value: Some(IntOrString::String("10%".into())),
                replicas: 5,
                want: 1,
            },
            Case {
                value: Some(IntOrString::Int(3)),
                replicas: 5,
                want: 3,
            },
        ] {
            let set = with_strategy(
                stateful_set(case.replicas),
                STRATEGY_ROLLING_UPDATE,
                None,
                case.value.clone(),
            );
            assert_eq!(max_unavailable(&set), Ok(case.want), "{:?}", case.value);
        }
    }

    /// `computeReplicaStatus` and `completeRollingUpdate`.
    #[test]
    fn status_counts_and_rollout_completion() {
        let set = stateful_set(3);
        let at = |o, revision, state| member(&set, o, revision, state);
        let midway = [
            at(0, CURRENT, State::Ready),
            at(1, UPDATE, State::Ready),
            at(2, UPDATE, State::Terminating),
        ];
        let refs: Vec<&Pod> = midway.iter().collect();
        let s = status(&set, &refs, CURRENT, UPDATE, t(100));
        assert_eq!(
            (
                s.replicas,
                s.ready_replicas,
                s.available_replicas,
                s.current_replicas,
                s.updated_replicas
            ),
            (3, Some(3), Some(3), Some(1), Some(1))
        );
        assert_eq!(s.current_revision.as_deref(), Some(CURRENT));
        let done = [
            at(0, UPDATE, State::Ready),
            at(1, UPDATE, State::Ready),
            at(2, UPDATE, State::Ready),
        ];
        let refs: Vec<&Pod> = done.iter().collect();
        let s = status(&set, &refs, CURRENT, UPDATE, t(100));
        assert_eq!(
            (s.current_replicas, s.current_revision.as_deref()),
            (Some(3), Some(UPDATE)),
            "the update is complete"
        );
        let mut deleting = set.clone();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(0)));
        assert_eq!(
            run(&deleting, &[], 0, false),
            SyncPlan::default(),
            "a set being deleted only gets its status"
        );
    }

    /// `getStatefulSetRevisions` and `truncateHistory`.
    #[test]
    fn revisions_are_created_reused_or_rolled_back() {
        let v1 = stateful_set(3);
        let mut v2 = v1.clone();
        v2.spec.template = pod_template("nginx:2");
        let r1 = new_revision(&v1, 1, Some(0));
        let r2 = new_revision(&v2, 2, Some(0));
        assert!(
            matches!(update_revision(&v1, &[]), UpdateRevision::Create(r) if r.revision == Some(1)),
            "a new set"
        );
        assert_eq!(
            update_revision(&v2, &[&r1, &r2]),
            UpdateRevision::Latest(&r2),
            "unchanged"
        );
        assert_eq!(
            update_revision(&v1, &[&r1, &r2]),
            UpdateRevision::Renumber {
                revision: &r1,
                to: 3
            },
            "rollback"
        );
        let mut v3 = v1.clone();
        v3.spec.template = pod_template("nginx:3");
        assert!(
            matches!(update_revision(&v3, &[&r1, &r2]), UpdateRevision::Create(r) if r.revision == Some(3)),
            "a new template"
        );
        assert_eq!(
            apply_revision(&v2, &r1).spec.template,
            v1.spec.template,
            "ApplyRevision"
        );
        let mut with_status = v2.clone();
        with_status.status = Some(StatefulSetStatus {
            current_revision: r1.metadata.name.clone(),
            ..StatefulSetStatus::default()
        });
        assert_eq!(current_revision(&with_status, &[&r1, &r2]), Some(&r1));
        assert_eq!(current_revision(&v2, &[&r1, &r2]), None);
        let revs: Vec<ControllerRevision> = (1..=5)
            .map(|n| {
                let mut r = new_revision(&v1, n, Some(0));
                r.metadata.name = Some(format!("r{n}"));
                r
            })
            .collect();
        let refs: Vec<&ControllerRevision> = revs.iter().collect();
        let on_r1 = member(&v1, 0, "r1", State::Ready);
        let mut limited = v1.clone();
        limited.spec.revision_history_limit = Some(2);
        assert_eq!(
            truncate_history(&limited, &[&on_r1], &refs, "r4", "r5"),
            Vec::<String>::new(),
            "within the limit"
        );
        limited.spec.revision_history_limit = Some(0);
        assert_eq!(
            truncate_history(&limited, &[&on_r1], &refs, "r4", "r5"),
            strings(&["r2", "r3"]),
            "live revisions kept"
        );
    }
}
