//! A served kind's OpenAPI schema, from its k8s-openapi type: the one
//! thing a resource type has to name for the OpenAPI documents (its
//! strategy does, [`crate::strategy::ObjectType`]). Everything else
//! (definitions, references, paths, both dialects) follows from it.

use k8s_openapi::schemars::{JsonSchema, Schema, SchemaGenerator};
use k8s_openapi::{ListableResource, Resource};

/// A served kind's schema: its definition (added, with everything it
/// references, to the generator's definitions) and its names.
#[derive(Clone, Copy)]
pub(crate) struct KindSchema {
    /// Adds the kind's definition (and the definitions it references) to
    /// the generator; returns a `$ref` to it.
    pub(super) add: fn(&mut SchemaGenerator) -> Schema,
    /// The definition's name, upstream's (`io.k8s.api.core.v1.Pod`).
    pub(super) name: fn() -> std::borrow::Cow<'static, str>,
    /// `PodList`: the kind of its lists; `None` for kinds that are never
    /// listed (the access reviews).
    pub(super) list_kind: Option<&'static str>,
}

impl KindSchema {
    /// The schema of the k8s-openapi type `T`.
    pub(crate) fn of<T: JsonSchema + Resource + ListableResource>() -> KindSchema {
        KindSchema {
            add: SchemaGenerator::subschema_for::<T>,
            name: T::schema_name,
            list_kind: Some(T::LIST_KIND),
        }
    }

    /// The schema of the k8s-openapi type `T`, a kind without lists.
    pub(crate) fn unlisted<T: JsonSchema + Resource>() -> KindSchema {
        KindSchema {
            add: SchemaGenerator::subschema_for::<T>,
            name: T::schema_name,
            list_kind: None,
        }
    }
}
