//! `berth sim fleet --kubeconfig` alone, as its own process against
//! `berth server` through the server's admin kubeconfig: the way it joins
//! any Kubernetes cluster (as KWOK's nodes do), with none of berth's own
//! endpoints (no join token, no node credentials, no kubelet endpoints),
//! not the in-process transport.
//!
//! Every wait polls with a deadline; the only timers are the fleet's own
//! (a Lease renewal every 10 s) and the server's.

mod common;

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};

use berth_core::test_util::make_pod;
use common::component::{Component, eventually};
use common::{Backend, Server};

/// Any one wait, at most (a safety net on a loaded 2-core machine).
const STEP: Duration = Duration::from_secs(60);
const NODES: [&str; 3] = ["kc-000000", "kc-000001", "kc-000002"];

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn renew_time(leases: &Api<Lease>, node: &str) -> Option<Timestamp> {
    let lease = leases.get_opt(node).await.ok()??;
    lease.spec?.renew_time.map(|t| t.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_joins_through_an_admin_kubeconfig_alone_renews_leases_and_runs_a_pod() {
    let server = Server::start("fleet-kubeconfig", Backend::Embedded, &[]).await;
    let client = server.client().await;
    let kubeconfig = server.kubeconfig.display().to_string();
    let fleet = Component::start(
        &server.data_dir,
        &[
            "sim",
            "fleet",
            "--kubeconfig",
            &kubeconfig,
            "--nodes",
            "3",
            "--name-prefix",
            "kc-",
            "--kube-api-qps",
            "50",
            "--kube-api-burst",
            "100",
        ],
    );
    let logs = || fleet.log() + &server.log();

    // Registered and Ready, written with the kubeconfig's credential: no
    // kubelet endpoint is advertised (there is no node credential to tell
    // the API server's calls by).
    let nodes: Api<Node> = Api::all(client.clone());
    let registered = eventually("every fleet node Ready", STEP, logs, || {
        let nodes = nodes.clone();
        async move {
            let mut ready = Vec::new();
            for name in NODES {
                let node = nodes.get_opt(name).await.ok()??;
                if !is_ready(&node) {
                    return None;
                }
                ready.push(node);
            }
            Some(ready)
        }
    })
    .await;
    for node in &registered {
        let port = node
            .status
            .as_ref()
            .and_then(|s| s.daemon_endpoints.as_ref())
            .and_then(|d| d.kubelet_endpoint.as_ref())
            .map(|e| e.port);
        assert!(
            port.is_none_or(|p| p == 0),
            "{:?} advertises kubelet port {port:?}",
            node.metadata.name
        );
    }

    // Leases renewed: each one's renewTime moves on (every 10 s).
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let first = eventually("every fleet node's Lease", STEP, logs, || {
        let leases = leases.clone();
        async move {
            let mut times = Vec::new();
            for name in NODES {
                times.push(renew_time(&leases, name).await?);
            }
            Some(times)
        }
    })
    .await;
    eventually("every Lease renewed again", STEP, logs, || {
        let (leases, first) = (leases.clone(), first.clone());
        async move {
            for (name, before) in NODES.iter().zip(&first) {
                let now = renew_time(&leases, name).await?;
                if now <= *before {
                    return None;
                }
            }
            Some(())
        }
    })
    .await;

    // A pod the server's scheduler binds to a fleet node, run by the
    // fleet: Running.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &make_pod().name("web").req(&[("cpu", "100m")]).obj(),
    )
    .await
    .expect("create pod");
    let (node, phase) = eventually("the pod Running on a fleet node", STEP, logs, || {
        let pods = pods.clone();
        async move {
            let pod = pods.get("web").await.ok()?;
            let node = pod.spec?.node_name?;
            let phase = pod.status?.phase?;
            (phase == "Running").then_some((node, phase))
        }
    })
    .await;
    assert!(NODES.contains(&node.as_str()), "bound to {node}");
    assert_eq!(phase, "Running");
}
