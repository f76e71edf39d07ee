//! When a pod must leave its node: the one rule (SPEC §4) that the taint
//! eviction controller, the simulator's timeline and report and
//! `berth check` all call.
//!
//! For each NoExecute taint on the node, the pod may stay from the later of
//! the taint's `timeAdded` and the pod's binding to the node (its
//! `PodScheduled` transition, or its creation for a pod made with
//! `spec.nodeName`), for the `tolerationSeconds` of the first toleration
//! that tolerates the taint (upstream's `getMatchingTolerations`): no
//! toleration, or zero or negative seconds, is not at all; no seconds is
//! forever. The pod is due at the earliest of these. Upstream counts from
//! when its controller happened to see the taint instead, so its evictions
//! drift late and start over after a restart (kubernetes issue #101599).
//!
//! The out-of-service taint (`node.kubernetes.io/out-of-service`, the
//! non-graceful node shutdown) is a NoExecute taint like any other here, as
//! in upstream's taint eviction controller: a pod that tolerates it for
//! 60 s leaves 60 s after it. A pod that does not tolerate it (with either
//! effect, as the Nodes page says) is deleted with no grace period
//! ([`Due::force`]): upstream's pod GC force-deletes the pods left
//! terminating on such a node, and nothing else would ever confirm their
//! deletion.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::feature_gates::FeatureGates;
use crate::toleration::{EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, tolerates};

/// The non-graceful node shutdown taint.
pub use crate::well_known_taints::TAINT_NODE_OUT_OF_SERVICE as TAINT_OUT_OF_SERVICE;

/// How long a running pod may stay on its node, counted from when the
/// taints apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EvictionDelay {
    /// Evict at once: a taint is not tolerated, or a toleration used has
    /// zero or negative `tolerationSeconds`.
    Now,
    /// Evict this many seconds after the taints apply.
    After(i64),
    /// Every taint is tolerated forever (or there are none).
    Never,
}

impl EvictionDelay {
    /// What one toleration allows: its `tolerationSeconds` (none: forever;
    /// zero or negative: not at all).
    pub fn of_toleration(toleration: &Toleration) -> EvictionDelay {
        match toleration.toleration_seconds {
            None => EvictionDelay::Never,
            Some(seconds) if seconds <= 0 => EvictionDelay::Now,
            Some(seconds) => EvictionDelay::After(seconds),
        }
    }

    /// The instant this delay ends when counted from `start`; `None` for
    /// never.
    pub fn after(self, start: Timestamp) -> Option<Timestamp> {
        match self {
            EvictionDelay::Now => Some(start),
            EvictionDelay::After(seconds) => Some(
                start
                    .checked_add(SignedDuration::from_secs(seconds))
                    .unwrap_or(Timestamp::MAX),
            ),
            EvictionDelay::Never => None,
        }
    }
}

/// `getMinTolerationTime` over the tolerations used: the smallest positive
/// `tolerationSeconds`, `Now` if any is zero or negative, `Never` if none
/// sets it. Like upstream, an empty list means `Now`: it only arises when
/// there are taints and nothing tolerates them.
pub fn min_toleration_time(used: &[&Toleration]) -> EvictionDelay {
    if used.is_empty() {
        return EvictionDelay::Now;
    }
    let mut min = EvictionDelay::Never;
    for toleration in used {
        min = min.min(EvictionDelay::of_toleration(toleration));
    }
    min
}

/// When and how a pod is to be evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub at: Timestamp,
    /// Delete with no grace period: the pod does not tolerate the node's
    /// out-of-service taint.
    pub force: bool,
}

fn is_out_of_service(taint: &Taint) -> bool {
    taint.key == TAINT_OUT_OF_SERVICE
        && (taint.effect == EFFECT_NO_EXECUTE || taint.effect == EFFECT_NO_SCHEDULE)
}

