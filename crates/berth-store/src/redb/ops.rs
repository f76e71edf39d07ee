//! A write as callers hand it to the writer thread: the operation, with its log record
//! already encoded on the caller's thread, and where its answer goes.

use tokio::sync::oneshot;

use super::format::encode_entry;
use crate::error::Result;
use crate::types::{EventKind, Revision};

/// A write as the writer thread receives it. `record` is its log record, encoded by the caller
/// (on a runtime thread, off the single writer thread) with zero revisions that the writer
/// fills in; `value` moves into the watch event, so the writer copies no value.
pub(super) enum Op {
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
    pub(super) fn create(key: &str, value: Vec<u8>) -> Op {
        Op::Create {
            key: key.to_owned(),
            record: encode_entry(EventKind::Created, 0, 0, key, &value),
            value,
        }
    }

    pub(super) fn update(key: &str, value: Vec<u8>, expected: i64) -> Op {
        Op::Update {
            key: key.to_owned(),
            record: encode_entry(EventKind::Updated, 0, 0, key, &value),
            value,
            expected,
        }
    }

    pub(super) fn delete(key: &str, expected: i64) -> Op {
        Op::Delete {
            key: key.to_owned(),
            record: encode_entry(EventKind::Deleted, 0, 0, key, &[]),
            expected,
        }
    }

    pub(super) fn bytes(&self) -> usize {
        match self {
            Op::Create { record, .. } | Op::Update { record, .. } | Op::Delete { record, .. } => {
                record.len()
            }
            Op::Compact { .. } => 0,
        }
    }
}

pub(super) struct Request {
    pub(super) op: Op,
    pub(super) reply: oneshot::Sender<Result<Revision>>,
}

pub(super) enum Msg {
    Write(Request),
    Shutdown,
}
