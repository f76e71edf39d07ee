//! API validation for node taints and pod tolerations, ported from
//! Kubernetes (`pkg/apis/core/validation` and apimachinery's
//! `util/validation`), with Kubernetes-style field errors.
//!
//! - [`field`]: `FieldError`, `ErrorType` (+ `reason()` for 422 causes),
//!   `Path`.
//! - [`names`]: qualified names, label values, DNS-1123 subdomains,
//!   canonical decimal integers, with upstream's messages.
//! - [`validate_node_taints`], [`validate_tolerations`],
//!   [`validate_toleration_update`], [`uses_comparison_operators`].
//! - [`validate_labels`], [`validate_annotations`],
//!   [`validate_label_selector`], [`validate_nonnegative`],
//!   [`validate_immutable`]: the metadata and selector checks every type
//!   shares (`meta.rs`).
//! - [`validate_owner_references`], [`validate_finalizers`],
//!   [`validate_no_new_finalizers`]: `ObjectMeta`'s rules for what the
//!   garbage collector reads (`object_meta.rs`).
//! - [`validate_pod`], [`validate_node`], [`validate_pod_template`]: the
//!   rules for whole objects, as the API server's admission and `berth
//!   check` apply them (`objects.rs`).
//! - the apps/v1 workloads' rules, `pkg/apis/apps/validation` (`apps.rs`):
//!   [`validate_deployment`] and its update and status update, and the
//!   same for ReplicaSets, DaemonSets, StatefulSets and ControllerRevisions.
//! - scheduling.k8s.io PriorityClasses (`scheduling.rs`):
//!   [`validate_priority_class`], [`validate_priority_class_update`].

//! - [`validate_config_map`], [`validate_secret`], [`validate_service`]
//!   (and their updates), [`validate_endpoints`],
//!   [`validate_endpoint_slice`]: the core types' rules but for metadata;
//!   [`ip`]: IP addresses and CIDRs; `ports.rs`: the port name, number and
//!   protocol rule Services and Endpoints share.

mod apps;
mod config;
mod endpoints;
pub mod field;
pub mod ip;
mod meta;
pub mod names;
mod object_meta;
mod objects;
mod policy;
mod ports;
mod resources;
mod scheduling;
pub mod service;
mod taints;
mod tolerations;

pub use apps::*;
pub use config::{
    MAX_SECRET_SIZE, SERVICE_ACCOUNT_NAME_KEY, secret_type, validate_config_map,
    validate_config_map_update, validate_secret, validate_secret_update,
};
pub use endpoints::{validate_endpoint_slice, validate_endpoints};
pub use field::{ErrorList, ErrorType, FieldError, Path};
pub use meta::{
    FIELD_IMMUTABLE, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES, validate_annotations, validate_immutable,
    validate_label_selector, validate_labels, validate_nonnegative,
};
pub use object_meta::{validate_finalizers, validate_no_new_finalizers, validate_owner_references};
pub use objects::{validate_node, validate_pod, validate_pod_template};
pub use policy::{
    validate_pod_disruption_budget, validate_pod_disruption_budget_spec,
    validate_pod_disruption_budget_status,
};
pub use resources::validate_resource_quantities;
pub use scheduling::{
    validate_preemption_policy, validate_priority_class, validate_priority_class_update,
};
pub use service::{validate_service, validate_service_update};
pub use taints::validate_node_taints;
pub use tolerations::{
    TolerationOptions, uses_comparison_operators, validate_toleration_update, validate_tolerations,
};
