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
//! [`CHECKPOINT_EVERY`] revisions, before compacting past the checkpoint, and at close. Opening
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
//! reporting [`StoreHealth::Degraded`]; if the file cannot be reopened, [`StoreHealth::Failed`],
//! and it tries again every second.
//!
//! Compaction, as in etcd's MVCC, drops history but keeps every record still needed to read at
//! or after the compacted revision: the live value of every key and the previous values of
//! changes after it. The writer deletes old records a few dozen at a time inside ordinary
//! batches, or in small non-durable transactions when idle, so a write never waits behind a
//! large compaction.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, Table,
    TableDefinition, TableHandle,
};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::Continue;
use crate::error::{Result, StoreError};
use crate::keys::{prefix_end, validate_key, validate_prefix, validate_value};
use crate::store::{
    EventKind, KeyValue, ListOptions, ListResult, Revision, Store, StoreHealth, WatchEvent,
};
use crate::watch::{WATCH_BUFFER, WatchStream, deliver, fail};

const KV: TableDefinition<&str, (i64, i64)> = TableDefinition::new("berth_kv");
const LOG: TableDefinition<i64, &[u8]> = TableDefinition::new("berth_log");
const META: TableDefinition<&str, i64> = TableDefinition::new("berth_meta");

const META_FORMAT: &str = "format";
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";
const META_CURSOR: &str = "compact_cursor";
const META_CHECKPOINT: &str = "checkpoint";
/// Format 2: `berth_kv` is a checkpoint at `checkpoint`, the log after it completes it. (In
/// format 1 `berth_kv` was exact at every commit; such files are upgraded on open. A format-2
/// file is refused by older builds, which would take the checkpoint for the current state.)
const FORMAT_VERSION: i64 = 2;
const FORMAT_EXACT_INDEX: i64 = 1;

/// redb's page cache unless told otherwise: redb's own default.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Name of the database file inside the data directory.
pub const FILE_NAME: &str = "berth-store.redb";

/// Upper bounds on one group commit, so one transaction stays a bounded amount of work.
const MAX_BATCH_OPS: usize = 4096;
const MAX_BATCH_BYTES: usize = 64 << 20;
/// The longest a batch waits for writes already on their way (see [`Writer::run`]).
const MAX_LINGER: Duration = Duration::from_micros(500);
/// Pending writes the channel holds before callers wait (back-pressure).
const REQUEST_QUEUE: usize = 8192;
/// Compaction work (log records examined) piggybacked on each write batch, and per idle
/// compaction transaction, bounded both in steps and in time: a write never waits more than
/// one such slice (plus its own commit) for compaction, whatever the machine or build.
const COMPACT_STEPS_PER_BATCH: i64 = 64;
const COMPACT_BUDGET_PER_BATCH: Duration = Duration::from_millis(1);
const COMPACT_STEPS_IDLE: i64 = 128;
const COMPACT_BUDGET_IDLE: Duration = Duration::from_millis(1);
/// Revisions between checkpoints of the key index into `berth_kv`. Each checkpoint writes the
/// keys changed since the last one (at most this many) in one batch's transaction, so the
/// index pages are rewritten once per few thousand writes instead of once per commit; opening
/// replays at most this many log records after the checkpoint.
const CHECKPOINT_EVERY: i64 = 4096;
/// Committed batches the broadcast keeps for slow watchers before they must re-read the log.
const EVENT_BACKLOG: usize = 4096;
/// Log records read per blocking call when a watch replays history.
const LOG_READ_CHUNK: i64 = 1024;
/// After a storage failure, how long writes are refused before the next attempt (each failed
/// attempt reopens the file, which readers wait for).
const WRITE_RETRY: Duration = Duration::from_secs(1);
/// How long a reopen waits for the last read transactions on the old handle (they keep the
/// file locked) before it counts as failed.
const REOPEN_WAIT: Duration = Duration::from_secs(5);

fn be(e: impl Into<redb::Error>) -> StoreError {
    StoreError::backend(e.into())
}

fn kind_byte(kind: EventKind) -> u8 {
    match kind {
        EventKind::Created => 1,
        EventKind::Updated => 2,
        EventKind::Deleted => 3,
    }
}

/// A decoded log record, borrowing from the stored bytes.
struct Entry<'a> {
    kind: EventKind,
    create_revision: i64,
    /// The revision this change replaced (0 for a create).
    prev_revision: i64,
    key: &'a str,
    value: &'a [u8],
}

const HEADER: usize = 1 + 8 + 8 + 4;

/// Record layout: kind (1 byte), create revision (i64 LE), previous revision (i64 LE),
/// key length (u32 LE), key, value (rest).
fn encode_entry(kind: EventKind, create: i64, prev: i64, key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + key.len() + value.len());
    out.push(kind_byte(kind));
    out.extend_from_slice(&create.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    // Keys are at most MAX_KEY_BYTES, far below u32::MAX.
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(value);
    out
}

/// Fills in the revisions of a record the caller encoded with zeros, so the writer thread
/// never copies a value: callers encode on their own threads, the writer only patches 16 bytes.
fn set_revisions(record: &mut [u8], create: i64, prev: i64) -> Result<()> {
    let header = record
        .get_mut(1..17)
        .ok_or_else(|| StoreError::Corrupt("log record without a header".into()))?;
    header[..8].copy_from_slice(&create.to_le_bytes());
    header[8..].copy_from_slice(&prev.to_le_bytes());
    Ok(())
}

fn decode_entry(revision: i64, bytes: &[u8]) -> Result<Entry<'_>> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("log record {revision}: {what}"));
    let header = bytes
        .get(..HEADER)
        .ok_or_else(|| corrupt("truncated header"))?;
    let kind = match header[0] {
        1 => EventKind::Created,
        2 => EventKind::Updated,
        3 => EventKind::Deleted,
        other => return Err(corrupt(&format!("unknown kind {other}"))),
    };
    let i64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&header[at..at + 8]);
        i64::from_le_bytes(b)
    };
    let create_revision = i64_at(1);
    let prev_revision = i64_at(9);
    let mut len = [0u8; 4];
    len.copy_from_slice(&header[17..21]);
    let key_len = u32::from_le_bytes(len) as usize;
    let rest = &bytes[HEADER..];
    let key_bytes = rest
        .get(..key_len)
        .ok_or_else(|| corrupt("truncated key"))?;
    let key = std::str::from_utf8(key_bytes).map_err(|_| corrupt("key is not UTF-8"))?;
    Ok(Entry {
        kind,
        create_revision,
        prev_revision,
        key,
        value: &rest[key_len..],
    })
}

/// The object a log record describes (for creates and updates: the value written).
fn read_kv(log: &impl ReadableTable<i64, &'static [u8]>, key: &str, rev: i64) -> Result<KeyValue> {
    let guard = log
        .get(rev)
        .map_err(be)?
        .ok_or_else(|| StoreError::Corrupt(format!("log record {rev} for {key} is missing")))?;
    let entry = decode_entry(rev, guard.value())?;
    if entry.key != key || entry.kind == EventKind::Deleted {
        return Err(StoreError::Corrupt(format!(
            "log record {rev} is not a value of {key}"
        )));
    }
    Ok(KeyValue {
        key: key.to_owned(),
        value: entry.value.to_vec(),
        create_revision: entry.create_revision,
        mod_revision: rev,
    })
}

/// Rebuilds the watch event of one log record.
fn event_from_log(
    log: &impl ReadableTable<i64, &'static [u8]>,
    revision: i64,
    entry: &Entry<'_>,
) -> Result<WatchEvent> {
    let prev_kv = if entry.prev_revision > 0 {
        Some(read_kv(log, entry.key, entry.prev_revision)?)
    } else {
        None
    };
    Ok(WatchEvent {
        kind: entry.kind,
        revision,
        kv: KeyValue {
            key: entry.key.to_owned(),
            value: entry.value.to_vec(),
            create_revision: entry.create_revision,
            mod_revision: revision,
        },
        prev_kv,
    })
}

fn meta_get(meta: &impl ReadableTable<&'static str, i64>, name: &str) -> Result<i64> {
    Ok(meta
        .get(name)
        .map_err(be)?
        .ok_or_else(|| StoreError::Corrupt(format!("metadata {name:?} is missing")))?
        .value())
}

