//! client-go's `EventCorrelator` (`tools/record/events_cache.go`), which
//! every recorder of upstream's controllers runs each Event through before
//! writing it:
//! - **aggregation**: once 10 Events of one source, object, type and
//!   reason but different messages came within 10 minutes of each other,
//!   the next ones become one Event "(combined from similar events): …";
//! - **counting**: an Event already written (same key, message included)
//!   is written again as a patch of the first one's `count`,
//!   `lastTimestamp` and `message`, not as a new object;
//! - **spam filter**: a source may write 25 Events about one object at
//!   once, then one every 5 minutes (a token bucket per source and
//!   object); the rest are skipped.
//!
//! So a ReplicaSet that creates 10,000 pods writes 25 Events about it,
//! not 10,000, as with upstream's kube-controller-manager. Each cache
//! holds at most 4,096 keys, least recently used first out, as upstream's.

use std::collections::HashSet;
use std::num::NonZeroUsize;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use lru::LruCache;

/// Keys each cache holds at most (`maxLruCacheEntries`).
const MAX_CACHE_ENTRIES: usize = 4096;
/// Distinct messages of one aggregate key before they are combined
/// (`defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long after the last similar Event a new one starts a fresh count
/// (`defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_INTERVAL: SignedDuration = SignedDuration::from_secs(600);
/// Events a source may write about one object at once (`defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// Tokens the spam filter's bucket gains per second (`defaultSpamQPS`).
pub const SPAM_QPS: f64 = 1.0 / 300.0;
/// The aggregate Event's message prefix (`EventAggregatorByReasonMessageFunc`).
pub const AGGREGATE_MESSAGE_PREFIX: &str = "(combined from similar events): ";

/// What to do with an Event after correlation.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// The spam filter drops it.
    Skip,
    /// A new Event object.
    Create(Event),
    /// The Event was written before (same name): `patch` is the strategic
    /// merge patch that brings it to `event` (count, lastTimestamp,
    /// message); if it is gone, `event` is created instead.
    Patch {
        event: Event,
        patch: serde_json::Value,
    },
}

/// See the module documentation.
pub struct EventCorrelator {
    aggregates: LruCache<String, AggregateRecord>,
    observed: LruCache<String, EventLog>,
    spam: LruCache<String, TokenBucket>,
}

impl Default for EventCorrelator {
    fn default() -> Self {
        EventCorrelator::new()
    }
}

/// `aggregateRecord`: the distinct messages seen under one aggregate key.
struct AggregateRecord {
    local_keys: HashSet<String>,
    last: Timestamp,
}

/// `eventLog`: what was written under one key.
struct EventLog {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
}

/// golang.org/x/time/rate's limiter as client-go's token bucket uses it:
/// full at first, refilled at [`SPAM_QPS`] up to [`SPAM_BURST`].
struct TokenBucket {
    tokens: f64,
    last: Timestamp,
}

impl TokenBucket {
    fn full(now: Timestamp) -> TokenBucket {
        TokenBucket {
            tokens: SPAM_BURST,
            last: now,
        }
    }

