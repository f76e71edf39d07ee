//! What users see of the scheduler's decisions: the pod's `PodScheduled`
//! condition and Events (`Scheduled`, `FailedScheduling`), written the way
//! upstream's scheduler writes them.
//!
//! Events go through a bounded queue drained by one writer, like
//! client-go's event broadcaster: when the scheduler decides faster than
//! events can be written, events are dropped (and counted) rather than
//! slowing scheduling down.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use berth_client::writes::create_unread;
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;
use tokio::sync::mpsc;

use crate::scheduler::{DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER, preemption_condition};

/// Events waiting to be written, at most (client-go's queue length).
pub const EVENT_QUEUE_LENGTH: usize = 1000;

/// One Event to write.
#[derive(Debug, Clone)]
pub struct PodEvent {
    pub pod: Arc<Pod>,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    pub reason: &'static str,
    pub action: &'static str,
    pub note: String,
}

/// Writes Events in the background.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<PodEvent>,
    dropped: Arc<AtomicU64>,
}

impl Recorder {
    /// Starts the writer: events are created through `client` as
    /// `controller` (the scheduler's name) from `instance`.
    pub fn spawn(client: kube::Client, clock: Clock, controller: String, instance: String) -> Self {
        let (tx, mut rx) = mpsc::channel::<PodEvent>(EVENT_QUEUE_LENGTH);
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                let ns = event.pod.metadata.namespace.as_deref().unwrap_or_default();
                let object = event_object(&event, &clock, &controller, &instance);
                if let Err(e) = create_unread(&client, Some(ns), &object).await {
                    tracing::debug!(error = %e, reason = event.reason, "writing an event failed");
                }
            }
        });
        Recorder {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Queues an event; drops it if the queue is full.
    pub fn record(&self, event: PodEvent) {
        if self.tx.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The events.k8s.io/v1 Event upstream's recorder makes: named
/// `<pod>.<unix nanos in hex>`, regarding the pod.
pub fn event_object(event: &PodEvent, clock: &Clock, controller: &str, instance: &str) -> Event {
    let now = clock.now();
    let pod = &event.pod;
    let name = pod.metadata.name.clone().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            namespace: pod.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        reporting_controller: Some(controller.to_string()),
        reporting_instance: Some(instance.to_string()),
        action: Some(event.action.to_string()),
        reason: Some(event.reason.to_string()),
        note: Some(event.note.clone()),
        type_: Some(event.type_.to_string()),
        regarding: Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(name),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            resource_version: pod.metadata.resource_version.clone(),
            ..ObjectReference::default()
        }),
        ..Event::default()
    }
}

/// The patch that sets `PodScheduled=False` with `reason` and `message`
/// (and `status.nominatedNodeName` when `nominate` says: a node, or ""
/// to clear it), or `None` when the pod already says exactly that
/// (upstream's `updatePod` writes only on change). The transition time
/// moves only when the status does.
pub fn unschedulable_condition_patch(
    pod: &Pod,
    reason: &str,
    message: &str,
    nominate: Option<&str>,
    now: jiff::Timestamp,
) -> Option<serde_json::Value> {
    let current = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
    let nominated_now = crate::nominator::nominated_node_name(pod);
    let nomination_changes = nominate.is_some_and(|n| n != nominated_now);
    if let Some(c) = current
        && c.status == "False"
        && c.reason.as_deref() == Some(reason)
        && c.message.as_deref() == Some(message)
        && !nomination_changes
    {
        return None;
    }
    let transition = match current {
        Some(c) if c.status == "False" => c.last_transition_time.clone(),
        _ => None,
    }
    .unwrap_or(Time(now));
    let mut patch = json!({"status": {"conditions": [{
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": null,
        "lastTransitionTime": transition,
    }]}});
    if nomination_changes {
        let value = match nominate {
            Some("") | None => serde_json::Value::Null,
            Some(node) => json!(node),
        };
        patch["status"]["nominatedNodeName"] = value;
    }
    Some(patch)
}

/// Writes the `PodScheduled=False` condition (and the nomination) if it
/// changed.
pub async fn set_unschedulable(
    client: kube::Client,
    pod: &Pod,
    reason: &str,
    message: &str,
    nominate: Option<&str>,
    now: jiff::Timestamp,
) -> Result<(), kube::Error> {
    let Some(patch) = unschedulable_condition_patch(pod, reason, message, nominate, now) else {
        return Ok(());
    };
    patch_status(client, pod, patch).await
}

async fn patch_status(
    client: kube::Client,
    pod: &Pod,
    patch: serde_json::Value,
) -> Result<(), kube::Error> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let api: Api<Pod> = Api::namespaced(client, ns);
    api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .map(|_| ())
}

