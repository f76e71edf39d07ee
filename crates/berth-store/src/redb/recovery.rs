//! Storage failures: redb refuses all work on a database after one I/O error (a full disk
//! included) until it is opened again. The writer answers the failed batch with the error,
//! reports [`crate::StoreHealth::Degraded`], reopens the file (readers wait on the handle's
//! lock meanwhile; the reopened file is the last commit, which the key index is rebuilt from,
//! so revisions go on from there and nothing acknowledged is lost), and refuses writes for a
//! second at a time until one goes through; if the file cannot be reopened,
//! [`crate::StoreHealth::Failed`], and it tries again every second.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::index::IndexSnapshot;
use super::open::reopen_file;
use super::writer::{WRITE_RETRY, Writer};
use crate::error::{Result, StoreError};
use crate::types::StoreHealth;

impl Writer {
    /// After a storage failure: the refusal for writes that come before the next attempt.
    pub(super) fn refusal(&mut self) -> Option<StoreError> {
        let reason = self.failure.clone()?;
        if Instant::now() >= self.writes_paused_until {
            if self.reopen_pending {
                self.retry_reopen();
            }
            if !self.reopen_pending {
                return None;
            }
        }
        Some(StoreError::Unavailable(format!(
            "a write failed ({reason}); writes are refused until the next attempt, at most a \
             second from now"
        )))
    }

    /// A write failed for a storage reason: reopen the file, so reads go on and later writes
    /// can succeed once the cause is gone (space freed).
    pub(super) fn recover(&mut self, error: &StoreError) {
        self.mark_failed(error);
        self.retry_reopen();
    }

    /// Reports a storage failure (before the failed batch is answered, so that whoever sees
    /// the failure sees the store's health say so) and pauses writes.
    pub(super) fn mark_failed(&mut self, error: &StoreError) {
        let reason = error.to_string();
        tracing::error!(
            path = %self.path.display(),
            error = %reason,
            "berth-store: a write failed for a storage reason; reopening the file (reads go on, \
             writes are retried every second)"
        );
        self.shared.set_health(StoreHealth::Degraded(format!(
            "a write failed ({reason}); the store file is being reopened"
        )));
        self.failure = Some(reason);
        self.writes_paused_until = Instant::now() + WRITE_RETRY;
        self.reopen_pending = true;
    }

    pub(super) fn retry_reopen(&mut self) {
        let reason = self.failure.clone().unwrap_or_default();
        match self.reopen() {
            Ok(()) => {
                self.reopen_pending = false;
                self.shared.set_health(StoreHealth::Degraded(format!(
                    "a write failed ({reason}); the store file was reopened and serves reads, \
                     writes are retried every second"
                )));
            }
            Err(e) => {
                tracing::error!(
                    path = %self.path.display(),
                    error = %e,
                    "berth-store: cannot reopen the store file; retrying every second"
                );
                self.writes_paused_until = Instant::now() + WRITE_RETRY;
                self.shared.set_health(StoreHealth::Failed(format!(
                    "a write failed ({reason}) and the store file {} cannot be reopened: {e}",
                    self.path.display()
                )));
            }
        }
    }

    /// Drops the database handle (waiting for readers in flight) and opens the file again. The
    /// reopened file holds every commit that was acknowledged; a commit that reported a failure
    /// may hold too (the revisions after the writer's last are then taken from the file, and
    /// watchers read them from the log).
    fn reopen(&mut self) -> Result<()> {
        let mut cell = self.db.write().unwrap_or_else(PoisonError::into_inner);
        *cell = Err(StoreError::Unavailable(format!(
            "the store file {} is being reopened after a storage failure",
            self.path.display()
        )));
        let (db, loaded) = match reopen_file(&self.path, self.cache_bytes) {
            Ok(opened) => opened,
            Err(e) => {
                *cell = Err(StoreError::Unavailable(format!(
                    "reopening the store file failed: {e}"
                )));
                return Err(StoreError::Unavailable(e.to_string()));
            }
        };
        if loaded.revision < self.revision {
            let why = format!(
                "the reopened file ends at revision {}, but revision {} was acknowledged",
                loaded.revision, self.revision
            );
            *cell = Err(StoreError::Corrupt(why.clone()));
            return Err(StoreError::Corrupt(why));
        }
        if loaded.revision > self.revision {
            tracing::warn!(
                from = self.revision + 1,
                to = loaded.revision,
                "berth-store: writes reported as failed were committed after all"
            );
        }
        self.revision = loaded.revision;
        self.compacted = loaded.compacted;
        self.cursor = loaded.cursor;
        self.checkpoint = loaded.checkpoint;
        self.dirty = loaded.dirty;
        *self
            .shared
            .index
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = IndexSnapshot {
            map: loaded.index,
            revision: loaded.revision,
        };
        self.shared
            .publish_revisions(loaded.revision, loaded.compacted);
        *cell = Ok(Arc::new(db));
        Ok(())
    }
}
