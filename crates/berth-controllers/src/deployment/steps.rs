//! The steps a Deployment's sync is made of (upstream `sync.go` and its
//! helpers): the ReplicaSets it claims and the pods they own, its new
//! ReplicaSet found or created, a ReplicaSet scaled with its Event, old
//! revisions cleaned up, and the Deployment's status written. Each
//! decision is a berth-core [`deployment`] function.
//!
//! The Deployment is written through `/status` (its annotations with it,
//! as upstream's status strategy keeps them): the revision annotation,
//! conditions, counts, `collisionCount`. After each such write the sync
//! carries on with what the server returned, so its next write names the
//! current `resourceVersion` (upstream keeps its stale copy and meets a
//! conflict, retried on the next sync).

use std::collections::HashMap;
use std::sync::Arc;

use berth_core::labels::LabelSelector;
use berth_core::object_key::ObjectKey;
use berth_core::workloads::deployment::{
    self, CONDITION_PROGRESSING, REASON_FAILED_RS_CREATE, REASON_FOUND_NEW_REPLICA_SET,
    REASON_NEW_REPLICA_SET_CREATED, REVISION_ANNOTATION,
};
use berth_core::workloads::ownership::controller_of;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, PostParams};

use super::{CONTROLLER_NAME, Context};
use crate::cache::ObjectCache;
use crate::controller_refs::{ClaimSession, claim_objects};
use crate::events::{TYPE_NORMAL, TYPE_WARNING, error_message, object_ref};
use crate::pod_control::namespace_terminating;
use crate::shared::read;
use crate::sync_error::SyncError;
use crate::sync_error::is_status;
use crate::workload::writes::KubeWrites;

/// The Event reason of every ReplicaSet scale.
pub const REASON_SCALING_REPLICA_SET: &str = "ScalingReplicaSet";
pub const REASON_SELECTING_ALL: &str = "SelectingAll";

/// A Deployment's ReplicaSets, as the sync holds them.
pub type ReplicaSets = Vec<Arc<ReplicaSet>>;

/// `&ReplicaSet`s of `rss`, for berth-core's functions.
pub fn refs(rss: &[Arc<ReplicaSet>]) -> Vec<&ReplicaSet> {
    rss.iter().map(Arc::as_ref).collect()
}

/// Records an Event on the Deployment.
pub fn record(ctx: &Context, d: &Deployment, type_: &str, reason: &str, message: String) {
    ctx.recorder.record(
        object_ref("apps/v1", "Deployment", &d.metadata),
        type_,
        reason,
        message,
    );
}

/// `getReplicaSetsForDeployment`: the ReplicaSets the Deployment owns
/// once orphans it selects are adopted and owned ones it no longer
/// selects released.
pub async fn replica_sets_for_deployment(
    ctx: &Context,
    d: &Deployment,
) -> Result<ReplicaSets, SyncError> {
    let selector = LabelSelector::from_label_selector(&d.spec.selector).map_err(|err| {
        SyncError::Other(format!(
            "deployment {} has invalid label selector: {err}",
            ObjectKey::of_meta(&d.metadata)
        ))
    })?;
    let namespace = d.metadata.namespace.as_deref().unwrap_or_default();
    let uid = d.metadata.uid.as_deref().unwrap_or_default();
    let candidates: ReplicaSets = read(&ctx.replica_sets)
        .claimable(namespace, uid, |_| false)
        .cloned()
        .collect();
    let writes = KubeWrites::new(ctx.client.clone(), ctx.recorder.clone());
    Ok(claim_objects(
        &writes,
        &mut ClaimSession::default(),
        d,
        candidates,
        |rs: &ReplicaSet| selector.matches(rs.metadata.labels.as_ref()),
    )
    .await?)
}

/// `getPodMapForDeployment`: the pods the Deployment selects, by the UID
/// of the ReplicaSet (of `rs_list`) that controls them; every ReplicaSet
/// has an entry.
pub fn pod_map(
    pods: &ObjectCache<Pod>,
    d: &Deployment,
    rs_list: &[Arc<ReplicaSet>],
) -> HashMap<String, Vec<Arc<Pod>>> {
    let selector = LabelSelector::from_label_selector(&d.spec.selector).ok();
    rs_list
        .iter()
        .map(|rs| {
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let owned = pods
                .controlled_by(&uid)
                .filter(|p| {
                    selector
                        .as_ref()
                        .is_some_and(|s| s.matches(p.metadata.labels.as_ref()))
                })
                .cloned()
                .collect();
            (uid, owned)
        })
        .collect()
}