/// A reader may look at `at` if it is neither in the future nor compacted away.
fn check_read_revision(at: i64, current: i64, compacted: i64) -> Result<()> {
    if at < 0 {
        return Err(StoreError::InvalidArgument(format!(
            "negative revision {at}"
        )));
    }
    if at > current {
        return Err(StoreError::InvalidArgument(format!(
            "revision {at} is in the future (current is {current})"
        )));
    }
    if at < compacted {
        return Err(StoreError::Gone {
            requested: at,
            compacted: Some(compacted),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The key index

/// Key → (create revision, mod revision) of every live key. A persistent B-tree: cloning is
/// O(1) and shares the nodes, so a reader holds a snapshot without a lock while the writer
/// changes the map in place, copying only nodes a snapshot still shares.
type IndexMap = imbl::OrdMap<Arc<str>, (i64, i64)>;

/// The key index at one committed revision.
#[derive(Clone, Default)]
struct IndexSnapshot {
    map: IndexMap,
    revision: i64,
}

/// The key index as a write batch sees it: the committed index plus the batch's own changes
/// (`None`: deleted), which are applied to the shared index only once the batch is committed.
struct BatchIndex<'a> {
    base: &'a IndexMap,
    changes: HashMap<Arc<str>, Option<(i64, i64)>>,
}

impl BatchIndex<'_> {
    fn get(&self, key: &str) -> Option<(i64, i64)> {
        match self.changes.get(key) {
            Some(state) => *state,
            None => self.base.get(key).copied(),
        }
    }

    fn set(&mut self, key: &str, state: Option<(i64, i64)>) {
        match self.changes.get_mut(key) {
            Some(slot) => *slot = state,
            None => {
                self.changes.insert(Arc::from(key), state);
            }
        }
    }
}

/// Applies one log record to an index being rebuilt (at open, or by `verify`), checking that
/// it continues the key's history: the revision it replaced must be the key's current one.
fn replay_record(index: &mut IndexMap, revision: i64, entry: &Entry<'_>) -> Result<()> {
    let before = index.get(entry.key).map(|&(_, m)| m).unwrap_or(0);
    if before != entry.prev_revision {
        return Err(StoreError::Corrupt(format!(
            "log record {revision} replaces {} but {} was at {before}",
            entry.prev_revision, entry.key
        )));
    }
    match entry.kind {
        EventKind::Deleted => {
            index.remove(entry.key);
        }
        EventKind::Created | EventKind::Updated => {
            index.insert(Arc::from(entry.key), (entry.create_revision, revision));
        }
    }
    Ok(())
}

/// Reads the checkpoint in `berth_kv` and replays the log after it: the key index at
/// `revision`, and the keys changed since the checkpoint (those the next one must write).
fn rebuild_index(
    kv: &impl ReadableTable<&'static str, (i64, i64)>,
    log: &impl ReadableTable<i64, &'static [u8]>,
    checkpoint: i64,
    revision: i64,
) -> Result<(IndexMap, BTreeSet<Arc<str>>)> {
    let mut index = IndexMap::new();
    for item in kv.iter().map_err(be)? {
        let (key, revs) = item.map_err(be)?;
        let (create, modified) = revs.value();
        if create <= 0 || create > modified || modified > checkpoint {
            return Err(StoreError::Corrupt(format!(
                "checkpoint entry {}: bad revisions {create}/{modified} (checkpoint {checkpoint})",
                key.value()
            )));
        }
        index.insert(Arc::from(key.value()), (create, modified));
    }
    let mut dirty = BTreeSet::new();
    let mut last = checkpoint;
    for item in log.range(checkpoint.saturating_add(1)..).map_err(be)? {
        let (rev, bytes) = item.map_err(be)?;
        let rev = rev.value();
        // Saturating: a corrupt file's revisions give an error below, never an overflow.
        let expected = last.saturating_add(1);
        if rev != expected {
            return Err(StoreError::Corrupt(format!(
                "log after the checkpoint {checkpoint} has a gap: expected {expected}, found {rev}"
            )));
        }
        let entry = decode_entry(rev, bytes.value())?;
        replay_record(&mut index, rev, &entry)?;
        dirty.insert(Arc::from(entry.key));
        last = rev;
    }
    if last != revision {
        return Err(StoreError::Corrupt(format!(
            "log ends at {last}, current revision is {revision}"
        )));
    }
    Ok((index, dirty))
}

// ---------------------------------------------------------------------------------------------
// Writer

/// A write as the writer thread receives it. `record` is its log record, encoded by the caller
/// (on a runtime thread, off the single writer thread) with zero revisions that the writer
/// fills in; `value` moves into the watch event, so the writer copies no value.
enum Op {
    Create {
        key: String,
        value: Vec<u8>,
        record: Vec<u8>,
    },
    Update {
        key: String,
        value: Vec<u8>,
        record: Vec<u8>,
        expected: i64,
    },
    Delete {
        key: String,
        record: Vec<u8>,
        expected: i64,
    },
    Compact {
        revision: i64,
    },
}

impl Op {
    fn create(key: &str, value: Vec<u8>) -> Op {
        Op::Create {
            key: key.to_owned(),
            record: encode_entry(EventKind::Created, 0, 0, key, &value),
            value,
        }
    }

    fn update(key: &str, value: Vec<u8>, expected: i64) -> Op {
        Op::Update {
            key: key.to_owned(),
            record: encode_entry(EventKind::Updated, 0, 0, key, &value),
            value,
            expected,
        }
    }

    fn delete(key: &str, expected: i64) -> Op {
        Op::Delete {
            key: key.to_owned(),
            record: encode_entry(EventKind::Deleted, 0, 0, key, &[]),
            expected,
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Op::Create { record, .. } | Op::Update { record, .. } | Op::Delete { record, .. } => {
                record.len()
            }
            Op::Compact { .. } => 0,
        }
    }
}

struct Request {
    op: Op,
    reply: oneshot::Sender<Result<Revision>>,
}

enum Msg {
    Write(Request),
    Shutdown,
}

/// Counters of the writer, for tests and the benchmark: `writes / commits` is the mean group
/// commit size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Durable write transactions committed.
    pub commits: u64,
    /// Successful writes (each consumed a revision).
    pub writes: u64,
    /// The longest the writer has spent on compaction in one go (the steps inside a write
    /// batch, or a whole idle compaction transaction): the most any write waited for it.
    pub longest_compaction_slice: Duration,
}

/// State the writer publishes for readers that do not need a transaction.
#[derive(Default)]
struct Shared {
    /// Writes submitted and not yet answered to their caller: those in the channel, in the
    /// batch being committed, and those whose reply is on its way back.
    in_flight: AtomicUsize,
    /// Set while the writer is parked waiting for in-flight writes to join its batch: whoever
    /// submits a write or stops counting one then unparks it.
    lingering: AtomicBool,
    /// The writer thread, for that unpark.
    writer_thread: OnceLock<std::thread::Thread>,
    revision: AtomicI64,
    compacted: AtomicI64,
    commits: AtomicU64,
    writes: AtomicU64,
    longest_compaction_micros: AtomicU64,
    /// The key index at the last committed revision. The writer updates it right after each
    /// commit and before answering the batch's callers, so a caller reads its own write.
    /// Readers hold the lock only to clone the snapshot (O(1)).
    index: Mutex<IndexSnapshot>,
    health: Mutex<StoreHealth>,
}

impl Shared {
    fn index_snapshot(&self) -> IndexSnapshot {
        self.index
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Wakes the writer if it is parked waiting for writes in flight. The fence pairs with the
    /// writer's between setting `lingering` and looking at the channel and the count once
    /// more, so either the writer sees this caller's change or this caller sees the flag; a
    /// missed wake-up would cost at most [`MAX_LINGER`] anyway.
    fn wake_lingering_writer(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.lingering.load(Ordering::Relaxed)
            && let Some(writer) = self.writer_thread.get()
        {
            writer.unpark();
        }
    }

    fn set_health(&self, health: StoreHealth) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    fn record_compaction(&self, started: Instant) {
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.longest_compaction_micros
            .fetch_max(micros, Ordering::Relaxed);
    }
}

type Batch = Arc<[WatchEvent]>;

type Reply = oneshot::Sender<Result<Revision>>;

/// What a committed batch still owes: its watch events and its callers' answers. Delivered
/// after the batch's fsync, events first (so a caller that saw its write acknowledged can rely
/// on watchers receiving it), in commit order.
struct Delivery {
    /// Updates and deletes carry a placeholder previous value (only its revisions set), read
    /// from `previous` on delivery: off the writer thread, like the rest.
    events: Vec<WatchEvent>,
    /// A snapshot taken right after the batch's commit, so later batches compacting the
    /// previous values away do not affect it; `None` if the batch replaced no value.
    previous: Option<Result<redb::ReadTransaction>>,
    replies: Vec<(Reply, Result<Revision>)>,
}

/// Replaces the placeholder previous values of `events` with the values in the log.
fn fill_previous(snapshot: Result<redb::ReadTransaction>, events: &mut [WatchEvent]) -> Result<()> {
    let txn = snapshot?;
    let log = txn.open_table(LOG).map_err(be)?;
    for event in events {
        if let Some(prev) = &mut event.prev_kv {
            *prev = read_kv(&log, &event.kv.key, prev.mod_revision)?;
        }
    }
    Ok(())
}

impl Delivery {
    fn deliver(mut self, events: &broadcast::Sender<Batch>) {
        // The writes are committed whatever happens here, so their callers get Ok. If the
        // previous values cannot be read, the batch is not broadcast: watchers notice the gap
        // in revisions at the next batch and read the log, which reports the failure.
        let complete = match self.previous.take() {
            None => true,
            // Usually recently written pages in redb's cache; a rare disk read blocks this
            // delivery only, as a read on the writer thread blocked the whole store before.
            Some(snapshot) => match fill_previous(snapshot, &mut self.events) {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e, "berth-store: cannot read previous values for watchers");
                    false
                }
            },
        };
        if complete && !self.events.is_empty() {
            // No receivers is fine: nobody is watching.
            let _ = events.send(Arc::from(self.events));
        }
        for (reply, result) in self.replies {
            // The caller may have given up; its write is committed all the same.
            let _ = reply.send(result);
        }
    }
}

