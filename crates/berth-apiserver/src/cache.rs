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
//!
//! Memory: the history is bounded by events per type and by bytes across
//! every type ([`HistoryBudget`]: the oldest events go first, whatever their
//! type), and a watcher that falls too many bytes behind the broadcast is
//! closed ([`WatchReceiver`]), as upstream's cacher closes a watcher whose
//! buffer is full: the changes a slow client has not read are never kept
//! without a bound.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
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
    /// What `history` counts against the [`HistoryBudget`].
    history_bytes: usize,
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
        trim_to_budget(caches).await;
        for _ in 1..FOLLOW_RUN {
            let Some(next) = stream.next_event().now_or_never() else {
                break;
            };
            let Some(event) = next else {
                return Err(StoreError::Closed);
            };
            last = apply_to_owner(caches, &prefixes, event?).await;
            trim_to_budget(caches).await;
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

/// Drops the oldest history events, of whichever type, while the caches'
/// histories together hold more than their [`HistoryBudget`]. The feeder
/// calls it after each event; under the budget it costs one atomic load.
pub async fn trim_to_budget(caches: &[Arc<ResourceCache>]) {
    while caches.first().is_some_and(|c| c.budget.is_over()) {
        let oldest = caches
            .iter()
            .filter(|c| c.oldest.load(Ordering::Acquire) != i64::MAX)
            .min_by_key(|c| c.oldest.load(Ordering::Acquire));
        let Some(cache) = oldest else {
            return;
        };
        let mut state = cache.state.write().await;
        cache.drop_oldest(&mut state);
    }
}

/// How much history the watch caches keep, counted in bytes across every
/// resource type: the JSON of each event's object, plus a fixed cost per
/// event. (An event also keeps the object before it alive, but that is the
/// previous event's object, already counted, or an object the cache holds
/// anyway.) One budget for all types, so that writes of one type (a client
/// patching one object with large annotations, again and again) cannot
/// grow the server's memory without a bound, and a busy type with small
/// objects keeps a long history when the others are quiet.
pub struct HistoryBudget {
    limit: usize,
    used: AtomicUsize,
}

impl HistoryBudget {
    pub fn new(limit: usize) -> Arc<HistoryBudget> {
        Arc::new(HistoryBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The bytes the histories hold now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    fn is_over(&self) -> bool {
        self.used() > self.limit
    }
}

/// What one event costs in the history budget and in a watcher's lag: its
/// object's JSON and a fixed cost for the entry (the parsed labels and
/// fields, the `Change` itself).
fn change_bytes(change: &Change) -> usize {
    const ENTRY: usize = 256;
    change.object.json.len() + ENTRY
}

/// The memory limits of the watch caches (see the README's resource limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// Events each type's history keeps at most.
    pub history_events: usize,
    /// Bytes all types' histories keep together (see [`HistoryBudget`]).
    pub history_bytes: usize,
    /// How far a watcher may fall behind the events the cache sent, in
    /// bytes, before it is closed (see [`WatchReceiver`]).
    pub watcher_lag_bytes: usize,
}

impl Default for CacheLimits {
    fn default() -> Self {
        CacheLimits {
            history_events: 100_000,
            history_bytes: 512 << 20,
            watcher_lag_bytes: 64 << 20,
        }
    }
}

/// One watcher's end of the cache's broadcast, shared with the cache so
/// that the cache can close a watcher that does not keep up.
struct WatcherSlot {
    /// The broadcast bytes (see [`change_bytes`]) this watcher has taken:
    /// it lags the cache by [`ResourceCache`]`::sent` minus this.
    taken: AtomicU64,
    /// `None` once the cache closed the watcher. Locked by the watcher only
    /// while it waits for the next change (so it is then caught up).
    receiver: tokio::sync::Mutex<Option<broadcast::Receiver<Change>>>,
}

/// Why a watcher got no change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Changes it had not read were overwritten in the broadcast (more
    /// events than its capacity behind): the watch must end with 410.
    Lagged,
    /// The cache closed it for being too many bytes behind; it resumes from
    /// the last change it saw, as upstream's clients do when their watch
    /// ends.
    TooSlow,
    /// The cache has stopped.
    Closed,
}

/// A watcher's receiver of the cache's live changes. The broadcast keeps
/// every change until its slowest receiver has read it, so a client that
/// stops reading (its TCP window full, the server's writes blocked) would
/// pin every later change of its type; the cache instead closes it once it
/// is [`CacheLimits::watcher_lag_bytes`] behind, which bounds what slow
/// watchers keep alive per type by that many bytes, however many there are.
pub struct WatchReceiver {
    slot: Arc<WatcherSlot>,
}

impl WatchReceiver {
    fn new(
        receiver: broadcast::Receiver<Change>,
        taken: u64,
    ) -> (WatchReceiver, Weak<WatcherSlot>) {
        let slot = Arc::new(WatcherSlot {
            taken: AtomicU64::new(taken),
            receiver: tokio::sync::Mutex::new(Some(receiver)),
        });
        let weak = Arc::downgrade(&slot);
        (WatchReceiver { slot }, weak)
    }

    /// A receiver no cache can close, for tests of what consumes it.
    pub fn unmanaged(receiver: broadcast::Receiver<Change>) -> WatchReceiver {
        WatchReceiver::new(receiver, 0).0
    }

    /// The next change.
    pub async fn recv(&mut self) -> Result<Change, Missed> {
        let mut receiver = self.slot.receiver.lock().await;
        let Some(rx) = receiver.as_mut() else {
            return Err(Missed::TooSlow);
        };
        let received = rx.recv().await;
        self.took(received)
    }

    /// The next change if one is waiting (`Ok(None)`: none is).
    pub async fn try_recv(&mut self) -> Result<Option<Change>, Missed> {
        use tokio::sync::broadcast::error::TryRecvError;
        let mut receiver = self.slot.receiver.lock().await;
        let Some(rx) = receiver.as_mut() else {
            return Err(Missed::TooSlow);
        };
        match rx.try_recv() {
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Lagged(_)) => Err(Missed::Lagged),
            Err(TryRecvError::Closed) => Err(Missed::Closed),
            Ok(change) => self.took(Ok(change)).map(Some),
        }
    }

    fn took(
        &self,
        received: Result<Change, broadcast::error::RecvError>,
    ) -> Result<Change, Missed> {
        use tokio::sync::broadcast::error::RecvError;
        match received {
            Ok(change) => {
                self.slot
                    .taken
                    .fetch_add(change_bytes(&change) as u64, Ordering::AcqRel);
                Ok(change)
            }
            Err(RecvError::Lagged(_)) => Err(Missed::Lagged),
            Err(RecvError::Closed) => Err(Missed::Closed),
        }
    }
}

