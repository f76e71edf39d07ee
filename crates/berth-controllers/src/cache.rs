//! A controller's copy of one resource type, as its watch
//! ([`berth_client::changes_of`]) last showed it: client-go's informer
//! store with the two indexes the workload controllers look things up by
//! (namespace, and the UID of the object's controller).
//!
//! [`ObjectCache::apply`] folds one [`Change`] in and says what happened
//! in the terms upstream's event handlers take: added, updated (with the
//! copy it replaces), deleted (with the last copy known, when a relist
//! rather than the watch found it gone: upstream's
//! `DeletedFinalStateUnknown`), synced. Objects are shared (`Arc`), so a
//! sync takes what it needs without copying them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use std::collections::BTreeMap as Labels;

use berth_client::Change;
use berth_core::labels::LabelSelector;
use berth_core::object_key::ObjectKey;
use berth_core::workloads::ownership::controller_of;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{self as meta, OwnerReference};
use kube::Resource;

/// What one change did to the cache.
#[derive(Debug)]
pub enum Observed<K> {
    Added(Arc<K>),
    Updated { old: Arc<K>, new: Arc<K> },
    Deleted(Arc<K>),
    Synced,
}

/// See the module documentation.
#[derive(Debug)]
pub struct ObjectCache<K> {
    objects: BTreeMap<ObjectKey, Arc<K>>,
    /// The objects again, by their controller's uid ("" for none), so a
    /// controller's sync reads its own without a lookup each.
    by_controller: HashMap<String, BTreeMap<ObjectKey, Arc<K>>>,
    synced: bool,
}

impl<K> Default for ObjectCache<K> {
    fn default() -> Self {
        ObjectCache {
            objects: BTreeMap::new(),
            by_controller: HashMap::new(),
            synced: false,
        }
    }
}

fn controller_uid<K: Resource>(object: &K) -> Option<&str> {
    controller_of(object.meta()).map(|r| r.uid.as_str())
}

/// The controller index's key: the controller's UID, or "" for orphans.
fn index_key<K: Resource>(object: &K) -> &str {
    controller_uid(object).unwrap_or("")
}

impl<K: Resource> ObjectCache<K> {
    /// Folds one change in; `None` when it changed nothing a handler
    /// should hear of (the deletion of an object never seen).
    pub fn apply(&mut self, change: Change<K>) -> Option<Observed<K>> {
        self.apply_shared(change.map(Arc::new))
    }

    /// [`Self::apply`] of a change whose objects are already shared (a
    /// process's shared watch: the same `Arc` every subscriber holds).
    pub fn apply_shared(&mut self, change: Change<Arc<K>>) -> Option<Observed<K>> {
        match change {
            Change::Upsert(new) => {
                let key = ObjectKey::of_meta(new.meta());
                let old = self.insert(key, new.clone());
                Some(match old {
                    Some(old) => Observed::Updated { old, new },
                    None => Observed::Added(new),
                })
            }
            Change::Delete(gone) => {
                let cached = self.remove(&gone.key);
                gone.last.or(cached).map(Observed::Deleted)
            }
            Change::Synced => {
                self.synced = true;
                Some(Observed::Synced)
            }
        }
    }

    /// [`Self::apply_shared`] for a controller of `kind` that never acts
    /// on an object another kind of controller controls (upstream's
    /// handlers resolve such a reference to nothing and its claims ignore
    /// the object): such objects are not kept. One that becomes another
    /// kind's leaves the cache, its update still observed (the handlers
    /// look at its old controller).
    pub fn apply_shared_for_kind(
        &mut self,
        change: Change<Arc<K>>,
        kind: &str,
    ) -> Option<Observed<K>> {
        let foreign = |object: &K| controller_of(object.meta()).is_some_and(|c| c.kind != kind);
        match change {
            Change::Upsert(new) if foreign(&new) => {
                let old = self.remove(&ObjectKey::of_meta(new.meta()))?;
                Some(Observed::Updated { old, new })
            }
            Change::Delete(gone)
                if gone.last.as_deref().is_some_and(foreign)
                    && !self.objects.contains_key(&gone.key) =>
            {
                None
            }
            change => self.apply_shared(change),
        }
    }

    fn insert(&mut self, key: ObjectKey, object: Arc<K>) -> Option<Arc<K>> {
        let held = object.clone();
        let uid = index_key(held.as_ref());
        // An update under the same controller (most changes: a pod's
        // status) replaces the two copies in place, allocating nothing.
        if let Some(slot) = self.objects.get_mut(&key) {
            let old = std::mem::replace(slot, object.clone());
            let old_uid = index_key(old.as_ref());
            if old_uid == uid
                && let Some(indexed) = self
                    .by_controller
                    .get_mut(uid)
                    .and_then(|objects| objects.get_mut(&key))
            {
                *indexed = object;
                return Some(old);
            }
            self.unindex(old_uid, &key);
            self.index(uid, key, object);
            return Some(old);
        }
        self.objects.insert(key.clone(), object.clone());
        self.index(uid, key, object);
        None
    }

