//! Object metadata as the API server manages it: what it sets on create
//! (uid, creationTimestamp, generation, a name from `generateName`), what
//! it keeps on update, and the `resourceVersion` it reports. (The checks
//! on `metadata` every type shares are `strategy::validate_metadata`: the
//! name rule is the type's.)

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

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
    StoredJson::encode(object).bytes
}

/// An object serialized once, as the store keeps it (without
/// `metadata.resourceVersion`), remembering where its `metadata` members
/// begin, so that the form the API answers with (with `resourceVersion`)
/// is a splice of those bytes rather than a second serialization.
///
/// A create used to serialize the object three times (for the store, for
/// the answer, and again in the watch cache after re-parsing the store's
/// bytes); serialization was the largest single cost of a create.
#[derive(Debug, Clone)]
pub struct StoredJson {
    /// The store's bytes.
    pub bytes: Vec<u8>,
    /// Offset just after `metadata`'s `{`, and whether `metadata` has members.
    metadata: Option<(usize, bool)>,
}

impl StoredJson {
    /// Serializes `object` without `metadata.resourceVersion` (the same
    /// bytes as removing it and serializing, without copying the object).
    pub fn encode(object: &Value) -> StoredJson {
        let Value::Object(top) = object else {
            let mut bytes = Vec::new();
            write_json(&mut bytes, object);
            return StoredJson {
                bytes,
                metadata: None,
            };
        };
        encode_object(
            top.iter().map(|(key, value)| (key.as_str(), value)),
            |key, value| match value {
                Value::Object(meta) if key == "metadata" => {
                    Some(meta.iter().map(|(name, member)| (name.as_str(), member)))
                }
                _ => None,
            },
        )
    }

    /// [`StoredJson::encode`] of an object given as its members, each
    /// already JSON: `top` in key order (as a decoded object serializes
    /// them), `metadata` for the member of that name, its own members in
    /// key order (`resourceVersion` skipped). Copies the members' bytes as
    /// they are: the same bytes as decoding them and encoding, for members
    /// that serde_json wrote (the store's and the cache's JSON).
    pub fn encode_members(
        top: &BTreeMap<&str, &RawValue>,
        metadata: &BTreeMap<&str, &RawValue>,
    ) -> StoredJson {
        encode_object(top.iter().map(|(key, value)| (*key, *value)), |key, _| {
            (key == "metadata").then(|| metadata.iter().map(|(name, member)| (*name, *member)))
        })
    }

