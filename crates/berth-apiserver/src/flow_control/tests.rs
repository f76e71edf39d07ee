use std::time::Duration;

use super::*;
use crate::auth::User;
use crate::request_info::parse;

struct ClassCase {
    name: &'static str,
    user: User,
    method: &'static str,
    path: &'static str,
    want_schema: &'static str,
    want_level: PriorityLevel,
    want_flow: &'static str,
    want_lane: Lane,
}

#[test]
fn requests_are_classified_by_upstreams_suggested_flow_schemas() {
    let unauthenticated = User {
        name: "system:anonymous".into(),
        groups: vec![],
    };
    let cases = [
        ClassCase {
            name: "an admin is exempt",
            user: User::admin(),
            method: "POST",
            path: "/api/v1/namespaces/default/pods",
            want_schema: "exempt",
            want_level: PriorityLevel::Exempt,
            want_flow: "",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "a node renewing its Lease is node-high",
            user: User::node("n1"),
            method: "PUT",
            path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
            want_schema: "system-node-high",
            want_level: PriorityLevel::NodeHigh,
            want_flow: "system:node:n1",
            want_lane: Lane::First,
        },
        ClassCase {
            name: "a node's own status is node-high",
            user: User::node("n1"),
            method: "PATCH",
            path: "/api/v1/nodes/n1/status",
            want_schema: "system-node-high",
            want_level: PriorityLevel::NodeHigh,
            want_flow: "system:node:n1",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "a node registering is node-high",
            user: User::node("n1"),
            method: "POST",
            path: "/api/v1/nodes",
            want_schema: "system-node-high",
            want_level: PriorityLevel::NodeHigh,
            want_flow: "system:node:n1",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "a node's pod status is system",
            user: User::node("n1"),
            method: "PATCH",
            path: "/api/v1/namespaces/default/pods/p/status",
            want_schema: "system-nodes",
            want_level: PriorityLevel::System,
            want_flow: "system:node:n1",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "the controllers' leader election",
            user: User::kube_controller_manager(),
            method: "PUT",
            path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
            want_schema: "system-leader-election",
            want_level: PriorityLevel::LeaderElection,
            want_flow: "system:kube-controller-manager",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "the controllers' writes are workload-high, a flow per namespace",
            user: User::kube_controller_manager(),
            method: "DELETE",
            path: "/api/v1/namespaces/team-a/pods/p",
            want_schema: "kube-controller-manager",
            want_level: PriorityLevel::WorkloadHigh,
            want_flow: "team-a",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "the scheduler's bindings are workload-high",
            user: User::kube_scheduler(),
            method: "POST",
            path: "/api/v1/namespaces/default/pods/p/binding",
            want_schema: "kube-scheduler",
            want_level: PriorityLevel::WorkloadHigh,
            want_flow: "default",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "the scheduler's leader election",
            user: User::kube_scheduler(),
            method: "GET",
            path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
            want_schema: "system-leader-election",
            want_level: PriorityLevel::LeaderElection,
            want_flow: "system:kube-scheduler",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "any other authenticated user is global-default",
            user: User::sim_fleet(),
            method: "GET",
            path: "/api/v1/nodes",
            want_schema: "global-default",
            want_level: PriorityLevel::GlobalDefault,
            want_flow: "system:berth:sim",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "probes are exempt",
            user: unauthenticated.clone(),
            method: "GET",
            path: "/readyz",
            want_schema: "probes",
            want_level: PriorityLevel::Exempt,
            want_flow: "",
            want_lane: Lane::Other,
        },
        ClassCase {
            name: "the rest is catch-all",
            user: unauthenticated,
            method: "GET",
            path: "/api/v1/namespaces",
            want_schema: "catch-all",
            want_level: PriorityLevel::CatchAll,
            want_flow: "system:anonymous",
            want_lane: Lane::Other,
        },
    ];
    for case in cases {
        let info = parse(case.method, case.path, "");
        let got = classify(&case.user, &info);
        assert_eq!(got.flow_schema, case.want_schema, "{}", case.name);
        assert_eq!(got.level, case.want_level, "{}", case.name);
        assert_eq!(got.flow, case.want_flow, "{}", case.name);
        assert_eq!(got.lane, case.want_lane, "{}", case.name);
    }
}

#[test]
fn seats_are_upstreams_nominal_shares_of_the_server_concurrency_limit() {
    let control = FlowControl::new(FlowControlLimits::default());
    let want = [
        (PriorityLevel::System, 74),
        (PriorityLevel::NodeHigh, 98),
        (PriorityLevel::LeaderElection, 25),
        (PriorityLevel::WorkloadHigh, 98),
        (PriorityLevel::WorkloadLow, 245),
        (PriorityLevel::GlobalDefault, 49),
        (PriorityLevel::CatchAll, 13),
    ];
    for (level, seats) in want {
        assert_eq!(control.seats(level), Some(seats), "{}", level.name());
    }
    assert_eq!(control.seats(PriorityLevel::Exempt), None);
}

