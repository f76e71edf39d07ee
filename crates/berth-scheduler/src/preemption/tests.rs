//! Upstream's `TestPickOneNodeForPreemption` table (the pods' requests in
//! units of its small container: small 1, medium 2, large 3, very large 5,
//! every node 5), `SelectVictimsOnNode`'s reprieve order and budget count,
//! and which failures preemption might help.

use super::*;

const NEG: i32 = -100;
const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
const VERY_HIGH: i32 = 10000;

const SMALL: u32 = 1;
const MEDIUM: u32 = 2;
const LARGE: u32 = 3;
const VERY_LARGE: u32 = 5;
const NODE_CAPACITY: u32 = 5;

/// `startTime` on 2019-01-`day`.
fn day(day: u8) -> Timestamp {
    format!("2019-01-{day:02}T00:00:00Z")
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A pod on a node: its node, size, priority and start day.
#[derive(Clone, Copy)]
struct Placed {
    node: &'static str,
    size: u32,
    priority: i32,
    start: u8,
}

const fn on(node: &'static str, size: u32, priority: i32) -> Placed {
    Placed {
        node,
        size,
        priority,
        start: 1,
    }
}

const fn started(node: &'static str, size: u32, priority: i32, start: u8) -> Placed {
    Placed {
        node,
        size,
        priority,
        start,
    }
}

/// Upstream's `selectNodesForPreemption` then `pickOneNodeForPreemption`
/// over NodeResourcesFit: the chosen node's name.
fn choose(nodes: &[&'static str], preemptor: (u32, i32), pods: &[Placed]) -> Option<&'static str> {
    let (size, priority) = preemptor;
    let mut names = Vec::new();
    let mut candidates = Vec::new();
    for &node in nodes {
        let placed: Vec<Placed> = pods.iter().copied().filter(|p| p.node == node).collect();
        let described: Vec<PreemptionPod> = placed
            .iter()
            .map(|p| PreemptionPod {
                priority: p.priority,
                start: day(p.start),
            })
            .collect();
        let fits = |on_node: &[bool]| {
            let used: u32 = placed
                .iter()
                .zip(on_node)
                .filter(|(_, on)| **on)
                .map(|(p, _)| p.size)
                .sum();
            used + size <= NODE_CAPACITY
        };
        let candidate = if fits(&vec![true; placed.len()]) {
            // The pod fits as is: upstream's older table keeps such a
            // node as a candidate without victims.
            Some(Candidate {
                victims: Vec::new(),
                num_pdb_violations: 0,
            })
        } else {
            select_victims_on_node(priority, &described, |_| false, fits)
                .map(|v| Candidate::new(&described, &v))
        };
        if let Some(candidate) = candidate {
            names.push(node);
            candidates.push(candidate);
        }
    }
    pick_one_node_for_preemption(&candidates).map(|i| names[i])
}

#[test]
fn the_candidate_upstream_picks() {
    struct Case {
        name: &'static str,
        nodes: &'static [&'static str],
        preemptor: (u32, i32),
        pods: Vec<Placed>,
        want: &'static [&'static str],
    }
    let (m1, m2, m3, m4) = ("machine1", "machine2", "machine3", "machine4");
    let cases = [
        Case {
            name: "No node needs preemption",
            nodes: &["machine1"],
            preemptor: (LARGE, HIGH),
            pods: vec![on(m1, SMALL, MID)],
            want: &["machine1"],
        },
        Case {
            name: "a pod that fits on both machines when lower priority pods are preempted",
            nodes: &["machine1", "machine2"],
            preemptor: (LARGE, HIGH),
            pods: vec![on(m1, LARGE, MID), on(m2, LARGE, MID)],
            want: &["machine1", "machine2"],
        },
        Case {
            name: "a pod that fits on a machine with no preemption",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (LARGE, HIGH),
            pods: vec![on(m1, LARGE, MID), on(m2, LARGE, MID)],
            want: &["machine3"],
        },
        Case {
            name: "machine with min highest priority pod is picked",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                on(m1, MEDIUM, MID),
                on(m1, LARGE, MID),
                on(m2, MEDIUM, MID),
                on(m2, MEDIUM, LOW),
                on(m3, MEDIUM, LOW),
                on(m3, MEDIUM, LOW),
            ],
            want: &["machine3"],
        },
        Case {
            name: "when highest priorities are the same, minimum sum of priorities is picked",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                on(m1, MEDIUM, MID),
                on(m1, LARGE, MID),
                on(m2, LARGE, MID),
                on(m2, MEDIUM, LOW),
                on(m3, MEDIUM, MID),
                on(m3, MEDIUM, MID),
            ],
            want: &["machine2"],
        },
        Case {
            name: "when highest priority and sum are the same, minimum number of pods is picked",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                on(m1, SMALL, MID),
                on(m1, SMALL, NEG),
                on(m1, SMALL, MID),
                on(m1, SMALL, NEG),
                on(m2, LARGE, MID),
                on(m2, MEDIUM, NEG),
                on(m3, MEDIUM, MID),
                on(m3, SMALL, NEG),
                on(m3, SMALL, LOW),
            ],
            want: &["machine2"],
        },
        Case {
            name: "sum of adjusted priorities is considered",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                on(m1, SMALL, MID),
                on(m1, SMALL, NEG),
                on(m1, SMALL, NEG),
                on(m2, LARGE, MID),
                on(m2, MEDIUM, NEG),
                on(m3, MEDIUM, MID),
                on(m3, SMALL, NEG),
                on(m3, SMALL, LOW),
            ],
            want: &["machine2"],
        },
        Case {
            name: "non-overlapping lowest high priority, sum priorities, and number of pods",
            nodes: &["machine1", "machine2", "machine3", "machine4"],
            preemptor: (VERY_LARGE, VERY_HIGH),
            pods: vec![
                on(m1, SMALL, MID),
                on(m1, SMALL, LOW),
                on(m1, SMALL, LOW),
                on(m2, LARGE, HIGH),
                on(m3, MEDIUM, MID),
                on(m3, SMALL, LOW),
                on(m3, SMALL, LOW),
                on(m3, MEDIUM, LOW),
                on(m4, MEDIUM, MID),
                on(m4, SMALL, MID),
                on(m4, SMALL, MID),
                on(m4, SMALL, NEG),
            ],
            want: &["machine1"],
        },
        Case {
            name: "same priority, same number of victims, different start time for each machine's pod",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                started(m1, MEDIUM, MID, 3),
                started(m1, MEDIUM, MID, 3),
                started(m2, MEDIUM, MID, 4),
                started(m2, MEDIUM, MID, 4),
                started(m3, MEDIUM, MID, 2),
                started(m3, MEDIUM, MID, 2),
            ],
            want: &["machine2"],
        },
        Case {
            name: "same priority, same number of victims, different start time for all pods",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                started(m1, MEDIUM, MID, 5),
                started(m1, MEDIUM, MID, 3),
                started(m2, MEDIUM, MID, 6),
                started(m2, MEDIUM, MID, 2),
                started(m3, MEDIUM, MID, 4),
                started(m3, MEDIUM, MID, 7),
            ],
            want: &["machine3"],
        },
        Case {
            name: "different priority, same number of victims, different start time for all pods",
            nodes: &["machine1", "machine2", "machine3"],
            preemptor: (VERY_LARGE, HIGH),
            pods: vec![
                started(m1, MEDIUM, LOW, 5),
                started(m1, MEDIUM, MID, 3),
                started(m2, MEDIUM, MID, 7),
                started(m2, MEDIUM, LOW, 2),
                started(m3, MEDIUM, LOW, 4),
                started(m3, MEDIUM, MID, 6),
            ],
            want: &["machine2"],
        },
    ];
    for Case {
        name,
        nodes,
        preemptor,
        pods,
        want,
    } in cases
    {
        let got = choose(nodes, preemptor, &pods);
        assert!(
            got.is_some_and(|node| want.contains(&node)),
            "{name}: got {got:?}, want one of {want:?}"
        );
    }
}

