//! The [`Store`] trait the API server programs against. Its data types are in `types.rs` and
//! `list.rs`; [`crate::AnyStore`] chooses a backend at run time.

use std::future::Future;

use crate::error::Result;
use crate::list::{ListOptions, ListResult};
use crate::types::{KeyValue, Revision};
use crate::watch::WatchStream;

/// The storage interface of the API server. See the crate documentation for the guarantees.
///
/// Methods return `Send` futures so the API server can call them from any tokio task.
pub trait Store: Send + Sync + 'static {
    /// The object at `key`, if any.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<KeyValue>>> + Send;

    /// Objects whose key starts with `prefix` (which must end in `/`), in key order, one page
    /// at a time; all pages of one list are read at the same revision.
    fn list(
        &self,
        prefix: &str,
        options: ListOptions,
    ) -> impl Future<Output = Result<ListResult>> + Send;

    /// Creates `key`; fails with `AlreadyExists` if it exists. Returns the new revision.
    fn create(&self, key: &str, value: Vec<u8>) -> impl Future<Output = Result<Revision>> + Send;

    /// Replaces `key`'s value if its `mod_revision` is still `expected`; otherwise `Conflict`
    /// (or `NotFound`). Returns the new revision.
    fn update(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Revision,
    ) -> impl Future<Output = Result<Revision>> + Send;

    /// Deletes `key` if its `mod_revision` is still `expected`; otherwise `Conflict` (or
    /// `NotFound`). Returns the revision of the delete.
    fn delete(
        &self,
        key: &str,
        expected: Revision,
    ) -> impl Future<Output = Result<Revision>> + Send;

    /// The store's current revision (that of the latest write).
    fn current_revision(&self) -> impl Future<Output = Result<Revision>> + Send;

    /// Watches `prefix` for every change with a revision greater than `after`. Fails with
    /// `Gone` if those changes have been compacted away.
    fn watch(
        &self,
        prefix: &str,
        after: Revision,
    ) -> impl Future<Output = Result<WatchStream>> + Send;

    /// Discards history up to `revision` (which must not be in the future), keeping the state
    /// at `revision`: lists at `revision` or later and watches from `revision` or later still
    /// work. Compacting to a revision at or below an earlier compaction does nothing.
    fn compact(&self, revision: Revision) -> impl Future<Output = Result<()>> + Send;

    /// Compacts so that the changes of the last `window` revisions stay watchable: the
    /// configurable history window. Call it periodically (the API server does so on a timer).
    fn compact_keeping(&self, window: i64) -> impl Future<Output = Result<()>> + Send {
        async move {
            let current = self.current_revision().await?;
            let target = current.saturating_sub(window.max(0));
            if target > 0 {
                self.compact(target).await?;
            }
            Ok(())
        }
    }
}
