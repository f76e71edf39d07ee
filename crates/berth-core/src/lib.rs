//! berth-core: the pure heart of berth.
//!
//! Kubernetes types come from `k8s-openapi` (re-exported as [`k8s`]); this
//! crate adds what berth decides with them, with no I/O and no async:
//!
//! - [`toleration`]: whether tolerations tolerate taints, and how long a
//!   running pod may stay under NoExecute taints (upstream's exact rules).
//! - [`taint_spec`]: the `kubectl taint` / `--register-with-taints` syntax.
//! - [`validation`]: Kubernetes field errors and the API rules for taints
//!   and tolerations.
//! - [`quantity`]: resource quantities parsed and compared as upstream does.
//! - [`feature_gates`]: `--feature-gates`, e.g. `TaintTolerationComparisonOperators`.
//! - [`manifest`]: YAML/JSON manifests as `kubectl apply -f` reads them.
//! - [`clock`]: the one source of time for every timer in berth, real or
//!   virtual (a paused tokio clock in tests).
//! - `test_util` (tests and the `test-util` feature only): taint and
//!   toleration builders shared by the workspace's tests.

pub use k8s_openapi as k8s;

pub mod clock;
pub mod duration;
pub mod feature_gates;
#[cfg(any(test, feature = "test-util"))]
pub mod fuzz;
pub mod manifest;
pub mod quantity;
pub mod taint_spec;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
pub mod toleration;
pub mod validation;

pub use feature_gates::FeatureGates;
