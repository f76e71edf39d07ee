//! Admission: what the API server does to an object between decoding it
//! and storing it, in upstream's order: mutating plugins first, then
//! validation, then validating plugins.
//!
//! Every plugin is a pure function over k8s-openapi types: no store, no
//! clock (the request's time is [`Attributes::now`], taken by the server
//! from its `Clock`), no I/O. Where upstream looks something up (the
//! stored pod on delete, the node's UID), the caller passes it in.
//!
//! Mutating, pods ([`admit_pod`]), in this order:
//! 1. [`daemon_pod_tolerations`] (create); DaemonSet pods get upstream's
//!    `AddOrUpdateDaemonPodTolerations` set. First, because upstream's
//!    controller writes them before the pod reaches admission.
//! 2. [`default_toleration_seconds`] (DefaultTolerationSeconds).
//! 3. [`memory_pressure_toleration`]; non-BestEffort pods tolerate
//!    memory pressure (upstream PodTolerationRestriction's rule).
//! 4. [`extended_resource_toleration`] (ExtendedResourceToleration).
//!
//! Mutating, nodes ([`admit_node`]): [`node_taint`] (TaintNodesByCondition,
//! create) then [`taint_time_added`] (berth: `timeAdded` on NoExecute
//! taints), then, on update, berth's expiring taints: a taint the write
//! removes takes its `berth.dev/taint-expiry` entry with it
//! ([`berth_core::taint_expiry::forget_removed`]).
//!
//! Validating: [`validate_pod`] / [`validate_node`] run berth-core's API
//! validation ([`berth_core::validation::validate_pod`] and
//! [`berth_core::validation::validate_node`], and for nodes the
//! `berth.dev/taint-expiry` annotation's syntax) and then [`node_restriction`];
//! [`validate_lease`] is NodeRestriction for leases. (Upstream runs
//! NodeRestriction in the mutating phase, before field validation; berth
//! validates first, so a node sending an object that is both invalid and
//! forbidden is told it is invalid.)

use std::fmt;

use berth_core::FeatureGates;
use berth_core::validation::{self, ErrorList};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};

pub mod daemon_pod_tolerations;
pub mod default_toleration_seconds;
pub mod extended_resource_toleration;
pub mod memory_pressure_toleration;
pub mod node_restriction;
pub mod node_taint;
pub mod qos;
pub mod taint_time_added;
pub mod tolerations;

/// The request's verb (upstream `admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// Upstream's spelling, used in messages (`"UPDATE"`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The authenticated user making the request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
}

/// What is being done to which object, by whom, when (upstream
/// `admission.Attributes` minus the objects, which the functions take
/// typed).
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub operation: Operation,
    /// Plural resource: `"pods"`, `"nodes"`, `"leases"`.
    pub resource: &'a str,
    /// `""` for the object proper, else `"status"`, `"binding"`,
    /// `"eviction"`, ...
    pub subresource: &'a str,
    pub namespace: &'a str,
    /// The object's name from the request; on create the server sets it
    /// from the object, as upstream's create handler does.
    pub name: &'a str,
    pub user: &'a UserInfo,
    /// The request's time, from the server's `Clock`.
    pub now: jiff::Timestamp,
}

/// Admission settings (upstream: plugin flags and the feature gates).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// `--default-not-ready-toleration-seconds`.
    pub default_not_ready_toleration_seconds: i64,
    /// `--default-unreachable-toleration-seconds`.
    pub default_unreachable_toleration_seconds: i64,
    pub gates: FeatureGates,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            default_not_ready_toleration_seconds: 300,
            default_unreachable_toleration_seconds: 300,
            gates: FeatureGates::default(),
        }
    }
}

/// Why admission refused a request. `Display` is the message of the
/// `Status` the server returns.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdmissionError {
    /// 422: field errors (`Pod "x" is invalid: spec.tolerations[0].key: ...`).
    #[error("{kind} {} is invalid: {}", quote(name), aggregate(errors))]
    Invalid {
        kind: String,
        name: String,
        errors: ErrorList,
    },
    /// 403: a policy refused it (NodeRestriction), message complete.
    #[error("{message}")]
    Forbidden { message: String },
    /// 400: the request itself is malformed for admission.
    #[error("{message}")]
    BadRequest { message: String },
}

impl AdmissionError {
    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            AdmissionError::Invalid { .. } => 422,
            AdmissionError::Forbidden { .. } => 403,
            AdmissionError::BadRequest { .. } => 400,
        }
    }

    /// The `Status.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            AdmissionError::Invalid { .. } => "Invalid",
            AdmissionError::Forbidden { .. } => "Forbidden",
            AdmissionError::BadRequest { .. } => "BadRequest",
        }
    }
}

