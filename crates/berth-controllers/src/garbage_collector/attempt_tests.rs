//! Upstream's `garbagecollector_test.go` decisions: which objects are
//! deleted (and how), which references dropped, which dependents orphaned,
//! with owners verified by UID; the API calls each decision makes.

use std::collections::BTreeMap;

use berth_apiserver::patch::{PatchKind, PatchType, apply_patch};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::garbage_collector::resources::tests::served;

/// The API as a test sees it: objects by resource, namespace and name,
/// the calls made, and calls made to fail.
#[derive(Default)]
struct FakeApi {
    objects: Mutex<BTreeMap<(String, String, String), ObjectMeta>>,
    actions: Mutex<Vec<String>>,
    patches: Mutex<Vec<MetaPatch>>,
    failing: BTreeMap<String, u16>,
}

fn path(resource: &Served, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", resource.resource.plural)
}

fn api_error(code: u16) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure("the server reported a conflict", "Conflict")
            .with_code(code)
            .boxed(),
    )
}

impl FakeApi {
    fn with(objects: Vec<(&str, ObjectMeta)>) -> FakeApi {
        let api = FakeApi::default();
        if let Ok(mut map) = api.objects.lock() {
            for (plural, meta) in objects {
                let key = (
                    plural.to_string(),
                    meta.namespace.clone().unwrap_or_default(),
                    meta.name.clone().unwrap_or_default(),
                );
                map.insert(key, meta);
            }
        }
        api
    }

    fn record(&self, action: String) -> Result<(), kube::Error> {
        let code = self.failing.get(&action).copied();
        if let Ok(mut actions) = self.actions.lock() {
            actions.push(action);
        }
        code.map_or(Ok(()), |code| Err(api_error(code)))
    }

    fn actions(&self) -> Vec<String> {
        self.actions.lock().map(|a| a.clone()).unwrap_or_default()
    }

