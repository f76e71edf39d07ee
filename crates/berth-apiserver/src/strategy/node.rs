//! Nodes: the node admission plugins (TaintNodesByCondition, `timeAdded`,
//! NodeRestriction) and validation on one typed object, and the node field
//! selectors.

use berth_core::validation::ErrorList;
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use super::{
    Admit, Context, ObjectType, ResourceType, Strategy, Validate, create_typed, keep_status,
    update_typed_in_parts,
};
use crate::admission;
use crate::selectors::SelectableKind;
use crate::status::ApiError;

/// The node admission plugins and the node's validation.
const ADMISSION: (Admit<Node>, Validate<Node>) = (admission::admit_node, |attrs, node, old, _| {
    admission::validate_node(attrs, node, old)
});

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

    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> Result<(), ApiError> {
        create_typed(rt, object, ctx, metadata_errors, ADMISSION)
    }

    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        keep_status(self.has_status(), subresource, object, old);
        update_typed_in_parts(rt, subresource, object, old, ctx, ADMISSION)
    }
}
