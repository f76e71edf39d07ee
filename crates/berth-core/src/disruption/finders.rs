//! The scale a budget's percentage is taken of: the sum of the replicas
//! of the pods' controllers, found as upstream's finders find them
//! (`getPodReplicaSet`, `getPodDeployment`, `getPodReplicationController`,
//! `getPodStatefulSet`; the generic `/scale` finder for custom resources
//! is not ported: berth serves no custom resources).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::workloads::ownership::controller_of;

/// Where the finders look objects up: the controller's caches.
pub trait Workloads {
    fn replica_set(&self, namespace: &str, name: &str) -> Option<&ReplicaSet>;
    fn deployment(&self, namespace: &str, name: &str) -> Option<&Deployment>;
    fn stateful_set(&self, namespace: &str, name: &str) -> Option<&StatefulSet>;
    fn replication_controller(&self, namespace: &str, name: &str)
    -> Option<&ReplicationController>;
}

/// A controller and its desired replicas (`controllerAndScale`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerScale {
    pub uid: String,
    pub scale: i32,
}

/// `verifyGroupKind`: the reference names `kind` in one of `groups`. An
/// `apiVersion` with more than one `/` is no group at all.
fn group_kind_is(reference: &OwnerReference, kind: &str, groups: &[&str]) -> bool {
    let group = match reference.api_version.split_once('/') {
        None => "",
        Some((_, version)) if version.contains('/') => return false,
        Some((group, _)) => group,
    };
    reference.kind == kind && groups.contains(&group)
}

fn uid_is(meta: &ObjectMeta, uid: &str) -> bool {
    meta.uid.as_deref() == Some(uid)
}

/// `spec.replicas`, which defaulting always sets (1 when it did not run).
fn replicas(replicas: Option<i32>) -> i32 {
    replicas.unwrap_or(1)
}

/// `getPodReplicaSet`: a ReplicaSet not itself run by a Deployment.
fn replica_set_scale(
    lookup: &impl Workloads,
    reference: &OwnerReference,
    namespace: &str,
) -> Option<ControllerScale> {
    if !group_kind_is(reference, "ReplicaSet", &["apps", "extensions"]) {
        return None;
    }
    let rs = lookup.replica_set(namespace, &reference.name)?;
    if !uid_is(&rs.metadata, &reference.uid) {
        return None;
    }
    if controller_of(&rs.metadata).is_some_and(|owner| owner.kind == "Deployment") {
        return None;
    }
    Some(ControllerScale {
        uid: reference.uid.clone(),
        scale: replicas(rs.spec.replicas),
    })
}

/// `getPodDeployment`: the Deployment running the pod's ReplicaSet.
fn deployment_scale(
    lookup: &impl Workloads,
    reference: &OwnerReference,
    namespace: &str,
) -> Option<ControllerScale> {
    if !group_kind_is(reference, "ReplicaSet", &["apps", "extensions"]) {
        return None;
    }
    let rs = lookup.replica_set(namespace, &reference.name)?;
    if !uid_is(&rs.metadata, &reference.uid) {
        return None;
    }
    let owner = controller_of(&rs.metadata)?;
    if !group_kind_is(owner, "Deployment", &["apps", "extensions"]) {
        return None;
    }
    let deployment = lookup.deployment(namespace, &owner.name)?;
    if !uid_is(&deployment.metadata, &owner.uid) {
        return None;
    }
    Some(ControllerScale {
        uid: owner.uid.clone(),
        scale: replicas(deployment.spec.replicas),
    })
}

/// The finders of a controller that owns its pods directly
/// (`getPodReplicationController`, `getPodStatefulSet`): the reference's
/// kind in one of `groups`, the object found by name with the
/// reference's UID, its replicas.
fn direct_scale<T>(
    reference: &OwnerReference,
    (kind, groups): (&str, &[&str]),
    found: impl FnOnce() -> Option<T>,
    meta_and_replicas: impl FnOnce(&T) -> (&ObjectMeta, Option<i32>),
) -> Option<ControllerScale> {
    if !group_kind_is(reference, kind, groups) {
        return None;
    }
    let object = found()?;
    let (meta, scale) = meta_and_replicas(&object);
    if !uid_is(meta, &reference.uid) {
        return None;
    }
    Some(ControllerScale {
        uid: reference.uid.clone(),
        scale: replicas(scale),
    })
}

/// The finders in upstream's order (`dc.finders()`): the first that
/// recognises the controller reference gives the scale.
pub fn find_controller_scale(
    lookup: &impl Workloads,
    reference: &OwnerReference,
    namespace: &str,
) -> Option<ControllerScale> {
    replica_set_scale(lookup, reference, namespace)
        .or_else(|| deployment_scale(lookup, reference, namespace))
        .or_else(|| {
            direct_scale(
                reference,
                ("ReplicationController", &[""]),
                || lookup.replication_controller(namespace, &reference.name),
                |rc| (&rc.metadata, rc.spec.as_ref().and_then(|s| s.replicas)),
            )
        })
        .or_else(|| {
            direct_scale(
                reference,
                ("StatefulSet", &["apps"]),
                || lookup.stateful_set(namespace, &reference.name),
                |ss| (&ss.metadata, ss.spec.replicas),
            )
        })
}

/// `getExpectedScale`: the sum of the scales of the pods' controllers
/// (each counted once), and the names of the pods with no controller.
/// A pod whose controller no finder recognises is upstream's error
/// "found no controllers for pod".
pub fn expected_scale(
    lookup: &impl Workloads,
    pods: &[&Pod],
) -> Result<(i32, Vec<String>), String> {
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    let mut unmanaged = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(reference) = controller_of(&pod.metadata) else {
            unmanaged.push(name);
            continue;
        };
        if scales.contains_key(&reference.uid) {
            continue;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let found = find_controller_scale(lookup, reference, namespace)
            .ok_or_else(|| format!("found no controllers for pod {name:?}"))?;
        scales.insert(found.uid, found.scale);
    }
    let total = scales.values().fold(0i32, |sum, s| sum.saturating_add(*s));
    Ok((total, unmanaged))
}
