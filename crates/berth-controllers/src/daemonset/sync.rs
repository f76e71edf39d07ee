//! `syncDaemonSet` and what it calls: `manage` and `syncNodes`, the
//! rolling update, `updateDaemonSetStatus`. The decisions are berth-core's
//! ([`berth_core::workloads::daemon`]); here they are read from the
//! stores, written through [`Writes`], and recorded as Events with
//! upstream's reasons.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use berth_client::ObjectKey;
use berth_core::labels::{LabelSelector, label_selector_as_selector};
use berth_core::workloads::CONTROLLER_REVISION_HASH_LABEL;
use berth_core::workloads::daemon::{
    self, STRATEGY_ROLLING_UPDATE, StatusCounts, nodes_to_daemon_pods, pod_template_for_node,
};
use berth_core::workloads::ownership::new_controller_ref;
use berth_core::workloads::pod_control::SlowStartBatches;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector as ApiSelector, ObjectMeta};

use super::{DaemonSetController, all};
use crate::controller_refs::{ClaimSession, claim_from};
use crate::events::error_message;
use crate::events::{TYPE_NORMAL, TYPE_WARNING};
use crate::pod_control::namespace_terminating;
use crate::shared::{lock, read};
use crate::sync_error::SyncError;
use crate::workload::writes::{Writes, is_not_found, object_ref};

/// Event reasons (upstream's).
pub const SELECTING_ALL_REASON: &str = "SelectingAll";
pub const FAILED_DAEMON_POD_REASON: &str = "FailedDaemonPod";
pub const SUCCEEDED_DAEMON_POD_REASON: &str = "SucceededDaemonPod";
pub const SUCCESSFUL_CREATE_REASON: &str = "SuccessfulCreate";
pub const FAILED_CREATE_REASON: &str = "FailedCreate";
pub const SUCCESSFUL_DELETE_REASON: &str = "SuccessfulDelete";
pub const FAILED_DELETE_REASON: &str = "FailedDelete";

/// How many times a status write is retried against a fresh read.
const STATUS_UPDATE_RETRIES: usize = 1;

/// The pod `syncNodes` creates for `node`: the template as
/// `CreatePodTemplate` makes it, pinned to the node by affinity,
/// generated name `<ds>-`, owned by the DaemonSet
/// (`GetPodFromTemplate`).
pub fn daemon_pod_for_node(ds: &DaemonSet, node: &str, hash: &str) -> Pod {
    let template = pod_template_for_node(ds, node, hash);
    let meta = template.metadata.unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", ds.metadata.name.as_deref().unwrap_or(""))),
            namespace: ds.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![new_controller_ref(
                &ds.metadata,
                "apps/v1",
                "DaemonSet",
            )]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// What one sync works on: the DaemonSet, its parsed selector, and what
/// the sync has claimed so far.
pub(crate) struct Syncing<'a> {
    pub ds: &'a DaemonSet,
    pub selector: &'a LabelSelector,
    pub claims: ClaimSession,
}

fn refs<T>(items: &[Arc<T>]) -> Vec<&T> {
    items.iter().map(AsRef::as_ref).collect()
}

