//! kube-rs (the `kube` crate, on the workspace's k8s-openapi) against a real
//! `berth server`, on the embedded store and on etcd: typed create, list,
//! strategic-merge and JSON-merge patches, admission defaults, both of the
//! runtime watcher's initial-list modes, optimistic concurrency, validation
//! errors and delete.

mod common;

use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use common::{Backend, Server};

/// How long one step (a watch event, say) may take on a loaded machine.
const STEP: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_smoke_on_the_embedded_store() {
    smoke(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_smoke_on_etcd() {
    smoke(Backend::Etcd).await;
}

async fn smoke(backend: Backend) {
    let server = Server::start("kube-rs", backend, &[]).await;
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client, "default");

    // Create and list a node.
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "kube-rs-node", "labels": {"pool": "smoke"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }))
    .expect("node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create node");
    let listed = nodes
        .list(&ListParams::default())
        .await
        .expect("list nodes");
    assert!(
        listed
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("kube-rs-node")),
        "{listed:?}"
    );

    // Taints by strategic merge patch (Node.spec.taints has no merge key, so
    // the list is replaced), then by JSON merge patch; the server stamps
    // timeAdded on NoExecute taints only.
    let strategic = Patch::Strategic(json!({
        "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    }));
    let patched = nodes
        .patch("kube-rs-node", &PatchParams::default(), &strategic)
        .await
        .expect("strategic merge patch");
    let taints = taint_summary(&patched);
    assert_eq!(taints, [("dedicated", Some("gpu"), "NoSchedule", false)]);
    let merge = Patch::Merge(json!({
        "spec": {"taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": "evict", "effect": "NoExecute"}
        ]}
    }));
    let patched = nodes
        .patch("kube-rs-node", &PatchParams::default(), &merge)
        .await
        .expect("JSON merge patch");
    assert_eq!(
        taint_summary(&patched),
        [
            ("dedicated", Some("gpu"), "NoSchedule", false),
            ("evict", None, "NoExecute", true)
        ]
    );

    // A pod with a toleration; admission adds the 300 s defaults.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "kube-rs-pod", "labels": {"app": "smoke"}},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
        }
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    let created = pods.get("kube-rs-pod").await.expect("get pod");
    let tolerations = created
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    assert!(
        tolerations
            .iter()
            .any(|t| t.key.as_deref() == Some("dedicated")),
        "{tolerations:?}"
    );
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.iter().any(|t| t.key.as_deref() == Some(key)
                && t.operator.as_deref() == Some("Exists")
                && t.effect.as_deref() == Some("NoExecute")
                && t.toleration_seconds == Some(300)),
            "{key} in {tolerations:?}"
        );
    }

    // Both initial-list modes of the watcher see the pod as it is, then the
    // label change made after their initial lists are done.
    let modes = [
        ("list then watch", watcher::Config::default()),
        (
            "streaming list (sendInitialEvents)",
            watcher::Config::default().streaming_lists(),
        ),
    ];
    let mut streams = Vec::new();
    for (mode, config) in modes {
        let mut stream = watcher(pods.clone(), config).boxed();
        let initial = next_matching(&mut stream, mode, |event| match event {
            watcher::Event::InitApply(p) => is_smoke_pod(p).then(|| p.clone()),
            _ => None,
        })
        .await;
        assert_eq!(labels_of(&initial).get("app"), Some(&"smoke".to_string()));
        next_matching(&mut stream, mode, |event| {
            matches!(event, watcher::Event::InitDone).then_some(())
        })
        .await;
        streams.push((mode, stream));
    }
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}}));
    pods.patch("kube-rs-pod", &PatchParams::default(), &relabel)
        .await
        .expect("label the pod");
    for (mode, stream) in &mut streams {
        next_matching(stream, mode, |event| match event {
            watcher::Event::Apply(p)
                if is_smoke_pod(p)
                    && labels_of(p).get("seen").map(String::as_str) == Some("yes") =>
            {
                Some(())
            }
            _ => None,
        })
        .await;
    }
    drop(streams);

    // Optimistic concurrency: a replace carrying the resourceVersion from
    // before the label change is a 409 Conflict.
    let mut stale = created.clone();
    stale
        .metadata
        .labels
        .get_or_insert_default()
        .insert("stale".into(), "write".into());
    let err = pods
        .replace("kube-rs-pod", &PostParams::default(), &stale)
        .await
        .expect_err("a stale resourceVersion conflicts");
    let status = api_status(err);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(status.message.contains("kube-rs-pod"), "{}", status.message);

    // Invalid tolerations are 422s naming the field.
    let invalid = [
        (
            json!({"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule"}),
            "spec.tolerations[0].operator",
        ),
        (
            json!({"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}),
            "spec.tolerations[0].effect",
        ),
        (
            json!({"key": "k", "operator": "Equal", "value": "v", "effect": "Sometimes"}),
            "spec.tolerations[0].effect",
        ),
    ];
    for (toleration, field) in invalid {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "invalid"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "tolerations": [toleration]}
        }))
        .expect("pod");
        let err = pods
            .create(&PostParams::default(), &pod)
            .await
            .expect_err("invalid toleration");
        let status = api_status(err);
        assert_eq!(
            (status.code, status.reason.as_str()),
            (422, "Invalid"),
            "{toleration}"
        );
        assert!(
            status.message.contains(field),
            "{field}: {}",
            status.message
        );
    }

    // Delete; then the objects are gone.
    pods.delete("kube-rs-pod", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete pod");
    nodes
        .delete("kube-rs-node", &DeleteParams::default())
        .await
        .expect("delete node");
    for err in [
        pods.get("kube-rs-pod").await.expect_err("pod deleted"),
        nodes.get("kube-rs-node").await.expect_err("node deleted"),
    ] {
        let status = api_status(err);
        assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    }
}

/// (key, value, effect, has timeAdded) of each taint.
fn taint_summary(node: &Node) -> Vec<(&str, Option<&str>, &str, bool)> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|taints| {
            taints
                .iter()
                .map(|t| {
                    (
                        t.key.as_str(),
                        t.value.as_deref(),
                        t.effect.as_str(),
                        t.time_added.is_some(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn is_smoke_pod(pod: &Pod) -> bool {
    pod.metadata.name.as_deref() == Some("kube-rs-pod")
}

fn labels_of(pod: &Pod) -> std::collections::BTreeMap<String, String> {
    pod.metadata.labels.clone().unwrap_or_default()
}

/// The API status of a failed request.
fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error status, got {other:?}"),
    }
}

/// Polls `stream` until `pick` returns something, within [`STEP`]; a
/// watcher error or the end of the stream fails the test.
async fn next_matching<T>(
    stream: &mut (impl Stream<Item = Result<watcher::Event<Pod>, watcher::Error>> + Unpin),
    mode: &str,
    mut pick: impl FnMut(&watcher::Event<Pod>) -> Option<T>,
) -> T {
    let found = tokio::time::timeout(STEP, async {
        while let Some(event) = stream.next().await {
            let event = event.unwrap_or_else(|e| panic!("{mode}: watcher error: {e}"));
            if let Some(found) = pick(&event) {
                return found;
            }
        }
        panic!("{mode}: the watch stream ended");
    })
    .await;
    found.unwrap_or_else(|_| panic!("{mode}: no matching event within {STEP:?}"))
}
