//! One ReplicaSet's sync (upstream `syncReplicaSet`, `manageReplicas`,
//! `updateReplicaSetStatus`), its decisions berth-core's
//! [`replicaset`](berth_core::workloads::replicaset) functions.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use berth_core::labels::LabelSelector;
use berth_core::object_key::ObjectKey;
use berth_core::pod;
use berth_core::workloads::ownership::{controller_of, new_controller_ref};
use berth_core::workloads::pod_control::{SLOW_START_INITIAL_BATCH_SIZE, SlowStartBatches};
use berth_core::workloads::replicaset::{
    self, ManageFailure, ReplicaChange, deletion_age_ratios, pods_to_delete, replica_change,
    status_needs_update,
};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;

use super::counted::CountedPods;
use super::{CONTROLLER_NAME, Context};
use crate::controller_refs::{ClaimSession, claim_known_objects};
use crate::events::{error_message, object_ref};
use crate::shared::{lock, read};
use crate::sync_error::SyncError;
use crate::sync_error::is_status;
use crate::workload::writes::KubeWrites;

/// Syncs the ReplicaSet `key`: claims its pods, creates or deletes pods
/// if its expectations are met and it is not being deleted, writes its
/// status, and looks again after `minReadySeconds` (and a second) while
/// pods are ready but not yet available. A failed create or delete fails the sync after
/// the status (with its `ReplicaFailure` condition) is written.
pub async fn sync_replica_set(ctx: &Context, key: &ObjectKey) -> Result<(), SyncError> {
    let expectations_key = key.to_string();
    let Some(rs) = read(&ctx.replica_sets).get(key) else {
        tracing::debug!(controller = CONTROLLER_NAME, replicaset = %key, "deleted");
        lock(&ctx.expectations).delete(&expectations_key);
        lock(&ctx.counted).remove(key);
        return Ok(());
    };
    let needs_sync = lock(&ctx.expectations).satisfied(&expectations_key, ctx.clock.now());
    let selector = match LabelSelector::from_label_selector(&rs.spec.selector) {
        Ok(selector) => selector,
        Err(err) => {
            tracing::error!(controller = CONTROLLER_NAME, replicaset = %key, %err, "invalid selector");
            return Ok(());
        }
    };
    let mut counted = CountedPods::for_replica_set(lock(&ctx.counted).remove(key), &rs);
    let candidates: Vec<Arc<Pod>> = {
        let uid = rs.metadata.uid.as_deref().unwrap_or_default();
        read(&ctx.pods)
            .claimable(&key.namespace, uid, |p| counted.is_owned(p))
            .filter(|p| counted.is_owned(p) || pod::is_active(p))
            .cloned()
            .collect()
    };
    let writes = KubeWrites::new(ctx.client.clone(), ctx.recorder.clone());
    let pods = claim_known_objects(
        &writes,
        &mut ClaimSession::default(),
        rs.as_ref(),
        candidates,
        |pod: &Pod| selector.matches(pod.metadata.labels.as_ref()),
        |pod| counted.is_owned(pod),
    )
    .await?;
    let managed = if needs_sync && rs.metadata.deletion_timestamp.is_none() {
        manage_replicas(ctx, &rs, &pods).await
    } else {
        Ok(())
    };
    let failure = managed.as_ref().err().map(|err| ManageFailure {
        message: err.to_string(),
    });
    let now = ctx.clock.now();
    let min_ready = rs.spec.min_ready_seconds.unwrap_or(0);
    let counts = counted.count(&pods, min_ready, now);
    lock(&ctx.counted).insert(key.clone(), counted);
    let status = replicaset::status_of_counts(&rs, counts, failure.as_ref(), now);
    let status = update_status(ctx, &rs, status).await?;
    let replicas = replicaset::replicas(&rs);
    if managed.is_ok()
        && min_ready > 0
        && status.ready_replicas.unwrap_or(0) == replicas
        && status.available_replicas.unwrap_or(0) != replicas
    {
        // A second more than upstream's resync here, as its pod handler
        // does: availability is strictly after `minReadySeconds`, so a sync
        // at exactly that instant (virtual time has no milliseconds of
        // skew) would find nothing available and wait a whole period more.
        let after = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
        ctx.queue.add_after(key.clone(), after);
    }
    managed
}

