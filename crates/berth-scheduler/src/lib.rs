//! berth-scheduler: kube-scheduler's decisions, for the plugins ported so
//! far, as a Kubernetes client.
//!
//! Plain functions over plain data (tested without a server):
//!
//! - [`framework`]: statuses and their codes, `NodeInfo` / `PodInfo`,
//!   `CycleState`, the extension-point traits (PreFilter, Filter, PreScore,
//!   Score with NormalizeScore), upstream's `DefaultNormalizeScore`, and the
//!   `FitError` message ("0/3 nodes are available: ...").
//! - [`plugins`]: NodeName, NodeUnschedulable, TaintToleration,
//!   NodeAffinity and NodeResourcesFit, each a Filter (and, where upstream
//!   has one, a Score), with upstream's unit-test tables.
//! - [`preemption`]: DefaultPreemption's rules: which nodes preemption
//!   might help, the victims on a node, the candidate upstream picks;
//!   the cycle's PostFilter runs them ([`cycle`]'s `preempt`) and
//!   [`nominator`] keeps the preemptors' nominated nodes; [`budgets`] the
//!   PodDisruptionBudgets the victims are weighed against.
//! - [`cycle`]: one scheduling cycle over the default profile (weights
//!   TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1), upstream's
//!   percentage of nodes to score and random tie-break.
//! - [`queue`]: activeQ, backoffQ and unschedulable pods; [`hints`]: the
//!   cluster events and queueing hints that move unschedulable pods back.
//! - [`cache`]: nodes and the pods on them, with assumed pods.
//! - [`scheduler`]: the state machine tying them together: watch updates
//!   in, decisions (bind / refuse) out, no I/O and no clock.
//! - [`resources`], [`taint_sets`]: what a pod requests in the scheduler's
//!   units, interned taint lists (node-selector and label matching are
//!   berth-core's [`berth_core::node_affinity`] and [`berth_core::labels`]).
//! - [`check`]: one pod against a set of nodes, explained (`berth check`).
//! - [`explain`]: one pod against the live cluster, every node's filter
//!   verdicts and scores from the cycle's own steps (`berth explain pod`).
//!
//! The client side, [`client`]: kube-rs watchers feed the state machine and
//! its decisions go to the API server (`pods/binding`, the `PodScheduled`
//! condition, Events), with upstream's `scheduler_*` metrics. `berth server`
//! runs it over the in-process transport; it works against any API server.

pub mod affinity_terms;
pub mod budgets;
pub mod cache;
pub mod check;
pub mod client;
pub mod config;
pub mod cycle;
pub mod explain;
pub mod framework;
pub mod hints;
pub mod nominator;
pub mod plugins;
pub mod pod_key;
pub mod preemption;
pub mod profile;
pub mod queue;
pub mod resources;
pub mod scheduler;
pub mod snapshot;
pub mod taint_sets;

/// Checks the promise the Filter hot path makes: once PreFilter has run,
/// filtering a node that passes allocates nothing. A counting allocator
/// (per thread, so parallel tests do not disturb it) wraps the system one
/// in this crate's test binary.
#[cfg(test)]
mod alloc_free_tests {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{
        Container, Node, NodeSpec, NodeStatus, ResourceRequirements, Taint, Toleration,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use crate::framework::{
        CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterPlugin, Snapshot,
    };
    use crate::plugins::{
        NodeAffinity, NodeName, NodeResourcesFit, NodeUnschedulable, TaintToleration,
    };
    use berth_core::test_util::{expr, node, pod_with, selector, term};

    struct Counting;

    thread_local! {
        static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    }

    // SAFETY: defers every operation to `System`; only counts.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.with(|c| c.set(c.get() + 1));
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATIONS.with(|c| c.set(c.get() + 1));
            // SAFETY: same contract as the caller's.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    fn allocations() -> usize {
        ALLOCATIONS.with(Cell::get)
    }

