//! One watch of a type for every client of a process: client-go's shared
//! informer.
//!
//! Inside `berth server` the controllers and the scheduler follow every Pod
//! and Node. Each with a watch of its own, every pod change was sent and
//! decoded once per client. A [`SharedWatch`] runs one kube-rs watcher
//! (resourceVersion resume, bookmarks, relist on 410 and backoff are its
//! own), decodes each object once, and hands the same `Arc` to every
//! subscriber. A subscriber reads the watcher's events through the one
//! adapter ([`crate::watch::changes`]'s bookkeeping), so it sees what a
//! watch of its own would have shown: upserts, deletions (those a relist
//! implies filled in per subscriber) and `Synced` after each list.
//!
//! The hub keeps the type's current objects, as a reflector's store does.
//! A list (the first, or a relist) is folded in whole and handed to the
//! subscribers as one message when it is complete, so a list of 100,000
//! objects takes one place in a subscriber's queue, not 100,000; a
//! subscriber that joins late starts from the current objects as from a
//! list, without a request to the API.
//!
//! A slow subscriber never holds the others up: each has a queue of at
//! most `capacity` messages, filled without waiting. One whose queue is
//! full is cut off; once it has read what its queue still holds, it is
//! given the hub's current objects as a list (as after a 410: the
//! deletions it missed come out of its own bookkeeping) and follows the
//! live events again. So it holds at most `capacity` messages, however far
//! behind it is, and loses nothing but intermediate states.
//!
//! The watch starts with the first subscription and stops (its objects
//! dropped) at the first event after the last subscription is gone, so the
//! controllers of a lost lease do not leave a watch behind.

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use berth_core::object_key::ObjectKey;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use crate::watch::{Changes, SourceEvent, changes_with_meta};

/// How many messages a subscriber may have unread before it is cut off and
/// relisted from the hub. A message is an `Arc` (or a whole list), so a
/// full queue is about a megabyte; 10,000 pods created and bound in one
/// burst fit.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// A watcher's events, as the hub reads them.
pub type Events<K> = BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>;

type Shared<K> = watcher::Event<Arc<K>>;

/// A watch event after a list (`Apply` or `Delete`) as a subscriber
/// reads it, with whether it updates an object the hub already held under
/// the same UID, which the subscriber, having read every message before
/// it, knows too (see [`crate::watch::SourceEvent`]).
pub struct SharedEvent<K> {
    event: Shared<K>,
    known_update: bool,
}

impl<K> Clone for SharedEvent<K> {
    fn clone(&self) -> Self {
        SharedEvent {
            event: self.event.clone(),
            known_update: self.known_update,
        }
    }
}

impl<K> SourceEvent<Arc<K>> for SharedEvent<K> {
    fn into_parts(self) -> (Shared<K>, bool) {
        (self.event, self.known_update)
    }
}

impl<K> SharedEvent<K> {
    /// An event read as a watch of its own would have shown it (a list's).
    fn plain(event: Shared<K>) -> SharedEvent<K> {
        SharedEvent {
            event,
            known_update: false,
        }
    }
}

/// What a subscriber's queue carries.
enum Message<K> {
    /// A watch event after a list.
    Event(SharedEvent<K>),
    /// A complete list, in key order.
    Listed(Arc<Vec<Arc<K>>>),
}

/// See the module documentation. Cloning it shares the same hub.
pub struct SharedWatch<K> {
    hub: Arc<Hub<K>>,
}

impl<K> Clone for SharedWatch<K> {
    fn clone(&self) -> Self {
        SharedWatch {
            hub: self.hub.clone(),
        }
    }
}

struct Hub<K> {
    kind: String,
    capacity: usize,
    // Opens the watch (again after the hub stopped).
    source: Box<dyn Fn() -> Events<K> + Send + Sync>,
    state: Mutex<HubState<K>>,
    // Subscriptions alive; the watch stops when none is.
    live: AtomicUsize,
    decoded: AtomicU64,
    cut_off: AtomicU64,
}

