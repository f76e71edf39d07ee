//! The apps/v1 workload types as the API serves them, through an
//! in-process kube client: upstream's defaults (and nothing over what the
//! client set), the status a create clears, what the main resource and
//! `/status` may each change, the generation, and the 422s of validation.

use std::sync::Arc;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use serde_json::{Value, json};

/// The API server on the in-memory store and an admin client of it.
async fn admin() -> (Arc<ApiServer>, kube::Client) {
    let api = ApiServer::new(
        AnyStore::Memory(MemStore::new()),
        Clock::real(),
        ApiConfig::default(),
    )
    .await
    .expect("the API server starts");
    let client = in_process::client(&api, User::admin(), "default").expect("a client");
    (api, client)
}

/// One request with a JSON body (`Value::Null`: none); the answer, or the
/// refusal's HTTP code and message.
async fn call(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &Value,
) -> Result<Value, (u16, String)> {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let request = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(bytes)
        .expect("a request");
    client.request::<Value>(request).await.map_err(|e| match e {
        kube::Error::Api(status) => (status.code, status.message),
        other => (0, other.to_string()),
    })
}

async fn post(client: &kube::Client, plural: &str, object: &Value) -> Result<Value, (u16, String)> {
    let uri = format!("/apis/apps/v1/namespaces/default/{plural}");
    call(client, "POST", &uri, "application/json", object).await
}

async fn put(
    client: &kube::Client,
    plural: &str,
    name: &str,
    subresource: &str,
    object: &Value,
) -> Result<Value, (u16, String)> {
    let uri = format!("/apis/apps/v1/namespaces/default/{plural}/{name}{subresource}");
    call(client, "PUT", &uri, "application/json", object).await
}

/// A template whose labels the selector `app: web` selects.
fn template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}})
}

fn workload(kind: &str, name: &str, spec: Value) -> Value {
    let mut full = json!({"selector": {"matchLabels": {"app": "web"}}, "template": template()});
    if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            full.insert(k.clone(), v.clone());
        }
    }
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": full})
}

