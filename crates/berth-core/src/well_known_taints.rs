//! The taint keys Kubernetes itself puts on nodes (k8s.io/api
//! `core/v1/well_known_taints.go`), in one place for every component that
//! writes or tolerates them.

/// The node's Ready condition is False (node lifecycle controller).
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The node's Ready condition is Unknown: the node stopped reporting.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// `spec.unschedulable` is set (cordoned).
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// MemoryPressure condition.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// DiskPressure condition.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// NetworkUnavailable condition.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
/// PIDPressure condition.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// Put by an operator on a node that is shut down for good (non-graceful
/// node shutdown).
pub const TAINT_NODE_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
