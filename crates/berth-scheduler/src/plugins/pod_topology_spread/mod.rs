//! PodTopologySpread: pods spread over topology domains (zones, nodes)
//! as their `topologySpreadConstraints` ask. `DoNotSchedule` constraints
//! filter (a node is rejected when placing the pod there would make its
//! domain more than `maxSkew` above the least populated one), and
//! `ScheduleAnyway` ones score (fewer matching pods in the node's domains
//! is better). Pods without constraints get the profile's default
//! constraints (upstream's system defaults: hostname maxSkew 3, zone
//! maxSkew 5, both ScheduleAnyway) with the selector of the workloads
//! that own them ([`crate::snapshot::WorkloadSelectors`]).
//!
//! Ported from upstream `plugins/podtopologyspread` (`common.go`,
//! `filtering.go`, `scoring.go`, `plugin.go`), with `matchLabelKeys`,
//! `minDomains`, `nodeAffinityPolicy` and `nodeTaintsPolicy` (the
//! NodeInclusionPolicy gate is GA: always on). The counts of matching pods
//! per domain are kept across cycles ([`counts`]) and brought up to date
//! from the snapshot's pod log, instead of recounted from every pod of the
//! cluster for every pod scheduled.

pub mod counts;
mod filtering;
pub mod hints;
mod scoring;

use berth_core::FeatureGates;
use berth_core::labels::{LabelSelector, LabelSelectorError, label_selector_as_selector};
use berth_core::node_affinity::RequiredNodeAffinity;
use berth_core::toleration::{find_matching_untolerated_taint, is_do_not_schedule};
use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};

use crate::framework::{NodeInfo, Plugin};
use crate::snapshot::WorkloadSelectors;

pub use filtering::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH};

/// The plugin's registry name.
pub const NAME: &str = "PodTopologySpread";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 2;

pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";

/// `NodeInclusionPolicy`: whether a constraint counts only nodes that
/// pass the pod's node affinity (or tolerate its taints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

impl InclusionPolicy {
    fn parse(s: Option<&str>, default: InclusionPolicy) -> InclusionPolicy {
        match s {
            Some("Honor") => InclusionPolicy::Honor,
            Some("Ignore") => InclusionPolicy::Ignore,
            _ => default,
        }
    }
}

/// One constraint with its selector parsed (`topologySpreadConstraint`).
/// `selector` is `None` where upstream's is `labels.Nothing()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub selector: Option<LabelSelector>,
    pub min_domains: i32,
    pub node_affinity_policy: InclusionPolicy,
    pub node_taints_policy: InclusionPolicy,
}

impl SpreadConstraint {
    fn selects(&self, labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }

    /// `matchNodeInclusionPolicies`.
    fn includes(
        &self,
        node: &NodeInfo,
        affinity: &RequiredNodeAffinity,
        pod: &Pod,
        gates: FeatureGates,
    ) -> bool {
        if self.node_affinity_policy == InclusionPolicy::Honor && !affinity.matches(node.node()) {
            return false;
        }
        if self.node_taints_policy == InclusionPolicy::Honor {
            let taints = node
                .node()
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]);
            let tolerations = pod
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.as_deref())
                .unwrap_or(&[]);
            if find_matching_untolerated_taint(taints, tolerations, is_do_not_schedule, gates)
                .is_some()
            {
                return false;
            }
        }
        true
    }
}

/// Upstream's `systemDefaultConstraints`.
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    vec![
        TopologySpreadConstraint {
            topology_key: LABEL_HOSTNAME.into(),
            when_unsatisfiable: SCHEDULE_ANYWAY.into(),
            max_skew: 3,
            ..TopologySpreadConstraint::default()
        },
        TopologySpreadConstraint {
            topology_key: LABEL_TOPOLOGY_ZONE.into(),
            when_unsatisfiable: SCHEDULE_ANYWAY.into(),
            max_skew: 5,
            ..TopologySpreadConstraint::default()
        },
    ]
}

/// `PodTopologySpreadArgs.defaultingType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultingType {
    System,
    List,
}

