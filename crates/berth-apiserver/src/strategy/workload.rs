//! What the four apps/v1 workload strategies (Deployment, ReplicaSet,
//! DaemonSet, StatefulSet) share, as upstream's strategies each spell it
//! out: the status cleared on create, the type's defaults and the pod
//! template's (the same [`default_pod_spec`] pods get) on every write of
//! the main resource, a missing `spec.selector` refused as a field error,
//! then admission and validation on one typed object.

use berth_core::validation::{ErrorList, FieldError, Path};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::pod::default_pod_spec;
use super::{
    Admit, ApiResult, Context, ResourceType, Validate, create_typed, keep_status, update_typed,
    validate_metadata, validation_outcome,
};
use crate::admission::{AdmissionConfig, AdmissionError, Attributes};
use crate::objects::name_of;
use berth_core::FeatureGates;
use k8s_openapi::Metadata;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A workload type's own part: upstream's `SetDefaults_<Kind>` on the
/// spec (the pod template's defaults are added here), and its admission
/// and validation.
pub(super) struct Workload<T> {
    pub(super) defaults: fn(&mut Map<String, Value>),
    pub(super) admission: (Admit<T>, Validate<T>),
}

/// An apps/v1 kind's validation (berth-core's port of upstream's), by
/// the kind of write.
pub(super) trait Validated {
    /// A create.
    fn validate_new(&self, gates: FeatureGates) -> ErrorList;
    /// An update of the main resource (or of `/scale`).
    fn validate_update(&self, old: &Self, gates: FeatureGates) -> ErrorList;
    /// A `/status` write.
    fn validate_status(&self, old: &Self) -> ErrorList;
}

/// Validating admission of an apps/v1 object: its kind's rules for the
/// write, as field errors.
pub(super) fn validate<T: Validated>(
    attrs: &Attributes,
    object: &T,
    old: Option<&T>,
    config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    let gates = config.gates;
    field_errors(match old {
        None => object.validate_new(gates),
        Some(old) if attrs.subresource == "status" => object.validate_status(old),
        Some(old) => object.validate_update(old, gates),
    })
}

/// `map[key]`, set to `value` first when it is unset: absent or null
/// (Go's nil), or for a string "" (Go's zero string, which upstream's
/// defaulting treats as unset). What the client set stays.
pub(super) fn default_field<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
    value: Value,
) -> &'a mut Value {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() || (value.is_string() && *slot == "") {
        *slot = value;
    }
    slot
}

/// Admission that changes nothing (the workload types have no mutating
/// admission plugins).
pub(super) fn admit_nothing<T>(
    _: &Attributes,
    _: &mut T,
    _: Option<&T>,
    _: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    Ok(())
}

/// Field errors as admission reports them (the kind and name are the
/// caller's, [`validation_outcome`] adds them).
pub(super) fn field_errors(errors: ErrorList) -> Result<(), AdmissionError> {
    if errors.is_empty() {
        return Ok(());
    }
    Err(AdmissionError::Invalid {
        kind: String::new(),
        name: String::new(),
        errors,
    })
}

/// The type's defaults and the pod template's, on `object.spec`. Upstream
/// defaults a template that is not there too (Go's zero struct); an
/// absent template is left absent so that decoding names it.
fn apply_defaults(object: &mut Value, defaults: fn(&mut Map<String, Value>)) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    defaults(spec);
    let template_spec = spec
        .get_mut("template")
        .and_then(Value::as_object_mut)
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut);
    if let Some(template_spec) = template_spec {
        default_pod_spec(template_spec);
    }
}

/// Fields the k8s-openapi type cannot do without but upstream's Go type
/// has as a pointer: their absence is upstream's 422 `Required value`
/// rather than a decoding error. (JSON pointer, field path, detail.)
pub(super) type Required = &'static [(&'static str, &'static str, &'static str)];

/// The workloads' required pointer: `spec.selector`.
pub(super) const SELECTOR_REQUIRED: Required = &[("/spec/selector", "spec.selector", "")];

/// The 422 for the fields of `required` that `object` lacks, with the
/// metadata errors found before.
pub(super) fn check_required(
    rt: &ResourceType,
    object: &Value,
    required: Required,
    metadata_errors: &ErrorList,
) -> ApiResult<()> {
    let missing: ErrorList = required
        .iter()
        .filter(|(pointer, _, _)| object.pointer(pointer).is_none_or(Value::is_null))
        .map(|(_, field, detail)| FieldError::required(&field_path(field), *detail))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    validation_outcome(
        rt,
        name_of(object),
        field_errors(missing),
        metadata_errors.clone(),
    )
}

/// `spec.selector` as a [`Path`].
fn field_path(dotted: &str) -> Path {
    let mut parts = dotted.split('.');
    let root = Path::new(parts.next().unwrap_or_default());
    parts.fold(root, |path, part| path.child(part))
}

/// Create: no status but an empty one (upstream's `PrepareForCreate`),
/// the defaults, then admission and validation on the typed object.
pub(super) fn create<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    object: &mut Value,
    ctx: &Context,
    metadata_errors: ErrorList,
    workload: &Workload<T>,
) -> ApiResult<()> {
    if let Some(map) = object.as_object_mut() {
        map.insert("status".into(), json!({}));
    }
    apply_defaults(object, workload.defaults);
    check_required(rt, object, SELECTOR_REQUIRED, &metadata_errors)?;
    create_typed(rt, object, ctx, metadata_errors, workload.admission)
}

/// Update of the main resource (the stored status kept, the defaults
/// again, as upstream decodes every write with them) or of `/status` (the
/// stored spec kept).
pub(super) fn update<T: DeserializeOwned + Serialize + Metadata<Ty = ObjectMeta>>(
    rt: &ResourceType,
    subresource: &str,
    object: &mut Value,
    old: &Value,
    ctx: &Context,
    workload: &Workload<T>,
) -> ApiResult<()> {
    keep_status(true, subresource, object, old);
    if subresource != "status" {
        apply_defaults(object, workload.defaults);
        check_required(
            rt,
            object,
            SELECTOR_REQUIRED,
            &validate_metadata(rt, object),
        )?;
    }
    update_typed(rt, subresource, object, old, ctx, workload.admission)
}
