//! PodDisruptionBudgets in DefaultPreemption through the state machine
//! (the budgets as the PDB watch hands them over): upstream's
//! `TestDryRunPreemption` cases with budgets
//! (`defaultpreemption/default_preemption_test.go`, nodes of `veryLargeRes`
//! = 500m, pods of `mediumRes` = 200m and `largeRes` = 300m, priorities
//! mid 100, high 1000), and `pickOneNodeForPreemption`'s first rule:
//! fewest violations wins over cheaper victims.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::preemption_tests::{names, node, pending, refusal, running, scheduler};
use super::*;

const MID: i32 = 100;
const HIGH: i32 = 1000;

/// Upstream's budget of the cases: selects `app=foo` in `default`, with
/// `allowed` disruptions and `disrupted` pods already being evicted.
fn foo_budget(allowed: i32, disrupted: &[&str]) -> PodDisruptionBudget {
    let mut pdb = berth_core::test_util::pdb("foo", &[("app", "foo")], None, None);
    pdb.status = Some(PodDisruptionBudgetStatus {
        disruptions_allowed: Some(allowed),
        disrupted_pods: Some(
            disrupted
                .iter()
                .map(|name| (name.to_string(), Time(jiff::Timestamp::UNIX_EPOCH)))
                .collect(),
        ),
        ..PodDisruptionBudgetStatus::default()
    });
    pdb
}

fn foo(mut pod: Pod) -> Pod {
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert("app".into(), "foo".into());
    pod
}

/// The single-node cases of upstream's `TestDryRunPreemption` with a
/// budget: the 500m preemptor needs every pod of node1 gone; which of
/// those evictions the budget counts as violations.
#[tokio::test(start_paused = true)]
async fn budget_violations_are_counted_as_upstreams_dry_run_counts_them() {
    struct Case {
        name: &'static str,
        victims: &'static [&'static str],
        allowed: i32,
        disrupted: &'static [&'static str],
        want_violations: usize,
    }
    let cases = [
        Case {
            name: "preemption with violation of same pdb",
            victims: &["p1.1", "p1.2"],
            allowed: 1,
            disrupted: &[],
            want_violations: 1,
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods",
            victims: &["p1.1", "p1.2"],
            allowed: 1,
            disrupted: &["p2"],
            want_violations: 1,
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods",
            victims: &["p1.1", "p1.2"],
            allowed: 1,
            disrupted: &["p1.2"],
            want_violations: 0,
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to DisruptedPods is treated as 'nonViolating'",
            victims: &["p1.1", "p1.2", "p1.3"],
            allowed: 1,
            disrupted: &["p1.3"],
            want_violations: 1,
        },
    ];
    for case in cases {
        let mut s = scheduler();
        let now = Instant::now();
        node(&mut s, "node1", "500m", now);
        for name in case.victims {
            s.upsert_pod(foo(running(name, "node1", "200m", MID)), now);
        }
        s.upsert_pdb(foo_budget(case.allowed, case.disrupted));
        s.upsert_pod(pending("p", "500m", HIGH), now);
        let r = refusal(s.schedule_one(now));
        let preemption = r
            .preemption
            .unwrap_or_else(|| panic!("{}: no preemption", case.name));
        assert_eq!(preemption.node, "node1", "{}", case.name);
        let mut victims = names(&preemption.victims);
        victims.sort();
        assert_eq!(victims, case.victims, "{}", case.name);
        assert_eq!(
            preemption.num_pdb_violations, case.want_violations,
            "{}",
            case.name
        );
    }
}

/// Upstream's "preemption looks past numCandidates until a non-PDB
/// violating node is found": node1, node2 and node5 carry `app=foo` pods
/// under a budget allowing no disruption (node2's pod is too important to
/// evict), node3 and node4 pods no budget covers. With the default
/// arguments every one of the five nodes is a candidate here; the one
/// chosen violates no budget.
#[tokio::test(start_paused = true)]
async fn a_candidate_without_budget_violations_is_chosen() {
    let mut s = scheduler();
    let now = Instant::now();
    for (n, priority, labelled) in [
        ("node1", MID, true),
        ("node2", 10_000, true),
        ("node3", MID, false),
        ("node4", MID, false),
        ("node5", MID, true),
    ] {
        node(&mut s, n, "500m", now);
        let pod = running(&format!("p{}", &n[4..]), n, "300m", priority);
        s.upsert_pod(if labelled { foo(pod) } else { pod }, now);
    }
    s.upsert_pdb(foo_budget(0, &[]));
    s.upsert_pod(pending("p", "300m", HIGH), now);
    let preemption = refusal(s.schedule_one(now))
        .preemption
        .expect("a preemption");
    assert!(
        ["node3", "node4"].contains(&preemption.node.as_str()),
        "chose {}",
        preemption.node
    );
    assert_eq!(preemption.num_pdb_violations, 0);
}

/// `pickOneNodeForPreemption`'s first rule through the watch's budgets:
/// node a's victim is cheaper (priority 0 against 50), but a budget
/// allowing no disruption covers it, so node b is chosen; once the budget
/// is deleted, a is.
#[tokio::test(start_paused = true)]
async fn fewest_budget_violations_win_over_cheaper_victims_until_the_budget_goes() {
    let mut s = scheduler();
    let now = Instant::now();
    node(&mut s, "a", "1", now);
    node(&mut s, "b", "1", now);
    s.upsert_pod(foo(running("cheap", "a", "1", 0)), now);
    s.upsert_pod(running("dearer", "b", "1", 50), now);
    s.upsert_pdb(foo_budget(0, &[]));
    s.upsert_pod(pending("first", "1", HIGH), now);
    let first = refusal(s.schedule_one(now))
        .preemption
        .expect("a preemption");
    assert_eq!(
        (
            first.node.as_str(),
            names(&first.victims),
            first.num_pdb_violations
        ),
        ("b", vec!["dearer".to_string()], 0)
    );

    // The first preemptor goes (its nomination with it), and so does
    // the budget.
    s.delete_pod("default/first", now);
    assert_eq!(s.cache().nominator().node_of("default/first"), None);
    s.delete_pdb("default", "foo");
    assert!(s.cache().budgets().is_empty());
    s.upsert_pod(pending("second", "1", HIGH), now);
    let second = refusal(s.schedule_one(now))
        .preemption
        .expect("a preemption");
    assert_eq!(
        (second.node.as_str(), names(&second.victims)),
        ("a", vec!["cheap".to_string()])
    );
}
