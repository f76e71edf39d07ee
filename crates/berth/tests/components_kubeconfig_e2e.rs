//! `berth scheduler` and `berth controllers` as their own processes
//! against a `berth server` that runs neither (`--disable-scheduler
//! --controllers=`), through the server's kubeconfig only: the same path
//! they take to any Kubernetes API server, not the in-process transport.
//!
//! The test plays the kubelets: it creates the Nodes as the admin, so it
//! decides which node falls silent. Every wait polls with a deadline; the
//! only timers are the components' own (the short durations below).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use berth_core::test_util::{make_node, make_pod, tol, tol_secs};
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use common::component::{Component, eventually};
use common::{Backend, Server};

/// Any one wait, at most (a safety net on a loaded 2-core machine).
const STEP: Duration = Duration::from_secs(60);
/// A server with neither the scheduler nor any controller.
const BARE_SERVER: &[&str] = &["--disable-scheduler", "--controllers="];
/// Short leader election durations, so a takeover fits in a test.
const ELECTION: &[&str] = &[
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=500ms",
];

fn kubeconfig(server: &Server) -> String {
    server.kubeconfig.display().to_string()
}

/// A Ready node with 4 CPUs, heard of now.
fn ready_node(name: &str) -> Node {
    let now = Timestamp::now();
    make_node()
        .name(name)
        .capacity(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
        .condition_at("Ready", "True", now, now)
        .obj()
}

/// Creates Ready nodes, and (with `schedulable`) takes off the
/// `not-ready:NoSchedule` taint admission puts on a new node, as the node
/// lifecycle controller would (the server runs none).
async fn create_nodes(client: &kube::Client, names: &[&str], schedulable: bool) {
    let nodes: Api<Node> = Api::all(client.clone());
    for name in names {
        nodes
            .create(&PostParams::default(), &ready_node(name))
            .await
            .expect("create node");
        if schedulable {
            nodes
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"taints": null}})),
                )
                .await
                .expect("untaint node");
        }
    }
}

async fn create_pods(client: &kube::Client, names: &[String], scheduler: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for name in names {
        let pod = make_pod()
            .name(name)
            .req(&[("cpu", "100m")])
            .scheduler_name(scheduler)
            .obj();
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
    }
}

/// The node each of `names` is bound to, once all are bound.
async fn all_bound(
    client: &kube::Client,
    names: &[String],
    logs: impl Fn() -> String,
) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually("every pod bound", STEP, logs, || {
        let pods = pods.clone();
        async move {
            let mut nodes = Vec::new();
            for name in names {
                let pod = pods.get(name).await.ok()?;
                nodes.push(pod.spec?.node_name?);
            }
            Some(nodes)
        }
    })
    .await
}

