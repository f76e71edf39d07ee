//! The scheduler as a state machine over plain data: cluster updates go in
//! (nodes and pods as the watches report them, binding results), decisions
//! come out (bind this pod to that node; this pod fits nowhere, because…).
//! It owns the [`SchedulingQueue`], the [`Cache`] with assumed pods and the
//! [`Cycle`]; it does no I/O and reads no clock, so tests drive it with
//! virtual instants and the kube-rs glue ([`crate::client`]) only carries
//! its decisions to the API server.

use std::collections::HashSet;
use std::sync::Arc;

use berth_core::priority::{may_preempt, pod_priority};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use tokio::time::Instant;

use crate::cache::Cache;
use crate::cycle::{
    Cycle, DEFAULT_SCHEDULER_NAME, Preemption, Profile, ScheduleError, ScheduleResult,
};
use crate::framework::{Code, FitError, PodInfo};
use crate::hints::{ActionType, ClusterEvent, may_help_in, node_update_actions};
use crate::nominator::nominated_node_name;
use crate::queue::{PendingCounts, QueueConfig, SchedulingQueue};
use crate::snapshot::WorkloadSelectors;

pub use crate::pod_key::pod_key;

/// `spec.nodeName`, if set.
pub fn assigned_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// A decision to carry out: bind the pod.
#[derive(Debug, Clone)]
pub struct Binding {
    pub key: String,
    pub pod: Arc<Pod>,
    pub result: ScheduleResult,
    /// How many times the pod was tried, this one included.
    pub attempts: u32,
    /// When the pod was first tried, for the metrics.
    pub initial_attempt: Instant,
}

/// A decision to carry out: tell the pod (condition and event) why it was
/// not scheduled.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub key: String,
    pub pod: Arc<Pod>,
    pub error: ScheduleError,
    pub attempts: u32,
    /// The PostFilter preempted pods for it: the victims to delete.
    pub preemption: Option<Preemption>,
    /// The `status.nominatedNodeName` to write with the condition: a node
    /// after a preemption, "" to clear an earlier nomination, `None` to
    /// leave the field alone.
    pub nominate: Option<String>,
    /// Pods of lower priority nominated to the node the preemption chose:
    /// their nomination ends (upstream clears their field, so that they
    /// look for room elsewhere).
    pub unnominated: Vec<Arc<Pod>>,
}

impl Refusal {
    /// The `PodScheduled=False` reason: `Unschedulable` when nodes were
    /// rejected, `SchedulerError` after an internal error.
    pub fn reason(&self) -> &'static str {
        if self.error.is_error() {
            "SchedulerError"
        } else {
            "Unschedulable"
        }
    }
}

/// What the PostFilter decided for a pod.
#[derive(Debug, Default)]
struct PostFilter {
    preemption: Option<Preemption>,
    nominate: Option<String>,
    unnominated: Vec<Arc<Pod>>,
}

/// What a scheduling attempt decided.
#[derive(Debug, Clone)]
pub enum Decision {
    Bind(Binding),
    Refuse(Refusal),
}

/// The scheduler's state.
pub struct Scheduler {
    profile: Profile,
    queue: SchedulingQueue,
    cache: Cache,
    cycle: Cycle,
    /// Victims of this scheduler's preemptions not yet seen gone: counted
    /// as terminating by preemption before the watch shows them so.
    preempting: HashSet<String>,
}

/// Upstream's `PodEligibleToPreemptOthers` messages.
pub const NOT_ELIGIBLE_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const NOT_ELIGIBLE_TERMINATING: &str =
    "not eligible due to a terminating pod on the nominated node.";

/// `podTerminatingByPreemption`: deleted, with the `DisruptionTarget`
/// condition a preemption sets.
pub fn terminating_by_preemption(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some() && preemption_condition(pod).is_some()
}

/// The `DisruptionTarget=True` condition a preemption set on the pod.
pub fn preemption_condition(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())?
        .iter()
        .find(|c| {
            c.type_ == DISRUPTION_TARGET
                && c.status == "True"
                && c.reason.as_deref() == Some(PREEMPTION_BY_SCHEDULER)
        })
}

/// `v1.DisruptionTarget` and `v1.PodReasonPreemptionByScheduler`.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";