    fn patches(&self) -> Vec<MetaPatch> {
        self.patches.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

impl GcApi for FakeApi {
    async fn get(
        &self,
        resource: &Served,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectMeta>, kube::Error> {
        self.record(format!("get {}", path(resource, namespace, name)))?;
        let key = (
            resource.resource.plural.clone(),
            namespace.to_string(),
            name.to_string(),
        );
        Ok(self.objects.lock().ok().and_then(|o| o.get(&key).cloned()))
    }

    async fn delete(
        &self,
        resource: &Served,
        object: &Identity,
        policy: Propagation,
    ) -> Result<(), kube::Error> {
        self.record(format!(
            "delete {} {}",
            path(resource, &object.namespace, &object.name),
            policy.as_str()
        ))
    }

    async fn patch(
        &self,
        resource: &Served,
        object: &Identity,
        patch: &MetaPatch,
    ) -> Result<(), kube::Error> {
        self.record(format!(
            "patch {}",
            path(resource, &object.namespace, &object.name)
        ))?;
        if let Ok(mut patches) = self.patches.lock() {
            patches.push(patch.clone());
        }
        Ok(())
    }
}

fn resources() -> Resources {
    let all = &[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    let mut role_v1beta1 = served(
        "rbac.authorization.k8s.io/v1beta1",
        "Role",
        "roles",
        true,
        all,
    );
    role_v1beta1.preferred = false;
    Resources::new(vec![
        served("v1", "Pod", "pods", true, all),
        served("v1", "Node", "nodes", false, all),
        served(
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            true,
            all,
        ),
        served("apps/v1", "Deployment", "deployments", true, all),
        served("rbac.authorization.k8s.io/v1", "Role", "roles", true, all),
        role_v1beta1,
    ])
}

fn id(api_version: &str, kind: &str, namespace: &str, name: &str, uid: &str) -> Identity {
    Identity {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
        uid: uid.into(),
    }
}

fn reference(owner: &Identity) -> OwnerReference {
    OwnerReference {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        ..OwnerReference::default()
    }
}

/// The metadata the API has for `identity`, naming `owners`.
fn meta(identity: &Identity, owners: &[&Identity]) -> ObjectMeta {
    ObjectMeta {
        name: Some(identity.name.clone()),
        namespace: (!identity.namespace.is_empty()).then(|| identity.namespace.clone()),
        uid: Some(identity.uid.clone()),
        resource_version: Some("7".into()),
        owner_references: (!owners.is_empty())
            .then(|| owners.iter().map(|o| reference(o)).collect()),
        ..ObjectMeta::default()
    }
}

fn with_finalizers(mut meta: ObjectMeta, finalizers: &[&str]) -> ObjectMeta {
    meta.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    meta
}

fn being_deleted(meta: ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        deletion_timestamp: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
        ..meta
    }
}

fn attempt(item: &Identity) -> DeleteAttempt {
    DeleteAttempt {
        item: item.clone(),
        ..DeleteAttempt::default()
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn attempts_to_delete_decide_as_upstream() {
    let pod = id("v1", "Pod", "ns1", "ToBeDeletedPod", "456");
    let rc1 = id("v1", "ReplicationController", "ns1", "owner1", "123");
    let rc2 = id("v1", "ReplicationController", "ns1", "owner2", "124");
    let rc1_recreated = id("v1", "ReplicationController", "ns1", "owner1", "999");
    let pod1ns1 = id("v1", "Pod", "ns1", "podname1", "poduid1");
    let pod2ns2 = id("v1", "Pod", "ns2", "podname2", "poduid2");
    let node1 = id("v1", "Node", "", "nodename", "nodeuid1");
    let role1v1beta1 = id(
        "rbac.authorization.k8s.io/v1beta1",
        "Role",
        "ns1",
        "role1",
        "roleuid1",
    );
    let role1v1 = id(
        "rbac.authorization.k8s.io/v1",
        "Role",
        "ns1",
        "role1",
        "roleuid1",
    );
    let deployment_extensions = id(
        "extensions/v1beta1",
        "Deployment",
        "ns1",
        "deployment1",
        "deploymentuid1",
    );
    let deployment_apps = id(
        "apps/v1",
        "Deployment",
        "ns1",
        "deployment1",
        "deploymentuid1",
    );
    let waiting_rc2 = being_deleted(with_finalizers(meta(&rc2, &[]), &[FOREGROUND_FINALIZER]));

    struct Case {
        name: &'static str,
        objects: Vec<(&'static str, ObjectMeta)>,
        attempt: DeleteAttempt,
        want: Outcome,
        actions: Vec<&'static str>,
    }
    let cases = [
        Case {
            // Upstream `TestAttemptToDeleteItem`.
            name: "its owner is gone: the item goes in the background",
            objects: vec![("pods", meta(&pod, &[&rc1]))],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
                "delete pods ns1/ToBeDeletedPod Background",
            ],
        },
        Case {
            name: "its owner exists: it stays",
            objects: vec![
                ("pods", meta(&pod, &[&rc1])),
                ("replicationcontrollers", meta(&rc1, &[])),
            ],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
            ],
        },
        Case {
            name: "an owner of the same name with another UID is not its owner: the item goes",
            objects: vec![
                ("pods", meta(&pod, &[&rc1])),
                ("replicationcontrollers", meta(&rc1_recreated, &[])),
            ],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
                "delete pods ns1/ToBeDeletedPod Background",
            ],
        },
        Case {
            name: "one owner exists, another is gone: the reference to the gone one is removed",
            objects: vec![
                ("pods", meta(&pod, &[&rc1, &rc2])),
                ("replicationcontrollers", meta(&rc1, &[])),
            ],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
                "get replicationcontrollers ns1/owner2",
                "patch pods ns1/ToBeDeletedPod",
            ],
        },
        Case {
            name: "one owner exists, another waits for its dependents: the waiting reference is removed",
            objects: vec![
                ("pods", meta(&pod, &[&rc1, &rc2])),
                ("replicationcontrollers", meta(&rc1, &[])),
                ("replicationcontrollers", waiting_rc2.clone()),
            ],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
                "get replicationcontrollers ns1/owner2",
                "patch pods ns1/ToBeDeletedPod",
            ],
        },
        Case {
            name: "its only owner waits for its dependents and it has none: it goes in the background",
            objects: vec![
                ("pods", meta(&pod, &[&rc2])),
                ("replicationcontrollers", waiting_rc2.clone()),
            ],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner2",
                "delete pods ns1/ToBeDeletedPod Background",
            ],
        },
        Case {
            name: "its only owner waits for its dependents and it has its own: it goes in the foreground",
            objects: vec![
                ("pods", meta(&pod, &[&rc2])),
                ("replicationcontrollers", waiting_rc2.clone()),
            ],
            attempt: DeleteAttempt {
                has_dependents: true,
                ..attempt(&pod)
            },
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner2",
                "delete pods ns1/ToBeDeletedPod Foreground",
            ],
        },
        Case {
            name: "a dependent of it deletes its own dependents too: it stops blocking its owners first",
            objects: vec![
                ("pods", meta(&pod, &[&rc2])),
                ("replicationcontrollers", waiting_rc2.clone()),
            ],
            attempt: DeleteAttempt {
                has_dependents: true,
                a_dependent_deletes_its_dependents: true,
                ..attempt(&pod)
            },
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner2",
                "patch pods ns1/ToBeDeletedPod",
                "delete pods ns1/ToBeDeletedPod Foreground",
            ],
        },
        Case {
            name: "its owner is gone and it has the orphan finalizer: it goes orphaning its dependents",
            objects: vec![(
                "pods",
                with_finalizers(meta(&pod, &[&rc1]), &[ORPHAN_FINALIZER]),
            )],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
                "delete pods ns1/ToBeDeletedPod Orphan",
            ],
        },
        Case {
            name: "its owner is gone and it has the foregroundDeletion finalizer: it goes in the foreground",
            objects: vec![(
                "pods",
                with_finalizers(meta(&pod, &[&rc1]), &[FOREGROUND_FINALIZER]),
            )],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/ToBeDeletedPod",
                "get replicationcontrollers ns1/owner1",
                "delete pods ns1/ToBeDeletedPod Foreground",
            ],
        },
        Case {
            name: "the item is gone",
            objects: vec![],
            attempt: attempt(&pod),
            want: Outcome::Gone,
            actions: vec!["get pods ns1/ToBeDeletedPod"],
        },
        Case {
            name: "another object under the item's name is not the item",
            objects: vec![(
                "pods",
                meta(&id("v1", "Pod", "ns1", "ToBeDeletedPod", "other"), &[&rc1]),
            )],
            attempt: attempt(&pod),
            want: Outcome::Gone,
            actions: vec!["get pods ns1/ToBeDeletedPod"],
        },
        Case {
            name: "an item without owners stays",
            objects: vec![("pods", meta(&pod, &[]))],
            attempt: attempt(&pod),
            want: Outcome::Done,
            actions: vec!["get pods ns1/ToBeDeletedPod"],
        },
        Case {
            name: "bad child in ns1 -> owner in ns2: the owner is looked for in ns1, absent, the child goes",
            objects: vec![
                ("pods", meta(&pod1ns1, &[&pod2ns2])),
                ("pods", meta(&pod2ns2, &[])),
            ],
            attempt: attempt(&pod1ns1),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/podname1",
                "get pods ns1/podname2",
                "delete pods ns1/podname1 Background",
            ],
        },
        Case {
            name: "bad cluster-scoped child -> owner in ns1: never deleted",
            objects: vec![
                ("nodes", meta(&node1, &[&pod1ns1])),
                ("pods", meta(&pod1ns1, &[])),
            ],
            attempt: attempt(&node1),
            want: Outcome::Done,
            actions: vec!["get nodes /nodename"],
        },
        Case {
            name: "good child in ns1 -> cluster-scoped owner: it stays",
            objects: vec![
                ("pods", meta(&pod1ns1, &[&node1])),
                ("nodes", meta(&node1, &[])),
            ],
            attempt: attempt(&pod1ns1),
            want: Outcome::Done,
            actions: vec!["get pods ns1/podname1", "get nodes /nodename"],
        },
        Case {
            name: "good child -> existing owner with a non-preferred served apiVersion: it stays",
            objects: vec![
                ("pods", meta(&pod1ns1, &[&role1v1beta1])),
                ("roles", meta(&role1v1, &[])),
            ],
            attempt: attempt(&pod1ns1),
            want: Outcome::Done,
            actions: vec!["get pods ns1/podname1", "get roles ns1/role1"],
        },
        Case {
            name: "child -> owner with an apiVersion no longer served: it stays, to be tried again",
            objects: vec![
                ("pods", meta(&pod1ns1, &[&deployment_extensions])),
                ("deployments", meta(&deployment_apps, &[])),
            ],
            attempt: attempt(&pod1ns1),
            want: Outcome::Retry(
                "unable to get REST mapping for extensions/v1beta1/Deployment".into(),
            ),
            actions: vec!["get pods ns1/podname1"],
        },
        Case {
            name: "child -> absent owner with a served apiVersion: it goes",
            objects: vec![("pods", meta(&pod1ns1, &[&deployment_apps]))],
            attempt: attempt(&pod1ns1),
            want: Outcome::Done,
            actions: vec![
                "get pods ns1/podname1",
                "get deployments ns1/deployment1",
                "delete pods ns1/podname1 Background",
            ],
        },
        Case {
            name: "deleting its dependents: the blocking ones not deleting theirs are looked at",
            objects: vec![(
                "replicationcontrollers",
                being_deleted(with_finalizers(meta(&rc1, &[]), &[FOREGROUND_FINALIZER])),
            )],
            attempt: DeleteAttempt {
                deleting_dependents: true,
                blocking_dependents: vec![(pod.clone(), false), (pod1ns1.clone(), true)],
                has_dependents: true,
                ..attempt(&rc1)
            },
            want: Outcome::Enqueue(vec!["456".into()]),
            actions: vec!["get replicationcontrollers ns1/owner1"],
        },
        Case {
            name: "deleting its dependents, none blocks any more: the foregroundDeletion finalizer goes",
            objects: vec![(
                "replicationcontrollers",
                being_deleted(with_finalizers(
                    meta(&rc1, &[]),
                    &[FOREGROUND_FINALIZER, "example.com/x"],
                )),
            )],
            attempt: DeleteAttempt {
                deleting_dependents: true,
                ..attempt(&rc1)
            },
            want: Outcome::Done,
            actions: vec![
                "get replicationcontrollers ns1/owner1",
                "get replicationcontrollers ns1/owner1",
                "patch replicationcontrollers ns1/owner1",
            ],
        },
    ];
    let resources = resources();
    for case in cases {
        let api = FakeApi::with(case.objects);
        let absent = Mutex::new(AbsentOwners::default());
        let workers = Workers {
            api: &api,
            resources: &resources,
            absent: &absent,
        };
        let got = workers.attempt_to_delete(&case.attempt).await;
        assert_eq!(got, case.want, "{}", case.name);
        assert_eq!(api.actions(), strings(&case.actions), "{}", case.name);
    }
}