    fn index(&mut self, uid: &str, key: ObjectKey, object: Arc<K>) {
        match self.by_controller.get_mut(uid) {
            Some(objects) => {
                objects.insert(key, object);
            }
            None => {
                self.by_controller
                    .insert(uid.to_string(), BTreeMap::from([(key, object)]));
            }
        }
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = self.objects.remove(key)?;
        self.unindex(index_key(old.as_ref()), key);
        Some(old)
    }

    fn unindex(&mut self, uid: &str, key: &ObjectKey) {
        if let Some(keys) = self.by_controller.get_mut(uid) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_controller.remove(uid);
            }
        }
    }

    /// Whether the first list has been folded in.
    pub fn is_synced(&self) -> bool {
        self.synced
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.objects.get(key).cloned()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Every object, in key order (namespace, then name).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<K>> {
        self.objects.values()
    }

    /// Every object of `namespace`, in name order.
    pub fn in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Arc<K>> {
        self.objects
            .range(ObjectKey::new(namespace, "")..)
            .take_while(move |(key, _)| key.namespace == namespace)
            .map(|(_, object)| object)
    }

    /// `resolveControllerRef`: the object a controller reference names,
    /// if it is of this type and still the same object (by UID).
    pub fn resolve(&self, namespace: &str, reference: &OwnerReference) -> Option<Arc<K>>
    where
        K: Resource<DynamicType = ()>,
    {
        if reference.kind != K::kind(&()) {
            return None;
        }
        self.get(&ObjectKey::new(namespace, reference.name.as_str()))
            .filter(|o| o.meta().uid.as_deref() == Some(reference.uid.as_str()))
    }

    /// The objects of `namespace` whose selector (`selector_of`) selects
    /// `labels`; an empty or invalid selector selects nothing (upstream's
    /// `GetPodReplicaSets`, `GetDeploymentsForReplicaSet`).
    pub fn selecting(
        &self,
        namespace: &str,
        labels: Option<&Labels<String, String>>,
        selector_of: impl Fn(&K) -> &meta::LabelSelector,
    ) -> Vec<Arc<K>> {
        if labels.is_none_or(|l| l.is_empty()) {
            return Vec::new();
        }
        self.in_namespace(namespace)
            .filter(|o| {
                LabelSelector::from_label_selector(selector_of(o))
                    .is_ok_and(|s| !s.is_empty() && s.matches(labels))
            })
            .cloned()
            .collect()
    }

    /// Every object whose controller has `uid`.
    pub fn controlled_by<'a>(&'a self, uid: &str) -> impl Iterator<Item = &'a Arc<K>> {
        self.by_controller
            .get(uid)
            .into_iter()
            .flat_map(|objects| objects.values())
    }

    /// Every object of `namespace` without a controller.
    pub fn orphans_in<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Arc<K>> {
        self.controlled_by("")
            .filter(move |o| o.meta().namespace.as_deref().unwrap_or("") == namespace)
    }

    /// What a controller with `uid` in `namespace` may claim: what it
    /// controls and the namespace's orphans (everything else is another
    /// controller's, which a claim leaves alone). What `known` says the
    /// controller read as its own before is taken without being read again.
    pub fn claimable<'a>(
        &'a self,
        namespace: &'a str,
        uid: &str,
        known: impl Fn(&Arc<K>) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Arc<K>> {
        let owned = if uid.is_empty() {
            None
        } else {
            Some(self.controlled_by(uid))
        };
        owned
            .into_iter()
            .flatten()
            .filter(move |o| known(o) || o.meta().namespace.as_deref().unwrap_or("") == namespace)
            .chain(self.orphans_in(namespace))
    }
}

#[cfg(test)]
mod tests {
    use berth_client::Gone;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;

