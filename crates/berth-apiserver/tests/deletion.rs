//! Deletion as the garbage collector needs it, through an ordinary kube-rs
//! client: `propagationPolicy` and `orphanDependents` add or remove the
//! collector's finalizers, an object held by finalizers stays marked
//! deleting until an update takes the last one off, `DeleteOptions` and
//! the metadata the collector reads are validated with upstream's Status.

use std::sync::Arc;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::core::Request;
use serde_json::{Value, json};

struct Cluster {
    _api: Arc<ApiServer>,
    client: kube::Client,
    pods: Api<Pod>,
}

async fn cluster() -> Cluster {
    let start = "2026-01-01T00:00:00Z"
        .parse()
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let api = ApiServer::new(
        AnyStore::Memory(MemStore::new()),
        Clock::virtual_from(start),
        ApiConfig::default(),
    )
    .await
    .expect("the API server starts");
    let client = in_process::client(&api, User::admin(), "default").expect("a client");
    let pods = Api::namespaced(client.clone(), "default");
    Cluster {
        _api: api,
        client,
        pods,
    }
}

/// A pod named `name`, with `metadata` merged in (finalizers, owners) and
/// bound to `node` when given.
fn pod(name: &str, metadata: Value, node: Option<&str>) -> Pod {
    let mut object = json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    });
    if let (Some(meta), Some(extra)) = (object["metadata"].as_object_mut(), metadata.as_object()) {
        meta.extend(extra.clone());
    }
    if let Some(node) = node {
        object["spec"]["nodeName"] = json!(node);
    }
    serde_json::from_value(object).expect("a pod")
}

fn policy(policy: PropagationPolicy) -> DeleteParams {
    DeleteParams {
        propagation_policy: Some(policy),
        ..DeleteParams::default()
    }
}

impl Cluster {
    async fn create(&self, pod: Pod) -> Pod {
        self.pods
            .create(&PostParams::default(), &pod)
            .await
            .expect("created")
    }

    /// Takes every finalizer off pod `name` (a merge patch).
    async fn remove_finalizers(&self, name: &str) {
        let none = json!({"metadata": {"finalizers": null}});
        self.pods
            .patch(name, &PatchParams::default(), &Patch::Merge(&none))
            .await
            .expect("patched");
    }

    async fn get(&self, name: &str) -> Option<Pod> {
        self.pods.get_opt(name).await.expect("a get")
    }

    /// A raw request's status code and body.
    async fn raw(&self, request: axum::http::Request<Vec<u8>>) -> (u16, Value) {
        let response = self
            .client
            .send(request.map(Into::into))
            .await
            .expect("an answer");
        let status = response.status().as_u16();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn delete_with(&self, name: &str, options: Value) -> (u16, Value) {
        let request = Request::new("/api/v1/namespaces/default/pods")
            .delete(name, &DeleteParams::default())
            .expect("a request");
        let (parts, _) = request.into_parts();
        let body = serde_json::to_vec(&options).unwrap_or_default();
        self.raw(axum::http::Request::from_parts(parts, body)).await
    }
}

/// `what` was refused with a 422 whose message has `message`.
fn assert_invalid<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>, message: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{what}: {}", status.message);
            assert!(
                status.message.contains(message),
                "{what}: {} lacks {message}",
                status.message
            );
        }
        other => panic!("{what}: a 422 with {message}: {other:?}"),
    }
}

