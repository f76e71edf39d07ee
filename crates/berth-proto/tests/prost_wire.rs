//! Wire compatibility with k8s-pb's prost types, the reference encoding of the Kubernetes
//! protos: what `encode` writes, prost reads into the expected values and writes back
//! byte for byte; what prost writes, `decode` reads into the expected JSON.

use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::{api::resource::Quantity, runtime, util::intstr::IntOrString};
use prost::Message as _;
use serde_json::{Value, json};

fn pod_json() -> Value {
    serde_json::from_str(include_str!("data/pod.json")).expect("pod.json is JSON")
}

fn encode(json: &Value, message: &str) -> Vec<u8> {
    berth_proto::encode(json, message).unwrap_or_else(|error| panic!("{message}: {error}"))
}

#[test]
fn prost_reads_an_encoded_pod_field_by_field() {
    let bytes = encode(&pod_json(), "k8s.io.api.core.v1.Pod");
    let pod = core::Pod::decode(bytes.as_slice()).expect("prost reads the pod");
    let metadata = pod.metadata.expect("metadata");
    assert_eq!(metadata.name.as_deref(), Some("web-7d4b9c8f6d-x2k9p"));
    assert_eq!(metadata.generation, Some(1));
    // 2025-03-14T09:26:53Z
    assert_eq!(
        metadata.creation_timestamp,
        Some(meta::Time {
            seconds: Some(1_741_944_413),
            nanos: Some(0)
        })
    );
    let fields_v1 = metadata.managed_fields[0]
        .fields_v1
        .as_ref()
        .and_then(|fields| fields.raw.as_ref());
    let fields_v1: Value =
        serde_json::from_slice(fields_v1.expect("fieldsV1 raw")).expect("raw JSON");
    assert_eq!(
        fields_v1,
        pod_json()["metadata"]["managedFields"][0]["fieldsV1"]
    );

    let spec = pod.spec.expect("spec");
    // Presence survives: a present zero is Some(0), an absent field None.
    assert_eq!(spec.active_deadline_seconds, Some(0));
    assert_eq!(spec.tolerations[0].toleration_seconds, Some(300));
    assert_eq!(spec.tolerations[1].toleration_seconds, Some(0));
    assert_eq!(spec.tolerations[2].toleration_seconds, None);
    assert_eq!(spec.automount_service_account_token, Some(false));
    let web = &spec.containers[0];
    assert_eq!(web.ports[1].host_port, Some(0));
    assert_eq!(web.env[1].value.as_deref(), Some(""));
    assert_eq!(
        web.resources
            .as_ref()
            .map(|resources| resources.requests.get("cpu")),
        Some(Some(&Quantity {
            string: Some("250m".to_owned())
        }))
    );
    let readiness = web
        .readiness_probe
        .as_ref()
        .and_then(|probe| probe.handler.as_ref());
    assert_eq!(
        readiness
            .and_then(|handler| handler.tcp_socket.as_ref())
            .and_then(|tcp| tcp.port.clone()),
        Some(IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: Some("http".to_owned())
        })
    );
    // Volume's VolumeSource is embedded in Go: a nested message on the wire.
    let config_map = spec.volumes[0]
        .volume_source
        .as_ref()
        .and_then(|source| source.config_map.as_ref());
    assert_eq!(
        config_map
            .and_then(|source| source.local_object_reference.as_ref())
            .and_then(|r| r.name.as_deref()),
        Some("web-config")
    );

    let status = pod.status.expect("status");
    assert_eq!(status.host_ip.as_deref(), Some("192.168.10.13"));
    assert_eq!(status.pod_ips.len(), 2);
    assert_eq!(status.container_statuses[1].restart_count, Some(0));
}

/// prost writes fields in tag order and maps in key order, as `encode` does: re-encoding
/// what prost read gives the same bytes, so nothing was lost or reordered. (One difference
/// is left out: prost leaves an empty value out of a map entry, Go and `encode` write it.)
#[test]
fn prost_re_encodes_the_same_bytes() {
    fn same<M: prost::Message + Default>(json: &Value, message: &str) {
        let bytes = encode(json, message);
        let value =
            M::decode(bytes.as_slice()).unwrap_or_else(|error| panic!("{message}: {error}"));
        assert_eq!(value.encode_to_vec(), bytes, "{message}");
    }
    same::<core::Pod>(&pod_json(), "k8s.io.api.core.v1.Pod");
    same::<core::Node>(
        &json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "NoExecute", "timeAdded": "2025-03-14T10:00:00Z"}]},
                "status": {"capacity": {"cpu": "8", "memory": "1Gi"}, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}}),
        "k8s.io.api.core.v1.Node",
    );
    same::<core::Secret>(
        &json!({"metadata": {"name": "s"}, "data": {"a": "AAH/", "b": "aGk="}, "type": "Opaque", "immutable": false}),
        "k8s.io.api.core.v1.Secret",
    );
    same::<k8s_pb::api::coordination::v1::Lease>(
        &json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "n", "renewTime": "2025-03-14T09:59:59.999999Z", "leaseDurationSeconds": 40}}),
        "k8s.io.api.coordination.v1.Lease",
    );
    same::<k8s_pb::api::apps::v1::Deployment>(
        &json!({"metadata": {"name": "d"}, "spec": {"replicas": 0, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}}),
        "k8s.io.api.apps.v1.Deployment",
    );
    same::<k8s_pb::api::authentication::v1::UserInfo>(
        &json!({"username": "u", "extra": {"scopes": ["a", "b"], "one": ["c"]}}),
        "k8s.io.api.authentication.v1.UserInfo",
    );
}

