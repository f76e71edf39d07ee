//! The checks objects share for their metadata and their label selectors,
//! with upstream's field errors: apimachinery's `ValidateLabels`,
//! `ValidateLabelSelector` (strict: selector values must be label values)
//! and core's `ValidateAnnotations` (with the total size limit), and the
//! `apivalidation` helpers `ValidateNonnegativeField` and
//! `ValidateImmutableField`. The API server's metadata validation and the
//! pod template's call these.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Serialize;

use crate::validation::names::{is_qualified_name, is_valid_label_value};
use crate::validation::{ErrorList, FieldError, Path};

/// Upstream's `TotalAnnotationSizeLimitB` (256 KiB): keys and values of
/// one object's annotations together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";

/// `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE: &str = "field is immutable";

/// `ValidateLabelName`: a qualified name, every problem at `path`.
fn validate_label_name(name: &str, path: &Path) -> ErrorList {
    is_qualified_name(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect()
}

/// `ValidateLabels`: every key a qualified name and every value a label
/// value, reported at `path` itself (upstream names no key).
pub fn validate_labels<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    path: &Path,
) -> ErrorList {
    let mut errors = ErrorList::new();
    for (key, value) in labels {
        errors.extend(validate_label_name(key, path));
        for msg in is_valid_label_value(value) {
            errors.push(FieldError::invalid(path, value, msg));
        }
    }
    errors
}

/// `ValidateAnnotations`: every key a qualified name once lowercased, and
/// keys and values together at most [`TOTAL_ANNOTATION_SIZE_LIMIT_BYTES`].
pub fn validate_annotations<'a, I>(annotations: I, path: &Path) -> ErrorList
where
    I: IntoIterator<Item = (&'a str, &'a str)> + Clone,
{
    let mut errors = ErrorList::new();
    for (key, _) in annotations.clone() {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errors.push(FieldError::invalid(path, key, msg));
        }
    }
    let total: usize = annotations
        .into_iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errors.push(FieldError::too_long(
            path,
            "",
            TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
        ));
    }
    errors
}

/// `ValidateLabelSelector` with `AllowInvalidLabelValueInSelector: false`
/// (what the workload types ask for): `matchLabels` as labels, and each
/// `matchExpressions` requirement's operator, values and key.
pub fn validate_label_selector(selector: &LabelSelector, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    if let Some(labels) = &selector.match_labels {
        errors.extend(validate_labels(
            labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &path.child("matchLabels"),
        ));
    }
    for (i, requirement) in selector.match_expressions.iter().flatten().enumerate() {
        let path = path.child("matchExpressions").index(i);
        let values = requirement.values.as_deref().unwrap_or_default();
        match requirement.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                &path.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                &path.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(FieldError::invalid(
                &path.child("operator"),
                other,
                "not a valid selector operator",
            )),
        }
        errors.extend(validate_label_name(&requirement.key, &path.child("key")));
        for (j, value) in values.iter().enumerate() {
            for msg in is_valid_label_value(value) {
                errors.push(FieldError::invalid(
                    &path.child("values").index(j),
                    value.as_str(),
                    msg,
                ));
            }
        }
    }
    errors
}

/// `ValidateNonnegativeField`.
pub fn validate_nonnegative(value: i64, path: &Path) -> ErrorList {
    if value < 0 {
        vec![FieldError::invalid(path, value, NEGATIVE)]
    } else {
        ErrorList::new()
    }
}

/// `ValidateImmutableField`: `new` must equal `old`; the error shows the
/// new value (as JSON, where upstream prints Go syntax).
pub fn validate_immutable<T: PartialEq + Serialize>(new: &T, old: &T, path: &Path) -> ErrorList {
    if new == old {
        return ErrorList::new();
    }
    let shown = serde_json::to_value(new).unwrap_or_default();
    vec![FieldError::invalid(path, shown, FIELD_IMMUTABLE)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use std::collections::BTreeMap;

    fn requirement(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    /// Upstream `TestValidateLabelSelector` (apimachinery's
    /// `meta/v1/validation`), as field paths and error types.
    #[test]
    fn label_selectors_are_validated_as_apimachinery_does() {
        struct Case {
            name: &'static str,
            selector: LabelSelector,
            want: Vec<&'static str>,
        }
        let cases = [
            Case {
                name: "match labels and an In expression",
                selector: LabelSelector {
                    match_labels: Some(BTreeMap::from([("a".into(), "b".into())])),
                    match_expressions: Some(vec![requirement("c", "In", &["d"])]),
                },
                want: vec![],
            },
            Case {
                name: "In without values",
                selector: LabelSelector {
                    match_expressions: Some(vec![requirement("c", "In", &[])]),
                    ..Default::default()
                },
                want: vec![
                    "s.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ],
            },
            Case {
                name: "Exists with values",
                selector: LabelSelector {
                    match_expressions: Some(vec![requirement("c", "Exists", &["d"])]),
                    ..Default::default()
                },
                want: vec![
                    "s.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ],
            },
            Case {
                name: "an unknown operator",
                selector: LabelSelector {
                    match_expressions: Some(vec![requirement("c", "Gt", &["1"])]),
                    ..Default::default()
                },
                want: vec![
                    "s.matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector operator",
                ],
            },
            Case {
                name: "a bad key and a bad value",
                selector: LabelSelector {
                    match_labels: Some(BTreeMap::from([("a b".into(), "c".into())])),
                    match_expressions: Some(vec![requirement("c", "In", &["d e"])]),
                },
                want: vec![
                    "s.matchLabels: Invalid value: \"a b\"",
                    "s.matchExpressions[0].values[0]: Invalid value: \"d e\"",
                ],
            },
        ];
        for case in cases {
            let got: Vec<String> = validate_label_selector(&case.selector, &Path::new("s"))
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got.len(), case.want.len(), "{}: {got:?}", case.name);
            for (got, want) in got.iter().zip(&case.want) {
                assert!(got.starts_with(want), "{}: {got} vs {want}", case.name);
            }
        }
    }

    #[test]
    fn nonnegative_and_immutable_fields() {
        assert!(validate_nonnegative(0, &Path::new("x")).is_empty());
        assert_eq!(
            validate_nonnegative(-1, &Path::new("x"))[0].to_string(),
            "x: Invalid value: -1: must be greater than or equal to 0"
        );
        assert!(validate_immutable(&1, &1, &Path::new("x")).is_empty());
        assert_eq!(
            validate_immutable(&"b", &"a", &Path::new("x"))[0].to_string(),
            "x: Invalid value: \"b\": field is immutable"
        );
    }

    #[test]
    fn annotations_are_qualified_names_in_any_case_within_the_size_limit() {
        let big = "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
        let path = Path::new("metadata").child("annotations");
        assert!(validate_annotations([("Example.com/Key", "v")], &path).is_empty());
        assert_eq!(
            validate_annotations([("k", big.as_str())], &path)[0].to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(validate_annotations([("a b", "")], &path).len(), 1);
    }
}
