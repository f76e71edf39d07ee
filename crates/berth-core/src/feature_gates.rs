//! Feature gates that change matching semantics, parsed from the upstream
//! `--feature-gates Name=bool,...` flag syntax with upstream's error messages.
//!
//! berth knows only the gates it implements; like upstream's
//! `component-base/featuregate`, an unknown name is an error rather than
//! being silently ignored, so a typo never changes behaviour unnoticed.

use std::fmt;
use std::str::FromStr;

/// The gate that enables the `Gt` and `Lt` toleration operators.
pub const TAINT_TOLERATION_COMPARISON_OPERATORS: &str = "TaintTolerationComparisonOperators";
/// The gate that lets a StatefulSet's rolling update replace up to
/// `maxUnavailable` pods at once.
pub const MAX_UNAVAILABLE_STATEFUL_SET: &str = "MaxUnavailableStatefulSet";

/// The feature gates berth honours. Cheap to copy: pass it by value to
/// every function that matches tolerations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// `TaintTolerationComparisonOperators`: alpha upstream (off there),
    /// on by default in berth.
    pub taint_toleration_comparison_operators: bool,
    /// `MaxUnavailableStatefulSet`: beta and on by default upstream since
    /// 1.35.
    pub max_unavailable_stateful_set: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            taint_toleration_comparison_operators: true,
            max_unavailable_stateful_set: true,
        }
    }
}

/// A `--feature-gates` value that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    #[error("missing bool value for {0}")]
    MissingValue(String),
    #[error(
        "invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
    )]
    InvalidValue { name: String, value: String },
    #[error("unrecognized feature gate: {0}")]
    Unrecognized(String),
}

impl FeatureGates {
    /// Applies a `Name=bool,Name=bool` list on top of the current values.
    pub fn apply(&mut self, spec: &str) -> Result<(), FeatureGateError> {
        for item in spec.split(',') {
            if item.is_empty() {
                continue;
            }
            let (name, value) = match item.split_once('=') {
                Some((name, value)) => (name.trim(), value.trim()),
                None => return Err(FeatureGateError::MissingValue(item.trim().to_string())),
            };
            let enabled = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
                name: name.to_string(),
                value: value.to_string(),
            })?;
            match name {
                TAINT_TOLERATION_COMPARISON_OPERATORS => {
                    self.taint_toleration_comparison_operators = enabled
                }
                MAX_UNAVAILABLE_STATEFUL_SET => self.max_unavailable_stateful_set = enabled,
                other => return Err(FeatureGateError::Unrecognized(other.to_string())),
            }
        }
        Ok(())
    }
}

impl FromStr for FeatureGates {
    type Err = FeatureGateError;

    /// Berth's defaults with the given overrides applied.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut gates = FeatureGates::default();
        gates.apply(spec)?;
        Ok(gates)
    }
}

impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{MAX_UNAVAILABLE_STATEFUL_SET}={},{TAINT_TOLERATION_COMPARISON_OPERATORS}={}",
            self.max_unavailable_stateful_set, self.taint_toleration_comparison_operators
        )
    }
}

/// Go's `strconv.ParseBool`, which the upstream flag parser uses.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_operators_are_on_by_default() {
        assert!(FeatureGates::default().taint_toleration_comparison_operators);
    }

    #[test]
    fn max_unavailable_stateful_set_is_on_by_default_as_upstream() {
        let gates = FeatureGates::default();
        assert!(gates.max_unavailable_stateful_set);
        let off: FeatureGates = "MaxUnavailableStatefulSet=false"
            .parse()
            .unwrap_or_default();
        assert!(!off.max_unavailable_stateful_set);
        assert!(off.taint_toleration_comparison_operators);
        assert_eq!(
            gates.to_string(),
            "MaxUnavailableStatefulSet=true,TaintTolerationComparisonOperators=true"
        );
    }

    #[test]
    fn feature_gate_flag_parses_like_upstream() {
        let cases: &[(&str, Result<bool, &str>)] = &[
            ("", Ok(true)),
            ("TaintTolerationComparisonOperators=false", Ok(false)),
            ("TaintTolerationComparisonOperators=true", Ok(true)),
            (" TaintTolerationComparisonOperators = F ", Ok(false)),
            ("TaintTolerationComparisonOperators=0,", Ok(false)),
            (
                "TaintTolerationComparisonOperators=false,TaintTolerationComparisonOperators=1",
                Ok(true),
            ),
            (
                "TaintTolerationComparisonOperators",
                Err("missing bool value for TaintTolerationComparisonOperators"),
            ),
            (
                "TaintTolerationComparisonOperators=yes",
                Err(
                    "invalid value of TaintTolerationComparisonOperators=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
                ),
            ),
            (
                "NoSuchGate=true",
                Err("unrecognized feature gate: NoSuchGate"),
            ),
        ];
        for (spec, want) in cases {
            let got = spec
                .parse::<FeatureGates>()
                .map(|g| g.taint_toleration_comparison_operators)
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "spec {spec:?}");
        }
    }
}
