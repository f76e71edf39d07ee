//! Upstream's `pkg/controller/disruption/disruption_test.go` arithmetic and
//! `pkg/registry/core/pod/storage/eviction_test.go` decisions, as tables.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{Pod, ReplicationController, ReplicationControllerSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;
use crate::test_util::{make_pod, pdb, t};

const LABELS: &[(&str, &str)] = &[("foo", "bar")];

fn int(n: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(n))
}

fn pct(s: &str) -> Option<IntOrString> {
    Some(IntOrString::String(s.into()))
}

fn meta(name: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        uid: Some(uid.into()),
        ..ObjectMeta::default()
    }
}

fn controller_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// The controller's caches in upstream's fake controller.
#[derive(Default, Clone)]
struct Fake {
    replica_sets: Vec<ReplicaSet>,
    deployments: Vec<Deployment>,
    stateful_sets: Vec<StatefulSet>,
    replication_controllers: Vec<ReplicationController>,
}

fn named<'a, T>(items: &'a [T], meta: impl Fn(&T) -> &ObjectMeta, name: &str) -> Option<&'a T> {
    items.iter().find(|i| meta(i).name.as_deref() == Some(name))
}

impl Workloads for Fake {
    fn replica_set(&self, _: &str, name: &str) -> Option<&ReplicaSet> {
        named(&self.replica_sets, |o| &o.metadata, name)
    }
    fn deployment(&self, _: &str, name: &str) -> Option<&Deployment> {
        named(&self.deployments, |o| &o.metadata, name)
    }
    fn stateful_set(&self, _: &str, name: &str) -> Option<&StatefulSet> {
        named(&self.stateful_sets, |o| &o.metadata, name)
    }
    fn replication_controller(&self, _: &str, name: &str) -> Option<&ReplicationController> {
        named(&self.replication_controllers, |o| &o.metadata, name)
    }
}

fn rs(replicas: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: meta("rs", "rs-uid"),
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            ..ReplicaSetSpec::default()
        },
        status: None,
    }
}

fn rc(replicas: i32) -> ReplicationController {
    ReplicationController {
        metadata: meta("rc", "rc-uid"),
        spec: Some(ReplicationControllerSpec {
            replicas: Some(replicas),
            ..ReplicationControllerSpec::default()
        }),
        status: None,
    }
}

fn ss(replicas: i32) -> StatefulSet {
    StatefulSet {
        metadata: meta("ss", "ss-uid"),
        spec: StatefulSetSpec {
            replicas: Some(replicas),
            ..StatefulSetSpec::default()
        },
        status: None,
    }
}

