//! Validation of node taints (`node.spec.taints`): a port of upstream's
//! `validateNodeTaints` and `validateTaintEffect` from
//! `pkg/apis/core/validation/validation.go`.
//!
//! This module owns the taint rules and the taint-effect enumeration, which
//! toleration validation reuses.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::Taint;
use serde_json::Value;

use super::field::{ErrorList, FieldError, Path};
use super::names::{is_qualified_name, is_valid_label_value};

pub(crate) const TAINT_EFFECT_NO_SCHEDULE: &str = "NoSchedule";
pub(crate) const TAINT_EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
pub(crate) const TAINT_EFFECT_NO_EXECUTE: &str = "NoExecute";

/// Upstream's `validateTaintEffect`. An empty effect is `Required` unless
/// `allow_empty`; anything else outside the three effects is
/// `NotSupported`. (With `allow_empty` an empty effect still falls through
/// to `NotSupported`, as upstream does; its callers only pass non-empty
/// effects then.)
pub(crate) fn validate_taint_effect(effect: &str, allow_empty: bool, path: &Path) -> ErrorList {
    if !allow_empty && effect.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    match effect {
        TAINT_EFFECT_NO_SCHEDULE | TAINT_EFFECT_PREFER_NO_SCHEDULE | TAINT_EFFECT_NO_EXECUTE => {
            Vec::new()
        }
        // Upstream lists the values in this order (NoScheduleNoAdmit is
        // reserved there but not implemented).
        other => vec![FieldError::not_supported(
            path,
            other,
            &[
                TAINT_EFFECT_NO_SCHEDULE,
                TAINT_EFFECT_PREFER_NO_SCHEDULE,
                TAINT_EFFECT_NO_EXECUTE,
            ],
        )],
    }
}

