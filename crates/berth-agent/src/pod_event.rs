//! What the pod worker ([`crate::pods::PodWorker`]) hears about: its
//! own file, so that the worker and the lanes it handles events in
//! ([`crate::pod_lanes`]) both name it without naming each other.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

/// What the worker hears about.
#[derive(Debug)]
pub enum PodEvent {
    /// A pod bound to a served node was created or changed (shared with
    /// the watch it came from: the worker keeps it without a copy).
    Applied(Arc<Pod>),
    /// The pod with this UID (as last seen) is gone from the API (by the
    /// watch, or missing from a relist).
    Deleted { uid: Option<String> },
    /// The runtime's view of the pod with this UID changed.
    Runtime(String),
}
