//! What a served type is and what differs per type: [`ResourceType`] (the
//! declaration: names, storage, discovery data, subresources, and its
//! [`Strategy`]) and the [`Strategy`] trait, whose defaults are what every
//! type gets: server-side changes on create, what an update may change
//! (the main resource versus `/status`), admission and validation, the
//! name rule, field selectors, graceful deletion, and the k8s-openapi type
//! behind strict field validation and the OpenAPI documents.
//!
//! One file per type overrides what its type does differently, as
//! upstream's `pkg/registry/<group>/<type>/strategy.go` does: [`pod`],
//! [`node`], [`namespace`], [`event`], [`lease`], [`priorityclass`], the apps/v1 kinds
//! [`deployment`], [`replicaset`], [`daemonset`], [`statefulset`] (what
//! those four share is in `workload.rs`) and [`controllerrevision`], and
//! the core types [`service`] (defaults, cluster IPs and node ports),
//! [`config`] (ConfigMaps and Secrets), [`stored`] (types stored as sent:
//! ServiceAccounts, Endpoints, EndpointSlices, ResourceQuotas,
//! LimitRanges, ReplicationControllers), [`storage`] (the volume types
//! upstream's scheduler and controller manager list) and [`dra`] (the
//! resource.k8s.io types), all stored as sent, and [`review`] (the access
//! reviews, answered, not stored).
//! The declarations that name them are in [`crate::resources`].
//!
//! Objects travel as JSON values; admission and validation convert them to
//! the k8s-openapi types they are written against.

pub mod config;
pub mod controllerrevision;
pub mod daemonset;
pub mod deployment;
pub mod dra;
pub mod event;
pub mod lease;
pub mod namespace;
pub mod node;
pub mod pod;
pub mod poddisruptionbudget;
pub mod priorityclass;
pub mod replicaset;
pub mod review;
pub mod service;
pub mod statefulset;
pub mod storage;
pub mod stored;
#[cfg(test)]
mod tests;
mod workload;

use std::collections::BTreeMap;

use berth_core::deletion::DefaultPolicy;
use berth_core::validation::names::is_dns1123_subdomain;
use berth_core::validation::{
    ErrorList, FieldError, Path, validate_annotations, validate_finalizers, validate_labels,
    validate_no_new_finalizers, validate_owner_references,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::{ListableResource, Metadata, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use futures::future::BoxFuture;

use crate::admission::{AdmissionConfig, AdmissionError, Attributes, Operation, UserInfo};
use crate::allocators::{Allocators, Claims};
use crate::auth::User;
use crate::body::StrictProblem;
use crate::objects::{name_of, recount_generation};
use crate::openapi::kinds::KindSchema;
use crate::selectors::{FieldSelector, SelectableKind};
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// One served resource type: what discovery advertises (group, version,
/// kind, plural, short names, verbs, subresources), where objects live in
/// the store (upstream's etcd layout: nodes are `/registry/minions/...`),
/// whether objects are namespaced, and the [`Strategy`] that serves it.
#[derive(Debug)]
pub struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Subresources served under `<name>/<subresource>`.
    pub subresources: &'static [Subresource],
    /// The resource segment of the store key (`/registry/<this>/...`).
    pub storage: &'static str,
    /// Verbs discovery advertises.
    pub verbs: &'static [&'static str],
    /// Another version of a resource kept in that resource's storage form
    /// (events.k8s.io/v1 Events are core/v1 Events in the store).
    pub stored_as: Option<&'static ResourceType>,
    /// What the type does differently from the defaults.
    pub strategy: &'static dyn Strategy,
}

/// A served type is one group, version and resource.
impl PartialEq for ResourceType {
    fn eq(&self, other: &Self) -> bool {
        (self.group, self.version, self.plural) == (other.group, other.version, other.plural)
    }
}

impl Eq for ResourceType {}

/// A subresource and the kind its requests and responses carry.
#[derive(Debug, PartialEq, Eq)]
pub struct Subresource {
    pub name: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub verbs: &'static [&'static str],
}

impl ResourceType {
    /// `v1` or `group/version`, as `apiVersion` fields write it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// The store prefix of the objects of a namespace, or of all of them.
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced && !ns.is_empty() => {
                format!("/registry/{}/{ns}/", self.storage)
            }
            _ => format!("/registry/{}/", self.storage),
        }
    }

    /// The store key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> String {
        if self.namespaced {
            format!("/registry/{}/{namespace}/{name}", self.storage)
        } else {
            format!("/registry/{}/{name}", self.storage)
        }
    }
}

