//! Zones and their disruption states (upstream `ComputeZoneState`,
//! `handleDisruption`, `setLimiterInZone`, `ReducedQPSFunc`,
//! `HealthyQPSFunc`, and `nodetopology.GetZoneKey`).
//!
//! A zone is Normal, PartiallyDisrupted (more than 2 and at least
//! `--unhealthy-zone-threshold` of its nodes not Ready) or FullyDisrupted (no
//! Ready node). Its NoExecute-tainting queue runs at `--node-eviction-rate`
//! when Normal or FullyDisrupted, at `--secondary-node-eviction-rate` when
//! partially disrupted in a zone of more than
//! `--large-cluster-size-threshold` nodes, and not at all when partially
//! disrupted in a smaller zone. When every zone is fully disrupted the
//! controller assumes it is the one cut off: it stops tainting everywhere
//! and lifts the not-ready/unreachable NoExecute taints.

use std::collections::BTreeMap;

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

/// The health figures of one zone for the `node_collector_*` gauges.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneFigures {
    pub zone: String,
    pub size: usize,
    pub unhealthy: usize,
    /// Percentage of Ready nodes.
    pub health: f64,
}

/// What a pass's disruption handling asks of the controller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DisruptionOutcome {
    /// Gauges to set, one per zone seen this pass.
    pub figures: Vec<ZoneFigures>,
    /// Zones that have no counted node any more (gauges reset).
    pub removed: Vec<String>,
    /// Every zone just became fully disrupted: lift the NoExecute health
    /// taints from every node; every limiter is 0.
    pub enter_master_disruption: bool,
    /// Some zone just recovered from all zones being down: reset every
    /// node's probe and transition timestamps to now.
    pub exit_master_disruption: bool,
    /// New tainting rates, by zone.
    pub limiters: Vec<(String, f32)>,
}

/// The zone states across passes (`nc.zoneStates`).
#[derive(Debug, Clone, Default)]
pub struct ZoneTracker {
    states: BTreeMap<String, ZoneState>,
}

impl ZoneTracker {
    /// Registers a zone seen for the first time (`addPodEvictorForNewZone`);
    /// true if it is new.
    pub fn ensure(&mut self, zone: &str) -> bool {
        if self.states.contains_key(zone) {
            return false;
        }
        self.states.insert(zone.to_string(), ZoneState::Initial);
        true
    }

    pub fn state(&self, zone: &str) -> Option<ZoneState> {
        self.states.get(zone).copied()
    }

