//! The in-tree plugins ported so far, one module each, named and behaving
//! as upstream's `pkg/scheduler/framework/plugins/<plugin>`.

pub mod node_affinity;
pub mod node_name;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod taint_toleration;

pub use node_affinity::NodeAffinity;
pub use node_name::NodeName;
pub use node_resources_fit::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use taint_toleration::TaintToleration;
