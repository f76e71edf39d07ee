//! DefaultPreemption's PostFilter over the cycle's snapshot (upstream's
//! `Evaluator.Preempt` from `findCandidates` to `SelectCandidate`): the
//! nodes the failed cycle rejected as `Unschedulable` (preemption might
//! help there; not where a filter said `UnschedulableAndUnresolvable`),
//! from a random offset, dry-run until upstream's number of candidates is
//! found (`minCandidateNodesPercentage` 10 %, `minCandidateNodesAbsolute`
//! 100) and at least one violates no budget; on each, the victims
//! [`crate::preemption::select_victims_on_node`] picks with the cycle's own
//! filters (nominated pods counted, as `RunFilterPluginsWithNominatedPods`)
//! on a copy of the node; then [`pick_one_node_for_preemption`].
//!
//! A victim taken off the copy of the node is taken out of what the
//! PreFilters counted (upstream's `RemovePod` extensions:
//! PodTopologySpread's domains and InterPodAffinity's term counts) and put
//! back with `AddPod` when reprieved, so a spread or anti-affinity
//! constraint is what preemption can cure. Upstream runs them on a copy of
//! the cycle state per node; here they update the one state in place and
//! every victim is put back before the next node (the counts are sums, so
//! that restores them exactly).

use std::sync::Arc;

use berth_core::priority::pod_priority;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use smallvec::SmallVec;

use super::memo::DryRun;
use super::{Cycle, NominatedPods, PodFilters, filter_with_nominated, fit_error};
use crate::cache::Cache;
use crate::framework::{Code, CycleState, Diagnosis, NodeInfo, NodeToStatus, PodInfo, Status};
use crate::preemption::{
    Candidate, DisruptionBudgets, PreemptionPod, Victims, more_important_first,
    pick_one_node_for_preemption, preemption_might_help, select_victims_on_node,
};
use crate::profile::Profile;

/// DefaultPreemptionArgs' `minCandidateNodesPercentage` default.
pub const MIN_CANDIDATE_NODES_PERCENTAGE: usize = 10;
/// DefaultPreemptionArgs' `minCandidateNodesAbsolute` default.
pub const MIN_CANDIDATE_NODES_ABSOLUTE: usize = 100;
/// A node with no pod of lower priority than the preemptor.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// The nodes preemption did not look at, or could not help.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// `calculateNumCandidates`: how many candidate nodes the dry run looks
/// for among `num_nodes` potential ones.
pub fn num_candidates(num_nodes: usize) -> usize {
    (num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE / 100)
        .max(MIN_CANDIDATE_NODES_ABSOLUTE)
        .min(num_nodes)
}

/// A preemption decided: the node the preemptor is nominated to and the
/// pods there that must go (most important first).
#[derive(Debug, Clone)]
pub struct Preemption {
    pub node: String,
    pub victims: Vec<Arc<Pod>>,
    pub num_pdb_violations: usize,
}

/// A candidate found by the dry run: the node (its index) and where what
/// the dry run found there is kept.
struct Found {
    node: usize,
    source: Source,
}

/// Where a dry run's outcome is: in the memo (under the node's index), or
/// at an index of this preemption's own list.
enum Source {
    Memo,
    Fresh(usize),
}

impl Cycle {
    /// The PostFilter, right after [`Cycle::schedule_pod`] failed to fit
    /// `pod` on any node (it reads that cycle's rejections): the chosen
    /// candidate, or why there is none (the message upstream puts after
    /// `preemption: `). The caller has checked the pod may preempt.
    pub fn preempt(
        &mut self,
        profile: &Profile,
        pod: &PodInfo,
        cache: &Cache,
    ) -> Result<Preemption, String> {
        let all = cache.nodes();
        let mut potential: Vec<usize> = Vec::with_capacity(self.rejected.len());
        potential.extend(
            self.rejected
                .iter()
                .filter(|(_, status)| preemption_might_help(status.code))
                .map(|(index, _)| *index),
        );
        if potential.is_empty() {
            return Err(not_helpful(all.len(), Vec::new()));
        }
        // Upstream's potential nodes come in the snapshot's order.
        potential.sort_unstable();
        let snapshot = cache.snapshot();
        let mut state = CycleState::with_memory(std::mem::take(&mut self.memory));
        let result = match PodFilters::new(profile, &mut state, pod, &snapshot) {
            Ok(filters) => self.dry_run(&filters, &mut state, pod, cache, &potential),
            Err(e) => Err(e.to_string()),
        };
        self.memory = state.into_memory();
        result
    }