struct HubState<K> {
    // The objects as the last list and the events since show them.
    objects: BTreeMap<ObjectKey, Arc<K>>,
    // A list in progress: what it has shown so far.
    relist: Option<BTreeMap<ObjectKey, Arc<K>>>,
    // Whether a list has completed since the watch started.
    synced: bool,
    // Whether a task runs the watch.
    running: bool,
    subscribers: Vec<Subscriber<K>>,
}

struct Subscriber<K> {
    queue: mpsc::Sender<Message<K>>,
    // Set before its queue is dropped for being full, so it rejoins
    // rather than ends.
    cut_off: Arc<AtomicBool>,
}

fn lock<K>(state: &Mutex<HubState<K>>) -> MutexGuard<'_, HubState<K>> {
    // A poisoned lock means a panic elsewhere; the maps are still whole
    // (every change to them is a single insert, removal or swap).
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn meta_of_shared<K: Resource>(object: &Arc<K>) -> &ObjectMeta {
    object.as_ref().meta()
}

impl<K> SharedWatch<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    /// The shared watch of `api` (with `config`'s selectors), retried with
    /// kube-rs's default backoff, as [`crate::changes_of`] watches.
    pub fn new(api: kube::Api<K>, config: watcher::Config) -> SharedWatch<K> {
        SharedWatch::from_source(
            K::kind(&Default::default()).into_owned(),
            DEFAULT_CAPACITY,
            move || {
                watcher::watcher(api.clone(), config.clone())
                    .default_backoff()
                    .boxed()
            },
        )
    }
}

impl<K> SharedWatch<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// A hub over any source of watcher events (`kind` names it in logs;
    /// each subscriber holds at most `capacity` unread messages).
    pub fn from_source(
        kind: String,
        capacity: usize,
        source: impl Fn() -> Events<K> + Send + Sync + 'static,
    ) -> SharedWatch<K> {
        SharedWatch {
            hub: Arc::new(Hub {
                kind,
                capacity: capacity.max(1),
                source: Box::new(source),
                state: Mutex::new(HubState {
                    objects: BTreeMap::new(),
                    relist: None,
                    synced: false,
                    running: false,
                    subscribers: Vec::new(),
                }),
                live: AtomicUsize::new(0),
                decoded: AtomicU64::new(0),
                cut_off: AtomicU64::new(0),
            }),
        }
    }

    /// A new subscriber's changes, through the one adapter: what a watch
    /// of its own would show. Starts the watch if none runs.
    pub fn changes(&self) -> Changes<Subscription<K>, Arc<K>> {
        self.hub.live.fetch_add(1, Ordering::SeqCst);
        let (queue, backlog, cut_off) = self.hub.join();
        let subscription = Subscription {
            hub: self.hub.clone(),
            queue,
            backlog,
            cut_off,
        };
        changes_with_meta(subscription, self.hub.kind.clone(), meta_of_shared::<K>)
    }

    /// How many objects the watch has decoded (each once, whatever the
    /// number of subscribers).
    pub fn decoded(&self) -> u64 {
        self.hub.decoded.load(Ordering::Relaxed)
    }

    /// How many times a subscriber was cut off for a full queue.
    pub fn cut_off(&self) -> u64 {
        self.hub.cut_off.load(Ordering::Relaxed)
    }
}

/// A list as a subscriber reads it: the watcher's own events.
fn list_events<K>(objects: &[Arc<K>]) -> VecDeque<Shared<K>> {
    let mut events = VecDeque::with_capacity(objects.len() + 2);
    events.push_back(watcher::Event::Init);
    events.extend(objects.iter().cloned().map(watcher::Event::InitApply));
    events.push_back(watcher::Event::InitDone);
    events
}

type Joined<K> = (
    mpsc::Receiver<Message<K>>,
    VecDeque<Shared<K>>,
    Arc<AtomicBool>,
);

