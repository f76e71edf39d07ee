//! The verdicts a cycle keeps for the next pod of the same spec
//! (`cycle::memo`) change no decision: two schedulers with the same seed,
//! one reusing verdicts and one not, are driven through the same random
//! history (nodes joining, tainted, cordoned and leaving; pods of a few
//! specs arriving, bound, preempting and deleted; budgets changing; time
//! passing) and must decide the same at every step, down to the message.

use std::time::Duration;

use berth_core::test_util::{make_node, make_pod, taint, tol};
use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;

use super::*;
use crate::cycle::tests::allocatable;
use crate::queue::QueueConfig;

/// One step of the history.
#[derive(Debug, Clone)]
enum Step {
    /// Node `n` joins (or changes) with `cpu` cores, tainted or not,
    /// cordoned or not.
    Node {
        n: u8,
        cpu: u8,
        tainted: bool,
        cordoned: bool,
    },
    RemoveNode(u8),
    /// A pending pod of spec `spec` (see [`pod_of_spec`]).
    Pod(u8),
    /// A pod already running on node `n`.
    Running {
        spec: u8,
        n: u8,
    },
    /// Up to `cycles` scheduling cycles, applying what they decide; the
    /// victims of preemptions are deleted at once, or left terminating
    /// until [`Step::VictimsGone`] (their nominated preemptors then hold
    /// the nodes unchanged).
    Schedule {
        cycles: u8,
        victims_at_once: bool,
    },
    /// The victims left terminating are gone.
    VictimsGone,
    /// The budget over `app=foo` now allows `allowed` disruptions.
    Budget(i32),
    /// The pod with this number (modulo those made) is deleted.
    DeletePod(u16),
    /// Time passes (backoffs end).
    Tick,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..12, 1u8..=6, any::<bool>(), prop::bool::weighted(0.1)).prop_map(
            |(n, cpu, tainted, cordoned)| Step::Node {
                n,
                cpu,
                tainted: tainted && n % 3 == 0,
                cordoned,
            }
        ),
        1 => (0u8..12).prop_map(Step::RemoveNode),
        // Runs of one spec are what the memo serves.
        4 => prop_oneof![3 => Just(4u8), 2 => Just(5u8), 2 => 0u8..6].prop_map(Step::Pod),
        2 => (0u8..6, 0u8..12).prop_map(|(spec, n)| Step::Running { spec, n }),
        4 => (1u8..8, any::<bool>()).prop_map(|(cycles, victims_at_once)| Step::Schedule {
            cycles,
            victims_at_once
        }),
        1 => Just(Step::VictimsGone),
        2 => (0i32..3).prop_map(Step::Budget),
        1 => any::<u16>().prop_map(Step::DeletePod),
        1 => Just(Step::Tick),
    ]
}

/// Six specs: cpu, priority, whether the pod tolerates the taint, whether
/// it carries `app=foo` (the budget's selector), and for one a host port
/// (another node-local filter).
fn pod_of_spec(spec: u8, name: &str) -> Pod {
    let (cpu, priority, tolerates, foo, port) = match spec % 6 {
        0 => ("1", 0, false, true, false),
        1 => ("2", 0, true, true, false),
        2 => ("3", 100, false, false, false),
        3 => ("2", 100, true, false, true),
        4 => ("4", 1000, false, false, false),
        _ => ("1", 1000, true, true, false),
    };
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .req(&[("cpu", cpu)])
        .priority(priority)
        .tolerations(if tolerates {
            vec![tol("dedicated", "Equal", "db", "NoSchedule")]
        } else {
            vec![]
        })
        .obj();
    if foo {
        pod.metadata
            .labels
            .get_or_insert_default()
            .insert("app".into(), "foo".into());
    }
    if port && let Some(c) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        c.ports = Some(vec![k8s_openapi::api::core::v1::ContainerPort {
            container_port: 80,
            host_port: Some(8080),
            ..Default::default()
        }]);
    }
    pod
}

