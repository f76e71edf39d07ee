//! Issue 20's table, the rows of figures and logs: the real kubectl v1.37
//! (`common::kubectl`) against `berth server --sim-nodes 2`. `kubectl top`
//! finds `metrics.k8s.io` in discovery and prints each simulated node's
//! and pod's figures (their requests with seeded noise); `kubectl logs`
//! of a pod on a simulated node prints its made-up output, and asks that
//! cannot be answered get upstream's 400, never a 500.
//!
//! The table's other rows have their tests in `kubectl_e2e.rs`:
//! `create ns` and `get all`, `cluster-info`, `auth can-i` (and
//! `--list`), `auth whoami` in `core_types_and_access_reviews_with_real_kubectl`;
//! `explain` and `apply --validate` in
//! `explain_and_validation_read_the_openapi_documents`.

mod common;

use common::kubectl::Cluster;
use common::{Backend, eventually};

/// Rows of whitespace-separated columns.
fn table(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// A CPU figure as kubectl prints it (`251m`), in millicores.
fn millicores(figure: &str) -> u64 {
    figure
        .strip_suffix('m')
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("not millicores: {figure}"))
}

/// A memory figure as kubectl prints it (`63Mi`), in MiB.
fn mebibytes(figure: &str) -> u64 {
    figure
        .strip_suffix("Mi")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("not MiB: {figure}"))
}

const PODS: &str = "apiVersion: v1
kind: Pod
metadata:
  name: small
  namespace: shop
  labels: {tier: web}
spec:
  containers:
  - name: app
    image: nginx:1
    resources:
      requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: big
  namespace: shop
  labels: {tier: db}
spec:
  containers:
  - name: db
    image: postgres:17
    resources:
      requests: {cpu: '1', memory: 1Gi}
  - name: sidecar
    image: busybox
";

#[test]
fn kubectl_top_and_logs_work_on_simulated_nodes() {
    let cluster = Cluster::start_with("top-logs", Backend::Embedded, &["--sim-nodes", "2"]);
    cluster.ok(&["create", "ns", "shop"]);
    cluster.apply(PODS);
    cluster.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/small",
        "pod/big",
        "-n",
        "shop",
        "--timeout=60s",
    ]);

    // kubectl top nodes: every simulated node, upstream's columns.
    let nodes = table(&cluster.ok(&["top", "nodes"]));
    assert_eq!(
        nodes[0],
        ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"],
        "{nodes:?}"
    );
    let names: Vec<&str> = nodes[1..].iter().map(|r| r[0].as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["sim-000000", "sim-000001"], "{nodes:?}");
    for row in &nodes[1..] {
        // A node's own system (100m, 512Mi) and its pods', within the
        // noise; of 32 cores and 256Gi.
        let (cpu, memory) = (millicores(&row[1]), mebibytes(&row[3]));
        assert!((80..=1500).contains(&cpu), "{row:?}");
        assert!((400..=2000).contains(&memory), "{row:?}");
        assert!(row[2].ends_with('%') && row[4].ends_with('%'), "{row:?}");
    }

    // kubectl top pods -A: both pods, each near its requests.
    let pods = table(&cluster.ok(&["top", "pods", "-A"]));
    assert_eq!(
        pods[0],
        ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"],
        "{pods:?}"
    );
    let row = |name: &str| {
        pods.iter()
            .find(|r| r.get(1).map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("{name} in {pods:?}"))
            .clone()
    };
    let small = row("small");
    assert_eq!(small[0], "shop");
    assert!((80..=120).contains(&millicores(&small[2])), "{small:?}");
    assert!((51..=77).contains(&mebibytes(&small[3])), "{small:?}");
    // The sidecar has no request: an idle container's 1m and 8Mi. Each is
    // within ±20 %, so at most 1,200m + 1.2m, which kubectl rounds up to 1,202m.
    let big = row("big");
    assert!((800..=1202).contains(&millicores(&big[2])), "{big:?}");
    assert!((819..=1239).contains(&mebibytes(&big[3])), "{big:?}");

    // kubectl top pod NAME, and a label selector with --sort-by.
    let one = table(&cluster.ok(&["top", "pod", "big", "-n", "shop", "--containers"]));
    assert_eq!(
        one[0],
        ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"],
        "{one:?}"
    );
    let containers: Vec<&str> = one[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(containers, ["db", "sidecar"], "{one:?}");
    let sorted = table(&cluster.ok(&["top", "pod", "-n", "shop", "--sort-by=memory"]));
    let order: Vec<&str> = sorted[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(order, ["big", "small"], "{sorted:?}");
    let selected = table(&cluster.ok(&["top", "pod", "-n", "shop", "-l", "tier=web"]));
    assert_eq!(selected.len(), 2, "{selected:?}");
    assert_eq!(selected[1][0], "small", "{selected:?}");
    let missing = cluster.fails(&["top", "pod", "nope", "-n", "shop"]);
    assert!(
        missing.contains("podmetrics.metrics.k8s.io \"shop/nope\" not found"),
        "{missing}"
    );

    // kubectl logs of a pod on a simulated node: its made-up lines.
    let logs = cluster.ok(&["logs", "small", "-n", "shop"]);
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 3, "{logs}");
    assert!(
        lines[0].starts_with("starting nginx:1 (container app of pod shop/small, simulated by berth on node sim-00000"),
        "{logs}"
    );
    assert_eq!(
        cluster.ok(&["logs", "small", "-n", "shop"]),
        logs,
        "the same every time"
    );
    assert_eq!(
        cluster
            .ok(&["logs", "small", "-n", "shop", "--tail=1"])
            .trim(),
        "ready"
    );
    let stamped = cluster.ok(&["logs", "big", "-c", "db", "-n", "shop", "--timestamps"]);
    assert!(
        stamped
            .lines()
            .all(|l| l.split(' ').next().is_some_and(|t| t.ends_with('Z'))),
        "{stamped}"
    );
    // What cannot be answered: upstream's 400s.
    let previous = cluster.fails(&["logs", "small", "-n", "shop", "--previous"]);
    assert!(
        previous.contains("previous terminated container \"app\" in pod \"small\" not found"),
        "{previous}"
    );
    // (kubectl logs picks a pod's first container itself: asked raw.)
    let choose = cluster.fails(&["get", "--raw", "/api/v1/namespaces/shop/pods/big/log"]);
    assert!(
        choose.contains(
            "a container name must be specified for pod big, choose one of: [db sidecar]"
        ),
        "{choose}"
    );
}

