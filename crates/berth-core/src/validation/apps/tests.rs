//! Upstream's `pkg/apis/apps/validation/validation_test.go` tables, as
//! their error types and field paths (upstream compares errors ignoring
//! the bad value and the detail); the objects are built from JSON, each
//! case changing a valid one. Cases about metadata (names, namespaces,
//! labels) are the API server's (`strategy/tests.rs`); selector changes
//! are refused here too, where upstream's strategies refuse them.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::*;
use crate::validation::ErrorType::{self, Forbidden, Invalid, NotSupported, Required};

/// A test case: `change` turns the valid object into this case's, `want`
/// is every error as (type, field).
struct Case {
    name: &'static str,
    change: fn(&mut Value),
    want: &'static [(ErrorType, &'static str)],
}

fn template() -> Value {
    json!({"metadata": {"labels": {"a": "b"}},
           "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                    "containers": [{"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent"}]}})
}

fn valid_deployment() -> Value {
    json!({"metadata": {"name": "abc", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": template(),
                    "strategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                    "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}})
}

fn valid_replica_set() -> Value {
    json!({"metadata": {"name": "abc", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": template()}})
}

fn valid_daemon_set() -> Value {
    json!({"metadata": {"name": "abc", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template(),
                    "updateStrategy": {"type": "RollingUpdate",
                                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}})
}

fn valid_stateful_set() -> Value {
    json!({"metadata": {"name": "abc", "namespace": "default"},
           "spec": {"podManagementPolicy": "OrderedReady", "selector": {"matchLabels": {"a": "b"}},
                    "template": template(), "updateStrategy": {"type": "RollingUpdate"}}})
}

fn object<T: DeserializeOwned>(value: Value, case: &str) -> T {
    match serde_json::from_value(value) {
        Ok(object) => object,
        Err(e) => panic!("{case}: the test object does not decode: {e}"),
    }
}

/// Runs `cases` against `validate`, each on `valid` changed by the case.
fn run<T: DeserializeOwned>(
    valid: fn() -> Value,
    cases: &[Case],
    validate: impl Fn(&T) -> ErrorList,
) {
    for case in cases {
        let mut value = valid();
        (case.change)(&mut value);
        let errors = validate(&object(value, case.name));
        let mut got: Vec<(ErrorType, String)> = errors
            .iter()
            .map(|e| (e.error_type, e.field.clone()))
            .collect();
        let mut want: Vec<(ErrorType, String)> =
            case.want.iter().map(|(t, f)| (*t, f.to_string())).collect();
        got.sort_by(|a, b| a.1.cmp(&b.1));
        want.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(got, want, "{}: {errors:?}", case.name);
    }
}

/// An update case: `change` makes the new object from the valid stored
/// one.
fn run_update<T: DeserializeOwned>(
    valid: fn() -> Value,
    cases: &[Case],
    validate: impl Fn(&T, &T) -> ErrorList,
) {
    let old: T = object(valid(), "the stored object");
    run(valid, cases, |new: &T| validate(new, &old));
}

const GATES: FeatureGates = FeatureGates {
    taint_toleration_comparison_operators: true,
    max_unavailable_stateful_set: true,
};

/// What every workload is held to: its selector not empty, its
/// minReadySeconds not negative, its template at `spec.template`.
const TEMPLATE_CASES: &[Case] = &[
    Case {
        name: "valid",
        change: |_| {},
        want: &[],
    },
    Case {
        name: "empty selector",
        change: |o| o["spec"]["selector"] = json!({}),
        want: &[(Invalid, "spec.selector")],
    },
    Case {
        name: "negative minReadySeconds",
        change: |o| o["spec"]["minReadySeconds"] = json!(-1),
        want: &[(Invalid, "spec.minReadySeconds")],
    },
    Case {
        name: "selector_doesnt_match",
        change: |o| o["spec"]["selector"] = json!({"matchLabels": {"foo": "bar"}}),
        want: &[(Invalid, "spec.template.metadata.labels")],
    },
    Case {
        name: "invalid restart policy OnFailure",
        change: |o| o["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure"),
        want: &[(NotSupported, "spec.template.spec.restartPolicy")],
    },
    Case {
        name: "invalid restart policy Never",
        change: |o| o["spec"]["template"]["spec"]["restartPolicy"] = json!("Never"),
        want: &[(NotSupported, "spec.template.spec.restartPolicy")],
    },
    Case {
        name: "set active deadline seconds",
        change: |o| o["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(60),
        want: &[(Forbidden, "spec.template.spec.activeDeadlineSeconds")],
    },
    Case {
        name: "invalid template labels",
        change: |o| {
            o["spec"]["template"]["metadata"]["labels"]["NoUppercaseOrSpecialCharsLike=Equals"] =
                json!("b")
        },
        want: &[(Invalid, "spec.template.labels")],
    },
    Case {
        name: "invalid template annotations",
        change: |o| {
            o["spec"]["template"]["metadata"]["annotations"] =
                json!({"NoSpecialCharsLike=Equals": "b"})
        },
        want: &[(Invalid, "spec.template.annotations")],
    },
];

/// What Deployments, ReplicaSets and StatefulSets share: replicas not
/// negative, and a selector that does not parse said so at
/// `spec.selector` too (DaemonSets do not say it).
const SELECTOR_CASES: &[Case] = &[
    Case {
        name: "negative replicas",
        change: |o| o["spec"]["replicas"] = json!(-1),
        want: &[(Invalid, "spec.replicas")],
    },
    Case {
        name: "invalid selector label",
        change: |o| {
            o["spec"]["selector"]["matchLabels"]["NoUppercaseOrSpecialCharsLike=Equals"] =
                json!("b")
        },
        want: &[
            (Invalid, "spec.selector"),
            (Invalid, "spec.selector.matchLabels"),
        ],
    },
    Case {
        name: "selector operator In without values",
        change: |o| {
            o["spec"]["selector"]["matchExpressions"] =
                json!([{"key": "a", "operator": "In", "values": []}])
        },
        want: &[
            (Required, "spec.selector.matchExpressions[0].values"),
            (Invalid, "spec.selector"),
        ],
    },
];

/// What the templates of Deployments, ReplicaSets and DaemonSets are held
/// to beyond that: the pod rules (StatefulSets' pod specs are not checked
/// upstream).
const POD_TEMPLATE_CASES: &[Case] = &[
    Case {
        name: "template may not contain ephemeral containers",
        change: |o| {
            o["spec"]["template"]["spec"]["ephemeralContainers"] =
                json!([{"name": "debug", "image": "image"}])
        },
        want: &[(Forbidden, "spec.template.spec.ephemeralContainers")],
    },
    Case {
        name: "a template's invalid toleration",
        change: |o| {
            o["spec"]["template"]["spec"]["tolerations"] =
                json!([{"key": "k", "operator": "Exists", "value": "v"}])
        },
        want: &[(Invalid, "spec.template.spec.tolerations[0].operator")],
    },
    Case {
        name: "a template's invalid quantity",
        change: |o| {
            o["spec"]["template"]["spec"]["containers"][0]["resources"] =
                json!({"limits": {"cpu": "one"}})
        },
        want: &[(
            Invalid,
            "spec.template.spec.containers[0].resources.limits[cpu]",
        )],
    },
];

/// The template and selector cases, the pod rules, and `extra`.
fn with_pod_rules(extra: &[Case]) -> Vec<&Case> {
    TEMPLATE_CASES
        .iter()
        .chain(SELECTOR_CASES)
        .chain(POD_TEMPLATE_CASES)
        .chain(extra)
        .collect()
}

fn run_all<T: DeserializeOwned>(
    valid: fn() -> Value,
    cases: &[&Case],
    validate: impl Fn(&T) -> ErrorList,
) {
    for case in cases {
        run(valid, std::slice::from_ref(*case), &validate);
    }
}

/// Upstream `TestValidateDeployment`, `TestValidateDeploymentStrategy`,
/// `TestValidateRollingUpdateDeployment`.
#[test]
fn deployments_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "invalid strategy type",
            change: |d| d["spec"]["strategy"]["type"] = json!("randomType"),
            want: &[(NotSupported, "spec.strategy")],
        },
        Case {
            name: "rollingUpdate with Recreate",
            change: |d| d["spec"]["strategy"]["type"] = json!("Recreate"),
            want: &[(Forbidden, "spec.strategy.rollingUpdate")],
        },
        Case {
            name: "Recreate alone",
            change: |d| d["spec"]["strategy"] = json!({"type": "Recreate"}),
            want: &[],
        },
        Case {
            name: "RollingUpdate without rollingUpdate",
            change: |d| d["spec"]["strategy"] = json!({"type": "RollingUpdate"}),
            want: &[(Required, "spec.strategy.rollingUpdate")],
        },
        Case {
            name: "invalid maxSurge percentage",
            change: |d| d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!("20Percent"),
            want: &[(Invalid, "spec.strategy.rollingUpdate.maxSurge")],
        },
        Case {
            name: "negative maxUnavailable",
            change: |d| d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = json!(-1),
            want: &[(Invalid, "spec.strategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "maxUnavailable more than 100%",
            change: |d| d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = json!("110%"),
            want: &[(Invalid, "spec.strategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "maxSurge may exceed 100%",
            change: |d| d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!("200%"),
            want: &[],
        },
        Case {
            name: "maxUnavailable and maxSurge both zero",
            change: |d| {
                d["spec"]["strategy"]["rollingUpdate"] =
                    json!({"maxSurge": "0%", "maxUnavailable": 0})
            },
            want: &[(Invalid, "spec.strategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "negative revisionHistoryLimit",
            change: |d| d["spec"]["revisionHistoryLimit"] = json!(-2),
            want: &[(Invalid, "spec.revisionHistoryLimit")],
        },
        Case {
            name: "progressDeadlineSeconds not above minReadySeconds",
            change: |d| {
                d["spec"]["progressDeadlineSeconds"] = json!(10);
                d["spec"]["minReadySeconds"] = json!(10);
            },
            want: &[(Invalid, "spec.progressDeadlineSeconds")],
        },
        Case {
            name: "negative progressDeadlineSeconds",
            change: |d| d["spec"]["progressDeadlineSeconds"] = json!(-1),
            want: &[
                (Invalid, "spec.progressDeadlineSeconds"),
                (Invalid, "spec.progressDeadlineSeconds"),
            ],
        },
    ];
    run_all(
        valid_deployment,
        &with_pod_rules(&cases),
        |d: &Deployment| validate_deployment(d, GATES),
    );
}

/// `TestValidateDeploymentUpdate`, with the strategy's selector rule.
#[test]
fn a_deployment_update_keeps_its_selector() {
    let cases = [
        Case {
            name: "scale and change the image",
            change: |d| {
                d["spec"]["replicas"] = json!(5);
                d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("image:2");
            },
            want: &[],
        },
        Case {
            name: "change the selector and the labels with it",
            change: |d| {
                d["spec"]["selector"]["matchLabels"] = json!({"a": "c"});
                d["spec"]["template"]["metadata"]["labels"] = json!({"a": "c"});
            },
            want: &[(Invalid, "spec.selector")],
        },
        Case {
            name: "an invalid update is still invalid",
            change: |d| d["spec"]["replicas"] = json!(-1),
            want: &[(Invalid, "spec.replicas")],
        },
    ];
    run_update(valid_deployment, &cases, |d: &Deployment, old| {
        validate_deployment_update(d, old, GATES)
    });
    let message = validate_deployment_update(
        &object::<Deployment>(
            {
                let mut d = valid_deployment();
                d["spec"]["selector"]["matchLabels"] = json!({"a": "c"});
                d["spec"]["template"]["metadata"]["labels"] = json!({"a": "c"});
                d
            },
            "changed selector",
        ),
        &object(valid_deployment(), "stored"),
        GATES,
    )[0]
    .to_string();
    assert_eq!(
        message,
        "spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"c\"}}: field is immutable"
    );
}

/// `TestValidateDeploymentStatus` and the collision count rule.
#[test]
fn deployment_status_writes_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "valid status",
            change: |d| {
                d["status"] = json!({"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2,
                                     "availableReplicas": 1, "observedGeneration": 2})
            },
            want: &[],
        },
        Case {
            name: "negative counts",
            change: |d| {
                d["status"] = json!({"replicas": -1, "updatedReplicas": -1, "readyReplicas": -1,
                                     "availableReplicas": -1, "unavailableReplicas": -1,
                                     "observedGeneration": -1, "collisionCount": -1})
            },
            want: &[
                (Invalid, "status.replicas"),
                (Invalid, "status.updatedReplicas"),
                (Invalid, "status.readyReplicas"),
                (Invalid, "status.availableReplicas"),
                (Invalid, "status.unavailableReplicas"),
                (Invalid, "status.observedGeneration"),
                (Invalid, "status.collisionCount"),
            ],
        },
        Case {
            name: "more updated, ready and available than replicas",
            change: |d| {
                d["status"] = json!({"replicas": 1, "updatedReplicas": 2, "readyReplicas": 3,
                                     "availableReplicas": 3})
            },
            want: &[
                (Invalid, "status.updatedReplicas"),
                (Invalid, "status.readyReplicas"),
                (Invalid, "status.availableReplicas"),
            ],
        },
        Case {
            name: "more available than ready",
            change: |d| {
                d["status"] = json!({"replicas": 3, "readyReplicas": 1, "availableReplicas": 2})
            },
            want: &[(Invalid, "status.availableReplicas")],
        },
    ];
    run_update(valid_deployment, &cases, validate_deployment_status_update);
    let counted = |count: Option<i32>| -> Deployment {
        object(
            json!({"metadata": {"name": "abc"}, "status": {"collisionCount": count}}),
            "collision count",
        )
    };
    struct Collision {
        old: Option<i32>,
        new: Option<i32>,
        decremented: bool,
    }
    for case in [
        Collision {
            old: None,
            new: Some(1),
            decremented: false,
        },
        Collision {
            old: Some(1),
            new: Some(2),
            decremented: false,
        },
        Collision {
            old: Some(2),
            new: Some(1),
            decremented: true,
        },
        Collision {
            old: Some(1),
            new: None,
            decremented: true,
        },
    ] {
        let errors = validate_deployment_status_update(&counted(case.new), &counted(case.old));
        assert_eq!(
            errors.iter().any(|e| e.detail == "cannot be decremented"),
            case.decremented,
            "{:?} -> {:?}",
            case.old,
            case.new
        );
    }
}

/// `TestValidateReplicaSet`, `TestValidateReplicaSetUpdate`.
#[test]
fn replica_sets_are_validated_as_upstream() {
    let cases = [Case {
        name: "no template: its labels do not match",
        change: |rs| {
            if let Some(spec) = rs["spec"].as_object_mut() {
                spec.remove("template");
            }
        },
        want: &[
            (Invalid, "spec.template.metadata.labels"),
            (NotSupported, "spec.template.spec.restartPolicy"),
        ],
    }];
    run_all(
        valid_replica_set,
        &with_pod_rules(&cases),
        |rs: &ReplicaSet| validate_replica_set(rs, GATES),
    );
    let updates = [
        Case {
            name: "scale",
            change: |rs| rs["spec"]["replicas"] = json!(3),
            want: &[],
        },
        Case {
            name: "change the selector",
            change: |rs| {
                rs["spec"]["selector"]["matchExpressions"] =
                    json!([{"key": "a", "operator": "Exists"}])
            },
            want: &[(Invalid, "spec.selector")],
        },
    ];
    run_update(valid_replica_set, &updates, |rs: &ReplicaSet, old| {
        validate_replica_set_update(rs, old, GATES)
    });
}

/// `TestValidateReplicaSetStatus`.
#[test]
fn replica_set_status_writes_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "valid status",
            change: |rs| {
                rs["status"] = json!({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 2,
                                      "availableReplicas": 1, "observedGeneration": 2})
            },
            want: &[],
        },
        Case {
            name: "negative counts",
            change: |rs| {
                rs["status"] = json!({"replicas": -1, "fullyLabeledReplicas": -1, "readyReplicas": -1,
                                      "availableReplicas": -1, "observedGeneration": -1})
            },
            want: &[
                (Invalid, "status.replicas"),
                (Invalid, "status.fullyLabeledReplicas"),
                (Invalid, "status.readyReplicas"),
                (Invalid, "status.availableReplicas"),
                (Invalid, "status.observedGeneration"),
            ],
        },
        Case {
            name: "fullyLabeledReplicas, ready and available above replicas",
            change: |rs| {
                rs["status"] = json!({"replicas": 3, "fullyLabeledReplicas": 4, "readyReplicas": 4,
                                      "availableReplicas": 4})
            },
            want: &[
                (Invalid, "status.fullyLabeledReplicas"),
                (Invalid, "status.readyReplicas"),
                (Invalid, "status.availableReplicas"),
            ],
        },
        Case {
            name: "available above ready",
            change: |rs| {
                rs["status"] = json!({"replicas": 3, "readyReplicas": 2, "availableReplicas": 3})
            },
            want: &[(Invalid, "status.availableReplicas")],
        },
    ];
    run_update(
        valid_replica_set,
        &cases,
        validate_replica_set_status_update,
    );
}

/// `TestValidateDaemonSet`, `TestValidateRollingUpdateDaemonSet`,
/// `TestValidateDaemonSetUpdate`.
#[test]
fn daemon_sets_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "negative revisionHistoryLimit",
            change: |ds| ds["spec"]["revisionHistoryLimit"] = json!(-1),
            want: &[(Invalid, "spec.revisionHistoryLimit")],
        },
        Case {
            name: "invalid update strategy",
            change: |ds| ds["spec"]["updateStrategy"] = json!({"type": "Random"}),
            want: &[(NotSupported, "spec.updateStrategy")],
        },
        Case {
            name: "OnDelete",
            change: |ds| ds["spec"]["updateStrategy"] = json!({"type": "OnDelete"}),
            want: &[],
        },
        Case {
            name: "RollingUpdate without rollingUpdate",
            change: |ds| ds["spec"]["updateStrategy"] = json!({"type": "RollingUpdate"}),
            want: &[(Required, "spec.updateStrategy.rollingUpdate")],
        },
        Case {
            name: "maxUnavailable and maxSurge both zero",
            change: |ds| {
                ds["spec"]["updateStrategy"]["rollingUpdate"] =
                    json!({"maxUnavailable": 0, "maxSurge": "0%"})
            },
            want: &[(Required, "spec.updateStrategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "maxUnavailable and maxSurge both set",
            change: |ds| {
                ds["spec"]["updateStrategy"]["rollingUpdate"] =
                    json!({"maxUnavailable": 1, "maxSurge": "10%"})
            },
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.maxSurge")],
        },
        Case {
            name: "surge alone",
            change: |ds| {
                ds["spec"]["updateStrategy"]["rollingUpdate"] =
                    json!({"maxUnavailable": 0, "maxSurge": "100%"})
            },
            want: &[],
        },
        Case {
            name: "maxSurge above 100%",
            change: |ds| {
                ds["spec"]["updateStrategy"]["rollingUpdate"] =
                    json!({"maxUnavailable": 0, "maxSurge": "101%"})
            },
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.maxSurge")],
        },
        Case {
            name: "negative maxUnavailable",
            change: |ds| {
                ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(-1)
            },
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.maxUnavailable")],
        },
    ];
    let selectors = [
        Case {
            name: "invalid selector label: no error at spec.selector itself",
            change: |ds| {
                ds["spec"]["selector"]["matchLabels"]["NoUppercaseOrSpecialCharsLike=Equals"] =
                    json!("b")
            },
            want: &[(Invalid, "spec.selector.matchLabels")],
        },
        Case {
            name: "selector operator In without values",
            change: |ds| {
                ds["spec"]["selector"]["matchExpressions"] =
                    json!([{"key": "a", "operator": "In", "values": []}])
            },
            want: &[(Required, "spec.selector.matchExpressions[0].values")],
        },
    ];
    let all: Vec<&Case> = TEMPLATE_CASES
        .iter()
        .chain(POD_TEMPLATE_CASES)
        .chain(&selectors)
        .chain(&cases)
        .collect();
    run_all(valid_daemon_set, &all, |ds: &DaemonSet| {
        validate_daemon_set(ds, GATES)
    });
    let updates = [
        Case {
            name: "change the update strategy and the template",
            change: |ds| {
                ds["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
                ds["spec"]["template"]["spec"]["nodeSelector"] = json!({"a": "b"});
            },
            want: &[],
        },
        Case {
            name: "change template and selector (allowed by the validation, not by the strategy)",
            change: |ds| {
                ds["spec"]["selector"]["matchLabels"] = json!({"c": "d"});
                ds["spec"]["template"]["metadata"]["labels"] = json!({"c": "d"});
            },
            want: &[(Invalid, "spec.selector")],
        },
        Case {
            name: "invalid update strategy",
            change: |ds| ds["spec"]["updateStrategy"] = json!({"type": "Random"}),
            want: &[(NotSupported, "spec.updateStrategy")],
        },
    ];
    run_update(valid_daemon_set, &updates, |ds: &DaemonSet, old| {
        validate_daemon_set_update(ds, old, GATES)
    });
}

/// `TestValidateDaemonSetStatusUpdate`.
#[test]
fn daemon_set_status_writes_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "valid status",
            change: |ds| {
                ds["status"] = json!({"currentNumberScheduled": 1, "numberMisscheduled": 1,
                    "desiredNumberScheduled": 3, "numberReady": 1, "updatedNumberScheduled": 1,
                    "numberAvailable": 1, "numberUnavailable": 2})
            },
            want: &[],
        },
        Case {
            name: "negative values",
            change: |ds| {
                ds["status"] = json!({"currentNumberScheduled": -1, "numberMisscheduled": -1,
                    "desiredNumberScheduled": -3, "numberReady": -1, "observedGeneration": -3,
                    "updatedNumberScheduled": -1, "numberAvailable": -1, "numberUnavailable": -2})
            },
            want: &[
                (Invalid, "status.currentNumberScheduled"),
                (Invalid, "status.numberMisscheduled"),
                (Invalid, "status.desiredNumberScheduled"),
                (Invalid, "status.numberReady"),
                (Invalid, "status.observedGeneration"),
                (Invalid, "status.updatedNumberScheduled"),
                (Invalid, "status.numberAvailable"),
                (Invalid, "status.numberUnavailable"),
            ],
        },
    ];
    run_update(valid_daemon_set, &cases, validate_daemon_set_status_update);
}

/// `TestValidateStatefulSet`.
#[test]
fn stateful_sets_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "parallel pod management",
            change: |s| s["spec"]["podManagementPolicy"] = json!("Parallel"),
            want: &[],
        },
        Case {
            name: "update strategy with a partition",
            change: |s| {
                s["spec"]["replicas"] = json!(3);
                s["spec"]["updateStrategy"]["rollingUpdate"] = json!({"partition": 2});
            },
            want: &[],
        },
        Case {
            name: "maxUnavailable with parallel pod management",
            change: |s| {
                s["spec"]["podManagementPolicy"] = json!("Parallel");
                s["spec"]["updateStrategy"]["rollingUpdate"] =
                    json!({"partition": 2, "maxUnavailable": 2});
            },
            want: &[],
        },
        Case {
            name: "ordinals.start positive value",
            change: |s| s["spec"]["ordinals"] = json!({"start": 2}),
            want: &[],
        },
        Case {
            name: "a template's pod spec is not checked",
            change: |s| {
                s["spec"]["template"]["spec"]["tolerations"] =
                    json!([{"key": "k", "operator": "Exists", "value": "v"}])
            },
            want: &[],
        },
        Case {
            name: "empty restart policy",
            change: |s| s["spec"]["template"]["spec"]["restartPolicy"] = json!(""),
            want: &[(NotSupported, "spec.template.spec.restartPolicy")],
        },
        Case {
            name: "invalid update strategy",
            change: |s| s["spec"]["updateStrategy"]["type"] = json!("foo"),
            want: &[(Invalid, "spec.updateStrategy")],
        },
        Case {
            name: "empty update strategy",
            change: |s| s["spec"]["updateStrategy"]["type"] = json!(""),
            want: &[(Required, "spec.updateStrategy")],
        },
        Case {
            name: "invalid rolling update",
            change: |s| {
                s["spec"]["updateStrategy"] =
                    json!({"type": "OnDelete", "rollingUpdate": {"partition": 1}})
            },
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate")],
        },
        Case {
            name: "negative partition",
            change: |s| s["spec"]["updateStrategy"]["rollingUpdate"] = json!({"partition": -1}),
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.partition")],
        },
        Case {
            name: "empty pod management policy",
            change: |s| s["spec"]["podManagementPolicy"] = json!(""),
            want: &[(Required, "spec.podManagementPolicy")],
        },
        Case {
            name: "invalid pod management policy",
            change: |s| s["spec"]["podManagementPolicy"] = json!("foo"),
            want: &[(Invalid, "spec.podManagementPolicy")],
        },
        Case {
            name: "empty PersistentVolumeClaimRetentionPolicy",
            change: |s| s["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({}),
            want: &[
                (
                    NotSupported,
                    "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
                ),
                (
                    NotSupported,
                    "spec.persistentVolumeClaimRetentionPolicy.whenScaled",
                ),
            ],
        },
        Case {
            name: "invalid PersistentVolumeClaimRetentionPolicy",
            change: |s| {
                s["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({
                    "whenDeleted": "invalid-retention-policy", "whenScaled": "invalid-retention-policy"})
            },
            want: &[
                (
                    NotSupported,
                    "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
                ),
                (
                    NotSupported,
                    "spec.persistentVolumeClaimRetentionPolicy.whenScaled",
                ),
            ],
        },
        Case {
            name: "zero maxUnavailable",
            change: |s| s["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": 0}),
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "zero percent maxUnavailable",
            change: |s| {
                s["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": "0%"})
            },
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "greater than 100 percent maxUnavailable",
            change: |s| {
                s["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": "101%"})
            },
            want: &[(Invalid, "spec.updateStrategy.rollingUpdate.maxUnavailable")],
        },
        Case {
            name: "invalid ordinals.start",
            change: |s| s["spec"]["ordinals"] = json!({"start": -2}),
            want: &[(Invalid, "spec.ordinals.start")],
        },
    ];
    let all: Vec<&Case> = TEMPLATE_CASES
        .iter()
        .chain(SELECTOR_CASES)
        .chain(&cases)
        .collect();
    run_all(valid_stateful_set, &all, validate_stateful_set);
}