fn class(level: PriorityLevel, flow: &str) -> Classification {
    Classification {
        flow_schema: "test",
        level,
        flow: flow.into(),
        lane: Lane::Other,
    }
}

/// A node's request at node-high: its Lease (first lane) or a Node write.
fn node_class(lane: Lane, node: &str) -> Classification {
    Classification {
        lane,
        ..class(PriorityLevel::NodeHigh, &format!("system:node:{node}"))
    }
}

/// Small limits: at 12 seats in all, global-default and catch-all have one
/// each (ceil(12 × 20 / 245), ceil(12 × 5 / 245)).
fn small_limits(concurrency: usize) -> FlowControlLimits {
    FlowControlLimits {
        server_concurrency: concurrency,
        max_wait: Duration::from_secs(15),
    }
}

/// Takes every seat of `level` for `flow`.
async fn fill(control: &Arc<FlowControl>, level: PriorityLevel, flow: &str) -> Vec<Seat> {
    let mut held = Vec::new();
    for _ in 0..control.seats(level).unwrap_or(0) {
        match control.admit(&class(level, flow)).await {
            Ok(seat) => held.push(seat),
            Err(e) => panic!("a free seat of {} refused: {}", level.name(), e.message),
        }
    }
    held
}

/// Spawns an admit of `flow` at global-default.
fn spawn_admit(
    control: &Arc<FlowControl>,
    flow: &str,
) -> tokio::task::JoinHandle<Result<Seat, ApiError>> {
    let control = control.clone();
    let flow = flow.to_string();
    tokio::spawn(async move {
        control
            .admit(&class(PriorityLevel::GlobalDefault, &flow))
            .await
    })
}

/// Whether an admit is still waiting after the runtime ran every ready task.
async fn still_waiting<T>(admit: &mut tokio::task::JoinHandle<T>) -> bool {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    !admit.is_finished()
}

#[tokio::test(start_paused = true)]
async fn a_flood_in_one_level_neither_delays_node_heartbeats_nor_exempt_requests() {
    let control = FlowControl::new(small_limits(12));
    let mut held = fill(&control, PriorityLevel::GlobalDefault, "flooder").await;

    let mut blocked = spawn_admit(&control, "flooder");
    assert!(
        still_waiting(&mut blocked).await,
        "a further request of the full level waits"
    );

    let heartbeat = control
        .admit(&class(PriorityLevel::NodeHigh, "system:node:n1"))
        .await;
    assert!(heartbeat.is_ok(), "a node's Lease renewal runs at once");
    let admin = control.admit(&class(PriorityLevel::Exempt, "")).await;
    assert!(admin.is_ok(), "exempt requests never wait");

    drop(held.pop());
    let handed = blocked.await.map_err(|e| e.to_string());
    assert!(
        matches!(handed, Ok(Ok(_))),
        "a freed seat goes to the waiter"
    );
}

