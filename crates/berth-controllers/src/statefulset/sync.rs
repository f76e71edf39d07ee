//! `sync` and `UpdateStatefulSet` (upstream `stateful_set.go`,
//! `stateful_set_control.go`, `stateful_pod_control.go`): the set's
//! revisions and pods claimed, the current and update revisions found or
//! made, berth-core's plan for one sync ([`statefulset::sync`]) carried out
//! with upstream's Events, the status written when it changed, old
//! revisions truncated.

use std::sync::Arc;
use std::time::Duration;

use berth_client::ObjectKey;
use berth_core::labels::{LabelSelector, label_selector_as_selector};
use berth_core::workloads::history::sort_controller_revisions;
use berth_core::workloads::pod_control::SlowStartBatches;
use berth_core::workloads::statefulset::{
    self, Revision, UpdateRevision, current_revision, is_member_of, new_pod_of_revision,
    new_revision, truncate_history, update_identity, update_revision, update_storage,
};
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::Pod;

use super::{StatefulSetController, gauge_labels};
use crate::controller_refs::{ClaimSession, claim_from};
use crate::events::error_message;
use crate::events::{TYPE_NORMAL, TYPE_WARNING};
use crate::shared::read;
use crate::sync_error::SyncError;
use crate::workload::writes::{
    Writes, delete_all, is_already_exists, is_conflict, is_not_found, object_ref,
};

/// `MaxBatchSize`: creates of a `Parallel` set in flight at most.
const MAX_BATCH_SIZE: usize = 500;
/// Status writes retried on a conflict (client-go's `DefaultRetry` steps).
const STATUS_RETRIES: usize = 5;

/// `recordPodEvent`: `Successful<Verb>` / `Failed<Verb>` on the set.
fn record_pod_event<W: Writes>(
    writes: &W,
    set: &StatefulSet,
    verb: &str,
    pod: &str,
    result: &Result<(), kube::Error>,
) {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let title = {
        let mut chars = verb.chars();
        chars
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
            .unwrap_or_default()
    };
    match result {
        Ok(()) => writes.event(
            object_ref(set),
            TYPE_NORMAL,
            &format!("Successful{title}"),
            format!("{verb} Pod {pod} in StatefulSet {set_name} successful"),
        ),
        Err(err) => writes.event(
            object_ref(set),
            TYPE_WARNING,
            &format!("Failed{title}"),
            format!(
                "{verb} Pod {pod} in StatefulSet {set_name} failed error: {}",
                error_message(err)
            ),
        ),
    }
}

/// `inconsistentStatus`: the status to write differs from the set's.
fn inconsistent_status(set: &StatefulSet, status: &StatefulSetStatus) -> bool {
    let current = set.status.clone().unwrap_or_default();
    status.observed_generation.unwrap_or(0) > current.observed_generation.unwrap_or(0)
        || status.replicas != current.replicas
        || status.current_replicas.unwrap_or(0) != current.current_replicas.unwrap_or(0)
        || status.ready_replicas.unwrap_or(0) != current.ready_replicas.unwrap_or(0)
        || status.updated_replicas.unwrap_or(0) != current.updated_replicas.unwrap_or(0)
        || status.available_replicas.unwrap_or(0) != current.available_replicas.unwrap_or(0)
        || status.current_revision != current.current_revision
        || status.update_revision != current.update_revision
        || status.collision_count != current.collision_count
}

