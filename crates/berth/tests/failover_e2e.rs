//! Failover over etcd, with real processes: three `berth server`s on one
//! private etcd of three members. The first leads the scheduler and the
//! controllers; it is killed (SIGKILL) while evictions fall due and pods
//! wait to be bound. Another server must take both Leases within the lease
//! duration and a jittered retry period; no eviction may be lost, early,
//! late or done twice, and no pod may be bound twice or onto a full node.
//!
//! The test plays the kubelets: it creates the Nodes as the admin and
//! renews their Leases itself, so it decides which node falls silent and
//! when. Everything it waits for comes from watches, each wait with a
//! deadline; the only timers are the servers' own (the short election and
//! node monitor durations below).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_core::test_util::{PodWrapper, make_node, make_pod, tol, tol_secs};
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::sync::Notify;

use common::Server;

/// The election's durations for the servers, and what the test expects of
/// them: a successor takes over at most a lease duration after the last
/// renewal it saw, and it saw the last one at most one jittered retry
/// period (2.2 retry periods) after it was written.
const LEASE_DURATION: Duration = Duration::from_secs(4);
const RENEW_DEADLINE: Duration = Duration::from_secs(3);
const RETRY_PERIOD: Duration = Duration::from_millis(500);
/// What the scheduling of processes on a loaded 2-core machine may add to
/// any step the servers take on time.
const SLACK: Duration = Duration::from_millis(1500);
/// How long a node may be silent before the node lifecycle controller
/// marks it Unknown, and how often it looks.
const GRACE: Duration = Duration::from_secs(5);
const MONITOR_PERIOD: Duration = Duration::from_secs(1);
/// How often the test renews its nodes' Leases.
const HEARTBEAT: Duration = Duration::from_millis(500);
/// Any one wait of the test, at most (a safety net, never reached when
/// the servers behave).
const STEP: Duration = Duration::from_secs(30);

/// The taint the test adds to `evict-0`, and the seconds each pod there
/// tolerates it: due times before the kill, between the kill and the
/// takeover, and after the takeover.
const EVICT_TAINT: &str = "failover.berth.dev/evict";
const TOLERATION_SECONDS: &[i64] = &[1, 2, 3, 4, 5, 6, 8, 10, 12];
/// Pending pods of 500m on two nodes of 2 CPUs: room for 8 of these 9.
const PENDING_BEFORE_KILL: usize = 4;
const PENDING_DURING_GAP: usize = 3;
const PENDING_AFTER_TAKEOVER: usize = 2;
const PODS_PER_FIT_NODE: usize = 4;

const SCHEDULER_LEASE: &str = "kube-scheduler";
const CONTROLLERS_LEASE: &str = "kube-controller-manager";

/// What the test's watches saw, with the wall-clock time of each first
/// sighting.
#[derive(Default)]
struct Seen {
    /// Pod name → (node, first seen bound at), and every node it was ever
    /// seen bound to (more than one is a double binding).
    bound: HashMap<String, (String, Timestamp)>,
    nodes_of: HashMap<String, Vec<String>>,
    /// Pod name → (deletionTimestamp, first seen at), and every distinct
    /// deletionTimestamp seen (a second one is a second deletion).
    deleted: HashMap<String, (String, Timestamp)>,
    deletion_stamps: HashMap<String, Vec<String>>,
    /// Pods whose PodScheduled condition is False (unschedulable).
    unschedulable: HashMap<String, String>,
    /// Lease name → (holder, acquireTime).
    leases: HashMap<String, (String, Option<Timestamp>)>,
    /// Node name → its taints' keys, and whether Ready is Unknown.
    taints: HashMap<String, Vec<String>>,
    ready_unknown: HashMap<String, bool>,
    /// Failed watches (each resumes, but the record may miss a moment).
    watch_errors: Vec<String>,
}

impl Seen {
    /// What the watches saw, for failure messages.
    fn summary(&self) -> String {
        let sorted = |keys: Vec<&String>| {
            let mut keys: Vec<String> = keys.into_iter().cloned().collect();
            keys.sort();
            keys.join(",")
        };
        format!(
            "deleted: {}\nbound: {:?}\nunschedulable: {:?}\ntaints: {:?}\nready unknown: {:?}\nleases: {:?}",
            sorted(self.deleted.keys().collect()),
            self.bound
                .iter()
                .map(|(p, (n, _))| format!("{p}->{n}"))
                .collect::<Vec<_>>(),
            self.unschedulable,
            self.taints,
            self.ready_unknown,
            self.leases
        )
    }
}

