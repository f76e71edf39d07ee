//! Which controllers an object's change wakes (upstream's
//! `addPod`/`updatePod`/`deletePod` and `addHistory`/`updateHistory`/
//! `deleteHistory` of every workload controller): the controller its
//! controller reference names (resolved by name, then checked by UID),
//! or, for an orphan, every controller whose selector matches it, so one
//! may adopt it. A controller's own creates and deletes are reported, for
//! its expectations.

use berth_client::ObjectKey;
use berth_core::workloads::ownership::controller_of;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::Resource;

use crate::cache::{ObjectCache, Observed};

/// One change to an object, with the state before it where there was one.
#[derive(Debug, Clone, Copy)]
pub enum ObjectEvent<'a, K> {
    Added(&'a K),
    Updated { old: &'a K, new: &'a K },
    Deleted(&'a K),
}

/// What the change means to the controllers of one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reaction {
    /// Controllers to sync.
    pub enqueue: Vec<ObjectKey>,
    /// The controller whose create this change shows (`CreationObserved`).
    pub created_for: Option<ObjectKey>,
    /// The controller whose delete this change shows (`DeletionObserved`):
    /// the object is gone or being deleted.
    pub deleted_for: Option<ObjectKey>,
}

/// The reaction of the controllers of one kind to `event`. `resolve`
/// finds the controller an owner reference names (`resolveControllerRef`:
/// of the kind, by name, with that UID); `selecting` lists the
/// controllers whose selectors match an object.
pub fn react<K: Resource>(
    event: ObjectEvent<'_, K>,
    resolve: impl Fn(&str, &OwnerReference) -> Option<ObjectKey>,
    selecting: impl Fn(&K) -> Vec<ObjectKey>,
) -> Reaction {
    let mut reaction = Reaction::default();
    let owner = |k: &K| {
        let namespace = k.meta().namespace.as_deref().unwrap_or("");
        controller_of(k.meta()).and_then(|r| resolve(namespace, r))
    };
    // A deletion, or one starting: the owner may replace the object now.
    let deletion = |object: &K, reaction: &mut Reaction| {
        if let Some(key) = owner(object) {
            reaction.deleted_for = Some(key.clone());
            reaction.enqueue.push(key);
        }
    };
    match event {
        // Seen for the first time already being deleted (after a
        // restart): not a creation.
        ObjectEvent::Added(object) if object.meta().deletion_timestamp.is_some() => {
            deletion(object, &mut reaction);
        }
        ObjectEvent::Added(object) => match controller_of(object.meta()) {
            Some(_) => {
                if let Some(key) = owner(object) {
                    reaction.created_for = Some(key.clone());
                    reaction.enqueue.push(key);
                }
            }
            None => reaction.enqueue = selecting(object),
        },
        ObjectEvent::Updated { old, new } => {
            if old.meta().resource_version == new.meta().resource_version
                && old.meta().resource_version.is_some()
            {
                return reaction;
            }
            if new.meta().deletion_timestamp.is_some() {
                deletion(new, &mut reaction);
                if let Some(old_owner) = owner(old)
                    && !reaction.enqueue.contains(&old_owner)
                {
                    reaction.enqueue.push(old_owner);
                }
                return reaction;
            }
            let old_ref = controller_of(old.meta());
            let new_ref = controller_of(new.meta());
            let ref_changed = old_ref != new_ref;
            if ref_changed && let Some(key) = owner(old) {
                reaction.enqueue.push(key);
            }
            match new_ref {
                Some(_) => reaction.enqueue.extend(owner(new)),
                None => {
                    if ref_changed || old.meta().labels != new.meta().labels {
                        reaction.enqueue.extend(selecting(new));
                    }
                }
            }
            reaction.enqueue.dedup();
        }
        ObjectEvent::Deleted(object) => deletion(object, &mut reaction),
    }
    reaction
}

