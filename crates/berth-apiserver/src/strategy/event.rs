//! Events: core/v1 Events take every default but their field selectors;
//! events.k8s.io/v1 Events are stored as core/v1 Events (requests are
//! converted, [`crate::conversion`]), so their strategy only names their
//! own type for the OpenAPI documents.

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::events::v1::Event as EventsV1Event;

use super::{ObjectType, ResourceType, Strategy};
use crate::selectors::SelectableKind;

/// The strategy of core/v1 Events.
#[derive(Debug)]
pub struct Events;

impl Strategy for Events {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Event>()
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> SelectableKind {
        SelectableKind::Event
    }
}

/// The strategy of events.k8s.io/v1 Events: everything else is the
/// stored type's ([`Events`]).
#[derive(Debug)]
pub struct EventsV1;

impl Strategy for EventsV1 {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<EventsV1Event>()
    }
}
