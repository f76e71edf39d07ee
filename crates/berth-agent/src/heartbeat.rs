//! The node Lease, renewed as upstream's node lease controller
//! (`k8s.io/component-helpers/apimachinery/lease`) renews it: every
//! quarter of `leaseDurationSeconds` (10 s of 40) with up to 4% jitter;
//! the last Lease the server returned is updated in place (no read before
//! each write); when there is none, or an update conflicts, it is read or
//! created again; a failure is retried after 200 ms, doubling up to 7 s.

use std::time::Duration;

use berth_core::clock::Clock;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use tokio_util::sync::CancellationToken;

use crate::node_client::{ClientError, NODE_LEASE_NAMESPACE, NodeClient};

/// Upstream's backoff after a failed renewal: 200 ms doubling, capped at 7 s.
pub const BACKOFF_START: Duration = Duration::from_millis(200);
pub const BACKOFF_CAP: Duration = Duration::from_secs(7);
/// `JitterUntil`'s factor for the renew interval.
pub const RENEW_JITTER: f64 = 0.04;

/// The wait before retry number `failures` (1 for the first failure).
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    BACKOFF_START
        .saturating_mul(1u32 << doublings)
        .min(BACKOFF_CAP)
}

/// The renew interval stretched by `fraction` (0..1) of the jitter.
pub fn jittered(interval: Duration, fraction: f64) -> Duration {
    interval.mul_f64(1.0 + RENEW_JITTER * fraction.clamp(0.0, 1.0))
}

/// A random fraction in `[0, 1)` for jitter (not for secrets).
pub fn random_fraction() -> f64 {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.5;
    }
    f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0)
}

/// The Lease of `node` renewed at `now`: `base` (the last one the server
/// returned, keeping its resourceVersion) or a new one, held by the node,
/// owned by its Node object when its UID is known.
pub fn renewed_lease(
    base: Option<&Lease>,
    node: &str,
    node_uid: Option<&str>,
    duration_seconds: i32,
    now: Timestamp,
) -> Lease {
    let mut lease = base.cloned().unwrap_or_else(|| {
        let mut lease = Lease::default();
        lease.metadata.name = Some(node.to_string());
        lease.metadata.namespace = Some(NODE_LEASE_NAMESPACE.to_string());
        lease
    });
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(node.to_string());
    spec.lease_duration_seconds = Some(duration_seconds);
    spec.renew_time = Some(MicroTime(now));
    if let Some(uid) = node_uid
        && lease
            .metadata
            .owner_references
            .as_deref()
            .is_none_or(|o| o.is_empty())
    {
        lease.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node.to_string(),
            uid: uid.to_string(),
            ..Default::default()
        }]);
    }
    lease
}

/// What a renewal needs of the stored Lease (name, resourceVersion, owner,
/// spec): thousands of simulated nodes keep one each.
fn compact(lease: Lease) -> Lease {
    let mut kept = Lease::default();
    kept.metadata.name = lease.metadata.name;
    kept.metadata.namespace = lease.metadata.namespace;
    kept.metadata.resource_version = lease.metadata.resource_version;
    kept.metadata.owner_references = lease.metadata.owner_references;
    kept.spec = lease.spec;
    kept
}

/// One node's Lease and how to renew it.
#[derive(Debug)]
pub struct LeaseRenewer {
    pub node: String,
    pub node_uid: Option<String>,
    pub duration_seconds: i32,
    /// The Lease the server last returned.
    pub latest: Option<Lease>,
}

impl LeaseRenewer {
    pub fn new(node: &str, node_uid: Option<String>, duration_seconds: i32) -> Self {
        LeaseRenewer {
            node: node.to_string(),
            node_uid,
            duration_seconds,
            latest: None,
        }
    }

    /// Renews once: update the cached Lease; without one (or after a
    /// conflict), read it, and create it when it does not exist.
    pub async fn renew(&mut self, client: &NodeClient, now: Timestamp) -> Result<(), ClientError> {
        if self.latest.is_some() {
            let lease = self.lease_at(now);
            match client.update_lease(&lease).await {
                Ok(updated) => {
                    self.latest = Some(compact(updated));
                    return Ok(());
                }
                Err(e) => {
                    self.latest = None;
                    if !e.is_conflict() && !e.is_not_found() {
                        return Err(e);
                    }
                }
            }
        }
        match client.get_lease().await {
            Ok(existing) => {
                self.latest = Some(existing);
                let lease = self.lease_at(now);
                let updated = client.update_lease(&lease).await;
                self.latest = updated.as_ref().ok().cloned().map(compact);
                updated.map(|_| ())
            }
            Err(e) if e.is_not_found() => {
                let lease = renewed_lease(
                    None,
                    &self.node,
                    self.node_uid.as_deref(),
                    self.duration_seconds,
                    now,
                );
                let created = client.create_lease(&lease).await?;
                self.latest = Some(compact(created));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn lease_at(&self, now: Timestamp) -> Lease {
        renewed_lease(
            self.latest.as_ref(),
            &self.node,
            self.node_uid.as_deref(),
            self.duration_seconds,
            now,
        )
    }
}

/// Renews the Lease every `interval` (jittered) until `stop`; failures are
/// retried with [`backoff`].
pub async fn run(
    mut renewer: LeaseRenewer,
    client: NodeClient,
    clock: Clock,
    interval: Duration,
    stop: CancellationToken,
) {
    let mut failures = 0u32;
    loop {
        let wait = match renewer.renew(&client, clock.now()).await {
            Ok(()) => {
                failures = 0;
                jittered(interval, random_fraction())
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                tracing::warn!(node = %renewer.node, error = %e, failures, "renewing the node lease failed");
                backoff(failures)
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = clock.sleep(wait) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_from_200ms_doubling_to_7s() {
        let got: Vec<u64> = (1..=8).map(|n| backoff(n).as_millis() as u64).collect();
        assert_eq!(got, vec![200, 400, 800, 1600, 3200, 6400, 7000, 7000]);
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
    }

    #[test]
    fn jitter_stretches_the_interval_by_at_most_four_percent() {
        let ten = Duration::from_secs(10);
        assert_eq!(jittered(ten, 0.0), ten);
        assert_eq!(jittered(ten, 1.0), Duration::from_millis(10_400));
        assert_eq!(jittered(ten, 7.0), Duration::from_millis(10_400));
        let f = random_fraction();
        assert!((0.0..1.0).contains(&f));
    }

    #[test]
    fn a_renewed_lease_is_held_by_the_node_and_owned_by_its_node_object() {
        let now: Timestamp = "2026-01-01T00:00:10Z".parse().expect("time");
        let lease = renewed_lease(None, "n1", Some("uid-1"), 40, now);
        assert_eq!(lease.metadata.namespace.as_deref(), Some("kube-node-lease"));
        let spec = lease.spec.clone().expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(MicroTime(now)));
        let owner = &lease.metadata.owner_references.clone().expect("owner")[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Node", "uid-1"));

        let mut stored = lease;
        stored.metadata.resource_version = Some("42".into());
        let later: Timestamp = "2026-01-01T00:00:20Z".parse().expect("time");
        let renewed = renewed_lease(Some(&stored), "n1", Some("uid-1"), 40, later);
        assert_eq!(renewed.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(
            renewed.spec.and_then(|s| s.renew_time),
            Some(MicroTime(later))
        );
    }
}
