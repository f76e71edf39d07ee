//! What a real node's agent reports of CPU and memory use
//! (`/stats/summary`, [`berth_core::node_stats`]): the host's from
//! `/proc/stat` and `/proc/meminfo`, each container's from the processes
//! of its process group (`/proc/<pid>/stat`: CPU time and resident set).
//!
//! CPU is a rate, so the agent samples every [`WINDOW`] and reports the
//! use between its last two samples, as cAdvisor does between its
//! housekeeping passes; a container seen for the first time is averaged
//! over its life so far, the host over its uptime.

use std::collections::HashMap;

use berth_core::node_stats::{
    ContainerStats, NodeStats, PodReference, PodStats, Summary, Usage, WINDOW,
};
use berth_runtime::ContainerProcess;

/// One process's figures, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pgrp: i32,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    /// When it started, in clock ticks after boot.
    pub start_ticks: u64,
    /// Resident set, in pages.
    pub rss_pages: u64,
}

/// Parses `/proc/<pid>/stat` (the command may hold spaces and parens:
/// the fields are after its last `)`).
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        pgrp: fields.get(2)?.parse().ok()?,
        cpu_ticks: num(11)? + num(12)?,
        start_ticks: num(19)?,
        rss_pages: num(21)?,
    })
}

/// The host's busy CPU time from `/proc/stat`'s `cpu` line, in ticks:
/// user, nice, system, irq, softirq, steal (not idle, not iowait).
pub fn parse_host_cpu(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    Some(
        [0, 1, 2, 5, 6, 7]
            .iter()
            .filter_map(|&i| fields.get(i))
            .sum(),
    )
}

/// The host's memory in use from `/proc/meminfo`, in bytes: MemTotal less
/// MemAvailable.
pub fn parse_host_memory(meminfo: &str) -> Option<u64> {
    let field = |name: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some(field("MemTotal:")?.saturating_sub(field("MemAvailable:")?) * 1024)
}

/// One sample: CPU time so far and memory now, of the host and of each
/// container (by pod UID and container name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Seconds since boot.
    pub uptime_ns: u64,
    pub host_cpu_ns: u64,
    pub host_memory: u64,
    /// (cpu ns so far, age in ns, resident bytes).
    pub containers: HashMap<(String, String), (u64, u64, u64)>,
}

/// Reads a sample of `processes` from `/proc`.
pub fn read_sample(processes: &[ContainerProcess]) -> std::io::Result<Sample> {
    let hz = rustix::param::clock_ticks_per_second().max(1);
    let page = rustix::param::page_size() as u64;
    let ticks_ns = |t: u64| t.saturating_mul(1_000_000_000) / hz;
    let uptime = std::fs::read_to_string("/proc/uptime")?;
    let uptime_ns = uptime
        .split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(0, |s| (s * 1e9) as u64);
    let host_cpu_ns =
        ticks_ns(parse_host_cpu(&std::fs::read_to_string("/proc/stat")?).unwrap_or(0));
    let host_memory = parse_host_memory(&std::fs::read_to_string("/proc/meminfo")?).unwrap_or(0);
    // Every process's group, summed per group that is a container's.
    let wanted: HashMap<i32, &ContainerProcess> = processes.iter().map(|p| (p.pid, p)).collect();
    let mut groups: HashMap<i32, (u64, u64)> = HashMap::new();
    let mut leaders: HashMap<i32, u64> = HashMap::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // A process may end between the listing and the read.
        let Some(stat) = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .as_deref()
            .and_then(parse_proc_stat)
        else {
            continue;
        };
        if !wanted.contains_key(&stat.pgrp) {
            continue;
        }
        let group = groups.entry(stat.pgrp).or_default();
        group.0 += stat.cpu_ticks;
        group.1 += stat.rss_pages;
        if pid == stat.pgrp {
            leaders.insert(pid, stat.start_ticks);
        }
    }
    let containers = groups
        .into_iter()
        .filter_map(|(pgrp, (cpu, rss))| {
            let process = wanted.get(&pgrp)?;
            let age = uptime_ns.saturating_sub(ticks_ns(leaders.get(&pgrp).copied().unwrap_or(0)));
            Some((
                (process.uid.clone(), process.container.clone()),
                (ticks_ns(cpu), age, rss * page),
            ))
        })
        .collect();
    Ok(Sample {
        uptime_ns,
        host_cpu_ns,
        host_memory,
        containers,
    })
}

/// Nanocores from CPU time spent over an interval.
fn rate(spent_ns: u64, over_ns: u64) -> u64 {
    if over_ns == 0 {
        return 0;
    }
    u64::try_from(u128::from(spent_ns) * 1_000_000_000 / u128::from(over_ns)).unwrap_or(u64::MAX)
}

