//! Validation of pod tolerations (`pod.spec.tolerations`) on create and on
//! update: a port of upstream's `ValidateTolerations` and
//! `validateOnlyAddedTolerations` from `pkg/apis/core/validation`, including
//! the `Lt`/`Gt` comparison operators gated by
//! `AllowTaintTolerationComparisonOperators`.
//!
//! The feature gate itself is not this module's business: the caller passes
//! [`TolerationOptions`], computed the way upstream's
//! `allowTaintTolerationComparisonOperators(oldPodSpec)` does (gate enabled,
//! or the old pod already used the operators; see
//! [`uses_comparison_operators`]).

use k8s_openapi::api::core::v1::Toleration;

use super::field::{ErrorList, FieldError, Path, go_quote};
use super::names::{is_decimal_integer, is_valid_label_value};
use super::taints::{TAINT_EFFECT_NO_EXECUTE, validate_label_name, validate_taint_effect};

const OP_EQUAL: &str = "Equal";
const OP_EXISTS: &str = "Exists";
const OP_LT: &str = "Lt";
const OP_GT: &str = "Gt";

/// Options for toleration validation (the toleration-relevant part of
/// upstream's `PodValidationOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TolerationOptions {
    /// Accept the `Lt` and `Gt` operators (upstream
    /// `AllowTaintTolerationComparisonOperators`). When false they are
    /// `NotSupported`.
    pub allow_comparison_operators: bool,
}

/// The four fields of a toleration with upstream's internal-type view of
/// absence: an unset string is the empty string.
struct View<'a> {
    key: &'a str,
    operator: &'a str,
    value: &'a str,
    effect: &'a str,
}

fn view(t: &Toleration) -> View<'_> {
    View {
        key: t.key.as_deref().unwrap_or(""),
        operator: t.operator.as_deref().unwrap_or(""),
        value: t.value.as_deref().unwrap_or(""),
        effect: t.effect.as_deref().unwrap_or(""),
    }
}

/// True if any toleration uses `Lt` or `Gt` (upstream
/// `taintTolerationComparisonOperatorsInUse`). On update the API server must
/// allow the operators when the *old* pod used them, even with the gate
/// off, so existing pods stay updatable.
pub fn uses_comparison_operators(tolerations: &[Toleration]) -> bool {
    tolerations
        .iter()
        .any(|t| matches!(t.operator.as_deref(), Some(OP_LT | OP_GT)))
}

