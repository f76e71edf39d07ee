//! What the agent reads from its host: the fixed facts a Node is
//! registered with (CPUs, memory, ephemeral storage of the data dir's
//! filesystem, addresses, `nodeInfo`) and the signals its pressure
//! conditions are computed from (available memory, free space and inodes
//! of the data dir's filesystem, PIDs in use).
//!
//! Upstream reads memory from cgroups (`capacity - workingSet`); berth
//! reads `MemAvailable` from `/proc/meminfo`, the kernel's own estimate of
//! what can be handed out without swapping. PIDs: `pid_max` (capped by
//! `threads-max`, as upstream) against the number of tasks the kernel
//! schedules (the fourth field of `/proc/loadavg`, like upstream's
//! `sysinfo.Procs`).

use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::path::Path;

use k8s_openapi::api::core::v1::{NodeAddress, NodeSystemInfo};

/// The agent's version as nodes report it (`kubeletVersion`).
pub const KUBELET_VERSION: &str = concat!("v1.37.0-berth.", env!("CARGO_PKG_VERSION"));

/// The host's fixed facts, read once at start.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    pub cpus: u64,
    pub memory_bytes: u64,
    pub ephemeral_storage_bytes: u64,
    pub hostname: String,
    pub addresses: Vec<NodeAddress>,
    pub node_info: NodeSystemInfo,
}

/// The host's changing state, read every status period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostSignals {
    pub memory_capacity: u64,
    pub memory_available: u64,
    pub nodefs_capacity: u64,
    pub nodefs_available: u64,
    pub nodefs_inodes: u64,
    pub nodefs_inodes_free: u64,
    pub pid_max: u64,
    pub pids_in_use: u64,
}

/// Reading the host failed.
#[derive(Debug, thiserror::Error)]
#[error("reading {what}: {problem}")]
pub struct HostError {
    pub what: String,
    pub problem: String,
}

fn host_error(what: &str, problem: impl ToString) -> HostError {
    HostError {
        what: what.to_string(),
        problem: problem.to_string(),
    }
}

/// `MemTotal` and `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn parse_meminfo(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| {
                let mut parts = rest.split_whitespace();
                let value: u64 = parts.next()?.parse().ok()?;
                match parts.next() {
                    Some("kB") => value.checked_mul(1024),
                    None => Some(value),
                    Some(_) => None,
                }
            })
    };
    Some((field("MemTotal")?, field("MemAvailable")?))
}

/// The number of tasks in a `/proc/loadavg` text (`0.1 0.2 0.3 2/345 678`).
pub fn parse_loadavg_tasks(text: &str) -> Option<u64> {
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()
}

/// A `KEY="value"` of an `/etc/os-release` text.
pub fn parse_os_release(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(key)?.strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_string())
    })
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Reads the host's signals; `data_dir` names the node filesystem.
pub fn read_signals(data_dir: &Path) -> Result<HostSignals, HostError> {
    let meminfo =
        std::fs::read_to_string("/proc/meminfo").map_err(|e| host_error("/proc/meminfo", e))?;
    let (memory_capacity, memory_available) = parse_meminfo(&meminfo)
        .ok_or_else(|| host_error("/proc/meminfo", "no MemTotal/MemAvailable"))?;
    let fs = rustix::fs::statvfs(data_dir)
        .map_err(|e| host_error(&data_dir.display().to_string(), e))?;
    let block = fs.f_frsize.max(1);
    let pid_max = read_trimmed("/proc/sys/kernel/pid_max")
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| host_error("/proc/sys/kernel/pid_max", "not a number"))?;
    let threads_max =
        read_trimmed("/proc/sys/kernel/threads-max").and_then(|s| s.parse::<u64>().ok());
    let pids_in_use = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .as_deref()
        .and_then(parse_loadavg_tasks)
        .ok_or_else(|| host_error("/proc/loadavg", "no task count"))?;
    Ok(HostSignals {
        memory_capacity,
        memory_available,
        nodefs_capacity: fs.f_blocks.saturating_mul(block),
        nodefs_available: fs.f_bavail.saturating_mul(block),
        nodefs_inodes: fs.f_files,
        nodefs_inodes_free: fs.f_ffree,
        pid_max: threads_max.map_or(pid_max, |t| t.min(pid_max)),
        pids_in_use,
    })
}

