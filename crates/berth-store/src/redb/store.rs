//! [`RedbStore`]: opening the store (the writer thread and the responder started), the
//! [`Store`] calls, counters, health, `verify`, and closing.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, oneshot};

use super::index::IndexSnapshot;
use super::open::{DEFAULT_CACHE_BYTES, DbCell, FILE_NAME, open_file};
use super::ops::{Msg, Op, Request};
use super::read::{get_blocking, list_blocking, read};
use super::responder::{Batch, EVENT_BACKLOG, spawn_responder};
use super::shared::{Shared, WriterStats};
use super::verify::{VerifyReport, verify_blocking};
use super::watches::run_watch;
use super::writer::{REQUEST_QUEUE, Writer};
use crate::error::{Result, StoreError};
use crate::keys::{validate_key, validate_prefix, validate_value};
use crate::list::{ListOptions, ListResult};
use crate::store::Store;
use crate::types::{KeyValue, Revision, StoreHealth};
use crate::watch::{WATCH_BUFFER, WatchStream};

struct Inner {
    path: PathBuf,
    requests: mpsc::Sender<Msg>,
    db: Arc<DbCell>,
    /// Kept only to subscribe new watchers; taken on close so watchers see the end.
    events: Mutex<Option<broadcast::Sender<Batch>>>,
    shared: Arc<Shared>,
    /// Fire when the writer thread has exited and dropped its database handle, and when the
    /// responder (if any) has delivered the last batch.
    writer_done: tokio::sync::Mutex<Vec<oneshot::Receiver<()>>>,
}

/// The embedded store: one redb file, [`FILE_NAME`], in a data directory. Cheap to clone; all
/// clones share one writer.
#[derive(Clone)]
pub struct RedbStore {
    inner: Arc<Inner>,
}

impl RedbStore {
    /// Opens (or creates) the store in `data_dir`. Fails, naming the file, if the file is not a
    /// berth store (corrupt, foreign, or of an unknown format) or is already open.
    pub fn open(data_dir: impl AsRef<Path>) -> Result<Self> {
        RedbStore::open_with_cache(data_dir, DEFAULT_CACHE_BYTES)
    }

    /// [`open`](Self::open) with `cache_bytes` of redb's page cache (pages read and written
    /// are kept in memory up to that much: the store's memory grows with written bytes up to
    /// it, then stays).
    pub fn open_with_cache(data_dir: impl AsRef<Path>, cache_bytes: usize) -> Result<Self> {
        let dir = data_dir.as_ref();
        let open_err = |path: &Path, reason: String| StoreError::Open {
            path: path.to_owned(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(dir, e.to_string()))?;
        let path = dir.join(FILE_NAME);
        let (db, loaded) =
            open_file(&path, cache_bytes).map_err(|e| open_err(&path, e.to_string()))?;
        let db: Arc<DbCell> = Arc::new(RwLock::new(Ok(Arc::new(db))));
        let shared = Arc::new(Shared {
            index: Mutex::new(IndexSnapshot {
                map: loaded.index,
                revision: loaded.revision,
            }),
            ..Shared::default()
        });
        shared.publish_revisions(loaded.revision, loaded.compacted);
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let (requests, rx) = mpsc::channel(REQUEST_QUEUE);
        let (done_tx, done_rx) = oneshot::channel();
        let (responder_done_tx, responder_done_rx) = oneshot::channel();
        let writer = Writer {
            db: db.clone(),
            path: path.clone(),
            cache_bytes,
            shared: shared.clone(),
            responder: spawn_responder(&events, responder_done_tx),
            events: events.clone(),
            revision: loaded.revision,
            compacted: loaded.compacted,
            cursor: loaded.cursor,
            checkpoint: loaded.checkpoint,
            dirty: loaded.dirty,
            compaction_stalled: false,
            failure: None,
            writes_paused_until: Instant::now(),
            reopen_pending: false,
        };
        std::thread::Builder::new()
            .name("berth-store-writer".into())
            .spawn(move || {
                writer.run(rx);
                // `writer` (and its database handle) is dropped by now.
                let _ = done_tx.send(());
            })
            .map_err(|e| open_err(&path, format!("cannot start the writer thread: {e}")))?;
        Ok(RedbStore {
            inner: Arc::new(Inner {
                path,
                requests,
                db,
                events: Mutex::new(Some(events)),
                shared,
                writer_done: tokio::sync::Mutex::new(vec![done_rx, responder_done_rx]),
            }),
        })
    }

    /// Path of the database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Writer counters (commits and writes so far).
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            commits: self.inner.shared.commits.load(Ordering::Relaxed),
            writes: self.inner.shared.writes.load(Ordering::Relaxed),
            longest_compaction_slice: Duration::from_micros(
                self.inner
                    .shared
                    .longest_compaction_micros
                    .load(Ordering::Relaxed),
            ),
        }
    }

    /// Whether the store serves reads and writes (see [`StoreHealth`]).
    pub fn health(&self) -> StoreHealth {
        self.inner
            .shared
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The revision history has been compacted to (0 if never).
    pub fn compacted_revision(&self) -> Revision {
        self.inner.shared.compacted.load(Ordering::Acquire)
    }

    /// Finishes pending writes, stops the writer and releases the file, so it can be opened
    /// again. Later calls on any clone fail with [`StoreError::Closed`]; watches end.
    pub async fn close(&self) -> Result<()> {
        let _ = self.inner.requests.send(Msg::Shutdown).await;
        // The writer first (it hands the responder its last batch), then the responder. An
        // error means the other side is gone, which is as done.
        for done in std::mem::take(&mut *self.inner.writer_done.lock().await) {
            let _ = done.await;
        }
        self.inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let db = Arc::clone(&self.inner.db);
        // Taking the write lock waits for readers in flight on the blocking pool.
        tokio::task::spawn_blocking(move || {
            *db.write().unwrap_or_else(PoisonError::into_inner) = Err(StoreError::Closed);
        })
        .await
        .map_err(StoreError::backend)?;
        Ok(())
    }

    /// Checks the file's invariants: the log's revisions end at the current revision, the
    /// checkpoint plus the log after it rebuilds exactly the in-memory key index, every live
    /// and checkpointed key's value is in the log with matching revisions, and (if nothing has
    /// been compacted) replaying the whole log gives exactly the live keys. For tests and
    /// `fsck`.
    pub async fn verify(&self) -> Result<()> {
        self.verify_report().await.map(|_| ())
    }

    /// [`verify`](Self::verify), returning what it counted.
    pub async fn verify_report(&self) -> Result<VerifyReport> {
        let shared = Arc::clone(&self.inner.shared);
        read(&self.inner.db, move |db| verify_blocking(db, &shared)).await
    }

    async fn submit(&self, op: Op) -> Result<Revision> {
        // Counted until the reply is read (or the caller gives up), for the writer's batching.
        let _in_flight = InFlight::enter(&self.inner.shared);
        let (reply, answer) = oneshot::channel();
        self.inner
            .requests
            .send(Msg::Write(Request { op, reply }))
            .await
            .map_err(|_| StoreError::Closed)?;
        self.inner.shared.wake_lingering_writer();
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

/// One write counted in [`Shared::in_flight`] while it lives.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> Self {
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        // One fewer to wait for: the writer may be waiting for exactly this one.
        self.0.wake_lingering_writer();
    }
}

