//! Fan-out of "this pod's status changed" to every subscriber.

use std::sync::Mutex;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The senders of [`crate::Runtime::subscribe`]; closed receivers are
/// dropped on the next notification.
#[derive(Debug, Default)]
pub(crate) struct Subscribers {
    senders: Mutex<Vec<UnboundedSender<String>>>,
}

impl Subscribers {
    pub(crate) fn subscribe(&self) -> UnboundedReceiver<String> {
        let (tx, rx) = unbounded_channel();
        lock(&self.senders).push(tx);
        rx
    }

    pub(crate) fn notify(&self, uid: &str) {
        let mut senders = lock(&self.senders);
        senders.retain(|tx| tx.send(uid.to_string()).is_ok());
    }
}

/// Locks a mutex, going on with the data if a panicking thread poisoned it
/// (every critical section here leaves the data consistent).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
