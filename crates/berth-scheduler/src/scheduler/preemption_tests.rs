//! DefaultPreemption through the state machine, on the virtual clock: the
//! victims chosen and the pod landing once they are gone, what a pod that
//! may not preempt is told, the nodes preemption cannot help, nominated
//! pods holding the room their victims free, and (a property over random
//! clusters) the cycle's choice against the pure rules run by hand.

use std::collections::BTreeSet;
use std::time::Duration;

use berth_core::test_util::{make_node, make_pod, taint};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use proptest::prelude::*;

use super::*;
use crate::cycle::tests::allocatable;
use crate::preemption::{
    Candidate, PreemptionPod, pick_one_node_for_preemption, select_victims_on_node,
};
use crate::queue::{Place, QueueConfig};

pub(super) fn scheduler() -> Scheduler {
    Scheduler::new(Profile::default(), QueueConfig::default(), 7)
}

pub(super) fn node(s: &mut Scheduler, name: &str, cpu: &str, now: Instant) {
    s.upsert_node(
        make_node()
            .name(name)
            .allocatable(&allocatable(cpu))
            .taints(vec![])
            .obj(),
        now,
    );
}

/// A pod bound to `node` asking `cpu` cores, with `priority`.
pub(super) fn running(name: &str, node: &str, cpu: &str, priority: i32) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .node(node)
        .req(&[("cpu", cpu)])
        .priority(priority)
        .tolerations(vec![])
        .obj()
}

/// A pending pod asking `cpu` cores, with `priority`.
pub(super) fn pending(name: &str, cpu: &str, priority: i32) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .req(&[("cpu", cpu)])
        .priority(priority)
        .tolerations(vec![])
        .obj()
}

fn never(mut pod: Pod) -> Pod {
    pod.spec.get_or_insert_default().preemption_policy = Some("Never".into());
    pod
}

