//! Whether tolerations tolerate taints, exactly as upstream decides it.
//!
//! Ported from kubernetes/api `core/v1/toleration.go` (`ToleratesTaint`,
//! `MatchToleration`) and kubernetes/component-helpers
//! `scheduling/corev1/helpers.go` (`TolerationsTolerateTaint`,
//! `FindMatchingUntoleratedTaint`). How long a pod may stay on a node with
//! NoExecute taints is [`crate::eviction`]'s.
//!
//! These functions sit on the scheduler's hot path (one call per node per
//! pod), so they borrow, never allocate, and compare strings in place.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::feature_gates::FeatureGates;
use crate::validation::names::is_canonical_decimal_integer;
use crate::well_known_taints::TAINT_NODE_UNSCHEDULABLE;

pub const EFFECT_NO_SCHEDULE: &str = "NoSchedule";
pub const EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
pub const EFFECT_NO_EXECUTE: &str = "NoExecute";

pub const OP_EQUAL: &str = "Equal";
pub const OP_EXISTS: &str = "Exists";
pub const OP_GT: &str = "Gt";
pub const OP_LT: &str = "Lt";

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

/// `Toleration.ToleratesTaint`: the checks run in upstream's order (effect,
/// key, then operator). An empty effect matches every effect; an empty key
/// (which validation allows only with `Exists`) matches every key; an empty
/// operator means `Equal`. `Gt`/`Lt` compare canonical decimal int64 values
/// and match nothing while the `TaintTolerationComparisonOperators` gate is
/// off or when either value does not parse.
pub fn tolerates(toleration: &Toleration, taint: &Taint, gates: FeatureGates) -> bool {
    let effect = opt(&toleration.effect);
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = opt(&toleration.key);
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match opt(&toleration.operator) {
        "" | OP_EQUAL => opt(&toleration.value) == opt(&taint.value),
        OP_EXISTS => true,
        op @ (OP_GT | OP_LT) => {
            gates.taint_toleration_comparison_operators
                && compare_numeric_values(opt(&toleration.value), opt(&taint.value), op)
        }
        _ => false,
    }
}

/// `compareNumericValues`: true when the taint's value is greater (`Gt`) or
/// less (`Lt`) than the toleration's. Anything that is not a canonical
/// decimal int64 on either side never matches.
fn compare_numeric_values(toleration_value: &str, taint_value: &str, op: &str) -> bool {
    let (Some(toleration), Some(taint)) = (
        parse_canonical_int64(toleration_value),
        parse_canonical_int64(taint_value),
    ) else {
        return false;
    };
    match op {
        OP_LT => taint < toleration,
        OP_GT => taint > toleration,
        _ => false,
    }
}

/// A signed 64-bit integer written the way apimachinery's
/// `content.IsDecimalInteger` demands (see
/// [`is_canonical_decimal_integer`]): `0`, or an optional `-` and a digit
/// 1-9 followed by digits. No `+`, no leading zeros, no `-0`, no spaces;
/// out of range is not a number either.
pub fn parse_canonical_int64(value: &str) -> Option<i64> {
    if is_canonical_decimal_integer(value) {
        value.parse().ok()
    } else {
        None
    }
}

/// `TolerationsTolerateTaint`: some toleration tolerates the taint.
pub fn tolerations_tolerate_taint(
    tolerations: &[Toleration],
    taint: &Taint,
    gates: FeatureGates,
) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint, gates))
}

/// `FindMatchingUntoleratedTaint`: the first taint that passes `include`
/// and that no toleration tolerates, if any.
pub fn find_matching_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    include: impl Fn(&Taint) -> bool,
    gates: FeatureGates,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|taint| include(taint))
        .find(|taint| !tolerations_tolerate_taint(tolerations, taint, gates))
}

/// The taint a cordoned node behaves as if it had (`spec.unschedulable`),
/// built once: NodeUnschedulable asks about it on every cordoned node.
static UNSCHEDULABLE_TAINT: std::sync::LazyLock<Taint> = std::sync::LazyLock::new(|| Taint {
    key: TAINT_NODE_UNSCHEDULABLE.into(),
    effect: EFFECT_NO_SCHEDULE.into(),
    value: None,
    time_added: None,
});

