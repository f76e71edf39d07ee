//! The node lifecycle controller's writes, off its event loop.
//!
//! Upstream's informers keep reading while workers write; a controller that
//! awaited each write inside its loop stopped reading Leases for as long as
//! its writes took, and under load (150,000 simulated nodes, writes taking
//! 100 ms+) that was longer than the grace period: healthy nodes were marked
//! Unknown, which queued more writes. Here the loop only records what a node
//! needs ([`NodeWork`], merged per node in a [`WorkQueue`]); a bounded set of
//! tasks carries it out, one task per node at a time, and the loop applies
//! what came back ([`JobDone`]).
//!
//! What a task writes is decided when it starts, from the controller's
//! newest copy of the node, not when the work was queued: a status or taint
//! decision made against an older copy is made again (and dropped if the
//! node has since spoken).

use std::collections::{HashMap, HashSet, VecDeque};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};

use crate::events::{EventRecorder, TYPE_WARNING, pod_ref};
use berth_core::pod::PodKey;
use berth_core::taint_expiry::{Expired, expire};

use super::health::{self, GracePeriods, NodeHealth, STATUS_FALSE};
use super::rate_limited_queue::TimedValue;
use super::taints::{TaintChange, apply_change};

/// How many nodes' writes run at once.
pub const WRITES_IN_FLIGHT: usize = 32;
/// How many times a write is retried on a conflict.
const RETRIES: usize = 5;

/// What one node needs written, as queued by the event loop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeWork {
    /// A monitor pass found the node silent past its grace: write the
    /// Unknown conditions (decided again when the write starts).
    pub status: bool,
    /// After the status, record `NodeNotReady`.
    pub became_not_ready: bool,
    /// The monitor pass's NoExecute swap or lift.
    pub monitor_taints: Option<TaintChange>,
    /// Keep the NoSchedule condition taints in step with the node.
    pub no_schedule: bool,
    /// Due from the zone's rate-limited queue: add the NoExecute taint.
    pub evict: Vec<(String, TimedValue)>,
    /// Set the node's pods' Ready condition to False.
    pub mark_pods_not_ready: bool,
    /// Remove the taints whose `berth.dev/taint-expiry` time has come.
    pub expire_taints: bool,
}

impl NodeWork {
    /// Folds newer work into older: a newer monitor decision replaces the
    /// older one, flags accumulate, queued evictions are kept.
    fn merge(&mut self, newer: NodeWork) {
        self.status |= newer.status;
        self.became_not_ready |= newer.became_not_ready;
        if newer.monitor_taints.is_some() {
            self.monitor_taints = newer.monitor_taints;
        }
        self.no_schedule |= newer.no_schedule;
        self.evict.extend(newer.evict);
        self.mark_pods_not_ready |= newer.mark_pods_not_ready;
        self.expire_taints |= newer.expire_taints;
    }
}

/// Work waiting per node, first queued first started, at most one task per
/// node at a time.
#[derive(Debug, Default)]
pub struct WorkQueue {
    waiting: HashMap<String, NodeWork>,
    order: VecDeque<String>,
    busy: HashSet<String>,
}

impl WorkQueue {
    /// Queues work for a node, merged with what already waits for it.
    pub fn add(&mut self, node: &str, work: NodeWork) {
        match self.waiting.get_mut(node) {
            Some(waiting) => waiting.merge(work),
            None => {
                self.waiting.insert(node.to_string(), work);
                self.order.push_back(node.to_string());
            }
        }
    }

    /// The next node whose work can start (no task of its own running),
    /// marked busy until [`WorkQueue::finished`].
    pub fn start_next(&mut self) -> Option<(String, NodeWork)> {
        let at = self.order.iter().position(|n| !self.busy.contains(n))?;
        let name = self.order.remove(at)?;
        let work = self.waiting.remove(&name)?;
        self.busy.insert(name.clone());
        Some((name, work))
    }

    /// The node's task ended; its waiting work may start.
    pub fn finished(&mut self, node: &str) {
        self.busy.remove(node);
    }

    /// Nothing waits and nothing runs.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.busy.is_empty()
    }

    pub fn is_waiting(&self, node: &str) -> bool {
        self.waiting.contains_key(node)
    }
}

/// Why a taint change is written, for what is done with its outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum TaintPurpose {
    /// The monitor pass's swap or lift.
    Monitor,
    /// The NoSchedule condition taints.
    NoSchedule,
    /// The zone queue's NoExecute taint.
    Evict { zone: String, value: TimedValue },
}

/// A task's input, decided from the controller's newest copy of the node.
pub struct Job {
    pub name: String,
    pub node: Node,
    pub health: NodeHealth,
    pub grace: GracePeriods,
    pub status: Option<Vec<NodeCondition>>,
    pub became_not_ready: bool,
    pub taints: Vec<(TaintChange, TaintPurpose)>,
    /// Remove expired taints (decided again on the copy the write starts
    /// from).
    pub expire_taints: bool,
    /// `None`: leave the pods alone.
    pub mark_pods: Option<Vec<PodKey>>,
}