/// Settings of the strategies (the admission flags).
#[derive(Debug, Clone, Default)]
pub struct StrategyConfig {
    pub admission: AdmissionConfig,
}

/// Who is writing, and when, and what the write's admission reads of
/// other objects.
pub struct Context<'a> {
    pub user: &'a User,
    pub now: jiff::Timestamp,
    pub config: &'a StrategyConfig,
    /// Every PriorityClass, for a type whose strategy reads them
    /// ([`Strategy::reads_priority_classes`]; empty otherwise): upstream's
    /// Priority admission reads them from an informer, berth from the
    /// watch cache.
    pub priority_classes: std::sync::Arc<[PriorityClass]>,
}

/// The k8s-openapi type of a served type's objects: which fields strict
/// field validation knows, and the type's OpenAPI schema.
#[derive(Clone, Copy)]
pub struct ObjectType {
    unknown_fields: fn(&Value) -> Vec<String>,
    pub(crate) schema: KindSchema,
}

impl ObjectType {
    pub fn of<T>() -> ObjectType
    where
        T: DeserializeOwned + Serialize + JsonSchema + Resource + ListableResource,
    {
        ObjectType {
            unknown_fields: crate::field_validation::unknown_fields::<T>,
            schema: KindSchema::of::<T>(),
        }
    }

    /// A kind that is never listed (the access reviews).
    pub fn unlisted<T>() -> ObjectType
    where
        T: DeserializeOwned + Serialize + JsonSchema + Resource,
    {
        ObjectType {
            unknown_fields: crate::field_validation::unknown_fields::<T>,
            schema: KindSchema::unlisted::<T>(),
        }
    }
}

/// How a served type differs from the others. Every method but
/// [`Strategy::object_type`] has a default, which is what a type without
/// admission plugins of its own gets (Events, say): `metadata` validated,
/// the rest stored as sent (fields the type lacks dropped by strict field
/// validation's choice of the client).
pub trait Strategy: Send + Sync + std::fmt::Debug {
    /// The k8s-openapi type of the objects.
    fn object_type(&self) -> ObjectType;

    /// Whether objects have a `status` that `/status` writes and the main
    /// resource may not change.
    fn has_status(&self) -> bool {
        false
    }

    /// What is wrong with `name` as an object's name (upstream's
    /// `ValidateNameFunc` of the type): a DNS subdomain by default.
    fn name_problems(&self, name: &str) -> Vec<String> {
        is_dns1123_subdomain(name)
    }

    /// The field labels a field selector may name and the field set an
    /// object exposes (upstream's field label conversion and
    /// `ToSelectableFields` for the type): `metadata.name` (and
    /// `metadata.namespace`) by default.
    fn selectable_kind(&self, rt: &ResourceType) -> SelectableKind {
        SelectableKind::MetadataOnly {
            namespaced: rt.namespaced,
        }
    }

    /// Defaults every write gets (upstream's `SetDefaults_<Kind>` and
    /// conversion, applied to every object decoded), before validation.
    fn defaults(&self, _object: &mut Value) {}

    /// Whether admission of this type reads the PriorityClasses
    /// ([`Context::priority_classes`]) for `operation`: a new pod (its
    /// priority) and a written class (one global default).
    fn reads_priority_classes(&self, _operation: Operation) -> bool {
        false
    }

    /// Server-side changes on create (defaults, fields the server owns),
    /// before validation.
    fn on_create(&self, _object: &mut Value) {}

    /// Whether an update moves `metadata.generation` on (upstream's
    /// `PrepareForUpdate`): a changed spec by default.
    fn bumps_generation(&self, object: &Value, old: &Value) -> bool {
        object.get("spec") != old.get("spec")
    }

    /// Validating admission of a created or updated object, with the
    /// metadata errors found before: one 422 for all field errors, or
    /// admission's refusal.
    fn validate(
        &self,
        rt: &ResourceType,
        _attrs: &Attributes,
        object: &Value,
        metadata_errors: ErrorList,
    ) -> ApiResult<()> {
        validation_outcome(rt, name_of(object), Ok(()), metadata_errors)
    }

    /// Validating admission of an update, given the stored object: by
    /// default [`Strategy::validate`] of the new object alone.
    fn validate_update(
        &self,
        rt: &ResourceType,
        attrs: &Attributes,
        object: &Value,
        _old: &Value,
        metadata_errors: ErrorList,
    ) -> ApiResult<()> {
        self.validate(rt, attrs, object, metadata_errors)
    }