/// `getAllReplicaSetsAndSyncRevision`: the new ReplicaSet (created if
/// `create` and missing) and every old one. A new ReplicaSet rewritten
/// (its annotations) replaces its copy in `rs_list`, so that a later step
/// of the sync writes on the current version.
pub async fn all_replica_sets_and_sync_revision(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
    create: bool,
) -> Result<(Option<Arc<ReplicaSet>>, ReplicaSets), SyncError> {
    let all = refs(rs_list);
    let (_, old_refs) = deployment::find_old_replica_sets(d, &all);
    let old: ReplicaSets = rs_list
        .iter()
        .filter(|rs| old_refs.iter().any(|o| std::ptr::eq(*o, rs.as_ref())))
        .cloned()
        .collect();
    let new_rs = new_replica_set(ctx, d, rs_list, &old, create).await?;
    Ok((new_rs, old))
}

/// `getNewReplicaSet`: the ReplicaSet running the Deployment's template,
/// its annotations and `minReadySeconds` brought up to date, the
/// Deployment's revision annotation and Progressing condition
/// following it; created when missing and `create` (an existing one of
/// the same name that is not the Deployment's is a hash collision: the
/// collision count goes up and the sync fails, to retry with a new name).
async fn new_replica_set(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &mut ReplicaSets,
    old: &[Arc<ReplicaSet>],
    create: bool,
) -> Result<Option<Arc<ReplicaSet>>, SyncError> {
    let old_refs = refs(old);
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    let existing = deployment::find_new_replica_set(d, &refs(rs_list)).and_then(|found| {
        rs_list
            .iter()
            .position(|rs| std::ptr::eq(rs.as_ref(), found))
    });
    if let Some(at) = existing {
        let existing = rs_list[at].clone();
        if let Some(updated) = deployment::sync_new_replica_set(d, &existing, &old_refs) {
            let name = updated.metadata.name.clone().unwrap_or_default();
            let written = Arc::new(api.replace(&name, &PostParams::default(), &updated).await?);
            rs_list[at] = written.clone();
            return Ok(Some(written));
        }
        let revision = existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION))
            .cloned()
            .unwrap_or_default();
        let mut needs_update = deployment::set_deployment_revision(d, &revision);
        let has_deadline = deployment::has_progress_deadline(d);
        let status = d.status.get_or_insert_with(DeploymentStatus::default);
        if has_deadline && deployment::condition(status, CONDITION_PROGRESSING).is_none() {
            let message = format!(
                "Found new replica set {:?}",
                existing.metadata.name.as_deref().unwrap_or_default()
            );
            set_progressing(ctx, status, "True", REASON_FOUND_NEW_REPLICA_SET, &message);
            needs_update = true;
        }
        if needs_update {
            update_status(ctx, d).await?;
        }
        return Ok(Some(existing));
    }
    if !create {
        return Ok(None);
    }
    let new_rs = deployment::new_replica_set(d, &old_refs)
        .map_err(|err| SyncError::Other(err.to_string()))?;
    let name = new_rs.metadata.name.clone().unwrap_or_default();
    let new_replicas = new_rs.spec.replicas.unwrap_or(0);
    let (created, already_existed) = match api.create(&PostParams::default(), &new_rs).await {
        Ok(created) => (Arc::new(created), false),
        Err(err) if is_status(&err, 409) => {
            let key = ObjectKey::new(namespace.as_str(), name.as_str());
            let Some(found) = read(&ctx.replica_sets).get(&key) else {
                return Err(err.into());
            };
            let ours = controller_of(&found.metadata)
                .is_some_and(|r| Some(&r.uid) == d.metadata.uid.as_ref());
            let template = found.spec.template.clone().unwrap_or_default();
            if ours && deployment::equal_ignore_hash(&d.spec.template, &template) {
                (found, true)
            } else {
                let status = d.status.get_or_insert_with(DeploymentStatus::default);
                let before = status.collision_count.unwrap_or(0);
                status.collision_count = Some(before.saturating_add(1));
                if update_status(ctx, d).await.is_ok() {
                    tracing::info!(
                        controller = CONTROLLER_NAME,
                        deployment = %ObjectKey::of_meta(&d.metadata),
                        old_collision_count = before,
                        new_collision_count = before.saturating_add(1),
                        "Found a hash collision for deployment - bumping collisionCount to resolve it"
                    );
                }
                return Err(err.into());
            }
        }
        Err(err) => {
            if namespace_terminating(&err) {
                return Err(err.into());
            }
            let message = format!(
                "Failed to create new replica set {name:?}: {}",
                error_message(&err)
            );
            if deployment::has_progress_deadline(d) {
                let status = d.status.get_or_insert_with(DeploymentStatus::default);
                set_progressing(ctx, status, "False", REASON_FAILED_RS_CREATE, &message);
                // The create's failure is the news; this write is best effort.
                let _ = update_status(ctx, d).await;
            }
            record(ctx, d, TYPE_WARNING, REASON_FAILED_RS_CREATE, message);
            return Err(err.into());
        }
    };
    if !already_existed && new_replicas > 0 {
        record(
            ctx,
            d,
            TYPE_NORMAL,
            REASON_SCALING_REPLICA_SET,
            format!("Scaled up replica set {name} from 0 to {new_replicas}"),
        );
    }
    let revision = (deployment::max_revision(&old_refs) + 1).to_string();
    let mut needs_update = deployment::set_deployment_revision(d, &revision);
    if !already_existed && deployment::has_progress_deadline(d) {
        let message = format!("Created new replica set {name:?}");
        let status = d.status.get_or_insert_with(DeploymentStatus::default);
        set_progressing(
            ctx,
            status,
            "True",
            REASON_NEW_REPLICA_SET_CREATED,
            &message,
        );
        needs_update = true;
    }
    if needs_update {
        update_status(ctx, d).await?;
    }
    Ok(Some(created))
}

