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