/// The writer's side of the responder: a task on the runtime the store was opened on that
/// delivers committed batches, so the writer thread (the store's one serial resource) starts
/// the next transaction instead of waking a batch's worth of callers and building the
/// broadcast. Without a runtime, or once the responder's runtime is gone, the writer delivers
/// itself.
struct Responder {
    tx: mpsc::UnboundedSender<Delivery>,
    /// Held by the responder while it drains its queue on the way out and by the writer when
    /// it delivers itself, so a batch the writer delivers cannot overtake earlier ones still
    /// in the queue.
    order: Arc<Mutex<()>>,
}

/// The responder task's receiving end. If the task is dropped unfinished (its runtime shut
/// down while the store lives on), dropping this delivers what is still queued, so no
/// committed batch loses its events or answers.
struct ResponderQueue {
    rx: mpsc::UnboundedReceiver<Delivery>,
    events: broadcast::Sender<Batch>,
    order: Arc<Mutex<()>>,
}

impl Drop for ResponderQueue {
    fn drop(&mut self) {
        let _order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        // From here on the writer's sends fail and it delivers itself, after this drain.
        self.rx.close();
        while let Ok(delivery) = self.rx.try_recv() {
            delivery.deliver(&self.events);
        }
    }
}

/// Starts the responder on the current runtime, if it is a multi-threaded one. `done` fires
/// once it has delivered everything and dropped its broadcast sender. A current-thread runtime
/// runs tasks only while its owner drives it; the store may be used from elsewhere meanwhile
/// (another runtime, another thread), and its writes must not wait for that.
fn spawn_responder(
    events: &broadcast::Sender<Batch>,
    done: oneshot::Sender<()>,
) -> Option<Responder> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return None;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let order = Arc::new(Mutex::new(()));
    let mut queue = ResponderQueue {
        rx,
        events: events.clone(),
        order: Arc::clone(&order),
    };
    // Not budgeted either: it answers every write and feeds every watch.
    runtime.spawn(tokio::task::unconstrained(async move {
        while let Some(delivery) = queue.rx.recv().await {
            delivery.deliver(&queue.events);
        }
        // The writer has exited: drop the broadcast sender before reporting done.
        drop(queue);
        let _ = done.send(());
    }));
    Some(Responder { tx, order })
}

struct Writer {
    /// The database handle, shared with readers; replaced when the file is reopened.
    db: Arc<DbCell>,
    path: PathBuf,
    /// redb's page cache (see [`RedbStore::open_with_cache`]).
    cache_bytes: usize,
    shared: Arc<Shared>,
    events: broadcast::Sender<Batch>,
    /// Delivers committed batches off this thread; `None`: the writer delivers them itself.
    responder: Option<Responder>,
    revision: i64,
    compacted: i64,
    cursor: i64,
    /// The revision `berth_kv` holds the index at; never below `compacted`, so the log after it
    /// is complete.
    checkpoint: i64,
    /// Keys changed since the checkpoint: what the next checkpoint writes.
    dirty: BTreeSet<Arc<str>>,
    /// Set when idle compaction failed; retried after the next successful commit instead of
    /// spinning on a broken disk.
    compaction_stalled: bool,
    /// The storage failure writes are refused for, until one succeeds again.
    failure: Option<String>,
    /// Writes are refused until then (see [`WRITE_RETRY`]).
    writes_paused_until: Instant,
    /// The file could not be reopened; tried again every [`WRITE_RETRY`].
    reopen_pending: bool,
}

/// Whether a failed write leaves redb's handle unusable until the file is opened again: an
/// I/O error (a full disk included) latches every later call into `PreviousIo`, and a failed
/// commit can discard the allocator state, which only a reopen rebuilds.
fn needs_reopen(error: &StoreError) -> bool {
    let StoreError::Backend(inner) = error else {
        return false;
    };
    matches!(
        inner.downcast_ref::<redb::Error>(),
        Some(redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::Corrupted(_))
    )
}

/// What one operation did inside the batch transaction.
enum Applied {
    Event(WatchEvent),
    Compacted(i64),
}