    /// `DryRunPreemption` (sequential: the same candidates upstream's
    /// parallel run finds, in the order it would have checked them) then
    /// `SelectCandidate`.
    fn dry_run(
        &mut self,
        filters: &PodFilters<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        cache: &Cache,
        potential: &[usize],
    ) -> Result<Preemption, String> {
        let all = cache.nodes();
        let wanted = num_candidates(potential.len());
        let offset = self.tie_breaker.below(potential.len());
        let nominated = NominatedPods::for_pod(cache, pod);
        let memo = self.memo.prepare(filters, pod, cache);
        let budgets = cache.budgets().version();
        let priority = pod_priority(pod.pod());
        let mut non_violating: Vec<Found> = Vec::new();
        let mut violating: Vec<Found> = Vec::new();
        // Outcomes not kept in the memo.
        let mut fresh: Vec<DryRun> = Vec::new();
        // The nodes that are no candidate, named only if none is found
        // (the message lists them): those whose status the memo keeps,
        // and the others with theirs.
        let mut failed_kept: Vec<usize> = Vec::new();
        let mut failed: Vec<(usize, Status)> = Vec::new();
        let (from_offset, before_offset) = potential.split_at(offset);
        for &index in before_offset.iter().chain(from_offset) {
            let node = &all[index];
            let reuse = memo && nominated.own_index != Some(index);
            let kept = reuse && self.memo.dry_run(index, node, budgets).is_some();
            if !kept {
                let outcome = victims_on(
                    filters,
                    state,
                    pod,
                    priority,
                    node,
                    &nominated.on(index),
                    cache.budgets(),
                )
                .map(|(victims, described)| DryRun {
                    candidate: Candidate::new(&described, &victims),
                    victims,
                });
                let keep = reuse && outcome.as_ref().err().is_none_or(|s| s.code != Code::Error);
                match outcome {
                    Ok(found) if keep => {
                        self.memo.keep_dry_run(index, node, budgets, Ok(found));
                    }
                    Ok(found) => fresh.push(found),
                    Err(status) if keep => {
                        self.memo.keep_dry_run(index, node, budgets, Err(status));
                    }
                    Err(status) => {
                        failed.push((index, status));
                        continue;
                    }
                }
            }
            let (violations, source) = if reuse {
                match self.memo.peek_dry_run(index, node, budgets) {
                    Some(Ok(found)) => (found.victims.num_pdb_violations, Source::Memo),
                    _ => {
                        failed_kept.push(index);
                        continue;
                    }
                }
            } else {
                let k = fresh.len() - 1;
                (fresh[k].victims.num_pdb_violations, Source::Fresh(k))
            };
            let found = Found {
                node: index,
                source,
            };
            if violations == 0 {
                non_violating.push(found);
            } else {
                violating.push(found);
            }
            if !non_violating.is_empty() && non_violating.len() + violating.len() >= wanted {
                break;
            }
        }
        non_violating.append(&mut violating);
        let found = non_violating;
        let dry_run_of = |f: &Found| -> Option<&DryRun> {
            match f.source {
                Source::Memo => match self.memo.peek_dry_run(f.node, &all[f.node], budgets) {
                    Some(Ok(found)) => Some(found),
                    _ => None,
                },
                Source::Fresh(k) => fresh.get(k),
            }
        };
        let dry_runs: Vec<&DryRun> = found.iter().filter_map(dry_run_of).collect();
        let candidates: Vec<&Candidate> = dry_runs.iter().map(|d| &d.candidate).collect();
        let chosen = pick_one_node_for_preemption(&candidates)
            .and_then(|i| Some((found.get(i)?, *dry_runs.get(i)?)));
        let Some((chosen, chosen_run)) = chosen else {
            let kept = failed_kept.into_iter().filter_map(|index| {
                match self.memo.peek_dry_run(index, &all[index], budgets) {
                    Some(Err(status)) => Some((index, status.clone())),
                    _ => None,
                }
            });
            let named = failed
                .into_iter()
                .chain(kept)
                .map(|(index, status)| (all[index].name_arc().clone(), status))
                .collect();
            return Err(not_helpful(all.len(), named));
        };
        let node = &all[chosen.node];
        Ok(Preemption {
            node: node.name().to_string(),
            victims: chosen_run
                .victims
                .pods
                .iter()
                .map(|&i| node.pods[i].pod.clone())
                .collect(),
            num_pdb_violations: chosen_run.victims.num_pdb_violations,
        })
    }
}

