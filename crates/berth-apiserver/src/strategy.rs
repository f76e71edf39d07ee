//! Per-resource behaviour: defaults and what the server owns on create,
//! what an update may change (the main resource versus `/status`),
//! admission and validation, the fields a field selector may name, and
//! binding a pod to a node.
//!
//! Objects travel as JSON values; admission and validation convert them to
//! the k8s-openapi types they are written against.

use std::collections::BTreeMap;

use berth_core::validation::ErrorList;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::admission::{self, AdmissionConfig, AdmissionError, Attributes, Operation, UserInfo};
use crate::auth::User;
use crate::objects::{format_time, metadata_mut, recount_generation, validate_metadata};
use crate::resources::{LEASES, NAMESPACES, NODES, PODS, ResourceType};
use crate::selectors::FieldSelector;
use crate::status::ApiError;

/// Settings of the strategies (the admission flags).
#[derive(Debug, Clone, Default)]
pub struct StrategyConfig {
    pub admission: AdmissionConfig,
}

/// Who is writing, and when.
pub struct Context<'a> {
    pub user: &'a User,
    pub now: jiff::Timestamp,
    pub config: &'a StrategyConfig,
}

type ApiResult<T> = Result<T, ApiError>;

fn is(rt: &ResourceType, other: &ResourceType) -> bool {
    std::ptr::eq(rt, other)
}

fn typed<T: DeserializeOwned>(rt: &ResourceType, value: &Value) -> ApiResult<T> {
    // Deserializing from the borrowed value (not `from_value(value.clone())`) spares a deep
    // copy of the object on every write: the same result and errors, less work.
    T::deserialize(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            rt.kind, rt.version, rt.kind
        ))
    })
}

/// Drops from `object[field]` what its type `T` does not have (a typed
/// round trip of that field only); an absent field stays absent.
fn prune<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    object: &mut Value,
    field: &str,
) -> ApiResult<()> {
    let Some(value) = object.get_mut(field) else {
        return Ok(());
    };
    if value.is_null() {
        if let Some(map) = object.as_object_mut() {
            map.remove(field);
        }
        return Ok(());
    }
    let parsed: T = typed(rt, value)?;
    *value = untyped(&parsed)?;
    Ok(())
}

fn untyped<T: Serialize>(object: &T) -> ApiResult<Value> {
    serde_json::to_value(object).map_err(ApiError::internal)
}

fn attributes<'a>(
    ctx: &Context,
    operation: Operation,
    rt: &'a ResourceType,
    subresource: &'a str,
    object: &'a Value,
    user: &'a UserInfo,
) -> Attributes<'a> {
    Attributes {
        operation,
        resource: rt.plural,
        subresource,
        namespace: object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(""),
        name: object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(""),
        user,
        now: ctx.now,
    }
}

fn user_info(user: &User) -> UserInfo {
    UserInfo {
        name: user.name.clone(),
        groups: user.groups.clone(),
    }
}

fn admission_error(rt: &ResourceType, name: &str, err: AdmissionError) -> ApiError {
    match err {
        AdmissionError::Invalid { errors, .. } => {
            ApiError::invalid(rt.group, rt.kind, name, &errors)
        }
        AdmissionError::Forbidden { message } => ApiError::forbidden_raw(message),
        AdmissionError::BadRequest { message } => ApiError::bad_request(message),
    }
}

/// Pod defaults the API server applies (upstream `SetDefaults_Pod` and
/// friends), for the fields kubectl shows and berth's components read.
fn default_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let defaults = [
        ("schedulerName", json!("default-scheduler")),
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
        ("priority", json!(0)),
    ];
    for (field, value) in defaults {
        spec.entry(field).or_insert(value);
    }
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                let latest = !image.contains(':') || image.ends_with(":latest");
                let pull = if latest { "Always" } else { "IfNotPresent" };
                c.entry("imagePullPolicy").or_insert(json!(pull));
                c.entry("terminationMessagePath")
                    .or_insert(json!("/dev/termination-log"));
                c.entry("terminationMessagePolicy").or_insert(json!("File"));
                c.entry("resources").or_insert(json!({}));
            }
        }
    }
}

