//! Load generator for the crash tests: writes to a store from several tasks and prints one line
//! per acknowledged write, `ACK <op> <key> <revision> <value>`, flushed before the next write.
//! The test kills it with SIGKILL and checks every printed write survived.
//!
//! Usage: `berth-store-crash-writer redb <data-dir>` or `berth-store-crash-writer etcd <url>`.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use berth_store::{AnyStore, EtcdStore, RedbStore, Store};

const WRITERS: usize = 8;
/// Keys per writer: small, so updates and deletes happen, not only creates.
const KEYS: usize = 8;

async fn writer(store: AnyStore, id: usize) -> Result<(), String> {
    let mut revs: HashMap<usize, i64> = HashMap::new();
    for j in 0u64.. {
        let slot = (j as usize) % KEYS;
        let key = format!("/registry/crash/w{id}/k{slot}");
        let value = format!("w{id}-{j}");
        let (op, result) = match revs.get(&slot).copied() {
            None => (
                "create",
                store.create(&key, value.clone().into_bytes()).await,
            ),
            Some(rev) if j % 5 == 4 => ("delete", store.delete(&key, rev).await),
            Some(rev) => (
                "update",
                store.update(&key, value.clone().into_bytes(), rev).await,
            ),
        };
        let rev = result.map_err(|e| format!("{op} {key}: {e}"))?;
        if op == "delete" {
            revs.remove(&slot);
        } else {
            revs.insert(slot, rev);
        }
        let shown = if op == "delete" { "-" } else { value.as_str() };
        // One write(2) per line (well under PIPE_BUF), so a kill never leaves half a line.
        let line = format!("ACK {op} {key} {rev} {shown}\n");
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let store = match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("redb"), Some(dir)) => RedbStore::open(dir).map(AnyStore::Redb),
        (Some("etcd"), Some(url)) => EtcdStore::connect(&[url]).await.map(AnyStore::Etcd),
        _ => {
            eprintln!("usage: berth-store-crash-writer (redb <data-dir> | etcd <url>)");
            return ExitCode::from(2);
        }
    };
    let store = match store {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open: {e}");
            return ExitCode::from(1);
        }
    };
    let tasks: Vec<_> = (0..WRITERS)
        .map(|id| tokio::spawn(writer(store.clone(), id)))
        .collect();
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("write failed: {e}");
                return ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("writer task: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
