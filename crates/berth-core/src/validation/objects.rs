//! The API validation rules berth enforces on whole pods, pod templates
//! and nodes, composed of this module's validators (upstream `ValidatePod`,
//! `ValidatePodUpdate`, `ValidatePodTemplateSpec`, `ValidateNode`,
//! restricted to the fields berth acts on): the object name, template
//! labels and annotations, tolerations and toleration updates, taints, and
//! every resource list's quantities. The API server's admission, the
//! workload validation (`apps.rs`) and `berth check` call these.
//!
//! The comparison operators `Lt`/`Gt` are accepted when the
//! `TaintTolerationComparisonOperators` gate is on or, on update, when the
//! stored pod already used them (upstream
//! `allowTaintTolerationComparisonOperators`), so turning the gate off
//! never makes an existing pod un-updatable.

use std::collections::BTreeMap;

use crate::FeatureGates;
use crate::validation::names::is_dns1123_subdomain;
use crate::validation::{
    ErrorList, FieldError, Path, TolerationOptions, uses_comparison_operators,
    validate_annotations, validate_labels, validate_node_taints, validate_resource_quantities,
    validate_toleration_update, validate_tolerations,
};
use k8s_openapi::api::core::v1::{
    Container, Node, Pod, PodSpec, PodTemplateSpec, ResourceRequirements, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Upstream `ValidateObjectMeta`'s name rules with `NameIsDNSSubdomain`
/// (pods and nodes both use it).
fn validate_name(meta: &ObjectMeta) -> ErrorList {
    let path = Path::new("metadata").child("name");
    match meta.name.as_deref() {
        None | Some("") => vec![FieldError::required(
            &path,
            "name or generateName is required",
        )],
        Some(name) => is_dns1123_subdomain(name)
            .into_iter()
            .map(|msg| FieldError::invalid(&path, name, msg))
            .collect(),
    }
}

fn validate_requirements(res: Option<&ResourceRequirements>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(res) = res {
        for (field, list) in [("limits", &res.limits), ("requests", &res.requests)] {
            if let Some(list) = list {
                errs.extend(validate_resource_quantities(list, &path.child(field)));
            }
        }
    }
    errs
}

fn validate_containers(containers: &[Container], path: &Path) -> ErrorList {
    containers
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            validate_requirements(c.resources.as_ref(), &path.index(i).child("resources"))
        })
        .collect()
}

fn tolerations(spec: Option<&PodSpec>) -> &[Toleration] {
    spec.and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

/// Which toleration rule a pod spec is held to: a new pod's or a pod
/// template's (every toleration valid; `Lt`/`Gt` also when the stored
/// object used them), or an updated pod's (existing tolerations may only
/// gain `tolerationSeconds`).
#[derive(Clone, Copy)]
enum TolerationRule<'a> {
    New { stored: &'a [Toleration] },
    PodUpdate { stored: &'a [Toleration] },
}

/// Upstream `ValidatePodSpec`, restricted to what berth checks:
/// tolerations and every resource list's quantities, at `path`.
fn validate_pod_spec(
    spec: Option<&PodSpec>,
    path: &Path,
    rule: TolerationRule,
    gates: FeatureGates,
) -> ErrorList {
    let tol_path = path.child("tolerations");
    let mut errs = match rule {
        TolerationRule::New { stored } => {
            let opts = TolerationOptions {
                allow_comparison_operators: gates.taint_toleration_comparison_operators
                    || uses_comparison_operators(stored),
            };
            validate_tolerations(tolerations(spec), &tol_path, &opts)
        }
        TolerationRule::PodUpdate { stored } => {
            let opts = TolerationOptions {
                allow_comparison_operators: gates.taint_toleration_comparison_operators
                    || uses_comparison_operators(stored),
            };
            validate_toleration_update(tolerations(spec), stored, &tol_path, &opts)
        }
    };
    let Some(spec) = spec else {
        return errs;
    };
    errs.extend(validate_containers(
        &spec.containers,
        &path.child("containers"),
    ));
    if let Some(init) = spec.init_containers.as_deref() {
        errs.extend(validate_containers(init, &path.child("initContainers")));
    }
    if let Some(ephemeral) = spec.ephemeral_containers.as_deref() {
        for (i, c) in ephemeral.iter().enumerate() {
            errs.extend(validate_requirements(
                c.resources.as_ref(),
                &path
                    .child("ephemeralContainers")
                    .index(i)
                    .child("resources"),
            ));
        }
    }
    errs.extend(validate_requirements(
        spec.resources.as_ref(),
        &path.child("resources"),
    ));
    if let Some(overhead) = spec.overhead.as_ref() {
        errs.extend(validate_resource_quantities(
            overhead,
            &path.child("overhead"),
        ));
    }
    errs
}

/// Validates a pod being created (`old` is `None`) or updated.
pub fn validate_pod(pod: &Pod, old: Option<&Pod>, gates: FeatureGates) -> ErrorList {
    let mut errs = validate_name(&pod.metadata);
    let rule = match old {
        None => TolerationRule::New { stored: &[] },
        Some(old) => TolerationRule::PodUpdate {
            stored: tolerations(old.spec.as_ref()),
        },
    };
    errs.extend(validate_pod_spec(
        pod.spec.as_ref(),
        &Path::new("spec"),
        rule,
        gates,
    ));
    errs
}

/// Upstream `ValidatePodTemplateSpec` at `path` (`spec.template` of a
/// workload): the template's labels and annotations (reported at
/// `<path>.labels` and `<path>.annotations`, as upstream names them), its
/// pod spec, and no ephemeral containers. `old` is the stored template of
/// an update: `Lt`/`Gt` tolerations it used stay allowed.
pub fn validate_pod_template(
    template: &PodTemplateSpec,
    old: Option<&PodTemplateSpec>,
    path: &Path,
    gates: FeatureGates,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let meta = template.metadata.as_ref();
    if let Some(labels) = meta.and_then(|m| m.labels.as_ref()) {
        errs.extend(validate_labels(
            labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &path.child("labels"),
        ));
    }
    if let Some(annotations) = meta.and_then(|m| m.annotations.as_ref()) {
        errs.extend(validate_annotations(
            annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &path.child("annotations"),
        ));
    }
    let stored = tolerations(old.and_then(|t| t.spec.as_ref()));
    let spec = template.spec.as_ref();
    errs.extend(validate_pod_spec(
        spec,
        &path.child("spec"),
        TolerationRule::New { stored },
        gates,
    ));
    if spec.is_some_and(|s| {
        s.ephemeral_containers
            .as_ref()
            .is_some_and(|e| !e.is_empty())
    }) {
        errs.push(FieldError::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// Validates a node being created or updated. Taints are reported under
/// `spec.taints` (upstream says `metadata.taints`, a known quirk).
pub fn validate_node(node: &Node) -> ErrorList {
    let mut errs = validate_name(&node.metadata);
    if let Some(taints) = node.spec.as_ref().and_then(|s| s.taints.as_deref()) {
        errs.extend(validate_node_taints(
            taints,
            &Path::new("spec").child("taints"),
        ));
    }
    if let Some(status) = node.status.as_ref() {
        let empty = BTreeMap::<String, Quantity>::new();
        for (field, list) in [
            ("capacity", &status.capacity),
            ("allocatable", &status.allocatable),
        ] {
            errs.extend(validate_resource_quantities(
                list.as_ref().unwrap_or(&empty),
                &Path::new("status").child(field),
            ));
        }
    }
    errs
}