/// Broadcast bytes between two looks for watchers too far behind: the
/// look walks every watcher of the type, so it is not done per event.
const LAG_CHECK_EVERY: u64 = 1 << 20;

/// The cache of one resource type.
pub struct ResourceCache {
    pub resource: &'static ResourceType,
    state: RwLock<State>,
    events: broadcast::Sender<Change>,
    rv: watch::Sender<i64>,
    history_limit: usize,
    /// Shared by every type's cache.
    budget: Arc<HistoryBudget>,
    /// The revision of the oldest history event (`i64::MAX`: none), for
    /// [`trim_to_budget`] to find the oldest across types without locks.
    oldest: AtomicI64,
    /// The bytes of every change broadcast so far (see [`change_bytes`]).
    sent: AtomicU64,
    /// `sent` at which to look for slow watchers next.
    next_lag_check: AtomicU64,
    watcher_lag_bytes: u64,
    watchers: std::sync::Mutex<Vec<Weak<WatcherSlot>>>,
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
    /// An empty cache with the default byte limits and a history budget of
    /// its own; [`run`] fills it and keeps it current.
    pub fn new(
        resource: &'static ResourceType,
        history_limit: usize,
        fields: FieldsFn,
    ) -> Arc<Self> {
        let limits = CacheLimits {
            history_events: history_limit,
            ..CacheLimits::default()
        };
        ResourceCache::with_limits(
            resource,
            &limits,
            HistoryBudget::new(limits.history_bytes),
            fields,
        )
    }

