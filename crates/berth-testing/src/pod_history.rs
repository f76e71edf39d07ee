//! What a watch of one namespace's pods showed, state by state: the
//! rollout tests check every state against what a rollout promises (at
//! most `replicas + maxSurge` pods active, at least `replicas -
//! maxUnavailable` ready, never old and new pods together for Recreate),
//! and count the pods ever created.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use berth_client::{Change, changes_of};
use berth_core::clock::Clock;
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::watcher;

/// The label that tells a Deployment's revisions apart.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// One state of the namespace's pods, by `pod-template-hash` (empty for
/// pods without one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// When the watch showed it.
    pub at: Option<Timestamp>,
    /// Pods not being deleted.
    pub active: BTreeMap<String, usize>,
    /// Of those, the Ready ones.
    pub ready: BTreeMap<String, usize>,
    /// Every pod, being deleted or not.
    pub existing: BTreeMap<String, usize>,
}

impl Snapshot {
    pub fn active(&self) -> usize {
        self.active.values().sum()
    }

    pub fn ready(&self) -> usize {
        self.ready.values().sum()
    }
}

#[derive(Default)]
struct Seen {
    /// Every pod UID seen, with its name.
    created: BTreeMap<String, String>,
    snapshots: Vec<Snapshot>,
}

/// A handle on what the watch recorded (see [`PodHistory::watch`]).
#[derive(Clone, Default)]
pub struct PodHistory {
    seen: Arc<Mutex<Seen>>,
}

impl PodHistory {
    /// The recording of a watch of `namespace`'s pods through `client`,
    /// and the watch itself, to be spawned (it runs until dropped).
    pub fn watch(
        client: kube::Client,
        namespace: &str,
        clock: Clock,
    ) -> (PodHistory, impl Future<Output = ()> + Send + 'static) {
        let history = PodHistory::default();
        let seen = history.seen.clone();
        let api = Api::<Pod>::namespaced(client, namespace);
        let watch = async move {
            let changes = changes_of(api, watcher::Config::default());
            let mut changes = std::pin::pin!(changes);
            let mut pods: HashMap<String, Pod> = HashMap::new();
            while let Some(change) = changes.next().await {
                match change {
                    Change::Upsert(pod) => {
                        let name = pod.metadata.name.clone().unwrap_or_default();
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        if let Ok(mut seen) = seen.lock() {
                            seen.created.entry(uid).or_insert_with(|| name.clone());
                        }
                        pods.insert(name, pod);
                    }
                    Change::Delete(gone) => {
                        pods.remove(&gone.key.name);
                    }
                    Change::Synced => {}
                }
                let snapshot = snapshot(pods.values(), clock.now());
                if let Ok(mut seen) = seen.lock() {
                    seen.snapshots.push(snapshot);
                }
            }
        };
        (history, watch)
    }

    /// Every state seen so far, oldest first.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.seen
            .lock()
            .map(|s| s.snapshots.clone())
            .unwrap_or_default()
    }

    /// How many pods (by UID) the watch has seen.
    pub fn pods_created(&self) -> usize {
        self.seen
            .lock()
            .map(|s| s.created.len())
            .unwrap_or_default()
    }

    /// The names of the pods seen, each once per UID.
    pub fn pod_names(&self) -> Vec<String> {
        self.seen
            .lock()
            .map(|s| s.created.values().cloned().collect())
            .unwrap_or_default()
    }
}

fn snapshot<'a>(pods: impl Iterator<Item = &'a Pod>, at: Timestamp) -> Snapshot {
    let mut snapshot = Snapshot {
        at: Some(at),
        ..Snapshot::default()
    };
    for pod in pods {
        let hash = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_TEMPLATE_HASH))
            .cloned()
            .unwrap_or_default();
        *snapshot.existing.entry(hash.clone()).or_default() += 1;
        if pod.metadata.deletion_timestamp.is_none() {
            *snapshot.active.entry(hash.clone()).or_default() += 1;
            if berth_core::pod::is_ready(pod) {
                *snapshot.ready.entry(hash).or_default() += 1;
            }
        }
    }
    snapshot
}