/// What a decision says, as text: compared between the two schedulers.
fn describe(decision: &Decision) -> String {
    match decision {
        Decision::Bind(b) => format!("bind {} to {}", b.key, b.result.node),
        Decision::Refuse(r) => format!(
            "refuse {}: {} | preemption {:?} violating {:?} victims {:?} | nominate {:?} | unnominated {:?}",
            r.key,
            r.error,
            r.preemption.as_ref().map(|p| &p.node),
            r.preemption.as_ref().map(|p| p.num_pdb_violations),
            r.preemption
                .as_ref()
                .map(|p| p.victims.iter().map(|v| pod_key(v)).collect::<Vec<_>>()),
            r.nominate,
            r.unnominated.iter().map(|p| pod_key(p)).collect::<Vec<_>>(),
        ),
    }
}

/// What one scheduler's history has made so far.
struct History {
    /// Every pod made, by key.
    made: Vec<String>,
    now: Instant,
    /// Victims left terminating.
    terminating: Vec<String>,
}

impl History {
    fn new() -> Self {
        History {
            made: Vec::new(),
            now: Instant::now(),
            terminating: Vec::new(),
        }
    }
}

/// Applies one step to a scheduler; the decisions it made, described.
fn apply(s: &mut Scheduler, step: &Step, h: &mut History) -> Vec<String> {
    let mut out = Vec::new();
    let History {
        made,
        now,
        terminating,
    } = h;
    match *step {
        Step::Node {
            n,
            cpu,
            tainted,
            cordoned,
        } => {
            let mut node = make_node()
                .name(&format!("n{n}"))
                .allocatable(&allocatable(&cpu.to_string()))
                .taints(if tainted {
                    vec![taint("dedicated", "db", "NoSchedule")]
                } else {
                    vec![]
                })
                .obj();
            node.spec.get_or_insert_default().unschedulable = Some(cordoned);
            s.upsert_node(node, *now);
        }
        Step::RemoveNode(n) => s.delete_node(&format!("n{n}"), *now),
        Step::Pod(spec) => {
            let name = format!("p{}", made.len());
            s.upsert_pod(pod_of_spec(spec, &name), *now);
            made.push(format!("default/{name}"));
        }
        Step::Running { spec, n } => {
            let name = format!("p{}", made.len());
            let mut pod = pod_of_spec(spec, &name);
            pod.spec.get_or_insert_default().node_name = Some(format!("n{n}"));
            s.upsert_pod(pod, *now);
            made.push(format!("default/{name}"));
        }
        Step::Schedule {
            cycles,
            victims_at_once,
        } => {
            for _ in 0..cycles {
                let Some(decision) = s.schedule_one(*now) else {
                    break;
                };
                out.push(describe(&decision));
                match decision {
                    Decision::Bind(b) => s.bind_succeeded(&b.key),
                    Decision::Refuse(r) => {
                        for victim in r.preemption.iter().flat_map(|p| &p.victims) {
                            if victims_at_once {
                                s.delete_pod(&pod_key(victim), *now);
                            } else {
                                terminating.push(pod_key(victim));
                            }
                        }
                    }
                }
            }
        }
        Step::VictimsGone => {
            for key in terminating.drain(..) {
                s.delete_pod(&key, *now);
            }
        }
        Step::Budget(allowed) => {
            let mut pdb = berth_core::test_util::pdb("foo", &[("app", "foo")], None, None);
            pdb.status = Some(k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus {
                disruptions_allowed: Some(allowed),
                ..Default::default()
            });
            s.upsert_pdb(pdb);
        }
        Step::DeletePod(i) => {
            if !made.is_empty() {
                let key = made[usize::from(i) % made.len()].clone();
                s.delete_pod(&key, *now);
            }
        }
        Step::Tick => {
            *now += Duration::from_secs(11);
            s.flush(*now);
        }
    }
    out
}

