//! berth-core: the pure heart of berth.
//!
//! Kubernetes types come from `k8s-openapi` (re-exported as [`k8s`]); this
//! crate adds what berth decides with them, with no I/O and no async:
//!
//! - [`toleration`]: whether tolerations tolerate taints (upstream's exact
//!   rules).
//! - [`eviction`]: when a running pod must leave its node under NoExecute
//!   taints (SPEC §4), the one rule the controller, the simulator and
//!   `berth check` call.
//! - [`taint_spec`]: the `kubectl taint` / `--register-with-taints` syntax.
//! - [`taint_impact`]: what a write to a node's taints or cordon will do
//!   (the warnings before a taint), by the eviction and scheduling rules.
//! - [`taint_expiry`]: taints that expire (the `berth.dev/taint-expiry`
//!   node annotation).
//! - [`validation`]: Kubernetes field errors and the API rules for taints
//!   and tolerations.
//! - [`quantity`]: resource quantities parsed and compared as upstream does.
//! - [`resources`]: resource names and what a pod requests (`PodRequests`).
//! - [`node_affinity`]: node-selector matching (a pod's `nodeSelector` and
//!   node affinity against a node), as component-helpers does it.
//! - [`labels`]: apimachinery's label requirements and selectors (the
//!   `labelSelector=` syntax, node-selector requirements, matching).
//! - [`feature_gates`]: `--feature-gates`, e.g. `TaintTolerationComparisonOperators`.
//! - [`manifest`]: YAML/JSON manifests as `kubectl apply -f` reads them.
//! - [`object_key`], [`pod`], [`node`]: an object's namespace/name key; a
//!   pod's bound node and terminal phase, a node's taints and cordon, as
//!   every client reads them.
//! - [`service`]: a Service's defaults, its cluster-IP fields kept in
//!   step across updates, its IP families, what it holds of the address
//!   and node-port ranges.
//! - [`priority`]: the system PriorityClasses, the values user classes may
//!   take, a pod's priority and whether it may preempt.
//! - [`disruption`]: PodDisruptionBudgets: the disruption controller's
//!   arithmetic, the Eviction API's decisions and preemption's count of
//!   budget violations.
//! - [`node_status`]: the kubelet's rules for the node conditions it
//!   reports, decided against the Node on the server.
//! - [`int_or_string`]: `maxSurge`/`maxUnavailable`-style integers or
//!   percentages, resolved as apimachinery's `intstr` does.
//! - [`well_known_taints`]: the taint keys Kubernetes puts on nodes.
//! - [`workloads`]: the decisions of the DaemonSet, ReplicaSet, Deployment
//!   and StatefulSet controllers, as pure functions.
//! - [`zone`]: zones' disruption states and their tainting rates
//!   (`ComputeZoneState`), for the node lifecycle controller and the live
//!   page.
//! - [`splitmix`]: the seeded random source runs that must repeat use.
//! - [`clock`]: the one source of time for every timer in berth, real or
//!   virtual (a paused tokio clock in tests).
//! - `test_util` (tests and the `test-util` feature only): the pod, node,
//!   container, taint and toleration builders shared by the workspace's
//!   tests.

pub use k8s_openapi as k8s;

pub mod clock;
pub mod deletion;
pub mod disruption;
pub mod duration;
pub mod eviction;
pub mod feature_gates;
#[cfg(any(test, feature = "test-util"))]
pub mod fuzz;
pub mod int_or_string;
pub mod labels;
pub mod manifest;
pub mod node;
pub mod node_affinity;
pub mod node_stats;
pub mod node_status;
pub mod object_key;
pub mod pod;
pub mod priority;
pub mod quantity;
pub mod resources;
pub mod service;
pub mod splitmix;
pub mod taint_expiry;
pub mod taint_impact;
pub mod taint_spec;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
pub mod toleration;
pub mod validation;
pub mod well_known_taints;
pub mod workloads;
pub mod zone;

pub use feature_gates::FeatureGates;
