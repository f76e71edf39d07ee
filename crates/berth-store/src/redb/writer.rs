//! The writer thread: group commit. It takes every write waiting (and, briefly, the writes
//! of callers it has just answered that are on their way back), applies them in one write
//! transaction (`apply.rs`), commits once with `Durability::Immediate` (one fsync), publishes
//! the new key index, and hands the batch to the responder. After a storage failure it
//! recovers (`recovery.rs`).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use redb::{Database, Durability, ReadableDatabase};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{broadcast, mpsc};

use super::apply::{Applied, apply_op};
use super::compaction;
use super::format::{
    KV, LOG, META, META_CHECKPOINT, META_COMPACTED, META_CURSOR, META_REVISION, be, needs_reopen,
};
use super::index::BatchIndex;
use super::open::DbCell;
use super::ops::{Msg, Request};
use super::responder::{Batch, Delivery, Responder};
use super::shared::Shared;
use crate::error::Result;
use crate::types::{Revision, StoreHealth, WatchEvent};

/// Upper bounds on one group commit, so one transaction stays a bounded amount of work.
const MAX_BATCH_OPS: usize = 4096;
const MAX_BATCH_BYTES: usize = 64 << 20;
/// The longest a batch waits for writes already on their way (see [`Writer::run`]).
const MAX_LINGER: Duration = Duration::from_micros(500);
/// Pending writes the channel holds before callers wait (back-pressure).
pub(super) const REQUEST_QUEUE: usize = 8192;

/// Revisions between checkpoints of the key index into `berth_kv`. Each checkpoint writes the
/// keys changed since the last one (at most this many) in one batch's transaction, so the
/// index pages are rewritten once per few thousand writes instead of once per commit; opening
/// replays at most this many log records after the checkpoint.
const CHECKPOINT_EVERY: i64 = 4096;

/// After a storage failure, how long writes are refused before the next attempt (each failed
/// attempt reopens the file, which readers wait for).
pub(super) const WRITE_RETRY: Duration = Duration::from_secs(1);

pub(super) struct Writer {
    /// The database handle, shared with readers; replaced when the file is reopened.
    pub(super) db: Arc<DbCell>,
    pub(super) path: PathBuf,
    /// redb's page cache (see `RedbStore::open_with_cache`).
    pub(super) cache_bytes: usize,
    pub(super) shared: Arc<Shared>,
    pub(super) events: broadcast::Sender<Batch>,
    /// Delivers committed batches off this thread; `None`: the writer delivers them itself.
    pub(super) responder: Option<Responder>,
    pub(super) revision: i64,
    pub(super) compacted: i64,
    pub(super) cursor: i64,
    /// The revision `berth_kv` holds the index at; never below `compacted`, so the log after it
    /// is complete.
    pub(super) checkpoint: i64,
    /// Keys changed since the checkpoint: what the next checkpoint writes.
    pub(super) dirty: BTreeSet<Arc<str>>,
    /// Set when idle compaction failed; retried after the next successful commit instead of
    /// spinning on a broken disk.
    pub(super) compaction_stalled: bool,
    /// The storage failure writes are refused for, until one succeeds again.
    pub(super) failure: Option<String>,
    /// Writes are refused until then (see [`WRITE_RETRY`]).
    pub(super) writes_paused_until: Instant,
    /// The file could not be reopened; tried again every [`WRITE_RETRY`].
    pub(super) reopen_pending: bool,
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
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
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
                    .publish_revisions(outcome.revision, outcome.compacted);
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
            cursor = compaction::compact_in_batch(&mut log, cursor, compacted)?;
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

    /// One small compaction transaction while no writes wait (see
    /// [`compaction::compact_idle`]).
    fn compact_idle(&mut self) -> Result<()> {
        let started = Instant::now();
        let db = self.database()?;
        self.cursor = compaction::compact_idle(&db, self.cursor, self.compacted)?;
        self.shared.record_compaction(started);
        Ok(())
    }
}