    #[test]
    fn filters_do_not_allocate_on_a_passing_node() {
        let mut pod = pod_with(
            Some(&[("zone", "a")]),
            Some(selector(vec![
                term(vec![expr("gpu", "Gt", &["1"])], vec![]),
                term(
                    vec![
                        expr("disk", "In", &["ssd", "nvme"]),
                        expr("arch", "NotIn", &["arm"]),
                    ],
                    vec![expr("metadata.name", "In", &["n1"])],
                ),
            ])),
        );
        if let Some(spec) = pod.spec.as_mut() {
            spec.tolerations = Some(vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Exists".into()),
                ..Toleration::default()
            }]);
        }
        let mut n = node("n1", &[("zone", "a"), ("disk", "nvme"), ("arch", "amd64")]);
        n.spec = Some(NodeSpec {
            unschedulable: Some(true),
            taints: Some(vec![Taint {
                key: "dedicated".into(),
                effect: "NoSchedule".into(),
                ..Taint::default()
            }]),
            ..NodeSpec::default()
        });
        let unschedulable_tol = Toleration {
            key: Some("node.kubernetes.io/unschedulable".into()),
            operator: Some("Exists".into()),
            ..Toleration::default()
        };
        if let Some(t) = pod.spec.as_mut().and_then(|s| s.tolerations.as_mut()) {
            t.push(unschedulable_tol);
        }
        // Requests for every kind of resource NodeResourcesFit checks, on a
        // node with room for them.
        let quantities = |entries: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect()
        };
        if let Some(spec) = pod.spec.as_mut() {
            spec.containers = vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[
                        ("cpu", "500m"),
                        ("memory", "1Gi"),
                        ("ephemeral-storage", "1Gi"),
                        ("example.com/gpu", "1"),
                        ("hugepages-2Mi", "2Mi"),
                    ])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }];
        }
        n.status = Some(NodeStatus {
            allocatable: Some(quantities(&[
                ("cpu", "4"),
                ("memory", "8Gi"),
                ("ephemeral-storage", "100Gi"),
                ("pods", "110"),
                ("example.com/gpu", "2"),
                ("hugepages-2Mi", "1Gi"),
            ])),
            ..NodeStatus::default()
        });
        let pod = PodInfo::from(pod);
        let mut node = NodeInfo::from(n);
        node.add_pod(pod.pod());
        let other = NodeInfo::from(Node::default());

        let affinity = NodeAffinity::default();
        let unschedulable = NodeUnschedulable::default();
        let taints = TaintToleration::default();
        let fit = NodeResourcesFit::default().with_ignored_resource_groups(["ignored.io"]);
        let mut state = CycleState::new();
        let (_, status) = affinity.pre_filter(
            &mut state,
            &pod,
            &Snapshot::of_nodes(std::slice::from_ref(&other)),
        );
        assert!(status.is_success());
        let (_, status) = fit.pre_filter(
            &mut state,
            &pod,
            &Snapshot::of_nodes(std::slice::from_ref(&other)),
        );
        assert!(status.is_success());
        // Warm up anything lazily initialised (the unschedulable taint).
        assert!(unschedulable.filter(&state, &pod, &node).is_success());

        let before = allocations();
        let mut passed = 0;
        for _ in 0..100 {
            passed += usize::from(NodeName.filter(&state, &pod, &node).is_success());
            passed += usize::from(unschedulable.filter(&state, &pod, &node).is_success());
            passed += usize::from(taints.filter(&state, &pod, &node).is_success());
            passed += usize::from(affinity.filter(&state, &pod, &node).is_success());
            passed += usize::from(fit.filter(&state, &pod, &node).is_success());
        }
        let allocated = allocations() - before;
        assert_eq!(passed, 500);
        assert_eq!(allocated, 0, "filters allocated on the success path");

        // The counter does see allocations: the no-PreFilter fallback parses.
        let before = allocations();
        assert!(
            affinity
                .filter(&CycleState::new(), &pod, &node)
                .is_success()
        );
        assert!(allocations() > before);
    }
}
