//! Controller references: which controller owns an object, and when a
//! controller adopts an orphan or releases what it no longer selects.
//! Ported from apimachinery's `metav1.GetControllerOf`/`NewControllerRef`
//! and upstream's `pkg/controller/controller_ref_manager.go`
//! (`BaseControllerRefManager.ClaimObject`).
//!
//! An object has at most one controller: the owner reference with
//! `controller: true`. Ownership is by UID, never by name, so a
//! controller deleted and recreated under the same name does not inherit
//! its predecessor's pods.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::labels::LabelSelector;

/// `metav1.GetControllerOf`: the owner reference marked as the
/// controller, if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// `metav1.IsControlledBy`: the object's controller has `owner_uid`.
pub fn is_controlled_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    controller_of(meta).is_some_and(|r| r.uid == owner_uid)
}

/// `metav1.NewControllerRef`: a reference to `owner` of the given group
/// version and kind, marked as the controller and blocking the owner's
/// foreground deletion.
pub fn new_controller_ref(owner: &ObjectMeta, api_version: &str, kind: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// What a controller does with an object its selector may or may not
/// select (`ClaimObject`'s outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Already the controller's and still selected: count it.
    Owned,
    /// An orphan the selector selects: adopt it (add the controller
    /// reference, [`adopt`]), then count it.
    Adopt,
    /// The controller's but no longer selected: release it (remove the
    /// reference, [`release`]); do not count it.
    Release,
    /// Someone else's, not selected, being deleted, in another namespace,
    /// or the controller is being deleted: leave it alone.
    Ignore,
}

impl Claim {
    /// Whether the controller counts the object as its own (after the
    /// adoption succeeds, for [`Claim::Adopt`]).
    pub fn is_claimed(self) -> bool {
        matches!(self, Claim::Owned | Claim::Adopt)
    }
}

/// `ClaimObject`: `owner` (with its parsed `selector`) and an object.
/// `matches` is the selector test plus any extra filter of the caller
/// (upstream's `filters`); `ClaimPods` passes the selector alone. A
/// controller being deleted keeps what it owns and selects, adopts
/// nothing and releases nothing.
pub fn claim(owner: &ObjectMeta, matches: bool, object: &ObjectMeta) -> Claim {
    let owner_deleting = owner.deletion_timestamp.is_some();
    if let Some(controller) = controller_of(object) {
        if Some(&controller.uid) != owner.uid.as_ref() {
            return Claim::Ignore;
        }
        return match (matches, owner_deleting) {
            (true, _) => Claim::Owned,
            (false, false) => Claim::Release,
            (false, true) => Claim::Ignore,
        };
    }
    let other_namespace = owner.namespace.as_deref().is_some_and(|ns| !ns.is_empty())
        && owner.namespace != object.namespace;
    if owner_deleting || !matches || object.deletion_timestamp.is_some() || other_namespace {
        return Claim::Ignore;
    }
    Claim::Adopt
}

/// [`claim`] with the owner's label selector as the match.
pub fn claim_by_selector(
    owner: &ObjectMeta,
    selector: &LabelSelector,
    object: &ObjectMeta,
) -> Claim {
    claim(owner, selector.matches(object.labels.as_ref()), object)
}

/// The adoption upstream patches in: the controller reference appended.
pub fn adopt(object: &mut ObjectMeta, controller_ref: OwnerReference) {
    object
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(controller_ref);
}

