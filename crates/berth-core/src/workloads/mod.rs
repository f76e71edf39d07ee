//! The decisions of the workload controllers, ported from upstream's
//! `pkg/controller/{daemon,replicaset,deployment,statefulset}` as plain
//! functions over k8s-openapi objects: no I/O, no clock (the time is an
//! argument), no state beyond what a caller passes in. A controller built
//! on these lists its objects, asks what to do, and does it; its own code
//! is watching, writing and retrying.
//!
//! - [`daemon`]: which nodes run a DaemonSet's pod, the daemon pod's
//!   automatic tolerations and per-node affinity, rolling updates.
//!
//! Fields the API server defaults (`replicas`, update strategies,
//! `revisionHistoryLimit`, ...) are read with upstream's API defaults when
//! absent, so a function never panics on an object that skipped defaulting;
//! where upstream itself gives `nil` a meaning (`progressDeadlineSeconds`),
//! absence keeps that meaning.

pub mod daemon;
#[cfg(test)]
mod test_objects;

/// `apps.ControllerRevisionHashLabelKey`: the label that names the
/// ControllerRevision a DaemonSet or StatefulSet pod was made from.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";
