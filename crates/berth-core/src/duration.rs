//! Durations as Kubernetes flags and metav1.Duration take them: Go's `time.ParseDuration`
//! (`100ms`, `10s`, `1h30m`, `1.5h`), with Go's error messages, and Go's
//! `Duration.String` to write them back.

use std::time::Duration;

/// Why a duration did not parse. `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit { unit: String, input: String },
    /// Go accepts negative durations; a point in a scenario cannot be one.
    #[error("negative duration {0:?}")]
    Negative(String),
}

/// Nanoseconds per unit, as Go's `unitMap`.
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Parses a Go duration string. Negative durations are refused; `-0` is 0.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(input.to_owned());
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        // The number: digits, optionally a fraction; at least one digit.
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after_int) = rest.split_at(int_len);
        let (frac_part, after_num) = match after_int.strip_prefix('.') {
            Some(after_dot) => {
                let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
                after_dot.split_at(frac_len)
            }
            None => ("", after_int),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = after_num
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(after_num.len(), |(i, _)| i);
        let (unit, after_unit) = after_num.split_at(unit_len);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(input.to_owned()));
        }
        let per_unit = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit.to_owned(),
            input: input.to_owned(),
        })?;
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(per_unit).ok_or_else(invalid)?;
        // The fraction as Go adds it: digits into an integer (until it
        // would overflow), then scaled in floating point.
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        for digit in frac_part.bytes() {
            if fraction > (1 << 63) / 10 {
                break;
            }
            fraction = fraction * 10 + u64::from(digit - b'0');
            scale *= 10.0;
        }
        if fraction > 0 {
            value += (fraction as f64 * (per_unit as f64 / scale)) as u128;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        rest = after_unit;
    }
    // Go's limit: about 290 years.
    if total > i64::MAX as u128 {
        return Err(invalid());
    }
    if negative && total != 0 {
        return Err(DurationError::Negative(input.to_owned()));
    }
    Ok(Duration::from_nanos(total as u64))
}

/// Writes a duration as Go's `time.Duration.String` does: `0s`, `1.1µs`, `2.2ms`, `4m5.001s`,
/// `1h0m0s` (the form metav1.Duration has in JSON).
pub fn format_duration(duration: Duration) -> String {
    const SECOND: u128 = 1_000_000_000;
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < SECOND {
        let (unit, per_unit) = match nanos {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{}{unit}", decimal(nanos, per_unit));
    }
    let seconds = nanos / SECOND;
    let (hours, minutes) = (seconds / 3600, seconds / 60 % 60);
    let seconds_part = decimal(seconds % 60 * SECOND + nanos % SECOND, SECOND);
    match (hours, minutes) {
        (0, 0) => format!("{seconds_part}s"),
        (0, _) => format!("{minutes}m{seconds_part}s"),
        _ => format!("{hours}h{minutes}m{seconds_part}s"),
    }
}

/// `value / per_unit` as a decimal without trailing zeros (`per_unit` a power of ten).
fn decimal(value: u128, per_unit: u128) -> String {
    let (whole, fraction) = (value / per_unit, value % per_unit);
    if fraction == 0 {
        return whole.to_string();
    }
    let width = per_unit.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    // upstream: go/src/time/time_test.go parseDurationTests (the
    // non-negative cases) and parseDurationErrorTests.
    #[test]
    fn parses_go_durations() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        let cases: &[(&str, Duration)] = &[
            ("0", Duration::ZERO),
            ("5s", s(5)),
            ("30s", s(30)),
            ("1478s", s(1478)),
            ("+5s", s(5)),
            ("-0", Duration::ZERO),
            ("+0", Duration::ZERO),
            ("5.0s", s(5)),
            ("5.6s", ms(5600)),
            ("5.s", s(5)),
            (".5s", ms(500)),
            ("1.0s", s(1)),
            ("1.00s", s(1)),
            ("1.004s", ms(1004)),
            ("1.0040s", ms(1004)),
            ("100.00100s", ms(100_001)),
            ("10ns", Duration::from_nanos(10)),
            ("11us", Duration::from_micros(11)),
            ("12µs", Duration::from_micros(12)),
            ("12μs", Duration::from_micros(12)),
            ("13ms", ms(13)),
            ("14s", s(14)),
            ("15m", s(15 * 60)),
            ("16h", s(16 * 3600)),
            ("3h30m", s(3 * 3600 + 30 * 60)),
            ("10.5s4m", s(4 * 60) + ms(10_500)),
            ("1h2m3s4ms5us6ns", Duration::from_nanos(3_723_004_005_006)),
            ("39h9m14.425s", ms(((39 * 60 + 9) * 60 + 14) * 1000 + 425)),
            ("52763797000ns", Duration::from_nanos(52_763_797_000)),
            ("0.3333333333333333333h", s(20 * 60)),
            ("1.5h", s(5400)),
            ("1h30m", s(5400)),
            ("100ms", ms(100)),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input).as_ref(), Ok(want), "{input}");
        }
    }

    // upstream: go/src/time/time_test.go durationTests.
    #[test]
    fn formats_as_go_duration_string() {
        let cases: &[(Duration, &str)] = &[
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1100), "1.1µs"),
            (Duration::from_micros(2200), "2.2ms"),
            (Duration::from_millis(3300), "3.3s"),
            (Duration::from_secs(4 * 60 + 5), "4m5s"),
            (Duration::from_millis(4 * 60_000 + 5001), "4m5.001s"),
            (
                Duration::from_millis((5 * 3600 + 6 * 60) * 1000 + 7001),
                "5h6m7.001s",
            ),
            (
                Duration::from_nanos(8 * 60 * 1_000_000_000 + 1),
                "8m0.000000001s",
            ),
            (Duration::from_secs(3600), "1h0m0s"),
            (
                Duration::from_nanos(i64::MAX as u64),
                "2562047h47m16.854775807s",
            ),
        ];
        for (duration, want) in cases {
            assert_eq!(format_duration(*duration), *want, "{duration:?}");
            assert_eq!(parse_duration(want).as_ref(), Ok(duration), "{want}");
        }
    }

    #[test]
    fn rejects_what_go_rejects_with_go_messages() {
        let cases: &[(&str, &str)] = &[
            ("", r#"time: invalid duration """#),
            ("3", r#"time: missing unit in duration "3""#),
            ("-", r#"time: invalid duration "-""#),
            ("s", r#"time: invalid duration "s""#),
            (".", r#"time: invalid duration ".""#),
            ("-.", r#"time: invalid duration "-.""#),
            (".s", r#"time: invalid duration ".s""#),
            ("+.s", r#"time: invalid duration "+.s""#),
            ("1d", r#"time: unknown unit "d" in duration "1d""#),
            ("10 s", r#"time: unknown unit " s" in duration "10 s""#),
            (
                "9223372036854775810ns",
                r#"time: invalid duration "9223372036854775810ns""#,
            ),
            ("-5s", r#"negative duration "-5s""#),
        ];
        for (input, want) in cases {
            let got = parse_duration(input).map_err(|e| e.to_string());
            assert_eq!(got, Err((*want).to_owned()), "{input}");
        }
    }
}