/// The patches the attempts send.
#[tokio::test]
async fn the_patches_remove_references_unblock_owners_and_drop_one_finalizer() {
    let pod = id("v1", "Pod", "ns1", "p", "456");
    let rc1 = id("v1", "ReplicationController", "ns1", "owner1", "123");
    let rc2 = id("v1", "ReplicationController", "ns1", "owner2", "124");
    let resources = resources();
    let absent = Mutex::new(AbsentOwners::default());

    let api = FakeApi::with(vec![
        ("pods", meta(&pod, &[&rc1, &rc2])),
        ("replicationcontrollers", meta(&rc1, &[])),
    ]);
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    workers.attempt_to_delete(&attempt(&pod)).await;
    assert_eq!(api.patches(), vec![delete_references("456", &["124"])]);

    let api = FakeApi::with(vec![(
        "replicationcontrollers",
        being_deleted(with_finalizers(
            meta(&rc1, &[]),
            &["example.com/x", FOREGROUND_FINALIZER],
        )),
    )]);
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    let deleting = DeleteAttempt {
        deleting_dependents: true,
        ..attempt(&rc1)
    };
    workers.attempt_to_delete(&deleting).await;
    assert_eq!(
        api.patches(),
        vec![MetaPatch::Merge(
            json!({"metadata": {"resourceVersion": "7", "finalizers": ["example.com/x"]}})
        )]
    );

    // The last finalizer goes as a null, which a merge patch removes.
    let api = FakeApi::with(vec![(
        "replicationcontrollers",
        being_deleted(with_finalizers(meta(&rc1, &[]), &[FOREGROUND_FINALIZER])),
    )]);
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    workers.attempt_to_delete(&deleting).await;
    assert_eq!(
        api.patches(),
        vec![MetaPatch::Merge(
            json!({"metadata": {"resourceVersion": "7", "finalizers": null}})
        )]
    );
}

