//! Upstream `TestImageLocalityPriority` and `TestNormalizedImageName`
//! (imagelocality/image_locality_test.go).

use std::sync::Arc;

use super::*;
use crate::cache::Cache;
use berth_core::test_util::{make_node, make_pod};
use k8s_openapi::api::core::v1::{ImageVolumeSource, Node, Pod, Volume};

const MB: i64 = 1024 * 1024;

fn node(name: &str, images: &[(&[&str], i64)]) -> Node {
    images
        .iter()
        .fold(make_node().name(name), |n, (names, size)| {
            n.image(names, size * MB)
        })
        .obj()
}

fn pod(images: &[&str]) -> Pod {
    images
        .iter()
        .fold(make_pod().name("p"), |p, i| p.container(i))
        .obj()
}

#[test]
fn image_locality_priority_as_upstream() {
    let n403002000: &[(&[&str], i64)] = &[
        (&["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
        (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
        (&["gcr.io/2000:latest"], 2000),
    ];
    let n25010: &[(&[&str], i64)] = &[
        (&["gcr.io/250:latest"], 250),
        (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
    ];
    let n60040900: &[(&[&str], i64)] = &[
        (&["gcr.io/600:latest"], 600),
        (&["gcr.io/40:latest"], 40),
        (&["gcr.io/900:latest"], 900),
    ];
    let n300600900: &[(&[&str], i64)] = &[
        (&["gcr.io/300:latest"], 300),
        (&["gcr.io/600:latest"], 600),
        (&["gcr.io/900:latest"], 900),
    ];
    let n400030: &[(&[&str], i64)] =
        &[(&["gcr.io/4000:latest"], 4000), (&["gcr.io/30:latest"], 30)];
    let n203040: &[(&[&str], i64)] = &[
        (&["gcr.io/20:latest"], 20),
        (&["gcr.io/30:latest"], 30),
        (&["gcr.io/40:latest"], 40),
    ];
    let none: &[(&[&str], i64)] = &[];
    let mut image_volume = pod(&["gcr.io/30"]);
    if let Some(spec) = image_volume.spec.as_mut() {
        spec.volumes = Some(vec![Volume {
            name: "imageVolume".into(),
            image: Some(ImageVolumeSource {
                reference: Some("gcr.io/300".into()),
                ..ImageVolumeSource::default()
            }),
            ..Volume::default()
        }]);
    }
    let mut init300 = pod(&["gcr.io/30"]);
    if let Some(spec) = init300.spec.as_mut() {
        spec.init_containers = Some(vec![k8s_openapi::api::core::v1::Container {
            name: "init".into(),
            image: Some("gcr.io/300".into()),
            ..Default::default()
        }]);
    }
    struct Case {
        name: &'static str,
        pod: Pod,
        nodes: Vec<Node>,
        want: &'static [i64],
    }
    let cases = vec![
        Case {
            name: "two images spread on two nodes, prefer the larger image one",
            pod: pod(&["gcr.io/40", "gcr.io/250"]),
            nodes: vec![node("node1", n403002000), node("node2", n25010)],
            want: &[0, 5],
        },
        Case {
            name: "two images on one node, prefer this node",
            pod: pod(&["gcr.io/40", "gcr.io/300"]),
            nodes: vec![node("node1", n403002000), node("node2", n25010)],
            want: &[7, 0],
        },
        Case {
            name: "if exceed limit, use limit",
            pod: pod(&["gcr.io/10", "gcr.io/4000"]),
            nodes: vec![node("node1", n400030), node("node2", n25010)],
            want: &[100, 0],
        },
        Case {
            name: "if exceed limit, use limit (with node which has no images present)",
            pod: pod(&["gcr.io/10", "gcr.io/4000"]),
            nodes: vec![
                node("node1", n400030),
                node("node2", n25010),
                node("node3", none),
            ],
            want: &[66, 0, 0],
        },
        Case {
            name: "pod with multiple large images, node2 is preferred",
            pod: pod(&["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
            nodes: vec![
                node("node1", n60040900),
                node("node2", n300600900),
                node("node3", none),
            ],
            want: &[32, 36, 0],
        },
        Case {
            name: "pod with multiple small images",
            pod: pod(&["gcr.io/30", "gcr.io/40"]),
            nodes: vec![node("node1", n203040), node("node2", n400030)],
            want: &[1, 0],
        },
        Case {
            name: "pod with ImageVolume",
            pod: image_volume,
            nodes: vec![node("node1", n300600900), node("node2", n400030)],
            want: &[12, 0],
        },
        Case {
            name: "include InitContainers: two images spread on two nodes, prefer the larger image one",
            pod: init300,
            nodes: vec![node("node1", n403002000), node("node2", n203040)],
            want: &[6, 0],
        },
    ];
    for case in cases {
        let mut cache = Cache::new();
        for n in case.nodes {
            cache.upsert_node(Arc::new(n));
        }
        let snapshot = cache.snapshot();
        let pod = PodInfo::from(case.pod);
        let mut state = CycleState::new();
        let feasible: Vec<&NodeInfo> = snapshot.nodes.iter().collect();
        assert!(
            ImageLocality
                .pre_score(&mut state, &pod, &snapshot, &feasible)
                .is_success()
        );
        let got: Vec<i64> = snapshot
            .nodes
            .iter()
            .map(|n| ImageLocality.score(&state, &pod, n).unwrap_or(-1))
            .collect();
        assert_eq!(got, case.want, "{}", case.name);
    }
}

#[test]
fn normalized_image_name_as_upstream() {
    for (name, want) in [
        ("root", "root:latest"),
        ("root:tag", "root:tag"),
        ("gcr.io:5000/repo", "gcr.io:5000/repo:latest"),
        ("gcr.io:5000/repo:tag", "gcr.io:5000/repo:tag"),
    ] {
        assert_eq!(normalized_image_name(name), want, "{name}");
    }
}
