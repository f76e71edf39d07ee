//! The watch adapter: a kube-rs watcher's events as [`Change`]s, with the
//! deletions a relist implies filled in.

use std::collections::{HashSet, VecDeque};
use std::pin::Pin;
use std::task::{Context, Poll};

use berth_core::object_key::ObjectKey;
use futures::Stream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::{WatchStreamExt, watcher};
use pin_project_lite::pin_project;
use serde::de::DeserializeOwned;

/// One change to a client's view of one resource type.
#[derive(Debug, Clone, PartialEq)]
pub enum Change<K> {
    /// The object exists as given: add it, or replace what was known.
    Upsert(K),
    /// The object is gone.
    Delete(Gone<K>),
    /// Every object that exists has been upserted since the last (re)list
    /// began, and everything that no longer exists deleted: the view is
    /// complete. Sent after each relist.
    Synced,
}

impl<K> Change<K> {
    /// The same change with each object it carries turned into another
    /// form (shared, unshared, projected).
    pub fn map<T>(self, f: impl Fn(K) -> T) -> Change<T> {
        match self {
            Change::Upsert(object) => Change::Upsert(f(object)),
            Change::Delete(gone) => Change::Delete(Gone {
                key: gone.key,
                uid: gone.uid,
                last: gone.last.map(f),
            }),
            Change::Synced => Change::Synced,
        }
    }
}

/// An object that is gone from the API.
#[derive(Debug, Clone, PartialEq)]
pub struct Gone<K> {
    pub key: ObjectKey,
    /// Its UID as last seen, when it had one.
    pub uid: Option<String>,
    /// Its last state, when the watch saw the deletion; `None` when a
    /// relist found it missing (deleted while nobody watched) or found
    /// another object (another UID) under its name.
    pub last: Option<K>,
}

pin_project! {
    /// The stream returned by [`changes`].
    pub struct Changes<S, K> {
        #[pin]
        events: S,
        // The kind watched, for the logs.
        kind: String,
        // An object's metadata: `Resource::meta`, or through the `Arc` of
        // a shared watch's objects (`crate::shared_watch`).
        meta: fn(&K) -> &ObjectMeta,
        // Every object the client was told exists, with its UID.
        known: Known,
        // The keys a relist in progress has shown.
        relisted: Option<HashSet<ObjectKey>>,
        // Changes decided but not yet handed out.
        ready: VecDeque<Change<K>>,
    }
}

/// One event as the adapter reads it: a watcher's own, or a shared
/// watch's, which also says whether it updates an object the subscriber
/// already knows under the same UID (the hub saw that object; then the
/// bookkeeping has nothing to look up, and skipping it, for every
/// subscriber of every update, is most of a shared watch's cost).
pub trait SourceEvent<K> {
    /// The event, and whether it is such an update.
    fn into_parts(self) -> (watcher::Event<K>, bool);
}

impl<K> SourceEvent<K> for watcher::Event<K> {
    fn into_parts(self) -> (watcher::Event<K>, bool) {
        (self, false)
    }
}

/// Turns a watcher's events into [`Change`]s. Watch errors are logged and
/// skipped: the watcher (with its backoff) retries on its own, and a
/// relist after the error brings the view up to date.
///
/// Deletions implied by a relist come in key order, so a client on a
/// virtual clock sees the same order on every run.
pub fn changes<S, K>(events: S) -> Changes<S, K>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    K: Resource,
    K::DynamicType: Default,
{
    changes_named(events, K::kind(&Default::default()).into_owned())
}

/// [`changes`] of a type known only at run time (`kind` names it in logs).
fn changes_named<S, K>(events: S, kind: String) -> Changes<S, K>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    K: Resource,
{
    changes_with_meta(events, kind, K::meta)
}

/// [`changes`] of objects whose metadata `meta` reads: the one adapter,
/// also for a shared watch's `Arc`'d objects.
pub(crate) fn changes_with_meta<S, K, E>(
    events: S,
    kind: String,
    meta: fn(&K) -> &ObjectMeta,
) -> Changes<S, K>
where
    S: Stream<Item = Result<E, watcher::Error>>,
    E: SourceEvent<K>,
{
    Changes {
        events,
        kind,
        meta,
        known: Known::default(),
        relisted: None,
        ready: VecDeque::new(),
    }
}

/// [`changes`] of a watch of `api` (with `config`'s selectors), retried
/// with kube-rs's default backoff: how a long-running client watches.
pub fn changes_of<K>(
    api: kube::Api<K>,
    config: watcher::Config,
) -> Changes<impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send, K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
{
    changes_of_kind(api, config, &K::kind(&Default::default()))
}

/// [`changes_of`] of a type known only at run time (a `DynamicObject`,
/// or `PartialObjectMeta<DynamicObject>`, whose API asks for metadata
/// only, as upstream's metadata informers do); `kind` names it in logs.
/// For clients that follow every served type, such as the garbage
/// collector.
pub fn changes_of_kind<K>(
    api: kube::Api<K>,
    config: watcher::Config,
    kind: &str,
) -> Changes<impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + use<K>, K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    changes_named(
        watcher::watcher(api, config).default_backoff(),
        kind.to_string(),
    )
}

