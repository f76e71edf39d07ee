use std::sync::Arc;

use berth_core::test_util::{make_node, make_pod, taint, tol};
use k8s_openapi::api::core::v1::Node;

use super::*;

/// A node's allocatable in these tables: `cpu`, 32Gi of memory, 110 pods.
pub(crate) fn allocatable(cpu: &str) -> [(&str, &str); 3] {
    [("cpu", cpu), ("memory", "32Gi"), ("pods", "110")]
}

fn cache_of(nodes: Vec<Node>) -> Cache {
    let mut cache = Cache::new();
    for n in nodes {
        cache.upsert_node(Arc::new(n));
    }
    cache
}

/// Upstream `TestNumFeasibleNodesToFind` (the profile and global
/// percentages collapse into one here).
#[test]
fn num_feasible_nodes_to_find_as_upstream() {
    let cases = [
        ("not set, nodes not more than 50", 0, 10, 10),
        ("set, nodes not more than 50", 40, 10, 10),
        ("not set, nodes more than 50", 0, 1000, 420),
        ("set, nodes more than 50", 40, 1000, 400),
        ("set to 70, nodes more than 50", 70, 1000, 700),
        ("not set, nodes more than 50*125", 0, 6000, 300),
        ("set, nodes more than 50*125", 40, 6000, 2400),
        // berth's additions: the 100-node floor and the 5% floor.
        ("99 nodes: all of them", 0, 99, 99),
        ("a small percentage still finds 100", 1, 1000, 100),
        ("5,000 nodes: 10 %", 0, 5000, 500),
    ];
    for (name, percentage, nodes, want) in cases {
        assert_eq!(
            num_feasible_nodes_to_find(percentage, nodes),
            want,
            "{name}"
        );
    }
}

#[test]
fn select_host_picks_the_best_and_breaks_ties_at_random() {
    let mut tb = TieBreaker::new(7);
    assert_eq!(select_host(&[1, 5, 3], &mut tb), 1);
    let mut seen = [0usize; 5];
    for _ in 0..3000 {
        seen[select_host(&[9, 2, 9, 9, 1], &mut tb)] += 1;
    }
    assert_eq!((seen[1], seen[4]), (0, 0), "never a lower score");
    for i in [0, 2, 3] {
        // Each of three tied nodes gets about a third.
        assert!((800..1200).contains(&seen[i]), "{seen:?}");
    }
}

#[test]
fn fit_error_counts_reasons_like_upstream() {
    let cordoned = |name: &str| {
        let mut n = make_node()
            .name(name)
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj();
        if let Some(s) = n.spec.as_mut() {
            s.unschedulable = Some(true);
        }
        n
    };
    let nodes = vec![
        make_node()
            .name("t1")
            .allocatable(&allocatable("4"))
            .taints(vec![taint("dedicated", "db", "NoSchedule")])
            .obj(),
        make_node()
            .name("t2")
            .allocatable(&allocatable("4"))
            .taints(vec![taint("gpu", "", "NoExecute")])
            .obj(),
        cordoned("c1"),
        cordoned("c2"),
        cordoned("c3"),
    ];
    let cache = cache_of(nodes);
    let mut cycle = Cycle::new(1);
    let err = cycle
        .schedule_pod(
            &Profile::default(),
            &PodInfo::from(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "100m")])
                    .tolerations(vec![])
                    .obj(),
            ),
            &cache,
        )
        .err();
    let Some(ScheduleError::Fit(fit)) = err else {
        panic!("expected a FitError, got {err:?}");
    };
    assert_eq!(
        fit.to_string(),
        "0/5 nodes are available: 2 node(s) had untolerated taint(s), 3 node(s) were unschedulable."
    );
    let plugins: Vec<_> = fit
        .diagnosis
        .unschedulable_plugins
        .iter()
        .copied()
        .collect();
    assert_eq!(plugins, ["NodeUnschedulable", "TaintToleration"]);
}

#[test]
fn no_nodes_is_its_own_error() {
    let mut cycle = Cycle::new(1);
    let err = cycle
        .schedule_pod(
            &Profile::default(),
            &PodInfo::from(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "1")])
                    .tolerations(vec![])
                    .obj(),
            ),
            &Cache::new(),
        )
        .err();
    assert_eq!(err, Some(ScheduleError::NoNodes));
    assert_eq!(ScheduleError::NoNodes.to_string(), NO_NODES_AVAILABLE);
}

#[test]
fn prefer_no_schedule_steers_pods_to_untainted_nodes() {
    let cache = cache_of(vec![
        make_node()
            .name("soft")
            .allocatable(&allocatable("4"))
            .taints(vec![taint("spot", "", "PreferNoSchedule")])
            .obj(),
        make_node()
            .name("a")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
        make_node()
            .name("b")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
    ]);
    let mut cycle = Cycle::new(3);
    let p = PodInfo::from(
        make_pod()
            .name("p")
            .namespace("default")
            .req(&[("cpu", "100m")])
            .tolerations(vec![])
            .obj(),
    );
    for _ in 0..50 {
        let got = cycle.schedule_pod(&Profile::default(), &p, &cache);
        let node = got.map(|r| r.node).unwrap_or_default();
        assert!(node == "a" || node == "b", "went to {node}");
    }
    // A pod tolerating the taint has no reason to avoid the node: the three
    // nodes tie and each is picked some of the time.
    let tolerating = PodInfo::from(
        make_pod()
            .name("q")
            .namespace("default")
            .req(&[("cpu", "100m")])
            .tolerations(vec![tol("spot", "Exists", "", "")])
            .obj(),
    );
    let mut soft = 0;
    for _ in 0..60 {
        if cycle
            .schedule_pod(&Profile::default(), &tolerating, &cache)
            .is_ok_and(|r| r.node == "soft")
        {
            soft += 1;
        }
    }
    assert!(soft > 0);
}

