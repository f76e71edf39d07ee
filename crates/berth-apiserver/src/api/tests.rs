//! The verbs that first try the watch cache's copy, against a cache that
//! is behind the store.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore, Store};
use serde_json::{Value, json};

use super::query::Query;
use super::scope::Scope;
use super::server::{ApiConfig, ApiServer};
use crate::auth::User;
use crate::objects;
use crate::resources::{PODS, ResourceType};

/// A request for `rt` `default/web` as `user`, with `headers`.
fn scope<'a>(rt: &'static ResourceType, user: &'a User, headers: &'a HeaderMap) -> Scope<'a> {
    Scope {
        rt,
        external: None,
        namespace: "default",
        name: "web",
        subresource: "",
        user,
        query: Query::parse(""),
        raw_query: "",
        headers,
    }
}

/// What happens in the store after the watch cache's copy of the pod
/// was taken (so the cache is that far behind).
#[derive(Clone, Copy, Debug)]
enum Since {
    Nothing,
    BoundElsewhere,
    MarkedForDeletion,
    Deleted,
    DeletedAndCreatedAgain,
}

fn pod_bytes(uid: &str, extra_meta: Value, node: Option<&str>) -> Vec<u8> {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Pending"},
    });
    if let (Some(meta), Some(extra)) = (pod["metadata"].as_object_mut(), extra_meta.as_object()) {
        meta.extend(extra.clone());
    }
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    objects::to_json_bytes(&pod)
}

