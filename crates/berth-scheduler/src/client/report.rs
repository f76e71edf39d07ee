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

use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;

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
                let ns = event.pod.metadata.namespace.clone().unwrap_or_default();
                let api: Api<Event> = Api::namespaced(client.clone(), &ns);
                let object = event_object(&event, &clock, &controller, &instance);
                if let Err(e) = api.create(&PostParams::default(), &object).await {
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

/// The patch that sets `PodScheduled=False` with `reason` and `message`,
/// or `None` when the pod already says exactly that (upstream's
/// `UpdatePodCondition` writes only on change). The transition time moves
/// only when the status does.
pub fn unschedulable_condition_patch(
    pod: &Pod,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> Option<serde_json::Value> {
    let current = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
    if let Some(c) = current
        && c.status == "False"
        && c.reason.as_deref() == Some(reason)
        && c.message.as_deref() == Some(message)
    {
        return None;
    }
    let transition = match current {
        Some(c) if c.status == "False" => c.last_transition_time.clone(),
        _ => None,
    }
    .unwrap_or(Time(now));
    Some(json!({"status": {"conditions": [{
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": null,
        "lastTransitionTime": transition,
    }]}}))
}

/// Writes the `PodScheduled=False` condition if it changed.
pub async fn set_unschedulable(
    client: kube::Client,
    pod: &Pod,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> Result<(), kube::Error> {
    let Some(patch) = unschedulable_condition_patch(pod, reason, message, now) else {
        return Ok(());
    };
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let api: Api<Pod> = Api::namespaced(client, ns);
    api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .map(|_| ())
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
            unschedulable_condition_patch(&same, "Unschedulable", "0/1 nodes are available: x.", now),
            None
        );
        let patch =
            unschedulable_condition_patch(&same, "Unschedulable", "0/2 nodes are available: y.", now);
        assert_eq!(
            patch.as_ref().map(|p| p["status"]["conditions"][0]["lastTransitionTime"].clone()),
            Some(json!("2026-01-01T00:00:00Z")),
            "still False: the transition time stays"
        );
        let fresh = unschedulable_condition_patch(&Pod::default(), "Unschedulable", "m", now);
        assert_eq!(
            fresh.map(|p| p["status"]["conditions"][0].clone()),
            Some(json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "m", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:10:00Z"}))
        );
    }
}