#[test]
fn least_allocated_prefers_the_emptier_node() {
    let mut cache = cache_of(vec![
        make_node()
            .name("busy")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
        make_node()
            .name("idle")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
    ]);
    cache.add_pod(
        "default/x",
        Arc::new(
            make_pod()
                .name("x")
                .namespace("default")
                .req(&[("cpu", "3")])
                .tolerations(vec![])
                .obj(),
        ),
        "busy",
    );
    let mut cycle = Cycle::new(5);
    let got = cycle.schedule_pod(
        &Profile::default(),
        &PodInfo::from(
            make_pod()
                .name("p")
                .namespace("default")
                .req(&[("cpu", "500m")])
                .tolerations(vec![])
                .obj(),
        ),
        &cache,
    );
    assert_eq!(got.map(|r| r.node).ok(), Some("idle".into()));
}

#[test]
fn taint_weight_outranks_resource_balance() {
    // An untainted but busier node beats an idle node with a
    // PreferNoSchedule taint: TaintToleration weighs 3, LeastAllocated 1.
    let mut cache = cache_of(vec![
        make_node()
            .name("soft")
            .allocatable(&allocatable("4"))
            .taints(vec![taint("spot", "", "PreferNoSchedule")])
            .obj(),
        make_node()
            .name("busy")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
    ]);
    cache.add_pod(
        "default/x",
        Arc::new(
            make_pod()
                .name("x")
                .namespace("default")
                .req(&[("cpu", "3")])
                .tolerations(vec![])
                .obj(),
        ),
        "busy",
    );
    let mut cycle = Cycle::new(5);
    let got = cycle.schedule_pod(
        &Profile::default(),
        &PodInfo::from(
            make_pod()
                .name("p")
                .namespace("default")
                .req(&[("cpu", "500m")])
                .tolerations(vec![])
                .obj(),
        ),
        &cache,
    );
    assert_eq!(got.map(|r| r.node).ok(), Some("busy".into()));
}

#[test]
fn large_clusters_filter_only_enough_nodes_and_rotate_the_start() {
    let nodes: Vec<Node> = (0..1000)
        .map(|i| {
            make_node()
                .name(&format!("n{i:04}"))
                .allocatable(&allocatable("4"))
                .taints(vec![])
                .obj()
        })
        .collect();
    let cache = cache_of(nodes);
    let mut cycle = Cycle::new(1);
    let p = PodInfo::from(
        make_pod()
            .name("p")
            .namespace("default")
            .req(&[("cpu", "100m")])
            .tolerations(vec![])
            .obj(),
    );
    let first = cycle.schedule_pod(&Profile::default(), &p, &cache);
    assert_eq!(
        first
            .as_ref()
            .map(|r| (r.evaluated_nodes, r.feasible_nodes))
            .ok(),
        Some((420, 420))
    );
    assert_eq!(cycle.next_start_node_index, 420);
    let _ = cycle.schedule_pod(&Profile::default(), &p, &cache);
    assert_eq!(cycle.next_start_node_index, 840);
    let _ = cycle.schedule_pod(&Profile::default(), &p, &cache);
    assert_eq!(cycle.next_start_node_index, 260, "wraps around");
}

#[test]
fn node_names_from_prefilter_limit_the_candidates() {
    let cache = cache_of(vec![
        make_node()
            .name("a")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
        make_node()
            .name("b")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
    ]);
    let mut p = make_pod()
        .name("p")
        .namespace("default")
        .req(&[("cpu", "100m")])
        .tolerations(vec![])
        .obj();
    let affinity: k8s_openapi::api::core::v1::Affinity = serde_json::from_value(serde_json::json!({
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
        ]}}
    }))
    .unwrap_or_default();
    if let Some(s) = p.spec.as_mut() {
        s.affinity = Some(affinity.clone());
    }
    let mut cycle = Cycle::new(1);
    let got = cycle.schedule_pod(&Profile::default(), &PodInfo::from(p.clone()), &cache);
    assert_eq!(got.map(|r| r.node).ok(), Some("b".into()));

    // Pinned to a node that does not exist.
    let mut missing = affinity;
    if let Some(terms) = missing.node_affinity.as_mut().and_then(|na| {
        na.required_during_scheduling_ignored_during_execution
            .as_mut()
    }) {
        terms.node_selector_terms[0].match_fields =
            Some(vec![k8s_openapi::api::core::v1::NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: Some(vec!["zzz".into()]),
            }]);
    }
    if let Some(s) = p.spec.as_mut() {
        s.affinity = Some(missing);
    }
    let err = cycle
        .schedule_pod(&Profile::default(), &PodInfo::from(p), &cache)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    );
}

#[test]
fn resource_shortage_is_reported_per_resource() {
    let cache = cache_of(vec![
        make_node()
            .name("small")
            .allocatable(&allocatable("1"))
            .taints(vec![])
            .obj(),
        make_node()
            .name("tiny")
            .allocatable(&allocatable("500m"))
            .taints(vec![])
            .obj(),
    ]);
    let mut cycle = Cycle::new(1);
    let err = cycle
        .schedule_pod(
            &Profile::default(),
            &PodInfo::from(
                make_pod()
                    .name("p")
                    .namespace("default")
                    .req(&[("cpu", "2")])
                    .tolerations(vec![])
                    .obj(),
            ),
            &cache,
        )
        .err();
    assert_eq!(
        err.as_ref().map(ToString::to_string).as_deref(),
        Some("0/2 nodes are available: 2 Insufficient cpu.")
    );
    assert_eq!(
        err.map(|e| e.unschedulable_plugins()),
        Some(vec!["NodeResourcesFit"])
    );
}