/// The Summary of `current` against the sample before it (`None`: the
/// first), for `node` at `time`.
pub fn summarize(
    node: &str,
    time: &str,
    processes: &[ContainerProcess],
    previous: Option<&Sample>,
    current: &Sample,
) -> Summary {
    let host_cpu = match previous {
        Some(p) if current.uptime_ns > p.uptime_ns => rate(
            current.host_cpu_ns.saturating_sub(p.host_cpu_ns),
            current.uptime_ns - p.uptime_ns,
        ),
        _ => rate(current.host_cpu_ns, current.uptime_ns),
    };
    let (cpu, memory) = Usage {
        nano_cores: host_cpu,
        memory_bytes: current.host_memory,
    }
    .stats(time);
    let mut pods: Vec<PodStats> = Vec::new();
    for process in processes {
        let key = (process.uid.clone(), process.container.clone());
        let Some(&(cpu_ns, age, rss)) = current.containers.get(&key) else {
            continue;
        };
        let nano_cores = match previous.and_then(|p| p.containers.get(&key).map(|c| (p, c.0))) {
            Some((p, before)) if current.uptime_ns > p.uptime_ns && cpu_ns >= before => {
                rate(cpu_ns - before, current.uptime_ns - p.uptime_ns)
            }
            _ => rate(cpu_ns, age),
        };
        let (cpu, memory) = Usage {
            nano_cores,
            memory_bytes: rss,
        }
        .stats(time);
        let stats = ContainerStats {
            name: process.container.clone(),
            cpu: Some(cpu),
            memory: Some(memory),
        };
        match pods.iter_mut().find(|p| p.pod_ref.uid == process.uid) {
            Some(pod) => pod.containers.push(stats),
            None => pods.push(PodStats {
                pod_ref: PodReference {
                    name: process.pod.clone(),
                    namespace: process.namespace.clone(),
                    uid: process.uid.clone(),
                },
                containers: vec![stats],
            }),
        }
    }
    Summary {
        node: NodeStats {
            node_name: node.to_string(),
            cpu: Some(cpu),
            memory: Some(memory),
        },
        pods,
    }
}

/// How often the agent samples.
pub const SAMPLE_EVERY: std::time::Duration = WINDOW;

/// The node's latest Summary, kept by a sampling task.
pub type Latest = std::sync::Arc<std::sync::Mutex<Summary>>;

/// Samples the host and `runtime`'s containers every [`SAMPLE_EVERY`]
/// until `stop`; the Summary between the last two samples is in the
/// returned cell.
pub fn spawn_sampler(
    node: String,
    runtime: std::sync::Arc<dyn berth_runtime::Runtime>,
    clock: berth_core::clock::Clock,
    stop: tokio_util::sync::CancellationToken,
) -> Latest {
    let latest: Latest = std::sync::Arc::default();
    let cell = latest.clone();
    tokio::spawn(async move {
        let mut previous: Option<Sample> = None;
        loop {
            let processes = runtime.processes();
            match read_sample(&processes) {
                Ok(sample) => {
                    let time = berth_runtime::cri_log::format_time(clock.now());
                    let summary = summarize(&node, &time, &processes, previous.as_ref(), &sample);
                    if let Ok(mut latest) = cell.lock() {
                        *latest = summary;
                    }
                    previous = Some(sample);
                }
                Err(e) => tracing::warn!(error = %e, "reading the host's figures from /proc"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = clock.sleep(SAMPLE_EVERY) => {}
            }
        }
    });
    latest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_as_the_kernel_writes_them() {
        let stat = "4242 (my (odd) app) S 1 4242 4242 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 1 0 5000 1000000 256 18446744073709551615";
        assert_eq!(
            parse_proc_stat(stat),
            Some(ProcStat {
                pgrp: 4242,
                cpu_ticks: 100,
                start_ticks: 5000,
                rss_pages: 256
            })
        );
        assert_eq!(parse_proc_stat("garbage"), None);
        let host = "cpu  100 5 50 9000 40 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_host_cpu(host), Some(100 + 5 + 50 + 3 + 2 + 1));
        let meminfo = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    6000000 kB\n";
        assert_eq!(parse_host_memory(meminfo), Some(10_000_000 * 1024));
    }

    #[test]
    fn cpu_is_the_rate_between_samples_or_over_the_life_so_far() {
        let web = ContainerProcess {
            namespace: "shop".into(),
            pod: "web".into(),
            uid: "u1".into(),
            container: "app".into(),
            pid: 10,
        };
        let key = ("u1".to_string(), "app".to_string());
        let sample = |uptime_s: u64, host_cpu_s: u64, app_cpu_ms: u64| Sample {
            uptime_ns: uptime_s * 1_000_000_000,
            host_cpu_ns: host_cpu_s * 1_000_000_000,
            host_memory: 1 << 30,
            // Started 20 s before the first sample.
            containers: HashMap::from([(
                key.clone(),
                (
                    app_cpu_ms * 1_000_000,
                    (uptime_s - 80) * 1_000_000_000,
                    64 << 20,
                ),
            )]),
        };
        let first = sample(100, 50, 2_000);
        let second = sample(110, 70, 7_000);
        let figures = |s: &Summary| {
            let pod = &s.pods[0].containers[0];
            (
                s.node.cpu.as_ref().and_then(|c| c.usage_nano_cores),
                pod.cpu.as_ref().and_then(|c| c.usage_nano_cores),
                pod.memory.as_ref().and_then(|m| m.working_set_bytes),
            )
        };
        let processes = [web];
        // First: the host's 50 s of 100 s, the app's 2 s of its 20 s.
        let at_first = summarize("n1", "t", &processes, None, &first);
        assert_eq!(
            figures(&at_first),
            (Some(500_000_000), Some(100_000_000), Some(64 << 20))
        );
        // Then: 20 s of 10 s on the host (2 cores), 5 s of 10 s for the app.
        let at_second = summarize("n1", "t", &processes, Some(&first), &second);
        assert_eq!(
            figures(&at_second),
            (Some(2_000_000_000), Some(500_000_000), Some(64 << 20))
        );
        assert_eq!(at_second.pods[0].pod_ref.namespace, "shop");
    }
}
