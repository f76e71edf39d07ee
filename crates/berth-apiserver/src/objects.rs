//! Object metadata as the API server manages it: what it sets on create
//! (uid, creationTimestamp, generation, a name from `generateName`), what
//! it keeps on update, the `resourceVersion` it reports, and the checks on
//! `metadata` every resource shares.

use berth_core::validation::names::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};
use berth_core::validation::{ErrorList, FieldError, Path};
use serde_json::{Map, Value, json};

use crate::resources::{NAMESPACES, ResourceType};

/// Upstream's alphabet for `generateName` suffixes: no vowels (no words)
/// and no look-alike characters.
const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const GENERATE_SUFFIX_LENGTH: usize = 5;
/// Names built from `generateName` are cut so the result stays valid.
const MAX_GENERATED_NAME_LENGTH: usize = 63;

/// Time as the API writes it: RFC 3339, whole seconds, UTC.
pub fn format_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Time with microseconds (`MicroTime`: events, lease renewTime).
pub fn format_micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

/// `metadata` of an object, creating it if absent (objects from clients
/// may omit it; validation then reports the missing name).
pub fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = object.as_object_mut()?;
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
}

pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn name_of(object: &Value) -> &str {
    meta_str(object, "name")
}

pub fn resource_version_of(object: &Value) -> &str {
    meta_str(object, "resourceVersion")
}

/// Sets `metadata.resourceVersion` (what the API reports; the store keeps
/// objects without it).
pub fn set_resource_version(object: &mut Value, rv: i64) {
    if let Some(meta) = metadata_mut(object) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The object as the store keeps it: without `resourceVersion`.
pub fn for_storage(object: &Value) -> Vec<u8> {
    // A new object has no resourceVersion yet: serialize it as it is rather than copying it
    // to remove a field that is not there (the same bytes, one deep copy less per create).
    if object.pointer("/metadata/resourceVersion").is_none() {
        return to_json_bytes(object);
    }
    into_storage(object.clone())
}

/// [`for_storage`] for an object the caller is done with: `resourceVersion`
/// is removed in place, without the deep copy.
pub fn into_storage(mut object: Value) -> Vec<u8> {
    if let Some(meta) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("resourceVersion");
    }
    to_json_bytes(&object)
}

/// Compact JSON, the bytes `Value`'s `Display` writes, without going
/// through `fmt::Formatter` (a call per token; ~2% of a binding's CPU).
pub fn to_json_bytes(object: &Value) -> Vec<u8> {
    // Serializing a Value cannot fail: its map keys are strings.
    serde_json::to_vec(object).unwrap_or_default()
}

/// A fresh name from `generateName`.
pub fn generate_name(base: &str, random: impl FnMut() -> u32) -> String {
    let mut random = random;
    let keep = MAX_GENERATED_NAME_LENGTH - GENERATE_SUFFIX_LENGTH;
    let base: String = base.chars().take(keep).collect();
    let suffix: String = (0..GENERATE_SUFFIX_LENGTH)
        .map(|_| GENERATE_ALPHABET[random() as usize % GENERATE_ALPHABET.len()] as char)
        .collect();
    format!("{base}{suffix}")
}

/// What the server fills in on create: kind and apiVersion, namespace,
/// uid, creationTimestamp, generation; and what a client may not set.
pub fn prepare_for_create(
    rt: &ResourceType,
    object: &mut Value,
    namespace: &str,
    uid: String,
    now: jiff::Timestamp,
) {
    if let Some(map) = object.as_object_mut() {
        map.insert("kind".into(), Value::String(rt.kind.into()));
        map.insert("apiVersion".into(), Value::String(rt.api_version()));
    }
    let Some(meta) = metadata_mut(object) else {
        return;
    };
    if rt.namespaced {
        meta.insert("namespace".into(), Value::String(namespace.into()));
    } else {
        meta.remove("namespace");
    }
    meta.insert("uid".into(), Value::String(uid));
    meta.insert("creationTimestamp".into(), Value::String(format_time(now)));
    meta.insert("generation".into(), json!(1));
    for server_owned in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        meta.remove(server_owned);
    }
}

/// On update the server keeps identity and bookkeeping from the stored
/// object, whatever the client sent, and bumps `generation` when the spec
/// changed.
pub fn prepare_for_update(object: &mut Value, old: &Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let spec_changed = object.get("spec") != old.get("spec");
    if let Some(map) = object.as_object_mut() {
        for field in ["kind", "apiVersion"] {
            if let Some(v) = old.get(field) {
                map.insert(field.into(), v.clone());
            }
        }
    }
    let Some(meta) = metadata_mut(object) else {
        return;
    };
    for kept in [
        "uid",
        "creationTimestamp",
        "namespace",
        "name",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match old_meta.get(kept) {
            Some(v) => meta.insert(kept.into(), v.clone()),
            None => meta.remove(kept),
        };
    }
    let generation = old_meta
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = if spec_changed {
        generation + 1
    } else {
        generation
    };
    meta.insert("generation".into(), json!(generation));
}

