//! Recording core/v1 Events the way client-go's recorder does: one Event
//! object per occurrence, named after the involved object, correlated
//! ([`correlator`]: similar Events combined, repeats counted on the first
//! one, a burst about one object cut at 25) and written in the background
//! so a slow write never holds up a controller.
//!
//! Events wait in a bounded queue (client-go's broadcaster queue length,
//! 1,000) drained by one writer task that correlates them in order, as
//! client-go's broadcaster does after its queue, and creates what is left
//! in groups of up to 32. When a controller records faster than Events
//! can be written (1,000 evictions due in the same second), the excess is
//! dropped and counted, as client-go's `DropIfChannelFull`, instead of one
//! task per Event competing with the controller's own API calls.

pub mod correlator;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_client::writes::{create_unread, patch_unread};
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use tokio::sync::mpsc;

use self::correlator::{Correlated, EventCorrelator};

pub const TYPE_NORMAL: &str = "Normal";
pub const TYPE_WARNING: &str = "Warning";

/// Events waiting to be written, at most (client-go's `maxQueuedEvents`).
pub const EVENT_QUEUE_LENGTH: usize = 1000;
/// Event creates the writer has in flight, at most.
const WRITES_IN_FLIGHT: usize = 32;

/// Writes Events as one component.
#[derive(Clone)]
pub struct EventRecorder {
    client: kube::Client,
    clock: Clock,
    component: &'static str,
    queue: Arc<Queue>,
}

/// The recorder's queue, shared by its clones.
struct Queue {
    tx: mpsc::Sender<Event>,
    /// The receiving end until the first record starts the writer (a
    /// recorder may be built outside a tokio runtime).
    rx: Mutex<Option<mpsc::Receiver<Event>>>,
    dropped: AtomicU64,
    stamps: Arc<Stamps>,
}

/// The last Event name suffix handed out, shared by the recorder and its
/// writer (see [`Stamps::next`]).
struct Stamps(Mutex<i128>);

impl Stamps {
    /// An Event name's suffix: client-go's `UnixNano` of now, moved one
    /// past the last one handed out when time has not moved, so that
    /// several Events of one object in one instant (a burst of creates on
    /// a virtual clock) do not share a name and get refused.
    fn next(&self, now: jiff::Timestamp) -> i128 {
        let mut last = crate::shared::lock(&self.0);
        *last = now.as_nanosecond().max(last.saturating_add(1));
        *last
    }
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

/// A reference to a namespaced Pod.
pub fn pod_ref(namespace: &str, name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        uid: uid.map(str::to_string),
        ..ObjectReference::default()
    }
}

/// A reference to a namespaced object of `kind` in `api_version`, as
/// client-go's `GetReference` makes it for an Event's involved object.
pub fn object_ref(api_version: &str, kind: &str, meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// The message of an API error as upstream's Events quote it (the
/// `Status`'s message), or the error itself.
pub fn error_message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// A reference to a Node (cluster-scoped; its events go to `default`, as
/// upstream's `RecordNodeEvent`).
pub fn node_ref(name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid: uid.map(str::to_string),
        ..ObjectReference::default()
    }
}

impl EventRecorder {
    pub fn new(client: kube::Client, clock: Clock, component: &'static str) -> EventRecorder {
        EventRecorder::with_capacity(client, clock, component, EVENT_QUEUE_LENGTH)
    }

    /// A recorder whose queue holds at most `capacity` Events.
    pub fn with_capacity(
        client: kube::Client,
        clock: Clock,
        component: &'static str,
        capacity: usize,
    ) -> EventRecorder {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        EventRecorder {
            client,
            clock,
            component,
            queue: Arc::new(Queue {
                tx,
                rx: Mutex::new(Some(rx)),
                dropped: AtomicU64::new(0),
                stamps: Arc::new(Stamps(Mutex::new(i128::MIN))),
            }),
        }
    }

    /// Events dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped.load(Ordering::Relaxed)
    }

    /// The Event for an occurrence now.
    pub fn event(
        &self,
        object: ObjectReference,
        type_: &str,
        reason: &str,
        message: String,
    ) -> Event {
        let now = self.clock.now();
        let namespace = object
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let name = format!(
            "{}.{:x}",
            object.name.as_deref().unwrap_or("object"),
            self.queue.stamps.next(now)
        );
        Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: object,
            reason: Some(reason.into()),
            message: Some(message),
            type_: Some(type_.into()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: None::<MicroTime>,
            source: Some(EventSource {
                component: Some(self.component.into()),
                host: None,
            }),
            reporting_component: Some(self.component.into()),
            ..Event::default()
        }
    }

    /// Records an Event in the background; drops it (and counts it) when
    /// the queue is full.
    pub fn record(&self, object: ObjectReference, type_: &str, reason: &str, message: String) {
        let event = self.event(object, type_, reason, message);
        let rx = self.queue.rx.lock().ok().and_then(|mut rx| rx.take());
        if let Some(rx) = rx {
            tokio::spawn(write_events(
                Writer {
                    client: self.client.clone(),
                    clock: self.clock.clone(),
                    stamps: self.queue.stamps.clone(),
                    correlator: EventCorrelator::new(),
                },
                self.queue.tx.max_capacity(),
                rx,
            ));
        }
        if let Err(err) = self.queue.tx.try_send(event) {
            let dropped = self.queue.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            let event = match err {
                mpsc::error::TrySendError::Full(e) | mpsc::error::TrySendError::Closed(e) => e,
            };
            tracing::debug!(reason = ?event.reason, dropped, "event queue full, event dropped");
        }
    }
}