    /// Create: server-side changes, admission, validation.
    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> ApiResult<()> {
        self.defaults(object);
        self.on_create(object);
        let request = Request::new(ctx, Operation::Create, rt, "");
        self.validate(
            rt,
            &request.attributes(ctx, object),
            object,
            metadata_errors,
        )
    }

    /// Update: what the update may change ([`keep_status`]), the
    /// generation, then validation.
    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> ApiResult<()> {
        keep_status(self.has_status(), subresource, object, old);
        self.defaults(object);
        recount_generation(object, old, self.bumps_generation(object, old));
        let metadata_errors = validate_metadata_update(rt, object, old);
        let request = Request::new(ctx, Operation::Update, rt, subresource);
        self.validate_update(
            rt,
            &request.attributes(ctx, object),
            object,
            old,
            metadata_errors,
        )
    }

    /// Admission on delete.
    fn on_delete(&self, _object: &Value, _ctx: &Context) -> ApiResult<()> {
        Ok(())
    }

    /// Refuses the deletion of object `name` before it is read (the
    /// system namespaces).
    fn check_deletable(&self, _name: &str) -> ApiResult<()> {
        Ok(())
    }

    /// The grace period when deleting `object` is graceful (upstream's
    /// `CheckGracefulDelete`): it is then marked with a deletion timestamp
    /// and removed later. `requested` is the client's grace period.
    /// `None`: deleted at once.
    fn graceful_deletion(&self, _object: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// What a deletion that names no propagation policy does to the
    /// object's dependents (upstream's `DefaultGarbageCollectionPolicy`):
    /// they are deleted in the background, unless the type says otherwise.
    fn default_garbage_collection_policy(&self) -> DefaultPolicy {
        DefaultPolicy::DeleteDependents
    }

    /// Takes from the cluster's allocators what a new (`old` `None`) or
    /// changed object needs and fills it in (a Service's cluster IPs and
    /// node ports), before the object is validated and written; returns
    /// what it took, which the caller gives back if the write does not
    /// happen. By default nothing.
    fn allocate<'a>(
        &'a self,
        _rt: &'a ResourceType,
        _object: &'a mut Value,
        _old: Option<&'a Value>,
        _allocators: &'a Allocators,
        _now: &'a str,
    ) -> BoxFuture<'a, ApiResult<Claims>> {
        Box::pin(async { Ok(Claims::default()) })
    }

    /// What a stored object holds of the allocators (given back when it is
    /// deleted, or by an update that drops it). By default nothing.
    fn held(&self, _object: &Value) -> Claims {
        Claims::default()
    }

    /// Whether objects are stored. Types that are not (the access reviews)
    /// are answered on create ([`Strategy::answer`]) and serve no other
    /// verb; they have no watch cache.
    fn is_stored(&self) -> bool {
        true
    }

    /// The answer to a create of a type that is not stored: the request
    /// with its status filled in for `user`.
    fn answer<'a>(
        &'a self,
        rt: &'a ResourceType,
        _request: Value,
        _user: &'a User,
        _pods: &'a dyn PodBinding,
    ) -> BoxFuture<'a, ApiResult<Value>> {
        Box::pin(async move { Err(ApiError::method_not_allowed("create", rt.plural)) })
    }
}

/// Whether a pod is bound to a node: what a node's access review asks of
/// the store (the registry answers it).
pub trait PodBinding: Send + Sync {
    fn bound<'a>(&'a self, namespace: &'a str, name: &'a str, node: &'a str)
    -> BoxFuture<'a, bool>;
}

/// The fields of `object` its type does not have, as strict decoding
/// reports them (for `fieldValidation`).
pub fn unknown_fields(rt: &ResourceType, object: &Value) -> Vec<StrictProblem> {
    (rt.strategy.object_type().unknown_fields)(object)
        .into_iter()
        .map(|path| StrictProblem::UnknownField { path })
        .collect()
}

/// The values of an object's selectable fields (upstream's
/// `ToSelectableFields` for the type; see [`crate::selectors`]).
pub fn selectable_fields(rt: &ResourceType, object: &Value) -> BTreeMap<String, String> {
    rt.strategy.selectable_kind(rt).selectable_fields(object)
}