/// Applies a strategic merge patch to a Pod as the API server does.
fn patched(original: Value, patch: &MetaPatch) -> Value {
    let MetaPatch::Strategic(patch) = patch else {
        panic!("a strategic merge patch: {patch:?}");
    };
    let bytes = serde_json::to_vec(patch).unwrap_or_default();
    apply_patch(
        PatchType::StrategicMerge,
        &PatchKind::Pod,
        &original,
        &bytes,
        None,
    )
    .unwrap_or_else(|e| panic!("the patch applies: {e:?}"))
}

/// Upstream `TestDeleteOwnerRefPatch`.
#[test]
fn the_delete_references_patch_removes_only_those_references() {
    let original = json!({"metadata": {"uid": "100", "ownerReferences": [{"uid": "1"}, {"uid": "2"}, {"uid": "3"}]}});
    let got = patched(original, &delete_references("100", &["2", "3"]));
    assert_eq!(
        got,
        json!({"metadata": {"uid": "100", "ownerReferences": [{"uid": "1"}]}})
    );
}

/// Upstream `TestUnblockOwnerReference`.
#[test]
fn the_unblock_patch_sets_every_blocking_reference_not_to_block() {
    let references: Vec<OwnerReference> = serde_json::from_value(json!([
        {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "1", "blockOwnerDeletion": true},
        {"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": "2", "blockOwnerDeletion": false},
        {"apiVersion": "v1", "kind": "Pod", "name": "c", "uid": "3"},
    ]))
    .unwrap_or_default();
    let original = json!({"metadata": {"uid": "100", "ownerReferences": references}});
    let got = patched(original, &unblock_references("100", &references));
    let blocks: Vec<(String, Option<bool>)> = got["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["uid"].as_str().unwrap_or("").to_string(),
                r["blockOwnerDeletion"].as_bool(),
            )
        })
        .collect();
    assert_eq!(
        blocks,
        vec![
            ("1".into(), Some(false)),
            ("2".into(), Some(false)),
            ("3".into(), None),
        ]
    );
}

