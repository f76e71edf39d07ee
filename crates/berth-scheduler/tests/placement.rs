//! The placement comparison of issue 22, against the real kube-scheduler
//! (v1.36.2, default profile) on the cluster of
//! `tests/data/placement/cluster.json`: 200 nodes in 3 zones, 40 of them
//! tainted; 2,000 pods of four ReplicaSets with zone spreading, hostname
//! anti-affinity, tolerations, and the default spreading. The recordings
//! (made with `load_peer.py`, facts, not code):
//!
//! - `upstream_sequence.txt`: the pods in the order upstream scheduled
//!   them, each with the node it chose. The backlog reaches the scheduler
//!   in an order of the informer's own, different in every run; it decides
//!   much of the placement, so berth is given the same order.
//! - `upstream_cycles.jsonl`: every 40th of those cycles as upstream's
//!   -v=10 log tells it: the nodes it found feasible with each score
//!   plugin's weighted score, and the nodes its filters rejected, by plugin.
//! - `upstream_placement.json`: that run's per-zone and per-node counts.
//! - `upstream_runs.json`: sixteen runs (that one and fifteen more, each
//!   with its own order and tie-breaks), summarised: how far upstream's
//!   own placements vary.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_core::labels::LabelSelector;
use berth_scheduler::cache::Cache;
use berth_scheduler::cycle::{PodFilters, Profile, score_nodes};
use berth_scheduler::framework::{CycleState, Memory, NodeInfo, PodInfo};
use berth_scheduler::queue::QueueConfig;
use berth_scheduler::scheduler::{Decision, Scheduler};
use berth_scheduler::snapshot::WorkloadSelectors;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};
use tokio::time::Instant;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/placement");

fn read_text(name: &str) -> String {
    let path = format!("{DATA}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn read(name: &str) -> Value {
    serde_json::from_str(&read_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The ReplicaSets of the spec: a pod owned by ReplicaSet `x` has the
/// selector `app=x`, as upstream's `DefaultSelector` reads it from the
/// ReplicaSet lister.
#[derive(Debug)]
struct ReplicaSets;

impl WorkloadSelectors for ReplicaSets {
    fn default_selector(&self, pod: &Pod) -> LabelSelector {
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "ReplicaSet");
        match owner {
            Some(o) => LabelSelector::parse(&format!("app={}", o.name)).unwrap_or_default(),
            None => LabelSelector::default(),
        }
    }
}

struct Cluster {
    nodes: Vec<Node>,
    /// Pod name → (pod, workload name).
    pods: BTreeMap<String, (Pod, String)>,
    zones: BTreeMap<String, String>,
    tainted: usize,
}

/// `pod_order` of load_peer.py: pod `i`'s workload, the workloads
/// interleaved in proportion (only the names depend on it: upstream
/// scheduled them in its own order, `upstream_sequence.txt`).
fn pod_order(workloads: &[Value]) -> Vec<usize> {
    let replicas: Vec<i64> = workloads
        .iter()
        .map(|w| w["replicas"].as_i64().unwrap_or(0))
        .collect();
    let total: i64 = replicas.iter().sum();
    let mut created = vec![0i64; replicas.len()];
    (0..total)
        .map(|i| {
            let mut best = 0;
            for w in 1..replicas.len() {
                let deficit = |w: usize| replicas[w] * (i + 1) - created[w] * total;
                if deficit(w) > deficit(best) {
                    best = w;
                }
            }
            created[best] += 1;
            best
        })
        .collect()
}

/// The nodes and pods load_peer.py creates (less what admission adds that
/// no plugin reads: the service account volume, NoExecute tolerations).
fn cluster(spec: &Value) -> Cluster {
    let n = &spec["nodes"];
    let zones: Vec<&str> = n["zones"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let tainted = n["tainted"].as_u64().unwrap_or(0) as usize;
    let mut nodes = Vec::new();
    let mut zone_of = BTreeMap::new();
    for i in 0..n["count"].as_u64().unwrap_or(0) as usize {
        let name = format!("node-{i:03}");
        let zone = zones[i % zones.len()];
        zone_of.insert(name.clone(), zone.to_string());
        let taints = if i < tainted {
            json!([n["taint"]])
        } else {
            json!([])
        };
        nodes.push(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
                "spec": {"taints": taints},
                "status": {"capacity": n["allocatable"], "allocatable": n["allocatable"]},
            }))
            .unwrap_or_else(|e| panic!("node: {e}")),
        );
    }
    let workloads = spec["workloads"].as_array().cloned().unwrap_or_default();
    let ns = spec["namespace"].as_str().unwrap_or("default");
    let pods = pod_order(&workloads)
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let w = &workloads[w];
            let app = w["name"].as_str().unwrap_or("");
            let mut spec_json = json!({
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": w["cpu"], "memory": w["memory"]}}}],
            });
            if w["tolerate"].as_bool() == Some(true) {
                let t = &n["taint"];
                spec_json["tolerations"] = json!([{"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]}]);
            }
            if let Some(spread) = w["spread"].as_array() {
                spec_json["topologySpreadConstraints"] = spread
                    .iter()
                    .map(|c| {
                        let mut c = c.clone();
                        c["labelSelector"] = json!({"matchLabels": {"app": app}});
                        c
                    })
                    .collect();
            }
            if let Some(key) = w["antiAffinityTopologyKey"].as_str() {
                spec_json["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}});
            }
            let name = format!("pod-{i:04}");
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{i}"),
                    "labels": {"app": app},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": format!("rs-{app}"), "controller": true}]},
                "spec": spec_json,
            }))
            .unwrap_or_else(|e| panic!("pod: {e}"));
            (name, (pod, app.to_string()))
        })
        .collect();
    Cluster {
        nodes,
        pods,
        zones: zone_of,
        tainted,
    }
}

