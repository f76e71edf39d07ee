//! ReplicaSets: upstream's `SetDefaults_ReplicaSet` (one replica) and the
//! `status.replicas` field selector. The rest is every workload's
//! ([`super::workload`]).

use berth_core::validation;
use k8s_openapi::api::apps::v1::ReplicaSet;
use serde_json::{Map, Value, json};

use super::workload::{Rules, Validated, WorkloadKind, Workloads, default_field};
use crate::selectors::SelectableKind;

/// The strategy of apps/v1 ReplicaSets.
pub type ReplicaSets = Workloads<ReplicaSet>;

impl Validated for ReplicaSet {
    const RULES: Rules<Self> = Rules {
        new: validation::validate_replica_set,
        update: validation::validate_replica_set_update,
        status: validation::validate_replica_set_status_update,
    };
}

impl WorkloadKind for ReplicaSet {
    /// Upstream `SetDefaults_ReplicaSet`.
    fn defaults(spec: &mut Map<String, Value>) {
        default_field(spec, "replicas", json!(1));
    }

    fn selectable_kind() -> SelectableKind {
        SelectableKind::ReplicaSet
    }
}