    fn pod(namespace: &str, name: &str, controller: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                owner_references: controller.map(|uid| {
                    vec![OwnerReference {
                        uid: uid.into(),
                        controller: Some(true),
                        ..OwnerReference::default()
                    }]
                }),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn names<'a>(pods: impl Iterator<Item = &'a Arc<Pod>>) -> Vec<String> {
        pods.map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    fn pod_of_kind(name: &str, controller: Option<(&str, &str)>) -> Arc<Pod> {
        let mut p = pod("a", name, controller.map(|(_, uid)| uid));
        if let (Some((kind, _)), Some(refs)) = (controller, p.metadata.owner_references.as_mut()) {
            refs[0].kind = kind.into();
        }
        Arc::new(p)
    }

    #[test]
    fn a_controller_keeps_no_pod_another_kind_controls() {
        #[derive(Debug, PartialEq)]
        enum Seen {
            Nothing,
            Added,
            Updated,
            Deleted,
        }
        struct Case {
            name: &'static str,
            change: Change<Arc<Pod>>,
            seen: Seen,
            cached_after: Vec<&'static str>,
        }
        let deletion = |name: &str, last: Arc<Pod>| {
            Change::Delete(Gone {
                key: ObjectKey::new("a", name),
                uid: None,
                last: Some(last),
            })
        };
        let cases = vec![
            Case {
                name: "another kind's pod is not kept",
                change: Change::Upsert(pod_of_kind("rs-pod", Some(("ReplicaSet", "rs1")))),
                seen: Seen::Nothing,
                cached_after: vec![],
            },
            Case {
                name: "its own kind's pod is kept",
                change: Change::Upsert(pod_of_kind("ds-pod", Some(("DaemonSet", "ds1")))),
                seen: Seen::Added,
                cached_after: vec!["ds-pod"],
            },
            Case {
                name: "an orphan is kept",
                change: Change::Upsert(pod_of_kind("orphan", None)),
                seen: Seen::Added,
                cached_after: vec!["ds-pod", "orphan"],
            },
            Case {
                name: "an orphan another kind adopts leaves, its update seen",
                change: Change::Upsert(pod_of_kind("orphan", Some(("ReplicaSet", "rs1")))),
                seen: Seen::Updated,
                cached_after: vec!["ds-pod"],
            },
            Case {
                name: "another kind's pod deleted is not seen",
                change: deletion("rs-pod", pod_of_kind("rs-pod", Some(("ReplicaSet", "rs1")))),
                seen: Seen::Nothing,
                cached_after: vec!["ds-pod"],
            },
            Case {
                name: "its own pod deleted is seen",
                change: deletion("ds-pod", pod_of_kind("ds-pod", Some(("DaemonSet", "ds1")))),
                seen: Seen::Deleted,
                cached_after: vec![],
            },
        ];
        let mut cache = ObjectCache::default();
        for case in cases {
            let seen = match cache.apply_shared_for_kind(case.change, "DaemonSet") {
                None => Seen::Nothing,
                Some(Observed::Added(_)) => Seen::Added,
                Some(Observed::Updated { .. }) => Seen::Updated,
                Some(Observed::Deleted(_)) => Seen::Deleted,
                Some(Observed::Synced) => panic!("{}: synced", case.name),
            };
            assert_eq!(seen, case.seen, "{}", case.name);
            assert_eq!(names(cache.iter()), case.cached_after, "{}", case.name);
        }
    }

    #[test]
    fn changes_are_observed_as_upstream_handlers_take_them() {
        let mut cache = ObjectCache::default();
        assert!(matches!(
            cache.apply(Change::Upsert(pod("a", "p1", Some("rs1")))),
            Some(Observed::Added(_))
        ));
        cache.apply(Change::Upsert(pod("a", "p2", Some("rs1"))));
        cache.apply(Change::Upsert(pod("b", "p3", None)));
        cache.apply(Change::Upsert(pod("ab", "p4", Some("rs1"))));
        assert_eq!(names(cache.in_namespace("a")), vec!["p1", "p2"]);
        assert_eq!(names(cache.orphans_in("b")), vec!["p3"]);
        assert_eq!(names(cache.orphans_in("a")).len(), 0);
        assert_eq!(
            names(cache.claimable("a", "rs1", |_| false)),
            vec!["p1", "p2"]
        );
        assert_eq!(names(cache.claimable("b", "rs1", |_| false)), vec!["p3"]);
        assert_eq!(names(cache.controlled_by("rs1")).len(), 3);
        // Released: the index follows the controller reference.
        match cache.apply(Change::Upsert(pod("a", "p1", Some("rs2")))) {
            Some(Observed::Updated { old, new }) => {
                assert_eq!(controller_uid(old.as_ref()), Some("rs1"));
                assert_eq!(controller_uid(new.as_ref()), Some("rs2"));
            }
            other => panic!("not an update: {other:?}"),
        }
        assert_eq!(names(cache.controlled_by("rs1")), vec!["p2", "p4"]);
        assert_eq!(names(cache.controlled_by("rs2")), vec!["p1"]);
        // A relist's deletion carries no last state: the cached copy is
        // handed out instead.
        let gone = Gone {
            key: ObjectKey::new("a", "p1"),
            uid: None,
            last: None,
        };
        match cache.apply(Change::Delete(gone)) {
            Some(Observed::Deleted(last)) => assert_eq!(controller_uid(last.as_ref()), Some("rs2")),
            other => panic!("not a deletion: {other:?}"),
        }
        assert_eq!(cache.controlled_by("rs2").count(), 0);
        let never_seen = Gone {
            key: ObjectKey::new("a", "nope"),
            uid: None,
            last: None,
        };
        assert!(cache.apply(Change::Delete(never_seen)).is_none());
        assert!(!cache.is_synced());
        assert!(matches!(
            cache.apply(Change::Synced),
            Some(Observed::Synced)
        ));
        assert!(cache.is_synced());
    }
}