/// Sets the Progressing condition now.
fn set_progressing(
    ctx: &Context,
    status: &mut DeploymentStatus,
    condition_status: &str,
    reason: &str,
    message: &str,
) {
    let condition = deployment::new_condition(
        CONDITION_PROGRESSING,
        condition_status,
        reason,
        message,
        ctx.clock.now(),
    );
    deployment::set_condition(status, condition);
}

/// Carries out `scales` of the named ReplicaSets among `among`
/// ([`scale_replica_set`], stopping at the first failure); whether any
/// ReplicaSet's size changed.
pub async fn scale_all(
    ctx: &Context,
    scales: Vec<deployment::ReplicaSetScale>,
    among: &[&Arc<ReplicaSet>],
    d: &Deployment,
) -> Result<bool, SyncError> {
    let mut scaled = false;
    for scale in scales {
        let target = among
            .iter()
            .find(|rs| rs.metadata.name.as_deref() == Some(scale.name.as_str()));
        if let Some(rs) = target {
            scaled |= scale_replica_set(ctx, rs, scale.replicas, d).await?;
        }
    }
    Ok(scaled)
}

/// Writes the Deployment's status (and annotations) through `/status`;
/// `d` becomes what the server returned.
pub async fn update_status(ctx: &Context, d: &mut Deployment) -> Result<(), kube::Error> {
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let name = d.metadata.name.clone().unwrap_or_default();
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    *d = api.replace_status(&name, &PostParams::default(), d).await?;
    Ok(())
}

/// `scaleReplicaSet`: writes the ReplicaSet's size and its replica
/// annotations if either differs, with a `ScalingReplicaSet` Event when
/// the size changed; whether it did.
pub async fn scale_replica_set(
    ctx: &Context,
    rs: &ReplicaSet,
    replicas: i32,
    d: &Deployment,
) -> Result<bool, SyncError> {
    let desired = deployment::replicas(d);
    let max = desired + deployment::max_surge(d);
    let current = rs.spec.replicas.unwrap_or(1);
    let size_changes = current != replicas;
    if !size_changes && !deployment::replicas_annotations_need_update(rs, desired, max) {
        return Ok(false);
    }
    let mut updated = rs.clone();
    updated.spec.replicas = Some(replicas);
    deployment::set_replicas_annotations(&mut updated, desired, max);
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    let name = rs.metadata.name.as_deref().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), namespace);
    api.replace(name, &PostParams::default(), &updated).await?;
    if size_changes {
        let operation = if current < replicas { "up" } else { "down" };
        record(
            ctx,
            d,
            TYPE_NORMAL,
            REASON_SCALING_REPLICA_SET,
            format!("Scaled {operation} replica set {name} from {current} to {replicas}"),
        );
    }
    Ok(size_changes)
}

/// `cleanupDeployment`: old ReplicaSets beyond `revisionHistoryLimit`
/// deleted, lowest revision first (those still running pods are kept).
pub async fn cleanup_deployment(
    ctx: &Context,
    old: &[Arc<ReplicaSet>],
    d: &Deployment,
) -> Result<(), SyncError> {
    let namespace = d.metadata.namespace.as_deref().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), namespace);
    for name in deployment::cleanup_deployment(&refs(old), d) {
        tracing::info!(
            controller = CONTROLLER_NAME,
            deployment = %ObjectKey::of_meta(&d.metadata),
            replicaset = %name,
            "Trying to cleanup replica set for deployment"
        );
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(err) if is_status(&err, 404) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}
