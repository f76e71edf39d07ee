//! A controller's copy of one resource type, fed by its watch: the
//! lister of an upstream informer. The task that reads the watch
//! ([`berth_client::changes`]) writes it; a controller's workers read it
//! at the start of each sync, taking shared handles ([`Arc`]) to the
//! objects, never holding the lock across an await.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use berth_client::{Change, ObjectKey};
use kube::Resource;

/// Objects by namespace and name.
pub struct Store<K> {
    objects: RwLock<BTreeMap<ObjectKey, Arc<K>>>,
}

impl<K> Default for Store<K> {
    fn default() -> Self {
        Store {
            objects: RwLock::new(BTreeMap::new()),
        }
    }
}

impl<K> std::fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self
            .objects
            .read()
            .map_or(0, |objects| objects.len());
        f.debug_struct("Store").field("len", &len).finish()
    }
}

/// What a change did to the store: the object before and after.
#[derive(Debug)]
pub enum Applied<K> {
    /// An object was added or replaced (`old` is `None` for an add).
    Upsert { old: Option<Arc<K>>, new: Arc<K> },
    /// An object went; `last` is its last known state.
    Delete { key: ObjectKey, last: Option<Arc<K>> },
    /// The watch's view is complete.
    Synced,
}

impl<K: Resource> Store<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<ObjectKey, Arc<K>>> {
        // Every write is one map operation: a panic elsewhere leaves the
        // map whole, so a poisoned lock is still good to read.
        self.objects
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<ObjectKey, Arc<K>>> {
        self.objects
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies one change of the watch.
    pub fn apply(&self, change: Change<K>) -> Applied<K> {
        match change {
            Change::Upsert(object) => {
                let new = Arc::new(object);
                let key = ObjectKey::of_meta(new.meta());
                let old = self.write().insert(key, new.clone());
                Applied::Upsert { old, new }
            }
            Change::Delete(gone) => {
                let removed = self.write().remove(&gone.key);
                Applied::Delete {
                    last: gone.last.map(Arc::new).or(removed),
                    key: gone.key,
                }
            }
            Change::Synced => Applied::Synced,
        }
    }

    /// Adds or replaces an object (tests fill stores this way).
    pub fn insert(&self, object: K) -> Arc<K> {
        let object = Arc::new(object);
        self.write()
            .insert(ObjectKey::of_meta(object.meta()), object.clone());
        object
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().get(key).cloned()
    }

    /// Every object, in key order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().values().cloned().collect()
    }

    /// The objects of one namespace, in name order.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        let start = ObjectKey::new(namespace, "");
        self.read()
            .range(start..)
            .take_while(|(key, _)| key.namespace == namespace)
            .map(|(_, object)| object.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use berth_client::Gone;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(namespace: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter()
            .map(|p| ObjectKey::of_meta(&p.metadata).to_string())
            .collect()
    }

    #[test]
    fn lists_by_namespace_and_follows_changes() {
        let store = Store::default();
        for (ns, name) in [("b", "x"), ("a", "z"), ("a", "y"), ("ab", "w")] {
            store.insert(pod(ns, name));
        }
        assert_eq!(names(&store.list_namespace("a")), ["a/y", "a/z"]);
        assert_eq!(names(&store.list_namespace("ab")), ["ab/w"]);
        assert!(store.list_namespace("c").is_empty());
        let applied = store.apply(Change::Upsert(pod("a", "y")));
        assert!(matches!(applied, Applied::Upsert { old: Some(_), .. }));
        let applied = store.apply(Change::Delete(Gone {
            key: ObjectKey::new("a", "y"),
            uid: None,
            last: None,
        }));
        assert!(
            matches!(applied, Applied::Delete { last: Some(_), .. }),
            "the store's copy stands in for an unknown last state"
        );
        assert_eq!(names(&store.list()), ["a/z", "ab/w", "b/x"]);
    }
}
