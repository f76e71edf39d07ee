//! The responder: a task on the runtime the store was opened on that delivers committed
//! batches (reads their previous values, broadcasts their events, answers their callers), in
//! commit order, so the writer thread moves on to the next batch.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{broadcast, mpsc, oneshot};

use super::format::{LOG, be, read_kv};
use crate::error::Result;
use crate::types::{Revision, WatchEvent};

/// Committed batches the broadcast keeps for slow watchers before they must re-read the log.
pub(super) const EVENT_BACKLOG: usize = 4096;

pub(super) type Batch = Arc<[WatchEvent]>;

pub(super) type Reply = oneshot::Sender<Result<Revision>>;

/// What a committed batch still owes: its watch events and its callers' answers. Delivered
/// after the batch's fsync, events first (so a caller that saw its write acknowledged can rely
/// on watchers receiving it), in commit order.
pub(super) struct Delivery {
    /// Updates and deletes carry a placeholder previous value (only its revisions set), read
    /// from `previous` on delivery: off the writer thread, like the rest.
    pub(super) events: Vec<WatchEvent>,
    /// A snapshot taken right after the batch's commit, so later batches compacting the
    /// previous values away do not affect it; `None` if the batch replaced no value.
    pub(super) previous: Option<Result<redb::ReadTransaction>>,
    pub(super) replies: Vec<(Reply, Result<Revision>)>,
}

/// Replaces the placeholder previous values of `events` with the values in the log.
fn fill_previous(snapshot: Result<redb::ReadTransaction>, events: &mut [WatchEvent]) -> Result<()> {
    let txn = snapshot?;
    let log = txn.open_table(LOG).map_err(be)?;
    for event in events {
        if let Some(prev) = &mut event.prev_kv {
            *prev = read_kv(&log, &event.kv.key, prev.mod_revision)?;
        }
    }
    Ok(())
}

impl Delivery {
    pub(super) fn deliver(mut self, events: &broadcast::Sender<Batch>) {
        // The writes are committed whatever happens here, so their callers get Ok. If the
        // previous values cannot be read, the batch is not broadcast: watchers notice the gap
        // in revisions at the next batch and read the log, which reports the failure.
        let complete = match self.previous.take() {
            None => true,
            // Usually recently written pages in redb's cache; a rare disk read blocks this
            // delivery only, as a read on the writer thread blocked the whole store before.
            Some(snapshot) => match fill_previous(snapshot, &mut self.events) {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e, "berth-store: cannot read previous values for watchers");
                    false
                }
            },
        };
        if complete && !self.events.is_empty() {
            // No receivers is fine: nobody is watching.
            let _ = events.send(Arc::from(self.events));
        }
        for (reply, result) in self.replies {
            // The caller may have given up; its write is committed all the same.
            let _ = reply.send(result);
        }
    }
}

/// The writer's side of the responder: a task on the runtime the store was opened on that
/// delivers committed batches, so the writer thread (the store's one serial resource) starts
/// the next transaction instead of waking a batch's worth of callers and building the
/// broadcast. Without a runtime, or once the responder's runtime is gone, the writer delivers
/// itself.
pub(super) struct Responder {
    pub(super) tx: mpsc::UnboundedSender<Delivery>,
    /// Held by the responder while it drains its queue on the way out and by the writer when
    /// it delivers itself, so a batch the writer delivers cannot overtake earlier ones still
    /// in the queue.
    pub(super) order: Arc<Mutex<()>>,
}

/// The responder task's receiving end. If the task is dropped unfinished (its runtime shut
/// down while the store lives on), dropping this delivers what is still queued, so no
/// committed batch loses its events or answers.
struct ResponderQueue {
    rx: mpsc::UnboundedReceiver<Delivery>,
    events: broadcast::Sender<Batch>,
    order: Arc<Mutex<()>>,
}

impl Drop for ResponderQueue {
    fn drop(&mut self) {
        let _order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        // From here on the writer's sends fail and it delivers itself, after this drain.
        self.rx.close();
        while let Ok(delivery) = self.rx.try_recv() {
            delivery.deliver(&self.events);
        }
    }
}

/// Starts the responder on the current runtime, if it is a multi-threaded one. `done` fires
/// once it has delivered everything and dropped its broadcast sender. A current-thread runtime
/// runs tasks only while its owner drives it; the store may be used from elsewhere meanwhile
/// (another runtime, another thread), and its writes must not wait for that.
pub(super) fn spawn_responder(
    events: &broadcast::Sender<Batch>,
    done: oneshot::Sender<()>,
) -> Option<Responder> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return None;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let order = Arc::new(Mutex::new(()));
    let mut queue = ResponderQueue {
        rx,
        events: events.clone(),
        order: Arc::clone(&order),
    };
    // Not budgeted either: it answers every write and feeds every watch.
    runtime.spawn(tokio::task::unconstrained(async move {
        while let Some(delivery) = queue.rx.recv().await {
            delivery.deliver(&queue.events);
        }
        // The writer has exited: drop the broadcast sender before reporting done.
        drop(queue);
        let _ = done.send(());
    }));
    Some(Responder { tx, order })
}
