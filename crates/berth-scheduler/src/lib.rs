//! berth-scheduler: the kube-scheduler framework shape and the first
//! filter/score plugins, ported from upstream with their unit-test tables.
//!
//! What this crate owns today:
//!
//! - [`framework`]: statuses and their codes, `NodeInfo` / `PodInfo`,
//!   `CycleState`, the extension-point traits (PreFilter, Filter, PreScore,
//!   Score with NormalizeScore), upstream's `DefaultNormalizeScore`, and the
//!   `FitError` message ("0/3 nodes are available: ...").
//! - [`plugins`]: NodeName, NodeUnschedulable, TaintToleration,
//!   NodeAffinity and NodeResourcesFit, each a Filter (and, where upstream
//!   has one, a Score).
//! - [`resources`]: what a pod requests (upstream's `PodRequests`, with
//!   sidecars, pod-level resources and overhead) and which resource names
//!   the scheduler counts; `NodeInfo` sums it over the pods on a node.
//! - [`check`]: one pod against a set of nodes, explained (`berth check`).
//! - [`taint_sets`]: interned node taint lists, so a pod is judged once per
//!   distinct list rather than once per node.
//! - [`nodeaffinity`] and [`labels`]: the node-selector matching of
//!   component-helpers and the label-requirement semantics and validation of
//!   apimachinery that NodeAffinity is built on.
//!
//! Everything here is plain functions over plain data: tests call the
//! plugins directly, without a server. The scheduling queue, the cluster
//! snapshot that fills `NodeInfo` (with `NodeInfo::add_pod`), the binder and
//! the API client come later.

pub mod cache;
pub mod check;
pub mod client;
pub mod cycle;
pub mod framework;
pub mod hints;
pub mod labels;
pub mod nodeaffinity;
pub mod plugins;
pub mod queue;
pub mod resources;
pub mod scheduler;
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

    use crate::framework::{CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterPlugin};
    use crate::nodeaffinity::tests::{expr, node, pod_with, selector, term};
    use crate::plugins::{
        NodeAffinity, NodeName, NodeResourcesFit, NodeUnschedulable, TaintToleration,
    };

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
        let (_, status) = affinity.pre_filter(&mut state, &pod, std::slice::from_ref(&other));
        assert!(status.is_success());
        let (_, status) = fit.pre_filter(&mut state, &pod, std::slice::from_ref(&other));
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
