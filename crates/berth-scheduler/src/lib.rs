//! berth-scheduler: the kube-scheduler framework shape and the first
//! filter/score plugins, ported from upstream with their unit-test tables.
//!
//! What this crate owns today:
//!
//! - [`framework`]: statuses and their codes, `NodeInfo` / `PodInfo`,
//!   `CycleState`, the extension-point traits (PreFilter, Filter, PreScore,
//!   Score with NormalizeScore), upstream's `DefaultNormalizeScore`, and the
//!   `FitError` message ("0/3 nodes are available: ...").
//! - [`plugins`]: NodeName, NodeUnschedulable, TaintToleration and
//!   NodeAffinity, each a Filter (and, where upstream has one, a Score).
//! - [`nodeaffinity`] and [`labels`]: the node-selector matching of
//!   component-helpers and the label-requirement semantics and validation of
//!   apimachinery that NodeAffinity is built on.
//!
//! Everything here is plain functions over plain data: tests call the
//! plugins directly, without a server. The scheduling queue, the cluster
//! snapshot that fills `NodeInfo`, the binder and the API client come later.

pub mod framework;
pub mod labels;
pub mod nodeaffinity;
pub mod plugins;
