//! The Deployment controller's event handlers (upstream's
//! `addDeployment` ... `deletePod`): which Deployments a change wakes.
//! Plain functions over the caches, tested by the tables below.

use std::sync::Arc;

use berth_core::object_key::ObjectKey;
use berth_core::workloads::deployment::{self, STRATEGY_RECREATE};
use berth_core::workloads::ownership::controller_of;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

use super::steps::pod_map;
use crate::cache::{ObjectCache, Observed};
use crate::work_queue::Wake;

fn wake(d: &Deployment) -> Wake {
    Wake::Now(ObjectKey::of_meta(&d.metadata))
}

/// A Deployment added, changed or deleted is synced (a deleted one's sync
/// finds it gone and does nothing).
pub fn deployment_changed(observed: &Observed<Deployment>) -> Vec<Wake> {
    match observed {
        Observed::Added(d) | Observed::Deleted(d) => vec![wake(d)],
        Observed::Updated { new, .. } => vec![wake(new)],
        Observed::Synced => Vec::new(),
    }
}

/// The Deployments that select `rs` (`GetDeploymentsForReplicaSet`).
fn deployments_selecting(rs: &ReplicaSet, deployments: &ObjectCache<Deployment>) -> Vec<Wake> {
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    deployments
        .selecting(namespace, rs.metadata.labels.as_ref(), |d| &d.spec.selector)
        .iter()
        .map(|d| wake(d))
        .collect()
}

/// The Deployment that controls `rs`, if it is in the cache.
fn controller_deployment(
    rs: &ReplicaSet,
    deployments: &ObjectCache<Deployment>,
) -> Option<Arc<Deployment>> {
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    controller_of(&rs.metadata).and_then(|r| deployments.resolve(namespace, r))
}

/// `addReplicaSet`, `updateReplicaSet`, `deleteReplicaSet`: a ReplicaSet's
/// change wakes its Deployment (and the one it left); an orphan's wakes
/// every Deployment that may adopt it.
pub fn replica_set_changed(
    observed: &Observed<ReplicaSet>,
    deployments: &ObjectCache<Deployment>,
) -> Vec<Wake> {
    let owner = |rs: &ReplicaSet| {
        controller_deployment(rs, deployments)
            .map(|d| wake(&d))
            .into_iter()
            .collect::<Vec<_>>()
    };
    match observed {
        Observed::Added(rs) => {
            if rs.metadata.deletion_timestamp.is_some() || controller_of(&rs.metadata).is_some() {
                owner(rs)
            } else {
                deployments_selecting(rs, deployments)
            }
        }
        Observed::Updated { old, new } => {
            if old.metadata.resource_version == new.metadata.resource_version {
                return Vec::new();
            }
            let (old_ref, new_ref) = (controller_of(&old.metadata), controller_of(&new.metadata));
            let mut wakes = Vec::new();
            if old_ref != new_ref && old_ref.is_some() {
                wakes.extend(owner(old));
            }
            if new_ref.is_some() {
                wakes.extend(owner(new));
            } else if old.metadata.labels != new.metadata.labels || old_ref != new_ref {
                wakes.extend(deployments_selecting(new, deployments));
            }
            wakes
        }
        Observed::Deleted(rs) => owner(rs),
        Observed::Synced => Vec::new(),
    }
}