/// Server-side changes on create for the types without admission plugins
/// (a namespace's label, finalizer and phase); pods and nodes go through
/// [`create`], which admits and validates them on one typed object.
pub fn on_create(rt: &ResourceType, object: &mut Value, _ctx: &Context) -> ApiResult<()> {
    if is(rt, &NAMESPACES) {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(meta) = metadata_mut(object) {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        object["spec"] = json!({"finalizers": ["kubernetes"]});
        object["status"] = json!({"phase": "Active"});
    }
    Ok(())
}

/// What an update may change: the main resource keeps the stored status,
/// `/status` keeps everything but the status.
fn keep_status(rt: &ResourceType, subresource: &str, object: &mut Value, old: &Value) {
    let has_status = is(rt, &PODS) || is(rt, &NODES) || is(rt, &NAMESPACES);
    if !has_status {
        return;
    }
    if subresource == "status" {
        // The stored object with the request's metadata and status. Done in
        // place: a status patch's object is the stored one with its status
        // merged, so its other members are usually equal to the stored ones
        // and are compared rather than copied again.
        let (Some(target), Some(stored)) = (object.as_object_mut(), old.as_object()) else {
            let mut kept = old.clone();
            if let Some(map) = kept.as_object_mut() {
                map.remove("status");
            }
            *object = kept;
            return;
        };
        target.retain(|key, _| key == "metadata" || key == "status" || stored.contains_key(key));
        for (key, value) in stored {
            let keep_request = match key.as_str() {
                "status" => true,
                "metadata" => target.contains_key("metadata"),
                _ => target.get(key) == Some(value),
            };
            if !keep_request {
                target.insert(key.clone(), value.clone());
            }
        }
    } else {
        match old.get("status") {
            Some(s) => object["status"] = s.clone(),
            None => {
                if let Some(map) = object.as_object_mut() {
                    map.remove("status");
                }
            }
        }
    }
}

/// Update: what the update may change ([`keep_status`]), mutating
/// admission, the generation, then validation. Pods and nodes go through
/// admission and validation on one typed copy of the object and one of the
/// stored object (each conversion of a whole Pod or Node is tens of
/// microseconds, and every status report and controller write pays it);
/// the conversion back also drops fields the type does not have.
pub fn update(
    rt: &ResourceType,
    subresource: &str,
    object: &mut Value,
    old: &Value,
    ctx: &Context,
) -> ApiResult<()> {
    keep_status(rt, subresource, object, old);
    let user = user_info(ctx.user);
    let name = old
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let generation = |object: &Value| {
        object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
    };
    if is(rt, &PODS)
        && subresource == "status"
        && admission::node_restriction::node_identity(&user).is_none()
    {
        // A pod's status written by anyone but a node (the controllers'
        // conditions): mutating admission does nothing for a subresource,
        // the pod's API validation is for the main resource, and
        // NodeRestriction concerns nodes only. The object is the stored pod
        // with the request's metadata and status, so only those two are
        // converted, to drop what their types do not have: a fraction of
        // the whole Pod's round trip on every such write.
        prune::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(
            rt, object, "metadata",
        )?;
        prune::<k8s_openapi::api::core::v1::PodStatus>(rt, object, "status")?;
        recount_generation(object, old);
        let metadata_errors = validate_metadata(rt, object);
        return validation_outcome(rt, &name, Ok(()), metadata_errors);
    }
    if is(rt, &PODS) {
        let mut pod: k8s_openapi::api::core::v1::Pod = typed(rt, object)?;
        let old_pod: k8s_openapi::api::core::v1::Pod = typed(rt, old)?;
        let attrs = attributes(ctx, Operation::Update, rt, subresource, old, &user);
        admission::admit_pod(&attrs, &mut pod, Some(&old_pod), &ctx.config.admission)
            .map_err(|e| admission_error(rt, &name, e))?;
        *object = untyped(&pod)?;
        recount_generation(object, old);
        pod.metadata.generation = generation(object);
        let metadata_errors = validate_metadata(rt, object);
        let attrs = attributes(ctx, Operation::Update, rt, subresource, object, &user);
        let result = admission::validate_pod(&attrs, &pod, Some(&old_pod), &ctx.config.admission);
        validation_outcome(rt, &name, result, metadata_errors)
    } else if is(rt, &NODES) {
        let mut node: k8s_openapi::api::core::v1::Node = typed(rt, object)?;
        let old_node: k8s_openapi::api::core::v1::Node = typed(rt, old)?;
        let attrs = attributes(ctx, Operation::Update, rt, subresource, old, &user);
        admission::admit_node(&attrs, &mut node, Some(&old_node), &ctx.config.admission)
            .map_err(|e| admission_error(rt, &name, e))?;
        *object = untyped(&node)?;
        recount_generation(object, old);
        node.metadata.generation = generation(object);
        let metadata_errors = validate_metadata(rt, object);
        let attrs = attributes(ctx, Operation::Update, rt, subresource, object, &user);
        let result = admission::validate_node(&attrs, &node, Some(&old_node));
        validation_outcome(rt, &name, result, metadata_errors)
    } else {
        recount_generation(object, old);
        let metadata_errors = validate_metadata(rt, object);
        validate(
            rt,
            subresource,
            object,
            Operation::Update,
            ctx,
            metadata_errors,
        )
    }
}

/// Admission on delete (NodeRestriction: an agent deletes only the pods
/// bound to it).
pub fn on_delete(rt: &ResourceType, object: &Value, ctx: &Context) -> ApiResult<()> {
    if let Some(node) = ctx.user.node_name() {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if is(rt, &PODS) {
            let bound = object
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if bound != node {
                return Err(ApiError::forbidden_message(
                    "",
                    "pods",
                    name,
                    format!("node {node:?} can only delete pods with spec.nodeName set to itself"),
                ));
            }
        }
    }
    Ok(())
}

/// Validating admission for the types without a typed path of their own
/// (pods and nodes are validated inside [`create`] and [`update`]): the
/// metadata errors found by the caller, then NodeRestriction for leases.
/// Field errors are a 422; NodeRestriction's refusals a 403.
fn validate(
    rt: &ResourceType,
    subresource: &str,
    object: &Value,
    operation: Operation,
    ctx: &Context,
    metadata_errors: ErrorList,
) -> ApiResult<()> {
    let user = user_info(ctx.user);
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let attrs = attributes(ctx, operation, rt, subresource, object, &user);
    let result = if is(rt, &LEASES) {
        let lease: k8s_openapi::api::coordination::v1::Lease = typed(rt, object)?;
        admission::validate_lease(&attrs, Some(&lease))
    } else {
        Ok(())
    };
    validation_outcome(rt, &name, result, metadata_errors)
}

/// The API's answer to validation: the metadata errors and the type's
/// field errors together as one 422, or admission's refusal.
fn validation_outcome(
    rt: &ResourceType,
    name: &str,
    result: Result<(), AdmissionError>,
    metadata_errors: ErrorList,
) -> ApiResult<()> {
    match result {
        Ok(()) if metadata_errors.is_empty() => Ok(()),
        Ok(()) => Err(ApiError::invalid(rt.group, rt.kind, name, &metadata_errors)),
        Err(AdmissionError::Invalid { errors, .. }) => {
            let mut all = metadata_errors;
            all.extend(errors);
            Err(ApiError::invalid(rt.group, rt.kind, name, &all))
        }
        Err(other) => Err(admission_error(rt, name, other)),
    }
}

/// Create: server-side changes, mutating admission and validation. Pods
/// and nodes go through both on one typed object (one conversion from
/// JSON and one back, instead of one per step: creates are the hot path).
pub fn create(
    rt: &ResourceType,
    object: &mut Value,
    ctx: &Context,
    metadata_errors: ErrorList,
) -> ApiResult<()> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let user = user_info(ctx.user);
    if is(rt, &PODS) {
        object["status"] = json!({"phase": "Pending"});
        default_pod(object);
        let mut pod: k8s_openapi::api::core::v1::Pod = typed(rt, object)?;
        let attrs = attributes(ctx, Operation::Create, rt, "", object, &user);
        admission::admit_pod(&attrs, &mut pod, None, &ctx.config.admission)
            .map_err(|e| admission_error(rt, &name, e))?;
        let result = admission::validate_pod(&attrs, &pod, None, &ctx.config.admission);
        validation_outcome(rt, &name, result, metadata_errors)?;
        *object = untyped(&pod)?;
        Ok(())
    } else if is(rt, &NODES) {
        let mut node: k8s_openapi::api::core::v1::Node = typed(rt, object)?;
        let attrs = attributes(ctx, Operation::Create, rt, "", object, &user);
        admission::admit_node(&attrs, &mut node, None, &ctx.config.admission)
            .map_err(|e| admission_error(rt, &name, e))?;
        let result = admission::validate_node(&attrs, &node, None);
        validation_outcome(rt, &name, result, metadata_errors)?;
        *object = untyped(&node)?;
        Ok(())
    } else {
        on_create(rt, object, ctx)?;
        validate(rt, "", object, Operation::Create, ctx, metadata_errors)
    }
}

