//! Every example scenario in `examples/scenarios/`, run with the scheduler
//! and controllers on virtual time, and its timeline checked against what
//! the seed pages promise. Times depend on the seed only through the
//! nodes' heartbeat phases, so assertions about heartbeats use the window
//! the grace periods allow, and everything downstream of a taint is exact.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use berth_sim::components::default_components;
use berth_sim::run::{Recording, run_blocking};
use berth_sim::scenario;
use berth_sim::timeline::{Entry, EventKind, Millis, write_jsonl};

const SEED: u64 = 0;

fn example(name: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    (name.to_owned(), text)
}

fn run_example(name: &str, seed: u64) -> Recording {
    let (file, text) = example(name);
    let scenario = scenario::parse(&file, &text).unwrap_or_else(|e| panic!("{e}"));
    run_blocking(&scenario, &default_components(), seed).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario written in the test with the seed [`SEED`].
fn run_text(file: &str, text: &str) -> Vec<Entry> {
    let scenario = scenario::parse(file, text).unwrap_or_else(|e| panic!("{e}"));
    run_blocking(&scenario, &default_components(), SEED)
        .unwrap_or_else(|e| panic!("{e}"))
        .entries
}

fn jsonl(entries: &[Entry]) -> String {
    let mut out = Vec::new();
    write_jsonl(entries, &mut out).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8(out).unwrap_or_default()
}

/// Entries of `kind` about `subject` (a pod `default/x`, a node or a zone).
fn of<'a>(entries: &'a [Entry], kind: EventKind, subject: &str) -> Vec<&'a Entry> {
    entries
        .iter()
        .filter(|e| {
            e.event == kind
                && (e.pod.as_deref() == Some(subject)
                    || (e.pod.is_none() && e.node.as_deref() == Some(subject))
                    || e.zone.as_deref() == Some(subject))
        })
        .collect()
}

fn one<'a>(entries: &'a [Entry], kind: EventKind, subject: &str) -> &'a Entry {
    let found = of(entries, kind, subject);
    match found.as_slice() {
        [e] => e,
        _ => panic!(
            "expected one {kind:?} of {subject}, found {}:\n{}",
            found.len(),
            jsonl(entries)
        ),
    }
}

fn none(entries: &[Entry], kind: EventKind, subject: &str) {
    assert!(
        of(entries, kind, subject).is_empty(),
        "unexpected {kind:?} of {subject}:\n{}",
        jsonl(entries)
    );
}

fn taint_added<'a>(entries: &'a [Entry], node: &str, taint: &str) -> Vec<&'a Entry> {
    of(entries, EventKind::TaintAdded, node)
        .into_iter()
        .filter(|e| e.taint.as_deref() == Some(taint))
        .collect()
}

fn scheduled_on(entries: &[Entry], pod: &str) -> String {
    one(entries, EventKind::PodScheduled, pod)
        .node
        .clone()
        .unwrap_or_default()
}

const S: Millis = 1000;
const UNREACHABLE_NOEXEC: &str = "node.kubernetes.io/unreachable:NoExecute";

/// A node whose heartbeats stop at `stop` is Unknown one grace period
/// (50 s) after its last renewal (at most 10 s before `stop`), at the next
/// monitor pass (every 5 s).
fn assert_unknown_in_window(entries: &[Entry], node: &str, stop: Millis) -> Millis {
    let t = one(entries, EventKind::NodeStatusUnknown, node).t;
    assert!(
        (stop + 40 * S..=stop + 55 * S).contains(&t),
        "{node} Unknown at {t} ms, heartbeats stopped at {stop} ms"
    );
    t
}