/// The release upstream patches in: every reference to `owner_uid`
/// removed (a `$patch: delete` of the owner reference by UID).
pub fn release(object: &mut ObjectMeta, owner_uid: &str) {
    if let Some(refs) = object.owner_references.as_mut() {
        refs.retain(|r| r.uid != owner_uid);
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::test_util::t;

    fn owner(deleting: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some("rs".into()),
            namespace: Some("default".into()),
            uid: Some("rs-uid".into()),
            deletion_timestamp: deleting.then(|| Time(t(0))),
            ..ObjectMeta::default()
        }
    }

    fn object(namespace: &str, refs: Vec<OwnerReference>, deleting: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some("pod".into()),
            namespace: Some(namespace.into()),
            labels: Some([("foo".to_string(), "bar".to_string())].into()),
            owner_references: (!refs.is_empty()).then_some(refs),
            deletion_timestamp: deleting.then(|| Time(t(0))),
            ..ObjectMeta::default()
        }
    }

    fn reference(uid: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            controller: Some(controller),
            uid: uid.into(),
            ..new_controller_ref(&owner(false), "apps/v1", "ReplicaSet")
        }
    }

    /// Upstream `TestClaimPods` (`controller_ref_manager_test.go`) and
    /// `ClaimObject`'s branches, one row each.
    #[test]
    fn claim_adopts_orphans_and_releases_unselected() {
        struct Case {
            name: &'static str,
            owner_deleting: bool,
            matches: bool,
            object: ObjectMeta,
            want: Claim,
        }
        let mine = || vec![reference("rs-uid", true)];
        let cases = [
            Case {
                name: "orphan with matching labels is adopted",
                owner_deleting: false,
                matches: true,
                object: object("default", vec![], false),
                want: Claim::Adopt,
            },
            Case {
                name: "orphan not selected is ignored",
                owner_deleting: false,
                matches: false,
                object: object("default", vec![], false),
                want: Claim::Ignore,
            },
            Case {
                name: "controller marked for deletion adopts nothing",
                owner_deleting: true,
                matches: true,
                object: object("default", vec![], false),
                want: Claim::Ignore,
            },
            Case {
                name: "orphan being deleted is not adopted",
                owner_deleting: false,
                matches: true,
                object: object("default", vec![], true),
                want: Claim::Ignore,
            },
            Case {
                name: "orphan in another namespace is not adopted",
                owner_deleting: false,
                matches: true,
                object: object("other", vec![], false),
                want: Claim::Ignore,
            },
            Case {
                name: "a non-controller owner reference leaves an orphan",
                owner_deleting: false,
                matches: true,
                object: object("default", vec![reference("other-uid", false)], false),
                want: Claim::Adopt,
            },
            Case {
                name: "owned and selected is claimed",
                owner_deleting: false,
                matches: true,
                object: object("default", mine(), false),
                want: Claim::Owned,
            },
            Case {
                name: "owned and selected is claimed while the controller is deleted",
                owner_deleting: true,
                matches: true,
                object: object("default", mine(), false),
                want: Claim::Owned,
            },
            Case {
                name: "owned but no longer selected is released",
                owner_deleting: false,
                matches: false,
                object: object("default", mine(), false),
                want: Claim::Release,
            },
            Case {
                name: "a controller being deleted releases nothing",
                owner_deleting: true,
                matches: false,
                object: object("default", mine(), false),
                want: Claim::Ignore,
            },
            Case {
                name: "owned by another controller is ignored",
                owner_deleting: false,
                matches: true,
                object: object("default", vec![reference("other-uid", true)], false),
                want: Claim::Ignore,
            },
        ];
        for case in cases {
            assert_eq!(
                claim(&owner(case.owner_deleting), case.matches, &case.object),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn adopt_then_release_round_trips() {
        let rs = owner(false);
        let selector = LabelSelector::parse("foo=bar").unwrap_or_default();
        let mut pod = object("default", vec![reference("other-uid", false)], false);
        assert_eq!(claim_by_selector(&rs, &selector, &pod), Claim::Adopt);
        adopt(&mut pod, new_controller_ref(&rs, "apps/v1", "ReplicaSet"));
        assert!(is_controlled_by(&pod, "rs-uid"));
        assert_eq!(claim_by_selector(&rs, &selector, &pod), Claim::Owned);
        pod.labels = None;
        assert_eq!(claim_by_selector(&rs, &selector, &pod), Claim::Release);
        release(&mut pod, "rs-uid");
        assert_eq!(controller_of(&pod), None);
        assert_eq!(pod.owner_references.map(|r| r.len()), Some(1));
    }
}