/// `upstream_sequence.txt`: (pod, node) in the order upstream scheduled.
fn upstream_sequence() -> Vec<(String, String)> {
    read_text("upstream_sequence.txt")
        .lines()
        .map(|l| {
            let (pod, node) = l
                .split_once(' ')
                .unwrap_or_else(|| panic!("bad line {l:?}"));
            (pod.to_string(), node.to_string())
        })
        .collect()
}

fn node_name(number: &Value) -> String {
    format!("node-{:03}", number.as_u64().unwrap_or(u64::MAX))
}

/// The state upstream scheduled in, cycle by cycle: berth's filters and
/// scores on the nodes upstream saw, with every earlier pod where upstream
/// put it. Every node upstream bound a pod to passes berth's filters; in
/// the recorded cycles every node upstream found feasible passes, every
/// node a filter of upstream's rejected is rejected by the same plugin,
/// every score plugin gives every node upstream's score, and upstream's
/// choice is among berth's best.
#[test]
fn berth_filters_and_scores_each_of_upstreams_cycles_alike() {
    let cluster = cluster(&read("cluster.json"));
    let profile = Profile::default();
    let mut cache = Cache::new();
    cache.set_workloads(Arc::new(ReplicaSets));
    for n in &cluster.nodes {
        cache.upsert_node(Arc::new(n.clone()));
    }
    let recorded: BTreeMap<usize, Value> = read_text("upstream_cycles.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("upstream_cycles.jsonl: {e}"))
        })
        .map(|c| (c["cycle"].as_u64().unwrap_or(u64::MAX) as usize, c))
        .collect();
    let (mut scores_compared, mut rejections_compared) = (0, 0);
    let mut memory = Memory::default();
    for (i, (name, chosen)) in upstream_sequence().into_iter().enumerate() {
        let (pod, _) = &cluster.pods[&name];
        let info = PodInfo::new(Arc::new(pod.clone()));
        let mut state = CycleState::with_memory(memory);
        {
            let snapshot = cache.snapshot();
            let filters = PodFilters::new(&profile, &mut state, &info, &snapshot)
                .unwrap_or_else(|e| panic!("cycle {i}, {name}: PreFilter: {e}"));
            let node = |name: &str| -> &NodeInfo {
                cache.node(name).unwrap_or_else(|| panic!("no node {name}"))
            };
            let rejected_by = |n: &NodeInfo| filters.run(&state, &info, n).map(|s| s.plugin);
            assert_eq!(
                rejected_by(node(&chosen)),
                None,
                "cycle {i}: upstream bound {name} to {chosen}"
            );
            if let Some(c) = recorded.get(&i) {
                assert_eq!(c["pod"], name.as_str(), "cycle {i}");
                let feasible: Vec<&NodeInfo> = c["feasible"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|n| node(&node_name(n)))
                    .collect();
                for n in &feasible {
                    assert_eq!(
                        rejected_by(n),
                        None,
                        "cycle {i}, {name}: upstream found {} feasible",
                        n.name()
                    );
                }
                for (plugin, nodes) in c["rejected"].as_object().into_iter().flatten() {
                    for n in nodes.as_array().into_iter().flatten() {
                        let n = node(&node_name(n));
                        assert_eq!(
                            rejected_by(n),
                            Some(plugin.as_str()),
                            "cycle {i}, {name}: upstream's {plugin} rejected {}",
                            n.name()
                        );
                        rejections_compared += 1;
                    }
                }
                let mut ours: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
                score_nodes(
                    &profile,
                    &mut state,
                    &info,
                    &snapshot,
                    &feasible,
                    |scored| {
                        ours.insert(
                            scored.plugin,
                            scored
                                .normalized
                                .iter()
                                .map(|s| s.score * scored.weight)
                                .collect(),
                        );
                    },
                )
                .unwrap_or_else(|e| panic!("cycle {i}, {name}: {e}"));
                // A plugin upstream logs and berth skipped (or does not
                // have: DynamicResources, berth serves no claims) scored 0
                // everywhere, and the other way round.
                let mut plugins: Vec<&str> = ours.keys().copied().collect();
                plugins.extend(
                    c["scores"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(p, _)| p.as_str()),
                );
                plugins.sort_unstable();
                plugins.dedup();
                let mut totals = vec![0i64; feasible.len()];
                for plugin in plugins {
                    let theirs: Vec<i64> = match &c["scores"][plugin] {
                        Value::Array(v) => v.iter().map(|s| s.as_i64().unwrap_or(-1)).collect(),
                        Value::Null => vec![0; feasible.len()],
                        same => vec![same.as_i64().unwrap_or(-1); feasible.len()],
                    };
                    let ours = ours
                        .get(plugin)
                        .cloned()
                        .unwrap_or_else(|| vec![0; feasible.len()]);
                    for (k, n) in feasible.iter().enumerate() {
                        assert_eq!(
                            ours[k],
                            theirs[k],
                            "cycle {i}, {name}: {plugin} on {}",
                            n.name()
                        );
                        totals[k] += ours[k];
                    }
                    scores_compared += feasible.len();
                }
                let best = totals.iter().copied().max().unwrap_or(0);
                let at_chosen = feasible
                    .iter()
                    .position(|n| n.name() == chosen)
                    .map(|k| totals[k]);
                assert_eq!(
                    at_chosen,
                    Some(best),
                    "cycle {i}, {name}: upstream chose {chosen}"
                );
            }
        }
        memory = state.into_memory();
        cache.assume(&format!("placement/{name}"), &info, &chosen);
    }
    assert_eq!(recorded.len(), 50, "recorded cycles");
    assert!(
        scores_compared > 20_000 && rejections_compared > 2_000,
        "{scores_compared} scores, {rejections_compared} rejections"
    );
}