/// Whether a taint can make a running pod leave: NoExecute ones, and the
/// out-of-service taint with either effect. A node's other taints never
/// change a due time.
pub fn is_eviction_taint(taint: &Taint) -> bool {
    taint.effect == EFFECT_NO_EXECUTE || is_out_of_service(taint)
}

/// What one taint does to a pod with `tolerations`, from when it applies;
/// `None` for a taint that evicts nobody (see [`is_eviction_taint`]) or an
/// out-of-service NoSchedule taint the pod tolerates. The bool is
/// [`Due::force`].
fn taint_delay<'a>(
    taint: &Taint,
    tolerations: &'a [Toleration],
    gates: FeatureGates,
) -> Option<(EvictionDelay, bool, Option<&'a Toleration>)> {
    if !is_eviction_taint(taint) {
        return None;
    }
    let first = tolerations.iter().find(|t| tolerates(t, taint, gates));
    let force = first.is_none() && is_out_of_service(taint);
    if taint.effect != EFFECT_NO_EXECUTE && !force {
        return None;
    }
    Some((min_toleration_time(first.as_slice()), force, first))
}

/// The pod's due time on a node with `node_taints` (any taints: the rule
/// picks the ones that matter); `None` when it may stay forever. `bound`
/// is when the pod was bound to the node ([`bound_at`]); `time_added`
/// gives a taint's start (its `timeAdded`; a caller that saw the taint
/// without one says since when).
pub fn due(
    node_taints: &[Taint],
    tolerations: &[Toleration],
    bound: Timestamp,
    time_added: impl Fn(&Taint) -> Timestamp,
    gates: FeatureGates,
) -> Option<Due> {
    due_with_cause(node_taints, tolerations, bound, time_added, gates).map(|cause| cause.due)
}

/// A pod's due time and what decided it: the taint whose eviction comes
/// first and what the pod's first toleration of it allows (what a warning
/// before a taint is written explains).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DueCause<'a> {
    pub due: Due,
    pub taint: &'a Taint,
    pub delay: EvictionDelay,
    /// The pod's first toleration of `taint` (upstream's
    /// `getMatchingTolerations`), whose seconds gave `delay`; `None` when
    /// nothing tolerates it.
    pub toleration: Option<&'a Toleration>,
}

/// [`due`], with the taint that decided it (the first of the earliest).
pub fn due_with_cause<'a>(
    node_taints: &'a [Taint],
    tolerations: &'a [Toleration],
    bound: Timestamp,
    time_added: impl Fn(&Taint) -> Timestamp,
    gates: FeatureGates,
) -> Option<DueCause<'a>> {
    let mut earliest: Option<DueCause<'a>> = None;
    for taint in node_taints {
        let Some((delay, force, toleration)) = taint_delay(taint, tolerations, gates) else {
            continue;
        };
        let Some(at) = delay.after(time_added(taint).max(bound)) else {
            continue;
        };
        earliest = Some(match earliest {
            Some(e) if e.due.at <= at => DueCause {
                due: Due {
                    at: e.due.at,
                    force: e.due.force || force,
                },
                ..e
            },
            Some(e) => DueCause {
                due: Due {
                    at,
                    force: e.due.force || force,
                },
                taint,
                delay,
                toleration,
            },
            None => DueCause {
                due: Due { at, force },
                taint,
                delay,
                toleration,
            },
        });
    }
    earliest
}

/// Whether a due eviction is carried out on a pod: one already being
/// deleted is left to its grace period, unless the node is out of service
/// ([`Due::force`]).
pub fn applies(due: Due, terminating: bool) -> bool {
    !terminating || due.force
}

/// When each of a node's taints started: its `timeAdded`, or, for a taint
/// without one, when the caller first saw it. The API server stamps
/// `timeAdded` on NoExecute taints only, so the out-of-service NoSchedule
/// taint has none; the controller and the simulator's recorder both watch
/// the node and see it appear at the same instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaintStarts {
    first_seen: Vec<(Taint, Timestamp)>,
}

/// The same taint for [`TaintStarts`]: key, value and effect.
fn same_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect && a.value == b.value
}

