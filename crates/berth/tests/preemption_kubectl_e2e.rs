//! Priority and preemption with the real kubectl (v1.37,
//! `common::kubectl`) against `berth server --sim-nodes 1`: PriorityClasses
//! made with kubectl, a node filled with low-priority pods, a high-priority
//! pod that preempts the lowest of them and lands, a `preemptionPolicy:
//! Never` pod of the same priority that stays Pending with upstream's
//! message, and a pod with a priority but no class refused as upstream's
//! Priority admission refuses it.

mod common;

use std::time::{Duration, Instant};

use common::kubectl::{Cluster, kubectl_binary};
use common::{Backend, Server};
use serde_json::Value;

const NODE: &str = "sim-000000";

/// Polls `check` every 100 ms for up to 60 s.
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within 60 s");
}

/// [`eventually`], showing the pods and events when it fails.
fn eventually_or_dump(cluster: &Cluster, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let pods = cluster.kubectl(&["get", "pods", "-o", "yaml"]);
    let events = cluster.kubectl(&["get", "events"]);
    panic!(
        "{what}: not within 60 s\n{}\n{}",
        String::from_utf8_lossy(&pods.stdout),
        String::from_utf8_lossy(&events.stdout)
    );
}

/// The node's allocatable cpu in millicores.
fn allocatable_milli_cpu(cluster: &Cluster) -> i64 {
    let node = cluster.json(&["get", "node", NODE]);
    let cpu = node["status"]["allocatable"]["cpu"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match cpu.strip_suffix('m') {
        Some(milli) => milli.parse().unwrap_or(0),
        None => cpu.parse::<i64>().unwrap_or(0) * 1000,
    }
}

fn pod(name: &str, class: &str, milli_cpu: i64) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  priorityClassName: {class}
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10
    resources:
      requests:
        cpu: {milli_cpu}m
"
    )
}

fn pod_json(cluster: &Cluster, name: &str) -> Value {
    cluster.json(&["get", "pod", name])
}

fn node_of(cluster: &Cluster, name: &str) -> String {
    pod_json(cluster, name)["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn exists(cluster: &Cluster, name: &str) -> bool {
    cluster
        .kubectl(&["get", "pod", name, "--ignore-not-found", "-o", "name"])
        .stdout
        .starts_with(b"pod/")
}

fn scheduled_condition_message(cluster: &Cluster, name: &str) -> String {
    pod_json(cluster, name)["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PodScheduled")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_high_priority_pod_preempts_the_lowest_victims_and_a_never_pod_waits() {
    kubectl_binary();
    let cluster = Cluster {
        server: Server::start_blocking(
            "preemption-kubectl",
            Backend::Embedded,
            &["--sim-nodes", "1"],
        ),
    };
    eventually("the simulated node is Ready", || {
        cluster
            .kubectl(&[
                "get",
                "node",
                NODE,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ])
            .stdout
            == b"True"
    });
    cluster.apply(
        "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: lowest}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-never}
value: 1000
preemptionPolicy: Never
",
    );
    // Two pods fill the node to 80 %; the high pod asks for half of it,
    // so one must go: the lowest (the other is reprieved).
    let cpu = allocatable_milli_cpu(&cluster);
    assert!(cpu > 0, "allocatable cpu of {NODE}");
    cluster.apply(&pod("lowest", "lowest", cpu * 4 / 10));
    cluster.apply(&pod("low", "low", cpu * 4 / 10));
    for name in ["lowest", "low"] {
        eventually(&format!("{name} is bound"), || {
            node_of(&cluster, name) == NODE
        });
    }
    assert_eq!(pod_json(&cluster, "lowest")["spec"]["priority"], 10);

    cluster.apply(&pod("high", "high", cpu / 2));
    eventually_or_dump(&cluster, "high is bound after its victim went", || {
        node_of(&cluster, "high") == NODE
    });
    assert!(!exists(&cluster, "lowest"), "the lowest pod was preempted");
    assert!(exists(&cluster, "low"), "the other low pod was reprieved");
    let preempted: Value = cluster.json(&["get", "events", "--field-selector", "reason=Preempted"]);
    let preempted: Vec<(String, String)> = preempted["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["involvedObject"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let high_uid = pod_json(&cluster, "high")["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        preempted,
        [(
            "lowest".to_string(),
            format!("Preempted by pod {high_uid} on node {NODE}")
        )]
    );

    // A pod of the same priority that may not preempt stays Pending, and
    // says why as upstream does; the low pod stays.
    cluster.apply(&pod("never", "high-never", cpu / 2));
    eventually("never is refused", || {
        scheduled_condition_message(&cluster, "never").contains("preemption:")
    });
    assert_eq!(
        scheduled_condition_message(&cluster, "never"),
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(pod_json(&cluster, "never")["status"]["phase"], "Pending");
    assert_eq!(node_of(&cluster, "never"), "");
    assert!(
        exists(&cluster, "low"),
        "nothing was preempted for the Never pod"
    );
    assert_eq!(
        pod_json(&cluster, "never")["spec"]["preemptionPolicy"],
        "Never"
    );
}

#[test]
fn a_pod_with_a_priority_but_no_class_is_refused_as_upstream() {
    kubectl_binary();
    let cluster = Cluster::start("priority-without-class", Backend::Embedded);
    let error = cluster.fails(&[
        "run",
        "pinned",
        "--image=registry.k8s.io/pause:3.10",
        "--overrides={\"spec\":{\"priority\":1000}}",
    ]);
    assert_eq!(
        error.trim(),
        "Error from server (Forbidden): pods \"pinned\" is forbidden: the integer value of priority (1000) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
    );
}
