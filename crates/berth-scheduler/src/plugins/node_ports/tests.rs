//! Upstream `TestNodePorts` (nodeports/node_ports_test.go).

use super::*;
use crate::plugins::testing::node_infos;
use berth_core::test_util::{make_node, make_pod};
use k8s_openapi::api::core::v1::Pod;

/// `newPod(host, "PROTO/IP/PORT"...)`.
fn pod_with_ports(node: &str, ports: &[&str]) -> Pod {
    let mut pod = make_pod().name("m1").node(node);
    for p in ports {
        let parts: Vec<&str> = p.split('/').collect();
        pod = pod.host_port(parts[1], parts[0], parts[2].parse().unwrap_or(0));
    }
    pod.obj()
}

#[test]
fn node_ports_as_upstream() {
    struct Case {
        name: &'static str,
        pod: &'static [&'static str],
        used: &'static [&'static str],
        want: Code,
    }
    let cases = [
        Case {
            name: "other port",
            pod: &["UDP/127.0.0.1/8080"],
            used: &["UDP/127.0.0.1/9090"],
            want: Code::Success,
        },
        Case {
            name: "same udp port",
            pod: &["UDP/127.0.0.1/8080"],
            used: &["UDP/127.0.0.1/8080"],
            want: Code::Unschedulable,
        },
        Case {
            name: "same tcp port",
            pod: &["TCP/127.0.0.1/8080"],
            used: &["TCP/127.0.0.1/8080"],
            want: Code::Unschedulable,
        },
        Case {
            name: "different host ip",
            pod: &["TCP/127.0.0.1/8080"],
            used: &["TCP/127.0.0.2/8080"],
            want: Code::Success,
        },
        Case {
            name: "different protocol",
            pod: &["UDP/127.0.0.1/8080"],
            used: &["TCP/127.0.0.1/8080"],
            want: Code::Success,
        },
        Case {
            name: "second udp port conflict",
            pod: &["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            used: &["UDP/127.0.0.1/8080"],
            want: Code::Unschedulable,
        },
        Case {
            name: "first tcp port conflict",
            pod: &["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
            used: &["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            want: Code::Unschedulable,
        },
        Case {
            name: "first tcp port conflict due to 0.0.0.0 hostIP",
            pod: &["TCP/0.0.0.0/8001"],
            used: &["TCP/127.0.0.1/8001"],
            want: Code::Unschedulable,
        },
        Case {
            name: "TCP hostPort conflict due to 0.0.0.0 hostIP",
            pod: &["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
            used: &["TCP/127.0.0.1/8001"],
            want: Code::Unschedulable,
        },
        Case {
            name: "second tcp port conflict to 0.0.0.0 hostIP",
            pod: &["TCP/127.0.0.1/8001"],
            used: &["TCP/0.0.0.0/8001"],
            want: Code::Unschedulable,
        },
        Case {
            name: "second different protocol",
            pod: &["UDP/127.0.0.1/8001"],
            used: &["TCP/0.0.0.0/8001"],
            want: Code::Success,
        },
        Case {
            name: "UDP hostPort conflict due to 0.0.0.0 hostIP",
            pod: &["UDP/127.0.0.1/8001"],
            used: &["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            want: Code::Unschedulable,
        },
        Case {
            name: "empty protocol and ip default to TCP on every address",
            pod: &["//8001"],
            used: &["TCP/10.0.0.1/8001"],
            want: Code::Unschedulable,
        },
    ];
    for case in cases {
        let nodes = node_infos(
            &[make_node().name("n").obj()],
            &[pod_with_ports("n", case.used)],
        );
        let pod = PodInfo::from(pod_with_ports("", case.pod));
        let mut state = CycleState::new();
        let (_, status) = NodePorts.pre_filter(&mut state, &pod, &Snapshot::of_nodes(&nodes));
        assert!(status.is_success(), "{}", case.name);
        let got = NodePorts.filter(&state, &pod, &nodes[0]);
        assert_eq!(got.code, case.want, "{}", case.name);
        if case.want != Code::Success {
            assert_eq!(got.message(), ERR_REASON, "{}", case.name);
        }
    }
}

#[test]
fn a_pod_without_host_ports_skips_the_filter() {
    let pod = PodInfo::from(make_pod().name("p").obj());
    let (_, status) = NodePorts.pre_filter(&mut CycleState::new(), &pod, &Snapshot::of_nodes(&[]));
    assert!(status.is_skip());
}

#[test]
fn removing_a_pod_frees_its_ports() {
    let holder = PodInfo::from(pod_with_ports("n", &["TCP/0.0.0.0/80"]));
    let mut info = NodeInfo::from(make_node().name("n").obj());
    info.add_pod_info(&holder);
    assert_eq!(info.used_ports.len(), 1);
    assert!(info.remove_pod_info(&holder).is_some());
    assert!(info.used_ports.is_empty());
}
