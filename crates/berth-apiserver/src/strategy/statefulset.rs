//! StatefulSets: a DNS label for a name (it names the pods and their
//! hostnames), upstream's `SetDefaults_StatefulSet` (OrderedReady,
//! RollingUpdate from partition 0, claims retained, one replica, ten
//! revisions kept), the claim templates' and the pod template's defaults;
//! validation.

use berth_core::FeatureGates;
use berth_core::validation::names::is_dns1123_label;
use berth_core::validation::{self, ErrorList};
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{Map, Value, json};

use super::workload::{self, Validated, Workload, admit_nothing, default_field, validate};
use super::{ApiResult, Context, ObjectType, ResourceType, Strategy};

const WORKLOAD: Workload<StatefulSet> = Workload {
    defaults,
    admission: (admit_nothing, validate::<StatefulSet>),
};

/// The strategy of apps/v1 StatefulSets.
#[derive(Debug)]
pub struct StatefulSets;

impl Strategy for StatefulSets {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<StatefulSet>()
    }

    fn has_status(&self) -> bool {
        true
    }

    /// Upstream's `ValidateStatefulSetName`.
    fn name_problems(&self, name: &str) -> Vec<String> {
        is_dns1123_label(name)
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

/// Upstream `SetDefaults_StatefulSet`, and `SetDefaults_PersistentVolumeClaim`
/// and `SetDefaults_PersistentVolumeClaimSpec` on each claim template.
fn defaults(spec: &mut Map<String, Value>) {
    default_field(spec, "podManagementPolicy", json!("OrderedReady"));
    if let Some(strategy) = default_field(spec, "updateStrategy", json!({})).as_object_mut() {
        if strategy.get("type").is_none_or(|t| t.is_null() || t == "") {
            strategy.insert("type".into(), json!("RollingUpdate"));
            default_field(strategy, "rollingUpdate", json!({}));
        }
        let rolling = strategy.get("type").is_some_and(|t| t == "RollingUpdate");
        if let Some(rolling_update) = strategy
            .get_mut("rollingUpdate")
            .and_then(Value::as_object_mut)
            .filter(|_| rolling)
        {
            default_field(rolling_update, "partition", json!(0));
        }
    }
    if let Some(policy) =
        default_field(spec, "persistentVolumeClaimRetentionPolicy", json!({})).as_object_mut()
    {
        default_field(policy, "whenDeleted", json!("Retain"));
        default_field(policy, "whenScaled", json!("Retain"));
    }
    default_field(spec, "replicas", json!(1));
    default_field(spec, "revisionHistoryLimit", json!(10));
    let claims = spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut);
    for claim in claims
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        if let Some(claim_spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
            default_field(claim_spec, "volumeMode", json!("Filesystem"));
        }
        if let Some(status) = default_field(claim, "status", json!({})).as_object_mut() {
            default_field(status, "phase", json!("Pending"));
        }
    }
}

/// StatefulSets' pod templates are not held to the pod rules upstream, so
/// the feature gates do not matter.
impl Validated for StatefulSet {
    fn validate_new(&self, _gates: FeatureGates) -> ErrorList {
        validation::validate_stateful_set(self)
    }

    fn validate_update(&self, old: &Self, _gates: FeatureGates) -> ErrorList {
        validation::validate_stateful_set_update(self, old)
    }

    fn validate_status(&self, old: &Self) -> ErrorList {
        validation::validate_stateful_set_status_update(self, old)
    }
}