fn validate_write(key: &str, value: Option<&[u8]>) -> Result<()> {
    validate_key(key)?;
    if let Some(value) = value {
        validate_value(key, value)?;
    }
    Ok(())
}

fn validate_expected(expected: Revision) -> Result<()> {
    if expected <= 0 {
        return Err(StoreError::InvalidArgument(format!(
            "expected revision must be positive, got {expected}"
        )));
    }
    Ok(())
}

impl Store for RedbStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        validate_key(key)?;
        let key = key.to_owned();
        let shared = Arc::clone(&self.inner.shared);
        read(&self.inner.db, move |db| {
            get_blocking(db, &shared.index_snapshot(), &key)
        })
        .await
    }

    async fn list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        validate_prefix(prefix)?;
        let prefix = prefix.to_owned();
        let shared = Arc::clone(&self.inner.shared);
        read(&self.inner.db, move |db| {
            list_blocking(db, &shared.index_snapshot(), &prefix, &options)
        })
        .await
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<Revision> {
        validate_write(key, Some(&value))?;
        self.submit(Op::create(key, value)).await
    }

    async fn update(&self, key: &str, value: Vec<u8>, expected: Revision) -> Result<Revision> {
        validate_write(key, Some(&value))?;
        validate_expected(expected)?;
        self.submit(Op::update(key, value, expected)).await
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<Revision> {
        validate_write(key, None)?;
        validate_expected(expected)?;
        self.submit(Op::delete(key, expected)).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        if self.inner.requests.is_closed() {
            return Err(StoreError::Closed);
        }
        Ok(self.inner.shared.revision.load(Ordering::Acquire))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        validate_prefix(prefix)?;
        if after < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {after}"
            )));
        }
        // Subscribe before reading any history, so nothing committed in between is missed.
        let sub = self
            .inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(broadcast::Sender::subscribe)
            .ok_or(StoreError::Closed)?;
        // Refuse a compacted start here, so the caller gets `Gone` from `watch` itself; a
        // compaction racing with this check is reported through the stream instead.
        let compacted = self.compacted_revision();
        if after < compacted {
            return Err(StoreError::Gone {
                requested: after,
                compacted: Some(compacted),
            });
        }
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        // Not budgeted by tokio (it yields when nothing is waiting or the
        // watcher's buffer is full): a watch that yields every 128 events
        // falls behind a saturated server's writes (see the API server's
        // watch cache, its main reader).
        let task = tokio::spawn(tokio::task::unconstrained(run_watch(
            Arc::clone(&self.inner.db),
            sub,
            prefix.to_owned(),
            after,
            tx,
        )));
        Ok(WatchStream::new(rx, task.abort_handle()))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        if revision < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "negative revision {revision}"
            )));
        }
        self.submit(Op::Compact { revision }).await.map(|_| ())
    }
}
