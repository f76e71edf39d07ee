//! PodDisruptionBudgets (policy/v1), upstream's `pkg/registry/policy/
//! poddisruptionbudget`: the status cleared on create (the disruption
//! controller writes it through `/status`), the spec kept on a status
//! write and the status on a spec write (`has_status`), berth-core's
//! validation (`pkg/apis/policy/validation`). `unhealthyPodEvictionPolicy`
//! is not defaulted: unset stays unset, as upstream.

use berth_core::validation::{
    ErrorList, validate_pod_disruption_budget, validate_pod_disruption_budget_status,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::{ObjectType, Strategy, typed_validation};

/// The strategy of policy/v1 PodDisruptionBudgets.
#[derive(Debug)]
pub struct PodDisruptionBudgets;

fn rules(new: &PodDisruptionBudget, _old: Option<&PodDisruptionBudget>) -> ErrorList {
    let mut errs = validate_pod_disruption_budget(new);
    errs.extend(validate_pod_disruption_budget_status(new));
    errs
}

impl Strategy for PodDisruptionBudgets {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<PodDisruptionBudget>()
    }

    fn has_status(&self) -> bool {
        true
    }

    /// `PrepareForCreate`: a new budget has an empty status (the counts
    /// are required fields, so zero) until the controller has seen it.
    fn on_create(&self, object: &mut Value) {
        if let Some(map) = object.as_object_mut() {
            map.insert(
                "status".into(),
                json!({
                    "currentHealthy": 0,
                    "desiredHealthy": 0,
                    "disruptionsAllowed": 0,
                    "expectedPods": 0,
                }),
            );
        }
    }

    typed_validation!(rules);
}