/// The `DisruptionTarget` condition a preemption adds to a victim
/// (`PreemptPod`), or `None` when the victim has it already
/// (`UpdatePodCondition` writes only on change).
pub fn disruption_target_patch(
    victim: &Pod,
    scheduler_name: &str,
    now: jiff::Timestamp,
) -> Option<serde_json::Value> {
    let message = format!("{scheduler_name}: preempting to accommodate a higher priority pod");
    let has = preemption_condition(victim)
        .is_some_and(|c| c.message.as_deref() == Some(message.as_str()));
    if has {
        return None;
    }
    Some(json!({"status": {"conditions": [{
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": message,
        "lastTransitionTime": Time(now),
    }]}}))
}

/// Upstream's `PreemptPod`: the victim gets the `DisruptionTarget`
/// condition, then is deleted gracefully (its own grace period; the UID
/// as a precondition, so a pod recreated under the name is left alone).
pub async fn preempt_pod(
    client: kube::Client,
    victim: &Pod,
    scheduler_name: &str,
    now: jiff::Timestamp,
) -> Result<(), kube::Error> {
    if let Some(patch) = disruption_target_patch(victim, scheduler_name, now) {
        patch_status(client.clone(), victim, patch).await?;
    }
    let ns = victim.metadata.namespace.as_deref().unwrap_or("default");
    let name = victim.metadata.name.as_deref().unwrap_or("");
    let api: Api<Pod> = Api::namespaced(client, ns);
    let params = DeleteParams {
        preconditions: victim.metadata.uid.clone().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    api.delete(name, &params).await.map(|_| ())
}

/// `ClearNominatedNodeName`: a pod whose nomination ended.
pub async fn clear_nominated_node_name(client: kube::Client, pod: &Pod) -> Result<(), kube::Error> {
    if crate::nominator::nominated_node_name(pod).is_empty() {
        return Ok(());
    }
    patch_status(client, pod, json!({"status": {"nominatedNodeName": null}})).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_with_condition(status: &str, reason: &str, message: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "status": {"conditions": [{"type": "PodScheduled", "status": status, "reason": reason,
                "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap_or_default()
    }

    #[test]
    fn the_condition_is_written_only_when_it_changes() {
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap_or_default();
        let same = pod_with_condition("False", "Unschedulable", "0/1 nodes are available: x.");
        assert_eq!(
            unschedulable_condition_patch(
                &same,
                "Unschedulable",
                "0/1 nodes are available: x.",
                None,
                now
            ),
            None
        );
        let patch = unschedulable_condition_patch(
            &same,
            "Unschedulable",
            "0/2 nodes are available: y.",
            None,
            now,
        );
        assert_eq!(
            patch
                .as_ref()
                .map(|p| p["status"]["conditions"][0]["lastTransitionTime"].clone()),
            Some(json!("2026-01-01T00:00:00Z")),
            "still False: the transition time stays"
        );
        let fresh = unschedulable_condition_patch(&Pod::default(), "Unschedulable", "m", None, now);
        assert_eq!(
            fresh.map(|p| p["status"]["conditions"][0].clone()),
            Some(
                json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "m", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:10:00Z"})
            )
        );
    }

    /// The nomination rides on the condition's patch: written when it
    /// changes even if the condition does not, cleared with null.
    #[test]
    fn the_nomination_is_written_with_the_condition_when_it_changes() {
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap_or_default();
        let mut pod = pod_with_condition("False", "Unschedulable", "m");
        let nominate = |pod: &Pod, to: Option<&str>| {
            unschedulable_condition_patch(pod, "Unschedulable", "m", to, now)
                .map(|p| p["status"].get("nominatedNodeName").cloned())
        };
        assert_eq!(nominate(&pod, None), None, "nothing changes");
        assert_eq!(nominate(&pod, Some("")), None, "nothing to clear");
        assert_eq!(nominate(&pod, Some("n1")), Some(Some(json!("n1"))));
        pod.status.get_or_insert_default().nominated_node_name = Some("n1".into());
        assert_eq!(nominate(&pod, Some("n1")), None, "already nominated there");
        assert_eq!(nominate(&pod, Some("")), Some(Some(json!(null))));
    }

    /// Upstream's `PreemptPod` condition, written once.
    #[test]
    fn a_victim_gets_upstreams_disruption_target_condition_once() {
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap_or_default();
        let patch = disruption_target_patch(&Pod::default(), "default-scheduler", now);
        let want = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
            "lastTransitionTime": "2026-01-01T00:10:00Z"});
        assert_eq!(
            patch.as_ref().map(|p| p["status"]["conditions"][0].clone()),
            Some(want.clone())
        );
        let marked: Pod =
            serde_json::from_value(json!({"status": {"conditions": [want]}})).unwrap_or_default();
        assert_eq!(
            disruption_target_patch(&marked, "default-scheduler", now),
            None
        );
    }
}
