//! Recording core/v1 Events the way client-go's recorder does: one Event
//! object per occurrence, named after the involved object, written in the
//! background so a slow write never holds up a controller.

use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Api, PostParams};

pub const TYPE_NORMAL: &str = "Normal";
pub const TYPE_WARNING: &str = "Warning";

/// Writes Events as one component.
#[derive(Clone)]
pub struct EventRecorder {
    client: kube::Client,
    clock: Clock,
    component: &'static str,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

/// A reference to a namespaced Pod.
pub fn pod_ref(namespace: &str, name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        uid: uid.map(str::to_string),
        ..ObjectReference::default()
    }
}

/// A reference to a Node (cluster-scoped; its events go to `default`, as
/// upstream's `RecordNodeEvent`).
pub fn node_ref(name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid: uid.map(str::to_string),
        ..ObjectReference::default()
    }
}

impl EventRecorder {
    pub fn new(client: kube::Client, clock: Clock, component: &'static str) -> EventRecorder {
        EventRecorder {
            client,
            clock,
            component,
        }
    }

    /// The Event for an occurrence now.
    pub fn event(
        &self,
        object: ObjectReference,
        type_: &str,
        reason: &str,
        message: String,
    ) -> Event {
        let now = self.clock.now();
        let namespace = object
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let name = format!(
            "{}.{:x}",
            object.name.as_deref().unwrap_or("object"),
            now.as_nanosecond()
        );
        Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: object,
            reason: Some(reason.into()),
            message: Some(message),
            type_: Some(type_.into()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: None::<MicroTime>,
            source: Some(EventSource {
                component: Some(self.component.into()),
                host: None,
            }),
            reporting_component: Some(self.component.into()),
            ..Event::default()
        }
    }

    /// Records an Event in the background.
    pub fn record(&self, object: ObjectReference, type_: &str, reason: &str, message: String) {
        let event = self.event(object, type_, reason, message);
        let client = self.client.clone();
        tokio::spawn(async move {
            let namespace = event.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Event> = Api::namespaced(client, &namespace);
            if let Err(err) = api.create(&PostParams::default(), &event).await {
                tracing::debug!(%err, reason = ?event.reason, "recording event failed");
            }
        });
    }
}