struct Recorder {
    seen: Mutex<Seen>,
    changed: Notify,
}

impl Recorder {
    fn new() -> Arc<Recorder> {
        Arc::new(Recorder {
            seen: Mutex::new(Seen::default()),
            changed: Notify::new(),
        })
    }

    /// When `lease` was last acquired (its holder's `acquireTime`).
    fn acquired(&self, lease: &str) -> Timestamp {
        self.with(|seen| seen.leases.get(lease).and_then(|(_, acquired)| *acquired))
            .expect("acquireTime on the Lease")
    }

    fn with<R>(&self, f: impl FnOnce(&Seen) -> R) -> R {
        f(&self.seen.lock().expect("record"))
    }

    fn update(&self, f: impl FnOnce(&mut Seen)) {
        f(&mut self.seen.lock().expect("record"));
        self.changed.notify_waiters();
    }

    /// Waits until `done` holds for what the watches saw, at most [`STEP`].
    async fn wait_for(&self, what: &str, done: impl Fn(&Seen) -> bool, log: impl Fn() -> String) {
        let deadline = tokio::time::Instant::now() + STEP;
        loop {
            let notified = self.changed.notified();
            if self.with(&done) {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let (errors, summary) = self.with(|s| (s.watch_errors.join("; "), s.summary()));
                panic!(
                    "timed out waiting for {what} (watch errors: {errors})\n{summary}\n{}",
                    log()
                );
            }
        }
    }
}

fn record_pod(seen: &mut Seen, pod: &Pod, now: Timestamp) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
        seen.bound
            .entry(name.clone())
            .or_insert_with(|| (node.clone(), now));
        let nodes = seen.nodes_of.entry(name.clone()).or_default();
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    if let Some(stamp) = &pod.metadata.deletion_timestamp {
        let stamp = stamp.0.to_string();
        seen.deleted
            .entry(name.clone())
            .or_insert_with(|| (stamp.clone(), now));
        let stamps = seen.deletion_stamps.entry(name.clone()).or_default();
        if !stamps.contains(&stamp) {
            stamps.push(stamp);
        }
    }
    let unschedulable = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
        .filter(|c| c.status == "False")
        .and_then(|c| c.reason.clone());
    match unschedulable {
        Some(reason) => {
            seen.unschedulable.insert(name, reason);
        }
        None => {
            seen.unschedulable.remove(&name);
        }
    }
}

fn record_node(seen: &mut Seen, node: &Node) {
    let name = node.metadata.name.clone().unwrap_or_default();
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| t.iter().map(|t| t.key.clone()).collect())
        .unwrap_or_default();
    seen.taints.insert(name.clone(), taints);
    let unknown = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "Unknown");
    seen.ready_unknown.insert(name, unknown);
}

fn record_lease(seen: &mut Seen, lease: &Lease) {
    let name = lease.metadata.name.clone().unwrap_or_default();
    let spec = lease.spec.clone().unwrap_or_default();
    seen.leases.insert(
        name,
        (
            spec.holder_identity.unwrap_or_default(),
            spec.acquire_time.map(|t| t.0),
        ),
    );
}

/// Feeds `recorder` from a watch of `api` until the test ends.
fn follow<K>(
    api: Api<K>,
    recorder: Arc<Recorder>,
    record: fn(&mut Seen, &K, Timestamp),
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        while let Some(event) = events.next().await {
            let now = Timestamp::now();
            match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    recorder.update(|seen| record(seen, &o, now));
                }
                Ok(_) => {}
                Err(e) => recorder.update(|seen| seen.watch_errors.push(e.to_string())),
            }
        }
    })
}

/// Feeds `recorder` from a watch of the kube-system Leases.
fn follow_leases(client: kube::Client, recorder: Arc<Recorder>) -> tokio::task::JoinHandle<()> {
    follow(
        Api::<Lease>::namespaced(client, "kube-system"),
        recorder,
        |seen, lease, _| record_lease(seen, lease),
    )
}

/// Starts a server on `endpoints` and waits until it holds both Leases (the
/// first server of a cluster takes them at once).
async fn start_leader(name: &str, endpoints: &str, flags: &[&str]) -> Server {
    let server = Server::start_on_etcd(name, endpoints, flags).await;
    let recorder = Recorder::new();
    let pid = server.pid();
    let leases = follow_leases(server.client().await, recorder.clone());
    recorder
        .wait_for(
            "the first server to hold both Leases",
            |seen| holders(seen) == Some((pid, pid)),
            || server.log(),
        )
        .await;
    leases.abort();
    server
}