/// `TestValidateStatefulSetUpdate`.
#[test]
fn a_stateful_set_update_changes_only_what_upstream_allows() {
    let cases = [
        Case {
            name: "update replica count",
            change: |s| s["spec"]["replicas"] = json!(3),
            want: &[],
        },
        Case {
            name: "update containers",
            change: |s| {
                if let Some(containers) = s["spec"]["template"]["spec"]["containers"].as_array_mut()
                {
                    containers.push(json!({"name": "def", "image": "image2"}));
                }
            },
            want: &[],
        },
        Case {
            name: "update update strategy, min ready seconds, ordinals, pvc retention policy",
            change: |s| {
                s["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
                s["spec"]["minReadySeconds"] = json!(10);
                s["spec"]["ordinals"] = json!({"start": 3});
                s["spec"]["persistentVolumeClaimRetentionPolicy"] =
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"});
            },
            want: &[],
        },
        Case {
            name: "update selector",
            change: |s| {
                s["spec"]["selector"]["matchLabels"] = json!({"c": "d"});
                s["spec"]["template"]["metadata"]["labels"] = json!({"c": "d"});
            },
            want: &[(Forbidden, "spec")],
        },
        Case {
            name: "update pod management policy",
            change: |s| s["spec"]["podManagementPolicy"] = json!("Parallel"),
            want: &[(Forbidden, "spec")],
        },
        Case {
            name: "update to negative replicas",
            change: |s| s["spec"]["replicas"] = json!(-1),
            want: &[(Invalid, "spec.replicas")],
        },
        Case {
            name: "add new pvc template",
            change: |s| {
                s["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "pvc-abc"},
                    "spec": {"resources": {"requests": {"storage": "1Gi"}}}}])
            },
            want: &[(Forbidden, "spec")],
        },
    ];
    run_update(valid_stateful_set, &cases, validate_stateful_set_update);
}

