//! Upstream `TestNodeResourcesBalancedAllocation` (noderesources), the
//! cases without DRA.

use super::*;
use crate::plugins::testing::node_infos;
use berth_core::test_util::{make_node, make_pod};
use k8s_openapi::api::core::v1::{Node, Pod};

fn node(name: &str, milli_cpu: i64, memory: i64, gpus: Option<i64>) -> Node {
    let cpu = format!("{milli_cpu}m");
    let mem = memory.to_string();
    let gpu = gpus.map(|g| g.to_string());
    let mut entries = vec![("cpu", cpu.as_str()), ("memory", mem.as_str())];
    if let Some(g) = &gpu {
        entries.push(("nvidia.com/gpu", g.as_str()));
    }
    make_node().name(name).capacity(&entries).obj()
}

fn cpu_mem(cpu: &'static str, mem: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![("cpu", cpu), ("memory", mem)]
}

fn two_containers(node: &str, a: &[(&str, &str)], b: &[(&str, &str)]) -> Pod {
    let pod = make_pod()
        .name(&format!("on-{node}-{}", a.len()))
        .req(a)
        .req(b);
    if node.is_empty() {
        pod.obj()
    } else {
        pod.node(node).obj()
    }
}

#[test]
fn balanced_allocation_as_upstream() {
    struct Case {
        name: &'static str,
        pod: Pod,
        nodes: Vec<Node>,
        existing_pods: Vec<Pod>,
        resources: Vec<ResourceSpec>,
        run_pre_score: bool,
        /// `None`: PreScore skips.
        want: Option<&'static [i64]>,
    }
    let default = default_resources;
    let with_gpu = || {
        let mut r = default_resources();
        r.push(ResourceSpec::new("nvidia.com/gpu", 1));
        r
    };
    let cpu_only = |c: &'static str| vec![("cpu", c)];
    let cases = vec![
        Case {
            name: "nothing scheduled, nothing requested, skip in PreScore",
            pod: make_pod().obj(),
            nodes: vec![
                node("node1", 4000, 10000, None),
                node("node2", 4000, 10000, None),
            ],
            existing_pods: vec![],
            resources: default(),
            run_pre_score: true,
            want: None,
        },
        Case {
            name: "nothing scheduled, resources requested, differently sized nodes",
            pod: two_containers("", &cpu_mem("1000m", "2000"), &cpu_mem("2000m", "3000")),
            nodes: vec![
                node("node1", 4000, 10000, None),
                node("node2", 6000, 10000, None),
            ],
            existing_pods: vec![],
            resources: default(),
            run_pre_score: true,
            want: Some(&[68, 75]),
        },
        Case {
            name: "resources requested, pods scheduled with resources",
            pod: two_containers("", &cpu_mem("1000m", "2000"), &cpu_mem("2000m", "3000")),
            nodes: vec![
                node("node1", 10000, 20000, None),
                node("node2", 10000, 20000, None),
            ],
            existing_pods: vec![
                two_containers("node1", &cpu_only("1000m"), &cpu_only("2000m")),
                two_containers(
                    "node2",
                    &cpu_mem("1000m", "2000"),
                    &cpu_mem("2000m", "3000"),
                ),
            ],
            resources: default(),
            run_pre_score: true,
            want: Some(&[73, 74]),
        },
        Case {
            name: "resources requested, pods scheduled with resources, differently sized nodes",
            pod: two_containers("", &cpu_mem("1000m", "2000"), &cpu_mem("2000m", "3000")),
            nodes: vec![
                node("node1", 10000, 20000, None),
                node("node2", 10000, 50000, None),
            ],
            existing_pods: vec![
                two_containers("node1", &cpu_only("1000m"), &cpu_only("2000m")),
                two_containers(
                    "node2",
                    &cpu_mem("1000m", "2000"),
                    &cpu_mem("2000m", "3000"),
                ),
            ],
            resources: default(),
            run_pre_score: true,
            want: Some(&[73, 70]),
        },
        Case {
            name: "resources requested, pods scheduled with resources, nodes to reach min/max score",
            pod: two_containers("", &[("memory", "2000")], &[("memory", "3000")]),
            nodes: vec![
                node("node1", 3000, 5000, None),
                node("node2", 3000, 5000, None),
            ],
            existing_pods: vec![two_containers(
                "node1",
                &cpu_only("1000m"),
                &cpu_only("2000m"),
            )],
            resources: default(),
            run_pre_score: true,
            want: Some(&[100, 50]),
        },
        Case {
            name: "requested resources at node capacity",
            pod: two_containers("", &cpu_only("1000m"), &cpu_only("2000m")),
            nodes: vec![
                node("node1", 6000, 10000, None),
                node("node2", 6000, 10000, None),
            ],
            existing_pods: vec![
                two_containers("node1", &cpu_only("1000m"), &cpu_only("2000m")),
                two_containers(
                    "node2",
                    &cpu_mem("1000m", "2000"),
                    &cpu_mem("2000m", "3000"),
                ),
            ],
            resources: default(),
            run_pre_score: true,
            want: Some(&[62, 62]),
        },
        Case {
            name: "scalar resource is included in the score computation if pod requests the scalar resource",
            pod: make_pod()
                .req(&[("cpu", "0"), ("memory", "0"), ("nvidia.com/gpu", "1")])
                .obj(),
            nodes: vec![
                node("node1", 3500, 40000, Some(8)),
                node("node2", 3500, 40000, Some(8)),
            ],
            existing_pods: vec![
                two_containers(
                    "node1",
                    &cpu_mem("1000m", "2000"),
                    &[
                        ("cpu", "2000m"),
                        ("memory", "3000"),
                        ("nvidia.com/gpu", "3"),
                    ],
                ),
                two_containers(
                    "node2",
                    &cpu_mem("1000m", "2000"),
                    &cpu_mem("2000m", "3000"),
                ),
            ],
            resources: with_gpu(),
            run_pre_score: true,
            want: Some(&[75, 76]),
        },
        Case {
            name: "scalar resource is not included in the score computation if pod doesn't request the scalar resource",
            pod: two_containers("", &cpu_mem("1000m", "2000"), &cpu_mem("2000m", "3000")),
            nodes: vec![
                node("node1", 3500, 40000, Some(8)),
                node("node2", 3500, 40000, None),
            ],
            existing_pods: vec![],
            resources: with_gpu(),
            run_pre_score: true,
            want: Some(&[56, 56]),
        },
        Case {
            name: "resources requested, pods scheduled with resources if PreScore not called",
            pod: two_containers("", &cpu_mem("1000m", "2000"), &cpu_mem("2000m", "3000")),
            nodes: vec![
                node("node1", 10000, 20000, None),
                node("node2", 10000, 20000, None),
            ],
            existing_pods: vec![
                two_containers("node1", &cpu_only("1000m"), &cpu_only("2000m")),
                two_containers(
                    "node2",
                    &cpu_mem("1000m", "2000"),
                    &cpu_mem("2000m", "3000"),
                ),
            ],
            resources: default(),
            run_pre_score: false,
            want: Some(&[73, 74]),
        },
    ];
    for case in cases {
        let infos = node_infos(&case.nodes, &case.existing_pods);
        let pod = PodInfo::from(case.pod);
        let plugin = BalancedAllocation {
            resources: case.resources,
            ..BalancedAllocation::default()
        };
        let mut state = CycleState::new();
        if case.run_pre_score {
            let feasible: Vec<&NodeInfo> = infos.iter().collect();
            let status = plugin.pre_score(&mut state, &pod, &Snapshot::of_nodes(&infos), &feasible);
            match case.want {
                None => {
                    assert!(status.is_skip(), "{}", case.name);
                    continue;
                }
                Some(_) => assert!(status.is_success(), "{}", case.name),
            }
        }
        let got: Vec<i64> = infos
            .iter()
            .map(|n| plugin.score(&state, &pod, n).map_or(-1, |s| s))
            .collect();
        assert_eq!(Some(got.as_slice()), case.want, "{}", case.name);
    }
}
