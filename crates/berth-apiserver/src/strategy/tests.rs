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