fn deployment(replicas: i32) -> Deployment {
    Deployment {
        metadata: meta("dep", "dep-uid"),
        spec: DeploymentSpec {
            replicas: Some(replicas),
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

/// The ReplicaSet `rs2` run by Deployment `dep`.
fn deployment_rs(replicas: i32) -> ReplicaSet {
    let mut rs = rs(replicas);
    rs.metadata.name = Some("rs2".into());
    rs.metadata.uid = Some("rs2-uid".into());
    rs.metadata.owner_references = Some(vec![controller_ref(
        "apps/v1",
        "Deployment",
        "dep",
        "dep-uid",
    )]);
    rs
}

enum Owner {
    Naked,
    Rs,
    DeploymentRs,
    Rc,
    Ss,
    Unsupported,
}

fn pod(name: &str, owner: Owner, ready: bool) -> Pod {
    let mut p = make_pod().name(name).namespace("default").labels(LABELS);
    p = match owner {
        Owner::Naked => p,
        Owner::Rs => p.owner_reference(controller_ref("apps/v1", "ReplicaSet", "rs", "rs-uid")),
        Owner::DeploymentRs => {
            p.owner_reference(controller_ref("apps/v1", "ReplicaSet", "rs2", "rs2-uid"))
        }
        Owner::Rc => p.owner_reference(controller_ref(
            "v1",
            "ReplicationController",
            "rc",
            "rc-uid",
        )),
        Owner::Ss => p.owner_reference(controller_ref("apps/v1", "StatefulSet", "ss", "ss-uid")),
        Owner::Unsupported => p.owner_reference(controller_ref(
            "apps.test.io/v1",
            "TestWorkload",
            "fake-controller",
            "b7329742",
        )),
    };
    if ready {
        p.ready().obj()
    } else {
        p.phase("Running").obj()
    }
}

fn pods(n: usize, owner: fn() -> Owner, ready: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| pod(&format!("pod-{i}"), owner(), i < ready))
        .collect()
}

/// (disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods), as
/// upstream's `VerifyPdbStatus` reads them.
type Want = Result<(i32, i32, i32, i32), String>;

fn sync(budget: &PodDisruptionBudget, pods: &[Pod], fake: &Fake, now: Timestamp) -> Want {
    let c = compute(budget, pods, fake, now)?;
    let allowed = disruptions_allowed(
        c.current_healthy,
        c.expected.desired_healthy,
        c.expected.expected_count,
    );
    Ok((
        allowed,
        c.current_healthy,
        c.expected.desired_healthy,
        c.expected.expected_count,
    ))
}

/// The status arithmetic of `TestNoSelector`, `TestUnavailable`,
/// `TestIntegerMaxUnavailable(WithScaling)`,
/// `TestPercentageMaxUnavailableWithScaling`, `TestNakedPod`,
/// `TestUnsupportedControllerPod`, `TestReplicaSet`,
/// `TestReplicationController`, `TestStatefulSetController`,
/// `TestTwoControllers` and the Deployment finder.
#[test]
fn budget_status_arithmetic_as_upstream() {
    struct Case {
        name: &'static str,
        min_available: Option<IntOrString>,
        max_unavailable: Option<IntOrString>,
        empty_selector: bool,
        fake: Fake,
        pods: Vec<Pod>,
        want: Want,
    }
    let none = Fake::default();
    let with = |f: fn(&mut Fake)| {
        let mut fake = Fake::default();
        f(&mut fake);
        fake
    };
    let cases = [
        Case {
            name: "no selector, no pods: nothing expected",
            min_available: int(3),
            max_unavailable: None,
            empty_selector: true,
            fake: none.clone(),
            pods: vec![],
            want: Ok((0, 0, 3, 0)),
        },
        Case {
            name: "empty selector selects every pod of the namespace",
            min_available: int(3),
            max_unavailable: None,
            empty_selector: true,
            fake: none.clone(),
            pods: pods(1, || Owner::Naked, 1),
            want: Ok((0, 1, 3, 1)),
        },
        Case {
            name: "integer minAvailable 3 with 3 ready pods: none allowed",
            min_available: int(3),
            max_unavailable: None,
            empty_selector: false,
            fake: none.clone(),
            pods: pods(3, || Owner::Naked, 3),
            want: Ok((0, 3, 3, 3)),
        },
        Case {
            name: "integer minAvailable 3 with 4 ready pods: one allowed",
            min_available: int(3),
            max_unavailable: None,
            empty_selector: false,
            fake: none.clone(),
            pods: pods(4, || Owner::Naked, 4),
            want: Ok((1, 4, 3, 4)),
        },
        Case {
            name: "integer minAvailable 3, one of 4 pods unready: none allowed",
            min_available: int(3),
            max_unavailable: None,
            empty_selector: false,
            fake: none.clone(),
            pods: pods(4, || Owner::Naked, 3),
            want: Ok((0, 3, 3, 4)),
        },
        Case {
            name: "integer maxUnavailable with no pods: none allowed",
            min_available: None,
            max_unavailable: int(1),
            empty_selector: false,
            fake: none.clone(),
            pods: vec![],
            want: Ok((0, 0, 0, 0)),
        },
        Case {
            name: "integer maxUnavailable with a naked pod: none allowed (nothing expected)",
            min_available: None,
            max_unavailable: int(1),
            empty_selector: false,
            fake: none.clone(),
            pods: pods(1, || Owner::Naked, 1),
            want: Ok((0, 1, 0, 0)),
        },
        Case {
            name: "integer maxUnavailable 2 of a ReplicaSet of 7",
            min_available: None,
            max_unavailable: int(2),
            empty_selector: false,
            fake: with(|f| f.replica_sets.push(rs(7))),
            pods: pods(1, || Owner::Rs, 1),
            want: Ok((0, 1, 5, 7)),
        },
        Case {
            name: "integer maxUnavailable 2 of the ReplicaSet scaled to 5",
            min_available: None,
            max_unavailable: int(2),
            empty_selector: false,
            fake: with(|f| f.replica_sets.push(rs(5))),
            pods: pods(1, || Owner::Rs, 1),
            want: Ok((0, 1, 3, 5)),
        },
        Case {
            name: "maxUnavailable 30% of 7 rounds up to 3",
            min_available: None,
            max_unavailable: pct("30%"),
            empty_selector: false,
            fake: with(|f| f.replica_sets.push(rs(7))),
            pods: pods(1, || Owner::Rs, 1),
            want: Ok((0, 1, 4, 7)),
        },
        Case {
            name: "maxUnavailable 30% of 3 rounds up to 1",
            min_available: None,
            max_unavailable: pct("30%"),
            empty_selector: false,
            fake: with(|f| f.replica_sets.push(rs(3))),
            pods: pods(1, || Owner::Rs, 1),
            want: Ok((0, 1, 2, 3)),
        },
        Case {
            name: "percentage minAvailable with a naked pod: none allowed",
            min_available: pct("28%"),
            max_unavailable: None,
            empty_selector: false,
            fake: none.clone(),
            pods: pods(1, || Owner::Naked, 1),
            want: Ok((0, 1, 0, 0)),
        },
        Case {
            name: "percentage minAvailable with an unsupported controller: error",
            min_available: pct("28%"),
            max_unavailable: None,
            empty_selector: false,
            fake: none.clone(),
            pods: pods(1, || Owner::Unsupported, 1),
            want: Err("found no controllers for pod \"pod-0\"".into()),
        },
        Case {
            name: "minAvailable 20% of a ReplicaSet of 10 without a Deployment",
            min_available: pct("20%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| f.replica_sets.push(rs(10))),
            pods: pods(1, || Owner::Rs, 1),
            want: Ok((0, 1, 2, 10)),
        },
        Case {
            name: "minAvailable 34% of a ReplicationController of 3, 2 ready",
            min_available: pct("34%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| f.replication_controllers.push(rc(3))),
            pods: pods(2, || Owner::Rc, 2),
            want: Ok((0, 2, 2, 3)),
        },
        Case {
            name: "minAvailable 34% of a ReplicationController of 3, 3 ready",
            min_available: pct("34%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| f.replication_controllers.push(rc(3))),
            pods: pods(3, || Owner::Rc, 3),
            want: Ok((1, 3, 2, 3)),
        },
        Case {
            name: "a rogue naked pod counts as healthy but adds nothing expected",
            min_available: pct("34%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| f.replication_controllers.push(rc(3))),
            pods: {
                let mut p = pods(3, || Owner::Rc, 3);
                p.push(pod("rogue", Owner::Naked, true));
                p
            },
            want: Ok((2, 4, 2, 3)),
        },
        Case {
            name: "minAvailable 34% of a StatefulSet of 3, 3 ready",
            min_available: pct("34%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| f.stateful_sets.push(ss(3))),
            pods: pods(3, || Owner::Ss, 3),
            want: Ok((1, 3, 2, 3)),
        },
        Case {
            name: "a Deployment's ReplicaSet counts the Deployment's replicas, once",
            min_available: pct("34%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| {
                f.deployments.push(deployment(3));
                f.replica_sets.push(deployment_rs(5));
            }),
            pods: pods(3, || Owner::DeploymentRs, 3),
            want: Ok((1, 3, 2, 3)),
        },
        Case {
            name: "two controllers of 11 each: 28% of 22 rounds up to 7",
            min_available: pct("28%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| {
                f.replication_controllers.push(rc(11));
                f.deployments.push(deployment(11));
                f.replica_sets.push(deployment_rs(11));
            }),
            pods: {
                let mut p: Vec<Pod> = (0..11)
                    .map(|i| pod(&format!("quux-{i}"), Owner::Rc, i >= 6))
                    .collect();
                p.extend((0..11).map(|i| pod(&format!("quuux-{i}"), Owner::DeploymentRs, i >= 7)));
                p
            },
            want: Ok((2, 9, 7, 22)),
        },
        Case {
            name: "one controller of 11: 28% rounds up to 4",
            min_available: pct("28%"),
            max_unavailable: None,
            empty_selector: false,
            fake: with(|f| f.replication_controllers.push(rc(11))),
            pods: (0..11)
                .map(|i| pod(&format!("quux-{i}"), Owner::Rc, i >= 6))
                .collect(),
            want: Ok((1, 5, 4, 11)),
        },
    ];
    for case in cases {
        let mut budget = pdb("pdb", LABELS, case.min_available, case.max_unavailable);
        if case.empty_selector {
            budget.spec.as_mut().unwrap().selector = Some(LabelSelector::default());
        }
        let got = sync(&budget, &case.pods, &case.fake, t(0));
        assert_eq!(got, case.want, "{}", case.name);
    }
}

/// `TestInvalidSelectors`: an invalid selector is a sync error, so the
/// controller's fail-safe leaves nothing allowed.
#[test]
fn invalid_selector_is_an_error_and_fails_safe() {
    struct Case {
        name: &'static str,
        selector: LabelSelector,
    }
    for case in [
        Case {
            name: "illegal value key",
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    "k8s.io/too/many/slashes".to_string(),
                    "value".to_string(),
                )])),
                match_expressions: None,
            },
        },
        Case {
            name: "illegal operator",
            selector: LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "foo".into(),
                    operator: "illegal".into(),
                    values: Some(vec!["bar".into()]),
                }]),
            },
        },
    ] {
        let mut budget = pdb("pdb", LABELS, int(3), None);
        budget.spec.as_mut().unwrap().selector = Some(case.selector);
        let err = compute(&budget, &[], &Fake::default(), t(0)).expect_err(case.name);
        let status = fail_safe_status(&budget, &err, t(0));
        assert_eq!(
            (
                status.disruptions_allowed,
                status.current_healthy,
                status.desired_healthy,
                status.expected_pods
            ),
            (Some(0), None, None, None),
            "{}",
            case.name
        );
        let cond = &status.conditions.unwrap()[0];
        assert_eq!(
            (cond.status.as_str(), cond.reason.as_str()),
            ("False", SYNC_FAILED_REASON),
            "{}",
            case.name
        );
    }
}

