//! policy/v1 PodDisruptionBudget rules, `pkg/apis/policy/validation`
//! (`ValidatePodDisruptionBudgetSpec`, `ValidatePodDisruptionBudgetStatusUpdate`;
//! `ValidateObjectMeta` is the API server's, as for every type).

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};

use super::apps::{not_more_than_100_percent, validate_positive_int_or_percent};
use super::{ErrorList, FieldError, Path, validate_label_selector, validate_nonnegative};
use crate::disruption::{ALWAYS_ALLOW, IF_HEALTHY_BUDGET};

/// `ValidatePodDisruptionBudget` but its metadata: the spec.
pub fn validate_pod_disruption_budget(pdb: &PodDisruptionBudget) -> ErrorList {
    let spec = pdb.spec.clone().unwrap_or_default();
    validate_pod_disruption_budget_spec(&spec, &Path::new("spec"))
}

/// `ValidatePodDisruptionBudgetSpec`: at most one of `minAvailable` and
/// `maxUnavailable`, each a non-negative integer or a percentage up to
/// 100 %, a valid selector, a supported `unhealthyPodEvictionPolicy`.
pub fn validate_pod_disruption_budget_spec(
    spec: &PodDisruptionBudgetSpec,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        errs.push(FieldError::invalid(
            path,
            serde_json::to_value(spec).unwrap_or_default(),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [
        ("minAvailable", &spec.min_available),
        ("maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(value) = value {
            let path = path.child(field);
            errs.extend(validate_positive_int_or_percent(value, &path));
            errs.extend(not_more_than_100_percent(value, &path));
        }
    }
    if let Some(selector) = &spec.selector {
        errs.extend(validate_label_selector(selector, &path.child("selector")));
    }
    if let Some(policy) = &spec.unhealthy_pod_eviction_policy
        && policy != ALWAYS_ALLOW
        && policy != IF_HEALTHY_BUDGET
    {
        errs.push(FieldError::not_supported(
            &path.child("unhealthyPodEvictionPolicy"),
            policy.as_str(),
            &[ALWAYS_ALLOW, IF_HEALTHY_BUDGET],
        ));
    }
    errs
}

/// `ValidatePodDisruptionBudgetStatusUpdate`'s counts: none negative.
pub fn validate_pod_disruption_budget_status(pdb: &PodDisruptionBudget) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(status) = &pdb.status else {
        return errs;
    };
    let path = Path::new("status");
    for (field, value) in [
        ("disruptionsAllowed", status.disruptions_allowed),
        ("currentHealthy", status.current_healthy),
        ("desiredHealthy", status.desired_healthy),
        ("expectedPods", status.expected_pods),
    ] {
        errs.extend(validate_nonnegative(
            i64::from(value.unwrap_or(0)),
            &path.child(field),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;

    /// Upstream `TestValidateMinAvailablePodDisruptionBudgetSpec`,
    /// `TestValidateMinAvailablePodAndMaxUnavailableDisruptionBudgetSpec`,
    /// `TestValidateUnhealthyPodEvictionPolicyDisruptionBudgetSpec` and the
    /// selector cases: the error fields.
    #[test]
    fn pdb_spec_validation_as_upstream() {
        struct Case {
            name: &'static str,
            spec: PodDisruptionBudgetSpec,
            want: Vec<&'static str>,
        }
        let int = |n| Some(IntOrString::Int(n));
        let pct = |s: &str| Some(IntOrString::String(s.into()));
        let cases = [
            Case {
                name: "minAvailable 0, 10, 1%, 100% are valid",
                spec: PodDisruptionBudgetSpec {
                    min_available: int(10),
                    ..Default::default()
                },
                want: vec![],
            },
            Case {
                name: "negative minAvailable",
                spec: PodDisruptionBudgetSpec {
                    min_available: int(-1),
                    ..Default::default()
                },
                want: vec!["spec.minAvailable"],
            },
            Case {
                name: "minAvailable over 100%",
                spec: PodDisruptionBudgetSpec {
                    min_available: pct("101%"),
                    ..Default::default()
                },
                want: vec!["spec.minAvailable"],
            },
            Case {
                name: "maxUnavailable not a percentage",
                spec: PodDisruptionBudgetSpec {
                    max_unavailable: pct("1.1%"),
                    ..Default::default()
                },
                want: vec!["spec.maxUnavailable"],
            },
            Case {
                name: "both set",
                spec: PodDisruptionBudgetSpec {
                    min_available: pct("10%"),
                    max_unavailable: int(1),
                    ..Default::default()
                },
                want: vec!["spec"],
            },
            Case {
                name: "AlwaysAllow and IfHealthyBudget are supported",
                spec: PodDisruptionBudgetSpec {
                    unhealthy_pod_eviction_policy: Some(ALWAYS_ALLOW.into()),
                    ..Default::default()
                },
                want: vec![],
            },
            Case {
                name: "an unknown unhealthyPodEvictionPolicy",
                spec: PodDisruptionBudgetSpec {
                    unhealthy_pod_eviction_policy: Some("Invalid".into()),
                    ..Default::default()
                },
                want: vec!["spec.unhealthyPodEvictionPolicy"],
            },
            Case {
                name: "an invalid selector operator",
                spec: PodDisruptionBudgetSpec {
                    selector: Some(LabelSelector {
                        match_labels: None,
                        match_expressions: Some(vec![LabelSelectorRequirement {
                            key: "foo".into(),
                            operator: "In".into(),
                            values: None,
                        }]),
                    }),
                    ..Default::default()
                },
                want: vec!["spec.selector.matchExpressions[0].values"],
            },
        ];
        for case in cases {
            let got: Vec<String> =
                validate_pod_disruption_budget_spec(&case.spec, &Path::new("spec"))
                    .iter()
                    .map(|e| e.field.to_string())
                    .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    /// Negative counts in a status write are refused.
    #[test]
    fn pdb_status_counts_must_not_be_negative() {
        let pdb = PodDisruptionBudget {
            status: Some(k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus {
                disruptions_allowed: Some(-1),
                expected_pods: Some(2),
                ..Default::default()
            }),
            ..Default::default()
        };
        let got: Vec<String> = validate_pod_disruption_budget_status(&pdb)
            .iter()
            .map(|e| e.field.to_string())
            .collect();
        assert_eq!(got, ["status.disruptionsAllowed"]);
    }
}