/// Drives two schedulers with `seed`, one reusing verdicts and one not,
/// through `steps`: the decisions (the same from both, else which step
/// they parted at), and the scheduler that reused.
fn both(steps: &[Step], seed: u64) -> Result<(Vec<String>, Scheduler), String> {
    let mut with = Scheduler::new(Profile::default(), QueueConfig::default(), seed);
    let mut without = Scheduler::new(Profile::default(), QueueConfig::default(), seed);
    without.cycle_mut().disable_memo();
    let (mut history_with, mut history_without) = (History::new(), History::new());
    let mut decided = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let a = apply(&mut with, step, &mut history_with);
        let b = apply(&mut without, step, &mut history_without);
        if a != b {
            return Err(format!("step {i} ({step:?}): with {a:?}, without {b:?}"));
        }
        decided.extend(a);
    }
    if without.cycle_mut().reused_verdicts() != 0 {
        return Err("the scheduler without the memo reused verdicts".into());
    }
    Ok((decided, with))
}

/// Identical preemptors on a full cluster: the second and later reuse the
/// first's verdicts on the nodes nothing touched (filter and dry run), and
/// decide what a scheduler that reuses none decides.
#[tokio::test(start_paused = true)]
async fn identical_preemptors_reuse_verdicts_and_decide_alike() {
    let mut steps = Vec::new();
    for n in 0..8 {
        steps.push(Step::Node {
            n,
            cpu: 4,
            tainted: false,
            cordoned: false,
        });
        steps.push(Step::Running { spec: 1, n });
        steps.push(Step::Running { spec: 1, n });
    }
    steps.extend([
        Step::Pod(4),
        Step::Pod(4),
        Step::Pod(4),
        Step::Schedule {
            cycles: 3,
            victims_at_once: true,
        },
    ]);
    let (decided, mut with) = match both(&steps, 5) {
        Ok(run) => run,
        Err(parted) => panic!("{parted}"),
    };
    assert_eq!(decided.len(), 3, "{decided:?}");
    assert!(
        decided.iter().all(|d| d.contains("preemption Some(")),
        "each preempts: {decided:?}"
    );
    // The second and third preemptor reuse the verdicts on the nodes the
    // earlier preemptions did not touch: 7 and 6 filter verdicts, and
    // dry runs.
    assert!(
        with.cycle_mut().reused_verdicts() >= 13,
        "reused {}",
        with.cycle_mut().reused_verdicts()
    );
}

/// A budget that changes between two preemptors of one spec: the second
/// does not reuse the first's dry run on a node (its victims' violations
/// are counted again).
#[tokio::test(start_paused = true)]
async fn a_changed_budget_is_weighed_again() {
    let node = |n| Step::Node {
        n,
        cpu: 4,
        tainted: false,
        cordoned: false,
    };
    let schedule = Step::Schedule {
        cycles: 1,
        victims_at_once: false,
    };
    let steps = [
        // n0: two `app=foo` pods of priority 0; n1: one other of 100.
        node(0),
        Step::Running { spec: 1, n: 0 },
        Step::Running { spec: 1, n: 0 },
        node(1),
        Step::Running { spec: 2, n: 1 },
        // No disruption allowed: the first preemptor goes to n1 (no
        // violation) and holds it.
        Step::Budget(0),
        Step::Pod(4),
        schedule.clone(),
        // Two allowed: evicting n0's pods violates nothing any more.
        Step::Budget(2),
        Step::Pod(4),
        schedule,
    ];
    let (decided, _) = match both(&steps, 5) {
        Ok(run) => run,
        Err(parted) => panic!("{parted}"),
    };
    assert_eq!(decided.len(), 2, "{decided:?}");
    assert!(
        decided[0].contains(r#"preemption Some("n1") violating Some(0)"#),
        "{}",
        decided[0]
    );
    assert!(
        decided[1].contains(r#"preemption Some("n0") violating Some(0)"#),
        "{}",
        decided[1]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn reusing_verdicts_changes_no_decision(steps in proptest::collection::vec(step(), 1..80)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build();
        let Ok(rt) = rt else { return Err(TestCaseError::fail("runtime")) };
        let _guard = rt.enter();
        if let Err(parted) = both(&steps, 11) {
            return Err(TestCaseError::fail(parted));
        }
    }
}
