//! The hard eviction thresholds (`evictionHard`: `memory.available`,
//! `nodefs.available`, `nodefs.inodesFree`, `pid.available`, as upstream's
//! `pkg/kubelet/eviction/api` reads them): which pressures the host's
//! signals show, and what they hold back from the node's allocatable.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::host::{HostFacts, HostSignals};

/// One eviction threshold: an absolute amount or a share of capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Bytes(u64),
    Percent(f64),
}

impl Threshold {
    /// Parses `100Mi`, `1Gi`, `4096` or `10%`.
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let text = text.trim();
        if let Some(percent) = text.strip_suffix('%') {
            let p: f64 = percent
                .parse()
                .map_err(|_| format!("invalid percentage {text:?}"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("percentage {text:?} out of range"));
            }
            return Ok(Threshold::Percent(p));
        }
        let q: berth_core::quantity::Quantity = text
            .parse()
            .map_err(|e| format!("invalid quantity {text:?}: {e}"))?;
        u64::try_from(q.value())
            .map(Threshold::Bytes)
            .map_err(|_| format!("negative threshold {text:?}"))
    }

    /// The threshold in units for a resource of `capacity` units.
    pub fn absolute(&self, capacity: u64) -> u64 {
        match *self {
            Threshold::Bytes(b) => b,
            Threshold::Percent(p) => (capacity as f64 * p / 100.0) as u64,
        }
    }

    /// Whether `available` of `capacity` is below the threshold.
    pub fn crossed(&self, available: u64, capacity: u64) -> bool {
        available < self.absolute(capacity)
    }
}

/// The hard eviction thresholds the pressure conditions use.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    pub memory_available: Threshold,
    pub nodefs_available: Threshold,
    pub nodefs_inodes_free: Option<Threshold>,
    pub pid_available: Option<Threshold>,
}

impl Thresholds {
    /// From `evictionHard` (`memory.available: 100Mi`, ...); signals berth
    /// does not watch (`imagefs.*`) are accepted and ignored.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Thresholds, String> {
        let get = |signal: &str| -> Result<Option<Threshold>, String> {
            map.get(signal)
                .map(|v| Threshold::parse(v).map_err(|e| format!("evictionHard[{signal}]: {e}")))
                .transpose()
        };
        Ok(Thresholds {
            memory_available: get("memory.available")?.unwrap_or(Threshold::Bytes(0)),
            nodefs_available: get("nodefs.available")?.unwrap_or(Threshold::Bytes(0)),
            nodefs_inodes_free: get("nodefs.inodesFree")?,
            pid_available: get("pid.available")?,
        })
    }

    /// Which pressures the signals show: (memory, disk, pid).
    pub fn pressures(&self, s: &HostSignals) -> (bool, bool, bool) {
        let memory = self
            .memory_available
            .crossed(s.memory_available, s.memory_capacity);
        let disk = self
            .nodefs_available
            .crossed(s.nodefs_available, s.nodefs_capacity)
            || self.nodefs_inodes_free.is_some_and(|t| {
                s.nodefs_inodes > 0 && t.crossed(s.nodefs_inodes_free, s.nodefs_inodes)
            });
        let pid = self
            .pid_available
            .is_some_and(|t| t.crossed(s.pid_max.saturating_sub(s.pids_in_use), s.pid_max));
        (memory, disk, pid)
    }
}

