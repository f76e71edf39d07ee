//! `--shape preemption --in-process`: upstream scheduler_perf's
//! PreemptionAsync shape through berth-scheduler's state machine. Every
//! node is filled with low-priority pods (`--init-pods`, 20,000 on 5,000
//! nodes: four per node), then the high-priority pods (`--pods`, 5,000)
//! each find no room and preempt. A preemption's victims are deleted at
//! once (as the watch would report their graceful deletion over), and the
//! preemptor, retried, lands on the node it was nominated to.
//!
//! Each preemption is checked against the ported pure rule: before its
//! victims are deleted, `select_victims_on_node` is run by hand on the
//! chosen node's pods as the scheduler's cache holds them, with the fit
//! computed here from the shape's requests (cpu alone can fail), and its
//! victims must be the ones the cycle chose.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use berth_scheduler::cycle::Profile;
use berth_scheduler::preemption::{PreemptionPod, select_victims_on_node};
use berth_scheduler::queue::QueueConfig;
use berth_scheduler::scheduler::{Decision, Scheduler, pod_key};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Serialize;

use super::{
    Checks, HIGH_CPU_MILLI, HIGH_PRIORITY, InProcessRun, NODE_CPU_MILLI, SchedulerArgs, Workload,
    init_pod_json, pod_json,
};
use crate::harness::{cpu_seconds, node_json};
use crate::measure::round1;

/// What the preemption shape saw, beside the common checks.
#[derive(Debug, Serialize)]
pub(super) struct PreemptionChecks {
    preemptions: usize,
    victims: usize,
    /// Preemptions whose victims were recomputed with the pure rule.
    victim_choices_checked: usize,
    /// Of those, how many differed (0).
    victim_choices_differing: usize,
    /// Preemptors refused without a preemption (0).
    refused_without_preemption: usize,
    /// Preemptors that landed elsewhere than the node they were nominated
    /// to (0: the nominated node is tried first).
    placed_off_their_nominated_node: usize,
}

/// The preemption shape's run (see the module comment).
pub(super) fn run(args: &SchedulerArgs) -> anyhow::Result<InProcessRun> {
    let workload = Workload::Preemption;
    let setup = Instant::now();
    let mut now = tokio::time::Instant::now();
    let mut scheduler = Scheduler::new(Profile::default(), QueueConfig::default(), 1);
    for i in 0..args.nodes {
        let node: Node = serde_json::from_str(&node_json(i)).context("node")?;
        scheduler.upsert_node(node, now);
    }
    let init_pods = args.init_pods.unwrap_or(workload.default_init_pods());
    for i in 0..init_pods {
        let pod: Pod =
            serde_json::from_str(&init_pod_json(i, args.nodes, workload)).context("low pod")?;
        scheduler.upsert_pod(pod, now);
    }
    let pods = args.pods.unwrap_or(workload.default_pods());
    for i in 0..pods {
        let pod: Pod = serde_json::from_str(&pod_json(i, workload)).context("high pod")?;
        scheduler.upsert_pod(pod, now);
    }
    scheduler.flush(now);
    let setup_seconds = setup.elapsed().as_secs_f64();
    eprintln!(
        "in process: {pods} preemptors over {init_pods} low pods on {} nodes",
        args.nodes
    );

    let mut seen = PreemptionChecks {
        preemptions: 0,
        victims: 0,
        victim_choices_checked: 0,
        victim_choices_differing: 0,
        refused_without_preemption: 0,
        placed_off_their_nominated_node: 0,
    };
    let mut nominated = std::collections::HashMap::new();
    let mut bound = 0;
    let cpu_before = cpu_seconds(std::process::id());
    let started = Instant::now();
    // Rounds of the virtual clock: the preemptors' backoff (at most 10 s)
    // is over at the next round.
    for _round in 0..32 {
        let mut decided = 0;
        while let Some(decision) = scheduler.schedule_one(now) {
            decided += 1;
            match decision {
                Decision::Bind(binding) => {
                    scheduler.bind_succeeded(&binding.key);
                    bound += 1;
                    if nominated.get(&binding.key) != Some(&binding.result.node) {
                        seen.placed_off_their_nominated_node += 1;
                    }
                }
                Decision::Refuse(refusal) => {
                    let Some(preemption) = &refusal.preemption else {
                        seen.refused_without_preemption += 1;
                        continue;
                    };
                    seen.preemptions += 1;
                    seen.victims += preemption.victims.len();
                    seen.victim_choices_checked += 1;
                    let got: BTreeSet<String> =
                        preemption.victims.iter().map(|v| pod_key(v)).collect();
                    if pure_victims(&scheduler, &preemption.node) != got {
                        seen.victim_choices_differing += 1;
                    }
                    nominated.insert(refusal.key.clone(), preemption.node.clone());
                    for victim in &preemption.victims {
                        scheduler.delete_pod(&pod_key(victim), now);
                    }
                }
            }
        }
        if decided == 0 || bound == pods {
            break;
        }
        now += Duration::from_secs(11);
        scheduler.flush(now);
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(std::process::id()) - cpu_before;
    let nodes_over = scheduler
        .cache()
        .nodes()
        .iter()
        .filter(|n| n.requested.milli_cpu > n.allocatable.milli_cpu)
        .count();
    let most_pods = scheduler
        .cache()
        .nodes()
        .iter()
        .map(|n| n.pods.len())
        .max()
        .unwrap_or(0);
    Ok(InProcessRun {
        shape: workload.name(),
        pods,
        init_pods,
        setup_seconds: round1(setup_seconds),
        seconds: (seconds * 1000.0).round() / 1000.0,
        pods_per_sec: (bound as f64 / seconds.max(1e-9)).round(),
        cpu_us_per_pod: round1(cpu * 1e6 / pods.max(1) as f64),
        checks: Checks {
            pods_bound: bound,
            pods_unbound: pods - bound,
            max_pods_on_a_node: most_pods,
            nodes_over_allocatable: nodes_over,
            pods_on_an_untolerated_taint: 0,
            spread_skew: None,
            anti_affinity_violations: None,
            scheduled_events_written: 0,
        },
        preemption: Some(seen),
    })
}

/// The victims the pure rule picks on `node` for a high-priority pod, as
/// the scheduler's cache holds the node: every pod's priority from its
/// spec, no start times (the shape's pods never started), cpu summed from
/// the shape's requests.
fn pure_victims(scheduler: &Scheduler, node: &str) -> BTreeSet<String> {
    let Some(info) = scheduler.cache().node(node) else {
        return BTreeSet::new();
    };
    let pods: Vec<(&Pod, i64)> = info
        .pods
        .iter()
        .map(|p| {
            let priority = p.pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
            let cpu = if priority == HIGH_PRIORITY {
                HIGH_CPU_MILLI
            } else {
                super::LOW_CPU_MILLI
            };
            (&*p.pod, cpu)
        })
        .collect();
    let described: Vec<PreemptionPod> = pods
        .iter()
        .map(|(p, _)| PreemptionPod {
            priority: p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0),
            start: Timestamp::MAX,
        })
        .collect();
    let fits = |on_node: &[bool]| {
        let used: i64 = pods
            .iter()
            .zip(on_node)
            .filter(|(_, on)| **on)
            .map(|((_, cpu), _)| cpu)
            .sum();
        used + HIGH_CPU_MILLI <= NODE_CPU_MILLI
    };
    select_victims_on_node(HIGH_PRIORITY, &described, |_| false, fits)
        .map(|v| v.pods.iter().map(|&i| pod_key(pods[i].0)).collect())
        .unwrap_or_default()
}
