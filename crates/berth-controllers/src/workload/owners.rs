//! Which controllers an object's change wakes (upstream's
//! `addPod`/`updatePod`/`deletePod` and `addHistory`/`updateHistory`/
//! `deleteHistory` of every workload controller): the controller its
//! controller reference names (resolved by name, then checked by UID),
//! or, for an orphan, every controller whose selector matches it, so one
//! may adopt it. A controller's own creates and deletes are reported, for
//! its expectations.

use berth_client::ObjectKey;
use berth_core::labels::label_selector_as_selector;
use berth_core::workloads::ownership::controller_of;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;

use crate::store::{Applied, Store};

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

/// Resolves `reference` to a controller of `kind` in `namespace`: its key
/// when the controller of that name exists with that UID.
pub fn resolve(
    kind: &str,
    namespace: &str,
    reference: &OwnerReference,
    uid_of: impl Fn(&ObjectKey) -> Option<String>,
) -> Option<ObjectKey> {
    if reference.kind != kind {
        return None;
    }
    let key = ObjectKey::new(namespace, reference.name.clone());
    (uid_of(&key).as_deref() == Some(reference.uid.as_str())).then_some(key)
}

/// The reaction of the controllers of `kind` to `event`. `uid_of` looks a
/// controller up by key; `selecting` lists the controllers whose
/// selectors match an object.
pub fn react<K: Resource>(
    event: ObjectEvent<'_, K>,
    kind: &str,
    uid_of: impl Fn(&ObjectKey) -> Option<String>,
    selecting: impl Fn(&K) -> Vec<ObjectKey>,
) -> Reaction {
    let mut reaction = Reaction::default();
    let namespace = |k: &K| k.meta().namespace.clone().unwrap_or_default();
    let owner = |k: &K| {
        controller_of(k.meta()).and_then(|r| resolve(kind, &namespace(k), r, &uid_of))
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

/// `GetPodDaemonSets`, `GetPodStatefulSets`, ...: the controllers in the
/// object's namespace whose selector (non-empty) matches its labels.
pub fn selecting<O: Resource>(
    controllers: &Store<O>,
    selector_of: impl Fn(&O) -> &LabelSelector,
    meta: &ObjectMeta,
) -> Vec<ObjectKey> {
    let namespace = meta.namespace.as_deref().unwrap_or("");
    controllers
        .list_namespace(namespace)
        .iter()
        .filter(|c| {
            matches!(label_selector_as_selector(Some(selector_of(c))),
                Ok(Some(s)) if !s.is_empty() && s.matches(meta.labels.as_ref()))
        })
        .map(|c| ObjectKey::of_meta(c.meta()))
        .collect()
}

/// [`react`] to a change applied to a store, for the controllers of
/// `kind` in `controllers` (their selectors by `selector_of`); `None` for
/// what says nothing (a deletion without a last state, the end of a
/// list).
pub fn react_to_applied<K: Resource, O: Resource>(
    applied: &Applied<K>,
    kind: &str,
    controllers: &Store<O>,
    selector_of: impl Fn(&O) -> &LabelSelector + Copy,
) -> Option<Reaction> {
    let uid_of = |key: &ObjectKey| controllers.get(key).and_then(|c| c.meta().uid.clone());
    let selecting = |object: &K| selecting(controllers, selector_of, object.meta());
    let event = match applied {
        Applied::Upsert { old: None, new } => ObjectEvent::Added(new.as_ref()),
        Applied::Upsert {
            old: Some(old),
            new,
        } => ObjectEvent::Updated {
            old: old.as_ref(),
            new: new.as_ref(),
        },
        Applied::Delete { last: Some(last), .. } => ObjectEvent::Deleted(last.as_ref()),
        Applied::Delete { last: None, .. } | Applied::Synced => return None,
    };
    Some(react(event, kind, uid_of, selecting))
}

/// The key of the object a change is about.
pub fn applied_key<K: Resource>(applied: &Applied<K>) -> Option<ObjectKey> {
    match applied {
        Applied::Upsert { new, .. } => Some(ObjectKey::of_meta(new.meta())),
        Applied::Delete { key, .. } => Some(key.clone()),
        Applied::Synced => None,
    }
}

/// Whether a pod update made it Ready (a controller with
/// `minReadySeconds` looks again once it counts as available).
pub fn became_ready(applied: &Applied<k8s_openapi::api::core::v1::Pod>) -> bool {
    matches!(applied, Applied::Upsert { old: Some(old), new }
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
        let uid_of = |k: &ObjectKey| match k.name.as_str() {
            "foo1" => Some("u1".to_string()),
            "foo2" => Some("u2".to_string()),
            _ => None,
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
                new: Some(pod("1", &labelled, Some(reference("ReplicaSet", "foo1", "u1")))),
                want: Reaction::default(),
            },
            Case {
                name: "added with a stale UID: nobody",
                old: None,
                new: Some(pod("1", &labelled, Some(reference("DaemonSet", "foo1", "old")))),
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
            assert_eq!(
                react(event, "DaemonSet", uid_of, selecting),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
