//! A rollout step (upstream `rolling.go`, `recreate.go`, `progress.go`):
//! which ReplicaSet scales this sync, then the Deployment's status with
//! its Progressing condition, and a wake-up in time to notice a missed
//! progress deadline.
//!
//! RollingUpdate scales the new ReplicaSet up within `maxSurge`; if it
//! did not, scales old ones down within `maxUnavailable` (unavailable
//! pods first); if neither and the rollout is complete, cleans up old
//! revisions. Recreate scales every old ReplicaSet to 0, waits until no
//! old pod runs, then creates and scales up the new one.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use berth_core::object_key::ObjectKey;
use berth_core::workloads::deployment;
use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

use super::steps::{
    ReplicaSets, all_replica_sets_and_sync_revision, cleanup_deployment, refs, scale_all,
    scale_replica_set, update_status,
};
use super::{CONTROLLER_NAME, Context};
use crate::sync_error::SyncError;

/// `rolloutRolling`.
pub async fn rolling(
    ctx: &Context,
    key: &ObjectKey,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
) -> Result<(), SyncError> {
    let (new_rs, old) = all_replica_sets_and_sync_revision(ctx, d, rs_list, true).await?;
    let Some(new_rs) = new_rs else {
        return Err(SyncError::Other("no new ReplicaSet".into()));
    };
    let mut all = refs(&old);
    all.push(&new_rs);
    let up = deployment::reconcile_new_replica_set(&all, &new_rs, d)
        .map_err(|err| SyncError::Other(err.to_string()))?;
    if let Some(up) = up
        && scale_replica_set(ctx, &new_rs, up.replicas, d).await?
    {
        return sync_rollout_status(ctx, key, &all, Some(&new_rs), d).await;
    }
    let old_refs = refs(&old);
    let active_old = deployment::active(&old_refs);
    let downs = deployment::reconcile_old_replica_sets(&all, &active_old, &new_rs, d);
    if scale_all(ctx, downs, &old.iter().collect::<Vec<_>>(), d).await? {
        return sync_rollout_status(ctx, key, &all, Some(&new_rs), d).await;
    }
    let current = d.status.clone().unwrap_or_default();
    if deployment::deployment_complete(d, &current) {
        cleanup_deployment(ctx, &old, d).await?;
    }
    sync_rollout_status(ctx, key, &all, Some(&new_rs), d).await
}

/// `rolloutRecreate`.
pub async fn recreate(
    ctx: &Context,
    key: &ObjectKey,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
    pods: &HashMap<String, Vec<Arc<Pod>>>,
) -> Result<(), SyncError> {
    // The new ReplicaSet is not created before the old pods are gone.
    let (mut new_rs, mut old) = all_replica_sets_and_sync_revision(ctx, d, rs_list, false).await?;
    let old_refs = refs(&old);
    let mut all = old_refs.clone();
    all.extend(new_rs.as_deref());
    let downs = deployment::scale_down_old_replica_sets_for_recreate(&old_refs);
    if scale_all(ctx, downs, &old.iter().collect::<Vec<_>>(), d).await? {
        return sync_rollout_status(ctx, key, &all, new_rs.as_deref(), d).await;
    }
    let pods_by_rs: HashMap<String, Vec<&Pod>> = pods
        .iter()
        .map(|(uid, pods)| (uid.clone(), pods.iter().map(Arc::as_ref).collect()))
        .collect();
    if deployment::old_pods_running(new_rs.as_deref(), &old_refs, &pods_by_rs) {
        return sync_rollout_status(ctx, key, &all, new_rs.as_deref(), d).await;
    }
    if new_rs.is_none() {
        (new_rs, old) = all_replica_sets_and_sync_revision(ctx, d, rs_list, true).await?;
    }
    let old_refs = refs(&old);
    let mut all = old_refs.clone();
    all.extend(new_rs.as_deref());
    if let Some(rs) = &new_rs
        && let Some(up) = deployment::scale_up_new_replica_set_for_recreate(rs, d)
    {
        scale_replica_set(ctx, rs, up.replicas, d).await?;
    }
    let current = d.status.clone().unwrap_or_default();
    if deployment::deployment_complete(d, &current) {
        cleanup_deployment(ctx, &old, d).await?;
    }
    sync_rollout_status(ctx, key, &all, new_rs.as_deref(), d).await
}

/// `syncRolloutStatus`: the status with its Progressing condition
/// (berth-core's [`deployment::sync_rollout_status`]), written if it
/// changed; if not, the Deployment is looked at again when its progress
/// deadline would pass (`requeueStuckDeployment`).
async fn sync_rollout_status(
    ctx: &Context,
    key: &ObjectKey,
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    d: &mut Deployment,
) -> Result<(), SyncError> {
    let now = ctx.clock.now();
    let status = deployment::sync_rollout_status(all, new_rs, d, now);
    if d.status.clone().unwrap_or_default() == status {
        match deployment::requeue_stuck_after(d, &status, now) {
            Some(SignedDuration::ZERO) => ctx.queue.add_rate_limited(key.clone()),
            Some(after) => {
                let after = after.unsigned_abs() + Duration::from_secs(1);
                tracing::debug!(
                    controller = CONTROLLER_NAME,
                    deployment = %key,
                    after = ?after,
                    "Queueing up deployment for a progress check"
                );
                ctx.queue.add_after(key.clone(), after);
            }
            None => {}
        }
        return Ok(());
    }
    d.status = Some(status);
    update_status(ctx, d).await?;
    Ok(())
}
