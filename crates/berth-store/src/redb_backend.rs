//! The embedded backend: one redb file in the data directory.
//!
//! Layout (three tables):
//! - `berth_log`: revision → change record (kind, key, create revision, previous revision,
//!   value). Every write appends exactly one record, so the log is the history watches replay.
//! - `berth_kv`: key → (create revision, mod revision) of the live object. The value itself is
//!   read from the log record at the mod revision, so each value is written once.
//! - `berth_meta`: format version, current revision, compacted revision, compaction cursor.
//!
//! Writes go through one writer thread fed by a channel. It takes everything waiting (and,
//! briefly, the writes of callers it has just answered that are on their way back), applies it
//! in one write transaction and commits once with `Durability::Immediate` (one fsync), then
//! publishes the batch's events and answers every caller (group commit). Reads use redb read
//! transactions on the blocking pool. Watches subscribe to an in-memory broadcast of committed
//! batches and fall back to reading the log when they start in the past or fall behind.
//!
//! Compaction, as in etcd's MVCC, drops history but keeps every record still needed to read at
//! or after the compacted revision: the live value of every key and the previous values of
//! changes after it. The writer deletes old records a few dozen at a time inside ordinary
//! batches, or in small non-durable transactions when idle, so a write never waits behind a
//! large compaction.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
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
use crate::store::{EventKind, KeyValue, ListOptions, ListResult, Revision, Store, WatchEvent};
use crate::watch::{WATCH_BUFFER, WatchStream, deliver, fail};

const KV: TableDefinition<&str, (i64, i64)> = TableDefinition::new("berth_kv");
const LOG: TableDefinition<i64, &[u8]> = TableDefinition::new("berth_log");
const META: TableDefinition<&str, i64> = TableDefinition::new("berth_meta");

const META_FORMAT: &str = "format";
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";
const META_CURSOR: &str = "compact_cursor";
const FORMAT_VERSION: i64 = 1;

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
/// Committed batches the broadcast keeps for slow watchers before they must re-read the log.
const EVENT_BACKLOG: usize = 4096;
/// Log records read per blocking call when a watch replays history.
const LOG_READ_CHUNK: i64 = 1024;

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
    revision: AtomicI64,
    compacted: AtomicI64,
    commits: AtomicU64,
    writes: AtomicU64,
    longest_compaction_micros: AtomicU64,
}

impl Shared {
    fn record_compaction(&self, started: Instant) {
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.longest_compaction_micros
            .fetch_max(micros, Ordering::Relaxed);
    }
}

type Batch = Arc<[WatchEvent]>;