/// Validates tolerations (upstream `ValidateTolerations`). `path` is the
/// list's path, e.g. `spec.tolerations`.
///
/// Rules, per toleration: a non-empty key is a qualified name; an empty key
/// needs operator `Exists`; `tolerationSeconds` needs effect `NoExecute`;
/// operator `Equal` (or unset) needs a label value; `Exists` needs an empty
/// value; `Lt`/`Gt` are allowed only with
/// [`TolerationOptions::allow_comparison_operators`] and then need a
/// canonical decimal int64; other operators are `NotSupported`; a non-empty
/// effect is one of the taint effects.
pub fn validate_tolerations(
    tolerations: &[Toleration],
    path: &Path,
    opts: &TolerationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, toleration) in tolerations.iter().enumerate() {
        let idx_path = path.index(i);
        let t = view(toleration);

        if !t.key.is_empty() {
            errs.extend(validate_label_name(t.key, &idx_path.child("key")));
        }

        // An empty key with Exists (and an empty value) matches all taints;
        // any other operator with an empty key is meaningless.
        if t.key.is_empty() && t.operator != OP_EXISTS {
            errs.push(FieldError::invalid(
                &idx_path.child("operator"),
                t.operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }

        if toleration.toleration_seconds.is_some() && t.effect != TAINT_EFFECT_NO_EXECUTE {
            errs.push(FieldError::invalid(
                &idx_path.child("effect"),
                t.effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }

        match t.operator {
            // An unset operator means Equal. Upstream reports a bad value
            // under `operator`, not `value`; kept for identical output.
            OP_EQUAL | "" => {
                let value_errs = is_valid_label_value(t.value);
                if !value_errs.is_empty() {
                    errs.push(FieldError::invalid(
                        &idx_path.child("operator"),
                        t.value,
                        value_errs.join(";"),
                    ));
                }
            }
            OP_EXISTS => {
                if !t.value.is_empty() {
                    errs.push(FieldError::invalid(
                        &idx_path.child("operator"),
                        t.value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            OP_LT | OP_GT => {
                if !opts.allow_comparison_operators {
                    errs.push(FieldError::not_supported(
                        &idx_path.child("operator"),
                        t.operator,
                        &[OP_EQUAL, OP_EXISTS, OP_LT, OP_GT],
                    ));
                } else {
                    let value_path = idx_path.child("value");
                    for msg in is_decimal_integer(t.value) {
                        errs.push(FieldError::invalid(&value_path, t.value, msg));
                    }
                    // Upstream also runs strconv.ParseInt, adding its error
                    // text for values that are not an int64 at all (out of
                    // range, or not a number); canonical-form problems such
                    // as "0100" or "+5" get only the message above.
                    if let Some(msg) = go_parse_int64_error(t.value) {
                        errs.push(FieldError::invalid(&value_path, t.value, msg));
                    }
                }
            }
            other => {
                errs.push(FieldError::not_supported(
                    &idx_path.child("operator"),
                    other,
                    &[OP_EQUAL, OP_EXISTS],
                ));
            }
        }

        // An empty effect matches all taint effects.
        if !t.effect.is_empty() {
            errs.extend(validate_taint_effect(
                t.effect,
                true,
                &idx_path.child("effect"),
            ));
        }
    }
    errs
}

/// Validates the tolerations of a pod update (upstream
/// `validateOnlyAddedTolerations`): every old toleration must still be
/// present unchanged except for `tolerationSeconds`; new ones may be added.
/// The first old toleration that is missing yields a single `Forbidden`
/// error on `path` and stops; otherwise the new list is validated with
/// [`validate_tolerations`].
///
/// `opts` is the same as for create, except that upstream allows `Lt`/`Gt`
/// when the old pod used them: pass
/// `allow_comparison_operators: gate_enabled || uses_comparison_operators(old)`.
pub fn validate_toleration_update(
    new: &[Toleration],
    old: &[Toleration],
    path: &Path,
    opts: &TolerationOptions,
) -> ErrorList {
    for old_toleration in old {
        let o = view(old_toleration);
        // Upstream copies the new tolerationSeconds into a clone of the old
        // toleration and deep-compares, i.e. compares everything else.
        let found = new.iter().map(view).any(|n| {
            n.key == o.key && n.operator == o.operator && n.value == o.value && n.effect == o.effect
        });
        if !found {
            return vec![FieldError::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            )];
        }
    }
    validate_tolerations(new, path, opts)
}

/// The error Go's `strconv.ParseInt(s, 10, 64)` returns, as text, or `None`
/// if it would succeed. Upstream puts `err.Error()` in the field error, so
/// the exact wording matters: `strconv.ParseInt: parsing "x": invalid syntax`
/// or `... value out of range`. Go accepts one leading sign and leading
/// zeros, and stops at the first overflow before looking at later bytes.
fn go_parse_int64_error(s: &str) -> Option<String> {
    let fail = |why: &str| Some(format!("strconv.ParseInt: parsing {}: {why}", go_quote(s)));
    let (negative, digits) = match s.as_bytes() {
        [] => return fail("invalid syntax"),
        [b'+', rest @ ..] => (false, rest),
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    if digits.is_empty() {
        return fail("invalid syntax");
    }
    let mut n: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return fail("invalid syntax");
        }
        let Some(next) = n
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(c - b'0')))
        else {
            return fail("value out of range");
        };
        n = next;
    }
    let limit = 1u64 << 63; // |i64::MIN|
    if (!negative && n >= limit) || (negative && n > limit) {
        return fail("value out of range");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::field::ErrorType;
    use proptest::prelude::*;

    fn tol(key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: secs,
        }
    }

    fn spec_tolerations() -> Path {
        Path::new("spec").child("tolerations")
    }

    const GATE_OFF: TolerationOptions = TolerationOptions {
        allow_comparison_operators: false,
    };
    const GATE_ON: TolerationOptions = TolerationOptions {
        allow_comparison_operators: true,
    };

    fn fields(errs: &ErrorList) -> Vec<(ErrorType, String)> {
        errs.iter()
            .map(|e| (e.error_type, e.field.clone()))
            .collect()
    }

    #[test]
    fn valid_tolerations_pass() {
        // Upstream TestValidatePod successCases that set tolerations.
        let cases = [
            (
                "populate forgiveness tolerations with exists operator in annotations.",
                tol("foo", "Exists", "", "NoExecute", Some(60)),
            ),
            (
                "populate forgiveness tolerations with equal operator in annotations.",
                tol("foo", "Equal", "bar", "NoExecute", Some(60)),
            ),
            (
                "populate tolerations equal operator in annotations.",
                tol("foo", "Equal", "bar", "NoSchedule", None),
            ),
            (
                "empty key with Exists operator is OK for toleration, empty toleration key means match all taint keys.",
                tol("", "Exists", "", "NoSchedule", None),
            ),
            (
                "empty operator is OK for toleration, defaults to Equal.",
                tol("foo", "", "bar", "NoSchedule", None),
            ),
            (
                "empty effect is OK for toleration, empty toleration effect means match all taint effects.",
                tol("foo", "Equal", "bar", "", None),
            ),
            (
                "negative tolerationSeconds is OK for toleration.",
                tol(
                    "node.kubernetes.io/not-ready",
                    "Exists",
                    "",
                    "NoExecute",
                    Some(-2),
                ),
            ),
        ];
        for (name, t) in cases {
            let errs = validate_tolerations(&[t], &spec_tolerations(), &GATE_OFF);
            assert!(errs.is_empty(), "{name}: {errs:?}");
        }
    }

    #[test]
    fn invalid_tolerations_report_type_field_and_detail() {
        // Upstream TestValidatePod errorCases for tolerations. Upstream only
        // checks that the aggregate message contains the field path; the
        // type and detail asserted here are what its ValidateTolerations
        // produces.
        struct Case<'a> {
            name: &'a str,
            t: Toleration,
            want_type: ErrorType,
            want_field: &'a str,
            want_detail: &'a str,
        }
        let cases = [
            Case {
                name: "invalid toleration key",
                t: tol("nospecialchars^=@", "Equal", "bar", "NoSchedule", None),
                want_type: ErrorType::Invalid,
                want_field: "spec.tolerations[0].key",
                want_detail: "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            },
            Case {
                name: "invalid toleration operator",
                t: tol("foo", "In", "bar", "NoSchedule", None),
                want_type: ErrorType::NotSupported,
                want_field: "spec.tolerations[0].operator",
                want_detail: r#"supported values: "Equal", "Exists""#,
            },
            Case {
                name: "value must be empty when `operator` is 'Exists'",
                t: tol("foo", "Exists", "bar", "NoSchedule", None),
                want_type: ErrorType::Invalid,
                want_field: "spec.tolerations[0].operator",
                want_detail: "value must be empty when `operator` is 'Exists'",
            },
            Case {
                name: "operator must be 'Exists' when `key` is empty",
                t: tol("", "Equal", "bar", "NoSchedule", None),
                want_type: ErrorType::Invalid,
                want_field: "spec.tolerations[0].operator",
                want_detail: "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            },
            Case {
                name: "effect must be 'NoExecute' when `TolerationSeconds` is set",
                t: tol(
                    "node.kubernetes.io/not-ready",
                    "Exists",
                    "",
                    "NoSchedule",
                    Some(20),
                ),
                want_type: ErrorType::Invalid,
                want_field: "spec.tolerations[0].effect",
                want_detail: "effect must be 'NoExecute' when `tolerationSeconds` is set",
            },
        ];
        for Case {
            name,
            t,
            want_type,
            want_field,
            want_detail,
        } in cases
        {
            let errs = validate_tolerations(&[t], &spec_tolerations(), &GATE_OFF);
            assert_eq!(errs.len(), 1, "{name}: {errs:?}");
            assert_eq!(errs[0].error_type, want_type, "{name}");
            assert_eq!(errs[0].field, want_field, "{name}");
            assert_eq!(errs[0].detail, want_detail, "{name}");
        }
    }

    #[test]
    fn toleration_messages_render_like_upstream() {
        let errs = validate_tolerations(
            &[tol("foo", "Exists", "", "Foo", None)],
            &spec_tolerations(),
            &GATE_OFF,
        );
        assert_eq!(
            errs[0].to_string(),
            r#"spec.tolerations[0].effect: Unsupported value: "Foo": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#
        );
        let errs =
            validate_tolerations(&[tol("", "", "", "", None)], &spec_tolerations(), &GATE_OFF);
        assert_eq!(
            errs[0].to_string(),
            "spec.tolerations[0].operator: Invalid value: \"\": operator must be Exists when `key` is empty, which means \"match all values and all keys\""
        );
    }

    #[test]
    fn unset_and_empty_fields_are_the_same() {
        // k8s-openapi distinguishes None from Some(""); upstream's internal
        // types do not. Both spellings must validate identically.
        let explicit = Toleration {
            key: Some(String::new()),
            operator: Some("Exists".into()),
            value: Some(String::new()),
            effect: Some(String::new()),
            toleration_seconds: None,
        };
        assert!(validate_tolerations(&[explicit], &spec_tolerations(), &GATE_OFF).is_empty());
    }

    #[test]
    fn comparison_operators_are_not_supported_without_the_option() {
        for op in ["Lt", "Gt"] {
            let errs = validate_tolerations(
                &[tol("node.example.com/tier", op, "5", "NoSchedule", None)],
                &spec_tolerations(),
                &GATE_OFF,
            );
            assert_eq!(
                fields(&errs),
                vec![(
                    ErrorType::NotSupported,
                    "spec.tolerations[0].operator".into()
                )]
            );
            assert_eq!(
                errs[0].to_string(),
                format!(
                    r#"spec.tolerations[0].operator: Unsupported value: "{op}": supported values: "Equal", "Exists", "Lt", "Gt""#
                )
            );
        }
    }

    #[test]
    fn comparison_operator_values_must_be_canonical_int64() {
        // Gt/Lt cases written against upstream's ValidateTolerations for
        // TaintTolerationComparisonOperators (the upstream test table for
        // this feature was not available to port verbatim).
        let canonical = "must be a valid decimal integer in canonical form";
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("0", vec![]),
            ("5", vec![]),
            ("-5", vec![]),
            ("100", vec![]),
            ("9223372036854775807", vec![]),
            ("-9223372036854775808", vec![]),
            ("0100", vec![canonical.into()]),
            ("+5", vec![canonical.into()]),
            ("-0", vec![canonical.into()]),
            (
                "",
                vec![
                    "must be non-empty".into(),
                    r#"strconv.ParseInt: parsing "": invalid syntax"#.into(),
                ],
            ),
            (
                "abc",
                vec![
                    canonical.into(),
                    r#"strconv.ParseInt: parsing "abc": invalid syntax"#.into(),
                ],
            ),
            (
                "1.5",
                vec![
                    canonical.into(),
                    r#"strconv.ParseInt: parsing "1.5": invalid syntax"#.into(),
                ],
            ),
            (
                "9223372036854775808",
                vec![
                    r#"strconv.ParseInt: parsing "9223372036854775808": value out of range"#.into(),
                ],
            ),
            (
                "-9223372036854775809",
                vec![
                    r#"strconv.ParseInt: parsing "-9223372036854775809": value out of range"#
                        .into(),
                ],
            ),
            (
                "12345678901234567890",
                vec![
                    r#"strconv.ParseInt: parsing "12345678901234567890": value out of range"#
                        .into(),
                ],
            ),
        ];
        for op in ["Lt", "Gt"] {
            for (value, want) in &cases {
                let errs = validate_tolerations(
                    &[tol("node.example.com/tier", op, value, "NoSchedule", None)],
                    &spec_tolerations(),
                    &GATE_ON,
                );
                let details: Vec<String> = errs.iter().map(|e| e.detail.clone()).collect();
                assert_eq!(&details, want, "{op} {value:?}");
                for e in &errs {
                    assert_eq!(e.error_type, ErrorType::Invalid);
                    assert_eq!(e.field, "spec.tolerations[0].value");
                }
            }
        }
    }

    #[test]
    fn comparison_operators_still_follow_the_other_rules() {
        // An empty key still needs Exists; effect rules still apply.
        let errs = validate_tolerations(
            &[tol("", "Gt", "5", "NoSchedule", Some(3))],
            &spec_tolerations(),
            &GATE_ON,
        );
        assert_eq!(
            fields(&errs),
            vec![
                (ErrorType::Invalid, "spec.tolerations[0].operator".into()),
                (ErrorType::Invalid, "spec.tolerations[0].effect".into()),
            ]
        );
    }

    #[test]
    fn uses_comparison_operators_detects_lt_and_gt() {
        let cases = [
            (vec![], false),
            (vec![tol("a", "Equal", "b", "", None)], false),
            (
                vec![
                    tol("a", "Exists", "", "", None),
                    tol("a", "Lt", "1", "", None),
                ],
                true,
            ),
            (vec![tol("a", "Gt", "1", "", None)], true),
            (vec![tol("a", "gt", "1", "", None)], false),
        ];
        for (ts, want) in cases {
            assert_eq!(uses_comparison_operators(&ts), want, "{ts:?}");
        }
    }

    #[test]
    fn toleration_updates_follow_upstream_table() {
        // Upstream TestValidatePodUpdate toleration cases; `err` is the
        // substring upstream expects in the aggregate message ("" = valid).
        struct Case<'a> {
            name: &'a str,
            new: Vec<Toleration>,
            old: Vec<Toleration>,
            want: &'a str,
        }
        let cases = [
            Case {
                name: "existing toleration value modified in pod spec updates",
                new: vec![tol("key1", "", "value2", "", None)],
                old: vec![tol("key1", "", "value1", "", None)],
                want: "spec.tolerations: Forbidden",
            },
            Case {
                name: "existing toleration value modified in pod spec updates with modified tolerationSeconds",
                new: vec![tol("key1", "Equal", "value2", "NoExecute", None)],
                old: vec![tol("key1", "Equal", "value1", "NoExecute", Some(10))],
                want: "spec.tolerations: Forbidden",
            },
            Case {
                name: "modified tolerationSeconds in existing toleration value in pod spec updates",
                new: vec![tol("key1", "Equal", "value1", "NoExecute", Some(10))],
                old: vec![tol("key1", "Equal", "value1", "NoExecute", Some(20))],
                want: "",
            },
            Case {
                name: "toleration modified in updates to an unscheduled pod",
                new: vec![tol("key1", "", "value2", "", None)],
                old: vec![tol("key1", "", "value1", "", None)],
                want: "spec.tolerations: Forbidden",
            },
            Case {
                name: "tolerations unmodified in updates to a scheduled pod",
                new: vec![tol("key1", "", "value1", "", None)],
                old: vec![tol("key1", "", "value1", "", None)],
                want: "",
            },
            Case {
                name: "added valid new toleration to existing tolerations in pod spec updates",
                new: vec![
                    tol("key1", "Equal", "value1", "NoExecute", Some(20)),
                    tol("key2", "Equal", "value2", "NoExecute", Some(30)),
                ],
                old: vec![tol("key1", "Equal", "value1", "NoExecute", Some(10))],
                want: "",
            },
            Case {
                name: "added invalid new toleration to existing tolerations in pod spec updates",
                new: vec![
                    tol("key1", "Equal", "value1", "NoExecute", Some(20)),
                    tol("key2", "Equal", "value2", "NoSchedule", Some(30)),
                ],
                old: vec![tol("key1", "Equal", "value1", "NoExecute", Some(10))],
                want: "spec.tolerations[1].effect",
            },
        ];
        for Case {
            name,
            new,
            old,
            want,
        } in cases
        {
            let errs = validate_toleration_update(&new, &old, &spec_tolerations(), &GATE_OFF);
            let msg = errs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            if want.is_empty() {
                assert!(errs.is_empty(), "{name}: {msg}");
            } else {
                assert!(msg.contains(want), "{name}: want {want:?} in {msg:?}");
            }
        }
    }

    #[test]
    fn removed_or_modified_toleration_is_one_forbidden_error() {
        let errs = validate_toleration_update(
            &[tol("", "", "", "bad", None)],
            &[tol("key1", "Exists", "", "", None)],
            &spec_tolerations(),
            &GATE_OFF,
        );
        // Upstream returns at the first missing toleration, before
        // validating the new list.
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].error_type, ErrorType::Forbidden);
        assert_eq!(
            errs[0].to_string(),
            "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
        );
        assert_eq!(errs[0].error_type.reason(), "FieldValueForbidden");
        // Removing all tolerations is a modification too.
        let errs = validate_toleration_update(
            &[],
            &[tol("key1", "Exists", "", "", None)],
            &spec_tolerations(),
            &GATE_OFF,
        );
        assert_eq!(
            fields(&errs),
            vec![(ErrorType::Forbidden, "spec.tolerations".into())]
        );
    }

    #[test]
    fn update_keeps_comparison_operators_the_old_pod_used() {
        // Upstream: opts allow Lt/Gt when the old pod spec used them, even
        // with the gate off.
        let old = vec![tol("tier", "Gt", "5", "NoSchedule", None)];
        let new = vec![
            tol("tier", "Gt", "5", "NoSchedule", None),
            tol("other", "Exists", "", "", None),
        ];
        let opts = TolerationOptions {
            allow_comparison_operators: uses_comparison_operators(&old),
        };
        assert!(validate_toleration_update(&new, &old, &spec_tolerations(), &opts).is_empty());
        assert!(!validate_toleration_update(&new, &old, &spec_tolerations(), &GATE_OFF).is_empty());
    }

    #[test]
    fn go_parse_int64_error_matches_strconv() {
        let cases = [
            ("0", None),
            ("+5", None),
            ("-0", None),
            ("0100", None),
            ("-9223372036854775808", None),
            ("9223372036854775807", None),
            ("", Some(r#"strconv.ParseInt: parsing "": invalid syntax"#)),
            (
                "-",
                Some(r#"strconv.ParseInt: parsing "-": invalid syntax"#),
            ),
            (
                "+-1",
                Some(r#"strconv.ParseInt: parsing "+-1": invalid syntax"#),
            ),
            (
                "1_000",
                Some(r#"strconv.ParseInt: parsing "1_000": invalid syntax"#),
            ),
            (
                "99999999999999999999x",
                Some(r#"strconv.ParseInt: parsing "99999999999999999999x": value out of range"#),
            ),
            (
                "9223372036854775808",
                Some(r#"strconv.ParseInt: parsing "9223372036854775808": value out of range"#),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(go_parse_int64_error(input).as_deref(), want, "{input:?}");
        }
    }

    fn arb_toleration() -> impl Strategy<Value = Toleration> {
        let field = || {
            proptest::option::of(prop_oneof![
                Just(String::new()),
                Just("Exists".to_string()),
                Just("Equal".to_string()),
                Just("Lt".to_string()),
                Just("Gt".to_string()),
                Just("NoExecute".to_string()),
                "\\PC{0,70}",
            ])
        };
        (
            field(),
            field(),
            field(),
            field(),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(
                |(key, operator, value, effect, toleration_seconds)| Toleration {
                    key,
                    operator,
                    value,
                    effect,
                    toleration_seconds,
                },
            )
    }

    proptest! {
        #[test]
        fn validation_never_panics(
            new in proptest::collection::vec(arb_toleration(), 0..4),
            old in proptest::collection::vec(arb_toleration(), 0..4),
            allow in any::<bool>(),
        ) {
            let opts = TolerationOptions { allow_comparison_operators: allow };
            let _ = validate_tolerations(&new, &spec_tolerations(), &opts);
            let _ = validate_toleration_update(&new, &old, &spec_tolerations(), &opts);
            // A list is always a valid update of itself unless it is invalid
            // on its own.
            prop_assert_eq!(
                validate_toleration_update(&new, &new, &spec_tolerations(), &opts),
                validate_tolerations(&new, &spec_tolerations(), &opts)
            );
        }
    }
}
