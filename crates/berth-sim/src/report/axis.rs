//! The report's time axis: broken where nothing happens.
//!
//! A run of two hours whose first two minutes hold most of its events
//! would crush them into a few pixels on a linear axis. Here each stretch
//! between two instants where something happens gets its true length up
//! to `quiet` (a sixtieth of the run, at least 20 s); a longer quiet
//! stretch is drawn as half of `quiet`, plus a little the longer it is,
//! and marked as a break (`≈` on the axis, a shaded band) that says how
//! long it really is. Within a stretch time is linear, so durations read
//! true everywhere except across a marked break.

use crate::timeline::Millis;

/// One stretch of the axis between two instants where something happens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stretch {
    pub from: Millis,
    pub to: Millis,
    /// Where it starts and ends on the axis, 0 to 1.
    pub x0: f64,
    pub x1: f64,
    /// Shortened: a break.
    pub broken: bool,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub run: Millis,
    pub stretches: Vec<Stretch>,
}

/// Round tick intervals, in seconds.
const STEPS_S: &[u64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
];

/// Ticks closer than this (a share of the axis) to the previous one are
/// dropped, so their labels never overlap.
const MIN_TICK_GAP: f64 = 0.06;

impl Axis {
    /// The axis for a run of `run` where things happen at `instants`.
    pub fn new(run: Millis, instants: impl IntoIterator<Item = Millis>) -> Axis {
        let quiet = (run / 60).max(20_000);
        let mut at: Vec<Millis> = instants
            .into_iter()
            .chain([0, run])
            .map(|t| t.min(run))
            .collect();
        at.sort_unstable();
        at.dedup();
        let weight = |d: Millis| -> f64 {
            if d <= quiet {
                d as f64
            } else {
                // Half a quiet stretch; longer breaks a little longer, so
                // their order shows.
                quiet as f64 / 2.0 * (1.0 + 0.2 * (d as f64 / quiet as f64).ln())
            }
        };
        let total: f64 = at.windows(2).map(|w| weight(w[1] - w[0])).sum();
        let total = if total > 0.0 { total } else { 1.0 };
        let mut x = 0.0;
        let stretches = at
            .windows(2)
            .map(|w| {
                let x0 = x;
                x += weight(w[1] - w[0]) / total;
                Stretch {
                    from: w[0],
                    to: w[1],
                    x0,
                    x1: x,
                    broken: w[1] - w[0] > quiet,
                }
            })
            .collect();
        Axis { run, stretches }
    }

    /// Where `t` is on the axis, 0 to 1.
    pub fn x(&self, t: Millis) -> f64 {
        let t = t.min(self.run);
        let Some(s) = self.stretches.iter().find(|s| t <= s.to) else {
            return 1.0;
        };
        if s.to == s.from {
            return s.x0;
        }
        s.x0 + (s.x1 - s.x0) * (t - s.from) as f64 / (s.to - s.from) as f64
    }

    /// Labelled instants: round ones inside unbroken stretches and the
    /// ends of each break, none closer than [`MIN_TICK_GAP`] to another.
    pub fn ticks(&self) -> Vec<Millis> {
        let unbroken: Millis = self
            .stretches
            .iter()
            .filter(|s| !s.broken)
            .map(|s| s.to - s.from)
            .sum();
        let share: f64 = self
            .stretches
            .iter()
            .filter(|s| !s.broken)
            .map(|s| s.x1 - s.x0)
            .sum();
        // The round interval that leaves about MIN_TICK_GAP between ticks.
        let per_unit = if share > 0.0 {
            unbroken as f64 / share
        } else {
            self.run as f64
        };
        let step = STEPS_S
            .iter()
            .map(|s| s * 1000)
            .find(|s| *s as f64 >= per_unit * MIN_TICK_GAP)
            .unwrap_or(86_400_000);
        let mut candidates = vec![0];
        for s in &self.stretches {
            if s.broken {
                candidates.extend([s.from, s.to]);
            } else {
                let first = s.from.div_ceil(step) * step;
                candidates.extend((first..=s.to).step_by(step as usize));
            }
        }
        candidates.push(self.run);
        candidates.sort_unstable();
        candidates.dedup();
        let mut kept: Vec<Millis> = Vec::new();
        for t in candidates {
            let fits = kept
                .last()
                .is_none_or(|last| self.x(t) - self.x(*last) >= MIN_TICK_GAP);
            if fits {
                kept.push(t);
            } else if t == self.run {
                // The end of the run is always labelled.
                while kept.len() > 1
                    && kept
                        .last()
                        .is_some_and(|last| self.x(t) - self.x(*last) < MIN_TICK_GAP)
                {
                    kept.pop();
                }
                kept.push(t);
            }
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-hour run with its events in the first two minutes gives
    /// those minutes most of the axis; the quiet rest is one break.
    #[test]
    fn the_busy_start_of_a_long_run_gets_most_of_the_axis() {
        let axis = Axis::new(7_200_000, [10_000, 60_000, 110_000]);
        // Linear within the busy part: 10 s and 50 s keep their ratio.
        let (a, b) = (axis.x(10_000), axis.x(60_000) - axis.x(10_000));
        assert!((b / a - 5.0).abs() < 1e-9, "{a} {b}");
        assert!(axis.x(110_000) > 0.4, "{}", axis.x(110_000));
        let breaks: Vec<(Millis, Millis)> = axis
            .stretches
            .iter()
            .filter(|s| s.broken)
            .map(|s| (s.from, s.to))
            .collect();
        assert_eq!(breaks, vec![(110_000, 7_200_000)]);
        assert_eq!(axis.x(7_200_000), 1.0);
    }

    #[test]
    fn a_run_with_no_long_quiet_stretch_is_linear() {
        let axis = Axis::new(60_000, [15_000, 30_000, 45_000]);
        for (t, want) in [(0, 0.0), (15_000, 0.25), (45_000, 0.75), (60_000, 1.0)] {
            assert!((axis.x(t) - want).abs() < 1e-9, "x({t}) = {}", axis.x(t));
        }
        assert!(axis.stretches.iter().all(|s| !s.broken));
    }

    #[test]
    fn ticks_never_crowd_and_the_end_is_labelled() {
        for (name, run, instants) in [
            (
                "busy start",
                7_200_000,
                vec![10_000, 60_000, 110_000, 410_000],
            ),
            ("even", 600_000, vec![100_000, 200_000, 300_000]),
            ("nothing", 3_600_000, vec![]),
        ] {
            let axis = Axis::new(run, instants);
            let ticks = axis.ticks();
            assert_eq!(ticks.first(), Some(&0), "{name}");
            assert_eq!(ticks.last(), Some(&run), "{name}");
            for w in ticks.windows(2) {
                assert!(
                    axis.x(w[1]) - axis.x(w[0]) >= MIN_TICK_GAP - 1e-9,
                    "{name}: {w:?}"
                );
            }
        }
    }
}
