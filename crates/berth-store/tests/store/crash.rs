//! Crash tests: a child process writes under load and prints every acknowledged write; we
//! SIGKILL it mid-stream and check that every acknowledged write is in the store, at its
//! revision, and that the store is consistent (the history replays to the current state).
//!
//! SIGKILL kills the process, not the machine, so this proves the store acknowledges only
//! committed writes and recovers an interrupted file; the fsync itself is redb's commit with
//! `Durability::Immediate`.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use berth_store::{EventKind, ListOptions, RedbStore, Store};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::conformance::next;
use crate::etcd_harness::EtcdServer;

const PREFIX: &str = "/registry/crash/";
/// Acknowledged writes to see before the kill.
const ACKS_BEFORE_KILL: usize = 400;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ack {
    kind: EventKind,
    key: String,
    revision: i64,
    value: Vec<u8>,
}

fn parse(line: &str) -> Option<Ack> {
    let mut parts = line.split(' ');
    if parts.next()? != "ACK" {
        return None;
    }
    let kind = match parts.next()? {
        "create" => EventKind::Created,
        "update" => EventKind::Updated,
        "delete" => EventKind::Deleted,
        _ => return None,
    };
    let key = parts.next()?.to_owned();
    let revision = parts.next()?.parse().ok()?;
    let value = match parts.next()? {
        "-" => Vec::new(),
        v => v.as_bytes().to_vec(),
    };
    Some(Ack {
        kind,
        key,
        revision,
        value,
    })
}

/// Runs the writer against `target`, kills it after enough acknowledgements, returns them all.
async fn run_and_kill(args: &[&str]) -> Vec<Ack> {
    run_and_kill_after(args, ACKS_BEFORE_KILL).await
}

/// [`run_and_kill`], killing after `acks_before_kill` acknowledgements.
async fn run_and_kill_after(args: &[&str], acks_before_kill: usize) -> Vec<Ack> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_berth-store-crash-writer"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start crash writer");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acks = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while acks.len() < acks_before_kill {
            match lines.next_line().await.expect("read child output") {
                Some(line) => {
                    acks.push(parse(&line).unwrap_or_else(|| panic!("bad line {line:?}")))
                }
                None => panic!("crash writer exited early after {} acks", acks.len()),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "crash writer too slow: {} acks in 60 s",
        acks.len()
    );
    // SIGKILL while the writers are mid-stream.
    child.start_kill().expect("kill crash writer");
    // Lines already written before the kill are acknowledged writes too.
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(ack) = parse(&line) {
            acks.push(ack);
        }
    }
    let status = child.wait().await.expect("wait crash writer");
    assert!(
        !status.success(),
        "the writer was killed, not finished: {status}"
    );
    acks
}

/// Checks acknowledged writes against the full history and the current state of `store`.
async fn check<S: Store>(store: &S, acks: &[Ack]) {
    let current = store.current_revision().await.expect("revision");
    let mut watch = store.watch(PREFIX, 0).await.expect("watch from the start");
    let mut history = BTreeMap::new();
    let mut state: BTreeMap<String, (Vec<u8>, i64)> = BTreeMap::new();
    let mut last = 0;
    while last < current {
        let e = next(&mut watch).await;
        assert!(
            e.revision > last,
            "revisions not increasing: {} after {last}",
            e.revision
        );
        last = e.revision;
        match e.kind {
            EventKind::Deleted => {
                state.remove(&e.kv.key);
            }
            _ => {
                state.insert(e.kv.key.clone(), (e.kv.value.clone(), e.revision));
            }
        }
        history.insert(e.revision, (e.kind, e.kv.key, e.kv.value));
    }
    for ack in acks {
        let found = history.get(&ack.revision);
        assert_eq!(
            found,
            Some(&(ack.kind, ack.key.clone(), ack.value.clone())),
            "acknowledged write lost or different: {ack:?}"
        );
    }
    // The replayed history is exactly the current state.
    let list = store
        .list(PREFIX, ListOptions::default())
        .await
        .expect("list");
    let listed: BTreeMap<String, (Vec<u8>, i64)> = list
        .items
        .into_iter()
        .map(|kv| (kv.key, (kv.value, kv.mod_revision)))
        .collect();
    assert_eq!(
        listed, state,
        "history does not replay to the current state"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_keeps_every_acknowledged_write_after_sigkill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 temp path");
    let acks = run_and_kill(&["redb", path]).await;
    let store = RedbStore::open(dir.path()).expect("reopen after crash");
    store.verify().await.expect("file invariants after crash");
    check(&store, &acks).await;
    // And it keeps working: the next write gets the next revision.
    let before = store.current_revision().await.expect("revision");
    let r = store
        .create("/registry/crash/after/k", b"x".to_vec())
        .await
        .expect("write");
    assert_eq!(r, before + 1);
    store.close().await.expect("close");
}

/// The redb backend checkpoints its key index every 4,096 revisions; killed after more writes
/// than that, reopening loads the checkpoint and replays the log after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_keeps_every_acknowledged_write_after_sigkill_between_checkpoints() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 temp path");
    let acks = run_and_kill_after(&["redb", path], 5_000).await;
    let store = RedbStore::open(dir.path()).expect("reopen after crash");
    let report = store
        .verify_report()
        .await
        .expect("file invariants after crash");
    assert!(
        report.checkpoint > 0,
        "the writer checkpointed before the kill: {report:?}"
    );
    check(&store, &acks).await;
    store.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_keeps_every_acknowledged_write_after_sigkill_of_the_writer() {
    let etcd = EtcdServer::start().await;
    let acks = run_and_kill(&["etcd", &etcd.endpoint]).await;
    let store = etcd.store().await;
    check(&store, &acks).await;
}
