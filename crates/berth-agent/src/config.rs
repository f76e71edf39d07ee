//! The agent's configuration file (`--config agent.yaml`): the part of
//! upstream's `KubeletConfiguration` (`kubelet.config.k8s.io/v1beta1`)
//! berth honours, with upstream's field names, defaults and validation.
//!
//! ```yaml
//! apiVersion: kubelet.config.k8s.io/v1beta1
//! kind: KubeletConfiguration
//! nodeStatusUpdateFrequency: 10s
//! nodeStatusReportFrequency: 5m
//! shutdownGracePeriod: 30s
//! shutdownGracePeriodCriticalPods: 10s
//! evictionHard:
//!   memory.available: 100Mi
//!   nodefs.available: "10%"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// `SystemCriticalPriority`: pods at or above it are critical.
pub use berth_core::priority::SYSTEM_CRITICAL_PRIORITY;

/// One phase of `shutdownGracePeriodByPodPriority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownGracePeriodByPodPriority {
    pub priority: i32,
    pub shutdown_grace_period_seconds: i64,
}

/// The file as written: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    api_version: Option<String>,
    kind: Option<String>,
    node_status_update_frequency: Option<String>,
    node_status_report_frequency: Option<String>,
    node_lease_duration_seconds: Option<i32>,
    shutdown_grace_period: Option<String>,
    shutdown_grace_period_critical_pods: Option<String>,
    #[serde(default)]
    shutdown_grace_period_by_pod_priority: Vec<ShutdownGracePeriodByPodPriority>,
    eviction_hard: Option<BTreeMap<String, String>>,
    max_pods: Option<i64>,
}

/// The agent's settings after defaulting.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// How often node status is computed (upstream default 10 s).
    pub node_status_update_frequency: Duration,
    /// How often an unchanged status is still written (default 5 min).
    pub node_status_report_frequency: Duration,
    /// `leaseDurationSeconds` of the node Lease (40); it is renewed every
    /// quarter of that (10 s), as upstream.
    pub node_lease_duration_seconds: i32,
    pub shutdown_grace_period: Duration,
    pub shutdown_grace_period_critical_pods: Duration,
    pub shutdown_grace_period_by_pod_priority: Vec<ShutdownGracePeriodByPodPriority>,
    /// Hard eviction thresholds by signal (`memory.available`, ...).
    pub eviction_hard: BTreeMap<String, String>,
    pub max_pods: i64,
}

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("decoding the agent configuration: {0}")]
    Decode(String),
    #[error("invalid agent configuration: {0}")]
    Invalid(String),
}

/// Upstream's defaults on Linux for `evictionHard`, plus `pid.available`
/// (upstream sets no PID threshold by default; berth reports PIDPressure
/// when fewer than 10% of PIDs are left).
pub fn default_eviction_hard() -> BTreeMap<String, String> {
    [
        ("memory.available", "100Mi"),
        ("nodefs.available", "10%"),
        ("nodefs.inodesFree", "5%"),
        ("pid.available", "10%"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            node_status_update_frequency: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            node_lease_duration_seconds: 40,
            shutdown_grace_period: Duration::ZERO,
            shutdown_grace_period_critical_pods: Duration::ZERO,
            shutdown_grace_period_by_pod_priority: Vec::new(),
            eviction_hard: default_eviction_hard(),
            max_pods: 110,
        }
    }
}

