//! The key of a pod in the scheduler's queue, cache and nominator: a file
//! of its own so that the cycle and the scheduler both name it without
//! naming each other.

use k8s_openapi::api::core::v1::Pod;

/// `namespace/name`, the key of a pod in the queue and the cache.
pub fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or("")
    )
}
