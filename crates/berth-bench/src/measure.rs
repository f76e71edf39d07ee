//! Timing loops and the machine description every report carries.
//!
//! A measurement runs the closure in batches sized to take about 10 ms,
//! repeats the batch `samples` times, and reports the median and the best
//! batch per operation: the median is the figure to quote, the best shows
//! how much of the spread is noise from the (shared, 2-core) machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Per-operation timings of one measured closure.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub name: String,
    pub median_ns: f64,
    pub best_ns: f64,
    pub iterations_per_sample: u64,
    pub samples: usize,
}

/// Time on the CPU so far of this process's thread named `name` (the
/// first one), from /proc's schedstat: nanoseconds, where /proc's stat
/// counts 10 ms ticks.
pub fn thread_run_time(name: &str) -> Option<Duration> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .find_map(|entry| {
            let dir = entry.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            if comm.trim_end() != name {
                return None;
            }
            let schedstat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
            let ns: u64 = schedstat.split_whitespace().next()?.parse().ok()?;
            Some(Duration::from_nanos(ns))
        })
}

/// Times `op`, which returns something to keep the optimiser honest.
pub fn time<T>(name: &str, samples: usize, mut op: impl FnMut() -> T) -> Timing {
    // Size a batch so that it takes about 10 ms.
    let mut batch: u64 = 1;
    loop {
        let started = Instant::now();
        for _ in 0..batch {
            black_box(op());
        }
        if started.elapsed() >= Duration::from_millis(10) || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let mut per_op: Vec<f64> = (0..samples.max(1))
        .map(|_| {
            let started = Instant::now();
            for _ in 0..batch {
                black_box(op());
            }
            started.elapsed().as_nanos() as f64 / batch as f64
        })
        .collect();
    per_op.sort_by(f64::total_cmp);
    Timing {
        name: name.to_string(),
        median_ns: per_op[per_op.len() / 2],
        best_ns: per_op[0],
        iterations_per_sample: batch,
        samples: per_op.len(),
    }
}

/// `/proc/loadavg`'s 1, 5 and 15 minute figures (the machine is shared:
/// a figure says what else ran).
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// What the figures were measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub os: String,
    pub profile: &'static str,
}

impl Machine {
    pub fn describe() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            os: std::env::consts::OS.to_string(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }
}

/// Sub-buckets per power of two in [`Histogram`]: 64, so a reported value is within 1.6 % of
/// the true one.
const SUB_BITS: u32 = 6;
/// Values are clamped to 2^40 ns (18 minutes), which bounds the bucket count.
const MAX_EXPONENT: u32 = 40;
const BUCKETS: usize = ((MAX_EXPONENT - SUB_BITS + 2) as usize) << SUB_BITS;

/// A latency histogram with logarithmic buckets (as HdrHistogram): constant memory (18 KiB)
/// whatever the number of samples, so recording millions of writes does not inflate the RSS a
/// benchmark reports, and cheap enough to record every operation.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            max_ns: 0,
        }
    }
}

fn bucket_of(ns: u64) -> usize {
    let v = ns.min((1u64 << (MAX_EXPONENT + 1)) - 1);
    if v < (1 << SUB_BITS) {
        return v as usize;
    }
    let exponent = 63 - v.leading_zeros();
    let shift = exponent - SUB_BITS;
    // In [2^SUB_BITS, 2^(SUB_BITS+1)): the top SUB_BITS+1 bits of the value.
    let sub = (v >> shift) as usize;
    ((shift as usize + 1) << SUB_BITS) + (sub - (1 << SUB_BITS))
}

/// The middle of a bucket's range, in ns.
fn bucket_value(index: usize) -> f64 {
    if index < (1 << SUB_BITS) {
        return index as f64;
    }
    let shift = (index >> SUB_BITS) - 1;
    let sub = (index & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS);
    let low = (sub as u64) << shift;
    low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl Histogram {
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.counts[bucket_of(ns)] += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q` quantile (0..=1) in ns; 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        // The smallest value with at least ceil(q * total) samples at or below it.
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return bucket_value(index).min(self.max_ns as f64);
            }
        }
        self.max_ns as f64
    }

    /// p50, p99 and the maximum, in µs.
    pub fn summary_us(&self) -> LatencySummary {
        let us = |ns: f64| (ns / 100.0).round() / 10.0;
        LatencySummary {
            samples: self.total,
            p50_us: us(self.quantile_ns(0.50)),
            p99_us: us(self.quantile_ns(0.99)),
            max_us: us(self.max_ns as f64),
        }
    }
}

/// Latency figures of one [`Histogram`], in µs rounded to 0.1.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LatencySummary {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// `x` rounded to one decimal place, as reports print it.
pub(crate) fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_close() {
        let mut last = 0;
        for ns in (0..100_000u64).chain([1 << 20, 123_456_789, u64::MAX]) {
            let b = bucket_of(ns);
            assert!(b >= last && b < BUCKETS, "{ns}");
            last = b;
            if ns > 0 && ns < 1 << 40 {
                let err = (bucket_value(b) - ns as f64).abs() / ns as f64;
                assert!(err <= 0.016, "{ns}: {err}");
            }
        }
    }

    #[test]
    fn quantiles_of_a_uniform_spread() {
        let mut h = Histogram::default();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        let s = h.summary_us();
        assert_eq!(s.samples, 1000);
        assert!((s.p50_us - 500.0).abs() < 10.0, "{s:?}");
        assert!((s.p99_us - 990.0).abs() < 16.0, "{s:?}");
        assert_eq!(s.max_us, 1000.0);
    }
}
