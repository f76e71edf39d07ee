//! Cluster IPs as upstream's IPAddress allocator keeps them (1.33+): one
//! `networking.k8s.io/v1` IPAddress object per address in use, at
//! `/registry/ipaddresses/<ip>`, naming the Service that holds it. The
//! store's create-if-absent is the allocation, so two Services never get
//! one address, also through servers sharing an etcd, and an acknowledged
//! allocation survives a restart.

use std::collections::HashSet;
use std::net::IpAddr;

use berth_store::{AnyStore, ListOptions, Store, StoreError};
use serde_json::{Value, json};

use super::range::{ServiceCidr, first_free};
use super::{AllocError, Owner, random_u64};

/// Where the IPAddress objects live.
pub const IP_ADDRESS_PREFIX: &str = "/registry/ipaddresses/";

/// The cluster IPs of one `--service-cluster-ip-range`.
#[derive(Clone)]
pub struct ClusterIps {
    cidr: ServiceCidr,
    store: AnyStore,
}

fn key(ip: IpAddr) -> String {
    format!("{IP_ADDRESS_PREFIX}{ip}")
}

impl ClusterIps {
    pub fn new(cidr: ServiceCidr, store: AnyStore) -> ClusterIps {
        ClusterIps { cidr, store }
    }

    /// The range addresses come from.
    pub fn cidr(&self) -> ServiceCidr {
        self.cidr
    }

    fn not_in_range(&self) -> AllocError {
        AllocError::NotInRange {
            what: "IP",
            range: self.cidr.to_string(),
        }
    }

    /// Takes `ip` for `owner`: 422-worthy errors if it is outside the
    /// range or held already.
    pub async fn allocate(&self, ip: IpAddr, owner: &Owner, now: &str) -> Result<(), AllocError> {
        if self.cidr.index_of(ip).is_none() {
            return Err(self.not_in_range());
        }
        match self.create(ip, owner, now).await {
            Err(StoreError::AlreadyExists { .. }) => Err(AllocError::Allocated("IP")),
            other => Ok(other?),
        }
    }

    /// Takes a free address for `owner`, in upstream's order (see
    /// [`super::range`]); [`AllocError::Full`] when none is left.
    pub async fn allocate_next(&self, owner: &Owner, now: &str) -> Result<IpAddr, AllocError> {
        let listed = self
            .store
            .list(IP_ADDRESS_PREFIX, ListOptions::default())
            .await?;
        let mut taken: HashSet<u64> = listed
            .items
            .iter()
            .filter_map(|kv| kv.key.strip_prefix(IP_ADDRESS_PREFIX)?.parse().ok())
            .filter_map(|ip| self.cidr.index_of(ip))
            .collect();
        let start = random_u64();
        loop {
            let index = first_free(self.cidr.size(), self.cidr.static_band(), start, |i| {
                taken.contains(&i)
            })
            .ok_or(AllocError::Full)?;
            let ip = self.cidr.address(index);
            match self.create(ip, owner, now).await {
                Ok(()) => return Ok(ip),
                // Taken since the list (another server, or a request racing
                // this one): try the next.
                Err(StoreError::AlreadyExists { .. }) => {
                    taken.insert(index);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn create(&self, ip: IpAddr, owner: &Owner, now: &str) -> Result<(), StoreError> {
        let family = match ip {
            IpAddr::V4(_) => "IPv4",
            IpAddr::V6(_) => "IPv6",
        };
        let object = json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": ip.to_string(),
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": now,
                "labels": {
                    "ipaddress.kubernetes.io/ip-family": family,
                    "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
                },
            },
            "spec": {"parentRef": {
                "group": "", "resource": "services",
                "namespace": owner.namespace, "name": owner.name,
            }},
        });
        self.store
            .create(&key(ip), object.to_string().into_bytes())
            .await
            .map(|_| ())
    }

    /// Gives `ip` back, if `owner` holds it (an address another Service
    /// holds is left alone).
    pub async fn release(&self, ip: IpAddr, owner: &Owner) -> Result<(), StoreError> {
        let key = key(ip);
        let Some(kv) = self.store.get(&key).await? else {
            return Ok(());
        };
        let object: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
        let parent = object.pointer("/spec/parentRef");
        let held_by = |field: &str| {
            parent
                .and_then(|p| p.get(field))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        if parent.is_some()
            && (held_by("namespace"), held_by("name"))
                != (owner.namespace.clone(), owner.name.clone())
        {
            return Ok(());
        }
        match self.store.delete(&key, kv.mod_revision).await {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
