//! What Services hold outside their objects: cluster IPs and node ports,
//! allocated from `--service-cluster-ip-range` and
//! `--service-node-port-range` ([`range`]) and kept in the store as
//! upstream keeps them ([`cluster_ips`]: IPAddress objects; [`node_ports`]:
//! the `servicenodeports` RangeAllocation), so an allocation is unique and
//! durable before the Service that holds it is written.
//!
//! A strategy takes what a new or changed object needs
//! ([`crate::strategy::Strategy::allocate`]) and says what a stored object
//! holds ([`crate::strategy::Strategy::held`]); the verbs give back what a
//! failed write took and what a deleted or changed object no longer holds
//! ([`Allocators::release`]). An allocation whose Service write never
//! happened (the server killed in between) stays taken: a leak, never a
//! duplicate.

pub mod cluster_ips;
pub mod node_ports;
pub mod range;

use std::collections::BTreeSet;
use std::net::IpAddr;

use berth_store::{AnyStore, StoreError};

use cluster_ips::ClusterIps;
use node_ports::NodePorts;
use range::{PortRange, ServiceCidr};

/// Why an address or port could not be had, in upstream's words.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    #[error("range is full")]
    Full,
    #[error("provided {0} is already allocated")]
    Allocated(&'static str),
    #[error("provided {what} is not in the valid range. The range of valid {what}s is {range}")]
    NotInRange { what: &'static str, range: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The object that holds an allocation (a Service: its namespace and name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Owner {
    pub namespace: String,
    pub name: String,
}

/// Addresses and ports an object holds, or took for a write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claims {
    pub owner: Owner,
    pub cluster_ips: BTreeSet<IpAddr>,
    pub node_ports: BTreeSet<i32>,
}

impl Claims {
    /// Nothing, held by `owner`.
    pub fn none(owner: Owner) -> Claims {
        Claims {
            owner,
            ..Claims::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.cluster_ips.is_empty() && self.node_ports.is_empty()
    }

    /// What `self` holds that `other` does not.
    pub fn without(&self, other: &Claims) -> Claims {
        Claims {
            owner: self.owner.clone(),
            cluster_ips: self
                .cluster_ips
                .difference(&other.cluster_ips)
                .copied()
                .collect(),
            node_ports: self
                .node_ports
                .difference(&other.node_ports)
                .copied()
                .collect(),
        }
    }

    /// Adds what `other` holds.
    pub fn extend(&mut self, other: Claims) {
        self.cluster_ips.extend(other.cluster_ips);
        self.node_ports.extend(other.node_ports);
    }
}

/// The cluster's allocators, over its store.
#[derive(Clone)]
pub struct Allocators {
    pub cluster_ips: ClusterIps,
    pub node_ports: NodePorts,
}

impl Allocators {
    pub fn new(store: AnyStore, cidr: ServiceCidr, ports: PortRange) -> Allocators {
        Allocators {
            cluster_ips: ClusterIps::new(cidr, store.clone()),
            node_ports: NodePorts::new(ports, store),
        }
    }

    /// Gives back what `claims` holds. A failure is logged: the address or
    /// port stays taken (a leak, never a duplicate).
    pub async fn release(&self, claims: &Claims, now: &str) {
        for ip in &claims.cluster_ips {
            if let Err(error) = self.cluster_ips.release(*ip, &claims.owner).await {
                tracing::warn!(%ip, service = %claims.owner.name, %error, "cluster IP not released");
            }
        }
        if claims.node_ports.is_empty() {
            return;
        }
        let released = self
            .node_ports
            .update(
                |ports| {
                    for port in &claims.node_ports {
                        ports.release(*port);
                    }
                    Ok::<(), AllocError>(())
                },
                now,
            )
            .await;
        if let Err(error) = released {
            tracing::warn!(ports = ?claims.node_ports, service = %claims.owner.name, %error, "node ports not released");
        }
    }
}

/// A random start for a scan of free addresses or ports.
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // Without the OS's randomness every scan starts at the same place:
    // slower when busy, never wrong.
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}
