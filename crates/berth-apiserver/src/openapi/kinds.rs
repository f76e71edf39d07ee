//! Which k8s-openapi type describes each served kind: the one thing a
//! resource type has to name for the OpenAPI documents. Everything else
//! (definitions, references, paths, both dialects) follows from it.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use k8s_openapi::schemars::{JsonSchema, Schema, SchemaGenerator};
use k8s_openapi::{ListableResource, Resource};

/// A served kind's schema: its definition (added, with everything it
/// references, to the generator's definitions) and its names.
#[derive(Clone, Copy)]
pub(super) struct KindSchema {
    /// Adds the kind's definition (and the definitions it references) to
    /// the generator; returns a `$ref` to it.
    pub(super) add: fn(&mut SchemaGenerator) -> Schema,
    /// The definition's name, upstream's (`io.k8s.api.core.v1.Pod`).
    pub(super) name: fn() -> std::borrow::Cow<'static, str>,
    /// `PodList`: the kind of its lists.
    pub(super) list_kind: &'static str,
}

fn of<T: JsonSchema + Resource + ListableResource>() -> KindSchema {
    KindSchema {
        add: SchemaGenerator::subschema_for::<T>,
        name: T::schema_name,
        list_kind: T::LIST_KIND,
    }
}

/// The schema of the served kind `group/version, kind`; `None` for a kind
/// with no entry (a test checks that every served type has one). Adding a
/// served type adds one line here.
pub(super) fn kind_schema(group: &str, version: &str, kind: &str) -> Option<KindSchema> {
    Some(match (group, version, kind) {
        ("", "v1", "Namespace") => of::<Namespace>(),
        ("", "v1", "Node") => of::<Node>(),
        ("", "v1", "Pod") => of::<Pod>(),
        ("", "v1", "Event") => of::<Event>(),
        ("coordination.k8s.io", "v1", "Lease") => of::<Lease>(),
        ("events.k8s.io", "v1", "Event") => of::<EventsV1Event>(),
        _ => return None,
    })
}
