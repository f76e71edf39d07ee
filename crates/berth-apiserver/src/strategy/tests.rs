//! The strategies' tests, against the served declarations (a test in a
//! strategy's own file would make that file and `resources.rs` import each
//! other).

use serde_json::{Value, json};

use super::pod::bind_pod;
use super::{Context, StrategyConfig, keep_status, selectable_fields, validate_metadata};
use crate::auth::User;
use crate::resources::{NAMESPACES, NODES, PODS};
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

#[test]
fn binding_sets_node_name_and_the_pod_scheduled_condition() {
    let mut pod = json!({"spec": {}, "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}});
    let now = jiff::Timestamp::from_second(1_800_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    bind_pod(&mut pod, "node1", now);
    assert_eq!(pod["spec"]["nodeName"], "node1");
    let conditions = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0]["status"], "True");
    assert_eq!(conditions[0]["lastTransitionTime"], "2027-01-15T08:00:00Z");
}

#[test]
fn a_status_write_keeps_everything_of_the_stored_object_but_metadata_and_status() {
    let stored = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"a": "1"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending"}});
    // (case, the request's object, what is written)
    let cases = [
        (
            "a status patch: the new status and metadata",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "labels": {"a": "2"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                "status": {"phase": "Running"}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "labels": {"a": "2"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                "status": {"phase": "Running"}}),
        ),
        (
            "a changed spec is the stored one again",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"nodeName": "n2"}, "status": {"phase": "Running"}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                "status": {"phase": "Running"}}),
        ),
        (
            "members the stored object lacks are dropped, missing ones come back",
            json!({"metadata": {"name": "web"}, "extra": 1, "status": {}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                "status": {}}),
        ),
        (
            "no metadata: the stored metadata; no status: none",
            json!({"spec": {}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "labels": {"a": "1"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}),
        ),
        (
            "not an object: the stored object without its status",
            json!([1, 2]),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "labels": {"a": "1"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}),
        ),
    ];
    for (case, request, want) in cases {
        let mut object = request;
        keep_status(PODS.strategy.has_status(), "status", &mut object, &stored);
        assert_eq!(object, want, "{case}");
    }
}

#[test]
fn selectable_fields_follow_upstream_labels() {
    let pod = json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
    let fields = selectable_fields(&PODS, &pod);
    assert_eq!(fields["spec.nodeName"], "n1");
    assert_eq!(fields["status.phase"], "Running");
    assert_eq!(fields["spec.hostNetwork"], "false");
    assert_eq!(fields["metadata.name"], "web");
    let node = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
    assert_eq!(
        selectable_fields(&NODES, &node)["spec.unschedulable"],
        "true"
    );
}

#[test]
fn metadata_validation_reports_fields() {
    let cases: &[(Value, &[&str])] = &[
        (json!({"metadata": {"name": "web"}}), &[]),
        (
            json!({"metadata": {}}),
            &["metadata.name: Required value: name or generateName is required"],
        ),
        (
            json!({"metadata": {"name": "Web"}}),
            &["metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain"],
        ),
        (
            json!({"metadata": {"name": "web", "labels": {"bad key": "v"}}}),
            &["metadata.labels: Invalid value: \"bad key\""],
        ),
    ];
    for (object, want) in cases {
        let got: Vec<String> = validate_metadata(&PODS, object)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got.len(), want.len(), "{object}: {got:?}");
        for (g, w) in got.iter().zip(want.iter()) {
            assert!(g.starts_with(w), "{g} vs {w}");
        }
    }
    let ns = validate_metadata(&NAMESPACES, &json!({"metadata": {"name": "a.b"}}));
    assert_eq!(ns.len(), 1);
}

fn stored_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "generation": 1,
                     "resourceVersion": "7"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx:1"}]},
        "status": {"phase": "Running"}
    })
}

fn update_status(user: &User, request: Value) -> ApiResult<Value> {
    let config = StrategyConfig::default();
    let ctx = Context {
        user,
        now: jiff::Timestamp::UNIX_EPOCH,
        config: &config,
        priority_classes: Default::default(),
    };
    let mut object = request;
    PODS.strategy
        .update(&PODS, "status", &mut object, &stored_pod(), &ctx)?;
    Ok(object)
}