impl TaintStarts {
    /// The node's taints as seen at `now`: a taint seen before keeps its
    /// first sighting, a new one starts now, a removed one is forgotten
    /// (so a re-added taint starts over).
    pub fn observe(&mut self, taints: &[Taint], now: Timestamp) {
        self.first_seen = taints
            .iter()
            .map(|taint| {
                let seen = self
                    .first_seen
                    .iter()
                    .find(|(s, _)| same_taint(s, taint))
                    .map_or(now, |(_, at)| *at);
                (taint.clone(), seen)
            })
            .collect();
    }

    /// When `taint` started: its `timeAdded`, else when it was first seen,
    /// else (never observed) the earliest instant, so that it counts from
    /// the pod's binding.
    pub fn start(&self, taint: &Taint) -> Timestamp {
        time_added(taint).unwrap_or_else(|| {
            self.first_seen
                .iter()
                .find(|(s, _)| same_taint(s, taint))
                .map_or(Timestamp::MIN, |(_, at)| *at)
        })
    }
}

/// [`due`] from the objects: the node's taints with their `timeAdded` (or
/// their sighting in `starts`), the pod's tolerations and binding ([`bound_at`];
/// a pod without one counts from the taints).
pub fn pod_due(pod: &Pod, node: &Node, starts: &TaintStarts, gates: FeatureGates) -> Option<Due> {
    pod_due_with_cause(pod, node, starts, gates).map(|cause| cause.due)
}

/// [`pod_due`], with the taint that decided it ([`due_with_cause`]).
pub fn pod_due_with_cause<'a>(
    pod: &'a Pod,
    node: &'a Node,
    starts: &TaintStarts,
    gates: FeatureGates,
) -> Option<DueCause<'a>> {
    let bound = bound_at(
        pod.status.as_ref().and_then(|s| s.conditions.as_deref()),
        pod.metadata.creation_timestamp.as_ref(),
    );
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    due_with_cause(
        taints,
        tolerations,
        bound.unwrap_or(Timestamp::MIN),
        |taint| starts.start(taint),
        gates,
    )
}

/// What the rule says of a pod bound to the node now, after every taint
/// was added: how long it may stay. `berth check` shows this.
pub fn eviction_delay(
    node_taints: &[Taint],
    tolerations: &[Toleration],
    gates: FeatureGates,
) -> EvictionDelay {
    node_taints
        .iter()
        .filter_map(|taint| taint_delay(taint, tolerations, gates))
        .map(|(delay, _, _)| delay)
        .min()
        .unwrap_or(EvictionDelay::Never)
}

/// A taint's `timeAdded`.
pub fn time_added(taint: &Taint) -> Option<Timestamp> {
    taint.time_added.as_ref().map(|t| t.0)
}

