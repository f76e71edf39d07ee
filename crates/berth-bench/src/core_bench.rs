//! `berth-bench core`: the cost of taint/toleration matching.
//!
//! - one `tolerates()` check (Equal, Exists, and the numeric Gt);
//! - the TaintToleration Filter of one pod over `--nodes` nodes of which
//!   `--tainted` carry a `dedicated=group-N:NoSchedule` taint (N cycling
//!   over `--taint-groups` values), for a pod that tolerates none of the
//!   groups, one of them, or all of them. The figure is the time per pod
//!   for the whole node list (the goal: ≤ 10 µs for 5,000 nodes
//!   with 1,000 tainted). Measured twice: as the scheduler runs it (taint
//!   lists interned, PreFilter's verdict cache, then Filter per node), and
//!   with every node matched on its own as upstream's plugin does.

use berth_core::FeatureGates;
use berth_core::toleration::tolerates;
use std::sync::Arc;

use berth_scheduler::framework::{
    CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterPlugin, Snapshot,
};
use berth_scheduler::plugins::TaintToleration;
use berth_scheduler::taint_sets::TaintSets;
use clap::Args;
use k8s_openapi::api::core::v1::{Node, NodeSpec, Pod, PodSpec, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::measure::{Machine, Timing, time};

#[derive(Debug, Args)]
pub struct CoreArgs {
    /// Nodes in the filter benchmark.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// How many of them are tainted.
    #[arg(long, default_value_t = 1000)]
    tainted: usize,
    /// Distinct taint values among the tainted nodes.
    #[arg(long, default_value_t = 10)]
    taint_groups: usize,
    /// Timed samples per measurement.
    #[arg(long, default_value_t = 21)]
    samples: usize,
}

#[derive(Debug, Serialize)]
pub struct CoreReport {
    bench: &'static str,
    machine: Machine,
    nodes: usize,
    tainted: usize,
    taint_groups: usize,
    tolerates: Vec<Timing>,
    /// Per pod: one Filter call for every node.
    filter_per_pod: Vec<FilterTiming>,
}

#[derive(Debug, Serialize)]
pub struct FilterTiming {
    #[serde(flatten)]
    timing: Timing,
    feasible_nodes: usize,
    per_node_ns: f64,
}

// Objects built by hand, not with berth_core::test_util: that is a
// dev-dependency feature, and enabling it for this binary would compile it
// (and proptest) into every workspace build of berth-core.
fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: Some(value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

fn toleration(key: &str, operator: &str, value: Option<&str>, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some(operator.into()),
        value: value.map(Into::into),
        effect: Some(effect.into()),
        toleration_seconds: None,
    }
}

fn node(i: usize, taints: Option<Vec<Taint>>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{i}")),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints,
            ..NodeSpec::default()
        }),
        status: None,
    }
}

fn pod(tolerations: Vec<Toleration>) -> PodInfo {
    PodInfo::from(Pod {
        metadata: ObjectMeta {
            name: Some("bench".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            tolerations: Some(tolerations),
            ..PodSpec::default()
        }),
        status: None,
    })
}

pub fn run(args: &CoreArgs) -> anyhow::Result<CoreReport> {
    anyhow::ensure!(
        args.tainted <= args.nodes,
        "--tainted must not exceed --nodes"
    );
    let gates = FeatureGates::default();
    let groups = args.taint_groups.max(1);

    let equal = toleration("key1", "Equal", Some("value1"), "NoSchedule");
    let exists = toleration("key1", "Exists", None, "");
    let gt = toleration(
        "servicelevel.organization.example/agreed-service-level",
        "Gt",
        Some("900"),
        "NoSchedule",
    );
    let key1 = taint("key1", "value1", "NoSchedule");
    let sla = taint(
        "servicelevel.organization.example/agreed-service-level",
        "950",
        "NoSchedule",
    );
    let tolerates_timings = vec![
        time("tolerates/Equal", args.samples, || {
            tolerates(&equal, &key1, gates)
        }),
        time("tolerates/Exists", args.samples, || {
            tolerates(&exists, &key1, gates)
        }),
        time("tolerates/Gt", args.samples, || tolerates(&gt, &sla, gates)),
    ];

    // Tainted nodes spread evenly through the list, as a real cluster's are.
    let stride = args.nodes.checked_div(args.tainted).unwrap_or(usize::MAX);
    let mut tainted = 0;
    let nodes: Vec<Node> = (0..args.nodes)
        .map(|i| {
            if tainted < args.tainted && i % stride == 0 {
                tainted += 1;
                let group = format!("group-{}", tainted % groups);
                node(i, Some(vec![taint("dedicated", &group, "NoSchedule")]))
            } else {
                node(i, None)
            }
        })
        .collect();

    // As the scheduler's snapshot holds them: taint lists interned.
    let mut sets = TaintSets::new();
    let interned: Vec<NodeInfo> = nodes
        .iter()
        .map(|n| NodeInfo::interned(Arc::new(n.clone()), &mut sets))
        .collect();
    // As upstream's per-node Filter sees them: every node's own list.
    let direct: Vec<NodeInfo> = nodes.into_iter().map(NodeInfo::from).collect();

    let plugin = TaintToleration::new(gates);
    let pods = [
        (
            "filter/tolerates-none",
            pod(vec![toleration("other", "Exists", None, "NoSchedule")]),
        ),
        (
            "filter/tolerates-one-group",
            pod(vec![toleration(
                "dedicated",
                "Equal",
                Some("group-1"),
                "NoSchedule",
            )]),
        ),
        (
            "filter/tolerates-all",
            pod(vec![toleration("dedicated", "Exists", None, "NoSchedule")]),
        ),
    ];
    let mut filter_per_pod = Vec::new();
    for (name, pod) in &pods {
        // PreFilter (the verdict cache) and one Filter per node, per pod.
        let cached = || {
            let mut state = CycleState::new();
            let _ = plugin.pre_filter(&mut state, pod, &Snapshot::of_nodes(&interned));
            interned
                .iter()
                .filter(|n| plugin.filter(&state, pod, n).is_success())
                .count()
        };
        let uncached = || {
            let state = CycleState::new();
            direct
                .iter()
                .filter(|n| plugin.filter(&state, pod, n).is_success())
                .count()
        };
        let feasible = cached();
        anyhow::ensure!(
            feasible == uncached(),
            "cached and per-node filters disagree"
        );
        let runs = [
            time(name, args.samples, cached),
            time(&format!("{name}/per-node-matching"), args.samples, uncached),
        ];
        for timing in runs {
            filter_per_pod.push(FilterTiming {
                per_node_ns: timing.median_ns / args.nodes.max(1) as f64,
                timing,
                feasible_nodes: feasible,
            });
        }
    }

    Ok(CoreReport {
        bench: "core",
        machine: Machine::describe(),
        nodes: args.nodes,
        tainted,
        taint_groups: groups,
        tolerates: tolerates_timings,
        filter_per_pod,
    })
}
