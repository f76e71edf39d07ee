//! The graph's bookkeeping (upstream's `TestProcessEvent` scenarios and
//! their invariants) and the work each change produces.

use super::*;

fn reference(uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: format!("pod-{uid}"),
        uid: uid.into(),
        ..OwnerReference::default()
    }
}

fn blocking(uid: &str) -> OwnerReference {
    OwnerReference {
        block_owner_deletion: Some(true),
        ..reference(uid)
    }
}

fn pod(uid: &str, owners: &[&str]) -> Observed {
    pod_with(uid, owners.iter().map(|o| reference(o)).collect())
}

fn pod_with(uid: &str, owners: Vec<OwnerReference>) -> Observed {
    Observed {
        identity: Identity {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: "ns1".into(),
            name: format!("pod-{uid}"),
            uid: uid.into(),
        },
        owners,
        being_deleted: false,
        finalizers: Vec::new(),
    }
}

fn deleting(mut observed: Observed, finalizer: &str) -> Observed {
    observed.being_deleted = true;
    observed.finalizers = vec![finalizer.to_string()];
    observed
}

fn delete(uid: &str) -> Work {
    Work::AttemptToDelete(uid.into())
}

/// Upstream's `verifyGraphInvariants`: an object is among its owners'
/// dependents, and every dependent names its owner.
fn verify_invariants(scenario: &str, graph: &Graph) {
    for (uid, node) in &graph.nodes {
        for owner in &node.owners {
            assert!(
                graph
                    .dependents
                    .get(&owner.uid)
                    .is_some_and(|d| d.contains(uid)),
                "{scenario}: {uid} names {} but is not among its dependents",
                owner.uid
            );
        }
    }
    for (owner, dependents) in &graph.dependents {
        assert!(
            !dependents.is_empty(),
            "{scenario}: empty dependents of {owner}"
        );
        for d in dependents {
            if let Some(node) = graph.nodes.get(d) {
                assert!(
                    node.owners.iter().any(|o| &o.uid == owner),
                    "{scenario}: {d} is a dependent of {owner} but does not name it"
                );
            }
        }
    }
}

