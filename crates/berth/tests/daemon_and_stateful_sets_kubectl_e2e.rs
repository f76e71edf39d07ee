//! DaemonSets and StatefulSets with the real kubectl (v1.37,
//! `common::kubectl`) against a real `berth server --sim-nodes 3`: the
//! scheduler, the controllers and three simulated nodes whose pods become
//! Running and Ready at once, so `kubectl rollout status` sees each rollout
//! finish. The DaemonSet sections of the seed's "Taints and Tolerations"
//! (and the DaemonSet note of "Nodes") as a user would walk them, and a
//! StatefulSet scaled and rolled with a partition.

mod common;

use std::time::{Duration, Instant};

use common::kubectl::{Cluster, kubectl_binary};
use common::{Backend, Server};

/// A server running the scheduler, the controllers and `nodes` simulated
/// nodes (`sim-000000`, ...).
fn with_sim_nodes(name: &str, nodes: usize) -> Cluster {
    kubectl_binary();
    let nodes = nodes.to_string();
    Cluster {
        server: Server::start_blocking(name, Backend::Embedded, &["--sim-nodes", &nodes]),
    }
}

/// The nodes a workload's (`app=NAME`) Running and Ready pods are on,
/// sorted.
fn ready_pod_nodes(cluster: &Cluster, app: &str) -> Vec<String> {
    let pods = cluster.json(&["get", "pods", "-l", &format!("app={app}")]);
    let mut nodes: Vec<String> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| p["status"]["phase"] == "Running")
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
        .collect();
    nodes.sort();
    nodes
}

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

const FLUENTD: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd
spec:
  selector:
    matchLabels: {app: fluentd}
  template:
    metadata:
      labels: {app: fluentd}
    spec:
      containers:
      - name: fluentd
        image: fluentd:v1
";

/// The DaemonSet sections of the seed's "Taints and Tolerations" (and the
/// DaemonSet note of "Nodes"), with the real kubectl against `berth server
/// --sim-nodes 3`: a DaemonSet skips the node tainted `key1=value1:NoSchedule`,
/// its pods carry the automatic tolerations the page lists, tolerate a
/// cordoned node, and a toleration added to the template reaches the
/// tainted node; `kubectl rollout status ds/...` succeeds at each step.
#[test]
fn daemon_sets_on_tainted_nodes_with_real_kubectl() {
    let cluster = with_sim_nodes("daemonsets", 3);
    cluster.ok(&["taint", "nodes", "sim-000001", "key1=value1:NoSchedule"]);
    assert_eq!(
        cluster.apply(FLUENTD).trim(),
        "daemonset.apps/fluentd created"
    );
    let status = cluster.ok(&["rollout", "status", "ds/fluentd", "--timeout=60s"]);
    assert!(
        status.contains("daemon set \"fluentd\" successfully rolled out"),
        "{status}"
    );
    assert_eq!(
        ready_pod_nodes(&cluster, "fluentd"),
        ["sim-000000", "sim-000002"]
    );

    // The automatic tolerations, as the page lists them: NoExecute for
    // not-ready and unreachable without tolerationSeconds; NoSchedule for
    // memory, disk and PID pressure and unschedulable; network-unavailable
    // only for host-network pods.
    let pods = cluster.json(&["get", "pods", "-l", "app=fluentd"]);
    for pod in pods["items"].as_array().into_iter().flatten() {
        let tolerations = pod["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let has = |key: &str, effect: &str| {
            tolerations.iter().any(|t| {
                t["key"] == key
                    && t["effect"] == effect
                    && t["operator"] == "Exists"
                    && t["tolerationSeconds"].is_null()
            })
        };
        for (key, effect) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            assert!(has(key, effect), "{key}:{effect} in {tolerations:?}");
        }
        assert!(
            !has("node.kubernetes.io/network-unavailable", "NoSchedule"),
            "not for a pod-network pod"
        );
        assert!(
            pod["spec"]["affinity"]["nodeAffinity"].is_object(),
            "placed by affinity"
        );
    }

    // A cordoned node keeps its daemon pod, and a new DaemonSet (here a
    // host-network one) still gets a pod there.
    cluster.ok(&["cordon", "sim-000000"]);
    let host_network = FLUENTD.replace("fluentd", "netd").replace(
        "    spec:\n      containers:",
        "    spec:\n      hostNetwork: true\n      containers:",
    );
    cluster.apply(&host_network);
    cluster.ok(&["rollout", "status", "ds/netd", "--timeout=60s"]);
    assert_eq!(
        ready_pod_nodes(&cluster, "netd"),
        ["sim-000000", "sim-000002"]
    );
    assert_eq!(
        ready_pod_nodes(&cluster, "fluentd"),
        ["sim-000000", "sim-000002"]
    );
    let netd = cluster.json(&["get", "pods", "-l", "app=netd"]);
    let tolerations = netd["items"][0]["spec"]["tolerations"].to_string();
    assert!(
        tolerations.contains("node.kubernetes.io/network-unavailable"),
        "{tolerations}"
    );

    // A toleration for the taint: the DaemonSet rolls onto sim-000001.
    cluster.ok(&[
        "patch",
        "ds",
        "fluentd",
        "--type=strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"tolerations":[{"key":"key1","operator":"Equal","value":"value1","effect":"NoSchedule"}]}}}}"#,
    ]);
    cluster.ok(&["rollout", "status", "ds/fluentd", "--timeout=60s"]);
    eventually("fluentd on every node", || {
        ready_pod_nodes(&cluster, "fluentd") == ["sim-000000", "sim-000001", "sim-000002"]
    });
    let ds = cluster.json(&["get", "ds", "fluentd"]);
    assert_eq!(ds["status"]["desiredNumberScheduled"], 3);
    assert_eq!(ds["status"]["numberReady"], 3);
}

