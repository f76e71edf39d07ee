//! `verify`: the file's invariants checked against the in-memory key index (for tests and
//! `fsck`).

use std::time::Duration;

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::format::{
    KV, LOG, META, META_CHECKPOINT, META_COMPACTED, META_REVISION, be, decode_entry, meta_get,
    read_kv,
};
use super::index::{IndexMap, rebuild_index, replay_record};
use super::shared::Shared;
use crate::error::{Result, StoreError};
use crate::types::Revision;

/// What `RedbStore::verify_report` found.
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

pub(super) fn verify_blocking(db: &Database, shared: &Shared) -> Result<VerifyReport> {
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
