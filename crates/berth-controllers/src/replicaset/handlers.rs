//! The ReplicaSet controller's event handlers (upstream's `addRS`,
//! `updateRS`, `deleteRS`, `addPod`, `updatePod`, `deletePod`): which
//! ReplicaSets a change wakes, and which expectations it meets. Plain
//! functions over the caches and the expectations, so the tables below
//! run without a server.

use std::sync::Arc;
use std::time::Duration;

use berth_core::object_key::ObjectKey;
use berth_core::pod;
use berth_core::workloads::ownership::controller_of;
use berth_core::workloads::pod_control::Expectations;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;

use crate::cache::{ObjectCache, Observed};
use crate::work_queue::Wake;

fn key_of(rs: &ReplicaSet) -> ObjectKey {
    ObjectKey::of_meta(&rs.metadata)
}

/// A ReplicaSet was added, changed or deleted: it is synced. A deleted
/// one (or one recreated under its name, seen as an update with another
/// UID) starts with no expectations.
pub fn replica_set_changed(
    observed: &Observed<ReplicaSet>,
    expectations: &mut Expectations,
) -> Vec<Wake> {
    match observed {
        Observed::Added(rs) => vec![Wake::Now(key_of(rs))],
        Observed::Updated { old, new } => {
            if old.metadata.uid != new.metadata.uid {
                expectations.delete(&key_of(old).to_string());
            }
            vec![Wake::Now(key_of(new))]
        }
        Observed::Deleted(rs) => {
            expectations.delete(&key_of(rs).to_string());
            vec![Wake::Now(key_of(rs))]
        }
        Observed::Synced => Vec::new(),
    }
}

/// The ReplicaSets that select `pod` (`getPodReplicaSets`), for an
/// orphan someone may adopt.
pub fn pod_replica_sets(pod: &Pod, rss: &ObjectCache<ReplicaSet>) -> Vec<Arc<ReplicaSet>> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    rss.selecting(namespace, pod.metadata.labels.as_ref(), |rs| {
        &rs.spec.selector
    })
}

/// The ReplicaSet that controls `pod`, if it is in the cache.
fn controller_rs(pod: &Pod, rss: &ObjectCache<ReplicaSet>) -> Option<Arc<ReplicaSet>> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    controller_of(&pod.metadata).and_then(|r| rss.resolve(namespace, r))
}

/// A pod was added, changed or deleted (see the module documentation).
pub fn pod_changed(
    observed: &Observed<Pod>,
    rss: &ObjectCache<ReplicaSet>,
    expectations: &mut Expectations,
) -> Vec<Wake> {
    match observed {
        Observed::Added(pod) => pod_added(pod, rss, expectations),
        Observed::Updated { old, new } => pod_updated(old, new, rss, expectations),
        Observed::Deleted(pod) => pod_deleted(pod, rss, expectations),
        Observed::Synced => Vec::new(),
    }
}

/// `addPod`: a new pod of a ReplicaSet is a create it expected; an
/// orphan wakes every ReplicaSet that selects it. A pod already being
/// deleted counts as a deletion (a controller restarted mid-deletion).
fn pod_added(
    pod: &Pod,
    rss: &ObjectCache<ReplicaSet>,
    expectations: &mut Expectations,
) -> Vec<Wake> {
    if pod.metadata.deletion_timestamp.is_some() {
        return pod_deleted(pod, rss, expectations);
    }
    if controller_of(&pod.metadata).is_some() {
        let Some(rs) = controller_rs(pod, rss) else {
            return Vec::new();
        };
        let key = key_of(&rs);
        expectations.creation_observed(&key.to_string());
        return vec![Wake::Now(key)];
    }
    pod_replica_sets(pod, rss)
        .iter()
        .map(|rs| Wake::Now(key_of(rs)))
        .collect()
}