/// Pod name → node, as berth's scheduler places the cluster, the pods
/// queued in upstream's order.
fn schedule(cluster: &Cluster, seed: u64) -> BTreeMap<String, String> {
    let mut s = Scheduler::new(Profile::default(), QueueConfig::default(), seed);
    s.set_workloads(Arc::new(ReplicaSets));
    let now = Instant::now();
    for n in &cluster.nodes {
        s.upsert_node(n.clone(), now);
    }
    for (name, _) in upstream_sequence() {
        s.upsert_pod(cluster.pods[&name].0.clone(), now);
    }
    let mut placed = BTreeMap::new();
    while let Some(d) = s.schedule_one(now) {
        match d {
            Decision::Bind(b) => {
                placed.insert(
                    b.pod.metadata.name.clone().unwrap_or_default(),
                    b.result.node,
                );
            }
            Decision::Refuse(r) => panic!("{} not scheduled: {}", r.key, r.error),
        }
    }
    placed
}

/// A placement as load_peer.py's `collect` and `runs` count it.
#[derive(Debug, Default)]
struct Counts {
    /// Workload → zone → pods.
    per_zone: BTreeMap<String, BTreeMap<String, u64>>,
    /// Node → pods (every node, 0 included).
    per_node: BTreeMap<String, u64>,
    /// Workload → node → pods.
    per_node_workload: BTreeMap<String, BTreeMap<String, u64>>,
}

fn counts(cluster: &Cluster, placed: &BTreeMap<String, String>) -> Counts {
    let mut c = Counts {
        per_node: cluster.zones.keys().map(|n| (n.clone(), 0)).collect(),
        ..Counts::default()
    };
    for (name, (_, app)) in &cluster.pods {
        let node = &placed[name];
        *c.per_zone
            .entry(app.clone())
            .or_default()
            .entry(cluster.zones[node].clone())
            .or_default() += 1;
        *c.per_node.entry(node.clone()).or_default() += 1;
        *c.per_node_workload
            .entry(app.clone())
            .or_default()
            .entry(node.clone())
            .or_default() += 1;
    }
    c
}

fn json_counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect()
}

fn sorted(m: &BTreeMap<String, u64>) -> Vec<u64> {
    let mut v: Vec<u64> = m.values().copied().collect();
    v.sort_unstable();
    v
}

