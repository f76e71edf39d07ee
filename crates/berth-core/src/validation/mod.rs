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
//! - [`validate_pod`], [`validate_node`]: the rules for whole objects, as
//!   the API server's admission and `berth check` apply them.
//! - [`validate_config_map`], [`validate_secret`], [`validate_service`]
//!   (and their updates): the core types' rules but for metadata;
//!   [`validate_labels`]; [`ip`]: IP addresses and CIDRs.

mod config;
mod endpoints;
pub mod field;
pub mod ip;
mod meta;
pub mod names;
mod objects;
mod ports;
mod resources;
pub mod service;
mod taints;
mod tolerations;

pub use config::{
    MAX_SECRET_SIZE, SERVICE_ACCOUNT_NAME_KEY, secret_type, validate_config_map,
    validate_config_map_update, validate_secret, validate_secret_update,
};
pub use endpoints::{validate_endpoint_slice, validate_endpoints};
pub use field::{ErrorList, ErrorType, FieldError, Path};
pub use meta::validate_labels;
pub use objects::{validate_node, validate_pod};
pub use resources::validate_resource_quantities;
pub use service::{validate_service, validate_service_update};
pub use taints::validate_node_taints;
pub use tolerations::{
    TolerationOptions, uses_comparison_operators, validate_toleration_update, validate_tolerations,
};
