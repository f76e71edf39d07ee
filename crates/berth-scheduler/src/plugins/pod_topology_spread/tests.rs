//! Upstream's table tests, ported: `TestSingleConstraint`,
//! `TestMultipleConstraints`, `TestPreFilterDisabled` (filtering_test.go),
//! `TestPodTopologySpreadScore`
//! and `TestPreScoreSkip` (scoring_test.go), including the
//! NodeInclusionPolicy cases, and `Test_isSchedulableAfterNodeChange` /
//! `Test_isSchedulableAfterPodChange` (plugin_test.go). Cases that only
//! differ with a feature gate off (berth has NodeInclusionPolicy and
//! matchLabelKeys always on) and the one that reads a Service are left out.
//!
//! Not ported, because they assert the shape of upstream's cycle state,
//! which berth's does not share: `TestPreFilterState`,
//! `TestPreFilterStateAddPod` and `TestPreFilterStateRemovePod`
//! (filtering_test.go) compare `preFilterState`'s `TpPairToMatchNum` and
//! its two `TpKeyToCriticalPaths` per key; berth's `PreFilterState`
//! keeps each constraint's minimum count and the per-domain counts live
//! in the cycle memory's slots (`counts`), brought forward over the pod
//! log; berth's framework has no PreFilter extensions (upstream's
//! AddPod/RemovePod, which only preemption calls). `TestPreScoreStateEmptyNodes` (scoring_test.go)
//! compares `preScoreState`'s `IgnoredNodes` and `TopologyPairToPodCounts`,
//! which berth does not keep (ignored nodes are only counted, and the
//! counts are in the memory too); its normalising weights are what the
//! score table's results pin down. The behaviour all of these stand for is checked
//! through Filter and Score by the tables above.

use k8s_openapi::api::core::v1::{Node, Pod};

use super::*;
use crate::framework::{
    Code, CycleState, FilterPlugin, NodeScore, PodInfo, PreFilterPlugin, PreScorePlugin,
    ScorePlugin, Snapshot, Status,
};
use crate::plugins::testing::*;
use crate::snapshot::{ServedWorkloads, WorkloadSelectors};
use berth_core::test_util::{
    HONOR, IGNORE, MATCH_EXPRESSIONS, PodWrapper, make_node, make_pod, make_selector, taint, tol,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

struct Case {
    name: &'static str,
    pod: Pod,
    nodes: Vec<Node>,
    existing_pods: Vec<Pod>,
    /// Nodes that did not pass filtering (scored cases only).
    failed_nodes: Vec<Node>,
    want: &'static [(&'static str, Code)],
}

struct ScoreCase {
    name: &'static str,
    pod: Pod,
    nodes: Vec<Node>,
    existing_pods: Vec<Pod>,
    failed_nodes: Vec<Node>,
    want: &'static [(&'static str, i64)],
}

/// Upstream's plugin for these tests: `DefaultingType: List`, no
/// defaults.
fn plugin() -> PodTopologySpread {
    PodTopologySpread::new(DefaultingType::List, Vec::new(), Default::default())
}