impl<W: Writes> DaemonSetController<W> {
    /// `syncDaemonSet`.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let inner = &self.inner;
        let qkey = key.to_string();
        let Some(ds) = read(&inner.daemon_sets).get(key) else {
            tracing::debug!(daemonset = %key, "daemon set has been deleted");
            lock(&inner.expectations).delete(&qkey);
            return Ok(());
        };
        let nodes = all(&inner.nodes);
        if ds.spec.selector == ApiSelector::default() {
            inner.writes.event(
                object_ref(ds.as_ref()),
                TYPE_WARNING,
                SELECTING_ALL_REASON,
                "This daemon set is selecting all pods. A non-empty selector is required.".into(),
            );
            return Ok(());
        }
        let selector = match label_selector_as_selector(Some(&ds.spec.selector)) {
            Ok(Some(selector)) => selector,
            // Validation refuses these; nothing a retry could fix.
            Ok(None) | Err(_) => return Ok(()),
        };
        // A DaemonSet being deleted may already have lost its history to
        // the garbage collector: its status cannot be told reliably.
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let mut cx = Syncing {
            ds: &ds,
            selector: &selector,
            claims: ClaimSession::default(),
        };
        let (current, old) = self.construct_history(&mut cx).await?;
        let hash = current
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            .cloned()
            .unwrap_or_default();
        let satisfied = lock(&inner.expectations).satisfied(&qkey, inner.clock.now());
        if !satisfied {
            // Only the status: this generation was not acted on.
            return self.update_status(&mut cx, &nodes, &hash, false).await;
        }
        let result = self.update_daemon_set(&mut cx, &nodes, &hash, &old).await;
        let status = self.update_status(&mut cx, &nodes, &hash, true).await;
        if let (Err(_), Err(status_err)) = (&result, &status) {
            tracing::warn!(daemonset = %key, err = %status_err, "failed to update status");
        }
        result.and(status)
    }

    /// `getDaemonPods`: the DaemonSet's pods, after adoption and release.
    pub(crate) async fn daemon_pods(
        &self,
        cx: &mut Syncing<'_>,
    ) -> Result<Vec<Arc<Pod>>, SyncError> {
        let selector = cx.selector;
        let matches = |p: &Pod| selector.matches(p.metadata.labels.as_ref());
        let claims = &mut cx.claims;
        Ok(claim_from(&self.inner.writes, claims, cx.ds, &self.inner.pods, matches).await?)
    }

    /// `updateDaemonSet`: manage, then (expectations allowing) the rolling
    /// update, then history cleanup.
    async fn update_daemon_set(
        &self,
        cx: &mut Syncing<'_>,
        nodes: &[Arc<Node>],
        hash: &str,
        old: &[ControllerRevisionRef],
    ) -> Result<(), SyncError> {
        let ds = cx.ds;
        self.manage(cx, nodes, hash).await?;
        let key = ObjectKey::of_meta(&ds.metadata).to_string();
        let satisfied = lock(&self.inner.expectations).satisfied(&key, self.inner.clock.now());
        let rolling = ds
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_deref())
            .unwrap_or(STRATEGY_ROLLING_UPDATE)
            == STRATEGY_ROLLING_UPDATE;
        if satisfied && rolling {
            self.rolling_update(cx, nodes, hash).await?;
        }
        self.cleanup_history(cx, old).await
    }

    /// `manage`: what every node needs, then `syncNodes`.
    async fn manage(
        &self,
        cx: &mut Syncing<'_>,
        nodes: &[Arc<Node>],
        hash: &str,
    ) -> Result<(), SyncError> {
        let inner = &self.inner;
        let ds = cx.ds;
        let now = inner.clock.now();
        let pods = self.daemon_pods(cx).await?;
        let pod_refs = refs(&pods);
        let node_to_pods = nodes_to_daemon_pods(&pod_refs, false);
        let plan = daemon::manage(
            ds,
            &refs(nodes),
            &node_to_pods,
            hash,
            now,
            inner.config.gates,
        );
        let mut delete = plan.delete;
        let by_name: BTreeMap<&str, &Pod> = pod_refs
            .iter()
            .map(|p| (p.metadata.name.as_deref().unwrap_or(""), *p))
            .collect();
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        for name in &delete {
            let succeeded = by_name.get(name.as_str()).is_some_and(|p| {
                p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
            });
            if succeeded {
                let node = by_name
                    .get(name.as_str())
                    .and_then(|p| daemon::target_node_name(p))
                    .unwrap_or("");
                inner.writes.event(
                    object_ref(ds),
                    TYPE_NORMAL,
                    SUCCEEDED_DAEMON_POD_REASON,
                    format!(
                        "Found succeeded daemon pod {namespace}/{name} on node {node}, will try to delete it"
                    ),
                );
            }
        }
        for (node, name) in plan.failed {
            // The kubelet may keep rejecting the pod: back off per node.
            let observed = ds
                .status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0);
            let backoff_key = format!(
                "{}/{observed}/{node}",
                ds.metadata.uid.as_deref().unwrap_or("")
            );
            let delay = {
                let mut backoff = lock(&inner.failed_pods_backoff);
                if backoff.is_in_back_off_since_update(&backoff_key, now) {
                    Some(backoff.get(&backoff_key))
                } else {
                    backoff.next(&backoff_key, now);
                    None
                }
            };
            if let Some(delay) = delay {
                tracing::debug!(pod = %name, %node, ?delay, "deleting failed pod limited by backoff");
                inner
                    .queue
                    .add_after(ObjectKey::of_meta(&ds.metadata), delay);
                continue;
            }
            inner.writes.event(
                object_ref(ds),
                TYPE_WARNING,
                FAILED_DAEMON_POD_REASON,
                format!(
                    "Found failed daemon pod {namespace}/{name} on node {node}, will try to kill it"
                ),
            );
            delete.push(name);
        }
        self.sync_nodes(ds, delete, plan.create_on, hash).await
    }

    /// `syncNodes`: deletes `delete` and creates a pod on each of
    /// `create_on`, at most `burst_replicas` of each, creates in
    /// slow-start batches, all expected before the first is sent.
    pub(crate) async fn sync_nodes(
        &self,
        ds: &DaemonSet,
        delete: Vec<String>,
        create_on: Vec<String>,
        hash: &str,
    ) -> Result<(), SyncError> {
        let inner = &self.inner;
        let key = ObjectKey::of_meta(&ds.metadata).to_string();
        let namespace = ds.metadata.namespace.clone().unwrap_or_default();
        let burst = inner.config.burst_replicas;
        let create_on = &create_on[..create_on.len().min(burst)];
        let delete = &delete[..delete.len().min(burst)];
        let deleted_keys: Vec<String> = delete
            .iter()
            .map(|name| ObjectKey::new(namespace.clone(), name.clone()).to_string())
            .collect();
        {
            let now = inner.clock.now();
            let mut expectations = lock(&inner.expectations);
            expectations.expect_deletions(&key, &deleted_keys, now);
            expectations.raise(&key, create_on.len(), 0);
        }
        let mut errors: Vec<kube::Error> = Vec::new();
        if !create_on.is_empty() {
            tracing::debug!(daemonset = %key, count = create_on.len(), "creating daemon pods");
        }
        let mut position = 0;
        for batch in SlowStartBatches::new(create_on.len(), 1) {
            let nodes = &create_on[position..position + batch];
            position += batch;
            let results = futures::future::join_all(nodes.iter().map(|node| async move {
                let pod = daemon_pod_for_node(ds, node, hash);
                inner.writes.create(&pod).await
            }))
            .await;
            let mut failed = false;
            for result in results {
                match result {
                    Ok(created) => inner.writes.event(
                        object_ref(ds),
                        TYPE_NORMAL,
                        SUCCESSFUL_CREATE_REASON,
                        format!(
                            "Created pod: {}",
                            created.metadata.name.as_deref().unwrap_or("")
                        ),
                    ),
                    // Every later create would fail the same way.
                    Err(err) if namespace_terminating(&err) => {}
                    Err(err) => {
                        failed = true;
                        lock(&inner.expectations).creation_observed(&key);
                        inner.writes.event(
                            object_ref(ds),
                            TYPE_WARNING,
                            FAILED_CREATE_REASON,
                            format!("Error creating: {}", error_message(&err)),
                        );
                        errors.push(err);
                    }
                }
            }
            if failed {
                // What was never attempted is no longer expected; the next
                // sync starts slow again.
                let skipped = create_on.len() - position;
                if skipped > 0 {
                    tracing::debug!(daemonset = %key, skipped, "slow-start failure, skipping creates");
                    lock(&inner.expectations).lower(&key, skipped, 0);
                }
                break;
            }
        }
        let results =
            futures::future::join_all(delete.iter().zip(&deleted_keys).map(|(name, pod_key)| {
                let namespace = namespace.as_str();
                async move {
                    (
                        name,
                        pod_key,
                        inner.writes.delete::<Pod>(namespace, name).await,
                    )
                }
            }))
            .await;
        for (name, pod_key, result) in results {
            match result {
                Ok(()) => inner.writes.event(
                    object_ref(ds),
                    TYPE_NORMAL,
                    SUCCESSFUL_DELETE_REASON,
                    format!("Deleted pod: {name}"),
                ),
                Err(err) => {
                    lock(&inner.expectations).pod_deletion_observed(&key, pod_key);
                    if !is_not_found(&err) {
                        inner.writes.event(
                            object_ref(ds),
                            TYPE_WARNING,
                            FAILED_DELETE_REASON,
                            format!("Error deleting: {}", error_message(&err)),
                        );
                        errors.push(err);
                    }
                }
            }
        }
        match errors.into_iter().next() {
            Some(err) => Err(err.into()),
            None => Ok(()),
        }
    }

    /// `rollingUpdate`: one step of berth-core's rollout, carried out by
    /// `syncNodes`.
    async fn rolling_update(
        &self,
        cx: &mut Syncing<'_>,
        nodes: &[Arc<Node>],
        hash: &str,
    ) -> Result<(), SyncError> {
        let ds = cx.ds;
        let pods = self.daemon_pods(cx).await?;
        let node_to_pods = nodes_to_daemon_pods(&refs(&pods), false);
        let plan = daemon::rolling_update(
            ds,
            &refs(nodes),
            &node_to_pods,
            hash,
            self.inner.clock.now(),
            self.inner.config.gates,
        )
        .map_err(|e| SyncError::Other(e.to_string()))?;
        if plan.delete.is_empty() && plan.create_on.is_empty() {
            return Ok(());
        }
        self.sync_nodes(ds, plan.delete, plan.create_on, hash).await
    }

    /// `updateDaemonSetStatus`: the counts, written only when they (or the
    /// observed generation) changed; with `minReadySeconds`, another look
    /// once the ready pods may count as available.
    async fn update_status(
        &self,
        cx: &mut Syncing<'_>,
        nodes: &[Arc<Node>],
        hash: &str,
        update_observed_generation: bool,
    ) -> Result<(), SyncError> {
        let inner = &self.inner;
        let ds = cx.ds;
        let pods = self.daemon_pods(cx).await?;
        let node_to_pods = nodes_to_daemon_pods(&refs(&pods), false);
        let counts = daemon::status_counts(
            ds,
            &refs(nodes),
            &node_to_pods,
            hash,
            inner.clock.now(),
            inner.config.gates,
        );
        self.store_status(ds, counts, update_observed_generation)
            .await?;
        let min_ready = ds.spec.min_ready_seconds.unwrap_or(0);
        if min_ready > 0 && counts.number_ready != counts.number_available {
            inner.queue.add_after(
                ObjectKey::of_meta(&ds.metadata),
                Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)),
            );
        }
        Ok(())
    }

    /// `storeDaemonSetStatus`: one write, retried once against a fresh
    /// read of the DaemonSet.
    async fn store_status(
        &self,
        ds: &DaemonSet,
        counts: StatusCounts,
        update_observed_generation: bool,
    ) -> Result<(), SyncError> {
        let current = ds.status.clone().unwrap_or_default();
        let generation = ds.metadata.generation.unwrap_or(0);
        if counts_of(&current) == counts && current.observed_generation.unwrap_or(0) >= generation {
            return Ok(());
        }
        let mut to_update = ds.clone();
        let mut attempt = 0;
        loop {
            let status = to_update
                .status
                .get_or_insert_with(DaemonSetStatus::default);
            if update_observed_generation {
                status.observed_generation = ds.metadata.generation;
            }
            set_counts(status, counts);
            let err = match self.inner.writes.replace_status(&to_update).await {
                Ok(()) => return Ok(()),
                Err(err) => err,
            };
            if attempt >= STATUS_UPDATE_RETRIES {
                return Err(err.into());
            }
            attempt += 1;
            let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
            let name = ds.metadata.name.as_deref().unwrap_or("");
            to_update = self.inner.writes.get(namespace, name).await?;
        }
    }
}

/// A reference to one of the DaemonSet's old revisions.
pub type ControllerRevisionRef = Arc<k8s_openapi::api::apps::v1::ControllerRevision>;

fn counts_of(status: &DaemonSetStatus) -> StatusCounts {
    StatusCounts {
        desired_number_scheduled: status.desired_number_scheduled,
        current_number_scheduled: status.current_number_scheduled,
        number_misscheduled: status.number_misscheduled,
        number_ready: status.number_ready,
        updated_number_scheduled: status.updated_number_scheduled.unwrap_or(0),
        number_available: status.number_available.unwrap_or(0),
        number_unavailable: status.number_unavailable.unwrap_or(0),
    }
}

fn set_counts(status: &mut DaemonSetStatus, counts: StatusCounts) {
    status.desired_number_scheduled = counts.desired_number_scheduled;
    status.current_number_scheduled = counts.current_number_scheduled;
    status.number_misscheduled = counts.number_misscheduled;
    status.number_ready = counts.number_ready;
    status.updated_number_scheduled = Some(counts.updated_number_scheduled);
    status.number_available = Some(counts.number_available);
    status.number_unavailable = Some(counts.number_unavailable);
}
