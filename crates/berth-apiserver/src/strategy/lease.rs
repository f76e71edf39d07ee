//! Leases: NodeRestriction (a node writes only its own Lease in
//! `kube-node-lease`); the default field selectors.

use berth_core::validation::ErrorList;
use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use super::{ObjectType, ResourceType, Strategy, typed, validation_outcome};
use crate::admission::{self, Attributes};
use crate::objects::name_of;
use crate::status::ApiError;

/// The strategy of coordination.k8s.io/v1 Leases.
#[derive(Debug)]
pub struct Leases;

impl Strategy for Leases {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Lease>()
    }

    fn validate(
        &self,
        rt: &ResourceType,
        attrs: &Attributes,
        object: &Value,
        metadata_errors: ErrorList,
    ) -> Result<(), ApiError> {
        let lease: Lease = typed(rt, object)?;
        let result = admission::validate_lease(attrs, Some(&lease));
        validation_outcome(rt, name_of(object), result, metadata_errors)
    }
}
