//! redb-specific behaviour: reopening, refusing foreign or corrupt files, group commit, and
//! compaction that does not stall writers.

use std::time::{Duration, Instant};

use berth_store::{ListOptions, RedbStore, Store, StoreError};

use crate::redb_store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_keeps_data_and_the_revision_counter() {
    let (dir, store) = redb_store().await;
    let r1 = store
        .create("/registry/pods/ns/a", b"1".to_vec())
        .await
        .unwrap();
    let r2 = store
        .update("/registry/pods/ns/a", b"2".to_vec(), r1)
        .await
        .unwrap();
    let r3 = store
        .create("/registry/pods/ns/b", b"b".to_vec())
        .await
        .unwrap();
    store.delete("/registry/pods/ns/b", r3).await.unwrap();
    store.compact(r2).await.unwrap();
    store.close().await.unwrap();
    assert!(matches!(
        store.get("/registry/pods/ns/a").await,
        Err(StoreError::Closed)
    ));

    let store = RedbStore::open(dir.path()).unwrap();
    assert_eq!(store.current_revision().await.unwrap(), r3 + 1);
    assert_eq!(store.compacted_revision(), r2);
    let a = store.get("/registry/pods/ns/a").await.unwrap().unwrap();
    assert_eq!((a.value.as_slice(), a.mod_revision), (&b"2"[..], r2));
    assert_eq!(
        store.create("/registry/pods/ns/c", vec![]).await.unwrap(),
        r3 + 2
    );
    store.verify().await.unwrap();
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_or_foreign_files_fail_to_open_naming_the_path() {
    let foreign_redb = |path: &std::path::Path| {
        let db = redb::Database::create(path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("theirs");
            txn.open_table(def).unwrap().insert("k", "v").unwrap();
        }
        txn.commit().unwrap();
    };
    type MakeFile = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, MakeFile)> = vec![
        (
            "garbage bytes",
            Box::new(|p| std::fs::write(p, vec![0xA5u8; 64 * 1024]).unwrap()),
        ),
        (
            "a text file",
            Box::new(|p| std::fs::write(p, "hello, I am not a database\n").unwrap()),
        ),
        ("another program's redb file", Box::new(foreign_redb)),
    ];
    for (name, make) in cases {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(berth_store::REDB_FILE_NAME);
        make(&file);
        let err = match RedbStore::open(dir.path()) {
            Ok(_) => panic!("{name}: opened as a store"),
            Err(e) => e,
        };
        assert!(matches!(err, StoreError::Open { .. }), "{name}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&file.display().to_string()), "{name}: {msg}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_an_open_store_fails_clearly() {
    let (dir, store) = redb_store().await;
    let err = match RedbStore::open(dir.path()) {
        Ok(_) => panic!("opened twice"),
        Err(e) => e,
    };
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_commits() {
    let (_dir, store) = redb_store().await;
    let writes = futures::future::join_all((0..256).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .create(&format!("/registry/pods/ns/p{i}"), vec![0; 1024])
                .await
        })
    }))
    .await;
    assert!(writes.iter().all(|w| matches!(w, Ok(Ok(_)))));
    let stats = store.stats();
    assert_eq!(stats.writes, 256);
    assert!(
        stats.commits * 4 <= stats.writes,
        "group commit did not batch: {stats:?}"
    );
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_does_not_stall_writers() {
    let (_dir, store) = redb_store().await;
    // Build a long history: 200 keys updated 40 times (8,000 log records).
    let keys: Vec<String> = (0..200)
        .map(|i| format!("/registry/pods/ns/p{i}"))
        .collect();
    let mut revs = futures::future::join_all(keys.iter().map(|k| store.create(k, vec![1; 256])))
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    for _ in 0..39 {
        revs = futures::future::join_all(
            keys.iter()
                .zip(&revs)
                .map(|(k, r)| store.update(k, vec![2; 256], *r)),
        )
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    }
    for i in 0..20 {
        store
            .create(&format!("/registry/pods/base/b{i}"), vec![])
            .await
            .unwrap();
    }
    let current = store.current_revision().await.unwrap();
    store.compact(current).await.unwrap();
    // Keep writing while compaction runs, so it is interleaved with write batches.
    for i in 0..100 {
        store
            .create(&format!("/registry/pods/during/d{i}"), vec![])
            .await
            .unwrap();
    }
    // Physical compaction finishes in the background; poll its progress, bounded.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let report = store.verify_report().await.unwrap();
        if report.log_records == report.live_keys {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "compaction did not finish: {report:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Compaction ran inside the writer, between write batches. How long one
    // slice may hold the writer (the 10 ms goal) is a timing figure: the
    // store benchmark reports it (`longest_compaction_slice`); a test on a
    // loaded 2-core machine cannot assert wall-clock bounds.
    let slice = store.stats().longest_compaction_slice;
    assert!(slice > Duration::ZERO, "compaction never ran");
    assert_eq!(
        store
            .list("/registry/pods/", ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        320
    );
    store.close().await.unwrap();
}

/// What a SIGKILL would leave: a copy of the file taken while the store is open and idle
/// (every write acknowledged, so committed and fsync'd; the writer has not closed the file or
/// checkpointed at exit). Opened in a directory of its own.
fn crash_copy(dir: &tempfile::TempDir) -> (tempfile::TempDir, RedbStore) {
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join(berth_store::REDB_FILE_NAME),
        copy.path().join(berth_store::REDB_FILE_NAME),
    )
    .unwrap();
    let store = RedbStore::open(copy.path()).unwrap();
    (copy, store)
}

/// Writes `rounds` rounds over `keys` keys concurrently (so they share commits): creates,
/// updates and every seventh change a delete (re-created the next round).
async fn churn(store: &RedbStore, prefix: &str, keys: usize, rounds: usize) {
    let names: Vec<String> = (0..keys).map(|i| format!("{prefix}k{i}")).collect();
    let mut revs: Vec<Option<i64>> = vec![None; keys];
    for round in 0..rounds {
        let results = futures::future::join_all(names.iter().zip(&revs).enumerate().map(
            |(i, (key, rev))| async move {
                let value = format!("{key}@{round}").into_bytes();
                match rev {
                    None => store.create(key, value).await.map(Some),
                    Some(r) if (round + i) % 7 == 0 => store.delete(key, *r).await.map(|_| None),
                    Some(r) => store.update(key, value, *r).await.map(Some),
                }
            },
        ))
        .await;
        revs = results.into_iter().collect::<Result<_, _>>().unwrap();
    }
}

async fn assert_same_state(a: &RedbStore, b: &RedbStore, prefix: &str, at: Option<i64>) {
    let options = ListOptions {
        revision: at,
        ..ListOptions::default()
    };
    let la = a.list(prefix, options.clone()).await.unwrap();
    let lb = b.list(prefix, options).await.unwrap();
    assert_eq!(la.revision, lb.revision);
    assert_eq!(la.items, lb.items, "state at {at:?} differs");
    if at.is_none() {
        for kv in &la.items {
            assert_eq!(b.get(&kv.key).await.unwrap().as_ref(), Some(kv));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_checkpoints_replays_the_log_tail() {
    let (dir, store) = redb_store().await;
    // 64 keys × 80 rounds = 5,120 writes: past the first checkpoint (4,096), with a tail.
    churn(&store, "/registry/pods/ns/", 64, 80).await;
    let report = store.verify_report().await.unwrap();
    assert!(
        report.checkpoint > 0 && report.checkpoint < report.revision,
        "expected a checkpoint and a log tail after it: {report:?}"
    );

    let (_copy, crashed) = crash_copy(&dir);
    let after = crashed.verify_report().await.unwrap();
    assert_eq!(after.revision, report.revision);
    assert_eq!(
        after.checkpoint, report.checkpoint,
        "opening replays, not checkpoints"
    );
    assert_eq!(after.live_keys, report.live_keys);
    assert_same_state(&store, &crashed, "/registry/pods/", None).await;
    // Reads in the past, before and after the checkpoint, too.
    for at in [
        report.checkpoint - 100,
        report.checkpoint,
        report.checkpoint + 1,
    ] {
        assert_same_state(&store, &crashed, "/registry/pods/", Some(at)).await;
    }
    // The history replayed by a watch is the same.
    let from = report.checkpoint - 10;
    let mut wa = store.watch("/registry/pods/", from).await.unwrap();
    let mut wb = crashed.watch("/registry/pods/", from).await.unwrap();
    for _ in from..report.revision {
        assert_eq!(
            crate::conformance::next(&mut wa).await,
            crate::conformance::next(&mut wb).await
        );
    }
    // And the replayed index takes writes: conflicts and revisions as before the crash.
    let live = crashed
        .list("/registry/pods/", ListOptions::default())
        .await
        .unwrap();
    let first = &live.items[0];
    assert!(matches!(
        crashed
            .update(&first.key, b"x".to_vec(), first.mod_revision - 1)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        crashed
            .update(&first.key, b"x".to_vec(), first.mod_revision)
            .await
            .unwrap(),
        report.revision + 1
    );
    crashed.verify().await.unwrap();
    crashed.close().await.unwrap();

    // A clean close checkpoints: the next open replays nothing.
    store.close().await.unwrap();
    let reopened = RedbStore::open(dir.path()).unwrap();
    let clean = reopened.verify_report().await.unwrap();
    assert_eq!(clean.checkpoint, clean.revision);
    assert_eq!(clean.revision, report.revision);
    reopened.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_past_the_checkpoint_then_a_crash_loses_nothing() {
    let (dir, store) = redb_store().await;
    churn(&store, "/registry/pods/ns/", 40, 20).await;
    let before = store.verify_report().await.unwrap();
    assert_eq!(before.checkpoint, 0, "no checkpoint yet: {before:?}");
    // Compacting past the checkpoint checkpoints first, so physical compaction (which drops
    // delete records and replaced values) never removes what a replay needs.
    let compacted = before.revision;
    store.compact(compacted).await.unwrap();
    let report = store.verify_report().await.unwrap();
    assert!(report.checkpoint >= compacted, "{report:?}");
    // Wait until physical compaction is done, then change things again (deletes included).
    let deadline = Instant::now() + Duration::from_secs(20);
    while {
        let r = store.verify_report().await.unwrap();
        r.log_records != r.live_keys
    } {
        assert!(Instant::now() < deadline, "compaction did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    churn(&store, "/registry/pods/other/", 10, 10).await;
    // Delete and update keys whose history was compacted.
    let old = store
        .list("/registry/pods/ns/", ListOptions::default())
        .await
        .unwrap();
    for (i, kv) in old.items.iter().enumerate() {
        if i % 2 == 0 {
            store.delete(&kv.key, kv.mod_revision).await.unwrap();
        } else {
            store
                .update(&kv.key, b"new".to_vec(), kv.mod_revision)
                .await
                .unwrap();
        }
    }
    let report = store.verify_report().await.unwrap();

    let (_copy, crashed) = crash_copy(&dir);
    crashed.verify().await.unwrap();
    assert_eq!(crashed.compacted_revision(), compacted);
    assert_eq!(crashed.current_revision().await.unwrap(), report.revision);
    assert_same_state(&store, &crashed, "/registry/pods/", None).await;
    assert_same_state(&store, &crashed, "/registry/pods/", Some(compacted)).await;
    assert!(matches!(
        crashed
            .list(
                "/registry/pods/",
                ListOptions {
                    revision: Some(compacted - 1),
                    ..ListOptions::default()
                }
            )
            .await,
        Err(StoreError::Gone { .. })
    ));
    crashed.close().await.unwrap();
    store.close().await.unwrap();
}

/// Rewrites `berth_meta` entries of a closed store's file with redb directly.
fn set_meta(dir: &tempfile::TempDir, set: &[(&str, Option<i64>)]) {
    let db = redb::Database::create(dir.path().join(berth_store::REDB_FILE_NAME)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let def: redb::TableDefinition<&str, i64> = redb::TableDefinition::new("berth_meta");
        let mut meta = txn.open_table(def).unwrap();
        for (name, value) in set {
            match value {
                Some(v) => meta.insert(*name, *v).unwrap(),
                None => meta.remove(*name).unwrap(),
            };
        }
    }
    txn.commit().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_1_files_are_upgraded_and_bad_checkpoints_refused() {
    let (dir, store) = redb_store().await;
    churn(&store, "/registry/pods/ns/", 8, 5).await;
    let before = store
        .list("/registry/pods/", ListOptions::default())
        .await
        .unwrap();
    store.close().await.unwrap();
    // Format 1 kept `berth_kv` exact at every commit and had no checkpoint revision; a closed
    // format-2 store has its checkpoint at the current revision, so this is such a file.
    set_meta(&dir, &[("format", Some(1)), ("checkpoint", None)]);
    let store = RedbStore::open(dir.path()).unwrap();
    let report = store.verify_report().await.unwrap();
    assert_eq!(report.checkpoint, report.revision);
    let after = store
        .list("/registry/pods/", ListOptions::default())
        .await
        .unwrap();
    assert_eq!(before, after);
    store.close().await.unwrap();

    // A checkpoint past the current revision is refused at open, naming the file.
    set_meta(&dir, &[("checkpoint", Some(report.revision + 1))]);
    let err = match RedbStore::open(dir.path()) {
        Ok(_) => panic!("opened a file whose checkpoint is in the future"),
        Err(e) => e,
    };
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(
        err.to_string().contains(berth_store::REDB_FILE_NAME),
        "{err}"
    );
}

/// Where a test opened its store, for the delivery paths of committed batches.
#[derive(Debug, Clone, Copy)]
enum OpenedOn {
    /// The multi-threaded runtime that then uses it: a responder task delivers.
    TheRuntimeUsingIt,
    /// No runtime: the writer thread delivers.
    NoRuntime,
    /// A current-thread runtime, gone since: the writer thread delivers (a current-thread
    /// runtime runs a responder only while its owner drives it).
    ACurrentThreadRuntime,
    /// A multi-threaded runtime that ran a responder and has shut down since: the writer
    /// takes over from it.
    ARuntimeShutDownSince,
}

fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn writes_are_answered_and_watched_in_order_whatever_runtime_opened_the_store() {
    let cases = [
        OpenedOn::TheRuntimeUsingIt,
        OpenedOn::NoRuntime,
        OpenedOn::ACurrentThreadRuntime,
        OpenedOn::ARuntimeShutDownSince,
    ];
    for opened_on in cases {
        let dir = tempfile::tempdir().unwrap();
        let runtime = multi_thread_runtime();
        let store = match opened_on {
            OpenedOn::TheRuntimeUsingIt => runtime.block_on(async { RedbStore::open(dir.path()) }),
            OpenedOn::NoRuntime => RedbStore::open(dir.path()),
            OpenedOn::ACurrentThreadRuntime => tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(async { RedbStore::open(dir.path()) }),
            OpenedOn::ARuntimeShutDownSince => {
                let other = multi_thread_runtime();
                let store = other.block_on(async { RedbStore::open(dir.path()) });
                if let Ok(store) = &store {
                    let first = other.block_on(store.create("/registry/pods/ns/first", vec![1]));
                    assert_eq!(first.unwrap(), 1, "{opened_on:?}");
                }
                drop(other);
                store
            }
        }
        .unwrap();
        runtime.block_on(async {
            let start = store.current_revision().await.unwrap();
            let mut all = store.watch("/registry/", start).await.unwrap();
            crate::conformance::watch_orders_events_from_concurrent_writers(&store).await;
            store.verify().await.unwrap();
            store.close().await.unwrap();
            // Closing delivers every committed batch before watches end.
            let mut last = start;
            while let Some(event) = all.next_event().await {
                let event = event.unwrap();
                assert_eq!(event.revision, last + 1, "{opened_on:?}");
                last = event.revision;
            }
            assert_eq!(last, start + 200, "{opened_on:?}");
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_keeps_reads_and_writes_recover_once_space_is_freed() {
    use berth_store::StoreHealth;
    use berth_store::testing::SmallDisk;
    let disk = SmallDisk::mount(16 << 20).unwrap_or_else(|e| panic!("{e}"));
    let data_dir = disk.path().join("data");
    let store = RedbStore::open(&data_dir).unwrap();
    let value = vec![b'x'; 100 * 1024];
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let key = format!("/registry/configmaps/ns/before-{i}");
        acknowledged.push((
            key.clone(),
            store.create(&key, value.clone()).await.unwrap(),
        ));
    }
    // Fill what is left, then write until the disk refuses.
    let filler = disk.path().join("filler");
    SmallDisk::fill(&filler, 64 << 20).unwrap();
    let mut failure = None;
    for i in 0..200 {
        let key = format!("/registry/configmaps/ns/after-{i}");
        match store.create(&key, value.clone()).await {
            Ok(revision) => acknowledged.push((key, revision)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let failure = failure.expect("a write fails once the disk is full");
    assert!(
        failure.to_string().contains("No space left on device"),
        "{failure}"
    );
    assert!(
        matches!(store.health(), StoreHealth::Degraded(_)),
        "{:?}",
        store.health()
    );
    // Writes are refused while the disk is full; reads keep working and lose nothing.
    let refused = store
        .create("/registry/configmaps/ns/refused", value.clone())
        .await
        .expect_err("still refused");
    assert!(
        matches!(refused, StoreError::Unavailable(_) | StoreError::Backend(_)),
        "{refused}"
    );
    for (key, revision) in &acknowledged {
        let kv = store
            .get(key)
            .await
            .unwrap()
            .expect("acknowledged write kept");
        assert_eq!(kv.mod_revision, *revision);
    }
    let listed = store
        .list("/registry/configmaps/", ListOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), acknowledged.len());
    // Space freed: writes succeed again without a restart, revisions go on.
    std::fs::remove_file(&filler).unwrap();
    let last = acknowledged.last().map(|(_, r)| *r).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let revision = loop {
        match store
            .create("/registry/configmaps/ns/after-space", value.clone())
            .await
        {
            Ok(revision) => break revision,
            Err(e) => {
                assert!(Instant::now() < deadline, "writes never recovered: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    assert_eq!(
        revision,
        last + 1,
        "the next revision after the last acknowledged one"
    );
    assert_eq!(store.health(), StoreHealth::Healthy);
    store.verify().await.unwrap();
    store.close().await.unwrap();
    // Everything acknowledged is there after a clean reopen too.
    let store = RedbStore::open(&data_dir).unwrap();
    for (key, revision) in &acknowledged {
        assert_eq!(
            store.get(key).await.unwrap().map(|kv| kv.mod_revision),
            Some(*revision)
        );
    }
    store.close().await.unwrap();
}