enum Event {
    Add(&'static str, &'static [&'static str]),
    Delete(&'static str),
}

/// Upstream `TestProcessEvent`.
#[test]
fn the_graph_keeps_owners_and_dependents_in_step() {
    use Event::{Add, Delete};
    let scenarios: [(&str, Vec<Event>); 4] = [
        (
            "test1",
            vec![Add("1", &[]), Add("2", &["1"]), Add("3", &["1", "2"])],
        ),
        (
            "test2",
            vec![
                Add("1", &[]),
                Add("2", &["1"]),
                Add("3", &["1", "2"]),
                Add("4", &["2"]),
                Delete("2"),
            ],
        ),
        (
            "test3",
            vec![
                Add("1", &[]),
                Add("2", &["1"]),
                Add("3", &["1", "2"]),
                Add("4", &["3"]),
                Add("2", &["4"]),
            ],
        ),
        (
            "reverse test2",
            vec![
                Add("4", &["2"]),
                Add("3", &["1", "2"]),
                Add("2", &["1"]),
                Add("1", &[]),
                Delete("2"),
            ],
        ),
    ];
    for (name, events) in scenarios {
        let mut graph = Graph::default();
        for event in events {
            match event {
                Add(uid, owners) => {
                    graph.observe(pod(uid, owners));
                }
                Delete(uid) => {
                    graph.forget(uid);
                }
            }
            verify_invariants(name, &graph);
        }
    }
}

#[test]
fn a_deleted_owner_sends_its_dependents_and_its_waiting_owners_to_be_looked_at() {
    let mut graph = Graph::default();
    graph.observe(deleting(pod("owner", &[]), FOREGROUND_FINALIZER));
    graph.observe(pod("middle", &["owner"]));
    graph.observe(pod("leaf-a", &["middle"]));
    graph.observe(pod("leaf-b", &["middle"]));
    let (work, absent) = graph.forget("middle");
    assert_eq!(
        work,
        vec![delete("leaf-a"), delete("leaf-b"), delete("owner")]
    );
    assert_eq!(absent.map(|i| i.uid), Some("middle".to_string()));
    // An object without dependents is not remembered as an absent owner.
    let (_, absent) = graph.forget("leaf-a");
    assert_eq!(absent, None);
    // Forgetting twice (an API 404, then the watch's delete) does nothing.
    assert_eq!(graph.forget("middle"), (Vec::new(), None));
}

#[test]
fn deletions_starting_with_the_garbage_collectors_finalizers_are_noticed_once() {
    let mut graph = Graph::default();
    graph.observe(pod("owner", &[]));
    graph.observe(pod("child", &["owner"]));
    // Orphan: the owner's dependents are to be orphaned, once.
    assert_eq!(
        graph.observe(deleting(pod("owner", &[]), ORPHAN_FINALIZER)),
        vec![Work::AttemptToOrphan("owner".into())]
    );
    assert_eq!(
        graph.observe(deleting(pod("owner", &[]), ORPHAN_FINALIZER)),
        vec![]
    );

    // Foreground: dependents first, then the owner itself, once.
    let mut graph = Graph::default();
    graph.observe(pod("owner", &[]));
    graph.observe(pod("child", &["owner"]));
    assert_eq!(
        graph.observe(deleting(pod("owner", &[]), FOREGROUND_FINALIZER)),
        vec![delete("child"), delete("owner")]
    );
    assert!(
        graph
            .node("owner")
            .is_some_and(|n| n.deleting_dependents && n.being_deleted)
    );
    assert_eq!(
        graph.observe(deleting(pod("owner", &[]), FOREGROUND_FINALIZER)),
        vec![]
    );

    // First seen already being deleted (a relist): noticed as well.
    let mut graph = Graph::default();
    assert_eq!(
        graph.observe(deleting(pod("owner", &[]), ORPHAN_FINALIZER)),
        vec![Work::AttemptToOrphan("owner".into())]
    );
}

/// Upstream `addUnblockedOwnersToDeleteQueue`.
#[test]
fn an_owner_is_looked_at_when_a_dependent_stops_blocking_it() {
    struct Case {
        name: &'static str,
        before: Vec<OwnerReference>,
        after: Vec<OwnerReference>,
        want: Vec<Work>,
    }
    let unblocked = OwnerReference {
        block_owner_deletion: Some(false),
        ..reference("owner")
    };
    let cases = [
        Case {
            name: "a blocking reference removed",
            before: vec![blocking("owner")],
            after: vec![],
            want: vec![delete("owner")],
        },
        Case {
            name: "a blocking reference set not to block",
            before: vec![blocking("owner")],
            after: vec![unblocked.clone()],
            want: vec![delete("owner")],
        },
        Case {
            name: "a non-blocking reference removed",
            before: vec![reference("owner")],
            after: vec![],
            want: vec![],
        },
        Case {
            name: "a reference set to block",
            before: vec![unblocked],
            after: vec![blocking("owner")],
            want: vec![],
        },
    ];
    for case in cases {
        let mut graph = Graph::default();
        graph.observe(pod("owner", &[]));
        graph.observe(pod_with("child", case.before));
        assert_eq!(
            graph.observe(pod_with("child", case.after)),
            case.want,
            "{}",
            case.name
        );
        verify_invariants(case.name, &graph);
    }
}

#[test]
fn owners_missing_from_the_graph_are_checked_once_everything_is_listed() {
    let mut graph = Graph::default();
    graph.observe(pod("owner", &[]));
    graph.observe(pod("child", &["owner"]));
    graph.observe(pod("orphan", &["gone"]));
    // Before every type is listed, a missing owner may only be unlisted.
    assert_eq!(graph.observe(pod("orphan-2", &["gone"])), vec![]);
    assert_eq!(
        graph.mark_synced(),
        vec![delete("orphan"), delete("orphan-2")]
    );
    assert_eq!(graph.mark_synced(), vec![]);
    // Afterwards, at once.
    assert_eq!(graph.observe(pod("late", &["gone"])), vec![delete("late")]);
    assert_eq!(graph.observe(pod("fine", &["owner"])), vec![]);
    // A reference added later to a missing owner too.
    assert_eq!(
        graph.observe(pod("fine", &["owner", "gone"])),
        vec![delete("fine")]
    );
}

/// Upstream `TestConflictingData`'s observations: a reference whose
/// coordinates disagree with the owner found under its UID sends the
/// dependent to be checked at the API.
#[test]
fn references_that_disagree_with_the_owner_are_checked() {
    struct Case {
        name: &'static str,
        owner: Identity,
        child_namespace: &'static str,
        reference: OwnerReference,
        checked: bool,
    }
    let node = Identity {
        api_version: "v1".into(),
        kind: "Node".into(),
        namespace: String::new(),
        name: "nodename".into(),
        uid: "nodeuid1".into(),
    };
    let pod2ns2 = Identity {
        api_version: "v1".into(),
        kind: "Pod".into(),
        namespace: "ns2".into(),
        name: "podname2".into(),
        uid: "poduid2".into(),
    };
    let deployment = Identity {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "ns1".into(),
        name: "deployment1".into(),
        uid: "deploymentuid1".into(),
    };
    let reference_to = |id: &Identity| OwnerReference {
        api_version: id.api_version.clone(),
        kind: id.kind.clone(),
        name: id.name.clone(),
        uid: id.uid.clone(),
        ..OwnerReference::default()
    };
    let cases = [
        Case {
            name: "good child in ns1 -> cluster-scoped owner",
            owner: node.clone(),
            child_namespace: "ns1",
            reference: reference_to(&node),
            checked: false,
        },
        Case {
            name: "bad child in ns1 -> owner in ns2",
            owner: pod2ns2.clone(),
            child_namespace: "ns1",
            reference: reference_to(&pod2ns2),
            checked: true,
        },
        Case {
            name: "good child in the owner's namespace",
            owner: pod2ns2.clone(),
            child_namespace: "ns2",
            reference: reference_to(&pod2ns2),
            checked: false,
        },
        Case {
            name: "child -> existing owner under another apiVersion",
            owner: deployment.clone(),
            child_namespace: "ns1",
            reference: OwnerReference {
                api_version: "extensions/v1beta1".into(),
                ..reference_to(&deployment)
            },
            checked: true,
        },
        Case {
            name: "child -> the owner's UID under another name",
            owner: deployment.clone(),
            child_namespace: "ns1",
            reference: OwnerReference {
                name: "secretname".into(),
                kind: "Secret".into(),
                api_version: "v1".into(),
                ..reference_to(&deployment)
            },
            checked: true,
        },
    ];
    for case in cases {
        for owner_first in [true, false] {
            let mut graph = Graph::default();
            let owner = Observed {
                identity: case.owner.clone(),
                ..Observed::default()
            };
            let child = Observed {
                identity: Identity {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    namespace: case.child_namespace.into(),
                    name: "podname1".into(),
                    uid: "poduid1".into(),
                },
                owners: vec![case.reference.clone()],
                ..Observed::default()
            };
            let (first, second) = if owner_first {
                (owner, child)
            } else {
                (child, owner)
            };
            graph.observe(first);
            graph.observe(second);
            let want = if case.checked {
                vec![delete("poduid1")]
            } else {
                vec![]
            };
            assert_eq!(
                graph.mark_synced(),
                want,
                "{} (owner first: {owner_first})",
                case.name
            );
        }
    }
}

#[test]
fn blocking_dependents_are_those_whose_reference_blocks() {
    let mut graph = Graph::default();
    graph.observe(pod("owner", &[]));
    graph.observe(pod_with("blocks", vec![blocking("owner")]));
    graph.observe(pod("does-not", &["owner"]));
    let blocking: Vec<&str> = graph
        .blocking_dependents("owner")
        .iter()
        .map(|n| n.identity.uid.as_str())
        .collect();
    assert_eq!(blocking, vec!["blocks"]);
    assert_eq!(graph.dependents("owner").count(), 2);
}
