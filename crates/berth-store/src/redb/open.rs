//! Opening the file: a new one is initialized, an existing one checked (a berth store of a
//! known format) and its key index rebuilt; a file not closed cleanly is repaired by redb.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use redb::{Database, TableHandle};

use super::format::{
    FORMAT_EXACT_INDEX, FORMAT_VERSION, KV, LOG, META, META_CHECKPOINT, META_COMPACTED,
    META_CURSOR, META_FORMAT, META_REVISION, meta_get,
};
use super::index::{IndexMap, rebuild_index};
use crate::error::Result;

/// redb's page cache unless told otherwise: redb's own default.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Name of the database file inside the data directory.
pub const FILE_NAME: &str = "berth-store.redb";

/// How long a reopen waits for the last read transactions on the old handle (they keep the
/// file locked) before it counts as failed.
const REOPEN_WAIT: Duration = Duration::from_secs(5);

/// The database handle readers and the writer use; the reason there is none once the store is
/// closed (so closing can release the file deterministically: readers hold the lock only for the
/// duration of one read) or while it is being reopened after a storage failure.
pub(super) type DbCell = RwLock<Result<Arc<Database>>>;

pub(super) struct Loaded {
    pub(super) revision: i64,
    pub(super) compacted: i64,
    pub(super) cursor: i64,
    pub(super) checkpoint: i64,
    pub(super) index: IndexMap,
    pub(super) dirty: BTreeSet<Arc<str>>,
}

/// Initializes a new file, or checks that an existing one is a berth store of a known format
/// and rebuilds its key index (checkpoint plus log replay).
fn init_or_check(db: &Database) -> std::result::Result<Loaded, String> {
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    let tables: Vec<String> = txn
        .list_tables()
        .map_err(|e| e.to_string())?
        .map(|h| h.name().to_owned())
        .collect();
    let multimap_tables = txn
        .list_multimap_tables()
        .map_err(|e| e.to_string())?
        .count();
    if tables.is_empty() && multimap_tables == 0 {
        // A brand-new file: create the tables and metadata in one durable transaction.
        {
            txn.open_table(KV).map_err(|e| e.to_string())?;
            txn.open_table(LOG).map_err(|e| e.to_string())?;
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            for (name, value) in [
                (META_FORMAT, FORMAT_VERSION),
                (META_REVISION, 0),
                (META_COMPACTED, 0),
                (META_CURSOR, 1),
                (META_CHECKPOINT, 0),
            ] {
                meta.insert(name, value).map_err(|e| e.to_string())?;
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
        return Ok(Loaded {
            revision: 0,
            compacted: 0,
            cursor: 1,
            checkpoint: 0,
            index: IndexMap::new(),
            dirty: BTreeSet::new(),
        });
    }
    for name in ["berth_meta", "berth_kv", "berth_log"] {
        if !tables.iter().any(|t| t == name) {
            return Err(format!(
                "the file is a redb database but not a berth store (table {name} is missing)"
            ));
        }
    }
    let (loaded, upgrade) = {
        let meta = txn.open_table(META).map_err(|e| e.to_string())?;
        let get = |name: &str| meta_get(&meta, name).map_err(|e| e.to_string());
        let format = get(META_FORMAT)?;
        let revision = get(META_REVISION)?;
        let compacted = get(META_COMPACTED)?;
        let cursor = get(META_CURSOR)?;
        let (checkpoint, upgrade) = match format {
            FORMAT_VERSION => (get(META_CHECKPOINT)?, false),
            // `berth_kv` is exact at the current revision: a checkpoint there.
            FORMAT_EXACT_INDEX => (revision, true),
            _ => {
                return Err(format!(
                    "unsupported berth store format {format} (this build reads \
                     {FORMAT_EXACT_INDEX} and {FORMAT_VERSION})"
                ));
            }
        };
        if !(0 <= compacted && compacted <= checkpoint && checkpoint <= revision) {
            return Err(format!(
                "corrupt metadata: compacted {compacted}, checkpoint {checkpoint}, \
                 revision {revision}"
            ));
        }
        let kv = txn.open_table(KV).map_err(|e| e.to_string())?;
        let log = txn.open_table(LOG).map_err(|e| e.to_string())?;
        let (index, dirty) =
            rebuild_index(&kv, &log, checkpoint, revision).map_err(|e| e.to_string())?;
        let loaded = Loaded {
            revision,
            compacted,
            cursor,
            checkpoint,
            index,
            dirty,
        };
        (loaded, upgrade)
    };
    if upgrade {
        {
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            for (name, value) in [
                (META_FORMAT, FORMAT_VERSION),
                (META_CHECKPOINT, loaded.checkpoint),
            ] {
                meta.insert(name, value).map_err(|e| e.to_string())?;
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
    } else {
        txn.abort().map_err(|e| e.to_string())?;
    }
    Ok(loaded)
}

/// Why the file could not be opened.
#[derive(Debug)]
pub(super) enum OpenError {
    /// Another handle (in this process: read transactions on the handle being replaced) has it.
    AlreadyOpen,
    Other(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::AlreadyOpen => f.write_str("the file is already open"),
            OpenError::Other(reason) => f.write_str(reason),
        }
    }
}

/// Opens (or creates) the file and rebuilds the key index, saying so in the log: whether redb
/// had to repair the file (it was not closed cleanly) and how many log records were replayed
/// after the checkpoint (none after a clean close).
pub(super) fn open_file(
    path: &Path,
    cache_bytes: usize,
) -> std::result::Result<(Database, Loaded), OpenError> {
    let repaired = Arc::new(AtomicBool::new(false));
    let mut builder = Database::builder();
    builder.set_cache_size(cache_bytes);
    {
        let repaired = Arc::clone(&repaired);
        let path = path.to_owned();
        builder.set_repair_callback(move |_| {
            if !repaired.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    path = %path.display(),
                    "berth-store: the file was not closed cleanly; redb is repairing it"
                );
            }
        });
    }
    let db = builder.create(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::AlreadyOpen,
        other => OpenError::Other(other.to_string()),
    })?;
    let loaded = init_or_check(&db).map_err(OpenError::Other)?;
    tracing::info!(
        path = %path.display(),
        revision = loaded.revision,
        checkpoint = loaded.checkpoint,
        replayed = loaded.revision - loaded.checkpoint,
        repaired = repaired.load(Ordering::Relaxed),
        "berth-store: opened"
    );
    Ok((db, loaded))
}

/// Opens the file again after a storage failure. Read transactions still open on the old
/// handle keep the file locked for a moment: waits up to [`REOPEN_WAIT`] for them.
pub(super) fn reopen_file(
    path: &Path,
    cache_bytes: usize,
) -> std::result::Result<(Database, Loaded), OpenError> {
    let deadline = Instant::now() + REOPEN_WAIT;
    loop {
        match open_file(path, cache_bytes) {
            Err(OpenError::AlreadyOpen) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            opened => return opened,
        }
    }
}