#[test]
fn a_pod_status_update_keeps_the_spec_and_drops_unknown_status_fields() {
    let mut request = stored_pod();
    request["spec"] = json!({"nodeName": "elsewhere"});
    request["status"] = json!({
        "phase": "Running",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "bogus": 1}],
        "notAField": "x"
    });
    for user in [
        User::admin(),
        User {
            name: "system:node:n1".into(),
            groups: vec!["system:nodes".into()],
        },
    ] {
        let updated = update_status(&user, request.clone());
        let updated = updated.unwrap_or(Value::Null);
        assert_eq!(updated["spec"]["nodeName"], "n1", "{}", user.name);
        assert_eq!(
            updated["status"],
            json!({"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}),
            "{}",
            user.name
        );
        assert_eq!(updated["metadata"]["generation"], 1, "{}", user.name);
    }
}

#[test]
fn a_pod_status_update_with_a_null_status_clears_it() {
    let mut request = stored_pod();
    request["status"] = Value::Null;
    let updated = update_status(&User::admin(), request).unwrap_or(Value::Null);
    assert!(updated.get("status").is_none(), "{updated}");
    assert_eq!(updated["metadata"]["name"], "web");
}

#[test]
fn a_pod_status_update_of_the_wrong_shape_is_a_bad_request() {
    let mut request = stored_pod();
    request["status"] = json!({"conditions": "not a list"});
    let err = update_status(&User::admin(), request).err();
    assert_eq!(err.map(|e| e.code), Some(400));
}

/// A binding made from the cached JSON without decoding the pod writes the
/// bytes the decoded path writes (decode, `bind_pod`, encode), with the
/// same watch-cache fields (the cached ones with `spec.nodeName` set), and
/// refuses exactly the pods the decoded path finds unbindable: for pods of
/// any content (escaped and non-ASCII strings, floats, nested lists), with
/// or without `spec`, `status` and conditions, of odd types where a pod
/// has objects or lists, PodScheduled conditions already there.
mod bind_pod_json_as_decoded {
    use super::super::pod::bind_pod_json;
    use super::*;
    use crate::objects::{StoredJson, meta_str};
    use crate::strategy::pod::assigned_node;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-z]{1,8}",
            Just("quo\"te\\slash\nline".to_string()),
            Just("zoné ünïcode ☃".to_string()),
        ]
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            // Floats that serde_json's default (not exactly round-tripping)
            // parser reads back exactly: the undecoded path copies a float's
            // text, the decoded one may move its last digit.
            (-4_000_000i32..4_000_000).prop_map(|q| Value::from(f64::from(q) / 4.0)),
            text().prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-zA-Z]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn condition() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => (
                prop_oneof![Just(json!("PodScheduled")), Just(json!("Ready")), Just(json!(3))],
                value()
            )
                .prop_map(|(kind, extra)| json!({"type": kind, "status": "False", "x": extra})),
            1 => scalar(),
        ]
    }

    /// A member that is usually of a pod's shape, sometimes absent or odd.
    fn member(usual: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            6 => usual.prop_map(Some),
            1 => Just(None),
            1 => scalar().prop_map(Some),
        ]
    }

    fn pod() -> impl Strategy<Value = Value> {
        let node_name = member(prop_oneof![Just(json!("")), Just(json!("n1"))]);
        let deletion = member(prop_oneof![
            Just(json!("")),
            Just(json!("2026-01-01T00:00:00Z"))
        ]);
        let conditions = member(proptest::collection::vec(condition(), 0..4).prop_map(Value::from));
        (
            (
                deletion,
                proptest::collection::btree_map(text(), text(), 0..3),
                value(),
            ),
            (node_name, member(value()), value()),
            (
                conditions,
                member(text().prop_map(Value::from)),
                any::<u8>(),
            ),
        )
            .prop_map(
                |(
                    (deletion, labels, extra_meta),
                    (node_name, spec_extra, extra),
                    (conditions, phase, shape),
                )| {
                    let mut metadata = json!({"name": "web", "namespace": "default", "uid": "u1",
                        "labels": labels, "annotations": {"a": extra_meta}});
                    if let Some(d) = deletion {
                        metadata["deletionTimestamp"] = d;
                    }
                    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                        "zz": extra});
                    let mut spec = json!({"containers": [{"name": "c", "image": "x",
                        "resources": {"requests": {"cpu": "100m"}}}], "priority": 0});
                    if let Some(n) = node_name {
                        spec["nodeName"] = n;
                    }
                    if let Some(e) = spec_extra {
                        spec["extra"] = e;
                    }
                    match shape % 4 {
                        0 => {}
                        1 => pod["spec"] = json!(null),
                        _ => pod["spec"] = spec,
                    }
                    let mut status = json!({});
                    if let Some(c) = conditions {
                        status["conditions"] = c;
                    }
                    if let Some(p) = phase {
                        status["phase"] = p;
                    }
                    match (shape / 4) % 4 {
                        0 => {}
                        1 => pod["status"] = json!("odd"),
                        _ => pod["status"] = status,
                    }
                    pod
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn the_undecoded_binding_writes_what_the_decoded_one_writes(
            pod in pod(),
            node in prop_oneof![Just("node-1"), Just("n\"2"), Just("nœud")],
            rv in 1i64..1_000_000,
        ) {
            let now = jiff::Timestamp::from_second(1_764_000_000).unwrap_or_default();
            let cached_json = StoredJson::encode(&pod).with_resource_version(rv);
            let fast = bind_pod_json(&cached_json, node, now);

            let mut decoded: Value = serde_json::from_str(&cached_json)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let bindable = meta_str(&decoded, "deletionTimestamp").is_empty()
                && assigned_node(&decoded).is_empty();
            let spec_is_object = decoded.get("spec").is_some_and(Value::is_object);
            prop_assert_eq!(fast.is_some(), bindable && spec_is_object, "{}", cached_json);
            let Some(fast) = fast else { return Ok(()) };
            bind_pod(&mut decoded, node, now);
            let slow = StoredJson::encode(&decoded);
            prop_assert_eq!(
                String::from_utf8_lossy(&fast.bytes),
                String::from_utf8_lossy(&slow.bytes)
            );
            prop_assert_eq!(fast.with_resource_version(rv + 1), slow.with_resource_version(rv + 1));

            let mut derived = selectable_fields(&PODS, &serde_json::from_str::<Value>(&cached_json)
                .map_err(|e| TestCaseError::fail(e.to_string()))?);
            derived.insert("spec.nodeName".into(), node.into());
            prop_assert_eq!(derived, selectable_fields(&PODS, &decoded));
        }
    }
}