/// How long the writer lets a burst of Events settle before writing it:
/// Events report work (a thousand evictions falling due together) and
/// must not take the CPU that work needs, so they are written once no new
/// Event came for this long...
const SETTLE: Duration = Duration::from_millis(50);
/// ...but none is held back longer than this, and a full queue's worth is
/// written at once.
const MAX_HOLD: Duration = Duration::from_secs(1);

/// The writer task's state: the correlator is its own (Events are
/// correlated one at a time, in the order they were recorded).
struct Writer {
    client: kube::Client,
    clock: Clock,
    stamps: Arc<Stamps>,
    correlator: EventCorrelator,
}

/// The writer: collects queued Events until the burst settles (see
/// [`SETTLE`]), then correlates and writes them, up to
/// [`WRITES_IN_FLIGHT`] creates at a time, until every recorder is gone.
/// Writing a group together lets the store commit it together (one
/// fsync) rather than one commit per Event.
async fn write_events(mut writer: Writer, capacity: usize, mut rx: mpsc::Receiver<Event>) {
    while let Some(first) = rx.recv().await {
        // The Events wait in the queue while the burst goes on, so the
        // queue's bound (and what is dropped beyond it) is unchanged.
        let clock = writer.clock.clone();
        let started = clock.instant();
        // In virtual time work takes no time, so there is no CPU to leave
        // to it: Events are written at once, at the instant they report
        // (scenario timelines show them there).
        while !clock.is_virtual() {
            let before = rx.len();
            clock.sleep(SETTLE).await;
            let queued = rx.len();
            if queued == before || queued + 1 >= capacity || clock.instant() - started >= MAX_HOLD {
                break;
            }
        }
        let mut pending = vec![first];
        while let Ok(event) = rx.try_recv() {
            pending.push(event);
        }
        writer.write(pending).await;
    }
}

impl Writer {
    /// Correlates `events` in order and writes what is not skipped:
    /// creates [`WRITES_IN_FLIGHT`] at a time; a patch waits for the
    /// creates before it (it may count one of them) and runs alone.
    async fn write(&mut self, events: Vec<Event>) {
        let mut creates = Vec::new();
        for event in events {
            let now = self.clock.now();
            let stamps = &self.stamps;
            match self.correlator.correlate(event, now, || stamps.next(now)) {
                Correlated::Skip => {}
                Correlated::Create(event) => {
                    creates.push(event);
                    if creates.len() == WRITES_IN_FLIGHT {
                        create_all(&self.client, std::mem::take(&mut creates)).await;
                    }
                }
                Correlated::Patch { event, patch } => {
                    create_all(&self.client, std::mem::take(&mut creates)).await;
                    patch_event(&self.client, event, patch).await;
                }
            }
        }
        create_all(&self.client, creates).await;
    }
}

/// Creates `events` at once.
async fn create_all(client: &kube::Client, events: Vec<Event>) {
    futures::future::join_all(events.into_iter().map(|event| async move {
        let namespace = event.metadata.namespace.as_deref();
        if let Err(err) = create_unread(client, namespace, &event).await {
            tracing::debug!(%err, reason = ?event.reason, "recording event failed");
        }
    }))
    .await;
}

/// Writes a repeated Event as `patch` of the first one; creates it if the
/// first one is gone (client-go's `recordEvent`).
async fn patch_event(client: &kube::Client, mut event: Event, patch: serde_json::Value) {
    let namespace = event.metadata.namespace.clone();
    let name = event.metadata.name.clone().unwrap_or_default();
    match patch_unread::<Event>(client, namespace.as_deref(), &name, &patch).await {
        Err(kube::Error::Api(status)) if status.code == 404 => {
            event.metadata.resource_version = None;
            create_all(client, vec![event]).await;
        }
        Err(err) => tracing::debug!(%err, reason = ?event.reason, "recording event failed"),
        Ok(()) => {}
    }
}