/// The process id in a server's leader election identity
/// (`<host>_<pid>-<random>`).
fn pid_of(identity: &str) -> Option<u32> {
    let (_, unique) = identity.rsplit_once('_')?;
    unique.split('-').next()?.parse().ok()
}

/// The pid holding each of the two Leases, when both are held.
fn holders(seen: &Seen) -> Option<(u32, u32)> {
    let holder = |lease: &str| {
        seen.leases
            .get(lease)
            .and_then(|(holder, _)| pid_of(holder))
    };
    Some((holder(SCHEDULER_LEASE)?, holder(CONTROLLERS_LEASE)?))
}

fn server_flags() -> Vec<String> {
    let go = |d: Duration| format!("{}ms", d.as_millis());
    vec![
        "--leader-elect=true".into(),
        format!("--leader-elect-lease-duration={}", go(LEASE_DURATION)),
        format!("--leader-elect-renew-deadline={}", go(RENEW_DEADLINE)),
        format!("--leader-elect-retry-period={}", go(RETRY_PERIOD)),
        format!("--node-monitor-grace-period={}", go(GRACE)),
        format!("--node-monitor-period={}", go(MONITOR_PERIOD)),
    ]
}

/// A Ready node with `cpu` CPUs, heard of now.
fn ready_node(name: &str, cpu: &str, unschedulable: bool) -> Node {
    let now = Timestamp::now();
    make_node()
        .name(name)
        .unschedulable(unschedulable)
        .capacity(&[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")])
        .condition_at("Ready", "True", now, now)
        .obj()
}

fn node_lease(name: &str) -> Lease {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
            "renewTime": micro_time(Timestamp::now())},
    }))
    .expect("lease")
}

fn micro_time(t: Timestamp) -> serde_json::Value {
    json!(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(t))
}

/// A pod requesting half a CPU, with a 30 s grace period.
fn half_cpu(name: &str) -> PodWrapper {
    make_pod()
        .name(name)
        .req(&[("cpu", "500m")])
        .termination_grace_period(30)
}

fn evict_pod(seconds: i64) -> Pod {
    half_cpu(&format!("evict-{seconds}"))
        .node("evict-0")
        .toleration(tol_secs(EVICT_TAINT, "Exists", "", "NoExecute", seconds))
        .obj()
}

async fn create_pending(pods: &Api<Pod>, batch: &str, count: usize) -> Vec<String> {
    let mut names = Vec::new();
    for i in 0..count {
        let name = format!("pending-{batch}-{i}");
        pods.create(&PostParams::default(), &half_cpu(&name).obj())
            .await
            .expect("create pending pod");
        names.push(name);
    }
    names
}

/// Renews the Leases of `nodes` every [`HEARTBEAT`] until told to stop
/// with each; a node in `silent` is not renewed any more.
fn heartbeats(
    leases: Api<Lease>,
    nodes: Vec<String>,
    silent: Arc<Mutex<Vec<String>>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(HEARTBEAT);
        loop {
            tick.tick().await;
            let quiet = silent.lock().expect("silent").clone();
            for node in nodes.iter().filter(|n| !quiet.contains(n)) {
                let renew = json!({"spec": {"renewTime": micro_time(Timestamp::now())}});
                // A failed renewal is retried at the next beat, as a kubelet would.
                let _ = leases
                    .patch(node, &PatchParams::default(), &Patch::Merge(&renew))
                    .await;
            }
        }
    })
}