fn finalizers(pod: &Pod) -> Vec<String> {
    pod.metadata.finalizers.clone().unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn propagation_policies_add_the_collectors_finalizers_and_hold_the_object() {
    struct Case {
        name: &'static str,
        finalizers: Value,
        policy: Option<PropagationPolicy>,
        /// The finalizers it keeps; `None`: deleted at once.
        want: Option<&'static [&'static str]>,
    }
    let cases = [
        Case {
            name: "background: deleted at once",
            finalizers: json!([]),
            policy: Some(PropagationPolicy::Background),
            want: None,
        },
        Case {
            name: "no policy: the default (background)",
            finalizers: json!([]),
            policy: None,
            want: None,
        },
        Case {
            name: "orphan: held by the orphan finalizer",
            finalizers: json!([]),
            policy: Some(PropagationPolicy::Orphan),
            want: Some(&["orphan"]),
        },
        Case {
            name: "foreground: held by the foregroundDeletion finalizer",
            finalizers: json!(["example.com/x"]),
            policy: Some(PropagationPolicy::Foreground),
            want: Some(&["example.com/x", "foregroundDeletion"]),
        },
        Case {
            name: "another finalizer holds it",
            finalizers: json!(["example.com/x"]),
            policy: Some(PropagationPolicy::Background),
            want: Some(&["example.com/x"]),
        },
    ];
    let c = cluster().await;
    for (i, case) in cases.into_iter().enumerate() {
        let name = format!("p{i}");
        let created = c
            .create(pod(&name, json!({"finalizers": case.finalizers}), None))
            .await;
        let params = case.policy.map(policy).unwrap_or_default();
        c.pods.delete(&name, &params).await.expect("deleted");
        let kept = c.get(&name).await;
        match case.want {
            None => assert!(kept.is_none(), "{}: gone", case.name),
            Some(want) => {
                let kept = kept.unwrap_or_else(|| panic!("{}: kept", case.name));
                assert_eq!(finalizers(&kept), want, "{}", case.name);
                assert!(kept.metadata.deletion_timestamp.is_some(), "{}", case.name);
                assert_eq!(
                    kept.metadata.deletion_grace_period_seconds,
                    Some(0),
                    "{}",
                    case.name
                );
                assert_eq!(
                    kept.metadata.generation,
                    created.metadata.generation.map(|g| g + 1),
                    "{}: the deletion moves the generation",
                    case.name
                );
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_update_taking_the_last_finalizer_off_deletes_the_object() {
    let c = cluster().await;
    c.create(pod(
        "held",
        json!({"finalizers": ["example.com/a", "example.com/b"]}),
        None,
    ))
    .await;
    c.pods
        .delete("held", &policy(PropagationPolicy::Orphan))
        .await
        .expect("deleted");

    // No finalizer may be added while it is deleting.
    let add = json!({"metadata": {"finalizers": ["example.com/a", "example.com/b", "orphan", "example.com/c"]}});
    let added = c
        .pods
        .patch("held", &PatchParams::default(), &Patch::Merge(&add))
        .await;
    assert_invalid(
        "a new finalizer",
        added,
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/c\"}",
    );

    // Taking some off keeps it; taking the last one off deletes it.
    let some = json!({"metadata": {"finalizers": ["example.com/b"]}});
    c.pods
        .patch("held", &PatchParams::default(), &Patch::Merge(&some))
        .await
        .expect("patched");
    assert_eq!(
        c.get("held").await.map(|p| finalizers(&p)),
        Some(vec!["example.com/b".to_string()])
    );
    c.remove_finalizers("held").await;
    assert!(c.get("held").await.is_none(), "deleted by the update");

    // An object not being deleted just loses its finalizers.
    c.create(pod("alive", json!({"finalizers": ["example.com/a"]}), None))
        .await;
    c.remove_finalizers("alive").await;
    assert!(c.get("alive").await.is_some());
}

/// A bound pod is deleted gracefully in the foreground: its node's final
/// delete (grace 0) leaves it held by the finalizer, with grace 0, until
/// the collector takes the finalizer off.
#[tokio::test(start_paused = true)]
async fn a_graceful_foreground_deletion_ends_with_the_finalizer() {
    let c = cluster().await;
    c.create(pod("bound", json!({}), Some("n1"))).await;
    c.pods
        .delete(
            "bound",
            &DeleteParams {
                grace_period_seconds: Some(10),
                ..policy(PropagationPolicy::Foreground)
            },
        )
        .await
        .expect("deleted");
    let marked = c.get("bound").await.expect("kept");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(10));
    assert_eq!(finalizers(&marked), vec!["foregroundDeletion"]);
    assert_eq!(
        marked.metadata.deletion_timestamp.map(|t| t.0.to_string()),
        Some("2026-01-01T00:00:10Z".to_string())
    );

    c.pods
        .delete("bound", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleted");
    let held = c.get("bound").await.expect("held by its finalizer");
    assert_eq!(held.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(
        held.metadata.deletion_timestamp.map(|t| t.0.to_string()),
        Some("2026-01-01T00:00:00Z".to_string()),
        "the deadline moves back by the grace period taken off"
    );
    c.remove_finalizers("bound").await;
    assert!(c.get("bound").await.is_none());
}

#[tokio::test(start_paused = true)]
async fn delete_options_are_validated_and_answered_as_upstream() {
    struct Case {
        name: &'static str,
        options: Value,
        code: u16,
        message: &'static str,
    }
    let cases = [
        Case {
            name: "orphanDependents and a propagation policy",
            options: json!({"orphanDependents": true, "propagationPolicy": "Orphan"}),
            code: 422,
            message: "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set",
        },
        Case {
            name: "an unknown policy",
            options: json!({"propagationPolicy": "Sideways"}),
            code: 422,
            message: "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
        },
        Case {
            name: "the old orphanDependents=false on an object kept: 202",
            options: json!({"orphanDependents": false}),
            code: 202,
            message: "",
        },
        Case {
            name: "the old orphanDependents=true: the orphan finalizer",
            options: json!({"orphanDependents": true}),
            code: 200,
            message: "",
        },
    ];
    let c = cluster().await;
    for (i, case) in cases.into_iter().enumerate() {
        let name = format!("p{i}");
        c.create(pod(&name, json!({"finalizers": ["example.com/x"]}), None))
            .await;
        let (code, body) = c.delete_with(&name, case.options).await;
        assert_eq!(code, case.code, "{}: {body}", case.name);
        if case.code == 422 {
            assert_eq!(body["message"], case.message, "{}", case.name);
            assert_eq!(body["details"]["group"], "meta.k8s.io", "{}", case.name);
            assert_eq!(body["details"]["kind"], "DeleteOptions", "{}", case.name);
        }
    }
    let orphaned = c.get("p3").await.expect("kept");
    assert_eq!(finalizers(&orphaned), vec!["example.com/x", "orphan"]);
}

/// Events own nothing: a deletion never waits for the collector.
#[tokio::test(start_paused = true)]
async fn events_are_deleted_at_once_whatever_the_policy() {
    let c = cluster().await;
    let events: Api<Event> = Api::namespaced(c.client.clone(), "default");
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Test", "message": "m", "type": "Normal",
    }))
    .expect("an event");
    events
        .create(&PostParams::default(), &event)
        .await
        .expect("created");
    events
        .delete("e1", &policy(PropagationPolicy::Foreground))
        .await
        .expect("deleted");
    assert!(events.get_opt("e1").await.expect("a get").is_none());
}

#[tokio::test(start_paused = true)]
async fn owner_references_finalizers_and_uids_are_validated() {
    struct Case {
        name: &'static str,
        metadata: Value,
        message: &'static str,
    }
    let owner = |uid: &str, controller: bool| json!({"apiVersion": "v1", "kind": "Pod", "name": format!("o{uid}"), "uid": uid, "controller": controller});
    let cases = [
        Case {
            name: "a reference without a UID",
            metadata: json!({"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": ""}]}),
            message: "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
        },
        Case {
            name: "two controllers",
            metadata: json!({"ownerReferences": [owner("1", true), owner("2", true)]}),
            message: "Only one reference can have Controller set to true. Found \"true\" in references for Pod/o1 and Pod/o2",
        },
        Case {
            name: "orphan and foreground finalizers",
            metadata: json!({"finalizers": ["orphan", "foregroundDeletion"]}),
            message: "finalizer orphan and foregroundDeletion cannot be both set",
        },
    ];
    let c = cluster().await;
    for case in cases {
        let created = c
            .pods
            .create(&PostParams::default(), &pod("bad", case.metadata, None))
            .await;
        assert_invalid(case.name, created, case.message);
    }

    // A UID sent with a patch is a precondition: another object's fails.
    c.create(pod("p", json!({}), None)).await;
    let wrong = json!({"metadata": {"uid": "not-its-uid", "labels": {"a": "b"}}});
    let patched = c
        .pods
        .patch("p", &PatchParams::default(), &Patch::Strategic(&wrong))
        .await;
    assert_invalid(
        "another UID",
        patched,
        "metadata.uid: Invalid value: \"not-its-uid\": field is immutable",
    );
}

#[tokio::test(start_paused = true)]
async fn deletecollection_deletes_each_object_as_one_delete_would() {
    let c = cluster().await;
    c.create(pod("a", json!({"labels": {"app": "x"}}), None))
        .await;
    c.create(pod(
        "b",
        json!({"labels": {"app": "x"}, "finalizers": ["example.com/x"]}),
        None,
    ))
    .await;
    c.pods
        .delete_collection(
            &policy(PropagationPolicy::Orphan),
            &ListParams::default().labels("app=x"),
        )
        .await
        .expect("deleted");
    let a = c.get("a").await.expect("held by the orphan finalizer");
    assert_eq!(finalizers(&a), vec!["orphan"]);
    let b = c.get("b").await.expect("held");
    assert_eq!(finalizers(&b), vec!["example.com/x", "orphan"]);
}
