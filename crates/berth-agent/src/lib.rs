//! berth-agent: the node agent (a kubelet-lite) and simulated nodes.
//!
//! A real agent joins a berth cluster with the join token, registers its
//! Node with the host's capacity, renews its Lease, reports the host's
//! conditions, admits and runs the pods bound to it through a
//! [`berth_runtime::Runtime`], and shuts down gracefully. The simulated
//! nodes of [`sim`] run the same decisions for thousands of nodes in one
//! process.
//!
//! The decisions are plain functions over plain data, tested without a
//! server: [`config`] (the `KubeletConfiguration` subset), [`host`] (what
//! the host says), [`eviction_thresholds`] (the pressures it shows),
//! [`conditions`] (upstream's node conditions),
//! [`admission`] (upstream's pod admission), [`shutdown`] (priority
//! phases).

pub mod admission;
pub mod conditions;
pub mod config;
pub mod eviction_thresholds;
pub mod host;
pub mod shutdown;

pub mod agent;
pub mod credential;
pub mod heartbeat;
pub mod metrics;
pub mod node_client;
pub mod pod_event;
pub mod pod_lanes;
mod pod_table;
pub mod pods;
pub mod rate_limit;
pub mod registration;
pub mod sim;
pub mod status;
pub mod tls_bootstrap;
pub mod usage;
