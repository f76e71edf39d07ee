//! The apps/v1 workloads' API validation: a port of upstream's
//! `pkg/apis/apps/validation` (and of the selector immutability its
//! registry strategies add), over the k8s-openapi types, with upstream's
//! field paths and messages.
//!
//! Also the `/scale` subresource's rule ([`validate_scale`]).
//!
//! Metadata is the API server's (its name rule is the type's, and labels
//! and annotations are checked for every type alike); these functions
//! check the spec, the status of a `/status` write, and what an update may
//! change. The pod template goes through [`validate_pod_template`], the
//! one port of the pod rules pods themselves are held to.
//!
//! Where k8s-openapi has an `Option` for a field upstream's internal type
//! holds by value (defaulted before validation), `None` reads as the Go
//! zero value, as upstream's conversion makes it.

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, DaemonSetSpec, DaemonSetStatus, DaemonSetUpdateStrategy,
    Deployment, DeploymentSpec, DeploymentStatus, DeploymentStrategy, ReplicaSet, ReplicaSetSpec,
    ReplicaSetStatus, RollingUpdateDaemonSet, RollingUpdateDeployment,
    RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetSpec, StatefulSetStatus,
};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::FeatureGates;
use crate::labels::{LabelSelector, label_selector_as_selector};
use crate::validation::names::is_valid_percent;
use crate::validation::{
    ErrorList, FieldError, Path, validate_annotations, validate_immutable, validate_label_selector,
    validate_labels, validate_nonnegative, validate_pod_template,
};

const SELECTOR_MISMATCH: &str = "`selector` does not match template `labels`";
const GREATER_THAN_REPLICAS: &str = "cannot be greater than status.replicas";

fn spec_path() -> Path {
    Path::new("spec")
}

fn status_path() -> Path {
    Path::new("status")
}

/// A template's labels as the bad value of a mismatch (`null` when none).
fn template_labels(template: &PodTemplateSpec) -> serde_json::Value {
    template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .map(|l| serde_json::to_value(l).unwrap_or_default())
        .unwrap_or_default()
}

fn selects_template(selector: &LabelSelector, template: &PodTemplateSpec) -> bool {
    selector.matches(template.metadata.as_ref().and_then(|m| m.labels.as_ref()))
}

fn shown<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// A workload's selector with neither `matchLabels` nor
/// `matchExpressions`: invalid (it would select every pod).
fn empty_selector(selector: &ApiLabelSelector, kind: &str) -> Option<FieldError> {
    let terms = selector.match_labels.as_ref().map_or(0, |l| l.len())
        + selector.match_expressions.as_ref().map_or(0, Vec::len);
    (terms == 0).then(|| {
        FieldError::invalid(
            &spec_path().child("selector"),
            shown(selector),
            format!("empty selector is invalid for {kind}"),
        )
    })
}

/// The selector checks of Deployments, ReplicaSets and StatefulSets
/// (which require one): `ValidateLabelSelector`, not empty, and parsed
/// for the template check (`None` when it does not parse).
fn required_selector(
    selector: &ApiLabelSelector,
    kind: &str,
    parse_error_detail: &str,
    errors: &mut ErrorList,
) -> Option<LabelSelector> {
    let path = spec_path().child("selector");
    errors.extend(validate_label_selector(selector, &path));
    errors.extend(empty_selector(selector, kind));
    match label_selector_as_selector(Some(selector)) {
        Ok(parsed) => parsed,
        Err(_) => {
            errors.push(FieldError::invalid(
                &path,
                shown(selector),
                parse_error_detail,
            ));
            None
        }
    }
}

