//! ReplicaSet decisions, ported from upstream's
//! `pkg/controller/replicaset` and `pkg/controller/controller_utils.go`:
//!
//! - how many pods to create or delete: `manageReplicas`' diff, capped at
//!   [`BURST_REPLICAS`] per sync ([`replica_change`]); creates go out in
//!   [`super::pod_control::SlowStartBatches`] under
//!   [`super::pod_control::Expectations`];
//! - which pods to delete: `getPodsToDelete` with
//!   `getPodsRankedByRelatedPodsOnSameNode` and `ActivePodsWithRanks.Less`
//!   (unassigned before assigned; pending before unknown before running;
//!   not ready before ready; lower `pod-deletion-cost` first; more
//!   co-located sibling pods first; recently ready first, in log2 time
//!   buckets; more restarts first; newer first, in log2 buckets);
//! - which pods are the ReplicaSet's: active pods (`FilterActivePods`)
//!   claimed through [`super::ownership::claim`];
//! - its status: `calculateStatus` with the `ReplicaFailure` condition,
//!   and when it is worth writing (`updateReplicaSetStatus`' skip rule);
//! - the `replicaset_controller_sorting_deletion_age_ratio` observations
//!   of a scale-down ([`deletion_age_ratios`]).
//!
//! Feature gates: `PodDeletionCost` and `LogarithmicScaleDown` are on, as
//! in every supported release; berth has no switch for them.

use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::sort_by_less;
use crate::labels;
use crate::pod;

/// Upstream's `BurstReplicas` for ReplicaSets: at most this many creates
/// or deletes per sync.
pub const BURST_REPLICAS: usize = 500;

/// `core.PodDeletionCost`: lower-cost pods are deleted first.
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The `ReplicaFailure` condition and its reasons.
pub const CONDITION_REPLICA_FAILURE: &str = "ReplicaFailure";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";

/// `spec.replicas`, 1 when absent (the API default).
pub fn replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(1)
}

/// What `manageReplicas` does this sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaChange {
    /// Create this many pods (in slow-start batches).
    Create(usize),
    /// Delete this many pods ([`pods_to_delete`]).
    Delete(usize),
    /// The count is right.
    None,
}

/// `manageReplicas`' diff between the ReplicaSet's active pods and
/// `spec.replicas`, capped at [`BURST_REPLICAS`]: the rest waits for the
/// next sync, after the watch has shown these.
pub fn replica_change(active_pods: usize, rs: &ReplicaSet) -> ReplicaChange {
    let want = usize::try_from(replicas(rs)).unwrap_or(0);
    match active_pods.cmp(&want) {
        std::cmp::Ordering::Less => ReplicaChange::Create((want - active_pods).min(BURST_REPLICAS)),
        std::cmp::Ordering::Greater => {
            ReplicaChange::Delete((active_pods - want).min(BURST_REPLICAS))
        }
        std::cmp::Ordering::Equal => ReplicaChange::None,
    }
}

/// `helper.GetDeletionCostFromPodAnnotations`: the annotation's int32, 0
/// when absent or invalid (a leading `+` or leading zeros are invalid).
pub fn deletion_cost(pod: &Pod) -> i32 {
    let Some(value) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST_ANNOTATION))
    else {
        return 0;
    };
    let valid_first_digit = match value.as_bytes().first() {
        Some(b'-') | Some(b'1'..=b'9') => true,
        Some(b'0') => value == "0",
        _ => false,
    };
    if !valid_first_digit {
        return 0;
    }
    value.parse().unwrap_or(0)
}

