//! The garbage collector (upstream `pkg/controller/garbagecollector`):
//! objects whose owners are all gone are deleted; an owner deleted with the
//! `orphan` finalizer has its dependents' references to it removed, then
//! the finalizer; one deleted with `foregroundDeletion` has its blocking
//! dependents deleted first, then the finalizer (the API server then
//! deletes it). Owners are verified by UID: an object of the same name but
//! another UID is not the owner.
//!
//! - [`resources`]: what to follow, from the API server's discovery: every
//!   served type that can be deleted, listed and watched (Events aside),
//!   rediscovered every 30 s; and the REST mapping of owner references;
//! - [`graph`]: the dependency graph over ownerReferences, fed by one
//!   watch per type (berth-client's adapter) of which only the metadata is
//!   kept, Pods and Nodes from the process's shared watches (already
//!   decoded for the other controllers: the two types with a change per
//!   pod start and per heartbeat), which says what to look at;
//! - [`attempt`]: what a worker does with an object to look at, against
//!   the API (every decision on a fresh GET);
//! - [`absent_owners`]: the owners known to be gone.
//!
//! One task owns the graph and two work queues (`attemptToDelete`,
//! `attemptToOrphan`, client-go's [`QueueState`] on the Clock); workers
//! (`--concurrent-gc-syncs` per queue) are tasks of their own, started
//! once every type has been listed, their outcomes applied by the task.

pub mod absent_owners;
pub mod attempt;
pub mod graph;
pub mod resources;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_client::{Change, SharedWatch, SharedWatches, changes_of_kind};
use berth_core::clock::Clock;
use berth_core::deletion::Propagation;
use futures::StreamExt;
use futures::stream::SelectAll;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use tokio::task::JoinSet;

use crate::metrics::ControllerMetrics;
use crate::work_queue::QueueState;
use absent_owners::AbsentOwners;
use attempt::{DeleteAttempt, GcApi, MetaPatch, Outcome, Workers};
use graph::{Graph, Identity, Observed, Work};
use resources::{Resources, Served};

/// Upstream's controller name, also the `--controllers` name.
pub const CONTROLLER_NAME: &str = "garbage-collector-controller";

/// Settings of the garbage collector.
#[derive(Debug, Clone)]
pub struct GarbageCollectorConfig {
    /// `--concurrent-gc-syncs`: workers per queue.
    pub workers: usize,
    /// How often discovery is read again for new types (upstream's 30 s).
    pub discovery_period: Duration,
}

impl Default for GarbageCollectorConfig {
    fn default() -> Self {
        GarbageCollectorConfig {
            workers: 20,
            discovery_period: Duration::from_secs(30),
        }
    }
}

/// See the module documentation.
pub struct GarbageCollector {
    client: kube::Client,
    watches: SharedWatches,
    clock: Clock,
    config: GarbageCollectorConfig,
    metrics: ControllerMetrics,
}

/// Which queue an item came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queue {
    Delete = 0,
    Orphan = 1,
}

/// What a worker is to do, with what the graph knows for it.
enum Job {
    Delete(DeleteAttempt),
    Orphan(Identity, Vec<Identity>),
}

/// A metadata-only watch of one followed type, its changes tagged with the
/// type.
type Watch = std::pin::Pin<
    Box<dyn futures::Stream<Item = (Arc<Served>, Change<PartialObjectMeta<DynamicObject>>)> + Send>,
>;

/// The task's state.
#[derive(Default)]
struct State {
    graph: Graph,
    to_delete: QueueState<String>,
    to_orphan: QueueState<String>,
    absent: Arc<Mutex<AbsentOwners>>,
    /// The followed types not listed yet (by apiVersion and plural).
    unsynced: BTreeSet<(String, String)>,
    /// Every followed type, watched.
    followed: BTreeSet<(String, String)>,
}

