//! When a pod must leave its node: a function of the current objects alone.
//!
//! For each NoExecute taint on the node, the pod may stay from the later of
//! the taint's `timeAdded` and the pod's binding to the node, for the
//! `tolerationSeconds` of the first toleration that tolerates the taint
//! (none: forever; zero or negative: not at all; no toleration: not at
//! all). The pod is due at the earliest of these. Upstream instead counts
//! from when its controller happened to see the taint, so its evictions
//! drift late and start over after a restart (kubernetes issue #101599).
//!
//! A node tainted `node.kubernetes.io/out-of-service` (NoExecute or
//! NoSchedule) has its pods that do not tolerate that taint force-deleted
//! at once.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Taint, Toleration};

use berth_core::FeatureGates;
use berth_core::toleration::{EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, tolerates};

use super::watched::WatchedPod;

/// The non-graceful node shutdown taint.
pub const TAINT_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// When and how a pod is to be evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub at: Timestamp,
    /// Force deletion (grace period 0): the out-of-service taint.
    pub force: bool,
}

/// The taints of a node that matter here: NoExecute ones, and the
/// out-of-service taint with either effect.
pub fn relevant_taints(taints: &[Taint]) -> Vec<Taint> {
    taints
        .iter()
        .filter(|t| t.effect == EFFECT_NO_EXECUTE || is_out_of_service(t))
        .cloned()
        .collect()
}

fn is_out_of_service(taint: &Taint) -> bool {
    taint.key == TAINT_OUT_OF_SERVICE
        && (taint.effect == EFFECT_NO_EXECUTE || taint.effect == EFFECT_NO_SCHEDULE)
}

