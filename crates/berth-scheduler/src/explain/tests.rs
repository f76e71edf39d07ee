use berth_core::test_util::{make_node, make_pod, make_selector, taint, tol};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use proptest::prelude::*;

use super::*;
use crate::cycle::Cycle;

fn node(name: &str, zone: &str, cpu: &str, taints: Vec<Taint>) -> Node {
    make_node()
        .name(name)
        .labels(&[("zone", zone), ("kubernetes.io/hostname", name)])
        .allocatable(&[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")])
        .taints(taints)
        .obj()
}

/// A 4-cpu node in zone `a` with one taint.
fn tainted(name: &str, key: &str, value: &str, effect: &str) -> Node {
    node(name, "a", "4", vec![taint(key, value, effect)])
}

fn explain_in(nodes: Vec<Node>, pods: Vec<Pod>, pod: &Pod) -> Explanation {
    let profile = Profile::default();
    let cluster = ClusterObjects {
        nodes,
        pods,
        namespaces: Vec::new(),
    };
    explain(&profile, pod, &cache_of(&profile, &cluster, &pod_key(pod)))
}

fn by_name<'a>(e: &'a Explanation, name: &str) -> &'a NodeExplanation {
    e.nodes
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("{name} not in {e:?}"))
}

/// Each node's verdict names the plugin and the taint that decided it;
/// feasible nodes are ranked by the weighted sum of their scores.
#[test]
fn explanation_names_the_deciding_taint_and_ranks_the_feasible_nodes() {
    struct Case {
        name: &'static str,
        node: &'static str,
        want_rejected_by: Option<&'static str>,
        want_decided_taint: Option<&'static str>,
        want_tolerated_by: Option<(&'static str, &'static str)>,
    }
    let nodes = vec![
        tainted("gpu", "dedicated", "gpu", "NoSchedule"),
        node(
            "drain",
            "a",
            "4",
            vec![
                taint("soft", "", "PreferNoSchedule"),
                taint("maintenance", "kernel", "NoExecute"),
            ],
        ),
        node("small", "b", "100m", vec![]),
        node(
            "free",
            "b",
            "4",
            vec![taint("soft", "", "PreferNoSchedule")],
        ),
        node("plain", "c", "4", vec![]),
    ];
    let pod = make_pod()
        .name("web")
        .namespace("default")
        .req(&[("cpu", "500m")])
        .toleration(tol("soft", "Exists", "", "PreferNoSchedule"))
        .obj();
    let e = explain_in(nodes, Vec::new(), &pod);
    let cases = [
        Case {
            name: "a NoSchedule taint the pod does not tolerate",
            node: "gpu",
            want_rejected_by: Some("TaintToleration"),
            want_decided_taint: Some("dedicated=gpu:NoSchedule"),
            want_tolerated_by: None,
        },
        Case {
            name: "the NoExecute taint decides, the tolerated one does not",
            node: "drain",
            want_rejected_by: Some("TaintToleration"),
            want_decided_taint: Some("maintenance=kernel:NoExecute"),
            want_tolerated_by: Some(("soft:PreferNoSchedule", "soft Exists:PreferNoSchedule")),
        },
        Case {
            name: "too little cpu: NodeResourcesFit, no taint decides",
            node: "small",
            want_rejected_by: Some("NodeResourcesFit"),
            want_decided_taint: None,
            want_tolerated_by: None,
        },
        Case {
            name: "a tolerated PreferNoSchedule taint",
            node: "free",
            want_rejected_by: None,
            want_decided_taint: None,
            want_tolerated_by: Some(("soft:PreferNoSchedule", "soft Exists:PreferNoSchedule")),
        },
    ];
    for case in &cases {
        let n = by_name(&e, case.node);
        assert_eq!(
            n.rejected_by.as_deref(),
            case.want_rejected_by,
            "{}",
            case.name
        );
        assert_eq!(n.feasible, case.want_rejected_by.is_none(), "{}", case.name);
        assert_eq!(decided_taint(n), case.want_decided_taint, "{}", case.name);
        if let Some((taint, toleration)) = case.want_tolerated_by {
            let verdict = n.taints.iter().find(|t| t.taint == taint);
            assert_eq!(
                verdict.and_then(|t| t.tolerated_by.as_deref()),
                Some(toleration),
                "{}",
                case.name
            );
        }
        // Every filter's verdict is shown, the rejecting one among them.
        assert_eq!(
            n.filters.len(),
            Profile::default().filters.len(),
            "{}",
            case.name
        );
        if let Some(plugin) = case.want_rejected_by {
            assert!(
                n.filters
                    .iter()
                    .any(|f| f.plugin == plugin && f.verdict != "Passed"),
                "{}: {:?}",
                case.name,
                n.filters
            );
        }
    }
    // The feasible nodes: scored by every score plugin, ranked by total.
    let feasible: Vec<&NodeExplanation> = e.nodes.iter().filter(|n| n.feasible).collect();
    assert_eq!(feasible.len(), 2);
    for n in &feasible {
        let sum: i64 = n.scores.iter().map(|s| s.weighted).sum();
        assert_eq!(n.total, Some(sum), "{}", n.name);
        assert!(
            n.scores
                .iter()
                .all(|s| s.weighted == s.normalized * s.weight)
        );
        // Plugins whose PreScore has nothing to do for the pod (no spread
        // constraints, no affinity terms) are left out, as in a cycle.
        assert!(
            n.scores.iter().any(|s| s.plugin == "TaintToleration"),
            "{}",
            n.name
        );
        assert_eq!(n.scores.len(), feasible[0].scores.len(), "{}", n.name);
    }
    assert!(feasible[0].total >= feasible[1].total);
    assert_eq!(feasible[0].rank, Some(1));
    assert!(e.best.contains(&feasible[0].name));
    assert!(e.unschedulable.is_none());
}

