//! DaemonSets: upstream's `SetDefaults_DaemonSet` (RollingUpdate with
//! maxUnavailable 1 and maxSurge 0, ten revisions kept) and the template
//! generation the server owns (apps/v1 carries it in the
//! `deprecated.daemonset.template.generation` annotation, which the
//! DaemonSet controller labels pods with). The rest is every workload's
//! ([`super::workload`]).

use berth_core::validation;
use berth_core::workloads::daemon::{
    DEPRECATED_TEMPLATE_GENERATION_ANNOTATION, template_generation,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Map, Value, json};

use super::workload::{Rules, Validated, WorkloadKind, Workloads, default_field};
use crate::admission::Attributes;

/// The strategy of apps/v1 DaemonSets.
pub type DaemonSets = Workloads<DaemonSet>;

impl Validated for DaemonSet {
    const RULES: Rules<Self> = Rules {
        new: validation::validate_daemon_set,
        update: validation::validate_daemon_set_update,
        status: validation::validate_daemon_set_status_update,
    };
}

impl WorkloadKind for DaemonSet {
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

    /// The template generation (upstream's `spec.templateGeneration`): at
    /// least 1 on create; on update the stored one, one more when the
    /// template changed (a client's value is not taken); a status write
    /// keeps the stored one.
    fn admit(attrs: &Attributes, ds: &mut DaemonSet, old: Option<&DaemonSet>) {
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
    }
}
