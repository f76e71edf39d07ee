//! The watch cache: every object of one resource type in memory, fed by
//! one store watch, serving lists and watches so that a hundred watchers
//! cost the store nothing extra.
//!
//! Objects are kept as the JSON the API returns (with `resourceVersion`
//! set), so a list is a concatenation of byte strings and a watch event is
//! one write. Labels and the selectable fields are extracted once, when an
//! object arrives, for filtering.
//!
//! Ordering: the feeder applies store events in revision order under the
//! state's write lock and publishes each to the broadcast channel while
//! holding it, so a watcher that takes the read lock, copies the history
//! after its resourceVersion and subscribes sees every event exactly once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use berth_store::{AnyStore, EventKind, ListOptions, Store, StoreError, WatchEvent};
use futures::FutureExt;
use serde_json::Value;
use tokio::sync::{RwLock, broadcast, watch};

use crate::objects::StoredJson;
use crate::resources::ResourceType;
use crate::status::ApiError;

/// One object as the cache holds it.
#[derive(Debug)]
pub struct Cached {
    pub namespace: String,
    pub name: String,
    pub rv: i64,
    /// The object as JSON, `metadata.resourceVersion` included.
    pub json: Arc<str>,
    pub labels: BTreeMap<String, String>,
    /// Upstream's selectable fields of the object (`metadata.name`, ...).
    pub fields: BTreeMap<String, String>,
}

/// What a watch event says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One change, as watchers receive it.
#[derive(Debug, Clone)]
pub struct Change {
    pub kind: ChangeType,
    pub object: Arc<Cached>,
    /// The object before the change, for selectors that stop matching.
    pub previous: Option<Arc<Cached>>,
}

/// Extracts the selectable fields of an object of this resource type.
pub type FieldsFn = fn(&ResourceType, &Value) -> BTreeMap<String, String>;

struct State {
    objects: BTreeMap<String, Arc<Cached>>,
    /// The revision the cache reflects.
    rv: i64,
    history: VecDeque<Change>,
    /// Watches from a revision below this cannot be served (410).
    history_floor: i64,
    /// The feeder has loaded the initial list.
    ready: bool,
}