/// `TestUpdateDisruptedPods`: entries for pods being deleted, expired
/// (older than DeletionTimeout) or gone are dropped; the rest stay and are
/// not counted healthy; the recheck is when the earliest kept one expires.
#[test]
fn disrupted_pods_are_pruned_as_upstream() {
    let now = t(1_000);
    let mut budget = pdb("pdb", LABELS, int(1), None);
    budget.status = Some(PodDisruptionBudgetStatus {
        disrupted_pods: Some(BTreeMap::from([
            ("p1".to_string(), Time(now)),
            ("p2".to_string(), Time(now - SignedDuration::from_mins(3))),
            ("p3".to_string(), Time(now - SignedDuration::from_mins(1))),
            ("notthere".to_string(), Time(now)),
        ])),
        ..PodDisruptionBudgetStatus::default()
    });
    let mut p1 = pod("p1", Owner::Naked, true);
    p1.metadata.deletion_timestamp = Some(Time(now));
    let pods = [
        p1,
        pod("p2", Owner::Naked, true),
        pod("p3", Owner::Naked, true),
    ];
    let c = compute(&budget, &pods, &Fake::default(), now).unwrap();
    assert_eq!(
        c.disrupted,
        BTreeMap::from([("p3".to_string(), Time(now - SignedDuration::from_mins(1)))])
    );
    assert_eq!(c.recheck, Some(now + SignedDuration::from_mins(1)));
    assert_eq!(
        sync(&budget, &pods, &Fake::default(), now),
        Ok((0, 1, 1, 3))
    );
}