    pub fn states(&self) -> impl Iterator<Item = (&str, ZoneState)> {
        self.states.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// `handleDisruption` over this pass's Ready statuses per zone (nodes
    /// excluded from disruption checks left out).
    pub fn handle(
        &mut self,
        zone_ready: &BTreeMap<String, Vec<Option<bool>>>,
        rates: &ZoneRates,
    ) -> DisruptionOutcome {
        let mut out = DisruptionOutcome::default();
        let mut new_states = BTreeMap::new();
        let mut all_are_fully_disrupted = true;
        for (zone, ready) in zone_ready {
            let (unhealthy, state) = compute_zone_state(ready, rates.unhealthy_zone_threshold);
            out.figures.push(ZoneFigures {
                zone: zone.clone(),
                size: ready.len(),
                unhealthy,
                health: if ready.is_empty() {
                    100.0
                } else {
                    (100 * (ready.len() - unhealthy)) as f64 / ready.len() as f64
                },
            });
            if state != ZoneState::FullDisruption {
                all_are_fully_disrupted = false;
            }
            new_states.insert(zone.clone(), state);
            self.states
                .entry(zone.clone())
                .or_insert(ZoneState::Initial);
        }
        let gone: Vec<String> = self
            .states
            .keys()
            .filter(|z| !zone_ready.contains_key(*z))
            .cloned()
            .collect();
        for zone in gone {
            self.states.remove(&zone);
            out.removed.push(zone);
        }
        let all_were_fully_disrupted = self
            .states
            .values()
            .all(|s| *s == ZoneState::FullDisruption);
        if all_are_fully_disrupted && all_were_fully_disrupted {
            return out;
        }
        let size = |zone: &str| zone_ready.get(zone).map_or(0, Vec::len);
        if all_are_fully_disrupted {
            out.enter_master_disruption = true;
            for (zone, state) in self.states.iter_mut() {
                out.limiters.push((zone.clone(), 0.0));
                *state = ZoneState::FullDisruption;
            }
            return out;
        }
        if all_were_fully_disrupted {
            out.exit_master_disruption = true;
            for (zone, state) in self.states.iter_mut() {
                let new = new_states.get(zone).copied().unwrap_or(ZoneState::Normal);
                if let Some(qps) = limiter_qps(new, size(zone), rates) {
                    out.limiters.push((zone.clone(), qps));
                }
                *state = new;
            }
            return out;
        }
        for (zone, state) in self.states.iter_mut() {
            let Some(new) = new_states.get(zone).copied() else {
                continue;
            };
            if *state == new {
                continue;
            }
            if let Some(qps) = limiter_qps(new, size(zone), rates) {
                out.limiters.push((zone.clone(), qps));
            }
            *state = new;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap as Map;

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

    fn zones(rows: &[(&str, &[Option<bool>])]) -> Map<String, Vec<Option<bool>>> {
        rows.iter()
            .map(|(z, r)| (z.to_string(), r.to_vec()))
            .collect()
    }

    /// Upstream `TestMonitorNodeHealthEvictPodsWithDisruption`, as zone
    /// states: the first pass's and the following pass's states, and
    /// whether tainting (eviction) may proceed in the zone of `node0`.
    #[test]
    fn disruption_states_across_passes() {
        struct Case {
            name: &'static str,
            initial: Vec<(&'static str, Vec<Option<bool>>)>,
            following: Vec<(&'static str, Vec<Option<bool>>)>,
            initial_states: Vec<(&'static str, ZoneState)>,
            following_states: Vec<(&'static str, ZoneState)>,
            /// The rate of zone1 after the second pass is positive.
            evicts: bool,
        }
        let u = F;
        let cases = vec![
            Case {
                name: "only zone is down: no eviction",
                initial: vec![("z1", vec![u, u])],
                following: vec![("z1", vec![u, u])],
                initial_states: vec![("z1", ZoneState::FullDisruption)],
                following_states: vec![("z1", ZoneState::FullDisruption)],
                evicts: false,
            },
            Case {
                name: "both zones down: no eviction",
                initial: vec![("z1", vec![u]), ("z2", vec![u])],
                following: vec![("z1", vec![u]), ("z2", vec![u])],
                initial_states: vec![
                    ("z1", ZoneState::FullDisruption),
                    ("z2", ZoneState::FullDisruption),
                ],
                following_states: vec![
                    ("z1", ZoneState::FullDisruption),
                    ("z2", ZoneState::FullDisruption),
                ],
                evicts: false,
            },
            Case {
                name: "one zone down: eviction",
                initial: vec![("z1", vec![u]), ("z2", vec![T])],
                following: vec![("z1", vec![u]), ("z2", vec![T])],
                initial_states: vec![("z1", ZoneState::FullDisruption), ("z2", ZoneState::Normal)],
                following_states: vec![
                    ("z1", ZoneState::FullDisruption),
                    ("z2", ZoneState::Normal),
                ],
                evicts: true,
            },
            Case {
                // Upstream's "-master" node is today a node labelled
                // exclude-disruption: it is not counted, so the zone is down.
                name: "only an excluded node of the zone is healthy: no eviction",
                initial: vec![("z1", vec![u])],
                following: vec![("z1", vec![u])],
                initial_states: vec![("z1", ZoneState::FullDisruption)],
                following_states: vec![("z1", ZoneState::FullDisruption)],
                evicts: false,
            },
            Case {
                name: "both zones down, one comes back: eviction",
                initial: vec![("z1", vec![u]), ("z2", vec![u])],
                following: vec![("z1", vec![u]), ("z2", vec![T])],
                initial_states: vec![
                    ("z1", ZoneState::FullDisruption),
                    ("z2", ZoneState::FullDisruption),
                ],
                following_states: vec![
                    ("z1", ZoneState::FullDisruption),
                    ("z2", ZoneState::Normal),
                ],
                evicts: true,
            },
            Case {
                name: "zone partially disrupted (small cluster): no eviction",
                initial: vec![("z1", vec![u, u, u, u, T])],
                following: vec![("z1", vec![u, u, u, u, T])],
                initial_states: vec![("z1", ZoneState::PartialDisruption)],
                following_states: vec![("z1", ZoneState::PartialDisruption)],
                evicts: false,
            },
        ];
        let rates = ZoneRates::default();
        for case in cases {
            let mut tracker = ZoneTracker::default();
            let mut rate: BTreeMap<String, f32> = BTreeMap::new();
            let initial: Vec<(&str, &[Option<bool>])> = case
                .initial
                .iter()
                .map(|(z, r)| (*z, r.as_slice()))
                .collect();
            for (z, _) in &initial {
                tracker.ensure(z);
                rate.insert(z.to_string(), rates.eviction_qps);
            }
            let first = tracker.handle(&zones(&initial), &rates);
            for (z, q) in first.limiters {
                rate.insert(z, q);
            }
            for (z, s) in &case.initial_states {
                assert_eq!(tracker.state(z), Some(*s), "{}: initial {z}", case.name);
            }
            let following: Vec<(&str, &[Option<bool>])> = case
                .following
                .iter()
                .map(|(z, r)| (*z, r.as_slice()))
                .collect();
            let second = tracker.handle(&zones(&following), &rates);
            for (z, q) in second.limiters {
                rate.insert(z, q);
            }
            for (z, s) in &case.following_states {
                assert_eq!(tracker.state(z), Some(*s), "{}: following {z}", case.name);
            }
            assert_eq!(
                rate.get("z1").copied().unwrap_or(0.0) > 0.0,
                case.evicts,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn all_zones_down_lifts_taints_once_and_recovery_resets_timestamps() {
        let rates = ZoneRates::default();
        let mut tracker = ZoneTracker::default();
        tracker.ensure("a");
        tracker.ensure("b");
        let healthy = tracker.handle(&zones(&[("a", &[T, T]), ("b", &[T])]), &rates);
        assert!(!healthy.enter_master_disruption);
        let down = tracker.handle(&zones(&[("a", &[F, F]), ("b", &[None])]), &rates);
        assert!(down.enter_master_disruption);
        assert_eq!(down.limiters, vec![("a".into(), 0.0), ("b".into(), 0.0)]);
        let still = tracker.handle(&zones(&[("a", &[F, F]), ("b", &[None])]), &rates);
        assert_eq!(
            still,
            DisruptionOutcome {
                figures: still.figures.clone(),
                ..Default::default()
            }
        );
        let back = tracker.handle(&zones(&[("a", &[T, F]), ("b", &[None])]), &rates);
        assert!(back.exit_master_disruption);
        assert_eq!(back.limiters, vec![("a".into(), 0.1), ("b".into(), 0.1)]);
    }

    #[test]
    fn partial_disruption_of_a_large_zone_slows_tainting() {
        let rates = ZoneRates::default();
        let mut tracker = ZoneTracker::default();
        tracker.ensure("big");
        tracker.ensure("small");
        let mut big = vec![F; 60];
        big.extend(vec![T; 40]);
        let mut small = vec![F; 18];
        small.extend(vec![T; 12]);
        let out = tracker.handle(
            &zones(&[("big", big.as_slice()), ("small", small.as_slice())]),
            &rates,
        );
        assert_eq!(
            out.limiters,
            vec![("big".into(), 0.01), ("small".into(), 0.0)]
        );
        let fig = &out.figures[0];
        assert_eq!((fig.size, fig.unhealthy, fig.health), (100, 60, 40.0));
    }
}
