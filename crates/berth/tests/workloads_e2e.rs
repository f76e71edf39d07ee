//! A Deployment's life with the real kubectl (v1.37) against a real
//! `berth server --sim-nodes 3` (simulated nodes: pods become Running and
//! Ready as soon as they are bound): apply, `rollout status`, `set image`,
//! `rollout history`, `rollout undo`, `scale`, `rollout pause`/`resume`,
//! `rollout restart`. A kube-rs watch of the namespace's pods checks every
//! state it sees against the Deployment's maxSurge and maxUnavailable and
//! counts the pods created.

mod common;

use std::time::{Duration, Instant};

use berth_core::clock::Clock;
use berth_testing::pod_history::PodHistory;
use serde_json::Value;

use common::kubectl::{Cluster, kubectl_binary};
use common::{Backend, Server};

const MANIFEST: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    kubernetes.io/change-cause: first
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
";

/// The Deployment's container image, as kubectl shows it.
fn image(cluster: &Cluster) -> String {
    cluster.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ])
}

fn rollout_status(cluster: &Cluster) -> String {
    cluster.ok(&["rollout", "status", "deployment/web", "--timeout=90s"])
}

/// The ReplicaSets' (revision, replicas, image), by revision.
fn replica_sets(cluster: &Cluster) -> Vec<(i64, i64, String)> {
    let list = cluster.json(&["get", "replicasets"]);
    let mut out: Vec<(i64, i64, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|rs| {
            let revision = rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            (
                revision,
                rs["spec"]["replicas"].as_i64().unwrap_or(-1),
                rs["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Polls `check` for up to `within`.
fn eventually(what: &str, within: Duration, check: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn count_events(cluster: &Cluster, reason: &str) -> usize {
    let events: Value = cluster.json(&[
        "get",
        "events",
        "--field-selector",
        &format!("reason={reason}"),
    ]);
    events["items"].as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_rolls_out_rolls_back_scales_pauses_and_restarts_with_kubectl() {
    let server = Server::start("workloads", Backend::Embedded, &["--sim-nodes", "3"]).await;
    let client = server.client().await;
    let (history, watch) = PodHistory::watch(client, "default", Clock::real());
    let watching = tokio::spawn(watch);
    kubectl_binary();
    let cluster = Cluster { server };
    // kubectl blocks; the watch goes on on the other worker.
    tokio::task::block_in_place(|| walkthrough(&cluster, &history));
    watching.abort();
}

fn walkthrough(cluster: &Cluster, history: &PodHistory) {
    eventually("3 Ready nodes", Duration::from_secs(60), || {
        let nodes = cluster.json(&["get", "nodes"]);
        let ready = nodes["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| {
                let untainted = n["spec"]["taints"].as_array().is_none_or(Vec::is_empty);
                let ready = n["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                untainted && ready
            })
            .count();
        ready == 3
    });

    // Created and rolled out.
    cluster.apply(MANIFEST);
    let out = rollout_status(cluster);
    assert!(
        out.contains("deployment \"web\" successfully rolled out"),
        "{out}"
    );
    assert_eq!(history.pods_created(), 4);
    let first_done = history.snapshots().len();

    // A new image, rolled within maxSurge 1 and maxUnavailable 1.
    cluster.ok(&[
        "set",
        "image",
        "deployment/web",
        "web=registry.example/web:2",
    ]);
    let out = rollout_status(cluster);
    assert!(out.contains("successfully rolled out"), "{out}");
    assert_eq!(
        replica_sets(cluster),
        vec![
            (1, 0, "registry.example/web:1".to_string()),
            (2, 4, "registry.example/web:2".to_string())
        ]
    );
    let history_out = cluster.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history_out
        .lines()
        .skip_while(|l| !l.starts_with("REVISION"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(revisions, vec!["1", "2"], "{history_out}");
    assert!(
        history_out.contains("first"),
        "the change-cause: {history_out}"
    );
    let revision_one = cluster.ok(&["rollout", "history", "deployment/web", "--revision=1"]);
    assert!(
        revision_one.contains("registry.example/web:1"),
        "{revision_one}"
    );

    // Back to the first image: revision 1 becomes revision 3.
    let out = cluster.ok(&["rollout", "undo", "deployment/web"]);
    assert!(out.contains("rolled back"), "{out}");
    rollout_status(cluster);
    assert_eq!(image(cluster), "registry.example/web:1");
    assert_eq!(
        replica_sets(cluster),
        vec![
            (2, 0, "registry.example/web:2".to_string()),
            (3, 4, "registry.example/web:1".to_string())
        ]
    );

    // Scaled through /scale.
    let before_scale = history.snapshots().len();
    cluster.ok(&["scale", "deployment/web", "--replicas=6"]);
    rollout_status(cluster);
    eventually("6 ready pods", Duration::from_secs(60), || {
        history.snapshots().last().is_some_and(|s| s.ready() == 6)
    });

    // Paused: a new template makes no ReplicaSet until resumed.
    cluster.ok(&["rollout", "pause", "deployment/web"]);
    cluster.ok(&[
        "set",
        "image",
        "deployment/web",
        "web=registry.example/web:3",
    ]);
    eventually("the pause observed", Duration::from_secs(30), || {
        let d = cluster.json(&["get", "deployment", "web"]);
        d["status"]["observedGeneration"] == d["metadata"]["generation"]
    });
    let paused = cluster.json(&["get", "deployment", "web"]);
    let progressing = paused["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Progressing")
        .cloned()
        .unwrap_or_default();
    assert_eq!(progressing["reason"], "DeploymentPaused", "{paused}");
    assert_eq!(replica_sets(cluster).len(), 2, "no ReplicaSet while paused");
    cluster.ok(&["rollout", "resume", "deployment/web"]);
    rollout_status(cluster);
    assert_eq!(
        replica_sets(cluster).last(),
        Some(&(4, 6, "registry.example/web:3".to_string()))
    );

    // Restarted: the template's restartedAt annotation makes revision 5.
    cluster.ok(&["rollout", "restart", "deployment/web"]);
    eventually("a fifth revision", Duration::from_secs(30), || {
        replica_sets(cluster)
            .iter()
            .any(|(revision, ..)| *revision == 5)
    });
    rollout_status(cluster);
    eventually("only the restarted pods", Duration::from_secs(60), || {
        let pods = cluster.json(&["get", "pods"]);
        pods["items"].as_array().map_or(0, Vec::len) == 6
    });

    // At every state the watch saw: at most replicas + maxSurge pods
    // active and at least replicas - maxUnavailable ready (4 replicas,
    // then 6 from the first state with 6 ready pods on).
    let snapshots = history.snapshots();
    let six = before_scale
        + snapshots[before_scale..]
            .iter()
            .position(|s| s.ready() == 6)
            .unwrap_or(0);
    for s in &snapshots[..before_scale] {
        assert!(s.active() <= 4 + 1, "more than replicas + maxSurge: {s:?}");
    }
    for s in &snapshots[first_done..before_scale] {
        assert!(
            s.ready() >= 4 - 1,
            "fewer than replicas - maxUnavailable: {s:?}"
        );
    }
    for s in &snapshots[six..] {
        assert!(s.active() <= 6 + 1, "more than replicas + maxSurge: {s:?}");
        assert!(
            s.ready() >= 6 - 1,
            "fewer than replicas - maxUnavailable: {s:?}"
        );
    }
    // 4, then 4 for each of the image change and the undo, 2 for the
    // scale, 6 for each of the resume and the restart: each pod once.
    assert_eq!(history.pods_created(), 26);
    assert_eq!(count_events(cluster, "SuccessfulCreate"), 26);
    let names = history.pod_names();
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), names.len(), "a pod name used twice");
}