impl<K> Hub<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// Registers a subscriber: its queue, and what it must read first (the
    /// objects of the last complete list and the events since, as a list).
    /// Under the lock, so no event falls between the two.
    fn join(self: &Arc<Self>) -> Joined<K> {
        let (sender, receiver) = mpsc::channel(self.capacity);
        let cut_off = Arc::new(AtomicBool::new(false));
        let mut state = lock(&self.state);
        let backlog = if state.synced {
            let objects: Vec<Arc<K>> = state.objects.values().cloned().collect();
            list_events(&objects)
        } else {
            // The first list is in progress: it comes whole when done.
            VecDeque::new()
        };
        state.subscribers.push(Subscriber {
            queue: sender,
            cut_off: cut_off.clone(),
        });
        if !state.running {
            state.running = true;
            tokio::spawn(self.clone().run());
        }
        (receiver, backlog, cut_off)
    }

    /// The one watch: each event decoded once, folded into the objects and
    /// offered to every subscriber.
    async fn run(self: Arc<Self>) {
        tracing::debug!(kind = %self.kind, "shared watch started");
        let mut events = (self.source)();
        loop {
            let event = match events.next().await {
                Some(Ok(event)) => event,
                Some(Err(error)) => {
                    tracing::warn!(kind = %self.kind, %error, "watch failed; retrying");
                    continue;
                }
                None => break,
            };
            let event = self.share(event);
            let mut state = lock(&self.state);
            if self.live.load(Ordering::SeqCst) == 0 {
                tracing::debug!(kind = %self.kind, "shared watch stopped: no subscribers");
                state.stop();
                return;
            }
            if let Some(message) = state.fold(event) {
                self.offer(&mut state, message);
            }
        }
        // The source ended (a test's finite stream): so do the subscribers.
        lock(&self.state).stop();
    }

    /// Offers `message` to every subscriber, cutting off those whose queue
    /// is full.
    fn offer(&self, state: &mut HubState<K>, message: Message<K>) {
        state.subscribers.retain(|subscriber| {
            let copy = match &message {
                Message::Event(event) => Message::Event(event.clone()),
                Message::Listed(objects) => Message::Listed(objects.clone()),
            };
            match subscriber.queue.try_send(copy) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.cut_off.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        kind = %self.kind,
                        capacity = self.capacity,
                        "a subscriber of the shared watch fell behind; relisting it from the shared objects"
                    );
                    subscriber.cut_off.store(true, Ordering::SeqCst);
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }

    fn share(&self, event: watcher::Event<K>) -> Shared<K> {
        let decoded = |object: K| {
            self.decoded.fetch_add(1, Ordering::Relaxed);
            Arc::new(object)
        };
        match event {
            watcher::Event::Init => watcher::Event::Init,
            watcher::Event::InitApply(object) => watcher::Event::InitApply(decoded(object)),
            watcher::Event::InitDone => watcher::Event::InitDone,
            watcher::Event::Apply(object) => watcher::Event::Apply(decoded(object)),
            watcher::Event::Delete(object) => watcher::Event::Delete(decoded(object)),
        }
    }
}

impl<K: Resource> HubState<K> {
    /// Folds `event` into the objects, as a reflector's store does; what
    /// the subscribers are to be sent (nothing until a list completes).
    fn fold(&mut self, event: Shared<K>) -> Option<Message<K>> {
        let key = |object: &Arc<K>| ObjectKey::of_meta(object.as_ref().meta());
        match event {
            watcher::Event::Init => {
                self.relist = Some(BTreeMap::new());
                None
            }
            watcher::Event::InitApply(object) => {
                self.relist
                    .get_or_insert_default()
                    .insert(key(&object), object);
                None
            }
            watcher::Event::InitDone => {
                self.objects = self.relist.take().unwrap_or_default();
                self.synced = true;
                let listed: Vec<Arc<K>> = self.objects.values().cloned().collect();
                Some(Message::Listed(Arc::new(listed)))
            }
            watcher::Event::Apply(object) => {
                let uid = object.as_ref().meta().uid.as_deref();
                let known_update = match self.objects.insert(key(&object), object.clone()) {
                    Some(old) => uid.is_some() && old.as_ref().meta().uid.as_deref() == uid,
                    None => false,
                };
                Some(Message::Event(SharedEvent {
                    event: watcher::Event::Apply(object),
                    known_update,
                }))
            }
            watcher::Event::Delete(object) => {
                self.objects.remove(&key(&object));
                Some(Message::Event(SharedEvent::plain(watcher::Event::Delete(
                    object,
                ))))
            }
        }
    }