/// A bound pod is explained as when it was pending: its own node is not
/// rejected by NodeName, and its own requests do not count on the node.
#[test]
fn a_bound_pod_is_explained_as_when_it_was_pending() {
    let nodes = vec![node("n1", "a", "1", vec![]), node("n2", "a", "1", vec![])];
    let pod = make_pod()
        .name("big")
        .namespace("default")
        .req(&[("cpu", "800m")])
        .node("n1")
        .obj();
    let e = explain_in(nodes, vec![pod.clone()], &pod);
    assert_eq!(e.bound_to.as_deref(), Some("n1"));
    assert!(e.nodes.iter().all(|n| n.feasible), "{e:?}");
}

/// No node fits: the explanation carries upstream's message, as the
/// scheduler's event would.
#[test]
fn an_unschedulable_pod_gets_the_schedulers_message() {
    let nodes = vec![
        tainted("n1", "dedicated", "gpu", "NoSchedule"),
        tainted("n2", "dedicated", "gpu", "NoSchedule"),
    ];
    let pod = make_pod().name("p").namespace("default").obj();
    let e = explain_in(nodes, Vec::new(), &pod);
    assert!(e.best.is_empty());
    let message = e.unschedulable.unwrap_or_default();
    assert!(
        message.starts_with("0/2 nodes are available: 2 node(s) had untolerated taint"),
        "{message}"
    );
}

// The law: explain agrees with the cycle.

const ZONES: [&str; 3] = ["a", "b", "c"];

fn any_taint() -> impl Strategy<Value = Taint> {
    prop::sample::select(vec![
        taint("dedicated", "gpu", "NoSchedule"),
        taint("dedicated", "db", "NoSchedule"),
        taint("soft", "", "PreferNoSchedule"),
        taint("maintenance", "kernel", "NoExecute"),
        taint("level", "3", "NoSchedule"),
    ])
}