/// The address other hosts reach this one at: the source address of a
/// route to a non-local destination (no packet is sent), else loopback.
fn primary_ip() -> IpAddr {
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("10.255.255.255:1")?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The node's `status.addresses`: InternalIP (`--node-ip`, else the
/// primary address) and Hostname, as upstream's NodeAddress setter.
pub fn node_addresses(node_ip: Option<IpAddr>, hostname: &str) -> Vec<NodeAddress> {
    let ip = node_ip.unwrap_or_else(primary_ip);
    vec![
        NodeAddress {
            type_: "InternalIP".into(),
            address: ip.to_string(),
        },
        NodeAddress {
            type_: "Hostname".into(),
            address: hostname.to_string(),
        },
    ]
}

/// The node's `status.nodeInfo` from the host.
pub fn node_system_info(runtime_version: &str) -> NodeSystemInfo {
    let machine_id = read_trimmed("/etc/machine-id").unwrap_or_default();
    let os_image = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| parse_os_release(&t, "PRETTY_NAME"))
        .unwrap_or_else(|| "Linux".into());
    NodeSystemInfo {
        architecture: go_arch().into(),
        boot_id: read_trimmed("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        container_runtime_version: runtime_version.to_string(),
        kernel_version: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
        kube_proxy_version: String::new(),
        kubelet_version: KUBELET_VERSION.into(),
        system_uuid: read_trimmed("/sys/class/dmi/id/product_uuid")
            .unwrap_or_else(|| machine_id.clone()),
        machine_id,
        operating_system: std::env::consts::OS.into(),
        os_image,
        ..Default::default()
    }
}

/// Go's name for this machine's architecture, as `nodeInfo` reports it.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

/// Reads the host's facts; `data_dir` names the filesystem whose size is
/// the node's ephemeral storage.
pub fn read_facts(
    data_dir: &Path,
    node_ip: Option<IpAddr>,
    runtime_version: &str,
) -> Result<HostFacts, HostError> {
    let signals = read_signals(data_dir)?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    let hostname = read_trimmed("/proc/sys/kernel/hostname")
        .or_else(|| read_trimmed("/etc/hostname"))
        .unwrap_or_else(|| "localhost".into())
        .to_lowercase();
    Ok(HostFacts {
        cpus,
        memory_bytes: signals.memory_capacity,
        ephemeral_storage_bytes: signals.nodefs_capacity,
        addresses: node_addresses(node_ip, &hostname),
        hostname,
        node_info: node_system_info(runtime_version),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_gives_total_and_available_in_bytes() {
        let text =
            "MemTotal:       16318412 kB\nMemFree:         1000 kB\nMemAvailable:   8000000 kB\n";
        assert_eq!(parse_meminfo(text), Some((16318412 * 1024, 8000000 * 1024)));
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_meminfo("MemTotal: x kB\nMemAvailable: 1 kB"), None);
    }

    #[test]
    fn loadavg_gives_the_task_count() {
        assert_eq!(parse_loadavg_tasks("0.52 0.58 0.59 3/467 12345"), Some(467));
        assert_eq!(parse_loadavg_tasks("0.52 0.58"), None);
    }

    #[test]
    fn os_release_values_lose_their_quotes() {
        let text = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n";
        assert_eq!(
            parse_os_release(text, "PRETTY_NAME").as_deref(),
            Some("Debian GNU/Linux 13 (trixie)")
        );
        assert_eq!(parse_os_release(text, "VERSION"), None);
    }

    #[test]
    fn this_host_can_be_read() {
        let dir = std::env::temp_dir();
        let facts = read_facts(&dir, None, "berth-sim://1").expect("facts");
        assert!(facts.cpus >= 1);
        assert!(facts.memory_bytes > 0);
        assert!(facts.ephemeral_storage_bytes > 0);
        assert_eq!(facts.addresses.len(), 2);
        assert_eq!(facts.node_info.operating_system, "linux");
        let signals = read_signals(&dir).expect("signals");
        assert!(signals.pids_in_use > 0 && signals.pid_max >= signals.pids_in_use);
    }
}
