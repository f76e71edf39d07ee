//! A watch: the log replayed from its start revision, then the broadcast of committed
//! batches, falling back to the log when it falls behind or a batch is missing.

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::open::DbCell;
use super::read::{read, read_log_blocking};
use super::responder::Batch;
use crate::error::Result;
use crate::types::WatchEvent;
use crate::watch::{deliver, fail};

/// Forwards history and then live events to one watcher.
pub(super) async fn run_watch(
    db: Arc<DbCell>,
    mut sub: broadcast::Receiver<Batch>,
    prefix: String,
    mut last: i64,
    tx: mpsc::Sender<Result<WatchEvent>>,
) {
    loop {
        // Replay the log until it holds nothing newer; everything committed after that is in
        // the broadcast, which was subscribed before the first read.
        loop {
            let p = prefix.clone();
            let from = last;
            match read(&db, move |db| read_log_blocking(db, &p, from)).await {
                Ok((events, upto, done)) => {
                    for event in events {
                        if !deliver(&tx, Ok(event)).await {
                            return;
                        }
                    }
                    last = last.max(upto);
                    if done {
                        break;
                    }
                }
                Err(e) => {
                    fail(&tx, e).await;
                    return;
                }
            }
        }
        loop {
            match sub.recv().await {
                Ok(batch) => {
                    let mut gap = false;
                    for event in batch.iter() {
                        // Already delivered from the log.
                        if event.revision <= last {
                            continue;
                        }
                        // Every write takes the next revision and is in some batch; a batch
                        // was not broadcast (its previous values could not be read): the log
                        // has it, or reports why not.
                        if event.revision != last + 1 {
                            gap = true;
                            break;
                        }
                        last = event.revision;
                        if event.kv.key.starts_with(&prefix)
                            && !deliver(&tx, Ok(event.clone())).await
                        {
                            return;
                        }
                    }
                    if gap {
                        break;
                    }
                }
                // Fell behind the in-memory backlog: the log still has it.
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => return,
            }
        }
    }
}
