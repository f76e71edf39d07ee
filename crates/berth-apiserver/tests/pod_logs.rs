//! `pods/{name}/log` end to end in one process: the API server proxies to a
//! real agent log server (HTTPS on localhost) over a process runtime that
//! runs real `sh` processes; kube-rs reads the logs as kubectl does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_runtime::log_server::{self, RunningLogServer};
use berth_runtime::process::ProcessRuntime;
use berth_runtime::{Runtime, RuntimePodStatus};
use berth_store::{AnyStore, MemStore};
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{LogParams, Patch, PatchParams, PostParams};
use serde_json::json;

struct Cluster {
    api: Arc<ApiServer>,
    admin: kube::Client,
    runtime: Arc<ProcessRuntime>,
    agent: RunningLogServer,
    dir: tempfile::TempDir,
}

/// An API server, and node `n1` whose agent serves the logs of a process
/// runtime with the credential the server issued to it.
async fn cluster() -> Cluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = ApiServer::new(
        AnyStore::Memory(MemStore::new()),
        Clock::real(),
        ApiConfig::default(),
    )
    .await
    .expect("api server");
    let admin = in_process::client(&api, User::admin(), "default").expect("client");
    let token = api
        .auth
        .issue_node_token("n1", None)
        .await
        .expect("node credential");
    let runtime = Arc::new(ProcessRuntime::new(Clock::real(), dir.path().join("pods")));
    let cert = log_server::ensure_serving_cert(dir.path(), "n1", &[]).expect("cert");
    let router = log_server::router(runtime.clone(), &token, Clock::real());
    let agent = log_server::serve("127.0.0.1:0".parse().expect("addr"), router, &cert)
        .await
        .expect("log server");
    let nodes: Api<Node> = Api::all(admin.clone());
    nodes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "n1"}})).expect("node"),
        )
        .await
        .expect("create node");
    let status = json!({"status": {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": "n1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": agent.addr.port()}},
    }});
    nodes
        .patch_status("n1", &PatchParams::default(), &Patch::Merge(status))
        .await
        .expect("node status");
    Cluster {
        api,
        admin,
        runtime,
        agent,
        dir,
    }
}

/// Creates pod `name` on `node` running `sh -c script`, and starts it in
/// the runtime when it is bound.
async fn run_pod(cluster: &Cluster, name: &str, node: Option<&str>, script: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(cluster.admin.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": "busybox", "command": ["sh", "-c", script]}],
        }
    }))
    .expect("pod");
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    if node.is_some() {
        cluster
            .runtime
            .start_pod(&created)
            .await
            .expect("start pod");
    }
    created
}

async fn wait_until_done(runtime: &ProcessRuntime, uid: &str) -> RuntimePodStatus {
    let mut changes = runtime.subscribe();
    loop {
        if let Some(status) = runtime.pod_status(uid)
            && status.phase.is_terminal()
        {
            return status;
        }
        changes.recv().await.expect("runtime events");
    }
}

