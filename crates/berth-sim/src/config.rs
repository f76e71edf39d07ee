//! The `config:` section: berth server flags by their flag name, typed.
//!
//! The flags are those of `berth server` and of the components it runs
//! (API admission, node lifecycle). Each has upstream's default, so a
//! scenario names only what it changes.

use std::time::Duration;

use berth_core::FeatureGates;

use crate::duration::parse_duration;

/// Every flag a scenario may set, with what it takes.
pub const FLAGS: &[(&str, &str)] = &[
    ("feature-gates", "NAME=BOOL,..."),
    ("default-not-ready-toleration-seconds", "an integer"),
    ("default-unreachable-toleration-seconds", "an integer"),
    ("node-monitor-period", "a duration"),
    ("node-monitor-grace-period", "a duration"),
    ("node-startup-grace-period", "a duration"),
    ("node-eviction-rate", "a number"),
    ("secondary-node-eviction-rate", "a number"),
    ("unhealthy-zone-threshold", "a number"),
    ("large-cluster-size-threshold", "an integer"),
];

/// The cluster's settings for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub feature_gates: FeatureGates,
    pub default_not_ready_toleration_seconds: i64,
    pub default_unreachable_toleration_seconds: i64,
    pub node_monitor_period: Duration,
    pub node_monitor_grace_period: Duration,
    pub node_startup_grace_period: Duration,
    pub node_eviction_rate: f64,
    pub secondary_node_eviction_rate: f64,
    pub unhealthy_zone_threshold: f64,
    pub large_cluster_size_threshold: i64,
}

impl Default for SimConfig {
    /// Upstream's defaults (kube-controller-manager v1.35, kube-apiserver).
    fn default() -> Self {
        SimConfig {
            feature_gates: FeatureGates::default(),
            default_not_ready_toleration_seconds: 300,
            default_unreachable_toleration_seconds: 300,
            node_monitor_period: Duration::from_secs(5),
            node_monitor_grace_period: Duration::from_secs(50),
            node_startup_grace_period: Duration::from_secs(60),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
        }
    }
}

/// One flag's effective value, as the report lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub flag: &'static str,
    pub value: String,
    /// Whether the scenario changed it from upstream's default.
    pub changed: bool,
    /// What it decides, in the report's words.
    pub meaning: &'static str,
}

impl SimConfig {
    /// Every flag's value in [`FLAGS`] order, with whether the scenario
    /// changed it: what decided a run's outcome, for the report's header.
    pub fn effective(&self) -> Vec<Setting> {
        let default = SimConfig::default();
        let secs = |d: std::time::Duration| crate::timeline::format_t(d.as_millis() as u64);
        let row = |flag, value: String, default: String, meaning| Setting {
            flag,
            changed: value != default,
            value,
            meaning,
        };
        vec![
            row(
                "feature-gates",
                // Spaced, so the value wraps on a narrow window.
                self.feature_gates.to_string().replace(',', ", "),
                default.feature_gates.to_string().replace(',', ", "),
                "features on or off",
            ),
            row(
                "default-not-ready-toleration-seconds",
                format!("{}s", self.default_not_ready_toleration_seconds),
                format!("{}s", default.default_not_ready_toleration_seconds),
                "added to every pod that does not tolerate node.kubernetes.io/not-ready:NoExecute",
            ),
            row(
                "default-unreachable-toleration-seconds",
                format!("{}s", self.default_unreachable_toleration_seconds),
                format!("{}s", default.default_unreachable_toleration_seconds),
                "added to every pod that does not tolerate node.kubernetes.io/unreachable:NoExecute",
            ),
            row(
                "node-monitor-period",
                secs(self.node_monitor_period),
                secs(default.node_monitor_period),
                "how often node health is checked",
            ),
            row(
                "node-monitor-grace-period",
                secs(self.node_monitor_grace_period),
                secs(default.node_monitor_grace_period),
                "silence before a node is marked Unknown and tainted unreachable",
            ),
            row(
                "node-startup-grace-period",
                secs(self.node_startup_grace_period),
                secs(default.node_startup_grace_period),
                "silence allowed to a node that has never reported",
            ),
            row(
                "node-eviction-rate",
                format!("{} nodes/s", self.node_eviction_rate),
                format!("{} nodes/s", default.node_eviction_rate),
                "how fast nodes are tainted in a healthy zone",
            ),
            row(
                "secondary-node-eviction-rate",
                format!("{} nodes/s", self.secondary_node_eviction_rate),
                format!("{} nodes/s", default.secondary_node_eviction_rate),
                "the rate in a partially disrupted zone of a large cluster",
            ),
            row(
                "unhealthy-zone-threshold",
                format!("{}", self.unhealthy_zone_threshold),
                format!("{}", default.unhealthy_zone_threshold),
                "share of NotReady nodes that makes a zone PartialDisruption",
            ),
            row(
                "large-cluster-size-threshold",
                format!("{} nodes", self.large_cluster_size_threshold),
                format!("{} nodes", default.large_cluster_size_threshold),
                "zones up to this size stop evicting when partially disrupted",
            ),
        ]
    }
}

