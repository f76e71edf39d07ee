//! berth-core: the pure heart of berth.
//!
//! Kubernetes types come from `k8s-openapi` (re-exported as [`k8s`]); this
//! crate adds what berth decides with them, with no I/O and no async:
//!
//! - [`toleration`]: whether tolerations tolerate taints, and how long a
//!   running pod may stay under NoExecute taints (upstream's exact rules).
//! - [`feature_gates`]: `--feature-gates`, e.g. `TaintTolerationComparisonOperators`.
//! - [`clock`]: the one source of time for every timer in berth, real or
//!   virtual (a paused tokio clock in tests).

pub use k8s_openapi as k8s;

pub mod clock;
pub mod feature_gates;
pub mod manifest;
pub mod toleration;

pub use feature_gates::FeatureGates;
