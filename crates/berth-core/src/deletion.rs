//! Deletion with dependents: the finalizers that tell the garbage collector
//! what to do with an object's dependents, the propagation policies of
//! `DeleteOptions`, and the API server's rule for which finalizers a
//! deletion adds or removes (upstream's `deletionFinalizersForGarbageCollection`,
//! `shouldOrphanDependents` and `shouldDeleteDependents` of the generic
//! registry store, and `ValidateDeleteOptions`).
//!
//! The API server applies [`deletion_finalizers`] when an object is
//! deleted; the garbage collector reads the same finalizer names
//! ([`ORPHAN_FINALIZER`], [`FOREGROUND_FINALIZER`]) off the objects it
//! watches and the same [`Propagation`] when it deletes.

use crate::validation::{ErrorList, FieldError, Path};

/// `metav1.FinalizerOrphanDependents`: the garbage collector removes the
/// object's ownerReferences from its dependents, then this finalizer.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// `metav1.FinalizerDeleteDependents`: the garbage collector deletes the
/// dependents that block the owner's deletion, then this finalizer.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `metav1.DeletionPropagation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Orphan the dependents.
    Orphan,
    /// Delete the object now, its dependents afterwards.
    Background,
    /// Delete the dependents first, then the object.
    Foreground,
}

