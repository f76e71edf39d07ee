//! The [`Store`] trait the API server programs against, its data types, and [`AnyStore`] for
//! choosing a backend at run time.

use std::future::Future;

use crate::error::{Result, StoreError};
use crate::etcd_backend::EtcdStore;
use crate::mem_backend::MemStore;
use crate::redb_backend::RedbStore;
use crate::watch::WatchStream;

/// A store revision: one global counter, strictly increasing with every successful write
/// (etcd's revision on the etcd backend).
pub type Revision = i64;

/// One stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    /// Opaque bytes (the API server stores JSON).
    pub value: Vec<u8>,
    /// Revision of the write that created the object.
    pub create_revision: Revision,
    /// Revision of the write that produced this value; the expected revision for CAS.
    pub mod_revision: Revision,
}

/// Where the next page of a paginated list starts. The API server encodes it into the
/// Kubernetes `continue` token; it pins every page to the revision of the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The revision all pages are read at.
    pub revision: Revision,
    /// First key of the next page (inclusive).
    pub start_key: String,
}

/// How to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Maximum items in this page; 0 means no limit.
    pub limit: usize,
    /// Continue a previous list: read from `start_key` at that list's revision.
    pub continue_from: Option<Continue>,
    /// Read at this revision instead of the latest; `None` or `Some(0)` mean the latest (as in
    /// etcd). Ignored when `continue_from` is set.
    pub revision: Option<Revision>,
}

impl ListOptions {
    /// Where a list over `prefix` starts: a continuation's key and revision,
    /// or `prefix` itself at [`ListOptions::revision`]; `None` is the latest
    /// revision (so is a continuation's revision below 1, as upstream reads
    /// a negative one). The one check every backend makes of a continuation:
    /// it must start inside `prefix` ([`StoreError::InvalidContinue`]).
    pub(crate) fn start_in(&self, prefix: &str) -> Result<(Option<Revision>, String)> {
        match &self.continue_from {
            Some(c) if !c.start_key.starts_with(prefix) => {
                Err(StoreError::InvalidContinue(format!(
                    "continuation starts at {:?}, outside prefix {prefix}",
                    c.start_key
                )))
            }
            Some(c) => Ok((Some(c.revision).filter(|r| *r > 0), c.start_key.clone())),
            None => Ok((self.revision.filter(|r| *r > 0), prefix.to_owned())),
        }
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListResult {
    /// The items, in key order.
    pub items: Vec<KeyValue>,
    /// The revision the page was read at.
    pub revision: Revision,
    /// Set when more items follow.
    pub next: Option<Continue>,
}

/// What a watch event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Created,
    Updated,
    Deleted,
}

/// One change delivered by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    pub kind: EventKind,
    /// The revision of this change.
    pub revision: Revision,
    /// The object after the change. For a delete: the key, an empty value,
    /// `mod_revision` = the delete's revision, `create_revision` of the deleted object.
    pub kv: KeyValue,
    /// The object before the change, for updates and deletes.
    pub prev_kv: Option<KeyValue>,
}

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

/// Whether a store can serve, for the API server's `/readyz` and `/livez`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StoreHealth {
    #[default]
    Healthy,
    /// A write failed for a storage reason (a full disk, an I/O error); the store reopened its
    /// file and serves reads, and retries writes now and then: not ready, but alive.
    Degraded(String),
    /// The store's file could not be reopened after a storage failure: neither reads nor
    /// writes work until it can (the store keeps trying); a supervisor should restart it.
    Failed(String),
}

/// Either backend, chosen at run time (from the server's configuration).
// A server holds one of these; the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub enum AnyStore {
    Redb(RedbStore),
    Etcd(EtcdStore),
    /// Not durable: for runs on a virtual clock.
    Memory(MemStore),
}

/// Forwards one trait method to whichever backend is inside.
macro_rules! forward {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            AnyStore::Redb($s) => $call.await,
            AnyStore::Etcd($s) => $call.await,
            AnyStore::Memory($s) => $call.await,
        }
    };
}

impl AnyStore {
    /// The store's health: the embedded store's own; etcd's is etcd's to report (a failing
    /// etcd shows as failing requests).
    pub fn health(&self) -> StoreHealth {
        match self {
            AnyStore::Redb(store) => store.health(),
            AnyStore::Etcd(_) | AnyStore::Memory(_) => StoreHealth::Healthy,
        }
    }
}

impl Store for AnyStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        forward!(self, s => s.get(key))
    }
    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        forward!(self, s => s.list(prefix, options))
    }
    async fn create(&self, key: &str, value: Vec<u8>) -> Result<Revision> {
        forward!(self, s => s.create(key, value))
    }
    async fn update(&self, key: &str, value: Vec<u8>, expected: Revision) -> Result<Revision> {
        forward!(self, s => s.update(key, value, expected))
    }
    async fn delete(&self, key: &str, expected: Revision) -> Result<Revision> {
        forward!(self, s => s.delete(key, expected))
    }
    async fn current_revision(&self) -> Result<Revision> {
        forward!(self, s => s.current_revision())
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        forward!(self, s => s.watch(prefix, after))
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        forward!(self, s => s.compact(revision))
    }
}
