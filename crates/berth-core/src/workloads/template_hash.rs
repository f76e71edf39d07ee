//! The pod-template hash that names a Deployment's ReplicaSets (and a
//! DaemonSet's ControllerRevisions): upstream's `controller.ComputeHash`,
//! FNV-1a (32 bit) over the template, then the collision count's bytes,
//! printed in decimal and encoded with `rand.SafeEncodeString`.
//!
//! Difference from upstream: upstream hashes the template's Go
//! deep-printing (`spew` of the Go struct, field by field in Go's
//! declaration order, nil pointers with their Go type names). That text
//! depends on Go's types of one Kubernetes release (upstream's own hashes
//! change when a field is added) and cannot be reproduced from the API
//! objects, so berth hashes the template's canonical JSON instead (JSON
//! with map keys sorted, and absent, empty and null fields alike left
//! out; see [`canonical_json`]). The values therefore differ from
//! upstream's for the same template; they are stable across berth
//! releases for a given template, which is what naming needs. Nothing
//! outside the controllers compares them: clients only read the label.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

/// `rand.SafeEncodeString`'s alphabet: no vowels (no words) and no
/// look-alike characters.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1a, 32 bit, over `bytes`, continuing from `hash`.
fn fnv1a32(mut hash: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(16_777_619);
    }
    hash
}

const FNV32_OFFSET: u32 = 2_166_136_261;

/// `rand.SafeEncodeString`: each character mapped into [`ALPHANUMS`].
pub fn safe_encode_string(s: &str) -> String {
    s.chars()
        .map(|c| char::from(ALPHANUMS[(c as usize) % ALPHANUMS.len()]))
        .collect()
}

/// Drops what the API does not distinguish from absent: nulls, empty
/// lists and empty objects (upstream's `Semantic.DeepEqual` treats nil
/// and empty lists and maps alike).
pub(crate) fn prune(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().filter_map(prune).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let map: serde_json::Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| prune(v).map(|v| (k, v)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other),
    }
}

/// The template as canonical JSON: serde_json's maps are sorted by key,
/// and [`prune`] leaves out what is empty, so two templates the API
/// cannot tell apart give the same bytes. A list element that is itself
/// empty (e.g. a container with no fields) is dropped too, which the API
/// would refuse anyway.
pub fn canonical_json(template: &PodTemplateSpec) -> Vec<u8> {
    let value = serde_json::to_value(template).unwrap_or(Value::Null);
    prune(value)
        .map(|v| v.to_string().into_bytes())
        .unwrap_or_default()
}

/// `controller.ComputeHash`: the template's hash, changed by a collision
/// count (which the controller bumps when the name it would use is taken
/// by an object with another template).
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut hash = fnv1a32(FNV32_OFFSET, &canonical_json(template));
    if let Some(count) = collision_count {
        // Upstream writes the count as 8 little-endian bytes of which it
        // fills the first four (`binary.LittleEndian.PutUint32`).
        let mut bytes = [0_u8; 8];
        bytes[..4].copy_from_slice(&(count as u32).to_le_bytes());
        hash = fnv1a32(hash, &bytes);
    }
    safe_encode_string(&hash.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::test_objects::template;

    #[test]
    fn fnv1a32_matches_the_reference_vectors() {
        struct Case {
            input: &'static str,
            want: u32,
        }
        for case in [
            Case {
                input: "",
                want: 0x811c_9dc5,
            },
            Case {
                input: "a",
                want: 0xe40c_292c,
            },
            Case {
                input: "foobar",
                want: 0xbf9c_f968,
            },
        ] {
            assert_eq!(
                fnv1a32(FNV32_OFFSET, case.input.as_bytes()),
                case.want,
                "{:?}",
                case.input
            );
        }
    }

    #[test]
    fn safe_encode_string_maps_into_the_alphabet() {
        // '0' is 48: 48 % 27 = 21 -> '4'; '9' is 57: 57 % 27 = 3 -> 'f'.
        assert_eq!(safe_encode_string("09"), "4f");
        assert!(
            safe_encode_string("1234567890")
                .bytes()
                .all(|b| ALPHANUMS.contains(&b))
        );
    }

    /// Upstream `TestComputeHash`: another collision count, another hash;
    /// plus what the hash must not depend on.
    #[test]
    fn hash_changes_with_the_template_and_the_collision_count() {
        let empty = PodTemplateSpec::default();
        assert_ne!(compute_hash(&empty, Some(1)), compute_hash(&empty, Some(2)));
        assert_ne!(
            compute_hash(&empty, None),
            compute_hash(&empty, Some(i32::MAX))
        );
        assert_ne!(
            compute_hash(&template("nginx:1"), None),
            compute_hash(&template("nginx:2"), None)
        );
        assert_eq!(
            compute_hash(&template("nginx:1"), None),
            compute_hash(&template("nginx:1"), None)
        );
        let mut empty_lists = template("nginx:1");
        if let Some(spec) = empty_lists.spec.as_mut() {
            spec.volumes = Some(vec![]);
            spec.node_selector = Some(Default::default());
        }
        assert_eq!(
            compute_hash(&empty_lists, None),
            compute_hash(&template("nginx:1"), None)
        );
        let hash = compute_hash(&template("nginx:1"), None);
        assert!(!hash.is_empty() && hash.len() <= 10, "{hash}");
    }
}
