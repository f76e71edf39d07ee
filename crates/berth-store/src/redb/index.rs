//! The key index: key → (create revision, mod revision) of every live key, in memory, the
//! authority for reads at the current revision; how a write batch sees it; and how it is
//! rebuilt from the file (the checkpoint in `berth_kv` plus the log after it).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use redb::ReadableTable;

use super::format::{Entry, be, decode_entry};
use crate::error::{Result, StoreError};
use crate::types::EventKind;

/// Key → (create revision, mod revision) of every live key. A persistent B-tree: cloning is
/// O(1) and shares the nodes, so a reader holds a snapshot without a lock while the writer
/// changes the map in place, copying only nodes a snapshot still shares.
pub(super) type IndexMap = imbl::OrdMap<Arc<str>, (i64, i64)>;

/// The key index at one committed revision.
#[derive(Clone, Default)]
pub(super) struct IndexSnapshot {
    pub(super) map: IndexMap,
    pub(super) revision: i64,
}

/// The key index as a write batch sees it: the committed index plus the batch's own changes
/// (`None`: deleted), which are applied to the shared index only once the batch is committed.
pub(super) struct BatchIndex<'a> {
    pub(super) base: &'a IndexMap,
    pub(super) changes: HashMap<Arc<str>, Option<(i64, i64)>>,
}

impl BatchIndex<'_> {
    pub(super) fn get(&self, key: &str) -> Option<(i64, i64)> {
        match self.changes.get(key) {
            Some(state) => *state,
            None => self.base.get(key).copied(),
        }
    }

    pub(super) fn set(&mut self, key: &str, state: Option<(i64, i64)>) {
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
pub(super) fn replay_record(index: &mut IndexMap, revision: i64, entry: &Entry<'_>) -> Result<()> {
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
pub(super) fn rebuild_index(
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
