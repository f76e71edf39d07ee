//! Durable, versioned, watchable object store for the berth API server.
//!
//! The API server talks to one trait, [`Store`], with two durable backends: [`RedbStore`], an
//! embedded single-file database (the default), and [`EtcdStore`], which keeps the data in etcd
//! under the same key layout Kubernetes uses (`/registry/<resource>/<namespace>/<name>`), so
//! `etcdctl` can read it. A third, [`MemStore`], keeps everything in memory for runs on a
//! virtual clock (scenarios, whole-cluster tests): the same guarantees except durability.
//!
//! Guarantees, the same for both durable backends:
//!
//! - **Durability.** When a write (`create`, `update`, `delete`, `compact`) returns `Ok`, it is
//!   on stable storage: the redb backend has committed and fsync'd it, etcd has committed it
//!   through its raft log. A crash after that loses nothing that was acknowledged.
//! - **Revisions.** Every successful write gets the next value of one global counter (an `i64`,
//!   as in etcd), strictly greater than every revision before it. A failed write (conflict, key
//!   exists, not found) consumes no revision. An object's `mod_revision` is the revision of the
//!   write that produced its current value; `update` and `delete` succeed only if the caller's
//!   expected revision still equals it.
//! - **Lists** see one consistent snapshot: every page of a paginated list is read at the
//!   revision of the first page.
//! - **Watches.** A watch on a prefix from revision `R` delivers every create, update and delete
//!   under that prefix with a revision greater than `R`, each exactly once, in revision order,
//!   with the new object and (for updates and deletes) the previous one. Resuming from the last
//!   revision seen loses and repeats nothing.
//! - **Compaction.** `compact(C)` discards the history up to revision `C`, keeping the state at
//!   `C`. Afterwards lists at a revision below `C`, and watches from a revision below `C`
//!   (which would need events at or before `C`), fail with [`StoreError::Gone`] (HTTP 410 at
//!   the API server); watches from `C` on and the current state are not affected. A live watch
//!   that falls that far behind ends with the same error.
//! - **Storage failures.** When the embedded store's disk fails a write (full, or an I/O
//!   error), that write and the writes batched with it fail and nothing acknowledged is lost:
//!   the store reopens its file (redb refuses all work after an I/O error until then), keeps
//!   serving reads, and retries writes at most once a second until one succeeds, reporting
//!   [`StoreHealth::Degraded`] meanwhile ([`StoreHealth::Failed`] if the file cannot be
//!   reopened).

mod any_store;
mod error;
mod etcd_backend;
pub mod keys;
mod list;
mod mem_backend;
mod redb;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod types;
mod watch;

pub use any_store::AnyStore;
pub use error::{Result, StoreError};
pub use etcd_backend::EtcdStore;
pub use keys::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
pub use list::{Continue, ListOptions, ListResult};
pub use mem_backend::MemStore;
pub use redb::{
    DEFAULT_CACHE_BYTES as REDB_DEFAULT_CACHE_BYTES, FILE_NAME as REDB_FILE_NAME, RedbStore,
    VerifyReport, WriterStats,
};
pub use store::Store;
pub use types::{EventKind, KeyValue, Revision, StoreHealth, WatchEvent};
pub use watch::WatchStream;
