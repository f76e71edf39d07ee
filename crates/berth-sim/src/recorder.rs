//! Watches the API (nodes, pods, ReplicaSets, events) and turns what changes into
//! timeline entries.
//!
//! One task polls every source in a fixed order (`biased`), so within one
//! virtual instant a node's change is folded in before the eviction it
//! caused, and the eviction's due time is computed from the node as it is.
//!
//! Every entry gets the next sequence number as it is recorded, so what
//! happened to one node, pod or zone within one instant keeps its order in
//! the timeline.
//!
//! Zone states are computed from the nodes as the node lifecycle
//! controller computes them, with its own functions
//! (`berth_controllers::node_lifecycle::zone`): the controller writes the
//! Ready conditions it judges by in the same monitor pass, so the state
//! changes at the same virtual instant as the controller's. The recorder
//! sees those nodes change one by one, so a zone can pass through states
//! within an instant (ten nodes going NotReady together pass
//! PartialDisruption on the way to FullDisruption); only the state a zone
//! settled in is recorded, once time moves on: the state the controller
//! acted on.

use std::collections::BTreeMap;

use berth_client::{Change, changes_of};
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_core::eviction::{TaintStarts, pod_due_with_cause};
use berth_core::taint_spec::{format_taint, format_toleration};
use berth_core::zone::{compute_zone_state, excluded_from_disruption, ready_status, zone_key};
use futures::{Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::oneshot;
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
    /// When each node's taints started (for those without `timeAdded`,
    /// when first seen), as the taint eviction controller counts them.
    taint_starts: BTreeMap<String, TaintStarts>,
    pods: BTreeMap<String, Pod>,
    /// Deleted pods, for evictions reported after the deletion was seen.
    gone: BTreeMap<String, Pod>,
    events: BTreeMap<String, Event>,
    replica_sets: BTreeMap<String, ReplicaSet>,
    /// Each zone's last recorded state.
    zones: BTreeMap<String, String>,
    /// Zone states reached in the current instant, recorded once time
    /// moves on: the entry, numbered when its state was reached.
    unsettled: BTreeMap<String, Entry>,
    unhealthy_zone_threshold: f32,
    /// The next entry's sequence number.
    seq: u64,
}

impl Recorder {
    fn now(&self) -> Millis {
        millis_between(self.start, self.clock.now())
    }

    /// Numbers an entry in the order things happened.
    fn numbered(&mut self, mut entry: Entry) -> Entry {
        entry.seq = self.seq;
        self.seq += 1;
        entry
    }

    fn record(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            let entry = self.numbered(entry);
            self.entries.push(entry);
        }
    }

    fn node_changed(&mut self, change: Change<Node>) {
        let t = self.now();
        self.settle_zones(t);
        match change {
            Change::Upsert(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let entries = timeline::node_entries(t, self.nodes.get(&name), &node);
                self.record(entries);
                let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref());
                self.taint_starts
                    .entry(name.clone())
                    .or_default()
                    .observe(taints.unwrap_or(&[]), self.clock.now());
                self.nodes.insert(name, node);
            }
            Change::Delete(gone) => {
                self.nodes.remove(&gone.key.name);
                self.taint_starts.remove(&gone.key.name);
            }
            Change::Synced => {}
        }
    }

    fn pod_changed(&mut self, change: Change<Pod>) {
        let t = self.now();
        self.settle_zones(t);
        match change {
            Change::Upsert(pod) => {
                let key = timeline::pod_key(&pod);
                let entries = timeline::pod_entries(t, self.pods.get(&key), Some(&pod));
                self.record(entries);
                self.gone.remove(&key);
                self.pods.insert(key, pod);
            }
            Change::Delete(gone) => {
                let key = timeline::pod_subject(&gone.key);
                let old = self.pods.remove(&key);
                let entries = timeline::pod_entries(t, old.as_ref(), None);
                self.record(entries);
                if let Some(last) = old.or(gone.last) {
                    self.gone.insert(key, last);
                }
            }
            Change::Synced => {}
        }
    }

    fn replica_set_changed(&mut self, change: Change<ReplicaSet>) {
        let t = self.now();
        self.settle_zones(t);
        match change {
            Change::Upsert(rs) => {
                let key = format!(
                    "{}/{}",
                    rs.metadata.namespace.as_deref().unwrap_or(""),
                    rs.metadata.name.as_deref().unwrap_or("")
                );
                let entries = timeline::replica_set_entries(t, self.replica_sets.get(&key), &rs);
                self.record(entries);
                self.replica_sets.insert(key, rs);
            }
            Change::Delete(gone) => {
                self.replica_sets
                    .remove(&format!("{}/{}", gone.key.namespace, gone.key.name));
            }
            Change::Synced => {}
        }
    }

    fn event_seen(&mut self, change: Change<Event>) {
        let t = self.now();
        self.settle_zones(t);
        let Change::Upsert(ev) = change else {
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
        self.record(entries);
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
            && let Some(name) = node_name.as_deref()
            && let (Some(node), Some(starts)) = (self.nodes.get(name), self.taint_starts.get(name))
        {
            // What decided the due time, so the report can say why.
            if let Some(cause) = pod_due_with_cause(pod, node, starts, self.gates) {
                entry.due = Some(millis_between(self.start, cause.due.at));
                entry.taint = Some(format_taint(cause.taint));
                entry.toleration = Some(
                    cause
                        .toleration
                        .map_or_else(|| "none".to_owned(), format_toleration),
                );
            }
        }
        entry.node = node_name;
    }

    /// Records the zone states reached in an instant that has passed.
    fn settle_zones(&mut self, now: Millis) {
        if self.unsettled.values().all(|e| e.t >= now) {
            return;
        }
        for (zone, entry) in std::mem::take(&mut self.unsettled) {
            let state = entry.state.clone().unwrap_or_default();
            if self.zones.get(&zone) != Some(&state) {
                self.entries.push(entry);
                self.zones.insert(zone, state);
            }
        }
    }

    /// Recomputes every zone's state; a zone whose state changed is
    /// recorded once the instant is over ([`Self::settle_zones`]).
    fn zones(&mut self) {
        let t = self.now();
        let mut ready: BTreeMap<String, (String, Vec<Option<bool>>)> = BTreeMap::new();
        for node in self.nodes.values() {
            if excluded_from_disruption(node) {
                continue;
            }
            let name = node
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(crate::scenario::ZONE_LABEL))
                .cloned()
                .unwrap_or_default();
            let status = ready_status(node);
            ready
                .entry(zone_key(node))
                .or_insert_with(|| (name, Vec::new()))
                .1
                .push(status);
        }
        for (name, statuses) in ready.values() {
            let (_, state) = compute_zone_state(statuses, self.unhealthy_zone_threshold);
            let state = format!("{state:?}");
            let current = match self.unsettled.get(name) {
                Some(entry) => entry.state.as_ref(),
                None => self.zones.get(name),
            };
            if current != Some(&state) {
                let entry = self.numbered(Entry::zone_state(t, name, &state));
                self.unsettled.insert(name.clone(), entry);
            }
        }
    }
}