/// Go's `%q` for the names that reach these messages (JSON quoting agrees
/// with it for printable text).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// apimachinery's `aggregate.Error()`: one error bare, several bracketed
/// and comma-separated with duplicates removed.
fn aggregate(errors: &ErrorList) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

fn invalid(kind: &str, name: Option<&str>, errors: ErrorList) -> Result<(), AdmissionError> {
    if errors.is_empty() {
        return Ok(());
    }
    Err(AdmissionError::Invalid {
        kind: kind.to_string(),
        name: name.unwrap_or("").to_string(),
        errors,
    })
}

/// Mutating admission of a pod: create, and update where upstream mutates
/// updates too. Subresources are left alone (every plugin here acts on the
/// pod proper only).
pub fn admit_pod(
    attrs: &Attributes,
    pod: &mut Pod,
    _old: Option<&Pod>,
    config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    if !attrs.subresource.is_empty() {
        return Ok(());
    }
    match attrs.operation {
        Operation::Create | Operation::Update => {
            if attrs.operation == Operation::Create {
                daemon_pod_tolerations::admit(pod);
            }
            default_toleration_seconds::admit(
                pod,
                config.default_not_ready_toleration_seconds,
                config.default_unreachable_toleration_seconds,
            );
            memory_pressure_toleration::admit(pod);
            extended_resource_toleration::admit(pod);
        }
        Operation::Delete | Operation::Connect => {}
    }
    Ok(())
}

/// Mutating admission of a node: the not-ready taint on create, then
/// `timeAdded` on NoExecute taints on create and update (status updates
/// included: they carry the spec back unchanged, and the stamps it keeps
/// are the stored ones), then on update the expiries of removed taints
/// dropped.
pub fn admit_node(
    attrs: &Attributes,
    node: &mut Node,
    old: Option<&Node>,
    _config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    match attrs.operation {
        Operation::Create => {
            if attrs.subresource.is_empty() {
                node_taint::admit(node);
            }
            taint_time_added::stamp(node, None, attrs.now);
        }
        Operation::Update => {
            taint_time_added::stamp(node, old, attrs.now);
            if let Some(old) = old {
                berth_core::taint_expiry::forget_removed(node, old);
            }
        }
        Operation::Delete | Operation::Connect => {}
    }
    Ok(())
}

/// Validating admission of a pod: API validation (create and update of the
/// pod proper), then NodeRestriction. On delete and eviction, `pod` is the
/// stored pod. The mirror-pod owner UID check needs the node:
/// [`node_restriction::verify_mirror_pod_owner_uid`].
pub fn validate_pod(
    attrs: &Attributes,
    pod: &Pod,
    old: Option<&Pod>,
    config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    if attrs.subresource.is_empty() {
        let errors = match attrs.operation {
            Operation::Create => validation::validate_pod(pod, None, config.gates),
            Operation::Update => validation::validate_pod(pod, old, config.gates),
            Operation::Delete | Operation::Connect => ErrorList::new(),
        };
        invalid("Pod", pod.metadata.name.as_deref(), errors)?;
    }
    node_restriction::admit_pod(attrs, pod, old)
}

/// Validating admission of a node: API validation on create and update,
/// then NodeRestriction.
pub fn validate_node(
    attrs: &Attributes,
    node: &Node,
    old: Option<&Node>,
) -> Result<(), AdmissionError> {
    if matches!(attrs.operation, Operation::Create | Operation::Update) {
        let mut errors = validation::validate_node(node);
        errors.extend(berth_core::taint_expiry::validate(node));
        invalid("Node", node.metadata.name.as_deref(), errors)?;
    }
    node_restriction::admit_node(attrs, node, old)
}

/// Validating admission of a lease: NodeRestriction (a node's own lease in
/// `kube-node-lease` only). `lease` is the object, where there is one.
pub fn validate_lease(attrs: &Attributes, lease: Option<&Lease>) -> Result<(), AdmissionError> {
    node_restriction::admit_lease(attrs, lease)
}

/// The table the toleration-adding plugins' tests share.
#[cfg(test)]
pub(crate) mod toleration_table {
    use k8s_openapi::api::core::v1::{Pod, Toleration};

    /// A pod, and its tolerations once a plugin has admitted it.
    pub struct Case {
        pub name: &'static str,
        pub pod: Pod,
        pub want_tolerations: Vec<Toleration>,
    }

