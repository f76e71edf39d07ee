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

/// A server started with a relative `--data-dir` prints paths that work
/// from anywhere: an absolute `KUBECONFIG`, and a join line that passes the
/// token by `BERTH_JOIN_TOKEN` (not on a command line) and names the token
/// file and CA absolutely.
#[test]
fn the_printed_kubeconfig_and_join_line_are_absolute_and_keep_the_token_off_argv() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let parent = std::env::temp_dir().join(format!("berth-e2e-relative-{}", std::process::id()));
    std::fs::create_dir_all(&parent).expect("a working directory");
    let mut server = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["server", "--listen", "127.0.0.1:0", "--data-dir", "data"])
        .args(["--disable-scheduler"])
        .current_dir(&parent)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("berth server starts");
    let mut stdout = BufReader::new(server.stdout.take().expect("stdout"));
    let mut first = String::new();
    let read = stdout.read_line(&mut first);
    let mut stderr = BufReader::new(server.stderr.take().expect("stderr"));
    let mut join = String::new();
    while join.is_empty() || !join.contains("join a node") {
        join.clear();
        if stderr.read_line(&mut join).unwrap_or(0) == 0 {
            break;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&parent);
    read.expect("the first line");
    let kubeconfig = first
        .trim()
        .strip_prefix("export KUBECONFIG=")
        .unwrap_or_else(|| panic!("{first}"));
    assert_eq!(
        std::path::Path::new(kubeconfig),
        parent.join("data").join("kubeconfig.yaml"),
        "{first}"
    );
    let token_file = parent.join("data").join("join-token");
    assert!(
        join.contains(&format!(
            "BERTH_JOIN_TOKEN=$(cat {}) berth agent",
            token_file.display()
        )),
        "{join}"
    );
    assert!(!join.contains("--token"), "{join}");
    assert!(
        join.contains(&format!(
            "--ca-file {}",
            parent.join("data").join("ca.crt").display()
        )),
        "{join}"
    );
}

/// The `error: ` line of a server that exited 1.
fn failure_line(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("an error line: {stderr}"))
        .to_string()
}

/// A server that cannot listen exits 1 saying why, and says it once.
#[test]
fn a_taken_port_is_one_error_that_says_its_cause_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("its address").port();
    let data_dir = std::env::temp_dir().join(format!("berth-e2e-taken-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["server", "--disable-scheduler", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(&data_dir)
        .output()
        .expect("berth server runs");
    let _ = std::fs::remove_dir_all(&data_dir);
    let error = failure_line(&out);
    assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
    assert_eq!(
        error.matches("Address already in use").count(),
        1,
        "{error}"
    );
}

/// A second server on a data dir a running server holds exits 1 saying
/// the store is open elsewhere, once (issue 20 saw redb's "Database
/// already open" twice; berth now words it itself, and the contexts
/// around it do not repeat it).
#[test]
fn a_data_dir_in_use_is_one_error_that_says_its_cause_once() {
    let first = Server::start_blocking(
        "data-dir-in-use",
        Backend::Embedded,
        &["--disable-scheduler"],
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["server", "--disable-scheduler", "--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(&first.data_dir)
        .output()
        .expect("berth server runs");
    let error = failure_line(&out);
    assert!(error.contains("berth-store.redb"), "{error}");
    assert_eq!(error.matches("already open").count(), 1, "{error}");
    assert!(!error.contains("Database already open"), "{error}");
}

/// What an operator reads on the server's stderr at info level: a node
/// joining (the node lifecycle controller observes it) and each shutdown
/// phase.
#[test]
fn the_server_logs_a_node_joining_and_its_shutdown_phases() {
    let mut server =
        Server::start_blocking("operator-log", Backend::Embedded, &["--sim-nodes", "1"]);
    let joined = "Controller observed a new Node node=sim-000000";
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !server.log().contains(joined) {
        assert!(
            std::time::Instant::now() < deadline,
            "{joined:?} in {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, _) = server.terminate(Duration::from_secs(30));
    assert!(status.success(), "{}", server.log());
    let log = server.log();
    let phases: Vec<usize> = [
        "berth server: SIGTERM, stopping",
        "shutdown: scheduler stopped",
        "shutdown: controllers stopped",
        "shutdown: API server stopped, store closed",
        "berth server: stopped",
    ]
    .iter()
    .map(|phase| {
        log.find(phase)
            .unwrap_or_else(|| panic!("{phase:?} in {log}"))
    })
    .collect();
    assert!(phases.is_sorted(), "in order: {log}");
    assert!(
        log.lines()
            .any(|l| l.contains(" INFO ") && l.contains(joined)),
        "at info level: {log}"
    );
}
