//! The types upstream's kube-scheduler and kube-controller-manager list and
//! watch at start (their informers never sync while one answers 404),
//! served as stored objects: each created, listed and watched with kube-rs
//! (JSON, over the in-process transport) and as protobuf (client-go's
//! default for built-in types), advertised by discovery, its unknown
//! fields refused under strict field validation.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_apiserver::resources::{
    CSI_DRIVERS, CSI_NODES, CSI_STORAGE_CAPACITIES, DEVICE_CLASSES, PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES, REPLICATION_CONTROLLERS, RESOURCE_CLAIMS, RESOURCE_SLICES, ResourceType,
    STORAGE_CLASSES, VOLUME_ATTACHMENTS,
};
use berth_apiserver::server::router;
use common::{ADMIN, api, collection_path, sample, send};
use futures::StreamExt;
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use tower::ServiceExt;

/// What kube-scheduler v1.36's informers and kube-controller-manager's
/// (node lifecycle, taint eviction, attach/detach, PV binder) list that
/// berth did not serve before.
const NEW_TYPES: &[&ResourceType] = &[
    &PERSISTENT_VOLUMES,
    &PERSISTENT_VOLUME_CLAIMS,
    &REPLICATION_CONTROLLERS,
    &STORAGE_CLASSES,
    &CSI_DRIVERS,
    &CSI_NODES,
    &CSI_STORAGE_CAPACITIES,
    &VOLUME_ATTACHMENTS,
    &DEVICE_CLASSES,
    &RESOURCE_CLAIMS,
    &RESOURCE_SLICES,
];

fn api_resource(rt: &ResourceType) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(rt.group, rt.version, rt.kind),
        rt.plural,
    )
}

fn get_protobuf(uri: &str) -> Request<Body> {
    Request::get(uri)
        .header("authorization", format!("Bearer {ADMIN}"))
        .header("accept", berth_proto::CONTENT_TYPE)
        .body(Body::empty())
        .expect("request")
}

/// The first event of a protobuf watch of `uri`.
async fn first_protobuf_event(api: &common::Api, uri: &str) -> (String, Value) {
    let response = router(api.server.clone())
        .oneshot(get_protobuf(uri))
        .await
        .expect("response");
    assert_eq!(response.status(), StatusCode::OK, "{uri}");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(
        content_type.starts_with(berth_proto::WATCH_CONTENT_TYPE)
            || content_type.starts_with(berth_proto::CONTENT_TYPE),
        "{uri}: {content_type}"
    );
    let mut stream = response.into_body().into_data_stream();
    let mut buffer = Vec::new();
    loop {
        if let Some((frame, _)) =
            berth_proto::watch::split_frame(&buffer, 1 << 20).expect("a frame")
        {
            return berth_proto::watch::decode_event(frame).expect("a watch event");
        }
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next()).await;
        let Ok(Some(Ok(chunk))) = next else {
            panic!("{uri}: no event");
        };
        buffer.extend_from_slice(&chunk);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_type_upstreams_informers_list_is_listed_and_watched_as_json_and_protobuf() {
    let api = api().await;
    let client = in_process::client(&api.server, User::admin(), "default").expect("client");
    for rt in NEW_TYPES {
        let what = format!("{}.{}", rt.kind, rt.group);
        let name = format!("{}-1", rt.singular);
        let created = api.create(&collection_path(rt), sample(rt, &name)).await;
        assert_eq!(created["metadata"]["name"], json!(name), "{what}");

        // kube-rs, JSON.
        let resource = api_resource(rt);
        let objects: kube::Api<DynamicObject> = if rt.namespaced {
            kube::Api::namespaced_with(client.clone(), "default", &resource)
        } else {
            kube::Api::all_with(client.clone(), &resource)
        };
        let list = objects
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("{what}: list: {e}"));
        let names: Vec<_> = list
            .items
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        assert_eq!(names, std::slice::from_ref(&name), "{what}");
        let mut watch = objects
            .watch(&WatchParams::default().timeout(5), "0")
            .await
            .unwrap_or_else(|e| panic!("{what}: watch: {e}"))
            .boxed();
        match watch.next().await {
            Some(Ok(WatchEvent::Added(object))) => {
                assert_eq!(
                    object.metadata.name.as_deref(),
                    Some(name.as_str()),
                    "{what}"
                );
            }
            other => panic!("{what}: first watch event {other:?}"),
        }

        // Protobuf, as client-go asks for built-in types.
        let (status, _, bytes) = send(&api.server, get_protobuf(&collection_path(rt))).await;
        assert_eq!(status, StatusCode::OK, "{what}");
        let list = berth_proto::decode_object(&bytes).expect("a protobuf list");
        assert_eq!(list["kind"], json!(rt.list_kind()), "{what}: {list}");
        assert_eq!(list["items"][0]["metadata"]["name"], json!(name), "{what}");
        let (event, object) = first_protobuf_event(
            &api,
            &format!(
                "{}?watch=true&resourceVersion=0&timeoutSeconds=5",
                collection_path(rt)
            ),
        )
        .await;
        assert_eq!(event, "ADDED", "{what}");
        assert_eq!(object["kind"], json!(rt.kind), "{what}: {object}");
        assert_eq!(object["metadata"]["name"], json!(name), "{what}");

        // Strict field validation through the k8s-openapi type.
        let mut bad = sample(rt, &format!("{}-2", rt.singular));
        bad["notAField"] = json!(1);
        let (status, answer) = api
            .req(
                "POST",
                &format!("{}?fieldValidation=Strict", collection_path(rt)),
                bad,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {answer}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap_or("")
                .contains("notAField"),
            "{what}: {answer}"
        );
    }
}

#[tokio::test]
async fn discovery_advertises_them_under_upstreams_names() {
    let api = api().await;
    for (uri, want) in [
        (
            "/api/v1",
            vec![
                ("persistentvolumes", "pv"),
                ("persistentvolumeclaims", "pvc"),
                ("replicationcontrollers", "rc"),
            ],
        ),
        (
            "/apis/storage.k8s.io/v1",
            vec![
                ("storageclasses", "sc"),
                ("csidrivers", ""),
                ("csinodes", ""),
                ("csistoragecapacities", ""),
                ("volumeattachments", ""),
            ],
        ),
        (
            "/apis/resource.k8s.io/v1",
            vec![
                ("deviceclasses", ""),
                ("resourceclaims", ""),
                ("resourceslices", ""),
            ],
        ),
    ] {
        let (status, list) = api.req("GET", uri, Value::Null).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {list}");
        let resources = list["resources"].as_array().cloned().unwrap_or_default();
        for (plural, short) in want {
            let found = resources
                .iter()
                .find(|r| r["name"] == json!(plural))
                .unwrap_or_else(|| panic!("{uri} lacks {plural}: {list}"));
            let shorts = found["shortNames"].as_array().cloned().unwrap_or_default();
            assert_eq!(
                shorts.first().and_then(Value::as_str).unwrap_or(""),
                short,
                "{plural}"
            );
            assert!(
                found["verbs"]
                    .as_array()
                    .is_some_and(|v| v.contains(&json!("watch"))),
                "{plural}"
            );
        }
    }
}
