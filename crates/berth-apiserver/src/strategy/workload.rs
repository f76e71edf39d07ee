//! The strategy of the four apps/v1 workloads (Deployment, ReplicaSet,
//! DaemonSet, StatefulSet), [`Workloads`], and what each kind's own file
//! tells it ([`WorkloadKind`]): upstream's strategies spell the same steps
//! out four times. The status is cleared on create; the kind's defaults
//! and the pod template's (the same [`default_pod_spec`] pods get) are
//! applied on every write of the main resource; a missing `spec.selector`
//! is a field error; then admission and berth-core's validation of the
//! write ([`Rules`]) on one typed object. `/status` keeps the stored spec.

use std::marker::PhantomData;

use berth_core::FeatureGates;
use berth_core::validation::names::is_dns1123_subdomain;
use berth_core::validation::{ErrorList, FieldError, Path};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::{ListableResource, Metadata, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::pod::default_pod_spec;
use super::{
    ApiResult, Context, ObjectType, ResourceType, Strategy, create_typed, keep_status,
    update_typed, validate_metadata, validation_outcome,
};
use crate::admission::{AdmissionConfig, AdmissionError, Attributes};
use crate::objects::name_of;
use crate::selectors::SelectableKind;

/// berth-core's validation of an apps/v1 kind, by the kind of write.
pub(super) struct Rules<T> {
    /// A create.
    pub(super) new: fn(&T, FeatureGates) -> ErrorList,
    /// An update of the main resource (or of `/scale`).
    pub(super) update: fn(&T, &T, FeatureGates) -> ErrorList,
    /// A `/status` write.
    pub(super) status: fn(&T, &T) -> ErrorList,
}

/// An apps/v1 kind with [`Rules`].
pub(super) trait Validated: Sized + 'static {
    const RULES: Rules<Self>;
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
        None => (T::RULES.new)(object, gates),
        Some(old) if attrs.subresource == "status" => (T::RULES.status)(object, old),
        Some(old) => (T::RULES.update)(object, old, gates),
    })
}

/// What a workload kind does differently, in its own file. Every method
/// but [`WorkloadKind::defaults`] has upstream's common answer.
pub(super) trait WorkloadKind:
    Validated
    + DeserializeOwned
    + Serialize
    + JsonSchema
    + Resource
    + ListableResource
    + Metadata<Ty = ObjectMeta>
    + std::fmt::Debug
    + Send
    + Sync
{
    /// Upstream's `SetDefaults_<Kind>` on the spec (the pod template's
    /// are added by [`Workloads`]).
    fn defaults(spec: &mut Map<String, Value>);

    /// Mutating admission on the typed object (server-owned fields).
    fn admit(_attrs: &Attributes, _object: &mut Self, _old: Option<&Self>) {}

    /// See [`Strategy::bumps_generation`].
    fn bumps_generation(object: &Value, old: &Value) -> bool {
        object.get("spec") != old.get("spec")
    }

    /// See [`Strategy::name_problems`].
    fn name_problems(name: &str) -> Vec<String> {
        is_dns1123_subdomain(name)
    }

    /// See [`Strategy::selectable_kind`].
    fn selectable_kind() -> SelectableKind {
        SelectableKind::MetadataOnly { namespaced: true }
    }

    /// What a `/status` write keeps of the stored object besides its spec.
    fn keep_on_status_write(_object: &mut Value, _old: &Value) {}
}

/// The strategy of the workload kind `T`.
#[derive(Debug)]
pub struct Workloads<T>(PhantomData<T>);

impl<T> Workloads<T> {
    pub const fn new() -> Workloads<T> {
        Workloads(PhantomData)
    }
}

fn admit<T: WorkloadKind>(
    attrs: &Attributes,
    object: &mut T,
    old: Option<&T>,
    _config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    T::admit(attrs, object, old);
    Ok(())
}

impl<T: WorkloadKind> Strategy for Workloads<T> {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<T>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn name_problems(&self, name: &str) -> Vec<String> {
        T::name_problems(name)
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> SelectableKind {
        T::selectable_kind()
    }

    fn bumps_generation(&self, object: &Value, old: &Value) -> bool {
        T::bumps_generation(object, old)
    }

    /// The kind's `SetDefaults_<Kind>` and the pod template's.
    fn defaults(&self, object: &mut Value) {
        apply_defaults(object, T::defaults);
    }

    /// No status but an empty one (upstream's `PrepareForCreate`), the
    /// defaults, then admission and validation on the typed object.
    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> ApiResult<()> {
        if let Some(map) = object.as_object_mut() {
            map.insert("status".into(), json!({}));
        }
        self.defaults(object);
        check_required(rt, object, SELECTOR_REQUIRED, &metadata_errors)?;
        create_typed(
            rt,
            object,
            ctx,
            metadata_errors,
            (admit::<T>, validate::<T>),
        )
    }

    /// The main resource (the stored status kept, the defaults again, as
    /// upstream decodes every write with them) or `/status` (the stored
    /// spec kept).
    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> ApiResult<()> {
        keep_status(true, subresource, object, old);
        if subresource == "status" {
            T::keep_on_status_write(object, old);
        } else {
            self.defaults(object);
            check_required(
                rt,
                object,
                SELECTOR_REQUIRED,
                &validate_metadata(rt, object),
            )?;
        }
        update_typed(
            rt,
            subresource,
            object,
            old,
            ctx,
            (admit::<T>, validate::<T>),
        )
    }
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

/// Admission that changes nothing.
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
fn field_errors(errors: ErrorList) -> Result<(), AdmissionError> {
    if errors.is_empty() {
        return Ok(());
    }
    Err(AdmissionError::Invalid {
        kind: String::new(),
        name: String::new(),
        errors,
    })
}

/// The kind's defaults and the pod template's, on `object.spec`. An
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
const SELECTOR_REQUIRED: Required = &[("/spec/selector", "spec.selector", "")];

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
