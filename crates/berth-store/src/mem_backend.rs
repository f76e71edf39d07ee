//! The in-memory backend: the whole store in one process's memory, nothing on disk.
//!
//! It exists for virtual time. `berth sim --scenario` and whole-cluster tests run the API
//! server and every component on a paused tokio clock; the redb backend answers writes from
//! its own writer thread, and while a task waits on another thread tokio's paused clock
//! auto-advances to the next timer, so timers would fire in the middle of a write. Here
//! every call completes on the calling task under one mutex, so virtual time only moves
//! when every task is waiting on a timer, and a run is deterministic.
//!
//! Same guarantees as the other backends except durability (there is none: dropping the
//! last handle drops the data). History is a log of every change since the last
//! compaction, one entry per revision; a list at an older revision is the current state
//! with the newer changes undone, a watch reads the log from its start revision on.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Notify, mpsc};

use crate::error::{Result, StoreError};
use crate::keys::{prefix_end, validate_key, validate_prefix, validate_value};
use crate::list::{ListOptions, ListResult};
use crate::store::Store;
use crate::types::{EventKind, KeyValue, Revision, WatchEvent};
use crate::watch::{WATCH_BUFFER, WatchStream, deliver, fail};

/// Events a watch copies out of the log per lock acquisition.
const WATCH_CHUNK: usize = 256;

/// An in-memory store. Clones share one history.
#[derive(Clone, Default)]
pub struct MemStore {
    inner: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Woken after every write, for watches that have caught up.
    written: Notify,
}

#[derive(Default)]
struct State {
    revision: Revision,
    compacted: Revision,
    live: BTreeMap<String, KeyValue>,
    /// Every change with a revision above `compacted`, in revision order: the change with
    /// revision `r` is at index `r - compacted - 1`.
    log: VecDeque<WatchEvent>,
}

impl State {
    fn check_read_revision(&self, at: Revision) -> Result<()> {
        if at < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {at}"
            )));
        }
        if at > self.revision {
            return Err(StoreError::InvalidArgument(format!(
                "revision {at} is in the future (current is {})",
                self.revision
            )));
        }
        if at < self.compacted {
            return Err(StoreError::Gone {
                requested: at,
                compacted: Some(self.compacted),
            });
        }
        Ok(())
    }

    /// The changes after `after`, as a slice range of the log.
    fn log_index_after(&self, after: Revision) -> usize {
        usize::try_from(after.saturating_sub(self.compacted)).unwrap_or(0)
    }

    /// The keys under `prefix` as they were at revision `at`, from `start` on, at most
    /// `limit + 1` of them (one more than asked, to know whether more follow).
    fn items_at(&self, prefix: &str, start: &str, at: Revision, limit: usize) -> Vec<KeyValue> {
        let end = prefix_end(prefix);
        let range = self.live.range::<str, _>((
            std::ops::Bound::Included(start),
            std::ops::Bound::Excluded(end.as_str()),
        ));
        if at == self.revision {
            let take = if limit == 0 { usize::MAX } else { limit + 1 };
            return range.take(take).map(|(_, kv)| kv.clone()).collect();
        }
        // Undo the changes after `at`, newest first: a key's value at `at` is the previous
        // value of its oldest change after `at`.
        let mut at_revision: BTreeMap<&str, Option<&KeyValue>> =
            range.map(|(key, kv)| (key.as_str(), Some(kv))).collect();
        for event in self.log.range(self.log_index_after(at)..).rev() {
            let key = event.kv.key.as_str();
            if key >= start && key.starts_with(prefix) {
                at_revision.insert(key, event.prev_kv.as_ref());
            }
        }
        let take = if limit == 0 { usize::MAX } else { limit + 1 };
        at_revision
            .into_values()
            .flatten()
            .take(take)
            .cloned()
            .collect()
    }

    fn append(&mut self, event: WatchEvent) -> Revision {
        let revision = event.revision;
        self.revision = revision;
        self.log.push_back(event);
        revision
    }
}