pub(super) fn refusal(decision: Option<Decision>) -> Refusal {
    match decision {
        Some(Decision::Refuse(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub(super) fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn preemption_evicts_the_lowest_victims_and_the_pod_lands_after_they_go() {
    let mut s = scheduler();
    let t0 = Instant::now();
    node(&mut s, "a", "4", t0);
    node(&mut s, "b", "4", t0);
    // On a, two pods of priority 10; on b, one of 1 and one of 5. The
    // preemptor (100, 2 cores) would free a by evicting a 10, b by
    // evicting the 1 (the 5 is reprieved): b's highest victim is lower.
    for pod in [
        running("a-10", "a", "2", 10),
        running("a-10b", "a", "2", 10),
        running("b-1", "b", "2", 1),
        running("b-5", "b", "2", 5),
    ] {
        s.upsert_pod(pod, t0);
    }
    s.upsert_pod(pending("high", "2", 100), t0);
    let r = refusal(s.schedule_one(t0));
    assert_eq!(
        r.error.to_string(),
        "0/2 nodes are available: 2 Insufficient cpu.",
        "a preemption that found a node adds nothing to the message"
    );
    let preemption = r.preemption.clone().expect("a preemption");
    assert_eq!(preemption.node, "b");
    assert_eq!(names(&preemption.victims), ["b-1"]);
    assert_eq!(r.nominate.as_deref(), Some("b"), "nominatedNodeName set");
    assert_eq!(s.cache().nominator().node_of("default/high"), Some("b"));
    assert_eq!(s.queue().place("default/high"), Some(Place::Unschedulable));

    // The victim goes (its graceful deletion over): the pod is tried
    // again and lands on the node it was nominated to.
    let t1 = t0 + Duration::from_secs(2);
    s.delete_pod("default/b-1", t1);
    assert_eq!(s.queue().place("default/high"), Some(Place::Active));
    match s.schedule_one(t1) {
        Some(Decision::Bind(b)) => assert_eq!(
            (b.key.as_str(), b.result.node.as_str()),
            ("default/high", "b")
        ),
        other => panic!("expected a binding, got {other:?}"),
    }
    assert_eq!(s.cache().nominator().node_of("default/high"), None);
}

/// What the FailedScheduling message says after the PostFilter, case by
/// case: upstream's `preemption: ...` suffix.
#[tokio::test(start_paused = true)]
async fn the_failed_scheduling_message_carries_upstreams_preemption_suffix() {
    struct Case {
        name: &'static str,
        /// (node, cpu, tainted)
        nodes: &'static [(&'static str, &'static str, bool)],
        /// (name, node, cpu, priority)
        running: &'static [(&'static str, &'static str, &'static str, i32)],
        preemptor: Pod,
        want: &'static str,
        want_victims: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "a pod with preemptionPolicy Never does not preempt",
            nodes: &[("a", "2", false)],
            running: &[("low", "a", "2", 0)],
            preemptor: never(pending("p", "2", 100)),
            want: "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
            want_victims: &[],
        },
        Case {
            name: "a taint-blocked node is no candidate; a node without lower pods has no victims",
            nodes: &[("a", "2", true), ("b", "2", false)],
            running: &[("low", "a", "2", 0), ("peer", "b", "2", 100)],
            preemptor: pending("p", "2", 100),
            want: "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
            want_victims: &[],
        },
        Case {
            name: "evicting every lower pod is not enough",
            nodes: &[("a", "2", false)],
            running: &[("low", "a", "1", 0), ("peer", "a", "1", 100)],
            preemptor: pending("p", "2", 100),
            want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.",
            want_victims: &[],
        },
        Case {
            name: "only taints: preemption cannot help anywhere",
            nodes: &[("a", "2", true)],
            running: &[("low", "a", "1", 0)],
            preemptor: pending("p", "1", 100),
            want: "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            want_victims: &[],
        },
        Case {
            name: "the tainted node's cheaper victims are not taken",
            nodes: &[("a", "2", true), ("b", "2", false)],
            running: &[("cheap", "a", "2", 0), ("dear", "b", "2", 50)],
            preemptor: pending("p", "2", 100),
            want: "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s).",
            want_victims: &["dear"],
        },
    ];
    for Case {
        name,
        nodes,
        running: placed,
        preemptor,
        want,
        want_victims,
    } in cases
    {
        let mut s = scheduler();
        let t0 = Instant::now();
        for &(n, cpu, tainted) in nodes {
            let taints = if tainted {
                vec![taint("dedicated", "db", "NoSchedule")]
            } else {
                vec![]
            };
            s.upsert_node(
                make_node()
                    .name(n)
                    .allocatable(&allocatable(cpu))
                    .taints(taints)
                    .obj(),
                t0,
            );
        }
        for &(p, n, cpu, priority) in placed {
            s.upsert_pod(running(p, n, cpu, priority), t0);
        }
        s.upsert_pod(preemptor, t0);
        let r = refusal(s.schedule_one(t0));
        assert_eq!(r.error.to_string(), want, "{name}");
        let victims = r
            .preemption
            .as_ref()
            .map(|p| names(&p.victims))
            .unwrap_or_default();
        assert_eq!(victims, want_victims, "{name}");
        assert_eq!(r.nominate.is_some(), !want_victims.is_empty(), "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_nominated_pod_keeps_the_room_its_victims_free_from_lower_pods() {
    let mut s = scheduler();
    let t0 = Instant::now();
    node(&mut s, "a", "2", t0);
    s.upsert_pod(running("low", "a", "2", 0), t0);
    s.upsert_pod(pending("high", "2", 100), t0);
    let r = refusal(s.schedule_one(t0));
    assert_eq!(r.preemption.map(|p| p.node), Some("a".to_string()));
    // The victim is gone; a later pod of lower priority (that may not
    // preempt) is tried first and must not take the freed room.
    let t1 = t0 + Duration::from_secs(2);
    s.delete_pod("default/low", t1);
    s.upsert_pod(never(pending("mid", "2", 50)), t1);
    let mut decided = Vec::new();
    while let Some(d) = s.schedule_one(t1) {
        decided.push(match d {
            Decision::Bind(b) => format!("{} -> {}", b.key, b.result.node),
            Decision::Refuse(r) => format!("{}: {}", r.key, r.error),
        });
    }
    decided.sort();
    assert_eq!(
        decided,
        [
            "default/high -> a",
            "default/mid: 0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_preemptor_waits_for_its_terminating_victims_instead_of_preempting_again() {
    let mut s = scheduler();
    let t0 = Instant::now();
    node(&mut s, "a", "2", t0);
    node(&mut s, "b", "2", t0);
    s.upsert_pod(running("low-a", "a", "2", 0), t0);
    s.upsert_pod(running("low-b", "b", "2", 0), t0);
    s.upsert_pod(pending("high", "2", 100), t0);
    let r = refusal(s.schedule_one(t0));
    let preemption = r.preemption.expect("a preemption");
    let victim = preemption.victims[0].clone();
    // The watch shows the victim terminating with the condition.
    let mut terminating = (*victim).clone();
    terminating.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    terminating.status.get_or_insert_default().conditions = Some(vec![PodCondition {
        type_: DISRUPTION_TARGET.into(),
        status: "True".into(),
        reason: Some(PREEMPTION_BY_SCHEDULER.into()),
        ..PodCondition::default()
    }]);
    let t1 = t0 + Duration::from_secs(1);
    s.upsert_pod(terminating, t1);
    // Five minutes on, the pod is tried again while the victim still
    // terminates: it does not preempt on the other node.
    let t2 = t0 + Duration::from_secs(301);
    s.flush(t2);
    let again = refusal(s.schedule_one(t2));
    assert_eq!(
        again.error.to_string(),
        "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to a terminating pod on the nominated node."
    );
    assert!(again.preemption.is_none());
    assert_eq!(
        s.cache().nominator().node_of("default/high"),
        Some(preemption.node.as_str())
    );
}

#[tokio::test(start_paused = true)]
async fn pods_of_lower_priority_nominated_to_the_chosen_node_lose_their_nomination() {
    let mut s = scheduler();
    let t0 = Instant::now();
    node(&mut s, "a", "2", t0);
    s.upsert_pod(running("low", "a", "2", 0), t0);
    // A pod of priority 50 nominated to a (its field, from the watch).
    let mut mid = pending("mid", "2", 50);
    mid.status.get_or_insert_default().nominated_node_name = Some("a".into());
    s.upsert_pod(mid, t0);
    assert_eq!(s.cache().nominator().node_of("default/mid"), Some("a"));
    s.upsert_pod(pending("high", "2", 100), t0);
    // high is tried first (higher priority).
    let r = refusal(s.schedule_one(t0));
    assert_eq!(r.key, "default/high");
    assert_eq!(r.preemption.map(|p| p.node), Some("a".to_string()));
    assert_eq!(names(&r.unnominated), ["mid"]);
    assert_eq!(s.cache().nominator().node_of("default/mid"), None);
}

/// Node `n`'s pods in the property: (cpu in cores, priority, start day).
type NodePods = Vec<(u8, i32, u8)>;

fn cluster_strategy() -> impl Strategy<Value = (Vec<NodePods>, u8, i32)> {
    let pod = (
        1u8..=3,
        prop_oneof![Just(0), Just(5), Just(10), Just(50), Just(200)],
        1u8..=4,
    );
    (
        proptest::collection::vec(proptest::collection::vec(pod, 0..4), 1..7),
        1u8..=4,
        prop_oneof![Just(10), Just(50), Just(100)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Over random clusters of fewer than 100 nodes (every potential node
    /// is a candidate), the preemption the state machine decides is one
    /// the pure rules choose: its victims are `select_victims_on_node`'s
    /// for that node (cpu the only filter that can fail), and its candidate
    /// is as good as `pick_one_node_for_preemption`'s on every criterion
    /// (ties between equal candidates go to the dry run's random offset).
    #[test]
    fn the_cycles_choice_is_the_pure_rules_choice((nodes, want_cpu, priority) in cluster_strategy()) {
        const NODE_CPU: u32 = 4;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build();
        let Ok(rt) = rt else { return Err(TestCaseError::fail("runtime")) };
        let _guard = rt.enter();
        let now = Instant::now();
        let mut s = scheduler();
        let mut candidates = Vec::new();
        let mut victims_by_node = Vec::new();
        for (n, pods) in nodes.iter().enumerate() {
            let name = format!("n{n}");
            node(&mut s, &name, &NODE_CPU.to_string(), now);
            let mut placed = Vec::new();
            for (i, &(cpu, p, day)) in pods.iter().enumerate() {
                let mut pod = running(&format!("{name}-{i}"), &name, &cpu.to_string(), p);
                let start: Timestamp = format!("2026-01-0{day}T00:00:00Z").parse().unwrap_or(Timestamp::UNIX_EPOCH);
                pod.status.get_or_insert_default().start_time = Some(Time(start));
                s.upsert_pod(pod, now);
                placed.push((u32::from(cpu), PreemptionPod { priority: p, start }));
            }
            let described: Vec<PreemptionPod> = placed.iter().map(|(_, d)| *d).collect();
            let used_without = |on: &[bool]| -> u32 {
                placed.iter().zip(on).filter(|(_, on)| **on).map(|((c, _), _)| *c).sum()
            };
            let fits_now = used_without(&vec![true; placed.len()]) + u32::from(want_cpu) <= NODE_CPU;
            let victims = if fits_now { None } else {
                select_victims_on_node(priority, &described, |_| false, |on| {
                    used_without(on) + u32::from(want_cpu) <= NODE_CPU
                })
            };
            if let Some(v) = &victims {
                candidates.push((n, Candidate::new(&described, v)));
            }
            victims_by_node.push(victims.map(|v| {
                v.pods.iter().map(|&i| format!("{name}-{i}")).collect::<BTreeSet<_>>()
            }));
        }
        let any_fits = nodes.iter().any(|pods| {
            pods.iter().map(|p| u32::from(p.0)).sum::<u32>() + u32::from(want_cpu) <= NODE_CPU
        });
        s.upsert_pod(pending("preemptor", &want_cpu.to_string(), priority), now);
        let decision = s.schedule_one(now);
        if any_fits {
            prop_assert!(matches!(decision, Some(Decision::Bind(_))));
            return Ok(());
        }
        let r = refusal(decision);
        let pure: Vec<Candidate> = candidates.iter().map(|(_, c)| c.clone()).collect();
        let best = pick_one_node_for_preemption(&pure);
        match (&r.preemption, best) {
            (None, None) => {}
            (Some(p), Some(best)) => {
                let n: usize = p.node.trim_start_matches('n').parse().unwrap_or(usize::MAX);
                let got: BTreeSet<String> = names(&p.victims).into_iter().collect();
                prop_assert_eq!(Some(&got), victims_by_node[n].as_ref(), "victims on {}", p.node);
                let chosen = candidates.iter().find(|(m, _)| *m == n).map(|(_, c)| c);
                let best = &pure[best];
                let key = |c: &Candidate| (
                    c.num_pdb_violations,
                    c.victims.first().map(|v| v.priority),
                    c.victims.iter().map(|v| i64::from(v.priority)).sum::<i64>(),
                    c.victims.len(),
                    c.victims.iter().filter(|v| Some(v.priority) == c.victims.first().map(|f| f.priority)).map(|v| v.start).min(),
                );
                prop_assert_eq!(chosen.map(key), Some(key(best)));
            }
            (got, want) => prop_assert!(false, "preemption {:?}, pure rule {:?}", got.as_ref().map(|p| &p.node), want),
        }
    }
}