/// Upstream `TestAbsentOwnerCache`: an owner found absent is not asked for
/// again while it is among the most recently used.
#[tokio::test]
async fn an_owner_found_absent_is_not_asked_for_again() {
    let rc = |n: &str| id("v1", "ReplicationController", "ns1", &format!("rc{n}"), n);
    let pod = |name: &str, owner: &Identity| {
        (
            name.to_string(),
            id("v1", "Pod", "ns1", name, &format!("{name}-uid")),
            owner.clone(),
        )
    };
    let pods = [
        pod("rc1Pod1", &rc("1")),
        pod("rc2Pod1", &rc("2")),
        pod("rc1Pod2", &rc("1")),
        pod("rc3Pod1", &rc("3")),
    ];
    let api = FakeApi::with(
        pods.iter()
            .map(|(_, p, o)| ("pods", meta(p, &[o])))
            .collect(),
    );
    let resources = resources();
    let absent = Mutex::new(AbsentOwners::new(2));
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    for (_, pod, _) in &pods {
        workers.attempt_to_delete(&attempt(pod)).await;
    }
    let asked = api
        .actions()
        .iter()
        .filter(|a| *a == "get replicationcontrollers ns1/rc1")
        .count();
    assert_eq!(asked, 1, "rc1 was found absent once");
    let mut absent = absent.lock().unwrap_or_else(|e| e.into_inner());
    assert!(absent.has(&rc("1")), "rc1 stays: it was used again");
    assert!(!absent.has(&rc("2")), "rc2 was the least recently used");
    assert!(absent.has(&rc("3")));
}