/// The nodes both ways the plugin can find a node's domain: by the node's
/// position in the snapshot (as in a cycle) and by its label (a node that
/// is in no snapshot).
fn both_layouts(nodes: &[Node], pods: &[Pod]) -> [(&'static str, Vec<NodeInfo>); 2] {
    let placed = node_infos(nodes, pods);
    let mut unplaced = placed.clone();
    for node in &mut unplaced {
        node.set_position(usize::MAX);
    }
    [("by position", placed), ("by label", unplaced)]
}

fn run_filter_cases(cases: Vec<Case>) {
    for case in cases {
        assert!(case.failed_nodes.is_empty());
        for (layout, nodes) in both_layouts(&case.nodes, &case.existing_pods) {
            let snapshot = Snapshot::of_nodes(&nodes);
            let pod = PodInfo::from(case.pod.clone());
            let pl = plugin();
            let mut state = CycleState::new();
            let (_, status) = pl.pre_filter(&mut state, &pod, &snapshot);
            assert!(status.is_success(), "{}: pre_filter: {status}", case.name);
            for node in &nodes {
                let got = pl.filter(&state, &pod, node).code;
                let want = case
                    .want
                    .iter()
                    .find(|(n, _)| *n == node.name())
                    .map(|(_, c)| *c);
                assert_eq!(
                    Some(got),
                    want,
                    "{} ({layout}): node {}",
                    case.name,
                    node.name()
                );
            }
        }
    }
}

/// The tables are large values built in one function: debug builds need
/// a bigger stack than a test thread's default for them.
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .expect("spawning the test thread");
    if let Err(panic) = handle.join() {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn single_constraint_as_upstream() {
    with_big_stack(|| run_filter_cases(single_cases()));
}

#[test]
fn multiple_constraints_as_upstream() {
    with_big_stack(|| run_filter_cases(multiple_cases()));
}

#[test]
fn pod_topology_spread_score_as_upstream() {
    with_big_stack(run_score_cases);
}

fn run_score_cases() {
    for case in score_cases() {
        let mut all = case.nodes.clone();
        all.extend(case.failed_nodes.iter().cloned());
        for (layout, infos) in both_layouts(&all, &case.existing_pods) {
            let snapshot = Snapshot::of_nodes(&infos);
            let feasible: Vec<&NodeInfo> = infos.iter().take(case.nodes.len()).collect();
            let pod = PodInfo::from(case.pod.clone());
            let pl = plugin();
            let mut state = CycleState::new();
            let status = pl.pre_score(&mut state, &pod, &snapshot, &feasible);
            assert!(status.is_success(), "{}: pre_score: {status}", case.name);
            let mut scores: Vec<NodeScore> = feasible
                .iter()
                .map(|n| NodeScore {
                    name: n.name().to_string(),
                    score: pl.score(&state, &pod, n).unwrap_or(i64::MIN),
                })
                .collect();
            assert!(pl.normalize_score(&state, &pod, &mut scores).is_success());
            let got: Vec<(&str, i64)> = scores.iter().map(|s| (s.name.as_str(), s.score)).collect();
            assert_eq!(got, case.want.to_vec(), "{} ({layout})", case.name);
        }
    }
}

fn single_cases() -> Vec<Case> {
    vec![
        Case {
            name: "no existing pods",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "no existing pods, incoming pod doesn't match itself",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "existing pods in a different namespace do not count",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .namespace("ns1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .namespace("ns2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "existing pods do not match null selector",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(1, "zone", DO_NOT_SCHEDULE, None, None, None, None, None)
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "pods spread across zones as 3/3, all nodes fit",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zon", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::UnschedulableAndUnresolvable),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "pod cannot be scheduled as all nodes don't have label 'rack'",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "rack",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
            ],
            existing_pods: vec![],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::UnschedulableAndUnresolvable),
                ("node-x", Code::UnschedulableAndUnresolvable),
            ],
        },
        Case {
            name: "pods spread across nodes as 2/1/0/3, only node-x fits",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            pod: make_pod()
                .name("p")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "terminating Pods should be excluded",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("node", "node-a").obj(),
                make_node().name("node-b").label("node", "node-b").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a")
                    .node("node-a")
                    .label("foo", "")
                    .terminating(jiff::Timestamp::UNIX_EPOCH)
                    .obj(),
                make_pod().name("p-b").node("node-b").label("foo", "").obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", Code::Success), ("node-b", Code::Unschedulable)],
        },
        Case {
            name: "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    Some(4),
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("node", "node-a").obj(),
                make_node().name("node-b").label("node", "node-b").obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-c", Code::Success),
            ],
        },
        Case {
            name: "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    Some(2),
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("node", "node-a").obj(),
                make_node().name("node-b").label("node", "node-b").obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-c", Code::Success),
            ],
        },
        Case {
            name: "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    Some(3),
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    Some(1),
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "NodeAffinityPolicy honored with labelSelectors",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-y").label("node", "node-y").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "NodeAffinityPolicy ignored with labelSelectors",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    Some(IGNORE),
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-y").label("node", "node-y").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "NodeAffinityPolicy honored with nodeAffinity",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_affinity_in("foo", vec![""], MATCH_EXPRESSIONS)
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-y").label("node", "node-y").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "NodeAffinityPolicy ignored with labelSelectors",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_affinity_in("foo", vec![""], MATCH_EXPRESSIONS)
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    Some(IGNORE),
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-y").label("node", "node-y").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "NodeTaintsPolicy honored",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    Some(HONOR),
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("node", "node-y")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "NodeTaintsPolicy ignored",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("node", "node-y")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
    ]
}

