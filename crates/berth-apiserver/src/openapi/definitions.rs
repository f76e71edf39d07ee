//! The schema definitions of the served kinds, from k8s-openapi's
//! `schemars` support, with what upstream's generator adds from Go tags and
//! markers: `x-kubernetes-group-version-kind` on each kind (and its list),
//! patch strategies and merge keys (from the strategic-merge table in
//! `patch/schema.rs`, the one copy of those tags), list types
//! (`list_types.rs`), and the int-or-string and quantity shapes of each
//! dialect.
//!
//! Definitions are built once in a neutral form, which is OpenAPI v2's
//! (`#/definitions/<name>` references, with a description beside a
//! reference); [`to_dialect`] turns a whole document into v2 or v3.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ListMeta, Patch, Status};
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::kinds::KindSchema;
use super::list_types::{LIST_FIELDS, ListType};
use crate::patch::PatchKind;
use crate::resources::ResourceType;

/// Where neutral references point: `#/definitions/<name>`.
pub(super) const V2_REF_PREFIX: &str = "#/definitions/";
/// Where OpenAPI v3 references point: `#/components/schemas/<name>`.
const V3_REF_PREFIX: &str = "#/components/schemas/";

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// The operations' shared definitions (request and response bodies that
/// are not a served kind).
pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// Kinds whose `metadata` upstream requires (the Go field has no
/// `omitempty`). k8s-openapi marks `metadata` required on every kind.
const METADATA_REQUIRED: &[&str] = &["io.k8s.api.core.v1.Event", "io.k8s.api.events.v1.Event"];

/// The OpenAPI version a document is served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    V2,
    V3,
}

/// The schema of a served type's objects, which its strategy names.
pub(super) fn kind_schema(rt: &ResourceType) -> KindSchema {
    rt.strategy.object_type().schema
}

/// A served kind's definition name (upstream's, e.g.
/// `io.k8s.api.core.v1.Pod`) and its list's.
pub(super) fn names(rt: &ResourceType) -> (String, Option<String>) {
    let schema = kind_schema(rt);
    let name = (schema.name)().into_owned();
    let list = schema.list_kind.map(|kind| list_name(&name, kind));
    (name, list)
}

/// `io.k8s.api.core.v1.Pod` → `io.k8s.api.core.v1.PodList`.
fn list_name(name: &str, list_kind: &str) -> String {
    match name.rsplit_once('.') {
        Some((package, _)) => format!("{package}.{list_kind}"),
        None => list_kind.to_string(),
    }
}

/// The definitions of `types` and of everything they reference, in the
/// neutral form, annotated.
pub(super) fn definitions(types: &[&ResourceType]) -> Map<String, Value> {
    let mut generator = SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = V2_REF_PREFIX.trim_start_matches('#').into();
            s.meta_schema = None;
            // Keep a description beside a reference, as OpenAPI v2 does.
            s.transforms.clear();
        })
        .into_generator();
    let kinds: Vec<_> = types.iter().map(|rt| (*rt, kind_schema(rt))).collect();
    for (_, schema) in &kinds {
        (schema.add)(&mut generator);
    }
    generator.subschema_for::<ListMeta>();
    generator.subschema_for::<DeleteOptions>();
    generator.subschema_for::<Status>();
    generator.subschema_for::<Patch>();
    let mut definitions = generator.take_definitions(false);
    for (rt, schema) in kinds {
        let name = (schema.name)().into_owned();
        let Some(definition) = definitions.get_mut(&name) else {
            continue;
        };
        add_gvk(definition, rt.group, rt.version, rt.kind);
        if !METADATA_REQUIRED.contains(&name.as_str()) {
            drop_required(definition, "metadata");
        }
        if let Some(list_kind) = schema.list_kind {
            let list = list_definition(definition, &name, rt, list_kind);
            definitions.insert(list_name(&name, list_kind), list);
        }
        let patch_type = PatchKind::from_group_kind(rt.group, rt.kind).schema();
        add_patch_strategies(&mut definitions, &name, patch_type, 0);
    }
    add_list_types(&mut definitions);
    definitions
}

fn add_gvk(definition: &mut Value, group: &str, version: &str, kind: &str) {
    let gvk = json!({"group": group, "kind": kind, "version": version});
    if let Some(object) = definition.as_object_mut() {
        let list = object
            .entry("x-kubernetes-group-version-kind")
            .or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut()
            && !list.contains(&gvk)
        {
            list.push(gvk);
        }
    }
}

fn drop_required(definition: &mut Value, field: &str) {
    let Some(object) = definition.as_object_mut() else {
        return;
    };
    if let Some(required) = object.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != field);
        if required.is_empty() {
            object.remove("required");
        }
    }
}