    /// The object as the API reports it: `metadata.resourceVersion` set to
    /// `rv` (an object without `metadata` is reported as stored, as
    /// [`set_resource_version`] leaves it).
    pub fn with_resource_version(&self, rv: i64) -> String {
        let mut out = Vec::with_capacity(self.bytes.len() + 40);
        match self.metadata {
            Some((at, has_members)) => {
                out.extend_from_slice(&self.bytes[..at]);
                out.extend_from_slice(b"\"resourceVersion\":\"");
                out.extend_from_slice(rv.to_string().as_bytes());
                out.push(b'"');
                if has_members {
                    out.push(b',');
                }
                out.extend_from_slice(&self.bytes[at..]);
            }
            None => out.extend_from_slice(&self.bytes),
        }
        // Both parts came from serde_json, and the splice sits between two
        // JSON tokens: always UTF-8.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Whether two objects are the same but for `metadata.resourceVersion`:
/// whether they serialize to the same store bytes, without serializing.
pub fn equal_except_resource_version(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter()
            .all(|(key, value)| match (key.as_str(), b.get(key)) {
                ("metadata", Some(other)) => metadata_equal(value, other),
                (_, Some(other)) => value == other,
                (_, None) => false,
            })
}

fn metadata_equal(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let members = |m: &'_ Map<String, Value>| m.keys().filter(|k| *k != "resourceVersion").count();
    members(a) == members(b)
        && a.iter()
            .filter(|(key, _)| *key != "resourceVersion")
            .all(|(key, value)| b.get(key) == Some(value))
}

/// An object's store bytes from its members in key order; the member for
/// which `metadata` gives members is written from those, without
/// `resourceVersion`, and its place remembered.
fn encode_object<'a, V, M>(
    top: impl Iterator<Item = (&'a str, &'a V)>,
    mut metadata: impl FnMut(&str, &'a V) -> Option<M>,
) -> StoredJson
where
    V: serde::Serialize + ?Sized + 'a,
    M: Iterator<Item = (&'a str, &'a V)>,
{
    let mut bytes = Vec::with_capacity(1024);
    let mut metadata_at = None;
    bytes.push(b'{');
    for (i, (key, value)) in top.enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        write_json(&mut bytes, key);
        bytes.push(b':');
        match metadata(key, value) {
            Some(members) => metadata_at = Some(write_members(&mut bytes, members)),
            None => write_json(&mut bytes, value),
        }
    }
    bytes.push(b'}');
    StoredJson {
        bytes,
        metadata: metadata_at,
    }
}

/// Writes `metadata`'s members as an object without `resourceVersion`;
/// returns the offset just after its `{` and whether it has members.
fn write_members<'a, V: serde::Serialize + ?Sized + 'a>(
    bytes: &mut Vec<u8>,
    members: impl Iterator<Item = (&'a str, &'a V)>,
) -> (usize, bool) {
    bytes.push(b'{');
    let start = bytes.len();
    let mut written = 0;
    for (name, member) in members.filter(|(name, _)| *name != "resourceVersion") {
        if written > 0 {
            bytes.push(b',');
        }
        written += 1;
        write_json(bytes, name);
        bytes.push(b':');
        write_json(bytes, member);
    }
    bytes.push(b'}');
    (start, written > 0)
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Serializing a JSON value or a string into memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
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

/// What the server fills in on create: kind and apiVersion, namespace
/// (`None` for a cluster-scoped type: none), uid, creationTimestamp,
/// generation; and what a client may not set.
pub fn prepare_for_create(
    object: &mut Value,
    (kind, api_version): (&str, String),
    namespace: Option<&str>,
    uid: String,
    now: jiff::Timestamp,
) {
    if let Some(map) = object.as_object_mut() {
        map.insert("kind".into(), Value::String(kind.into()));
        map.insert("apiVersion".into(), Value::String(api_version));
    }
    let Some(meta) = metadata_mut(object) else {
        return;
    };
    match namespace {
        Some(namespace) => meta.insert("namespace".into(), Value::String(namespace.into())),
        None => meta.remove("namespace"),
    };
    meta.insert("uid".into(), Value::String(uid));
    meta.insert("creationTimestamp".into(), Value::String(format_time(now)));
    meta.insert("generation".into(), json!(1));
    drop_empty_lists(meta);
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
    let no_meta = Map::new();
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&no_meta);
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
    drop_empty_lists(meta);
}

/// `ownerReferences` and `finalizers` left empty (the garbage collector
/// took the last one off) are dropped, as Go's `omitempty` drops them
/// upstream: clients see the field gone, not `[]`.
fn drop_empty_lists(meta: &mut Map<String, Value>) {
    for list in ["ownerReferences", "finalizers"] {
        if meta
            .get(list)
            .is_some_and(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
        {
            meta.remove(list);
        }
    }
}

/// Recounts `generation` against the stored object once admission has had
/// its say: the stored generation, one more when `changed` (what counts as
/// a change is the type's rule, `Strategy::bumps_generation`).
pub fn recount_generation(object: &mut Value, old: &Value, changed: bool) {
    let generation = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    if let Some(meta) = metadata_mut(object) {
        meta.insert(
            "generation".into(),
            json!(if changed { generation + 1 } else { generation }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    /// The store's bytes are exactly what serializing the object without
    /// `resourceVersion` gives, and the API's form is the object with it:
    /// the splice changes no other byte's meaning.
    #[test]
    fn stored_json_is_the_object_without_resource_version_and_splices_it_back() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7", "labels": {"a": "b\"c"}}, "spec": {"nodeName": "n1"}, "status": {}}),
            json!({"kind": "Pod", "metadata": {"resourceVersion": "7"}}),
            json!({"kind": "Pod", "metadata": {}}),
            json!({"kind": "Pod", "metadata": {"name": "ünïcode", "annotations": {"x": "{\"metadata\":{}}"}}}),
            json!({"kind": "Pod"}),
            json!({"kind": "Pod", "metadata": "not an object"}),
            json!(["not", "an", "object"]),
        ];
        for object in objects {
            let encoded = StoredJson::encode(&object);
            let mut without = object.clone();
            if let Some(meta) = without.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
            assert_eq!(encoded.bytes, without.to_string().into_bytes(), "{object}");
            let answered: Value = serde_json::from_str(&encoded.with_resource_version(42))
                .unwrap_or_else(|e| panic!("{object}: {e}"));
            let mut want = object.clone();
            if want.get("metadata").is_some_and(Value::is_object) {
                set_resource_version(&mut want, 42);
            }
            assert_eq!(answered, want, "{object}");
        }
    }

    /// The no-op update check agrees with comparing the store's bytes.
    #[test]
    fn equal_except_resource_version_matches_comparing_stored_bytes() {
        let base = json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 1}});
        let cases = [
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "9"}, "spec": {"x": 1}}),
            json!({"kind": "Pod", "metadata": {"name": "a"}, "spec": {"x": 1}}),
            json!({"kind": "Pod", "metadata": {"name": "b", "resourceVersion": "1"}, "spec": {"x": 1}}),
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1", "uid": "u"}, "spec": {"x": 1}}),
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 2}}),
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 1.0}}),
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1"}}),
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 1}, "status": {}}),
            json!({"kind": "Pod", "metadata": "a", "spec": {"x": 1}}),
            json!("a string"),
        ];
        for other in cases {
            assert_eq!(
                equal_except_resource_version(&base, &other),
                for_storage(&base) == for_storage(&other),
                "{other}"
            );
            assert_eq!(
                equal_except_resource_version(&other, &base),
                for_storage(&base) == for_storage(&other),
                "{other} (reversed)"
            );
        }
    }

    #[test]
    fn create_fills_server_fields_and_drops_client_ones() {
        let mut pod = json!({"metadata": {"name": "web", "resourceVersion": "7", "deletionTimestamp": "x"}, "spec": {}});
        prepare_for_create(
            &mut pod,
            ("Pod", "v1".into()),
            Some("default"),
            "u-1".into(),
            now(),
        );
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
}