fn secs(d: SignedDuration) -> f64 {
    d.as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_loses_no_eviction_and_binds_no_pod_twice() {
    let etcd = berth_store::testing::EtcdServer::start_cluster(3)
        .await
        .unwrap_or_else(|e| panic!("{e} (the failover test needs Debian's etcd-server)"));
    let endpoints = etcd.endpoints().join(",");
    let flags = server_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();

    // The first server takes both Leases before the others start, so the
    // test knows whom to kill.
    let mut first = start_leader("failover-1", &endpoints, &flags).await;
    let recorder = Recorder::new();
    let second = Server::start_on_etcd("failover-2", &endpoints, &flags).await;
    let third = Server::start_on_etcd("failover-3", &endpoints, &flags).await;
    let log_files = [first.log_path(), second.log_path(), third.log_path()];
    let logs = || {
        log_files
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let log = std::fs::read_to_string(path).unwrap_or_default();
                format!("--- server {}\n{log}", i + 1)
            })
            .collect::<Vec<_>>()
            .join("\n")
    };

    // One cluster, one set of credentials: the first server's admin token
    // and CA work on the third (the test's client from here on is the
    // third's, which is never killed).
    let shared = {
        let text = std::fs::read_to_string(&first.kubeconfig).expect("kubeconfig");
        let text = text.replace(&first.url(), &third.url());
        let path = first.data_dir.join("kubeconfig-for-third.yaml");
        std::fs::write(&path, text).expect("write kubeconfig");
        let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("config");
        kube::Client::try_from(config).expect("client")
    };
    let client = third.client().await;
    Api::<Node>::all(shared)
        .list(&ListParams::default())
        .await
        .expect("the first server's credentials work on the third");

    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let node_leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let watches = [
        follow_leases(client.clone(), recorder.clone()),
        follow(pods.clone(), recorder.clone(), record_pod),
        follow(nodes.clone(), recorder.clone(), |seen, node, _| {
            record_node(seen, node)
        }),
    ];

    // The nodes: two to schedule onto; two cordoned, one whose pods are
    // evicted by a taint, one that falls silent when the leader dies.
    let all_nodes = ["fit-0", "fit-1", "evict-0", "lost-0"];
    for name in all_nodes {
        let cordoned = !name.starts_with("fit-");
        nodes
            .create(&PostParams::default(), &ready_node(name, "2", cordoned))
            .await
            .expect("create node");
        node_leases
            .create(&PostParams::default(), &node_lease(name))
            .await
            .expect("create node lease");
    }
    let silent = Arc::new(Mutex::new(Vec::new()));
    let beating = heartbeats(
        node_leases.clone(),
        all_nodes.iter().map(|n| n.to_string()).collect(),
        silent.clone(),
    );
    // Ready nodes lose admission's not-ready taint (the node lifecycle
    // controller of the first server).
    recorder
        .wait_for(
            "the nodes to lose the not-ready taint",
            |seen| {
                all_nodes.iter().all(|n| {
                    seen.taints
                        .get(*n)
                        .is_some_and(|t| !t.iter().any(|k| k == "node.kubernetes.io/not-ready"))
                })
            },
            logs,
        )
        .await;

    // Pods: evicted by the taint at their due times; one tolerating it for
    // ever; one on the node that falls silent, tolerating unreachable for
    // no time at all.
    let placed = TOLERATION_SECONDS
        .iter()
        .map(|seconds| evict_pod(*seconds))
        .chain([
            half_cpu("stays")
                .node("evict-0")
                .toleration(tol(EVICT_TAINT, "Exists", "", "NoExecute"))
                .obj(),
            half_cpu("on-lost-node")
                .node("lost-0")
                .toleration(tol_secs(
                    "node.kubernetes.io/unreachable",
                    "Exists",
                    "",
                    "NoExecute",
                    0,
                ))
                .obj(),
        ]);
    for pod in placed {
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create a pod on its node");
    }
    let before = create_pending(&pods, "before", PENDING_BEFORE_KILL).await;
    recorder
        .wait_for(
            "the first pending pods to be bound",
            |seen| before.iter().all(|p| seen.bound.contains_key(p)),
            logs,
        )
        .await;

    // The taint: its timeAdded (whole seconds, as the controller reads it)
    // plus each pod's seconds is that pod's due time.
    nodes
        .patch(
            "evict-0",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"taints": [
                {"key": EVICT_TAINT, "effect": "NoExecute"}]}})),
        )
        .await
        .expect("taint evict-0");
    let tainted = nodes.get("evict-0").await.expect("evict-0");
    let time_added = tainted
        .spec
        .and_then(|s| s.taints)
        .and_then(|t| t.into_iter().find(|t| t.key == EVICT_TAINT))
        .and_then(|t| t.time_added)
        .expect("timeAdded stamped")
        .0;
    let due = |seconds: i64| time_added + SignedDuration::from_secs(seconds);

    // Kill the leader right after its first eviction.
    recorder
        .wait_for(
            "the leader's first eviction",
            |seen| seen.deleted.contains_key("evict-1"),
            logs,
        )
        .await;
    first.kill();
    let killed_at = Timestamp::now();
    silent.lock().expect("silent").push("lost-0".to_string());
    let during_gap = create_pending(&pods, "gap", PENDING_DURING_GAP).await;

    recorder
        .wait_for(
            "another server to hold both Leases",
            |seen| {
                holders(seen).is_some_and(|(s, c)| {
                    [s, c]
                        .iter()
                        .all(|pid| [second.pid(), third.pid()].contains(pid))
                })
            },
            logs,
        )
        .await;
    let scheduler_acquired = recorder.acquired(SCHEDULER_LEASE);
    let takeover = scheduler_acquired.max(recorder.acquired(CONTROLLERS_LEASE));
    let after = create_pending(&pods, "after", PENDING_AFTER_TAKEOVER).await;
    let took = takeover.duration_since(killed_at);
    eprintln!(
        "failover: both Leases taken over {:.3} s after the kill (lease duration {:?}, retry period {:?})",
        secs(took),
        LEASE_DURATION,
        RETRY_PERIOD
    );
    let bound = LEASE_DURATION + RETRY_PERIOD.mul_f64(2.2) + SLACK;
    assert!(
        took <= SignedDuration::try_from(bound).expect("bound"),
        "takeover took {took:?}, more than {bound:?}\n{}",
        logs()
    );

    // Everything falls due and is done: every eviction, the silent node's
    // pod, every pod that fits bound, the one that does not refused.
    let pending: Vec<String> = before
        .iter()
        .chain(&during_gap)
        .chain(&after)
        .cloned()
        .collect();
    recorder
        .wait_for(
            "every due eviction, the silent node's pod evicted and every pending pod decided",
            |seen| {
                TOLERATION_SECONDS
                    .iter()
                    .all(|s| seen.deleted.contains_key(&format!("evict-{s}")))
                    && seen.deleted.contains_key("on-lost-node")
                    && pending
                        .iter()
                        .filter(|p| seen.bound.contains_key(*p))
                        .count()
                        == 2 * PODS_PER_FIT_NODE
                    && pending.iter().any(|p| {
                        seen.unschedulable
                            .get(p)
                            .is_some_and(|r| r == "Unschedulable")
                    })
            },
            logs,
        )
        .await;
    beating.abort();

    recorder.with(|seen| {
    // Evictions: each once, never early, on time — the leader's before the
    // kill, the successor's at the takeover for what fell due in between,
    // and at their due time after it.
    let tolerance = SignedDuration::try_from(SLACK).expect("slack");
    let mut report = Vec::new();
    for seconds in TOLERATION_SECONDS {
        let name = format!("evict-{seconds}");
        let due = due(*seconds);
        let (_, at) = seen.deleted[&name];
        let expected = if due < killed_at || due >= takeover {
            due
        } else {
            takeover
        };
        report.push(format!(
            "{name}: due {due}, evicted {:+.3} s after it (expected {:+.3})",
            secs(at.duration_since(due)),
            secs(expected.duration_since(due))
        ));
        assert!(
            at >= due,
            "{name} evicted before its due time: {report:#?}\n{}",
            logs()
        );
        assert!(
            at <= expected + tolerance,
            "{name} evicted late: {report:#?}\n{}",
            logs()
        );
        assert_eq!(
            seen.deletion_stamps[&name].len(),
            1,
            "{name} deleted more than once: {:?}",
            seen.deletion_stamps[&name]
        );
    }
    eprintln!("failover: evictions\n  {}", report.join("\n  "));
    assert!(
        !seen.deleted.contains_key("stays"),
        "a pod tolerating the taint for ever was evicted"
    );
    // The silent node: marked Unknown and tainted by the successor, whose
    // node lifecycle controller gives it a whole grace period from its
    // start (as upstream's does), then its pod goes at once.
    assert!(
        seen.ready_unknown.get("lost-0").copied().unwrap_or(false),
        "lost-0 never marked Unknown"
    );
    let (_, lost_at) = seen.deleted["on-lost-node"];
    eprintln!(
        "failover: the silent node's pod evicted {:.3} s after the takeover (grace period {GRACE:?})",
        secs(lost_at.duration_since(takeover))
    );
    let latest =
        takeover + SignedDuration::try_from(GRACE + 2 * MONITOR_PERIOD + SLACK).expect("d");
    assert!(
        lost_at >= killed_at && lost_at <= latest,
        "the silent node's pod evicted {:+.3} s after the takeover",
        secs(lost_at.duration_since(takeover))
    );

    // Bindings: each pod bound once, never moved; nodes never over full;
    // the pods created in the gap bound only once a new leader was there.
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for name in &pending {
        let Some((node, at)) = seen.bound.get(name) else {
            continue;
        };
        assert_eq!(
            seen.nodes_of[name].len(),
            1,
            "{name} bound to more than one node: {:?}",
            seen.nodes_of[name]
        );
        *per_node.entry(node.clone()).or_default() += 1;
        if during_gap.contains(name) {
            assert!(
                *at >= scheduler_acquired,
                "{name} bound at {at}, before the new scheduler leader took over at {scheduler_acquired}"
            );
        }
    }
    assert!(
        per_node.values().all(|n| *n <= PODS_PER_FIT_NODE),
        "a node holds more than its CPUs allow: {per_node:?}"
    );
    assert!(
        seen.watch_errors.is_empty(),
        "watches failed (the record may have a gap): {:?}",
        seen.watch_errors
    );
    });

    // Events (best effort: the killed leader may not have written its
    // last ones): never two evictions or two schedulings of one pod.
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let events = events.list(&ListParams::default()).await.expect("events");
    let mut evictions: BTreeMap<String, usize> = BTreeMap::new();
    for event in &events.items {
        if event.reason.as_deref() == Some("TaintManagerEviction")
            && event
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("Marking for deletion"))
        {
            let pod = event.involved_object.name.clone().unwrap_or_default();
            *evictions.entry(pod).or_default() += 1;
        }
    }
    assert!(
        evictions.values().all(|n| *n == 1),
        "a pod evicted twice: {evictions:?}"
    );
    let scheduled: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(client.clone(), "default");
    let scheduled = scheduled
        .list(&ListParams::default())
        .await
        .expect("events.k8s.io events");
    let mut bindings: BTreeMap<String, usize> = BTreeMap::new();
    for event in &scheduled.items {
        if event.reason.as_deref() == Some("Scheduled") {
            let pod = event
                .regarding
                .as_ref()
                .and_then(|r| r.name.clone())
                .unwrap_or_default();
            *bindings.entry(pod).or_default() += 1;
        }
    }
    assert!(
        bindings.values().all(|n| *n == 1),
        "a pod scheduled twice: {bindings:?}"
    );
    for watch in watches {
        watch.abort();
    }
}