/// Capacity and allocatable of a node from its host facts: allocatable is
/// capacity less the hard eviction thresholds for memory and node
/// filesystem (upstream's `GetNodeAllocatableReservation` with no
/// kube/system reservations).
pub fn capacity_and_allocatable(
    facts: &HostFacts,
    thresholds: &Thresholds,
    max_pods: i64,
) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let memory_reserve = thresholds.memory_available.absolute(facts.memory_bytes);
    let storage_reserve = thresholds
        .nodefs_available
        .absolute(facts.ephemeral_storage_bytes);
    let q = |s: String| Quantity(s);
    let capacity = BTreeMap::from([
        ("cpu".to_string(), q(facts.cpus.to_string())),
        (
            "ephemeral-storage".to_string(),
            q(format!("{}Ki", facts.ephemeral_storage_bytes / 1024)),
        ),
        ("hugepages-1Gi".to_string(), q("0".into())),
        ("hugepages-2Mi".to_string(), q("0".into())),
        (
            "memory".to_string(),
            q(format!("{}Ki", facts.memory_bytes / 1024)),
        ),
        ("pods".to_string(), q(max_pods.to_string())),
    ]);
    let mut allocatable = capacity.clone();
    allocatable.insert(
        "memory".into(),
        q(format!(
            "{}Ki",
            facts.memory_bytes.saturating_sub(memory_reserve) / 1024
        )),
    );
    allocatable.insert(
        "ephemeral-storage".into(),
        q(facts
            .ephemeral_storage_bytes
            .saturating_sub(storage_reserve)
            .to_string()),
    );
    (capacity, allocatable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSystemInfo;

    const GI: u64 = 1024 * 1024 * 1024;
    const MI: u64 = 1024 * 1024;

    fn healthy() -> HostSignals {
        HostSignals {
            memory_capacity: 8 * GI,
            memory_available: 4 * GI,
            nodefs_capacity: 100 * GI,
            nodefs_available: 50 * GI,
            nodefs_inodes: 1_000_000,
            nodefs_inodes_free: 900_000,
            pid_max: 4_194_304,
            pids_in_use: 500,
        }
    }

    #[test]
    fn thresholds_parse_like_eviction_hard_values() {
        let cases: &[(&str, Option<Threshold>)] = &[
            ("100Mi", Some(Threshold::Bytes(100 * MI))),
            ("10%", Some(Threshold::Percent(10.0))),
            ("1Gi", Some(Threshold::Bytes(GI))),
            ("150%", None),
            ("lots", None),
            ("-1", None),
        ];
        for (text, want) in cases {
            assert_eq!(Threshold::parse(text).ok(), *want, "{text}");
        }
    }

    #[test]
    fn pressure_comes_from_upstream_hard_eviction_defaults() {
        let thresholds =
            Thresholds::from_map(&crate::config::default_eviction_hard()).expect("thresholds");
        let cases: &[(&str, HostSignals, (bool, bool, bool))] = &[
            ("healthy host", healthy(), (false, false, false)),
            (
                "memory.available < 100Mi",
                HostSignals {
                    memory_available: 99 * MI,
                    ..healthy()
                },
                (true, false, false),
            ),
            (
                "memory.available exactly 100Mi is not pressure",
                HostSignals {
                    memory_available: 100 * MI,
                    ..healthy()
                },
                (false, false, false),
            ),
            (
                "nodefs.available < 10%",
                HostSignals {
                    nodefs_available: 9 * GI,
                    ..healthy()
                },
                (false, true, false),
            ),
            (
                "nodefs.inodesFree < 5%",
                HostSignals {
                    nodefs_inodes_free: 40_000,
                    ..healthy()
                },
                (false, true, false),
            ),
            (
                "pid.available < 10%",
                HostSignals {
                    pid_max: 1000,
                    pids_in_use: 950,
                    ..healthy()
                },
                (false, false, true),
            ),
        ];
        for (name, signals, want) in cases {
            assert_eq!(thresholds.pressures(signals), *want, "{name}");
        }
    }

    #[test]
    fn allocatable_is_capacity_less_the_hard_eviction_thresholds() {
        let facts = HostFacts {
            cpus: 2,
            memory_bytes: 4 * 1024 * 1024 * 1024,
            ephemeral_storage_bytes: 100 * 1024 * 1024 * 1024,
            hostname: "h".into(),
            addresses: Vec::new(),
            node_info: NodeSystemInfo::default(),
        };
        let thresholds =
            Thresholds::from_map(&crate::config::default_eviction_hard()).expect("thresholds");
        let (capacity, allocatable) = capacity_and_allocatable(&facts, &thresholds, 110);
        assert_eq!(capacity["memory"].0, "4194304Ki");
        assert_eq!(allocatable["memory"].0, "4091904Ki", "100Mi less");
        assert_eq!(capacity["pods"].0, "110");
        assert_eq!(allocatable["cpu"].0, "2");
        assert_eq!(
            allocatable["ephemeral-storage"].0,
            (100u64 * 1024 * 1024 * 1024 * 9 / 10).to_string()
        );
    }
}