/// The nodes of a `berth sim fleet` process are reached as real agents
/// are: the fleet serves their kubelet endpoints over HTTPS and each node
/// advertises that address, so `kubectl top` and `kubectl logs` answer for
/// them too (before, each was left out of `top` after a timeout and its
/// logs were a 500).
#[test]
fn kubectl_top_and_logs_reach_the_nodes_of_a_fleet_process() {
    let cluster = Cluster::start_with("top-logs-fleet", Backend::Embedded, &[]);
    let mut fleet = cluster.server.sim_fleet("far-", 1);
    eventually("the fleet's node is Ready", || {
        cluster
            .ok(&["get", "nodes", "--no-headers"])
            .lines()
            .any(|l| l.starts_with("far-000000 ") && l.contains(" Ready "))
    });
    let address = cluster.json(&["get", "node", "far-000000"])["status"]["addresses"][0].clone();
    assert_eq!(address["type"], "InternalIP");
    assert_eq!(address["address"], "127.0.0.1");
    cluster.ok(&["create", "ns", "shop"]);
    cluster.apply(PODS);
    cluster.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/small",
        "-n",
        "shop",
        "--timeout=60s",
    ]);

    let nodes = table(&cluster.ok(&["top", "node", "far-000000"]));
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert!((80..=1500).contains(&millicores(&nodes[1][1])), "{nodes:?}");
    let pods = table(&cluster.ok(&["top", "pod", "small", "-n", "shop"]));
    assert!((80..=120).contains(&millicores(&pods[1][1])), "{pods:?}");

    let logs = cluster.ok(&["logs", "small", "-n", "shop"]);
    assert!(
        logs.starts_with("starting nginx:1 (container app of pod shop/small, simulated by berth on node far-000000"),
        "{logs}"
    );
    let previous = cluster.fails(&["logs", "small", "-n", "shop", "--previous"]);
    assert!(
        previous.contains("previous terminated container \"app\" in pod \"small\" not found"),
        "{previous}"
    );
    fleet.kill().expect("stop the fleet");
    fleet.wait().expect("reap the fleet");
}
