//! Nodes: the node admission plugins (TaintNodesByCondition, `timeAdded`,
//! NodeRestriction) and validation on one typed object, and the node field
//! selectors.

use berth_core::validation::ErrorList;
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use super::{
    Context, ObjectType, ResourceType, Strategy, admission_error, attributes, keep_status, typed,
    untyped, user_info, validate_metadata, validation_outcome,
};
use crate::admission::{self, Operation};
use crate::objects::{name_of, recount_generation};
use crate::selectors::SelectableKind;
use crate::status::ApiError;

/// The strategy of core/v1 Nodes.
#[derive(Debug)]
pub struct Nodes;

impl Strategy for Nodes {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Node>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> SelectableKind {
        SelectableKind::Node
    }

    /// Admission and validation on one typed object.
    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> Result<(), ApiError> {
        let name = name_of(object).to_string();
        let user = user_info(ctx.user);
        let mut node: Node = typed(rt, object)?;
        let attrs = attributes(ctx, Operation::Create, rt, "", object, &user);
        admission::admit_node(&attrs, &mut node, None, &ctx.config.admission)
            .map_err(|e| admission_error(rt, &name, e))?;
        let result = admission::validate_node(&attrs, &node, None);
        validation_outcome(rt, &name, result, metadata_errors)?;
        *object = untyped(&node)?;
        Ok(())
    }

    /// Admission and validation on one typed copy of the object and one of
    /// the stored object (every status report and heartbeat pays the
    /// conversion of a whole Node).
    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        keep_status(self.has_status(), subresource, object, old);
        let user = user_info(ctx.user);
        let name = name_of(old).to_string();
        let mut node: Node = typed(rt, object)?;
        let old_node: Node = typed(rt, old)?;
        let attrs = attributes(ctx, Operation::Update, rt, subresource, old, &user);
        admission::admit_node(&attrs, &mut node, Some(&old_node), &ctx.config.admission)
            .map_err(|e| admission_error(rt, &name, e))?;
        *object = untyped(&node)?;
        recount_generation(object, old);
        node.metadata.generation = object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        let metadata_errors = validate_metadata(rt, object);
        let attrs = attributes(ctx, Operation::Update, rt, subresource, object, &user);
        let result = admission::validate_node(&attrs, &node, Some(&old_node));
        validation_outcome(rt, &name, result, metadata_errors)
    }
}
