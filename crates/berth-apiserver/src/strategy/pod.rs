//! Pods: upstream's defaults, a `Pending` status on create, the Priority
//! admission plugin (over the PriorityClasses the server read), the pod
//! admission plugins and validation on one typed object, status writes by
//! the controllers, NodeRestriction on delete, graceful deletion of bound
//! pods, binding, and the pod field selectors.

use berth_core::validation::ErrorList;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Map, Value, json};

use super::{
    Admit, Context, ObjectType, ResourceType, Strategy, Validate, create_typed, keep_status, prune,
    update_typed_in_parts, validate_metadata_update, validation_outcome,
};
use crate::admission::priority::{PodPriority, PodPriorityRequest};
use crate::admission::{self, Operation};
use crate::objects::{StoredJson, format_time, name_of, recount_generation};
use crate::selectors::SelectableKind;
use crate::status::ApiError;

/// The pod admission plugins and the pod's validation.
const ADMISSION: (Admit<Pod>, Validate<Pod>) = (admission::admit_pod, admission::validate_pod);

/// The strategy of core/v1 Pods.
#[derive(Debug)]
pub struct Pods;

impl Strategy for Pods {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Pod>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> SelectableKind {
        SelectableKind::Pod
    }

    /// The status every new pod starts with, and upstream's defaults.
    fn on_create(&self, pod: &mut Value) {
        pod["status"] = json!({"phase": "Pending"});
        default_pod(pod);
    }

    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> Result<(), ApiError> {
        self.on_create(object);
        admit_priority(rt, object, &ctx.priority_classes)?;
        create_typed(rt, object, ctx, metadata_errors, ADMISSION)
    }

    fn reads_priority_classes(&self, operation: Operation) -> bool {
        operation == Operation::Create
    }

    /// A status written by anyone but a node converts only the metadata
    /// and status; everything else goes through the pod's admission.
    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        keep_status(self.has_status(), subresource, object, old);
        keep_priority(object, old);
        if subresource == "status" && ctx.user.node_name().is_none() {
            // A pod's status written by anyone but a node (the controllers'
            // conditions): mutating admission does nothing for a subresource,
            // the pod's API validation is for the main resource, and
            // NodeRestriction concerns nodes only. The object is the stored pod
            // with the request's metadata and status, so only those two are
            // converted, to drop what their types do not have: a fraction of
            // the whole Pod's round trip on every such write.
            prune::<ObjectMeta>(rt, object, "metadata")?;
            prune::<PodStatus>(rt, object, "status")?;
            recount_generation(object, old, self.bumps_generation(object, old));
            let metadata_errors = validate_metadata_update(rt, object, old);
            return validation_outcome(rt, name_of(old), Ok(()), metadata_errors);
        }
        update_typed_in_parts(rt, subresource, object, old, ctx, ADMISSION)
    }

    /// NodeRestriction: an agent deletes only the pods bound to it.
    fn on_delete(&self, pod: &Value, ctx: &Context) -> Result<(), ApiError> {
        let Some(node) = ctx.user.node_name() else {
            return Ok(());
        };
        if assigned_node(pod) != node {
            return Err(ApiError::forbidden_message(
                "",
                "pods",
                name_of(pod),
                format!("node {node:?} can only delete pods with spec.nodeName set to itself"),
            ));
        }
        Ok(())
    }

    /// Pods bound to a node are deleted gracefully: marked, and removed
    /// once the node's agent confirms (a delete with grace period 0). A
    /// pod that finished, or a grace period of 0, goes at once.
    fn graceful_deletion(&self, pod: &Value, requested: Option<i64>) -> Option<i64> {
        let bound = !assigned_node(pod).is_empty();
        let finished = matches!(
            pod.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        );
        let default_grace = pod
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(30);
        let grace = requested.unwrap_or(default_grace).max(0);
        (bound && !finished && grace > 0).then_some(grace)
    }
}

/// `spec.nodeName`, "" when unset.
pub fn assigned_node(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Pod defaults the API server applies (upstream `SetDefaults_Pod` and
/// [`default_pod_spec`]), for the fields kubectl shows and berth's
/// components read.
fn default_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("enableServiceLinks").or_insert(json!(true));
    default_pod_spec(spec);
}

/// The Priority admission plugin on a new pod (admission/priority.rs):
/// its class's priority, preemption policy and (for the global default)
/// name written into the spec, or upstream's 403.
fn admit_priority(
    rt: &ResourceType,
    pod: &mut Value,
    classes: &[PriorityClass],
) -> Result<(), ApiError> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let field = |name: &str| spec.get(name).filter(|v| !v.is_null());
    let request = PodPriorityRequest {
        class_name: field("priorityClassName")
            .and_then(Value::as_str)
            .unwrap_or(""),
        priority: field("priority").and_then(Value::as_i64),
        preemption_policy: field("preemptionPolicy").and_then(Value::as_str),
    };
    let admitted = admission::priority::admit_new_pod(request, classes);
    let PodPriority {
        class_name,
        priority,
        preemption_policy,
    } = admitted.map_err(|why| {
        let name = pod.pointer("/metadata/name").and_then(Value::as_str);
        ApiError::forbidden_message(rt.group, rt.plural, name.unwrap_or(""), why)
    })?;
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if !class_name.is_empty() {
        spec.insert("priorityClassName".into(), json!(class_name));
    }
    spec.insert("priority".into(), json!(priority));
    if let Some(policy) = preemption_policy {
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// The Priority plugin on update: the priority set at creation stays when
/// a write leaves it out (validation refuses changing it).
fn keep_priority(pod: &mut Value, old: &Value) {
    let Some(priority) = old.pointer("/spec/priority").filter(|p| !p.is_null()) else {
        return;
    };
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut)
        && spec.get("priority").is_none_or(Value::is_null)
    {
        spec.insert("priority".into(), priority.clone());
    }
}

/// Upstream `SetDefaults_PodSpec`, `SetDefaults_Container` and
/// `SetDefaults_ContainerPort` on a pod's or a pod template's spec: what
/// a workload's `spec.template.spec` gets too. Fields the client set stay.
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    let defaults = [
        ("schedulerName", json!("default-scheduler")),
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("securityContext", json!({})),
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
                let ports = c.get_mut("ports").and_then(Value::as_array_mut);
                for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
                    port.entry("protocol").or_insert(json!("TCP"));
                }
            }
        }
    }
}

