use std::time::Duration;

use crate::cycle::tests::allocatable;
use berth_core::test_util::{make_node, make_pod, taint};
use k8s_openapi::api::core::v1::Node;

use super::*;
use crate::queue::Place;

fn scheduler() -> Scheduler {
    Scheduler::new(Profile::default(), QueueConfig::default(), 42)
}

fn bind_all(s: &mut Scheduler, now: Instant) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Some(d) = s.schedule_one(now) {
        if let Decision::Bind(b) = d {
            out.push((b.key, b.result.node));
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn assumed_pods_keep_concurrent_decisions_within_allocatable() {
    let mut s = scheduler();
    let now = Instant::now();
    for n in ["a", "b", "c"] {
        s.upsert_node(
            make_node()
                .name(n)
                .allocatable(&allocatable("2"))
                .taints(vec![])
                .obj(),
            now,
        );
    }
    for i in 0..10 {
        s.upsert_pod(
            make_pod()
                .name(&format!("p{i}"))
                .namespace("default")
                .req(&[("cpu", "500m")])
                .tolerations(vec![])
                .obj(),
            now,
        );
    }
    // Nothing is bound yet (no binding has returned), but every decision
    // sees the ones before it: 3 nodes × 4 pods of 500m = 12 slots.
    let bound = bind_all(&mut s, now);
    assert_eq!(bound.len(), 10);
    for n in ["a", "b", "c"] {
        let info = s.cache().node(n).map(|i| i.requested.milli_cpu);
        assert!(info.is_some_and(|cpu| cpu <= 2000), "{n}: {info:?}");
    }
    // Two more fit, the third does not.
    for i in 10..13 {
        s.upsert_pod(
            make_pod()
                .name(&format!("p{i}"))
                .namespace("default")
                .req(&[("cpu", "500m")])
                .tolerations(vec![])
                .obj(),
            now,
        );
    }
    let mut refused = Vec::new();
    while let Some(d) = s.schedule_one(now) {
        if let Decision::Refuse(r) = d {
            refused.push(r.error.to_string());
        }
    }
    // Upstream's PostFilter suffix: every pod there is of equal priority.
    assert_eq!(
        refused,
        [
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_binding_frees_the_node_and_backs_off() {
    let mut s = scheduler();
    let now = Instant::now();
    s.upsert_node(
        make_node()
            .name("a")
            .allocatable(&allocatable("1"))
            .taints(vec![])
            .obj(),
        now,
    );
    s.upsert_pod(
        make_pod()
            .name("p")
            .namespace("default")
            .req(&[("cpu", "1")])
            .tolerations(vec![])
            .obj(),
        now,
    );
    let bound = bind_all(&mut s, now);
    assert_eq!(bound, [("default/p".to_string(), "a".to_string())]);
    assert_eq!(
        s.cache().node("a").map(|n| n.requested.milli_cpu),
        Some(1000)
    );
    s.bind_failed("default/p", now);
    assert_eq!(s.cache().node("a").map(|n| n.requested.milli_cpu), Some(0));
    assert_eq!(s.queue().place("default/p"), Some(Place::Backoff));
    s.flush(now + Duration::from_secs(1));
    assert_eq!(bind_all(&mut s, now + Duration::from_secs(1)).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn removing_the_blocking_taint_requeues_the_pod() {
    let mut s = scheduler();
    let t0 = Instant::now();
    let tainted = make_node()
        .name("a")
        .allocatable(&allocatable("4"))
        .taints(vec![taint("dedicated", "db", "NoSchedule")])
        .obj();
    s.upsert_node(tainted, t0);
    s.upsert_pod(
        make_pod()
            .name("p")
            .namespace("default")
            .req(&[("cpu", "100m")])
            .tolerations(vec![])
            .obj(),
        t0,
    );
    let Some(Decision::Refuse(r)) = s.schedule_one(t0) else {
        panic!("expected a refusal");
    };
    assert_eq!(
        r.error.to_string(),
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
    assert_eq!(r.reason(), "Unschedulable");
    assert_eq!(s.queue().place("default/p"), Some(Place::Unschedulable));

    // An unrelated change (a label) does not move it.
    let t1 = t0 + Duration::from_secs(30);
    s.upsert_node(
        make_node()
            .name("a")
            .labels(&[("x", "y")])
            .allocatable(&allocatable("4"))
            .taints(vec![taint("dedicated", "db", "NoSchedule")])
            .obj(),
        t1,
    );
    assert_eq!(s.queue().place("default/p"), Some(Place::Unschedulable));
    // Removing the taint does; its 1 s backoff is long over.
    s.upsert_node(
        make_node()
            .name("a")
            .labels(&[("x", "y")])
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
        t1,
    );
    assert_eq!(s.queue().place("default/p"), Some(Place::Active));
    assert_eq!(bind_all(&mut s, t1), [("default/p".into(), "a".into())]);
}

#[tokio::test(start_paused = true)]
async fn a_deleted_pod_frees_room_for_a_waiting_one() {
    let mut s = scheduler();
    let t0 = Instant::now();
    s.upsert_node(
        make_node()
            .name("a")
            .allocatable(&allocatable("1"))
            .taints(vec![])
            .obj(),
        t0,
    );
    let mut running = make_pod()
        .name("running")
        .namespace("default")
        .req(&[("cpu", "1")])
        .tolerations(vec![])
        .obj();
    if let Some(spec) = running.spec.as_mut() {
        spec.node_name = Some("a".into());
    }
    s.upsert_pod(running, t0);
    s.upsert_pod(
        make_pod()
            .name("waiting")
            .namespace("default")
            .req(&[("cpu", "1")])
            .tolerations(vec![])
            .obj(),
        t0,
    );
    assert!(matches!(s.schedule_one(t0), Some(Decision::Refuse(_))));
    let t1 = t0 + Duration::from_secs(20);
    s.delete_pod("default/running", t1);
    assert_eq!(
        bind_all(&mut s, t1),
        [("default/waiting".into(), "a".into())]
    );
}

#[tokio::test(start_paused = true)]
async fn only_pods_for_this_scheduler_are_taken() {
    let mut s = Scheduler::new(
        Profile::new("berth", Default::default()),
        QueueConfig::default(),
        1,
    );
    let now = Instant::now();
    s.upsert_node(
        make_node()
            .name("a")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
        now,
    );
    let mut mine = make_pod()
        .name("mine")
        .namespace("default")
        .req(&[("cpu", "100m")])
        .tolerations(vec![])
        .obj();
    let mut theirs = make_pod()
        .name("theirs")
        .namespace("default")
        .req(&[("cpu", "100m")])
        .tolerations(vec![])
        .obj();
    if let Some(spec) = mine.spec.as_mut() {
        spec.scheduler_name = Some("berth".into());
    }
    if let Some(spec) = theirs.spec.as_mut() {
        spec.scheduler_name = Some("default-scheduler".into());
    }
    s.upsert_pod(mine, now);
    s.upsert_pod(theirs, now);
    s.upsert_pod(
        make_pod()
            .name("unnamed")
            .namespace("default")
            .req(&[("cpu", "100m")])
            .tolerations(vec![])
            .obj(),
        now,
    );
    assert_eq!(bind_all(&mut s, now), [("default/mine".into(), "a".into())]);
}

#[tokio::test(start_paused = true)]
async fn bound_pods_seen_on_the_watch_leave_the_queue_and_count() {
    let mut s = scheduler();
    let now = Instant::now();
    s.upsert_node(
        make_node()
            .name("a")
            .allocatable(&allocatable("4"))
            .taints(vec![])
            .obj(),
        now,
    );
    s.upsert_pod(
        make_pod()
            .name("p")
            .namespace("default")
            .req(&[("cpu", "1")])
            .tolerations(vec![])
            .obj(),
        now,
    );
    let mut bound = make_pod()
        .name("p")
        .namespace("default")
        .req(&[("cpu", "1")])
        .tolerations(vec![])
        .obj();
    if let Some(spec) = bound.spec.as_mut() {
        spec.node_name = Some("a".into());
    }
    s.upsert_pod(bound.clone(), now);
    assert!(s.queue().is_empty());
    assert_eq!(
        s.cache().node("a").map(|n| n.requested.milli_cpu),
        Some(1000)
    );
    // Finishing frees the node.
    bound.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Succeeded".into()),
        ..Default::default()
    });
    s.upsert_pod(bound, now);
    assert_eq!(s.cache().node("a").map(|n| n.requested.milli_cpu), Some(0));
}

#[tokio::test(start_paused = true)]
async fn no_nodes_backs_off_and_a_new_node_is_used() {
    let mut s = scheduler();
    let t0 = Instant::now();
    s.upsert_pod(
        make_pod()
            .name("p")
            .namespace("default")
            .req(&[("cpu", "1")])
            .tolerations(vec![])
            .obj(),
        t0,
    );
    let Some(Decision::Refuse(r)) = s.schedule_one(t0) else {
        panic!("expected a refusal");
    };
    assert_eq!(r.error.to_string(), "no nodes available to schedule pods");
    assert_eq!(s.queue().place("default/p"), Some(Place::Backoff));
    let n: Node = make_node()
        .name("a")
        .allocatable(&allocatable("4"))
        .taints(vec![])
        .obj();
    s.upsert_node(n, t0);
    s.flush(t0 + Duration::from_secs(1));
    assert_eq!(
        bind_all(&mut s, t0 + Duration::from_secs(1)),
        [("default/p".into(), "a".into())]
    );
}

mod default_profile {
    //! The new plugins through the whole state machine: the counts kept
    //! across cycles follow assumed, confirmed and deleted pods and node
    //! label changes; the default constraints use the workloads'
    //! selectors; pods move back on the events that can help them.

    use std::collections::BTreeMap;

    use berth_core::labels::LabelSelector;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::plugins::pod_topology_spread::{DO_NOT_SCHEDULE, LABEL_TOPOLOGY_ZONE};
    use crate::snapshot::WorkloadSelectors;
    use berth_core::test_util::{make_node, make_pod, make_selector};

    fn zoned_node(name: &str, zone: &str) -> Node {
        make_node()
            .name(name)
            .label(LABEL_TOPOLOGY_ZONE, zone)
            .label("kubernetes.io/hostname", name)
            .capacity(&[("cpu", "100"), ("memory", "100Gi"), ("pods", "110")])
            .obj()
    }

    fn spreading(name: &str) -> Pod {
        make_pod()
            .name(name)
            .label("app", "web")
            .spread_constraint(
                1,
                LABEL_TOPOLOGY_ZONE,
                DO_NOT_SCHEDULE,
                Some(make_selector().label("app", "web").obj()),
                None,
                None,
                None,
                None,
            )
            .obj()
    }

    fn zone_counts(s: &Scheduler) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for node in s.cache().nodes() {
            let zone = node.label(LABEL_TOPOLOGY_ZONE).unwrap_or("").to_string();
            *counts.entry(zone).or_default() += node.pods.len();
        }
        counts
    }

    fn skew(counts: &BTreeMap<String, usize>) -> usize {
        counts.values().max().unwrap_or(&0) - counts.values().min().unwrap_or(&0)
    }

    #[tokio::test(start_paused = true)]
    async fn spreading_counts_follow_assumed_confirmed_and_deleted_pods() {
        let mut s = scheduler();
        let now = Instant::now();
        for (n, z) in [
            ("a1", "a"),
            ("a2", "a"),
            ("b1", "b"),
            ("b2", "b"),
            ("c1", "c"),
        ] {
            s.upsert_node(zoned_node(n, z), now);
        }
        for i in 0..30 {
            s.upsert_pod(spreading(&format!("p{i:02}")), now);
            // Every decision sees the ones before it (the counts are
            // brought forward over the assumed pods).
            let bound = bind_all(&mut s, now);
            assert_eq!(bound.len(), 1, "p{i:02}");
            assert!(skew(&zone_counts(&s)) <= 1, "{:?}", zone_counts(&s));
        }
        // Confirm some bindings (the watch), delete the pods of zone c.
        let on_c: Vec<String> = s
            .cache()
            .node("c1")
            .map(|n| {
                n.pods
                    .iter()
                    .map(|p| crate::scheduler::pod_key(&p.pod))
                    .collect()
            })
            .unwrap_or_default();
        for key in &on_c {
            s.delete_pod(key, now);
        }
        assert_eq!(zone_counts(&s).get("c"), Some(&0));
        // The next pods must go to zone c until it catches up.
        for i in 30..40 {
            s.upsert_pod(spreading(&format!("p{i:02}")), now);
            let bound = bind_all(&mut s, now);
            assert_eq!(bound.len(), 1);
            assert_eq!(
                bound[0].1,
                "c1",
                "p{i:02} while zone c is behind: {:?}",
                zone_counts(&s)
            );
        }
        // A node changes zone: the counts are taken again.
        let mut moved = zoned_node("b2", "c");
        moved
            .metadata
            .labels
            .get_or_insert_default()
            .insert(LABEL_TOPOLOGY_ZONE.into(), "c".into());
        s.upsert_node(moved, now);
        for i in 40..46 {
            let before = zone_counts(&s);
            let least = before.values().copied().min().unwrap_or(0);
            s.upsert_pod(spreading(&format!("p{i:02}")), now);
            let bound = bind_all(&mut s, now);
            let zone = s
                .cache()
                .node(&bound[0].1)
                .and_then(|n| n.label(LABEL_TOPOLOGY_ZONE))
                .unwrap_or("")
                .to_string();
            assert_eq!(
                before.get(&zone),
                Some(&least),
                "p{i:02} went to {zone}: {before:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn anti_affinity_keeps_replicas_apart_and_a_deletion_moves_the_waiting_one() {
        let mut s = scheduler();
        let now = Instant::now();
        for n in ["n1", "n2", "n3"] {
            s.upsert_node(zoned_node(n, "a"), now);
        }
        let replica = |i: usize| {
            make_pod()
                .name(&format!("r{i}"))
                .label("app", "db")
                .pod_anti_affinity(
                    "kubernetes.io/hostname",
                    make_selector().label("app", "db").obj(),
                    vec![],
                    None,
                )
                .obj()
        };
        for i in 0..3 {
            s.upsert_pod(replica(i), now);
        }
        let bound = bind_all(&mut s, now);
        let mut nodes: Vec<&str> = bound.iter().map(|(_, n)| n.as_str()).collect();
        nodes.sort_unstable();
        assert_eq!(nodes, ["n1", "n2", "n3"]);
        // A fourth replica fits nowhere...
        s.upsert_pod(replica(3), now);
        let refused: Vec<String> = std::iter::from_fn(|| s.schedule_one(now))
            .filter_map(|d| match d {
                Decision::Refuse(r) => Some(r.error.to_string()),
                Decision::Bind(_) => None,
            })
            .collect();
        assert_eq!(
            refused,
            [
                "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
            ]
        );
        assert_eq!(s.queue().place("default/r3"), Some(Place::Unschedulable));
        // ... until one is deleted: InterPodAffinity's hint moves it back.
        s.delete_pod(&bound[0].0, now);
        assert_ne!(s.queue().place("default/r3"), Some(Place::Unschedulable));
        s.flush(now + Duration::from_secs(10));
        let again = bind_all(&mut s, now + Duration::from_secs(10));
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].1, bound[0].1);
    }

    /// A stand-in for the workload controllers: pods owned by ReplicaSet
    /// `web` have the selector `app=web`.
    #[derive(Debug)]
    struct OneReplicaSet;

    impl WorkloadSelectors for OneReplicaSet {
        fn default_selector(&self, pod: &Pod) -> LabelSelector {
            let owned =
                pod.metadata.owner_references.iter().flatten().any(|o| {
                    o.kind == "ReplicaSet" && o.name == "web" && o.controller == Some(true)
                });
            if owned {
                LabelSelector::parse("app=web").unwrap_or_default()
            } else {
                LabelSelector::default()
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn default_constraints_spread_a_workloads_pods_over_hosts_and_zones() {
        let owned = |i: usize| {
            let mut p = make_pod().name(&format!("w{i}")).label("app", "web").obj();
            p.metadata.owner_references = Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: "web".into(),
                    uid: "u".into(),
                    controller: Some(true),
                    ..Default::default()
                },
            ]);
            p
        };
        for (workloads, want_spread) in [(true, true), (false, false)] {
            let mut s = scheduler();
            if workloads {
                s.set_workloads(std::sync::Arc::new(OneReplicaSet));
            }
            let now = Instant::now();
            for (n, z) in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")] {
                s.upsert_node(zoned_node(n, z), now);
            }
            for i in 0..8 {
                s.upsert_pod(owned(i), now);
                bind_all(&mut s, now);
            }
            let per_node: Vec<usize> = s.cache().nodes().iter().map(|n| n.pods.len()).collect();
            if want_spread {
                assert_eq!(
                    per_node,
                    [2, 2, 2, 2],
                    "hostname maxSkew 3 and zones, scored"
                );
            } else {
                // Without the workload's selector no default constraint
                // applies (berth serves no ReplicaSets yet); the other
                // scores still spread, so only check all were bound.
                assert_eq!(per_node.iter().sum::<usize>(), 8);
            }
        }
    }
}