/// When the pod was bound to its node: its `PodScheduled=True` transition,
/// or its creation for a pod created with `spec.nodeName`.
pub fn bound_at(pod: &WatchedPod) -> Option<Timestamp> {
    let scheduled = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "True")
        })
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    scheduled.or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The pod's due time on a node with `taints` (see [`relevant_taints`]);
/// `None` when it may stay forever. `time_added` gives a taint's start
/// (its `timeAdded`, or when the controller first saw it if unset).
pub fn due_time(
    taints: &[Taint],
    tolerations: &[Toleration],
    bound: Timestamp,
    time_added: impl Fn(&Taint) -> Timestamp,
    gates: FeatureGates,
) -> Option<Due> {
    let mut due: Option<Due> = None;
    for taint in taints {
        let start = time_added(taint).max(bound);
        let toleration = tolerations.iter().find(|t| tolerates(t, taint, gates));
        let this = if is_out_of_service(taint) {
            match toleration {
                Some(_) => continue,
                None => Due {
                    at: start,
                    force: true,
                },
            }
        } else {
            match toleration.map(|t| t.toleration_seconds) {
                Some(None) => continue,
                Some(Some(seconds)) if seconds > 0 => Due {
                    at: start
                        .checked_add(SignedDuration::from_secs(seconds))
                        .unwrap_or(Timestamp::MAX),
                    force: false,
                },
                _ => Due {
                    at: start,
                    force: false,
                },
            }
        };
        due = Some(match due {
            None => this,
            Some(d) => Due {
                at: d.at.min(this.at),
                force: d.force || this.force,
            },
        });
    }
    due
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taint_eviction::test_support::{t, taint_n, tol_n};
    use berth_core::test_util::{tol, tol_secs};
    use berth_core::toleration::{EvictionDelay, OP_EXISTS, min_toleration_time};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const GATES: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: true,
    };

    fn due(taints: &[Taint], tolerations: &[Toleration], bound: i64) -> Option<Due> {
        let fallback = t(0);
        due_time(
            taints,
            tolerations,
            t(bound),
            |taint: &Taint| taint.time_added.as_ref().map_or(fallback, |x| x.0),
            GATES,
        )
    }

    fn at(s: i64) -> Option<Due> {
        Some(Due {
            at: t(s),
            force: false,
        })
    }

    /// Upstream `TestCreatePod` / `TestUpdateNode` /
    /// `TestUpdateNodeWithMultiplePods` cases as due times: `None` is never
    /// evicted, `at(0)` is at once (taints added at 0, pod bound at -10).
    #[test]
    fn due_times_of_upstream_cases() {
        type Case = (&'static str, Vec<Taint>, Vec<Toleration>, Option<Due>);
        let cases: Vec<Case> = vec![
            ("untainted node", vec![], vec![], None),
            (
                "tainted node, no toleration",
                vec![taint_n(1, 0)],
                vec![],
                at(0),
            ),
            (
                "finite toleration",
                vec![taint_n(1, 0)],
                vec![tol_n(1, 100)],
                at(100),
            ),
            (
                "infinite toleration",
                vec![taint_n(1, 0)],
                vec![tol_n(1, -1)],
                None,
            ),
            (
                "infinite toleration of another taint",
                vec![taint_n(1, 0)],
                vec![tol_n(2, -1)],
                at(0),
            ),
            (
                "only one of two taints tolerated",
                vec![taint_n(1, 0), taint_n(2, 0)],
                vec![tol_n(1, 100)],
                at(0),
            ),
            (
                "multiple tolerations: the first one to run out",
                vec![taint_n(1, 0), taint_n(2, 0)],
                vec![tol_n(1, 1), tol_n(2, 100)],
                at(1),
            ),
            (
                "zero seconds is at once",
                vec![taint_n(1, 0)],
                vec![tol_n(1, 0)],
                at(0),
            ),
            (
                "negative seconds is at once",
                vec![taint_n(1, 0)],
                vec![tol_secs("testTaint1", OP_EXISTS, "", EFFECT_NO_EXECUTE, -5)],
                at(0),
            ),
            (
                "the first tolerating toleration counts, not the longest",
                vec![taint_n(1, 0)],
                vec![
                    tol_secs("testTaint1", OP_EXISTS, "", EFFECT_NO_EXECUTE, 10),
                    tol_n(1, -1),
                ],
                at(10),
            ),
        ];
        for (name, taints, tolerations, want) in cases {
            assert_eq!(due(&taints, &tolerations, -10), want, "{name}");
        }
    }

    /// Upstream `TestUpdateNodeWithMultipleTaints`: forever-tolerated taint,
    /// then a 60 s one added, then removed again.
    #[test]
    fn multiple_taints_forever_then_temporary_then_forever() {
        let tolerations = vec![
            tol("testTaint1", OP_EXISTS, "", EFFECT_NO_EXECUTE),
            tol_secs("testTaint2", OP_EXISTS, "", EFFECT_NO_EXECUTE, 60),
        ];
        assert_eq!(due(&[], &tolerations, 0), None);
        assert_eq!(due(&[taint_n(1, 5)], &tolerations, 0), None);
        assert_eq!(
            due(&[taint_n(1, 5), taint_n(2, 20)], &tolerations, 0),
            at(80)
        );
        assert_eq!(due(&[taint_n(1, 5)], &tolerations, 0), None);
    }

    /// The promise of issue #101599: each taint counts from its own
    /// `timeAdded`, or from the binding if the pod came later.
    #[test]
    fn due_counts_from_the_later_of_time_added_and_binding() {
        let tolerations = vec![tol_n(1, 300), tol_n(2, 100)];
        assert_eq!(due(&[taint_n(1, 0)], &tolerations, -50), at(300));
        assert_eq!(due(&[taint_n(1, 0)], &tolerations, 40), at(340));
        // A later taint with a shorter toleration can fall due first.
        assert_eq!(
            due(&[taint_n(1, 0), taint_n(2, 150)], &tolerations, -50),
            at(250)
        );
        assert_eq!(
            due(&[taint_n(1, 0), taint_n(2, 250)], &tolerations, -50),
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
        for effect in [EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE] {
            let taints = relevant_taints(&[oos(effect)]);
            assert_eq!(taints.len(), 1);
            assert_eq!(
                due(&taints, &[tol_n(1, -1)], 10),
                Some(Due {
                    at: t(10),
                    force: true
                }),
                "{effect}"
            );
            let tolerate = tol(TAINT_OUT_OF_SERVICE, OP_EXISTS, "", "");
            assert_eq!(due(&taints, &[tolerate], 10), None, "{effect}");
        }
        let other_no_schedule = Taint {
            key: "x".into(),
            effect: EFFECT_NO_SCHEDULE.into(),
            ..Taint::default()
        };
        assert!(relevant_taints(&[other_no_schedule]).is_empty());
    }

    /// Upstream `TestGetMinTolerationTime` (the core helper used to decide
    /// forever/at once/after): empty → at once, nil → forever, else the
    /// smallest.
    #[test]
    fn min_toleration_time_as_upstream() {
        let secs = |s: Option<i64>| Toleration {
            toleration_seconds: s,
            ..Toleration::default()
        };
        let cases: Vec<(Vec<Toleration>, EvictionDelay)> = vec![
            (vec![], EvictionDelay::Now),
            (vec![secs(None)], EvictionDelay::Never),
            (vec![secs(Some(1)), secs(Some(2))], EvictionDelay::After(1)),
            (vec![secs(Some(1)), secs(None)], EvictionDelay::After(1)),
            (vec![secs(None), secs(Some(1))], EvictionDelay::After(1)),
        ];
        for (tolerations, want) in cases {
            let used: Vec<&Toleration> = tolerations.iter().collect();
            assert_eq!(min_toleration_time(&used), want, "{tolerations:?}");
        }
    }

    #[test]
    fn binding_time_is_pod_scheduled_or_creation() {
        use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
        let mut pod = Pod::default();
        pod.metadata.creation_timestamp = Some(Time(t(1)));
        assert_eq!(bound_at(&WatchedPod::from(&pod)), Some(t(1)));
        pod.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "True".into(),
                last_transition_time: Some(Time(t(7))),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        assert_eq!(bound_at(&WatchedPod::from(&pod)), Some(t(7)));
    }
}