/// `updatePod`: a pod being deleted counts as deleted at once (its
/// replacement need not wait for the kubelet); a changed controller wakes
/// the old one too; a pod that became ready wakes its ReplicaSet again
/// after `minReadySeconds` (plus a second), when it becomes available; an
/// orphan whose labels or controller changed wakes whoever selects it.
fn pod_updated(
    old: &Pod,
    new: &Pod,
    rss: &ObjectCache<ReplicaSet>,
    expectations: &mut Expectations,
) -> Vec<Wake> {
    if old.metadata.resource_version == new.metadata.resource_version {
        return Vec::new();
    }
    let labels_changed = old.metadata.labels != new.metadata.labels;
    if new.metadata.deletion_timestamp.is_some() {
        let mut wakes = pod_deleted(new, rss, expectations);
        if labels_changed {
            wakes.extend(pod_deleted(old, rss, expectations));
        }
        return wakes;
    }
    let (old_ref, new_ref) = (controller_of(&old.metadata), controller_of(&new.metadata));
    let mut wakes = Vec::new();
    if old_ref != new_ref
        && old_ref.is_some()
        && let Some(rs) = controller_rs(old, rss)
    {
        wakes.push(Wake::Now(key_of(&rs)));
    }
    if new_ref.is_some() {
        let Some(rs) = controller_rs(new, rss) else {
            return wakes;
        };
        let key = key_of(&rs);
        wakes.push(Wake::Now(key.clone()));
        let min_ready = rs.spec.min_ready_seconds.unwrap_or(0);
        if !pod::is_ready(old) && pod::is_ready(new) && min_ready > 0 {
            let after = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
            wakes.push(Wake::After(key, after));
        }
        return wakes;
    }
    if labels_changed || old_ref != new_ref {
        wakes.extend(
            pod_replica_sets(new, rss)
                .iter()
                .map(|rs| Wake::Now(key_of(rs))),
        );
    }
    wakes
}

/// `deletePod`: the deletion of a ReplicaSet's pod is observed (once per
/// pod, however often it is seen) and wakes it; orphans wake nobody.
fn pod_deleted(
    pod: &Pod,
    rss: &ObjectCache<ReplicaSet>,
    expectations: &mut Expectations,
) -> Vec<Wake> {
    let Some(rs) = controller_rs(pod, rss) else {
        return Vec::new();
    };
    let key = key_of(&rs);
    expectations.pod_deletion_observed(&key.to_string(), &pod::pod_key(pod).to_string());
    vec![Wake::Now(key)]
}

