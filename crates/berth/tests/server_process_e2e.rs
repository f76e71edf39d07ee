//! `berth server` as a supervisor runs it: SIGTERM stops it gracefully
//! (exit 0, watches ended, the store closed, so the next start replays and
//! repairs nothing), and it raises its own open-file limit.

mod common;

use std::time::Duration;

use common::{Backend, Server};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams, WatchParams};

/// The soft and hard open-file limits of a process, from /proc.
fn open_files_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("/proc limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[3].to_string(), fields[4].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_server_gracefully_and_the_next_start_replays_nothing() {
    // A soft limit below the hard one, inherited by the server.
    let mut limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.current = Some(1024.min(limit.maximum.unwrap_or(1024)));
    rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
        .expect("lower this test's soft open-file limit");

    let mut first = Server::start("sigterm", Backend::Embedded, &[]).await;
    let (soft, hard) = open_files_limit(first.pid());
    assert_eq!(
        soft, hard,
        "the server raised its soft open-file limit to the hard one"
    );

    let client = first.client().await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    for i in 0..20 {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("p{i}")},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }))
        .expect("pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create");
    }
    // A watch in flight when the signal comes: it ends, it does not hold
    // the shutdown up.
    let mut watch = pods
        .watch(&WatchParams::default().timeout(290), "0")
        .await
        .expect("watch")
        .boxed();
    let watching = tokio::spawn(async move { while watch.next().await.is_some() {} });

    let (status, took) = tokio::task::block_in_place(|| first.terminate(Duration::from_secs(20)));
    assert!(status.success(), "exit status {status}: {}", first.log());
    assert!(took < Duration::from_secs(10), "stopping took {took:?}");
    tokio::time::timeout(Duration::from_secs(5), watching)
        .await
        .expect("the watch ended with the server")
        .expect("watch task");
    let log = first.log();
    assert!(
        log.contains("SIGTERM, stopping") && log.contains("stopped"),
        "{log}"
    );
    let data_dir = first.data_dir.clone();
    drop(first);

    let second = Server::start_in(data_dir, Backend::Embedded, &[]).await;
    let log = second.log();
    let opened = log
        .lines()
        .find(|l| l.contains("berth-store: opened"))
        .unwrap_or_else(|| panic!("no store open line: {log}"));
    assert!(
        opened.contains("replayed=0") && opened.contains("repaired=false"),
        "the store was not closed cleanly: {opened}"
    );
    assert!(!log.contains("repairing"), "{log}");
    let pods: Api<Pod> = Api::namespaced(second.client().await, "default");
    let listed = pods.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items.len(), 20, "every pod is still there");
}
