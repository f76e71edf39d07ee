//! What the DaemonSet and StatefulSet controllers share beyond berth-core's
//! decisions and the crate's [`crate::cache`] and [`crate::work_queue`]:
//! their writes behind one trait with a recording fake, so their syncs
//! are tested call by call ([`writes`]); adoption and release through it,
//! once per object per sync ([`claim`]); which controller an object's
//! change wakes, for any owner kind ([`owners`]).
//!
//! Each controller has the shape of upstream's: one task reads its
//! watches (berth-client's `changes_of`) into [`crate::cache::ObjectCache`]s
//! and queues the keys of the objects to sync; `--concurrent-*-syncs`
//! workers sync one key at a time each, reading the caches at the start
//! of the sync and writing through [`writes::Writes`].

pub mod claim;
pub mod owners;
pub mod writes;

use std::future::Future;
use std::sync::Arc;

use berth_client::ObjectKey;
use tokio::task::JoinSet;

use crate::sync_error::SyncError;
use crate::work_queue::{WorkQueue, run_workers};

/// A controller whose keys the workers sync (its `sync`, on a copy of
/// its shared state).
pub trait SyncsKeys: Clone + Send + Sync + 'static {
    fn sync_key(
        &self,
        key: ObjectKey,
    ) -> impl Future<Output = Result<(), SyncError>> + Send + use<Self>;
}

/// Starts `controller`'s workers (`workers` of them, syncing keys of
/// `queue`) once its caches have `synced`, and only once.
pub fn start_workers_once<C: SyncsKeys>(
    running: &mut JoinSet<()>,
    synced: bool,
    name: &'static str,
    queue: &Arc<WorkQueue>,
    workers: usize,
    controller: &C,
) {
    if running.is_empty() && synced {
        tracing::info!(controller = name, "Caches are synced");
        let controller = controller.clone();
        running.spawn(run_workers(
            name,
            queue.clone(),
            workers,
            None,
            move |key| controller.sync_key(key),
        ));
    }
}
