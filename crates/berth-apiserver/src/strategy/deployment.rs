//! Deployments: upstream's `SetDefaults_Deployment` (one replica,
//! RollingUpdate 25%/25%, ten revisions kept, a 600 s progress deadline)
//! and the pod template's defaults; the generation moved on by a change of
//! the spec or of the annotations (they are copied to the ReplicaSets);
//! `/status` keeps the stored labels too; validation.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Map, Value, json};

use super::workload::{self, Validated, Workload, admit_nothing, default_field, validate};
use super::{ApiResult, Context, ObjectType, ResourceType, Strategy};
use berth_core::FeatureGates;
use berth_core::validation::{self, ErrorList};

const WORKLOAD: Workload<Deployment> = Workload {
    defaults,
    admission: (admit_nothing, validate::<Deployment>),
};

/// The strategy of apps/v1 Deployments.
#[derive(Debug)]
pub struct Deployments;

impl Strategy for Deployments {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Deployment>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn bumps_generation(&self, object: &Value, old: &Value) -> bool {
        object.get("spec") != old.get("spec")
            || object.pointer("/metadata/annotations") != old.pointer("/metadata/annotations")
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
        if subresource == "status" {
            keep_labels(object, old);
        }
        workload::update(rt, subresource, object, old, ctx, &WORKLOAD)
    }
}

/// A status write keeps the stored `metadata.labels` (upstream's status
/// strategy resets them).
fn keep_labels(object: &mut Value, old: &Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match old.pointer("/metadata/labels") {
        Some(labels) => meta.insert("labels".into(), labels.clone()),
        None => meta.remove("labels"),
    };
}

/// Upstream `SetDefaults_Deployment`.
fn defaults(spec: &mut Map<String, Value>) {
    default_field(spec, "replicas", json!(1));
    if let Some(strategy) = default_field(spec, "strategy", json!({})).as_object_mut() {
        let ty = default_field(strategy, "type", json!("RollingUpdate"));
        if *ty == "RollingUpdate"
            && let Some(rolling) =
                default_field(strategy, "rollingUpdate", json!({})).as_object_mut()
        {
            default_field(rolling, "maxUnavailable", json!("25%"));
            default_field(rolling, "maxSurge", json!("25%"));
        }
    }
    default_field(spec, "revisionHistoryLimit", json!(10));
    default_field(spec, "progressDeadlineSeconds", json!(600));
}

impl Validated for Deployment {
    fn validate_new(&self, gates: FeatureGates) -> ErrorList {
        validation::validate_deployment(self, gates)
    }

    fn validate_update(&self, old: &Self, gates: FeatureGates) -> ErrorList {
        validation::validate_deployment_update(self, old, gates)
    }

    fn validate_status(&self, old: &Self) -> ErrorList {
        validation::validate_deployment_status_update(self, old)
    }
}