/// What a successful batch transaction produced.
struct Outcome {
    results: Vec<Result<Revision>>,
    events: Vec<WatchEvent>,
    /// The batch's changes to the key index, to publish once committed.
    changes: HashMap<Arc<str>, Option<(i64, i64)>>,
    revision: i64,
    compacted: i64,
    cursor: i64,
    /// The batch also checkpointed the index (at `revision`).
    checkpointed: bool,
    committed: bool,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        let _ = self.shared.writer_thread.set(std::thread::current());
        loop {
            let compaction_due =
                self.cursor <= self.compacted && !self.compaction_stalled && self.failure.is_none();
            let first = if self.reopen_pending {
                // No usable file: look for it again every second, answering writes meanwhile.
                match rx.try_recv() {
                    Ok(msg) => msg,
                    Err(TryRecvError::Empty) => {
                        std::thread::sleep(WRITE_RETRY);
                        self.retry_reopen();
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return,
                }
            } else if compaction_due {
                match rx.try_recv() {
                    Ok(msg) => msg,
                    Err(TryRecvError::Empty) => {
                        if let Err(e) = self.compact_idle() {
                            tracing::warn!(error = %e, "berth-store: background compaction failed");
                            self.compaction_stalled = true;
                            if needs_reopen(&e) {
                                self.recover(&e);
                            }
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return self.checkpoint_at_exit(),
                }
            } else {
                match rx.blocking_recv() {
                    Some(msg) => msg,
                    None => return self.checkpoint_at_exit(),
                }
            };
            let mut batch = Vec::new();
            let mut bytes = 0;
            let mut shutdown = false;
            match first {
                Msg::Write(req) => {
                    bytes += req.op.bytes();
                    batch.push(req);
                }
                Msg::Shutdown => shutdown = true,
            }
            // Group commit: everything already waiting joins this transaction. So do writes
            // on their way: callers answered by the last commit that have not yet seen their
            // reply still count as in flight, and a closed-loop caller (an API handler, a
            // controller) submits its next write right after. Waiting a few microseconds for
            // them gives one commit (one fsync, one rewrite of the touched index pages) for
            // all callers instead of two alternating half-size ones. The wait ends as soon as
            // every in-flight write is here, and after MAX_LINGER at most; a lone caller never
            // waits, because its own write is the only one in flight.
            let linger_until = Instant::now() + MAX_LINGER;
            while !shutdown && batch.len() < MAX_BATCH_OPS && bytes < MAX_BATCH_BYTES {
                match rx.try_recv() {
                    Ok(Msg::Write(req)) => {
                        bytes += req.op.bytes();
                        batch.push(req);
                    }
                    Ok(Msg::Shutdown) => shutdown = true,
                    Err(TryRecvError::Empty)
                        if batch.len() < self.shared.in_flight.load(Ordering::Acquire)
                            && Instant::now() < linger_until =>
                    {
                        // Sleep rather than spin: the callers need the CPU to get here (a
                        // yield loop took a whole core from them on a 2-core machine). Set
                        // the flag, look once more, then park until a caller submits or
                        // stops counting a write, or the linger ends.
                        self.shared.lingering.store(true, Ordering::Relaxed);
                        std::sync::atomic::fence(Ordering::SeqCst);
                        if rx.is_empty()
                            && batch.len() < self.shared.in_flight.load(Ordering::Acquire)
                        {
                            std::thread::park_timeout(
                                linger_until.saturating_duration_since(Instant::now()),
                            );
                        }
                        self.shared.lingering.store(false, Ordering::Relaxed);
                    }
                    Err(_) => break,
                }
            }
            if shutdown {
                // The last batch also checkpoints the index, so the next open replays nothing.
                if !batch.is_empty() || self.revision > self.checkpoint {
                    self.commit_batch(batch, true);
                }
                return;
            }
            if !batch.is_empty() {
                self.commit_batch(batch, false);
            }
        }
    }

    /// Every handle is gone without `close`: checkpoint anyway (best effort; if it fails, the
    /// next open replays the log instead).
    fn checkpoint_at_exit(&mut self) {
        if self.revision > self.checkpoint {
            self.commit_batch(Vec::new(), true);
        }
    }

    /// After a storage failure: the refusal for writes that come before the next attempt.
    fn refusal(&mut self) -> Option<StoreError> {
        let reason = self.failure.clone()?;
        if Instant::now() >= self.writes_paused_until {
            if self.reopen_pending {
                self.retry_reopen();
            }
            if !self.reopen_pending {
                return None;
            }
        }
        Some(StoreError::Unavailable(format!(
            "a write failed ({reason}); writes are refused until the next attempt, at most a \
             second from now"
        )))
    }

    /// A write failed for a storage reason: reopen the file, so reads go on and later writes
    /// can succeed once the cause is gone (space freed).
    fn recover(&mut self, error: &StoreError) {
        self.mark_failed(error);
        self.retry_reopen();
    }

    /// Reports a storage failure (before the failed batch is answered, so that whoever sees
    /// the failure sees the store's health say so) and pauses writes.
    fn mark_failed(&mut self, error: &StoreError) {
        let reason = error.to_string();
        tracing::error!(
            path = %self.path.display(),
            error = %reason,
            "berth-store: a write failed for a storage reason; reopening the file (reads go on, \
             writes are retried every second)"
        );
        self.shared.set_health(StoreHealth::Degraded(format!(
            "a write failed ({reason}); the store file is being reopened"
        )));
        self.failure = Some(reason);
        self.writes_paused_until = Instant::now() + WRITE_RETRY;
        self.reopen_pending = true;
    }

    fn retry_reopen(&mut self) {
        let reason = self.failure.clone().unwrap_or_default();
        match self.reopen() {
            Ok(()) => {
                self.reopen_pending = false;
                self.shared.set_health(StoreHealth::Degraded(format!(
                    "a write failed ({reason}); the store file was reopened and serves reads, \
                     writes are retried every second"
                )));
            }
            Err(e) => {
                tracing::error!(
                    path = %self.path.display(),
                    error = %e,
                    "berth-store: cannot reopen the store file; retrying every second"
                );
                self.writes_paused_until = Instant::now() + WRITE_RETRY;
                self.shared.set_health(StoreHealth::Failed(format!(
                    "a write failed ({reason}) and the store file {} cannot be reopened: {e}",
                    self.path.display()
                )));
            }
        }
    }

    /// Drops the database handle (waiting for readers in flight) and opens the file again. The
    /// reopened file holds every commit that was acknowledged; a commit that reported a failure
    /// may hold too (the revisions after the writer's last are then taken from the file, and
    /// watchers read them from the log).
    fn reopen(&mut self) -> Result<()> {
        let mut cell = self.db.write().unwrap_or_else(PoisonError::into_inner);
        *cell = Err(StoreError::Unavailable(format!(
            "the store file {} is being reopened after a storage failure",
            self.path.display()
        )));
        // Read transactions still open on the old handle keep the file locked for a moment.
        let deadline = Instant::now() + REOPEN_WAIT;
        let (db, loaded) = loop {
            match open_file(&self.path, self.cache_bytes) {
                Ok(opened) => break opened,
                Err(OpenError::AlreadyOpen) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => {
                    *cell = Err(StoreError::Unavailable(format!(
                        "reopening the store file failed: {e}"
                    )));
                    return Err(StoreError::Unavailable(e.to_string()));
                }
            }
        };
        if loaded.revision < self.revision {
            let why = format!(
                "the reopened file ends at revision {}, but revision {} was acknowledged",
                loaded.revision, self.revision
            );
            *cell = Err(StoreError::Corrupt(why.clone()));
            return Err(StoreError::Corrupt(why));
        }
        if loaded.revision > self.revision {
            tracing::warn!(
                from = self.revision + 1,
                to = loaded.revision,
                "berth-store: writes reported as failed were committed after all"
            );
        }
        self.revision = loaded.revision;
        self.compacted = loaded.compacted;
        self.cursor = loaded.cursor;
        self.checkpoint = loaded.checkpoint;
        self.dirty = loaded.dirty;
        *self
            .shared
            .index
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = IndexSnapshot {
            map: loaded.index,
            revision: loaded.revision,
        };
        self.shared
            .revision
            .store(loaded.revision, Ordering::Release);
        self.shared
            .compacted
            .store(loaded.compacted, Ordering::Release);
        *cell = Ok(Arc::new(db));
        Ok(())
    }

    /// The database handle for one transaction.
    fn database(&self) -> Result<Arc<Database>> {
        self.db
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn commit_batch(&mut self, batch: Vec<Request>, force_checkpoint: bool) {
        let mut batch = batch;
        if let Some(refusal) = self.refusal() {
            for req in batch {
                let _ = req.reply.send(Err(refusal.clone()));
            }
            return;
        }
        match self.apply_batch(&mut batch, force_checkpoint) {
            Ok(outcome) => {
                if outcome.committed && self.failure.take().is_some() {
                    tracing::info!(
                        path = %self.path.display(),
                        "berth-store: writes succeed again"
                    );
                    self.shared.set_health(StoreHealth::Healthy);
                }
                self.revision = outcome.revision;
                self.compacted = outcome.compacted;
                self.cursor = outcome.cursor;
                if outcome.checkpointed {
                    self.checkpoint = outcome.revision;
                    self.dirty.clear();
                } else {
                    self.dirty.extend(outcome.changes.keys().cloned());
                }
                // Publish the index before the revision and the events, so whoever sees the
                // revision or an event (or its acknowledgement) reads at least that state.
                {
                    let mut index = self
                        .shared
                        .index
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    for (key, state) in outcome.changes {
                        match state {
                            Some(revs) => {
                                index.map.insert(key, revs);
                            }
                            None => {
                                index.map.remove(&*key);
                            }
                        }
                    }
                    index.revision = outcome.revision;
                }
                self.shared
                    .revision
                    .store(outcome.revision, Ordering::Release);
                self.shared
                    .compacted
                    .store(outcome.compacted, Ordering::Release);
                if outcome.committed {
                    self.compaction_stalled = false;
                    self.shared.commits.fetch_add(1, Ordering::Relaxed);
                    self.shared
                        .writes
                        .fetch_add(outcome.events.len() as u64, Ordering::Relaxed);
                }
                // Only now, after the fsync, do the events and answers go out.
                let previous = outcome
                    .events
                    .iter()
                    .any(|e| e.prev_kv.is_some())
                    .then(|| self.database()?.begin_read().map_err(be));
                self.deliver(Delivery {
                    events: outcome.events,
                    previous,
                    replies: batch
                        .into_iter()
                        .map(|req| req.reply)
                        .zip(outcome.results)
                        .collect(),
                });
            }
            Err(e) => {
                tracing::error!(error = %e, "berth-store: write batch failed");
                let reopen = needs_reopen(&e);
                if reopen {
                    self.mark_failed(&e);
                }
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
                if reopen {
                    self.retry_reopen();
                }
            }
        }
    }

    /// Hands a committed batch to the responder, or delivers it here if there is none (any
    /// more).
    fn deliver(&mut self, delivery: Delivery) {
        let delivery = match &self.responder {
            Some(responder) => match responder.tx.send(delivery) {
                Ok(()) => return,
                Err(mpsc::error::SendError(delivery)) => delivery,
            },
            None => return delivery.deliver(&self.events),
        };
        // The responder's runtime is gone. Its queue drains under `order`; deliver after it.
        if let Some(responder) = self.responder.take() {
            let _order = responder
                .order
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            delivery.deliver(&self.events);
        }
    }

    /// Applies and commits one batch. With `force_checkpoint` (at shutdown) the index is
    /// checkpointed whatever the interval.
    fn apply_batch(&self, batch: &mut [Request], force_checkpoint: bool) -> Result<Outcome> {
        let mut txn = self.database()?.begin_write().map_err(be)?;
        txn.set_durability(Durability::Immediate).map_err(be)?;
        let mut revision = self.revision;
        let mut compacted = self.compacted;
        let mut cursor = self.cursor;
        let mut results = Vec::with_capacity(batch.len());
        let mut events = Vec::new();
        // The writer is the only one changing the index, so the published snapshot is the
        // current committed state. Dropped (at the end of this function) before the batch's
        // changes are applied to the shared map, so those change it in place.
        let base = self.shared.index_snapshot();
        let mut index = BatchIndex {
            base: &base.map,
            changes: HashMap::new(),
        };
        let checkpointed;
        {
            let mut log = txn.open_table(LOG).map_err(be)?;
            let mut meta = txn.open_table(META).map_err(be)?;
            for req in batch.iter_mut() {
                match apply_op(&mut index, &mut log, revision, compacted, &mut req.op)? {
                    Ok(Applied::Event(event)) => {
                        revision = event.revision;
                        results.push(Ok(revision));
                        events.push(event);
                    }
                    Ok(Applied::Compacted(to)) => {
                        compacted = to;
                        results.push(Ok(to));
                    }
                    Err(refused) => results.push(Err(refused)),
                }
            }
            let started = Instant::now();
            cursor = compact_steps(
                &mut log,
                cursor,
                compacted,
                COMPACT_STEPS_PER_BATCH,
                COMPACT_BUDGET_PER_BATCH,
            )?;
            if cursor != self.cursor {
                self.shared.record_compaction(started);
            }
            if revision != self.revision {
                meta.insert(META_REVISION, revision).map_err(be)?;
            }
            if compacted != self.compacted {
                meta.insert(META_COMPACTED, compacted).map_err(be)?;
            }
            if cursor != self.cursor {
                meta.insert(META_CURSOR, cursor).map_err(be)?;
            }
            // Checkpoint every CHECKPOINT_EVERY revisions, and before the compacted revision
            // passes the checkpoint: physical compaction (up to `compacted`) removes delete
            // records and replaced values, which the replay after an older checkpoint needs.
            checkpointed = revision > self.checkpoint
                && (force_checkpoint
                    || revision - self.checkpoint >= CHECKPOINT_EVERY
                    || compacted > self.checkpoint);
            if checkpointed {
                let mut kv = txn.open_table(KV).map_err(be)?;
                let keys: BTreeSet<&str> = self
                    .dirty
                    .iter()
                    .chain(index.changes.keys())
                    .map(|k| &**k)
                    .collect();
                // In key order: neighbouring keys share leaves, each rewritten once.
                for key in keys {
                    match index.get(key) {
                        Some(revs) => {
                            kv.insert(key, revs).map_err(be)?;
                        }
                        None => {
                            kv.remove(key).map_err(be)?;
                        }
                    }
                }
                meta.insert(META_CHECKPOINT, revision).map_err(be)?;
            }
        }
        let changed = revision != self.revision
            || compacted != self.compacted
            || cursor != self.cursor
            || checkpointed;
        if changed {
            txn.commit().map_err(be)?;
        } else {
            // Every operation was refused: nothing to make durable, skip the fsync.
            txn.abort().map_err(be)?;
        }
        Ok(Outcome {
            results,
            events,
            changes: index.changes,
            revision,
            compacted,
            cursor,
            checkpointed,
            committed: changed,
        })
    }

    /// One small compaction transaction while no writes wait. Not durable on its own: if it is
    /// lost in a crash, the cursor it advanced is lost with it and the work is redone; the next
    /// durable commit persists it.
    fn compact_idle(&mut self) -> Result<()> {
        let started = Instant::now();
        let mut txn = self.database()?.begin_write().map_err(be)?;
        txn.set_durability(Durability::None).map_err(be)?;
        let cursor;
        {
            let mut log = txn.open_table(LOG).map_err(be)?;
            let mut meta = txn.open_table(META).map_err(be)?;
            cursor = compact_steps(
                &mut log,
                self.cursor,
                self.compacted,
                COMPACT_STEPS_IDLE,
                COMPACT_BUDGET_IDLE,
            )?;
            meta.insert(META_CURSOR, cursor).map_err(be)?;
        }
        txn.commit().map_err(be)?;
        self.shared.record_compaction(started);
        self.cursor = cursor;
        Ok(())
    }
}

/// Applies one operation. The outer `Result` is a storage failure that aborts the batch; the
/// inner one is this operation being refused (conflict, exists, ...), which consumes no
/// revision and leaves the rest of the batch alone. A successful create or update moves its
/// key and value out of `op` into the event (the request is answered with the revision only).
fn apply_op(
    index: &mut BatchIndex<'_>,
    log: &mut Table<i64, &'static [u8]>,
    revision: i64,
    compacted: i64,
    op: &mut Op,
) -> Result<Result<Applied>> {
    let next = revision + 1;
    match op {
        Op::Create { key, value, record } => {
            if index.get(key).is_some() {
                return Ok(Err(StoreError::AlreadyExists { key: key.clone() }));
            }
            set_revisions(record, next, 0)?;
            log.insert(next, record.as_slice()).map_err(be)?;
            index.set(key, Some((next, next)));
            Ok(Ok(Applied::Event(WatchEvent {
                kind: EventKind::Created,
                revision: next,
                kv: KeyValue {
                    key: std::mem::take(key),
                    value: std::mem::take(value),
                    create_revision: next,
                    mod_revision: next,
                },
                prev_kv: None,
            })))
        }
        Op::Update {
            key,
            value,
            record,
            expected,
        } => change(index, log, next, key, Some(value), record, *expected),
        Op::Delete {
            key,
            record,
            expected,
        } => change(index, log, next, key, None, record, *expected),
        Op::Compact { revision: to } => {
            if *to > revision {
                return Ok(Err(StoreError::InvalidArgument(format!(
                    "cannot compact to revision {to}: it is in the future (current is {revision})"
                ))));
            }
            Ok(Ok(Applied::Compacted((*to).max(compacted))))
        }
    }
}

/// An update (`value` = `Some`) or delete (`None`) guarded by the expected revision; `record`
/// is its log record with the revisions still to be filled in.
fn change(
    index: &mut BatchIndex<'_>,
    log: &mut Table<i64, &'static [u8]>,
    next: i64,
    key: &mut String,
    value: Option<&mut Vec<u8>>,
    record: &mut [u8],
    expected: i64,
) -> Result<Result<Applied>> {
    let Some((create, actual)) = index.get(key) else {
        return Ok(Err(StoreError::NotFound {
            key: key.to_owned(),
        }));
    };
    if actual != expected {
        return Ok(Err(StoreError::Conflict {
            key: key.to_owned(),
            expected,
            actual,
        }));
    }
    // The previous value is read on delivery (see `Delivery`), off the writer thread.
    let prev = KeyValue {
        key: String::new(),
        value: Vec::new(),
        create_revision: create,
        mod_revision: actual,
    };
    let (kind, new_value) = match value {
        Some(v) => (EventKind::Updated, std::mem::take(v)),
        None => (EventKind::Deleted, Vec::new()),
    };
    set_revisions(record, create, actual)?;
    log.insert(next, &*record).map_err(be)?;
    match kind {
        EventKind::Deleted => index.set(key, None),
        _ => index.set(key, Some((create, next))),
    }
    Ok(Ok(Applied::Event(WatchEvent {
        kind,
        revision: next,
        kv: KeyValue {
            key: std::mem::take(key),
            value: new_value,
            create_revision: create,
            mod_revision: next,
        },
        prev_kv: Some(prev),
    })))
}

/// Advances physical compaction by at most `max` log records up to `compacted`, stopping early
/// when `budget` is spent.
///
/// Walking records in revision order, a record at `r <= compacted` makes the record it replaced
/// (`prev`) unreachable: nobody can read at a revision between `prev` and `r` any more, and the
/// event at `r` is itself compacted, so nobody needs `prev` as its previous value. A delete
/// record at or below `compacted` is also dropped: the key is absent at every readable
/// revision. Records still live at `compacted` stay; they are the state reads at `compacted`
/// see, and the previous values of later events.
fn compact_steps(
    log: &mut Table<i64, &'static [u8]>,
    mut cursor: i64,
    compacted: i64,
    max: i64,
    budget: Duration,
) -> Result<i64> {
    let started = Instant::now();
    let mut steps = 0;
    while cursor <= compacted && steps < max {
        // Checking the clock every 16 steps keeps its cost negligible.
        if steps % 16 == 15 && started.elapsed() >= budget {
            break;
        }
        let found = match log.get(cursor).map_err(be)? {
            Some(guard) => {
                let entry = decode_entry(cursor, guard.value())?;
                Some((entry.kind, entry.prev_revision))
            }
            None => None,
        };
        if let Some((kind, prev)) = found {
            if prev > 0 {
                log.remove(prev).map_err(be)?;
            }
            if kind == EventKind::Deleted {
                log.remove(cursor).map_err(be)?;
            }
        }
        cursor += 1;
        steps += 1;
    }
    Ok(cursor)
}

// ---------------------------------------------------------------------------------------------
// Opening

/// The database handle readers and the writer use; the reason there is none once the store is
/// closed (so closing can release the file deterministically: readers hold the lock only for the
/// duration of one read) or while it is being reopened after a storage failure.
type DbCell = RwLock<Result<Arc<Database>>>;

struct Loaded {
    revision: i64,
    compacted: i64,
    cursor: i64,
    checkpoint: i64,
    index: IndexMap,
    dirty: BTreeSet<Arc<str>>,
}

/// Initializes a new file, or checks that an existing one is a berth store of a known format
/// and rebuilds its key index (checkpoint plus log replay).
fn init_or_check(db: &Database) -> std::result::Result<Loaded, String> {
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    let tables: Vec<String> = txn
        .list_tables()
        .map_err(|e| e.to_string())?
        .map(|h| h.name().to_owned())
        .collect();
    let multimap_tables = txn
        .list_multimap_tables()
        .map_err(|e| e.to_string())?
        .count();
    if tables.is_empty() && multimap_tables == 0 {
        // A brand-new file: create the tables and metadata in one durable transaction.
        {
            txn.open_table(KV).map_err(|e| e.to_string())?;
            txn.open_table(LOG).map_err(|e| e.to_string())?;
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            for (name, value) in [
                (META_FORMAT, FORMAT_VERSION),
                (META_REVISION, 0),
                (META_COMPACTED, 0),
                (META_CURSOR, 1),
                (META_CHECKPOINT, 0),
            ] {
                meta.insert(name, value).map_err(|e| e.to_string())?;
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
        return Ok(Loaded {
            revision: 0,
            compacted: 0,
            cursor: 1,
            checkpoint: 0,
            index: IndexMap::new(),
            dirty: BTreeSet::new(),
        });
    }
    for name in ["berth_meta", "berth_kv", "berth_log"] {
        if !tables.iter().any(|t| t == name) {
            return Err(format!(
                "the file is a redb database but not a berth store (table {name} is missing)"
            ));
        }
    }
    let (loaded, upgrade) = {
        let meta = txn.open_table(META).map_err(|e| e.to_string())?;
        let get = |name: &str| meta_get(&meta, name).map_err(|e| e.to_string());
        let format = get(META_FORMAT)?;
        let revision = get(META_REVISION)?;
        let compacted = get(META_COMPACTED)?;
        let cursor = get(META_CURSOR)?;
        let (checkpoint, upgrade) = match format {
            FORMAT_VERSION => (get(META_CHECKPOINT)?, false),
            // `berth_kv` is exact at the current revision: a checkpoint there.
            FORMAT_EXACT_INDEX => (revision, true),
            _ => {
                return Err(format!(
                    "unsupported berth store format {format} (this build reads \
                     {FORMAT_EXACT_INDEX} and {FORMAT_VERSION})"
                ));
            }
        };
        if !(0 <= compacted && compacted <= checkpoint && checkpoint <= revision) {
            return Err(format!(
                "corrupt metadata: compacted {compacted}, checkpoint {checkpoint}, \
                 revision {revision}"
            ));
        }
        let kv = txn.open_table(KV).map_err(|e| e.to_string())?;
        let log = txn.open_table(LOG).map_err(|e| e.to_string())?;
        let (index, dirty) =
            rebuild_index(&kv, &log, checkpoint, revision).map_err(|e| e.to_string())?;
        let loaded = Loaded {
            revision,
            compacted,
            cursor,
            checkpoint,
            index,
            dirty,
        };
        (loaded, upgrade)
    };
    if upgrade {
        {
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            for (name, value) in [
                (META_FORMAT, FORMAT_VERSION),
                (META_CHECKPOINT, loaded.checkpoint),
            ] {
                meta.insert(name, value).map_err(|e| e.to_string())?;
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
    } else {
        txn.abort().map_err(|e| e.to_string())?;
    }
    Ok(loaded)
}

/// Why the file could not be opened.
#[derive(Debug)]
enum OpenError {
    /// Another handle (in this process: read transactions on the handle being replaced) has it.
    AlreadyOpen,
    Other(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::AlreadyOpen => f.write_str("the file is already open"),
            OpenError::Other(reason) => f.write_str(reason),
        }
    }
}

/// Opens (or creates) the file and rebuilds the key index, saying so in the log: whether redb
/// had to repair the file (it was not closed cleanly) and how many log records were replayed
/// after the checkpoint (none after a clean close).
fn open_file(
    path: &Path,
    cache_bytes: usize,
) -> std::result::Result<(Database, Loaded), OpenError> {
    let repaired = Arc::new(AtomicBool::new(false));
    let mut builder = Database::builder();
    builder.set_cache_size(cache_bytes);
    {
        let repaired = Arc::clone(&repaired);
        let path = path.to_owned();
        builder.set_repair_callback(move |_| {
            if !repaired.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    path = %path.display(),
                    "berth-store: the file was not closed cleanly; redb is repairing it"
                );
            }
        });
    }
    let db = builder.create(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::AlreadyOpen,
        other => OpenError::Other(other.to_string()),
    })?;
    let loaded = init_or_check(&db).map_err(OpenError::Other)?;
    tracing::info!(
        path = %path.display(),
        revision = loaded.revision,
        checkpoint = loaded.checkpoint,
        replayed = loaded.revision - loaded.checkpoint,
        repaired = repaired.load(Ordering::Relaxed),
        "berth-store: opened"
    );
    Ok((db, loaded))
}

// ---------------------------------------------------------------------------------------------
// The store

struct Inner {
    path: PathBuf,
    requests: mpsc::Sender<Msg>,
    db: Arc<DbCell>,
    /// Kept only to subscribe new watchers; taken on close so watchers see the end.
    events: Mutex<Option<broadcast::Sender<Batch>>>,
    shared: Arc<Shared>,
    /// Fire when the writer thread has exited and dropped its database handle, and when the
    /// responder (if any) has delivered the last batch.
    writer_done: tokio::sync::Mutex<Vec<oneshot::Receiver<()>>>,
}

/// The embedded store: one redb file, [`FILE_NAME`], in a data directory. Cheap to clone; all
/// clones share one writer.
#[derive(Clone)]
pub struct RedbStore {
    inner: Arc<Inner>,
}

impl RedbStore {
    /// Opens (or creates) the store in `data_dir`. Fails, naming the file, if the file is not a
    /// berth store (corrupt, foreign, or of an unknown format) or is already open.
    pub fn open(data_dir: impl AsRef<Path>) -> Result<Self> {
        RedbStore::open_with_cache(data_dir, DEFAULT_CACHE_BYTES)
    }

    /// [`open`](Self::open) with `cache_bytes` of redb's page cache (pages read and written
    /// are kept in memory up to that much: the store's memory grows with written bytes up to
    /// it, then stays).
    pub fn open_with_cache(data_dir: impl AsRef<Path>, cache_bytes: usize) -> Result<Self> {
        let dir = data_dir.as_ref();
        let open_err = |path: &Path, reason: String| StoreError::Open {
            path: path.to_owned(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(dir, e.to_string()))?;
        let path = dir.join(FILE_NAME);
        let (db, loaded) =
            open_file(&path, cache_bytes).map_err(|e| open_err(&path, e.to_string()))?;
        let db: Arc<DbCell> = Arc::new(RwLock::new(Ok(Arc::new(db))));
        let shared = Arc::new(Shared {
            index: Mutex::new(IndexSnapshot {
                map: loaded.index,
                revision: loaded.revision,
            }),
            ..Shared::default()
        });
        shared.revision.store(loaded.revision, Ordering::Release);
        shared.compacted.store(loaded.compacted, Ordering::Release);
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let (requests, rx) = mpsc::channel(REQUEST_QUEUE);
        let (done_tx, done_rx) = oneshot::channel();
        let (responder_done_tx, responder_done_rx) = oneshot::channel();
        let writer = Writer {
            db: db.clone(),
            path: path.clone(),
            cache_bytes,
            shared: shared.clone(),
            responder: spawn_responder(&events, responder_done_tx),
            events: events.clone(),
            revision: loaded.revision,
            compacted: loaded.compacted,
            cursor: loaded.cursor,
            checkpoint: loaded.checkpoint,
            dirty: loaded.dirty,
            compaction_stalled: false,
            failure: None,
            writes_paused_until: Instant::now(),
            reopen_pending: false,
        };
        std::thread::Builder::new()
            .name("berth-store-writer".into())
            .spawn(move || {
                writer.run(rx);
                // `writer` (and its database handle) is dropped by now.
                let _ = done_tx.send(());
            })
            .map_err(|e| open_err(&path, format!("cannot start the writer thread: {e}")))?;
        Ok(RedbStore {
            inner: Arc::new(Inner {
                path,
                requests,
                db,
                events: Mutex::new(Some(events)),
                shared,
                writer_done: tokio::sync::Mutex::new(vec![done_rx, responder_done_rx]),
            }),
        })
    }

    /// Path of the database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Writer counters (commits and writes so far).
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            commits: self.inner.shared.commits.load(Ordering::Relaxed),
            writes: self.inner.shared.writes.load(Ordering::Relaxed),
            longest_compaction_slice: Duration::from_micros(
                self.inner
                    .shared
                    .longest_compaction_micros
                    .load(Ordering::Relaxed),
            ),
        }
    }

    /// Whether the store serves reads and writes (see [`StoreHealth`]).
    pub fn health(&self) -> StoreHealth {
        self.inner
            .shared
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The revision history has been compacted to (0 if never).
    pub fn compacted_revision(&self) -> Revision {
        self.inner.shared.compacted.load(Ordering::Acquire)
    }

    /// Finishes pending writes, stops the writer and releases the file, so it can be opened
    /// again. Later calls on any clone fail with [`StoreError::Closed`]; watches end.
    pub async fn close(&self) -> Result<()> {
        let _ = self.inner.requests.send(Msg::Shutdown).await;
        // The writer first (it hands the responder its last batch), then the responder. An
        // error means the other side is gone, which is as done.
        for done in std::mem::take(&mut *self.inner.writer_done.lock().await) {
            let _ = done.await;
        }
        self.inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let db = Arc::clone(&self.inner.db);
        // Taking the write lock waits for readers in flight on the blocking pool.
        tokio::task::spawn_blocking(move || {
            *db.write().unwrap_or_else(PoisonError::into_inner) = Err(StoreError::Closed);
        })
        .await
        .map_err(StoreError::backend)?;
        Ok(())
    }

    /// Checks the file's invariants: the log's revisions end at the current revision, the
    /// checkpoint plus the log after it rebuilds exactly the in-memory key index, every live
    /// and checkpointed key's value is in the log with matching revisions, and (if nothing has
    /// been compacted) replaying the whole log gives exactly the live keys. For tests and
    /// `fsck`.
    pub async fn verify(&self) -> Result<()> {
        self.verify_report().await.map(|_| ())
    }

    /// [`verify`](Self::verify), returning what it counted.
    pub async fn verify_report(&self) -> Result<VerifyReport> {
        let shared = Arc::clone(&self.inner.shared);
        read(&self.inner.db, move |db| verify_blocking(db, &shared)).await
    }

    async fn submit(&self, op: Op) -> Result<Revision> {
        // Counted until the reply is read (or the caller gives up), for the writer's batching.
        let _in_flight = InFlight::enter(&self.inner.shared);
        let (reply, answer) = oneshot::channel();
        self.inner
            .requests
            .send(Msg::Write(Request { op, reply }))
            .await
            .map_err(|_| StoreError::Closed)?;
        self.inner.shared.wake_lingering_writer();
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

/// One write counted in [`Shared::in_flight`] while it lives.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> Self {
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        // One fewer to wait for: the writer may be waiting for exactly this one.
        self.0.wake_lingering_writer();
    }
}

/// Runs a read against the database on the blocking pool (redb reads may touch the disk).
async fn read<T: Send + 'static>(
    cell: &Arc<DbCell>,
    f: impl FnOnce(&Database) -> Result<T> + Send + 'static,
) -> Result<T> {
    let cell = Arc::clone(cell);
    tokio::task::spawn_blocking(move || {
        let guard = cell.read().unwrap_or_else(PoisonError::into_inner);
        match &*guard {
            Ok(db) => f(db),
            Err(e) => Err(e.clone()),
        }
    })
    .await
    .map_err(StoreError::backend)?
}

/// Reads the current value of `key`. `index` must have been taken before the read transaction
/// begins, so the transaction sees at least the index's revision (the writer publishes the
/// index after committing); it may see later commits, whose changes come from the log.
fn get_blocking(db: &Database, index: &IndexSnapshot, key: &str) -> Result<Option<KeyValue>> {
    let txn = db.begin_read().map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let mut state = index.map.get(key).copied();
    // Usually empty: the log past the index's revision.
    for item in log.range(index.revision.saturating_add(1)..).map_err(be)? {
        let (rev, bytes) = item.map_err(be)?;
        let entry = decode_entry(rev.value(), bytes.value())?;
        if entry.key == key {
            state = match entry.kind {
                EventKind::Deleted => None,
                _ => Some((entry.create_revision, rev.value())),
            };
        }
    }
    match state {
        Some((_, mod_revision)) => read_kv(&log, key, mod_revision).map(Some),
        None => Ok(None),
    }
}

/// Lists `prefix` at one revision. As for [`get_blocking`], `index` is taken before the read
/// transaction; the log between the index's revision and the one read at corrects it.
fn list_blocking(
    db: &Database,
    index: &IndexSnapshot,
    prefix: &str,
    options: &ListOptions,
) -> Result<ListResult> {
    let txn = db.begin_read().map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let meta = txn.open_table(META).map_err(be)?;
    let current = meta_get(&meta, META_REVISION)?;
    let compacted = meta_get(&meta, META_COMPACTED)?;
    let (at, start) = options.start_in(prefix)?;
    let at = at.unwrap_or(current);
    check_read_revision(at, current, compacted)?;
    let end = prefix_end(prefix);

    // The index is at `index.revision`; keys changed between it and `at` take their state at
    // `at` from the log (the revision of their value then; 0: absent). Reading the past, that
    // is the revision their first change after `at` replaced; reading ahead of the index (the
    // file is a commit newer), the revision of their last change up to `at`. Other keys are
    // the same at `at` as in the index.
    let base = index.revision;
    let mut changed: BTreeMap<String, i64> = BTreeMap::new();
    let in_range = |key: &str| key >= start.as_str() && key < end.as_str();
    if at < base {
        for item in log.range((at + 1)..=base).map_err(be)? {
            let (rev, bytes) = item.map_err(be)?;
            let entry = decode_entry(rev.value(), bytes.value())?;
            if in_range(entry.key) {
                changed
                    .entry(entry.key.to_owned())
                    .or_insert(entry.prev_revision);
            }
        }
    } else if at > base {
        for item in log.range((base + 1)..=at).map_err(be)? {
            let (rev, bytes) = item.map_err(be)?;
            let entry = decode_entry(rev.value(), bytes.value())?;
            if in_range(entry.key) {
                let state = match entry.kind {
                    EventKind::Deleted => 0,
                    _ => rev.value(),
                };
                changed.insert(entry.key.to_owned(), state);
            }
        }
    }

    let limit = if options.limit == 0 {
        usize::MAX
    } else {
        options.limit
    };
    let mut live = index
        .map
        .range::<_, str>((
            Bound::Included(start.as_str()),
            Bound::Excluded(end.as_str()),
        ))
        .peekable();
    let mut old = changed.into_iter().peekable();
    let mut items = Vec::new();
    let mut more = false;
    loop {
        // Merge the two key-ordered sources; a key in both is taken from `old`.
        let live_key = live.peek().map(|(k, _)| &***k);
        let old_key = old.peek().map(|(k, _)| k.as_str());
        let take_old = match (live_key, old_key) {
            (None, None) => break,
            (Some(l), Some(o)) => {
                if o == l {
                    live.next();
                    true
                } else {
                    o < l
                }
            }
            (None, Some(_)) => true,
            (Some(_), None) => false,
        };
        let item = if take_old {
            match old.next() {
                Some((key, rev)) if rev > 0 => Some(read_kv(&log, &key, rev)?),
                _ => None,
            }
        } else {
            match live.next() {
                Some((key, &(_, modified))) => Some(read_kv(&log, key, modified)?),
                None => None,
            }
        };
        if let Some(item) = item {
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(item);
        }
    }
    let next = match (more, items.last()) {
        (true, Some(last)) => Some(Continue {
            revision: at,
            // The smallest key after `last.key`.
            start_key: format!("{}\0", last.key),
        }),
        _ => None,
    };
    Ok(ListResult {
        items,
        revision: at,
        next,
    })
}

/// Reads the log after `after` for a watch: matching events, the last revision examined, and
/// whether that reached the current revision.
fn read_log_blocking(
    db: &Database,
    prefix: &str,
    after: i64,
) -> Result<(Vec<WatchEvent>, i64, bool)> {
    let txn = db.begin_read().map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let meta = txn.open_table(META).map_err(be)?;
    let current = meta_get(&meta, META_REVISION)?;
    let compacted = meta_get(&meta, META_COMPACTED)?;
    if after < compacted {
        return Err(StoreError::Gone {
            requested: after,
            compacted: Some(compacted),
        });
    }
    let upto = current.min(after.saturating_add(LOG_READ_CHUNK));
    let mut events = Vec::new();
    if upto > after {
        for item in log.range((after + 1)..=upto).map_err(be)? {
            let (rev, bytes) = item.map_err(be)?;
            let entry = decode_entry(rev.value(), bytes.value())?;
            if entry.key.starts_with(prefix) {
                events.push(event_from_log(&log, rev.value(), &entry)?);
            }
        }
    }
    Ok((events, upto.max(after), upto >= current))
}

/// What [`RedbStore::verify_report`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyReport {
    pub revision: Revision,
    pub compacted: Revision,
    /// The revision the key index was last checkpointed at (opening replays the log after it).
    pub checkpoint: Revision,
    /// Keys with a live value.
    pub live_keys: u64,
    /// Records in the history log (equal to `live_keys` once everything before the compacted
    /// revision is physically compacted and nothing changed since).
    pub log_records: u64,
}

/// Verification compares the in-memory index with the file at the same revision; the writer
/// publishes the index just after each commit, so a mismatch clears within microseconds.
const VERIFY_ATTEMPTS: usize = 1000;

fn verify_blocking(db: &Database, shared: &Shared) -> Result<VerifyReport> {
    let corrupt = |msg: String| Err(StoreError::Corrupt(msg));
    let mut attempts = 0;
    let (index, txn) = loop {
        let index = shared.index_snapshot();
        let txn = db.begin_read().map_err(be)?;
        let meta = txn.open_table(META).map_err(be)?;
        if meta_get(&meta, META_REVISION)? == index.revision {
            break (index, txn);
        }
        attempts += 1;
        if attempts == VERIFY_ATTEMPTS {
            return Err(StoreError::backend(std::io::Error::other(
                "verify: the file and the key index never showed the same revision",
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let kv = txn.open_table(KV).map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let meta = txn.open_table(META).map_err(be)?;
    let current = meta_get(&meta, META_REVISION)?;
    let compacted = meta_get(&meta, META_COMPACTED)?;
    let checkpoint = meta_get(&meta, META_CHECKPOINT)?;
    let last = log.last().map_err(be)?.map(|(k, _)| k.value()).unwrap_or(0);
    if last != current {
        return corrupt(format!(
            "last log record is {last}, current revision {current}"
        ));
    }
    if !(compacted <= checkpoint && checkpoint <= current) {
        return corrupt(format!(
            "compacted {compacted}, checkpoint {checkpoint}, revision {current} out of order"
        ));
    }
    // Every checkpointed value is still in the log: it was live at the checkpoint, which is
    // at or above the compacted revision.
    for item in kv.iter().map_err(be)? {
        let (key, revs) = item.map_err(be)?;
        let (create, modified) = revs.value();
        let value = read_kv(&log, key.value(), modified)?;
        if value.create_revision != create {
            return corrupt(format!(
                "checkpoint of {}: create revision mismatch",
                key.value()
            ));
        }
    }
    // The checkpoint plus the log after it is exactly the live index (what opening rebuilds).
    let (rebuilt, _) = rebuild_index(&kv, &log, checkpoint, current)?;
    if rebuilt != index.map {
        return corrupt("the checkpoint and the log after it do not give the key index".into());
    }
    for (key, &(create, modified)) in index.map.iter() {
        if create > modified || modified > current {
            return corrupt(format!("{key}: bad revisions {create}/{modified}"));
        }
        let value = read_kv(&log, key, modified)?;
        if value.create_revision != create {
            return corrupt(format!("{key}: create revision mismatch"));
        }
    }
    if compacted == 0 {
        // Replay the whole history and compare with the live keys.
        let mut state = IndexMap::new();
        for (expected_rev, item) in (1i64..).zip(log.iter().map_err(be)?) {
            let (rev, bytes) = item.map_err(be)?;
            let rev = rev.value();
            if rev != expected_rev {
                return corrupt(format!(
                    "log has a gap: expected {expected_rev}, found {rev}"
                ));
            }
            let entry = decode_entry(rev, bytes.value())?;
            replay_record(&mut state, rev, &entry)?;
        }
        if state != index.map {
            return corrupt("replaying the log does not give the live keys".into());
        }
    }
    Ok(VerifyReport {
        revision: current,
        compacted,
        checkpoint,
        live_keys: index.map.len() as u64,
        log_records: log.len().map_err(be)?,
    })
}

/// Forwards history and then live events to one watcher.
async fn run_watch(
    db: Arc<DbCell>,
    mut sub: broadcast::Receiver<Batch>,
    prefix: String,
    mut last: i64,
    tx: mpsc::Sender<Result<WatchEvent>>,
) {
    loop {
        // Replay the log until it holds nothing newer; everything committed after that is in
        // the broadcast, which was subscribed before the first read.
        loop {
            let p = prefix.clone();
            let from = last;
            match read(&db, move |db| read_log_blocking(db, &p, from)).await {
                Ok((events, upto, done)) => {
                    for event in events {
                        if !deliver(&tx, Ok(event)).await {
                            return;
                        }
                    }
                    last = last.max(upto);
                    if done {
                        break;
                    }
                }
                Err(e) => {
                    fail(&tx, e).await;
                    return;
                }
            }
        }
        loop {
            match sub.recv().await {
                Ok(batch) => {
                    let mut gap = false;
                    for event in batch.iter() {
                        // Already delivered from the log.
                        if event.revision <= last {
                            continue;
                        }
                        // Every write takes the next revision and is in some batch; a batch
                        // was not broadcast (its previous values could not be read): the log
                        // has it, or reports why not.
                        if event.revision != last + 1 {
                            gap = true;
                            break;
                        }
                        last = event.revision;
                        if event.kv.key.starts_with(&prefix)
                            && !deliver(&tx, Ok(event.clone())).await
                        {
                            return;
                        }
                    }
                    if gap {
                        break;
                    }
                }
                // Fell behind the in-memory backlog: the log still has it.
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => return,
            }
        }
    }
}

fn validate_write(key: &str, value: Option<&[u8]>) -> Result<()> {
    validate_key(key)?;
    if let Some(value) = value {
        validate_value(key, value)?;
    }
    Ok(())
}

fn validate_expected(expected: Revision) -> Result<()> {
    if expected <= 0 {
        return Err(StoreError::InvalidArgument(format!(
            "expected revision must be positive, got {expected}"
        )));
    }
    Ok(())
}

impl Store for RedbStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        validate_key(key)?;
        let key = key.to_owned();
        let shared = Arc::clone(&self.inner.shared);
        read(&self.inner.db, move |db| {
            get_blocking(db, &shared.index_snapshot(), &key)
        })
        .await
    }

    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        validate_prefix(prefix)?;
        let prefix = prefix.to_owned();
        let shared = Arc::clone(&self.inner.shared);
        read(&self.inner.db, move |db| {
            list_blocking(db, &shared.index_snapshot(), &prefix, &options)
        })
        .await
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<Revision> {
        validate_write(key, Some(&value))?;
        self.submit(Op::create(key, value)).await
    }

    async fn update(&self, key: &str, value: Vec<u8>, expected: Revision) -> Result<Revision> {
        validate_write(key, Some(&value))?;
        validate_expected(expected)?;
        self.submit(Op::update(key, value, expected)).await
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<Revision> {
        validate_write(key, None)?;
        validate_expected(expected)?;
        self.submit(Op::delete(key, expected)).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        if self.inner.requests.is_closed() {
            return Err(StoreError::Closed);
        }
        Ok(self.inner.shared.revision.load(Ordering::Acquire))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        validate_prefix(prefix)?;
        if after < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {after}"
            )));
        }
        // Subscribe before reading any history, so nothing committed in between is missed.
        let sub = self
            .inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(broadcast::Sender::subscribe)
            .ok_or(StoreError::Closed)?;
        // Refuse a compacted start here, so the caller gets `Gone` from `watch` itself; a
        // compaction racing with this check is reported through the stream instead.
        let compacted = self.compacted_revision();
        if after < compacted {
            return Err(StoreError::Gone {
                requested: after,
                compacted: Some(compacted),
            });
        }
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        // Not budgeted by tokio (it yields when nothing is waiting or the
        // watcher's buffer is full): a watch that yields every 128 events
        // falls behind a saturated server's writes (see the API server's
        // watch cache, its main reader).
        let task = tokio::spawn(tokio::task::unconstrained(run_watch(
            Arc::clone(&self.inner.db),
            sub,
            prefix.to_owned(),
            after,
            tx,
        )));
        Ok(WatchStream::new(rx, task.abort_handle()))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        if revision < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {revision}"
            )));
        }
        self.submit(Op::Compact { revision }).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_records_round_trip() {
        let bytes = encode_entry(EventKind::Updated, 3, 7, "/registry/a/b", b"{\"x\":1}");
        let entry = decode_entry(9, &bytes).expect("decodes");
        assert_eq!(entry.kind, EventKind::Updated);
        assert_eq!(entry.create_revision, 3);
        assert_eq!(entry.prev_revision, 7);
        assert_eq!(entry.key, "/registry/a/b");
        assert_eq!(entry.value, b"{\"x\":1}");
    }

    #[test]
    fn truncated_or_unknown_log_records_are_corrupt_not_panics() {
        let good = encode_entry(EventKind::Created, 1, 0, "/registry/a/b", b"v");
        let mut unknown_kind = good.clone();
        unknown_kind[0] = 9;
        let mut long_key = good.clone();
        long_key[17..21].copy_from_slice(&u32::MAX.to_le_bytes());
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("short header", good[..10].to_vec()),
            ("unknown kind", unknown_kind),
            ("key past the end", long_key),
        ];
        for (name, bytes) in cases {
            assert!(
                matches!(decode_entry(1, &bytes), Err(StoreError::Corrupt(_))),
                "{name}"
            );
        }
    }
}