impl<W: Writes> StatefulSetController<W> {
    /// `sync`.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let inner = &self.inner;
        let Some(set) = read(&inner.sets).get(key) else {
            tracing::debug!(statefulset = %key, "StatefulSet has been deleted");
            return Ok(());
        };
        let selector = match label_selector_as_selector(Some(&set.spec.selector)) {
            Ok(Some(selector)) => selector,
            // Not transient: validation refuses it, a retry cannot help.
            Ok(None) | Err(_) => return Ok(()),
        };
        let mut claims = ClaimSession::default();
        let revisions = self.revisions(&set, &selector, &mut claims).await?;
        let pods = self.pods(&set, &selector, &mut claims).await?;
        let status = self.update_stateful_set(&set, &pods, &revisions).await?;
        let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
        if min_ready > 0 && status.available_replicas.unwrap_or(0) != statefulset::replicas(&set) {
            inner.queue.add_after(
                key.clone(),
                Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)),
            );
        }
        Ok(())
    }

    /// `ListRevisions` and `adoptOrphanRevisions`: the revisions the set
    /// selects, orphans adopted.
    async fn revisions(
        &self,
        set: &StatefulSet,
        selector: &LabelSelector,
        claims: &mut ClaimSession,
    ) -> Result<Vec<Arc<ControllerRevision>>, SyncError> {
        let matches = |r: &ControllerRevision| selector.matches(r.metadata.labels.as_ref());
        Ok(claim_from(
            &self.inner.writes,
            claims,
            set,
            &self.inner.revisions,
            matches,
        )
        .await?)
    }

    /// `getPodsForStatefulSet`: the set's members (`<set>-<ordinal>`) its
    /// selector matches, orphans adopted, strays released.
    async fn pods(
        &self,
        set: &StatefulSet,
        selector: &LabelSelector,
        claims: &mut ClaimSession,
    ) -> Result<Vec<Arc<Pod>>, SyncError> {
        let matches =
            |p: &Pod| selector.matches(p.metadata.labels.as_ref()) && is_member_of(set, p);
        Ok(claim_from(&self.inner.writes, claims, set, &self.inner.pods, matches).await?)
    }

    /// `UpdateStatefulSet`: revisions, the sync's plan carried out, the
    /// status written, history truncated (even when the plan failed).
    async fn update_stateful_set(
        &self,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        revisions: &[Arc<ControllerRevision>],
    ) -> Result<StatefulSetStatus, SyncError> {
        let mut sorted: Vec<&ControllerRevision> = revisions.iter().map(AsRef::as_ref).collect();
        sort_controller_revisions(&mut sorted);
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let update = match update_revision(set, &sorted) {
            UpdateRevision::Latest(latest) => latest.clone(),
            UpdateRevision::Renumber { revision, to } => {
                // A rollback: the old revision becomes the latest.
                let mut renumbered = revision.clone();
                renumbered.revision = Some(to);
                self.inner.writes.replace(&renumbered).await?;
                renumbered
            }
            UpdateRevision::Create(revision) => {
                self.create_revision(set, *revision, &mut collision_count)
                    .await?
            }
        };
        let current = current_revision(set, &sorted)
            .cloned()
            .unwrap_or_else(|| update.clone());
        let current_name = current.metadata.name.clone().unwrap_or_default();
        let update_name = update.metadata.name.clone().unwrap_or_default();
        let pod_refs: Vec<&Pod> = pods.iter().map(AsRef::as_ref).collect();
        let now = self.inner.clock.now();
        let gates = self.inner.config.gates;

        let mut result = match statefulset::sync(
            set,
            &pod_refs,
            &update_name,
            now,
            gates.max_unavailable_stateful_set,
        ) {
            Ok(plan) => {
                if let Some(wait) = &plan.waiting_for {
                    tracing::debug!(statefulset = ?set.metadata.name, ?wait, "waiting");
                }
                self.carry_out(set, &plan, pods, &current, &update).await
            }
            Err(err) => Err(SyncError::Other(format!(
                "invalid value for maxUnavailable: {err}"
            ))),
        };
        self.record_gauges(set, &pod_refs, now);

        let mut status = statefulset::status(set, &pod_refs, &current_name, &update_name, now);
        status.collision_count = Some(collision_count);
        if inconsistent_status(set, &status)
            && let Err(err) = self.store_status(set, &status).await
        {
            if result.is_err() {
                tracing::warn!(statefulset = ?set.metadata.name, %err, "could not update status");
            } else {
                result = Err(err);
            }
        }
        let stale = truncate_history(set, &pod_refs, &sorted, &current_name, &update_name);
        let namespace = set.metadata.namespace.as_deref().unwrap_or("");
        let deleted =
            delete_all::<ControllerRevision, _>(&self.inner.writes, namespace, stale).await;
        if let (Ok(()), Err(err)) = (&result, deleted) {
            result = Err(err.into());
        }
        result.map(|()| status)
    }

    /// `CreateControllerRevision`: a name taken by a revision with other
    /// data is a collision; the count goes up, changing the name, until
    /// the create succeeds or finds its own revision.
    async fn create_revision(
        &self,
        set: &StatefulSet,
        mut revision: ControllerRevision,
        collision_count: &mut i32,
    ) -> Result<ControllerRevision, SyncError> {
        let writes = &self.inner.writes;
        let number = revision.revision.unwrap_or(1);
        loop {
            let err = match writes.create(&revision).await {
                Ok(created) => return Ok(created),
                Err(err) if is_already_exists(&err) => err,
                Err(err) => return Err(err.into()),
            };
            let namespace = revision.metadata.namespace.clone().unwrap_or_default();
            let name = revision.metadata.name.clone().unwrap_or_default();
            let existing: ControllerRevision = writes.get(&namespace, &name).await?;
            if existing.data == revision.data {
                return Ok(existing);
            }
            tracing::info!(revision = name, %err, "revision name collision");
            *collision_count = collision_count.saturating_add(1);
            revision = new_revision(set, number, Some(*collision_count));
        }
    }

    /// One sync's plan: creates (one under `OrderedReady`, slow-start
    /// batches under `Parallel`), identities restored, deletes.
    async fn carry_out(
        &self,
        set: &StatefulSet,
        plan: &statefulset::SyncPlan,
        pods: &[Arc<Pod>],
        current: &ControllerRevision,
        update: &ControllerRevision,
    ) -> Result<(), SyncError> {
        let writes = &self.inner.writes;
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        let find = |name: &str| {
            pods.iter()
                .find(|p| p.metadata.name.as_deref() == Some(name))
                .cloned()
        };

        let mut position = 0;
        for batch in SlowStartBatches::new(plan.create.len(), 1) {
            let batch = batch.min(MAX_BATCH_SIZE);
            let creates = &plan.create[position..position + batch];
            position += batch;
            let results = futures::future::join_all(creates.iter().map(|(ordinal, revision)| {
                let revision = match revision {
                    Revision::Current => current,
                    Revision::Update => update,
                };
                let pod = new_pod_of_revision(set, revision, *ordinal);
                async move {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let result = writes.create(&pod).await.map(drop);
                    record_pod_event(writes, set, "create", &name, &result);
                    result
                }
            }))
            .await;
            if let Some(err) = results.into_iter().find_map(Result::err) {
                return Err(err.into());
            }
        }

        for name in &plan.update_identity {
            let Some(pod) = find(name) else { continue };
            let mut restored = (*pod).clone();
            update_identity(set, &mut restored);
            update_storage(set, &mut restored);
            let result = writes.replace(&restored).await;
            record_pod_event(writes, set, "update", name, &result);
            result?;
        }

        let set_name = set.metadata.name.as_deref().unwrap_or("");
        for name in &plan.delete {
            let phase = find(name).and_then(|p| p.status.as_ref().and_then(|s| s.phase.clone()));
            match phase.as_deref() {
                Some("Failed") => writes.event(
                    object_ref(set),
                    TYPE_WARNING,
                    "RecreatingFailedPod",
                    format!("StatefulSet {namespace}/{set_name} is recreating failed Pod {name}"),
                ),
                Some("Succeeded") => writes.event(
                    object_ref(set),
                    TYPE_NORMAL,
                    "RecreatingTerminatedPod",
                    format!(
                        "StatefulSet {namespace}/{set_name} is recreating terminated Pod {name}"
                    ),
                ),
                _ => {}
            }
            let result = writes.delete::<Pod>(&namespace, name).await;
            record_pod_event(writes, set, "delete", name, &result);
            match result {
                Ok(()) => {}
                Err(err) if is_not_found(&err) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }

    /// `statefulset_max_unavailable` and `statefulset_unavailable_replicas`
    /// for a rolling update under `MaxUnavailableStatefulSet`.
    fn record_gauges(&self, set: &StatefulSet, pods: &[&Pod], now: jiff::Timestamp) {
        let rolling = set
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_deref())
            .unwrap_or(statefulset::STRATEGY_ROLLING_UPDATE)
            == statefulset::STRATEGY_ROLLING_UPDATE;
        if !self.inner.config.gates.max_unavailable_stateful_set || !rolling {
            return;
        }
        let Ok(max_unavailable) = statefulset::max_unavailable(set) else {
            return;
        };
        let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
        let available = pods
            .iter()
            .filter(|p| {
                statefulset::in_ordinal_range(p, set)
                    && !berth_core::pod::is_terminating(p)
                    && statefulset::is_running_and_available(p, min_ready, now)
            })
            .count();
        let unavailable = usize::try_from(statefulset::replicas(set))
            .unwrap_or(0)
            .saturating_sub(available);
        let labels = gauge_labels(set);
        let metrics = &self.inner.metrics;
        metrics
            .statefulset_max_unavailable
            .get_or_create(&labels)
            .set(i64::from(max_unavailable));
        metrics
            .statefulset_unavailable_replicas
            .get_or_create(&labels)
            .set(i64::try_from(unavailable).unwrap_or(i64::MAX));
    }

    /// `UpdateStatefulSetStatus`: the status written, retried on a
    /// conflict against the newest copy.
    async fn store_status(
        &self,
        set: &StatefulSet,
        status: &StatefulSetStatus,
    ) -> Result<(), SyncError> {
        let mut to_update = set.clone();
        let mut attempt = 0;
        loop {
            to_update.status = Some(status.clone());
            let err = match self.inner.writes.replace_status(&to_update).await {
                Ok(()) => return Ok(()),
                Err(err) => err,
            };
            attempt += 1;
            if !is_conflict(&err) || attempt >= STATUS_RETRIES {
                return Err(err.into());
            }
            let namespace = set.metadata.namespace.as_deref().unwrap_or("");
            let name = set.metadata.name.as_deref().unwrap_or("");
            to_update = self.inner.writes.get(namespace, name).await?;
        }
    }
}