/// The scheduler's NodeUnschedulable rule: a cordoned node takes a pod only
/// if the pod tolerates `node.kubernetes.io/unschedulable:NoSchedule`.
/// Tolerations are consulted for cordoned nodes only, so on most nodes this
/// is one field read.
pub fn cordon_admits(unschedulable: bool, tolerations: &[Toleration], gates: FeatureGates) -> bool {
    !unschedulable || tolerations_tolerate_taint(tolerations, &UNSCHEDULABLE_TAINT, gates)
}

/// The filter the scheduler and the kubelet use: taints that keep a pod off
/// a node (`NoSchedule` and `NoExecute`).
pub fn is_do_not_schedule(taint: &Taint) -> bool {
    taint.effect == EFFECT_NO_SCHEDULE || taint.effect == EFFECT_NO_EXECUTE
}

/// The taints that evict running pods.
pub fn is_no_execute(taint: &Taint) -> bool {
    taint.effect == EFFECT_NO_EXECUTE
}

/// `Toleration.MatchToleration`: tolerations are the same when key,
/// effect, operator and value are equal (`tolerationSeconds` is not part of
/// a toleration's identity).
pub fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    a.key == b.key && a.effect == b.effect && a.operator == b.operator && a.value == b.value
}

/// `AddOrUpdateTolerationInPodSpec` (`pkg/apis/core/v1/helper`): a
/// toleration with the same key, operator, value and effect (unset and
/// empty alike, as on Go's value types) is replaced, so its
/// `tolerationSeconds` becomes the new one's; otherwise the toleration is
/// appended. Returns whether the list changed: an identical toleration
/// already present leaves it untouched.
pub fn add_or_update_toleration(
    tolerations: &mut Vec<Toleration>,
    toleration: &Toleration,
) -> bool {
    let same_identity = |a: &Toleration, b: &Toleration| {
        opt(&a.key) == opt(&b.key)
            && opt(&a.operator) == opt(&b.operator)
            && opt(&a.value) == opt(&b.value)
            && opt(&a.effect) == opt(&b.effect)
    };
    let mut replaced = false;
    for existing in tolerations.iter_mut() {
        if !same_identity(toleration, existing) {
            continue;
        }
        if existing.toleration_seconds == toleration.toleration_seconds {
            return false;
        }
        *existing = toleration.clone();
        replaced = true;
    }
    if !replaced {
        tolerations.push(toleration.clone());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{taint, tol, tol_secs};
    use proptest::prelude::*;

    const ON: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: true,
        max_unavailable_stateful_set: true,
    };
    const OFF: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: false,
        max_unavailable_stateful_set: true,
    };
    const NS: &str = EFFECT_NO_SCHEDULE;
    const NE: &str = EFFECT_NO_EXECUTE;
    const SLA: &str = "node.kubernetes.io/sla";

    /// Upstream `TestTolerationToleratesTaint` (kubernetes/api), plus the
    /// gate-off rows berth adds for the same Gt/Lt tolerations.
    #[test]
    fn toleration_tolerates_taint_as_upstream() {
        struct Case<'a> {
            name: &'a str,
            toleration: Toleration,
            taint: Taint,
            gates: FeatureGates,
            want: bool,
        }
        let cases = &[
            Case {
                name: "same key and effect, Exists, taint without value",
                toleration: tol("foo", OP_EXISTS, "", NS),
                taint: taint("foo", "", NS),
                gates: OFF,
                want: true,
            },
            Case {
                name: "same key and effect, Exists, taint with value",
                toleration: tol("foo", OP_EXISTS, "", NS),
                taint: taint("foo", "bar", NS),
                gates: OFF,
                want: true,
            },
            Case {
                name: "empty key with Exists matches all taints of that effect",
                toleration: tol("", OP_EXISTS, "", NS),
                taint: taint("foo", "bar", NS),
                gates: OFF,
                want: true,
            },
            Case {
                name: "same key, effect and value with Equal",
                toleration: tol("foo", OP_EQUAL, "bar", NS),
                taint: taint("foo", "bar", NS),
                gates: OFF,
                want: true,
            },
            Case {
                name: "different values with Equal",
                toleration: tol("foo", OP_EQUAL, "value1", NS),
                taint: taint("foo", "value2", NS),
                gates: OFF,
                want: false,
            },
            Case {
                name: "different effects with Equal",
                toleration: tol("foo", OP_EQUAL, "bar", NS),
                taint: taint("foo", "bar", NE),
                gates: OFF,
                want: false,
            },
            Case {
                name: "Gt, taint value below toleration value",
                toleration: tol(SLA, OP_GT, "950", NS),
                taint: taint(SLA, "800", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "Gt, taint value above toleration value",
                toleration: tol(SLA, OP_GT, "750", NS),
                taint: taint(SLA, "950", NS),
                gates: ON,
                want: true,
            },
            Case {
                name: "Lt, taint value above toleration value",
                toleration: tol(SLA, OP_LT, "800", NS),
                taint: taint(SLA, "950", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "Lt, taint value below toleration value",
                toleration: tol(SLA, OP_LT, "950", NS),
                taint: taint(SLA, "800", NS),
                gates: ON,
                want: true,
            },
            Case {
                name: "Gt with equal values",
                toleration: tol(SLA, OP_GT, "950", NS),
                taint: taint(SLA, "950", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "Gt with non-numeric taint value",
                toleration: tol(SLA, OP_GT, "950", NS),
                taint: taint(SLA, "high", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "Gt with negative values, taint below",
                toleration: tol("test-key", OP_GT, "-100", NS),
                taint: taint("test-key", "-200", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "Gt with large int64 values, taint below",
                toleration: tol("test-key", OP_GT, "9223372036854775806", NS),
                taint: taint("test-key", "100", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "Gt that would match, gate off",
                toleration: tol(SLA, OP_GT, "750", NS),
                taint: taint(SLA, "950", NS),
                gates: OFF,
                want: false,
            },
            Case {
                name: "Lt that would match, gate off",
                toleration: tol(SLA, OP_LT, "950", NS),
                taint: taint(SLA, "800", NS),
                gates: OFF,
                want: false,
            },
            Case {
                name: "empty operator means Equal",
                toleration: tol("foo", "", "bar", NS),
                taint: taint("foo", "bar", NS),
                gates: OFF,
                want: true,
            },
            Case {
                name: "empty effect matches every effect",
                toleration: tol("foo", OP_EQUAL, "bar", ""),
                taint: taint("foo", "bar", NE),
                gates: OFF,
                want: true,
            },
            Case {
                name: "unknown operator never matches",
                toleration: tol("foo", "In", "bar", NS),
                taint: taint("foo", "bar", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "operators are case-sensitive",
                toleration: tol("foo", "exists", "", NS),
                taint: taint("foo", "bar", NS),
                gates: ON,
                want: false,
            },
            Case {
                name: "empty key with Equal matches keys with that value",
                toleration: tol("", OP_EQUAL, "bar", NS),
                taint: taint("foo", "bar", NS),
                gates: ON,
                want: true,
            },
        ];
        for Case {
            name,
            toleration,
            taint,
            gates,
            want,
        } in cases
        {
            assert_eq!(tolerates(toleration, taint, *gates), *want, "{name}");
        }
    }

    /// Upstream `TestCompareNumericValues` (kubernetes/api).
    #[test]
    fn numeric_comparison_accepts_only_canonical_int64() {
        struct Case<'a> {
            name: &'a str,
            toleration: &'a str,
            taint: &'a str,
            op: &'a str,
            want: bool,
        }
        let cases = &[
            Case {
                name: "Gt, taint greater",
                toleration: "100",
                taint: "200",
                op: OP_GT,
                want: true,
            },
            Case {
                name: "Gt, taint less",
                toleration: "200",
                taint: "100",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "Gt, equal",
                toleration: "100",
                taint: "100",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "Gt, negative numbers, taint greater",
                toleration: "-100",
                taint: "-50",
                op: OP_GT,
                want: true,
            },
            Case {
                name: "Gt, negative numbers, taint less",
                toleration: "-50",
                taint: "-100",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "Gt, zero and positive",
                toleration: "0",
                taint: "1",
                op: OP_GT,
                want: true,
            },
            Case {
                name: "Gt, large int64 values",
                toleration: "9223372036854775806",
                taint: "9223372036854775807",
                op: OP_GT,
                want: true,
            },
            Case {
                name: "Lt, taint less",
                toleration: "200",
                taint: "100",
                op: OP_LT,
                want: true,
            },
            Case {
                name: "Lt, taint greater",
                toleration: "100",
                taint: "200",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "Lt, equal",
                toleration: "100",
                taint: "100",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "Lt, negative numbers, taint less",
                toleration: "-50",
                taint: "-100",
                op: OP_LT,
                want: true,
            },
            Case {
                name: "Lt, negative numbers, taint greater",
                toleration: "-100",
                taint: "-50",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "Lt, zero and negative",
                toleration: "0",
                taint: "-1",
                op: OP_LT,
                want: true,
            },
            Case {
                name: "toleration non-numeric",
                toleration: "abc",
                taint: "100",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "toleration empty",
                toleration: "",
                taint: "100",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "toleration leading zero",
                toleration: "0100",
                taint: "200",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "toleration plus sign",
                toleration: "+100",
                taint: "200",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "toleration floating point",
                toleration: "100.5",
                taint: "200",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "toleration just a minus sign",
                toleration: "-",
                taint: "100",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "taint non-numeric",
                toleration: "100",
                taint: "xyz",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "taint empty",
                toleration: "100",
                taint: "",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "taint leading zero",
                toleration: "100",
                taint: "0200",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "taint plus sign",
                toleration: "100",
                taint: "+200",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "taint with spaces",
                toleration: "100",
                taint: " 200 ",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "Equal is not a numeric operator",
                toleration: "100",
                taint: "100",
                op: OP_EQUAL,
                want: false,
            },
            Case {
                name: "Exists is not a numeric operator",
                toleration: "100",
                taint: "100",
                op: OP_EXISTS,
                want: false,
            },
            Case {
                name: "Gt, both zero",
                toleration: "0",
                taint: "0",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "Lt, both zero",
                toleration: "0",
                taint: "0",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "Gt, max int64 taint",
                toleration: "0",
                taint: "9223372036854775807",
                op: OP_GT,
                want: true,
            },
            Case {
                name: "Lt, min int64 taint",
                toleration: "0",
                taint: "-9223372036854775808",
                op: OP_LT,
                want: true,
            },
            // berth additions at the edges of the canonical form.
            Case {
                name: "taint negative zero",
                toleration: "1",
                taint: "-0",
                op: OP_LT,
                want: false,
            },
            Case {
                name: "taint overflows int64",
                toleration: "0",
                taint: "9223372036854775808",
                op: OP_GT,
                want: false,
            },
            Case {
                name: "taint underflows int64",
                toleration: "0",
                taint: "-9223372036854775809",
                op: OP_LT,
                want: false,
            },
        ];
        for Case {
            name,
            toleration,
            taint,
            op,
            want,
        } in cases
        {
            assert_eq!(
                compare_numeric_values(toleration, taint, op),
                *want,
                "{name}"
            );
        }
    }

    /// Upstream `TestFindMatchingUntoleratedTaint` (component-helpers).
    #[test]
    fn find_matching_untolerated_taint_as_upstream() {
        let all = |_: &Taint| true;
        let none = |_: &Taint| false;
        struct Case {
            name: &'static str,
            tolerations: Vec<Toleration>,
            taints: Vec<Taint>,
            filter: fn(&Taint) -> bool,
            want_tolerated: bool,
        }
        let cases = vec![
            Case {
                name: "empty tolerations tolerate empty taints",
                tolerations: vec![],
                taints: vec![],
                filter: all,
                want_tolerated: true,
            },
            Case {
                name: "non-empty tolerations tolerate empty taints",
                tolerations: vec![tol("foo", OP_EXISTS, "", NS)],
                taints: vec![],
                filter: all,
                want_tolerated: true,
            },
            Case {
                name: "tolerations match all taints",
                tolerations: vec![tol("foo", OP_EXISTS, "", NS)],
                taints: vec![taint("foo", "", NS)],
                filter: all,
                want_tolerated: true,
            },
            Case {
                name: "no taint passes the filter",
                tolerations: vec![tol("foo", OP_EXISTS, "", NS)],
                taints: vec![taint("bar", "", NS)],
                filter: none,
                want_tolerated: true,
            },
            Case {
                name: "all taints pass, tolerations don't match",
                tolerations: vec![tol("foo", OP_EXISTS, "", NS)],
                taints: vec![taint("bar", "", NS)],
                filter: all,
                want_tolerated: false,
            },
            Case {
                name: "tolerations match the filtered taints",
                tolerations: vec![tol("foo", OP_EXISTS, "", NE)],
                taints: vec![taint("foo", "", NE), taint("bar", "", NS)],
                filter: is_no_execute,
                want_tolerated: true,
            },
            Case {
                name: "Gt with taint value below threshold",
                tolerations: vec![tol(SLA, OP_GT, "950", NS)],
                taints: vec![taint(SLA, "800", NS)],
                filter: all,
                want_tolerated: false,
            },
            Case {
                name: "Gt with taint value above threshold",
                tolerations: vec![tol(SLA, OP_GT, "750", NS)],
                taints: vec![taint(SLA, "950", NS)],
                filter: all,
                want_tolerated: true,
            },
            Case {
                name: "Lt with taint value above threshold",
                tolerations: vec![tol(SLA, OP_LT, "800", NS)],
                taints: vec![taint(SLA, "950", NS)],
                filter: all,
                want_tolerated: false,
            },
            Case {
                name: "Gt with non-numeric taint value",
                tolerations: vec![tol(SLA, OP_GT, "950", NS)],
                taints: vec![taint(SLA, "high", NS)],
                filter: all,
                want_tolerated: false,
            },
            Case {
                name: "a later toleration matches despite a Gt parse failure",
                tolerations: vec![tol(SLA, OP_GT, "950", NS), tol(SLA, OP_EXISTS, "", NS)],
                taints: vec![taint(SLA, "high", NS)],
                filter: all,
                want_tolerated: true,
            },
        ];
        for Case {
            name,
            tolerations,
            taints,
            filter,
            want_tolerated,
        } in cases
        {
            let found = find_matching_untolerated_taint(&taints, &tolerations, filter, ON);
            assert_eq!(found.is_none(), want_tolerated, "{name}");
        }
    }

    #[test]
    fn untolerated_taint_returned_is_the_first_in_node_order() {
        let taints = [taint("a", "", NS), taint("b", "", NE), taint("c", "", NS)];
        let tolerations = [tol("a", OP_EXISTS, "", "")];
        let found = find_matching_untolerated_taint(&taints, &tolerations, is_do_not_schedule, ON);
        assert_eq!(found.map(|t| t.key.as_str()), Some("b"));
    }

    #[test]
    fn toleration_identity_ignores_seconds() {
        assert!(same_toleration(
            &tol_secs("a", OP_EXISTS, "", NE, 1),
            &tol_secs("a", OP_EXISTS, "", NE, 2)
        ));
        assert!(!same_toleration(
            &tol("a", OP_EXISTS, "", NE),
            &tol("a", OP_EXISTS, "", NS)
        ));
        assert!(!same_toleration(
            &tol("a", OP_EQUAL, "x", NE),
            &tol("a", OP_EQUAL, "y", NE)
        ));
    }

    fn effect() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(NS.to_string()),
            Just(EFFECT_PREFER_NO_SCHEDULE.to_string()),
            Just(NE.to_string())
        ]
    }

    fn any_taint() -> impl Strategy<Value = Taint> {
        (
            "[a-z]{1,8}",
            prop_oneof![Just(String::new()), "-?[0-9]{1,20}", "[a-z0-9]{0,8}"],
            effect(),
        )
            .prop_map(|(k, v, e)| taint(&k, &v, &e))
    }

    /// Upstream `AddOrUpdateTolerationInPodSpec`: replace by identity
    /// (key, operator, value, effect), append otherwise.
    #[test]
    fn add_or_update_toleration_replaces_by_identity_or_appends() {
        let mut empty_value = tol("foo", OP_EQUAL, "", NS);
        empty_value.value = Some(String::new());
        struct Case {
            name: &'static str,
            existing: Vec<Toleration>,
            add: Toleration,
            want: Vec<Toleration>,
            changed: bool,
        }
        for case in [
            Case {
                name: "appended to an empty list",
                existing: vec![],
                add: tol("foo", OP_EXISTS, "", NE),
                want: vec![tol("foo", OP_EXISTS, "", NE)],
                changed: true,
            },
            Case {
                name: "identical toleration: unchanged",
                existing: vec![tol("foo", OP_EXISTS, "", NE)],
                add: tol("foo", OP_EXISTS, "", NE),
                want: vec![tol("foo", OP_EXISTS, "", NE)],
                changed: false,
            },
            Case {
                name: "same identity, other tolerationSeconds: replaced in place",
                existing: vec![
                    tol("a", OP_EXISTS, "", NS),
                    tol_secs("foo", OP_EXISTS, "", NE, 300),
                ],
                add: tol("foo", OP_EXISTS, "", NE),
                want: vec![tol("a", OP_EXISTS, "", NS), tol("foo", OP_EXISTS, "", NE)],
                changed: true,
            },
            Case {
                name: "other effect: appended",
                existing: vec![tol("foo", OP_EXISTS, "", NS)],
                add: tol("foo", OP_EXISTS, "", NE),
                want: vec![tol("foo", OP_EXISTS, "", NS), tol("foo", OP_EXISTS, "", NE)],
                changed: true,
            },
            Case {
                name: "an unset value is the empty value",
                existing: vec![empty_value.clone()],
                add: tol("foo", OP_EQUAL, "", NS),
                want: vec![empty_value],
                changed: false,
            },
            Case {
                name: "a wildcard toleration does not stop the append",
                existing: vec![tol("", OP_EXISTS, "", "")],
                add: tol("foo", OP_EXISTS, "", NE),
                want: vec![tol("", OP_EXISTS, "", ""), tol("foo", OP_EXISTS, "", NE)],
                changed: true,
            },
        ] {
            let mut got = case.existing;
            assert_eq!(
                add_or_update_toleration(&mut got, &case.add),
                case.changed,
                "{}",
                case.name
            );
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    proptest! {
        #[test]
        fn exists_with_empty_key_and_effect_tolerates_every_taint(t in any_taint()) {
            prop_assert!(tolerates(&tol("", OP_EXISTS, "", ""), &t, ON));
        }

        #[test]
        fn gt_and_lt_never_both_tolerate_a_taint(t in any_taint(), v in "-?[0-9]{1,20}") {
            let gt = tol(&t.key, OP_GT, &v, "");
            let lt = tol(&t.key, OP_LT, &v, "");
            prop_assert!(!(tolerates(&gt, &t, ON) && tolerates(&lt, &t, ON)));
        }

        #[test]
        fn canonical_int64_round_trips(n in any::<i64>()) {
            prop_assert_eq!(parse_canonical_int64(&n.to_string()), Some(n));
        }

        #[test]
        fn canonical_int64_never_panics(s in "\\PC*") {
            let _ = parse_canonical_int64(&s);
        }
    }
}
