//! A scheduling profile: the plugins of each extension point, in order,
//! their configuration and score weights, and `percentageOfNodesToScore`.
//! [`Profile::new`] is upstream's default profile
//! (`pkg/scheduler/apis/config/v1/default_plugins.go`, the volume plugins
//! aside: berth serves no volumes); [`crate::config`] builds others from a
//! `KubeSchedulerConfiguration` file.

use berth_core::FeatureGates;

use crate::framework::{FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin};
use crate::plugins::{
    BalancedAllocation, ImageLocality, InterPodAffinity, NodeAffinity, NodeName, NodePorts,
    NodeResourcesFit, NodeUnschedulable, PodTopologySpread, TaintToleration, image_locality,
    inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_balanced_allocation,
    node_resources_fit, node_unschedulable, pod_topology_spread, taint_toleration,
};

/// The scheduler name pods ask for by default.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The default profile's plugins in upstream's multi-point order, with
/// their score weights (`None`: no Score extension).
pub const DEFAULT_PLUGINS: [(&str, Option<i64>); 10] = [
    (node_unschedulable::NAME, None),
    (node_name::NAME, None),
    (
        taint_toleration::NAME,
        Some(taint_toleration::DEFAULT_WEIGHT),
    ),
    (node_affinity::NAME, Some(node_affinity::DEFAULT_WEIGHT)),
    (node_ports::NAME, None),
    (
        node_resources_fit::NAME,
        Some(node_resources_fit::DEFAULT_WEIGHT),
    ),
    (
        pod_topology_spread::NAME,
        Some(pod_topology_spread::DEFAULT_WEIGHT),
    ),
    (
        inter_pod_affinity::NAME,
        Some(inter_pod_affinity::DEFAULT_WEIGHT),
    ),
    (
        node_resources_balanced_allocation::NAME,
        Some(node_resources_balanced_allocation::DEFAULT_WEIGHT),
    ),
    (image_locality::NAME, Some(image_locality::DEFAULT_WEIGHT)),
];

/// The plugins berth has, with their configuration.
#[derive(Debug, Clone)]
pub struct Plugins {
    pub node_unschedulable: NodeUnschedulable,
    pub taint_toleration: TaintToleration,
    pub node_affinity: NodeAffinity,
    pub node_ports: NodePorts,
    pub node_resources_fit: NodeResourcesFit,
    pub pod_topology_spread: PodTopologySpread,
    pub inter_pod_affinity: InterPodAffinity,
    pub balanced_allocation: BalancedAllocation,
    pub image_locality: ImageLocality,
}

impl Plugins {
    pub fn new(gates: FeatureGates) -> Self {
        Plugins {
            node_unschedulable: NodeUnschedulable::new(gates),
            taint_toleration: TaintToleration::new(gates),
            node_affinity: NodeAffinity::default(),
            node_ports: NodePorts,
            node_resources_fit: NodeResourcesFit::default(),
            pod_topology_spread: PodTopologySpread::new(
                pod_topology_spread::DefaultingType::System,
                Vec::new(),
                gates,
            ),
            inter_pod_affinity: InterPodAffinity::default(),
            balanced_allocation: BalancedAllocation::default(),
            image_locality: ImageLocality,
        }
    }

    /// The plugin named `name` as a Filter, if it is one.
    pub fn filter(&self, name: &str) -> Option<&dyn FilterPlugin> {
        Some(match name {
            node_unschedulable::NAME => &self.node_unschedulable,
            node_name::NAME => &NodeName,
            taint_toleration::NAME => &self.taint_toleration,
            node_affinity::NAME => &self.node_affinity,
            node_ports::NAME => &self.node_ports,
            node_resources_fit::NAME => &self.node_resources_fit,
            pod_topology_spread::NAME => &self.pod_topology_spread,
            inter_pod_affinity::NAME => &self.inter_pod_affinity,
            _ => return None,
        })
    }

    /// The plugin named `name` as a PreFilter, if it is one.
    pub fn pre_filter(&self, name: &str) -> Option<&dyn PreFilterPlugin> {
        Some(match name {
            taint_toleration::NAME => &self.taint_toleration,
            node_affinity::NAME => &self.node_affinity,
            node_ports::NAME => &self.node_ports,
            node_resources_fit::NAME => &self.node_resources_fit,
            pod_topology_spread::NAME => &self.pod_topology_spread,
            inter_pod_affinity::NAME => &self.inter_pod_affinity,
            _ => return None,
        })
    }

    /// The plugin named `name` as a Score plugin with its PreScore.
    pub fn score(&self, name: &str) -> Option<(&dyn ScorePlugin, &dyn PreScorePlugin)> {
        Some(match name {
            taint_toleration::NAME => (&self.taint_toleration, &self.taint_toleration),
            node_affinity::NAME => (&self.node_affinity, &self.node_affinity),
            node_resources_fit::NAME => (&self.node_resources_fit, &self.node_resources_fit),
            pod_topology_spread::NAME => (&self.pod_topology_spread, &self.pod_topology_spread),
            inter_pod_affinity::NAME => (&self.inter_pod_affinity, &self.inter_pod_affinity),
            node_resources_balanced_allocation::NAME => {
                (&self.balanced_allocation, &self.balanced_allocation)
            }
            image_locality::NAME => (&self.image_locality, &self.image_locality),
            _ => return None,
        })
    }
}

/// A scheduling profile: its name (the `schedulerName` pods ask for), its
/// plugins per extension point and their weights.
#[derive(Debug, Clone)]
pub struct Profile {
    pub scheduler_name: String,
    /// 0 = adaptive (upstream's default); otherwise 1..=100.
    pub percentage_of_nodes_to_score: u32,
    pub gates: FeatureGates,
    pub plugins: Plugins,
    /// PreFilter plugins, in order.
    pub pre_filters: Vec<&'static str>,
    /// Filter plugins, in order (a node's first rejection ends its turn).
    pub filters: Vec<&'static str>,
    /// PreScore plugins (a Score plugin without its PreScore reads none).
    pub pre_scores: Vec<&'static str>,
    /// Score plugins with their weights.
    pub scores: Vec<(&'static str, i64)>,
}

impl Profile {
    /// The default profile under `scheduler_name`.
    pub fn new(scheduler_name: impl Into<String>, gates: FeatureGates) -> Self {
        let plugins = Plugins::new(gates);
        let names = DEFAULT_PLUGINS.map(|(n, _)| n);
        Profile {
            scheduler_name: scheduler_name.into(),
            percentage_of_nodes_to_score: 0,
            gates,
            pre_filters: names
                .iter()
                .copied()
                .filter(|n| plugins.pre_filter(n).is_some())
                .collect(),
            filters: names
                .iter()
                .copied()
                .filter(|n| plugins.filter(n).is_some())
                .collect(),
            pre_scores: names
                .iter()
                .copied()
                .filter(|n| plugins.score(n).is_some())
                .collect(),
            scores: DEFAULT_PLUGINS
                .iter()
                .filter_map(|(n, w)| w.map(|w| (*n, w)))
                .collect(),
            plugins,
        }
    }

    /// The weight of score plugin `name`, if enabled.
    pub fn weight(&self, name: &str) -> Option<i64> {
        self.scores
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| *w)
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::new(DEFAULT_SCHEDULER_NAME, FeatureGates::default())
    }
}