/// `PodList`: apiVersion and kind as the kind has them, `ListMeta`, items.
fn list_definition(kind: &Value, name: &str, rt: &ResourceType, list_kind: &str) -> Value {
    let property = |field: &str| kind["properties"][field].clone();
    let mut list = json!({
        "description": format!("{list_kind} is a list of {}.", rt.kind),
        "type": "object",
        "properties": {
            "apiVersion": property("apiVersion"),
            "kind": property("kind"),
            "metadata": {
                "$ref": format!("{V2_REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"),
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
            "items": {
                "description": format!("List of {}.", rt.plural),
                "type": "array",
                "items": {"$ref": format!("{V2_REF_PREFIX}{name}")},
            },
        },
        "required": ["items"],
    });
    add_gvk(&mut list, rt.group, rt.version, list_kind);
    list
}

/// The definition a property points at: its own reference, or its items'.
fn referenced(property: &Map<String, Value>) -> Option<String> {
    property
        .get("$ref")
        .or_else(|| property.get("items").and_then(|items| items.get("$ref")))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(V2_REF_PREFIX))
        .map(str::to_string)
}

/// Copies the strategic-merge tags of `ty` onto the properties of the
/// definition `name`, and follows nested structs. `depth` guards against a
/// cyclic table.
fn add_patch_strategies(
    definitions: &mut Map<String, Value>,
    name: &str,
    ty: &'static crate::patch::PatchSchema,
    depth: usize,
) {
    const MAX_DEPTH: usize = 16;
    if depth > MAX_DEPTH {
        return;
    }
    for field in ty.fields {
        let Some(property) = definitions
            .get_mut(name)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(field.name))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Some(strategy) = field.tag() {
            property.insert("x-kubernetes-patch-strategy".into(), strategy.into());
        }
        if !field.merge_key.is_empty() {
            property.insert(
                "x-kubernetes-patch-merge-key".into(),
                field.merge_key.into(),
            );
        }
        if let (Some(nested), Some(target)) = (field.ty, referenced(property)) {
            add_patch_strategies(definitions, &target, nested, depth + 1);
        }
    }
}

fn add_list_types(definitions: &mut Map<String, Value>) {
    for (name, definition) in definitions.iter_mut() {
        for field in LIST_FIELDS.iter().filter(|f| f.is_in(name)) {
            let Some(property) = definition
                .get_mut("properties")
                .and_then(|p| p.get_mut(field.property))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            match field.list_type {
                ListType::Set => {
                    property.insert("x-kubernetes-list-type".into(), "set".into());
                }
                ListType::Map(keys) => {
                    property.insert("x-kubernetes-list-type".into(), "map".into());
                    property.insert("x-kubernetes-list-map-keys".into(), json!(keys));
                }
            }
        }
    }
}

/// Gives int-or-string and quantity the shapes upstream publishes in
/// `dialect` (k8s-openapi describes both with the CRD-only
/// `x-kubernetes-int-or-string`). The v3 references are [`v3_references`]'.
pub(super) fn to_dialect(definitions: &mut Map<String, Value>, dialect: Dialect) {
    let description = |name: &str, definitions: &Map<String, Value>| {
        definitions
            .get(name)
            .and_then(|d| d.get("description"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let int_or_string = description(INT_OR_STRING, definitions);
    let quantity = description(QUANTITY, definitions);
    let (int_or_string, quantity) = match dialect {
        Dialect::V2 => (
            json!({"description": int_or_string, "type": "string", "format": "int-or-string"}),
            json!({"description": quantity, "type": "string"}),
        ),
        Dialect::V3 => (
            json!({"description": int_or_string, "format": "int-or-string",
                   "oneOf": [{"type": "integer"}, {"type": "string"}]}),
            json!({"description": quantity, "oneOf": [{"type": "string"}, {"type": "number"}]}),
        ),
    };
    if definitions.contains_key(INT_OR_STRING) {
        definitions.insert(INT_OR_STRING.into(), int_or_string);
    }
    if definitions.contains_key(QUANTITY) {
        definitions.insert(QUANTITY.into(), quantity);
    }
}

/// Rewrites every reference in `value` (a whole v3 document) to
/// `#/components/schemas/`, wrapping a reference that has a sibling (a
/// description) in `allOf`, as upstream's v3 documents do: OpenAPI 3.0
/// ignores the siblings of a bare `$ref`.
pub(super) fn v3_references(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref") {
                if let Some(name) = reference.strip_prefix(V2_REF_PREFIX) {
                    *reference = format!("{V3_REF_PREFIX}{name}");
                }
                if object.len() > 1
                    && let Some(reference) = object.remove("$ref")
                {
                    object.insert("allOf".into(), json!([{"$ref": reference}]));
                }
                return;
            }
            object.values_mut().for_each(v3_references);
        }
        Value::Array(items) => items.iter_mut().for_each(v3_references),
        _ => {}
    }
}