/// [`react`] to a change a cache observed, for the controllers in
/// `controllers` (their selectors by `selector_of`); `None` for the end
/// of a list.
pub fn react_to<K: Resource, O: Resource<DynamicType = ()>>(
    observed: &Observed<K>,
    controllers: &ObjectCache<O>,
    selector_of: impl Fn(&O) -> &LabelSelector + Copy,
) -> Option<Reaction> {
    let resolve = |namespace: &str, reference: &OwnerReference| {
        controllers
            .resolve(namespace, reference)
            .map(|c| ObjectKey::of_meta(c.meta()))
    };
    let selecting = |object: &K| {
        let meta = object.meta();
        controllers
            .selecting(
                meta.namespace.as_deref().unwrap_or(""),
                meta.labels.as_ref(),
                selector_of,
            )
            .iter()
            .map(|c| ObjectKey::of_meta(c.meta()))
            .collect()
    };
    let event = match observed {
        Observed::Added(new) => ObjectEvent::Added(new.as_ref()),
        Observed::Updated { old, new } => ObjectEvent::Updated {
            old: old.as_ref(),
            new: new.as_ref(),
        },
        Observed::Deleted(last) => ObjectEvent::Deleted(last.as_ref()),
        Observed::Synced => return None,
    };
    Some(react(event, resolve, selecting))
}

/// The key of the object a change is about.
pub fn observed_key<K: Resource>(observed: &Observed<K>) -> Option<ObjectKey> {
    match observed {
        Observed::Added(o) | Observed::Updated { new: o, .. } | Observed::Deleted(o) => {
            Some(ObjectKey::of_meta(o.meta()))
        }
        Observed::Synced => None,
    }
}