fn key_and_uid(meta: &ObjectMeta) -> (ObjectKey, Option<String>) {
    (ObjectKey::of_meta(meta), meta.uid.clone())
}

/// The namespace and name of an object, borrowed.
fn names(meta: &ObjectMeta) -> (&str, &str) {
    (
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    )
}

/// Every object a client was told exists, with its UID, by namespace and
/// name: an update of a known object (most events) is looked up by the
/// borrowed names and changes nothing here, so it costs no allocation.
/// Each subscriber of a shared watch keeps one, for every event.
#[derive(Debug, Default)]
struct Known {
    by_namespace: foldhash::HashMap<String, foldhash::HashMap<String, Option<String>>>,
    len: usize,
}

impl Known {
    fn get(&self, namespace: &str, name: &str) -> Option<&Option<String>> {
        self.by_namespace.get(namespace)?.get(name)
    }

    /// Records `uid` for the object (a copy is made only when the object
    /// is new or its UID changed).
    fn insert(&mut self, namespace: &str, name: &str, uid: Option<&str>) {
        if let Some(names) = self.by_namespace.get_mut(namespace) {
            if let Some(known) = names.get_mut(name) {
                if known.as_deref() != uid {
                    *known = uid.map(str::to_string);
                }
                return;
            }
            names.insert(name.to_string(), uid.map(str::to_string));
        } else {
            let mut names = foldhash::HashMap::default();
            names.insert(name.to_string(), uid.map(str::to_string));
            self.by_namespace.insert(namespace.to_string(), names);
        }
        self.len += 1;
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<Option<String>> {
        let names = self.by_namespace.get_mut(namespace)?;
        let uid = names.remove(name)?;
        if names.is_empty() {
            self.by_namespace.remove(namespace);
        }
        self.len -= 1;
        Some(uid)
    }

    fn keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_namespace.iter().flat_map(|(namespace, names)| {
            names
                .keys()
                .map(move |name| (namespace.as_str(), name.as_str()))
        })
    }
}

impl<S, K> Changes<S, K> {
    /// How many objects the client has been told exist.
    pub fn known(&self) -> usize {
        self.known.len
    }
}

/// Decides what one watcher event changes. Pure bookkeeping, kept apart
/// from the stream so the rule reads (and is tested) on its own.
fn apply<K>(
    meta: fn(&K) -> &ObjectMeta,
    known: &mut Known,
    relisted: &mut Option<HashSet<ObjectKey>>,
    ready: &mut VecDeque<Change<K>>,
    (event, known_update): (watcher::Event<K>, bool),
) {
    match event {
        // The source vouches that the object is known under this UID, and
        // nothing is being relisted: the bookkeeping would change nothing.
        watcher::Event::Apply(object) if known_update && relisted.is_none() => {
            ready.push_back(Change::Upsert(object));
        }
        watcher::Event::Init => *relisted = Some(HashSet::new()),
        watcher::Event::InitApply(object) | watcher::Event::Apply(object) => {
            let object_meta = meta(&object);
            let (namespace, name) = names(object_meta);
            let uid = object_meta.uid.as_deref();
            if let Some(seen) = relisted.as_mut() {
                seen.insert(ObjectKey::new(namespace, name));
            }
            // Another object under a known name: the one known is gone.
            if let Some(Some(known_uid)) = known.get(namespace, name)
                && let Some(uid) = uid
                && known_uid != uid
            {
                ready.push_back(Change::Delete(Gone {
                    key: ObjectKey::new(namespace, name),
                    uid: Some(known_uid.clone()),
                    last: None,
                }));
            }
            known.insert(namespace, name, uid);
            ready.push_back(Change::Upsert(object));
        }
        watcher::Event::InitDone => {
            let seen = relisted.take().unwrap_or_default();
            let mut missing: Vec<ObjectKey> = known
                .keys()
                .map(|(namespace, name)| ObjectKey::new(namespace, name))
                .filter(|key| !seen.contains(key))
                .collect();
            missing.sort();
            for key in missing {
                let uid = known.remove(&key.namespace, &key.name).flatten();
                ready.push_back(Change::Delete(Gone {
                    key,
                    uid,
                    last: None,
                }));
            }
            ready.push_back(Change::Synced);
        }
        watcher::Event::Delete(object) => {
            let (key, uid) = key_and_uid(meta(&object));
            known.remove(&key.namespace, &key.name);
            ready.push_back(Change::Delete(Gone {
                key,
                uid,
                last: Some(object),
            }));
        }
    }
}

