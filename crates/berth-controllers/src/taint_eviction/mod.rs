//! The taint eviction controller (upstream `pkg/controller/tainteviction`):
//! evicts pods from nodes with NoExecute taints they do not tolerate, or
//! tolerate only for a while, at the exact time [`due`] computes, and
//! force-deletes pods from out-of-service nodes.
//!
//! One task watches nodes and pods, folds them into the [`schedule`], and
//! sleeps on the clock until the earliest due time. Evictions run as their
//! own tasks (bounded), so a slow API call does not delay the next one:
//! the pod gets `DisruptionTarget=True` (reason `DeletionByTaintManager`),
//! then is deleted (with its UID as precondition), with the
//! `TaintManagerEviction` events upstream records. After a restart the
//! schedule is rebuilt from the objects: evictions due while the
//! controller was down happen at once, the rest at their time.

pub mod due;
pub mod schedule;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use berth_core::FeatureGates;
use berth_core::clock::Clock;

use crate::events::{EventRecorder, TYPE_NORMAL, pod_ref};
use crate::metrics::ControllerMetrics;
use schedule::{DueEviction, EvictionSchedule, PodKey};

/// Upstream's controller name, also the `--controllers` name and the
/// events' source component.
pub const CONTROLLER_NAME: &str = "taint-eviction-controller";
/// The Event reason for evictions and their cancellation.
pub const REASON: &str = "TaintManagerEviction";

/// Settings of the taint eviction controller.
#[derive(Debug, Clone)]
pub struct TaintEvictionConfig {
    pub gates: FeatureGates,
    /// Evictions carried out at the same time.
    pub concurrency: usize,
    /// How long to wait before retrying a failed eviction.
    pub retry_after: Duration,
}