const WEB: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1
";

/// A StatefulSet with the real kubectl: `rollout status sts/web` waits for
/// its ordered start, `scale` adds `web-2`, a new image with a partition
/// updates only the pods at or above it, and with the partition lowered
/// the rollout completes.
#[test]
fn stateful_sets_with_real_kubectl() {
    let cluster = with_sim_nodes("statefulsets", 3);
    assert_eq!(cluster.apply(WEB).trim(), "statefulset.apps/web created");
    // The API defaults `rollingUpdate.partition` to 0, so kubectl reports
    // every RollingUpdate as partitioned (as against kube-apiserver).
    let status = cluster.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(
        status.contains("partitioned roll out complete: 2 new pods have been updated"),
        "{status}"
    );
    cluster.ok(&["scale", "sts", "web", "--replicas=3"]);
    cluster.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    let names = cluster.ok(&["get", "pods", "-l", "app=web", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["pod/web-0", "pod/web-1", "pod/web-2"]
    );
    let labels = cluster.json(&["get", "pod", "web-2"]);
    assert_eq!(
        labels["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "web-2"
    );
    assert_eq!(
        labels["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
        "2"
    );

    cluster.ok(&[
        "patch",
        "sts",
        "web",
        "-p",
        r#"{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}"#,
    ]);
    cluster.ok(&["set", "image", "sts/web", "nginx=nginx:2"]);
    let status = cluster.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(
        status.contains("partitioned roll out complete: 1 new pods have been updated"),
        "{status}"
    );
    let image = |pod: &str| {
        cluster.json(&["get", "pod", pod])["spec"]["containers"][0]["image"]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(image("web-2").as_deref(), Some("nginx:2"));
    assert_eq!(
        image("web-1").as_deref(),
        Some("nginx:1"),
        "below the partition"
    );
    cluster.ok(&[
        "patch",
        "sts",
        "web",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#,
    ]);
    let status = cluster.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    assert!(
        status.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{status}"
    );
    for pod in ["web-0", "web-1", "web-2"] {
        assert_eq!(image(pod).as_deref(), Some("nginx:2"), "{pod}");
    }
}