#[cfg(test)]
mod tests {
    use berth_client::Change;
    use berth_core::test_util::t;
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector, ObjectMeta, OwnerReference, Time,
    };

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Option<std::collections::BTreeMap<String, String>> {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
    }

    fn rs(namespace: &str, name: &str, selector: &[(&str, &str)]) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                uid: Some(format!("uid-{name}")),
                ..ObjectMeta::default()
            },
            spec: ReplicaSetSpec {
                selector: LabelSelector {
                    match_labels: labels(selector),
                    ..LabelSelector::default()
                },
                ..ReplicaSetSpec::default()
            },
            status: None,
        }
    }

    fn owned_by(rs_name: &str) -> Vec<OwnerReference> {
        vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: rs_name.into(),
            uid: format!("uid-{rs_name}"),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    }

    fn pod(namespace: &str, name: &str, pod_labels: &[(&str, &str)], owner: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                labels: labels(pod_labels),
                owner_references: owner.map(owned_by),
                resource_version: Some("1".into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn cache(rss: Vec<ReplicaSet>) -> ObjectCache<ReplicaSet> {
        let mut cache = ObjectCache::default();
        for rs in rss {
            cache.apply(Change::Upsert(rs));
        }
        cache
    }

    fn now(namespace: &str, name: &str) -> Wake {
        Wake::Now(ObjectKey::new(namespace, name))
    }

    /// Upstream `TestPodControllerLookup`.
    #[test]
    fn pods_find_the_replica_sets_that_select_them() {
        struct Case {
            name: &'static str,
            rss: Vec<ReplicaSet>,
            pod: Pod,
            want: Vec<&'static str>,
        }
        for case in [
            Case {
                name: "pods without labels don't match any ReplicaSets",
                rss: vec![rs("default", "basic", &[])],
                pod: pod("default", "foo1", &[], None),
                want: vec![],
            },
            Case {
                name: "matching labels, not namespace",
                rss: vec![rs("other", "foo", &[("foo", "bar")])],
                pod: pod("ns", "foo2", &[("foo", "bar")], None),
                want: vec![],
            },
            Case {
                name: "matching ns and labels returns the ReplicaSet",
                rss: vec![rs("ns", "bar", &[("foo", "bar")])],
                pod: pod("ns", "foo3", &[("foo", "bar")], None),
                want: vec!["bar"],
            },
            Case {
                name: "an empty selector selects nothing",
                rss: vec![rs("ns", "all", &[])],
                pod: pod("ns", "foo4", &[("foo", "bar")], None),
                want: vec![],
            },
        ] {
            let rss = cache(case.rss);
            let got: Vec<String> = pod_replica_sets(&case.pod, &rss)
                .iter()
                .map(|rs| rs.metadata.name.clone().unwrap_or_default())
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    /// Upstream `TestUpdatePods`, `TestDeleteFinalStateUnknown` and the
    /// handlers' branches: who wakes for which pod change, and which
    /// expectations it meets.
    #[test]
    fn pod_changes_wake_their_replica_sets() {
        let rss = || {
            cache(vec![
                rs("default", "foo", &[("app", "foo")]),
                rs("default", "bar", &[("app", "bar")]),
            ])
        };
        let with_rv = |mut p: Pod, rv: &str| {
            p.metadata.resource_version = Some(rv.into());
            p
        };
        let deleting = |mut p: Pod| {
            p.metadata.deletion_timestamp = Some(Time(t(0)));
            p
        };
        let ready = |mut p: Pod| {
            p.status = Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            });
            p
        };
        struct Case {
            name: &'static str,
            observed: Observed<Pod>,
            min_ready_seconds: Option<i32>,
            want: Vec<Wake>,
            /// (adds, deletes) outstanding for default/foo after it.
            want_foo_expectations: Option<(i64, i64)>,
        }
        let p = |labels: &[(&str, &str)], owner: Option<&str>| pod("default", "p", labels, owner);
        for case in [
            Case {
                name: "a created pod of foo is an expected create",
                observed: Observed::Added(Arc::new(p(&[("app", "foo")], Some("foo")))),
                min_ready_seconds: None,
                want: vec![now("default", "foo")],
                want_foo_expectations: Some((1, 1)),
            },
            Case {
                name: "an orphan wakes every ReplicaSet that selects it",
                observed: Observed::Added(Arc::new(p(&[("app", "bar")], None))),
                min_ready_seconds: None,
                want: vec![now("default", "bar")],
                want_foo_expectations: Some((2, 1)),
            },
            Case {
                name: "a pod of a ReplicaSet not in the cache wakes nobody",
                observed: Observed::Added(Arc::new(p(&[("app", "foo")], Some("gone")))),
                min_ready_seconds: None,
                want: vec![],
                want_foo_expectations: Some((2, 1)),
            },
            Case {
                name: "a pod added while being deleted is a deletion",
                observed: Observed::Added(Arc::new(deleting(p(&[("app", "foo")], Some("foo"))))),
                min_ready_seconds: None,
                want: vec![now("default", "foo")],
                want_foo_expectations: Some((2, 0)),
            },
            Case {
                name: "a resync (same resourceVersion) wakes nobody",
                observed: Observed::Updated {
                    old: Arc::new(p(&[("app", "foo")], Some("foo"))),
                    new: Arc::new(p(&[("app", "foo")], Some("foo"))),
                },
                min_ready_seconds: None,
                want: vec![],
                want_foo_expectations: Some((2, 1)),
            },
            Case {
                name: "an orphan relabelled wakes who selects it now",
                observed: Observed::Updated {
                    old: Arc::new(p(&[("app", "foo")], None)),
                    new: Arc::new(with_rv(p(&[("app", "bar")], None), "2")),
                },
                min_ready_seconds: None,
                want: vec![now("default", "bar")],
                want_foo_expectations: Some((2, 1)),
            },
            Case {
                name: "a pod moved from foo to bar wakes both",
                observed: Observed::Updated {
                    old: Arc::new(p(&[("app", "foo")], Some("foo"))),
                    new: Arc::new(with_rv(p(&[("app", "bar")], Some("bar")), "2")),
                },
                min_ready_seconds: None,
                want: vec![now("default", "foo"), now("default", "bar")],
                want_foo_expectations: Some((2, 1)),
            },
            Case {
                name: "a pod that became ready is looked at again after minReadySeconds",
                observed: Observed::Updated {
                    old: Arc::new(p(&[("app", "foo")], Some("foo"))),
                    new: Arc::new(with_rv(ready(p(&[("app", "foo")], Some("foo"))), "2")),
                },
                min_ready_seconds: Some(10),
                want: vec![
                    now("default", "foo"),
                    Wake::After(ObjectKey::new("default", "foo"), Duration::from_secs(11)),
                ],
                want_foo_expectations: Some((2, 1)),
            },
            Case {
                name: "a pod being deleted is a deletion at once",
                observed: Observed::Updated {
                    old: Arc::new(p(&[("app", "foo")], Some("foo"))),
                    new: Arc::new(with_rv(deleting(p(&[("app", "foo")], Some("foo"))), "2")),
                },
                min_ready_seconds: None,
                want: vec![now("default", "foo")],
                want_foo_expectations: Some((2, 0)),
            },
            Case {
                name: "a deletion found by a relist (last state unknown) wakes its ReplicaSet",
                observed: Observed::Deleted(Arc::new(p(&[("app", "foo")], Some("foo")))),
                min_ready_seconds: None,
                want: vec![now("default", "foo")],
                want_foo_expectations: Some((2, 0)),
            },
            Case {
                name: "an orphan's deletion wakes nobody",
                observed: Observed::Deleted(Arc::new(p(&[("app", "foo")], None))),
                min_ready_seconds: None,
                want: vec![],
                want_foo_expectations: Some((2, 1)),
            },
        ] {
            let mut rss = rss();
            if let Some(seconds) = case.min_ready_seconds {
                let mut foo = rs("default", "foo", &[("app", "foo")]);
                foo.spec.min_ready_seconds = Some(seconds);
                rss.apply(Change::Upsert(foo));
            }
            let mut expectations = Expectations::default();
            expectations.expect_creations("default/foo", 3, t(0));
            expectations.expect_deletions("default/foo", &["default/p".to_string()], t(0));
            expectations.raise("default/foo", 2, 0);
            assert_eq!(
                pod_changed(&case.observed, &rss, &mut expectations),
                case.want,
                "{}",
                case.name
            );
            assert_eq!(
                expectations.get("default/foo"),
                case.want_foo_expectations,
                "{}",
                case.name
            );
        }
    }

    /// Upstream `TestDeleteControllerAndExpectations` and
    /// `TestExpectationsOnRecreate`: a ReplicaSet deleted, or recreated
    /// under its name, forgets what it expected.
    #[test]
    fn a_deleted_or_recreated_replica_set_starts_clean() {
        let foo = rs("default", "foo", &[("app", "foo")]);
        let mut recreated = foo.clone();
        recreated.metadata.uid = Some("uid-foo-2".into());
        for (name, observed) in [
            ("deleted", Observed::Deleted(Arc::new(foo.clone()))),
            (
                "recreated",
                Observed::Updated {
                    old: Arc::new(foo.clone()),
                    new: Arc::new(recreated),
                },
            ),
        ] {
            let mut expectations = Expectations::default();
            expectations.expect_creations("default/foo", 3, t(0));
            assert_eq!(
                replica_set_changed(&observed, &mut expectations),
                vec![now("default", "foo")],
                "{name}"
            );
            assert_eq!(expectations.get("default/foo"), None, "{name}");
        }
        let mut expectations = Expectations::default();
        expectations.expect_creations("default/foo", 3, t(0));
        let same = Observed::Updated {
            old: Arc::new(foo.clone()),
            new: Arc::new(foo),
        };
        replica_set_changed(&same, &mut expectations);
        assert_eq!(expectations.get("default/foo"), Some((3, 0)));
    }
}