#[tokio::test(start_paused = true)]
async fn a_freed_seat_goes_round_robin_over_the_waiting_flows() {
    let control = FlowControl::new(small_limits(12));
    let mut held = fill(&control, PriorityLevel::GlobalDefault, "busy").await;
    let (order, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut waiters = Vec::new();
    // Five requests of the busy flow queue before one of a quiet flow.
    for (i, flow) in ["busy", "busy", "busy", "busy", "busy", "quiet"]
        .iter()
        .enumerate()
    {
        let control = control.clone();
        let order = order.clone();
        let flow = flow.to_string();
        let mut task = tokio::spawn(async move {
            let seat = control
                .admit(&class(PriorityLevel::GlobalDefault, &flow))
                .await;
            let _ = order.send(format!("{flow}-{i}"));
            seat
        });
        assert!(still_waiting(&mut task).await);
        waiters.push(task);
    }
    // The one seat frees up: the oldest busy request gets it; when that
    // one is done, the quiet flow's request goes before the other busy ones.
    drop(held.pop());
    let first = waiters.remove(0).await;
    assert!(matches!(first, Ok(Ok(_))));
    drop(first);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let mut got = Vec::new();
    while let Ok(next) = order_rx.try_recv() {
        got.push(next);
    }
    assert_eq!(got, ["busy-0", "quiet-5"]);
}

#[tokio::test(start_paused = true)]
async fn a_request_that_waits_too_long_gets_upstreams_429() {
    let control = FlowControl::new(small_limits(12));
    let mut held = fill(&control, PriorityLevel::GlobalDefault, "a").await;
    let started = tokio::time::Instant::now();
    let refused = control
        .admit(&class(PriorityLevel::GlobalDefault, "b"))
        .await;
    let Err(err) = refused else {
        panic!("admitted past a full level");
    };
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(15),
        "after the queue wait"
    );
    assert_eq!(err.code, 429);
    assert_eq!(err.message, "Too many requests, please try again later.");
    assert_eq!(err.retry_after_seconds(), Some(1));

    // Its place was given up: a freed seat goes to the next waiter, and
    // every seat is accounted for.
    let mut next = spawn_admit(&control, "c");
    assert!(still_waiting(&mut next).await);
    drop(held.pop());
    assert!(matches!(next.await, Ok(Ok(_))));
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_at_once_and_catch_all_never_queues() {
    let control = FlowControl::new(small_limits(12));
    let _held = fill(&control, PriorityLevel::CatchAll, "anonymous").await;
    let started = tokio::time::Instant::now();
    let refused = control
        .admit(&class(PriorityLevel::CatchAll, "anonymous"))
        .await;
    assert!(matches!(refused, Err(ref e) if e.code == 429));
    assert_eq!(started.elapsed(), Duration::ZERO, "refused without waiting");
}

#[tokio::test(start_paused = true)]
async fn a_seat_handed_to_a_request_that_stopped_waiting_is_not_lost() {
    let control = FlowControl::new(small_limits(12));
    let mut held = fill(&control, PriorityLevel::GlobalDefault, "a").await;
    let mut gone = spawn_admit(&control, "b");
    assert!(still_waiting(&mut gone).await);
    gone.abort();
    let _ = gone.await;
    // The seat skips the abandoned waiter and is free again.
    drop(held.pop());
    let again = control
        .admit(&class(PriorityLevel::GlobalDefault, "c"))
        .await;
    assert!(again.is_ok(), "the seat was freed");
    let mut full = spawn_admit(&control, "d");
    assert!(
        still_waiting(&mut full).await,
        "and the level is full again"
    );
    full.abort();
}

struct LaneCase {
    name: &'static str,
    /// The lanes of the requests holding node-high's nine seats.
    holding: [Lane; 9],
    /// The lanes of the requests that queue, in order.
    queued: &'static [Lane],
    /// Who gets the seats as the holders finish one by one.
    want_order: &'static [&'static str],
}

#[tokio::test(start_paused = true)]
async fn node_heartbeats_go_before_node_writes_which_keep_a_quarter_of_the_seats() {
    use Lane::{First, Other};
    let cases = [
        LaneCase {
            name: "Node writes holding every seat give each freed one to a waiting Lease",
            holding: [Other; 9],
            queued: &[Other, Other, First, First, First],
            want_order: &["lease-2", "lease-3", "lease-4", "write-0", "write-1"],
        },
        LaneCase {
            name: "Node writes below their quarter get a freed seat before waiting Leases",
            holding: [First; 9],
            queued: &[First, First, Other, Other, Other],
            want_order: &["write-2", "write-3", "lease-0", "lease-1", "write-4"],
        },
        LaneCase {
            name: "with no Lease waiting, Node writes take any freed seat in turn",
            holding: [Other; 9],
            queued: &[Other, Other, Other],
            want_order: &["write-0", "write-1", "write-2"],
        },
    ];
    for case in cases {
        // 50 seats in all: node-high has ceil(50 × 40 / 245) = 9, a quarter of them 2.
        let control = FlowControl::new(small_limits(50));
        assert_eq!(control.seats(PriorityLevel::NodeHigh), Some(9));
        let mut held = Vec::new();
        for (i, lane) in case.holding.iter().enumerate() {
            match control
                .admit(&node_class(*lane, &format!("holder-{i}")))
                .await
            {
                Ok(seat) => held.push(seat),
                Err(e) => panic!("{}: a free seat refused: {}", case.name, e.message),
            }
        }
        let (order, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut waiters = Vec::new();
        for (i, lane) in case.queued.iter().enumerate() {
            let control = control.clone();
            let order = order.clone();
            let label = match lane {
                First => format!("lease-{i}"),
                Other => format!("write-{i}"),
            };
            let class = node_class(*lane, &format!("waiter-{i}"));
            let mut task = tokio::spawn(async move {
                let seat = control.admit(&class).await;
                let _ = order.send(label);
                // Holds its seat until the test ends.
                std::future::pending::<()>().await;
                drop(seat);
            });
            assert!(still_waiting(&mut task).await, "{}: queued", case.name);
            waiters.push(task);
        }
        let mut got = Vec::new();
        for _ in case.want_order {
            drop(held.pop());
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            while let Ok(next) = order_rx.try_recv() {
                got.push(next);
            }
        }
        assert_eq!(got, case.want_order, "{}", case.name);
        for task in waiters {
            task.abort();
        }
    }
}