/// `TestValidateStatefulSetStatus`.
#[test]
fn stateful_set_status_writes_are_validated_as_upstream() {
    let cases = [
        Case {
            name: "valid status",
            change: |s| {
                s["status"] = json!({"replicas": 3, "readyReplicas": 3, "currentReplicas": 2,
                                     "updatedReplicas": 1})
            },
            want: &[],
        },
        Case {
            name: "negative counts",
            change: |s| {
                s["status"] = json!({"replicas": -1, "readyReplicas": -1, "currentReplicas": -1,
                    "updatedReplicas": -1, "availableReplicas": -1, "observedGeneration": -1,
                    "collisionCount": -1})
            },
            want: &[
                (Invalid, "status.replicas"),
                (Invalid, "status.readyReplicas"),
                (Invalid, "status.currentReplicas"),
                (Invalid, "status.updatedReplicas"),
                (Invalid, "status.availableReplicas"),
                (Invalid, "status.observedGeneration"),
                (Invalid, "status.collisionCount"),
            ],
        },
        Case {
            name: "ready, current, updated and available greater than replicas",
            change: |s| {
                s["status"] = json!({"replicas": 3, "readyReplicas": 4, "currentReplicas": 4,
                    "updatedReplicas": 4, "availableReplicas": 4})
            },
            want: &[
                (Invalid, "status.readyReplicas"),
                (Invalid, "status.currentReplicas"),
                (Invalid, "status.updatedReplicas"),
                (Invalid, "status.availableReplicas"),
            ],
        },
        Case {
            name: "available replicas greater than ready replicas",
            change: |s| {
                s["status"] = json!({"replicas": 3, "readyReplicas": 2, "currentReplicas": 2,
                    "availableReplicas": 3})
            },
            want: &[(Invalid, "status.availableReplicas")],
        },
    ];
    run_update(
        valid_stateful_set,
        &cases,
        validate_stateful_set_status_update,
    );
}