/// [`bind_pod`] on the pod as the watch cache holds it (`json`, its API
/// form with `resourceVersion`), straight to the store's bytes: the same
/// bytes as decoding it, [`bind_pod`] and [`StoredJson::encode`], but only
/// the object, its `metadata`, `spec`, `status` and `status.conditions`
/// are opened and every other member is copied as it is (decoding a whole
/// pod was the largest cost of a binding). `None` when the pod does not
/// look bindable (being deleted, bound: the caller decides on the decoded
/// pod) or a part is not an object where a pod has one (`status` aside,
/// which is replaced as `bind_pod` replaces it).
pub fn bind_pod_json(json: &str, node: &str, now: jiff::Timestamp) -> Option<StoredJson> {
    type Members<'a> = std::collections::BTreeMap<&'a str, &'a RawValue>;
    /// An object's members, unopened: `Ok(None)` for anything but an
    /// object, `Err` for an object this path does not read (escaped keys,
    /// which pods' field names never have).
    fn members(raw: &RawValue) -> Result<Option<Members<'_>>, ()> {
        if !raw.get().starts_with('{') {
            return Ok(None);
        }
        serde_json::from_str(raw.get()).map(Some).map_err(|_| ())
    }
    /// A small member read as the decoded path reads it: its text, if a
    /// string.
    fn text_of(raw: Option<&&RawValue>) -> Option<String> {
        let value: Value = serde_json::from_str(raw?.get()).ok()?;
        value.as_str().map(str::to_string)
    }
    let raw_pod: &RawValue = serde_json::from_str(json).ok()?;
    let mut top = members(raw_pod).ok()??;
    let metadata = members(top.get("metadata")?).ok()??;
    if !text_of(metadata.get("deletionTimestamp"))
        .unwrap_or_default()
        .is_empty()
    {
        return None;
    }
    let node_json = to_raw_value(node).ok()?;
    // Without a `spec` object nothing is bound: left to the decoded path
    // (the caller's cache entry takes `spec.nodeName` as set).
    let mut spec = members(top.get("spec")?).ok()??;
    if !text_of(spec.get("nodeName")).unwrap_or_default().is_empty() {
        return None;
    }
    spec.insert("nodeName", &node_json);
    let spec_json = to_raw_value(&spec).ok()?;
    top.insert("spec", &spec_json);
    // A status that is not an object is replaced, as `bind_pod` does.
    let mut status = match top.get("status") {
        Some(raw) => members(raw).ok()?.unwrap_or_default(),
        None => Members::new(),
    };
    let condition = scheduled_condition(now);
    let conditions_json = match status.get("conditions") {
        None => Some(to_raw_value(&[condition]).ok()?),
        Some(raw) if raw.get().starts_with('[') => {
            let listed: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
            let mut kept = Vec::with_capacity(listed.len() + 1);
            for c in listed {
                // Kept unless it is an object whose `type` is PodScheduled.
                let scheduled = members(c)
                    .ok()?
                    .is_some_and(|m| text_of(m.get("type")).is_some_and(|t| t == "PodScheduled"));
                if !scheduled {
                    kept.push(c);
                }
            }
            let condition = to_raw_value(&condition).ok()?;
            kept.push(&condition);
            Some(to_raw_value(&kept).ok()?)
        }
        // Not a list: left as it is.
        Some(_) => None,
    };
    if let Some(list) = &conditions_json {
        status.insert("conditions", list);
    }
    let status_json = to_raw_value(&status).ok()?;
    top.insert("status", &status_json);
    Some(StoredJson::encode_members(&top, &metadata))
}

/// The `PodScheduled=True` condition a binding at `now` sets.
fn scheduled_condition(now: jiff::Timestamp) -> Value {
    json!({
        "type": "PodScheduled", "status": "True",
        "lastProbeTime": null, "lastTransitionTime": format_time(now),
    })
}

/// Binds a pod: `spec.nodeName` and the `PodScheduled=True` condition,
/// whose transition time is the binding time taint-based eviction counts
/// from.
pub fn bind_pod(pod: &mut Value, node: &str, now: jiff::Timestamp) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), json!(node));
    }
    let condition = scheduled_condition(now);
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