/// `podPhaseToOrdinal`: Pending < Unknown < Running; any other phase
/// counts as Pending.
fn phase_ordinal(pod: &Pod) -> u8 {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// `podReadyTime`: when a ready pod became ready (`None`: Go's zero time).
fn ready_time(pod: &Pod) -> Option<Timestamp> {
    pod::ready_condition(pod)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

fn created(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

fn max_container_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .fold(0, i32::max)
}

/// `afterOrZero`: `a` is after `b`, a zero (absent) time being after
/// every real one.
fn after_or_zero(a: Option<Timestamp>, b: Option<Timestamp>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a > b,
        (a, _) => a.is_none(),
    }
}

/// `logarithmicRankDiff`: the difference of the two times' log2 ages (in
/// nanoseconds, truncated) at `now`; ages of zero or less rank -1.
fn logarithmic_rank_diff(a: Timestamp, b: Timestamp, now: Timestamp) -> i64 {
    let rank = |t: Timestamp| {
        let age = now.duration_since(t).as_nanos();
        if age > 0 {
            // Go converts the float log to int64 (truncation; the log of
            // an age of at least 1 ns is not negative).
            (age as f64).log2() as i64
        } else {
            -1
        }
    };
    rank(a) - rank(b)
}

/// Compares two times as step 6 and 8 of `ActivePodsWithRanks.Less` do:
/// `Some(true)` if `a` goes first, `None` if they tie.
fn newer_first(
    a: (&Pod, Option<Timestamp>),
    b: (&Pod, Option<Timestamp>),
    now: Option<Timestamp>,
) -> Option<bool> {
    if a.1 == b.1 {
        return None;
    }
    let (Some(now), Some(ta), Some(tb)) = (now, a.1, b.1) else {
        return Some(after_or_zero(a.1, b.1));
    };
    match logarithmic_rank_diff(ta, tb, now) {
        0 => Some(a.0.metadata.uid < b.0.metadata.uid),
        diff => Some(diff < 0),
    }
}

/// `ActivePodsWithRanks.Less`: whether pod `a` (with `rank_a` co-located
/// sibling pods) should be deleted before pod `b`. `now` enables the
/// logarithmic comparison of ready and creation times (upstream's
/// `LogarithmicScaleDown`): times in the same power-of-two age bucket tie
/// and are broken by UID, so pods of one age are deleted in a random but
/// stable order; without `now` the exact times decide (upstream's
/// `ActivePods`, and `Now` zero).
pub fn delete_before(
    a: &Pod,
    rank_a: usize,
    b: &Pod,
    rank_b: usize,
    now: Option<Timestamp>,
) -> bool {
    // 1. Unassigned < assigned.
    let (node_a, node_b) = (node_name(a), node_name(b));
    if node_a != node_b && (node_a.is_empty() || node_b.is_empty()) {
        return node_a.is_empty();
    }
    // 2. Pending < Unknown < Running.
    if phase_ordinal(a) != phase_ordinal(b) {
        return phase_ordinal(a) < phase_ordinal(b);
    }
    // 3. Not ready < ready.
    let (ready_a, ready_b) = (pod::is_ready(a), pod::is_ready(b));
    if ready_a != ready_b {
        return !ready_a;
    }
    // 4. Lower pod-deletion-cost < higher.
    if deletion_cost(a) != deletion_cost(b) {
        return deletion_cost(a) < deletion_cost(b);
    }
    // 5. More co-located pods of the same owner < fewer.
    if rank_a != rank_b {
        return rank_a > rank_b;
    }
    // 6. Ready for a shorter time < longer (an unknown time is shortest).
    if ready_a
        && ready_b
        && let Some(first) = newer_first((a, ready_time(a)), (b, ready_time(b)), now)
    {
        return first;
    }
    // 7. More container restarts < fewer.
    if max_container_restarts(a) != max_container_restarts(b) {
        return max_container_restarts(a) > max_container_restarts(b);
    }
    // 8. Newer < older (an unknown creation time is newest).
    newer_first((a, created(a)), (b, created(b)), now).unwrap_or(false)
}

/// `getPodsRankedByRelatedPodsOnSameNode`: each pod's rank is the number
/// of active `related` pods on its node (unscheduled pods share the node
/// ""). `related` is every pod of the ReplicaSet's siblings under the
/// same controller (`getIndirectlyRelatedPods`), so a Deployment's
/// rollout spreads its deletions over crowded nodes first.
pub fn ranks_by_related_pods_on_same_node(pods: &[&Pod], related: &[&Pod]) -> Vec<usize> {
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for p in related.iter().filter(|p| pod::is_active(p)) {
        *on_node.entry(node_name(p)).or_default() += 1;
    }
    pods.iter()
        .map(|p| on_node.get(node_name(p)).copied().unwrap_or(0))
        .collect()
}

/// `getPodsToDelete`: the first `diff` of `pods` in deletion order
/// ([`delete_before`], ranked against `related`, at `now`); when all go,
/// in the order given.
pub fn pods_to_delete<'a>(
    pods: &[&'a Pod],
    related: &[&Pod],
    diff: usize,
    now: Timestamp,
) -> Vec<&'a Pod> {
    if diff >= pods.len() {
        return pods.to_vec();
    }
    let ranked: Vec<(&Pod, usize)> = pods
        .iter()
        .copied()
        .zip(ranks_by_related_pods_on_same_node(pods, related))
        .collect();
    let less = |a: &(&Pod, usize), b: &(&Pod, usize)| delete_before(a.0, a.1, b.0, b.1, Some(now));
    sort_by_less(ranked, &less)
        .into_iter()
        .take(diff)
        .map(|(p, _)| p)
        .collect()
}

/// Why `manageReplicas` failed this sync, for the `ReplicaFailure`
/// condition: the first create or delete error's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManageFailure {
    pub message: String,
}

/// What a ReplicaSet's status counts of one of its pods: whether it
/// carries every template label, and its readiness. It depends only on
/// the pod and the template's labels, so a controller may keep it per
/// pod version from one sync to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodCount {
    pub fully_labeled: bool,
    pub readiness: pod::Readiness,
}

impl PodCount {
    pub fn of(p: &Pod, template_labels: &BTreeMap<String, String>) -> PodCount {
        PodCount {
            fully_labeled: labels::set_matches(template_labels, p.metadata.labels.as_ref()),
            readiness: pod::Readiness::of(p),
        }
    }
}

