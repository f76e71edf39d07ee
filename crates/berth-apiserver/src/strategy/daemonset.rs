//! DaemonSets: upstream's `SetDefaults_DaemonSet` (RollingUpdate with
//! maxUnavailable 1 and maxSurge 0, ten revisions kept) and the pod
//! template's defaults; the template generation the server owns (apps/v1
//! carries it in the `deprecated.daemonset.template.generation`
//! annotation, which the DaemonSet controller labels pods with);
//! validation.

use berth_core::FeatureGates;
use berth_core::validation::{self, ErrorList};
use berth_core::workloads::daemon::{
    DEPRECATED_TEMPLATE_GENERATION_ANNOTATION, template_generation,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Map, Value, json};

use super::workload::{self, Validated, Workload, default_field, validate};
use super::{ApiResult, Context, ObjectType, ResourceType, Strategy};
use crate::admission::{AdmissionConfig, AdmissionError, Attributes};

const WORKLOAD: Workload<DaemonSet> = Workload {
    defaults,
    admission: (admit, validate::<DaemonSet>),
};

/// The strategy of apps/v1 DaemonSets.
#[derive(Debug)]
pub struct DaemonSets;

impl Strategy for DaemonSets {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<DaemonSet>()
    }

    fn has_status(&self) -> bool {
        true
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

/// Upstream `SetDefaults_DaemonSet`.
fn defaults(spec: &mut Map<String, Value>) {
    if let Some(strategy) = default_field(spec, "updateStrategy", json!({})).as_object_mut() {
        let ty = default_field(strategy, "type", json!("RollingUpdate"));
        if *ty == "RollingUpdate"
            && let Some(rolling) =
                default_field(strategy, "rollingUpdate", json!({})).as_object_mut()
        {
            default_field(rolling, "maxUnavailable", json!(1));
            default_field(rolling, "maxSurge", json!(0));
        }
    }
    default_field(spec, "revisionHistoryLimit", json!(10));
}

/// The template generation (upstream's `spec.templateGeneration`, in
/// apps/v1 the annotation): at least 1 on create; on update the stored
/// one, one more when the template changed (a client's value is not
/// taken); a status write keeps the stored one.
fn admit(
    attrs: &Attributes,
    ds: &mut DaemonSet,
    old: Option<&DaemonSet>,
    _config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    let stored = |ds: &DaemonSet| template_generation(ds).unwrap_or(0);
    let generation = match old {
        None => stored(ds).max(1),
        Some(old) if attrs.subresource.is_empty() && old.spec.template != ds.spec.template => {
            stored(old) + 1
        }
        Some(old) => stored(old),
    };
    ds.metadata.annotations.get_or_insert_default().insert(
        DEPRECATED_TEMPLATE_GENERATION_ANNOTATION.into(),
        generation.to_string(),
    );
    Ok(())
}

impl Validated for DaemonSet {
    fn validate_new(&self, gates: FeatureGates) -> ErrorList {
        validation::validate_daemon_set(self, gates)
    }

    fn validate_update(&self, old: &Self, gates: FeatureGates) -> ErrorList {
        validation::validate_daemon_set_update(self, old, gates)
    }

    fn validate_status(&self, old: &Self) -> ErrorList {
        validation::validate_daemon_set_status_update(self, old)
    }
}
