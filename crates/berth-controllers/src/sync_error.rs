//! Why a workload controller's sync failed: the key is retried with the
//! work queue's backoff.

/// See the module documentation.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Other(String),
}