/// The template's labels, which a fully labeled pod carries.
pub fn template_labels(rs: &ReplicaSet) -> BTreeMap<String, String> {
    rs.spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

/// The counts of a ReplicaSet's status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplicaCounts {
    pub replicas: i32,
    pub fully_labeled: i32,
    pub ready: i32,
    pub available: i32,
}

impl ReplicaCounts {
    /// Counts one more pod, available at `now` after `min_ready_seconds`.
    pub fn add(&mut self, count: PodCount, min_ready_seconds: i32, now: Timestamp) {
        self.replicas = self.replicas.saturating_add(1);
        self.fully_labeled += i32::from(count.fully_labeled);
        if count.readiness.is_ready() {
            self.ready += 1;
            self.available += i32::from(count.readiness.is_available(min_ready_seconds, now));
        }
    }
}

/// `calculateStatus`: counts over the ReplicaSet's claimed active `pods`
/// (fully labeled: matching every template label; ready; available at
/// `now` after `minReadySeconds`), and the `ReplicaFailure` condition:
/// set (FailedCreate when short of pods, FailedDelete when over) when
/// this sync failed and none is set yet, removed when this sync
/// succeeded. `observedGeneration` is the ReplicaSet's generation.
pub fn status(
    rs: &ReplicaSet,
    pods: &[&Pod],
    failure: Option<&ManageFailure>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let template_labels = template_labels(rs);
    let min_ready_seconds = rs.spec.min_ready_seconds.unwrap_or(0);
    let mut counts = ReplicaCounts::default();
    for p in pods {
        counts.add(PodCount::of(p, &template_labels), min_ready_seconds, now);
    }
    status_of_counts(rs, counts, failure, now)
}

/// [`status`] from the counts of the pods.
pub fn status_of_counts(
    rs: &ReplicaSet,
    counts: ReplicaCounts,
    failure: Option<&ManageFailure>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let mut status = rs.status.clone().unwrap_or_default();
    let conditions = status.conditions.take().unwrap_or_default();
    let has_failure = conditions
        .iter()
        .any(|c| c.type_.as_deref() == Some(CONDITION_REPLICA_FAILURE));
    let conditions = match failure {
        Some(failure) if !has_failure => {
            let diff = i64::from(counts.replicas) - i64::from(replicas(rs));
            let reason = match diff.signum() {
                -1 => REASON_FAILED_CREATE,
                1 => REASON_FAILED_DELETE,
                _ => "",
            };
            let mut conditions = conditions;
            conditions.push(ReplicaSetCondition {
                type_: Some(CONDITION_REPLICA_FAILURE.into()),
                status: Some("True".into()),
                reason: Some(reason.into()),
                message: Some(failure.message.clone()),
                last_transition_time: Some(Time(now)),
            });
            conditions
        }
        None if has_failure => conditions
            .into_iter()
            .filter(|c| c.type_.as_deref() != Some(CONDITION_REPLICA_FAILURE))
            .collect(),
        _ => conditions,
    };
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status.replicas = counts.replicas;
    status.fully_labeled_replicas = Some(counts.fully_labeled);
    status.ready_replicas = Some(counts.ready);
    status.available_replicas = Some(counts.available);
    status.observed_generation = rs.metadata.generation;
    status
}

/// `updateReplicaSetStatus`' skip rule: a computed status is written
/// unless its counts and conditions equal the ReplicaSet's and the
/// ReplicaSet's generation has been observed.
pub fn status_needs_update(rs: &ReplicaSet, new: &ReplicaSetStatus) -> bool {
    let current = rs.status.clone().unwrap_or_default();
    let counts = |s: &ReplicaSetStatus| {
        (
            s.replicas,
            s.fully_labeled_replicas.unwrap_or(0),
            s.ready_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
        )
    };
    let conditions = |s: &ReplicaSetStatus| s.conditions.clone().unwrap_or_default();
    counts(&current) != counts(new)
        || rs.metadata.generation.unwrap_or(0) != current.observed_generation.unwrap_or(0)
        || conditions(&current) != conditions(new)
}

