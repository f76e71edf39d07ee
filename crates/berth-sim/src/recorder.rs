//! Watches the API (nodes, pods, events) and the controllers' zone
//! reports, and turns what changes into timeline entries.
//!
//! One task polls every source in a fixed order (`biased`), so within one
//! virtual instant a node's change is folded in before the eviction it
//! caused, and the eviction's due time is computed from the node as it is.

use std::collections::BTreeMap;

use berth_core::FeatureGates;
use berth_core::clock::Clock;
use futures::{Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::timeline::{self, Entry, EventKind, Millis};

/// Milliseconds from `start` to `t`, 0 before it.
pub fn millis_between(start: Timestamp, t: Timestamp) -> Millis {
    let ms = t.duration_since(start).as_millis();
    u64::try_from(ms.max(0)).unwrap_or(u64::MAX)
}

struct Recorder {
    clock: Clock,
    start: Timestamp,
    gates: FeatureGates,
    entries: Vec<Entry>,
    nodes: BTreeMap<String, Node>,
    pods: BTreeMap<String, Pod>,
    /// Deleted pods, for evictions reported after the deletion was seen.
    gone: BTreeMap<String, Pod>,
    events: BTreeMap<String, Event>,
    zones: BTreeMap<String, String>,
}

impl Recorder {
    fn now(&self) -> Millis {
        millis_between(self.start, self.clock.now())
    }

    fn node(&mut self, event: watcher::Event<Node>) {
        let t = self.now();
        match event {
            watcher::Event::Apply(node) | watcher::Event::InitApply(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let old = self.nodes.get(&name);
                self.entries
                    .extend(timeline::node_entries(t, old, &node));
                self.nodes.insert(name, node);
            }
            watcher::Event::Delete(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                self.nodes.remove(&name);
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn pod(&mut self, event: watcher::Event<Pod>) {
        let t = self.now();
        match event {
            watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                let key = timeline::pod_key(&pod);
                let old = self.pods.get(&key);
                self.entries
                    .extend(timeline::pod_entries(t, old, Some(&pod)));
                self.gone.remove(&key);
                self.pods.insert(key, pod);
            }
            watcher::Event::Delete(pod) => {
                let key = timeline::pod_key(&pod);
                let old = self.pods.remove(&key);
                self.entries
                    .extend(timeline::pod_entries(t, old.as_ref(), None));
                self.gone.insert(key, old.unwrap_or(pod));
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn event(&mut self, event: watcher::Event<Event>) {
        let t = self.now();
        let (watcher::Event::Apply(ev) | watcher::Event::InitApply(ev)) = event else {
            return;
        };
        let key = format!(
            "{}/{}",
            ev.metadata.namespace.as_deref().unwrap_or(""),
            ev.metadata.name.as_deref().unwrap_or("")
        );
        let mut entries = timeline::event_entries(t, self.events.get(&key), &ev);
        for entry in &mut entries {
            self.describe_eviction(entry);
        }
        self.entries.extend(entries);
        self.events.insert(key, ev);
    }

    /// Adds the pod's node and, for an eviction, when it was due.
    fn describe_eviction(&self, entry: &mut Entry) {
        if !matches!(
            entry.event,
            EventKind::PodEvicted | EventKind::EvictionCancelled
        ) {
            return;
        }
        let Some(pod) = entry
            .pod
            .as_ref()
            .and_then(|k| self.pods.get(k).or_else(|| self.gone.get(k)))
        else {
            return;
        };
        let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if entry.event == EventKind::PodEvicted
            && let Some(node) = node_name.as_ref().and_then(|n| self.nodes.get(n))
        {
            entry.due = timeline::eviction_due(pod, node, self.gates)
                .map(|due| millis_between(self.start, due));
        }
        entry.node = node_name;
    }

    fn zone(&mut self, zone: String, state: String) {
        if self.zones.get(&zone) != Some(&state) {
            let t = self.now();
            self.entries.push(Entry::zone_state(t, &zone, &state));
            self.zones.insert(zone, state);
        }
    }
}

fn watch<K>(client: &Client) -> impl Stream<Item = watcher::Event<K>> + Send + use<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + 'static,
{
    // The watcher retries on its own; an error item carries nothing to record.
    watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .filter_map(|item| async move { item.ok() })
}

/// A started recorder.
pub(crate) struct Recording {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Vec<Entry>>,
}

impl Recording {
    /// Starts watching; returns once every watch has listed (so nothing
    /// made after this is missed).
    pub(crate) async fn start(
        client: &Client,
        clock: Clock,
        start: Timestamp,
        gates: FeatureGates,
        mut zones: mpsc::UnboundedReceiver<(String, String)>,
    ) -> Recording {
        let stop = CancellationToken::new();
        let mut nodes = watch::<Node>(client).boxed();
        let mut pods = watch::<Pod>(client).boxed();
        let mut events = watch::<Event>(client).boxed();
        let (ready_tx, ready_rx) = oneshot::channel();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut recorder = Recorder {
                clock,
                start,
                gates,
                entries: Vec::new(),
                nodes: BTreeMap::new(),
                pods: BTreeMap::new(),
                gone: BTreeMap::new(),
                events: BTreeMap::new(),
                zones: BTreeMap::new(),
            };
            let mut listed = 0;
            let mut ready_tx = Some(ready_tx);
            let mut listed_once = |event_is_done: bool| {
                if event_is_done {
                    listed += 1;
                    if listed == 3
                        && let Some(tx) = ready_tx.take()
                    {
                        let _ = tx.send(());
                    }
                }
            };
            loop {
                tokio::select! {
                    biased;
                    () = token.cancelled() => break,
                    Some(e) = nodes.next() => {
                        listed_once(matches!(e, watcher::Event::InitDone));
                        recorder.node(e);
                    }
                    Some(e) = pods.next() => {
                        listed_once(matches!(e, watcher::Event::InitDone));
                        recorder.pod(e);
                    }
                    Some(e) = events.next() => {
                        listed_once(matches!(e, watcher::Event::InitDone));
                        recorder.event(e);
                    }
                    Some((zone, state)) = zones.recv() => recorder.zone(zone, state),
                }
            }
            recorder.entries
        });
        let _ = ready_rx.await;
        Recording { stop, task }
    }

    /// Stops watching and returns the entries, in timeline order.
    pub(crate) async fn finish(self) -> Vec<Entry> {
        self.stop.cancel();
        let mut entries = self.task.await.unwrap_or_default();
        timeline::sort(&mut entries);
        entries
    }
}
