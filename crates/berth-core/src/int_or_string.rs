//! `maxSurge`, `maxUnavailable` and their kin: an integer or a percentage
//! of some total, resolved as apimachinery's `intstr` package does
//! (`GetScaledValueFromIntOrPercent`).
//!
//! Which way a percentage rounds is the caller's rule, not this module's:
//! a Deployment rounds its surge up and its unavailability down, a
//! DaemonSet rounds both up.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A string that is not `<integer>%`, with upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntOrStringError {
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
    #[error("invalid value for IntOrString: invalid value {0:?}: not an integer")]
    NotAnInteger(String),
}

/// `GetScaledValueFromIntOrPercent`: an integer as it is; `"N%"` as N% of
/// `total`, rounded up (`round_up`) or down. The percentage is parsed as
/// Go's `strconv.Atoi` does (an optional sign, decimal digits), and the
/// product is computed in `f64` like upstream's `math.Ceil`/`math.Floor`
/// over `float64`, then saturated into `i32`.
pub fn scaled_value(
    value: &IntOrString,
    total: i32,
    round_up: bool,
) -> Result<i32, IntOrStringError> {
    match value {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let digits = s
                .strip_suffix('%')
                .ok_or(IntOrStringError::NotAPercentage)?;
            let percent: i64 = digits
                .parse()
                .map_err(|_| IntOrStringError::NotAnInteger(s.clone()))?;
            let scaled = percent as f64 * f64::from(total) / 100.0;
            let rounded = if round_up {
                scaled.ceil()
            } else {
                scaled.floor()
            };
            // `as` saturates at the i32 bounds (and maps NaN to 0, which
            // the product of two finite numbers never is).
            Ok(rounded as i32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream `TestGetScaledValueFromIntOrPercent` (apimachinery intstr).
    #[test]
    fn scaled_value_as_apimachinery() {
        struct Case {
            input: IntOrString,
            total: i32,
            round_up: bool,
            want: Result<i32, IntOrStringError>,
        }
        let pct = |s: &str| IntOrString::String(s.to_string());
        for case in [
            Case {
                input: IntOrString::Int(123),
                total: 0,
                round_up: false,
                want: Ok(123),
            },
            Case {
                input: pct("90%"),
                total: 100,
                round_up: true,
                want: Ok(90),
            },
            Case {
                input: pct("90%"),
                total: 95,
                round_up: true,
                want: Ok(86),
            },
            Case {
                input: pct("90%"),
                total: 95,
                round_up: false,
                want: Ok(85),
            },
            Case {
                input: pct("%"),
                total: 0,
                round_up: false,
                want: Err(IntOrStringError::NotAnInteger("%".into())),
            },
            Case {
                input: pct("90#"),
                total: 0,
                round_up: false,
                want: Err(IntOrStringError::NotAPercentage),
            },
            Case {
                input: pct("#%"),
                total: 0,
                round_up: false,
                want: Err(IntOrStringError::NotAnInteger("#%".into())),
            },
            Case {
                input: pct("90"),
                total: 0,
                round_up: false,
                want: Err(IntOrStringError::NotAPercentage),
            },
        ] {
            assert_eq!(
                scaled_value(&case.input, case.total, case.round_up),
                case.want,
                "{:?} of {} (round up: {})",
                case.input,
                case.total,
                case.round_up
            );
        }
    }
}
