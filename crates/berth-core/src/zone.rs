//! Zones and their disruption states: the one home of upstream's
//! `ComputeZoneState`, `ReducedQPSFunc`/`HealthyQPSFunc` (the tainting
//! rate per state) and `nodetopology.GetZoneKey`. The node lifecycle
//! controller (which adds the states' memory across passes, berth-controllers'
//! `ZoneTracker`) and the live page's `/ui/api/zones` both call it.
//!
//! A zone is Normal, PartialDisruption (more than 2 and at least
//! `--unhealthy-zone-threshold` of its nodes not Ready) or FullDisruption (no
//! Ready node). Its NoExecute-tainting queue runs at `--node-eviction-rate`
//! when Normal or FullDisruption, at `--secondary-node-eviction-rate` when
//! partially disrupted in a zone of more than
//! `--large-cluster-size-threshold` nodes, and not at all when partially
//! disrupted in a smaller zone. When every zone is fully disrupted the
//! controller assumes it is the one cut off and taints nowhere.

use k8s_openapi::api::core::v1::Node;

pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
pub const LABEL_FAILURE_DOMAIN_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_FAILURE_DOMAIN_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
/// Nodes with this label are left out of the zone health counts.
pub const LABEL_EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";

/// A zone's state, as upstream names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Initial,
    Normal,
    FullDisruption,
    PartialDisruption,
}

/// The rates and thresholds that decide a zone's tainting rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneRates {
    /// `--node-eviction-rate`: nodes per second.
    pub eviction_qps: f32,
    /// `--secondary-node-eviction-rate`.
    pub secondary_eviction_qps: f32,
    /// `--large-cluster-size-threshold`.
    pub large_cluster_threshold: u32,
    /// `--unhealthy-zone-threshold`.
    pub unhealthy_zone_threshold: f32,
}

impl Default for ZoneRates {
    fn default() -> Self {
        ZoneRates {
            eviction_qps: 0.1,
            secondary_eviction_qps: 0.01,
            large_cluster_threshold: 50,
            unhealthy_zone_threshold: 0.55,
        }
    }
}

/// `nodetopology.GetZoneKey`: region and zone (stable labels, else the beta
/// ones) joined by `":\0:"`; empty when neither is set.
pub fn zone_key(node: &Node) -> String {
    let Some(labels) = node.metadata.labels.as_ref() else {
        return String::new();
    };
    let zone = labels
        .get(LABEL_TOPOLOGY_ZONE)
        .or_else(|| labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE))
        .map(String::as_str)
        .unwrap_or("");
    let region = labels
        .get(LABEL_TOPOLOGY_REGION)
        .or_else(|| labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION))
        .map(String::as_str)
        .unwrap_or("");
    if region.is_empty() && zone.is_empty() {
        return String::new();
    }
    format!("{region}:\0:{zone}")
}

/// A node's input to [`compute_zone_state`]: `Some(true)` when its Ready
/// condition is True, `Some(false)` for False or Unknown, `None` when it
/// has no Ready condition yet.
pub fn ready_status(node: &Node) -> Option<bool> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status == "True")
}

/// Whether the node is left out of zone health (`isNodeExcludedFromDisruptionChecks`).
pub fn excluded_from_disruption(node: &Node) -> bool {
    node.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(LABEL_EXCLUDE_DISRUPTION))
}

/// `ComputeZoneState` over the zone's Ready statuses (`None`: no Ready
/// condition, which counts as not Ready): the number of not-Ready nodes and
/// the state.
pub fn compute_zone_state(ready: &[Option<bool>], unhealthy_threshold: f32) -> (usize, ZoneState) {
    let ready_nodes = ready.iter().filter(|r| **r == Some(true)).count();
    let not_ready = ready.len() - ready_nodes;
    let state = if ready_nodes == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && (not_ready as f32) / (ready.len() as f32) >= unhealthy_threshold {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    };
    (not_ready, state)
}

/// `setLimiterInZone`: the tainting rate for a zone of `zone_size` nodes in
/// `state` (`None` for Initial, which keeps the current limiter).
pub fn limiter_qps(state: ZoneState, zone_size: usize, rates: &ZoneRates) -> Option<f32> {
    match state {
        ZoneState::Normal => Some(rates.eviction_qps),
        // ReducedQPSFunc
        ZoneState::PartialDisruption => {
            Some(if zone_size > rates.large_cluster_threshold as usize {
                rates.secondary_eviction_qps
            } else {
                0.0
            })
        }
        // HealthyQPSFunc
        ZoneState::FullDisruption => Some(rates.eviction_qps),
        ZoneState::Initial => None,
    }
}

