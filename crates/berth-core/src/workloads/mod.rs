//! The decisions of the workload controllers, ported from upstream's
//! `pkg/controller/{daemon,replicaset,deployment,statefulset}` as plain
//! functions over k8s-openapi objects: no I/O, no clock (the time is an
//! argument), no state beyond what a caller passes in. A controller built
//! on these lists its objects, asks what to do, and does it; its own code
//! is watching, writing and retrying.
//!
//! - [`pod_control`]: how every workload controller issues pod creates and
//!   deletes: slow-start batches and the expectations that keep it from
//!   acting twice on one observation.
//! - [`backoff`]: per-key exponential backoff (client-go's
//!   `flowcontrol.Backoff`), for the DaemonSet's failed pods.
//! - [`ownership`]: controller references, adoption and release
//!   (`ControllerRefManager.ClaimObject`).
//! - [`daemon`]: which nodes run a DaemonSet's pod, the daemon pod's
//!   automatic tolerations and per-node affinity, rolling updates.
//! - [`replicaset`]: how many pods to create or delete, which pods go
//!   first (`ActivePodsWithRanks`), and the ReplicaSet's status.
//! - [`deployment`]: rolling and recreate rollouts over ReplicaSets,
//!   proportional scaling, revisions, history cleanup, and the
//!   Progressing/Available conditions.
//! - [`template_hash`]: the pod-template hash that names ReplicaSets.
//! - [`history`]: ControllerRevisions, the recorded templates of
//!   DaemonSets and StatefulSets.
//! - [`statefulset`]: stable pod identities, ordered and parallel
//!   creation and deletion, partitioned rolling updates.
//!
//! Fields the API server defaults (`replicas`, update strategies,
//! `revisionHistoryLimit`, ...) are read with upstream's API defaults when
//! absent, so a function never panics on an object that skipped defaulting;
//! where upstream itself gives `nil` a meaning (`progressDeadlineSeconds`),
//! absence keeps that meaning.

pub mod backoff;
pub mod daemon;
pub mod deployment;
pub mod history;
pub mod ownership;
pub mod pod_control;
pub mod replicaset;
pub mod statefulset;
pub mod template_hash;

/// `apps.ControllerRevisionHashLabelKey`: the label that names the
/// ControllerRevision a DaemonSet or StatefulSet pod was made from.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";

/// Sorts by a Go-style `Less`, stably. Upstream's orders are `sort.Sort`
/// comparators that are not always total orders (the logarithmic buckets
/// of `ActivePodsWithRanks` can form a cycle with exact ties), which Rust's
/// `sort_by` may panic on; a merge sort only ever asks "is this one less",
/// so any answers give some order and never a panic.
pub(crate) fn sort_by_less<T>(items: Vec<T>, less: &impl Fn(&T, &T) -> bool) -> Vec<T> {
    if items.len() < 2 {
        return items;
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let (left, right) = (sort_by_less(left, less), sort_by_less(right, less));
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut right = right.into_iter().peekable();
    for l in left {
        while let Some(r) = right.next_if(|r| less(r, &l)) {
            out.push(r);
        }
        out.push(l);
    }
    out.extend(right);
    out
}
