//! What the workload controllers (DaemonSet, StatefulSet) share beyond
//! berth-core's decisions: their writes behind one trait ([`writes`]),
//! adoption and release ([`claim`]), which controller an object's change
//! wakes ([`owners`]), and the workers that take keys from a
//! [`WorkQueue`] and sync them ([`run_workers`]).
//!
//! Each controller has the shape of upstream's: one task reads its
//! watches (through berth-client's `changes`) into [`crate::store::Store`]s
//! and queues the keys of the objects to sync; `--concurrent-*-syncs`
//! workers sync one key at a time each, reading the stores at the start
//! of the sync and writing through [`writes::Writes`].

pub mod claim;
pub mod owners;
pub mod writes;

use std::future::Future;
use std::sync::Arc;

use berth_client::ObjectKey;
use tokio::task::JoinSet;

use crate::workqueue::WorkQueue;

/// Why a sync failed; the key is retried after its backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Invalid(String),
}

/// A work queue key: `namespace/name` (upstream's `MetaNamespaceKeyFunc`).
pub fn queue_key(key: &ObjectKey) -> String {
    key.to_string()
}

/// The object key of a queue key.
pub fn object_key(queue_key: &str) -> ObjectKey {
    match queue_key.split_once('/') {
        Some((namespace, name)) => ObjectKey::new(namespace, name),
        None => ObjectKey::cluster(queue_key),
    }
}

/// Spawns `workers` tasks into `tasks`, each taking keys from `queue` and
/// syncing them with `sync`: a failed sync is logged and the key retried
/// after its backoff; a successful one resets the backoff (upstream's
/// `processNextWorkItem`).
pub fn run_workers<F, Fut>(
    tasks: &mut JoinSet<()>,
    controller: &'static str,
    queue: &Arc<WorkQueue>,
    workers: usize,
    sync: F,
) where
    F: Fn(ObjectKey) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), SyncError>> + Send,
{
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let sync = sync.clone();
        tasks.spawn(async move {
            loop {
                let key = queue.get().await;
                match sync(object_key(&key)).await {
                    Ok(()) => queue.forget(&key),
                    Err(err) => {
                        tracing::warn!(controller, key, %err, "sync failed, retrying");
                        queue.add_rate_limited(&key);
                    }
                }
                queue.done(&key);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keys_round_trip() {
        for key in [ObjectKey::new("default", "web"), ObjectKey::cluster("node")] {
            assert_eq!(object_key(&queue_key(&key)), key);
        }
    }
}
