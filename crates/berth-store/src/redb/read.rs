//! Reads: a key index snapshot, then a redb read transaction on the blocking pool. The file
//! may then be a commit ahead of the snapshot; reads take the difference from the log. Lists
//! read at one revision, in the past from the log; watches replay the log in chunks.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, PoisonError};

use redb::{Database, ReadableDatabase};

use super::format::{
    LOG, META, META_COMPACTED, META_REVISION, be, decode_entry, event_from_log, meta_get, read_kv,
};
use super::index::IndexSnapshot;
use super::open::DbCell;
use crate::error::{Result, StoreError};
use crate::keys::prefix_end;
use crate::list::{ListOptions, ListResult};
use crate::types::{EventKind, KeyValue, WatchEvent};

/// Log records read per blocking call when a watch replays history.
const LOG_READ_CHUNK: i64 = 1024;

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

/// Runs a read against the database on the blocking pool (redb reads may touch the disk).
pub(super) async fn read<T: Send + 'static>(
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
pub(super) fn get_blocking(
    db: &Database,
    index: &IndexSnapshot,
    key: &str,
) -> Result<Option<KeyValue>> {
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
pub(super) fn list_blocking(
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
    Ok(ListResult::page(items, at, more))
}

/// Reads the log after `after` for a watch: matching events, the last revision examined, and
/// whether that reached the current revision.
pub(super) fn read_log_blocking(
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