impl MemStore {
    /// An empty store at revision 0.
    pub fn new() -> Self {
        MemStore::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the maps consistent (every method changes
        // them only after all checks), so a poisoned lock is still usable.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn written(&self) {
        self.inner.written.notify_waiters();
    }
}

fn validate_expected(expected: Revision) -> Result<()> {
    if expected <= 0 {
        return Err(StoreError::InvalidArgument(format!(
            "expected revision must be positive, got {expected}"
        )));
    }
    Ok(())
}

fn check_cas(state: &State, key: &str, expected: Revision) -> Result<KeyValue> {
    match state.live.get(key) {
        None => Err(StoreError::NotFound {
            key: key.to_owned(),
        }),
        Some(kv) if kv.mod_revision != expected => Err(StoreError::Conflict {
            key: key.to_owned(),
            expected,
            actual: kv.mod_revision,
        }),
        Some(kv) => Ok(kv.clone()),
    }
}

impl Store for MemStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        validate_key(key)?;
        Ok(self.state().live.get(key).cloned())
    }

    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        validate_prefix(prefix)?;
        let state = self.state();
        let (at, start) = options.start_in(prefix)?;
        let at = at.unwrap_or(state.revision);
        state.check_read_revision(at)?;
        let mut items = state.items_at(prefix, &start, at, options.limit);
        let more = options.limit > 0 && items.len() > options.limit;
        if more {
            // `items_at` read one more than the limit, to tell whether more follow.
            items.truncate(options.limit);
        }
        Ok(ListResult::page(items, at, more))
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<Revision> {
        validate_key(key)?;
        validate_value(key, &value)?;
        let revision = {
            let mut state = self.state();
            if state.live.contains_key(key) {
                return Err(StoreError::AlreadyExists {
                    key: key.to_owned(),
                });
            }
            let revision = state.revision + 1;
            let kv = KeyValue {
                key: key.to_owned(),
                value,
                create_revision: revision,
                mod_revision: revision,
            };
            state.live.insert(key.to_owned(), kv.clone());
            state.append(WatchEvent {
                kind: EventKind::Created,
                revision,
                kv,
                prev_kv: None,
            })
        };
        self.written();
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Vec<u8>, expected: Revision) -> Result<Revision> {
        validate_key(key)?;
        validate_value(key, &value)?;
        validate_expected(expected)?;
        let revision = {
            let mut state = self.state();
            let prev = check_cas(&state, key, expected)?;
            let revision = state.revision + 1;
            let kv = KeyValue {
                key: key.to_owned(),
                value,
                create_revision: prev.create_revision,
                mod_revision: revision,
            };
            state.live.insert(key.to_owned(), kv.clone());
            state.append(WatchEvent {
                kind: EventKind::Updated,
                revision,
                kv,
                prev_kv: Some(prev),
            })
        };
        self.written();
        Ok(revision)
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<Revision> {
        validate_key(key)?;
        validate_expected(expected)?;
        let revision = {
            let mut state = self.state();
            let prev = check_cas(&state, key, expected)?;
            let revision = state.revision + 1;
            state.live.remove(key);
            let kv = KeyValue {
                key: key.to_owned(),
                value: Vec::new(),
                create_revision: prev.create_revision,
                mod_revision: revision,
            };
            state.append(WatchEvent {
                kind: EventKind::Deleted,
                revision,
                kv,
                prev_kv: Some(prev),
            })
        };
        self.written();
        Ok(revision)
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.state().revision)
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        validate_prefix(prefix)?;
        if after < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {after}"
            )));
        }
        {
            let state = self.state();
            if after < state.compacted {
                return Err(StoreError::Gone {
                    requested: after,
                    compacted: Some(state.compacted),
                });
            }
        }
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let task = tokio::spawn(run_watch(self.clone(), prefix.to_owned(), after, tx));
        Ok(WatchStream::new(rx, task.abort_handle()))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        if revision < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {revision}"
            )));
        }
        let mut state = self.state();
        if revision > state.revision {
            return Err(StoreError::InvalidArgument(format!(
                "compaction to revision {revision} is in the future (current is {})",
                state.revision
            )));
        }
        if revision <= state.compacted {
            return Ok(());
        }
        let drop = state.log_index_after(revision);
        state.log.drain(..drop);
        state.compacted = revision;
        Ok(())
    }
}

/// Feeds one watch: copies matching changes out of the log a chunk at a time, and waits for
/// the next write once it has caught up.
async fn run_watch(
    store: MemStore,
    prefix: String,
    mut after: Revision,
    tx: mpsc::Sender<Result<WatchEvent>>,
) {
    loop {
        let written = store.inner.written.notified();
        tokio::pin!(written);
        // Register for the wake-up before reading, so a write in between is not missed.
        written.as_mut().enable();
        let chunk = {
            let state = store.state();
            if after < state.compacted {
                Err(StoreError::Gone {
                    requested: after,
                    compacted: Some(state.compacted),
                })
            } else {
                let mut events = Vec::new();
                let mut examined = after;
                for event in state
                    .log
                    .range(state.log_index_after(after)..)
                    .take(WATCH_CHUNK * 4)
                {
                    examined = event.revision;
                    if event.kv.key.starts_with(&prefix) {
                        events.push(event.clone());
                        if events.len() == WATCH_CHUNK {
                            break;
                        }
                    }
                }
                Ok((events, examined))
            }
        };
        match chunk {
            Err(e) => {
                fail(&tx, e).await;
                return;
            }
            Ok((events, examined)) => {
                let caught_up = examined == after;
                for event in events {
                    if !deliver(&tx, Ok(event)).await {
                        return;
                    }
                }
                after = examined;
                if caught_up {
                    tokio::select! {
                        _ = &mut written => {}
                        _ = tx.closed() => return,
                    }
                }
            }
        }
    }
}