impl GarbageCollector {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: GarbageCollectorConfig,
        metrics: ControllerMetrics,
    ) -> GarbageCollector {
        GarbageCollector {
            client: watches.client().clone(),
            watches,
            clock,
            config,
            metrics,
        }
    }

    /// Reads discovery until it names something to follow.
    async fn discover(&self) -> Resources {
        loop {
            match Resources::discover(self.client.clone()).await {
                Ok(resources) if !resources.followed().is_empty() => return resources,
                Ok(_) => tracing::warn!("no resources reported by discovery, retrying"),
                Err(error) => tracing::warn!(%error, "discovery failed, retrying"),
            }
            self.metrics.gc_resources_sync_errors.inc();
            self.clock.sleep(Duration::from_secs(1)).await;
        }
    }

    /// Runs until dropped.
    pub async fn run(self) {
        tracing::info!(controller = CONTROLLER_NAME, "Starting controller");
        let mut resources = Arc::new(self.discover().await);
        let mut state = State::default();
        let mut watches: SelectAll<Watch> = SelectAll::new();
        state.follow(&self.watches, &resources, &mut watches);
        let api = Arc::new(KubeApi {
            client: self.client.clone(),
        });
        let mut running: JoinSet<(Queue, String, Outcome)> = JoinSet::new();
        // Workers running per queue.
        let mut busy = [0usize; 2];
        let period =
            SignedDuration::try_from(self.config.discovery_period).unwrap_or(SignedDuration::MAX);
        let mut next_discovery = self
            .clock
            .now()
            .saturating_add(period)
            .unwrap_or(Timestamp::MAX);
        loop {
            if state.unsynced.is_empty() {
                let now = self.clock.now();
                for queue in [Queue::Delete, Queue::Orphan] {
                    state.queue(queue).promote_due(now);
                    while busy[queue as usize] < self.config.workers
                        && let Some(uid) = state.queue(queue).get()
                    {
                        let Some(job) = state.job(queue, &uid) else {
                            state.queue(queue).forget(&uid);
                            state.queue(queue).done(&uid);
                            continue;
                        };
                        busy[queue as usize] += 1;
                        let (api, resources, absent) =
                            (api.clone(), resources.clone(), state.absent.clone());
                        running.spawn(async move {
                            let workers = Workers {
                                api: api.as_ref(),
                                resources: &resources,
                                absent: &absent,
                            };
                            let outcome = match job {
                                Job::Delete(attempt) => workers.attempt_to_delete(&attempt).await,
                                Job::Orphan(owner, dependents) => {
                                    workers.attempt_to_orphan(&owner, &dependents).await
                                }
                            };
                            (queue, uid, outcome)
                        });
                    }
                }
            }
            let wake_at = [
                state.to_delete.next_due(),
                state.to_orphan.next_due(),
                Some(next_discovery),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(next_discovery);
            tokio::select! {
                biased;
                Some(done) = running.join_next(), if !running.is_empty() => {
                    let Ok((queue, uid, outcome)) = done else {
                        continue;
                    };
                    busy[queue as usize] -= 1;
                    state.finished(queue, &uid, outcome, self.clock.now());
                }
                Some((served, change)) = watches.next() => state.apply(&served, change),
                () = self.clock.sleep_until(wake_at) => {
                    if self.clock.now() >= next_discovery {
                        next_discovery = self.clock.now().saturating_add(period).unwrap_or(Timestamp::MAX);
                        match Resources::discover(self.client.clone()).await {
                            Ok(found) if !found.followed().is_empty() => {
                                resources = Arc::new(found);
                                state.follow(&self.watches, &resources, &mut watches);
                            }
                            Ok(_) => {
                                self.metrics.gc_resources_sync_errors.inc();
                            }
                            Err(error) => {
                                tracing::warn!(%error, "discovery failed");
                                self.metrics.gc_resources_sync_errors.inc();
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The changes of a shared watch with only each object's metadata, as
/// the graph takes them from a watch of its own.
fn metadata_of<K>(
    watch: &SharedWatch<K>,
) -> impl futures::Stream<Item = Change<PartialObjectMeta<DynamicObject>>> + Send + use<K>
where
    K: Resource + Send + Sync + 'static,
{
    watch.changes().map(|change| {
        change.map(|object: Arc<K>| PartialObjectMeta {
            types: None,
            metadata: object.meta().clone(),
            _phantom: std::marker::PhantomData,
        })
    })
}

impl State {
    /// Starts a watch of every followed type not watched yet.
    fn follow(
        &mut self,
        shared: &SharedWatches,
        resources: &Resources,
        watches: &mut SelectAll<Watch>,
    ) {
        for served in resources.followed() {
            let key = (
                served.resource.api_version.clone(),
                served.resource.plural.clone(),
            );
            if !self.followed.insert(key.clone()) {
                continue;
            }
            tracing::info!(resource = %served.resource.plural, api_version = %served.resource.api_version, "garbage collector follows");
            self.unsynced.insert(key);
            let served = Arc::new(served.clone());
            let tagged = served.clone();
            let tag = move |change| (tagged.clone(), change);
            let changes: Watch = match (
                served.resource.api_version.as_str(),
                served.resource.plural.as_str(),
            ) {
                ("v1", "pods") => Box::pin(metadata_of(shared.pods()).map(tag)),
                ("v1", "nodes") => Box::pin(metadata_of(shared.nodes()).map(tag)),
                _ => {
                    let api = Api::<PartialObjectMeta<DynamicObject>>::all_with(
                        shared.client().clone(),
                        &served.resource,
                    );
                    Box::pin(
                        changes_of_kind(api, watcher::Config::default(), &served.resource.kind)
                            .map(tag),
                    )
                }
            };
            watches.push(changes);
        }
    }

    /// A change of an object of a followed type.
    fn apply(&mut self, served: &Served, change: Change<PartialObjectMeta<DynamicObject>>) {
        match change {
            Change::Upsert(object) => {
                let Some(observed) = observed(served, object.metadata) else {
                    return;
                };
                let work = self.graph.observe(observed);
                self.enqueue(work);
            }
            Change::Delete(gone) => {
                if let Some(uid) = gone.uid {
                    self.forget(&uid);
                }
            }
            Change::Synced => {
                let key = (
                    served.resource.api_version.clone(),
                    served.resource.plural.clone(),
                );
                if self.unsynced.remove(&key) && self.unsynced.is_empty() {
                    tracing::info!(
                        objects = self.graph.len(),
                        "All resource monitors have synced. Proceeding to collect garbage"
                    );
                    let work = self.graph.mark_synced();
                    self.enqueue(work);
                }
            }
        }
    }

    /// An object is gone from the graph.
    fn forget(&mut self, uid: &str) {
        let (work, absent) = self.graph.forget(uid);
        if let (Some(owner), Ok(mut cache)) = (absent, self.absent.lock()) {
            cache.add(owner);
        }
        self.enqueue(work);
    }

    fn enqueue(&mut self, work: Vec<Work>) {
        for item in work {
            let (queue, uid) = match item {
                Work::AttemptToDelete(uid) => (&mut self.to_delete, uid),
                Work::AttemptToOrphan(uid) => (&mut self.to_orphan, uid),
            };
            queue.add(uid);
        }
    }

    fn queue(&mut self, queue: Queue) -> &mut QueueState<String> {
        match queue {
            Queue::Delete => &mut self.to_delete,
            Queue::Orphan => &mut self.to_orphan,
        }
    }

    /// The worker's job for `uid` from `queue`; `None` when there is
    /// nothing to do.
    fn job(&self, queue: Queue, uid: &str) -> Option<Job> {
        match queue {
            Queue::Delete => self.delete_attempt(uid).map(Job::Delete),
            Queue::Orphan => self
                .orphan_attempt(uid)
                .map(|(owner, dependents)| Job::Orphan(owner, dependents)),
        }
    }

    /// What a worker needs of the graph to look at `uid`; `None` when there
    /// is nothing to do (gone, or being deleted and not waiting for its
    /// dependents: its deletion goes on without the collector).
    fn delete_attempt(&self, uid: &str) -> Option<DeleteAttempt> {
        let node = self.graph.node(uid)?;
        if node.being_deleted && !node.deleting_dependents {
            return None;
        }
        Some(DeleteAttempt {
            item: node.identity.clone(),
            deleting_dependents: node.deleting_dependents,
            blocking_dependents: self
                .graph
                .blocking_dependents(uid)
                .into_iter()
                .map(|d| (d.identity.clone(), d.deleting_dependents))
                .collect(),
            has_dependents: self.graph.dependents(uid).next().is_some(),
            a_dependent_deletes_its_dependents: self
                .graph
                .dependents(uid)
                .any(|d| d.deleting_dependents),
        })
    }

    /// The owner to orphan and its dependents.
    fn orphan_attempt(&self, uid: &str) -> Option<(Identity, Vec<Identity>)> {
        let node = self.graph.node(uid)?;
        let dependents = self
            .graph
            .dependents(uid)
            .map(|d| d.identity.clone())
            .collect();
        Some((node.identity.clone(), dependents))
    }

    /// A worker's outcome, applied to the queues and the graph.
    fn finished(&mut self, queue: Queue, uid: &String, outcome: Outcome, now: Timestamp) {
        let items = self.queue(queue);
        items.done(uid);
        match outcome {
            Outcome::Done => items.forget(uid),
            Outcome::Retry(why) => {
                tracing::warn!(%uid, queue = ?queue, error = %why, "error syncing item, retrying");
                items.add_rate_limited(uid.clone(), now);
            }
            Outcome::Gone => {
                items.forget(uid);
                self.forget(uid);
            }
            Outcome::Enqueue(uids) => {
                items.forget(uid);
                for dependent in uids {
                    self.to_delete.add(dependent);
                }
            }
        }
    }
}

/// An object's metadata as the graph takes it.
fn observed(served: &Served, meta: ObjectMeta) -> Option<Observed> {
    Some(Observed {
        identity: Identity {
            api_version: served.resource.api_version.clone(),
            kind: served.resource.kind.clone(),
            namespace: meta.namespace.unwrap_or_default(),
            name: meta.name.unwrap_or_default(),
            uid: meta.uid?,
        },
        owners: meta.owner_references.unwrap_or_default(),
        being_deleted: meta.deletion_timestamp.is_some(),
        finalizers: meta.finalizers.unwrap_or_default(),
    })
}

/// The workers' API calls through the controller's client.
struct KubeApi {
    client: kube::Client,
}

impl KubeApi {
    fn api(&self, resource: &Served, namespace: &str) -> Api<DynamicObject> {
        if resource.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource.resource)
        } else {
            Api::all_with(self.client.clone(), &resource.resource)
        }
    }
}

impl GcApi for KubeApi {
    async fn get(
        &self,
        resource: &Served,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectMeta>, kube::Error> {
        let found = self.api(resource, namespace).get_metadata_opt(name).await?;
        Ok(found.map(|o| o.metadata))
    }

    async fn delete(
        &self,
        resource: &Served,
        object: &Identity,
        policy: Propagation,
    ) -> Result<(), kube::Error> {
        let params = DeleteParams {
            propagation_policy: Some(match policy {
                Propagation::Orphan => kube::api::PropagationPolicy::Orphan,
                Propagation::Background => kube::api::PropagationPolicy::Background,
                Propagation::Foreground => kube::api::PropagationPolicy::Foreground,
            }),
            preconditions: Some(Preconditions {
                uid: Some(object.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        self.api(resource, &object.namespace)
            .delete(&object.name, &params)
            .await
            .map(drop)
    }

    async fn patch(
        &self,
        resource: &Served,
        object: &Identity,
        patch: &MetaPatch,
    ) -> Result<(), kube::Error> {
        let api = self.api(resource, &object.namespace);
        let params = PatchParams::default();
        let result = match patch {
            MetaPatch::Strategic(p) => {
                api.patch_metadata(&object.name, &params, &Patch::Strategic(p))
                    .await
            }
            MetaPatch::Merge(p) => {
                api.patch_metadata(&object.name, &params, &Patch::Merge(p))
                    .await
            }
        };
        result.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::garbage_collector::resources::tests::served;

    fn object(
        uid: &str,
        owner: Option<&str>,
        deleting: bool,
        finalizers: &[&str],
    ) -> PartialObjectMeta<DynamicObject> {
        let mut meta = ObjectMeta {
            name: Some(format!("pod-{uid}")),
            namespace: Some("ns1".into()),
            uid: Some(uid.into()),
            finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
            ..ObjectMeta::default()
        };
        if let Some(owner) = owner {
            meta.owner_references = Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name: format!("pod-{owner}"),
                    uid: owner.into(),
                    ..Default::default()
                },
            ]);
        }
        if deleting {
            meta.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                Timestamp::UNIX_EPOCH,
            ));
        }
        PartialObjectMeta {
            types: None,
            metadata: meta,
            _phantom: Default::default(),
        }
    }

    /// An object being deleted (not in the foreground) is left to its
    /// deletion; one deleting its dependents is looked at with what the
    /// graph knows of them.
    #[test]
    fn attempts_start_only_for_objects_the_collector_has_to_act_on() {
        let pods = served("v1", "Pod", "pods", true, &["delete", "list", "watch"]);
        let mut state = State::default();
        state.apply(
            &pods,
            Change::Upsert(object("gone-owner-child", Some("gone"), false, &[])),
        );
        state.apply(
            &pods,
            Change::Upsert(object("owner", None, true, &["foregroundDeletion"])),
        );
        state.apply(
            &pods,
            Change::Upsert(object("child", Some("owner"), false, &[])),
        );
        state.apply(
            &pods,
            Change::Upsert(object("terminating", None, true, &[])),
        );
        assert!(state.delete_attempt("terminating").is_none());
        assert!(state.delete_attempt("missing").is_none());
        let attempt = state.delete_attempt("owner").expect("an attempt");
        assert!(attempt.deleting_dependents && attempt.has_dependents);
        assert!(
            attempt.blocking_dependents.is_empty(),
            "the child's reference does not block"
        );
        // The foreground deletion was noticed: the owner and its (then no)
        // dependents; then, once listed, the child of a missing owner.
        assert_eq!(state.to_delete.drain(), vec!["owner".to_string()]);
        state.unsynced.insert(("v1".into(), "pods".into()));
        state.apply(&pods, Change::Synced);
        assert_eq!(
            state.to_delete.drain(),
            vec!["gone-owner-child".to_string()]
        );
    }

    #[test]
    fn outcomes_feed_back_into_the_queues_and_the_graph() {
        let pods = served("v1", "Pod", "pods", true, &["delete", "list", "watch"]);
        let mut state = State::default();
        state.apply(&pods, Change::Upsert(object("owner", None, false, &[])));
        state.apply(
            &pods,
            Change::Upsert(object("child", Some("owner"), false, &[])),
        );
        let now = Timestamp::UNIX_EPOCH;

        state.to_delete.add("owner".into());
        let uid = state.to_delete.get().expect("queued");
        state.finished(Queue::Delete, &uid, Outcome::Retry("boom".into()), now);
        assert_eq!(
            state.to_delete.next_due(),
            Some(now + SignedDuration::from_millis(5))
        );

        // The API found the owner gone: it leaves the graph, its child is
        // looked at, and it is remembered absent.
        state
            .to_delete
            .promote_due(now + SignedDuration::from_secs(1));
        let uid = state.to_delete.get().expect("due");
        state.finished(Queue::Delete, &uid, Outcome::Gone, now);
        assert!(state.graph.node("owner").is_none());
        assert_eq!(state.to_delete.drain(), vec!["child".to_string()]);
        let owner = Identity {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: "ns1".into(),
            name: "pod-owner".into(),
            uid: "owner".into(),
        };
        assert!(state.absent.lock().is_ok_and(|mut a| a.has(&owner)));

        state.to_delete.add("x".into());
        let uid = state.to_delete.get().expect("queued");
        state.finished(
            Queue::Delete,
            &uid,
            Outcome::Enqueue(vec!["a".into(), "b".into()]),
            now,
        );
        assert_eq!(
            state.to_delete.drain(),
            vec!["a".to_string(), "b".to_string()]
        );
    }
}