/// The sources [`Recording::start`] waits to have listed.
const WATCHES: usize = 4;

fn watch<K>(client: &Client) -> impl Stream<Item = Change<K>> + Send + use<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + 'static,
{
    changes_of(Api::<K>::all(client.clone()), watcher::Config::default())
}

/// A started recorder.
pub(crate) struct Recording {
    stop: CancellationToken,
    arm: Option<oneshot::Sender<()>>,
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
        unhealthy_zone_threshold: f32,
    ) -> Recording {
        let stop = CancellationToken::new();
        let mut nodes = watch::<Node>(client).boxed();
        let mut pods = watch::<Pod>(client).boxed();
        let mut events = watch::<Event>(client).boxed();
        let mut replica_sets = watch::<ReplicaSet>(client).boxed();
        let (ready_tx, ready_rx) = oneshot::channel();
        let (arm_tx, mut arm_rx) = oneshot::channel::<()>();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut recorder = Recorder {
                clock,
                start,
                gates,
                entries: Vec::new(),
                nodes: BTreeMap::new(),
                taint_starts: BTreeMap::new(),
                pods: BTreeMap::new(),
                gone: BTreeMap::new(),
                events: BTreeMap::new(),
                replica_sets: BTreeMap::new(),
                zones: BTreeMap::new(),
                unsettled: BTreeMap::new(),
                unhealthy_zone_threshold,
                seq: 0,
            };
            let mut listed = 0;
            let mut ready_tx = Some(ready_tx);
            let mut listed_once = |synced: bool| {
                if synced {
                    listed += 1;
                    if listed == WATCHES
                        && let Some(tx) = ready_tx.take()
                    {
                        let _ = tx.send(());
                    }
                }
            };
            // Zone states count from the end of t=0's registrations: a zone
            // whose first node is registered but not yet Ready is no outage.
            let mut armed = false;
            loop {
                tokio::select! {
                    biased;
                    () = token.cancelled() => break,
                    Some(e) = nodes.next() => {
                        listed_once(matches!(e, Change::Synced));
                        recorder.node_changed(e);
                        if armed {
                            recorder.zones();
                        }
                    }
                    Some(e) = replica_sets.next() => {
                        listed_once(matches!(e, Change::Synced));
                        recorder.replica_set_changed(e);
                    }
                    Some(e) = pods.next() => {
                        listed_once(matches!(e, Change::Synced));
                        recorder.pod_changed(e);
                    }
                    Some(e) = events.next() => {
                        listed_once(matches!(e, Change::Synced));
                        recorder.event_seen(e);
                    }
                    result = &mut arm_rx, if !armed => {
                        armed = true;
                        if result.is_ok() {
                            recorder.zones();
                        }
                    }
                }
            }
            // Whatever the zones reached in the last instant has settled.
            recorder.settle_zones(Millis::MAX);
            recorder.entries
        });
        let _ = ready_rx.await;
        Recording {
            stop,
            arm: Some(arm_tx),
            task,
        }
    }

    /// From now on, zone states are recorded.
    pub(crate) fn arm_zones(&mut self) {
        if let Some(arm) = self.arm.take() {
            let _ = arm.send(());
        }
    }

    /// Stops watching and returns the entries, in timeline order.
    pub(crate) async fn finish(self) -> Vec<Entry> {
        self.stop.cancel();
        let mut entries = self.task.await.unwrap_or_default();
        timeline::sort(&mut entries);
        entries
    }
}
