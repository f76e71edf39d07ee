//! Kubernetes' JSON forms at the edges: what encoding accepts and normalizes, what it
//! refuses (naming the field), and what it drops.

use serde_json::{Value, json};

fn pod_round_trip(pod: &Value) -> Result<Value, berth_proto::Error> {
    let bytes = berth_proto::encode(pod, "k8s.io.api.core.v1.Pod")?;
    berth_proto::decode(&bytes, "k8s.io.api.core.v1.Pod")
}

#[test]
fn json_that_does_not_fit_is_an_error_naming_the_field() {
    struct Case {
        name: &'static str,
        pod: Value,
        want: &'static str,
    }
    let cases = [
        Case {
            name: "a string where an integer goes",
            pod: json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "ports": [{"containerPort": "80"}]}]}}),
            want: "spec.containers[1].ports[0].containerPort: expected an integer, not a string",
        },
        Case {
            name: "an int32 out of range",
            pod: json!({"spec": {"priority": 4_294_967_296_u64}}),
            want: "spec.priority: 4294967296 does not fit in 32 bits",
        },
        Case {
            name: "a time that is not RFC 3339",
            pod: json!({"metadata": {"creationTimestamp": "yesterday"}}),
            want: "metadata.creationTimestamp: invalid time \"yesterday\"",
        },
        Case {
            name: "an IntOrString that is neither",
            pod: json!({"spec": {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": true}}}]}}),
            want: "spec.containers[0].livenessProbe.httpGet.port: expected an integer or a string",
        },
        Case {
            name: "a label that is not a string",
            pod: json!({"metadata": {"labels": {"app": 1}}}),
            want: "metadata.labels.app: expected a string, not a number",
        },
        Case {
            name: "a list where an object goes",
            pod: json!({"spec": []}),
            want: "spec: expected an object, not a list",
        },
    ];
    for case in cases {
        let error = pod_round_trip(&case.pod)
            .err()
            .map(|error| error.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|error| error.starts_with(case.want)),
            "{}: got {error:?}",
            case.name
        );
    }
    let secret = json!({"data": {"key": "not base64!"}});
    let error = berth_proto::encode(&secret, "k8s.io.api.core.v1.Secret")
        .err()
        .map(|error| error.to_string());
    assert!(error.is_some_and(|error| error.starts_with("data.key: invalid base64")));
}

#[test]
fn encoding_normalizes_as_go_does() {
    struct Case {
        name: &'static str,
        pod: Value,
        want: Value,
    }
    let cases = [
        Case {
            name: "unknown properties are dropped, as a typed Go value cannot hold them",
            pod: json!({"metadata": {"name": "a", "bogus": 1}, "extra": {"x": 1}}),
            want: json!({"metadata": {"name": "a"}}),
        },
        Case {
            name: "null is absent",
            pod: json!({"metadata": {"name": "a", "creationTimestamp": null, "labels": null}}),
            want: json!({"metadata": {"name": "a"}}),
        },
        Case {
            name: "a Time with an offset and fractions is whole seconds in UTC",
            pod: json!({"metadata": {"creationTimestamp": "2025-03-14T10:26:53.75+01:00"}}),
            want: json!({"metadata": {"creationTimestamp": "2025-03-14T09:26:53Z"}}),
        },
        Case {
            name: "a quantity written as a number is its decimal text",
            pod: json!({"spec": {"overhead": {"cpu": 2, "memory": 1.5}}}),
            want: json!({"spec": {"overhead": {"cpu": "2", "memory": "1.5"}}}),
        },
    ];
    for case in cases {
        let got =
            pod_round_trip(&case.pod).unwrap_or_else(|error| panic!("{}: {error}", case.name));
        assert_eq!(got, case.want, "{}", case.name);
    }
    let lease = json!({"spec": {"renewTime": "2025-03-14T09:59:59.9999999Z"}});
    let bytes = berth_proto::encode(&lease, "k8s.io.api.coordination.v1.Lease").expect("encodes");
    let back = berth_proto::decode(&bytes, "k8s.io.api.coordination.v1.Lease").expect("decodes");
    assert_eq!(
        back,
        json!({"spec": {"renewTime": "2025-03-14T09:59:59.999999Z"}}),
        "MicroTime keeps microseconds"
    );
}

#[test]
fn objects_of_unknown_kinds_and_foreign_envelopes_are_refused() {
    let error =
        berth_proto::encode_object(&json!({"apiVersion": "example.com/v1", "kind": "Widget"}));
    assert!(matches!(error, Err(berth_proto::Error::UnknownKind { .. })));
    let error = berth_proto::decode_object(b"{\"kind\":\"Pod\"}");
    assert!(matches!(error, Err(berth_proto::Error::Envelope(_))));
}