impl Default for TaintEvictionConfig {
    fn default() -> Self {
        TaintEvictionConfig {
            gates: FeatureGates::default(),
            concurrency: 32,
            retry_after: Duration::from_secs(1),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct TaintEvictionController {
    client: kube::Client,
    clock: Clock,
    config: TaintEvictionConfig,
    metrics: ControllerMetrics,
    recorder: EventRecorder,
}

/// What one relist has seen so far.
#[derive(Default)]
struct Relist<K> {
    seen: Option<HashSet<K>>,
}

impl TaintEvictionController {
    pub fn new(
        client: kube::Client,
        clock: Clock,
        config: TaintEvictionConfig,
        metrics: ControllerMetrics,
    ) -> TaintEvictionController {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), CONTROLLER_NAME);
        TaintEvictionController {
            client,
            clock,
            config,
            metrics,
            recorder,
        }
    }

    fn cancelled(&self, key: &PodKey) {
        self.recorder.record(
            pod_ref(&key.namespace, &key.name, None),
            TYPE_NORMAL,
            REASON,
            format!("Cancelling deletion of Pod {key}"),
        );
    }

    /// Runs until dropped.
    pub async fn run(self) {
        let nodes = watcher::watcher(
            Api::<Node>::all(self.client.clone()),
            watcher::Config::default(),
        )
        .default_backoff();
        let pods = watcher::watcher(
            Api::<Pod>::all(self.client.clone()),
            watcher::Config::default(),
        )
        .default_backoff();
        let mut nodes = std::pin::pin!(nodes);
        let mut pods = std::pin::pin!(pods);
        let mut schedule = EvictionSchedule::new(self.config.gates);
        let (mut nodes_synced, mut pods_synced) = (false, false);
        let mut node_relist: Relist<String> = Relist::default();
        let mut pod_relist: Relist<PodKey> = Relist::default();
        let mut node_names: HashSet<String> = HashSet::new();
        let mut evictions: JoinSet<(DueEviction, Result<(), kube::Error>)> = JoinSet::new();
        let permits = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        loop {
            let next = if nodes_synced && pods_synced {
                schedule.next_due()
            } else {
                None
            };
            let clock = self.clock.clone();
            let wake = async move {
                match next {
                    Some(at) => clock.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(done) = evictions.join_next(), if !evictions.is_empty() => {
                    if let Ok((eviction, Err(err))) = done {
                        tracing::warn!(pod = %eviction.pod, %err, "eviction failed, retrying");
                        let retry = self.clock.now()
                            .checked_add(SignedDuration::try_from(self.config.retry_after).unwrap_or(SignedDuration::ZERO))
                            .unwrap_or(Timestamp::MAX);
                        schedule.failed(&eviction, retry);
                    }
                }
                Some(event) = nodes.next() => match event {
                    Ok(event) => {
                        let now = self.clock.now();
                        for key in self.node_event(&mut schedule, &mut node_relist, &mut node_names, &mut nodes_synced, event, now) {
                            self.cancelled(&key);
                        }
                    }
                    Err(err) => tracing::warn!(%err, "watching nodes"),
                },
                Some(event) = pods.next() => match event {
                    Ok(event) => {
                        for key in self.pod_event(&mut schedule, &mut pod_relist, &mut pods_synced, event) {
                            self.cancelled(&key);
                        }
                    }
                    Err(err) => tracing::warn!(%err, "watching pods"),
                },
                _ = wake => {
                    for eviction in schedule.take_due(self.clock.now()) {
                        let this = self.clone();
                        let permits = permits.clone();
                        evictions.spawn(async move {
                            let _permit = permits.acquire_owned().await;
                            let result = this.evict(&eviction).await;
                            (eviction, result)
                        });
                    }
                }
            }
        }
    }

    fn node_event(
        &self,
        schedule: &mut EvictionSchedule,
        relist: &mut Relist<String>,
        names: &mut HashSet<String>,
        synced: &mut bool,
        event: Event<Node>,
        now: Timestamp,
    ) -> Vec<PodKey> {
        match event {
            Event::Init => {
                relist.seen = Some(HashSet::new());
                Vec::new()
            }
            Event::InitApply(node) | Event::Apply(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                if let Some(seen) = relist.seen.as_mut() {
                    seen.insert(name.clone());
                }
                names.insert(name);
                schedule.set_node(&node, now)
            }
            Event::Delete(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                names.remove(&name);
                schedule.remove_node(&name)
            }
            Event::InitDone => {
                *synced = true;
                let Some(seen) = relist.seen.take() else {
                    return Vec::new();
                };
                let gone: Vec<String> = names.difference(&seen).cloned().collect();
                let mut cancelled = Vec::new();
                for name in gone {
                    names.remove(&name);
                    cancelled.extend(schedule.remove_node(&name));
                }
                cancelled
            }
        }
    }

    fn pod_event(
        &self,
        schedule: &mut EvictionSchedule,
        relist: &mut Relist<PodKey>,
        synced: &mut bool,
        event: Event<Pod>,
    ) -> Vec<PodKey> {
        match event {
            Event::Init => {
                relist.seen = Some(HashSet::new());
                Vec::new()
            }
            Event::InitApply(pod) | Event::Apply(pod) => {
                let key = PodKey::of(&pod);
                if let Some(seen) = relist.seen.as_mut() {
                    seen.insert(key.clone());
                }
                if schedule.set_pod(&pod) {
                    vec![key]
                } else {
                    Vec::new()
                }
            }
            Event::Delete(pod) => {
                let key = PodKey::of(&pod);
                if schedule.remove_pod(&key) {
                    vec![key]
                } else {
                    Vec::new()
                }
            }
            Event::InitDone => {
                *synced = true;
                match relist.seen.take() {
                    Some(seen) => schedule.retain_pods(&seen),
                    None => Vec::new(),
                }
            }
        }
    }

    /// Marks the pod as a disruption target and deletes it (upstream
    /// `addConditionAndDeletePod`), or force-deletes it from an
    /// out-of-service node.
    async fn evict(&self, eviction: &DueEviction) -> Result<(), kube::Error> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &eviction.pod.namespace);
        let name = eviction.pod.name.as_str();
        tracing::info!(controller = CONTROLLER_NAME, pod = %eviction.pod, "Deleting pod");
        self.recorder.record(
            pod_ref(&eviction.pod.namespace, name, Some(&eviction.uid)),
            TYPE_NORMAL,
            REASON,
            format!("Marking for deletion Pod {}", eviction.pod),
        );
        let mut attempts = 0;
        loop {
            let Some(mut pod) = api.get_opt(name).await? else {
                return Ok(());
            };
            if pod.metadata.uid.as_deref() != Some(eviction.uid.as_str()) {
                return Ok(());
            }
            if !add_disruption_target(&mut pod, self.clock.now()) {
                break;
            }
            match api.replace_status(name, &PostParams::default(), &pod).await {
                Ok(_) => break,
                Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => {
                    attempts += 1;
                }
                Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
                Err(err) => return Err(err),
            }
        }
        let params = DeleteParams {
            grace_period_seconds: eviction.due.force.then_some(0),
            preconditions: Some(Preconditions {
                uid: Some(eviction.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_not_found() || status.code == 409 => {
                return Ok(());
            }
            Err(err) => return Err(err),
        }
        self.metrics.pod_deletions.inc();
        let late = self.clock.now().duration_since(eviction.due.at);
        self.metrics
            .pod_deletion_duration
            .observe(late.as_secs_f64().max(0.0));
        Ok(())
    }
}

/// Upstream `UpdatePodCondition` with `DisruptionTarget=True`; false if the
/// condition is already there as wanted.
fn add_disruption_target(pod: &mut Pod, now: Timestamp) -> bool {
    let status = pod.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let want = PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("DeletionByTaintManager".into()),
        message: Some("Taint manager: deleting due to NoExecute taint".into()),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    };
    match conditions.iter_mut().find(|c| c.type_ == want.type_) {
        Some(c)
            if c.status == want.status && c.reason == want.reason && c.message == want.message =>
        {
            false
        }
        Some(c) => {
            let transition = if c.status == want.status {
                c.last_transition_time.clone()
            } else {
                want.last_transition_time.clone()
            };
            *c = PodCondition {
                last_transition_time: transition,
                ..want
            };
            true
        }
        None => {
            conditions.push(want);
            true
        }
    }
}