fn used_and_busiest(per_node: &BTreeMap<String, u64>) -> (usize, u64) {
    (
        per_node.values().filter(|&&n| n > 0).count(),
        per_node.values().copied().max().unwrap_or(0),
    )
}

/// Pods moved between nodes to turn one sorted per-node histogram into
/// the other (counted on both ends).
fn distance(a: &[u64], b: &[u64]) -> u64 {
    a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).sum()
}

#[test]
fn placements_satisfy_every_constraint_and_match_upstreams_counts() {
    let spec = read("cluster.json");
    let cluster = cluster(&spec);
    let placed = schedule(&cluster, 7);
    assert_eq!(placed.len(), cluster.pods.len(), "every pod bound");
    let got = counts(&cluster, &placed);
    let on_tainted = |per_node: &BTreeMap<String, u64>| -> u64 {
        per_node
            .iter()
            .filter(|(n, _)| {
                n.trim_start_matches("node-").parse().unwrap_or(usize::MAX) < cluster.tainted
            })
            .map(|(_, n)| n)
            .sum()
    };

    // Every constraint holds.
    for w in spec["workloads"].as_array().into_iter().flatten() {
        let app = w["name"].as_str().unwrap_or("");
        let zones = sorted(&got.per_zone[app]);
        if w["spread"]
            .as_array()
            .is_some_and(|s| s.iter().any(|c| c["whenUnsatisfiable"] == "DoNotSchedule"))
        {
            assert!(
                zones[zones.len() - 1] - zones[0] <= 1,
                "{app}: zone skew {zones:?}"
            );
        }
        if w["antiAffinityTopologyKey"].is_string() {
            assert!(
                got.per_node_workload[app].values().all(|&n| n <= 1),
                "{app}: two on a node"
            );
        }
        if w["tolerate"].as_bool() != Some(true) {
            assert_eq!(
                on_tainted(&got.per_node_workload[app]),
                0,
                "{app} on a tainted node"
            );
        }
    }

    // The recorded run's counts: per workload the same zone counts (as a
    // multiset: which zone gets the odd pod is a tie), the same number of
    // nodes used and the same busiest node.
    let upstream = read("upstream_placement.json");
    let runs = read("upstream_runs.json");
    let runs = runs["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 16, "upstream runs");
    for (app, zones) in upstream["per_zone"].as_object().into_iter().flatten() {
        let theirs = json_counts(&upstream["per_node_per_workload"][app]);
        let ours = &got.per_node_workload[app];
        assert_eq!(
            used_and_busiest(ours),
            used_and_busiest(&theirs),
            "{app}: nodes used, busiest node"
        );
        // Where upstream's own runs differ (the soft spreading of `batch`
        // splits 150/150/150 or 149/150/151), any split it made will do.
        let ours_zones = sorted(&got.per_zone[app]);
        let seen = |v: &Value| {
            v.as_array().is_some_and(|z| {
                z.iter()
                    .filter_map(Value::as_u64)
                    .eq(ours_zones.iter().copied())
            })
        };
        assert!(
            ours_zones == sorted(&json_counts(zones))
                || runs.iter().any(|r| seen(&r["per_workload"][app]["zones"])),
            "{app}: per-zone counts {ours_zones:?}"
        );
        // How many of the tolerating pods land on the tainted nodes is up
        // to tie-breaks: within what upstream's runs did.
        let range: Vec<u64> = runs
            .iter()
            .filter_map(|r| r["per_workload"][app]["on_tainted_nodes"].as_u64())
            .collect();
        let (lo, hi) = (
            range.iter().min().copied().unwrap_or(0),
            range.iter().max().copied().unwrap_or(0),
        );
        let ours_tainted = on_tainted(ours);
        assert!(
            (lo..=hi).contains(&ours_tainted),
            "{app}: {ours_tainted} pods on tainted nodes, upstream {lo}..={hi}"
        );
    }
    // Over all pods, the per-node histogram is no further from the
    // recorded run's than upstream's other runs are.
    let sorted_of = |v: &Value| -> Vec<u64> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect()
    };
    let theirs = sorted(&json_counts(&upstream["per_node"]));
    let upstream_spread = runs
        .iter()
        .map(|r| distance(&sorted_of(&r["per_node_sorted"]), &theirs))
        .max()
        .unwrap_or(0);
    let ours = sorted(&got.per_node);
    let d = distance(&ours, &theirs);
    assert!(
        d <= upstream_spread,
        "per-node histograms differ by {d} (upstream's runs: up to {upstream_spread}): ours {ours:?}, upstream {theirs:?}"
    );
}