/// `reportSortingDeletionAgeRatioMetric`: for each ready pod `chosen` for
/// deletion, its age divided by the age of the youngest ready pod among
/// `pods`, both in whole milliseconds and divided as integers, as
/// upstream does (below 2 means the sort picked young pods). A youngest
/// age under a millisecond gives no observation (upstream would divide
/// by zero).
pub fn deletion_age_ratios(pods: &[&Pod], chosen: &[&Pod], now: Timestamp) -> Vec<f64> {
    let age_ms =
        |p: &Pod| created(p).map_or(i64::MAX, |c| now.duration_since(c).as_millis() as i64);
    let Some(youngest) = pods
        .iter()
        .filter(|p| pod::is_ready(p))
        .filter_map(|p| created(p))
        .max()
    else {
        return Vec::new();
    };
    let youngest_ms = now.duration_since(youngest).as_millis() as i64;
    if youngest_ms == 0 {
        return Vec::new();
    }
    chosen
        .iter()
        .filter(|p| pod::is_ready(p))
        .map(|p| (age_ms(p) / youngest_ms) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    use super::*;
    use crate::test_util::{label_map, make_pod, pod_names, strings, t};

    fn replica_set(replicas: i32, template_labels: &[(&str, &str)]) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some("rs".into()),
                namespace: Some("default".into()),
                uid: Some("rs-uid".into()),
                generation: Some(3),
                ..ObjectMeta::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(replicas),
                selector: LabelSelector {
                    match_labels: Some(label_map(&[("foo", "bar")])),
                    match_expressions: None,
                },
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(label_map(template_labels)),
                        ..ObjectMeta::default()
                    }),
                    spec: None,
                }),
                min_ready_seconds: None,
            },
            status: None,
        }
    }

    /// `manageReplicas`' diff and burst cap.
    #[test]
    fn replica_change_is_capped_by_the_burst() {
        struct Case {
            name: &'static str,
            active: usize,
            replicas: i32,
            want: ReplicaChange,
        }
        for case in [
            Case {
                name: "too few",
                active: 2,
                replicas: 5,
                want: ReplicaChange::Create(3),
            },
            Case {
                name: "too many",
                active: 5,
                replicas: 2,
                want: ReplicaChange::Delete(3),
            },
            Case {
                name: "right",
                active: 5,
                replicas: 5,
                want: ReplicaChange::None,
            },
            Case {
                name: "10000 to create: 500 this sync",
                active: 0,
                replicas: 10_000,
                want: ReplicaChange::Create(500),
            },
            Case {
                name: "10000 to delete: 500 this sync",
                active: 10_000,
                replicas: 0,
                want: ReplicaChange::Delete(500),
            },
        ] {
            assert_eq!(
                replica_change(case.active, &replica_set(case.replicas, &[])),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestSortingActivePods` (controller_utils_test.go): every
    /// rule of the order, whatever the input order.
    #[test]
    fn active_pods_sort_as_upstream() {
        let now = 10_000_000;
        let then = now - 30 * 86_400;
        let pods = [
            make_pod()
                .namespace("default")
                .name("unscheduled")
                .phase("Pending")
                .obj(),
            make_pod()
                .namespace("default")
                .name("scheduledButPending")
                .node("bar")
                .phase("Pending")
                .obj(),
            make_pod()
                .namespace("default")
                .name("unknownPhase")
                .node("foo")
                .phase("Unknown")
                .obj(),
            make_pod()
                .namespace("default")
                .name("runningButNotReady")
                .node("foo")
                .phase("Running")
                .obj(),
            make_pod()
                .namespace("default")
                .name("runningNoLastTransitionTime")
                .node("foo")
                .ready()
                .container_restarts(&[3, 0])
                .obj(),
            make_pod()
                .namespace("default")
                .name("runningWithLastTransitionTime")
                .node("foo")
                .ready_since(t(now))
                .container_restarts(&[3, 0])
                .obj(),
            make_pod()
                .namespace("default")
                .name("runningLongerTime")
                .node("foo")
                .ready_since(t(then))
                .container_restarts(&[3, 0])
                .obj(),
            make_pod()
                .namespace("default")
                .name("lowerContainerRestartCount")
                .node("foo")
                .ready_since(t(then))
                .container_restarts(&[2, 1])
                .created_at(t(now))
                .obj(),
            make_pod()
                .namespace("default")
                .name("oldest")
                .node("foo")
                .ready_since(t(then))
                .container_restarts(&[2, 1])
                .created_at(t(then))
                .obj(),
        ];
        let want = pod_names(&pods.iter().collect::<Vec<_>>());
        let less = |a: &&Pod, b: &&Pod| delete_before(a, 0, b, 0, None);
        for shuffle in 0..pods.len() {
            let mut input: Vec<&Pod> = pods.iter().collect();
            input.rotate_left(shuffle);
            if shuffle % 2 == 1 {
                input.reverse();
            }
            assert_eq!(
                pod_names(&sort_by_less(input, &less)),
                want,
                "input rotated by {shuffle}"
            );
        }
    }

    /// Upstream `TestSortingActivePodsWithRanks`: equal pairs, and ordered
    /// pairs with their ranks (the row that turns `PodDeletionCost` off is
    /// not ported: berth has no such switch).
    #[test]
    fn active_pods_with_ranks_as_upstream() {
        let now = 10_000_000_i64;
        let month = now - 30 * 86_400;
        let hours = |h: i64| now - h * 3600;
        let unscheduled = make_pod()
            .namespace("default")
            .name("unscheduled")
            .phase("Pending")
            .obj();
        let pending = make_pod()
            .namespace("default")
            .name("pending")
            .node("node")
            .phase("Pending")
            .obj();
        let unknown = make_pod()
            .namespace("default")
            .name("unknown-phase")
            .node("node")
            .phase("Unknown")
            .obj();
        let not_ready = make_pod()
            .namespace("default")
            .name("not-ready")
            .node("node")
            .phase("Running")
            .obj();
        let ready_no_time = make_pod()
            .namespace("default")
            .name("ready-no-last-transition-time")
            .node("node")
            .ready()
            .container_restarts(&[0])
            .obj();
        let ready_now = make_pod()
            .namespace("default")
            .name("ready-now")
            .node("node")
            .ready_since(t(now))
            .container_restarts(&[0])
            .created_at(t(now))
            .obj();
        let ready_then = make_pod()
            .namespace("default")
            .name("ready-then")
            .node("node")
            .ready_since(t(month))
            .container_restarts(&[0])
            .created_at(t(month))
            .obj();
        let high_restarts = make_pod()
            .namespace("default")
            .name("ready-high-restarts")
            .node("node")
            .ready_since(t(now))
            .container_restarts(&[9001])
            .created_at(t(now))
            .obj();
        let created_then = make_pod()
            .namespace("default")
            .name("ready-now-created-then")
            .node("node")
            .ready_since(t(now))
            .container_restarts(&[0])
            .created_at(t(month))
            .obj();
        let low_cost = make_pod()
            .namespace("default")
            .name("low-deletion-cost")
            .node("node")
            .ready_since(t(now))
            .container_restarts(&[0])
            .created_at(t(month))
            .annotation(POD_DELETION_COST_ANNOTATION, "10")
            .obj();
        let high_cost = make_pod()
            .namespace("default")
            .name("high-deletion-cost")
            .node("node")
            .ready_since(t(now))
            .container_restarts(&[0])
            .created_at(t(month))
            .annotation(POD_DELETION_COST_ANNOTATION, "100")
            .obj();
        let unscheduled_5h = make_pod()
            .namespace("default")
            .name("unscheduled-5-hours")
            .phase("Pending")
            .created_at(t(hours(5)))
            .obj();
        let unscheduled_8h = make_pod()
            .namespace("default")
            .name("unscheduled-10-hours")
            .phase("Pending")
            .created_at(t(hours(8)))
            .obj();
        let ready_2h = make_pod()
            .namespace("default")
            .name("ready-2-hours")
            .ready_since(t(hours(2)))
            .container_restarts(&[0])
            .created_at(t(month))
            .obj();
        let ready_5h = make_pod()
            .namespace("default")
            .name("ready-5-hours")
            .ready_since(t(hours(5)))
            .container_restarts(&[0])
            .created_at(t(month))
            .obj();
        let ready_8h = make_pod()
            .namespace("default")
            .name("ready-10-hours")
            .ready_since(t(hours(8)))
            .container_restarts(&[0])
            .created_at(t(month))
            .obj();
        let at = Some(t(now));
        for (a, b) in [
            (&unscheduled, &unscheduled),
            (&pending, &pending),
            (&unknown, &unknown),
            (&not_ready, &not_ready),
            (&created_then, &created_then),
            (&ready_now, &ready_now),
            (&ready_then, &ready_then),
            (&high_restarts, &high_restarts),
            (&unscheduled_5h, &unscheduled_8h),
            (&ready_5h, &ready_8h),
        ] {
            assert!(
                !delete_before(a, 1, b, 1, at) && !delete_before(b, 1, a, 1, at),
                "{:?} and {:?} should be equivalent",
                a.metadata.name,
                b.metadata.name
            );
        }
        struct Case<'a> {
            lesser: (&'a Pod, usize),
            greater: (&'a Pod, usize),
        }
        for case in [
            Case {
                lesser: (&unscheduled, 1),
                greater: (&pending, 2),
            },
            Case {
                lesser: (&unscheduled, 2),
                greater: (&pending, 1),
            },
            Case {
                lesser: (&pending, 1),
                greater: (&unknown, 2),
            },
            Case {
                lesser: (&unknown, 1),
                greater: (&not_ready, 2),
            },
            Case {
                lesser: (&not_ready, 1),
                greater: (&ready_no_time, 1),
            },
            Case {
                lesser: (&ready_no_time, 1),
                greater: (&ready_now, 1),
            },
            Case {
                lesser: (&ready_now, 2),
                greater: (&ready_no_time, 1),
            },
            Case {
                lesser: (&ready_now, 1),
                greater: (&ready_then, 1),
            },
            Case {
                lesser: (&ready_now, 2),
                greater: (&ready_then, 1),
            },
            Case {
                lesser: (&high_restarts, 1),
                greater: (&ready_now, 1),
            },
            Case {
                lesser: (&ready_now, 2),
                greater: (&high_restarts, 1),
            },
            Case {
                lesser: (&ready_now, 1),
                greater: (&created_then, 1),
            },
            Case {
                lesser: (&created_then, 2),
                greater: (&ready_now, 1),
            },
            Case {
                lesser: (&low_cost, 2),
                greater: (&high_cost, 1),
            },
            Case {
                lesser: (&ready_2h, 1),
                greater: (&ready_5h, 1),
            },
        ] {
            let ((a, rank_a), (b, rank_b)) = (case.lesser, case.greater);
            assert!(
                delete_before(a, rank_a, b, rank_b, at),
                "{:?}/{rank_a} before {:?}/{rank_b}",
                a.metadata.name,
                b.metadata.name
            );
            assert!(
                !delete_before(b, rank_b, a, rank_a, at),
                "{:?}/{rank_b} not before {:?}/{rank_a}",
                b.metadata.name,
                a.metadata.name
            );
        }
    }

    /// Upstream `TestGetPodsToDelete` (replicaset).
    #[test]
    fn pods_to_delete_as_upstream() {
        let unscheduled_pending = make_pod()
            .namespace("default")
            .name("unscheduled-pending-pod")
            .phase("Pending")
            .obj();
        let scheduled_pending = make_pod()
            .namespace("default")
            .name("scheduled-pending-pod")
            .node("fake-node")
            .phase("Pending")
            .obj();
        let not_ready = make_pod()
            .namespace("default")
            .name("scheduled-running-not-ready-pod")
            .node("fake-node")
            .not_ready()
            .obj();
        let ready_1 = make_pod()
            .namespace("default")
            .name("scheduled-running-ready-pod-on-node-1")
            .node("fake-node-1")
            .ready()
            .obj();
        let ready_2 = make_pod()
            .namespace("default")
            .name("scheduled-running-ready-pod-on-node-2")
            .node("fake-node-2")
            .ready()
            .obj();
        struct Case<'a> {
            name: &'static str,
            pods: Vec<&'a Pod>,
            /// Defaults to `pods`.
            related: Option<Vec<&'a Pod>>,
            diff: usize,
            want: Vec<&'a Pod>,
        }
        let mixed = || {
            vec![
                &ready_1,
                &ready_1,
                &ready_2,
                &not_ready,
                &scheduled_pending,
                &unscheduled_pending,
            ]
        };
        let cases = [
            Case {
                name: "len(pods) = 0 (i.e., diff = 0 too)",
                pods: vec![],
                related: None,
                diff: 0,
                want: vec![],
            },
            Case {
                name: "diff = len(pods)",
                pods: vec![&not_ready, &ready_1],
                related: None,
                diff: 2,
                want: vec![&not_ready, &ready_1],
            },
            Case {
                name: "diff < len(pods)",
                pods: vec![&ready_1, &not_ready],
                related: None,
                diff: 1,
                want: vec![&not_ready],
            },
            Case {
                name: "various pod phases and conditions, diff = len(pods)",
                pods: mixed(),
                related: None,
                diff: 6,
                want: mixed(),
            },
            Case {
                name: "various pod phases and conditions, diff = len(pods), relatedPods empty",
                pods: mixed(),
                related: Some(vec![]),
                diff: 6,
                want: mixed(),
            },
            Case {
                name: "scheduled vs unscheduled, diff < len(pods)",
                pods: vec![&scheduled_pending, &unscheduled_pending],
                related: None,
                diff: 1,
                want: vec![&unscheduled_pending],
            },
            Case {
                name: "ready vs not-ready, diff < len(pods)",
                pods: vec![&ready_1, &not_ready, &not_ready],
                related: None,
                diff: 2,
                want: vec![&not_ready, &not_ready],
            },
            Case {
                name: "ready and colocated with another ready pod vs not colocated, diff < len(pods)",
                pods: vec![&ready_1, &ready_2],
                related: Some(vec![&ready_1, &ready_2, &ready_2]),
                diff: 1,
                want: vec![&ready_2],
            },
            Case {
                name: "pending vs running, diff < len(pods)",
                pods: vec![&scheduled_pending, &not_ready],
                related: None,
                diff: 1,
                want: vec![&scheduled_pending],
            },
            Case {
                name: "various pod phases and conditions, diff < len(pods)",
                pods: vec![
                    &ready_1,
                    &ready_2,
                    &not_ready,
                    &scheduled_pending,
                    &unscheduled_pending,
                ],
                related: None,
                diff: 3,
                want: vec![&unscheduled_pending, &scheduled_pending, &not_ready],
            },
        ];
        for case in cases {
            let related = case.related.unwrap_or_else(|| case.pods.clone());
            let got = pods_to_delete(&case.pods, &related, case.diff, t(0));
            assert_eq!(pod_names(&got), pod_names(&case.want), "{}", case.name);
        }
    }

    #[test]
    fn deletion_cost_rejects_what_upstream_rejects() {
        struct Case {
            value: &'static str,
            want: i32,
        }
        for case in [
            Case {
                value: "10",
                want: 10,
            },
            Case {
                value: "-10",
                want: -10,
            },
            Case {
                value: "0",
                want: 0,
            },
            Case {
                value: "+10",
                want: 0,
            },
            Case {
                value: "010",
                want: 0,
            },
            Case { value: "", want: 0 },
            Case {
                value: "2147483648",
                want: 0,
            },
            Case {
                value: "ten",
                want: 0,
            },
        ] {
            let p = make_pod()
                .namespace("default")
                .name("p")
                .annotation(POD_DELETION_COST_ANNOTATION, case.value)
                .obj();
            assert_eq!(deletion_cost(&p), case.want, "{:?}", case.value);
        }
    }

    /// Upstream `TestCalculateStatus` (replica_set_utils_test.go): pods
    /// carry the selector's labels; a template with more labels makes
    /// them not fully labeled.
    #[test]
    fn status_counts_as_upstream() {
        let fully = &[("foo", "bar")][..];
        let more = &[("foo", "bar"), ("baz", "quux")][..];
        let running = |n: &str| {
            make_pod()
                .namespace("default")
                .name(n)
                .label("foo", "bar")
                .ready()
                .obj()
        };
        struct Case {
            name: &'static str,
            template_labels: &'static [(&'static str, &'static str)],
            min_ready_seconds: Option<i32>,
            pods: Vec<Pod>,
            want: (i32, i32, i32, i32),
        }
        for case in [
            Case {
                name: "1 fully labelled pod",
                template_labels: fully,
                min_ready_seconds: None,
                pods: vec![running("pod1")],
                want: (1, 1, 1, 1),
            },
            Case {
                name: "1 not fully labelled pod",
                template_labels: more,
                min_ready_seconds: None,
                pods: vec![running("pod1")],
                want: (1, 0, 1, 1),
            },
            Case {
                name: "2 fully labelled pods",
                template_labels: fully,
                min_ready_seconds: None,
                pods: vec![running("pod1"), running("pod2")],
                want: (2, 2, 2, 2),
            },
            Case {
                name: "2 not fully labelled pods",
                template_labels: more,
                min_ready_seconds: None,
                pods: vec![running("pod1"), running("pod2")],
                want: (2, 0, 2, 2),
            },
            Case {
                name: "1 fully labelled pod and 1 not fully labelled pod",
                template_labels: more,
                min_ready_seconds: None,
                pods: vec![
                    running("pod1"),
                    make_pod()
                        .namespace("default")
                        .name("pod2")
                        .label("foo", "bar")
                        .label("baz", "quux")
                        .ready()
                        .obj(),
                ],
                want: (2, 1, 2, 2),
            },
            Case {
                name: "1 non-ready pod",
                template_labels: fully,
                min_ready_seconds: None,
                pods: vec![
                    make_pod()
                        .namespace("default")
                        .name("pod1")
                        .label("foo", "bar")
                        .phase("Pending")
                        .obj(),
                ],
                want: (1, 1, 0, 0),
            },
            Case {
                name: "1 ready but non-available pod",
                template_labels: fully,
                min_ready_seconds: Some(3600),
                pods: vec![
                    make_pod()
                        .namespace("default")
                        .name("pod1")
                        .label("foo", "bar")
                        .ready_since(t(0))
                        .obj(),
                ],
                want: (1, 1, 1, 0),
            },
        ] {
            let mut rs = replica_set(1, case.template_labels);
            rs.spec.min_ready_seconds = case.min_ready_seconds;
            let pods: Vec<&Pod> = case.pods.iter().collect();
            let got = status(&rs, &pods, None, t(0));
            assert_eq!(
                (
                    got.replicas,
                    got.fully_labeled_replicas.unwrap_or(0),
                    got.ready_replicas.unwrap_or(0),
                    got.available_replicas.unwrap_or(0)
                ),
                case.want,
                "{}",
                case.name
            );
            assert_eq!(got.observed_generation, Some(3));
        }
    }

    /// `updateReplicaSetStatus` writes only what changed, or a generation
    /// not yet observed.
    #[test]
    fn status_is_written_only_when_it_changed() {
        let observed = |rs: &mut ReplicaSet, generation: i64| {
            rs.metadata.generation = Some(generation);
            rs.status = Some(ReplicaSetStatus {
                replicas: 2,
                ready_replicas: Some(2),
                available_replicas: Some(2),
                fully_labeled_replicas: Some(2),
                observed_generation: Some(3),
                ..ReplicaSetStatus::default()
            });
        };
        struct Case {
            name: &'static str,
            generation: i64,
            change: fn(&mut ReplicaSetStatus),
            want: bool,
        }
        for case in [
            Case {
                name: "the same counts at the observed generation",
                generation: 3,
                change: |_| {},
                want: false,
            },
            Case {
                name: "a new generation",
                generation: 4,
                change: |_| {},
                want: true,
            },
            Case {
                name: "one more ready",
                generation: 3,
                change: |s| s.ready_replicas = Some(3),
                want: true,
            },
            Case {
                name: "a condition",
                generation: 3,
                change: |s| {
                    s.conditions = Some(vec![ReplicaSetCondition {
                        type_: Some(CONDITION_REPLICA_FAILURE.into()),
                        ..ReplicaSetCondition::default()
                    }])
                },
                want: true,
            },
        ] {
            let mut rs = replica_set(2, &[]);
            observed(&mut rs, case.generation);
            let mut new = rs.status.clone().unwrap_or_default();
            (case.change)(&mut new);
            assert_eq!(status_needs_update(&rs, &new), case.want, "{}", case.name);
        }
    }

    /// `reportSortingDeletionAgeRatioMetric`: ready chosen pods only,
    /// against the youngest ready pod, integer-divided.
    #[test]
    fn deletion_age_ratio_as_upstream() {
        let now = t(100);
        let young = make_pod()
            .namespace("default")
            .name("young")
            .created_at(t(90))
            .ready_since(t(91))
            .obj();
        let old = make_pod()
            .namespace("default")
            .name("old")
            .created_at(t(60))
            .ready_since(t(61))
            .obj();
        let older = make_pod()
            .namespace("default")
            .name("older")
            .created_at(t(0))
            .ready_since(t(1))
            .obj();
        let unready = make_pod()
            .namespace("default")
            .name("unready")
            .created_at(t(95))
            .not_ready()
            .obj();
        let pods = [&young, &old, &older, &unready];
        assert_eq!(
            deletion_age_ratios(&pods, &[&young, &old, &older, &unready], now),
            vec![1.0, 4.0, 10.0]
        );
        assert_eq!(
            deletion_age_ratios(&[&unready], &[&unready], now),
            Vec::<f64>::new()
        );
        let brand_new = make_pod()
            .namespace("default")
            .name("new")
            .created_at(t(100))
            .ready_since(t(100))
            .obj();
        assert_eq!(
            deletion_age_ratios(&[&brand_new], &[&brand_new], now),
            Vec::<f64>::new(),
            "no division by a zero age"
        );
    }

    /// Upstream `TestCalculateStatusConditions`.
    #[test]
    fn replica_failure_condition_as_upstream() {
        let existing = ReplicaSetCondition {
            type_: Some(CONDITION_REPLICA_FAILURE.into()),
            status: Some("True".into()),
            reason: Some("OtherFailure".into()),
            message: None,
            last_transition_time: None,
        };
        let failure = ManageFailure {
            message: "fake manageReplicasErr".into(),
        };
        struct Case<'a> {
            name: &'static str,
            replicas: i32,
            pods: usize,
            existing: bool,
            failure: Option<&'a ManageFailure>,
            want_reason: Option<&'static str>,
        }
        for case in [
            Case {
                name: "manageReplicasErr != nil && failureCond == nil, diff < 0",
                replicas: 2,
                pods: 1,
                existing: false,
                failure: Some(&failure),
                want_reason: Some(REASON_FAILED_CREATE),
            },
            Case {
                name: "manageReplicasErr != nil && failureCond == nil, diff > 0",
                replicas: 1,
                pods: 2,
                existing: false,
                failure: Some(&failure),
                want_reason: Some(REASON_FAILED_DELETE),
            },
            Case {
                name: "manageReplicasErr == nil && failureCond != nil",
                replicas: 1,
                pods: 1,
                existing: true,
                failure: None,
                want_reason: None,
            },
            Case {
                name: "manageReplicasErr != nil && failureCond != nil",
                replicas: 1,
                pods: 2,
                existing: true,
                failure: Some(&failure),
                want_reason: Some("OtherFailure"),
            },
            Case {
                name: "manageReplicasErr == nil && failureCond == nil",
                replicas: 1,
                pods: 1,
                existing: false,
                failure: None,
                want_reason: None,
            },
        ] {
            let mut rs = replica_set(case.replicas, &[("foo", "bar")]);
            if case.existing {
                rs.status = Some(ReplicaSetStatus {
                    conditions: Some(vec![existing.clone()]),
                    ..ReplicaSetStatus::default()
                });
            }
            let pods: Vec<Pod> = (0..case.pods)
                .map(|i| {
                    make_pod()
                        .namespace("default")
                        .name(&format!("pod{i}"))
                        .obj()
                })
                .collect();
            let refs: Vec<&Pod> = pods.iter().collect();
            let got = status(&rs, &refs, case.failure, t(0));
            let reasons: Vec<Option<String>> = got
                .conditions
                .iter()
                .flatten()
                .map(|c| c.reason.clone())
                .collect();
            assert_eq!(
                reasons,
                case.want_reason
                    .map(|r| Some(r.to_string()))
                    .into_iter()
                    .collect::<Vec<_>>(),
                "{}",
                case.name
            );
        }
    }

    /// The merge sort never panics and keeps ties in input order, whatever
    /// the comparator answers.
    #[test]
    fn sort_by_less_is_stable_and_total() {
        let items = strings(&["b1", "a1", "b2", "a2", "c1"]);
        let by_letter = |a: &String, b: &String| a.as_bytes()[0] < b.as_bytes()[0];
        assert_eq!(
            sort_by_less(items.clone(), &by_letter),
            strings(&["a1", "a2", "b1", "b2", "c1"])
        );
        let chaos = |_: &String, _: &String| true;
        assert_eq!(sort_by_less(items, &chaos).len(), 5);
    }
}