/// `GetPodStartTime`: `status.startTime`, or, for a pod not started yet,
/// the latest time there is (upstream takes "now", later than any start).
pub fn start_time(pod: &Pod) -> Timestamp {
    pod.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(Timestamp::MAX, |t| t.0)
}

/// What preemption reads of a pod on a node.
pub fn describe(pod: &Pod) -> PreemptionPod {
    PreemptionPod {
        priority: pod_priority(pod),
        start: start_time(pod),
    }
}

/// `SelectVictimsOnNode` on a copy of `node`: the victims (indexes into
/// the node's pods) and the pods described, or the status that says why
/// the node is no candidate.
#[allow(clippy::too_many_arguments)]
fn victims_on(
    filters: &PodFilters<'_>,
    state: &mut CycleState,
    pod: &PodInfo,
    priority: i32,
    node: &NodeInfo,
    nominated: &[&PodInfo],
    budgets: &dyn DisruptionBudgets,
) -> Result<(Victims, SmallVec<[PreemptionPod; 8]>), Status> {
    let described: SmallVec<[PreemptionPod; 8]> =
        node.pods.iter().map(|p| describe(&p.pod)).collect();
    let mut order: SmallVec<[usize; 8]> = (0..described.len())
        .filter(|&i| described[i].priority < priority)
        .collect();
    if order.is_empty() {
        return Err(Status::new(Code::UnschedulableAndUnresolvable, NO_VICTIMS));
    }
    order.sort_by(|&a, &b| more_important_first(&described[a], &described[b]));
    let in_order: Vec<&Pod> = order.iter().map(|&i| &*node.pods[i].pod).collect();
    let flags = budgets.violations(&in_order);
    let mut violates: SmallVec<[bool; 8]> = SmallVec::from_elem(false, described.len());
    for (k, &i) in order.iter().enumerate() {
        violates[i] = flags.get(k).copied().unwrap_or(false);
    }
    let mut work = node.clone();
    let mut present: SmallVec<[bool; 8]> = SmallVec::from_elem(true, described.len());
    let mut last_rejection: Option<Status> = None;
    let mut failed: Option<Status> = None;
    let victims = select_victims_on_node(
        priority,
        &described,
        |i| violates[i],
        |on_node| {
            if failed.is_some() {
                return false;
            }
            for (i, (&wanted, now)) in on_node.iter().zip(present.iter_mut()).enumerate() {
                if *now == wanted {
                    continue;
                }
                let delta = if wanted {
                    work.add_node_pod(node.pods[i].clone());
                    1
                } else {
                    if let Some(j) = work
                        .pods
                        .iter()
                        .position(|p| Arc::ptr_eq(&p.pod, &node.pods[i].pod))
                    {
                        work.remove_pod_at(j);
                    }
                    -1
                };
                *now = wanted;
                if let Some(status) = filters.update_for_pod(state, pod, &node.pods[i], node, delta)
                {
                    failed = Some(status);
                    return false;
                }
            }
            match filter_with_nominated(filters, state, pod, &work, nominated) {
                None => true,
                Some(status) => {
                    last_rejection = Some(status);
                    false
                }
            }
        },
    );
    // Every pod taken off is counted again: the state serves the next
    // node's dry run, and the counts the next cycles.
    for (i, now) in present.iter().enumerate() {
        if !*now && let Some(status) = filters.update_for_pod(state, pod, &node.pods[i], node, 1) {
            failed.get_or_insert(status);
        }
    }
    if let Some(status) = failed {
        return Err(status);
    }
    match victims {
        Some(victims) if !victims.pods.is_empty() => Ok((victims, described)),
        // Upstream: a node where the pod fits with no victim is an error
        // of the caller's (the cycle found no such node).
        Some(_) => Err(Status::error(format!(
            "expected at least one victim pod on node {:?}",
            node.name()
        ))),
        None => Err(last_rejection
            .unwrap_or_else(|| Status::new(Code::UnschedulableAndUnresolvable, NO_VICTIMS))),
    }
}

/// The message when no candidate was found: each node the dry run
/// checked with its status, every other node "not helpful".
fn not_helpful(num_all_nodes: usize, statuses: Vec<(Arc<str>, Status)>) -> String {
    fit_error(
        num_all_nodes,
        Diagnosis {
            node_to_status: NodeToStatus::new(
                statuses,
                Status::new(Code::UnschedulableAndUnresolvable, NOT_HELPFUL),
            ),
            ..Diagnosis::default()
        },
    )
    .to_string()
}