/// Parses a field selector for the type: only its selectable fields may be
/// named (upstream's 400 `field label not supported: ...` otherwise).
pub fn field_selector(rt: &ResourceType, selector: &str) -> ApiResult<FieldSelector> {
    FieldSelector::parse(selector)
        .and_then(|s| s.for_kind(rt.strategy.selectable_kind(rt)))
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// `ValidateObjectMetaUpdate` for what berth checks: [`validate_metadata`],
/// and no new finalizer on an object being deleted.
pub fn validate_metadata_update(rt: &ResourceType, object: &Value, old: &Value) -> ErrorList {
    let mut errors = validate_metadata(rt, object);
    if crate::deletion::deleting_since(old).is_some() {
        errors.extend(validate_no_new_finalizers(
            &crate::deletion::finalizers_of(object),
            &crate::deletion::finalizers_of(old),
            &Path::new("metadata").child("finalizers"),
        ));
    }
    errors
}

/// `ValidateObjectMeta` for what berth checks: a name (or generateName on
/// create) of the form the type asks for, labels and annotations keys,
/// label values, finalizers and ownerReferences.
pub fn validate_metadata(rt: &ResourceType, object: &Value) -> ErrorList {
    let path = Path::new("metadata");
    let mut errors = ErrorList::new();
    let name = name_of(object);
    if name.is_empty() {
        errors.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for problem in rt.strategy.name_problems(name) {
            errors.push(FieldError::invalid(&path.child("name"), name, problem));
        }
    }
    let strings = |field: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_object)
    };
    if let Some(labels) = strings("labels") {
        errors.extend(validate_labels(
            labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))),
            &path.child("labels"),
        ));
    }
    if let Some(annotations) = strings("annotations") {
        errors.extend(validate_annotations(
            annotations
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))),
            &path.child("annotations"),
        ));
    }
    errors.extend(validate_finalizers(
        &crate::deletion::finalizers_of(object),
        &path.child("finalizers"),
    ));
    // A list that is not one of owner references is the type's decoding
    // to report (strict field validation or the typed conversion).
    if let Some(Ok(references)) = object
        .pointer("/metadata/ownerReferences")
        .map(Vec::<OwnerReference>::deserialize)
    {
        errors.extend(validate_owner_references(
            &references,
            &path.child("ownerReferences"),
        ));
    }
    errors
}

/// `value` as the k8s-openapi type `T`; a 400 naming the type if it does
/// not fit.
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
    let part: Option<T> = typed_part(rt, object, field)?;
    set_part(object, field, part.as_ref())
}

/// `object[field]` as its type `P`; an absent or null field is `None`.
fn typed_part<P: DeserializeOwned>(
    rt: &ResourceType,
    object: &Value,
    field: &str,
) -> ApiResult<Option<P>> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => typed(rt, value).map(Some),
    }
}

/// Sets `object[field]` to `part`, or removes the field for `None`.
fn set_part<P: Serialize>(object: &mut Value, field: &str, part: Option<&P>) -> ApiResult<()> {
    let Some(map) = object.as_object_mut() else {
        return Ok(());
    };
    match part {
        Some(part) => {
            map.insert(field.into(), untyped(part)?);
        }
        None => {
            map.remove(field);
        }
    }
    Ok(())
}

/// `validate` and `validate_update` of a type whose rules are written
/// against its k8s-openapi type: `$rules` gets the object and, on update,
/// the stored one (see [`validate_typed`]).
macro_rules! typed_validation {
    ($rules:expr) => {
        fn validate(
            &self,
            rt: &$crate::strategy::ResourceType,
            _attrs: &$crate::admission::Attributes,
            object: &serde_json::Value,
            metadata_errors: berth_core::validation::ErrorList,
        ) -> Result<(), $crate::status::ApiError> {
            $crate::strategy::validate_typed(rt, object, None, metadata_errors, $rules)
        }

        fn validate_update(
            &self,
            rt: &$crate::strategy::ResourceType,
            _attrs: &$crate::admission::Attributes,
            object: &serde_json::Value,
            old: &serde_json::Value,
            metadata_errors: berth_core::validation::ErrorList,
        ) -> Result<(), $crate::status::ApiError> {
            $crate::strategy::validate_typed(rt, object, Some(old), metadata_errors, $rules)
        }
    };
}
pub(crate) use typed_validation;