fn any_toleration() -> impl Strategy<Value = Toleration> {
    prop::sample::select(vec![
        tol("dedicated", "Equal", "gpu", "NoSchedule"),
        tol("dedicated", "Exists", "", ""),
        tol("soft", "Exists", "", "PreferNoSchedule"),
        tol("maintenance", "Exists", "", "NoExecute"),
        tol("level", "Gt", "2", "NoSchedule"),
        tol("", "Exists", "", ""),
        tol(
            "node.kubernetes.io/unschedulable",
            "Exists",
            "",
            "NoSchedule",
        ),
    ])
}

#[derive(Debug, Clone)]
struct NodeCase {
    zone: usize,
    millicpu: u32,
    taints: Vec<Taint>,
    cordoned: bool,
}

#[derive(Debug, Clone)]
struct BoundCase {
    node: prop::sample::Index,
    app: usize,
    millicpu: u32,
}

#[derive(Debug, Clone)]
struct PodCase {
    millicpu: u32,
    tolerations: Vec<Toleration>,
    zone_selector: Option<usize>,
    app: usize,
    spread: Option<&'static str>,
    anti_affinity: bool,
    preferred_affinity: bool,
}

fn any_node() -> impl Strategy<Value = NodeCase> {
    (
        0..ZONES.len(),
        prop::sample::select(vec![500u32, 1000, 2000, 4000]),
        prop::collection::vec(any_taint(), 0..3),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(zone, millicpu, taints, cordoned)| NodeCase {
            zone,
            millicpu,
            taints,
            cordoned,
        })
}

fn any_bound() -> impl Strategy<Value = BoundCase> {
    (
        any::<prop::sample::Index>(),
        0..2usize,
        prop::sample::select(vec![100u32, 300, 700]),
    )
        .prop_map(|(node, app, millicpu)| BoundCase {
            node,
            app,
            millicpu,
        })
}

fn any_pod() -> impl Strategy<Value = PodCase> {
    (
        prop::sample::select(vec![0u32, 200, 600, 1500]),
        prop::collection::vec(any_toleration(), 0..3),
        prop::option::weighted(0.3, 0..ZONES.len()),
        0..2usize,
        prop::option::weighted(
            0.3,
            prop::sample::select(vec!["DoNotSchedule", "ScheduleAnyway"]),
        ),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(millicpu, tolerations, zone_selector, app, spread, anti_affinity, preferred)| {
                PodCase {
                    millicpu,
                    tolerations,
                    zone_selector,
                    app,
                    spread,
                    anti_affinity,
                    preferred_affinity: preferred,
                }
            },
        )
}

const APPS: [&str; 2] = ["web", "db"];