impl Scheduler {
    /// A scheduler for `profile`; `seed` seeds the tie-breaker.
    pub fn new(profile: Profile, queue: QueueConfig, seed: u64) -> Self {
        Scheduler {
            profile,
            queue: SchedulingQueue::new(queue),
            cache: Cache::new(),
            cycle: Cycle::new(seed),
            preempting: HashSet::new(),
        }
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// A PodDisruptionBudget was added or changed: preemption weighs it
    /// from the next cycle. No pod is moved in the queue: a budget only
    /// orders the victims, it never makes a pod fit.
    pub fn upsert_pdb(&mut self, pdb: PodDisruptionBudget) {
        self.cache.budgets_mut().upsert(pdb);
    }

    /// A PodDisruptionBudget was deleted.
    pub fn delete_pdb(&mut self, namespace: &str, name: &str) {
        self.cache.budgets_mut().delete(namespace, name);
    }

    /// The cache alone, the scheduler done with (an explanation's).
    pub fn into_cache(self) -> Cache {
        self.cache
    }

    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    pub fn pending(&self) -> PendingCounts {
        self.queue.pending()
    }

    /// Whether a pod is ready to be tried.
    pub fn has_work(&self) -> bool {
        self.queue.has_active()
    }

    /// Whether this scheduler takes `pod`: its `spec.schedulerName` (the
    /// default scheduler's when unset) is the profile's.
    pub fn responsible_for(&self, pod: &Pod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_SCHEDULER_NAME);
        name == self.profile.scheduler_name
    }

    /// A node was added or changed.
    /// Takes the node owned, or shared with the process's other watchers.
    pub fn upsert_node(&mut self, node: impl Into<Arc<Node>>, now: Instant) {
        let new: Arc<Node> = node.into();
        match self.cache.upsert_node(new.clone()) {
            None => self.on_event(
                &ClusterEvent::Node {
                    action: ActionType::ADD,
                    old: None,
                    new: &new,
                },
                now,
            ),
            Some(old) => {
                let action = node_update_actions(&old, &new);
                if !action.is_empty() {
                    self.on_event(
                        &ClusterEvent::Node {
                            action,
                            old: Some(&old),
                            new: &new,
                        },
                        now,
                    );
                }
            }
        }
    }

    /// A node was deleted (PodTopologySpread's domains may change).
    pub fn delete_node(&mut self, name: &str, now: Instant) {
        if let Some(gone) = self.cache.remove_node(name) {
            self.on_event(&ClusterEvent::NodeDelete { node: &gone }, now);
        }
    }

    /// A namespace was added or changed (InterPodAffinity's namespace
    /// selectors read its labels).
    pub fn upsert_namespace(&mut self, namespace: Namespace, now: Instant) {
        let name = namespace.metadata.name.clone().unwrap_or_default();
        let labels = namespace.metadata.labels.clone().unwrap_or_default();
        let old = self.cache.upsert_namespace(&name, labels);
        if old.as_ref() == self.cache.namespace_labels(&name) {
            return;
        }
        let before = old.map(|labels| {
            let mut ns = namespace.clone();
            ns.metadata.labels = Some(labels);
            ns
        });
        self.on_event(
            &ClusterEvent::Namespace {
                old: before.as_ref(),
                new: Some(&namespace),
            },
            now,
        );
    }

    /// A namespace was deleted.
    pub fn delete_namespace(&mut self, name: &str, now: Instant) {
        if let Some(labels) = self.cache.delete_namespace(name) {
            let mut gone = Namespace::default();
            gone.metadata.name = Some(name.to_string());
            gone.metadata.labels = Some(labels);
            self.on_event(
                &ClusterEvent::Namespace {
                    old: Some(&gone),
                    new: None,
                },
                now,
            );
        }
    }

    /// Where PodTopologySpread's default constraints get the selectors of
    /// the workloads owning pods (berth serves none yet: see
    /// [`crate::snapshot::ServedWorkloads`]).
    pub fn set_workloads(&mut self, workloads: Arc<dyn WorkloadSelectors>) {
        self.cache.set_workloads(workloads);
    }