fn multiple_cases() -> Vec<Case> {
    vec![
        Case {
            name: "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y4")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Success),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
            pod: make_pod()
                .name("p")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Success),
                ("node-b", Code::Success),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node().name("node-x").label("zone", "zone2").obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Success),
                ("node-x", Code::UnschedulableAndUnresolvable),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    Some(IGNORE),
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    Some(HONOR),
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .label("foo", "")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Success),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    Some(HONOR),
                    None,
                )
                .spread_constraint(
                    1,
                    "node",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    Some(IGNORE),
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .label("foo", "")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Unschedulable),
            ],
        },
        Case {
            name: "two Constraints on zone, spreads = [3/3, 2/1]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Success),
                ("node-y", Code::Success),
            ],
        },
        Case {
            name: "two Constraints on zone, spreads = [3/4, 2/1]",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "zone",
                    DO_NOT_SCHEDULE,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label("node", "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label("node", "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label("node", "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label("node", "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y4")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", Code::Unschedulable),
                ("node-b", Code::Unschedulable),
                ("node-x", Code::Unschedulable),
                ("node-y", Code::Unschedulable),
            ],
        },
    ]
}

fn score_cases() -> Vec<ScoreCase> {
    vec![
        ScoreCase {
            name: "one constraint on node, no existing pods",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
            ],
            existing_pods: vec![],
            failed_nodes: vec![],
            want: &[("node-a", 100), ("node-b", 100)],
        },
        ScoreCase {
            name: "one constraint on node, only one node is candidate",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
            ],
            want: &[("node-a", 100)],
        },
        ScoreCase {
            name: "one constraint on node, all nodes have the same number of matching pods",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 100), ("node-b", 100)],
        },
        ScoreCase {
            name: "one constraint on node, all 4 nodes are candidates",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-c")
                    .label(LABEL_HOSTNAME, "node-c")
                    .obj(),
                make_node()
                    .name("node-d")
                    .label(LABEL_HOSTNAME, "node-d")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d1")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d2")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d3")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 20),
                ("node-b", 60),
                ("node-c", 100),
                ("node-d", 0),
            ],
        },
        ScoreCase {
            name: "one constraint on node, null selector",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    None,
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-c")
                    .label(LABEL_HOSTNAME, "node-c")
                    .obj(),
                make_node()
                    .name("node-d")
                    .label(LABEL_HOSTNAME, "node-d")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d1")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d2")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d3")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 100),
                ("node-b", 100),
                ("node-c", 100),
                ("node-d", 100),
            ],
        },
        ScoreCase {
            name: "one constraint on node, all 4 nodes are candidates, maxSkew=2",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-c")
                    .label(LABEL_HOSTNAME, "node-c")
                    .obj(),
                make_node()
                    .name("node-d")
                    .label(LABEL_HOSTNAME, "node-d")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d1")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d2")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d3")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 33),
                ("node-b", 66),
                ("node-c", 100),
                ("node-d", 16),
            ],
        },
        ScoreCase {
            name: "one constraint on node, all 4 nodes are candidates, maxSkew=3",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    3,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-c")
                    .label(LABEL_HOSTNAME, "node-c")
                    .obj(),
                make_node()
                    .name("node-d")
                    .label(LABEL_HOSTNAME, "node-d")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a3")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a4")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b3")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c2")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-d1")
                    .node("node-d")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 44),
                ("node-b", 66),
                ("node-c", 77),
                ("node-d", 100),
            ],
        },
        ScoreCase {
            name: "one constraint on node, 3 out of 4 nodes are candidates",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a3")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a4")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node()
                    .name("node-y")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            want: &[("node-a", 33), ("node-b", 83), ("node-x", 100)],
        },
        ScoreCase {
            name: "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node().name("node-b").label("n", "node-b").obj(),
                make_node()
                    .name("node-x")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a3")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a4")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node()
                    .name("node-y")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            want: &[("node-a", 16), ("node-b", 0), ("node-x", 100)],
        },
        ScoreCase {
            name: "one constraint on zone, 3 out of 4 nodes are candidates",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a3")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a4")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            want: &[("node-a", 75), ("node-b", 75), ("node-x", 100)],
        },
        ScoreCase {
            name: "two Constraints on zone and node, 2 out of 4 nodes are candidates",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-x2")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y4")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            want: &[("node-a", 100), ("node-x", 63)],
        },
        ScoreCase {
            name: "two Constraints on zone, 2 out of 4 nodes are candidates",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("zone", "zone1").obj(),
                make_node().name("node-x").label("zone", "zone2").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y3")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node().name("node-b").label("zone", "zone1").obj(),
                make_node().name("node-y").label("zone", "zone2").obj(),
            ],
            want: &[("node-a", 85), ("node-x", 100)],
        },
        ScoreCase {
            name: "two Constraints on zone and node, with different labelSelectors",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 60),
                ("node-b", 20),
                ("node-x", 100),
                ("node-y", 60),
            ],
        },
        ScoreCase {
            name: "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-x1")
                    .node("node-x")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 100),
                ("node-b", 60),
                ("node-x", 40),
                ("node-y", 0),
            ],
        },
        ScoreCase {
            name: "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    bar_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-x")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-x")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-y")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![
                make_node()
                    .name("node-y")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-y")
                    .obj(),
            ],
            want: &[("node-a", 50), ("node-b", 25), ("node-x", 100)],
        },
        ScoreCase {
            name: "existing pods in a different namespace do not count",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .namespace("ns1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 100), ("node-b", 33)],
        },
        ScoreCase {
            name: "terminating Pods should be excluded",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a")
                    .node("node-a")
                    .label("foo", "")
                    .terminating(jiff::Timestamp::UNIX_EPOCH)
                    .obj(),
                make_pod().name("p-b").node("node-b").label("foo", "").obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 100), ("node-b", 0)],
        },
        ScoreCase {
            name: "minDomains has no effect when ScheduleAnyway",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    2,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    Some(10),
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("node", "node-a").obj(),
                make_node().name("node-b").label("node", "node-b").obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b2")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 75), ("node-b", 75), ("node-c", 100)],
        },
        ScoreCase {
            name: "NodeAffinityPolicy honoed with labelSelectors",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 0), ("node-b", 33), ("node-c", 100)],
        },
        ScoreCase {
            name: "NodeAffinityPolicy ignored with labelSelectors",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_selector(&[("foo", "")])
                .spread_constraint(
                    1,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    Some(IGNORE),
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 66), ("node-b", 100), ("node-c", 100)],
        },
        ScoreCase {
            name: "NodeAffinityPolicy honoed with nodeAffinity",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_affinity_in("foo", vec![""], MATCH_EXPRESSIONS)
                .spread_constraint(
                    1,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 0), ("node-b", 33), ("node-c", 100)],
        },
        ScoreCase {
            name: "NodeAffinityPolicy ignored with nodeAffinity",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .node_affinity_in("foo", vec![""], MATCH_EXPRESSIONS)
                .spread_constraint(
                    1,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    Some(IGNORE),
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("node", "node-a")
                    .label("foo", "")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("node", "node-b")
                    .label("foo", "")
                    .obj(),
                make_node().name("node-c").label("node", "node-c").obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 66), ("node-b", 100), ("node-c", 100)],
        },
        ScoreCase {
            name: "NodeTaintsPolicy honored",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    Some(HONOR),
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("node", "node-a").obj(),
                make_node().name("node-b").label("node", "node-b").obj(),
                make_node()
                    .name("node-c")
                    .label("node", "node-c")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 0), ("node-b", 33), ("node-c", 100)],
        },
        ScoreCase {
            name: "NodeTaintsPolicy ignored",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .spread_constraint(
                    1,
                    "node",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .obj(),
            nodes: vec![
                make_node().name("node-a").label("node", "node-a").obj(),
                make_node().name("node-b").label("node", "node-b").obj(),
                make_node()
                    .name("node-c")
                    .label("node", "node-c")
                    .taints(unschedulable_taint())
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-a2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[("node-a", 66), ("node-b", 100), ("node-c", 100)],
        },
        ScoreCase {
            name: "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    Some(make_selector().obj()),
                    None,
                    None,
                    None,
                    Some(vec!["foo"]),
                )
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    Some(make_selector().obj()),
                    None,
                    None,
                    None,
                    Some(vec!["bar"]),
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-c")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-c")
                    .obj(),
                make_node()
                    .name("node-d")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-d")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-y1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-y2")
                    .node("node-c")
                    .label("bar", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 60),
                ("node-b", 20),
                ("node-c", 60),
                ("node-d", 100),
            ],
        },
        ScoreCase {
            name: "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
            pod: make_pod()
                .name("p")
                .label("foo", "")
                .label("bar", "")
                .label("baz", "")
                .spread_constraint(
                    1,
                    "zone",
                    SCHEDULE_ANYWAY,
                    foo_selector(),
                    None,
                    None,
                    None,
                    None,
                )
                .spread_constraint(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    bar_selector(),
                    None,
                    None,
                    None,
                    Some(vec!["baz"]),
                )
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-a")
                    .obj(),
                make_node()
                    .name("node-b")
                    .label("zone", "zone1")
                    .label(LABEL_HOSTNAME, "node-b")
                    .obj(),
                make_node()
                    .name("node-c")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-c")
                    .obj(),
                make_node()
                    .name("node-d")
                    .label("zone", "zone2")
                    .label(LABEL_HOSTNAME, "node-d")
                    .obj(),
            ],
            existing_pods: vec![
                make_pod()
                    .name("p-a1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-b1")
                    .node("node-b")
                    .label("foo", "")
                    .label("bar", "")
                    .label("baz", "")
                    .obj(),
                make_pod()
                    .name("p-c1")
                    .node("node-c")
                    .label("foo", "")
                    .obj(),
                make_pod()
                    .name("p-c2")
                    .node("node-c")
                    .label("bar", "")
                    .obj(),
                make_pod()
                    .name("p-d3")
                    .node("node-c")
                    .label("bar", "")
                    .label("baz", "")
                    .obj(),
            ],
            failed_nodes: vec![],
            want: &[
                ("node-a", 60),
                ("node-b", 20),
                ("node-c", 60),
                ("node-d", 100),
            ],
        },
    ]
}