#[test]
fn dedicated_nodes_keep_the_group_in_and_everyone_else_out() {
    let e = run_example("dedicated-nodes.yaml", SEED).entries;
    for pod in ["default/group-app", "default/group-app-2"] {
        let node = scheduled_on(&e, pod);
        assert!(node == "node1" || node == "node2", "{pod} on {node}");
    }
    assert_eq!(scheduled_on(&e, "default/other-team"), "node3");
    none(&e, EventKind::PodScheduled, "default/intruder");
    let failed = of(&e, EventKind::FailedScheduling, "default/intruder");
    let message = failed
        .last()
        .and_then(|f| f.message.clone())
        .unwrap_or_default();
    assert_eq!(
        message,
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
}

#[test]
fn special_hardware_is_kept_for_pods_that_request_it() {
    let e = run_example("special-hardware.yaml", SEED).entries;
    assert_eq!(scheduled_on(&e, "default/trainer"), "gpu1");
    assert_eq!(scheduled_on(&e, "default/web"), "cpu1");
    none(&e, EventKind::PodScheduled, "default/web-2");
    none(&e, EventKind::PodScheduled, "default/big-trainer");
    let last_message = |pod: &str| {
        of(&e, EventKind::FailedScheduling, pod)
            .last()
            .and_then(|f| f.message.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        last_message("default/web-2"),
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    );
    assert_eq!(
        last_message("default/big-trainer"),
        "0/2 nodes are available: 2 Insufficient example.com/gpu. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn taint_based_eviction_honours_3600_and_6000_second_tolerations() {
    let e = run_example("taint-based-eviction.yaml", SEED).entries;
    // key1=value1:NoExecute on node1 at 10 s.
    let evicted = one(&e, EventKind::PodEvicted, "default/no-toleration");
    assert_eq!((evicted.t, evicted.due), (10 * S, Some(10 * S)));
    assert_eq!(
        one(&e, EventKind::PodDeleted, "default/no-toleration").t,
        10 * S
    );
    let evicted = one(&e, EventKind::PodEvicted, "default/tolerates-3600");
    assert_eq!((evicted.t, evicted.due), (3610 * S, Some(3610 * S)));
    assert_eq!(
        one(&e, EventKind::PodDeleted, "default/tolerates-3600").t,
        3610 * S
    );
    none(&e, EventKind::PodEvicted, "default/tolerates-forever");
    none(&e, EventKind::PodDeleted, "default/tolerates-forever");
    // On node3 the taint goes at 30m10s, before the 3600 s are up.
    assert_eq!(
        one(&e, EventKind::EvictionCancelled, "default/reprieved").t,
        1810 * S
    );
    none(&e, EventKind::PodEvicted, "default/reprieved");

    // node2 is cut off at 1m: Unknown and unreachable:NoExecute at one
    // instant (one monitor pass), then its pods leave 300 s and 6000 s later.
    let unknown = assert_unknown_in_window(&e, "node2", 60 * S);
    let tainted = taint_added(&e, "node2", UNREACHABLE_NOEXEC);
    let tainted = match tainted.as_slice() {
        [t] => t.t,
        _ => panic!("unreachable:NoExecute on node2: {tainted:?}"),
    };
    assert_eq!(tainted, unknown);
    let evicted = one(&e, EventKind::PodEvicted, "default/default-300");
    assert_eq!(
        (evicted.t, evicted.due),
        (tainted + 300 * S, Some(tainted + 300 * S))
    );
    let evicted = one(&e, EventKind::PodEvicted, "default/local-state-6000");
    assert_eq!(
        (evicted.t, evicted.due),
        (tainted + 6000 * S, Some(tainted + 6000 * S))
    );
    // The partitioned node cannot confirm the deletions.
    none(&e, EventKind::PodDeleted, "default/default-300");
}

#[test]
fn a_partitioned_zone_is_evicted_at_the_node_eviction_rate() {
    let e = run_example("zone-partition.yaml", SEED).entries;
    let b: Vec<_> = of(&e, EventKind::ZoneStateChanged, "b")
        .iter()
        .map(|z| z.state.clone().unwrap_or_default())
        .collect();
    assert_eq!(b, ["Normal", "FullDisruption"]);
    // a and c are Normal from the start and stay so.
    for zone in ["a", "c"] {
        let states: Vec<_> = of(&e, EventKind::ZoneStateChanged, zone)
            .iter()
            .map(|z| (z.t, z.state.clone().unwrap_or_default()))
            .collect();
        assert_eq!(states, [(0, "Normal".to_owned())], "zone {zone}");
    }
    // One node tainted every 10 s (--node-eviction-rate 0.1), from when
    // the zone is disrupted; each node's pod leaves 300 s after its taint.
    let mut taint_times = Vec::new();
    for i in 1..=3 {
        let node = format!("b-{i}");
        assert_unknown_in_window(&e, &node, 60 * S);
        let tainted = taint_added(&e, &node, UNREACHABLE_NOEXEC);
        let [tainted] = tainted.as_slice() else {
            panic!("{node}: {tainted:?}");
        };
        taint_times.push(tainted.t);
        let evicted = one(&e, EventKind::PodEvicted, &format!("default/web-b{i}"));
        assert_eq!(evicted.t, tainted.t + 300 * S, "{node}");
        assert_eq!(evicted.due, Some(evicted.t));
    }
    taint_times.sort_unstable();
    for pair in taint_times.windows(2) {
        assert!(pair[1] - pair[0] >= 10 * S, "taints {taint_times:?}");
    }
    for node in ["a-1", "a-2", "a-3", "c-1", "c-2", "c-3"] {
        none(&e, EventKind::NodeStatusUnknown, node);
    }
    none(&e, EventKind::PodEvicted, "default/web-a1");
}

#[test]
fn when_every_zone_is_down_nothing_is_evicted() {
    let e = run_example("all-zones-partition.yaml", SEED).entries;
    for zone in ["a", "b"] {
        let states: Vec<_> = of(&e, EventKind::ZoneStateChanged, zone)
            .iter()
            .map(|z| z.state.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            states,
            ["Normal", "FullDisruption", "Normal"],
            "zone {zone}"
        );
        let back = of(&e, EventKind::ZoneStateChanged, zone)[2].t;
        assert!(
            (1200 * S..=1205 * S).contains(&back),
            "zone {zone} back at {back}"
        );
    }
    // A zone that goes down alone for a pass may taint one node at once
    // (the taint comes with the Unknown); once every zone is down the
    // controller takes every unreachable:NoExecute taint off.
    let all_down = ["a", "b"]
        .iter()
        .map(|zone| of(&e, EventKind::ZoneStateChanged, zone)[1].t)
        .max()
        .unwrap_or_default();
    for node in ["a-1", "a-2", "b-1", "b-2"] {
        assert_unknown_in_window(&e, node, 60 * S);
        let added = taint_added(&e, node, UNREACHABLE_NOEXEC);
        let removed = of(&e, EventKind::TaintRemoved, node)
            .into_iter()
            .filter(|r| r.taint.as_deref() == Some(UNREACHABLE_NOEXEC) && r.t <= all_down)
            .count();
        assert!(
            added.iter().all(|a| a.t <= all_down) && removed == added.len(),
            "{node} keeps unreachable:NoExecute after every zone is down:\n{}",
            jsonl(&e)
        );
        assert!(
            of(&e, EventKind::NodeReady, node)
                .iter()
                .any(|r| r.t >= 1200 * S),
            "{node} Ready again"
        );
    }
    assert!(
        !e.iter().any(|x| x.event == EventKind::PodEvicted),
        "{}",
        jsonl(&e)
    );
}

#[test]
fn cordon_and_drain_moves_the_pods_and_keeps_new_ones_off() {
    let e = run_example("cordon-and-drain.yaml", SEED).entries;
    assert_eq!(one(&e, EventKind::NodeCordoned, "node1").t, 60 * S);
    let [tainted] = taint_added(&e, "node1", "node.kubernetes.io/unschedulable:NoSchedule")[..]
    else {
        panic!("{}", jsonl(&e));
    };
    assert!((60 * S..=65 * S).contains(&tainted.t));
    for pod in ["default/web-1", "default/web-2"] {
        assert_eq!(one(&e, EventKind::PodDeleted, pod).t, 70 * S);
        none(&e, EventKind::PodEvicted, pod);
    }
    for pod in ["default/web-1b", "default/web-2b"] {
        assert_eq!(scheduled_on(&e, pod), "node2");
    }
    assert_eq!(one(&e, EventKind::NodeUncordoned, "node1").t, 300 * S);
}

#[test]
fn memory_pressure_keeps_best_effort_pods_off_and_evicts_nothing() {
    let e = run_example("memory-pressure.yaml", SEED).entries;
    let pressure: Vec<_> = of(&e, EventKind::NodeCondition, "node1")
        .iter()
        .map(|c| (c.t, c.status.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        pressure,
        [(60 * S, "True".into()), (600 * S, "False".into())]
    );
    let taint = "node.kubernetes.io/memory-pressure:NoSchedule";
    let [added] = taint_added(&e, "node1", taint)[..] else {
        panic!("{}", jsonl(&e));
    };
    assert!((60 * S..=65 * S).contains(&added.t));
    let removed = of(&e, EventKind::TaintRemoved, "node1");
    assert!(
        removed
            .iter()
            .any(|r| r.taint.as_deref() == Some(taint) && (600 * S..=605 * S).contains(&r.t))
    );
    assert_eq!(scheduled_on(&e, "default/best-effort"), "node2");
    assert_eq!(scheduled_on(&e, "default/burstable"), "node1");
    none(&e, EventKind::PodEvicted, "default/running");
    none(&e, EventKind::PodDeleted, "default/running");
}

#[test]
fn the_same_scenario_and_seed_give_byte_identical_timelines() {
    for name in ["taint-based-eviction.yaml", "zone-partition.yaml"] {
        let first = jsonl(&run_example(name, 7).entries);
        let second = jsonl(&run_example(name, 7).entries);
        assert!(!first.is_empty());
        assert_eq!(first, second, "{name}");
    }
}

/// `restart: controllers` stops the controllers and starts them again; the
/// eviction stays due when the objects say (SPEC §4: due times survive a
/// controller restart), not 600 s after the restart.
#[test]
fn a_controller_restart_keeps_the_due_time() {
    let text = r#"
nodes: [{name: node1}]
objects:
  - apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec:
      nodeName: node1
      containers: [{name: app, image: registry.example/app:1}]
      tolerations: [{key: key1, operator: Exists, effect: NoExecute, tolerationSeconds: 600}]
steps:
  - {at: 10s, taint: "node1 key1=value1:NoExecute"}
  - {at: 5m, restart: controllers}
run: 20m
"#;
    let e = run_text("restart.yaml", text);
    let evicted = one(&e, EventKind::PodEvicted, "default/web");
    assert_eq!((evicted.t, evicted.due), (610 * S, Some(610 * S)));
    assert_eq!(one(&e, EventKind::PodDeleted, "default/web").t, 610 * S);
}

/// A tolerated out-of-service taint counts like any NoExecute taint (SPEC
/// §4; upstream's taint eviction controller does not set it apart): q
/// tolerates it for 60 s, so it leaves 60 s after the taint, not when the
/// default 300 s `unreachable` toleration runs out (about 365 s). The
/// controller and the timeline agree on the time.
#[test]
fn a_tolerated_out_of_service_taint_evicts_when_its_toleration_runs_out() {
    let text = r#"
nodes: [{name: n1}, {name: n2}]
objects:
  - apiVersion: v1
    kind: Pod
    metadata: {name: q}
    spec:
      nodeName: n1
      containers: [{name: app, image: registry.example/app:1}]
      tolerations:
        - {key: node.kubernetes.io/out-of-service, operator: Exists, effect: NoExecute, tolerationSeconds: 60}
steps:
  - {at: 10s, heartbeat: {node: n1, stop: true}}
  - {at: 2m, taint: "n1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"}
run: 10m
"#;
    let e = run_text("out-of-service.yaml", text);
    let unreachable = taint_added(&e, "n1", UNREACHABLE_NOEXEC);
    assert!(
        matches!(unreachable.as_slice(), [t] if t.t < 120 * S),
        "unreachable:NoExecute before the out-of-service taint:\n{}",
        jsonl(&e)
    );
    let evicted = one(&e, EventKind::PodEvicted, "default/q");
    assert_eq!(
        (evicted.t, evicted.due),
        (180 * S, Some(180 * S)),
        "{}",
        jsonl(&e)
    );
}

/// All ten nodes of zone a report NotReady in one instant. Within that
/// instant the zone passes through PartialDisruption on its way to
/// FullDisruption; the timeline records the state it settled in, after the
/// node changes that caused it, and the controller acted on that state:
/// zone a is tainted at --node-eviction-rate (one node every 10 s), as a
/// fully disrupted zone is while zone b is healthy (a partially disrupted
/// zone of a small cluster would not be tainted at all).
#[test]
fn a_zone_state_is_recorded_once_it_has_settled_within_an_instant() {
    let mut text = String::from(
        "nodes:\n  - {generate: 10, prefix: a-, zone: a}\n  - {generate: 2, prefix: b-, zone: b}\nsteps:\n",
    );
    for i in 1..=10 {
        text.push_str(&format!(
            "  - {{at: 1m, condition: {{node: a-{i}, type: Ready, status: \"False\"}}}}\n"
        ));
    }
    text.push_str("run: 5m\n");
    let e = run_text("zone-settles.yaml", &text);
    let states: Vec<(Millis, String)> = of(&e, EventKind::ZoneStateChanged, "a")
        .iter()
        .map(|z| (z.t, z.state.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        states,
        [
            (0, "Normal".to_owned()),
            (60 * S, "FullDisruption".to_owned())
        ],
        "{}",
        jsonl(&e)
    );
    // The state follows the node changes of its instant in the timeline.
    let position = |pred: &dyn Fn(&Entry) -> bool| e.iter().rposition(pred);
    let last_not_ready = position(&|x: &Entry| x.event == EventKind::NodeNotReady);
    let full = position(&|x: &Entry| x.state.as_deref() == Some("FullDisruption"));
    assert!(last_not_ready < full, "{}", jsonl(&e));
    // Tainted at the FullDisruption rate: one node every 10 s.
    let mut tainted: Vec<Millis> = e
        .iter()
        .filter(|x| {
            x.event == EventKind::TaintAdded
                && x.taint.as_deref() == Some("node.kubernetes.io/not-ready:NoExecute")
                && x.node.as_deref().is_some_and(|n| n.starts_with("a-"))
        })
        .map(|x| x.t)
        .collect();
    tainted.sort_unstable();
    assert!(tainted.len() >= 2, "{}", jsonl(&e));
    for pair in tainted.windows(2) {
        assert!(pair[1] - pair[0] >= 10 * S, "taints at {tainted:?}");
    }
}

/// Issue 23: `for:` on a taint step makes the taint expire; the node
/// lifecycle controller removes it exactly that long after the step, a
/// restart of the controllers in between notwithstanding.
#[test]
fn a_taint_step_for_30m_is_removed_30m_later() {
    let text = r#"
nodes: [{name: node1}]
steps:
  - {at: 10s, taint: "node1 maintenance=kernel:NoSchedule", for: 30m}
  - {at: 5m, restart: controllers}
run: 40m
"#;
    let e = run_text("expiring.yaml", text);
    let taint = "maintenance=kernel:NoSchedule";
    let added = taint_added(&e, "node1", taint);
    assert_eq!(added.len(), 1, "{}", jsonl(&e));
    assert_eq!(added[0].t, 10 * S);
    let removed: Vec<&Entry> = of(&e, EventKind::TaintRemoved, "node1")
        .into_iter()
        .filter(|entry| entry.taint.as_deref() == Some(taint))
        .collect();
    assert_eq!(removed.len(), 1, "{}", jsonl(&e));
    assert_eq!(removed[0].t, (10 + 30 * 60) * S);
}

/// Pods whose controller (their `PodCreated` owner) starts with `owner`
/// (`ReplicaSet/web-` for a Deployment's pods, `DaemonSet/log-agent`).
fn owned_by(entries: &[Entry], owner: &str) -> BTreeSet<String> {
    entries
        .iter()
        .filter(|e| {
            e.event == EventKind::PodCreated
                && e.owner.as_deref().is_some_and(|o| o.starts_with(owner))
        })
        .filter_map(|e| e.pod.clone())
        .collect()
}

/// The replicas of `pods` at `t`, by node: scheduled, and their deletion
/// not begun (a pod Terminating on a dead node is no replica).
fn replicas_at(entries: &[Entry], pods: &BTreeSet<String>, t: Millis) -> BTreeMap<String, u32> {
    let mut on: BTreeMap<&str, &str> = BTreeMap::new();
    for e in entries.iter().take_while(|e| e.t <= t) {
        let Some(pod) = e.pod.as_deref().filter(|p| pods.contains(*p)) else {
            continue;
        };
        match e.event {
            EventKind::PodScheduled => {
                on.insert(pod, e.node.as_deref().unwrap_or(""));
            }
            EventKind::PodTerminating | EventKind::PodFailed | EventKind::PodDeleted => {
                on.remove(pod);
            }
            _ => {}
        }
    }
    let mut by_node = BTreeMap::new();
    for node in on.values() {
        *by_node.entry((*node).to_owned()).or_default() += 1;
    }
    by_node
}

/// Node counts summed by zone, the zone being the node name's prefix
/// before `-` (`a-1` is in zone a).
fn by_zone(by_node: &BTreeMap<String, u32>) -> BTreeMap<String, u32> {
    let mut zones = BTreeMap::new();
    for (node, n) in by_node {
        let zone = node.split('-').next().unwrap_or_default().to_owned();
        *zones.entry(zone).or_default() += n;
    }
    zones
}

fn counts(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

#[test]
fn a_zone_outage_moves_the_deployments_replicas_to_the_surviving_zones() {
    let e = run_example("deployment-zone-outage.yaml", SEED).entries;
    let scaled: Vec<(Millis, Option<i32>)> = e
        .iter()
        .filter(|x| {
            x.event == EventKind::ReplicaSetScaled && x.owner.as_deref() == Some("Deployment/web")
        })
        .map(|x| (x.t, x.replicas))
        .collect();
    assert_eq!(scaled, [(0, Some(3)), (30 * S, Some(6))], "{}", jsonl(&e));
    let pods = owned_by(&e, "ReplicaSet/web-");
    // One per zone, then two per zone once scaled.
    let zones = |t| by_zone(&replicas_at(&e, &pods, t));
    assert_eq!(zones(29 * S), counts(&[("a", 1), ("b", 1), ("c", 1)]));
    assert_eq!(
        zones(2 * 60 * S),
        counts(&[("a", 2), ("b", 2), ("c", 2)]),
        "{}",
        jsonl(&e)
    );
    // Zone c is cut off at 2m; its pods leave 300 s after their nodes'
    // unreachable:NoExecute taints, and are replaced in a and b.
    for node in ["c-1", "c-2"] {
        let tainted = match taint_added(&e, node, UNREACHABLE_NOEXEC).as_slice() {
            [t] => t.t,
            other => panic!("{node}: {other:?}"),
        };
        let evicted: Vec<Millis> = e
            .iter()
            .filter(|x| x.event == EventKind::PodEvicted && x.node.as_deref() == Some(node))
            .map(|x| x.t)
            .collect();
        assert_eq!(evicted, [tainted + 300 * S], "{node}:\n{}", jsonl(&e));
    }
    assert_eq!(
        zones(12 * 60 * S),
        counts(&[("a", 3), ("b", 3)]),
        "{}",
        jsonl(&e)
    );
    // In each instant the replacement follows the pod it replaces.
    for x in e.iter().filter(|x| x.event == EventKind::PodEvicted) {
        let replacement = e
            .iter()
            .position(|y| y.t == x.t && y.event == EventKind::PodCreated);
        let evicted = e.iter().position(|y| y == x);
        assert!(evicted < replacement, "{}", jsonl(&e));
    }
    // Six replicas were made at first, two more to replace zone c's.
    assert_eq!(pods.len(), 8);
}

#[test]
fn a_daemon_set_runs_where_its_tolerations_allow() {
    let e = run_example("daemonset-tainted-nodes.yaml", SEED).entries;
    let agents = owned_by(&e, "DaemonSet/log-agent");
    let drivers = owned_by(&e, "DaemonSet/gpu-driver");
    let nodes = |pods: &BTreeSet<String>| -> Vec<String> {
        e.iter()
            .filter(|x| {
                x.event == EventKind::PodScheduled
                    && x.pod.as_deref().is_some_and(|p| pods.contains(p))
            })
            .filter_map(|x| x.node.clone())
            .collect::<Vec<_>>()
    };
    let mut agent_nodes = nodes(&agents);
    agent_nodes.sort();
    // node4 twice: before its NoExecute taint and after.
    assert_eq!(
        agent_nodes,
        ["node1", "node3", "node4", "node4"],
        "{}",
        jsonl(&e)
    );
    assert_eq!(nodes(&drivers), ["node2"]);
    let at = |pods, t| replicas_at(&e, pods, t);
    let one_each = |names: &[&str]| counts(&names.iter().map(|n| (*n, 1)).collect::<Vec<_>>());
    // Cordon, memory pressure and an unreachable node are tolerated.
    assert_eq!(
        at(&agents, 4 * 60 * S - 1),
        one_each(&["node1", "node3", "node4"])
    );
    assert!(
        taint_added(&e, "node1", UNREACHABLE_NOEXEC).len() == 1
            && taint_added(&e, "node3", "node.kubernetes.io/unschedulable:NoSchedule").len() == 1
            && taint_added(&e, "node4", "node.kubernetes.io/memory-pressure:NoSchedule").len() == 1,
        "{}",
        jsonl(&e)
    );
    // maintenance=true:NoExecute is not: evicted at 4m, none while it lasts.
    let evicted: Vec<(Millis, Option<String>)> = e
        .iter()
        .filter(|x| {
            x.event == EventKind::PodEvicted && x.pod.as_deref().is_some_and(|p| agents.contains(p))
        })
        .map(|x| (x.t, x.node.clone()))
        .collect();
    assert_eq!(evicted, [(4 * 60 * S, Some("node4".to_owned()))]);
    assert_eq!(at(&agents, 6 * 60 * S - 1), one_each(&["node1", "node3"]));
    assert_eq!(
        at(&agents, 10 * 60 * S),
        one_each(&["node1", "node3", "node4"]),
        "{}",
        jsonl(&e)
    );
    assert_eq!(at(&drivers, 10 * 60 * S), one_each(&["node2"]));
}

#[test]
fn a_stateful_set_pod_of_a_dead_node_waits_for_the_out_of_service_taint() {
    let e = run_example("statefulset-out-of-service.yaml", SEED).entries;
    let db0 = "default/db-0";
    // Never two pods named db-0: each creation follows the deletion of
    // the one before.
    let mut alive = 0;
    for x in e.iter().filter(|x| x.pod.as_deref() == Some(db0)) {
        match x.event {
            EventKind::PodCreated => alive += 1,
            EventKind::PodDeleted => alive -= 1,
            _ => {}
        }
        assert!(alive <= 1, "two pods named db-0 at {}:\n{}", x.t, jsonl(&e));
    }
    let created: Vec<Millis> = of(&e, EventKind::PodCreated, db0)
        .iter()
        .map(|x| x.t)
        .collect();
    assert_eq!(created.len(), 2, "{}", jsonl(&e));
    assert!(
        of(&e, EventKind::PodCreated, db0)
            .iter()
            .all(|x| x.owner.as_deref() == Some("StatefulSet/db"))
    );
    let scheduled: Vec<String> = of(&e, EventKind::PodScheduled, db0)
        .iter()
        .filter_map(|x| x.node.clone())
        .collect();
    assert_eq!(scheduled[0], "node1");
    assert!(
        scheduled.len() == 2 && scheduled[1] != "node1",
        "{scheduled:?}"
    );
    // Evicted 300 s after node1's unreachable taint, then Terminating
    // until the out-of-service taint at 12m.
    let tainted = match taint_added(&e, "node1", UNREACHABLE_NOEXEC).as_slice() {
        [t] => t.t,
        other => panic!("{other:?}"),
    };
    // Evicted when its toleration ran out, and again (force-deleted) by
    // the out-of-service taint.
    let evicted: Vec<Millis> = of(&e, EventKind::PodEvicted, db0)
        .iter()
        .map(|x| x.t)
        .collect();
    assert_eq!(evicted, [tainted + 300 * S, 12 * 60 * S], "{}", jsonl(&e));
    assert_eq!(one(&e, EventKind::PodTerminating, db0).t, tainted + 300 * S);
    assert_eq!(one(&e, EventKind::PodDeleted, db0).t, 12 * 60 * S);
    assert!(created[1] >= 12 * 60 * S);
}

#[test]
fn workload_scenarios_give_byte_identical_timelines() {
    for name in [
        "deployment-zone-outage.yaml",
        "daemonset-tainted-nodes.yaml",
        "statefulset-out-of-service.yaml",
    ] {
        let first = jsonl(&run_example(name, 11).entries);
        let second = jsonl(&run_example(name, 11).entries);
        assert!(first.contains("\"event\":\"PodCreated\""), "{name}");
        assert_eq!(first, second, "{name}");
    }
}
