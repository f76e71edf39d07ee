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

/// The scores' cpu-and-memory paths (taken for the default resources)
/// agree with the general ones on any amounts: zero allocatable, requests
/// over allocatable, and amounts near `i64::MAX` whose products overflow.
mod cpu_memory_path {
    use super::*;
    use crate::plugins::node_resources_fit::{
        NodeResourcesFit, cpu_memory_weights, least_allocated_cpu_memory,
    };
    use proptest::prelude::*;
    use std::sync::Arc;

    fn amount() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(0i64),
            0i64..10_000,
            0i64..100_000_000_000,
            (i64::MAX - 1_000)..=i64::MAX,
        ]
    }

    proptest! {
        #[test]
        fn the_cpu_and_memory_path_scores_as_the_general_one(
            alloc_cpu in amount(), alloc_mem in amount(),
            used_cpu in amount(), used_mem in amount(),
            non_zero_cpu in amount(), non_zero_mem in amount(),
            req_cpu in amount(), req_mem in amount(),
            cpu_weight in 1i64..=100, mem_weight in 1i64..=100,
        ) {
            let mut info = NodeInfo::new(Arc::new(make_node().name("n").obj()));
            info.allocatable.milli_cpu = alloc_cpu;
            info.allocatable.memory = alloc_mem;
            info.requested.milli_cpu = used_cpu;
            info.requested.memory = used_mem;
            info.non_zero_requested.milli_cpu = non_zero_cpu;
            info.non_zero_requested.memory = non_zero_mem;
            let requests = [req_cpu, req_mem];

            let resources = vec![
                ResourceSpec::new("cpu", cpu_weight),
                ResourceSpec::new("memory", mem_weight),
            ];
            let weights = cpu_memory_weights(&resources);
            prop_assert_eq!(weights, Some((cpu_weight, mem_weight)));
            let fit = NodeResourcesFit::new(resources.clone())
                .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(
                Ok(least_allocated_cpu_memory(&info, (cpu_weight, mem_weight), req_cpu, req_mem)),
                fit.least_allocated_score(&info, &requests)
            );

            let balanced = BalancedAllocation { resources, ..BalancedAllocation::default() };
            prop_assert_eq!(
                Ok(BalancedAllocation::balanced_cpu_memory(&info, req_cpu, req_mem)),
                balanced.balanced_score(&info, &requests)
            );
        }
    }

    #[test]
    fn only_cpu_then_memory_takes_the_path() {
        let cases: [(&str, Vec<ResourceSpec>, bool); 4] = [
            ("the default", default_resources(), true),
            (
                "memory first",
                vec![ResourceSpec::new("memory", 1), ResourceSpec::new("cpu", 1)],
                false,
            ),
            ("cpu alone", vec![ResourceSpec::new("cpu", 1)], false),
            (
                "with a GPU",
                vec![
                    ResourceSpec::new("cpu", 1),
                    ResourceSpec::new("memory", 1),
                    ResourceSpec::new("nvidia.com/gpu", 1),
                ],
                false,
            ),
        ];
        for (name, resources, want) in cases {
            assert_eq!(cpu_memory_weights(&resources).is_some(), want, "{name}");
        }
    }
}