/// A zone as the controller sees it now: its size (nodes counted for
/// disruption), how many are not Ready, its state and its tainting rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneNow {
    pub zone: String,
    pub size: usize,
    pub not_ready: usize,
    pub state: ZoneState,
    /// Nodes per second the NoExecute-tainting queue of the zone runs at.
    pub qps: f32,
}

/// Every zone's state and rate from this moment's Ready statuses alone
/// (`zone -> Ready of each counted node`): `handleDisruption` without its
/// memory, as a reader of the cluster sees it. When every zone is fully
/// disrupted the rate is 0 everywhere (the controller stops tainting).
/// The controller's tracker differs only in a zone's first pass (Initial,
/// which keeps the default rate) and on leaving an all-zones outage,
/// which it sees one pass later.
pub fn zones_now<'a>(
    zone_ready: impl IntoIterator<Item = (&'a str, &'a [Option<bool>])>,
    rates: &ZoneRates,
) -> Vec<ZoneNow> {
    let mut out: Vec<ZoneNow> = zone_ready
        .into_iter()
        .map(|(zone, ready)| {
            let (not_ready, state) = compute_zone_state(ready, rates.unhealthy_zone_threshold);
            ZoneNow {
                zone: zone.to_owned(),
                size: ready.len(),
                not_ready,
                state,
                qps: limiter_qps(state, ready.len(), rates).unwrap_or(rates.eviction_qps),
            }
        })
        .collect();
    if !out.is_empty() && out.iter().all(|z| z.state == ZoneState::FullDisruption) {
        for zone in &mut out {
            zone.qps = 0.0;
        }
    }
    out
}

/// A zone key as people read it: `region/zone`, `zone`, or `(none)`.
pub fn zone_display(key: &str) -> String {
    match key.split_once(":\0:") {
        None if key.is_empty() => "(none)".to_owned(),
        None => key.to_owned(),
        Some(("", zone)) => zone.to_owned(),
        Some((region, zone)) => format!("{region}/{zone}"),
    }
}

/// The state's name as upstream spells it (`stateNormal`, ...).
impl ZoneState {
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneState::Initial => "Initial",
            ZoneState::Normal => "Normal",
            ZoneState::FullDisruption => "FullDisruption",
            ZoneState::PartialDisruption => "PartialDisruption",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Option<bool> = Some(true);
    const F: Option<bool> = Some(false);

