//! What a benchmark reads of a process from `/proc`: its memory and its
//! CPU time.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Memory {
    pub(crate) vm_rss_kib: u64,
    vm_hwm_kib: u64,
    vm_rss_mib: f64,
}

/// Reads `VmRSS` and `VmHWM` (KiB) of a process.
pub(crate) fn memory_of(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let rss = field("VmRSS:")?;
    Some(Memory {
        vm_rss_kib: rss,
        vm_hwm_kib: field("VmHWM:")?,
        vm_rss_mib: (rss as f64 / 1024.0 * 10.0).round() / 10.0,
    })
}

/// Linux's `USER_HZ`: the unit of the CPU times in `/proc/.../stat` (100 on
/// every mainstream architecture).
const TICKS_PER_SEC: f64 = 100.0;

/// User plus system CPU time, in seconds, from a `/proc/.../stat` file (a
/// process's or a thread's).
pub(crate) fn cpu_seconds_of(stat_path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // The command name (field 2) may contain spaces; the fields after it do not.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    // After the name: state (3), ..., utime (14), stime (15).
    let utime: f64 = fields.nth(11)?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / TICKS_PER_SEC)
}

/// User plus system CPU seconds of process `pid` (0 if it cannot be read).
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    cpu_seconds_of(&format!("/proc/{pid}/stat")).unwrap_or(0.0)
}
