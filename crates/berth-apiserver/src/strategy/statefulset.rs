//! StatefulSets: a DNS label for a name (it names the pods and their
//! hostnames), upstream's `SetDefaults_StatefulSet` (OrderedReady,
//! RollingUpdate from partition 0, claims retained, one replica, ten
//! revisions kept) and the claim templates' defaults. The rest is every
//! workload's ([`super::workload`]).

use berth_core::validation;
use berth_core::validation::names::is_dns1123_label;
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{Map, Value, json};

use super::workload::{Rules, Validated, WorkloadKind, Workloads, default_field};

/// The strategy of apps/v1 StatefulSets.
pub type StatefulSets = Workloads<StatefulSet>;

/// StatefulSets' pod templates are not held to the pod rules upstream, so
/// the feature gates do not matter.
impl Validated for StatefulSet {
    const RULES: Rules<Self> = Rules {
        new: |set, _| validation::validate_stateful_set(set),
        update: |set, old, _| validation::validate_stateful_set_update(set, old),
        status: validation::validate_stateful_set_status_update,
    };
}

impl WorkloadKind for StatefulSet {
    /// Upstream `SetDefaults_StatefulSet`, and
    /// `SetDefaults_PersistentVolumeClaim` and
    /// `SetDefaults_PersistentVolumeClaimSpec` on each claim template.
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
        let policy = default_field(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
        if let Some(policy) = policy.as_object_mut() {
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

    /// Upstream's `ValidateStatefulSetName`.
    fn name_problems(name: &str) -> Vec<String> {
        is_dns1123_label(name)
    }
}
