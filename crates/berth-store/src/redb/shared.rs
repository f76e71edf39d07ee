//! What the writer publishes for readers that need no transaction: the revisions, the key
//! index snapshot, the health, the batching state, the counters.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::index::IndexSnapshot;
use crate::types::StoreHealth;

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
pub(super) struct Shared {
    /// Writes submitted and not yet answered to their caller: those in the channel, in the
    /// batch being committed, and those whose reply is on its way back.
    pub(super) in_flight: AtomicUsize,
    /// Set while the writer is parked waiting for in-flight writes to join its batch: whoever
    /// submits a write or stops counting one then unparks it.
    pub(super) lingering: AtomicBool,
    /// The writer thread, for that unpark.
    pub(super) writer_thread: OnceLock<std::thread::Thread>,
    pub(super) revision: AtomicI64,
    pub(super) compacted: AtomicI64,
    pub(super) commits: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) longest_compaction_micros: AtomicU64,
    /// The key index at the last committed revision. The writer updates it right after each
    /// commit and before answering the batch's callers, so a caller reads its own write.
    /// Readers hold the lock only to clone the snapshot (O(1)).
    pub(super) index: Mutex<IndexSnapshot>,
    pub(super) health: Mutex<StoreHealth>,
}

impl Shared {
    pub(super) fn index_snapshot(&self) -> IndexSnapshot {
        self.index
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Wakes the writer if it is parked waiting for writes in flight. The fence pairs with the
    /// writer's between setting `lingering` and looking at the channel and the count once
    /// more, so either the writer sees this caller's change or this caller sees the flag; a
    /// missed wake-up would cost at most `MAX_LINGER` (`writer.rs`) anyway.
    pub(super) fn wake_lingering_writer(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.lingering.load(Ordering::Relaxed)
            && let Some(writer) = self.writer_thread.get()
        {
            writer.unpark();
        }
    }

    /// The current and the compacted revision, for readers without a transaction.
    pub(super) fn publish_revisions(&self, revision: i64, compacted: i64) {
        self.revision.store(revision, Ordering::Release);
        self.compacted.store(compacted, Ordering::Release);
    }

    pub(super) fn set_health(&self, health: StoreHealth) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    pub(super) fn record_compaction(&self, started: Instant) {
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.longest_compaction_micros
            .fetch_max(micros, Ordering::Relaxed);
    }
}
