//! berth-apiserver: the Kubernetes API that kubectl and client libraries
//! talk to, served over `berth-store`.
//!
//! Pure building blocks, each tested without a server:
//! - [`admission`]: mutating and validating admission plugins (taints by
//!   condition, default toleration seconds, extended resources, DaemonSet
//!   tolerations, `timeAdded`, validation, NodeRestriction);
//! - [`patch`]: JSON, merge, strategic merge and apply patches;
//! - [`selectors`]: label and field selectors;
//! - [`status`]: errors as Kubernetes `Status` objects;
//! - [`request_info`], [`resources`], [`objects`], [`strategy`]: what a
//!   request asks for, the served types, object metadata, per-type rules;
//! - [`allocators`]: Services' cluster IPs and node ports, their ranges.
//!
//! And the server: [`cache`] (the watch cache), [`registry`] (the store and
//! the watch caches kept consistent), [`cluster_identity`], [`watch_limits`],
//! [`api`] (REST verbs), [`health`] (`/livez`, `/readyz`),
//! [`discovery`], [`openapi`], [`auth`], [`metrics`], [`bootstrap`]
//! (certificates, tokens, kubeconfig), [`cluster_credentials`] (the same,
//! shared by the servers of one etcd), [`connections`] (connection
//! timeouts) and [`server`] (HTTPS, graceful shutdown).

pub mod admission;
pub mod allocators;
pub mod api;
pub mod auth;
pub mod body;
pub mod bootstrap;
pub mod cache;
pub mod cluster_credentials;
pub mod cluster_identity;
pub mod connections;
pub mod conversion;
pub mod deletion;
pub mod discovery;
pub mod field_validation;
pub mod flow_control;
pub mod health;
pub mod in_process;
mod json_path;
pub mod kubelets;
pub mod list_options;
pub mod metrics;
pub mod objects;
pub mod openapi;
pub mod patch;
pub mod pod_logs;
pub mod protobuf;
pub mod registry;
pub mod request_info;
pub mod resource_metrics;
pub mod resources;
pub mod selectors;
pub mod server;
pub mod status;
pub mod strategy;
pub mod table;
pub mod table_output;
pub mod ui_login;
pub mod warnings;
pub mod watch_limits;