    /// Admits each case's pod with `admit` and checks its tolerations.
    pub fn check(admit: fn(&mut Pod), cases: impl IntoIterator<Item = Case>) {
        for Case {
            name,
            mut pod,
            want_tolerations,
        } in cases
        {
            admit(&mut pod);
            assert_eq!(
                pod.spec.and_then(|s| s.tolerations).unwrap_or_default(),
                want_tolerations,
                "{name}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_container, make_node, make_pod, taint, tol, tol_secs};
    use k8s_openapi::api::core::v1::Toleration;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_767_225_600).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    fn attrs<'a>(
        op: Operation,
        resource: &'a str,
        sub: &'a str,
        user: &'a UserInfo,
    ) -> Attributes<'a> {
        Attributes {
            operation: op,
            resource,
            subresource: sub,
            namespace: "default",
            name: "x",
            user,
            now: now(),
        }
    }

    fn tolerations(pod: &Pod) -> Vec<Toleration> {
        pod.spec
            .as_ref()
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default()
    }

    #[test]
    fn pod_create_runs_the_mutating_chain_in_order() {
        let admin = UserInfo::default();
        let a = attrs(Operation::Create, "pods", "", &admin);
        let mut pod = make_pod()
            .name("x")
            .containers(vec![
                make_container()
                    .name("c")
                    .requests(&[("cpu", "1"), ("example.com/gpu", "1")])
                    .obj(),
            ])
            .obj();
        admit_pod(&a, &mut pod, None, &AdmissionConfig::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            tolerations(&pod),
            vec![
                tol_secs(
                    "node.kubernetes.io/not-ready",
                    "Exists",
                    "",
                    "NoExecute",
                    300
                ),
                tol_secs(
                    "node.kubernetes.io/unreachable",
                    "Exists",
                    "",
                    "NoExecute",
                    300
                ),
                tol(
                    "node.kubernetes.io/memory-pressure",
                    "Exists",
                    "",
                    "NoSchedule"
                ),
                tol("example.com/gpu", "Exists", "", "NoSchedule"),
            ]
        );
        // The result passes validation, including as an update of itself.
        assert_eq!(
            validate_pod(&a, &pod, None, &AdmissionConfig::default()),
            Ok(())
        );
        let u = attrs(Operation::Update, "pods", "", &admin);
        assert_eq!(
            validate_pod(&u, &pod, Some(&pod), &AdmissionConfig::default()),
            Ok(())
        );
    }

    #[test]
    fn daemon_pods_keep_forever_tolerations() {
        let admin = UserInfo::default();
        let a = attrs(Operation::Create, "pods", "", &admin);
        let mut pod = make_pod()
            .name("x")
            .containers(vec![make_container().name("c").obj()])
            .owner_reference(OwnerReference {
                api_version: "apps/v1".into(),
                kind: "DaemonSet".into(),
                name: "ds".into(),
                uid: "u".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            })
            .obj();
        admit_pod(&a, &mut pod, None, &AdmissionConfig::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let ts = tolerations(&pod);
        assert_eq!(ts.len(), 6, "{ts:?}");
        assert!(ts.iter().all(|t| t.toleration_seconds.is_none()));
    }

    #[test]
    fn subresources_and_deletes_are_not_mutated() {
        let admin = UserInfo::default();
        for (op, sub) in [
            (Operation::Update, "status"),
            (Operation::Create, "binding"),
            (Operation::Delete, ""),
        ] {
            let a = attrs(op, "pods", sub, &admin);
            let mut pod = make_pod()
                .name("x")
                .containers(vec![
                    make_container().name("c").requests(&[("cpu", "1")]).obj(),
                ])
                .obj();
            admit_pod(&a, &mut pod, None, &AdmissionConfig::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(tolerations(&pod).is_empty(), "{op} {sub}");
        }
    }

    #[test]
    fn invalid_pods_render_like_the_api_server() {
        let admin = UserInfo::default();
        let a = attrs(Operation::Create, "pods", "", &admin);
        let config = AdmissionConfig::default();
        let one = make_pod()
            .name("x")
            .containers(vec![])
            .tolerations(vec![tol("", "Equal", "v", "NoSchedule")])
            .obj();
        let err = validate_pod(&a, &one, None, &config);
        let Err(err) = err else { panic!("accepted") };
        assert_eq!(err.code(), 422);
        assert_eq!(err.reason(), "Invalid");
        assert_eq!(
            err.to_string(),
            r#"Pod "x" is invalid: spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys""#
        );
        let two = make_pod()
            .name("x")
            .containers(vec![
                make_container()
                    .name("c")
                    .requests(&[("cpu", "lots")])
                    .obj(),
            ])
            .tolerations(vec![tol("foo", "Exists", "", "Bogus")])
            .obj();
        let Err(err) = validate_pod(&a, &two, None, &config) else {
            panic!("accepted")
        };
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                r#"Pod "x" is invalid: [spec.tolerations[0].effect: Unsupported value: "Bogus""#
            ),
            "{msg}"
        );
        assert!(
            msg.contains(", spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\""),
            "{msg}"
        );
        assert!(msg.ends_with(']'), "{msg}");
    }