impl SimConfig {
    /// Sets flag `name` from its textual `value`; the error says what is
    /// wrong in words a user of the flag knows.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        fn int(value: &str) -> Result<i64, String> {
            value
                .parse()
                .map_err(|_| format!("invalid value {value:?}: not an integer"))
        }
        fn number(value: &str) -> Result<f64, String> {
            match value.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(format!(
                    "invalid value {value:?}: not a non-negative number"
                )),
            }
        }
        fn duration(value: &str) -> Result<Duration, String> {
            parse_duration(value).map_err(|e| format!("invalid value {value:?}: {e}"))
        }
        match name {
            "feature-gates" => self
                .feature_gates
                .apply(value)
                .map_err(|e| format!("invalid value {value:?}: {e}"))?,
            "default-not-ready-toleration-seconds" => {
                self.default_not_ready_toleration_seconds = int(value)?
            }
            "default-unreachable-toleration-seconds" => {
                self.default_unreachable_toleration_seconds = int(value)?
            }
            "node-monitor-period" => self.node_monitor_period = duration(value)?,
            "node-monitor-grace-period" => self.node_monitor_grace_period = duration(value)?,
            "node-startup-grace-period" => self.node_startup_grace_period = duration(value)?,
            "node-eviction-rate" => self.node_eviction_rate = number(value)?,
            "secondary-node-eviction-rate" => self.secondary_node_eviction_rate = number(value)?,
            "unhealthy-zone-threshold" => self.unhealthy_zone_threshold = number(value)?,
            "large-cluster-size-threshold" => self.large_cluster_size_threshold = int(value)?,
            _ => {
                let known: Vec<&str> = FLAGS.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown flag {name:?} (known: {})",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per flag, in the same order, and only what the scenario
    /// set reads as changed.
    #[test]
    fn effective_settings_list_every_flag_and_mark_the_changed_ones() {
        let mut config = SimConfig::default();
        config
            .set("node-monitor-grace-period", "20s")
            .expect("valid");
        let got = config.effective();
        let flags: Vec<&str> = got.iter().map(|s| s.flag).collect();
        let want: Vec<&str> = FLAGS.iter().map(|(n, _)| *n).collect();
        assert_eq!(flags, want);
        let changed: Vec<(&str, &str)> = got
            .iter()
            .filter(|s| s.changed)
            .map(|s| (s.flag, s.value.as_str()))
            .collect();
        assert_eq!(changed, vec![("node-monitor-grace-period", "20s")]);
        let rate = got.iter().find(|s| s.flag == "node-eviction-rate");
        assert_eq!(rate.map(|s| s.value.as_str()), Some("0.1 nodes/s"));
    }

    #[test]
    fn every_listed_flag_is_settable() {
        for (name, _) in FLAGS {
            let value = match *name {
                "feature-gates" => "TaintTolerationComparisonOperators=false",
                n if n.ends_with("period") => "7s",
                _ => "3",
            };
            let mut config = SimConfig::default();
            assert_eq!(config.set(name, value), Ok(()), "{name}");
            assert_ne!(config, SimConfig::default(), "{name} changed nothing");
        }
    }

    #[test]
    fn bad_values_and_unknown_flags_are_refused() {
        let mut config = SimConfig::default();
        let cases = [
            ("node-monitor-grace-period", "50", "missing unit"),
            ("node-eviction-rate", "-1", "not a non-negative number"),
            ("large-cluster-size-threshold", "many", "not an integer"),
            ("feature-gates", "NoSuchGate=true", "NoSuchGate"),
            (
                "node-monitor-grace",
                "5s",
                "unknown flag \"node-monitor-grace\"",
            ),
        ];
        for (name, value, want) in cases {
            let err = config.set(name, value).err().unwrap_or_default();
            assert!(err.contains(want), "{name}={value}: {err}");
        }
    }
}
