//! The one error type of the store, shared by both backends so the API server maps errors to
//! HTTP statuses without knowing which backend it runs on.

use std::path::PathBuf;
use std::sync::Arc;

use crate::types::Revision;

/// Result alias used throughout the crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything that can go wrong in a store call.
///
/// It is `Clone` because the redb writer answers a whole batch of callers with the same commit
/// failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The key or prefix is not acceptable (see [`crate::keys`]).
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    /// The value is larger than [`crate::MAX_VALUE_BYTES`].
    #[error("value for {key} is {size} bytes, over the limit of {limit} bytes")]
    ValueTooLarge {
        key: String,
        size: usize,
        limit: usize,
    },
    /// `create` on a key that exists.
    #[error("{key} already exists")]
    AlreadyExists { key: String },
    /// `update` or `delete` on a key that does not exist.
    #[error("{key} not found")]
    NotFound { key: String },
    /// `update` or `delete` whose expected revision is no longer the key's `mod_revision`.
    #[error("conflict on {key}: expected revision {expected}, but it is at {actual}")]
    Conflict {
        key: String,
        expected: Revision,
        actual: Revision,
    },
    /// The requested revision has been compacted away (HTTP 410 Gone at the API server).
    #[error(
        "revision {requested} is gone: history has been compacted{}",
        compacted_suffix(.compacted)
    )]
    Gone {
        requested: Revision,
        compacted: Option<Revision>,
    },
    /// An argument other than a key is unacceptable (negative revision, future revision, a
    /// continuation that belongs to another prefix, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A list continuation that does not belong to the listed prefix.
    #[error("invalid continuation: {0}")]
    InvalidContinue(String),
    /// The data path could not be opened as a berth store.
    #[error("cannot open store at {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
    /// Stored data that cannot be decoded.
    #[error("store data is corrupt: {0}")]
    Corrupt(String),
    /// The backend (redb or etcd) failed.
    #[error("storage backend failed: {0}")]
    Backend(Arc<dyn std::error::Error + Send + Sync>),
    /// The store is recovering from a storage failure (see [`crate::StoreHealth`]): it refuses
    /// writes until its next attempt, or cannot read because its file could not be reopened.
    #[error("store is unavailable: {0}")]
    Unavailable(String),
    /// The store has been closed.
    #[error("store is closed")]
    Closed,
}

fn compacted_suffix(compacted: &Option<Revision>) -> String {
    match compacted {
        Some(c) => format!(" up to revision {c}"),
        None => String::new(),
    }
}

impl StoreError {
    /// Wraps any backend error.
    pub(crate) fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend(Arc::new(e))
    }

    /// Whether this is the "gone" error (HTTP 410).
    pub fn is_gone(&self) -> bool {
        matches!(self, StoreError::Gone { .. })
    }

    /// Whether this is a compare-and-swap conflict (HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict { .. })
    }
}