impl AgentConfig {
    /// Reads a `KubeletConfiguration` YAML (or JSON) document.
    pub fn from_yaml(text: &str) -> Result<AgentConfig, ConfigError> {
        let raw: RawConfig = if text.trim().is_empty() {
            RawConfig::default()
        } else {
            serde_yaml::from_str(text).map_err(|e| ConfigError::Decode(e.to_string()))?
        };
        if let Some(kind) = &raw.kind
            && kind != "KubeletConfiguration"
        {
            return Err(ConfigError::Decode(format!(
                "kind {kind:?}: expected KubeletConfiguration"
            )));
        }
        if let Some(version) = &raw.api_version
            && version != "kubelet.config.k8s.io/v1beta1"
        {
            return Err(ConfigError::Decode(format!(
                "apiVersion {version:?}: expected kubelet.config.k8s.io/v1beta1"
            )));
        }
        let duration = |field: &str,
                        value: &Option<String>|
         -> Result<Option<Duration>, ConfigError> {
            value
                .as_deref()
                .map(|v| {
                    parse_go_duration(v).map_err(|e| ConfigError::Invalid(format!("{field}: {e}")))
                })
                .transpose()
        };
        let defaults = AgentConfig::default();
        let update = duration(
            "nodeStatusUpdateFrequency",
            &raw.node_status_update_frequency,
        )?;
        let report = duration(
            "nodeStatusReportFrequency",
            &raw.node_status_report_frequency,
        )?;
        // Upstream: an explicit update frequency without a report
        // frequency makes the report frequency follow it.
        let report = match (update, report) {
            (_, Some(r)) if !r.is_zero() => r,
            (Some(u), _) if !u.is_zero() => u,
            _ => defaults.node_status_report_frequency,
        };
        let update = update
            .filter(|u| !u.is_zero())
            .unwrap_or(defaults.node_status_update_frequency);
        let mut eviction_hard = defaults.eviction_hard.clone();
        if let Some(explicit) = raw.eviction_hard {
            // Signals the file does not name keep their defaults (upstream's
            // MergeDefaultEvictionSettings).
            eviction_hard.extend(explicit);
        }
        let config = AgentConfig {
            node_status_update_frequency: update,
            node_status_report_frequency: report,
            node_lease_duration_seconds: raw
                .node_lease_duration_seconds
                .unwrap_or(defaults.node_lease_duration_seconds),
            shutdown_grace_period: duration("shutdownGracePeriod", &raw.shutdown_grace_period)?
                .unwrap_or_default(),
            shutdown_grace_period_critical_pods: duration(
                "shutdownGracePeriodCriticalPods",
                &raw.shutdown_grace_period_critical_pods,
            )?
            .unwrap_or_default(),
            shutdown_grace_period_by_pod_priority: raw.shutdown_grace_period_by_pod_priority,
            eviction_hard,
            max_pods: raw.max_pods.unwrap_or(defaults.max_pods),
        };
        config.validate()?;
        Ok(config)
    }

    /// Upstream's `ValidateKubeletConfiguration` rules for these fields.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if self.node_lease_duration_seconds <= 0 {
            problems.push("nodeLeaseDurationSeconds must be greater than 0".to_string());
        }
        if self.node_status_update_frequency.is_zero() {
            problems.push("nodeStatusUpdateFrequency must be greater than 0".to_string());
        }
        if self.shutdown_grace_period_critical_pods > self.shutdown_grace_period {
            problems.push(format!(
                "shutdownGracePeriodCriticalPods {:?} must be <= shutdownGracePeriod {:?}",
                self.shutdown_grace_period_critical_pods, self.shutdown_grace_period
            ));
        }
        if !self.shutdown_grace_period_by_pod_priority.is_empty()
            && (!self.shutdown_grace_period.is_zero()
                || !self.shutdown_grace_period_critical_pods.is_zero())
        {
            problems.push(
                "Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time"
                    .to_string(),
            );
        }
        for phase in &self.shutdown_grace_period_by_pod_priority {
            if phase.shutdown_grace_period_seconds < 0 {
                problems.push(format!(
                    "shutdownGracePeriodByPodPriority: priority {} has a negative shutdownGracePeriodSeconds",
                    phase.priority
                ));
            }
        }
        if self.max_pods < 0 {
            problems.push("maxPods must not be negative".to_string());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems.join(", ")))
        }
    }

    /// The node Lease is renewed every quarter of its duration (10 s for 40).
    pub fn lease_renew_interval(&self) -> Duration {
        Duration::from_millis(
            u64::try_from(self.node_lease_duration_seconds)
                .unwrap_or(40)
                .saturating_mul(250),
        )
    }

    /// The shutdown phases, lowest priority first: the explicit
    /// `shutdownGracePeriodByPodPriority`, or upstream's migration of
    /// `shutdownGracePeriod` / `shutdownGracePeriodCriticalPods` into a
    /// regular phase (priority 0) and a critical one. Empty: graceful
    /// shutdown is off.
    pub fn shutdown_phases(&self) -> Vec<ShutdownGracePeriodByPodPriority> {
        let mut phases = if self.shutdown_grace_period_by_pod_priority.is_empty() {
            migrate_shutdown_config(
                self.shutdown_grace_period,
                self.shutdown_grace_period_critical_pods,
            )
        } else {
            self.shutdown_grace_period_by_pod_priority.clone()
        };
        phases.sort_by_key(|p| p.priority);
        phases
    }
}