/// The plugin and its arguments.
#[derive(Debug, Clone)]
pub struct PodTopologySpread {
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// The defaults are upstream's system defaults: then nodes lacking a
    /// topology label are still scored.
    pub system_defaulted: bool,
    pub gates: FeatureGates,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        PodTopologySpread::new(DefaultingType::System, Vec::new(), FeatureGates::default())
    }
}

impl PodTopologySpread {
    pub fn new(
        defaulting: DefaultingType,
        default_constraints: Vec<TopologySpreadConstraint>,
        gates: FeatureGates,
    ) -> Self {
        match defaulting {
            DefaultingType::System => PodTopologySpread {
                default_constraints: system_default_constraints(),
                system_defaulted: true,
                gates,
            },
            DefaultingType::List => PodTopologySpread {
                default_constraints,
                system_defaulted: false,
                gates,
            },
        }
    }

    /// `filterTopologySpreadConstraints`: the constraints with
    /// `whenUnsatisfiable == action`, parsed, `matchLabelKeys` merged.
    pub fn filter_constraints(
        constraints: &[TopologySpreadConstraint],
        pod: &Pod,
        action: &str,
    ) -> Result<Vec<SpreadConstraint>, LabelSelectorError> {
        let labels = pod.metadata.labels.as_ref();
        let mut out = Vec::new();
        for c in constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
        {
            let mut selector = label_selector_as_selector(c.label_selector.as_ref())?;
            let keys = c.match_label_keys.as_deref().unwrap_or(&[]);
            if !keys.is_empty() {
                let set: Vec<(&String, &String)> = keys
                    .iter()
                    .filter_map(|k| labels.and_then(|l| l.get_key_value(k)))
                    .collect();
                if !set.is_empty() {
                    // `mergeLabelSetWithSelector`: a Nothing selector stays.
                    selector = selector.map(|s| {
                        LabelSelector::from_set(set.iter().copied())
                            .with_requirements(s.requirements().iter().cloned())
                    });
                }
            }
            out.push(SpreadConstraint {
                max_skew: c.max_skew,
                topology_key: c.topology_key.clone(),
                selector,
                min_domains: c.min_domains.unwrap_or(1),
                node_affinity_policy: InclusionPolicy::parse(
                    c.node_affinity_policy.as_deref(),
                    InclusionPolicy::Honor,
                ),
                node_taints_policy: InclusionPolicy::parse(
                    c.node_taints_policy.as_deref(),
                    InclusionPolicy::Ignore,
                ),
            });
        }
        Ok(out)
    }

    /// `buildDefaultConstraints`: the default constraints for `action`,
    /// all with the pod's workloads' selector; none without one.
    pub fn default_constraints_for(
        &self,
        pod: &Pod,
        action: &str,
        workloads: &dyn WorkloadSelectors,
    ) -> Result<Vec<SpreadConstraint>, LabelSelectorError> {
        let mut constraints = Self::filter_constraints(&self.default_constraints, pod, action)?;
        if constraints.is_empty() {
            return Ok(constraints);
        }
        let selector = workloads.default_selector(pod);
        if selector.is_empty() {
            return Ok(Vec::new());
        }
        for c in &mut constraints {
            c.selector = Some(selector.clone());
        }
        Ok(constraints)
    }

    /// The pod's own constraints for `action`, or the defaults when it has
    /// none (`getConstraints` and `initPreScoreState`).
    pub fn constraints(
        &self,
        pod: &Pod,
        action: &str,
        workloads: &dyn WorkloadSelectors,
    ) -> Result<Vec<SpreadConstraint>, LabelSelectorError> {
        match pod_constraints(pod) {
            [] => self.default_constraints_for(pod, action, workloads),
            own => Self::filter_constraints(own, pod, action),
        }
    }
}

/// The pod's `spec.topologySpreadConstraints`.
pub fn pod_constraints(pod: &Pod) -> &[TopologySpreadConstraint] {
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or(&[])
}

/// `nodeLabelsMatchSpreadConstraints`: the node has every topology key.
pub fn node_has_all_keys(node: &NodeInfo, constraints: &[SpreadConstraint]) -> bool {
    constraints
        .iter()
        .all(|c| node.label(&c.topology_key).is_some())
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }
}

#[cfg(test)]
mod tests;
