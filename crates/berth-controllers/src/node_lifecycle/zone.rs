//! The zone states across the node lifecycle controller's passes
//! (upstream `handleDisruption`, `setLimiterInZone`): the rule of one pass
//! (`ComputeZoneState`, the rate per state, the zone key) is berth-core's
//! [`berth_core::zone`], re-exported here; this module adds its memory (a
//! zone's Initial state, entering and leaving an all-zones outage).

use std::collections::BTreeMap;

pub use berth_core::zone::{
    LABEL_EXCLUDE_DISRUPTION, LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE, ZoneRates, ZoneState, compute_zone_state,
    excluded_from_disruption, limiter_qps, zone_key,
};

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
