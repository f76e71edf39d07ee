//! DefaultTolerationSeconds (`plugin/pkg/admission/defaulttolerationseconds`):
//! every pod gets `node.kubernetes.io/not-ready:NoExecute` and
//! `node.kubernetes.io/unreachable:NoExecute` tolerations (operator
//! Exists) with `tolerationSeconds` from the configuration (300 by
//! default), unless it already tolerates that taint.
//!
//! Why: taint-based eviction would otherwise evict a pod the instant its
//! node turns not ready or unreachable; the default gives a node five
//! minutes to come back. Upstream's rule for "already tolerates" is
//! deliberately syntactic: a toleration whose key is the taint's key or
//! empty, and whose effect is NoExecute or empty. Operator and value are
//! not looked at, so a toleration that would not actually match (say
//! `Equal` with a value) still suppresses the default, as upstream.
//!
//! Runs on create and update of pods proper (not subresources).

use berth_core::toleration::{EFFECT_NO_EXECUTE, OP_EXISTS};
use k8s_openapi::api::core::v1::{Pod, Toleration};

use super::tolerations::add_or_update_toleration;

/// `v1.TaintNodeNotReady`.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// `v1.TaintNodeUnreachable`.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";

fn covers(t: &Toleration, key: &str) -> bool {
    let k = t.key.as_deref().unwrap_or("");
    let e = t.effect.as_deref().unwrap_or("");
    (k == key || k.is_empty()) && (e == EFFECT_NO_EXECUTE || e.is_empty())
}

/// Adds the two default tolerations the pod lacks.
pub fn admit(pod: &mut Pod, not_ready_seconds: i64, unreachable_seconds: i64) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    let existing = spec.tolerations.as_deref().unwrap_or_default();
    let tolerates_not_ready = existing.iter().any(|t| covers(t, TAINT_NODE_NOT_READY));
    let tolerates_unreachable = existing.iter().any(|t| covers(t, TAINT_NODE_UNREACHABLE));
    if tolerates_not_ready && tolerates_unreachable {
        return;
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (tolerated, key, seconds) in [
        (tolerates_not_ready, TAINT_NODE_NOT_READY, not_ready_seconds),
        (
            tolerates_unreachable,
            TAINT_NODE_UNREACHABLE,
            unreachable_seconds,
        ),
    ] {
        if !tolerated {
            add_or_update_toleration(
                tolerations,
                &Toleration {
                    key: Some(key.to_string()),
                    operator: Some(OP_EXISTS.to_string()),
                    effect: Some(EFFECT_NO_EXECUTE.to_string()),
                    toleration_seconds: Some(seconds),
                    value: None,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_pod, tol_secs};

    const NR: &str = TAINT_NODE_NOT_READY;
    const UR: &str = TAINT_NODE_UNREACHABLE;

    #[test]
    fn forgiveness_admission_matches_upstream_table() {
        // Upstream TestForgivenessAdmission, every row.
        let d = |key: &str| tol_secs(key, "Exists", "", "NoExecute", 300);
        let mut unreachable_no_effect = tol_secs(UR, "Exists", "", "", 700);
        unreachable_no_effect.effect = None;
        struct Case {
            name: &'static str,
            tolerations: Vec<Toleration>,
            want: Vec<Toleration>,
        }
        let cases = [
            Case {
                name: "pod has no tolerations, expect add tolerations for `notread:NoExecute` and `unreachable:NoExecute`",
                tolerations: vec![],
                want: vec![d(NR), d(UR)],
            },
            Case {
                name: "pod has tolerations, but none is for taint `notread:NoExecute` or `unreachable:NoExecute`, expect add tolerations for `notread:NoExecute` and `unreachable:NoExecute`",
                tolerations: vec![tol_secs("foo", "Equal", "bar", "NoSchedule", 700)],
                want: vec![
                    tol_secs("foo", "Equal", "bar", "NoSchedule", 700),
                    d(NR),
                    d(UR),
                ],
            },
            Case {
                name: "pod specified a toleration for taint `notReady:NoExecute`, expect add toleration for `unreachable:NoExecute`",
                tolerations: vec![tol_secs(NR, "Exists", "", "NoExecute", 700)],
                want: vec![tol_secs(NR, "Exists", "", "NoExecute", 700), d(UR)],
            },
            Case {
                name: "pod specified a toleration for taint `unreachable:NoExecute`, expect add toleration for `notReady:NoExecute`",
                tolerations: vec![tol_secs(UR, "Exists", "", "NoExecute", 700)],
                want: vec![tol_secs(UR, "Exists", "", "NoExecute", 700), d(NR)],
            },
            Case {
                name: "pod specified tolerations for both `notread:NoExecute` and `unreachable:NoExecute`, expect no change",
                tolerations: vec![
                    tol_secs(NR, "Exists", "", "NoExecute", 700),
                    tol_secs(UR, "Exists", "", "NoExecute", 700),
                ],
                want: vec![
                    tol_secs(NR, "Exists", "", "NoExecute", 700),
                    tol_secs(UR, "Exists", "", "NoExecute", 700),
                ],
            },
            Case {
                name: "pod specified toleration for taint `unreachable`, expect add toleration for `notReady:NoExecute`",
                tolerations: vec![unreachable_no_effect.clone()],
                want: vec![unreachable_no_effect, d(NR)],
            },
            Case {
                name: "pod has wildcard toleration for all kind of taints, expect no change",
                tolerations: vec![tol_secs("", "Exists", "", "", 700)],
                want: vec![tol_secs("", "Exists", "", "", 700)],
            },
            Case {
                // berth's row: the rule ignores the operator and value.
                name: "a non-matching Equal toleration for the key still suppresses the default",
                tolerations: vec![tol_secs(NR, "Equal", "x", "NoExecute", 5)],
                want: vec![tol_secs(NR, "Equal", "x", "NoExecute", 5), d(UR)],
            },
            Case {
                // berth's row: a NoSchedule toleration does not count.
                name: "a NoSchedule toleration for the key does not suppress the default",
                tolerations: vec![berth_core::test_util::tol(NR, "Exists", "", "NoSchedule")],
                want: vec![
                    berth_core::test_util::tol(NR, "Exists", "", "NoSchedule"),
                    d(NR),
                    d(UR),
                ],
            },
        ];
        for case in cases {
            let mut pod = make_pod().tolerations(case.tolerations).obj();
            admit(&mut pod, 300, 300);
            assert_eq!(
                pod.spec.and_then(|s| s.tolerations).unwrap_or_default(),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn configured_seconds_are_used() {
        let mut pod = make_pod().obj();
        admit(&mut pod, 60, 120);
        assert_eq!(
            pod.spec.and_then(|s| s.tolerations).unwrap_or_default(),
            vec![
                tol_secs(NR, "Exists", "", "NoExecute", 60),
                tol_secs(UR, "Exists", "", "NoExecute", 120)
            ]
        );
    }
}