/// What every workload's pod template must be: restarted always, without
/// a deadline.
fn restart_always_without_deadline(
    template: &PodTemplateSpec,
    path: &Path,
    kind: &str,
) -> ErrorList {
    let mut errors = ErrorList::new();
    let spec = template.spec.as_ref();
    let restart_policy = spec.and_then(|s| s.restart_policy.as_deref()).unwrap_or("");
    if restart_policy != "Always" {
        errors.push(FieldError::not_supported(
            &path.child("spec").child("restartPolicy"),
            restart_policy,
            &["Always"],
        ));
    }
    if spec.is_some_and(|s| s.active_deadline_seconds.is_some()) {
        errors.push(FieldError::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errors
}

/// `ValidatePodTemplateSpecForReplicaSet` (Deployments and ReplicaSets).
fn validate_replica_set_template(
    template: &PodTemplateSpec,
    old: Option<&PodTemplateSpec>,
    selector: &LabelSelector,
    gates: FeatureGates,
) -> ErrorList {
    let path = spec_path().child("template");
    let mut errors = ErrorList::new();
    if !selector.is_empty() && !selects_template(selector, template) {
        errors.push(FieldError::invalid(
            &path.child("metadata").child("labels"),
            template_labels(template),
            SELECTOR_MISMATCH,
        ));
    }
    errors.extend(validate_pod_template(template, old, &path, gates));
    errors.extend(restart_always_without_deadline(
        template,
        &path,
        "ReplicaSet",
    ));
    errors
}

/// `getIntOrPercentValue`: a valid percentage's number, else the integer
/// (a string that is not a percentage reads as its integer, or 0).
fn int_or_percent_value(value: &IntOrString) -> i64 {
    match value {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(s) if is_valid_percent(s).is_empty() => {
            s.trim_end_matches('%').parse().unwrap_or(i64::MAX)
        }
        IntOrString::String(s) => s.parse().unwrap_or(0),
    }
}

/// `ValidatePositiveIntOrPercent`.
pub(crate) fn validate_positive_int_or_percent(value: &IntOrString, path: &Path) -> ErrorList {
    match value {
        IntOrString::String(s) => is_valid_percent(s)
            .into_iter()
            .map(|msg| FieldError::invalid(path, s.as_str(), msg))
            .collect(),
        IntOrString::Int(n) => validate_nonnegative(i64::from(*n), path),
    }
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(value: &IntOrString, path: &Path) -> ErrorList {
    match value {
        IntOrString::String(s)
            if is_valid_percent(s).is_empty() && int_or_percent_value(value) > 100 =>
        {
            vec![FieldError::invalid(
                path,
                s.as_str(),
                "must not be greater than 100%",
            )]
        }
        _ => ErrorList::new(),
    }
}

/// An unset int-or-string: Go's zero `IntOrString`, the integer 0.
const ZERO: IntOrString = IntOrString::Int(0);

/// `ValidateRollingUpdateDeployment`.
fn validate_rolling_update_deployment(rolling: &RollingUpdateDeployment, path: &Path) -> ErrorList {
    let max_unavailable = rolling.max_unavailable.as_ref().unwrap_or(&ZERO);
    let max_surge = rolling.max_surge.as_ref().unwrap_or(&ZERO);
    let unavailable_path = path.child("maxUnavailable");
    let mut errors = validate_positive_int_or_percent(max_unavailable, &unavailable_path);
    errors.extend(validate_positive_int_or_percent(
        max_surge,
        &path.child("maxSurge"),
    ));
    if int_or_percent_value(max_unavailable) == 0 && int_or_percent_value(max_surge) == 0 {
        errors.push(FieldError::invalid(
            &unavailable_path,
            shown(max_unavailable),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    errors.extend(not_more_than_100_percent(
        max_unavailable,
        &unavailable_path,
    ));
    errors
}

/// `ValidateDeploymentStrategy`.
fn validate_deployment_strategy(strategy: &DeploymentStrategy, path: &Path) -> ErrorList {
    match strategy.type_.as_deref().unwrap_or("") {
        "Recreate" if strategy.rolling_update.is_some() => vec![FieldError::forbidden(
            &path.child("rollingUpdate"),
            "may not be specified when strategy `type` is 'Recreate'",
        )],
        "Recreate" => ErrorList::new(),
        "RollingUpdate" => match &strategy.rolling_update {
            None => vec![FieldError::required(
                &path.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )],
            Some(rolling) => {
                validate_rolling_update_deployment(rolling, &path.child("rollingUpdate"))
            }
        },
        _ => vec![FieldError::not_supported(
            path,
            shown(strategy),
            &["Recreate", "RollingUpdate"],
        )],
    }
}

/// `ValidateDeploymentSpec`, with `old` the stored spec of an update.
fn validate_deployment_spec(
    spec: &DeploymentSpec,
    old: Option<&DeploymentSpec>,
    gates: FeatureGates,
) -> ErrorList {
    let path = spec_path();
    let mut errors =
        validate_nonnegative(spec.replicas.unwrap_or(1).into(), &path.child("replicas"));
    if let Some(selector) = required_selector(
        &spec.selector,
        "deployment",
        "invalid label selector",
        &mut errors,
    ) {
        errors.extend(validate_replica_set_template(
            &spec.template,
            old.map(|o| &o.template),
            &selector,
            gates,
        ));
    }
    errors.extend(validate_deployment_strategy(
        spec.strategy
            .as_ref()
            .unwrap_or(&DeploymentStrategy::default()),
        &path.child("strategy"),
    ));
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    errors.extend(validate_nonnegative(
        min_ready.into(),
        &path.child("minReadySeconds"),
    ));
    if let Some(limit) = spec.revision_history_limit {
        errors.extend(validate_nonnegative(
            limit.into(),
            &path.child("revisionHistoryLimit"),
        ));
    }
    if let Some(deadline) = spec.progress_deadline_seconds {
        let deadline_path = path.child("progressDeadlineSeconds");
        errors.extend(validate_nonnegative(deadline.into(), &deadline_path));
        if deadline <= min_ready {
            errors.push(FieldError::invalid(
                &deadline_path,
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errors
}

fn selector_immutable(new: &ApiLabelSelector, old: &ApiLabelSelector) -> ErrorList {
    validate_immutable(new, old, &spec_path().child("selector"))
}

/// A new Deployment (`ValidateDeployment` but its metadata).
pub fn validate_deployment(deployment: &Deployment, gates: FeatureGates) -> ErrorList {
    validate_deployment_spec(&deployment.spec, None, gates)
}

/// An updated Deployment: its spec, and a selector that stays.
pub fn validate_deployment_update(
    deployment: &Deployment,
    old: &Deployment,
    gates: FeatureGates,
) -> ErrorList {
    let (spec, old_spec) = (&deployment.spec, &old.spec);
    let mut errors = validate_deployment_spec(spec, Some(old_spec), gates);
    errors.extend(selector_immutable(&spec.selector, &old_spec.selector));
    errors
}

/// `IsDecremented` on `status.collisionCount`.
fn collision_count_decremented(new: Option<i32>, old: Option<i32>) -> ErrorList {
    let decremented = match (new, old) {
        (None, Some(_)) => true,
        (Some(new), Some(old)) => new < old,
        _ => false,
    };
    if decremented {
        vec![FieldError::invalid(
            &status_path().child("collisionCount"),
            new.unwrap_or(0),
            "cannot be decremented",
        )]
    } else {
        ErrorList::new()
    }
}

/// Status counts that may not be negative, each at `status.<name>`.
fn nonnegative_counts(counts: &[(&str, i64)]) -> ErrorList {
    counts
        .iter()
        .flat_map(|(name, value)| validate_nonnegative(*value, &status_path().child(*name)))
        .collect()
}

/// Counts that may not exceed another (`(name, value, limit, detail)`).
fn bounded_counts(bounds: &[(&str, i32, i32, &str)]) -> ErrorList {
    bounds
        .iter()
        .filter(|(_, value, limit, _)| value > limit)
        .map(|(name, value, _, detail)| {
            FieldError::invalid(&status_path().child(*name), *value, *detail)
        })
        .collect()
}

/// A Deployment's `/status` write (`ValidateDeploymentStatusUpdate`).
pub fn validate_deployment_status_update(deployment: &Deployment, old: &Deployment) -> ErrorList {
    let status = deployment.status.clone().unwrap_or_default();
    let old_status = old.status.clone().unwrap_or_default();
    let replicas = status.replicas.unwrap_or(0);
    let ready = status.ready_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let mut errors = deployment_status_counts(&status);
    errors.extend(bounded_counts(&[
        ("updatedReplicas", updated, replicas, GREATER_THAN_REPLICAS),
        ("readyReplicas", ready, replicas, GREATER_THAN_REPLICAS),
        (
            "availableReplicas",
            available,
            replicas,
            GREATER_THAN_REPLICAS,
        ),
        (
            "availableReplicas",
            available,
            ready,
            "cannot be greater than readyReplicas",
        ),
    ]));
    errors.extend(collision_count_decremented(
        status.collision_count,
        old_status.collision_count,
    ));
    errors
}

fn deployment_status_counts(status: &DeploymentStatus) -> ErrorList {
    let count = |v: Option<i32>| i64::from(v.unwrap_or(0));
    let mut counts = vec![
        (
            "observedGeneration",
            status.observed_generation.unwrap_or(0),
        ),
        ("replicas", count(status.replicas)),
        ("updatedReplicas", count(status.updated_replicas)),
        ("readyReplicas", count(status.ready_replicas)),
        ("availableReplicas", count(status.available_replicas)),
        ("unavailableReplicas", count(status.unavailable_replicas)),
    ];
    if let Some(collisions) = status.collision_count {
        counts.push(("collisionCount", collisions.into()));
    }
    nonnegative_counts(&counts)
}

/// `ValidateReplicaSetSpec`.
fn validate_replica_set_spec(
    spec: &ReplicaSetSpec,
    old: Option<&ReplicaSetSpec>,
    gates: FeatureGates,
) -> ErrorList {
    let path = spec_path();
    let mut errors =
        validate_nonnegative(spec.replicas.unwrap_or(1).into(), &path.child("replicas"));
    errors.extend(validate_nonnegative(
        spec.min_ready_seconds.unwrap_or(0).into(),
        &path.child("minReadySeconds"),
    ));
    // Upstream says "deployment" here too.
    if let Some(selector) = required_selector(
        &spec.selector,
        "deployment",
        "invalid label selector",
        &mut errors,
    ) {
        let template = spec.template.clone().unwrap_or_default();
        let old_template = old.and_then(|o| o.template.as_ref());
        errors.extend(validate_replica_set_template(
            &template,
            old_template,
            &selector,
            gates,
        ));
    }
    errors
}

/// A new ReplicaSet.
pub fn validate_replica_set(rs: &ReplicaSet, gates: FeatureGates) -> ErrorList {
    validate_replica_set_spec(&rs.spec, None, gates)
}

/// An updated ReplicaSet: its spec, and a selector that stays.
pub fn validate_replica_set_update(
    rs: &ReplicaSet,
    old: &ReplicaSet,
    gates: FeatureGates,
) -> ErrorList {
    let (spec, old_spec) = (&rs.spec, &old.spec);
    let mut errors = validate_replica_set_spec(spec, Some(old_spec), gates);
    errors.extend(selector_immutable(&spec.selector, &old_spec.selector));
    errors
}

/// A ReplicaSet's `/status` write (`ValidateReplicaSetStatus`).
pub fn validate_replica_set_status_update(rs: &ReplicaSet, _old: &ReplicaSet) -> ErrorList {
    let status: ReplicaSetStatus = rs.status.clone().unwrap_or_default();
    let count = |v: Option<i32>| v.unwrap_or(0);
    let (replicas, labeled) = (status.replicas, count(status.fully_labeled_replicas));
    let (ready, available) = (
        count(status.ready_replicas),
        count(status.available_replicas),
    );
    let mut errors = nonnegative_counts(&[
        ("replicas", replicas.into()),
        ("fullyLabeledReplicas", labeled.into()),
        ("readyReplicas", ready.into()),
        ("availableReplicas", available.into()),
        (
            "observedGeneration",
            status.observed_generation.unwrap_or(0),
        ),
    ]);
    errors.extend(bounded_counts(&[
        (
            "fullyLabeledReplicas",
            labeled,
            replicas,
            GREATER_THAN_REPLICAS,
        ),
        ("readyReplicas", ready, replicas, GREATER_THAN_REPLICAS),
        (
            "availableReplicas",
            available,
            replicas,
            GREATER_THAN_REPLICAS,
        ),
        (
            "availableReplicas",
            available,
            ready,
            "cannot be greater than readyReplicas",
        ),
    ]));
    errors
}

/// `ValidateRollingUpdateDaemonSet`: both within 0..=100%, exactly one
/// of them non-zero.
fn validate_rolling_update_daemon_set(rolling: &RollingUpdateDaemonSet, path: &Path) -> ErrorList {
    let max_unavailable = rolling.max_unavailable.as_ref().unwrap_or(&ZERO);
    let max_surge = rolling.max_surge.as_ref().unwrap_or(&ZERO);
    let (unavailable_path, surge_path) = (path.child("maxUnavailable"), path.child("maxSurge"));
    let mut errors = validate_positive_int_or_percent(max_unavailable, &unavailable_path);
    errors.extend(validate_positive_int_or_percent(max_surge, &surge_path));
    errors.extend(not_more_than_100_percent(
        max_unavailable,
        &unavailable_path,
    ));
    errors.extend(not_more_than_100_percent(max_surge, &surge_path));
    let has_unavailable = int_or_percent_value(max_unavailable) != 0;
    let has_surge = int_or_percent_value(max_surge) != 0;
    if has_unavailable && has_surge {
        errors.push(FieldError::invalid(
            &surge_path,
            shown(max_surge),
            "may not be set when maxUnavailable is non-zero",
        ));
    } else if !has_unavailable && !has_surge {
        errors.push(FieldError::required(
            &unavailable_path,
            "cannot be 0 when maxSurge is 0",
        ));
    }
    errors
}

/// `ValidateDaemonSetUpdateStrategy`.
fn validate_daemon_set_update_strategy(
    strategy: &DaemonSetUpdateStrategy,
    path: &Path,
) -> ErrorList {
    match strategy.type_.as_deref().unwrap_or("") {
        "OnDelete" => ErrorList::new(),
        "RollingUpdate" => match &strategy.rolling_update {
            None => vec![FieldError::required(&path.child("rollingUpdate"), "")],
            Some(rolling) => {
                validate_rolling_update_daemon_set(rolling, &path.child("rollingUpdate"))
            }
        },
        _ => vec![FieldError::not_supported(
            path,
            shown(strategy),
            &["RollingUpdate", "OnDelete"],
        )],
    }
}

/// `ValidateDaemonSetSpec`.
fn validate_daemon_set_spec(
    spec: &DaemonSetSpec,
    old: Option<&DaemonSetSpec>,
    gates: FeatureGates,
) -> ErrorList {
    let path = spec_path();
    let selector_path = path.child("selector");
    let template_path = path.child("template");
    let mut errors = validate_label_selector(&spec.selector, &selector_path);
    if let Ok(Some(selector)) = label_selector_as_selector(Some(&spec.selector))
        && !selects_template(&selector, &spec.template)
    {
        errors.push(FieldError::invalid(
            &template_path.child("metadata").child("labels"),
            template_labels(&spec.template),
            SELECTOR_MISMATCH,
        ));
    }
    errors.extend(empty_selector(&spec.selector, "daemonset"));
    let old_template = old.map(|o| &o.template);
    errors.extend(validate_pod_template(
        &spec.template,
        old_template,
        &template_path,
        gates,
    ));
    errors.extend(restart_always_without_deadline(
        &spec.template,
        &template_path,
        "DaemonSet",
    ));
    errors.extend(validate_nonnegative(
        spec.min_ready_seconds.unwrap_or(0).into(),
        &path.child("minReadySeconds"),
    ));
    errors.extend(validate_daemon_set_update_strategy(
        spec.update_strategy
            .as_ref()
            .unwrap_or(&DaemonSetUpdateStrategy::default()),
        &path.child("updateStrategy"),
    ));
    if let Some(limit) = spec.revision_history_limit {
        errors.extend(validate_nonnegative(
            limit.into(),
            &path.child("revisionHistoryLimit"),
        ));
    }
    errors
}

/// A new DaemonSet.
pub fn validate_daemon_set(ds: &DaemonSet, gates: FeatureGates) -> ErrorList {
    validate_daemon_set_spec(&ds.spec, None, gates)
}

/// An updated DaemonSet: its spec, and a selector that stays. (The
/// template generation is the server's, so upstream's checks of it always
/// pass.)
pub fn validate_daemon_set_update(
    ds: &DaemonSet,
    old: &DaemonSet,
    gates: FeatureGates,
) -> ErrorList {
    let (spec, old_spec) = (&ds.spec, &old.spec);
    let mut errors = validate_daemon_set_spec(spec, Some(old_spec), gates);
    errors.extend(selector_immutable(&spec.selector, &old_spec.selector));
    errors
}

/// A DaemonSet's `/status` write (`ValidateDaemonSetStatusUpdate`).
pub fn validate_daemon_set_status_update(ds: &DaemonSet, old: &DaemonSet) -> ErrorList {
    let status: DaemonSetStatus = ds.status.clone().unwrap_or_default();
    let old_status: DaemonSetStatus = old.status.clone().unwrap_or_default();
    let count = |v: Option<i32>| i64::from(v.unwrap_or(0));
    let mut counts = vec![
        (
            "currentNumberScheduled",
            status.current_number_scheduled.into(),
        ),
        ("numberMisscheduled", status.number_misscheduled.into()),
        (
            "desiredNumberScheduled",
            status.desired_number_scheduled.into(),
        ),
        ("numberReady", status.number_ready.into()),
        (
            "observedGeneration",
            status.observed_generation.unwrap_or(0),
        ),
        (
            "updatedNumberScheduled",
            count(status.updated_number_scheduled),
        ),
        ("numberAvailable", count(status.number_available)),
        ("numberUnavailable", count(status.number_unavailable)),
    ];
    if let Some(collisions) = status.collision_count {
        counts.push(("collisionCount", collisions.into()));
    }
    let mut errors = nonnegative_counts(&counts);
    errors.extend(collision_count_decremented(
        status.collision_count,
        old_status.collision_count,
    ));
    errors
}

/// `validateRollingUpdateStatefulSet`.
fn validate_rolling_update_stateful_set(
    rolling: &RollingUpdateStatefulSetStrategy,
    path: &Path,
) -> ErrorList {
    let mut errors = validate_nonnegative(
        rolling.partition.unwrap_or(0).into(),
        &path.child("partition"),
    );
    if let Some(max_unavailable) = &rolling.max_unavailable {
        let unavailable_path = path.child("maxUnavailable");
        errors.extend(validate_positive_int_or_percent(
            max_unavailable,
            &unavailable_path,
        ));
        if int_or_percent_value(max_unavailable) == 0 {
            errors.push(FieldError::invalid(
                &unavailable_path,
                shown(max_unavailable),
                "cannot be 0",
            ));
        }
        errors.extend(not_more_than_100_percent(
            max_unavailable,
            &unavailable_path,
        ));
    }
    errors
}

/// `ValidatePersistentVolumeClaimRetentionPolicyType`.
fn validate_retention_policy_type(policy: Option<&str>, path: &Path) -> ErrorList {
    match policy.unwrap_or("") {
        "Retain" | "Delete" => ErrorList::new(),
        other => vec![FieldError::not_supported(
            path,
            other,
            &["Retain", "Delete"],
        )],
    }
}

/// `ValidateStatefulSetSpec`. Upstream checks only the template's
/// metadata, not its pod spec ("currently this will check volumes, which
/// we know will fail").
fn validate_stateful_set_spec(spec: &StatefulSetSpec) -> ErrorList {
    let path = spec_path();
    let mut errors = ErrorList::new();
    let policy_path = path.child("podManagementPolicy");
    match spec.pod_management_policy.as_deref().unwrap_or("") {
        "" => errors.push(FieldError::required(&policy_path, "")),
        "OrderedReady" | "Parallel" => {}
        other => errors.push(FieldError::invalid(
            &policy_path,
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy_path = path.child("updateStrategy");
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    match strategy.type_.as_deref().unwrap_or("") {
        "" => errors.push(FieldError::required(&strategy_path, "")),
        "OnDelete" => {
            if let Some(rolling) = &strategy.rolling_update {
                errors.push(FieldError::invalid(
                    &strategy_path.child("rollingUpdate"),
                    shown(rolling),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(rolling) = &strategy.rolling_update {
                errors.extend(validate_rolling_update_stateful_set(
                    rolling,
                    &strategy_path.child("rollingUpdate"),
                ));
            }
        }
        _ => errors.push(FieldError::invalid(
            &strategy_path,
            shown(&strategy),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = &spec.persistent_volume_claim_retention_policy {
        let policy_path = path.child("persistentVolumeClaimRetentionPolicy");
        errors.extend(validate_retention_policy_type(
            policy.when_deleted.as_deref(),
            &policy_path.child("whenDeleted"),
        ));
        errors.extend(validate_retention_policy_type(
            policy.when_scaled.as_deref(),
            &policy_path.child("whenScaled"),
        ));
    }
    errors.extend(validate_nonnegative(
        spec.replicas.unwrap_or(1).into(),
        &path.child("replicas"),
    ));
    errors.extend(validate_nonnegative(
        spec.min_ready_seconds.unwrap_or(0).into(),
        &path.child("minReadySeconds"),
    ));
    if let Some(ordinals) = &spec.ordinals {
        errors.extend(validate_nonnegative(
            ordinals.start.unwrap_or(0).into(),
            &path.child("ordinals").child("start"),
        ));
    }
    let template_path = path.child("template");
    if let Some(selector) = required_selector(&spec.selector, "statefulset", "", &mut errors) {
        let template = &spec.template;
        if !selector.is_empty() && !selects_template(&selector, template) {
            errors.push(FieldError::invalid(
                &template_path.child("metadata").child("labels"),
                template_labels(template),
                SELECTOR_MISMATCH,
            ));
        }
        let meta = template.metadata.as_ref();
        if let Some(labels) = meta.and_then(|m| m.labels.as_ref()) {
            errors.extend(validate_labels(
                labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                &template_path.child("labels"),
            ));
        }
        if let Some(annotations) = meta.and_then(|m| m.annotations.as_ref()) {
            errors.extend(validate_annotations(
                annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                &template_path.child("annotations"),
            ));
        }
    }
    errors.extend(restart_always_without_deadline(
        &spec.template,
        &template_path,
        "StatefulSet",
    ));
    errors
}

/// A new StatefulSet.
pub fn validate_stateful_set(set: &StatefulSet) -> ErrorList {
    validate_stateful_set_spec(&set.spec)
}

/// An updated StatefulSet: its spec, and nothing changed but `replicas`,
/// `ordinals`, `template`, `updateStrategy`,
/// `persistentVolumeClaimRetentionPolicy` and `minReadySeconds` (the
/// selector included).
pub fn validate_stateful_set_update(set: &StatefulSet, old: &StatefulSet) -> ErrorList {
    let (spec, old_spec) = (&set.spec, &old.spec);
    let mut errors = validate_stateful_set_spec(spec);
    let unchangeable = StatefulSetSpec {
        replicas: old_spec.replicas,
        template: old_spec.template.clone(),
        update_strategy: old_spec.update_strategy.clone(),
        min_ready_seconds: old_spec.min_ready_seconds,
        ordinals: old_spec.ordinals.clone(),
        persistent_volume_claim_retention_policy: old_spec
            .persistent_volume_claim_retention_policy
            .clone(),
        ..spec.clone()
    };
    if &unchangeable != old_spec {
        errors.push(FieldError::forbidden(
            &spec_path(),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errors
}

/// A StatefulSet's `/status` write (`ValidateStatefulSetStatusUpdate`).
pub fn validate_stateful_set_status_update(set: &StatefulSet, old: &StatefulSet) -> ErrorList {
    let status: StatefulSetStatus = set.status.clone().unwrap_or_default();
    let old_status: StatefulSetStatus = old.status.clone().unwrap_or_default();
    let count = |v: Option<i32>| v.unwrap_or(0);
    let replicas = status.replicas;
    let (ready, current) = (count(status.ready_replicas), count(status.current_replicas));
    let (updated, available) = (
        count(status.updated_replicas),
        count(status.available_replicas),
    );
    let mut counts = vec![
        ("replicas", replicas.into()),
        ("readyReplicas", ready.into()),
        ("currentReplicas", current.into()),
        ("updatedReplicas", updated.into()),
        ("availableReplicas", available.into()),
    ];
    if let Some(generation) = status.observed_generation {
        counts.push(("observedGeneration", generation));
    }
    if let Some(collisions) = status.collision_count {
        counts.push(("collisionCount", collisions.into()));
    }
    let mut errors = nonnegative_counts(&counts);
    errors.extend(bounded_counts(&[
        ("readyReplicas", ready, replicas, GREATER_THAN_REPLICAS),
        ("currentReplicas", current, replicas, GREATER_THAN_REPLICAS),
        ("updatedReplicas", updated, replicas, GREATER_THAN_REPLICAS),
        (
            "availableReplicas",
            available,
            replicas,
            GREATER_THAN_REPLICAS,
        ),
        (
            "availableReplicas",
            available,
            ready,
            "cannot be greater than status.readyReplicas",
        ),
    ]));
    errors.extend(collision_count_decremented(
        status.collision_count,
        old_status.collision_count,
    ));
    errors
}

/// A new ControllerRevision (`ValidateControllerRevisionCreate` but its
/// metadata): `data` present and a JSON object, `revision` not negative.
/// (The wording of the not-an-object error is berth's.)
pub fn validate_controller_revision(revision: &ControllerRevision) -> ErrorList {
    let mut errors = ErrorList::new();
    let data_path = Path::new("data");
    match &revision.data.0 {
        serde_json::Value::Null => {
            errors.push(FieldError::required(&data_path, "data is mandatory"));
        }
        serde_json::Value::Object(_) => {}
        other => errors.push(FieldError::invalid(
            &data_path,
            other.clone(),
            "must be a JSON object",
        )),
    }
    errors.extend(validate_nonnegative(
        revision.revision.unwrap_or(0),
        &Path::new("revision"),
    ));
    errors
}

/// An updated ControllerRevision: valid, with the same `data`.
pub fn validate_controller_revision_update(
    revision: &ControllerRevision,
    old: &ControllerRevision,
) -> ErrorList {
    let mut errors = validate_controller_revision(revision);
    errors.extend(validate_immutable(
        &revision.data,
        &old.data,
        &Path::new("data"),
    ));
    errors
}

/// A write of the `/scale` subresource (upstream `ValidateScale` but its
/// metadata): `spec.replicas` not negative.
pub fn validate_scale(scale: &Scale) -> ErrorList {
    let replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    validate_nonnegative(replicas.into(), &spec_path().child("replicas"))
}

#[cfg(test)]
mod tests;