#[tokio::test]
async fn orphaning_removes_the_references_then_the_finalizer() {
    let rc = id("v1", "ReplicationController", "ns1", "owner1", "123");
    let p1 = id("v1", "Pod", "ns1", "p1", "u1");
    let p2 = id("v1", "Pod", "ns1", "p2", "u2");
    let resources = resources();
    let absent = Mutex::new(AbsentOwners::default());

    let owner = being_deleted(with_finalizers(meta(&rc, &[]), &[ORPHAN_FINALIZER]));
    let api = FakeApi::with(vec![
        ("replicationcontrollers", owner.clone()),
        ("pods", meta(&p1, &[&rc])),
    ]);
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    let got = workers
        .attempt_to_orphan(&rc, &[p1.clone(), p2.clone()])
        .await;
    assert_eq!(got, Outcome::Done);
    assert_eq!(
        api.actions(),
        strings(&[
            "patch pods ns1/p1",
            "patch pods ns1/p2",
            "get replicationcontrollers ns1/owner1",
            "patch replicationcontrollers ns1/owner1",
        ])
    );
    assert_eq!(api.patches()[0], delete_references("u1", &["123"]));

    // Upstream `TestOrphanDependentsFailure`: a dependent that cannot be
    // patched keeps the finalizer, and the attempt is retried.
    let mut api = FakeApi::with(vec![("replicationcontrollers", owner)]);
    api.failing.insert("patch pods ns1/p1".into(), 409);
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    let got = workers.attempt_to_orphan(&rc, &[p1]).await;
    let Outcome::Retry(why) = got else {
        panic!("retried: {got:?}");
    };
    assert!(why.contains("the server reported a conflict"), "{why}");
    assert_eq!(api.actions(), strings(&["patch pods ns1/p1"]));
}

#[tokio::test]
async fn removing_a_finalizer_retries_a_conflict() {
    let rc = id("v1", "ReplicationController", "ns1", "owner1", "123");
    let resources = resources();
    let absent = Mutex::new(AbsentOwners::default());
    let mut api = FakeApi::with(vec![(
        "replicationcontrollers",
        being_deleted(with_finalizers(meta(&rc, &[]), &[ORPHAN_FINALIZER])),
    )]);
    api.failing
        .insert("patch replicationcontrollers ns1/owner1".into(), 409);
    let workers = Workers {
        api: &api,
        resources: &resources,
        absent: &absent,
    };
    let got = workers.attempt_to_orphan(&rc, &[]).await;
    assert!(matches!(got, Outcome::Retry(_)), "{got:?}");
    let patches = api
        .actions()
        .iter()
        .filter(|a| a.starts_with("patch"))
        .count();
    assert_eq!(
        patches, 4,
        "client-go's retry.DefaultBackoff tries four times"
    );
}