fn build(nodes: &[NodeCase], bound: &[BoundCase], pod: &PodCase) -> (ClusterObjects, Pod) {
    let nodes: Vec<Node> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut built = node(
                &format!("n{i}"),
                ZONES[n.zone],
                &format!("{}m", n.millicpu),
                n.taints.clone(),
            );
            built.spec.get_or_insert_default().unschedulable = Some(n.cordoned);
            built
        })
        .collect();
    let pods = bound
        .iter()
        .enumerate()
        .map(|(i, b)| {
            make_pod()
                .name(&format!("bound-{i}"))
                .namespace("default")
                .label("app", APPS[b.app])
                .req(&[("cpu", &format!("{}m", b.millicpu))])
                .node(&format!("n{}", b.node.index(nodes.len())))
                .obj()
        })
        .collect();
    let mut wrapper = make_pod()
        .name("explained")
        .namespace("default")
        .label("app", APPS[pod.app])
        .tolerations(pod.tolerations.clone());
    if pod.millicpu > 0 {
        wrapper = wrapper.req(&[("cpu", &format!("{}m", pod.millicpu))]);
    }
    if let Some(zone) = pod.zone_selector {
        wrapper = wrapper.node_selector(&[("zone", ZONES[zone])]);
    }
    let same_app = || make_selector().label("app", APPS[pod.app]).obj();
    if let Some(when) = pod.spread {
        wrapper =
            wrapper.spread_constraint(1, "zone", when, Some(same_app()), None, None, None, None);
    }
    if pod.anti_affinity {
        wrapper = wrapper.pod_anti_affinity("kubernetes.io/hostname", same_app(), vec![], None);
    }
    if pod.preferred_affinity {
        wrapper = wrapper.preferred_pod_affinity(10, "zone", same_app(), vec![]);
    }
    (
        ClusterObjects {
            nodes,
            pods,
            namespaces: Vec::new(),
        },
        wrapper.obj(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// The law of `berth explain`: on a random cluster and pod, the node
    /// explain ranks first is one the real cycle could choose (feasible,
    /// with the cycle's choice's total: ties allowed), and every node it
    /// calls infeasible is one the cycle's filters reject, by the same
    /// plugin with the same reason; when no node fits, the message is the
    /// cycle's.
    #[test]
    fn explain_agrees_with_the_scheduling_cycle(
        nodes in prop::collection::vec(any_node(), 1..7),
        bound in prop::collection::vec(any_bound(), 0..8),
        pod in any_pod(),
        seed in any::<u64>(),
    ) {
        let (cluster, pod) = build(&nodes, &bound, &pod);
        let profile = Profile::default();
        let cache = cache_of(&profile, &cluster, &pod_key(&pod));
        let explanation = explain(&profile, &pod, &cache);
        let mut cycle = Cycle::new(seed);
        let decided = cycle.schedule_pod(&profile, &PodInfo::new(Arc::new(pod.clone())), &cache);
        let infeasible: BTreeMap<&str, (&str, &str)> = explanation
            .nodes
            .iter()
            .filter(|n| !n.feasible)
            .map(|n| {
                (
                    n.name.as_str(),
                    (
                        n.rejected_by.as_deref().unwrap_or(""),
                        n.reason.as_deref().unwrap_or(""),
                    ),
                )
            })
            .collect();
        match decided {
            Ok(result) => {
                let chosen = by_name(&explanation, &result.node);
                prop_assert!(chosen.feasible, "{} {:?}", result.node, explanation);
                let best = &explanation.nodes[0];
                prop_assert_eq!(best.rank, Some(1));
                prop_assert_eq!(chosen.total, best.total, "{:?}", explanation);
                prop_assert!(explanation.best.contains(&result.node));
                prop_assert_eq!(
                    result.feasible_nodes,
                    explanation.nodes.iter().filter(|n| n.feasible).count()
                );
                let rejected: BTreeMap<&str, (&str, String)> = cycle
                    .last_rejections()
                    .iter()
                    .map(|(i, status)| {
                        (cache.nodes()[*i].name(), (status.plugin, status.message()))
                    })
                    .collect();
                prop_assert_eq!(rejected.len(), infeasible.len());
                for (name, (plugin, reason)) in &infeasible {
                    let theirs = rejected.get(name);
                    prop_assert_eq!(theirs.map(|(p, _)| *p), Some(*plugin), "{}", name);
                    prop_assert_eq!(theirs.map(|(_, r)| r.as_str()), Some(*reason), "{}", name);
                }
            }
            Err(ScheduleError::Fit(fit)) => {
                prop_assert!(explanation.best.is_empty());
                prop_assert_eq!(infeasible.len(), explanation.nodes.len());
                prop_assert_eq!(explanation.unschedulable.clone(), Some(fit.to_string()));
                let statuses = &fit.diagnosis.node_to_status;
                for (name, (plugin, reason)) in &infeasible {
                    match statuses.get(name) {
                        Some(status) => {
                            prop_assert_eq!(status.plugin, *plugin, "{}", name);
                            prop_assert_eq!(&status.message(), reason, "{}", name);
                        }
                        // A PreFilter turned the pod away from every node.
                        None => prop_assert_eq!(&fit.diagnosis.pre_filter_msg, reason, "{}", name),
                    }
                }
            }
            Err(other) => prop_assert!(false, "the cycle failed: {other}"),
        }
    }
}