    /// Upstream `ComputeZoneState`: fully disrupted without a Ready node,
    /// partially with more than 2 and at least the threshold not Ready.
    #[test]
    fn zone_state_from_ready_counts() {
        struct Case<'a> {
            name: &'a str,
            ready: Vec<Option<bool>>,
            unhealthy: usize,
            state: ZoneState,
        }
        let cases = &[
            Case {
                name: "empty zone is normal",
                ready: vec![],
                unhealthy: 0,
                state: ZoneState::Normal,
            },
            Case {
                name: "all ready",
                ready: vec![T, T, T],
                unhealthy: 0,
                state: ZoneState::Normal,
            },
            Case {
                name: "none ready",
                ready: vec![F, None],
                unhealthy: 2,
                state: ZoneState::FullDisruption,
            },
            Case {
                name: "two unhealthy never make a partial disruption",
                ready: vec![F, F, T],
                unhealthy: 2,
                state: ZoneState::Normal,
            },
            Case {
                name: "three of five unhealthy (60%) is partial",
                ready: vec![F, F, F, T, T],
                unhealthy: 3,
                state: ZoneState::PartialDisruption,
            },
            Case {
                name: "three of six unhealthy (50%) is normal",
                ready: vec![F, F, F, T, T, T],
                unhealthy: 3,
                state: ZoneState::Normal,
            },
            Case {
                name: "a missing Ready condition counts as unhealthy",
                ready: vec![None, None, None, T],
                unhealthy: 3,
                state: ZoneState::PartialDisruption,
            },
        ];
        for Case {
            name,
            ready,
            unhealthy,
            state,
        } in cases
        {
            assert_eq!(
                compute_zone_state(ready, 0.55),
                (*unhealthy, *state),
                "{name}"
            );
        }
    }

    #[test]
    fn threshold_is_inclusive() {
        // 55 of 100 unhealthy is exactly the threshold.
        let mut ready = vec![F; 55];
        ready.extend(vec![T; 45]);
        assert_eq!(
            compute_zone_state(&ready, 0.55).1,
            ZoneState::PartialDisruption
        );
        ready[0] = T;
        assert_eq!(compute_zone_state(&ready, 0.55).1, ZoneState::Normal);
    }

    /// Upstream `setLimiterInZone` with `ReducedQPSFunc`/`HealthyQPSFunc`.
    #[test]
    fn limiter_rate_per_zone_state() {
        let rates = ZoneRates::default();
        struct Case<'a> {
            name: &'a str,
            state: ZoneState,
            size: usize,
            want: Option<f32>,
        }
        let cases = &[
            Case {
                name: "normal",
                state: ZoneState::Normal,
                size: 10,
                want: Some(0.1),
            },
            Case {
                name: "partial disruption, large zone",
                state: ZoneState::PartialDisruption,
                size: 100,
                want: Some(0.01),
            },
            Case {
                name: "partial disruption, zone at the threshold",
                state: ZoneState::PartialDisruption,
                size: 50,
                want: Some(0.0),
            },
            Case {
                name: "partial disruption, small zone",
                state: ZoneState::PartialDisruption,
                size: 30,
                want: Some(0.0),
            },
            Case {
                name: "full disruption",
                state: ZoneState::FullDisruption,
                size: 100,
                want: Some(0.1),
            },
            Case {
                name: "initial keeps the limiter",
                state: ZoneState::Initial,
                size: 100,
                want: None,
            },
        ];
        for Case {
            name,
            state,
            size,
            want,
        } in cases
        {
            assert_eq!(limiter_qps(*state, *size, &rates), *want, "{name}");
        }
    }

    #[test]
    fn zone_key_prefers_stable_labels_and_joins_with_nul() {
        let mut node = Node::default();
        assert_eq!(zone_key(&node), "");
        node.metadata.labels = Some(
            [
                (LABEL_TOPOLOGY_REGION.to_string(), "region1".to_string()),
                (LABEL_TOPOLOGY_ZONE.to_string(), "zone1".to_string()),
                (
                    LABEL_FAILURE_DOMAIN_BETA_ZONE.to_string(),
                    "old".to_string(),
                ),
            ]
            .into(),
        );
        assert_eq!(zone_key(&node), "region1:\0:zone1");
        node.metadata.labels =
            Some([(LABEL_FAILURE_DOMAIN_BETA_ZONE.to_string(), "z".to_string())].into());
        assert_eq!(zone_key(&node), ":\0:z");
    }

    /// The stateless view: the rate per state, and no tainting anywhere
    /// when every zone is down.
    #[test]
    fn zones_now_gives_each_zone_its_state_and_rate() {
        struct Case<'a> {
            name: &'a str,
            zones: Vec<(&'a str, Vec<Option<bool>>)>,
            want: Vec<(&'a str, usize, ZoneState, f32)>,
        }
        let cases = vec![
            Case {
                name: "healthy zone at the normal rate",
                zones: vec![("a", vec![T, T])],
                want: vec![("a", 0, ZoneState::Normal, 0.1)],
            },
            Case {
                name: "one zone down among healthy ones keeps the normal rate",
                zones: vec![("a", vec![F, F]), ("b", vec![T])],
                want: vec![
                    ("a", 2, ZoneState::FullDisruption, 0.1),
                    ("b", 0, ZoneState::Normal, 0.1),
                ],
            },
            Case {
                name: "every zone down: no tainting anywhere",
                zones: vec![("a", vec![F]), ("b", vec![None])],
                want: vec![
                    ("a", 1, ZoneState::FullDisruption, 0.0),
                    ("b", 1, ZoneState::FullDisruption, 0.0),
                ],
            },
            Case {
                name: "small partially disrupted zone stops, a large one slows",
                zones: vec![
                    ("small", [vec![F; 3], vec![T; 2]].concat()),
                    ("large", [vec![F; 60], vec![T; 40]].concat()),
                ],
                want: vec![
                    ("small", 3, ZoneState::PartialDisruption, 0.0),
                    ("large", 60, ZoneState::PartialDisruption, 0.01),
                ],
            },
        ];
        for Case { name, zones, want } in cases {
            let got = zones_now(
                zones.iter().map(|(z, r)| (*z, r.as_slice())),
                &ZoneRates::default(),
            );
            let got: Vec<(&str, usize, ZoneState, f32)> = got
                .iter()
                .map(|z| (z.zone.as_str(), z.not_ready, z.state, z.qps))
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn zone_keys_read_as_region_and_zone() {
        for (key, want) in [("", "(none)"), (":\0:a", "a"), ("r1:\0:a", "r1/a")] {
            assert_eq!(zone_display(key), want, "{key:?}");
        }
    }
}
