//! PriorityClasses (scheduling.k8s.io/v1): the preemption policy
//! defaulted (`SetDefaults_PriorityClass`), berth-core's validation
//! (`pkg/apis/scheduling/validation`), the Priority admission plugin's
//! one global default, and the system classes, which the server creates
//! at start (see `api/server.rs`) and which may not be deleted (upstream's
//! priority class storage) nor changed in value or default (validation).

use berth_core::priority::{PREEMPT_LOWER_PRIORITY, system_priority_class};
use berth_core::validation::{self, ErrorList};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Value, json};

use super::{
    Context, ObjectType, ResourceType, Strategy, typed, validate_metadata_update,
    validation_outcome,
};
use crate::admission::{AdmissionError, Operation, priority};
use crate::objects::name_of;
use crate::status::ApiError;

/// The strategy of scheduling.k8s.io/v1 PriorityClasses.
#[derive(Debug)]
pub struct PriorityClasses;

impl Strategy for PriorityClasses {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<PriorityClass>()
    }

    fn reads_priority_classes(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    fn on_create(&self, object: &mut Value) {
        if let Some(class) = object.as_object_mut() {
            class
                .entry("preemptionPolicy")
                .or_insert_with(|| json!(PREEMPT_LOWER_PRIORITY));
        }
    }

    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> Result<(), ApiError> {
        self.on_create(object);
        admit(rt, object, None, ctx, metadata_errors)
    }

    fn update(
        &self,
        rt: &ResourceType,
        _subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        let metadata_errors = validate_metadata_update(rt, object, old);
        admit(rt, object, Some(old), ctx, metadata_errors)
    }

    fn check_deletable(&self, name: &str) -> Result<(), ApiError> {
        if system_priority_class(name).is_some() {
            return Err(ApiError::forbidden_message(
                "scheduling.k8s.io",
                "priorityclasses",
                name,
                "this is a system priority class and cannot be deleted",
            ));
        }
        Ok(())
    }
}

/// Validation (berth-core's, the update's when there is a stored class),
/// then the Priority plugin's one global default (403).
fn admit(
    rt: &ResourceType,
    object: &Value,
    old: Option<&Value>,
    ctx: &Context,
    metadata_errors: ErrorList,
) -> Result<(), ApiError> {
    let name = name_of(object);
    let class: PriorityClass = typed(rt, object)?;
    let (operation, errors) = match old {
        Some(old) => (
            Operation::Update,
            validation::validate_priority_class_update(&class, &typed(rt, old)?),
        ),
        None => (
            Operation::Create,
            validation::validate_priority_class(&class),
        ),
    };
    let result = if errors.is_empty() {
        priority::validate_global_default(operation, &class, &ctx.priority_classes).map_err(|why| {
            AdmissionError::Forbidden {
                message: ApiError::forbidden_message(rt.group, rt.plural, name, why).message,
            }
        })
    } else {
        Err(AdmissionError::Invalid {
            kind: rt.kind.into(),
            name: name.into(),
            errors,
        })
    };
    validation_outcome(rt, name, result, metadata_errors)
}