/// `TestBasicFinderFunctions` and `TestDeploymentFinderFunction`: a
/// controller reference is recognised only with its kind in its group and
/// the object's UID.
#[test]
fn finders_check_group_kind_and_uid() {
    struct Case {
        name: &'static str,
        reference: OwnerReference,
        rs_owner: Option<OwnerReference>,
        want: Option<(&'static str, i32)>,
    }
    let cases = [
        Case {
            name: "replicaset controller with apps group",
            reference: controller_ref("apps/v1", "ReplicaSet", "rs", "rs-uid"),
            rs_owner: None,
            want: Some(("rs-uid", 10)),
        },
        Case {
            name: "replicaset controller with invalid group",
            reference: controller_ref("invalid/v1", "ReplicaSet", "rs", "rs-uid"),
            rs_owner: None,
            want: None,
        },
        Case {
            name: "replicaset with another UID",
            reference: controller_ref("apps/v1", "ReplicaSet", "rs", "other"),
            rs_owner: None,
            want: None,
        },
        Case {
            name: "replicationcontroller with empty group",
            reference: controller_ref("/v1", "ReplicationController", "rc", "rc-uid"),
            rs_owner: None,
            want: Some(("rc-uid", 12)),
        },
        Case {
            name: "replicationcontroller with invalid group",
            reference: controller_ref("apps/v1", "ReplicationController", "rc", "rc-uid"),
            rs_owner: None,
            want: None,
        },
        Case {
            name: "statefulset controller with apps group",
            reference: controller_ref("apps/v1", "StatefulSet", "ss", "ss-uid"),
            rs_owner: None,
            want: Some(("ss-uid", 14)),
        },
        Case {
            name: "statefulset controller with invalid kind",
            reference: controller_ref("apps/v1", "ReplicaSet", "ss", "ss-uid"),
            rs_owner: None,
            want: None,
        },
        Case {
            name: "deployment: happy path (extensions group)",
            reference: controller_ref("apps/v1", "ReplicaSet", "rs", "rs-uid"),
            rs_owner: Some(controller_ref(
                "extensions/v1",
                "Deployment",
                "dep",
                "dep-uid",
            )),
            want: Some(("dep-uid", 10)),
        },
        Case {
            name: "deployment: invalid rs apiVersion",
            reference: controller_ref("invalid/v1", "ReplicaSet", "rs", "rs-uid"),
            rs_owner: Some(controller_ref("apps/v1", "Deployment", "dep", "dep-uid")),
            want: None,
        },
        Case {
            name: "deployment: invalid rs kind",
            reference: controller_ref("apps/v1", "InvalidKind", "rs", "rs-uid"),
            rs_owner: Some(controller_ref("apps/v1", "Deployment", "dep", "dep-uid")),
            want: None,
        },
        Case {
            name: "deployment: invalid deployment apiVersion",
            reference: controller_ref("extensions/v1", "ReplicaSet", "rs", "rs-uid"),
            rs_owner: Some(controller_ref(
                "deployment/v1",
                "Deployment",
                "dep",
                "dep-uid",
            )),
            want: None,
        },
        Case {
            // Upstream's Deployment finder alone finds nothing; the chain
            // then takes the ReplicaSet, whose controller is no Deployment.
            name: "deployment: invalid deployment kind falls back to the ReplicaSet",
            reference: controller_ref("apps/v1", "ReplicaSet", "rs", "rs-uid"),
            rs_owner: Some(controller_ref(
                "extensions/v1",
                "InvalidKind",
                "dep",
                "dep-uid",
            )),
            want: Some(("rs-uid", 10)),
        },
    ];
    for case in cases {
        let mut replica_set = rs(10);
        replica_set.metadata.owner_references = case.rs_owner.map(|o| vec![o]);
        let fake = Fake {
            replica_sets: vec![replica_set],
            deployments: vec![deployment(10)],
            stateful_sets: vec![ss(14)],
            replication_controllers: vec![rc(12)],
        };
        let got = find_controller_scale(&fake, &case.reference, "default");
        let want = case.want.map(|(uid, scale)| ControllerScale {
            uid: uid.into(),
            scale,
        });
        assert_eq!(got, want, "{}", case.name);
    }
}

/// `updatePdbStatus` writes only what changed, and the condition follows
/// `disruptionsAllowed` with upstream's reasons.
#[test]
fn status_is_written_only_when_it_changes() {
    let now = t(0);
    let budget = pdb("pdb", LABELS, int(1), None);
    let expected = Expected {
        expected_count: 3,
        desired_healthy: 1,
        unmanaged_pods: vec![],
    };
    let status = status_for(&budget, 3, &expected, BTreeMap::new(), now).unwrap();
    assert_eq!(status.disruptions_allowed, Some(2));
    assert_eq!(status.observed_generation, Some(1));
    let cond = &status.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (
            cond.type_.as_str(),
            cond.status.as_str(),
            cond.reason.as_str()
        ),
        (DISRUPTION_ALLOWED_CONDITION, "True", SUFFICIENT_PODS_REASON)
    );
    let written = PodDisruptionBudget {
        status: Some(status),
        ..budget.clone()
    };
    assert_eq!(
        status_for(&written, 3, &expected, BTreeMap::new(), now),
        None
    );
    let fewer = status_for(&written, 1, &expected, BTreeMap::new(), t(5)).unwrap();
    let cond = &fewer.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (
            cond.status.as_str(),
            cond.reason.as_str(),
            cond.last_transition_time.0
        ),
        ("False", INSUFFICIENT_PODS_REASON, t(5))
    );
}

