//! The embedded backend: one redb file in the data directory.
//!
//! Layout (three tables):
//! - `berth_log`: revision → change record (kind, key, create revision, previous revision,
//!   value). Every write appends exactly one record, so the log is the history watches replay,
//!   and (since the last checkpoint) the journal the key index is rebuilt from.
//! - `berth_kv`: a checkpoint of the key index, key → (create revision, mod revision) of every
//!   key live at the checkpoint revision (`berth_meta`'s `checkpoint`). Values are read from the
//!   log record at the mod revision, so each value is written once.
//! - `berth_meta`: format version, current revision, compacted revision, compaction cursor,
//!   checkpoint revision.
//!
//! The key index itself lives in memory (a persistent B-tree: readers take an O(1) snapshot)
//! and is the authority for reads at the current revision. It is not written to the file on
//! every commit: redb is a copy-on-write B-tree, so writing it would rewrite every index leaf a
//! batch touches on every commit, more bytes than the values themselves. Instead the writer
//! checkpoints the keys changed since the last checkpoint into `berth_kv` every
//! `CHECKPOINT_EVERY` (`writer.rs`) revisions, before compacting past the checkpoint, and at close. Opening
//! loads the checkpoint and replays the log after it, which restores the exact index: the log
//! holds every change since the checkpoint, because compaction never removes a record after
//! it (the checkpoint revision is always at or above the compacted revision).
//!
//! Writes go through one writer thread fed by a channel. It takes everything waiting (and,
//! briefly, the writes of callers it has just answered that are on their way back), applies it
//! in one write transaction and commits once with `Durability::Immediate` (one fsync), then
//! publishes the new index and hands the batch's events and answers to a responder task on
//! the runtime the store was opened on, which reads the events' previous values from a
//! snapshot taken right after the commit, broadcasts the events and then answers every caller,
//! batch after batch in commit order (group commit). Reading previous values, waking a batch's
//! callers and building its broadcast is then off the writer thread, the store's one serial
//! resource.
//! Without a runtime (or once it has shut down) the writer delivers them itself.
//! Reads use an index snapshot and then a redb read transaction on the blocking pool; the file
//! may then be a commit ahead of the snapshot, and reads take the difference from the log.
//! Watches subscribe to an in-memory broadcast of committed batches and fall back to reading
//! the log when they start in the past or fall behind.
//!
//! Storage failures: redb refuses all work on a database after one I/O error (a full disk
//! included) until it is opened again. The writer then answers the failed batch with the error,
//! reopens the file (readers wait on the handle's lock meanwhile; the reopened file is the last
//! commit, which the key index is rebuilt from, so revisions go on from there and nothing
//! acknowledged is lost), and refuses writes for a second at a time until one goes through,
//! reporting [`crate::StoreHealth::Degraded`]; if the file cannot be reopened, [`crate::StoreHealth::Failed`],
//! and it tries again every second.
//!
//! Compaction, as in etcd's MVCC, drops history but keeps every record still needed to read at
//! or after the compacted revision: the live value of every key and the previous values of
//! changes after it. The writer deletes old records a few dozen at a time inside ordinary
//! batches, or in small non-durable transactions when idle, so a write never waits behind a
//! large compaction.
//!
//! One file per job: `format` (tables, metadata, log records), `index` (the key index and its
//! rebuild), `open` (opening, checking, repairing), `ops` (a write as the writer receives it),
//! `writer` (group commit), `apply` (one write inside the batch), `recovery` (from storage
//! failures), `responder` (delivering committed batches), `compaction`, `shared` (what
//! the writer publishes), `read` (gets, lists, log reads), `watches`, `verify`, and `store`
//! ([`RedbStore`] itself).

mod apply;
mod compaction;
mod format;
mod index;
mod open;
mod ops;
mod read;
mod recovery;
mod responder;
mod shared;
mod store;
mod verify;
mod watches;
mod writer;

pub use open::{DEFAULT_CACHE_BYTES, FILE_NAME};
pub use shared::WriterStats;
pub use store::RedbStore;
pub use verify::VerifyReport;
