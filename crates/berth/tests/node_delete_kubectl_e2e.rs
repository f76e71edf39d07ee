//! A node deleted with the real kubectl (v1.37) takes its pods and its
//! Lease with it (issue 19): `berth server --sim-nodes 2` plus one more
//! simulated node, `doomed-000000`, in a `berth sim fleet` process of its
//! own, so that the node can go away as a machine does (its process
//! killed) before an admin runs `kubectl delete node`.
//!
//! What removes what, as upstream: the node's Lease is owned by its Node,
//! so the garbage collector deletes it; the pods bound to the missing node
//! are deleted by the pod garbage collector after its quarantine; the
//! Deployment's ReplicaSet replaces them, and the scheduler puts the new
//! ones on the remaining nodes.
//!
//! The pod garbage collector's period (20 s) and quarantine (40 s) are
//! upstream constants; the server is started with berth's
//! `--pod-gc-check-period 1s --pod-gc-quarantine-time 2s` so this test
//! takes seconds, not a minute (the decision itself, quarantine included,
//! is pinned by the pod GC's own tables in berth-controllers).

mod common;

use common::kubectl::{Cluster, kubectl_binary};
use common::{Backend, Server, eventually};

const DOOMED: &str = "doomed-000000";

const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1
";

/// The names and nodes of the Deployment's pods not being deleted, and
/// whether each is Running and Ready.
fn web_pods(cluster: &Cluster) -> Vec<(String, String, bool)> {
    let pods = cluster.json(&["get", "pods", "-l", "app=web"]);
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            let ready = p["status"]["phase"] == "Running"
                && p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (
                p["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                p["spec"]["nodeName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                ready,
            )
        })
        .collect()
}

/// Nodes Ready and without taints (the not-ready taint admission puts on a
/// new node lifted).
fn schedulable_nodes(cluster: &Cluster) -> Vec<String> {
    let nodes = cluster.json(&["get", "nodes"]);
    let mut names: Vec<String> = nodes["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["spec"]["taints"].as_array().is_none_or(Vec::is_empty))
        .filter(|n| {
            n["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// A node with three of a Deployment's pods on it is shut down, then
/// deleted with `kubectl delete node`: its Lease goes (garbage collector:
/// the Node owns it), its pods go (pod garbage collector), and the
/// Deployment's three replicas come back Running and Ready on the two
/// other nodes.
#[test]
fn a_deleted_node_takes_its_pods_and_lease_and_the_replicas_come_back_elsewhere() {
    kubectl_binary();
    let cluster = Cluster {
        server: Server::start_blocking(
            "node-delete",
            Backend::Embedded,
            &[
                "--sim-nodes",
                "2",
                "--pod-gc-check-period",
                "1s",
                "--pod-gc-quarantine-time",
                "2s",
            ],
        ),
    };
    let mut fleet = cluster.server.sim_fleet("doomed-", 1);
    eventually("three schedulable nodes", || {
        schedulable_nodes(&cluster).len() == 3
    });

    // Only the doomed node takes the Deployment's pods.
    cluster.ok(&["cordon", "sim-000000", "sim-000001"]);
    cluster.apply(WEB);
    cluster.ok(&["rollout", "status", "deploy/web", "--timeout=60s"]);
    let before = web_pods(&cluster);
    assert_eq!(before.len(), 3, "{before:?}");
    assert!(
        before
            .iter()
            .all(|(_, node, ready)| node == DOOMED && *ready),
        "all three Running and Ready on {DOOMED}: {before:?}"
    );
    let node_uid = cluster.json(&["get", "node", DOOMED])["metadata"]["uid"].clone();
    let lease = cluster.json(&["get", "lease", DOOMED, "-n", "kube-node-lease"]);
    assert_eq!(
        lease["metadata"]["ownerReferences"][0]["uid"], node_uid,
        "the Lease is owned by its Node: {lease}"
    );

    // The machine goes away (a live kubelet would create its Lease again),
    // the other nodes take pods again, and the admin deletes the Node.
    fleet.kill().expect("kill the doomed node's fleet");
    fleet.wait().expect("reap the doomed node's fleet");
    cluster.ok(&["uncordon", "sim-000000", "sim-000001"]);
    let out = cluster.ok(&["delete", "node", DOOMED]);
    assert!(out.contains(&format!("node \"{DOOMED}\" deleted")), "{out}");

    eventually("the Lease deleted with its Node", || {
        let out = cluster.kubectl(&["get", "lease", DOOMED, "-n", "kube-node-lease"]);
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains(&format!(
                "leases.coordination.k8s.io \"{DOOMED}\" not found"
            ))
    });
    eventually("the pods of the deleted node deleted", || {
        let names: Vec<String> = cluster
            .ok(&["get", "pods", "-o", "name"])
            .lines()
            .map(str::to_string)
            .collect();
        before
            .iter()
            .all(|(name, _, _)| !names.contains(&format!("pod/{name}")))
    });
    // By the pod garbage collector, as orphans (upstream's metric).
    let metrics = cluster.ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "pod_gc_collector_force_delete_pods_total{namespace=\"default\",reason=\"orphaned\"} 3"
        )),
        "{}",
        metrics
            .lines()
            .filter(|l| l.starts_with("pod_gc_collector"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eventually(
        "three replicas Running and Ready on the other nodes",
        || {
            let pods = web_pods(&cluster);
            pods.len() == 3
                && pods
                    .iter()
                    .all(|(_, node, ready)| node.starts_with("sim-") && *ready)
        },
    );
    cluster.ok(&["rollout", "status", "deploy/web", "--timeout=60s"]);
    let nodes = cluster.ok(&["get", "nodes", "-o", "name"]);
    assert!(!nodes.contains(DOOMED), "{nodes}");
}
