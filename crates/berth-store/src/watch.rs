//! The stream a watch returns, common to both backends.
//!
//! Each backend runs one task per watch that feeds a bounded channel; the consumer reads it
//! through [`WatchStream`]. Dropping the stream aborts the task, which ends the backend watch.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::error::{Result, StoreError};
use crate::types::WatchEvent;

/// Events buffered per watch before the producer waits. Large enough to absorb bursts, small
/// enough that a stuck consumer costs bounded memory (the redb backend then falls back to
/// reading its log, etcd applies its own flow control).
pub(crate) const WATCH_BUFFER: usize = 1024;

/// A live watch: yields events in revision order. After an error (for example
/// [`StoreError::Gone`] when the watch fell behind compaction) it yields nothing more.
pub struct WatchStream {
    rx: mpsc::Receiver<Result<WatchEvent>>,
    task: Option<AbortHandle>,
    finished: bool,
}

impl WatchStream {
    pub(crate) fn new(rx: mpsc::Receiver<Result<WatchEvent>>, task: AbortHandle) -> Self {
        WatchStream {
            rx,
            task: Some(task),
            finished: false,
        }
    }

    /// The next event; `None` once the watch has ended (store closed, or after an error).
    pub async fn next_event(&mut self) -> Option<Result<WatchEvent>> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<WatchEvent>>> {
        if self.finished {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Err(e))) => {
                self.finished = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                self.finished = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }
}

impl futures::Stream for WatchStream {
    type Item = Result<WatchEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx)
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Sends one item to the consumer; `false` when the consumer is gone and the producer should
/// stop.
pub(crate) async fn deliver(
    tx: &mpsc::Sender<Result<WatchEvent>>,
    item: Result<WatchEvent>,
) -> bool {
    tx.send(item).await.is_ok()
}

/// Convenience for producers that end with an error.
pub(crate) async fn fail(tx: &mpsc::Sender<Result<WatchEvent>>, e: StoreError) {
    let _ = tx.send(Err(e)).await;
}
