use std::time::Duration;

use berth_core::test_util::taint;
use k8s_openapi::api::core::v1::Node;

use super::*;
use crate::cycle::tests::{node, pod};
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
        s.upsert_node(node(n, vec![], &[], "2"), now);
    }
    for i in 0..10 {
        s.upsert_pod(pod(&format!("p{i}"), "500m", vec![]), now);
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
        s.upsert_pod(pod(&format!("p{i}"), "500m", vec![]), now);
    }
    let mut refused = Vec::new();
    while let Some(d) = s.schedule_one(now) {
        if let Decision::Refuse(r) = d {
            refused.push(r.error.to_string());
        }
    }
    assert_eq!(
        refused,
        ["0/3 nodes are available: 3 Insufficient cpu."]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_binding_frees_the_node_and_backs_off() {
    let mut s = scheduler();
    let now = Instant::now();
    s.upsert_node(node("a", vec![], &[], "1"), now);
    s.upsert_pod(pod("p", "1", vec![]), now);
    let bound = bind_all(&mut s, now);
    assert_eq!(bound, [("default/p".to_string(), "a".to_string())]);
    assert_eq!(s.cache().node("a").map(|n| n.requested.milli_cpu), Some(1000));
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
    let tainted = node("a", vec![taint("dedicated", "db", "NoSchedule")], &[], "4");
    s.upsert_node(tainted, t0);
    s.upsert_pod(pod("p", "100m", vec![]), t0);
    let Some(Decision::Refuse(r)) = s.schedule_one(t0) else {
        panic!("expected a refusal");
    };
    assert_eq!(
        r.error.to_string(),
        "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
    );
    assert_eq!(r.reason(), "Unschedulable");
    assert_eq!(s.queue().place("default/p"), Some(Place::Unschedulable));

    // An unrelated change (a label) does not move it.
    let t1 = t0 + Duration::from_secs(30);
    s.upsert_node(
        node(
            "a",
            vec![taint("dedicated", "db", "NoSchedule")],
            &[("x", "y")],
            "4",
        ),
        t1,
    );
    assert_eq!(s.queue().place("default/p"), Some(Place::Unschedulable));
    // Removing the taint does; its 1 s backoff is long over.
    s.upsert_node(node("a", vec![], &[("x", "y")], "4"), t1);
    assert_eq!(s.queue().place("default/p"), Some(Place::Active));
    assert_eq!(bind_all(&mut s, t1), [("default/p".into(), "a".into())]);
}

#[tokio::test(start_paused = true)]
async fn a_deleted_pod_frees_room_for_a_waiting_one() {
    let mut s = scheduler();
    let t0 = Instant::now();
    s.upsert_node(node("a", vec![], &[], "1"), t0);
    let mut running = pod("running", "1", vec![]);
    if let Some(spec) = running.spec.as_mut() {
        spec.node_name = Some("a".into());
    }
    s.upsert_pod(running, t0);
    s.upsert_pod(pod("waiting", "1", vec![]), t0);
    assert!(matches!(s.schedule_one(t0), Some(Decision::Refuse(_))));
    let t1 = t0 + Duration::from_secs(20);
    s.delete_pod("default/running", t1);
    assert_eq!(bind_all(&mut s, t1), [("default/waiting".into(), "a".into())]);
}

#[tokio::test(start_paused = true)]
async fn only_pods_for_this_scheduler_are_taken() {
    let mut s = Scheduler::new(
        Profile::new("berth", Default::default()),
        QueueConfig::default(),
        1,
    );
    let now = Instant::now();
    s.upsert_node(node("a", vec![], &[], "4"), now);
    let mut mine = pod("mine", "100m", vec![]);
    let mut theirs = pod("theirs", "100m", vec![]);
    if let Some(spec) = mine.spec.as_mut() {
        spec.scheduler_name = Some("berth".into());
    }
    if let Some(spec) = theirs.spec.as_mut() {
        spec.scheduler_name = Some("default-scheduler".into());
    }
    s.upsert_pod(mine, now);
    s.upsert_pod(theirs, now);
    s.upsert_pod(pod("unnamed", "100m", vec![]), now);
    assert_eq!(bind_all(&mut s, now), [("default/mine".into(), "a".into())]);
}

#[tokio::test(start_paused = true)]
async fn bound_pods_seen_on_the_watch_leave_the_queue_and_count() {
    let mut s = scheduler();
    let now = Instant::now();
    s.upsert_node(node("a", vec![], &[], "4"), now);
    s.upsert_pod(pod("p", "1", vec![]), now);
    let mut bound = pod("p", "1", vec![]);
    if let Some(spec) = bound.spec.as_mut() {
        spec.node_name = Some("a".into());
    }
    s.upsert_pod(bound.clone(), now);
    assert!(s.queue().is_empty());
    assert_eq!(s.cache().node("a").map(|n| n.requested.milli_cpu), Some(1000));
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
    s.upsert_pod(pod("p", "1", vec![]), t0);
    let Some(Decision::Refuse(r)) = s.schedule_one(t0) else {
        panic!("expected a refusal");
    };
    assert_eq!(r.error.to_string(), "no nodes available to schedule pods");
    assert_eq!(s.queue().place("default/p"), Some(Place::Backoff));
    let n: Node = node("a", vec![], &[], "4");
    s.upsert_node(n, t0);
    s.flush(t0 + Duration::from_secs(1));
    assert_eq!(
        bind_all(&mut s, t0 + Duration::from_secs(1)),
        [("default/p".into(), "a".into())]
    );
}
