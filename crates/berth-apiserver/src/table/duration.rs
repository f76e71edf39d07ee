//! Ages as kubectl shows them: apimachinery's `duration.HumanDuration` and
//! `duration.ShortHumanDuration` (`pkg/util/duration/duration.go`), and the
//! printers' `translateTimestampSince`.
//!
//! Durations are Go `time.Duration`s: signed nanoseconds in an `i64`, and
//! Go's integer division truncates toward zero exactly as Rust's does.

use jiff::Timestamp;

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// `HumanDuration`: about 2-3 significant figures (`3m10s`, `70m`, `2d1h`,
/// `2y1d`). Up to one second in the future reads as `0s` (clock skew);
/// further is `<invalid>`.
pub fn human_duration(d: i64) -> String {
    // Allow deviation no more than 2 seconds (excluded) for machine clocks.
    let seconds = d / SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d / MINUTE;
    if minutes < 10 {
        let s = (d / SECOND) % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d / HOUR;
    if hours < 8 {
        let m = (d / MINUTE) % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        format!("{hours}h{m}m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        format!("{}d{}h", hours / 24, h)
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        format!("{}y{}d", hours / 24 / 365, dy)
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

/// `ShortHumanDuration`: one unit only (`59s`, `1m`, `23h`, `364d`, `1y`).
pub fn short_human_duration(d: i64) -> String {
    let seconds = d / SECOND;
    if seconds < -1 {
        "<invalid>".to_string()
    } else if seconds < 0 {
        "0s".to_string()
    } else if seconds < 60 {
        format!("{seconds}s")
    } else if d / MINUTE < 60 {
        format!("{}m", d / MINUTE)
    } else if d / HOUR < 24 {
        format!("{}h", d / HOUR)
    } else if d / HOUR < 24 * 365 {
        format!("{}d", d / HOUR / 24)
    } else {
        format!("{}y", d / HOUR / 24 / 365)
    }
}

/// `now - then` as a Go `time.Duration`: nanoseconds, saturating at the
/// `i64` range as Go's `Time.Sub` does.
pub fn since(then: Timestamp, now: Timestamp) -> i64 {
    let nanos = now.as_nanosecond() - then.as_nanosecond();
    i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
}

/// `translateTimestampSince`: `<unknown>` for a zero (absent) time, else
/// the [`human_duration`] since it.
pub fn translate_timestamp_since(then: Option<Timestamp>, now: Timestamp) -> String {
    match then {
        Some(t) => human_duration(since(t, now)),
        None => "<unknown>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const DAY: i64 = 24 * HOUR;
    const YEAR: i64 = 365 * DAY;

    #[test]
    fn human_duration_matches_upstream() {
        // Upstream TestHumanDuration.
        let cases = [
            (SECOND, "1s"),
            (70 * SECOND, "70s"),
            (190 * SECOND, "3m10s"),
            (70 * MINUTE, "70m"),
            (47 * HOUR, "47h"),
            (49 * HOUR, "2d1h"),
            ((8 * 24 + 2) * HOUR, "8d"),
            (367 * 24 * HOUR, "367d"),
            ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
            ((365 * 8 * 24 + 2) * HOUR, "8y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d}ns");
        }
    }

    #[test]
    fn human_duration_boundaries_match_upstream() {
        // Upstream TestHumanDurationBoundaries.
        let cases = [
            (-2 * SECOND, "<invalid>"),
            (-2 * SECOND + 1, "0s"),
            (0, "0s"),
            (SECOND - MS, "0s"),
            (2 * MINUTE - MS, "119s"),
            (2 * MINUTE, "2m"),
            (2 * MINUTE + SECOND, "2m1s"),
            (10 * MINUTE - MS, "9m59s"),
            (10 * MINUTE, "10m"),
            (10 * MINUTE + SECOND, "10m"),
            (3 * HOUR - MS, "179m"),
            (3 * HOUR, "3h"),
            (3 * HOUR + MINUTE, "3h1m"),
            (8 * HOUR - MS, "7h59m"),
            (8 * HOUR, "8h"),
            (8 * HOUR + 59 * MINUTE, "8h"),
            (2 * DAY - MS, "47h"),
            (2 * DAY, "2d"),
            (2 * DAY + HOUR, "2d1h"),
            (8 * DAY - MS, "7d23h"),
            (8 * DAY, "8d"),
            (8 * DAY + 23 * HOUR, "8d"),
            (2 * YEAR - MS, "729d"),
            (2 * YEAR, "2y"),
            (2 * YEAR + 23 * HOUR, "2y"),
            (2 * YEAR + 23 * HOUR + 59 * MINUTE, "2y"),
            (2 * YEAR + DAY - MS, "2y"),
            (2 * YEAR + DAY, "2y1d"),
            (3 * YEAR, "3y"),
            (4 * YEAR, "4y"),
            (5 * YEAR, "5y"),
            (6 * YEAR, "6y"),
            (7 * YEAR, "7y"),
            (8 * YEAR - MS, "7y364d"),
            (8 * YEAR, "8y"),
            (8 * YEAR + 364 * DAY, "8y"),
            (9 * YEAR, "9y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d}ns");
        }
    }

    #[test]
    fn short_human_duration_boundaries_match_upstream() {
        // Upstream TestShortHumanDurationBoundaries.
        let cases = [
            (-2 * SECOND, "<invalid>"),
            (-2 * SECOND + 1, "0s"),
            (0, "0s"),
            (SECOND - MS, "0s"),
            (SECOND, "1s"),
            (2 * SECOND - MS, "1s"),
            (MINUTE - MS, "59s"),
            (MINUTE, "1m"),
            (2 * MINUTE - MS, "1m"),
            (HOUR - MS, "59m"),
            (HOUR, "1h"),
            (2 * HOUR - MS, "1h"),
            (DAY - MS, "23h"),
            (DAY, "1d"),
            (2 * DAY - MS, "1d"),
            (YEAR - MS, "364d"),
            (YEAR, "1y"),
            (2 * YEAR - MS, "1y"),
            (2 * YEAR, "2y"),
        ];
        for (d, want) in cases {
            assert_eq!(short_human_duration(d), want, "{d}ns");
        }
    }

    #[test]
    fn extreme_durations_do_not_overflow() {
        assert_eq!(human_duration(i64::MIN), "<invalid>");
        assert_eq!(human_duration(i64::MAX), "292y");
        let far_past = Timestamp::MIN;
        let far_future = Timestamp::MAX;
        assert_eq!(since(far_past, far_future), i64::MAX);
        assert_eq!(since(far_future, far_past), i64::MIN);
        assert_eq!(translate_timestamp_since(None, far_past), "<unknown>");
    }
}