/// `.spread_constraint(1, key, DoNotSchedule, selector, …)` with only the
/// node taints policy set, as upstream's hint tables write them.
fn hard_spread(
    pod: PodWrapper,
    key: &str,
    selector: Option<LabelSelector>,
    node_taints_policy: Option<&str>,
) -> PodWrapper {
    pod.spread_constraint(
        1,
        key,
        DO_NOT_SCHEDULE,
        selector,
        None,
        None,
        node_taints_policy,
        None,
    )
}

/// A row of a queueing hint table: the waiting pod, the object before
/// and after the event, and whether the pod should be queued (`true`,
/// upstream's `Queue`; `false`, its `QueueSkip`).
struct HintCase<T> {
    name: &'static str,
    pod: Pod,
    old: Option<T>,
    new: Option<T>,
    want: bool,
}

fn run_hint_cases<T>(
    cases: Vec<HintCase<T>>,
    hint: impl Fn(&PodTopologySpread, &Pod, Option<&T>, Option<&T>, &dyn WorkloadSelectors) -> bool,
) {
    let pl = plugin();
    for case in cases {
        let got = hint(
            &pl,
            &case.pod,
            case.old.as_ref(),
            case.new.as_ref(),
            &ServedWorkloads,
        );
        assert_eq!(got, case.want, "{}", case.name);
    }
}