fn revision(data: Value, number: i64) -> Value {
    json!({"metadata": {"name": "validname", "namespace": "validns"}, "data": data, "revision": number})
}

/// `TestValidateControllerRevision`, `TestValidateControllerRevisionUpdate`.
#[test]
fn controller_revisions_keep_their_data() {
    struct Check {
        name: &'static str,
        revision: Value,
        valid: bool,
    }
    let data = json!({"spec": {"template": template()}});
    for check in [
        Check {
            name: "valid",
            revision: revision(data.clone(), 0),
            valid: true,
        },
        Check {
            name: "negative revision",
            revision: revision(data.clone(), -1),
            valid: false,
        },
        Check {
            name: "json null",
            revision: revision(Value::Null, 0),
            valid: false,
        },
        Check {
            name: "json bool",
            revision: revision(json!(true), 0),
            valid: false,
        },
        Check {
            name: "json int",
            revision: revision(json!(0), 0),
            valid: false,
        },
        Check {
            name: "json array",
            revision: revision(json!([]), 0),
            valid: false,
        },
        Check {
            name: "json string",
            revision: revision(json!("test"), 0),
            valid: false,
        },
        Check {
            name: "json object",
            revision: revision(json!({}), 0),
            valid: true,
        },
    ] {
        let errors = validate_controller_revision(&object(check.revision, check.name));
        assert_eq!(errors.is_empty(), check.valid, "{}: {errors:?}", check.name);
    }
    let stored: ControllerRevision = object(revision(data.clone(), 1), "stored");
    for check in [
        Check {
            name: "unchanged",
            revision: revision(data.clone(), 1),
            valid: true,
        },
        Check {
            name: "changed revision",
            revision: revision(data.clone(), 2),
            valid: true,
        },
        Check {
            name: "changed data",
            revision: revision(json!({"spec": {}}), 1),
            valid: false,
        },
    ] {
        let errors =
            validate_controller_revision_update(&object(check.revision, check.name), &stored);
        assert_eq!(errors.is_empty(), check.valid, "{}: {errors:?}", check.name);
    }
}

/// `TestValidateScale` (autoscaling): replicas may be zero, not negative.
#[test]
fn scales_do_not_go_below_zero() {
    for (replicas, valid) in [
        (Some(0), true),
        (Some(5), true),
        (None, true),
        (Some(-1), false),
    ] {
        let scale: Scale = object(
            json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas}}),
            "scale",
        );
        let errors = validate_scale(&scale);
        assert_eq!(errors.is_empty(), valid, "{replicas:?}: {errors:?}");
    }
}