impl Propagation {
    /// The policy a `propagationPolicy` names; `None` for anything else.
    pub fn parse(value: &str) -> Option<Propagation> {
        match value {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// A type's `DefaultGarbageCollectionPolicy` (upstream
/// `rest.GarbageCollectionPolicy`): what a deletion without a policy does to
/// the dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultPolicy {
    /// Background (every type that does not say otherwise).
    DeleteDependents,
    /// Orphan (upstream's core/v1 ReplicationControllers and the old
    /// extensions and apps beta versions).
    OrphanDependents,
    /// The type has no dependents to speak of; deletion never adds the
    /// garbage collector's finalizers (Events).
    Unsupported,
}

/// What a deletion asked for about the dependents: the deprecated
/// `orphanDependents` and `propagationPolicy` (validated, see
/// [`validate_delete_options`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DependentsOption {
    pub orphan_dependents: Option<bool>,
    pub propagation: Option<Propagation>,
}

/// Upstream `shouldOrphanDependents`: the options first, then the
/// finalizers already on the object, then the type's default.
fn should_orphan(default: DefaultPolicy, finalizers: &[String], option: DependentsOption) -> bool {
    if default == DefaultPolicy::Unsupported {
        return false;
    }
    if let Some(orphan) = option.orphan_dependents {
        return orphan;
    }
    if let Some(policy) = option.propagation {
        return policy == Propagation::Orphan;
    }
    if let Some(policy) = finalizer_policy(finalizers) {
        return policy == Propagation::Orphan;
    }
    default == DefaultPolicy::OrphanDependents
}

/// Upstream `shouldDeleteDependents`: as [`should_orphan`], for foreground
/// deletion (which no type defaults to).
fn should_delete_in_foreground(
    default: DefaultPolicy,
    finalizers: &[String],
    option: DependentsOption,
) -> bool {
    if default == DefaultPolicy::Unsupported || option.orphan_dependents.is_some() {
        return false;
    }
    if let Some(policy) = option.propagation {
        return policy == Propagation::Foreground;
    }
    finalizer_policy(finalizers) == Some(Propagation::Foreground)
}

/// The policy the first of the garbage collector's finalizers on an object
/// stands for (validation keeps the two from being set together).
fn finalizer_policy(finalizers: &[String]) -> Option<Propagation> {
    finalizers.iter().find_map(|f| match f.as_str() {
        ORPHAN_FINALIZER => Some(Propagation::Orphan),
        FOREGROUND_FINALIZER => Some(Propagation::Foreground),
        _ => None,
    })
}

/// Upstream `deletionFinalizersForGarbageCollection`: the finalizers an
/// object being deleted should carry, or `None` when they are the ones it
/// has (as a set). Other finalizers keep their order; the garbage
/// collector's go last.
pub fn deletion_finalizers(
    default: DefaultPolicy,
    finalizers: &[String],
    option: DependentsOption,
) -> Option<Vec<String>> {
    let orphan = should_orphan(default, finalizers, option);
    let foreground = should_delete_in_foreground(default, finalizers, option);
    let mut wanted: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    if orphan {
        wanted.push(ORPHAN_FINALIZER.to_string());
    }
    if foreground {
        wanted.push(FOREGROUND_FINALIZER.to_string());
    }
    let as_set =
        |list: &[String]| -> std::collections::BTreeSet<String> { list.iter().cloned().collect() };
    (as_set(&wanted) != as_set(finalizers)).then_some(wanted)
}

/// Upstream `ValidateDeleteOptions`: `orphanDependents` and
/// `propagationPolicy` not both, a known policy, dry run `All` only.
pub fn validate_delete_options(
    orphan_dependents: Option<bool>,
    propagation: Option<&str>,
    dry_run: &[String],
) -> ErrorList {
    let mut errors = ErrorList::new();
    let path = Path::new("propagationPolicy");
    if let Some(policy) = propagation {
        if orphan_dependents.is_some() {
            errors.push(FieldError::invalid(
                &path,
                policy,
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if Propagation::parse(policy).is_none() {
            errors.push(FieldError::not_supported(
                &path,
                policy,
                &["Foreground", "Background", "Orphan", "nil"],
            ));
        }
    }
    if dry_run.iter().any(|v| v != "All") {
        errors.push(FieldError::not_supported(
            &Path::new("dryRun"),
            dry_run.to_vec(),
            &["All"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// What deleting an object leaves: `None` when it is deleted at once
    /// (no finalizers), else its finalizers.
    fn after_delete(
        default: DefaultPolicy,
        finalizers: &[&str],
        option: DependentsOption,
    ) -> Option<Vec<String>> {
        let existing = strings(finalizers);
        let kept = deletion_finalizers(default, &existing, option).unwrap_or(existing);
        (!kept.is_empty()).then_some(kept)
    }

    const DEFAULT: DefaultPolicy = DefaultPolicy::DeleteDependents;
    const ORPHANING: DefaultPolicy = DefaultPolicy::OrphanDependents;

    fn orphan_dependents(value: Option<bool>) -> DependentsOption {
        DependentsOption {
            orphan_dependents: value,
            propagation: None,
        }
    }

    fn policy(value: Option<Propagation>) -> DependentsOption {
        DependentsOption {
            orphan_dependents: None,
            propagation: value,
        }
    }

    /// Upstream `TestStoreDeleteWithOrphanDependents`: the deprecated
    /// `orphanDependents` against the finalizers already there and the
    /// type's default.
    #[test]
    fn orphan_dependents_option_against_finalizers_and_default() {
        struct Case {
            name: &'static str,
            finalizers: &'static [&'static str],
            option: Option<bool>,
            default: DefaultPolicy,
            want: Option<&'static [&'static str]>,
        }
        let orphan_and_others: &[&str] = &["foo.com/x", "orphan", "bar.com/y"];
        let others: &[&str] = &["foo.com/x", "bar.com/y"];
        let cases = [
            Case {
                name: "orphan=true keeps an orphan finalizer where it is",
                finalizers: orphan_and_others,
                option: Some(true),
                default: DEFAULT,
                want: Some(orphan_and_others),
            },
            Case {
                name: "orphan=true appends the orphan finalizer to others",
                finalizers: others,
                option: Some(true),
                default: DEFAULT,
                want: Some(&["foo.com/x", "bar.com/y", "orphan"]),
            },
            Case {
                name: "orphan=true adds the orphan finalizer",
                finalizers: &[],
                option: Some(true),
                default: DEFAULT,
                want: Some(&["orphan"]),
            },
            Case {
                name: "orphan=true keeps a lone orphan finalizer",
                finalizers: &["orphan"],
                option: Some(true),
                default: DEFAULT,
                want: Some(&["orphan"]),
            },
            Case {
                name: "orphan=false removes the orphan finalizer whatever the default",
                finalizers: orphan_and_others,
                option: Some(false),
                default: ORPHANING,
                want: Some(others),
            },
            Case {
                name: "orphan=false leaves other finalizers",
                finalizers: others,
                option: Some(false),
                default: ORPHANING,
                want: Some(others),
            },
            Case {
                name: "orphan=false on an orphaning type deletes at once",
                finalizers: &[],
                option: Some(false),
                default: ORPHANING,
                want: None,
            },
            Case {
                name: "orphan=false removes a lone orphan finalizer: deleted at once",
                finalizers: &["orphan"],
                option: Some(false),
                default: ORPHANING,
                want: None,
            },
            Case {
                name: "no option: an orphan finalizer stays (default type)",
                finalizers: orphan_and_others,
                option: None,
                default: DEFAULT,
                want: Some(orphan_and_others),
            },
            Case {
                name: "no option: an orphan finalizer stays (orphaning type)",
                finalizers: orphan_and_others,
                option: None,
                default: ORPHANING,
                want: Some(orphan_and_others),
            },
            Case {
                name: "no option: other finalizers stay (default type)",
                finalizers: others,
                option: None,
                default: DEFAULT,
                want: Some(others),
            },
            Case {
                name: "no option: an orphaning type adds the orphan finalizer",
                finalizers: others,
                option: None,
                default: ORPHANING,
                want: Some(&["foo.com/x", "bar.com/y", "orphan"]),
            },
            Case {
                name: "no option, no finalizers: deleted at once",
                finalizers: &[],
                option: None,
                default: DEFAULT,
                want: None,
            },
            Case {
                name: "no option, no finalizers, orphaning type: orphan finalizer",
                finalizers: &[],
                option: None,
                default: ORPHANING,
                want: Some(&["orphan"]),
            },
            Case {
                name: "no option: a lone orphan finalizer stays (default type)",
                finalizers: &["orphan"],
                option: None,
                default: DEFAULT,
                want: Some(&["orphan"]),
            },
            Case {
                name: "no option: a lone orphan finalizer stays (orphaning type)",
                finalizers: &["orphan"],
                option: None,
                default: ORPHANING,
                want: Some(&["orphan"]),
            },
        ];
        for case in cases {
            let got = after_delete(
                case.default,
                case.finalizers,
                orphan_dependents(case.option),
            );
            assert_eq!(got, case.want.map(strings), "{}", case.name);
        }
    }

    /// Upstream `TestStoreDeletionPropagation`: every policy against the
    /// finalizers already there, on a default and an orphaning type.
    #[test]
    fn propagation_policy_against_finalizers_and_default() {
        use Propagation::{Background, Foreground, Orphan};
        struct Case {
            existing: &'static [&'static str],
            policy: Option<Propagation>,
            /// On a type whose default is to delete dependents.
            want: Option<&'static [&'static str]>,
            /// On an orphaning type.
            want_orphaning: Option<&'static [&'static str]>,
        }
        let foreground: Option<&[&str]> = Some(&["foregroundDeletion"]);
        let orphan: Option<&[&str]> = Some(&["orphan"]);
        let case = |existing, policy, want, want_orphaning| Case {
            existing,
            policy,
            want,
            want_orphaning,
        };
        let cases = [
            // No finalizers: the type's default decides only without a policy.
            case(&[], Some(Foreground), foreground, foreground),
            case(&[], Some(Background), None, None),
            case(&[], Some(Orphan), orphan, orphan),
            case(&[], None, None, orphan),
            // An orphan finalizer already there.
            case(&["orphan"], Some(Foreground), foreground, foreground),
            case(&["orphan"], Some(Background), None, None),
            case(&["orphan"], Some(Orphan), orphan, orphan),
            case(&["orphan"], None, orphan, orphan),
            // A foreground finalizer already there.
            case(
                &["foregroundDeletion"],
                Some(Foreground),
                foreground,
                foreground,
            ),
            case(&["foregroundDeletion"], Some(Background), None, None),
            case(&["foregroundDeletion"], Some(Orphan), orphan, orphan),
            case(&["foregroundDeletion"], None, foreground, foreground),
        ];
        for case in cases {
            let name = format!("{:?} with {:?}", case.existing, case.policy);
            let got = after_delete(DEFAULT, case.existing, policy(case.policy));
            assert_eq!(got, case.want.map(strings), "default type: {name}");
            let got = after_delete(ORPHANING, case.existing, policy(case.policy));
            assert_eq!(
                got,
                case.want_orphaning.map(strings),
                "orphaning type: {name}"
            );
        }
    }

    #[test]
    fn a_type_without_garbage_collection_never_gets_its_finalizers() {
        for option in [
            orphan_dependents(Some(true)),
            policy(Some(Propagation::Foreground)),
            policy(Some(Propagation::Orphan)),
        ] {
            assert_eq!(
                after_delete(DefaultPolicy::Unsupported, &[], option),
                None,
                "{option:?}"
            );
        }
        // Its own garbage-collector finalizers are taken off.
        assert_eq!(
            after_delete(
                DefaultPolicy::Unsupported,
                &["orphan", "a.io/b"],
                policy(None)
            ),
            Some(strings(&["a.io/b"]))
        );
    }

    #[test]
    fn delete_options_are_validated_as_upstream() {
        struct Case {
            name: &'static str,
            orphan: Option<bool>,
            policy: Option<&'static str>,
            dry_run: &'static [&'static str],
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "nothing set",
                orphan: None,
                policy: None,
                dry_run: &[],
                want: &[],
            },
            Case {
                name: "each policy alone",
                orphan: None,
                policy: Some("Foreground"),
                dry_run: &["All"],
                want: &[],
            },
            Case {
                name: "orphanDependents and a policy",
                orphan: Some(true),
                policy: Some("Orphan"),
                dry_run: &[],
                want: &[
                    "propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set",
                ],
            },
            Case {
                name: "an unknown policy",
                orphan: None,
                policy: Some("Sideways"),
                dry_run: &[],
                want: &[
                    "propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                ],
            },
            Case {
                name: "a dry run other than All",
                orphan: None,
                policy: None,
                dry_run: &["Some"],
                want: &["dryRun: Unsupported value: [\"Some\"]: supported values: \"All\""],
            },
        ];
        for case in cases {
            let dry_run = strings(case.dry_run);
            let got: Vec<String> = validate_delete_options(case.orphan, case.policy, &dry_run)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, strings(case.want), "{}", case.name);
        }
    }

    #[test]
    fn policies_round_trip_their_names() {
        for p in [
            Propagation::Orphan,
            Propagation::Background,
            Propagation::Foreground,
        ] {
            assert_eq!(Propagation::parse(p.as_str()), Some(p));
        }
        assert_eq!(Propagation::parse("orphan"), None);
    }
}
