//! The consistency between the store and the watch caches, in one place:
//! how a write becomes visible to watchers, and when a read may be served
//! from a watch cache instead of the store.
//!
//! **A write** ([`Registry::write`]) is announced to its type's watch cache
//! before it goes to the store ([`ResourceCache::expect`]: the object, its
//! stored bytes, what the cache extracts from it), then written with a
//! compare-and-swap on the object's revision (or a create), then
//! acknowledged with its revision ([`ResourceCache::acknowledge`]), or
//! withdrawn if the store refused it. The cache applies the store's events
//! in revision order from one watch on `/registry/` ([`crate::cache::run`]):
//! the event of an announced write takes the entry the write made (matched
//! on the stored bytes, or on the revision once acknowledged), so it is
//! never parsed again, and is broadcast to every watcher of the type. The
//! store's event, not the write's answer, decides what watchers see and in
//! which order. Another server's writes (a shared etcd) arrive the same way,
//! decoded from the store's bytes.
//!
//! **Reads:** single objects come from the store ([`Registry::find`]); a
//! consistent list or watch waits until the cache has applied the store's
//! current revision ([`Registry::wait_current`]). Three reads may use the
//! cache's copy because the write that follows is a compare-and-swap on
//! that copy's revision, so a stale copy fails in the store, never writes:
//! an update naming the cached revision ([`Registry::cached_as_sent`]), the
//! first attempt of a patch, delete or binding ([`Registry::newest`]: this
//! server's own acknowledged write of the key if the cache has not applied
//! it yet, else the cache's copy); anything but a write that went through is
//! decided again on the store's copy.
//!
//! **The namespace check** of every create ([`Registry::ensure_namespace`])
//! answers from the namespace cache when that is exact: with a store only
//! this server writes, once the cache reflects the last namespace deletion
//! this server made.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use berth_store::{AnyStore, KeyValue, ListOptions, Store, StoreError};
use serde_json::Value;

use futures::future::BoxFuture;

use crate::allocators::Claims;
use crate::cache::{Cached, Expectation, ResourceCache};
use crate::objects::{StoredJson, resource_version_of, set_resource_version};
use crate::resources::{NAMESPACES, PODS, RESOURCES, ResourceType};
use crate::status::ApiError;
use crate::strategy::PodBinding;

type ApiResult<T> = Result<T, ApiError>;

/// The store and the watch caches of every served type.
pub struct Registry {
    store: AnyStore,
    caches: Vec<Arc<ResourceCache>>,
    /// The revision of the last namespace deletion this server made. With the embedded store
    /// this server makes every write, so a namespace in the watch cache once the cache has
    /// reached this revision still exists for any request that started after that deletion
    /// answered (see [`Registry::ensure_namespace`]).
    namespace_deleted_at: AtomicI64,
}

/// A store error as the API reports it for object `name` of `rt`.
pub fn store_error(rt: &ResourceType, name: &str, err: StoreError) -> ApiError {
    match err {
        StoreError::NotFound { .. } => ApiError::not_found(rt.group, rt.plural, name),
        StoreError::AlreadyExists { .. } => ApiError::already_exists(rt.group, rt.plural, name),
        StoreError::Conflict { .. } => ApiError::modified(rt.group, rt.plural, name),
        StoreError::Gone {
            requested,
            compacted,
        } => ApiError::expired(requested, compacted.unwrap_or(0)),
        StoreError::ValueTooLarge { .. } => ApiError::object_too_large(),
        StoreError::InvalidKey { .. } | StoreError::InvalidArgument(_) => {
            ApiError::bad_request(err.to_string())
        }
        StoreError::InvalidContinue(why) => {
            ApiError::bad_request(format!("invalid continue token: {why}"))
        }
        other => ApiError::internal(other),
    }
}

/// A stored object as the API returns it, and its revision.
pub fn decode(rt: &ResourceType, name: &str, kv: &KeyValue) -> ApiResult<(Value, i64)> {
    let mut object: Value = serde_json::from_slice(&kv.value).map_err(|e| {
        ApiError::internal(format!("stored {} {name:?} is unreadable: {e}", rt.plural))
    })?;
    set_resource_version(&mut object, kv.mod_revision);
    Ok((object, kv.mod_revision))
}

impl Registry {
    /// The registry over `store` and the watch caches fed from it.
    pub fn new(store: AnyStore, caches: Vec<Arc<ResourceCache>>) -> Registry {
        Registry {
            store,
            caches,
            namespace_deleted_at: AtomicI64::new(0),
        }
    }

    /// The store.
    pub fn store(&self) -> &AnyStore {
        &self.store
    }