/// Upstream `Test_isSchedulableAfterNodeChange` (plugin_test.go).
#[test]
fn is_schedulable_after_node_change_as_upstream() {
    type Case = HintCase<Node>;
    let zone = || hard_spread(make_pod().name("p"), "zone", foo_selector(), None).obj();
    let zone_and_node = || {
        hard_spread(
            hard_spread(make_pod().name("p"), "zone", foo_selector(), None),
            "node",
            foo_selector(),
            None,
        )
        .obj()
    };
    let node = |labels: &[(&str, &str)]| make_node().name("node-a").labels(labels).obj();
    let tainted = |labels: &[(&str, &str)], key: &str| {
        make_node()
            .name("node-a")
            .labels(labels)
            .taints(vec![taint(key, "bbb", "NoSchedule")])
            .obj()
    };
    let cases = vec![
        Case {
            name: "node updates label which matches topologyKey",
            pod: zone(),
            old: Some(node(&[("zone", "zone1")])),
            new: Some(node(&[("zone", "zone2")])),
            want: true,
        },
        Case {
            name: "node that doesn't match topologySpreadConstraints updates non-related label",
            pod: zone(),
            old: Some(node(&[("foo", "bar1")])),
            new: Some(node(&[("foo", "bar2")])),
            want: false,
        },
        Case {
            name: "node that match topologySpreadConstraints adds non-related label",
            pod: zone_and_node(),
            old: Some(node(&[
                ("zone", "zone1"),
                ("node", "node1"),
                ("foo", "bar"),
            ])),
            new: Some(node(&[("zone", "zone1"), ("node", "node1")])),
            want: false,
        },
        Case {
            name: "create node with non-related labels",
            pod: zone(),
            old: None,
            new: Some(node(&[("foo", "bar")])),
            want: false,
        },
        Case {
            name: "create node with related labels",
            pod: zone(),
            old: None,
            new: Some(node(&[("zone", "zone1")])),
            want: true,
        },
        Case {
            name: "delete node with non-related labels",
            pod: zone(),
            old: Some(node(&[("foo", "bar")])),
            new: None,
            want: false,
        },
        Case {
            name: "delete node with related labels",
            pod: zone(),
            old: Some(node(&[("zone", "zone1")])),
            new: None,
            want: true,
        },
        Case {
            name: "add node with related labels that only match one of topologySpreadConstraints",
            pod: zone_and_node(),
            old: None,
            new: Some(node(&[("zone", "zone1")])),
            want: false,
        },
        Case {
            name: "add node with related labels that match all topologySpreadConstraints",
            pod: zone_and_node(),
            old: None,
            new: Some(node(&[("zone", "zone1"), ("node", "node1")])),
            want: true,
        },
        Case {
            name: "update node with related labels that only match one of topologySpreadConstraints",
            pod: zone_and_node(),
            old: Some(node(&[("zone", "zone1")])),
            new: Some(node(&[("zone", "zone1")])),
            want: false,
        },
        Case {
            name: "update node with related labels that match all topologySpreadConstraints",
            pod: zone_and_node(),
            old: Some(node(&[("zone", "zone1"), ("node", "node1")])),
            new: Some(node(&[("zone", "zone1"), ("node", "node2")])),
            want: true,
        },
        Case {
            name: "update node with different taints that match all topologySpreadConstraints",
            pod: zone_and_node(),
            old: Some(tainted(&[("zone", "zone1"), ("node", "node1")], "aaa")),
            new: Some(tainted(&[("zone", "zone1"), ("node", "node1")], "ccc")),
            want: true,
        },
        Case {
            name: "update node with different taints that only match one of topologySpreadConstraints",
            pod: zone_and_node(),
            old: Some(tainted(&[("node", "node1")], "aaa")),
            new: Some(tainted(&[("node", "node1")], "ccc")),
            want: false,
        },
    ];
    run_hint_cases(cases, PodTopologySpread::is_schedulable_after_node_change);
}