/// Upstream's `migrateConfig`.
fn migrate_shutdown_config(
    requested: Duration,
    critical: Duration,
) -> Vec<ShutdownGracePeriodByPodPriority> {
    if requested.is_zero() || critical > requested {
        return Vec::new();
    }
    let regular = requested - critical;
    let secs = |d: Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    vec![
        ShutdownGracePeriodByPodPriority {
            priority: 0,
            shutdown_grace_period_seconds: secs(regular),
        },
        ShutdownGracePeriodByPodPriority {
            priority: SYSTEM_CRITICAL_PRIORITY,
            shutdown_grace_period_seconds: secs(critical),
        },
    ]
}

/// Parses a Go `time.Duration` string (`300ms`, `10s`, `1m30s`, `1.5h`).
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    berth_core::duration::parse_duration(text.trim()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_like_time_parse_duration() {
        let cases: &[(&str, Option<Duration>)] = &[
            ("0", Some(Duration::ZERO)),
            ("10s", Some(Duration::from_secs(10))),
            ("5m", Some(Duration::from_secs(300))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("300ms", Some(Duration::from_millis(300))),
            ("1.5h", Some(Duration::from_secs(5400))),
            ("10", None),
            ("", None),
            ("-1s", None),
            ("1x", None),
            ("s", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_go_duration(text).ok(), *want, "{text}");
        }
    }

    #[test]
    fn an_empty_file_gives_upstream_defaults() {
        let config = AgentConfig::from_yaml("").expect("defaults");
        assert_eq!(config, AgentConfig::default());
        assert_eq!(config.lease_renew_interval(), Duration::from_secs(10));
        assert!(config.shutdown_phases().is_empty(), "shutdown is off");
    }

    #[test]
    fn report_frequency_follows_an_explicit_update_frequency() {
        let cases: &[(&str, u64, u64)] = &[
            ("nodeStatusUpdateFrequency: 20s", 20, 20),
            (
                "nodeStatusUpdateFrequency: 20s\nnodeStatusReportFrequency: 1m",
                20,
                60,
            ),
            ("nodeStatusReportFrequency: 1m", 10, 60),
        ];
        for (yaml, update, report) in cases {
            let c = AgentConfig::from_yaml(yaml).expect(yaml);
            assert_eq!(c.node_status_update_frequency.as_secs(), *update, "{yaml}");
            assert_eq!(c.node_status_report_frequency.as_secs(), *report, "{yaml}");
        }
    }

    #[test]
    fn shutdown_periods_migrate_to_a_regular_and_a_critical_phase() {
        let c = AgentConfig::from_yaml(
            "kind: KubeletConfiguration\nshutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s",
        )
        .expect("config");
        assert_eq!(
            c.shutdown_phases(),
            vec![
                ShutdownGracePeriodByPodPriority {
                    priority: 0,
                    shutdown_grace_period_seconds: 20
                },
                ShutdownGracePeriodByPodPriority {
                    priority: SYSTEM_CRITICAL_PRIORITY,
                    shutdown_grace_period_seconds: 10
                },
            ]
        );
    }

    #[test]
    fn priority_phases_are_sorted_lowest_first() {
        let c = AgentConfig::from_yaml(
            "shutdownGracePeriodByPodPriority:\n- {priority: 100000, shutdownGracePeriodSeconds: 10}\n- {priority: 0, shutdownGracePeriodSeconds: 5}\n",
        )
        .expect("config");
        let priorities: Vec<i32> = c.shutdown_phases().iter().map(|p| p.priority).collect();
        assert_eq!(priorities, vec![0, 100000]);
    }

    #[test]
    fn invalid_files_are_refused_with_the_field() {
        let cases: &[(&str, &str)] = &[
            (
                "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s",
                "shutdownGracePeriodCriticalPods",
            ),
            (
                "shutdownGracePeriod: 10s\nshutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 1}]",
                "Cannot specify both",
            ),
            (
                "nodeStatusUpdateFrequency: ten",
                "nodeStatusUpdateFrequency",
            ),
            ("kind: Pod", "KubeletConfiguration"),
            ("noSuchField: 1", "noSuchField"),
            ("nodeLeaseDurationSeconds: 0", "nodeLeaseDurationSeconds"),
        ];
        for (yaml, want) in cases {
            let err = AgentConfig::from_yaml(yaml).expect_err(yaml).to_string();
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }

    #[test]
    fn eviction_thresholds_override_one_signal_and_keep_the_rest() {
        let c = AgentConfig::from_yaml("evictionHard:\n  memory.available: 1Gi").expect("config");
        assert_eq!(c.eviction_hard["memory.available"], "1Gi");
        assert_eq!(c.eviction_hard["nodefs.available"], "10%");
    }
}
