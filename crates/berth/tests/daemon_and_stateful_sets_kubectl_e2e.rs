//! DaemonSets and StatefulSets with the real kubectl (v1.37,
//! `common::kubectl`) against a real `berth server --sim-nodes 3`: the
//! scheduler, the controllers and three simulated nodes whose pods become
//! Running and Ready at once, so `kubectl rollout status` sees each rollout
//! finish. The DaemonSet sections of the seed's "Taints and Tolerations"
//! (and the DaemonSet note of "Nodes") as a user would walk them, and a
//! StatefulSet scaled and rolled with a partition.

mod common;

use common::kubectl::{Cluster, kubectl_binary};
use common::{Backend, Server, eventually};

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

const FRONTEND: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  replicas: 3
  selector:
    matchLabels: {app: frontend}
  template:
    metadata:
      labels: {app: frontend}
    spec:
      containers:
      - name: nginx
        image: nginx:1
";

/// The node of pod `name`, once it is bound.
fn node_of(cluster: &Cluster, name: &str) -> String {
    cluster.json(&["get", "pod", name])["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `kubectl drain` as the seed's "Nodes" page and upstream document it,
/// with a DaemonSet, a Deployment and a StatefulSet on three simulated
/// nodes: without `--ignore-daemonsets` it refuses with upstream's message
/// and evicts nothing; with it, it evicts the Deployment's and the
/// StatefulSet's pods (pods/eviction) from the node of `web-0`, leaves the
/// DaemonSet's pod there, and the evicted replicas come back Ready on the
/// other nodes.
#[test]
fn drain_ignore_daemonsets_moves_replicas_with_real_kubectl() {
    let cluster = with_sim_nodes("drain-workloads", 3);
    cluster.apply(FLUENTD);
    cluster.apply(FRONTEND);
    cluster.apply(WEB);
    cluster.ok(&["rollout", "status", "ds/fluentd", "--timeout=60s"]);
    cluster.ok(&["rollout", "status", "deploy/frontend", "--timeout=60s"]);
    cluster.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);
    let drained = node_of(&cluster, "web-0");
    assert!(drained.starts_with("sim-"), "web-0 bound: {drained:?}");

    let refused = cluster.fails(&["drain", &drained, "--timeout=60s"]);
    assert!(
        refused
            .contains("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"),
        "{refused}"
    );
    assert_eq!(node_of(&cluster, "web-0"), drained, "nothing evicted");

    let (out, err) =
        cluster.ok_with_stderr(&["drain", &drained, "--ignore-daemonsets", "--timeout=60s"]);
    // kubectl prints its progress on both streams.
    let said = format!("{out}{err}");
    for line in [
        "Warning: ignoring DaemonSet-managed Pods: default/fluentd-",
        "evicting pod default/web-0",
        "pod/web-0 evicted",
        &format!("node/{drained} drained"),
    ] {
        assert!(said.contains(line), "{line} in\n{said}");
    }
    // The refused drain had cordoned the node already, as upstream's does.
    let node = cluster.json(&["get", "node", &drained]);
    assert_eq!(node["spec"]["unschedulable"], true, "cordoned");

    // The replicas come back elsewhere; the daemon pod stays.
    eventually("frontend's 3 replicas Ready off the drained node", || {
        let nodes = ready_pod_nodes(&cluster, "frontend");
        nodes.len() == 3 && !nodes.contains(&drained)
    });
    eventually("web's 2 pods Ready off the drained node", || {
        let nodes = ready_pod_nodes(&cluster, "web");
        nodes.len() == 2 && !nodes.contains(&drained)
    });
    assert!(
        ready_pod_nodes(&cluster, "fluentd").contains(&drained),
        "the DaemonSet's pod stays on the drained node"
    );
    cluster.ok(&["rollout", "status", "sts/web", "--timeout=60s"]);

    // `--cascade=orphan` leaves the dependents behind: the Deployment's
    // ReplicaSet, then (deleted the same way) its pods, which keep running
    // with no owner (kubectl waits until each owner is gone, by then the
    // garbage collector has taken the references out).
    cluster.ok(&["delete", "deploy/frontend", "--cascade=orphan"]);
    let sets = cluster.json(&["get", "rs", "-l", "app=frontend"]);
    assert_eq!(sets["items"].as_array().map(Vec::len), Some(1), "{sets}");
    cluster.ok(&["delete", "rs", "-l", "app=frontend", "--cascade=orphan"]);
    let orphans = || {
        let pods = cluster.json(&["get", "pods", "-l", "app=frontend"]);
        pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .filter(|p| p["metadata"]["ownerReferences"].is_null())
            .count()
    };
    eventually("frontend's 3 pods left behind, owned by nothing", || {
        orphans() == 3
    });
    assert_eq!(
        ready_pod_nodes(&cluster, "frontend").len(),
        3,
        "still running"
    );
}