/// Upstream `Test_isSchedulableAfterPodChange` (plugin_test.go). berth
/// has NodeInclusionPolicy always on, as the case that turns it on.
#[test]
fn is_schedulable_after_pod_change_as_upstream() {
    type Case = HintCase<Pod>;
    let waiting = || make_pod().uid("p").name("p").label("foo", "");
    let zone = || hard_spread(waiting(), "zone", foo_selector(), None).obj();
    // The zone constraint with `nodeTaintsPolicy` `taints`, and a node
    // constraint over `bar`.
    let zone_and_node = |taints: Option<&str>| {
        hard_spread(
            hard_spread(waiting(), "zone", foo_selector(), taints),
            "node",
            bar_selector(),
            None,
        )
        .obj()
    };
    let bound = || make_pod().uid("p2").node("fake-node");
    let itself = || make_pod().uid("p").name("p");
    let unschedulable_toleration = || {
        tol(
            "node.kubernetes.io/unschedulable",
            "Exists",
            "",
            "NoSchedule",
        )
    };
    let cases = vec![
        Case {
            name: "add pod with labels match topologySpreadConstraints selector",
            pod: zone(),
            old: None,
            new: Some(bound().label("foo", "").obj()),
            want: true,
        },
        Case {
            name: "add un-scheduled pod",
            pod: zone(),
            old: None,
            new: Some(make_pod().uid("p2").label("foo", "").obj()),
            want: false,
        },
        Case {
            name: "update un-scheduled pod",
            pod: zone(),
            old: Some(make_pod().uid("p2").label("bar", "").obj()),
            new: Some(make_pod().uid("p2").label("foo", "").obj()),
            want: false,
        },
        Case {
            name: "delete un-scheduled pod",
            pod: zone(),
            old: Some(make_pod().uid("p2").label("foo", "").obj()),
            new: None,
            want: false,
        },
        Case {
            name: "add pod with different namespace",
            pod: zone(),
            old: None,
            new: Some(bound().namespace("fake-namespace").label("foo", "").obj()),
            want: false,
        },
        Case {
            name: "add pod with labels don't match topologySpreadConstraints selector",
            pod: zone(),
            old: None,
            new: Some(bound().label("bar", "").obj()),
            want: false,
        },
        Case {
            name: "delete pod with labels that match topologySpreadConstraints selector",
            pod: zone(),
            old: Some(bound().label("foo", "").obj()),
            new: None,
            want: true,
        },
        Case {
            name: "delete pod with labels that don't match topologySpreadConstraints selector",
            pod: zone(),
            old: Some(bound().label("bar", "").obj()),
            new: None,
            want: false,
        },
        Case {
            name: "update pod's non-related label",
            pod: zone(),
            old: Some(bound().label("foo", "").label("bar", "bar1").obj()),
            new: Some(bound().label("foo", "").label("bar", "bar2").obj()),
            want: false,
        },
        Case {
            name: "add pod's label that matches topologySpreadConstraints selector",
            pod: zone(),
            old: Some(bound().obj()),
            new: Some(bound().label("foo", "").obj()),
            want: true,
        },
        Case {
            name: "delete pod label that matches topologySpreadConstraints selector",
            pod: zone(),
            old: Some(bound().label("foo", "").obj()),
            new: Some(bound().obj()),
            want: true,
        },
        Case {
            name: "change pod's label that matches topologySpreadConstraints selector",
            pod: zone(),
            old: Some(bound().label("foo", "foo1").obj()),
            new: Some(bound().label("foo", "foo2").obj()),
            want: false,
        },
        Case {
            name: "change pod's label that doesn't match topologySpreadConstraints selector",
            pod: zone(),
            old: Some(bound().label("foo", "").label("bar", "bar1").obj()),
            new: Some(bound().label("foo", "").label("bar", "bar2").obj()),
            want: false,
        },
        Case {
            name: "add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
            pod: zone_and_node(None),
            old: Some(bound().label("foo", "").obj()),
            new: Some(bound().label("foo", "").label("bar", "bar2").obj()),
            want: true,
        },
        Case {
            name: "change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
            pod: zone_and_node(None),
            old: Some(bound().label("foo", "").obj()),
            new: Some(bound().label("foo", "").label("baz", "").obj()),
            want: false,
        },
        Case {
            name: "change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
            pod: zone_and_node(None),
            old: Some(bound().label("foo", "").label("bar", "").obj()),
            new: Some(bound().label("foo", "").label("bar", "bar2").obj()),
            want: false,
        },
        Case {
            name: "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",
            pod: zone_and_node(Some(HONOR)),
            old: Some(itself().label("foo", "").obj()),
            new: Some(
                itself()
                    .label("foo", "")
                    .toleration(unschedulable_toleration())
                    .obj(),
            ),
            want: true,
        },
        Case {
            name: "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",
            pod: zone_and_node(Some(IGNORE)),
            old: Some(itself().label("foo", "").obj()),
            new: Some(
                itself()
                    .label("foo", "")
                    .toleration(unschedulable_toleration())
                    .obj(),
            ),
            want: false,
        },
        Case {
            name: "the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",
            pod: zone_and_node(Some(IGNORE)),
            old: Some(itself().obj()),
            new: Some(itself().label("foo", "").obj()),
            want: true,
        },
        Case {
            name: "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
            pod: zone_and_node(Some(IGNORE)),
            old: Some(itself().obj()),
            new: Some(itself().label("unrelated", "").obj()),
            want: false,
        },
    ];
    run_hint_cases(cases, PodTopologySpread::is_schedulable_after_pod_change);
}