/// Upstream's `ValidateLabelName`: every problem with a qualified name is a
/// separate `Invalid` error carrying the name.
pub(crate) fn validate_label_name(name: &str, path: &Path) -> ErrorList {
    is_qualified_name(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect()
}

/// Validates a node's taints (upstream `validateNodeTaints`): each key must
/// be a qualified name, each value a label value, each effect one of
/// `NoSchedule`, `PreferNoSchedule`, `NoExecute`, and no two taints may
/// share a key and effect. `path` is the list's path, e.g. `spec.taints`.
///
/// (Upstream's `ValidateNode` passes `metadata.taints` here, a long-standing
/// quirk; berth's API server chooses the path it reports.)
pub fn validate_node_taints(taints: &[Taint], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    // effect -> keys already seen with that effect.
    let mut unique: HashMap<&str, HashSet<&str>> = HashMap::new();

    for (i, taint) in taints.iter().enumerate() {
        let idx_path = path.index(i);
        let value = taint.value.as_deref().unwrap_or("");

        errs.extend(validate_label_name(&taint.key, &idx_path.child("key")));
        let value_errs = is_valid_label_value(value);
        if !value_errs.is_empty() {
            errs.push(FieldError::invalid(
                &idx_path.child("value"),
                value,
                value_errs.join(";"),
            ));
        }
        errs.extend(validate_taint_effect(
            &taint.effect,
            false,
            &idx_path.child("effect"),
        ));

        let seen = unique.entry(taint.effect.as_str()).or_default();
        if !seen.insert(taint.key.as_str()) {
            // Upstream reports the whole taint as the duplicate value.
            let mut dup = FieldError::duplicate(
                &idx_path,
                serde_json::to_value(taint).unwrap_or(Value::Null),
            );
            dup.detail = "taints must be unique by key and effect pair".to_string();
            errs.push(dup);
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::taint;
    use crate::validation::field::ErrorType;

    fn spec_taints() -> Path {
        Path::new("spec").child("taints")
    }

    #[test]
    fn valid_taints_pass() {
        // Shapes of upstream TestValidateNode's taint success cases (written
        // from upstream's rules; that table was not re-read for this port).
        let cases: Vec<Vec<Taint>> = vec![
            vec![],
            vec![taint("GPU", "true", "NoSchedule")],
            vec![
                taint("dedicated", "special-user-1", "NoSchedule"),
                taint("dedicated", "special-user-2", "NoExecute"),
                taint("dedicated", "special-user-3", "PreferNoSchedule"),
            ],
            vec![taint("example.com/dedicated", "", "NoExecute")],
        ];
        for taints in cases {
            assert_eq!(
                validate_node_taints(&taints, &spec_taints()),
                vec![],
                "{taints:?}"
            );
        }
    }

    #[test]
    fn invalid_taints_report_type_and_field() {
        // Upstream TestValidateNode's taint error cases (names and inputs as
        // upstream's table has them). Upstream only checks that each error's
        // field is one of the taint fields; these pin the type and field.
        // (case name, taints, expected (type, field) of each error)
        type Case = (&'static str, Vec<Taint>, Vec<(ErrorType, &'static str)>);
        let cases: Vec<Case> = vec![
            (
                "missing-taint-key",
                vec![taint("", "special-user-1", "NoSchedule")],
                vec![
                    (ErrorType::Invalid, "spec.taints[0].key"),
                    (ErrorType::Invalid, "spec.taints[0].key"),
                ],
            ),
            (
                "bad-taint-key",
                vec![taint(
                    "NoUppercaseOrSpecialCharsLike=Equals",
                    "special-user-1",
                    "NoSchedule",
                )],
                vec![(ErrorType::Invalid, "spec.taints[0].key")],
            ),
            (
                "bad-taint-value",
                vec![taint("dedicated", "some\\bad\\value", "NoSchedule")],
                vec![(ErrorType::Invalid, "spec.taints[0].value")],
            ),
            (
                "missing-taint-effect",
                vec![taint("dedicated", "special-user-3", "")],
                vec![(ErrorType::Required, "spec.taints[0].effect")],
            ),
            (
                "invalid-taint-effect",
                vec![taint("dedicated", "special-user-3", "NoScheduleNoAdmit")],
                vec![(ErrorType::NotSupported, "spec.taints[0].effect")],
            ),
            (
                "duplicated-taints-with-same-key-effect",
                vec![
                    taint("dedicated", "special-user-1", "NoSchedule"),
                    taint("dedicated", "special-user-2", "NoSchedule"),
                ],
                vec![(ErrorType::Duplicate, "spec.taints[1]")],
            ),
        ];
        for (name, taints, want) in cases {
            let got: Vec<(ErrorType, String)> = validate_node_taints(&taints, &spec_taints())
                .into_iter()
                .map(|e| (e.error_type, e.field))
                .collect();
            let want: Vec<(ErrorType, String)> =
                want.into_iter().map(|(t, f)| (t, f.to_string())).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn same_key_with_different_effects_is_not_a_duplicate() {
        let taints = vec![
            taint("dedicated", "a", "NoSchedule"),
            taint("dedicated", "a", "NoExecute"),
        ];
        assert!(validate_node_taints(&taints, &spec_taints()).is_empty());
    }

    #[test]
    fn taint_error_messages_match_upstream() {
        let errs = validate_node_taints(&[taint("foo", "bar", "Foo")], &spec_taints());
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec![
                r#"spec.taints[0].effect: Unsupported value: "Foo": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#
            ]
        );

        let errs = validate_node_taints(&[taint("foo", "", "")], &spec_taints());
        assert_eq!(errs[0].to_string(), "spec.taints[0].effect: Required value");
        assert_eq!(errs[0].error_type.reason(), "FieldValueRequired");

        let errs = validate_node_taints(
            &[
                taint("foo", "a", "NoSchedule"),
                taint("foo", "b", "NoSchedule"),
            ],
            &spec_taints(),
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].detail,
            "taints must be unique by key and effect pair"
        );
        assert_eq!(
            errs[0].bad_value,
            Some(serde_json::json!({"key": "foo", "value": "b", "effect": "NoSchedule"}))
        );
    }

    #[test]
    fn taint_value_errors_are_joined_with_semicolons() {
        let long_bad = format!("-{}", "a".repeat(63));
        let errs = validate_node_taints(&[taint("k", &long_bad, "NoSchedule")], &spec_taints());
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .detail
                .starts_with("must be no more than 63 bytes;a valid label")
        );
    }
}
