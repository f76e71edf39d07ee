//! What a node's agent reports of its CPU and memory use: the kubelet's
//! Summary API (`GET /stats/summary`, upstream
//! `k8s.io/kubelet/pkg/apis/stats/v1alpha1`), reduced to the figures the
//! resource metrics API serves (`usageNanoCores`, `workingSetBytes`), and
//! the one rule that makes a simulated node's figures up
//! ([`simulated_usage`]).
//!
//! The Summary types are written here because k8s-openapi does not carry
//! them (they are the kubelet's, not the API server's); field names are
//! upstream's, so a real kubelet's answer decodes too (unknown fields are
//! ignored).

use serde::{Deserialize, Serialize};

/// How long one usage figure is averaged over: the agent samples every
/// `WINDOW` (cAdvisor's housekeeping interval), and the API server serves
/// it as each metric's `window`.
pub const WINDOW: std::time::Duration = std::time::Duration::from_secs(10);

/// `stats/v1alpha1.Summary`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub node: NodeStats,
    #[serde(default)]
    pub pods: Vec<PodStats>,
}

/// `stats/v1alpha1.NodeStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    pub node_name: String,
    #[serde(default)]
    pub cpu: Option<CpuStats>,
    #[serde(default)]
    pub memory: Option<MemoryStats>,
}

/// `stats/v1alpha1.PodStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    pub pod_ref: PodReference,
    #[serde(default)]
    pub containers: Vec<ContainerStats>,
}

/// `stats/v1alpha1.PodReference`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReference {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub uid: String,
}

/// `stats/v1alpha1.ContainerStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    pub name: String,
    #[serde(default)]
    pub cpu: Option<CpuStats>,
    #[serde(default)]
    pub memory: Option<MemoryStats>,
}

/// `stats/v1alpha1.CPUStats`: the rate over the last window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    /// When the figure was sampled (RFC 3339).
    pub time: String,
    #[serde(default)]
    pub usage_nano_cores: Option<u64>,
}

/// `stats/v1alpha1.MemoryStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    pub time: String,
    #[serde(default)]
    pub working_set_bytes: Option<u64>,
}

/// CPU (nanocores) and memory (bytes) in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub nano_cores: u64,
    pub memory_bytes: u64,
}

impl Usage {
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            nano_cores: self.nano_cores.saturating_add(other.nano_cores),
            memory_bytes: self.memory_bytes.saturating_add(other.memory_bytes),
        }
    }

    /// The figures as Summary stats sampled at `time`.
    pub fn stats(self, time: &str) -> (CpuStats, MemoryStats) {
        (
            CpuStats {
                time: time.to_string(),
                usage_nano_cores: Some(self.nano_cores),
            },
            MemoryStats {
                time: time.to_string(),
                working_set_bytes: Some(self.memory_bytes),
            },
        )
    }
}

/// What a simulated container with no request uses: an idle process.
pub const IDLE_CONTAINER: Usage = Usage {
    nano_cores: 1_000_000,
    memory_bytes: 8 * 1024 * 1024,
};

/// What a simulated node's own system (agent, OS) uses beside its pods.
pub const SIMULATED_SYSTEM: Usage = Usage {
    nano_cores: 100_000_000,
    memory_bytes: 512 * 1024 * 1024,
};

/// How far a simulated figure strays from its request, either way, in
/// percent.
pub const NOISE_PERCENT: u64 = 20;

/// A simulated figure: `requested` (nanocores and bytes; zero: an idle
/// container's) within ±[`NOISE_PERCENT`] %, the noise drawn from `seed`
/// (the container, the node, the sampling window), so the same seed gives
/// the same figure and the next window another.
pub fn simulated_usage(requested: Usage, seed: u64) -> Usage {
    let base = Usage {
        nano_cores: if requested.nano_cores == 0 {
            IDLE_CONTAINER.nano_cores
        } else {
            requested.nano_cores
        },
        memory_bytes: if requested.memory_bytes == 0 {
            IDLE_CONTAINER.memory_bytes
        } else {
            requested.memory_bytes
        },
    };
    let mut rng = crate::splitmix::SplitMix64::new(seed);
    let mut jitter = |value: u64| {
        // A factor in [100 - NOISE, 100 + NOISE] percent.
        let percent = 100 - NOISE_PERCENT + rng.next_u64() % (2 * NOISE_PERCENT + 1);
        let scaled = u128::from(value) * u128::from(percent) / 100;
        u64::try_from(scaled).unwrap_or(u64::MAX)
    };
    Usage {
        nano_cores: jitter(base.nano_cores),
        memory_bytes: jitter(base.memory_bytes),
    }
}

/// A stable seed from parts (FNV-1a), for [`simulated_usage`].
pub fn seed_of(parts: &[&str], window: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts
        .iter()
        .flat_map(|p| p.bytes().chain(std::iter::once(0)))
        .chain(window.to_le_bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_figures_stay_near_the_request_and_repeat_per_seed() {
        struct Case {
            name: &'static str,
            requested: Usage,
            /// The figure the noise is around.
            around: Usage,
        }
        let cases = [
            Case {
                name: "requests",
                requested: Usage {
                    nano_cores: 250_000_000,
                    memory_bytes: 64 << 20,
                },
                around: Usage {
                    nano_cores: 250_000_000,
                    memory_bytes: 64 << 20,
                },
            },
            Case {
                name: "no request: an idle container",
                requested: Usage::default(),
                around: IDLE_CONTAINER,
            },
        ];
        for Case {
            name,
            requested,
            around,
        } in cases
        {
            let mut distinct = std::collections::BTreeSet::new();
            for window in 0..50 {
                let seed = seed_of(&["node-1", "ns/web", "app"], window);
                let got = simulated_usage(requested, seed);
                assert_eq!(got, simulated_usage(requested, seed), "{name}: repeats");
                let near = |got: u64, around: u64| {
                    got >= around * (100 - NOISE_PERCENT) / 100
                        && got <= around * (100 + NOISE_PERCENT) / 100
                };
                assert!(near(got.nano_cores, around.nano_cores), "{name}: {got:?}");
                assert!(
                    near(got.memory_bytes, around.memory_bytes),
                    "{name}: {got:?}"
                );
                distinct.insert(got.nano_cores);
            }
            assert!(
                distinct.len() > 10,
                "{name}: the noise varies: {distinct:?}"
            );
        }
    }

    #[test]
    fn a_summary_decodes_with_upstream_field_names() {
        let text = r#"{"node":{"nodeName":"n1","startTime":"2026-01-01T00:00:00Z",
            "cpu":{"time":"2026-01-01T00:00:10Z","usageNanoCores":123,"usageCoreNanoSeconds":9},
            "memory":{"time":"2026-01-01T00:00:10Z","workingSetBytes":456,"rssBytes":1}},
            "pods":[{"podRef":{"name":"web","namespace":"shop","uid":"u"},
            "containers":[{"name":"app","cpu":{"time":"t","usageNanoCores":7},
            "memory":{"time":"t","workingSetBytes":8}}]}]}"#;
        let summary: Summary = serde_json::from_str(text).expect("decodes");
        assert_eq!(summary.node.node_name, "n1");
        assert_eq!(summary.node.cpu.and_then(|c| c.usage_nano_cores), Some(123));
        assert_eq!(summary.pods[0].pod_ref.namespace, "shop");
        assert_eq!(
            summary.pods[0].containers[0]
                .memory
                .as_ref()
                .and_then(|m| m.working_set_bytes),
            Some(8)
        );
    }
}