struct Writer {
    db: Arc<Database>,
    shared: Arc<Shared>,
    events: broadcast::Sender<Batch>,
    revision: i64,
    compacted: i64,
    cursor: i64,
    /// Set when idle compaction failed; retried after the next successful commit instead of
    /// spinning on a broken disk.
    compaction_stalled: bool,
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
    revision: i64,
    compacted: i64,
    cursor: i64,
    committed: bool,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        loop {
            let compaction_due = self.cursor <= self.compacted && !self.compaction_stalled;
            let first = if compaction_due {
                match rx.try_recv() {
                    Ok(msg) => msg,
                    Err(TryRecvError::Empty) => {
                        if let Err(e) = self.compact_idle() {
                            tracing::warn!(error = %e, "berth-store: background compaction failed");
                            self.compaction_stalled = true;
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match rx.blocking_recv() {
                    Some(msg) => msg,
                    None => return,
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
                        // Let the callers' threads run (on a small machine, this one's core).
                        std::thread::yield_now();
                    }
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                self.commit_batch(batch);
            }
            if shutdown {
                return;
            }
        }
    }

    fn commit_batch(&mut self, batch: Vec<Request>) {
        let mut batch = batch;
        match self.apply_batch(&mut batch) {
            Ok(outcome) => {
                self.revision = outcome.revision;
                self.compacted = outcome.compacted;
                self.cursor = outcome.cursor;
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
                // Publish before answering, so a caller that saw its write acknowledged can
                // rely on watchers receiving it.
                if !outcome.events.is_empty() {
                    // No receivers is fine: nobody is watching.
                    let _ = self.events.send(Arc::from(outcome.events));
                }
                for (req, result) in batch.into_iter().zip(outcome.results) {
                    let _ = req.reply.send(result);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "berth-store: write batch failed");
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
        }
    }

    fn apply_batch(&self, batch: &mut [Request]) -> Result<Outcome> {
        let mut txn = self.db.begin_write().map_err(be)?;
        txn.set_durability(Durability::Immediate).map_err(be)?;
        let mut revision = self.revision;
        let mut compacted = self.compacted;
        let mut cursor = self.cursor;
        let mut results = Vec::with_capacity(batch.len());
        let mut events = Vec::new();
        {
            let mut kv = txn.open_table(KV).map_err(be)?;
            let mut log = txn.open_table(LOG).map_err(be)?;
            let mut meta = txn.open_table(META).map_err(be)?;
            for req in batch.iter_mut() {
                match apply_op(&mut kv, &mut log, revision, compacted, &mut req.op)? {
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
        }
        let changed =
            revision != self.revision || compacted != self.compacted || cursor != self.cursor;
        if changed {
            txn.commit().map_err(be)?;
        } else {
            // Every operation was refused: nothing to make durable, skip the fsync.
            txn.abort().map_err(be)?;
        }
        Ok(Outcome {
            results,
            events,
            revision,
            compacted,
            cursor,
            committed: changed,
        })
    }

    /// One small compaction transaction while no writes wait. Not durable on its own: if it is
    /// lost in a crash, the cursor it advanced is lost with it and the work is redone; the next
    /// durable commit persists it.
    fn compact_idle(&mut self) -> Result<()> {
        let started = Instant::now();
        let mut txn = self.db.begin_write().map_err(be)?;
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
    kv: &mut Table<&'static str, (i64, i64)>,
    log: &mut Table<i64, &'static [u8]>,
    revision: i64,
    compacted: i64,
    op: &mut Op,
) -> Result<Result<Applied>> {
    let next = revision + 1;
    match op {
        Op::Create { key, value, record } => {
            if kv.get(key.as_str()).map_err(be)?.is_some() {
                return Ok(Err(StoreError::AlreadyExists { key: key.clone() }));
            }
            set_revisions(record, next, 0)?;
            log.insert(next, record.as_slice()).map_err(be)?;
            kv.insert(key.as_str(), (next, next)).map_err(be)?;
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
        } => change(kv, log, next, key, Some(value), record, *expected),
        Op::Delete {
            key,
            record,
            expected,
        } => change(kv, log, next, key, None, record, *expected),
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
    kv: &mut Table<&'static str, (i64, i64)>,
    log: &mut Table<i64, &'static [u8]>,
    next: i64,
    key: &mut String,
    value: Option<&mut Vec<u8>>,
    record: &mut [u8],
    expected: i64,
) -> Result<Result<Applied>> {
    let current = kv.get(key.as_str()).map_err(be)?.map(|g| g.value());
    let Some((create, actual)) = current else {
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
    let prev = read_kv(log, key, actual)?;
    let (kind, new_value) = match value {
        Some(v) => (EventKind::Updated, std::mem::take(v)),
        None => (EventKind::Deleted, Vec::new()),
    };
    set_revisions(record, create, actual)?;
    log.insert(next, &*record).map_err(be)?;
    match kind {
        EventKind::Deleted => {
            kv.remove(key.as_str()).map_err(be)?;
        }
        _ => {
            kv.insert(key.as_str(), (create, next)).map_err(be)?;
        }
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

/// The database handle readers use; `None` once the store is closed, so closing can release the
/// file deterministically (readers hold the lock only for the duration of one read).
type DbCell = RwLock<Option<Arc<Database>>>;

struct Loaded {
    revision: i64,
    compacted: i64,
    cursor: i64,
}

/// Initializes a new file, or checks that an existing one is a berth store of a known format.
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
            ] {
                meta.insert(name, value).map_err(|e| e.to_string())?;
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
        return Ok(Loaded {
            revision: 0,
            compacted: 0,
            cursor: 1,
        });
    }
    for name in ["berth_meta", "berth_kv", "berth_log"] {
        if !tables.iter().any(|t| t == name) {
            return Err(format!(
                "the file is a redb database but not a berth store (table {name} is missing)"
            ));
        }
    }
    let loaded = {
        let meta = txn.open_table(META).map_err(|e| e.to_string())?;
        let get = |name: &str| meta_get(&meta, name).map_err(|e| e.to_string());
        let format = get(META_FORMAT)?;
        if format != FORMAT_VERSION {
            return Err(format!(
                "unsupported berth store format {format} (this build reads {FORMAT_VERSION})"
            ));
        }
        Loaded {
            revision: get(META_REVISION)?,
            compacted: get(META_COMPACTED)?,
            cursor: get(META_CURSOR)?,
        }
    };
    txn.abort().map_err(|e| e.to_string())?;
    Ok(loaded)
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
    /// Fires when the writer thread has exited and dropped its database handle.
    writer_done: tokio::sync::Mutex<Option<oneshot::Receiver<()>>>,
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
        let dir = data_dir.as_ref();
        let open_err = |path: &Path, reason: String| StoreError::Open {
            path: path.to_owned(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(dir, e.to_string()))?;
        let path = dir.join(FILE_NAME);
        let db = Database::create(&path).map_err(|e| open_err(&path, e.to_string()))?;
        let loaded = init_or_check(&db).map_err(|reason| open_err(&path, reason))?;
        let db = Arc::new(db);
        let shared = Arc::new(Shared::default());
        shared.revision.store(loaded.revision, Ordering::Release);
        shared.compacted.store(loaded.compacted, Ordering::Release);
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let (requests, rx) = mpsc::channel(REQUEST_QUEUE);
        let (done_tx, done_rx) = oneshot::channel();
        let writer = Writer {
            db: db.clone(),
            shared: shared.clone(),
            events: events.clone(),
            revision: loaded.revision,
            compacted: loaded.compacted,
            cursor: loaded.cursor,
            compaction_stalled: false,
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
                db: Arc::new(RwLock::new(Some(db))),
                events: Mutex::new(Some(events)),
                shared,
                writer_done: tokio::sync::Mutex::new(Some(done_rx)),
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

    /// The revision history has been compacted to (0 if never).
    pub fn compacted_revision(&self) -> Revision {
        self.inner.shared.compacted.load(Ordering::Acquire)
    }

    /// Finishes pending writes, stops the writer and releases the file, so it can be opened
    /// again. Later calls on any clone fail with [`StoreError::Closed`]; watches end.
    pub async fn close(&self) -> Result<()> {
        let _ = self.inner.requests.send(Msg::Shutdown).await;
        if let Some(done) = self.inner.writer_done.lock().await.take() {
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
            db.write().unwrap_or_else(PoisonError::into_inner).take();
        })
        .await
        .map_err(StoreError::backend)?;
        Ok(())
    }

    /// Checks the file's invariants: the log's revisions end at the current revision, every
    /// live key's value is in the log with matching revisions, and (if nothing has been
    /// compacted) replaying the whole log gives exactly the live keys. For tests and `fsck`.
    pub async fn verify(&self) -> Result<()> {
        self.verify_report().await.map(|_| ())
    }

    /// [`verify`](Self::verify), returning what it counted.
    pub async fn verify_report(&self) -> Result<VerifyReport> {
        read(&self.inner.db, verify_blocking).await
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
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(StoreError::Closed),
        }
    })
    .await
    .map_err(StoreError::backend)?
}

fn get_blocking(db: &Database, key: &str) -> Result<Option<KeyValue>> {
    let txn = db.begin_read().map_err(be)?;
    let kv = txn.open_table(KV).map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let Some((_, mod_revision)) = kv.get(key).map_err(be)?.map(|g| g.value()) else {
        return Ok(None);
    };
    read_kv(&log, key, mod_revision).map(Some)
}

fn list_blocking(db: &Database, prefix: &str, options: &ListOptions) -> Result<ListResult> {
    let txn = db.begin_read().map_err(be)?;
    let kv = txn.open_table(KV).map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let meta = txn.open_table(META).map_err(be)?;
    let current = meta_get(&meta, META_REVISION)?;
    let compacted = meta_get(&meta, META_COMPACTED)?;
    let (at, start) = match &options.continue_from {
        Some(c) => {
            if !c.start_key.starts_with(prefix) {
                return Err(StoreError::InvalidArgument(format!(
                    "continuation starts at {:?}, outside prefix {prefix}",
                    c.start_key
                )));
            }
            (c.revision, c.start_key.clone())
        }
        None => (
            options.revision.filter(|r| *r > 0).unwrap_or(current),
            prefix.to_owned(),
        ),
    };
    check_read_revision(at, current, compacted)?;
    let end = prefix_end(prefix);

    // Keys changed after `at` read their state at `at` from the log: the revision their first
    // later change replaced (0: the key did not exist at `at`). Other live keys have not
    // changed since `at`.
    let mut changed: BTreeMap<String, i64> = BTreeMap::new();
    if at < current {
        for item in log.range((at + 1)..).map_err(be)? {
            let (rev, bytes) = item.map_err(be)?;
            let entry = decode_entry(rev.value(), bytes.value())?;
            if entry.key >= start.as_str() && entry.key < end.as_str() {
                changed
                    .entry(entry.key.to_owned())
                    .or_insert(entry.prev_revision);
            }
        }
    }

    let limit = if options.limit == 0 {
        usize::MAX
    } else {
        options.limit
    };
    let mut live = kv
        .range::<&str>(start.as_str()..end.as_str())
        .map_err(be)?
        .map(|item| {
            item.map(|(k, v)| {
                let (create, modified) = v.value();
                (k.value().to_owned(), create, modified)
            })
            .map_err(be)
        })
        .peekable();
    let mut old = changed.into_iter().peekable();
    let mut items = Vec::new();
    let mut more = false;
    loop {
        // Merge the two key-ordered sources; a key in both is taken from `old`.
        let live_key = match live.peek() {
            Some(Ok((k, _, _))) => Some(k.as_str()),
            Some(Err(_)) => {
                return Err(match live.next() {
                    Some(Err(e)) => e,
                    _ => StoreError::Corrupt("key index iteration failed".into()),
                });
            }
            None => None,
        };
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
                Some(Ok((key, _, modified))) => Some(read_kv(&log, &key, modified)?),
                Some(Err(e)) => return Err(e),
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
    /// Keys with a live value.
    pub live_keys: u64,
    /// Records in the history log (equal to `live_keys` once everything before the compacted
    /// revision is physically compacted and nothing changed since).
    pub log_records: u64,
}

fn verify_blocking(db: &Database) -> Result<VerifyReport> {
    let corrupt = |msg: String| Err(StoreError::Corrupt(msg));
    let txn = db.begin_read().map_err(be)?;
    let kv = txn.open_table(KV).map_err(be)?;
    let log = txn.open_table(LOG).map_err(be)?;
    let meta = txn.open_table(META).map_err(be)?;
    let current = meta_get(&meta, META_REVISION)?;
    let compacted = meta_get(&meta, META_COMPACTED)?;
    let last = log.last().map_err(be)?.map(|(k, _)| k.value()).unwrap_or(0);
    if last != current {
        return corrupt(format!(
            "last log record is {last}, current revision {current}"
        ));
    }
    for item in kv.iter().map_err(be)? {
        let (key, revs) = item.map_err(be)?;
        let (create, modified) = revs.value();
        if create > modified || modified > current {
            return corrupt(format!(
                "{}: bad revisions {create}/{modified}",
                key.value()
            ));
        }
        let value = read_kv(&log, key.value(), modified)?;
        if value.create_revision != create {
            return corrupt(format!("{}: create revision mismatch", key.value()));
        }
    }
    if compacted == 0 {
        // Replay the whole history and compare with the live keys.
        let mut state: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (expected_rev, item) in (1i64..).zip(log.iter().map_err(be)?) {
            let (rev, bytes) = item.map_err(be)?;
            let rev = rev.value();
            if rev != expected_rev {
                return corrupt(format!(
                    "log has a gap: expected {expected_rev}, found {rev}"
                ));
            }
            let entry = decode_entry(rev, bytes.value())?;
            let before = state.get(entry.key).map(|&(_, m)| m).unwrap_or(0);
            if before != entry.prev_revision {
                return corrupt(format!(
                    "log record {rev} replaces {} but {} was at {before}",
                    entry.prev_revision, entry.key
                ));
            }
            match entry.kind {
                EventKind::Deleted => {
                    state.remove(entry.key);
                }
                _ => {
                    state.insert(entry.key.to_owned(), (entry.create_revision, rev));
                }
            }
        }
        let mut live = BTreeMap::new();
        for item in kv.iter().map_err(be)? {
            let (key, revs) = item.map_err(be)?;
            live.insert(key.value().to_owned(), revs.value());
        }
        if live != state {
            return corrupt("replaying the log does not give the live keys".into());
        }
    }
    Ok(VerifyReport {
        revision: current,
        compacted,
        live_keys: kv.len().map_err(be)?,
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
                    for event in batch.iter() {
                        // Already delivered from the log.
                        if event.revision <= last {
                            continue;
                        }
                        last = event.revision;
                        if event.kv.key.starts_with(&prefix)
                            && !deliver(&tx, Ok(event.clone())).await
                        {
                            return;
                        }
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
        read(&self.inner.db, move |db| get_blocking(db, &key)).await
    }

    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        validate_prefix(prefix)?;
        let prefix = prefix.to_owned();
        read(&self.inner.db, move |db| {
            list_blocking(db, &prefix, &options)
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
        let task = tokio::spawn(run_watch(
            Arc::clone(&self.inner.db),
            sub,
            prefix.to_owned(),
            after,
            tx,
        ));
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