    /// An empty cache whose history counts against `budget` (shared by
    /// every type's cache).
    pub fn with_limits(
        resource: &'static ResourceType,
        limits: &CacheLimits,
        budget: Arc<HistoryBudget>,
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
                history_bytes: 0,
                history_floor: 0,
                ready: false,
            }),
            events,
            rv,
            history_limit: limits.history_events.max(1),
            budget,
            oldest: AtomicI64::new(i64::MAX),
            sent: AtomicU64::new(0),
            next_lag_check: AtomicU64::new(LAG_CHECK_EVERY),
            watcher_lag_bytes: limits.watcher_lag_bytes as u64,
            watchers: std::sync::Mutex::new(Vec::new()),
            fields,
            own_writes: std::sync::Mutex::new(OwnWrites::default()),
        })
    }

    /// Drops the oldest history event; watches from before it get 410.
    fn drop_oldest(&self, state: &mut State) {
        if let Some(dropped) = state.history.pop_front() {
            state.history_floor = dropped.object.rv;
            let bytes = change_bytes(&dropped);
            state.history_bytes -= bytes;
            self.budget.used.fetch_sub(bytes, Ordering::AcqRel);
        }
        self.publish_oldest(state);
    }

    fn publish_oldest(&self, state: &State) {
        let oldest = state.history.front().map_or(i64::MAX, |c| c.object.rv);
        self.oldest.store(oldest, Ordering::Release);
    }

    /// Closes the watchers more than `watcher_lag_bytes` behind the
    /// broadcast (whose unread changes are all that the broadcast keeps).
    /// A watcher waiting for a change holds its receiver's lock and is
    /// caught up, so it is skipped.
    fn close_slow_watchers(&self, sent: u64) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers.retain(|weak| {
            let Some(slot) = weak.upgrade() else {
                return false;
            };
            let lag = sent.saturating_sub(slot.taken.load(Ordering::Acquire));
            if lag <= self.watcher_lag_bytes {
                return true;
            }
            let Ok(mut receiver) = slot.receiver.try_lock() else {
                return true;
            };
            receiver.take();
            tracing::info!(
                resource = self.resource.plural,
                lag_bytes = lag,
                "closed a watch that fell too far behind; its client resumes from the last change it read"
            );
            false
        });
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
        Some(self.expect_parts(key, parts, stored))
    }

    /// [`ResourceCache::expect`] of a write made from `base` (the entry it
    /// changes) that keeps its namespace, name and labels and changes only
    /// the selectable fields in `changed`: its entry is `base`'s, patched,
    /// so the object need not be decoded.
    pub fn expect_derived(
        &self,
        key: &str,
        base: &Cached,
        changed: &[(&str, &str)],
        stored: Arc<StoredJson>,
    ) -> Expectation {
        let mut fields = base.fields.clone();
        for (field, value) in changed {
            fields.insert((*field).to_string(), (*value).to_string());
        }
        let parts = Parts {
            namespace: base.namespace.clone(),
            name: base.name.clone(),
            labels: base.labels.clone(),
            fields,
        };
        self.expect_parts(key, parts, stored)
    }

    fn expect_parts(&self, key: &str, parts: Parts, stored: Arc<StoredJson>) -> Expectation {
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
        Expectation {
            key: key.to_string(),
            ticket,
        }
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
            self.budget
                .used
                .fetch_sub(state.history_bytes, Ordering::AcqRel);
            state.history_bytes = 0;
            state.history_floor = revision;
            state.ready = true;
            self.publish_oldest(&state);
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
        let mut sent = None;
        if let Some(change) = change {
            let bytes = change_bytes(&change);
            state.history_bytes += bytes;
            self.budget.used.fetch_add(bytes, Ordering::AcqRel);
            state.history.push_back(change.clone());
            while state.history.len() > self.history_limit {
                self.drop_oldest(&mut state);
            }
            self.publish_oldest(&state);
            // Counted under the lock, as the send: a watcher subscribing
            // under the read lock starts at a count that matches.
            sent = Some(self.sent.fetch_add(bytes as u64, Ordering::AcqRel) + bytes as u64);
            // No receivers is fine: nobody is watching.
            let _ = self.events.send(change);
        }
        drop(state);
        self.rv.send_replace(revision);
        if let Some(sent) = sent
            && sent >= self.next_lag_check.load(Ordering::Acquire)
        {
            self.next_lag_check
                .store(sent + LAG_CHECK_EVERY, Ordering::Release);
            self.close_slow_watchers(sent);
        }
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
    ) -> Result<(Vec<Change>, WatchReceiver, i64), ApiError> {
        let state = self.state.read().await;
        let (receiver, slot) =
            WatchReceiver::new(self.events.subscribe(), self.sent.load(Ordering::Acquire));
        {
            let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
            watchers.push(slot);
            // Forget ended watches now and then, not only at lag checks (a
            // quiet type has none).
            if watchers.len() >= 64 && watchers.len().is_power_of_two() {
                watchers.retain(|w| w.strong_count() > 0);
            }
        }
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
    use berth_core::test_util::{PodWrapper, make_pod};
    use berth_store::KeyValue;
    use serde_json::json;

    const KEY: &str = "/registry/pods/default/web";

    /// Pod `default/web` (labelled `app=web`, Pending) bound to `node`.
    fn web_on(node: &str) -> PodWrapper {
        make_pod()
            .name("web")
            .namespace("default")
            .label("app", "web")
            .node(node)
            .phase("Pending")
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
        let object = web_on("n1").json();
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
        let object = web_on("n1").json();
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
        let (first, second) = (web_on("n1").json(), web_on("n2").json());
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
        let ours = web_on("n1").json();
        let theirs = web_on("n9").json();
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
        let failed = announce(&cache, &web_on("n1").json());
        let next = announce(&cache, &web_on("n2").json());
        cache.withdraw(failed);
        assert_eq!(own_writes(&cache), 1);
        cache.withdraw(next);
        assert_eq!(own_writes(&cache), 0);
    }

    #[tokio::test]
    async fn own_writes_are_bounded_per_key() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        for node in 0..10 {
            announce(&cache, &web_on(&format!("n{node}")).json());
        }
        assert_eq!(own_writes(&cache), OWN_WRITES_PER_KEY);
    }

    #[tokio::test]
    async fn a_stale_write_is_dropped_by_a_later_event_or_a_reload() {
        let cache = ResourceCache::new(&PODS, 100, crate::strategy::selectable_fields);
        let write = announce(&cache, &web_on("n1").json());
        acknowledge(&cache, write, &web_on("n1").json(), 5);
        // Its event never came (say the watch broke): a later event of the
        // same key replaces it with what the store says.
        cache
            .apply(event(EventKind::Deleted, &web_on("n1").json(), 6))
            .await;
        assert_eq!(own_writes(&cache), 0);
        let write = announce(&cache, &web_on("n1").json());
        acknowledge(&cache, write, &web_on("n1").json(), 8);
        announce(&cache, &web_on("n2").json());
        cache.reset(BTreeMap::new(), 9).await;
        assert_eq!(own_writes(&cache), 0, "a reload drops what it may include");
        let write = announce(&cache, &web_on("n1").json());
        acknowledge(&cache, write, &web_on("n1").json(), 9);
        assert_eq!(
            own_writes(&cache),
            0,
            "a write at or below the reload is too late"
        );
    }

    /// A pod whose annotation is `bytes` long, at revision-specific content.
    fn large_pod(bytes: usize, version: usize) -> Value {
        web_on("n1")
            .annotation("big", &format!("{version}-{}", "x".repeat(bytes)))
            .json()
    }

    #[tokio::test]
    async fn many_large_patches_of_one_object_keep_the_history_within_its_byte_budget() {
        const MIB: usize = 1 << 20;
        let limits = CacheLimits {
            history_events: 100_000,
            history_bytes: 4 * MIB,
            watcher_lag_bytes: 64 * MIB,
        };
        let budget = HistoryBudget::new(limits.history_bytes);
        let cache = ResourceCache::with_limits(
            &PODS,
            &limits,
            budget.clone(),
            crate::strategy::selectable_fields,
        );
        let caches = [cache.clone()];
        cache.reset(BTreeMap::new(), 1).await;
        let mut most = 0;
        for version in 0..100 {
            let kind = if version == 0 {
                EventKind::Created
            } else {
                EventKind::Updated
            };
            cache
                .apply(event(
                    kind,
                    &large_pod(MIB / 2, version),
                    2 + version as i64,
                ))
                .await;
            trim_to_budget(&caches).await;
            most = most.max(budget.used());
        }
        assert!(
            most <= limits.history_bytes,
            "the history held {most} bytes, over its budget of {}",
            limits.history_bytes
        );
        let state = cache.state.read().await;
        assert!(
            (6..=8).contains(&state.history.len()),
            "{} events kept",
            state.history.len()
        );
        assert_eq!(state.history_bytes, budget.used());
        let floor = state.history_floor;
        drop(state);
        // The newest events are still there to resume from; older ones 410.
        let resumed = cache.watch_from(Some(floor)).await;
        assert!(
            resumed.is_ok_and(|(replay, _, _)| replay.last().map(|c| c.object.rv) == Some(101))
        );
        let gone = cache.watch_from(Some(floor - 1)).await.err();
        assert_eq!(gone.map(|e| e.code), Some(410));
    }

    #[tokio::test]
    async fn the_budget_drops_the_oldest_events_of_any_type() {
        let limits = CacheLimits {
            history_bytes: 10 * 1024,
            ..CacheLimits::default()
        };
        let budget = HistoryBudget::new(limits.history_bytes);
        let pods = ResourceCache::with_limits(
            &PODS,
            &limits,
            budget.clone(),
            crate::strategy::selectable_fields,
        );
        let nodes = ResourceCache::with_limits(
            &crate::resources::NODES,
            &limits,
            budget.clone(),
            crate::strategy::selectable_fields,
        );
        let caches = [pods.clone(), nodes.clone()];
        pods.reset(BTreeMap::new(), 1).await;
        nodes.reset(BTreeMap::new(), 1).await;
        // Old pod events, then a stream of node events: the pods' go first.
        for rv in 2..5 {
            pods.apply(event(EventKind::Updated, &large_pod(1024, rv), rv as i64))
                .await;
        }
        for rv in 5..30 {
            let mut node = large_pod(1024, rv);
            node["metadata"]["namespace"] = json!("");
            let mut e = event(EventKind::Updated, &node, rv as i64);
            e.kv.key = "/registry/minions/n1".into();
            nodes.apply(e).await;
            trim_to_budget(&caches).await;
        }
        assert!(budget.used() <= limits.history_bytes);
        assert_eq!(pods.state.read().await.history.len(), 0);
        assert!(!nodes.state.read().await.history.is_empty());
    }

    #[tokio::test]
    async fn a_watcher_that_stops_reading_is_closed_once_it_is_too_far_behind() {
        const MIB: usize = 1 << 20;
        let limits = CacheLimits {
            watcher_lag_bytes: 4 * MIB,
            ..CacheLimits::default()
        };
        let cache = ResourceCache::with_limits(
            &PODS,
            &limits,
            HistoryBudget::new(limits.history_bytes),
            crate::strategy::selectable_fields,
        );
        cache.reset(BTreeMap::new(), 1).await;
        let (_, mut reading, _) = cache
            .watch_from(None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (_, mut stuck, _) = cache
            .watch_from(None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for version in 0..16 {
            cache
                .apply(event(
                    EventKind::Updated,
                    &large_pod(MIB / 2, version),
                    2 + version as i64,
                ))
                .await;
            // The reading watcher keeps up.
            assert!(reading.recv().await.is_ok(), "version {version}");
        }
        // 8 MiB behind: closed, and the broadcast keeps nothing for it.
        assert_eq!(stuck.recv().await.err(), Some(Missed::TooSlow));
        assert_eq!(cache.watchers.lock().map(|w| w.len()).unwrap_or(0), 1);
        cache
            .apply(event(EventKind::Updated, &large_pod(10, 99), 100))
            .await;
        assert_eq!(cache.events.len(), 1);
        assert!(reading.recv().await.is_ok());
        assert_eq!(cache.events.len(), 0, "every live receiver read it");
    }
}