    /// A pod was added or changed: a bound pod is counted on its node; a
    /// pending pod of this scheduler is queued.
    /// Takes the pod owned, or shared with the process's other watchers.
    pub fn upsert_pod(&mut self, pod: impl Into<Arc<Pod>>, now: Instant) {
        let pod: Arc<Pod> = pod.into();
        let key = pod_key(&pod);
        if is_terminal(&pod) {
            self.delete_pod(&key, now);
            return;
        }
        if let Some(node) = assigned_node(&pod).map(str::to_string) {
            self.queue.delete(&key);
            self.cache.nominator_mut().delete(&key);
            let was_assumed = self.cache.pod(&key).is_some_and(|p| p.assumed);
            let new = pod;
            match self.cache.add_pod(&key, new.clone(), &node) {
                // First seen bound (an assumed pod's binding included).
                None => self.on_event(&ClusterEvent::AssignedPodAdd { pod: &new }, now),
                Some(_) if was_assumed => {
                    self.on_event(&ClusterEvent::AssignedPodAdd { pod: &new }, now)
                }
                Some(old) if old.metadata.labels != new.metadata.labels => self.on_event(
                    &ClusterEvent::AssignedPodUpdate {
                        old: &old,
                        new: &new,
                    },
                    now,
                ),
                Some(_) => {}
            }
            return;
        }
        if self.responsible_for(&pod) && pod.metadata.deletion_timestamp.is_none() {
            let info = PodInfo::new(pod);
            self.cache.nominator_mut().pod_updated(&key, &info);
            self.queue.add(key, info, now);
        } else {
            self.cache.nominator_mut().delete(&key);
            self.queue.delete(&key);
        }
    }

    /// A pod was deleted (or finished): it leaves the queue, and a bound
    /// pod frees its node, which may help pods waiting for room.
    pub fn delete_pod(&mut self, key: &str, now: Instant) {
        self.queue.delete(key);
        self.cache.nominator_mut().delete(key);
        self.preempting.remove(key);
        if let Some(gone) = self.cache.remove_pod(key) {
            // An assumed pod's object has no nodeName yet; plugins' hints
            // look at where the pod was.
            let pod = if assigned_node(&gone.pod).is_none() {
                let mut bound = (*gone.pod).clone();
                bound.spec.get_or_insert_default().node_name = Some(gone.node.clone());
                Arc::new(bound)
            } else {
                gone.pod
            };
            self.on_event(&ClusterEvent::AssignedPodDelete { pod: &pod }, now);
        }
    }

    fn on_event(&mut self, event: &ClusterEvent<'_>, now: Instant) {
        let profile = &self.profile;
        let workloads = self.cache.workloads().clone();
        self.queue.move_on_event(now, |queued| {
            queued
                .unschedulable_plugins
                .iter()
                .any(|plugin| may_help_in(plugin, &queued.pod, event, profile, &*workloads))
        });
    }

    /// Moves pods whose backoff is over (or that waited 5 minutes as
    /// unschedulable) back to activeQ.
    pub fn flush(&mut self, now: Instant) {
        self.queue.flush(now);
    }

    /// When [`Scheduler::flush`] next has work.
    pub fn next_wakeup(&mut self) -> Option<Instant> {
        self.queue.next_wakeup()
    }

    /// Tries the next pod: on success the pod is assumed on its node (the
    /// caller binds it and reports back); on failure it returns to the
    /// queue and the refusal says why.
    pub fn schedule_one(&mut self, now: Instant) -> Option<Decision> {
        let queued = self.queue.pop(now)?;
        let pod = queued.pod.pod_arc().clone();
        match self
            .cycle
            .schedule_pod(&self.profile, &queued.pod, &self.cache)
        {
            Ok(result) => {
                self.cache.assume(&queued.key, &queued.pod, &result.node);
                Some(Decision::Bind(Binding {
                    key: queued.key,
                    pod,
                    result,
                    attempts: queued.attempts,
                    initial_attempt: queued.initial_attempt.unwrap_or(now),
                }))
            }
            Err(mut error) => {
                let mut post = PostFilter::default();
                if let ScheduleError::Fit(fit) = &mut error {
                    post = self.post_filter(&queued.key, &queued.pod, fit);
                }
                self.queue.requeue(
                    &queued.key,
                    error.unschedulable_plugins(),
                    error.is_error(),
                    now,
                );
                Some(Decision::Refuse(Refusal {
                    key: queued.key,
                    pod,
                    error,
                    attempts: queued.attempts,
                    preemption: post.preemption,
                    nominate: post.nominate,
                    unnominated: post.unnominated,
                }))
            }
        }
    }

