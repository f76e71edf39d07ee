//! DefaultPreemption's pure rules (upstream `framework/preemption` and
//! `plugins/defaultpreemption`): which nodes preemption might help (those
//! whose failing filters were resolvable: an untolerated taint is
//! `UnschedulableAndUnresolvable`, and evicting pods does not cure it),
//! which pods on a node must give way (`SelectVictimsOnNode`: every
//! lower-priority pod removed, then as many reprieved as still fit, the most
//! important first, those whose eviction would violate a budget before the
//! others), and which candidate node is chosen (`pickOneNodeForPreemption`:
//! fewest budget violations, lowest highest-victim priority, smallest sum of
//! priorities, fewest victims, latest start of the highest-priority
//! victims, then the first).
//!
//! Pods are described by [`PreemptionPod`] (priority and start time);
//! whether the preemptor fits is the caller's filter run, a closure over
//! the pods still on the node, so the rules are tested without a cluster.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use crate::framework::Code;

/// What preemption reads of a pod already on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreemptionPod {
    /// `spec.priority` (0 when unset).
    pub priority: i32,
    /// `status.startTime`, or the time of the decision when unset (as
    /// upstream's `GetPodStartTime` takes "now").
    pub start: Timestamp,
}

/// The PodDisruptionBudgets preemption weighs (upstream reads them from
/// its PDB lister; the scheduler's are [`crate::budgets::Budgets`], fed
/// by its PDB watch).
pub trait DisruptionBudgets: Send + Sync + fmt::Debug {
    /// `filterPodsWithPDBViolation`: for `pods` (a node's potential
    /// victims, most important first), whether evicting each would
    /// violate a budget, each budget's allowed disruptions used up in
    /// that order.
    fn violations(&self, pods: &[&Pod]) -> Vec<bool>;
}

/// `MoreImportantPod`: the higher priority first, then the one that
/// started earlier.
pub fn more_important_first(a: &PreemptionPod, b: &PreemptionPod) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| a.start.cmp(&b.start))
}

/// `nodesWherePreemptionMightHelp`: a node whose filters failed with
/// `Unschedulable` (resources, ports, affinity to other pods) might be
/// helped; one that failed `UnschedulableAndUnresolvable` (a taint, node
/// affinity, a cordon) cannot be.
pub fn preemption_might_help(code: Code) -> bool {
    code == Code::Unschedulable
}

/// The pods that must give way on one node (indices into the node's pods,
/// most important first) and how many of them a disruption budget
/// protects (upstream's `Victims`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Victims {
    pub pods: Vec<usize>,
    pub num_pdb_violations: usize,
}

/// `SelectVictimsOnNode`. `pods` are the node's pods; `violates_budget(i)`
/// says whether evicting pod `i` would violate its disruption budget;
/// `fits(on_node)` runs the preemptor's filters with only the pods marked
/// `true` on the node. `None`: no lower-priority pod, or the preemptor does
/// not fit even with all of them gone.
pub fn select_victims_on_node(
    preemptor_priority: i32,
    pods: &[PreemptionPod],
    violates_budget: impl Fn(usize) -> bool,
    mut fits: impl FnMut(&[bool]) -> bool,
) -> Option<Victims> {
    let mut on_node = vec![true; pods.len()];
    let mut potential: Vec<usize> = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        if pod.priority < preemptor_priority {
            on_node[i] = false;
            potential.push(i);
        }
    }
    if potential.is_empty() || !fits(&on_node) {
        return None;
    }
    potential.sort_by(|&a, &b| more_important_first(&pods[a], &pods[b]));
    let (violating, non_violating): (Vec<usize>, Vec<usize>) =
        potential.into_iter().partition(|&i| violates_budget(i));
    let mut victims = Victims {
        pods: Vec::new(),
        num_pdb_violations: 0,
    };
    for (group, counts_violation) in [(violating, true), (non_violating, false)] {
        for i in group {
            on_node[i] = true;
            if !fits(&on_node) {
                on_node[i] = false;
                victims.pods.push(i);
                victims.num_pdb_violations += usize::from(counts_violation);
            }
        }
    }
    victims
        .pods
        .sort_by(|&a, &b| more_important_first(&pods[a], &pods[b]));
    Some(victims)
}

/// A node where preemption makes the preemptor fit, and what it costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The victims, most important first.
    pub victims: Vec<PreemptionPod>,
    pub num_pdb_violations: usize,
}

impl Candidate {
    /// The candidate for `victims` of `pods` on one node.
    pub fn new(pods: &[PreemptionPod], victims: &Victims) -> Candidate {
        Candidate {
            victims: victims.pods.iter().map(|&i| pods[i]).collect(),
            num_pdb_violations: victims.num_pdb_violations,
        }
    }
}

/// `GetEarliestPodStartTime`: the earliest start among the victims of the
/// highest priority.
fn earliest_start_of_highest(victims: &[PreemptionPod]) -> Option<Timestamp> {
    let highest = victims.iter().map(|v| v.priority).max()?;
    victims
        .iter()
        .filter(|v| v.priority == highest)
        .map(|v| v.start)
        .min()
}

/// `pickOneNodeForPreemption`: the index of the candidate upstream
/// chooses. Each rule in turn keeps the candidates with the best score;
/// the first rule that leaves one decides, else the first left. A
/// candidate without victims (the preemptor fits as is) is taken at once.
pub fn pick_one_node_for_preemption<C: Borrow<Candidate>>(candidates: &[C]) -> Option<usize> {
    if let Some(free) = candidates
        .iter()
        .position(|c| c.borrow().victims.is_empty())
    {
        return Some(free);
    }
    // Upstream's scores: higher is better. Priorities are shifted by
    // 2^31 so that a negative priority does not lower a sum.
    let rules: [fn(&Candidate) -> i64; 5] = [
        |c| -(c.num_pdb_violations as i64),
        |c| -i64::from(c.victims.first().map_or(i32::MIN, |v| v.priority)),
        |c| {
            -c.victims
                .iter()
                .map(|v| i64::from(v.priority) + (1 << 31))
                .sum::<i64>()
        },
        |c| -(c.victims.len() as i64),
        |c| {
            earliest_start_of_highest(&c.victims).map_or(i64::MIN, |t| {
                t.as_nanosecond().clamp(i64::MIN as i128, i64::MAX as i128) as i64
            })
        },
    ];
    let mut left: Vec<usize> = (0..candidates.len()).collect();
    for rule in rules {
        let best = left.iter().map(|&i| rule(candidates[i].borrow())).max()?;
        left.retain(|&i| rule(candidates[i].borrow()) == best);
        if left.len() == 1 {
            break;
        }
    }
    left.first().copied()
}

#[cfg(test)]
mod tests;
