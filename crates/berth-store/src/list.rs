//! Lists: their options, their pages, and the continuation from one page to the next, the
//! same for every backend. A continuation pins every page to the revision of the first and
//! starts just after the last key returned (upstream's rule: the last key and a NUL byte);
//! [`ListOptions::start_in`] is the one check every backend makes of one.

use crate::error::{Result, StoreError};
use crate::types::{KeyValue, Revision};

/// Where the next page of a paginated list starts. The API server encodes it into the
/// Kubernetes `continue` token; it pins every page to the revision of the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The revision all pages are read at.
    pub revision: Revision,
    /// First key of the next page (inclusive).
    pub start_key: String,
}

/// How to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Maximum items in this page; 0 means no limit.
    pub limit: usize,
    /// Continue a previous list: read from `start_key` at that list's revision.
    pub continue_from: Option<Continue>,
    /// Read at this revision instead of the latest; `None` or `Some(0)` mean the latest (as in
    /// etcd). Ignored when `continue_from` is set.
    pub revision: Option<Revision>,
}

impl ListOptions {
    /// Where a list over `prefix` starts: a continuation's key and revision,
    /// or `prefix` itself at [`ListOptions::revision`]; `None` is the latest
    /// revision (so is a continuation's revision below 1, as upstream reads
    /// a negative one). The one check every backend makes of a continuation:
    /// it must start inside `prefix` ([`StoreError::InvalidContinue`]).
    pub(crate) fn start_in(&self, prefix: &str) -> Result<(Option<Revision>, String)> {
        match &self.continue_from {
            Some(c) if !c.start_key.starts_with(prefix) => {
                Err(StoreError::InvalidContinue(format!(
                    "continuation starts at {:?}, outside prefix {prefix}",
                    c.start_key
                )))
            }
            Some(c) => Ok((Some(c.revision).filter(|r| *r > 0), c.start_key.clone())),
            None => Ok((self.revision.filter(|r| *r > 0), prefix.to_owned())),
        }
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListResult {
    /// The items, in key order.
    pub items: Vec<KeyValue>,
    /// The revision the page was read at.
    pub revision: Revision,
    /// Set when more items follow.
    pub next: Option<Continue>,
}

impl ListResult {
    /// A page of `items` read at `revision`; `more` when items follow them, which the next
    /// page continues from: at the same revision, from the smallest key after the last one.
    pub(crate) fn page(items: Vec<KeyValue>, revision: Revision, more: bool) -> ListResult {
        let next = match (more, items.last()) {
            (true, Some(last)) => Some(Continue {
                revision,
                start_key: format!("{}\0", last.key),
            }),
            _ => None,
        };
        ListResult {
            items,
            revision,
            next,
        }
    }
}