/// When a pod was bound to its node, from its conditions and creation: its
/// `PodScheduled=True` transition, or its creation for a pod created with
/// `spec.nodeName`.
pub fn bound_at(conditions: Option<&[PodCondition]>, created: Option<&Time>) -> Option<Timestamp> {
    conditions
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "True")
        })
        .and_then(|c| c.last_transition_time.as_ref())
        .or(created)
        .map(|t| t.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{t, taint, taint_n, tol, tol_n, tol_secs};
    use crate::toleration::{OP_EQUAL, OP_EXISTS};
    use k8s_openapi::api::core::v1::{NodeSpec, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const GATES: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: true,
        max_unavailable_stateful_set: true,
    };
    const NS: &str = EFFECT_NO_SCHEDULE;
    const NE: &str = EFFECT_NO_EXECUTE;

    fn due_of(taints: &[Taint], tolerations: &[Toleration], bound: i64) -> Option<Due> {
        let fallback = t(0);
        due(
            taints,
            tolerations,
            t(bound),
            |taint: &Taint| time_added(taint).unwrap_or(fallback),
            GATES,
        )
    }

    fn at(s: i64) -> Option<Due> {
        Some(Due {
            at: t(s),
            force: false,
        })
    }

    /// Upstream `TestGetMinTolerationTime` (tainteviction controller),
    /// with the rows of both tables berth had of it.
    #[test]
    fn min_toleration_time_as_upstream() {
        let one = tol_secs("", OP_EXISTS, "", NE, 1);
        let two = tol_secs("", OP_EXISTS, "", NE, 2);
        let ten = tol_secs("", OP_EXISTS, "", NE, 10);
        let zero = tol_secs("", OP_EXISTS, "", NE, 0);
        let negative = tol_secs("", OP_EXISTS, "", NE, -1);
        let forever = tol("", OP_EXISTS, "", NE);
        let cases: &[(&str, Vec<&Toleration>, EvictionDelay)] = &[
            ("no tolerations used means now", vec![], EvictionDelay::Now),
            ("one with seconds", vec![&one], EvictionDelay::After(1)),
            (
                "the smallest wins",
                vec![&ten, &one],
                EvictionDelay::After(1),
            ),
            (
                "the smallest wins in any order",
                vec![&one, &ten],
                EvictionDelay::After(1),
            ),
            (
                "unset seconds are ignored beside set ones",
                vec![&forever, &ten],
                EvictionDelay::After(10),
            ),
            (
                "only unset seconds means never",
                vec![&forever],
                EvictionDelay::Never,
            ),
            // The taint eviction controller's own table of the function.
            (
                "two with seconds",
                vec![&one, &two],
                EvictionDelay::After(1),
            ),
            (
                "set then unset",
                vec![&one, &forever],
                EvictionDelay::After(1),
            ),
            (
                "unset then set",
                vec![&forever, &one],
                EvictionDelay::After(1),
            ),
            ("zero means now", vec![&ten, &zero], EvictionDelay::Now),
            (
                "negative means now",
                vec![&negative, &forever],
                EvictionDelay::Now,
            ),
        ];
        for (name, used, want) in cases {
            assert_eq!(min_toleration_time(used), *want, "{name}");
        }
    }

    /// The first toleration that tolerates a taint is the one whose seconds
    /// count, as in upstream's `getMatchingTolerations`.
    #[test]
    fn eviction_delay_uses_first_matching_toleration_per_taint() {
        struct Case<'a> {
            name: &'a str,
            taints: Vec<Taint>,
            tolerations: Vec<Toleration>,
            want: EvictionDelay,
        }
        let cases = &[
            Case {
                name: "no taints: never",
                taints: vec![],
                tolerations: vec![],
                want: EvictionDelay::Never,
            },
            Case {
                name: "only NoSchedule taints: never",
                taints: vec![taint("a", "", NS)],
                tolerations: vec![],
                want: EvictionDelay::Never,
            },
            Case {
                name: "untolerated NoExecute: now",
                taints: vec![taint("a", "", NE)],
                tolerations: vec![],
                want: EvictionDelay::Now,
            },
            Case {
                name: "tolerated forever",
                taints: vec![taint("a", "", NE)],
                tolerations: vec![tol("a", OP_EXISTS, "", NE)],
                want: EvictionDelay::Never,
            },
            Case {
                name: "tolerated for 3600 s",
                taints: vec![taint("key1", "value1", NE)],
                tolerations: vec![tol_secs("key1", OP_EQUAL, "value1", NE, 3600)],
                want: EvictionDelay::After(3600),
            },
            Case {
                name: "first match wins over a later shorter one",
                taints: vec![taint("a", "", NE)],
                tolerations: vec![
                    tol("a", OP_EXISTS, "", NE),
                    tol_secs("a", OP_EXISTS, "", NE, 5),
                ],
                want: EvictionDelay::Never,
            },
            Case {
                name: "minimum over taints",
                taints: vec![taint("a", "", NE), taint("b", "", NE)],
                tolerations: vec![
                    tol_secs("a", OP_EXISTS, "", NE, 60),
                    tol_secs("b", OP_EXISTS, "", NE, 30),
                ],
                want: EvictionDelay::After(30),
            },
            Case {
                name: "one untolerated among tolerated: now",
                taints: vec![taint("a", "", NE), taint("b", "", NE)],
                tolerations: vec![tol_secs("a", OP_EXISTS, "", NE, 60)],
                want: EvictionDelay::Now,
            },
            Case {
                name: "seed: the pod with two tolerations keeps running on node1",
                taints: vec![
                    taint("key1", "value1", NS),
                    taint("key1", "value1", NE),
                    taint("key2", "value2", NS),
                ],
                tolerations: vec![
                    tol("key1", OP_EQUAL, "value1", NS),
                    tol("key1", OP_EQUAL, "value1", NE),
                ],
                want: EvictionDelay::Never,
            },
        ];
        for Case {
            name,
            taints,
            tolerations,
            want,
        } in cases
        {
            assert_eq!(eviction_delay(taints, tolerations, GATES), *want, "{name}");
        }
    }

    /// Upstream `TestCreatePod` / `TestUpdateNode` /
    /// `TestUpdateNodeWithMultiplePods` cases as due times: `None` is never
    /// evicted, `at(0)` is at once (taints added at 0, pod bound at -10).
    #[test]
    fn due_times_of_upstream_cases() {
        struct Case {
            name: &'static str,
            taints: Vec<Taint>,
            tolerations: Vec<Toleration>,
            want: Option<Due>,
        }
        let cases = vec![
            Case {
                name: "untainted node",
                taints: vec![],
                tolerations: vec![],
                want: None,
            },
            Case {
                name: "tainted node, no toleration",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![],
                want: at(0),
            },
            Case {
                name: "finite toleration",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![tol_n(1, 100)],
                want: at(100),
            },
            Case {
                name: "infinite toleration",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![tol_n(1, -1)],
                want: None,
            },
            Case {
                name: "infinite toleration of another taint",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![tol_n(2, -1)],
                want: at(0),
            },
            Case {
                name: "only one of two taints tolerated",
                taints: vec![taint_n(1, 0), taint_n(2, 0)],
                tolerations: vec![tol_n(1, 100)],
                want: at(0),
            },
            Case {
                name: "multiple tolerations: the first one to run out",
                taints: vec![taint_n(1, 0), taint_n(2, 0)],
                tolerations: vec![tol_n(1, 1), tol_n(2, 100)],
                want: at(1),
            },
            Case {
                name: "zero seconds is at once",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![tol_n(1, 0)],
                want: at(0),
            },
            Case {
                name: "negative seconds is at once",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![tol_secs("testTaint1", OP_EXISTS, "", NE, -5)],
                want: at(0),
            },
            Case {
                name: "the first tolerating toleration counts, not the longest",
                taints: vec![taint_n(1, 0)],
                tolerations: vec![tol_secs("testTaint1", OP_EXISTS, "", NE, 10), tol_n(1, -1)],
                want: at(10),
            },
        ];
        for Case {
            name,
            taints,
            tolerations,
            want,
        } in cases
        {
            assert_eq!(due_of(&taints, &tolerations, -10), want, "{name}");
        }
    }

    /// Upstream `TestUpdateNodeWithMultipleTaints`: forever-tolerated taint,
    /// then a 60 s one added, then removed again.
    #[test]
    fn multiple_taints_forever_then_temporary_then_forever() {
        let tolerations = vec![
            tol("testTaint1", OP_EXISTS, "", NE),
            tol_secs("testTaint2", OP_EXISTS, "", NE, 60),
        ];
        assert_eq!(due_of(&[], &tolerations, 0), None);
        assert_eq!(due_of(&[taint_n(1, 5)], &tolerations, 0), None);
        assert_eq!(
            due_of(&[taint_n(1, 5), taint_n(2, 20)], &tolerations, 0),
            at(80)
        );
        assert_eq!(due_of(&[taint_n(1, 5)], &tolerations, 0), None);
    }

    /// The promise of issue #101599: each taint counts from its own
    /// `timeAdded`, or from the binding if the pod came later.
    #[test]
    fn due_counts_from_the_later_of_time_added_and_binding() {
        let tolerations = vec![tol_n(1, 300), tol_n(2, 100)];
        assert_eq!(due_of(&[taint_n(1, 0)], &tolerations, -50), at(300));
        assert_eq!(due_of(&[taint_n(1, 0)], &tolerations, 40), at(340));
        // A later taint with a shorter toleration can fall due first.
        assert_eq!(
            due_of(&[taint_n(1, 0), taint_n(2, 150)], &tolerations, -50),
            at(250)
        );
        assert_eq!(
            due_of(&[taint_n(1, 0), taint_n(2, 250)], &tolerations, -50),
            at(300)
        );
    }

    #[test]
    fn out_of_service_forces_deletion_unless_tolerated() {
        let oos = |effect: &str| Taint {
            key: TAINT_OUT_OF_SERVICE.into(),
            value: Some("nodeshutdown".into()),
            effect: effect.into(),
            time_added: None,
        };
        for effect in [NE, NS] {
            let taints = [oos(effect)];
            assert!(is_eviction_taint(&taints[0]));
            assert_eq!(
                due_of(&taints, &[tol_n(1, -1)], 10),
                Some(Due {
                    at: t(10),
                    force: true
                }),
                "{effect}"
            );
            let tolerate = tol(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", "");
            assert_eq!(due_of(&taints, &[tolerate], 10), None, "{effect}");
        }
        let other_no_schedule = Taint {
            key: "x".into(),
            effect: NS.into(),
            ..Taint::default()
        };
        assert!(!is_eviction_taint(&other_no_schedule));
    }

    /// The out-of-service taint is a NoExecute taint like any other for a
    /// pod that tolerates it: its toleration's seconds count from the
    /// taint, and they can fall due before another taint's (issue 17: the
    /// controller used to skip it and wait for the `unreachable` 300 s).
    #[test]
    fn a_tolerated_out_of_service_taint_counts_like_any_no_execute_taint() {
        struct Case {
            name: &'static str,
            tolerations: Vec<Toleration>,
            want: Option<Due>,
        }
        let unreachable = Taint {
            time_added: Some(Time(t(65))),
            ..taint("node.kubernetes.io/unreachable", "", NE)
        };
        let out_of_service = Taint {
            time_added: Some(Time(t(120))),
            ..taint(TAINT_OUT_OF_SERVICE, "nodeshutdown", NE)
        };
        let default_unreachable =
            tol_secs("node.kubernetes.io/unreachable", OP_EXISTS, "", NE, 300);
        let cases = [
            Case {
                name: "tolerated for 60 s: 60 s after the taint",
                tolerations: vec![
                    default_unreachable.clone(),
                    tol_secs(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", NE, 60),
                ],
                want: at(180),
            },
            Case {
                name: "tolerated forever: the unreachable toleration decides",
                tolerations: vec![
                    default_unreachable.clone(),
                    tol(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", NE),
                ],
                want: at(365),
            },
            Case {
                name: "tolerated longer than unreachable: unreachable first",
                tolerations: vec![
                    default_unreachable.clone(),
                    tol_secs(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", NE, 600),
                ],
                want: at(365),
            },
            Case {
                name: "not tolerated: forced at once",
                tolerations: vec![default_unreachable],
                want: Some(Due {
                    at: t(120),
                    force: true,
                }),
            },
        ];
        for case in cases {
            let taints = [unreachable.clone(), out_of_service.clone()];
            assert_eq!(
                due_of(&taints, &case.tolerations, 0),
                case.want,
                "{}",
                case.name
            );
            let node = Node {
                spec: Some(NodeSpec {
                    taints: Some(taints.to_vec()),
                    ..NodeSpec::default()
                }),
                ..Node::default()
            };
            let pod = Pod {
                metadata: ObjectMeta {
                    creation_timestamp: Some(Time(t(0))),
                    ..ObjectMeta::default()
                },
                spec: Some(PodSpec {
                    tolerations: Some(case.tolerations.clone()),
                    ..PodSpec::default()
                }),
                ..Pod::default()
            };
            let from_objects = pod_due(&pod, &node, &TaintStarts::default(), GATES);
            assert_eq!(from_objects, case.want, "{}: from the objects", case.name);
        }
    }

    /// `berth check`'s view is the same rule with every taint applying now.
    #[test]
    fn eviction_delay_is_the_due_time_counted_from_now() {
        let oos_no_schedule = taint(TAINT_OUT_OF_SERVICE, "nodeshutdown", NS);
        struct Case<'a> {
            name: &'a str,
            taints: Vec<Taint>,
            tolerations: Vec<Toleration>,
            want: EvictionDelay,
        }
        let cases = &[
            Case {
                name: "out-of-service NoSchedule not tolerated: now",
                taints: vec![oos_no_schedule.clone()],
                tolerations: vec![],
                want: EvictionDelay::Now,
            },
            Case {
                name: "out-of-service NoSchedule tolerated: never",
                taints: vec![oos_no_schedule],
                tolerations: vec![tol(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", "")],
                want: EvictionDelay::Never,
            },
            Case {
                name: "out-of-service NoExecute tolerated for 60 s",
                taints: vec![taint(TAINT_OUT_OF_SERVICE, "nodeshutdown", NE)],
                tolerations: vec![tol_secs(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", NE, 60)],
                want: EvictionDelay::After(60),
            },
        ];
        for Case {
            name,
            taints,
            tolerations,
            want,
        } in cases
        {
            assert_eq!(eviction_delay(taints, tolerations, GATES), *want, "{name}");
            let now = t(0);
            let due = due(taints, tolerations, now, |_| now, GATES).map(|d| d.at);
            assert_eq!(due, want.after(now), "{name}: the same as the due time");
        }
    }

    /// A taint without `timeAdded` starts when first seen and keeps that
    /// start while it stays; removed and added again, it starts over.
    #[test]
    fn a_taint_without_time_added_starts_when_first_seen() {
        let oos = taint(TAINT_OUT_OF_SERVICE, "nodeshutdown", NS);
        let stamped = taint_n(1, 3);
        let mut starts = TaintStarts::default();
        assert_eq!(starts.start(&oos), Timestamp::MIN, "never seen");
        starts.observe(std::slice::from_ref(&oos), t(10));
        starts.observe(&[oos.clone(), stamped.clone()], t(20));
        assert_eq!(starts.start(&oos), t(10), "kept");
        assert_eq!(starts.start(&stamped), t(3), "timeAdded wins");
        starts.observe(&[], t(30));
        starts.observe(std::slice::from_ref(&oos), t(40));
        assert_eq!(starts.start(&oos), t(40), "re-added");
    }

    #[test]
    fn binding_time_is_pod_scheduled_or_creation() {
        let created = Time(t(1));
        assert_eq!(bound_at(None, Some(&created)), Some(t(1)));
        let conditions = [PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            last_transition_time: Some(Time(t(7))),
            ..PodCondition::default()
        }];
        assert_eq!(bound_at(Some(&conditions), Some(&created)), Some(t(7)));
        let not_yet = [PodCondition {
            status: "False".into(),
            ..conditions[0].clone()
        }];
        assert_eq!(bound_at(Some(&not_yet), Some(&created)), Some(t(1)));
    }

    /// The timeline's reading of SPEC §4 from the objects (taints with
    /// `timeAdded`, the binding in the pod's conditions).
    #[test]
    fn eviction_due_follows_spec_section_4() {
        use serde_json::json;
        let t0: Timestamp = "2026-01-01T00:00:00Z"
            .parse()
            .unwrap_or(Timestamp::UNIX_EPOCH);
        let at = |s: i64| (t0 + SignedDuration::from_secs(s)).to_string();
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": "n1"}, "spec": {"taints": [
                {"key": "key1", "value": "value1", "effect": "NoExecute", "timeAdded": at(100)},
                {"key": "soft", "effect": "NoSchedule"},
            ]}}))
            .unwrap_or_default();
        let pod_with = |tolerations: serde_json::Value, bound: i64| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "default", "creationTimestamp": at(0)},
                "spec": {"containers": [], "tolerations": tolerations},
                "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": at(bound)}]},
            }))
            .unwrap_or_default()
        };
        let gates = FeatureGates::default();
        let secs = |s: i64| Some(t0 + SignedDuration::from_secs(s));
        struct Case<'a> {
            name: &'a str,
            tolerations: serde_json::Value,
            bound: i64,
            want: Option<Timestamp>,
        }
        let cases = [
            Case {
                name: "untolerated: at once",
                tolerations: json!([]),
                bound: 0,
                want: secs(100),
            },
            Case {
                name: "3600 s toleration",
                tolerations: json!([{"key": "key1", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3600}]),
                bound: 0,
                want: secs(3700),
            },
            Case {
                name: "bound after the taint: from the binding",
                tolerations: json!([{"key": "key1", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]),
                bound: 500,
                want: secs(560),
            },
            Case {
                name: "tolerated forever",
                tolerations: json!([{"key": "key1", "operator": "Exists"}]),
                bound: 0,
                want: None,
            },
        ];
        for Case {
            name,
            tolerations,
            bound,
            want,
        } in cases
        {
            assert_eq!(
                pod_due(
                    &pod_with(tolerations, bound),
                    &node,
                    &TaintStarts::default(),
                    gates
                )
                .map(|d| d.at),
                want,
                "{name}"
            );
        }
    }

    /// The cause names the taint whose eviction comes first and the pod's
    /// first toleration of it (what the report's eviction rows show), or
    /// none when nothing tolerates it.
    #[test]
    fn the_cause_names_the_deciding_taint_and_toleration() {
        let unreachable = taint("node.kubernetes.io/unreachable", "", NE);
        let key1 = taint("key1", "value1", NE);
        let for_300 = tol_secs("node.kubernetes.io/unreachable", OP_EXISTS, "", NE, 300);
        let for_60 = tol_secs("key1", OP_EQUAL, "value1", NE, 60);
        struct Case<'a> {
            name: &'a str,
            taints: Vec<Taint>,
            tolerations: Vec<Toleration>,
            want_taint: &'a str,
            want_toleration: Option<&'a Toleration>,
            want_at: i64,
        }
        let cases = [
            Case {
                name: "the sooner of two tolerated taints decides",
                taints: vec![unreachable.clone(), key1.clone()],
                tolerations: vec![for_300.clone(), for_60.clone()],
                want_taint: "key1",
                want_toleration: Some(&for_60),
                want_at: 60,
            },
            Case {
                name: "an untolerated taint decides with no toleration",
                taints: vec![unreachable.clone(), key1.clone()],
                tolerations: vec![for_300.clone()],
                want_taint: "key1",
                want_toleration: None,
                want_at: 0,
            },
            Case {
                name: "the default toleration of unreachable decides alone",
                taints: vec![unreachable.clone()],
                tolerations: vec![for_300.clone()],
                want_taint: "node.kubernetes.io/unreachable",
                want_toleration: Some(&for_300),
                want_at: 300,
            },
        ];
        for case in &cases {
            let cause = due_with_cause(
                &case.taints,
                &case.tolerations,
                t(0),
                |taint: &Taint| time_added(taint).unwrap_or(t(0)),
                GATES,
            )
            .unwrap_or_else(|| panic!("{}: no due time", case.name));
            assert_eq!(cause.taint.key, case.want_taint, "{}", case.name);
            assert_eq!(cause.toleration, case.want_toleration, "{}", case.name);
            assert_eq!(cause.due.at, t(case.want_at), "{}", case.name);
        }
    }
}