#[test]
fn decode_reads_what_prost_writes() {
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some("web".to_owned()),
            namespace: Some(String::new()),
            deletion_grace_period_seconds: Some(0),
            deletion_timestamp: Some(meta::Time {
                seconds: Some(0),
                nanos: Some(0),
            }),
            labels: [("app".to_owned(), "web".to_owned())].into(),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("web".to_owned()),
                resources: Some(core::ResourceRequirements {
                    limits: [(
                        "memory".to_owned(),
                        Quantity {
                            string: Some("1Gi".to_owned()),
                        },
                    )]
                    .into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            tolerations: vec![core::Toleration {
                key: Some("node.kubernetes.io/not-ready".to_owned()),
                toleration_seconds: Some(0),
                ..Default::default()
            }],
            host_network: Some(false),
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            start_time: Some(meta::Time {
                seconds: Some(1_741_944_413),
                nanos: Some(999),
            }),
            ..Default::default()
        }),
    };
    let back =
        berth_proto::decode(&pod.encode_to_vec(), "k8s.io.api.core.v1.Pod").expect("decodes");
    assert_eq!(
        back,
        json!({
            "metadata": {"name": "web", "namespace": "", "deletionGracePeriodSeconds": 0,
                         "deletionTimestamp": "1970-01-01T00:00:00Z", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "resources": {"limits": {"memory": "1Gi"}}}],
                     "tolerations": [{"key": "node.kubernetes.io/not-ready", "tolerationSeconds": 0}],
                     "hostNetwork": false},
            // metav1.Time's JSON has whole seconds: the nanoseconds Go would drop are dropped.
            "status": {"startTime": "2025-03-14T09:26:53Z"}
        })
    );
}

/// The envelope is `k8s\x00` + runtime.Unknown{typeMeta{apiVersion, kind}, raw, "", ""},
/// every field written as Go writes them.
#[test]
fn the_envelope_is_k8s_magic_then_runtime_unknown() {
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}});
    let bytes = berth_proto::encode_object(&namespace).expect("encodes");
    let unknown = runtime::Unknown {
        type_meta: Some(runtime::TypeMeta {
            api_version: Some("v1".to_owned()),
            kind: Some("Namespace".to_owned()),
        }),
        raw: Some(
            core::Namespace {
                metadata: Some(meta::ObjectMeta {
                    name: Some("team-a".to_owned()),
                    ..Default::default()
                }),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut want = b"k8s\x00".to_vec();
    want.extend(unknown.encode_to_vec());
    assert_eq!(bytes, want);
}

/// A watch frame is a four-byte big-endian length and a bare metav1.WatchEvent (no envelope)
/// whose object RawExtension holds the enveloped object (apimachinery's raw stream
/// serializer + LengthDelimitedFramer; the embedded encoder keeps the envelope).
#[test]
fn a_watch_frame_is_a_length_and_a_bare_watch_event() {
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1", "resourceVersion": "7"}});
    let frame = berth_proto::watch::encode_event("ADDED", &node).expect("encodes");
    let event = meta::WatchEvent {
        r#type: Some("ADDED".to_owned()),
        object: Some(runtime::RawExtension {
            raw: Some(berth_proto::encode_object(&node).expect("encodes")),
        }),
    };
    let body = event.encode_to_vec();
    let mut want = u32::try_from(body.len())
        .expect("small")
        .to_be_bytes()
        .to_vec();
    want.extend(body);
    assert_eq!(frame, want);
}

/// Go clients write every non-pointer field, zero or not. Decoded as Go's JSON has them,
/// the zeros of non-pointer `omitempty` fields go and the zeros of pointers stay.
#[test]
fn a_go_clients_zeros_decode_as_go_json_has_them() {
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some("web".to_owned()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("web".to_owned()),
                image: Some(String::new()),
                tty: Some(false),
                ..Default::default()
            }],
            node_name: Some(String::new()),
            host_network: Some(false),
            // Pointers in Go: set to zero on purpose.
            active_deadline_seconds: Some(0),
            tolerations: vec![core::Toleration {
                key: Some("node.kubernetes.io/unreachable".to_owned()),
                operator: Some(String::new()),
                toleration_seconds: Some(0),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            phase: Some(String::new()),
            ..Default::default()
        }),
    };
    let mut body = b"k8s\x00".to_vec();
    body.extend(
        runtime::Unknown {
            type_meta: Some(runtime::TypeMeta {
                api_version: Some("v1".to_owned()),
                kind: Some("Pod".to_owned()),
            }),
            raw: Some(pod.encode_to_vec()),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        }
        .encode_to_vec(),
    );
    let decoded =
        berth_proto::decode_object_with(&body, berth_proto::Zeros::AsGoJson).expect("decodes");
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "web"}], "activeDeadlineSeconds": 0,
                     "tolerations": [{"key": "node.kubernetes.io/unreachable", "tolerationSeconds": 0}]},
            "status": {}
        })
    );
    // Kept, the same body has every zero the wire has.
    let kept = berth_proto::decode_object(&body).expect("decodes");
    assert_eq!(kept["metadata"]["generateName"], "");
    assert_eq!(kept["spec"]["hostNetwork"], false);
}
