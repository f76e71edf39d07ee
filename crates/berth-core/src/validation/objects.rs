//! The API validation rules berth enforces on whole pods and nodes,
//! composed of this module's validators (upstream `ValidatePod`,
//! `ValidatePodUpdate`, `ValidateNode`, restricted to the fields berth acts
//! on): the object name, tolerations and toleration updates, taints, and
//! every resource list's quantities. The API server's admission and
//! `berth check` both call these.
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
    validate_node_taints, validate_resource_quantities, validate_toleration_update,
    validate_tolerations,
};
use k8s_openapi::api::core::v1::{Container, Node, Pod, ResourceRequirements, Toleration};
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

fn tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

/// Validates a pod being created (`old` is `None`) or updated.
pub fn validate_pod(pod: &Pod, old: Option<&Pod>, gates: FeatureGates) -> ErrorList {
    let mut errs = validate_name(&pod.metadata);
    let spec_path = Path::new("spec");
    let tol_path = spec_path.child("tolerations");
    match old {
        None => {
            let opts = TolerationOptions {
                allow_comparison_operators: gates.taint_toleration_comparison_operators,
            };
            errs.extend(validate_tolerations(tolerations(pod), &tol_path, &opts));
        }
        Some(old) => {
            let opts = TolerationOptions {
                allow_comparison_operators: gates.taint_toleration_comparison_operators
                    || uses_comparison_operators(tolerations(old)),
            };
            errs.extend(validate_toleration_update(
                tolerations(pod),
                tolerations(old),
                &tol_path,
                &opts,
            ));
        }
    }
    if let Some(spec) = pod.spec.as_ref() {
        errs.extend(validate_containers(
            &spec.containers,
            &spec_path.child("containers"),
        ));
        if let Some(init) = spec.init_containers.as_deref() {
            errs.extend(validate_containers(
                init,
                &spec_path.child("initContainers"),
            ));
        }
        if let Some(ephemeral) = spec.ephemeral_containers.as_deref() {
            for (i, c) in ephemeral.iter().enumerate() {
                errs.extend(validate_requirements(
                    c.resources.as_ref(),
                    &spec_path
                        .child("ephemeralContainers")
                        .index(i)
                        .child("resources"),
                ));
            }
        }
        errs.extend(validate_requirements(
            spec.resources.as_ref(),
            &spec_path.child("resources"),
        ));
        if let Some(overhead) = spec.overhead.as_ref() {
            errs.extend(validate_resource_quantities(
                overhead,
                &spec_path.child("overhead"),
            ));
        }
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