fn with_status(
    mut budget: PodDisruptionBudget,
    allowed: i32,
    current: i32,
    desired: i32,
) -> PodDisruptionBudget {
    budget.status = Some(PodDisruptionBudgetStatus {
        disruptions_allowed: Some(allowed),
        current_healthy: Some(current),
        desired_healthy: Some(desired),
        expected_pods: Some(current),
        observed_generation: Some(1),
        ..PodDisruptionBudgetStatus::default()
    });
    budget
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Deleted without spending a disruption (and whether with the pod's
    /// resourceVersion as precondition).
    Delete(bool),
    /// A disruption spent: disruptionsAllowed left, pod recorded.
    Spend(i32, bool),
    Multiple,
    TooMany,
    Forbidden,
}

fn outcome(decision: EvictionDecision, pod_name: &str) -> Outcome {
    match decision {
        EvictionDecision::Delete {
            enforce_resource_version,
        } => Outcome::Delete(enforce_resource_version),
        EvictionDecision::Spend(b) => {
            let s = b.status.unwrap();
            let recorded = s.disrupted_pods.is_some_and(|d| d.contains_key(pod_name));
            Outcome::Spend(s.disruptions_allowed.unwrap_or(0), recorded)
        }
        EvictionDecision::MultipleBudgets => Outcome::Multiple,
        EvictionDecision::Refuse(EvictionRefusal::TooManyRequests { .. }) => Outcome::TooMany,
        EvictionDecision::Refuse(EvictionRefusal::Forbidden { .. }) => Outcome::Forbidden,
    }
}

/// `TestEviction`, `TestEvictionIgnorePDB`, `TestEvictionDryRun` and
/// `TestPDBUnhealthyPodEvictionPolicy`'s decisions.
#[test]
fn eviction_decisions_as_upstream() {
    struct Case {
        name: &'static str,
        pod: Pod,
        pdbs: Vec<PodDisruptionBudget>,
        dry_run: bool,
        want: Outcome,
    }
    let base = || pdb("pdb", LABELS, int(1), None);
    let ready = || pod("p", Owner::Naked, true);
    let unready = || pod("p", Owner::Naked, false);
    let phase = |p: &str| {
        let mut pod = ready();
        pod.status.as_mut().unwrap().phase = Some(p.into());
        pod
    };
    let policy = |b: PodDisruptionBudget, p: &str| {
        let mut b = b;
        b.spec.as_mut().unwrap().unhealthy_pod_eviction_policy = Some(p.into());
        b
    };
    let cases = [
        Case {
            name: "matching pdb with no disruptions allowed, pod running: 429",
            pod: ready(),
            pdbs: vec![with_status(base(), 0, 1, 1)],
            dry_run: false,
            want: Outcome::TooMany,
        },
        Case {
            name: "matching pdb with no disruptions allowed, pod pending: deleted",
            pod: phase("Pending"),
            pdbs: vec![with_status(base(), 0, 1, 1)],
            dry_run: false,
            want: Outcome::Delete(true),
        },
        Case {
            name: "matching pdb with no disruptions allowed, pod succeeded: deleted",
            pod: phase("Succeeded"),
            pdbs: vec![with_status(base(), 0, 1, 1)],
            dry_run: false,
            want: Outcome::Delete(false),
        },
        Case {
            name: "matching pdb with no disruptions allowed, pod failed: deleted",
            pod: phase("Failed"),
            pdbs: vec![with_status(base(), 0, 1, 1)],
            dry_run: false,
            want: Outcome::Delete(false),
        },
        Case {
            name: "matching pdb with no disruptions allowed, pod terminating: deleted",
            pod: {
                let mut p = ready();
                p.metadata.deletion_timestamp = Some(Time(t(0)));
                p
            },
            pdbs: vec![with_status(base(), 0, 1, 1)],
            dry_run: false,
            want: Outcome::Delete(false),
        },
        Case {
            name: "matching pdb with disruptions allowed: spent and recorded",
            pod: ready(),
            pdbs: vec![with_status(base(), 1, 2, 1)],
            dry_run: false,
            want: Outcome::Spend(0, true),
        },
        Case {
            name: "dry run spends nothing for real: not recorded",
            pod: ready(),
            pdbs: vec![with_status(base(), 1, 2, 1)],
            dry_run: true,
            want: Outcome::Spend(0, false),
        },
        Case {
            name: "non-matching pdb: deleted",
            pod: ready(),
            pdbs: vec![with_status(
                pdb("pdb", &[("x", "y")], int(1), None),
                0,
                1,
                1,
            )],
            dry_run: false,
            want: Outcome::Delete(false),
        },
        Case {
            name: "pdb in another namespace: deleted",
            pod: ready(),
            pdbs: vec![{
                let mut b = with_status(base(), 0, 1, 1);
                b.metadata.namespace = Some("other".into());
                b
            }],
            dry_run: false,
            want: Outcome::Delete(false),
        },
        Case {
            name: "two matching pdbs: 500",
            pod: ready(),
            pdbs: vec![with_status(base(), 1, 2, 1), {
                let mut b = with_status(base(), 1, 2, 1);
                b.metadata.name = Some("pdb2".into());
                b
            }],
            dry_run: false,
            want: Outcome::Multiple,
        },
        Case {
            name: "status behind the generation: 429 until the controller catches up",
            pod: ready(),
            pdbs: vec![{
                let mut b = with_status(base(), 1, 2, 1);
                b.metadata.generation = Some(2);
                b
            }],
            dry_run: false,
            want: Outcome::TooMany,
        },
        Case {
            name: "negative disruptionsAllowed: 403",
            pod: ready(),
            pdbs: vec![with_status(base(), -1, 2, 1)],
            dry_run: false,
            want: Outcome::Forbidden,
        },
        Case {
            name: "unready pod, IfHealthyBudget (unset), budget healthy: deleted unspent",
            pod: unready(),
            pdbs: vec![with_status(base(), 0, 1, 1)],
            dry_run: false,
            want: Outcome::Delete(true),
        },
        Case {
            name: "unready pod, IfHealthyBudget, budget unhealthy: 429",
            pod: unready(),
            pdbs: vec![policy(with_status(base(), 0, 0, 1), IF_HEALTHY_BUDGET)],
            dry_run: false,
            want: Outcome::TooMany,
        },
        Case {
            name: "unready pod, IfHealthyBudget, desiredHealthy 0: spends",
            pod: unready(),
            pdbs: vec![with_status(base(), 1, 1, 0)],
            dry_run: false,
            want: Outcome::Spend(0, true),
        },
        Case {
            name: "unready pod, AlwaysAllow, budget unhealthy: deleted unspent",
            pod: unready(),
            pdbs: vec![policy(with_status(base(), 0, 0, 1), ALWAYS_ALLOW)],
            dry_run: false,
            want: Outcome::Delete(true),
        },
        Case {
            name: "ready pod, AlwaysAllow, none allowed: 429",
            pod: ready(),
            pdbs: vec![policy(with_status(base(), 0, 1, 1), ALWAYS_ALLOW)],
            dry_run: false,
            want: Outcome::TooMany,
        },
    ];
    for case in cases {
        let got = outcome(decide(&case.pod, &case.pdbs, case.dry_run, t(0)), "p");
        assert_eq!(got, case.want, "{}", case.name);
    }
}

/// The 429's cause says what the budget needs (upstream's text), and the
/// last disruption spent turns the condition to InsufficientPods.
#[test]
fn refusal_and_last_disruption_as_upstream() {
    let budget = with_status(pdb("pdb", LABELS, int(2), None), 0, 2, 2);
    assert_eq!(
        check_and_decrement(&budget, "p", false, t(0)),
        Err(EvictionRefusal::TooManyRequests {
            cause_message: "The disruption budget pdb needs 2 healthy pods and has 2 currently"
                .into(),
            retry_after_seconds: 0,
        })
    );
    let budget = with_status(pdb("pdb", LABELS, int(2), None), 1, 3, 2);
    let spent = check_and_decrement(&budget, "p", false, t(7)).unwrap();
    let status = spent.status.unwrap();
    assert_eq!(status.disrupted_pods.unwrap()["p"], Time(t(7)));
    let cond = &status.conditions.unwrap()[0];
    assert_eq!(
        (cond.status.as_str(), cond.reason.as_str()),
        ("False", INSUFFICIENT_PODS_REASON)
    );
}

/// Preemption's `filterPodsWithPDBViolation`: victims are counted in
/// order against each budget; pods already in `disruptedPods`, pods with
/// no labels and budgets with an empty selector cost nothing.
#[test]
fn preemption_counts_budget_violations_in_order() {
    let budget = with_status(pdb("pdb", LABELS, int(1), None), 1, 2, 1);
    let mut disrupted = with_status(pdb("pdb", LABELS, int(1), None), 0, 2, 1);
    disrupted.status.as_mut().unwrap().disrupted_pods =
        Some(BTreeMap::from([("a".to_string(), Time(t(0)))]));
    let mut empty = with_status(pdb("empty", &[], int(1), None), 0, 0, 1);
    empty.spec.as_mut().unwrap().selector = Some(LabelSelector::default());
    let a = pod("a", Owner::Naked, true);
    let b = pod("b", Owner::Naked, true);
    let mut bare = pod("bare", Owner::Naked, true);
    bare.metadata.labels = None;
    assert_eq!(pdb_violations(&[&a, &b], &[&budget]), [false, true]);
    assert_eq!(pdb_violations(&[&a, &b], &[&disrupted]), [false, true]);
    assert_eq!(pdb_violations(&[&bare], &[&budget]), [false]);
    assert_eq!(pdb_violations(&[&a], &[&empty]), [false]);
}
