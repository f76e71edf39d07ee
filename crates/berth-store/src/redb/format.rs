//! The file's format: the three tables and the metadata names, the log record (its
//! encoding, decoding, and what it says: a value, a watch event), and redb's errors as the
//! store reports them.

use redb::{ReadableTable, TableDefinition};

use crate::error::{Result, StoreError};
use crate::types::{EventKind, KeyValue, WatchEvent};

pub(super) const KV: TableDefinition<&str, (i64, i64)> = TableDefinition::new("berth_kv");
pub(super) const LOG: TableDefinition<i64, &[u8]> = TableDefinition::new("berth_log");
pub(super) const META: TableDefinition<&str, i64> = TableDefinition::new("berth_meta");

pub(super) const META_FORMAT: &str = "format";
pub(super) const META_REVISION: &str = "revision";
pub(super) const META_COMPACTED: &str = "compacted";
pub(super) const META_CURSOR: &str = "compact_cursor";
pub(super) const META_CHECKPOINT: &str = "checkpoint";
/// Format 2: `berth_kv` is a checkpoint at `checkpoint`, the log after it completes it. (In
/// format 1 `berth_kv` was exact at every commit; such files are upgraded on open. A format-2
/// file is refused by older builds, which would take the checkpoint for the current state.)
pub(super) const FORMAT_VERSION: i64 = 2;
pub(super) const FORMAT_EXACT_INDEX: i64 = 1;

pub(super) fn be(e: impl Into<redb::Error>) -> StoreError {
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
pub(super) struct Entry<'a> {
    pub(super) kind: EventKind,
    pub(super) create_revision: i64,
    /// The revision this change replaced (0 for a create).
    pub(super) prev_revision: i64,
    pub(super) key: &'a str,
    pub(super) value: &'a [u8],
}

const HEADER: usize = 1 + 8 + 8 + 4;

/// Record layout: kind (1 byte), create revision (i64 LE), previous revision (i64 LE),
/// key length (u32 LE), key, value (rest).
pub(super) fn encode_entry(
    kind: EventKind,
    create: i64,
    prev: i64,
    key: &str,
    value: &[u8],
) -> Vec<u8> {
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
pub(super) fn set_revisions(record: &mut [u8], create: i64, prev: i64) -> Result<()> {
    let header = record
        .get_mut(1..17)
        .ok_or_else(|| StoreError::Corrupt("log record without a header".into()))?;
    header[..8].copy_from_slice(&create.to_le_bytes());
    header[8..].copy_from_slice(&prev.to_le_bytes());
    Ok(())
}

pub(super) fn decode_entry(revision: i64, bytes: &[u8]) -> Result<Entry<'_>> {
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
pub(super) fn read_kv(
    log: &impl ReadableTable<i64, &'static [u8]>,
    key: &str,
    rev: i64,
) -> Result<KeyValue> {
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
pub(super) fn event_from_log(
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

pub(super) fn meta_get(meta: &impl ReadableTable<&'static str, i64>, name: &str) -> Result<i64> {
    Ok(meta
        .get(name)
        .map_err(be)?
        .ok_or_else(|| StoreError::Corrupt(format!("metadata {name:?} is missing")))?
        .value())
}

/// Whether a failed write leaves redb's handle unusable until the file is opened again: an
/// I/O error (a full disk included) latches every later call into `PreviousIo`, and a failed
/// commit can discard the allocator state, which only a reopen rebuilds.
pub(super) fn needs_reopen(error: &StoreError) -> bool {
    let StoreError::Backend(inner) = error else {
        return false;
    };
    matches!(
        inner.downcast_ref::<redb::Error>(),
        Some(redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::Corrupted(_))
    )
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
