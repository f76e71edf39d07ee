//! ControllerRevisions: the immutable snapshots the DaemonSet and
//! StatefulSet controllers keep of their templates; `data` is required and
//! may not change, `revision` is not negative.

use berth_core::validation::{self, ErrorList};
use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::Value;

use super::workload::{Required, Rules, Validated, admit_nothing, check_required, validate};
use super::{
    Admit, ApiResult, Context, ObjectType, ResourceType, Strategy, Validate, create_typed,
    update_typed, validate_metadata,
};

const ADMISSION: (Admit<ControllerRevision>, Validate<ControllerRevision>) =
    (admit_nothing, validate::<ControllerRevision>);

/// `data` (a `runtime.RawExtension` upstream) may be absent in a request;
/// k8s-openapi's type cannot be without it.
const DATA_REQUIRED: Required = &[("/data", "data", "data is mandatory")];

/// ControllerRevisions have no status: a status write cannot reach them.
impl Validated for ControllerRevision {
    const RULES: Rules<Self> = Rules {
        new: |revision, _| validation::validate_controller_revision(revision),
        update: |revision, old, _| validation::validate_controller_revision_update(revision, old),
        status: validation::validate_controller_revision_update,
    };
}

/// The strategy of apps/v1 ControllerRevisions.
#[derive(Debug)]
pub struct ControllerRevisions;

impl Strategy for ControllerRevisions {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<ControllerRevision>()
    }

    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> ApiResult<()> {
        check_required(rt, object, DATA_REQUIRED, &metadata_errors)?;
        create_typed(rt, object, ctx, metadata_errors, ADMISSION)
    }

    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> ApiResult<()> {
        check_required(rt, object, DATA_REQUIRED, &validate_metadata(rt, object))?;
        update_typed(rt, subresource, object, old, ctx, ADMISSION)
    }
}