/// The rules of a type written against its k8s-openapi type `T` (the
/// stored object on update): one 422 with the metadata errors.
pub(crate) fn validate_typed<T: DeserializeOwned>(
    rt: &ResourceType,
    object: &Value,
    old: Option<&Value>,
    metadata_errors: ErrorList,
    rules: fn(&T, Option<&T>) -> ErrorList,
) -> ApiResult<()> {
    let new: T = typed(rt, object)?;
    let old: Option<T> = old.map(|old| typed(rt, old)).transpose()?;
    let mut errors = metadata_errors;
    errors.extend(rules(&new, old.as_ref()));
    validation_outcome(rt, name_of(object), Ok(()), errors)
}

fn untyped<T: Serialize>(object: &T) -> ApiResult<Value> {
    serde_json::to_value(object).map_err(ApiError::internal)
}

/// A write as admission sees it, but for the object it is about.
struct Request<'a> {
    operation: Operation,
    resource: &'a str,
    subresource: &'a str,
    user: UserInfo,
}

impl<'a> Request<'a> {
    fn new(
        ctx: &Context,
        operation: Operation,
        rt: &'a ResourceType,
        subresource: &'a str,
    ) -> Request<'a> {
        Request {
            operation,
            resource: rt.plural,
            subresource,
            user: UserInfo {
                name: ctx.user.name.clone(),
                groups: ctx.user.groups.clone(),
            },
        }
    }

    /// Admission's view of this request on `object`.
    fn attributes<'b>(&'b self, ctx: &Context, object: &'b Value) -> Attributes<'b> {
        Attributes {
            operation: self.operation,
            resource: self.resource,
            subresource: self.subresource,
            namespace: object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            name: name_of(object),
            user: &self.user,
            now: ctx.now,
        }
    }
}

/// Mutating admission on a typed object, given the stored one on update.
type Admit<T> = fn(&Attributes, &mut T, Option<&T>, &AdmissionConfig) -> Result<(), AdmissionError>;
/// Validating admission on a typed object, given the stored one on update.
type Validate<T> = fn(&Attributes, &T, Option<&T>, &AdmissionConfig) -> Result<(), AdmissionError>;

/// Create for a type whose admission plugins are written against its
/// k8s-openapi type `T` (pods, nodes): admission and validation on one
/// typed object (one conversion from JSON and one back, instead of one per
/// step: creates are the hot path).
fn create_typed<T: DeserializeOwned + Serialize>(
    rt: &ResourceType,
    object: &mut Value,
    ctx: &Context,
    metadata_errors: ErrorList,
    (admit, validate): (Admit<T>, Validate<T>),
) -> ApiResult<()> {
    let name = name_of(object).to_string();
    let mut typed_object: T = typed(rt, object)?;
    let request = Request::new(ctx, Operation::Create, rt, "");
    let attrs = request.attributes(ctx, object);
    admit(&attrs, &mut typed_object, None, &ctx.config.admission)
        .map_err(|e| admission_error(rt, &name, e))?;
    let result = validate(&attrs, &typed_object, None, &ctx.config.admission);
    validation_outcome(rt, &name, result, metadata_errors)?;
    *object = untyped(&typed_object)?;
    Ok(())
}

/// Update for a type with typed admission (see [`create_typed`]), after
/// [`keep_status`]: admission and validation on one typed copy of the
/// object and one of the stored object (each conversion of a whole Pod or
/// Node is tens of microseconds, and every status report and heartbeat
/// pays it); the conversion back also drops fields the type does not have.
fn update_typed<T: DeserializeOwned + Serialize + Metadata<Ty = ObjectMeta>>(
    rt: &ResourceType,
    subresource: &str,
    object: &mut Value,
    old: &Value,
    ctx: &Context,
    admission: (Admit<T>, Validate<T>),
) -> ApiResult<()> {
    let typed_object: T = typed(rt, object)?;
    let typed_old: T = typed(rt, old)?;
    let update = TypedUpdate::new(rt, subresource, old, ctx);
    update.admit_and_validate(object, typed_object, &typed_old, admission, write_whole)
}

/// What admission left of the typed object, as the whole object.
fn write_whole<T: Serialize>(object: &mut Value, typed: &mut T) -> ApiResult<()> {
    *object = untyped(typed)?;
    Ok(())
}

/// An update of typed admission, once its typed copies are made.
struct TypedUpdate<'a> {
    rt: &'a ResourceType,
    subresource: &'a str,
    old: &'a Value,
    ctx: &'a Context<'a>,
}