#[test]
fn victims_are_reprieved_most_important_first_budgets_before_others() {
    struct Case {
        name: &'static str,
        /// (size, priority, start day, protected by a budget)
        pods: Vec<(u32, i32, u8, bool)>,
        preemptor: (u32, i32),
        want: Option<(Vec<usize>, usize)>,
    }
    let cases = [
        Case {
            name: "the most important pods that still fit are reprieved",
            pods: vec![(2, 10, 1, false), (2, 5, 1, false), (1, 1, 1, false)],
            preemptor: (3, 100),
            want: Some((vec![1, 2], 0)),
        },
        Case {
            name: "a pod its budget protects is reprieved before more important ones",
            pods: vec![(2, 10, 1, false), (2, 5, 1, true), (1, 1, 1, false)],
            preemptor: (3, 100),
            want: Some((vec![0, 2], 0)),
        },
        Case {
            name: "a protected pod that cannot stay counts as a violation",
            pods: vec![(3, 10, 1, true), (2, 5, 1, true)],
            preemptor: (4, 100),
            want: Some((vec![0, 1], 2)),
        },
        Case {
            name: "of equal priority the earlier started is reprieved",
            pods: vec![(2, 5, 3, false), (2, 5, 2, false)],
            preemptor: (3, 100),
            want: Some((vec![0], 0)),
        },
        Case {
            name: "pods of equal or higher priority are never victims",
            pods: vec![(3, 100, 1, false), (2, 5, 1, false)],
            preemptor: (3, 100),
            want: None,
        },
        Case {
            name: "no lower-priority pod: no candidate",
            pods: vec![(5, 200, 1, false)],
            preemptor: (1, 100),
            want: None,
        },
    ];
    for Case {
        name,
        pods,
        preemptor,
        want,
    } in cases
    {
        let described: Vec<PreemptionPod> = pods
            .iter()
            .map(|&(_, priority, start, _)| PreemptionPod {
                priority,
                start: day(start),
            })
            .collect();
        let fits = |on_node: &[bool]| {
            let used: u32 = pods
                .iter()
                .zip(on_node)
                .filter(|(_, on)| **on)
                .map(|(p, _)| p.0)
                .sum();
            used + preemptor.0 <= NODE_CAPACITY
        };
        let got = select_victims_on_node(preemptor.1, &described, |i| pods[i].3, fits)
            .map(|v| (v.pods, v.num_pdb_violations));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn only_resolvable_failures_are_worth_preempting_for() {
    let cases = [
        (Code::Unschedulable, true),
        (Code::UnschedulableAndUnresolvable, false),
        (Code::Error, false),
        (Code::Success, false),
    ];
    for (code, want) in cases {
        assert_eq!(preemption_might_help(code), want, "{code}");
    }
}
