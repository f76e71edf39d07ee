//! Events: core/v1 Events take every default but their field selectors
//! and their garbage collection policy (they own nothing, so a deletion
//! never adds the garbage collector's finalizers to them, as upstream's
//! `Unsupported`); events.k8s.io/v1 Events are stored as core/v1 Events
//! (requests are converted, [`crate::conversion`]), so their strategy
//! names their own type for the OpenAPI documents and the same policy.

use berth_core::deletion::DefaultPolicy;
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

    /// Events own nothing (upstream's event strategy: `Unsupported`): a
    /// deletion never waits for the garbage collector.
    fn default_garbage_collection_policy(&self) -> DefaultPolicy {
        DefaultPolicy::Unsupported
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

    fn default_garbage_collection_policy(&self) -> DefaultPolicy {
        DefaultPolicy::Unsupported
    }
}