/// Upstream `TestPreScoreSkip` (scoring_test.go): PreScore skips a pod
/// with no soft constraints, and one whose default constraints get no
/// selector because no known workload owns it (berth's scheduler knows no
/// ReplicaSet selector, `ServedWorkloads`; upstream's knows `rs1`, which
/// is not the pod's owner).
#[test]
fn pre_score_skip_as_upstream() {
    struct Case {
        name: &'static str,
        pod: Pod,
        nodes: Vec<Node>,
        plugin: PodTopologySpread,
    }
    let owner = |name: &str| k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: name.into(),
        controller: Some(true),
        ..Default::default()
    };
    let planet = k8s_openapi::api::core::v1::TopologySpreadConstraint {
        max_skew: 2,
        topology_key: "planet".into(),
        when_unsatisfiable: SCHEDULE_ANYWAY.into(),
        ..Default::default()
    };
    let cases = vec![
        Case {
            name: "the pod doesn't have soft topology spread Constraints",
            pod: make_pod().name("p").namespace("default").obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .labels(&[(LABEL_HOSTNAME, "node-a")])
                    .obj(),
                make_node()
                    .name("node-b")
                    .labels(&[(LABEL_HOSTNAME, "node-b")])
                    .obj(),
            ],
            plugin: plugin(),
        },
        Case {
            name: "default constraints and a replicaset that doesn't match",
            pod: make_pod()
                .name("p")
                .namespace("default")
                .label("foo", "bar")
                .label("baz", "sup")
                .owner_reference(owner("rs2"))
                .obj(),
            nodes: vec![
                make_node()
                    .name("node-a")
                    .labels(&[("planet", "mars")])
                    .obj(),
            ],
            plugin: PodTopologySpread::new(DefaultingType::List, vec![planet], Default::default()),
        },
    ];
    for case in cases {
        let infos = node_infos(&case.nodes, &[]);
        let snapshot = Snapshot::of_nodes(&infos);
        let feasible: Vec<&NodeInfo> = infos.iter().collect();
        let status = case.plugin.pre_score(
            &mut CycleState::new(),
            &PodInfo::from(case.pod),
            &snapshot,
            &feasible,
        );
        assert!(status.is_skip(), "{}: {status}", case.name);
    }
}

/// Upstream `TestPreFilterDisabled` (filtering_test.go): Filter without
/// PreFilter's state is an error.
#[test]
fn pre_filter_disabled_as_upstream() {
    let infos = node_infos(&[Node::default()], &[]);
    let got = plugin().filter(
        &CycleState::new(),
        &PodInfo::from(Pod::default()),
        &infos[0],
    );
    let want = Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found")
        .with_plugin(NAME);
    assert_eq!(got, want);
}
