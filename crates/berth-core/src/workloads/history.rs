//! ControllerRevisions: the recorded templates of a DaemonSet or a
//! StatefulSet, from which pods of an older revision are recreated and to
//! which `kubectl rollout undo` goes back. Ported from upstream's
//! `pkg/controller/history` (`NewControllerRevision`,
//! `HashControllerRevision`, `ControllerRevisionName`,
//! `SortControllerRevisions`, `EqualRevision`, `FindEqualRevisions`) and
//! the `getPatch`/`ApplyRevision` pair both controllers use: a revision's
//! data is `{"spec":{"template":{..., "$patch":"replace"}}}`.
//!
//! Difference from upstream: upstream hashes the JSON bytes Go writes for
//! the template, which carry Go-only artifacts (`"creationTimestamp":null`,
//! `"resources":{}`); berth hashes its canonical JSON
//! ([`super::template_hash::canonical_json`]'s rules), so revision names
//! differ from upstream's for the same template, and compares revision
//! data as JSON values rather than bytes.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::{Value, json};

use super::CONTROLLER_REVISION_HASH_LABEL;
use super::ownership::new_controller_ref;
use super::template_hash::{prune, safe_encode_string};

/// The longest revision name prefix (`ControllerRevisionName` keeps names
/// within 253 characters).
const MAX_PREFIX_LEN: usize = 223;

/// `getPatch`: the revision data that restores `template`.
pub fn template_patch(template: &PodTemplateSpec) -> Value {
    let mut template = serde_json::to_value(template).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut template {
        map.insert("$patch".into(), Value::String("replace".into()));
    } else {
        template = json!({"$patch": "replace"});
    }
    json!({"spec": {"template": template}})
}

/// `ApplyRevision` for `template_patch` data: the template it replaces
/// with; `None` when the data holds none.
pub fn revision_template(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = revision.data.0.get("spec")?.get("template")?.clone();
    if let Value::Object(map) = &mut template {
        map.remove("$patch");
    }
    serde_json::from_value(template).ok()
}

/// FNV-1 (not 1a), 32 bit: `hash/fnv.New32`, as upstream's revision hash.
fn fnv1_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261_u32, |hash, &b| {
        hash.wrapping_mul(16_777_619) ^ u32::from(b)
    })
}

fn canonical(data: &Value) -> Vec<u8> {
    prune(data.clone())
        .map(|v| v.to_string().into_bytes())
        .unwrap_or_default()
}

/// `HashControllerRevision`: the data's hash, changed by `probe` (the
/// collision count) when set.
pub fn hash_controller_revision(revision: &ControllerRevision, probe: Option<i32>) -> String {
    let mut bytes = canonical(&revision.data.0);
    if let Some(probe) = probe {
        bytes.extend(probe.to_string().into_bytes());
    }
    safe_encode_string(&fnv1_32(&bytes).to_string())
}

/// `ControllerRevisionName`: `<prefix>-<hash>`, the prefix cut to keep the
/// name a valid object name.
pub fn controller_revision_name(prefix: &str, hash: &str) -> String {
    let prefix: String = prefix.chars().take(MAX_PREFIX_LEN).collect();
    format!("{prefix}-{hash}")
}

/// `NewControllerRevision`: a revision of `parent` (of `kind`) holding
/// `data`, labelled like the template and with its hash, named
/// `<parent>-<hash>`, owned by the parent.
pub fn new_controller_revision(
    parent: &ObjectMeta,
    kind: &str,
    template_labels: Option<&BTreeMap<String, String>>,
    data: Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let mut cr = ControllerRevision {
        metadata: ObjectMeta {
            labels: Some(template_labels.cloned().unwrap_or_default()),
            owner_references: Some(vec![new_controller_ref(parent, "apps/v1", kind)]),
            namespace: parent.namespace.clone(),
            ..ObjectMeta::default()
        },
        data: RawExtension(data),
        revision: Some(revision),
    };
    let hash = hash_controller_revision(&cr, collision_count);
    cr.metadata.name = Some(controller_revision_name(
        parent.name.as_deref().unwrap_or(""),
        &hash,
    ));
    cr.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash);
    cr
}

fn revision_number(cr: &ControllerRevision) -> i64 {
    cr.revision.unwrap_or(0)
}