impl Job {
    pub fn is_empty(&self) -> bool {
        self.status.is_none()
            && self.taints.is_empty()
            && !self.expire_taints
            && self.mark_pods.is_none()
    }
}

/// A task's outcome, applied by the event loop.
pub struct JobDone {
    pub name: String,
    /// The newest copy of the node the task wrote or read.
    pub node: Option<Node>,
    /// The Unknown conditions' write (`None`: not attempted).
    pub status: Option<Result<(), kube::Error>>,
    pub became_not_ready: bool,
    /// Each taint change's outcome: whether the taints changed.
    pub taints: Vec<(TaintPurpose, Result<bool, kube::Error>)>,
    /// The taints removed because they expired (`None`: not attempted).
    pub expired: Option<Result<Vec<Expired>, kube::Error>>,
    pub mark_pods: Option<Result<(), kube::Error>>,
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.is_not_found())
}

/// Carries out one node's job: the status first (if it fails, nothing else
/// of the monitor's is done, as upstream skips the node), then the taint
/// changes in order, then the pods.
pub async fn run_job(
    client: kube::Client,
    clock: berth_core::clock::Clock,
    recorder: EventRecorder,
    job: Job,
) -> JobDone {
    let Job {
        name,
        mut node,
        health,
        grace,
        status,
        became_not_ready,
        taints,
        expire_taints: expire,
        mark_pods,
    } = job;
    let api: Api<Node> = Api::all(client.clone());
    let mut done = JobDone {
        name,
        node: None,
        status: None,
        became_not_ready: false,
        taints: Vec::new(),
        expired: None,
        mark_pods: None,
    };
    if let Some(conditions) = status {
        let result = write_unknown(&api, &clock, &mut node, &health, &grace, conditions).await;
        let failed = result.is_err();
        done.status = Some(result);
        done.node = Some(node.clone());
        if failed {
            return done;
        }
        done.became_not_ready = became_not_ready;
    }
    for (change, purpose) in taints {
        let result = update_taints(&api, &clock, &mut node, &change).await;
        if matches!(result, Ok(true)) {
            done.node = Some(node.clone());
            // What an operator watches for: the controller tainting a node
            // (pods are evicted from NoExecute) or lifting its taints.
            let list = |taints: &[k8s_openapi::api::core::v1::Taint]| {
                taints
                    .iter()
                    .map(berth_core::taint_spec::format_taint)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            tracing::info!(
                node = %done.name,
                added = %list(&change.add),
                removed = %list(&change.remove),
                "node taints updated"
            );
        }
        done.taints.push((purpose, result));
    }
    if expire {
        let result = remove_expired_taints(&api, &clock, &mut node).await;
        if matches!(&result, Ok(removed) if !removed.is_empty()) {
            done.node = Some(node.clone());
        }
        done.expired = Some(result);
    }
    if let Some(pods) = mark_pods {
        let now = clock.now();
        done.mark_pods = Some(mark_pods_not_ready(&client, &recorder, &done.name, pods, now).await);
    }
    done
}

/// Writes the Unknown conditions; on a conflict re-reads the node and
/// decides again.
async fn write_unknown(
    api: &Api<Node>,
    clock: &berth_core::clock::Clock,
    node: &mut Node,
    health: &NodeHealth,
    grace: &GracePeriods,
    mut conditions: Vec<NodeCondition>,
) -> Result<(), kube::Error> {
    let name = node.metadata.name.clone().unwrap_or_default();
    for attempt in 0..RETRIES {
        node.status.get_or_insert_with(Default::default).conditions = Some(conditions.clone());
        match api
            .replace_status(&name, &PostParams::default(), &*node)
            .await
        {
            Ok(updated) => {
                *node = updated;
                return Ok(());
            }
            Err(err) if is_conflict(&err) && attempt + 1 < RETRIES => {
                *node = api.get(&name).await?;
                // The node's own health as of the job's start still holds:
                // a write from the node itself would have changed it, and
                // the loop decides again on the next pass.
                match health::check(node, health, clock.now(), grace).status_update {
                    Some(c) => conditions = c,
                    None => return Ok(()),
                }
            }
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Applies a taint change to the node (the job's copy first, the server's
/// on a conflict); true if the taints changed.
async fn update_taints(
    api: &Api<Node>,
    clock: &berth_core::clock::Clock,
    node: &mut Node,
    change: &TaintChange,
) -> Result<bool, kube::Error> {
    let name = node.metadata.name.clone().unwrap_or_default();
    for attempt in 0..RETRIES {
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        let Some(new) = apply_change(&taints, change, clock.now()) else {
            return Ok(false);
        };
        let mut changed = node.clone();
        changed.spec.get_or_insert_with(Default::default).taints = (!new.is_empty()).then_some(new);
        match api.replace(&name, &PostParams::default(), &changed).await {
            Ok(updated) => {
                *node = updated;
                return Ok(true);
            }
            Err(err) if is_conflict(&err) && attempt + 1 < RETRIES => {
                *node = api.get(&name).await?;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(false)
}

/// Removes the node's expired taints and their entries
/// ([`berth_core::taint_expiry::expire`], decided on the job's copy first,
/// the server's on a conflict); returns the taints removed.
async fn remove_expired_taints(
    api: &Api<Node>,
    clock: &berth_core::clock::Clock,
    node: &mut Node,
) -> Result<Vec<Expired>, kube::Error> {
    let name = node.metadata.name.clone().unwrap_or_default();
    for attempt in 0..RETRIES {
        let mut changed = node.clone();
        let (removed, any) = expire(&mut changed, clock.now());
        if !any {
            return Ok(Vec::new());
        }
        match api.replace(&name, &PostParams::default(), &changed).await {
            Ok(updated) => {
                *node = updated;
                return Ok(removed);
            }
            Err(err) if is_conflict(&err) && attempt + 1 < RETRIES => {
                *node = api.get(&name).await?;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(Vec::new())
}

/// `MarkPodsNotReady`: each pod on the node with a Ready condition gets
/// Ready=False, and a `NodeNotReady` event.
async fn mark_pods_not_ready(
    client: &kube::Client,
    recorder: &EventRecorder,
    node: &str,
    pods: Vec<PodKey>,
    now: Timestamp,
) -> Result<(), kube::Error> {
    let mut first_error = None;
    for key in pods {
        let api: Api<Pod> = Api::namespaced(client.clone(), &key.namespace);
        let mut pod = match api.get_opt(&key.name).await {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(err) => {
                first_error.get_or_insert(err);
                continue;
            }
        };
        if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(node) {
            continue;
        }
        let Some(ready) = pod
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.iter_mut().find(|c| c.type_ == "Ready"))
        else {
            continue;
        };
        if ready.status == STATUS_FALSE {
            continue;
        }
        ready.status = STATUS_FALSE.into();
        ready.last_transition_time = Some(Time(now));
        match api
            .replace_status(&key.name, &PostParams::default(), &pod)
            .await
        {
            Ok(_) => recorder.record(
                pod_ref(&key.namespace, &key.name, pod.metadata.uid.as_deref()),
                TYPE_WARNING,
                "NodeNotReady",
                "Node is not ready".into(),
            ),
            Err(err) if is_not_found(&err) => {}
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evict(node: &str) -> (String, TimedValue) {
        (
            "zone-a".into(),
            TimedValue {
                value: node.into(),
                uid: format!("uid-{node}"),
                added_at: Timestamp::UNIX_EPOCH,
                process_at: Timestamp::UNIX_EPOCH,
            },
        )
    }

    #[test]
    fn work_for_one_node_merges_and_keeps_its_place() {
        let mut queue = WorkQueue::default();
        queue.add(
            "a",
            NodeWork {
                status: true,
                became_not_ready: true,
                ..NodeWork::default()
            },
        );
        queue.add(
            "b",
            NodeWork {
                no_schedule: true,
                ..NodeWork::default()
            },
        );
        queue.add(
            "a",
            NodeWork {
                evict: vec![evict("a")],
                mark_pods_not_ready: true,
                ..NodeWork::default()
            },
        );
        let (name, work) = queue.start_next().expect("a is first");
        assert_eq!(name, "a");
        assert_eq!(
            work,
            NodeWork {
                status: true,
                became_not_ready: true,
                evict: vec![evict("a")],
                mark_pods_not_ready: true,
                ..NodeWork::default()
            }
        );
        assert_eq!(queue.start_next().map(|(n, _)| n).as_deref(), Some("b"));
        assert_eq!(queue.start_next(), None);
    }

    #[test]
    fn a_newer_monitor_decision_replaces_the_older_one() {
        let mut older = NodeWork {
            monitor_taints: Some(TaintChange::default()),
            ..NodeWork::default()
        };
        let lift = TaintChange {
            add: Vec::new(),
            remove: vec![k8s_openapi::api::core::v1::Taint {
                key: "node.kubernetes.io/unreachable".into(),
                effect: "NoExecute".into(),
                ..Default::default()
            }],
        };
        older.merge(NodeWork {
            monitor_taints: Some(lift.clone()),
            ..NodeWork::default()
        });
        older.merge(NodeWork {
            no_schedule: true,
            ..NodeWork::default()
        });
        assert_eq!(older.monitor_taints, Some(lift));
        assert!(older.no_schedule);
    }

    #[test]
    fn a_node_with_a_running_task_waits_while_others_start() {
        let mut queue = WorkQueue::default();
        queue.add("a", NodeWork::default());
        let (first, _) = queue.start_next().expect("a starts");
        assert_eq!(first, "a");
        // More work for a while its task runs: it waits, b goes first.
        queue.add("a", NodeWork::default());
        queue.add("b", NodeWork::default());
        assert_eq!(queue.start_next().map(|(n, _)| n).as_deref(), Some("b"));
        assert_eq!(queue.start_next(), None);
        assert!(queue.is_waiting("a"));
        queue.finished("a");
        assert_eq!(queue.start_next().map(|(n, _)| n).as_deref(), Some("a"));
        queue.finished("a");
        queue.finished("b");
        assert!(queue.is_idle());
    }
}
