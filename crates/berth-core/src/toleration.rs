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
    };
    const OFF: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: false,
    };
    const NS: &str = EFFECT_NO_SCHEDULE;
    const NE: &str = EFFECT_NO_EXECUTE;
    const SLA: &str = "node.kubernetes.io/sla";

    /// Upstream `TestTolerationToleratesTaint` (kubernetes/api), plus the
    /// gate-off rows berth adds for the same Gt/Lt tolerations.
    #[test]
    fn toleration_tolerates_taint_as_upstream() {
        let cases: &[(&str, Toleration, Taint, FeatureGates, bool)] = &[
            (
                "same key and effect, Exists, taint without value",
                tol("foo", OP_EXISTS, "", NS),
                taint("foo", "", NS),
                OFF,
                true,
            ),
            (
                "same key and effect, Exists, taint with value",
                tol("foo", OP_EXISTS, "", NS),
                taint("foo", "bar", NS),
                OFF,
                true,
            ),
            (
                "empty key with Exists matches all taints of that effect",
                tol("", OP_EXISTS, "", NS),
                taint("foo", "bar", NS),
                OFF,
                true,
            ),
            (
                "same key, effect and value with Equal",
                tol("foo", OP_EQUAL, "bar", NS),
                taint("foo", "bar", NS),
                OFF,
                true,
            ),
            (
                "different values with Equal",
                tol("foo", OP_EQUAL, "value1", NS),
                taint("foo", "value2", NS),
                OFF,
                false,
            ),
            (
                "different effects with Equal",
                tol("foo", OP_EQUAL, "bar", NS),
                taint("foo", "bar", NE),
                OFF,
                false,
            ),
            (
                "Gt, taint value below toleration value",
                tol(SLA, OP_GT, "950", NS),
                taint(SLA, "800", NS),
                ON,
                false,
            ),
            (
                "Gt, taint value above toleration value",
                tol(SLA, OP_GT, "750", NS),
                taint(SLA, "950", NS),
                ON,
                true,
            ),
            (
                "Lt, taint value above toleration value",
                tol(SLA, OP_LT, "800", NS),
                taint(SLA, "950", NS),
                ON,
                false,
            ),
            (
                "Lt, taint value below toleration value",
                tol(SLA, OP_LT, "950", NS),
                taint(SLA, "800", NS),
                ON,
                true,
            ),
            (
                "Gt with equal values",
                tol(SLA, OP_GT, "950", NS),
                taint(SLA, "950", NS),
                ON,
                false,
            ),
            (
                "Gt with non-numeric taint value",
                tol(SLA, OP_GT, "950", NS),
                taint(SLA, "high", NS),
                ON,
                false,
            ),
            (
                "Gt with negative values, taint below",
                tol("test-key", OP_GT, "-100", NS),
                taint("test-key", "-200", NS),
                ON,
                false,
            ),
            (
                "Gt with large int64 values, taint below",
                tol("test-key", OP_GT, "9223372036854775806", NS),
                taint("test-key", "100", NS),
                ON,
                false,
            ),
            (
                "Gt that would match, gate off",
                tol(SLA, OP_GT, "750", NS),
                taint(SLA, "950", NS),
                OFF,
                false,
            ),
            (
                "Lt that would match, gate off",
                tol(SLA, OP_LT, "950", NS),
                taint(SLA, "800", NS),
                OFF,
                false,
            ),
            (
                "empty operator means Equal",
                tol("foo", "", "bar", NS),
                taint("foo", "bar", NS),
                OFF,
                true,
            ),
            (
                "empty effect matches every effect",
                tol("foo", OP_EQUAL, "bar", ""),
                taint("foo", "bar", NE),
                OFF,
                true,
            ),
            (
                "unknown operator never matches",
                tol("foo", "In", "bar", NS),
                taint("foo", "bar", NS),
                ON,
                false,
            ),
            (
                "operators are case-sensitive",
                tol("foo", "exists", "", NS),
                taint("foo", "bar", NS),
                ON,
                false,
            ),
            (
                "empty key with Equal matches keys with that value",
                tol("", OP_EQUAL, "bar", NS),
                taint("foo", "bar", NS),
                ON,
                true,
            ),
        ];
        for (name, toleration, taint, gates, want) in cases {
            assert_eq!(tolerates(toleration, taint, *gates), *want, "{name}");
        }
    }

    /// Upstream `TestCompareNumericValues` (kubernetes/api).
    #[test]
    fn numeric_comparison_accepts_only_canonical_int64() {
        let cases: &[(&str, &str, &str, &str, bool)] = &[
            ("Gt, taint greater", "100", "200", OP_GT, true),
            ("Gt, taint less", "200", "100", OP_GT, false),
            ("Gt, equal", "100", "100", OP_GT, false),
            (
                "Gt, negative numbers, taint greater",
                "-100",
                "-50",
                OP_GT,
                true,
            ),
            (
                "Gt, negative numbers, taint less",
                "-50",
                "-100",
                OP_GT,
                false,
            ),
            ("Gt, zero and positive", "0", "1", OP_GT, true),
            (
                "Gt, large int64 values",
                "9223372036854775806",
                "9223372036854775807",
                OP_GT,
                true,
            ),
            ("Lt, taint less", "200", "100", OP_LT, true),
            ("Lt, taint greater", "100", "200", OP_LT, false),
            ("Lt, equal", "100", "100", OP_LT, false),
            (
                "Lt, negative numbers, taint less",
                "-50",
                "-100",
                OP_LT,
                true,
            ),
            (
                "Lt, negative numbers, taint greater",
                "-100",
                "-50",
                OP_LT,
                false,
            ),
            ("Lt, zero and negative", "0", "-1", OP_LT, true),
            ("toleration non-numeric", "abc", "100", OP_GT, false),
            ("toleration empty", "", "100", OP_GT, false),
            ("toleration leading zero", "0100", "200", OP_GT, false),
            ("toleration plus sign", "+100", "200", OP_GT, false),
            ("toleration floating point", "100.5", "200", OP_GT, false),
            ("toleration just a minus sign", "-", "100", OP_GT, false),
            ("taint non-numeric", "100", "xyz", OP_GT, false),
            ("taint empty", "100", "", OP_GT, false),
            ("taint leading zero", "100", "0200", OP_GT, false),
            ("taint plus sign", "100", "+200", OP_LT, false),
            ("taint with spaces", "100", " 200 ", OP_LT, false),
            (
                "Equal is not a numeric operator",
                "100",
                "100",
                OP_EQUAL,
                false,
            ),
            (
                "Exists is not a numeric operator",
                "100",
                "100",
                OP_EXISTS,
                false,
            ),
            ("Gt, both zero", "0", "0", OP_GT, false),
            ("Lt, both zero", "0", "0", OP_LT, false),
            (
                "Gt, max int64 taint",
                "0",
                "9223372036854775807",
                OP_GT,
                true,
            ),
            (
                "Lt, min int64 taint",
                "0",
                "-9223372036854775808",
                OP_LT,
                true,
            ),
            // berth additions at the edges of the canonical form.
            ("taint negative zero", "1", "-0", OP_LT, false),
            (
                "taint overflows int64",
                "0",
                "9223372036854775808",
                OP_GT,
                false,
            ),
            (
                "taint underflows int64",
                "0",
                "-9223372036854775809",
                OP_LT,
                false,
            ),
        ];
        for (name, toleration, taint, op, want) in cases {
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
        type Case = (
            &'static str,
            Vec<Toleration>,
            Vec<Taint>,
            fn(&Taint) -> bool,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "empty tolerations tolerate empty taints",
                vec![],
                vec![],
                all,
                true,
            ),
            (
                "non-empty tolerations tolerate empty taints",
                vec![tol("foo", OP_EXISTS, "", NS)],
                vec![],
                all,
                true,
            ),
            (
                "tolerations match all taints",
                vec![tol("foo", OP_EXISTS, "", NS)],
                vec![taint("foo", "", NS)],
                all,
                true,
            ),
            (
                "no taint passes the filter",
                vec![tol("foo", OP_EXISTS, "", NS)],
                vec![taint("bar", "", NS)],
                none,
                true,
            ),
            (
                "all taints pass, tolerations don't match",
                vec![tol("foo", OP_EXISTS, "", NS)],
                vec![taint("bar", "", NS)],
                all,
                false,
            ),
            (
                "tolerations match the filtered taints",
                vec![tol("foo", OP_EXISTS, "", NE)],
                vec![taint("foo", "", NE), taint("bar", "", NS)],
                is_no_execute,
                true,
            ),
            (
                "Gt with taint value below threshold",
                vec![tol(SLA, OP_GT, "950", NS)],
                vec![taint(SLA, "800", NS)],
                all,
                false,
            ),
            (
                "Gt with taint value above threshold",
                vec![tol(SLA, OP_GT, "750", NS)],
                vec![taint(SLA, "950", NS)],
                all,
                true,
            ),
            (
                "Lt with taint value above threshold",
                vec![tol(SLA, OP_LT, "800", NS)],
                vec![taint(SLA, "950", NS)],
                all,
                false,
            ),
            (
                "Gt with non-numeric taint value",
                vec![tol(SLA, OP_GT, "950", NS)],
                vec![taint(SLA, "high", NS)],
                all,
                false,
            ),
            (
                "a later toleration matches despite a Gt parse failure",
                vec![tol(SLA, OP_GT, "950", NS), tol(SLA, OP_EXISTS, "", NS)],
                vec![taint(SLA, "high", NS)],
                all,
                true,
            ),
        ];
        for (name, tolerations, taints, filter, want_tolerated) in cases {
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
