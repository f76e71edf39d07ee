//! A DaemonSet's ControllerRevisions (upstream `update.go`'s
//! `constructHistory`, `snapshot`, `dedupCurHistories`, `cleanupHistory`):
//! the revision recording the current template is found or made, its
//! hash labels new pods, and old revisions beyond `revisionHistoryLimit`
//! go once no pod runs them. What matches, what to keep and what to
//! delete are berth-core's ([`berth_core::workloads::daemon`]).

use std::sync::Arc;

use berth_core::workloads::CONTROLLER_REVISION_HASH_LABEL;
use berth_core::workloads::daemon::{
    cleanup_history, dedup_current, history_revision, matches_revision, max_revision, split_history,
};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::Pod;

use super::DaemonSetController;
use super::sync::{ControllerRevisionRef, Syncing};
use crate::controller_refs::claim_from;
use crate::sync_error::SyncError;
use crate::workload::writes::{Writes, delete_all, is_already_exists};

fn hash_of(revision: &ControllerRevision) -> Option<&str> {
    revision
        .metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)
        .map(String::as_str)
}

impl<W: Writes> DaemonSetController<W> {
    /// `constructHistory`: the current revision (found, deduplicated and
    /// renumbered, or created) and the old ones.
    pub(crate) async fn construct_history(
        &self,
        cx: &mut Syncing<'_>,
    ) -> Result<(ControllerRevision, Vec<ControllerRevisionRef>), SyncError> {
        let writes = &self.inner.writes;
        let (ds, selector) = (cx.ds, cx.selector);
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let mut histories = claim_from(
            writes,
            &mut cx.claims,
            ds,
            &self.inner.revisions,
            |r: &ControllerRevision| selector.matches(r.metadata.labels.as_ref()),
        )
        .await?;
        // Revisions from before the hash label was kept get their name as
        // their hash, so that no hash has to be computed again.
        for history in &mut histories {
            if hash_of(history).is_none() {
                let mut labelled = (**history).clone();
                let name = labelled.metadata.name.clone().unwrap_or_default();
                labelled
                    .metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(CONTROLLER_REVISION_HASH_LABEL.into(), name);
                writes.replace(&labelled).await?;
                *history = Arc::new(labelled);
            }
        }
        let all: Vec<&ControllerRevision> = histories.iter().map(AsRef::as_ref).collect();
        let (current, old) = split_history(ds, &all);
        let next_revision = max_revision(&old) + 1;
        let current = match dedup_current(&current) {
            None => self.snapshot(ds, next_revision).await?,
            Some((keep, duplicates)) => {
                let keep_hash = hash_of(keep).unwrap_or("").to_string();
                if !duplicates.is_empty() {
                    self.relabel_pods(cx, &keep_hash).await?;
                    delete_all::<ControllerRevision, _>(writes, namespace, duplicates).await?;
                }
                let mut keep = keep.clone();
                if keep.revision.unwrap_or(0) < next_revision {
                    keep.revision = Some(next_revision);
                    writes.replace(&keep).await?;
                }
                keep
            }
        };
        let old_names: Vec<Option<String>> = old.iter().map(|r| r.metadata.name.clone()).collect();
        let old = histories
            .into_iter()
            .filter(|r| old_names.contains(&r.metadata.name))
            .collect();
        Ok((current, old))
    }

    /// Before a duplicate current revision goes, its pods take the kept
    /// one's hash.
    async fn relabel_pods(&self, cx: &mut Syncing<'_>, hash: &str) -> Result<(), SyncError> {
        for pod in self.daemon_pods(cx).await? {
            let current = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL));
            if current.map(String::as_str) == Some(hash) {
                continue;
            }
            let mut relabelled: Pod = (*pod).clone();
            relabelled
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
            self.inner.writes.replace(&relabelled).await?;
        }
        Ok(())
    }

    /// `snapshot`: creates the revision of the current template. A name
    /// taken by a revision of another template is a hash collision: the
    /// DaemonSet's `collisionCount` goes up (changing the hash) and the
    /// sync is retried.
    async fn snapshot(
        &self,
        ds: &DaemonSet,
        revision: i64,
    ) -> Result<ControllerRevision, SyncError> {
        let writes = &self.inner.writes;
        let history = history_revision(ds, revision);
        let err = match writes.create(&history).await {
            Ok(created) => return Ok(created),
            Err(err) if is_already_exists(&err) => err,
            Err(err) => return Err(err.into()),
        };
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let name = history.metadata.name.as_deref().unwrap_or("");
        let existing: ControllerRevision = writes.get(namespace, name).await?;
        if matches_revision(ds, &existing) {
            return Ok(existing);
        }
        let mut fresh: DaemonSet = writes
            .get(namespace, ds.metadata.name.as_deref().unwrap_or(""))
            .await?;
        let status = fresh.status.get_or_insert_with(DaemonSetStatus::default);
        let collisions = status.collision_count.unwrap_or(0).saturating_add(1);
        status.collision_count = Some(collisions);
        writes.replace_status(&fresh).await?;
        tracing::info!(
            daemonset = name,
            collisions,
            "found a hash collision, bumped collisionCount to resolve it"
        );
        Err(err.into())
    }

    /// `cleanupHistory`: old revisions beyond the limit, oldest first,
    /// sparing those a pod still runs.
    pub(crate) async fn cleanup_history(
        &self,
        cx: &mut Syncing<'_>,
        old: &[ControllerRevisionRef],
    ) -> Result<(), SyncError> {
        let ds = cx.ds;
        let limit = usize::try_from(ds.spec.revision_history_limit.unwrap_or(10)).unwrap_or(0);
        if old.len() <= limit {
            return Ok(());
        }
        let pods = self.daemon_pods(cx).await?;
        let pod_refs: Vec<&Pod> = pods.iter().map(AsRef::as_ref).collect();
        let old_refs: Vec<&ControllerRevision> = old.iter().map(AsRef::as_ref).collect();
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let stale = cleanup_history(ds, &old_refs, &pod_refs);
        delete_all::<ControllerRevision, _>(&self.inner.writes, namespace, stale).await?;
        Ok(())
    }
}
