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

/// Whether `err` is an API answer with this HTTP status.
pub fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}