/// The in-parts conversion of a `/status` write against the whole
/// object's round trip it replaces: the same object written, or the same
/// refusal, for pods and nodes, from their own node and from others.
#[test]
fn a_status_write_converted_in_parts_equals_the_whole_round_trip() {
    use super::{Admit, Validate, keep_status, update_typed, update_typed_in_parts};
    use k8s_openapi::api::core::v1::{Node, Pod};

    let node_user = |name: &str| User {
        name: format!("system:node:{name}"),
        groups: vec!["system:nodes".into()],
    };
    let stored_node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "uid": "nu", "resourceVersion": "3", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    });
    let with = |base: &Value, pointer: &str, value: Value| {
        let mut object = base.clone();
        if let Some(slot) = object.pointer_mut(pointer) {
            *slot = value;
        }
        object
    };
    struct Case {
        name: &'static str,
        user: User,
        stored: Value,
        request: Value,
    }
    let pod = stored_pod();
    let cases = vec![
        Case {
            name: "a kubelet's report with fields its types lack",
            user: node_user("n1"),
            stored: pod.clone(),
            request: with(
                &with(
                    &pod,
                    "/status",
                    json!({"phase": "Running", "bogus": 1,
                    "conditions": [{"type": "Ready", "status": "True", "extra": "x"}]}),
                ),
                "/metadata/annotations",
                json!({"a": "b"}),
            ),
        },
        Case {
            name: "a kubelet's report with a changed spec",
            user: node_user("n1"),
            stored: pod.clone(),
            request: with(&pod, "/spec", json!({"nodeName": "n2", "containers": []})),
        },
        Case {
            name: "a kubelet's report clearing the status",
            user: node_user("n1"),
            stored: pod.clone(),
            request: with(&pod, "/status", Value::Null),
        },
        Case {
            name: "another node's kubelet",
            user: node_user("n2"),
            stored: pod.clone(),
            request: pod.clone(),
        },
        Case {
            name: "a kubelet changing labels",
            user: node_user("n1"),
            stored: pod.clone(),
            request: with(&pod, "/metadata/labels", json!({"x": "y"})),
        },
        Case {
            name: "a kubelet's status of the wrong shape",
            user: node_user("n1"),
            stored: pod.clone(),
            request: with(&pod, "/status", json!({"conditions": "not a list"})),
        },
        Case {
            name: "a node's own status",
            user: node_user("n1"),
            stored: stored_node.clone(),
            request: with(
                &stored_node,
                "/status",
                json!({"conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}], "unknown": 2}),
            ),
        },
        Case {
            name: "a node's status written by an admin",
            user: User::admin(),
            stored: stored_node.clone(),
            request: with(&stored_node, "/status", json!({"capacity": {"cpu": "4"}})),
        },
        Case {
            name: "another node's status",
            user: node_user("n2"),
            stored: stored_node.clone(),
            request: stored_node.clone(),
        },
    ];
    let outcome = |result: ApiResult<()>, object: Value| match result {
        Ok(()) => Ok(object),
        Err(e) => Err((e.code, e.message)),
    };
    let pods: (Admit<Pod>, Validate<Pod>) =
        (crate::admission::admit_pod, crate::admission::validate_pod);
    let nodes: (Admit<Node>, Validate<Node>) =
        (crate::admission::admit_node, |attrs, n, old, _| {
            crate::admission::validate_node(attrs, n, old)
        });
    for case in cases {
        let config = StrategyConfig::default();
        let ctx = Context {
            user: &case.user,
            now: jiff::Timestamp::UNIX_EPOCH,
            config: &config,
            priority_classes: Default::default(),
        };
        let rt = if case.stored["kind"] == "Node" {
            &NODES
        } else {
            &PODS
        };
        let mut whole = case.request.clone();
        keep_status(true, "status", &mut whole, &case.stored);
        let mut parts = whole.clone();
        let (whole_result, parts_result) = if rt == &NODES {
            (
                update_typed(rt, "status", &mut whole, &case.stored, &ctx, nodes),
                update_typed_in_parts(rt, "status", &mut parts, &case.stored, &ctx, nodes),
            )
        } else {
            (
                update_typed(rt, "status", &mut whole, &case.stored, &ctx, pods),
                update_typed_in_parts(rt, "status", &mut parts, &case.stored, &ctx, pods),
            )
        };
        assert_eq!(
            outcome(parts_result, parts),
            outcome(whole_result, whole),
            "{}",
            case.name
        );
    }
}