    /// DefaultPreemption's PostFilter for a pod no node fits: whether it
    /// may preempt (`PodEligibleToPreemptOthers`), then the cycle's
    /// preemption; the message goes after the filters' in `fit`.
    fn post_filter(&mut self, key: &str, pod: &PodInfo, fit: &mut FitError) -> PostFilter {
        if let Err(reason) = self.eligible_to_preempt(key, pod.pod()) {
            fit.diagnosis.post_filter_msg = format!("preemption: {reason}");
            return PostFilter::default();
        }
        match self.cycle.preempt(&self.profile, pod, &self.cache) {
            Ok(preemption) => {
                let priority = pod_priority(pod.pod());
                let nominator = self.cache.nominator_mut();
                nominator.nominate(key, pod.clone(), &preemption.node);
                let lower = nominator.lower_priority_on(&preemption.node, priority);
                for (other, _) in &lower {
                    nominator.delete(other);
                }
                for victim in &preemption.victims {
                    self.preempting.insert(pod_key(victim));
                }
                tracing::debug!(
                    pod = %key,
                    node = %preemption.node,
                    victims = preemption.victims.len(),
                    "preempting"
                );
                PostFilter {
                    nominate: Some(preemption.node.clone()),
                    preemption: Some(preemption),
                    unnominated: lower
                        .into_iter()
                        .map(|(_, n)| n.pod.pod_arc().clone())
                        .collect(),
                }
            }
            Err(message) => {
                fit.diagnosis.post_filter_msg = format!("preemption: {message}");
                // Upstream clears an earlier nomination: it no longer holds.
                let had = self.cache.nominator_mut().delete(key).is_some()
                    || !nominated_node_name(pod.pod()).is_empty();
                PostFilter {
                    nominate: had.then(String::new),
                    ..PostFilter::default()
                }
            }
        }
    }

    /// `PodEligibleToPreemptOthers`: not with `preemptionPolicy: Never`;
    /// not while a lower-priority pod on the node it was nominated to is
    /// still terminating by preemption (its victims are on their way out),
    /// unless that node can no longer take it at all.
    fn eligible_to_preempt(&self, key: &str, pod: &Pod) -> Result<(), &'static str> {
        if !may_preempt(pod) {
            return Err(NOT_ELIGIBLE_NEVER);
        }
        let nominated = self
            .cache
            .nominator()
            .node_of(key)
            .unwrap_or(nominated_node_name(pod));
        let Some(index) = self.cache.node_index(nominated) else {
            return Ok(());
        };
        let unresolvable = self
            .cycle
            .last_rejections()
            .iter()
            .any(|(i, s)| *i == index && s.code == Code::UnschedulableAndUnresolvable);
        if unresolvable {
            return Ok(());
        }
        let priority = pod_priority(pod);
        let terminating = self.cache.nodes()[index].pods.iter().any(|p| {
            pod_priority(&p.pod) < priority
                && (terminating_by_preemption(&p.pod) || self.preempting.contains(&pod_key(&p.pod)))
        });
        if terminating {
            Err(NOT_ELIGIBLE_TERMINATING)
        } else {
            Ok(())
        }
    }

    /// A victim's deletion failed (not because it was gone): it no longer
    /// counts as on its way out.
    pub fn preemption_failed(&mut self, victim: &str) {
        self.preempting.remove(victim);
    }

    /// The binding was written: the pod leaves the queue (the watch will
    /// confirm it in the cache).
    /// The cycle, for tests that change how it works.
    #[cfg(test)]
    pub(crate) fn cycle_mut(&mut self) -> &mut Cycle {
        &mut self.cycle
    }

    pub fn bind_succeeded(&mut self, key: &str) {
        self.queue.done(key);
    }

    /// The binding failed: the assumed pod is forgotten and the pod backs
    /// off before its next attempt.
    pub fn bind_failed(&mut self, key: &str, now: Instant) {
        self.cache.forget(key);
        self.queue.requeue(key, Vec::new(), true, now);
    }
}

#[cfg(test)]
mod memo_tests;
#[cfg(test)]
mod preemption_budget_tests;
#[cfg(test)]
mod preemption_constraint_tests;
#[cfg(test)]
mod preemption_tests;
#[cfg(test)]
mod tests;
