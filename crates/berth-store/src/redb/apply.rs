//! One write applied inside the batch's transaction: checked against the key index as the
//! batch sees it (exists, conflict), its log record's revisions filled in and inserted, and
//! the watch event it makes.

use redb::Table;

use super::format::{be, set_revisions};
use super::index::BatchIndex;
use super::ops::Op;
use crate::error::{Result, StoreError};
use crate::types::{EventKind, KeyValue, WatchEvent};

/// What one operation did inside the batch transaction.
pub(super) enum Applied {
    Event(WatchEvent),
    Compacted(i64),
}

/// Applies one operation. The outer `Result` is a storage failure that aborts the batch; the
/// inner one is this operation being refused (conflict, exists, ...), which consumes no
/// revision and leaves the rest of the batch alone. A successful create or update moves its
/// key and value out of `op` into the event (the request is answered with the revision only).
pub(super) fn apply_op(
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