/// Whether a pod update made it Ready (a controller with
/// `minReadySeconds` looks again once it counts as available).
pub fn became_ready(observed: &Observed<k8s_openapi::api::core::v1::Pod>) -> bool {
    matches!(observed, Observed::Updated { old, new }
        if !berth_core::pod::is_ready(old) && berth_core::pod::is_ready(new))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;
    use berth_core::test_util::t;

    fn reference(kind: &str, name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn pod(rv: &str, labels: &[(&str, &str)], owner: Option<OwnerReference>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                owner_references: owner.map(|r| vec![r]),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn deleting(mut p: Pod) -> Pod {
        p.metadata.deletion_timestamp = Some(Time(t(0)));
        p
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    /// Upstream's pod event tests (`TestAddPod`, `TestAddPodOrphan`,
    /// `TestUpdatePod`, `TestUpdatePodOrphanSameLabels`,
    /// `TestUpdatePodOrphanWithNewLabels`, `TestUpdatePodChangeControllerRef`,
    /// `TestUpdatePodControllerRefRemoved`, `TestDeletePod`,
    /// `TestDeletePodOrphan`), one row each: which daemon sets are synced.
    #[test]
    fn pod_changes_wake_their_controllers() {
        // Two DaemonSets: foo1 (uid u1) and foo2 (uid u2); the orphan's
        // labels select both.
        let resolve = |namespace: &str, r: &OwnerReference| {
            let uid = match r.name.as_str() {
                "foo1" => "u1",
                "foo2" => "u2",
                _ => return None,
            };
            (r.kind == "DaemonSet" && r.uid == uid)
                .then(|| ObjectKey::new(namespace, r.name.clone()))
        };
        let selecting = |p: &Pod| {
            let selected = p
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("name"));
            if selected {
                vec![key("foo1"), key("foo2")]
            } else {
                vec![]
            }
        };
        let foo1 = || Some(reference("DaemonSet", "foo1", "u1"));
        let foo2 = || Some(reference("DaemonSet", "foo2", "u2"));
        let labelled = [("name", "simple")];
        struct Case {
            name: &'static str,
            old: Option<Pod>,
            new: Option<Pod>,
            want: Reaction,
        }
        let enqueue = |names: &[&str]| names.iter().map(|n| key(n)).collect::<Vec<_>>();
        let cases = [
            Case {
                name: "added with a controller: that one, a creation",
                old: None,
                new: Some(pod("1", &labelled, foo1())),
                want: Reaction {
                    enqueue: enqueue(&["foo1"]),
                    created_for: Some(key("foo1")),
                    deleted_for: None,
                },
            },
            Case {
                name: "added orphan: every selecting controller, no creation",
                old: None,
                new: Some(pod("1", &labelled, None)),
                want: Reaction {
                    enqueue: enqueue(&["foo1", "foo2"]),
                    ..Reaction::default()
                },
            },
            Case {
                name: "added with a controller of another kind: nobody",
                old: None,
                new: Some(pod(
                    "1",
                    &labelled,
                    Some(reference("ReplicaSet", "foo1", "u1")),
                )),
                want: Reaction::default(),
            },
            Case {
                name: "added with a stale UID: nobody",
                old: None,
                new: Some(pod(
                    "1",
                    &labelled,
                    Some(reference("DaemonSet", "foo1", "old")),
                )),
                want: Reaction::default(),
            },
            Case {
                name: "added already being deleted: a deletion",
                old: None,
                new: Some(deleting(pod("1", &labelled, foo1()))),
                want: Reaction {
                    enqueue: enqueue(&["foo1"]),
                    deleted_for: Some(key("foo1")),
                    ..Reaction::default()
                },
            },
            Case {
                name: "updated with a controller: that one",
                old: Some(pod("1", &labelled, foo1())),
                new: Some(pod("2", &labelled, foo1())),
                want: Reaction {
                    enqueue: enqueue(&["foo1"]),
                    ..Reaction::default()
                },
            },
            Case {
                name: "resync (same resourceVersion): nobody",
                old: Some(pod("1", &labelled, foo1())),
                new: Some(pod("1", &labelled, foo1())),
                want: Reaction::default(),
            },
            Case {
                name: "orphan updated with the same labels: nobody",
                old: Some(pod("1", &labelled, None)),
                new: Some(pod("2", &labelled, None)),
                want: Reaction::default(),
            },
            Case {
                name: "orphan updated with new labels: every selecting controller",
                old: Some(pod("1", &[], None)),
                new: Some(pod("2", &labelled, None)),
                want: Reaction {
                    enqueue: enqueue(&["foo1", "foo2"]),
                    ..Reaction::default()
                },
            },
            Case {
                name: "controller changed: the old and the new",
                old: Some(pod("1", &labelled, foo1())),
                new: Some(pod("2", &labelled, foo2())),
                want: Reaction {
                    enqueue: enqueue(&["foo1", "foo2"]),
                    ..Reaction::default()
                },
            },
            Case {
                name: "controller removed: the old one and the selecting ones",
                old: Some(pod("1", &labelled, foo1())),
                new: Some(pod("2", &labelled, None)),
                want: Reaction {
                    enqueue: enqueue(&["foo1", "foo2"]),
                    ..Reaction::default()
                },
            },
            Case {
                name: "graceful deletion starts: a deletion",
                old: Some(pod("1", &labelled, foo1())),
                new: Some(deleting(pod("2", &labelled, foo1()))),
                want: Reaction {
                    enqueue: enqueue(&["foo1"]),
                    deleted_for: Some(key("foo1")),
                    ..Reaction::default()
                },
            },
            Case {
                name: "deleted: its controller, a deletion",
                old: Some(pod("1", &labelled, foo1())),
                new: None,
                want: Reaction {
                    enqueue: enqueue(&["foo1"]),
                    deleted_for: Some(key("foo1")),
                    ..Reaction::default()
                },
            },
            Case {
                name: "orphan deleted: nobody",
                old: Some(pod("1", &labelled, None)),
                new: None,
                want: Reaction::default(),
            },
        ];
        for case in cases {
            let event = match (&case.old, &case.new) {
                (None, Some(new)) => ObjectEvent::Added(new),
                (Some(old), Some(new)) => ObjectEvent::Updated { old, new },
                (Some(old), None) => ObjectEvent::Deleted(old),
                (None, None) => continue,
            };
            assert_eq!(react(event, resolve, selecting), case.want, "{}", case.name);
        }
    }
}