/// Waits until the runtime reports the pod Running: a log requested before
/// its container started ends at once (as the kubelet answers for a
/// container still waiting to start), which a loaded machine can make
/// happen right after `start_pod`.
async fn wait_until_running(runtime: &ProcessRuntime, uid: &str) {
    let mut changes = runtime.subscribe();
    loop {
        if runtime
            .pod_status(uid)
            .is_some_and(|status| status.phase == berth_runtime::PodPhase::Running)
        {
            return;
        }
        changes.recv().await.expect("runtime events");
    }
}

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = std::process::Command::new("mkfifo").arg(&path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_style_logs_come_from_the_agent_of_the_pods_node() {
    let cluster = cluster().await;
    let pod = run_pod(&cluster, "web", Some("n1"), "echo hello; echo world").await;
    wait_until_done(&cluster.runtime, pod.metadata.uid.as_deref().unwrap_or("")).await;
    let pods: Api<Pod> = Api::namespaced(cluster.admin.clone(), "default");
    let all = pods.logs("web", &LogParams::default()).await.expect("logs");
    assert_eq!(all, "hello\nworld\n");
    let tail = pods
        .logs(
            "web",
            &LogParams {
                tail_lines: Some(1),
                container: Some("app".into()),
                ..Default::default()
            },
        )
        .await
        .expect("tail");
    assert_eq!(tail, "world\n");
    let limited = pods
        .logs(
            "web",
            &LogParams {
                limit_bytes: Some(3),
                ..Default::default()
            },
        )
        .await
        .expect("limit");
    assert_eq!(limited, "hel");
    let stamped = pods
        .logs(
            "web",
            &LogParams {
                timestamps: true,
                ..Default::default()
            },
        )
        .await
        .expect("timestamps");
    let lines: Vec<(jiff::Timestamp, &str)> = stamped
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(t, rest)| Some((t.parse().ok()?, rest)))
        .collect();
    assert_eq!(
        lines.iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        ["hello", "world"],
        "{stamped}"
    );
    // Everything was logged before now.
    let future = pods
        .logs(
            "web",
            &LogParams {
                since_time: Some(jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1)),
                ..Default::default()
            },
        )
        .await
        .expect("since");
    assert_eq!(future, "");
    cluster.agent.shutdown().await;
    drop(cluster.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_log_streams_until_the_container_ends() {
    let cluster = cluster().await;
    let gate = fifo(cluster.dir.path(), "gate");
    let script = format!("echo one; read line < {}; echo $line", gate.display());
    let pod = run_pod(&cluster, "follow", Some("n1"), &script).await;
    wait_until_running(&cluster.runtime, pod.metadata.uid.as_deref().unwrap_or("")).await;
    let pods: Api<Pod> = Api::namespaced(cluster.admin.clone(), "default");
    let mut lines = pods
        .log_stream(
            "follow",
            &LogParams {
                follow: true,
                ..Default::default()
            },
        )
        .await
        .expect("log stream")
        .lines();
    assert_eq!(
        lines.next().await.transpose().expect("read"),
        Some("one".into())
    );
    let open = tokio::task::spawn_blocking(move || std::fs::write(gate, "two\n"));
    open.await.expect("join").expect("write gate");
    assert_eq!(
        lines.next().await.transpose().expect("read"),
        Some("two".into())
    );
    // The stream ends with the container.
    assert_eq!(lines.next().await.transpose().expect("read"), None);
    cluster.agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_of_an_unbound_pod_are_empty_and_bad_containers_are_400() {
    let cluster = cluster().await;
    run_pod(&cluster, "pending", None, "echo never").await;
    let pods: Api<Pod> = Api::namespaced(cluster.admin.clone(), "default");
    assert_eq!(
        pods.logs("pending", &LogParams::default())
            .await
            .expect("logs"),
        ""
    );
    let err = pods
        .logs(
            "pending",
            &LogParams {
                container: Some("nope".into()),
                ..Default::default()
            },
        )
        .await
        .expect_err("bad container");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 400);
            assert_eq!(
                status.message,
                "container nope is not valid for pod pending"
            );
        }
        other => panic!("{other}"),
    }
    cluster.agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_serves_logs_only_to_the_holder_of_the_node_credential() {
    let cluster = cluster().await;
    let pod = run_pod(&cluster, "secret", Some("n1"), "echo s3cr3t").await;
    wait_until_done(&cluster.runtime, pod.metadata.uid.as_deref().unwrap_or("")).await;
    let port = cluster.agent.addr.port();
    let path = "/containerLogs/default/secret/app";
    let admin_token = "not-the-node-credential";
    let err = berth_apiserver::pod_logs::fetch("127.0.0.1", port, path, admin_token)
        .await
        .err()
        .map(|e| e.code);
    assert_eq!(err, Some(401));
    let token = cluster.api.auth.node_credential("n1").expect("credential");
    let ok = berth_apiserver::pod_logs::fetch("127.0.0.1", port, path, &token).await;
    assert!(ok.is_ok());
    cluster.agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_reads_the_logs_of_its_own_pods_only() {
    let cluster = cluster().await;
    let pod = run_pod(&cluster, "mine", Some("n1"), "echo mine").await;
    wait_until_done(&cluster.runtime, pod.metadata.uid.as_deref().unwrap_or("")).await;
    let n1 = in_process::client(&cluster.api, User::node("n1"), "default").expect("client");
    let own: Api<Pod> = Api::namespaced(n1, "default");
    assert_eq!(
        own.logs("mine", &LogParams::default())
            .await
            .expect("own logs"),
        "mine\n"
    );
    let n2 = in_process::client(&cluster.api, User::node("n2"), "default").expect("client");
    let other: Api<Pod> = Api::namespaced(n2, "default");
    match other.logs("mine", &LogParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403);
            assert_eq!(
                status.message,
                "pods \"mine\" is forbidden: User \"system:node:n2\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"default\": no relationship found between node 'n2' and this object"
            );
        }
        other => panic!("{other:?}"),
    }
    cluster.agent.shutdown().await;
}
