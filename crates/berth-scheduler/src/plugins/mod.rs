//! The in-tree plugins of upstream's default profile (the volume plugins
//! aside: berth serves no volumes), one module each, named and behaving
//! as upstream's `pkg/scheduler/framework/plugins/<plugin>`.

pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod taint_toleration;
#[cfg(test)]
pub(crate) mod testing;

pub use image_locality::ImageLocality;
pub use inter_pod_affinity::InterPodAffinity;
pub use node_affinity::NodeAffinity;
pub use node_name::NodeName;
pub use node_ports::NodePorts;
pub use node_resources_balanced_allocation::BalancedAllocation;
pub use node_resources_fit::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use pod_topology_spread::PodTopologySpread;
pub use taint_toleration::TaintToleration;