    fn stop(&mut self) {
        self.running = false;
        self.synced = false;
        self.relist = None;
        self.objects.clear();
        self.subscribers.clear();
    }
}

/// One subscriber's events: what it must read first, then its queue; cut
/// off, it rejoins (see the module documentation).
pub struct Subscription<K> {
    hub: Arc<Hub<K>>,
    queue: mpsc::Receiver<Message<K>>,
    backlog: VecDeque<Shared<K>>,
    cut_off: Arc<AtomicBool>,
}

impl<K> Drop for Subscription<K> {
    fn drop(&mut self) {
        self.hub.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<K> Stream for Subscription<K>
where
    K: Resource + Send + Sync + 'static,
{
    type Item = Result<SharedEvent<K>, watcher::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                return Poll::Ready(Some(Ok(SharedEvent::plain(event))));
            }
            match self.queue.poll_recv(cx) {
                Poll::Ready(Some(Message::Event(event))) => return Poll::Ready(Some(Ok(event))),
                Poll::Ready(Some(Message::Listed(objects))) => {
                    self.backlog = list_events(&objects);
                }
                Poll::Ready(None) if self.cut_off.load(Ordering::SeqCst) => {
                    let (queue, backlog, cut_off) = self.hub.join();
                    self.queue = queue;
                    self.backlog = backlog;
                    self.cut_off = cut_off;
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use berth_core::test_util::make_pod;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Pod;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::watch::{Change, Gone};

    type Feed = mpsc::UnboundedSender<Result<Event<Pod>, watcher::Error>>;

    fn pod(name: &str, uid: &str) -> Pod {
        make_pod().namespace("default").name(name).uid(uid).obj()
    }

    /// A hub whose watch is fed by the test, counting how often the watch
    /// was opened (each opening after the first is a new feed).
    struct Fixture {
        watch: SharedWatch<Pod>,
        feeds: Arc<Mutex<Vec<Feed>>>,
        opened: Arc<AtomicUsize>,
    }

    impl Fixture {
        fn new(capacity: usize) -> Fixture {
            let feeds: Arc<Mutex<Vec<Feed>>> = Arc::default();
            let opened = Arc::new(AtomicUsize::new(0));
            let (f, o) = (feeds.clone(), opened.clone());
            let watch = SharedWatch::from_source("Pod".into(), capacity, move || {
                o.fetch_add(1, Ordering::SeqCst);
                let (sender, receiver) = mpsc::unbounded_channel();
                f.lock().unwrap_or_else(|p| p.into_inner()).push(sender);
                futures::stream::unfold(receiver, |mut r| async move {
                    r.recv().await.map(|event| (event, r))
                })
                .boxed()
            });
            Fixture {
                watch,
                feeds,
                opened,
            }
        }

        /// Sends `events` into the latest watch, then lets the hub run.
        async fn send(&self, events: Vec<Event<Pod>>) {
            tokio::task::yield_now().await;
            let feed = self
                .feeds
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .last()
                .cloned();
            let Some(feed) = feed else {
                panic!("the hub has not opened its watch");
            };
            for event in events {
                assert!(feed.send(Ok(event)).is_ok(), "the hub dropped its watch");
            }
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
        }

        fn opened(&self) -> usize {
            self.opened.load(Ordering::SeqCst)
        }
    }

    async fn next_n<S: Stream<Item = Change<Arc<Pod>>> + Unpin>(
        stream: &mut S,
        n: usize,
    ) -> Vec<Change<Arc<Pod>>> {
        let mut got = Vec::new();
        for _ in 0..n {
            match stream.next().await {
                Some(change) => got.push(change),
                None => break,
            }
        }
        got
    }

    /// A change with its object unshared, to compare with a want.
    fn plain(change: &Change<Arc<Pod>>) -> Change<Pod> {
        change.clone().map(|object| object.as_ref().clone())
    }

    fn gone(name: &str, uid: &str) -> Change<Pod> {
        Change::Delete(Gone {
            key: ObjectKey::new("default", name),
            uid: Some(uid.into()),
            last: None,
        })
    }

    fn listed(names: &[(&str, &str)]) -> Vec<Event<Pod>> {
        let mut events = vec![Event::Init];
        events.extend(names.iter().map(|(n, u)| Event::InitApply(pod(n, u))));
        events.push(Event::InitDone);
        events
    }

    #[tokio::test(start_paused = true)]
    async fn two_subscribers_get_the_same_decoded_objects_from_one_watch() {
        let fx = Fixture::new(DEFAULT_CAPACITY);
        let mut first = Box::pin(fx.watch.changes());
        let mut second = Box::pin(fx.watch.changes());
        let mut events = listed(&[("a", "1"), ("b", "2")]);
        events.push(Event::Apply(pod("c", "3")));
        events.push(Event::Delete(pod("a", "1")));
        fx.send(events).await;
        let want = vec![
            Change::Upsert(pod("a", "1")),
            Change::Upsert(pod("b", "2")),
            Change::Synced,
            Change::Upsert(pod("c", "3")),
            Change::Delete(Gone {
                key: ObjectKey::new("default", "a"),
                uid: Some("1".into()),
                last: Some(pod("a", "1")),
            }),
        ];
        let got_first = next_n(&mut first, want.len()).await;
        let got_second = next_n(&mut second, want.len()).await;
        assert_eq!(got_first.iter().map(plain).collect::<Vec<_>>(), want);
        assert_eq!(got_second.iter().map(plain).collect::<Vec<_>>(), want);
        for (a, b) in got_first.iter().zip(&got_second) {
            if let (Change::Upsert(a), Change::Upsert(b)) = (a, b) {
                assert!(Arc::ptr_eq(a, b), "one decoded object, shared");
            }
        }
        assert_eq!(fx.opened(), 1, "one watch for both");
        assert_eq!(fx.watch.decoded(), 4, "each object decoded once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_subscriber_is_cut_off_and_relisted_without_holding_up_the_others() {
        let fx = Fixture::new(2);
        let mut fast = Box::pin(fx.watch.changes());
        let mut slow = Box::pin(fx.watch.changes());
        // The fast one reads each event as it comes; the slow one reads
        // nothing until the end.
        let mut fast_got = Vec::new();
        fx.send(listed(&[("a", "1")])).await;
        fast_got.extend(next_n(&mut fast, 2).await);
        for event in [
            Event::Apply(pod("b", "2")),
            Event::Apply(pod("c", "3")),
            Event::Delete(pod("a", "1")),
            Event::Apply(pod("d", "4")),
        ] {
            fx.send(vec![event]).await;
            fast_got.extend(next_n(&mut fast, 1).await);
        }
        assert_eq!(fast_got.len(), 6, "the fast subscriber got every change");
        assert_eq!(fx.watch.cut_off(), 1, "the slow one was cut off once");
        // The slow one reads its two queued messages (the list, b), then
        // the shared objects as a relist: the final view, with the
        // deletion it missed.
        let slow_got = next_n(&mut slow, 8).await;
        assert_eq!(
            slow_got.iter().map(plain).collect::<Vec<_>>(),
            vec![
                Change::Upsert(pod("a", "1")),
                Change::Synced,
                Change::Upsert(pod("b", "2")),
                Change::Upsert(pod("b", "2")),
                Change::Upsert(pod("c", "3")),
                Change::Upsert(pod("d", "4")),
                gone("a", "1"),
                Change::Synced,
            ]
        );
        // And it follows the live events again.
        fx.send(vec![Event::Apply(pod("e", "5"))]).await;
        assert_eq!(
            next_n(&mut slow, 1)
                .await
                .iter()
                .map(plain)
                .collect::<Vec<_>>(),
            vec![Change::Upsert(pod("e", "5"))]
        );
        assert_eq!(fx.opened(), 1, "relisted from the hub, not the API");
    }

    #[tokio::test(start_paused = true)]
    async fn a_relist_reaches_every_subscriber_with_the_deletions_it_implies() {
        let fx = Fixture::new(DEFAULT_CAPACITY);
        let mut first = Box::pin(fx.watch.changes());
        let mut second = Box::pin(fx.watch.changes());
        fx.send(listed(&[("a", "1"), ("b", "2")])).await;
        // The watch expired (410) and the watcher listed again: a was
        // deleted meanwhile.
        fx.send(listed(&[("b", "2")])).await;
        let want = vec![
            Change::Upsert(pod("a", "1")),
            Change::Upsert(pod("b", "2")),
            Change::Synced,
            Change::Upsert(pod("b", "2")),
            gone("a", "1"),
            Change::Synced,
        ];
        for stream in [&mut first, &mut second] {
            let got = next_n(stream, want.len()).await;
            assert_eq!(got.iter().map(plain).collect::<Vec<_>>(), want);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_subscriber_starts_from_the_shared_objects() {
        let fx = Fixture::new(DEFAULT_CAPACITY);
        let mut first = Box::pin(fx.watch.changes());
        fx.send(listed(&[("a", "1")])).await;
        fx.send(vec![Event::Apply(pod("b", "2"))]).await;
        assert_eq!(next_n(&mut first, 3).await.len(), 3);
        let mut late = Box::pin(fx.watch.changes());
        assert_eq!(
            next_n(&mut late, 3)
                .await
                .iter()
                .map(plain)
                .collect::<Vec<_>>(),
            vec![
                Change::Upsert(pod("a", "1")),
                Change::Upsert(pod("b", "2")),
                Change::Synced,
            ]
        );
        assert_eq!(fx.opened(), 1);
        assert_eq!(fx.watch.decoded(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn the_watch_stops_after_its_last_subscriber_and_restarts_with_the_next() {
        let fx = Fixture::new(DEFAULT_CAPACITY);
        let first = fx.watch.changes();
        fx.send(listed(&[("a", "1")])).await;
        drop(first);
        // The next event finds nobody: the watch stops, its objects go.
        fx.send(vec![Event::Apply(pod("b", "2"))]).await;
        let mut again = Box::pin(fx.watch.changes());
        fx.send(listed(&[("b", "2")])).await;
        assert_eq!(fx.opened(), 2, "a new watch for the new subscriber");
        assert_eq!(
            next_n(&mut again, 2)
                .await
                .iter()
                .map(plain)
                .collect::<Vec<_>>(),
            vec![Change::Upsert(pod("b", "2")), Change::Synced]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn subscribers_end_when_the_watch_ends() {
        let fx = Fixture::new(DEFAULT_CAPACITY);
        let mut first = Box::pin(fx.watch.changes());
        fx.send(listed(&[("a", "1")])).await;
        fx.feeds.lock().unwrap_or_else(|p| p.into_inner()).clear();
        assert_eq!(next_n(&mut first, 10).await.len(), 2);
    }

    /// One step of a random history: the watch's events, or a read.
    #[derive(Debug, Clone)]
    enum Step {
        /// Pod `name` (one of five) applied with UID `uid` (one of two):
        /// an update, a new pod, or another pod under a known name.
        Apply { name: usize, uid: usize },
        /// Pod `name` deleted, if the watch holds it.
        Delete { name: usize },
        /// The watch listed again (after a 410): these pods exist.
        Relist { pods: Vec<(usize, usize)> },
        /// The slow subscriber reads up to `n` changes.
        SlowReads { n: usize },
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0..5usize, 0..2usize).prop_map(|(name, uid)| Step::Apply { name, uid }),
            2 => (0..5usize).prop_map(|name| Step::Delete { name }),
            1 => proptest::collection::vec((0..5usize, 0..2usize), 0..5)
                .prop_map(|pods| Step::Relist { pods }),
            2 => (0..4usize).prop_map(|n| Step::SlowReads { n }),
        ]
    }

    /// A subscriber's view, folded from its changes; a deletion must name
    /// the UID the view holds (the bookkeeping is never stale).
    #[derive(Default)]
    struct View(BTreeMap<String, Pod>);

    impl View {
        fn fold(&mut self, change: &Change<Arc<Pod>>) -> Result<(), String> {
            match change {
                Change::Upsert(pod) => {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    self.0.insert(name, pod.as_ref().clone());
                }
                Change::Delete(gone) => {
                    let held = self.0.remove(&gone.key.name);
                    let held_uid = held.and_then(|pod| pod.metadata.uid);
                    if held_uid != gone.uid {
                        return Err(format!(
                            "deleted {} as uid {:?}, held {held_uid:?}",
                            gone.key.name, gone.uid
                        ));
                    }
                }
                Change::Synced => {}
            }
            Ok(())
        }
    }

    /// Folds what `stream` has ready into `view`, which must then be the
    /// watch's, with the stream knowing as many objects as the view holds.
    fn catch_up(
        who: &str,
        stream: &mut Pin<Box<Changes<Subscription<Pod>, Arc<Pod>>>>,
        view: &mut View,
        watch: &BTreeMap<String, Pod>,
    ) -> Result<(), String> {
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        while let Poll::Ready(Some(change)) = stream.as_mut().poll_next(&mut cx) {
            view.fold(&change)?;
        }
        if &view.0 != watch {
            return Err(format!(
                "the {who} view {:?} is not the watch's {:?}",
                view.0.keys(),
                watch.keys()
            ));
        }
        if stream.known() != view.0.len() {
            return Err(format!(
                "{who} knows {} objects, its view holds {}",
                stream.known(),
                view.0.len()
            ));
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Updates the hub vouches for skip a subscriber's bookkeeping;
        /// whatever the history (names reused under new UIDs, deletions,
        /// relists, a subscriber cut off and relisted), each subscriber's
        /// view is the watch's, every deletion names the UID it held, and
        /// each one's count of known objects is its view's size.
        #[test]
        fn every_subscriber_follows_the_watch_exactly(
            steps in proptest::collection::vec(step(), 1..60)
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build();
            let Ok(runtime) = runtime else { panic!("no runtime") };
            let outcome: Result<(), String> = runtime.block_on(async move {
                let name = |i: usize| ["a", "b", "c", "d", "e"][i];
                let uid = |name: usize, uid: usize| format!("{name}-{uid}");
                let fx = Fixture::new(3);
                let mut fast = Box::pin(fx.watch.changes());
                let mut slow = Box::pin(fx.watch.changes());
                let (mut fast_view, mut slow_view) = (View::default(), View::default());
                let mut watch: BTreeMap<String, Pod> = BTreeMap::new();
                fx.send(listed(&[])).await;
                for step in steps {
                    match step {
                        Step::Apply { name: n, uid: u } => {
                            let p = pod(name(n), &uid(n, u));
                            watch.insert(name(n).to_string(), p.clone());
                            fx.send(vec![Event::Apply(p)]).await;
                        }
                        Step::Delete { name: n } => {
                            if let Some(p) = watch.remove(name(n)) {
                                fx.send(vec![Event::Delete(p)]).await;
                            }
                        }
                        Step::Relist { pods } => {
                            watch.clear();
                            let mut events = vec![Event::Init];
                            for (n, u) in pods {
                                let p = pod(name(n), &uid(n, u));
                                watch.insert(name(n).to_string(), p.clone());
                                events.push(Event::InitApply(p));
                            }
                            events.push(Event::InitDone);
                            fx.send(events).await;
                        }
                        Step::SlowReads { n } => {
                            let waker = futures::task::noop_waker();
                            let mut cx = std::task::Context::from_waker(&waker);
                            for _ in 0..n {
                                match slow.as_mut().poll_next(&mut cx) {
                                    Poll::Ready(Some(change)) => slow_view.fold(&change)?,
                                    _ => break,
                                }
                            }
                        }
                    }
                    catch_up("fast", &mut fast, &mut fast_view, &watch)?;
                }
                catch_up("slow", &mut slow, &mut slow_view, &watch)
            });
            proptest::prop_assert!(outcome.is_ok(), "{:?}", outcome);
        }
    }
}