/// Plays `node`'s kubelet: renews its Lease in `kube-node-lease` every
/// half second.
async fn renew_lease_forever(client: kube::Client, node: &str) {
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    loop {
        let lease: Lease = serde_json::from_value(json!({
            "metadata": {"name": node, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": 40,
                "renewTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(Timestamp::now())},
        }))
        .expect("lease");
        let params = PatchParams::apply("test-kubelet").force();
        if let Err(e) = leases.patch(node, &params, &Patch::Apply(&lease)).await {
            eprintln!("renewing {node}'s lease: {e}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

async fn lease_holder(client: &kube::Client, name: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    leases
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
        .filter(|h| !h.is_empty())
}

/// The `reportingInstance`s of the Scheduled events of `pods`.
async fn scheduled_by(client: &kube::Client, pods: &[String]) -> BTreeSet<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let list = events
        .list(&ListParams::default())
        .await
        .expect("list events");
    list.items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scheduled"))
        .filter(|e| {
            e.involved_object
                .name
                .as_ref()
                .is_some_and(|n| pods.contains(n))
        })
        .filter_map(|e| e.reporting_instance)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_scheduler_binds_only_its_own_pods_through_a_kubeconfig() {
    let server = Server::start("sched-kubeconfig", Backend::Embedded, BARE_SERVER).await;
    let client = server.client().await;
    create_nodes(&client, &["node-a", "node-b"], true).await;
    let scheduler = Component::start(
        &server.data_dir,
        &[
            "scheduler",
            "--kubeconfig",
            &kubeconfig(&server),
            "--scheduler-name=berth",
            "--leader-elect=false",
        ],
    );
    let ours = names("berth", 4);
    let theirs = names("other", 1);
    create_pods(&client, &theirs, "default-scheduler").await;
    create_pods(&client, &ours, "berth").await;
    let nodes = all_bound(&client, &ours, || scheduler.log() + &server.log()).await;
    for node in &nodes {
        assert!(
            ["node-a", "node-b"].contains(&node.as_str()),
            "bound to {node}"
        );
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let other = pods.get(&theirs[0]).await.expect("get the other pod");
    assert_eq!(
        other.spec.and_then(|s| s.node_name),
        None,
        "a pod for another scheduler is left to it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_berth_schedulers_only_the_lease_holder_binds_and_sigterm_hands_over() {
    let server = Server::start("sched-election", Backend::Embedded, BARE_SERVER).await;
    let client = server.client().await;
    create_nodes(&client, &["node-a"], true).await;
    let kubeconfig = kubeconfig(&server);
    let mut args = vec!["scheduler", "--kubeconfig", &kubeconfig];
    args.extend_from_slice(ELECTION);
    let mut first = Component::start(&server.data_dir, &args);
    let mut second = Component::start(&server.data_dir, &args);
    let logs = || first.log() + &second.log() + &server.log();
    let holder = eventually("a scheduler leads", STEP, logs, || {
        lease_holder(&client, "kube-scheduler")
    })
    .await;
    let before = names("before", 6);
    create_pods(&client, &before, "default-scheduler").await;
    all_bound(&client, &before, logs).await;
    let instances = eventually("every Scheduled event written", STEP, logs, || {
        let (client, before) = (client.clone(), before.clone());
        async move {
            let seen = scheduled_by(&client, &before).await;
            (!seen.is_empty()).then_some(seen)
        }
    })
    .await;
    assert_eq!(
        instances,
        BTreeSet::from([holder.clone()]),
        "only the Lease holder binds"
    );

    // SIGTERM to the leader: it releases the Lease, the other takes it
    // well within a lease duration and binds what comes next.
    let leader_pid = |identity: &str, pid: u32| identity.contains(&format!("_{pid}-"));
    let (leader, follower) = if leader_pid(&holder, first.pid()) {
        (&mut first, &second)
    } else {
        assert!(leader_pid(&holder, second.pid()), "{holder} is neither");
        (&mut second, &first)
    };
    let status = leader.terminate(Duration::from_secs(20));
    assert!(status.success(), "leader exits cleanly: {status:?}");
    let follower_pid = follower.pid();
    let next = eventually(
        "the other scheduler leads",
        Duration::from_secs(4),
        || follower.log(),
        || {
            let client = client.clone();
            async move {
                lease_holder(&client, "kube-scheduler")
                    .await
                    .filter(|h| leader_pid(h, follower_pid))
            }
        },
    )
    .await;
    let after = names("after", 3);
    create_pods(&client, &after, "default-scheduler").await;
    all_bound(&client, &after, || follower.log()).await;
    let instances = eventually(
        "the new leader's events",
        STEP,
        || follower.log(),
        || {
            let (client, after) = (client.clone(), after.clone());
            async move {
                let seen = scheduled_by(&client, &after).await;
                (!seen.is_empty()).then_some(seen)
            }
        },
    )
    .await;
    assert_eq!(instances, BTreeSet::from([next]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_controllers_taint_a_silent_node_and_evict_at_the_due_time_through_a_kubeconfig() {
    let server = Server::start("controllers-kubeconfig", Backend::Embedded, BARE_SERVER).await;
    let client = server.client().await;
    // A node that never renews, silent from the start, and one the test
    // keeps alive (with every node silent the controller would stop
    // tainting: upstream's full disruption).
    create_nodes(&client, &["silent", "alive"], false).await;
    let heartbeats = tokio::spawn(renew_lease_forever(client.clone(), "alive"));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
    const TOLERATED: i64 = 3;
    for (name, toleration) in [
        (
            "leaves",
            tol_secs(UNREACHABLE, "Exists", "", "NoExecute", TOLERATED),
        ),
        ("stays", tol(UNREACHABLE, "Exists", "", "NoExecute")),
    ] {
        let pod = make_pod()
            .name(name)
            .node("silent")
            .termination_grace_period(30)
            .toleration(toleration)
            .obj();
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
    }
    let kubeconfig = kubeconfig(&server);
    let mut args = vec![
        "controllers",
        "--kubeconfig",
        &kubeconfig,
        "--controllers=node-lifecycle-controller,taint-eviction-controller",
        "--node-monitor-grace-period=2s",
        "--node-monitor-period=500ms",
        "--node-startup-grace-period=2s",
    ];
    args.extend_from_slice(ELECTION);
    let mut controllers = Component::start(&server.data_dir, &args);
    let logs = || controllers.log() + &server.log();
    let holder = eventually("the controllers lead", STEP, logs, || {
        lease_holder(&client, "kube-controller-manager")
    })
    .await;
    assert!(
        holder.contains(&format!("_{}-", controllers.pid())),
        "{holder}"
    );
    let nodes: Api<Node> = Api::all(client.clone());
    let tainted_at = eventually("the silent node tainted unreachable", STEP, logs, || {
        let nodes = nodes.clone();
        async move {
            let node = nodes.get("silent").await.ok()?;
            let taint = node
                .spec?
                .taints?
                .into_iter()
                .find(|t| t.key == UNREACHABLE && t.effect == "NoExecute")?;
            Some(taint.time_added?.0)
        }
    })
    .await;
    let evicted_at = eventually("the pod evicted", STEP, logs, || {
        let pods = pods.clone();
        async move {
            let pod = pods.get("leaves").await.ok()?;
            let deletion = pod.metadata.deletion_timestamp?.0;
            let grace = pod.metadata.deletion_grace_period_seconds?;
            Some(deletion - jiff::SignedDuration::from_secs(grace))
        }
    })
    .await;
    // Both timestamps have whole seconds: the eviction falls in the
    // second the toleration runs out, or within the slack of a loaded
    // machine after it.
    let waited = evicted_at.duration_since(tainted_at).as_secs_f64();
    assert!(
        (TOLERATED as f64 - 1.0..=TOLERATED as f64 + 3.0).contains(&waited),
        "evicted {waited}s after the taint, tolerated {TOLERATED}s"
    );
    let leaving = pods.get("leaves").await.expect("get the evicted pod");
    let disruption = leaving
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "DisruptionTarget");
    assert_eq!(
        disruption.map(|c| (c.status, c.reason)),
        Some((
            "True".to_string(),
            Some("DeletionByTaintManager".to_string())
        ))
    );
    let stays = pods.get("stays").await.expect("get the tolerating pod");
    assert_eq!(
        stays.metadata.deletion_timestamp, None,
        "a pod tolerating the taint forever stays"
    );

    heartbeats.abort();
    // SIGTERM: the Lease released, not left to run out.
    let status = controllers.terminate(Duration::from_secs(20));
    assert!(status.success(), "exits cleanly: {status:?}");
    assert_eq!(lease_holder(&client, "kube-controller-manager").await, None);
}
