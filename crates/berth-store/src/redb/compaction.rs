//! Compaction, as in etcd's MVCC: history is dropped, but every record still needed to read
//! at or after the compacted revision stays (the live value of every key and the previous
//! values of changes after it). The writer deletes old records a few dozen at a time inside
//! ordinary batches ([`compact_in_batch`]), or in small non-durable transactions when idle
//! ([`compact_idle`]), so a write never waits behind a large compaction.

use std::time::{Duration, Instant};

use redb::{Database, Durability, ReadableTable, Table};

use super::format::{LOG, META, META_CURSOR, be, decode_entry};
use crate::error::Result;
use crate::types::EventKind;

/// Compaction work (log records examined) piggybacked on each write batch, and per idle
/// compaction transaction, bounded both in steps and in time: a write never waits more than
/// one such slice (plus its own commit) for compaction, whatever the machine or build.
const COMPACT_STEPS_PER_BATCH: i64 = 64;
const COMPACT_BUDGET_PER_BATCH: Duration = Duration::from_millis(1);
const COMPACT_STEPS_IDLE: i64 = 128;
const COMPACT_BUDGET_IDLE: Duration = Duration::from_millis(1);

/// The compaction steps a write batch takes along (see [`compact_steps`]).
pub(super) fn compact_in_batch(
    log: &mut Table<i64, &'static [u8]>,
    cursor: i64,
    compacted: i64,
) -> Result<i64> {
    compact_steps(
        log,
        cursor,
        compacted,
        COMPACT_STEPS_PER_BATCH,
        COMPACT_BUDGET_PER_BATCH,
    )
}

/// One small compaction transaction while no writes wait; the new cursor. Not durable on its
/// own: if it is lost in a crash, the cursor it advanced is lost with it and the work is
/// redone; the next durable commit persists it.
pub(super) fn compact_idle(db: &Database, from: i64, compacted: i64) -> Result<i64> {
    let mut txn = db.begin_write().map_err(be)?;
    txn.set_durability(Durability::None).map_err(be)?;
    let cursor;
    {
        let mut log = txn.open_table(LOG).map_err(be)?;
        let mut meta = txn.open_table(META).map_err(be)?;
        cursor = compact_steps(
            &mut log,
            from,
            compacted,
            COMPACT_STEPS_IDLE,
            COMPACT_BUDGET_IDLE,
        )?;
        meta.insert(META_CURSOR, cursor).map_err(be)?;
    }
    txn.commit().map_err(be)?;
    Ok(cursor)
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