impl<'a> TypedUpdate<'a> {
    fn new(
        rt: &'a ResourceType,
        subresource: &'a str,
        old: &'a Value,
        ctx: &'a Context<'a>,
    ) -> Self {
        TypedUpdate {
            rt,
            subresource,
            old,
            ctx,
        }
    }

    /// Admission on the typed object, then `write_back` of what admission
    /// left into `object`, the generation, and validation.
    fn admit_and_validate<T: Metadata<Ty = ObjectMeta>>(
        &self,
        object: &mut Value,
        mut typed_object: T,
        typed_old: &T,
        (admit, validate): (Admit<T>, Validate<T>),
        write_back: impl FnOnce(&mut Value, &mut T) -> ApiResult<()>,
    ) -> ApiResult<()> {
        let (rt, old, ctx) = (self.rt, self.old, self.ctx);
        let name = name_of(old).to_string();
        let request = Request::new(ctx, Operation::Update, rt, self.subresource);
        let attrs = request.attributes(ctx, old);
        admit(
            &attrs,
            &mut typed_object,
            Some(typed_old),
            &ctx.config.admission,
        )
        .map_err(|e| admission_error(rt, &name, e))?;
        write_back(object, &mut typed_object)?;
        recount_generation(object, old, rt.strategy.bumps_generation(object, old));
        typed_object.metadata_mut().generation = object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        let metadata_errors = validate_metadata_update(rt, object, old);
        let attrs = request.attributes(ctx, object);
        let result = validate(
            &attrs,
            &typed_object,
            Some(typed_old),
            &ctx.config.admission,
        );
        validation_outcome(rt, &name, result, metadata_errors)
    }
}

/// A type whose `/status` writes [`update_typed_in_parts`] converts in
/// parts: its status, apart from the rest of the object.
pub(crate) trait StatusPart {
    type Status: DeserializeOwned + Serialize;
    fn status_part(&mut self) -> &mut Option<Self::Status>;
}

impl StatusPart for k8s_openapi::api::core::v1::Pod {
    type Status = k8s_openapi::api::core::v1::PodStatus;
    fn status_part(&mut self) -> &mut Option<Self::Status> {
        &mut self.status
    }
}

impl StatusPart for k8s_openapi::api::core::v1::Node {
    type Status = k8s_openapi::api::core::v1::NodeStatus;
    fn status_part(&mut self) -> &mut Option<Self::Status> {
        &mut self.status
    }
}

/// [`update_typed`], but a `/status` write (after [`keep_status`]: the
/// stored object with the request's metadata and status) has only its
/// metadata and status converted: the typed object is a copy of the
/// stored one with the request's two parts, and what admission leaves of
/// them is all that is converted back (the rest is the stored object,
/// already in its type's form; upstream's status strategy resets
/// everything else to the stored object too). Every kubelet's status
/// report is such a write: the whole object's round trip was most of its
/// cost.
fn update_typed_in_parts<T>(
    rt: &ResourceType,
    subresource: &str,
    object: &mut Value,
    old: &Value,
    ctx: &Context,
    admission: (Admit<T>, Validate<T>),
) -> ApiResult<()>
where
    T: DeserializeOwned + Serialize + Metadata<Ty = ObjectMeta> + StatusPart + Clone,
{
    if subresource != "status" {
        return update_typed(rt, subresource, object, old, ctx, admission);
    }
    let typed_old: T = typed(rt, old)?;
    let mut typed_object = typed_old.clone();
    *typed_object.metadata_mut() =
        typed_part::<ObjectMeta>(rt, object, "metadata")?.unwrap_or_default();
    *typed_object.status_part() = typed_part(rt, object, "status")?;
    let update = TypedUpdate::new(rt, subresource, old, ctx);
    update.admit_and_validate(object, typed_object, &typed_old, admission, write_parts)
}

/// What admission left of the typed object's metadata and status, into
/// the object (the rest of it is the stored object's).
fn write_parts<T>(object: &mut Value, typed: &mut T) -> ApiResult<()>
where
    T: Metadata<Ty = ObjectMeta> + StatusPart,
{
    set_part(object, "metadata", Some(typed.metadata()))?;
    set_part(object, "status", typed.status_part().as_ref())
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

/// What an update may change: the main resource keeps the stored status,
/// `/status` keeps everything but the status. Types without a status
/// (`has_status` false) keep nothing.
fn keep_status(has_status: bool, subresource: &str, object: &mut Value, old: &Value) {
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
