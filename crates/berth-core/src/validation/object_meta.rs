//! apimachinery's `ValidateObjectMeta` rules for what the garbage collector
//! reads: `metadata.ownerReferences` (`ValidateOwnerReferences`) and
//! `metadata.finalizers` (`ValidateFinalizers`, and on update
//! `ValidateNoNewFinalizers` once the object is being deleted).

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};

use crate::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::validation::names::is_qualified_name;
use crate::validation::{ErrorList, FieldError, Path};

/// Kinds that may not own anything (upstream `BannedOwners`): core/v1
/// Events.
const BANNED_OWNERS: &[(&str, &str)] = &[("v1", "Event")];

/// Upstream `ValidateOwnerReferences` at `path` (`metadata.ownerReferences`):
/// each reference names an apiVersion with a version, a kind, a name and a
/// UID, no banned kind, and at most one is the controller.
pub fn validate_owner_references(references: &[OwnerReference], path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    let mut first_controller: Option<String> = None;
    for reference in references {
        errors.extend(validate_owner_reference(reference, path));
        if reference.controller == Some(true) {
            let this = format!("{}/{}", reference.kind, reference.name);
            match &first_controller {
                Some(first) => errors.push(FieldError::invalid(
                    path,
                    serde_json::to_value(references).unwrap_or(Value::Null),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => first_controller = Some(this),
            }
        }
    }
    errors
}

fn validate_owner_reference(reference: &OwnerReference, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    // schema.FromAPIVersionAndKind: "group/version" or "version".
    let version = reference
        .api_version
        .rsplit_once('/')
        .map_or(reference.api_version.as_str(), |(_, v)| v);
    if version.is_empty() {
        errors.push(FieldError::invalid(
            &path.child("apiVersion"),
            reference.api_version.as_str(),
            "version must not be empty",
        ));
    }
    for (field, value) in [
        ("kind", &reference.kind),
        ("name", &reference.name),
        ("uid", &reference.uid),
    ] {
        if value.is_empty() {
            errors.push(FieldError::invalid(
                &path.child(field),
                value.as_str(),
                "must not be empty",
            ));
        }
    }
    let (group, _) = reference
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", reference.api_version.as_str()));
    if BANNED_OWNERS.contains(&(reference.api_version.as_str(), reference.kind.as_str())) {
        errors.push(FieldError::invalid(
            path,
            json!(reference),
            format!(
                "{group}/{version}, Kind={} is disallowed from being an owner",
                reference.kind
            ),
        ));
    }
    errors
}

/// Upstream `ValidateFinalizers` at `path` (`metadata.finalizers`): each a
/// qualified name, and not both the orphan and the foreground finalizer.
pub fn validate_finalizers(finalizers: &[String], path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    for finalizer in finalizers {
        for problem in is_qualified_name(finalizer) {
            errors.push(FieldError::invalid(path, finalizer.as_str(), problem));
        }
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if has(ORPHAN_FINALIZER) && has(FOREGROUND_FINALIZER) {
        errors.push(FieldError::invalid(
            path,
            finalizers.to_vec(),
            format!("finalizer {ORPHAN_FINALIZER} and {FOREGROUND_FINALIZER} cannot be both set"),
        ));
    }
    errors
}

/// Upstream `ValidateNoNewFinalizers`, applied on update once the stored
/// object is being deleted: no finalizer it lacked may be added.
pub fn validate_no_new_finalizers(new: &[String], old: &[String], path: &Path) -> ErrorList {
    let old: BTreeSet<&String> = old.iter().collect();
    let extra: BTreeSet<&String> = new.iter().filter(|f| !old.contains(f)).collect();
    if extra.is_empty() {
        return ErrorList::new();
    }
    // Go prints the sorted list with %#v: []string{"a", "b"}.
    let listed: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
    vec![FieldError::forbidden(
        path,
        format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            listed.join(", ")
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            ..OwnerReference::default()
        }
    }

    fn controller(mut reference: OwnerReference) -> OwnerReference {
        reference.controller = Some(true);
        reference
    }

    fn messages(errors: ErrorList) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    fn path() -> Path {
        Path::new("metadata").child("ownerReferences")
    }

    /// Upstream `TestValidateObjectMetaOwnerReferences`.
    #[test]
    fn owner_references_as_upstream() {
        struct Case {
            name: &'static str,
            references: Vec<OwnerReference>,
            want: Vec<&'static str>,
        }
        let cases = [
            Case {
                name: "a complete reference",
                references: vec![owner(
                    "customresourceVersion",
                    "customresourceKind",
                    "name",
                    "1",
                )],
                want: vec![],
            },
            Case {
                name: "a group and version",
                references: vec![owner("apps/v1", "ReplicaSet", "web", "1")],
                want: vec![],
            },
            Case {
                name: "an empty apiVersion, kind, name and uid",
                references: vec![owner("", "", "", "")],
                want: vec![
                    "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                    "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
                    "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
                    "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
                ],
            },
            Case {
                name: "a group without a version",
                references: vec![owner("apps/", "ReplicaSet", "web", "1")],
                want: vec![
                    "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
                ],
            },
            Case {
                name: "an Event may not own",
                references: vec![owner("v1", "Event", "e", "1")],
                want: vec!["is disallowed from being an owner"],
            },
            Case {
                name: "one controller",
                references: vec![
                    controller(owner("v1", "A", "a", "1")),
                    owner("v1", "B", "b", "2"),
                ],
                want: vec![],
            },
            Case {
                name: "two controllers",
                references: vec![
                    controller(owner("v1", "A", "a", "1")),
                    controller(owner("v1", "B", "b", "2")),
                ],
                want: vec![
                    "Only one reference can have Controller set to true. Found \"true\" in references for A/a and B/b",
                ],
            },
        ];
        for case in cases {
            let got = messages(validate_owner_references(&case.references, &path()));
            assert_eq!(got.len(), case.want.len(), "{}: {got:?}", case.name);
            for (got, want) in got.iter().zip(&case.want) {
                assert!(got.contains(want), "{}: {got} lacks {want}", case.name);
            }
        }
        let banned = messages(validate_owner_references(
            &[owner("v1", "Event", "e", "1")],
            &path(),
        ));
        assert!(
            banned[0].ends_with("/v1, Kind=Event is disallowed from being an owner"),
            "{banned:?}"
        );
    }

    #[test]
    fn finalizers_as_upstream() {
        struct Case {
            name: &'static str,
            finalizers: &'static [&'static str],
            want: Vec<&'static str>,
        }
        let cases = [
            Case {
                name: "qualified names",
                finalizers: &["kubernetes.io/pv-protection", "orphan", "example.com/x"],
                want: vec![],
            },
            Case {
                name: "not a qualified name",
                finalizers: &["a/b/c"],
                want: vec![
                    "metadata.finalizers: Invalid value: \"a/b/c\": a valid label key must consist of",
                ],
            },
            Case {
                name: "orphan and foreground together",
                finalizers: &["orphan", "foregroundDeletion"],
                want: vec![
                    "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set",
                ],
            },
        ];
        for case in cases {
            let finalizers: Vec<String> = case.finalizers.iter().map(|s| s.to_string()).collect();
            let got = messages(validate_finalizers(
                &finalizers,
                &Path::new("metadata").child("finalizers"),
            ));
            assert_eq!(got.len(), case.want.len(), "{}: {got:?}", case.name);
            for (got, want) in got.iter().zip(&case.want) {
                assert!(got.starts_with(want), "{}: {got} is not {want}", case.name);
            }
        }
    }

    #[test]
    fn no_finalizer_may_be_added_to_an_object_being_deleted() {
        let strings =
            |list: &[&str]| -> Vec<String> { list.iter().map(|s| s.to_string()).collect() };
        let path = Path::new("metadata").child("finalizers");
        assert!(
            validate_no_new_finalizers(&strings(&["a"]), &strings(&["a", "b"]), &path).is_empty()
        );
        let got = messages(validate_no_new_finalizers(
            &strings(&["c", "a", "b"]),
            &strings(&["a"]),
            &path,
        ));
        assert_eq!(
            got,
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b\", \"c\"}"
            ]
        );
    }
}