/// The fields of `object` its type does not have, as strict decoding
/// reports them (for `fieldValidation`).
pub fn unknown_fields(rt: &ResourceType, object: &Value) -> Vec<crate::body::StrictProblem> {
    use crate::field_validation::unknown_fields;
    use k8s_openapi::api::{coordination::v1::Lease, core::v1};
    let unknown = if is(rt, &PODS) {
        unknown_fields::<v1::Pod>(object)
    } else if is(rt, &NODES) {
        unknown_fields::<v1::Node>(object)
    } else if is(rt, &NAMESPACES) {
        unknown_fields::<v1::Namespace>(object)
    } else if is(rt, &LEASES) {
        unknown_fields::<Lease>(object)
    } else {
        unknown_fields::<v1::Event>(object)
    };
    unknown
        .into_iter()
        .map(|path| crate::body::StrictProblem::UnknownField { path })
        .collect()
}

/// Binds a pod: `spec.nodeName` and the `PodScheduled=True` condition,
/// whose transition time is the binding time taint-based eviction counts
/// from.
pub fn bind_pod(pod: &mut Value, node: &str, now: jiff::Timestamp) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), json!(node));
    }
    let condition = json!({
        "type": "PodScheduled", "status": "True",
        "lastProbeTime": null, "lastTransitionTime": format_time(now),
    });
    let Some(status) = pod
        .as_object_mut()
        .map(|p| p.entry("status").or_insert_with(|| json!({})))
    else {
        return;
    };
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(list)) = conditions {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
        list.push(condition);
    }
}

/// The values of an object's selectable fields (upstream's
/// `ToSelectableFields` for the type; see [`crate::selectors`]).
pub fn selectable_fields(rt: &ResourceType, object: &Value) -> BTreeMap<String, String> {
    crate::selectors::selectable_fields(rt.kind, object).unwrap_or_default()
}

/// Parses a field selector for the type: only its selectable fields may be
/// named (upstream's 400 `field label not supported: ...` otherwise).
pub fn field_selector(rt: &ResourceType, selector: &str) -> ApiResult<FieldSelector> {
    crate::selectors::parse_field_selector_for(rt.kind, selector)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_sets_node_name_and_the_pod_scheduled_condition() {
        let mut pod = json!({"spec": {}, "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}});
        let now =
            jiff::Timestamp::from_second(1_800_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
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
            keep_status(&PODS, "status", &mut object, &stored);
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
}

#[cfg(test)]
mod update_tests {
    use super::*;

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
        };
        let mut object = request;
        update(
            &crate::resources::PODS,
            "status",
            &mut object,
            &stored_pod(),
            &ctx,
        )?;
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
}
