//! ReplicaSets: upstream's `SetDefaults_ReplicaSet` (one replica) and the
//! pod template's defaults; validation; the `status.replicas` field
//! selector.

use k8s_openapi::api::apps::v1::ReplicaSet;
use serde_json::{Map, Value, json};

use super::workload::{self, Validated, Workload, admit_nothing, default_field, validate};
use super::{ApiResult, Context, ObjectType, ResourceType, Strategy};
use crate::selectors::SelectableKind;
use berth_core::FeatureGates;
use berth_core::validation::{self, ErrorList};

const WORKLOAD: Workload<ReplicaSet> = Workload {
    defaults,
    admission: (admit_nothing, validate::<ReplicaSet>),
};

/// The strategy of apps/v1 ReplicaSets.
#[derive(Debug)]
pub struct ReplicaSets;

impl Strategy for ReplicaSets {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<ReplicaSet>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> SelectableKind {
        SelectableKind::ReplicaSet
    }

    fn create(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        ctx: &Context,
        metadata_errors: ErrorList,
    ) -> ApiResult<()> {
        workload::create(rt, object, ctx, metadata_errors, &WORKLOAD)
    }

    fn update(
        &self,
        rt: &ResourceType,
        subresource: &str,
        object: &mut Value,
        old: &Value,
        ctx: &Context,
    ) -> ApiResult<()> {
        workload::update(rt, subresource, object, old, ctx, &WORKLOAD)
    }
}

/// Upstream `SetDefaults_ReplicaSet`.
fn defaults(spec: &mut Map<String, Value>) {
    default_field(spec, "replicas", json!(1));
}

impl Validated for ReplicaSet {
    fn validate_new(&self, gates: FeatureGates) -> ErrorList {
        validation::validate_replica_set(self, gates)
    }

    fn validate_update(&self, old: &Self, gates: FeatureGates) -> ErrorList {
        validation::validate_replica_set_update(self, old, gates)
    }

    fn validate_status(&self, old: &Self) -> ErrorList {
        validation::validate_replica_set_status_update(self, old)
    }
}