    #[test]
    fn comparison_operators_follow_the_gate_or_the_old_pod() {
        let admin = UserInfo::default();
        let off = AdmissionConfig {
            gates: FeatureGates {
                taint_toleration_comparison_operators: false,
                max_unavailable_stateful_set: true,
            },
            ..Default::default()
        };
        let gt = make_pod()
            .name("x")
            .containers(vec![])
            .tolerations(vec![tol("sla", "Gt", "5", "NoSchedule")])
            .obj();
        let create = attrs(Operation::Create, "pods", "", &admin);
        assert!(validate_pod(&create, &gt, None, &off).is_err());
        assert_eq!(
            validate_pod(&create, &gt, None, &AdmissionConfig::default()),
            Ok(())
        );
        // An existing pod that uses Gt stays updatable with the gate off.
        let update = attrs(Operation::Update, "pods", "", &admin);
        assert_eq!(validate_pod(&update, &gt, Some(&gt), &off), Ok(()));
    }

    #[test]
    fn toleration_updates_may_only_add_or_change_seconds() {
        let admin = UserInfo::default();
        let update = attrs(Operation::Update, "pods", "", &admin);
        let config = AdmissionConfig::default();
        let old = make_pod()
            .name("x")
            .containers(vec![])
            .tolerations(vec![tol_secs("k", "Exists", "", "NoExecute", 10)])
            .obj();
        let longer = make_pod()
            .name("x")
            .containers(vec![])
            .tolerations(vec![tol_secs("k", "Exists", "", "NoExecute", 20)])
            .obj();
        let added = make_pod()
            .name("x")
            .containers(vec![])
            .tolerations(vec![
                tol_secs("k", "Exists", "", "NoExecute", 10),
                tol("j", "Exists", "", ""),
            ])
            .obj();
        let removed = make_pod().name("x").containers(vec![]).obj();
        assert_eq!(validate_pod(&update, &longer, Some(&old), &config), Ok(()));
        assert_eq!(validate_pod(&update, &added, Some(&old), &config), Ok(()));
        let Err(err) = validate_pod(&update, &removed, Some(&old), &config) else {
            panic!("accepted")
        };
        assert_eq!(
            err.to_string(),
            r#"Pod "x" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"#
        );
    }

    #[test]
    fn node_create_is_tainted_stamped_and_valid() {
        let kubelet = UserInfo {
            name: "system:node:mynode".into(),
            groups: vec!["system:nodes".into()],
        };
        let mut a = attrs(Operation::Create, "nodes", "", &kubelet);
        a.name = "mynode";
        let mut n = make_node()
            .name("mynode")
            .taints(vec![taint("dedicated", "x", "NoExecute")])
            .obj();
        admit_node(&a, &mut n, None, &AdmissionConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut stamped = taint("dedicated", "x", "NoExecute");
        stamped.time_added = Some(Time(now()));
        assert_eq!(
            n.spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default(),
            vec![
                stamped,
                taint("node.kubernetes.io/not-ready", "", "NoSchedule")
            ]
        );
        assert_eq!(validate_node(&a, &n, None), Ok(()));
        // The kubelet's next status update sends the taints without
        // timestamps; admission restores them and NodeRestriction agrees
        // nothing changed.
        let mut u = attrs(Operation::Update, "nodes", "status", &kubelet);
        u.name = "mynode";
        let mut next = make_node()
            .name("mynode")
            .taints(vec![
                taint("dedicated", "x", "NoExecute"),
                taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
            ])
            .obj();
        admit_node(&u, &mut next, Some(&n), &AdmissionConfig::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(validate_node(&u, &next, Some(&n)), Ok(()));
    }

    #[test]
    fn invalid_node_taints_are_422_on_spec_taints() {
        let admin = UserInfo::default();
        let a = attrs(Operation::Create, "nodes", "", &admin);
        let n = make_node()
            .name("mynode")
            .taints(vec![taint("k", "", "Bogus")])
            .obj();
        let Err(err) = validate_node(&a, &n, None) else {
            panic!("accepted")
        };
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.to_string(),
            r#"Node "mynode" is invalid: spec.taints[0].effect: Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#
        );
    }
}