/// `SortControllerRevisions`: by revision, then creation time, then name.
pub fn sort_controller_revisions(revisions: &mut [&ControllerRevision]) {
    revisions.sort_by(|a, b| {
        let created = |r: &ControllerRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
        revision_number(a)
            .cmp(&revision_number(b))
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

fn hash_label(cr: &ControllerRevision) -> Option<&str> {
    cr.metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)
        .map(String::as_str)
}

/// `EqualRevision`: the same hash label (when both have one) and the same
/// data.
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    if let (Some(ha), Some(hb)) = (hash_label(a), hash_label(b))
        && ha != hb
    {
        return false;
    }
    prune(a.data.0.clone()) == prune(b.data.0.clone())
}

/// `FindEqualRevisions`: the revisions equal to `needle`, in the given
/// order.
pub fn find_equal_revisions<'a>(
    revisions: &[&'a ControllerRevision],
    needle: &ControllerRevision,
) -> Vec<&'a ControllerRevision> {
    revisions
        .iter()
        .copied()
        .filter(|r| equal_revision(r, needle))
        .collect()
}

/// `nextRevision`: one past the last of `sorted` (1 for none).
pub fn next_revision(sorted: &[&ControllerRevision]) -> i64 {
    sorted.last().map_or(1, |r| revision_number(r) + 1)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::test_util::t;
    use crate::workloads::test_objects::{label_map, template};

    fn parent() -> ObjectMeta {
        ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("web-uid".into()),
            ..ObjectMeta::default()
        }
    }

    fn revision_of(image: &str, number: i64) -> ControllerRevision {
        let tmpl = template(image);
        let labels = tmpl.metadata.as_ref().and_then(|m| m.labels.clone());
        new_controller_revision(
            &parent(),
            "StatefulSet",
            labels.as_ref(),
            template_patch(&tmpl),
            number,
            None,
        )
    }

    #[test]
    fn fnv1_32_matches_the_reference_vectors() {
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv1_32(b"foobar"), 0x31f0_b262);
    }

    /// Upstream `TestNewControllerRevision` and `TestHashControllerRevision`.
    #[test]
    fn new_revisions_are_named_by_their_hash() {
        let a = revision_of("nginx:1", 1);
        let hash = hash_label(&a).unwrap_or_default().to_string();
        assert_eq!(
            a.metadata.name,
            Some(controller_revision_name("web", &hash))
        );
        assert_eq!(
            a.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("foo"))
                .map(String::as_str),
            Some("bar")
        );
        assert!(crate::workloads::ownership::is_controlled_by(
            &a.metadata,
            "web-uid"
        ));
        assert_eq!(hash_controller_revision(&a, None), hash, "stable");
        assert_ne!(
            hash_controller_revision(&a, Some(1)),
            hash,
            "the probe changes it"
        );
        assert_ne!(
            hash_controller_revision(&revision_of("nginx:2", 1), None),
            hash,
            "the data changes it"
        );
        assert_eq!(
            controller_revision_name(&"x".repeat(300), "h").len(),
            MAX_PREFIX_LEN + 2
        );
        assert_eq!(
            revision_template(&a),
            Some(template("nginx:1")),
            "ApplyRevision"
        );
    }

    /// Upstream `TestSortControllerRevisions`, `TestEqualRevision`,
    /// `TestFindEqualRevisions`.
    #[test]
    fn sort_compare_and_find_revisions() {
        let mut r1 = revision_of("a", 1);
        r1.metadata.creation_timestamp = Some(Time(t(10)));
        let mut r2 = revision_of("b", 2);
        r2.metadata.creation_timestamp = Some(Time(t(0)));
        let mut r2_later = revision_of("c", 2);
        r2_later.metadata.creation_timestamp = Some(Time(t(5)));
        let r3 = revision_of("a", 3);
        let mut sorted = vec![&r3, &r2_later, &r1, &r2];
        sort_controller_revisions(&mut sorted);
        let numbers: Vec<(Option<i64>, Option<Time>)> = sorted
            .iter()
            .map(|r| (r.revision, r.metadata.creation_timestamp.clone()))
            .collect();
        assert_eq!(
            numbers,
            vec![
                (Some(1), Some(Time(t(10)))),
                (Some(2), Some(Time(t(0)))),
                (Some(2), Some(Time(t(5)))),
                (Some(3), None)
            ]
        );
        assert_eq!(next_revision(&sorted), 4);
        assert_eq!(next_revision(&[]), 1);
        assert!(
            equal_revision(&r1, &r3),
            "same template, other revision numbers"
        );
        assert!(!equal_revision(&r1, &r2));
        let mut relabelled = r1.clone();
        relabelled.metadata.labels = Some(label_map(&[(CONTROLLER_REVISION_HASH_LABEL, "other")]));
        assert!(!equal_revision(&r1, &relabelled), "another hash label");
        relabelled.metadata.labels = None;
        assert!(
            equal_revision(&r1, &relabelled),
            "no hash label: the data decides"
        );
        let found = find_equal_revisions(&sorted, &r1);
        assert_eq!(
            found.iter().map(|r| r.revision).collect::<Vec<_>>(),
            vec![Some(1), Some(3)]
        );
    }
}