/// `deletePod`: a Recreate Deployment waits for its old pods to be gone;
/// the deletion of its last pod wakes it.
pub fn pod_deleted(
    pod: &Pod,
    deployments: &ObjectCache<Deployment>,
    replica_sets: &ObjectCache<ReplicaSet>,
    pods: &ObjectCache<Pod>,
) -> Vec<Wake> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let rs = match controller_of(&pod.metadata) {
        Some(r) if r.kind == "ReplicaSet" => {
            replica_sets.get(&ObjectKey::new(namespace, r.name.as_str()))
        }
        Some(_) => None,
        // An orphan: the oldest ReplicaSet selecting it.
        None => {
            let mut selecting =
                replica_sets.selecting(namespace, pod.metadata.labels.as_ref(), |rs| {
                    &rs.spec.selector
                });
            selecting
                .sort_by(|a, b| berth_core::workloads::deployment::by_creation_timestamp(a, b));
            selecting.into_iter().next()
        }
    };
    let Some(d) = rs.and_then(|rs| controller_deployment(&rs, deployments)) else {
        return Vec::new();
    };
    if deployment::strategy_type(&d) != STRATEGY_RECREATE {
        return Vec::new();
    }
    let uid = d.metadata.uid.as_deref().unwrap_or_default();
    let rs_list: Vec<Arc<ReplicaSet>> = replica_sets.controlled_by(uid).cloned().collect();
    let remaining: usize = pod_map(pods, &d, &rs_list).values().map(Vec::len).sum();
    if remaining == 0 {
        vec![wake(&d)]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use berth_client::Change;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStrategy, ReplicaSetSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector, ObjectMeta, OwnerReference,
    };

    use super::*;
    use berth_core::workloads::deployment::STRATEGY_ROLLING_UPDATE;

    fn labels(pairs: &[(&str, &str)]) -> Option<std::collections::BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn meta(name: &str, owner: Option<(&str, &str)>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            labels: labels(&[("app", "web")]),
            resource_version: Some("1".into()),
            owner_references: owner.map(|(kind, owner)| {
                vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: kind.into(),
                    name: owner.into(),
                    uid: format!("uid-{owner}"),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]
            }),
            ..ObjectMeta::default()
        }
    }

    fn deployment(name: &str, strategy: &str) -> Deployment {
        Deployment {
            metadata: meta(name, None),
            spec: DeploymentSpec {
                selector: LabelSelector {
                    match_labels: labels(&[("app", "web")]),
                    ..LabelSelector::default()
                },
                strategy: Some(DeploymentStrategy {
                    type_: Some(strategy.into()),
                    rolling_update: None,
                }),
                ..DeploymentSpec::default()
            },
            status: None,
        }
    }

    fn replica_set(name: &str, owner: Option<&str>) -> ReplicaSet {
        ReplicaSet {
            metadata: meta(name, owner.map(|o| ("Deployment", o))),
            spec: ReplicaSetSpec {
                selector: LabelSelector {
                    match_labels: labels(&[("app", "web")]),
                    ..LabelSelector::default()
                },
                ..ReplicaSetSpec::default()
            },
            status: None,
        }
    }

    fn pod(name: &str, owner: Option<&str>) -> Pod {
        Pod {
            metadata: meta(name, owner.map(|o| ("ReplicaSet", o))),
            ..Pod::default()
        }
    }

    fn cache<K: kube::Resource>(objects: Vec<K>) -> ObjectCache<K> {
        let mut cache = ObjectCache::default();
        for o in objects {
            cache.apply(Change::Upsert(o));
        }
        cache
    }

    fn now(name: &str) -> Wake {
        Wake::Now(ObjectKey::new("default", name))
    }

    /// Upstream `TestAddReplicaSet`, `TestUpdateReplicaSetChangeControllerRef`,
    /// `TestUpdateReplicaSetRelabeled`, `TestDeleteReplicaSet` (and their
    /// orphan variants): who wakes for a ReplicaSet's change.
    #[test]
    fn replica_set_changes_wake_their_deployments() {
        let deployments = cache(vec![
            deployment("foo", STRATEGY_ROLLING_UPDATE),
            deployment("bar", STRATEGY_ROLLING_UPDATE),
        ]);
        let relabelled = |mut rs: ReplicaSet| {
            rs.metadata.labels = labels(&[("app", "other")]);
            rs.metadata.resource_version = Some("2".into());
            rs
        };
        let bumped = |mut rs: ReplicaSet| {
            rs.metadata.resource_version = Some("2".into());
            rs
        };
        struct Case {
            name: &'static str,
            observed: Observed<ReplicaSet>,
            want: Vec<Wake>,
        }
        for case in [
            Case {
                name: "an added ReplicaSet wakes its controller",
                observed: Observed::Added(Arc::new(replica_set("rs", Some("foo")))),
                want: vec![now("foo")],
            },
            Case {
                name: "an added orphan wakes every Deployment selecting it",
                observed: Observed::Added(Arc::new(replica_set("rs", None))),
                want: vec![now("bar"), now("foo")],
            },
            Case {
                name: "a ReplicaSet of an unknown Deployment wakes nobody",
                observed: Observed::Added(Arc::new(replica_set("rs", Some("gone")))),
                want: vec![],
            },
            Case {
                name: "a resync wakes nobody",
                observed: Observed::Updated {
                    old: Arc::new(replica_set("rs", Some("foo"))),
                    new: Arc::new(replica_set("rs", Some("foo"))),
                },
                want: vec![],
            },
            Case {
                name: "a controller change wakes the old and the new controller",
                observed: Observed::Updated {
                    old: Arc::new(replica_set("rs", Some("foo"))),
                    new: Arc::new(bumped(replica_set("rs", Some("bar")))),
                },
                want: vec![now("foo"), now("bar")],
            },
            Case {
                name: "a released ReplicaSet wakes its old controller and who selects it",
                observed: Observed::Updated {
                    old: Arc::new(replica_set("rs", Some("foo"))),
                    new: Arc::new(bumped(replica_set("rs", None))),
                },
                want: vec![now("foo"), now("bar"), now("foo")],
            },
            Case {
                name: "a relabelled orphan selected by nobody wakes nobody",
                observed: Observed::Updated {
                    old: Arc::new(replica_set("rs", None)),
                    new: Arc::new(relabelled(replica_set("rs", None))),
                },
                want: vec![],
            },
            Case {
                name: "a deleted ReplicaSet wakes its controller",
                observed: Observed::Deleted(Arc::new(replica_set("rs", Some("bar")))),
                want: vec![now("bar")],
            },
            Case {
                name: "a deleted orphan wakes nobody",
                observed: Observed::Deleted(Arc::new(replica_set("rs", None))),
                want: vec![],
            },
        ] {
            assert_eq!(
                replica_set_changed(&case.observed, &deployments),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestPodDeletionEnqueuesRecreateDeployment`,
    /// `TestPodDeletionDoesntEnqueueRecreateDeployment`,
    /// `TestPodDeletionPartialReplicaSetOwnershipEnqueueRecreateDeployment`
    /// and `TestPodDeletionPartialReplicaSetOwnershipDoesntEnqueueRecreateDeployment`.
    #[test]
    fn a_recreate_deployment_wakes_when_its_last_pod_is_gone() {
        struct Case {
            name: &'static str,
            strategy: &'static str,
            replica_sets: Vec<ReplicaSet>,
            /// The pods left after the deletion.
            remaining: Vec<Pod>,
            deleted: Pod,
            want: Vec<Wake>,
        }
        for case in [
            Case {
                name: "the last pod of a Recreate deployment",
                strategy: STRATEGY_RECREATE,
                replica_sets: vec![replica_set("rs", Some("foo"))],
                remaining: vec![],
                deleted: pod("p1", Some("rs")),
                want: vec![now("foo")],
            },
            Case {
                name: "a pod of a Recreate deployment with pods left",
                strategy: STRATEGY_RECREATE,
                replica_sets: vec![replica_set("rs", Some("foo"))],
                remaining: vec![pod("p2", Some("rs"))],
                deleted: pod("p1", Some("rs")),
                want: vec![],
            },
            Case {
                name: "pods left under a second ReplicaSet of the deployment",
                strategy: STRATEGY_RECREATE,
                replica_sets: vec![
                    replica_set("rs1", Some("foo")),
                    replica_set("rs2", Some("foo")),
                ],
                remaining: vec![pod("p2", Some("rs2"))],
                deleted: pod("p1", Some("rs1")),
                want: vec![],
            },
            Case {
                name: "a pod left under a ReplicaSet the deployment does not own",
                strategy: STRATEGY_RECREATE,
                replica_sets: vec![replica_set("rs1", Some("foo")), replica_set("rs2", None)],
                remaining: vec![pod("p2", Some("rs2"))],
                deleted: pod("p1", Some("rs1")),
                want: vec![now("foo")],
            },
            Case {
                name: "a RollingUpdate deployment does not wait for pods",
                strategy: STRATEGY_ROLLING_UPDATE,
                replica_sets: vec![replica_set("rs", Some("foo"))],
                remaining: vec![],
                deleted: pod("p1", Some("rs")),
                want: vec![],
            },
        ] {
            let deployments = cache(vec![deployment("foo", case.strategy)]);
            let replica_sets = cache(case.replica_sets);
            let pods = cache(case.remaining);
            assert_eq!(
                pod_deleted(&case.deleted, &deployments, &replica_sets, &pods),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
