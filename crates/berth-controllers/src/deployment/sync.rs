//! One Deployment's sync (upstream `syncDeployment`): in upstream's
//! order, the empty selector refused, its ReplicaSets claimed, only the
//! status while it is being deleted, the Progressing condition of a pause
//! or resume, proportional scaling while paused or resized, else a
//! rollout step ([`super::rollout`]). The steps are [`super::steps`]; a
//! failed write ends the sync.

use std::sync::Arc;

use berth_core::object_key::ObjectKey;
use berth_core::workloads::deployment::{self, STRATEGY_RECREATE, STRATEGY_ROLLING_UPDATE};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};

use super::steps::{
    REASON_SELECTING_ALL, ReplicaSets, all_replica_sets_and_sync_revision, cleanup_deployment,
    pod_map, record, refs, replica_sets_for_deployment, scale_all, update_status,
};
use super::{CONTROLLER_NAME, Context, rollout};
use crate::events::TYPE_WARNING;
use crate::shared::read;
use crate::sync_error::SyncError;

/// Syncs the Deployment `key` (see the module documentation).
pub async fn sync_deployment(ctx: &Context, key: &ObjectKey) -> Result<(), SyncError> {
    let Some(cached) = read(&ctx.deployments).get(key) else {
        tracing::debug!(controller = CONTROLLER_NAME, deployment = %key, "Deployment has been deleted");
        return Ok(());
    };
    let mut d = Deployment::clone(&cached);
    sync(ctx, key, &mut d).await
}

async fn sync(ctx: &Context, key: &ObjectKey, d: &mut Deployment) -> Result<(), SyncError> {
    if deployment::selects_everything(d) {
        record(
            ctx,
            d,
            TYPE_WARNING,
            REASON_SELECTING_ALL,
            "This deployment is selecting all pods. A non-empty selector is required.".into(),
        );
        let status = d.status.get_or_insert_with(DeploymentStatus::default);
        if status.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
            status.observed_generation = d.metadata.generation;
            // As upstream: the event says it all, the write is best effort.
            let _ = update_status(ctx, d).await;
        }
        return Ok(());
    }
    let mut rs_list = replica_sets_for_deployment(ctx, d).await?;
    if d.metadata.deletion_timestamp.is_some() {
        return sync_status_only(ctx, d, &mut rs_list).await;
    }
    if let Some(condition) = deployment::paused_condition(d, ctx.clock.now()) {
        deployment::set_condition(
            d.status.get_or_insert_with(DeploymentStatus::default),
            condition,
        );
        update_status(ctx, d).await?;
    }
    if d.spec.paused == Some(true) || is_scaling_event(ctx, d, &mut rs_list).await? {
        return scale_and_sync_status(ctx, d, &mut rs_list).await;
    }
    match deployment::strategy_type(d) {
        STRATEGY_RECREATE => {
            // Only Recreate looks at pods (upstream maps them every sync).
            let pods = pod_map(&read(&ctx.pods), d, &rs_list);
            rollout::recreate(ctx, key, d, &mut rs_list, &pods).await
        }
        STRATEGY_ROLLING_UPDATE => rollout::rolling(ctx, key, d, &mut rs_list).await,
        other => Err(SyncError::Other(format!(
            "unexpected deployment strategy type: {other}"
        ))),
    }
}

/// `isScalingEvent`: an active ReplicaSet records another size than the
/// Deployment's (the new ReplicaSet's annotations synced first).
async fn is_scaling_event(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
) -> Result<bool, SyncError> {
    let (new_rs, old) = all_replica_sets_and_sync_revision(ctx, d, rs_list, false).await?;
    let mut all = refs(&old);
    all.extend(new_rs.as_deref());
    Ok(deployment::is_scaling_event(d, &all))
}

/// `sync`: a paused or resized Deployment's ReplicaSets scaled in
/// proportion ([`deployment::scale`]), a paused one's history cleaned up,
/// then its status.
async fn scale_and_sync_status(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
) -> Result<(), SyncError> {
    let (new_rs, old) = all_replica_sets_and_sync_revision(ctx, d, rs_list, false).await?;
    let scales = deployment::scale(d, new_rs.as_deref(), &refs(&old));
    let among: Vec<&Arc<ReplicaSet>> = old.iter().chain(new_rs.iter()).collect();
    scale_all(ctx, scales, &among, d).await?;
    if d.spec.paused == Some(true) {
        cleanup_deployment(ctx, &old, d).await?;
    }
    let mut all = old;
    all.extend(new_rs.clone());
    sync_deployment_status(ctx, &all, new_rs.as_deref(), d).await
}

/// `syncStatusOnly`: a Deployment being deleted gets its status, nothing
/// else.
async fn sync_status_only(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
) -> Result<(), SyncError> {
    let (new_rs, old) = all_replica_sets_and_sync_revision(ctx, d, rs_list, false).await?;
    let mut all = old;
    all.extend(new_rs.clone());
    sync_deployment_status(ctx, &all, new_rs.as_deref(), d).await
}

/// `syncDeploymentStatus`: [`deployment::calculate_status`], written if
/// it differs.
async fn sync_deployment_status(
    ctx: &Context,
    all: &[Arc<ReplicaSet>],
    new_rs: Option<&ReplicaSet>,
    d: &mut Deployment,
) -> Result<(), SyncError> {
    let status = deployment::calculate_status(&refs(all), new_rs, d, ctx.clock.now());
    if d.status.clone().unwrap_or_default() == status {
        return Ok(());
    }
    d.status = Some(status);
    update_status(ctx, d).await?;
    Ok(())
}
