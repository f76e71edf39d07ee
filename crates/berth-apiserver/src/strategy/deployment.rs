//! Deployments: upstream's `SetDefaults_Deployment` (one replica,
//! RollingUpdate 25%/25%, ten revisions kept, a 600 s progress deadline);
//! the generation moved on by a change of the spec or of the annotations
//! (they are copied to the ReplicaSets); `/status` keeps the stored labels
//! too. The rest is every workload's ([`super::workload`]).

use berth_core::validation;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Map, Value, json};

use super::workload::{Rules, Validated, WorkloadKind, Workloads, default_field};

/// The strategy of apps/v1 Deployments.
pub type Deployments = Workloads<Deployment>;

impl Validated for Deployment {
    const RULES: Rules<Self> = Rules {
        new: validation::validate_deployment,
        update: validation::validate_deployment_update,
        status: validation::validate_deployment_status_update,
    };
}

impl WorkloadKind for Deployment {
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

    fn bumps_generation(object: &Value, old: &Value) -> bool {
        object.get("spec") != old.get("spec")
            || object.pointer("/metadata/annotations") != old.pointer("/metadata/annotations")
    }

    /// Upstream's status strategy resets `metadata.labels` too.
    fn keep_on_status_write(object: &mut Value, old: &Value) {
        let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        match old.pointer("/metadata/labels") {
            Some(labels) => meta.insert("labels".into(), labels.clone()),
            None => meta.remove("labels"),
        };
    }
}