async fn apply(server: &ApiServer, key: &str, since: Since) {
    let store = &server.store;
    let current = store
        .get(key)
        .await
        .ok()
        .flatten()
        .map(|kv| kv.mod_revision);
    let rev = current.unwrap_or(0);
    let result = match since {
        Since::Nothing => return,
        Since::BoundElsewhere => store
            .update(key, pod_bytes("u1", json!({}), Some("other")), rev)
            .await
            .map(|_| ()),
        Since::MarkedForDeletion => store
            .update(
                key,
                pod_bytes(
                    "u1",
                    json!({"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}),
                    None,
                ),
                rev,
            )
            .await
            .map(|_| ()),
        Since::Deleted => store.delete(key, rev).await.map(|_| ()),
        Since::DeletedAndCreatedAgain => {
            let deleted = store.delete(key, rev).await;
            assert!(deleted.is_ok(), "delete: {deleted:?}");
            store
                .create(key, pod_bytes("u2", json!({}), None))
                .await
                .map(|_| ())
        }
    };
    assert!(result.is_ok(), "{since:?}: {result:?}");
}

/// The watch cache's entry of pod `object` (resourceVersion set) at `rv`.
fn cache_entry(object: &Value, rv: i64) -> std::sync::Arc<crate::cache::Cached> {
    std::sync::Arc::new(crate::cache::Cached {
        namespace: objects::meta_str(object, "namespace").to_string(),
        name: objects::meta_str(object, "name").to_string(),
        rv,
        json: std::sync::Arc::from(object.to_string()),
        labels: Default::default(),
        fields: crate::strategy::selectable_fields(&PODS, object),
    })
}

/// The watch cache may be behind the store when a binding arrives: the
/// binding is then decided on the stored pod, never on the stale copy.
/// It binds exactly once, never a deleted or terminating pod, and
/// refuses with upstream's errors.
#[tokio::test]
async fn binding_from_a_stale_cache_entry_decides_on_the_stored_pod() {
    struct Case {
        since: Since,
        /// The cached copy says the pod is bound / terminating (an older
        /// pod of the same name).
        cached_bound: bool,
        cached_terminating: bool,
        want: Result<(), (u16, &'static str)>,
        /// spec.nodeName and metadata.uid in the store afterwards
        /// (None: no pod).
        stored: Option<(&'static str, &'static str)>,
    }
    let cases = [
        Case {
            since: Since::Nothing,
            cached_bound: false,
            cached_terminating: false,
            want: Ok(()),
            stored: Some(("node1", "u1")),
        },
        Case {
            since: Since::BoundElsewhere,
            cached_bound: false,
            cached_terminating: false,
            want: Err((
                409,
                "Operation cannot be fulfilled on pods \"web\": pod web is already assigned to node \"other\"",
            )),
            stored: Some(("other", "u1")),
        },
        Case {
            since: Since::MarkedForDeletion,
            cached_bound: false,
            cached_terminating: false,
            want: Err((
                409,
                "Operation cannot be fulfilled on pods \"web\": pod is being deleted, cannot be assigned to a host",
            )),
            stored: Some(("", "u1")),
        },
        Case {
            since: Since::Deleted,
            cached_bound: false,
            cached_terminating: false,
            want: Err((404, "pods \"web\" not found")),
            stored: None,
        },
        Case {
            since: Since::DeletedAndCreatedAgain,
            cached_bound: false,
            cached_terminating: false,
            want: Ok(()),
            stored: Some(("node1", "u2")),
        },
        Case {
            since: Since::DeletedAndCreatedAgain,
            cached_bound: true,
            cached_terminating: false,
            want: Ok(()),
            stored: Some(("node1", "u2")),
        },
        Case {
            since: Since::DeletedAndCreatedAgain,
            cached_bound: false,
            cached_terminating: true,
            want: Ok(()),
            stored: Some(("node1", "u2")),
        },
    ];
    for case in cases {
        let store = AnyStore::Memory(MemStore::new());
        let server = ApiServer::new(store, Clock::real(), ApiConfig::default())
            .await
            .expect("server starts");
        let key = PODS.key("default", "web");
        let created = server
            .store
            .create(&key, pod_bytes("u1", json!({}), None))
            .await;
        assert!(created.is_ok());
        // The copy the cache holds: the pod as it was, resourceVersion set.
        let (mut cached, rv) = server
            .registry
            .read(&PODS, "default", "web")
            .await
            .expect("pod readable");
        if case.cached_bound {
            cached["spec"]["nodeName"] = json!("old-node");
        }
        if case.cached_terminating {
            cached["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        apply(&server, &key, case.since).await;

        let got = server
            .bind_to("default", "web", "node1", Some(cache_entry(&cached, rv)))
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| (e.code, e.message));
        let want = case
            .want
            .map(|()| 201)
            .map_err(|(code, message)| (code, message.to_string()));
        assert_eq!(got, want, "{:?}", case.since);

        let stored = server.store.get(&key).await.ok().flatten().map(|kv| {
            let pod: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
            (
                pod.pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                objects::meta_str(&pod, "uid").to_string(),
            )
        });
        let want_stored = case.stored.map(|(n, u)| (n.to_string(), u.to_string()));
        assert_eq!(stored, want_stored, "{:?}", case.since);

        // A second binding with the same stale copy never binds again.
        if want_stored.is_some_and(|(n, _)| n == "node1") {
            let again = server
                .bind_to("default", "web", "node2", Some(cache_entry(&cached, rv)))
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| (e.code, e.message));
            assert_eq!(
                again,
                Err((
                    409,
                    "Operation cannot be fulfilled on pods \"web\": pod web is already assigned to node \"node1\""
                        .to_string()
                )),
                "{:?}",
                case.since
            );
        }
    }
}

/// Patches and deletes try the watch cache's copy first. When that copy
/// is behind the store, the outcome must be the one the stored object
/// gives: a patch that is a no-op on the stale copy still writes, a
/// delete of a pod that has since finished is not graceful, a UID
/// precondition is checked against the stored pod.
#[tokio::test]
async fn patches_and_deletes_on_a_stale_cache_copy_decide_on_the_stored_object() {
    #[derive(Debug)]
    enum Op {
        MergePatchLabel(&'static str),
        Delete {
            uid_precondition: Option<&'static str>,
        },
    }
    struct Case {
        /// The stored pod after the cache took its copy (labels app=<v>, uid, phase).
        stored_since: (&'static str, &'static str, &'static str),
        op: Op,
        want_code: u16,
        /// label app, deletionTimestamp set (None: the pod is gone).
        want_stored: Option<(&'static str, bool)>,
    }
    let cases = [
        Case {
            stored_since: ("two", "u1", "Running"),
            op: Op::MergePatchLabel("three"),
            want_code: 200,
            want_stored: Some(("three", false)),
        },
        // A no-op on the cache's copy (app=one) is a change on the store's.
        Case {
            stored_since: ("two", "u1", "Running"),
            op: Op::MergePatchLabel("one"),
            want_code: 200,
            want_stored: Some(("one", false)),
        },
        // The cache thinks the pod runs (graceful); it has finished.
        Case {
            stored_since: ("one", "u1", "Failed"),
            op: Op::Delete {
                uid_precondition: None,
            },
            want_code: 200,
            want_stored: None,
        },
        Case {
            stored_since: ("one", "u1", "Running"),
            op: Op::Delete {
                uid_precondition: None,
            },
            want_code: 200,
            want_stored: Some(("one", true)),
        },
        // Deleted and created again: the precondition names the new pod.
        Case {
            stored_since: ("one", "u2", "Running"),
            op: Op::Delete {
                uid_precondition: Some("u2"),
            },
            want_code: 200,
            want_stored: Some(("one", true)),
        },
        Case {
            stored_since: ("one", "u2", "Running"),
            op: Op::Delete {
                uid_precondition: Some("u1"),
            },
            want_code: 409,
            want_stored: Some(("one", false)),
        },
    ];
    let pod = |app: &str, uid: &str, phase: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": uid, "labels": {"app": app}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": phase},
        })
        .to_string()
        .into_bytes()
    };
    for case in cases {
        let store = AnyStore::Memory(MemStore::new());
        let server = ApiServer::new(store, Clock::real(), ApiConfig::default())
            .await
            .expect("server starts");
        let key = PODS.key("default", "web");
        let first = server
            .store
            .create(&key, pod("one", "u1", "Running"))
            .await
            .expect("create");
        let cache = server.registry.cache(&PODS).expect("pods cache").clone();
        for _ in 0..100_000 {
            if cache.get(&key).await.is_some_and(|c| c.rv == first) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            cache.get(&key).await.is_some_and(|c| c.rv == first),
            "cache caught up"
        );
        let (app, uid, phase) = case.stored_since;
        let moved = if uid == "u1" {
            server.store.update(&key, pod(app, uid, phase), first).await
        } else {
            let deleted = server.store.delete(&key, first).await;
            assert!(deleted.is_ok());
            server.store.create(&key, pod(app, uid, phase)).await
        };
        let moved = moved.expect("store write");
        // Nothing yielded to the cache's feeder since (one thread): stale.
        assert!(
            cache.get(&key).await.is_some_and(|c| c.rv < moved),
            "{:?}: the cache is behind",
            case.op
        );
        let user = User::admin();
        let got = match case.op {
            Op::MergePatchLabel(value) => {
                let mut headers = HeaderMap::new();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/merge-patch+json"),
                );
                let body = json!({"metadata": {"labels": {"app": value}}}).to_string();
                server
                    .patch(&scope(&PODS, &user, &headers), &Bytes::from(body))
                    .await
            }
            Op::Delete { uid_precondition } => {
                let body = match uid_precondition {
                    Some(uid) => json!({"preconditions": {"uid": uid}}).to_string(),
                    None => String::new(),
                };
                let mut headers = HeaderMap::new();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                server
                    .delete(&scope(&PODS, &user, &headers), &Bytes::from(body))
                    .await
            }
        };
        let code = got.map(|r| r.status().as_u16()).unwrap_or_else(|e| e.code);
        assert_eq!(code, case.want_code, "{:?}", case.op);
        let stored = server.store.get(&key).await.ok().flatten().map(|kv| {
            let pod: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
            (
                pod.pointer("/metadata/labels/app")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                !objects::meta_str(&pod, "deletionTimestamp").is_empty(),
            )
        });
        let want = case.want_stored.map(|(a, d)| (a.to_string(), d));
        assert_eq!(stored, want, "{:?}", case.op);
    }
}

/// A request's future is moved (into boxes, through the router's and the
/// connection's layers) before it runs: kept small, since the verbs' state
/// machines live behind a box of their own. Inline they made it tens of
/// kilobytes, copied for every request.
#[tokio::test]
async fn a_requests_future_stays_small() {
    let store = AnyStore::Memory(MemStore::new());
    let server = ApiServer::new(store, Clock::real(), ApiConfig::default())
        .await
        .expect("server starts");
    let request = axum::http::Request::builder()
        .uri("/api/v1/namespaces/default/pods")
        .body(axum::body::Body::empty())
        .expect("request");
    let future = server.clone().handle(request);
    let size = std::mem::size_of_val(&future);
    assert!(size <= 4096, "the request future is {size} bytes");
}
