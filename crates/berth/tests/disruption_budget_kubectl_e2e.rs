//! PodDisruptionBudgets against concurrent drains, with the real kubectl
//! (v1.37, `common::kubectl`) and a real `berth server --sim-nodes 5`: a
//! 3-replica Deployment (one replica per node, by required anti-affinity)
//! under a `minAvailable: 2` budget, two `kubectl drain`s of nodes carrying
//! replicas started at the same time. The eviction subresource lets one
//! eviction through per allowed disruption and refuses the other with a
//! 429 that kubectl retries until the replacement is Ready; a `kubectl get
//! --watch` of the replicas, read event by event, shows the number of
//! Ready replicas never below 2.

mod common;

use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::kubectl::{Cluster, kubectl_binary};
use common::{Backend, Server};
use serde_json::Value;

const NODES: usize = 5;
const REPLICAS: usize = 3;
const MIN_AVAILABLE: usize = 2;

/// How long the test waits on the watch for a state before it fails (a
/// safety net: the watch wakes the test on each event).
const WAIT: Duration = Duration::from_secs(120);

const BUDGET: &str = "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
";

/// Three replicas, never two on one node (so each drain evicts one).
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
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels: {app: web}
      containers:
      - name: nginx
        image: nginx:1
";

/// Whether a pod counts as a Ready replica: Ready=True and not on its way
/// out (the disruption controller's and the ReplicaSet's reading: a pod
/// with a deletionTimestamp is no longer available).
fn ready(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// What the watch saw after one event.
struct Sample {
    /// Ready replicas.
    ready: usize,
    /// The pod the event deleted, if it was a deletion.
    deleted: Option<String>,
}

/// `kubectl get pods -l app=web --watch --output-watch-events -o json`:
/// after each event, the number of Ready replicas, sent on the channel.
/// Every state change of every replica is an event, so the counts sent
/// are every count the cluster went through (no sampling interval).
fn watch_ready_replicas(cluster: &Cluster) -> (Child, mpsc::Receiver<Sample>) {
    let mut child = Command::new(kubectl_binary())
        .args(["get", "pods", "-l", "app=web", "--watch"])
        .args(["--output-watch-events", "-o", "json"])
        .env("KUBECONFIG", &cluster.server.kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get --watch runs");
    let stdout = child.stdout.take().expect("kubectl's stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut replicas: BTreeMap<String, bool> = BTreeMap::new();
        let events = serde_json::Deserializer::from_reader(BufReader::new(stdout)).into_iter();
        for event in events {
            let Ok(event) = event else { return };
            let event: Value = event;
            let object = &event["object"];
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let deleted = if event["type"] == "DELETED" {
                replicas.remove(&name);
                Some(name)
            } else {
                replicas.insert(name, ready(object));
                None
            };
            let ready = replicas.values().filter(|r| **r).count();
            if tx.send(Sample { ready, deleted }).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// Reads the watch until `ready` replicas are Ready after every pod of
/// `gone` was deleted; every Ready count read.
fn counts_until(
    samples: &mpsc::Receiver<Sample>,
    ready: usize,
    gone: &[String],
    what: &str,
) -> Vec<usize> {
    let mut seen = Vec::new();
    let mut pending: Vec<&String> = gone.iter().collect();
    loop {
        match samples.recv_timeout(WAIT) {
            Ok(sample) => {
                seen.push(sample.ready);
                pending.retain(|p| sample.deleted.as_ref() != Some(*p));
                if pending.is_empty() && sample.ready == ready {
                    return seen;
                }
            }
            Err(e) => panic!("{what}: {e} after counts {seen:?}, {pending:?} not deleted"),
        }
    }
}

/// The Ready replicas as (node, pod), sorted.
fn replicas(cluster: &Cluster) -> Vec<(String, String)> {
    let pods = cluster.json(&["get", "pods", "-l", "app=web"]);
    let mut replicas: Vec<(String, String)> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| ready(p))
        .filter_map(|p| {
            Some((
                p["spec"]["nodeName"].as_str()?.to_string(),
                p["metadata"]["name"].as_str()?.to_string(),
            ))
        })
        .collect();
    replicas.sort();
    replicas
}

/// `kubectl drain NODE` in a process of its own, started now.
fn start_drain(cluster: &Cluster, node: &str) -> Child {
    Command::new(kubectl_binary())
        .args([
            "drain",
            node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
        ])
        .arg("--timeout=180s")
        .env("KUBECONFIG", &cluster.server.kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl drain runs")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn two_concurrent_drains_never_leave_fewer_ready_replicas_than_min_available() {
    kubectl_binary();
    let nodes = NODES.to_string();
    let cluster = Cluster {
        server: Server::start_blocking("pdb-drains", Backend::Embedded, &["--sim-nodes", &nodes]),
    };
    cluster.apply(BUDGET);
    cluster.apply(WEB);
    cluster.ok(&["rollout", "status", "deploy/web", "--timeout=90s"]);
    let spread = replicas(&cluster);
    assert_eq!(spread.len(), REPLICAS, "{spread:?}");
    spread
        .windows(2)
        .for_each(|w| assert_ne!(w[0].0, w[1].0, "one Ready replica a node"));
    // The budget's status caught up: one disruption allowed.
    cluster.ok(&[
        "wait",
        "--for=jsonpath={.status.disruptionsAllowed}=1",
        "pdb/web",
        "--timeout=60s",
    ]);

    let (mut watch, samples) = watch_ready_replicas(&cluster);
    counts_until(
        &samples,
        REPLICAS,
        &[],
        "the watch sees the 3 Ready replicas",
    );

    let drained = [spread[0].0.clone(), spread[1].0.clone()];
    let evicted = [spread[0].1.clone(), spread[1].1.clone()];
    let drains: Vec<Child> = drained.iter().map(|n| start_drain(&cluster, n)).collect();
    let outputs: Vec<Output> = drains
        .into_iter()
        .map(|d| d.wait_with_output().expect("kubectl drain ends"))
        .collect();
    for (node, out) in drained.iter().zip(&outputs) {
        let said = said(out);
        assert!(out.status.success(), "drain {node} failed:\n{said}");
        assert!(said.contains(&format!("node/{node} drained")), "{said}");
        assert!(said.contains("evicted"), "{said}");
    }
    // Read on until both evicted replicas are gone (the drains waited for
    // that) and 3 are Ready again: every count in between.
    let during = counts_until(
        &samples,
        REPLICAS,
        &evicted,
        "both evicted replicas deleted and 3 Ready again",
    );
    let _ = watch.kill();
    let _ = watch.wait();

    let min = during.iter().copied().min().unwrap_or(REPLICAS);
    assert!(
        min >= MIN_AVAILABLE,
        "Ready replicas fell to {min} (counts seen: {during:?})"
    );
    // The drains did take replicas away (one at a time).
    assert_eq!(min, MIN_AVAILABLE, "counts seen: {during:?}");
    let now = replicas(&cluster);
    assert!(
        now.iter().all(|(n, _)| !drained.contains(n)),
        "replicas back off the drained nodes: {now:?}"
    );
    // Each drain took its replica: the count dipped twice.
    let dips = during
        .windows(2)
        .filter(|w| w[0] > MIN_AVAILABLE && w[1] == MIN_AVAILABLE)
        .count()
        + usize::from(during.first() == Some(&MIN_AVAILABLE));
    assert_eq!(dips, 2, "counts seen: {during:?}");
    // Whether one drain met the budget's refusal (and retried) depends on
    // how fast the first replacement became Ready; say what happened.
    let refused = outputs
        .iter()
        .filter(|o| {
            said(o).contains("Cannot evict pod as it would violate the pod's disruption budget.")
        })
        .count();
    eprintln!("drains refused at least once: {refused}; Ready counts: {during:?}");
}