/// `manageReplicas`: creates (slow start) or deletes (in rank order) what
/// separates `pods` from `spec.replicas`, at most 500 per sync, under
/// expectations. The first failure is returned after the rest of its
/// batch has run.
async fn manage_replicas(
    ctx: &Context,
    rs: &Arc<ReplicaSet>,
    pods: &[Arc<Pod>],
) -> Result<(), SyncError> {
    let key = ObjectKey::of_meta(&rs.metadata);
    let expectations_key = key.to_string();
    let owner = object_ref("apps/v1", "ReplicaSet", &rs.metadata);
    match replica_change(pods.len(), rs) {
        ReplicaChange::None => Ok(()),
        ReplicaChange::Create(diff) => {
            lock(&ctx.expectations).expect_creations(&expectations_key, diff, ctx.clock.now());
            tracing::info!(
                controller = CONTROLLER_NAME,
                replicaset = %key,
                need = replicaset::replicas(rs),
                creating = diff,
                "Too few replicas"
            );
            let template = rs.spec.template.clone().unwrap_or_default();
            let controller_ref = new_controller_ref(&rs.metadata, "apps/v1", "ReplicaSet");
            let mut successes = 0;
            let mut first_error = None;
            for batch in SlowStartBatches::new(diff, SLOW_START_INITIAL_BATCH_SIZE) {
                let results = futures::future::join_all((0..batch).map(|_| {
                    ctx.pod_control.create(
                        &key.namespace,
                        &template,
                        &owner,
                        controller_ref.clone(),
                    )
                }))
                .await;
                for result in results {
                    match result {
                        Ok(_) => successes += 1,
                        // Every create would fail: nothing to retry.
                        Err(err) if err.namespace_terminating() => successes += 1,
                        Err(err) => {
                            first_error.get_or_insert(err);
                        }
                    }
                }
                if first_error.is_some() {
                    break;
                }
            }
            let skipped = diff - successes;
            if skipped > 0 {
                tracing::info!(
                    controller = CONTROLLER_NAME,
                    replicaset = %key,
                    skipped,
                    "Slow-start failure. Skipping creation of pods, decrementing expectations"
                );
                lock(&ctx.expectations).lower(&expectations_key, skipped, 0);
            }
            match first_error {
                Some(err) => Err(SyncError::Other(err.to_string())),
                None => Ok(()),
            }
        }
        ReplicaChange::Delete(diff) => {
            tracing::info!(
                controller = CONTROLLER_NAME,
                replicaset = %key,
                need = replicaset::replicas(rs),
                deleting = diff,
                "Too many replicas"
            );
            let related = indirectly_related_pods(ctx, rs);
            let pod_refs: Vec<&Pod> = pods.iter().map(Arc::as_ref).collect();
            let related_refs: Vec<&Pod> = related.iter().map(Arc::as_ref).collect();
            let now = ctx.clock.now();
            let chosen = pods_to_delete(&pod_refs, &related_refs, diff, now);
            if diff < pods.len() {
                for ratio in deletion_age_ratios(&pod_refs, &chosen, now) {
                    ctx.metrics.sorting_deletion_age_ratio.observe(ratio);
                }
            }
            let pod_keys: Vec<String> =
                chosen.iter().map(|p| pod::pod_key(p).to_string()).collect();
            lock(&ctx.expectations).expect_deletions(&expectations_key, &pod_keys, now);
            let results = futures::future::join_all(chosen.iter().map(|p| {
                let name = p.metadata.name.as_deref().unwrap_or_default();
                ctx.pod_control.delete(&key.namespace, name, &owner)
            }))
            .await;
            let mut first_error = None;
            for (pod_key, result) in pod_keys.iter().zip(results) {
                if let Err(err) = result {
                    // The watch will never show this deletion.
                    lock(&ctx.expectations).pod_deletion_observed(&expectations_key, pod_key);
                    if !is_status(&err, 404) {
                        tracing::info!(
                            controller = CONTROLLER_NAME,
                            replicaset = %key,
                            pod = %pod_key,
                            "Failed to delete pod, decremented expectations"
                        );
                        first_error.get_or_insert(err);
                    }
                }
            }
            match first_error {
                Some(err) => Err(SyncError::Other(format!(
                    "unable to delete pods: {}",
                    error_message(&err)
                ))),
                None => Ok(()),
            }
        }
    }
}

/// `getIndirectlyRelatedPods`: the pods selected by any ReplicaSet with
/// the same controller as `rs` (a Deployment's other ReplicaSets), each
/// once; none for a ReplicaSet without a controller.
fn indirectly_related_pods(ctx: &Context, rs: &ReplicaSet) -> Vec<Arc<Pod>> {
    let Some(controller) = controller_of(&rs.metadata) else {
        return Vec::new();
    };
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    let selectors: Vec<LabelSelector> = read(&ctx.replica_sets)
        .controlled_by(&controller.uid)
        .filter_map(|related| LabelSelector::from_label_selector(&related.spec.selector).ok())
        .collect();
    let mut seen = HashSet::new();
    read(&ctx.pods)
        .in_namespace(namespace)
        .filter(|p| {
            selectors
                .iter()
                .any(|s| s.matches(p.metadata.labels.as_ref()))
        })
        .filter(|p| seen.insert(p.metadata.uid.clone()))
        .cloned()
        .collect()
}

/// `updateReplicaSetStatus`: writes `status` through `/status` unless
/// nothing changed, retrying once on a fresh copy; the status the
/// ReplicaSet has afterwards.
async fn update_status(
    ctx: &Context,
    rs: &ReplicaSet,
    status: ReplicaSetStatus,
) -> Result<ReplicaSetStatus, SyncError> {
    if !status_needs_update(rs, &status) {
        return Ok(status);
    }
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    let name = rs.metadata.name.as_deref().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), namespace);
    let mut updated = rs.clone();
    updated.status = Some(status.clone());
    let first = api
        .replace_status(name, &PostParams::default(), &updated)
        .await;
    if first.is_ok() {
        return Ok(status);
    }
    let mut fresh = api.get(name).await?;
    fresh.status = Some(status.clone());
    api.replace_status(name, &PostParams::default(), &fresh)
        .await?;
    Ok(status)
}