/// Recounts `generation` against the stored object once admission has had
/// its say: only a spec that really changed counts.
pub fn recount_generation(object: &mut Value, old: &Value) {
    let generation = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let changed = object.get("spec") != old.get("spec");
    if let Some(meta) = metadata_mut(object) {
        meta.insert(
            "generation".into(),
            json!(if changed { generation + 1 } else { generation }),
        );
    }
}

/// `ValidateObjectMeta` for what berth checks: a name (or generateName on
/// create) of the right form, labels and annotations keys, label values.
pub fn validate_metadata(rt: &ResourceType, object: &Value) -> ErrorList {
    let path = Path::new("metadata");
    let mut errors = ErrorList::new();
    let name = name_of(object);
    if name.is_empty() {
        errors.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        let problems = if std::ptr::eq(rt, &NAMESPACES) {
            is_dns1123_label(name)
        } else {
            is_dns1123_subdomain(name)
        };
        for problem in problems {
            errors.push(FieldError::invalid(&path.child("name"), name, problem));
        }
    }
    let labels = object.get("metadata").and_then(|m| m.get("labels"));
    if let Some(labels) = labels.and_then(Value::as_object) {
        for (key, value) in labels {
            for problem in is_qualified_name(key) {
                errors.push(FieldError::invalid(
                    &path.child("labels"),
                    key.as_str(),
                    problem,
                ));
            }
            let value = value.as_str().unwrap_or("");
            for problem in is_valid_label_value(value) {
                errors.push(FieldError::invalid(&path.child("labels"), value, problem));
            }
        }
    }
    let annotations = object.get("metadata").and_then(|m| m.get("annotations"));
    if let Some(annotations) = annotations.and_then(Value::as_object) {
        for key in annotations.keys() {
            for problem in is_qualified_name(&key.to_lowercase()) {
                errors.push(FieldError::invalid(
                    &path.child("annotations"),
                    key.as_str(),
                    problem,
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::PODS;

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn create_fills_server_fields_and_drops_client_ones() {
        let mut pod = json!({"metadata": {"name": "web", "resourceVersion": "7", "deletionTimestamp": "x"}, "spec": {}});
        prepare_for_create(&PODS, &mut pod, "default", "u-1".into(), now());
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["apiVersion"], "v1");
        assert_eq!(pod["metadata"]["namespace"], "default");
        assert_eq!(pod["metadata"]["uid"], "u-1");
        assert_eq!(pod["metadata"]["creationTimestamp"], "2027-01-15T08:00:00Z");
        assert_eq!(pod["metadata"]["generation"], 1);
        assert!(pod["metadata"].get("resourceVersion").is_none());
        assert!(pod["metadata"].get("deletionTimestamp").is_none());
    }

    #[test]
    fn update_keeps_identity_and_counts_spec_changes() {
        let old = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "creationTimestamp": "t", "generation": 3}, "spec": {"a": 1}});
        let mut new = json!({"metadata": {"name": "web", "uid": "forged", "labels": {"x": "y"}}, "spec": {"a": 2}});
        prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["uid"], "u-1");
        assert_eq!(new["metadata"]["creationTimestamp"], "t");
        assert_eq!(new["metadata"]["namespace"], "default");
        assert_eq!(new["metadata"]["generation"], 4);
        assert_eq!(new["metadata"]["labels"]["x"], "y");
        let mut same = json!({"metadata": {"name": "web"}, "spec": {"a": 1}});
        prepare_for_update(&mut same, &old);
        assert_eq!(same["metadata"]["generation"], 3);
    }

    #[test]
    fn generated_names_use_upstream_alphabet_and_stay_short() {
        let mut n = 0u32;
        let name = generate_name("web-", || {
            n += 1;
            n
        });
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..].bytes().all(|c| GENERATE_ALPHABET.contains(&c)));
        assert_eq!(generate_name(&"a".repeat(100), || 0).len(), 63);
    }

    #[test]
    fn metadata_validation_reports_fields() {
        let cases: &[(Value, &[&str])] = &[
            (json!({"metadata": {"name": "web"}}), &[]),
            (
                json!({"metadata": {}}),
                &["metadata.name: Required value: name or generateName is required"],
            ),
            (
                json!({"metadata": {"name": "Web"}}),
                &["metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain"],
            ),
            (
                json!({"metadata": {"name": "web", "labels": {"bad key": "v"}}}),
                &["metadata.labels: Invalid value: \"bad key\""],
            ),
        ];
        for (object, want) in cases {
            let got: Vec<String> = validate_metadata(&PODS, object)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got.len(), want.len(), "{object}: {got:?}");
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(g.starts_with(w), "{g} vs {w}");
            }
        }
        let ns = validate_metadata(&NAMESPACES, &json!({"metadata": {"name": "a.b"}}));
        assert_eq!(ns.len(), 1);
    }
}