/// A server stopped with SIGTERM stops its scheduler and controllers, then
/// releases their Leases: another server leads within a jittered retry
/// period, not after the lease duration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_with_sigterm_hands_its_leases_over_at_once() {
    let etcd = berth_store::testing::EtcdServer::start()
        .await
        .unwrap_or_else(|e| panic!("{e} (the failover test needs Debian's etcd-server)"));
    // A long lease, so that a takeover within it can only come from a release.
    let lease = Duration::from_secs(20);
    let flags = [
        "--leader-elect=true".to_string(),
        format!("--leader-elect-lease-duration={}s", lease.as_secs()),
        "--leader-elect-renew-deadline=15s".to_string(),
        format!("--leader-elect-retry-period={}ms", RETRY_PERIOD.as_millis()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut first = start_leader("handover-1", etcd.endpoint(), &flags).await;
    let second = Server::start_on_etcd("handover-2", etcd.endpoint(), &flags).await;
    let second_pid = second.pid();
    let recorder = Recorder::new();
    let _leases = follow_leases(second.client().await, recorder.clone());
    let stopped_at = Timestamp::now();
    let (status, _) = tokio::task::block_in_place(|| first.terminate(Duration::from_secs(30)));
    assert!(status.success(), "{status}: {}", first.log());
    recorder
        .wait_for(
            "the second server to hold both Leases",
            |seen| holders(seen) == Some((second_pid, second_pid)),
            || second.log(),
        )
        .await;
    let took = recorder
        .acquired(SCHEDULER_LEASE)
        .max(recorder.acquired(CONTROLLERS_LEASE))
        .duration_since(stopped_at);
    eprintln!(
        "failover: both Leases taken over {:.3} s after SIGTERM",
        secs(took)
    );
    let bound = RETRY_PERIOD.mul_f64(2.2) + SLACK;
    assert!(
        took <= SignedDuration::try_from(bound).expect("bound"),
        "took {took:?} after SIGTERM, more than {bound:?} (the lease is {lease:?})"
    );
}

/// The election's durations are checked at start, with client-go's rules:
/// a renew deadline not shorter than the lease duration is a usage error.
#[test]
fn inconsistent_leader_election_durations_are_a_usage_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args([
            "server",
            "--leader-elect-lease-duration=4s",
            "--leader-elect-renew-deadline=5s",
        ])
        .output()
        .expect("run berth");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--leader-elect-renew-deadline")
            && stderr.contains("leaseDuration must be greater than renewDeadline"),
        "{stderr}"
    );
}