    /// The watch cache of `rt` (of the type it is stored as).
    pub fn cache(&self, rt: &ResourceType) -> ApiResult<&Arc<ResourceCache>> {
        let rt = rt.stored_as.unwrap_or(rt);
        self.caches
            .iter()
            .find(|c| std::ptr::eq(c.resource, rt))
            .ok_or_else(|| ApiError::internal(format!("no cache for {}", rt.plural)))
    }

    /// Whether every watch cache has loaded.
    pub async fn is_ready(&self) -> bool {
        for cache in &self.caches {
            if !cache.is_ready().await {
                return false;
            }
        }
        true
    }

    /// The stored object and its revision; 404 if there is none.
    pub async fn read(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<(Value, i64)> {
        self.find(rt, ns, name)
            .await?
            .ok_or_else(|| ApiError::not_found(rt.group, rt.plural, name))
    }

    /// The stored object and its revision, `None` if there is none.
    pub async fn find(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> ApiResult<Option<(Value, i64)>> {
        let kv = self
            .store
            .get(&rt.key(ns, name))
            .await
            .map_err(|e| store_error(rt, name, e))?;
        kv.map(|kv| decode(rt, name, &kv)).transpose()
    }

    /// The stored object an update replaces, from the watch cache, when
    /// the update names a resourceVersion and the cache holds the object at
    /// exactly that revision (a kubelet's Lease renewal, a controller's
    /// PUT): the store read is then spared. That is as exact as reading the
    /// store: the write is a compare-and-swap on that revision, so if the
    /// object moved since, the store refuses it with the same conflict.
    /// Anything else (no resourceVersion, a cache behind or ahead) reads
    /// the store.
    pub async fn cached_as_sent(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        object: &Value,
    ) -> Option<(Value, i64)> {
        let sent: i64 = resource_version_of(object).parse().ok()?;
        if rt.stored_as.is_some() {
            return None;
        }
        let cached = self.cache(rt).ok()?.get_at(&rt.key(ns, name), sent).await?;
        let old = serde_json::from_str(&cached.json).ok()?;
        Some((old, sent))
    }

    /// The object as the watch cache holds it (decoded) and its revision;
    /// `None` when the cache does not hold it or is still loading. It may be
    /// behind the store: callers act on it only through a compare-and-swap
    /// on its revision, and decide anything that does not end in a write
    /// (a no-op, an error) again on the stored object.
    pub async fn newest(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<(Value, i64)> {
        let cached = self.newest_cached(rt, ns, name).await?;
        let object = serde_json::from_str(&cached.json).ok()?;
        Some((object, cached.rv))
    }

    /// [`Registry::newest`], undecoded: the watch cache's entry.
    pub async fn newest_cached(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> Option<Arc<Cached>> {
        if rt.stored_as.is_some() {
            return None;
        }
        self.cache(rt).ok()?.latest(&rt.key(ns, name)).await
    }

    /// Waits until the watch cache of `rt` reflects the store's current
    /// revision (a consistent read); returns that cache.
    pub async fn wait_current(&self, rt: &ResourceType) -> ApiResult<&Arc<ResourceCache>> {
        let cache = self.cache(rt)?;
        let current = self
            .store
            .current_revision()
            .await
            .map_err(ApiError::internal)?;
        cache.wait_for(current).await?;
        Ok(cache)
    }

    /// Stores `object` under `key`: a create when `expected` is `None`,
    /// else a compare-and-swap on that revision. The watch cache is told of
    /// the write before it goes out and of its revision after
    /// ([`ResourceCache::expect`]), so that the write's store event costs
    /// the cache no parse, whichever comes first. Returns the revision and
    /// the object as the API reports it (the store's bytes with
    /// `resourceVersion` spliced in).
    pub async fn write(
        &self,
        rt: &ResourceType,
        key: &str,
        object: &Value,
        expected: Option<i64>,
    ) -> Result<(i64, Arc<str>), StoreError> {
        let stored = Arc::new(StoredJson::encode(object));
        let cache = self.own_cache(rt);
        let expectation = cache.and_then(|cache| cache.expect(key, object, stored.clone()));
        self.store_announced(key, stored, expected, cache.zip(expectation))
            .await
    }

    /// [`Registry::write`] of an object already encoded as `stored`, made
    /// from `base` (the watch cache's entry, at `expected`) by changing
    /// only the selectable fields in `changed` (see
    /// [`ResourceCache::expect_derived`]).
    pub async fn write_derived(
        &self,
        rt: &ResourceType,
        key: &str,
        stored: StoredJson,
        base: &Cached,
        changed: &[(&str, &str)],
        expected: i64,
    ) -> Result<(i64, Arc<str>), StoreError> {
        let stored = Arc::new(stored);
        let cache = self.own_cache(rt);
        let expectation =
            cache.map(|cache| cache.expect_derived(key, base, changed, stored.clone()));
        self.store_announced(key, stored, Some(expected), cache.zip(expectation))
            .await
    }

    /// The watch cache a write of `rt` announces itself to: types stored in
    /// another type's form (events.k8s.io events) are cached in that form
    /// and decoded from the store's bytes.
    fn own_cache(&self, rt: &ResourceType) -> Option<&Arc<ResourceCache>> {
        match rt.stored_as {
            None => self.cache(rt).ok(),
            Some(_) => None,
        }
    }

    /// Stores `stored` under `key` (a create when `expected` is `None`),
    /// then acknowledges or withdraws the cache's expectation of it.
    async fn store_announced(
        &self,
        key: &str,
        stored: Arc<StoredJson>,
        expected: Option<i64>,
        own: Option<(&Arc<ResourceCache>, Expectation)>,
    ) -> Result<(i64, Arc<str>), StoreError> {
        let written = match expected {
            None => self.store.create(key, stored.bytes.clone()).await,
            Some(revision) => self.store.update(key, stored.bytes.clone(), revision).await,
        };
        match (written, own) {
            (Ok(revision), own) => {
                let json: Arc<str> = Arc::from(stored.with_resource_version(revision));
                if let Some((cache, expectation)) = own {
                    cache.acknowledge(expectation, revision, json.clone());
                }
                Ok((revision, json))
            }
            (Err(e), own) => {
                if let Some((cache, expectation)) = own {
                    cache.withdraw(expectation);
                }
                Err(e)
            }
        }
    }

    /// Deletes the object at `key` if it is still at `revision`; returns
    /// the revision of the deletion. A namespace's deletion is recorded
    /// before it is answered (see [`Registry::ensure_namespace`]).
    pub async fn delete(
        &self,
        rt: &ResourceType,
        key: &str,
        revision: i64,
    ) -> Result<i64, StoreError> {
        let deleted_at = self.store.delete(key, revision).await?;
        if std::ptr::eq(rt, &NAMESPACES) {
            self.namespace_deleted_at
                .fetch_max(deleted_at, Ordering::AcqRel);
        }
        Ok(deleted_at)
    }

    /// What the namespace controller does upstream, done at once: every
    /// namespaced object of a deleted namespace goes with it. Returns what
    /// the deleted objects held of the allocators, to be given back.
    pub async fn delete_namespace_contents(&self, ns: &str) -> Vec<Claims> {
        let mut held = Vec::new();
        let stored = RESOURCES
            .iter()
            .filter(|r| r.namespaced && r.stored_as.is_none() && r.strategy.is_stored());
        for rt in stored {
            let Ok(page) = self
                .store
                .list(&rt.prefix(Some(ns)), ListOptions::default())
                .await
            else {
                continue;
            };
            for kv in page.items {
                if self.store.delete(&kv.key, kv.mod_revision).await.is_ok()
                    && let Ok(object) = serde_json::from_slice::<Value>(&kv.value)
                {
                    let claims = rt.strategy.held(&object);
                    if !claims.is_empty() {
                        held.push(claims);
                    }
                }
            }
        }
        held
    }

    /// 404 unless namespace `ns` exists.
    pub async fn ensure_namespace(&self, ns: &str) -> ApiResult<()> {
        let key = NAMESPACES.key("", ns);
        // Every create checks its namespace. A store read costs a blocking-pool hop and a
        // read transaction per create; the namespace watch cache answers a present namespace
        // in memory. That is exact with the embedded store, where this server makes every
        // write: once the cache reflects the last namespace deletion this server answered, a
        // namespace still in it was not deleted before this request began. (Upstream's
        // NamespaceLifecycle admission reads its informer cache first too.) A namespace
        // absent from the cache, or a shared etcd, goes to the store as before. (The same
        // holds for the in-memory store.)
        if matches!(self.store, AnyStore::Redb(_) | AnyStore::Memory(_)) {
            let deleted_at = self.namespace_deleted_at.load(Ordering::Acquire);
            if self.cache(&NAMESPACES)?.holds(&key, deleted_at).await {
                return Ok(());
            }
        }
        let exists = self.store.get(&key).await.map_err(ApiError::internal)?;
        match exists {
            Some(_) => Ok(()),
            None => Err(ApiError::not_found("", "namespaces", ns)),
        }
    }
}

/// A node's access review asks whether a pod is bound to it: the stored
/// pod says.
impl PodBinding for Registry {
    fn bound<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        node: &'a str,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let pod = self.find(&PODS, namespace, name).await.ok().flatten();
            pod.and_then(|(pod, _)| {
                pod.pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .map(|bound| bound == node)
            })
            .unwrap_or(false)
        })
    }
}