/// Feeds every cache from one watch on the whole registry.
///
/// One watch (rather than one per type) means every event advances every
/// cache's revision: after seeing revision R of the totally ordered stream,
/// each cache knows it holds everything up to R, so a consistent read only
/// waits for the writes before it, whatever type they were of. Loads all
/// caches at one revision, follows the watch, and starts over when the
/// watch breaks or was compacted away. Runs until the store is closed.
pub async fn run(caches: Vec<Arc<ResourceCache>>, store: AnyStore) {
    loop {
        match follow(&caches, &store).await {
            Err(StoreError::Closed) => return,
            Err(e) => {
                tracing::warn!(error = %e, "watch caches restarting");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(()) => return,
        }
    }
}

/// Starts [`run`] as a task of the current runtime that tokio's
/// cooperative budget does not make yield: every watcher and every cache
/// read waits on it, and a budgeted task is sent to the back of the run
/// queue every 128 events. Among a saturated server's thousand connection
/// tasks that held it to a few thousand events a second, so at 10,000
/// writes/s the caches fell seconds behind the store and Lease renewals
/// reached the node lifecycle controller late. It still yields whenever
/// no event is waiting. (A thread of its own also kept up, but its
/// cross-thread wake-ups cost a burst of writes ~30 ms of p99 latency.)
pub fn spawn(caches: Vec<Arc<ResourceCache>>, store: AnyStore) {
    tokio::spawn(tokio::task::unconstrained(run(caches, store)));
}

async fn follow(caches: &[Arc<ResourceCache>], store: &AnyStore) -> Result<(), StoreError> {
    let revision = store.current_revision().await?;
    for cache in caches {
        let objects = cache.load(store, revision).await?;
        cache.reset(objects, revision).await;
    }
    let prefixes: Vec<String> = caches.iter().map(|c| c.resource.prefix(None)).collect();
    let mut stream = store.watch("/registry/", revision).await?;
    while let Some(event) = stream.next_event().await {
        // Apply each event to the cache it belongs to, and move the other
        // caches' revision forward once for the events already waiting (a
        // committed batch arrives at once) instead of once per event each.
        let mut last = apply_to_owner(caches, &prefixes, event?).await;
        for _ in 1..FOLLOW_RUN {
            let Some(next) = stream.next_event().now_or_never() else {
                break;
            };
            let Some(event) = next else {
                return Err(StoreError::Closed);
            };
            last = apply_to_owner(caches, &prefixes, event?).await;
        }
        for cache in caches {
            cache.advance(last).await;
        }
    }
    Err(StoreError::Closed)
}

/// Events applied before every cache's revision is brought up to date:
/// bounds how long a consistent read on a quiet resource waits behind a
/// stream of writes to another.
const FOLLOW_RUN: usize = 256;

/// Applies `event` to the cache whose prefix holds its key (one at most:
/// each cached type has a storage of its own); returns its revision.
async fn apply_to_owner(
    caches: &[Arc<ResourceCache>],
    prefixes: &[String],
    event: WatchEvent,
) -> i64 {
    let revision = event.revision;
    if let Some((cache, _)) = caches
        .iter()
        .zip(prefixes)
        .find(|(_, prefix)| event.kv.key.starts_with(prefix.as_str()))
    {
        cache.apply(event).await;
    }
    revision
}

/// The cache of one resource type.
pub struct ResourceCache {
    pub resource: &'static ResourceType,
    state: RwLock<State>,
    events: broadcast::Sender<Change>,
    rv: watch::Sender<i64>,
    history_limit: usize,
    fields: FieldsFn,
    own_writes: std::sync::Mutex<OwnWrites>,
}

/// This server's own writes of each key whose store events the cache has
/// not applied yet (see [`ResourceCache::expect`]).
#[derive(Default)]
struct OwnWrites {
    /// The revision of the last store event applied to this cache.
    applied: i64,
    /// Per key, oldest first; a few at most (under load the cache may apply
    /// a write's event after the next write of the same key went out).
    writes: HashMap<String, Vec<OwnWrite>>,
    /// Tells writes apart, so that one is acknowledged or withdrawn and
    /// not a later one of the same key.
    next_ticket: u64,
}

/// One of this server's writes, waiting for its store event.
struct OwnWrite {
    ticket: u64,
    state: OwnWriteState,
}

enum OwnWriteState {
    /// On its way to the store: its bytes and what the cache extracts from
    /// the object, all but the revision.
    Announced {
        stored: Arc<StoredJson>,
        parts: Parts,
    },
    /// Acknowledged by the store: the entry it makes, revision included.
    /// (Not the object itself as well: handing it to the next write of the
    /// key spared that write a parse, but under a saturated server the
    /// cache's task, which applies every event of the cluster, then freed
    /// the objects whose events it applied, and fell behind with it.)
    Acknowledged(Arc<Cached>),
}

/// What the cache extracts from an object, but its revision and JSON.
struct Parts {
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    fields: BTreeMap<String, String>,
}

impl Parts {
    fn cached(self, rv: i64, json: Arc<str>) -> Cached {
        Cached {
            namespace: self.namespace,
            name: self.name,
            rv,
            json,
            labels: self.labels,
            fields: self.fields,
        }
    }
}

/// The receipt of [`ResourceCache::expect`], to acknowledge or withdraw
/// the write.
#[derive(Debug)]
pub struct Expectation {
    key: String,
    ticket: u64,
}

/// Own writes kept per key (see [`OwnWrites::writes`]).
const OWN_WRITES_PER_KEY: usize = 4;

/// How many changes a watcher may fall behind before it is ended (it then
/// re-lists, as clients do on 410).
const BROADCAST_CAPACITY: usize = 1 << 16;

impl ResourceCache {
    /// An empty cache; [`ResourceCache::run`] fills it and keeps it current.
    pub fn new(
        resource: &'static ResourceType,
        history_limit: usize,
        fields: FieldsFn,
    ) -> Arc<Self> {
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        let (rv, _) = watch::channel(0);
        Arc::new(ResourceCache {
            resource,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                rv: 0,
                history: VecDeque::new(),
                history_floor: 0,
                ready: false,
            }),
            events,
            rv,
            history_limit: history_limit.max(1),
            fields,
            own_writes: std::sync::Mutex::new(OwnWrites::default()),
        })
    }

    /// Announces a write of `object` (to be stored as `stored`) before it
    /// goes to the store, so that its store event costs the cache no parse
    /// and no serialization: the event takes the entry this write makes,
    /// whether it comes before the store's acknowledgement (matched on the
    /// stored bytes, the revision spliced in: identical bytes decode to the
    /// identical entry) or after it ([`acknowledge`], matched on the
    /// revision). The event still decides what the cache holds and when
    /// (order, revision); an event matching none of this server's writes
    /// (another server's, or a write whose announcement was dropped) is
    /// decoded from the store's bytes.
    ///
    /// [`acknowledge`]: ResourceCache::acknowledge
    pub fn expect(
        &self,
        key: &str,
        object: &Value,
        stored: Arc<StoredJson>,
    ) -> Option<Expectation> {
        let parts = self.parts(object)?;
        let mut own_writes = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        own_writes.next_ticket += 1;
        let ticket = own_writes.next_ticket;
        let writes = own_writes.writes.entry(key.to_string()).or_default();
        if writes.len() == OWN_WRITES_PER_KEY {
            writes.remove(0);
        }
        writes.push(OwnWrite {
            ticket,
            state: OwnWriteState::Announced { stored, parts },
        });
        Some(Expectation {
            key: key.to_string(),
            ticket,
        })
    }

    /// The store took the announced write at revision `rv`; `json` is the
    /// object as the API reports it. Until its event is applied,
    /// [`latest`] answers with it.
    ///
    /// [`latest`]: ResourceCache::latest
    pub fn acknowledge(&self, expectation: Expectation, rv: i64, json: Arc<str>) {
        let mut own_writes = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        let applied = own_writes.applied;
        let Some(writes) = own_writes.writes.get_mut(&expectation.key) else {
            return;
        };
        let Some(at) = writes.iter().position(|w| w.ticket == expectation.ticket) else {
            // Its event came first and took it.
            return;
        };
        let write = writes.remove(at);
        // A write at or below the applied revision had its event applied
        // without it (a reload): nothing waits for it.
        if rv > applied
            && let OwnWriteState::Announced { parts, .. } = write.state
        {
            writes.insert(
                at,
                OwnWrite {
                    ticket: write.ticket,
                    state: OwnWriteState::Acknowledged(Arc::new(parts.cached(rv, json))),
                },
            );
        }
        if writes.is_empty() {
            own_writes.writes.remove(&expectation.key);
        }
    }

    /// Withdraws an announced write that did not happen.
    pub fn withdraw(&self, expectation: Expectation) {
        let mut own_writes = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(writes) = own_writes.writes.get_mut(&expectation.key) {
            writes.retain(|w| w.ticket != expectation.ticket);
            if writes.is_empty() {
                own_writes.writes.remove(&expectation.key);
            }
        }
    }

    /// The entry of this server's write that the store event of `key` at
    /// `revision` (with the stored bytes `value`) is the event of, if any;
    /// the key's writes before it are dropped (their events were missed, or
    /// they failed). Marks events up to `revision` applied.
    fn take_own_write(&self, key: &str, value: &[u8], revision: i64) -> Option<Arc<Cached>> {
        let mut own_writes = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        own_writes.applied = own_writes.applied.max(revision);
        let writes = own_writes.writes.get_mut(key)?;
        let at = writes.iter().position(|w| match &w.state {
            OwnWriteState::Acknowledged(cached) => cached.rv == revision,
            OwnWriteState::Announced { stored, .. } => stored.bytes == value,
        });
        let taken = match at {
            Some(at) => writes.drain(..=at).next_back(),
            None => {
                // Acknowledged writes at or below this revision will not
                // see their events any more.
                writes.retain(
                    |w| !matches!(&w.state, OwnWriteState::Acknowledged(c) if c.rv <= revision),
                );
                None
            }
        };
        if writes.is_empty() {
            own_writes.writes.remove(key);
        }
        drop(own_writes);
        match taken?.state {
            OwnWriteState::Acknowledged(cached) => Some(cached),
            OwnWriteState::Announced { stored, parts } => Some(Arc::new(
                parts.cached(revision, Arc::from(stored.with_resource_version(revision))),
            )),
        }
    }

    fn decode(&self, value: &[u8], rv: i64) -> Option<Cached> {
        let mut object: Value = serde_json::from_slice(value).ok()?;
        let meta = object.get_mut("metadata")?.as_object_mut()?;
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        let json = Arc::from(serde_json::to_string(&object).ok()?);
        Some(self.parts(&object)?.cached(rv, json))
    }

    /// What the cache extracts from `object` (`None` without `metadata`).
    fn parts(&self, object: &Value) -> Option<Parts> {
        let meta = object.get("metadata")?.as_object()?;
        let text = |field: &str| {
            meta.get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let labels = meta
            .get("labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Some(Parts {
            namespace: text("namespace"),
            name: text("name"),
            labels,
            fields: (self.fields)(self.resource, object),
        })
    }

    /// Replaces the cache's content with a fresh load at `revision`.
    async fn reset(&self, objects: BTreeMap<String, Arc<Cached>>, revision: i64) {
        {
            let mut state = self.state.write().await;
            // A reload cannot tell watchers what they missed: history starts
            // again here, and older resourceVersions get 410.
            state.objects = objects;
            state.rv = revision;
            state.history.clear();
            state.history_floor = revision;
            state.ready = true;
        }
        {
            let mut own_writes = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
            own_writes.applied = own_writes.applied.max(revision);
            // A reload does not say which announced writes it includes;
            // acknowledged ones below it had their events applied in it.
            own_writes.writes.retain(|_, writes| {
                writes.retain(
                    |w| matches!(&w.state, OwnWriteState::Acknowledged(c) if c.rv > revision),
                );
                !writes.is_empty()
            });
        }
        self.rv.send_replace(revision);
    }

    /// The cache's objects as the store has them at `revision`.
    async fn load(
        &self,
        store: &AnyStore,
        revision: i64,
    ) -> Result<BTreeMap<String, Arc<Cached>>, StoreError> {
        let mut objects = BTreeMap::new();
        let mut options = ListOptions {
            limit: 10_000,
            revision: Some(revision),
            ..ListOptions::default()
        };
        loop {
            let page = store
                .list(&self.resource.prefix(None), options.clone())
                .await?;
            for kv in &page.items {
                if let Some(cached) = self.decode(&kv.value, kv.mod_revision) {
                    objects.insert(kv.key.clone(), Arc::new(cached));
                }
            }
            match page.next {
                Some(next) => options.continue_from = Some(next),
                None => return Ok(objects),
            }
        }
    }

    /// Marks the cache current up to `revision` after an event of another
    /// resource type: the store's watch is totally ordered, so nothing of
    /// this type happened in between.
    async fn advance(&self, revision: i64) {
        // Usually the owner of the last event, already there: no write lock.
        if *self.rv.borrow() >= revision {
            return;
        }
        let mut state = self.state.write().await;
        if revision > state.rv {
            state.rv = revision;
            drop(state);
            self.rv.send_replace(revision);
        }
    }

    async fn apply(&self, event: WatchEvent) {
        let revision = event.revision;
        let mut state = self.state.write().await;
        let change = self.change_for(&mut state, &event);
        // The cache reflects this revision whether or not the event could
        // be turned into a change: consistent reads wait on it.
        state.rv = state.rv.max(revision);
        if let Some(change) = change {
            state.history.push_back(change.clone());
            while state.history.len() > self.history_limit {
                if let Some(dropped) = state.history.pop_front() {
                    state.history_floor = dropped.object.rv;
                }
            }
            // No receivers is fine: nobody is watching.
            let _ = self.events.send(change);
        }
        drop(state);
        self.rv.send_replace(revision);
    }

    /// Applies one store event to the objects and describes the change.
    fn change_for(&self, state: &mut State, event: &WatchEvent) -> Option<Change> {
        let revision = event.revision;
        let previous = state.objects.get(&event.kv.key).cloned();
        let own = self.take_own_write(&event.kv.key, &event.kv.value, revision);
        match event.kind {
            EventKind::Created | EventKind::Updated => {
                let Some(object) =
                    own.or_else(|| self.decode(&event.kv.value, revision).map(Arc::new))
                else {
                    tracing::warn!(
                        key = event.kv.key,
                        "unreadable object in the store; dropped from the cache"
                    );
                    state.objects.remove(&event.kv.key);
                    return None;
                };
                state.objects.insert(event.kv.key.clone(), object.clone());
                let kind = if previous.is_some() {
                    ChangeType::Modified
                } else {
                    ChangeType::Added
                };
                Some(Change {
                    kind,
                    object,
                    previous,
                })
            }
            EventKind::Deleted => {
                state.objects.remove(&event.kv.key);
                // The deleted object, at the revision of its deletion, as
                // upstream reports it.
                let last = event
                    .prev_kv
                    .as_ref()
                    .and_then(|kv| self.decode(&kv.value, revision))
                    .or_else(|| {
                        previous
                            .as_ref()
                            .and_then(|p| self.decode(p.json.as_bytes(), revision))
                    });
                last.map(|object| Change {
                    kind: ChangeType::Deleted,
                    object: Arc::new(object),
                    previous,
                })
            }
        }
    }

    /// Waits until the cache reflects `revision` (a consistent read).
    pub async fn wait_for(&self, revision: i64) -> Result<(), ApiError> {
        let mut rx = self.rv.subscribe();
        let waited =
            tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|rv| *rv >= revision))
                .await
                .map(|r| r.is_ok())
                .unwrap_or(false);
        if waited {
            return Ok(());
        }
        let current = *self.rv.borrow();
        Err(ApiError::timeout(format!(
            "Too large resource version: {revision}, current: {current}"
        )))
    }

    /// A snapshot of the objects under `namespace` (all when empty) that
    /// `keep` accepts, and the revision it was taken at.
    pub async fn list(
        &self,
        namespace: &str,
        keep: impl Fn(&Cached) -> bool,
    ) -> (Vec<Arc<Cached>>, i64) {
        let state = self.state.read().await;
        let prefix = self.resource.prefix(Some(namespace));
        let items = state
            .objects
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
            .filter(|v| keep(v))
            .cloned()
            .collect();
        (items, state.rv)
    }

    /// Whether the cache holds `key`, once it reflects at least revision `min_rv` (false when
    /// it does not yet: the caller then asks the store).
    pub async fn holds(&self, key: &str, min_rv: i64) -> bool {
        let state = self.state.read().await;
        state.ready && state.rv >= min_rv && state.objects.contains_key(key)
    }

    /// The object at `key` if the cache holds it at exactly revision `rv`.
    pub async fn get_at(&self, key: &str, rv: i64) -> Option<Arc<Cached>> {
        let state = self.state.read().await;
        state.objects.get(key).filter(|o| o.rv == rv).cloned()
    }

    /// The object under `key`, once the cache has loaded (it may be behind
    /// the store: callers that write check its `rv` with a compare-and-swap).
    pub async fn get(&self, key: &str) -> Option<Arc<Cached>> {
        let state = self.state.read().await;
        if !state.ready {
            return None;
        }
        state.objects.get(key).cloned()
    }

    /// The newest copy of `key` this server knows of: an object it has just
    /// written whose store event the cache has not applied yet (an
    /// acknowledged write, see [`expect`]), else the cache's own. A client
    /// that writes an object and at once writes it again (a controller's
    /// status patch, then its delete) would otherwise find the cache one
    /// revision behind, and its compare-and-swap fail and be redone on a
    /// store read. Like [`get`], it may still be behind the store (another
    /// server's write).
    ///
    /// [`get`]: ResourceCache::get
    /// [`expect`]: ResourceCache::expect
    pub async fn latest(&self, key: &str) -> Option<Arc<Cached>> {
        let own = self
            .own_writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .writes
            .get(key)
            .and_then(|writes| {
                writes.iter().rev().find_map(|w| match &w.state {
                    OwnWriteState::Acknowledged(cached) => Some(cached.clone()),
                    OwnWriteState::Announced { .. } => None,
                })
            });
        let state = self.state.read().await;
        if !state.ready {
            return None;
        }
        let cached = state.objects.get(key).cloned();
        match (own, cached) {
            (Some(own), Some(cached)) if cached.rv >= own.rv => Some(cached),
            (Some(own), _) => Some(own),
            (None, cached) => cached,
        }
    }

    /// The revision the cache reflects.
    pub async fn revision(&self) -> i64 {
        self.state.read().await.rv
    }

    /// The revision the cache reflects, as it moves (changes of this type
    /// are broadcast before the revision that includes them is published).
    pub fn revisions(&self) -> watch::Receiver<i64> {
        self.rv.subscribe()
    }

    /// Starts a watch after `rv`: the changes already in the history, then
    /// a receiver for the rest. `rv` of 0 means "from now, with the current
    /// objects as ADDED events", as upstream does for `resourceVersion=0`
    /// or unset.
    pub async fn watch_from(
        &self,
        rv: Option<i64>,
    ) -> Result<(Vec<Change>, broadcast::Receiver<Change>, i64), ApiError> {
        let state = self.state.read().await;
        let receiver = self.events.subscribe();
        match rv {
            None | Some(0) => {
                let initial = state
                    .objects
                    .values()
                    .map(|o| Change {
                        kind: ChangeType::Added,
                        object: o.clone(),
                        previous: None,
                    })
                    .collect();
                Ok((initial, receiver, state.rv))
            }
            Some(rv) if rv < state.history_floor => Err(ApiError::expired(rv, state.history_floor)),
            Some(rv) => {
                let replay = state
                    .history
                    .iter()
                    .filter(|c| c.object.rv > rv)
                    .cloned()
                    .collect();
                Ok((replay, receiver, state.rv.max(rv)))
            }
        }
    }

    /// Whether the initial load has finished.
    pub async fn is_ready(&self) -> bool {
        self.state.read().await.ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::StoredJson;
    use crate::resources::PODS;
    use berth_store::KeyValue;
    use serde_json::json;

    const KEY: &str = "/registry/pods/default/web";

    fn pod(node: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
               "spec": {"nodeName": node}, "status": {"phase": "Pending"}})
    }

    fn event(kind: EventKind, object: &Value, revision: i64) -> WatchEvent {
        WatchEvent {
            kind,
            revision,
            kv: KeyValue {
                key: KEY.into(),
                value: StoredJson::encode(object).bytes,
                create_revision: revision,
                mod_revision: revision,
            },
            prev_kv: None,
        }
    }

    /// Announces a write of `object` as the API server does before it
    /// goes to the store.
    fn announce(cache: &ResourceCache, object: &Value) -> Expectation {
        cache
            .expect(KEY, object, Arc::new(StoredJson::encode(object)))
            .unwrap_or_else(|| panic!("an object with metadata is announced"))
    }

    /// Acknowledges an announced write at `revision`, as the API server
    /// does when the store took it; returns the JSON it answered with.
    fn acknowledge(
        cache: &ResourceCache,
        expectation: Expectation,
        object: &Value,
        revision: i64,
    ) -> Arc<str> {
        let json: Arc<str> = Arc::from(StoredJson::encode(object).with_resource_version(revision));
        cache.acknowledge(expectation, revision, json.clone());
        json
    }

    async fn held(cache: &ResourceCache) -> Arc<Cached> {
        let state = cache.state.read().await;
        state
            .objects
            .get(KEY)
            .cloned()
            .unwrap_or_else(|| panic!("{KEY} not cached"))
    }

    /// What decoding the store's bytes gives: the cache's content must not
    /// depend on whether a write was announced.
    fn assert_same_as_decoded(cache: &ResourceCache, got: &Cached, object: &Value) {
        let decoded = cache
            .decode(&StoredJson::encode(object).bytes, got.rv)
            .unwrap_or_else(|| panic!("undecodable"));
        let got_json: Value = serde_json::from_str(&got.json).unwrap_or_default();
        let want_json: Value = serde_json::from_str(&decoded.json).unwrap_or_default();
        assert_eq!(got_json, want_json);
        assert_eq!(got.labels, decoded.labels);
        assert_eq!(got.fields, decoded.fields);
        assert_eq!(
            (&got.namespace, &got.name),
            (&decoded.namespace, &decoded.name)
        );
    }

    /// This server's writes the cache still holds for `KEY`.
    fn own_writes(cache: &ResourceCache) -> usize {
        cache
            .own_writes
            .lock()
            .map(|p| p.writes.get(KEY).map_or(0, Vec::len))
            .unwrap_or(usize::MAX)
    }

    #[tokio::test]
    async fn a_write_acknowledged_before_its_event_is_cached_without_decoding() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let object = pod("n1");
        cache.reset(BTreeMap::new(), 1).await;
        let write = announce(&cache, &object);
        let json = acknowledge(&cache, write, &object, 5);
        let latest = cache.latest(KEY).await;
        assert!(
            latest.is_some_and(|latest| Arc::ptr_eq(&latest.json, &json)),
            "the write is the newest copy before its event comes"
        );
        cache.apply(event(EventKind::Created, &object, 5)).await;
        let got = held(&cache).await;
        assert!(
            Arc::ptr_eq(&got.json, &json),
            "the acknowledged JSON is the cached one"
        );
        assert_same_as_decoded(&cache, &got, &object);
        assert_eq!(own_writes(&cache), 0);
    }

    #[tokio::test]
    async fn an_event_before_its_acknowledgement_is_taken_from_the_announcement() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let object = pod("n1");
        let write = announce(&cache, &object);
        cache.apply(event(EventKind::Created, &object, 5)).await;
        let got = held(&cache).await;
        assert_eq!(got.rv, 5);
        assert_same_as_decoded(&cache, &got, &object);
        assert_eq!(own_writes(&cache), 0, "the event took the announcement");
        acknowledge(&cache, write, &object, 5);
        assert_eq!(own_writes(&cache), 0, "nothing waits for an applied event");
        assert!(Arc::ptr_eq(&held(&cache).await, &got));
    }

    #[tokio::test]
    async fn an_event_applied_after_the_next_write_went_out_takes_its_own_write() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let (first, second) = (pod("n1"), pod("n2"));
        let write = announce(&cache, &first);
        let first_json = acknowledge(&cache, write, &first, 5);
        let write = announce(&cache, &second);
        let second_json = acknowledge(&cache, write, &second, 7);
        assert_eq!(own_writes(&cache), 2);
        cache.apply(event(EventKind::Created, &first, 5)).await;
        let got = held(&cache).await;
        assert!(Arc::ptr_eq(&got.json, &first_json));
        assert_eq!(own_writes(&cache), 1);
        cache.apply(event(EventKind::Updated, &second, 7)).await;
        let got = held(&cache).await;
        assert!(Arc::ptr_eq(&got.json, &second_json));
        assert_same_as_decoded(&cache, &got, &second);
        assert_eq!(own_writes(&cache), 0);
    }

    #[tokio::test]
    async fn events_of_other_writers_are_decoded_and_leave_announcements_waiting() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let ours = pod("n1");
        let theirs = pod("n9");
        let _write = announce(&cache, &ours);
        cache.apply(event(EventKind::Created, &theirs, 5)).await;
        let got = held(&cache).await;
        assert_same_as_decoded(&cache, &got, &theirs);
        assert_eq!(
            serde_json::from_str::<Value>(&got.json)
                .ok()
                .and_then(|o| o.pointer("/spec/nodeName").cloned()),
            Some(json!("n9"))
        );
        assert_eq!(own_writes(&cache), 1, "ours may still come");
        cache.apply(event(EventKind::Updated, &ours, 6)).await;
        let got = held(&cache).await;
        assert_same_as_decoded(&cache, &got, &ours);
        assert_eq!(own_writes(&cache), 0);
    }

    #[tokio::test]
    async fn a_withdrawn_write_leaves_the_later_ones_of_its_key() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let failed = announce(&cache, &pod("n1"));
        let next = announce(&cache, &pod("n2"));
        cache.withdraw(failed);
        assert_eq!(own_writes(&cache), 1);
        cache.withdraw(next);
        assert_eq!(own_writes(&cache), 0);
    }

    #[tokio::test]
    async fn own_writes_are_bounded_per_key() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        for node in 0..10 {
            announce(&cache, &pod(&format!("n{node}")));
        }
        assert_eq!(own_writes(&cache), OWN_WRITES_PER_KEY);
    }

    #[tokio::test]
    async fn a_stale_write_is_dropped_by_a_later_event_or_a_reload() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let write = announce(&cache, &pod("n1"));
        acknowledge(&cache, write, &pod("n1"), 5);
        // Its event never came (say the watch broke): a later event of the
        // same key replaces it with what the store says.
        cache.apply(event(EventKind::Deleted, &pod("n1"), 6)).await;
        assert_eq!(own_writes(&cache), 0);
        let write = announce(&cache, &pod("n1"));
        acknowledge(&cache, write, &pod("n1"), 8);
        announce(&cache, &pod("n2"));
        cache.reset(BTreeMap::new(), 9).await;
        assert_eq!(own_writes(&cache), 0, "a reload drops what it may include");
        let write = announce(&cache, &pod("n1"));
        acknowledge(&cache, write, &pod("n1"), 9);
        assert_eq!(
            own_writes(&cache),
            0,
            "a write at or below the reload is too late"
        );
    }
}