    /// `TryAccept`: takes a token if one is there.
    fn try_accept(&mut self, now: Timestamp) -> bool {
        let elapsed = now.duration_since(self.last).as_secs_f64().max(0.0);
        self.tokens = (self.tokens + elapsed * SPAM_QPS).min(SPAM_BURST);
        if now > self.last {
            self.last = now;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The source's component and host, then `parts`, joined without a
/// separator as client-go's keys are.
fn key_of(event: &Event, parts: &[&Option<String>]) -> String {
    let source = event.source.as_ref();
    let mut key = String::new();
    for part in [
        source.and_then(|s| s.component.as_deref()),
        source.and_then(|s| s.host.as_deref()),
    ]
    .into_iter()
    .chain(parts.iter().map(|p| p.as_deref()))
    {
        key.push_str(part.unwrap_or_default());
    }
    key
}

/// `getSpamKey`: source and involved object.
fn spam_key(event: &Event) -> String {
    let o = &event.involved_object;
    key_of(
        event,
        &[&o.kind, &o.namespace, &o.name, &o.uid, &o.api_version],
    )
}

/// `getEventKey`: source, involved object (with its field path), type,
/// reason and message.
fn event_key(event: &Event) -> String {
    let o = &event.involved_object;
    key_of(
        event,
        &[
            &o.kind,
            &o.namespace,
            &o.name,
            &o.field_path,
            &o.uid,
            &o.api_version,
            &event.type_,
            &event.reason,
            &event.message,
        ],
    )
}

/// `EventAggregatorByReasonFunc`: the aggregate key (all but the message
/// and field path) and the local key (the message).
fn aggregate_key(event: &Event) -> (String, String) {
    let o = &event.involved_object;
    let key = key_of(
        event,
        &[
            &o.kind,
            &o.namespace,
            &o.name,
            &o.uid,
            &o.api_version,
            &event.type_,
            &event.reason,
            &event.reporting_component,
            &event.reporting_instance,
        ],
    );
    (key, event.message.clone().unwrap_or_default())
}

impl EventCorrelator {
    pub fn new() -> EventCorrelator {
        let size = NonZeroUsize::new(MAX_CACHE_ENTRIES).unwrap_or(NonZeroUsize::MIN);
        EventCorrelator {
            aggregates: LruCache::new(size),
            observed: LruCache::new(size),
            spam: LruCache::new(size),
        }
    }

    /// `EventCorrelate` at `now`. `stamp` makes an aggregate Event's name
    /// suffix (upstream's `UnixNano` of now).
    pub fn correlate(
        &mut self,
        event: Event,
        now: Timestamp,
        stamp: impl FnOnce() -> i128,
    ) -> Correlated {
        let (event, key) = self.aggregate(event, now, stamp);
        let (event, patch) = self.observe(event, key);
        let spam_key = spam_key(&event);
        let bucket = self
            .spam
            .get_or_insert_mut(spam_key, || TokenBucket::full(now));
        if !bucket.try_accept(now) {
            return Correlated::Skip;
        }
        match patch {
            Some(patch) => Correlated::Patch { event, patch },
            None => Correlated::Create(event),
        }
    }

    /// `EventAggregate`: the Event itself and its full key while fewer than
    /// [`AGGREGATE_MAX_EVENTS`] messages were seen under its aggregate key,
    /// else a new aggregate Event and the aggregate key.
    fn aggregate(
        &mut self,
        event: Event,
        now: Timestamp,
        stamp: impl FnOnce() -> i128,
    ) -> (Event, String) {
        let (aggregate_key, local_key) = aggregate_key(&event);
        let record = self
            .aggregates
            .get_or_insert_mut(aggregate_key.clone(), || AggregateRecord {
                local_keys: HashSet::new(),
                last: now,
            });
        if now.duration_since(record.last) > AGGREGATE_INTERVAL {
            record.local_keys.clear();
        }
        record.local_keys.insert(local_key);
        record.last = now;
        if record.local_keys.len() < AGGREGATE_MAX_EVENTS {
            let key = event_key(&event);
            return (event, key);
        }
        // Upstream pops any one so the set never grows past the maximum.
        if let Some(any) = record.local_keys.iter().next().cloned() {
            record.local_keys.remove(&any);
        }
        let name = format!(
            "{}.{:x}",
            event.involved_object.name.as_deref().unwrap_or_default(),
            stamp()
        );
        let combined = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            message: Some(format!(
                "{AGGREGATE_MESSAGE_PREFIX}{}",
                event.message.as_deref().unwrap_or_default()
            )),
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            source: event.source.clone(),
            involved_object: event.involved_object,
            ..Event::default()
        };
        (combined, aggregate_key)
    }

    /// `eventObserve`: an Event seen before under `key` takes the first
    /// one's name and first timestamp and the next count, and comes with
    /// the patch that writes it (client-go's two-way merge patch against
    /// the Event with no count, message or last timestamp: exactly those
    /// three).
    fn observe(&mut self, mut event: Event, key: String) -> (Event, Option<serde_json::Value>) {
        let mut patch = None;
        if let Some(last) = self.observed.get(&key).filter(|last| last.count > 0) {
            event.metadata.name = last.name.clone();
            event.first_timestamp = last.first_timestamp.clone();
            event.count = Some(last.count.saturating_add(1));
            let mut changed = serde_json::Map::new();
            changed.insert("count".into(), event.count.into());
            if let Some(Ok(last)) = event.last_timestamp.as_ref().map(serde_json::to_value) {
                changed.insert("lastTimestamp".into(), last);
            }
            if let Some(message) = event.message.as_deref().filter(|m| !m.is_empty()) {
                changed.insert("message".into(), message.into());
            }
            patch = Some(serde_json::Value::Object(changed));
        }
        self.observed.put(
            key,
            EventLog {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
            },
        );
        (event, patch)
    }
}

#[cfg(test)]
mod tests;