impl<S, K, E> Stream for Changes<S, K>
where
    S: Stream<Item = Result<E, watcher::Error>>,
    E: SourceEvent<K>,
{
    type Item = Change<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Change<K>>> {
        let mut this = self.project();
        loop {
            if let Some(change) = this.ready.pop_front() {
                return Poll::Ready(Some(change));
            }
            match this.events.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    apply(
                        *this.meta,
                        this.known,
                        this.relisted,
                        this.ready,
                        event.into_parts(),
                    );
                }
                Poll::Ready(Some(Err(error))) => {
                    tracing::warn!(kind = %this.kind, %error, "watch failed; retrying");
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use berth_core::test_util::make_pod;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Pod;
    use kube::runtime::watcher::Event;

    use super::*;

    /// Pod `default/name` with UID `uid`.
    fn pod_with_uid(name: &str, uid: &str) -> Pod {
        make_pod().namespace("default").name(name).uid(uid).obj()
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    fn gone(name: &str, uid: &str, last: Option<Pod>) -> Change<Pod> {
        Change::Delete(Gone {
            key: key(name),
            uid: Some(uid.into()),
            last,
        })
    }

    async fn run(events: Vec<Event<Pod>>) -> Vec<Change<Pod>> {
        changes(futures::stream::iter(events.into_iter().map(Ok)))
            .collect()
            .await
    }

    #[tokio::test]
    async fn watcher_events_become_changes() {
        struct Case {
            name: &'static str,
            events: Vec<Event<Pod>>,
            want: Vec<Change<Pod>>,
        }
        let cases = [
            Case {
                name: "the first list upserts each object, then marks the view synced",
                events: vec![
                    Event::Init,
                    Event::InitApply(pod_with_uid("a", "1")),
                    Event::InitApply(pod_with_uid("b", "2")),
                    Event::InitDone,
                ],
                want: vec![
                    Change::Upsert(pod_with_uid("a", "1")),
                    Change::Upsert(pod_with_uid("b", "2")),
                    Change::Synced,
                ],
            },
            Case {
                name: "watch events after the list pass through, deletions with the last state",
                events: vec![
                    Event::Init,
                    Event::InitDone,
                    Event::Apply(pod_with_uid("a", "1")),
                    Event::Delete(pod_with_uid("a", "1")),
                ],
                want: vec![
                    Change::Synced,
                    Change::Upsert(pod_with_uid("a", "1")),
                    gone("a", "1", Some(pod_with_uid("a", "1"))),
                ],
            },
            Case {
                name: "a relist deletes, in key order, what it no longer shows",
                events: vec![
                    Event::Init,
                    Event::InitApply(pod_with_uid("c", "3")),
                    Event::InitApply(pod_with_uid("a", "1")),
                    Event::InitApply(pod_with_uid("b", "2")),
                    Event::InitDone,
                    Event::Init,
                    Event::InitApply(pod_with_uid("b", "2")),
                    Event::InitDone,
                ],
                want: vec![
                    Change::Upsert(pod_with_uid("c", "3")),
                    Change::Upsert(pod_with_uid("a", "1")),
                    Change::Upsert(pod_with_uid("b", "2")),
                    Change::Synced,
                    Change::Upsert(pod_with_uid("b", "2")),
                    gone("a", "1", None),
                    gone("c", "3", None),
                    Change::Synced,
                ],
            },
            Case {
                name: "an object seen by the watch during a relist is not deleted by it",
                events: vec![
                    Event::Init,
                    Event::InitDone,
                    Event::Apply(pod_with_uid("a", "1")),
                    Event::Init,
                    Event::InitApply(pod_with_uid("a", "1")),
                    Event::InitDone,
                ],
                want: vec![
                    Change::Synced,
                    Change::Upsert(pod_with_uid("a", "1")),
                    Change::Upsert(pod_with_uid("a", "1")),
                    Change::Synced,
                ],
            },
            Case {
                name: "another object under a known name deletes the one known first",
                events: vec![
                    Event::Init,
                    Event::InitApply(pod_with_uid("a", "1")),
                    Event::InitDone,
                    Event::Init,
                    Event::InitApply(pod_with_uid("a", "9")),
                    Event::InitDone,
                ],
                want: vec![
                    Change::Upsert(pod_with_uid("a", "1")),
                    Change::Synced,
                    gone("a", "1", None),
                    Change::Upsert(pod_with_uid("a", "9")),
                    Change::Synced,
                ],
            },
            Case {
                name: "a deletion the watch saw is not repeated by the next relist",
                events: vec![
                    Event::Init,
                    Event::InitApply(pod_with_uid("a", "1")),
                    Event::InitDone,
                    Event::Delete(pod_with_uid("a", "1")),
                    Event::Init,
                    Event::InitDone,
                ],
                want: vec![
                    Change::Upsert(pod_with_uid("a", "1")),
                    Change::Synced,
                    gone("a", "1", Some(pod_with_uid("a", "1"))),
                    Change::Synced,
                ],
            },
        ];
        for case in cases {
            assert_eq!(run(case.events).await, case.want, "{}", case.name);
        }
    }

    #[tokio::test]
    async fn watch_errors_are_skipped() {
        let events = vec![
            Ok(Event::Init),
            Err(watcher::Error::NoResourceVersion),
            Ok(Event::InitApply(pod_with_uid("a", "1"))),
            Ok(Event::InitDone),
        ];
        let got: Vec<Change<Pod>> = changes(futures::stream::iter(events)).collect().await;
        assert_eq!(
            got,
            vec![Change::Upsert(pod_with_uid("a", "1")), Change::Synced]
        );
    }
}