fn plural(kind: &str) -> String {
    format!("{}s", kind.to_lowercase())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_get_upstreams_defaults_and_keep_what_the_client_set() {
    struct Case {
        name: &'static str,
        kind: &'static str,
        spec: Value,
        /// JSON pointers into the created object and their values
        /// (`Value::Null`: absent).
        want: Vec<(&'static str, Value)>,
    }
    let cases = [
        Case {
            name: "a Deployment gets one replica, RollingUpdate 25%/25%, ten revisions, 600 s",
            kind: "Deployment",
            spec: json!({}),
            want: vec![
                ("/spec/replicas", json!(1)),
                (
                    "/spec/strategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
                ),
                ("/spec/revisionHistoryLimit", json!(10)),
                ("/spec/progressDeadlineSeconds", json!(600)),
                ("/status", json!({})),
                ("/metadata/generation", json!(1)),
            ],
        },
        Case {
            name: "a Deployment's own values stay; Recreate gets no rollingUpdate",
            kind: "Deployment",
            spec: json!({"replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0,
                         "progressDeadlineSeconds": 30}),
            want: vec![
                ("/spec/replicas", json!(0)),
                ("/spec/strategy", json!({"type": "Recreate"})),
                ("/spec/revisionHistoryLimit", json!(0)),
                ("/spec/progressDeadlineSeconds", json!(30)),
            ],
        },
        Case {
            name: "kubectl create deployment's empty strategy is a RollingUpdate",
            kind: "Deployment",
            spec: json!({"strategy": {}, "replicas": null}),
            want: vec![
                ("/spec/strategy/type", json!("RollingUpdate")),
                ("/spec/strategy/rollingUpdate/maxSurge", json!("25%")),
                ("/spec/replicas", json!(1)),
            ],
        },
        Case {
            name: "a half-set rolling update gets the other half",
            kind: "Deployment",
            spec: json!({"strategy": {"rollingUpdate": {"maxSurge": 0}}}),
            want: vec![(
                "/spec/strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 0}}),
            )],
        },
        Case {
            name: "the pod template gets the pod spec's defaults, not the pod's",
            kind: "Deployment",
            spec: json!({}),
            want: vec![
                ("/spec/template/spec/restartPolicy", json!("Always")),
                ("/spec/template/spec/dnsPolicy", json!("ClusterFirst")),
                (
                    "/spec/template/spec/schedulerName",
                    json!("default-scheduler"),
                ),
                (
                    "/spec/template/spec/terminationGracePeriodSeconds",
                    json!(30),
                ),
                ("/spec/template/spec/securityContext", json!({})),
                (
                    "/spec/template/spec/containers/0/imagePullPolicy",
                    json!("IfNotPresent"),
                ),
                (
                    "/spec/template/spec/containers/0/terminationMessagePolicy",
                    json!("File"),
                ),
                ("/spec/template/spec/enableServiceLinks", Value::Null),
                ("/spec/template/spec/priority", Value::Null),
            ],
        },
        Case {
            name: "a ReplicaSet gets one replica and a cleared status",
            kind: "ReplicaSet",
            spec: json!({}),
            want: vec![("/spec/replicas", json!(1)), ("/status/replicas", json!(0))],
        },
        Case {
            name: "a DaemonSet gets RollingUpdate 1/0, ten revisions, template generation 1",
            kind: "DaemonSet",
            spec: json!({}),
            want: vec![
                (
                    "/spec/updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
                ),
                ("/spec/revisionHistoryLimit", json!(10)),
                (
                    "/metadata/annotations/deprecated.daemonset.template.generation",
                    json!("1"),
                ),
            ],
        },
        Case {
            name: "an OnDelete DaemonSet gets no rollingUpdate",
            kind: "DaemonSet",
            spec: json!({"updateStrategy": {"type": "OnDelete"}}),
            want: vec![("/spec/updateStrategy", json!({"type": "OnDelete"}))],
        },
        Case {
            name: "a StatefulSet gets OrderedReady, RollingUpdate from 0, claims retained",
            kind: "StatefulSet",
            spec: json!({"volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}),
            want: vec![
                ("/spec/podManagementPolicy", json!("OrderedReady")),
                (
                    "/spec/updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
                ),
                (
                    "/spec/persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                ),
                ("/spec/replicas", json!(1)),
                ("/spec/revisionHistoryLimit", json!(10)),
                (
                    "/spec/volumeClaimTemplates/0/spec/volumeMode",
                    json!("Filesystem"),
                ),
                (
                    "/spec/volumeClaimTemplates/0/status/phase",
                    json!("Pending"),
                ),
            ],
        },
        Case {
            name: "a StatefulSet's RollingUpdate without rollingUpdate gets no partition",
            kind: "StatefulSet",
            spec: json!({"podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate"},
                         "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}),
            want: vec![
                ("/spec/podManagementPolicy", json!("Parallel")),
                ("/spec/updateStrategy", json!({"type": "RollingUpdate"})),
                (
                    "/spec/persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Delete", "whenScaled": "Retain"}),
                ),
            ],
        },
    ];
    let (_api, client) = admin().await;
    for (i, case) in cases.iter().enumerate() {
        let mut object = workload(case.kind, &format!("w{i}"), case.spec.clone());
        object["status"] = json!({"replicas": 7});
        let created = post(&client, &plural(case.kind), &object)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
        for (pointer, want) in &case.want {
            let got = created.pointer(pointer).cloned().unwrap_or(Value::Null);
            assert_eq!(&got, want, "{}: {pointer}", case.name);
        }
    }
}

/// Upstream's strategies: the main resource keeps the stored status, a
/// status write keeps the stored spec; the generation moves with the spec
/// (and, for Deployments, the annotations); a DaemonSet's template
/// generation with its template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_and_status_writes_keep_each_others_fields_and_count_generations() {
    struct Step {
        name: &'static str,
        kind: &'static str,
        subresource: &'static str,
        /// What the write changes on the object as last read.
        change: fn(&mut Value),
        want: Vec<(&'static str, Value)>,
    }
    let steps = [
        Step {
            name: "a spec write's status is the stored one; the generation moves",
            kind: "Deployment",
            subresource: "",
            change: |d| {
                d["spec"]["replicas"] = json!(3);
                d["status"] = json!({"replicas": 9});
            },
            want: vec![
                ("/spec/replicas", json!(3)),
                ("/status", json!({})),
                ("/metadata/generation", json!(2)),
            ],
        },
        Step {
            name: "a status write's spec is the stored one; the generation stays",
            kind: "Deployment",
            subresource: "/status",
            change: |d| {
                d["spec"]["replicas"] = json!(5);
                d["status"] = json!({"replicas": 3, "observedGeneration": 2});
            },
            want: vec![
                ("/spec/replicas", json!(3)),
                ("/status/replicas", json!(3)),
                ("/metadata/generation", json!(2)),
            ],
        },
        Step {
            name: "a status write keeps a Deployment's stored labels",
            kind: "Deployment",
            subresource: "/status",
            change: |d| d["metadata"]["labels"] = json!({"tier": "front"}),
            want: vec![("/metadata/labels", Value::Null)],
        },
        Step {
            name: "a Deployment's annotations move its generation",
            kind: "Deployment",
            subresource: "",
            change: |d| d["metadata"]["annotations"] = json!({"note": "x"}),
            want: vec![("/metadata/generation", json!(3))],
        },
        Step {
            name: "a ReplicaSet's labels do not",
            kind: "ReplicaSet",
            subresource: "",
            change: |rs| rs["metadata"]["labels"] = json!({"tier": "front"}),
            want: vec![("/metadata/generation", json!(1))],
        },
        Step {
            name: "a DaemonSet's template change is a new template generation",
            kind: "DaemonSet",
            subresource: "",
            change: |ds| {
                ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
                ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] =
                    json!("40");
            },
            want: vec![
                (
                    "/metadata/annotations/deprecated.daemonset.template.generation",
                    json!("2"),
                ),
                ("/metadata/generation", json!(2)),
            ],
        },
        Step {
            name: "another DaemonSet spec change is not",
            kind: "DaemonSet",
            subresource: "",
            change: |ds| ds["spec"]["minReadySeconds"] = json!(5),
            want: vec![
                (
                    "/metadata/annotations/deprecated.daemonset.template.generation",
                    json!("2"),
                ),
                ("/metadata/generation", json!(3)),
            ],
        },
        Step {
            name: "a DaemonSet status write keeps the template generation",
            kind: "DaemonSet",
            subresource: "/status",
            change: |ds| {
                ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] =
                    json!("7");
                ds["status"]["numberReady"] = json!(1);
                ds["status"]["desiredNumberScheduled"] = json!(1);
                ds["status"]["currentNumberScheduled"] = json!(1);
            },
            want: vec![
                (
                    "/metadata/annotations/deprecated.daemonset.template.generation",
                    json!("2"),
                ),
                ("/status/numberReady", json!(1)),
            ],
        },
    ];
    let (_api, client) = admin().await;
    for kind in ["Deployment", "ReplicaSet", "DaemonSet"] {
        post(&client, &plural(kind), &workload(kind, "web", json!({})))
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
    }
    for step in steps {
        let uri = format!("/apis/apps/v1/namespaces/default/{}/web", plural(step.kind));
        let mut object = call(&client, "GET", &uri, "application/json", &Value::Null)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:?}", step.name));
        (step.change)(&mut object);
        let written = put(
            &client,
            &plural(step.kind),
            "web",
            step.subresource,
            &object,
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e:?}", step.name));
        for (pointer, want) in &step.want {
            let got = written.pointer(pointer).cloned().unwrap_or(Value::Null);
            assert_eq!(&got, want, "{}: {pointer}", step.name);
        }
    }
}

/// Validation answers 422 Invalid with upstream's message: the kind with
/// its group, the name, and every field error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_workloads_are_refused_with_upstreams_field_errors() {
    struct Case {
        name: &'static str,
        kind: &'static str,
        object: Value,
        want: &'static str,
    }
    let mut bad_labels = workload("Deployment", "web", json!({"replicas": -1}));
    bad_labels["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let mut no_selector = workload("ReplicaSet", "web", json!({}));
    if let Some(spec) = no_selector["spec"].as_object_mut() {
        spec.remove("selector");
    }
    let mut restart_never = workload("DaemonSet", "agent", json!({}));
    restart_never["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let cases = [
        Case {
            name: "negative replicas and a selector that misses the template",
            kind: "Deployment",
            object: bad_labels,
            want: "Deployment.apps \"web\" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`]",
        },
        Case {
            name: "no selector",
            kind: "ReplicaSet",
            object: no_selector,
            want: "ReplicaSet.apps \"web\" is invalid: spec.selector: Required value",
        },
        Case {
            name: "both surge and unavailability zero",
            kind: "Deployment",
            object: workload(
                "Deployment",
                "zero",
                json!({"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}}),
            ),
            want: "Deployment.apps \"zero\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0",
        },
        Case {
            name: "a DaemonSet's pods restart always",
            kind: "DaemonSet",
            object: restart_never,
            want: "DaemonSet.apps \"agent\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        },
        Case {
            name: "a StatefulSet's name is a DNS label",
            kind: "StatefulSet",
            object: workload("StatefulSet", "db.1", json!({})),
            // Upstream's IsDNS1123Label: a valid subdomain that is not a
            // label is told its dots.
            want: "StatefulSet.apps \"db.1\" is invalid: metadata.name: Invalid value: \"db.1\": must not contain dots",
        },
        Case {
            name: "a ControllerRevision needs its data",
            kind: "ControllerRevision",
            object: json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
                           "metadata": {"name": "web-1"}, "revision": 1}),
            want: "ControllerRevision.apps \"web-1\" is invalid: data: Required value: data is mandatory",
        },
    ];
    let (_api, client) = admin().await;
    for case in cases {
        let refused = post(&client, &plural(case.kind), &case.object).await;
        assert_eq!(refused, Err((422, case.want.to_string())), "{}", case.name);
    }
}

/// Updates: the selector stays; a StatefulSet changes only what upstream
/// allows; a status write is held to the status rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_keep_the_selector_and_status_writes_their_counts() {
    let (_api, client) = admin().await;
    for kind in ["Deployment", "StatefulSet"] {
        post(&client, &plural(kind), &workload(kind, "web", json!({})))
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
    }
    struct Case {
        name: &'static str,
        kind: &'static str,
        subresource: &'static str,
        change: fn(&mut Value),
        want: &'static str,
    }
    let cases = [
        Case {
            name: "a Deployment's selector is immutable",
            kind: "Deployment",
            subresource: "",
            change: |d| {
                d["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "front"}});
                d["spec"]["template"]["metadata"]["labels"]["tier"] = json!("front");
            },
            want: "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"front\"}}: field is immutable",
        },
        Case {
            name: "a StatefulSet's service name is not for changing",
            kind: "StatefulSet",
            subresource: "",
            change: |s| s["spec"]["serviceName"] = json!("db"),
            want: "StatefulSet.apps \"web\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        },
        Case {
            name: "more ready replicas than replicas",
            kind: "Deployment",
            subresource: "/status",
            change: |d| d["status"] = json!({"replicas": 1, "readyReplicas": 2}),
            want: "Deployment.apps \"web\" is invalid: status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        },
    ];
    for case in cases {
        let uri = format!("/apis/apps/v1/namespaces/default/{}/web", plural(case.kind));
        let mut object = call(&client, "GET", &uri, "application/json", &Value::Null)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
        (case.change)(&mut object);
        let refused = put(
            &client,
            &plural(case.kind),
            "web",
            case.subresource,
            &object,
        )
        .await;
        assert_eq!(refused, Err((422, case.want.to_string())), "{}", case.name);
    }
}

/// `/scale` of Deployments, ReplicaSets and StatefulSets: an
/// autoscaling/v1 Scale to get, put and patch; its replicas are the
/// object's, through the main resource's rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_subresource_reads_and_writes_the_replicas() {
    let (_api, client) = admin().await;
    for kind in ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"] {
        let mut object = workload(kind, "web", json!({"replicas": 2}));
        object["spec"]["selector"]["matchExpressions"] =
            json!([{"key": "tier", "operator": "NotIn", "values": ["db"]}]);
        if kind == "DaemonSet"
            && let Some(spec) = object["spec"].as_object_mut()
        {
            spec.remove("replicas");
        }
        post(&client, &plural(kind), &object)
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
    }
    let scale_uri = |kind: &str| {
        format!(
            "/apis/apps/v1/namespaces/default/{}/web/scale",
            plural(kind)
        )
    };
    for kind in ["Deployment", "ReplicaSet", "StatefulSet"] {
        let scale = call(
            &client,
            "GET",
            &scale_uri(kind),
            "application/json",
            &Value::Null,
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        assert_eq!(scale["kind"], "Scale", "{kind}");
        assert_eq!(scale["apiVersion"], "autoscaling/v1");
        assert_eq!(scale["metadata"]["name"], "web");
        assert_eq!(scale["spec"], json!({"replicas": 2}), "{kind}");
        assert_eq!(
            scale["status"],
            json!({"replicas": 0, "selector": "app=web,tier notin (db)"}),
            "{kind}"
        );

        // A PUT of the Scale, with its resourceVersion as a precondition.
        let mut put_scale = scale.clone();
        put_scale["spec"]["replicas"] = json!(5);
        let written = call(
            &client,
            "PUT",
            &scale_uri(kind),
            "application/json",
            &put_scale,
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        assert_eq!(written["spec"]["replicas"], 5, "{kind}");
        let object_uri = format!("/apis/apps/v1/namespaces/default/{}/web", plural(kind));
        let object = call(
            &client,
            "GET",
            &object_uri,
            "application/json",
            &Value::Null,
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        assert_eq!(object["spec"]["replicas"], 5, "{kind}");
        assert_eq!(object["metadata"]["generation"], 2, "{kind}");
        assert_eq!(
            written["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"],
            "{kind}"
        );

        // The stale Scale is refused; without a resourceVersion it is not.
        let stale = call(
            &client,
            "PUT",
            &scale_uri(kind),
            "application/json",
            &put_scale,
        )
        .await;
        assert_eq!(
            stale.map_err(|(code, _)| code),
            Err(409),
            "{kind}: a stale resourceVersion"
        );
        let patch = json!({"spec": {"replicas": 0}});
        let patched = call(
            &client,
            "PATCH",
            &scale_uri(kind),
            "application/merge-patch+json",
            &patch,
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        assert_eq!(
            patched["spec"],
            json!({}),
            "{kind}: zero replicas are left out"
        );

        let negative = json!({"spec": {"replicas": -1}});
        let refused = call(
            &client,
            "PATCH",
            &scale_uri(kind),
            "application/merge-patch+json",
            &negative,
        )
        .await;
        assert_eq!(
            refused,
            Err((
                422,
                "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
                    .to_string()
            )),
            "{kind}"
        );
    }
    let daemon_scale = call(
        &client,
        "GET",
        &scale_uri("DaemonSet"),
        "application/json",
        &Value::Null,
    )
    .await;
    assert_eq!(daemon_scale.map_err(|(code, _)| code), Err(404));
}

/// client-go's protobuf: a Deployment created from a protobuf body and
/// read back as protobuf (berth-proto knows the apps/v1 kinds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_travel_as_protobuf() {
    use http_body_util::BodyExt;

    let (_api, client) = admin().await;
    let deployment = workload("Deployment", "web", json!({"replicas": 3}));
    let body = berth_proto::encode_object(&deployment).expect("a Deployment encodes");
    let protobuf = berth_proto::CONTENT_TYPE;
    let send = |method: &str, uri: &str, body: Vec<u8>| {
        axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", protobuf)
            .header("accept", protobuf)
            .body(kube::client::Body::from(body))
            .expect("a request")
    };
    let uri = "/apis/apps/v1/namespaces/default/deployments";
    for (method, uri, body, status) in [
        ("POST", uri.to_string(), body, 201),
        ("GET", format!("{uri}/web"), Vec::new(), 200),
    ] {
        let response = client
            .send(send(method, &uri, body))
            .await
            .expect("an answer");
        assert_eq!(response.status().as_u16(), status, "{method}");
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some(protobuf),
            "{method}"
        );
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let object = berth_proto::decode_object(&bytes).expect("a protobuf Deployment");
        assert_eq!(object["kind"], "Deployment", "{method}");
        assert_eq!(object["spec"]["replicas"], 3, "{method}");
        assert_eq!(
            object["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%",
            "{method}"
        );
    }
}
