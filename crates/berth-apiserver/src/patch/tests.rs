//! Tests of the patch engine: upstream's strategic-merge tables (ported
//! from `strategicpatch/patch_test.go`, run against its `MergeItem` test
//! struct), what kubectl and the kubelet send, the other patch types, the
//! error statuses, and properties (no panic on any input; the Go sort
//! port).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::schema::test_types::MERGE_ITEM;
use super::strategic::{self, SmpError, go_stable_sort};
use super::{PatchError, PatchKind, PatchType, UNPROCESSABLE_MESSAGE, apply_patch};

fn yaml(s: &str) -> Value {
    serde_yaml::from_str(s).expect("test YAML parses")
}

fn object(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("test document is not an object: {other}"),
    }
}

/// Applies a strategic merge patch against upstream's `MergeItem` schema.
fn smp_merge_item(original: &str, patch: &str) -> Result<Value, SmpError> {
    strategic::strategic_merge(
        object(yaml(original)),
        object(yaml(patch)),
        Some(&MERGE_ITEM),
    )
    .map(Value::Object)
}

/// (name, original or live object, patch, expected result), all YAML.
/// Named after upstream's descriptions; upstream's two-way cases apply the
/// two-way patch to the original, its three-way cases the three-way patch
/// to the current object.
const UPSTREAM_CASES: &[(&str, &str, &str, &str)] = &[
    // customStrategicMergePatchTestCaseData
    (
        "unique scalars when merging lists",
        "mergingIntList: [1, 2]",
        "mergingIntList: [2, 3]",
        "mergingIntList: [1, 2, 3]",
    ),
    (
        "delete map from nested map",
        "simpleMap: {key1: 1, key2: 1}",
        "simpleMap: {$patch: delete}",
        "simpleMap: {}",
    ),
    (
        "delete all items from merging list",
        "mergingList: [{name: 1}, {name: 2}]",
        "mergingList: [{$patch: replace}]",
        "mergingList: []",
    ),
    (
        "merge empty merging lists",
        "mergingList: []",
        "mergingList: []",
        "mergingList: []",
    ),
    (
        "delete all keys from map",
        "{name: 1, value: 1}",
        "{$patch: replace}",
        "{}",
    ),
    (
        "add key and delete all keys from map",
        "{name: 1, value: 1}",
        "{other: a, $patch: replace}",
        "{other: a}",
    ),
    (
        "delete all duplicate entries in a merging list",
        "mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]",
        "mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]",
        "mergingList: [{name: 2, value: a}]",
    ),
    (
        "retainKeys map can add a field when no retainKeys directive present",
        "retainKeysMap: {name: foo}",
        "retainKeysMap: {value: bar}",
        "retainKeysMap: {name: foo, value: bar}",
    ),
    (
        "retainKeys map can change a field when no retainKeys directive present",
        "retainKeysMap: {name: foo, value: a}",
        "retainKeysMap: {value: b}",
        "retainKeysMap: {name: foo, value: b}",
    ),
    (
        "retainKeys map can delete a field when no retainKeys directive present",
        "retainKeysMap: {name: foo, value: a}",
        "retainKeysMap: {value: null}",
        "retainKeysMap: {name: foo}",
    ),
    (
        "retainKeys map merge an empty map",
        "retainKeysMap: {name: foo, value: a}",
        "retainKeysMap: {}",
        "retainKeysMap: {name: foo, value: a}",
    ),
    (
        "retainKeys list can add a field when no retainKeys directive present",
        "retainKeysMergingList: [{name: bar}, {name: foo}]",
        "retainKeysMergingList: [{name: foo, value: a}]",
        "retainKeysMergingList: [{name: bar}, {name: foo, value: a}]",
    ),
    (
        "retainKeys list can delete a field when no retainKeys directive present",
        "retainKeysMergingList: [{name: bar}, {name: foo, value: a}]",
        "retainKeysMergingList: [{name: foo, value: null}]",
        "retainKeysMergingList: [{name: bar}, {name: foo}]",
    ),
    (
        "preserve the order from the patch in a merging list",
        "mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]",
        "mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]",
        "mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]",
    ),
    (
        "preserve the order from the patch in a merging list 2",
        "mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]",
        "mergingList: [{name: 3, value: c}, {name: 1, value: a}]",
        "mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]",
    ),
    (
        "preserve the order from the patch in a merging int list",
        "mergingIntList: [1, 2, 3]",
        "mergingIntList: [3, 1, 2]",
        "mergingIntList: [3, 1, 2]",
    ),
    (
        "preserve the order from the patch in a merging int list 2",
        "mergingIntList: [1, 2, 3]",
        "mergingIntList: [3, 1]",
        "mergingIntList: [2, 3, 1]",
    ),
    // customStrategicMergePatchRawTestCases
    (
        "$setElementOrder contains item that is not present in the list to be merged",
        "mergingList: [{name: 1}, {name: 3}]",
        "{$setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}], mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}",
        "mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]",
    ),
    (
        "$setElementOrder contains item that is not present in the int list to be merged",
        "mergingIntList: [1, 3]",
        "$setElementOrder/mergingIntList: [3, 2, 1]",
        "mergingIntList: [3, 1]",
    ),
    // createStrategicMergePatchTestCaseData, three-way patch on current
    (
        "add field to map",
        "{name: 1, other: a}",
        "{value: 1}",
        "{name: 1, value: 1, other: a}",
    ),
    (
        "add field and delete field from map",
        "{name: 1, other: a}",
        "{name: null, value: 1}",
        "{value: 1, other: a}",
    ),
    (
        "delete field from nested map with conflict",
        "simpleMap: {key1: a, key2: 1, other: a}",
        "simpleMap: {key1: 1, key2: null}",
        "simpleMap: {key1: 1, other: a}",
    ),
    (
        "delete all fields from map with conflict",
        "{name: 1, value: a, other: a}",
        "{name: null, value: null}",
        "{other: a}",
    ),
    (
        "replace list of scalars with conflict",
        "nonMergingIntList: [1, 4]",
        "nonMergingIntList: [2, 3]",
        "nonMergingIntList: [2, 3]",
    ),
    (
        "delete all maps from merging list with conflict",
        "mergingList: [{name: 1, other: a}, {name: 2, other: b}]",
        "mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]",
        "mergingList: []",
    ),
    (
        "delete all maps from empty merging list",
        "mergingList: []",
        "mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]",
        "mergingList: []",
    ),
    (
        "defined null values should propagate overwrite current fields (with conflict)",
        "{name: a, other: a}",
        "{name: 1, value: 1, other: null}",
        "{name: 1, value: 1}",
    ),
    // strategicMergePatchRawTestCases, three-way patch on current
    (
        "delete items in lists of scalars",
        "mergingIntList: [1, 2, 3, 4]",
        "{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}",
        "mergingIntList: [1, 2, 4]",
    ),
    (
        "delete all duplicate items in lists of scalars",
        "mergingIntList: [1, 2, 3, 3, 4]",
        "{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}",
        "mergingIntList: [1, 2, 4]",
    ),
    (
        "add and delete items in lists of scalars",
        "mergingIntList: [1, 2, 3, 4]",
        "{$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3]}",
        "mergingIntList: [1, 2, 4]",
    ),
    (
        "merge lists of maps",
        "mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]",
        "{$setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]}",
        "mergingList: [{name: 4, value: 4}, {name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]",
    ),
    (
        "merge lists of maps with conflict",
        "mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]",
        "{$setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]}",
        "mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]",
    ),
    (
        "add field to map in merging list",
        "mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]",
        "{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: 1}]}",
        "mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]",
    ),
    (
        "set elements order in a list with server-only items 2",
        "mergingList: [{name: 1, other: a}, {name: 2, value: 2}, {name: 9}, {name: 3, value: 3}, {name: 4, value: 4}]",
        "$setElementOrder/mergingList: [{name: 2}, {name: 1}, {name: 4}, {name: 3}]",
        "mergingList: [{name: 2, value: 2}, {name: 1, other: a}, {name: 9}, {name: 4, value: 4}, {name: 3, value: 3}]",
    ),
    (
        "set elements order in a list with server-only items 3",
        "mergingList: [{name: 1, other: a}, {name: 2, value: 2}, {name: 7}, {name: 9}, {name: 8}, {name: 3, value: 3}, {name: 4, value: 4}]",
        "$setElementOrder/mergingList: [{name: 2}, {name: 1}, {name: 4}, {name: 3}]",
        "mergingList: [{name: 2, value: 2}, {name: 1, other: a}, {name: 7}, {name: 9}, {name: 8}, {name: 4, value: 4}, {name: 3, value: 3}]",
    ),
    (
        "add an item in a int list and preserve order",
        "mergingIntList: [1, 2]",
        "{$setElementOrder/mergingIntList: [3, 1, 2], mergingIntList: [3]}",
        "mergingIntList: [3, 1, 2]",
    ),
    (
        "add multiple items in a int list and preserve order",
        "mergingIntList: [1, 2]",
        "{$setElementOrder/mergingIntList: [1, 4, 2, 3], mergingIntList: [4, 3]}",
        "mergingIntList: [1, 4, 2, 3]",
    ),
    (
        "delete an item in a int list and preserve order",
        "mergingIntList: [1, 2, 3]",
        "{$setElementOrder/mergingIntList: [2, 1], $deleteFromPrimitiveList/mergingIntList: [3]}",
        "mergingIntList: [2, 1]",
    ),
    (
        "add and delete an item in a int list and preserve order",
        "mergingIntList: [1, 2, 3]",
        "{$setElementOrder/mergingIntList: [4, 2, 1], mergingIntList: [4], $deleteFromPrimitiveList/mergingIntList: [3]}",
        "mergingIntList: [4, 2, 1]",
    ),
    (
        "set elements order in a int list with server-only items",
        "mergingIntList: [1, 3, 4, 2, 9]",
        "$setElementOrder/mergingIntList: [4, 2, 3, 1]",
        "mergingIntList: [4, 2, 3, 1, 9]",
    ),
    (
        "set elements order in a int list with server-only items 2",
        "mergingIntList: [1, 2, 9, 3, 4]",
        "$setElementOrder/mergingIntList: [2, 1, 4, 3]",
        "mergingIntList: [2, 1, 9, 4, 3]",
    ),
    (
        "set elements order in a int list with server-only items 3",
        "mergingIntList: [1, 2, 7, 9, 8, 3, 4]",
        "$setElementOrder/mergingIntList: [2, 1, 4, 3]",
        "mergingIntList: [2, 1, 7, 9, 8, 4, 3]",
    ),
    (
        "behavior of set element order for a merging list with duplicate",
        "mergingList: [{name: 1}, {name: 2, value: dup1}, {name: 3}, {name: 2, value: dup2}, {name: 4}]",
        "$setElementOrder/mergingList: [{name: 2}, {name: 1}, {name: 4}, {name: 3}, {name: 2}]",
        "mergingList: [{name: 2, value: dup1}, {name: 2, value: dup2}, {name: 1}, {name: 4}, {name: 3}]",
    ),
    (
        "behavior of set element order for a merging int list with duplicate",
        "mergingIntList: [1, 2, 3, 2, 4]",
        "$setElementOrder/mergingIntList: [2, 1, 4, 3, 2]",
        "mergingIntList: [2, 2, 1, 4, 3]",
    ),
    (
        "retainKeys map should clear defaulted field",
        "retainKeysMap: {value: foo}",
        "retainKeysMap: {$retainKeys: [other], other: bar}",
        "retainKeysMap: {other: bar}",
    ),
    (
        "retainKeys map should clear defaulted field with conflict (discriminated union)",
        "retainKeysMap: {name: type1, value: foo}",
        "retainKeysMap: {$retainKeys: [name, other], name: type2, other: bar}",
        "retainKeysMap: {name: type2, other: bar}",
    ),
    (
        "retainKeys map adds a field and clear a field",
        "retainKeysMap: {name: foo, other: a}",
        "retainKeysMap: {$retainKeys: [name, value], value: bar}",
        "retainKeysMap: {name: foo, value: bar}",
    ),
    (
        "retainKeys map deletes a field and clears a field",
        "retainKeysMap: {name: foo, value: bar, other: a}",
        "retainKeysMap: {$retainKeys: [name], value: null}",
        "retainKeysMap: {name: foo}",
    ),
    (
        "retainKeys map clears a field",
        "retainKeysMap: {name: foo, value: bar, other: a}",
        "retainKeysMap: {$retainKeys: [name, value]}",
        "retainKeysMap: {name: foo, value: bar}",
    ),
    (
        "retainKeys map adds a field in a nested map",
        "retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key3: c}}",
        "retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: b}}",
        "retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b, key3: c}}",
    ),
    (
        "retainKeys map deletes a field in a nested map",
        "retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b, key3: c}}",
        "retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: null}}",
        "retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key3: c}}",
    ),
];

#[test]
fn upstream_strategic_merge_cases() {
    for (name, original, patch, expected) in UPSTREAM_CASES {
        let got = smp_merge_item(original, patch);
        assert_eq!(got, Ok(yaml(expected)), "case {name:?}");
    }
}

/// (name, original, patch, expected error) for upstream's error cases and
/// malformed directives, with the class kube-apiserver answers with.
#[test]
fn strategic_merge_errors_are_classified_as_upstream() {
    type Check = fn(&SmpError) -> bool;
    let cases: &[(&str, &str, &str, Check)] = &[
        (
            "should check if order in $setElementOrder and patch list match",
            "mergingList: [{name: 1}, {name: 3}, {name: 2}]",
            "{$setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}",
            |e| matches!(e, SmpError::Internal(m) if m.contains("doesn't match")),
        ),
        (
            "should check if order in $setElementOrder and patch int list match",
            "mergingIntList: [1, 3, 2]",
            "{$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}",
            |e| matches!(e, SmpError::Internal(m) if m.contains("doesn't match")),
        ),
        (
            "missing merge key should error out",
            "mergingList: [{name: 1, value: a}]",
            "mergingList: [{value: b}]",
            |e| {
                matches!(e, SmpError::Internal(m)
                    if m == "map: map[value:b] does not contain declared merge key: name")
            },
        ),
        (
            "retainKeys that is not a list is a bad request",
            "retainKeysMap: {name: foo}",
            "retainKeysMap: {$retainKeys: name}",
            |e| *e == SmpError::BadRequest("invalid patch format of retainKeys".to_owned()),
        ),
        (
            "a patched key missing from retainKeys is a bad request",
            "retainKeysMap: {name: foo}",
            "retainKeysMap: {$retainKeys: [name], value: bar}",
            |e| *e == SmpError::BadRequest("invalid patch format of retainKeys".to_owned()),
        ),
        (
            "a deletion list without a slash is a bad request",
            "mergingIntList: [1]",
            "$deleteFromPrimitiveListmergingIntList: [1]",
            |e| *e == SmpError::BadRequest("invalid patch format of primitive list".to_owned()),
        ),
        (
            "a set-order list without a slash is a bad request",
            "mergingIntList: [1]",
            "$setElementOrder: [1]",
            |e| {
                *e == SmpError::BadRequest(
                    "invalid patch format of setElementOrder list".to_owned(),
                )
            },
        ),
        (
            "lists of lists are unprocessable",
            "mergingIntList: [[1]]",
            "mergingIntList: [[2]]",
            |e| *e == SmpError::Unprocessable("lists of lists are not supported".to_owned()),
        ),
        (
            "an unknown map directive is an internal error",
            "simpleMap: {key1: a}",
            "simpleMap: {$patch: frobnicate}",
            |e| {
                matches!(e, SmpError::Internal(m)
                    if m == "unknown patch type: frobnicate in map: map[$patch:frobnicate]")
            },
        ),
        (
            "a merge directive inside a list is not supported",
            "mergingList: [{name: 1}]",
            "mergingList: [{name: 1, $patch: merge}]",
            |e| {
                *e == SmpError::Internal(
                    "merging lists cannot yet be specified in the patch".to_owned(),
                )
            },
        ),
        (
            "mixed element types in a merging list are an internal error",
            "mergingIntList: [1, 2]",
            "mergingIntList: [a]",
            |e| matches!(e, SmpError::Internal(m) if m.starts_with("list element types are not identical")),
        ),
    ];
    for (name, original, patch, check) in cases {
        match smp_merge_item(original, patch) {
            Ok(v) => panic!("case {name:?}: expected an error, got {v}"),
            Err(e) => assert!(check(&e), "case {name:?}: unexpected error {e:?}"),
        }
    }
}

#[test]
fn replace_strategy_replaces_a_whole_map() {
    let got = smp_merge_item("replacingItem: {a: 1, b: 2}", "replacingItem: {c: 3}");
    assert_eq!(got, Ok(yaml("replacingItem: {c: 3}")));
}

#[test]
fn directives_in_new_subtrees_are_not_stored() {
    // A new list item carrying a nested `$setElementOrder` and a new map
    // with `$patch`: upstream's typed decode drops the former, and
    // `removeDirectives` drops the latter.
    let got = smp_merge_item(
        "{}",
        "{mergingList: [{name: 1, $setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 2}]}], simpleMap: {$patch: replace, a: b}}",
    );
    assert_eq!(
        got,
        Ok(yaml("mergingList: [{name: 1, mergingList: [{name: 2}]}]"))
    );
}

fn smp(kind: PatchKind, original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let body = serde_json::to_vec(patch).expect("patch serializes");
    apply_patch(PatchType::StrategicMerge, &kind, original, &body, None)
}

fn node() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "spec": {
            "podCIDRs": ["10.0.0.0/24"],
            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        },
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady"}
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.5"},
                {"type": "Hostname", "address": "n1"}
            ]
        }
    })
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web"},
            "finalizers": ["a.example.com/x"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1"}]
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                },
                {"name": "sidecar", "image": "envoy:1"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "a", "operator": "Exists"}]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False"}
            ]
        }
    })
}

/// (name, kind, original, patch, expected paths and values) for what
/// kubectl and the kubelet send.
#[test]
fn what_kubectl_and_the_kubelet_send() {
    type Expect = &'static [(&'static str, fn() -> Option<Value>)];
    type Case = (&'static str, PatchKind, fn() -> Value, Value, Expect);
    let cases: &[Case] = &[
        (
            "kubectl cordon sets unschedulable",
            PatchKind::Node,
            node,
            json!({"spec": {"unschedulable": true}}),
            &[("/spec/unschedulable", || Some(json!(true)))],
        ),
        (
            "kubectl uncordon sends a null that removes unschedulable",
            PatchKind::Node,
            || {
                let mut n = node();
                n["spec"]["unschedulable"] = json!(true);
                n
            },
            json!({"spec": {"unschedulable": null}}),
            &[("/spec/unschedulable", || None)],
        ),
        (
            "kubectl taint replaces the whole taint list",
            PatchKind::Node,
            node,
            json!({"spec": {"taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
            ]}}),
            &[("/spec/taints", || {
                Some(json!([
                    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                    {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
                ]))
            })],
        ),
        (
            "kubectl taint with a dash sends the remaining taints, not a delete directive",
            PatchKind::Node,
            || {
                let mut n = node();
                n["spec"]["taints"] = json!([
                    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                    {"key": "spot", "effect": "NoExecute"}
                ]);
                n
            },
            json!({"spec": {"taints": [{"key": "spot", "effect": "NoExecute"}]}}),
            &[("/spec/taints", || {
                Some(json!([{"key": "spot", "effect": "NoExecute"}]))
            })],
        ),
        (
            "kubectl taint removing the last taint sends a null",
            PatchKind::Node,
            node,
            json!({"spec": {"taints": null}}),
            &[
                ("/spec/taints", || None),
                ("/spec/podCIDRs/0", || Some(json!("10.0.0.0/24"))),
            ],
        ),
        (
            "kubectl label adds and removes labels",
            PatchKind::Node,
            node,
            json!({"metadata": {"labels": {"zone": "a", "kubernetes.io/hostname": null}}}),
            &[
                ("/metadata/labels", || Some(json!({"zone": "a"}))),
                ("/metadata/name", || Some(json!("n1"))),
            ],
        ),
        (
            "kubelet node status merges conditions by type in the set order",
            PatchKind::Node,
            node,
            json!({"status": {
                "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "Ready"}],
                "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
            }}),
            &[("/status/conditions", || {
                Some(json!([
                    {"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}
                ]))
            })],
        ),
        (
            "node addresses merge by type",
            PatchKind::Node,
            node,
            json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.6"}]}}),
            &[("/status/addresses", || {
                Some(json!([
                    {"type": "InternalIP", "address": "10.0.0.6"},
                    {"type": "Hostname", "address": "n1"}
                ]))
            })],
        ),
        (
            // Without `$setElementOrder`, upstream puts an item the live list
            // lacks before the live items (`mergeSortedSlice`).
            "node podCIDRs are a set and new items come first",
            PatchKind::Node,
            node,
            json!({"spec": {"podCIDRs": ["fd00::/64", "10.0.0.0/24"]}}),
            &[("/spec/podCIDRs", || {
                Some(json!(["fd00::/64", "10.0.0.0/24"]))
            })],
        ),
        (
            "kubectl edit of one container image merges by name",
            PatchKind::Pod,
            pod,
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "containers": [{"name": "sidecar", "image": "envoy:2"}]
            }}),
            &[
                ("/spec/containers/1/image", || Some(json!("envoy:2"))),
                ("/spec/containers/0/image", || Some(json!("nginx:1"))),
            ],
        ),
        (
            // The new item comes first, as upstream orders it.
            "container env merges by name and obeys delete directives",
            PatchKind::Pod,
            pod,
            json!({"spec": {"containers": [{"name": "app", "env": [
                {"name": "B", "$patch": "delete"},
                {"name": "C", "value": "3"}
            ]}]}}),
            &[("/spec/containers/0/env", || {
                Some(json!([{"name": "C", "value": "3"}, {"name": "A", "value": "1"}]))
            })],
        ),
        (
            "container ports merge by containerPort and mounts by mountPath",
            PatchKind::Pod,
            pod,
            json!({"spec": {"containers": [{"name": "app",
                "ports": [{"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}]
            }]}}),
            &[
                ("/spec/containers/0/ports", || {
                    Some(json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}]))
                }),
                ("/spec/containers/0/volumeMounts/0/readOnly", || {
                    Some(json!(true))
                }),
            ],
        ),
        (
            "kubectl apply switching a volume source uses retainKeys",
            PatchKind::Pod,
            pod,
            json!({"spec": {"volumes": [
                {"$retainKeys": ["hostPath", "name"], "name": "data", "hostPath": {"path": "/srv"}}
            ]}}),
            &[("/spec/volumes", || {
                Some(json!([{"name": "data", "hostPath": {"path": "/srv"}}]))
            })],
        ),
        (
            "tolerations are replaced whole",
            PatchKind::Pod,
            pod,
            json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
            &[("/spec/tolerations", || {
                Some(json!([{"key": "b", "operator": "Exists"}]))
            })],
        ),
        (
            "pod status conditions merge by type",
            PatchKind::Pod,
            pod,
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            &[("/status/conditions", || {
                Some(json!([
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "True"}
                ]))
            })],
        ),
        (
            "finalizers are a set with a parallel deletion list",
            PatchKind::Pod,
            pod,
            json!({"metadata": {
                "finalizers": ["b.example.com/y"],
                "$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]
            }}),
            &[("/metadata/finalizers", || Some(json!(["b.example.com/y"])))],
        ),
        (
            "owner references merge by uid",
            PatchKind::Pod,
            pod,
            json!({"metadata": {"ownerReferences": [
                {"uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u2"}
            ]}}),
            &[
                ("/metadata/ownerReferences/0/controller", || {
                    Some(json!(true))
                }),
                ("/metadata/ownerReferences/0/name", || Some(json!("web-1"))),
                ("/metadata/ownerReferences/1/uid", || Some(json!("u2"))),
            ],
        ),
        (
            "a kind without container tags replaces the list",
            PatchKind::Other,
            pod,
            json!({"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}),
            &[("/spec/containers", || {
                Some(json!([{"name": "app", "image": "nginx:2"}]))
            })],
        ),
        (
            "a lease renewal merges the spec",
            PatchKind::Lease,
            || {
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n1"},
                      "spec": {"holderIdentity": "n1", "renewTime": "2024-01-01T00:00:00.000000Z"}})
            },
            json!({"spec": {"renewTime": "2024-01-01T00:00:10.000000Z"}}),
            &[
                ("/spec/holderIdentity", || Some(json!("n1"))),
                ("/spec/renewTime", || {
                    Some(json!("2024-01-01T00:00:10.000000Z"))
                }),
            ],
        ),
    ];
    for (name, kind, original, patch, expect) in cases {
        let got = smp(*kind, &original(), patch)
            .unwrap_or_else(|e| panic!("case {name:?}: unexpected error {e:?}"));
        for (path, want) in expect.iter() {
            assert_eq!(
                got.pointer(path).cloned(),
                want(),
                "case {name:?} at {path}"
            );
        }
    }
}

#[test]
fn patch_type_from_content_type() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        ("application/merge-patch+json", Some(PatchType::Merge)),
        (
            "application/strategic-merge-patch+json",
            Some(PatchType::StrategicMerge),
        ),
        ("application/apply-patch+yaml", Some(PatchType::Apply)),
        (
            "application/merge-patch+json; charset=utf-8",
            Some(PatchType::Merge),
        ),
        ("application/apply-patch+cbor", None),
        ("application/json", None),
        ("Application/Merge-Patch+Json", None),
        ("", None),
        (";application/merge-patch+json", None),
    ];
    for (ct, want) in cases {
        assert_eq!(
            PatchType::from_content_type(ct),
            want,
            "content type {ct:?}"
        );
    }
}

#[test]
fn patch_kind_from_group_kind() {
    assert_eq!(PatchKind::from_group_kind("", "Pod"), PatchKind::Pod);
    assert_eq!(PatchKind::from_group_kind("", "Node"), PatchKind::Node);
    assert_eq!(
        PatchKind::from_group_kind("events.k8s.io", "Event"),
        PatchKind::Event
    );
    assert_eq!(
        PatchKind::from_group_kind("coordination.k8s.io", "Lease"),
        PatchKind::Lease
    );
    assert_eq!(
        PatchKind::from_group_kind("apps", "Deployment"),
        PatchKind::Deployment
    );
    assert_eq!(
        PatchKind::from_group_kind("apps", "StatefulSet"),
        PatchKind::Workload
    );
    assert_eq!(
        PatchKind::from_group_kind("apps", "ControllerRevision"),
        PatchKind::Other
    );
}

/// The patches kubectl sends a Deployment: `set image` merges the
/// template's containers by name; `apply` switching the strategy to
/// Recreate carries a `$retainKeys` directive that drops `rollingUpdate`;
/// status conditions merge by type.
#[test]
fn strategic_merge_of_a_deployment_follows_its_tags() {
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx", "imagePullPolicy": "Always"},
                {"name": "log", "image": "busybox"}]}}},
        "status": {"conditions": [{"type": "Available", "status": "False"}]}
    });
    struct Case {
        name: &'static str,
        patch: &'static str,
        want: Vec<(&'static str, Value)>,
    }
    let cases = [
        Case {
            name: "kubectl set image",
            patch: r#"{"spec":{"template":{"spec":{"containers":[{"image":"nginx:1.27","name":"web"}]}}}}"#,
            want: vec![
                (
                    "/spec/template/spec/containers/0/image",
                    json!("nginx:1.27"),
                ),
                (
                    "/spec/template/spec/containers/0/imagePullPolicy",
                    json!("Always"),
                ),
                ("/spec/template/spec/containers/1/name", json!("log")),
            ],
        },
        Case {
            name: "kubectl apply: RollingUpdate to Recreate",
            patch: r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#,
            want: vec![("/spec/strategy", json!({"type": "Recreate"}))],
        },
        Case {
            name: "a status condition by type",
            patch: r#"{"status":{"conditions":[{"type":"Progressing","status":"True"}]}}"#,
            // Upstream's order: the patch's items, then the server's others.
            want: vec![
                ("/status/conditions/0/type", json!("Progressing")),
                ("/status/conditions/1/type", json!("Available")),
            ],
        },
    ];
    for case in cases {
        let patched = apply_patch(
            PatchType::StrategicMerge,
            &PatchKind::Deployment,
            &deployment,
            case.patch.as_bytes(),
            None,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for (pointer, value) in &case.want {
            assert_eq!(
                patched.pointer(pointer),
                Some(value),
                "{}: {pointer}",
                case.name
            );
        }
    }
}

fn run(patch_type: PatchType, original: &Value, body: &str) -> Result<Value, PatchError> {
    apply_patch(
        patch_type,
        &PatchKind::Pod,
        original,
        body.as_bytes(),
        Some("kubectl"),
    )
}

#[test]
fn json_patch_operations() {
    type Case = (&'static str, &'static str, Option<(&'static str, Value)>);
    let cases: &[Case] = &[
        (
            "add a label",
            r#"[{"op":"add","path":"/metadata/labels/tier","value":"fe"}]"#,
            Some(("/metadata/labels/tier", json!("fe"))),
        ),
        (
            "replace the image",
            r#"[{"op":"replace","path":"/spec/containers/0/image","value":"nginx:2"}]"#,
            Some(("/spec/containers/0/image", json!("nginx:2"))),
        ),
        (
            "test then remove",
            r#"[{"op":"test","path":"/metadata/name","value":"web"},{"op":"remove","path":"/metadata/labels/app"}]"#,
            Some(("/metadata/labels", json!({}))),
        ),
        (
            "append to a list",
            r#"[{"op":"add","path":"/metadata/finalizers/-","value":"b"}]"#,
            Some(("/metadata/finalizers/1", json!("b"))),
        ),
        (
            "null is an empty patch",
            "null",
            Some(("/metadata/name", json!("web"))),
        ),
    ];
    for (name, body, want) in cases {
        let got = run(PatchType::Json, &pod(), body)
            .unwrap_or_else(|e| panic!("case {name:?}: unexpected error {e:?}"));
        if let Some((path, value)) = want {
            assert_eq!(got.pointer(path), Some(value), "case {name:?}");
        }
    }
}

/// (name, patch type, body, status, message or cause).
#[test]
fn errors_carry_upstream_statuses_and_messages() {
    let cases: &[(&str, PatchType, String, u16, &str)] = &[
        (
            "a failed json patch test is unprocessable",
            PatchType::Json,
            r#"[{"op":"test","path":"/metadata/name","value":"other"}]"#.to_owned(),
            422,
            "testing value /metadata/name failed: test failed",
        ),
        (
            "a json patch on a missing path is unprocessable",
            PatchType::Json,
            r#"[{"op":"replace","path":"/spec/nope/x","value":1}]"#.to_owned(),
            422,
            "replace operation does not apply: doc is missing key: /spec/nope/x: missing value",
        ),
        (
            "an unknown json patch op is unprocessable",
            PatchType::Json,
            r#"[{"op":"frobnicate","path":"/x"}]"#.to_owned(),
            422,
            "Unexpected kind: frobnicate",
        ),
        (
            "a json patch that is an object is a bad request",
            PatchType::Json,
            r#"{"op":"add"}"#.to_owned(),
            400,
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        (
            "a json patch that is not json is a bad request",
            PatchType::Json,
            "[{".to_owned(),
            400,
            "",
        ),
        (
            "more than 10000 json patch operations are too large",
            PatchType::Json,
            format!(
                "[{}]",
                vec![r#"{"op":"test","path":"/kind","value":"Pod"}"#; 10_001].join(",")
            ),
            413,
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
        ),
        (
            "a json patch replacing the root with a list is invalid",
            PatchType::Json,
            r#"[{"op":"replace","path":"","value":[]}]"#.to_owned(),
            422,
            " \"\" is invalid: patch: Invalid value: \"[]\": json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            "a merge patch that is not json is a bad request",
            PatchType::Merge,
            "{".to_owned(),
            400,
            "Invalid JSON Patch",
        ),
        (
            "a null merge patch is a bad request",
            PatchType::Merge,
            "null".to_owned(),
            400,
            "Invalid JSON Patch",
        ),
        (
            "a scalar merge patch is a bad request",
            PatchType::Merge,
            "5".to_owned(),
            400,
            "Invalid JSON Patch",
        ),
        (
            "a list merge patch replaces the object and is invalid",
            PatchType::Merge,
            "[1, null]".to_owned(),
            422,
            " \"\" is invalid: patch: Invalid value: \"[1,null]\": json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            "a strategic merge patch that is a list is a bad request",
            PatchType::StrategicMerge,
            "[]".to_owned(),
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            "an apply body that is not yaml is a bad request",
            PatchType::Apply,
            "a: [".to_owned(),
            400,
            "",
        ),
        (
            "an apply body that is a list is a bad request",
            PatchType::Apply,
            "- a".to_owned(),
            400,
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            "an apply body with managed fields is a bad request",
            PatchType::Apply,
            "apiVersion: v1\nkind: Pod\nmetadata: {name: web, managedFields: []}".to_owned(),
            400,
            "metadata.managedFields must be nil",
        ),
        (
            "an apply body of another version is a bad request",
            PatchType::Apply,
            "apiVersion: v2\nkind: Pod\nmetadata: {name: web}".to_owned(),
            400,
            "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1",
        ),
    ];
    for (name, patch_type, body, status, text) in cases {
        let err = match run(*patch_type, &pod(), body) {
            Ok(v) => panic!("case {name:?}: expected an error, got {v}"),
            Err(e) => e,
        };
        assert_eq!(err.http_status(), *status, "case {name:?}: {err:?}");
        match &err {
            PatchError::Unprocessable { detail } => {
                assert_eq!(err.to_string(), UNPROCESSABLE_MESSAGE, "case {name:?}");
                assert_eq!(detail, text, "case {name:?}");
            }
            other if !text.is_empty() => assert_eq!(other.to_string(), *text, "case {name:?}"),
            _ => {}
        }
    }
}

#[test]
fn merge_patch_semantics() {
    let got = run(
        PatchType::Merge,
        &pod(),
        r#"{"metadata":{"labels":{"app":null,"tier":"fe"},"annotations":{"a":"1","b":null}},
            "spec":{"tolerations":[{"key":"x","value":null}]}}"#,
    )
    .expect("merge patch applies");
    assert_eq!(got["metadata"]["labels"], json!({"tier": "fe"}));
    // Nulls are pruned from a map the document did not have.
    assert_eq!(got["metadata"]["annotations"], json!({"a": "1"}));
    // A list replaces the list; nulls inside its objects are pruned, as
    // evanphx does for a value that replaces a non-object.
    assert_eq!(got["spec"]["tolerations"], json!([{"key": "x"}]));
    assert_eq!(got["spec"]["containers"][0]["name"], json!("app"));
}

#[test]
fn apply_requires_a_field_manager_with_upstreams_message() {
    let err = apply_patch(
        PatchType::Apply,
        &PatchKind::Pod,
        &pod(),
        b"apiVersion: v1\nkind: Pod\n",
        None,
    )
    .expect_err("apply without a field manager fails");
    assert_eq!(err.http_status(), 422);
    assert_eq!(
        err.to_string(),
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
}

#[test]
fn field_manager_is_validated_for_every_patch_type() {
    let long = "m".repeat(129);
    let cases: &[(&str, PatchType, &str, &str)] = &[
        (
            "too long",
            PatchType::Merge,
            long.as_str(),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes",
        ),
        (
            "a control character",
            PatchType::StrategicMerge,
            "kube\u{7}ctl",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"kube\\u0007ctl\": invalid character U+0007 (at position 4)",
        ),
        (
            "empty for apply",
            PatchType::Apply,
            "",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ),
    ];
    for (name, patch_type, manager, message) in cases {
        let err = apply_patch(*patch_type, &PatchKind::Pod, &pod(), b"{}", Some(manager))
            .expect_err("invalid field manager fails");
        assert_eq!(err.http_status(), 422, "case {name:?}");
        assert_eq!(err.to_string(), *message, "case {name:?}");
    }
    // A printable manager with spaces and non-ASCII letters is fine.
    assert!(
        apply_patch(
            PatchType::Merge,
            &PatchKind::Pod,
            &pod(),
            b"{}",
            Some("my controller é")
        )
        .is_ok()
    );
}

#[test]
fn server_side_apply_merges_the_configuration_into_the_live_object() {
    let config = "
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    tier: fe
    app: null
spec:
  containers:
  - name: app
    image: nginx:2
    env:
    - name: C
      value: '3'
";
    let got = apply_patch(
        PatchType::Apply,
        &PatchKind::Pod,
        &pod(),
        config.as_bytes(),
        Some("kubectl"),
    )
    .expect("apply succeeds");
    assert_eq!(
        got["metadata"]["labels"],
        json!({"app": "web", "tier": "fe"})
    );
    assert_eq!(got["spec"]["containers"][0]["image"], json!("nginx:2"));
    // Strategic-merge order: an item the live list lacks comes first
    // (real server-side apply would append it).
    assert_eq!(
        got["spec"]["containers"][0]["env"],
        json!([{"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(got["spec"]["containers"][1]["name"], json!("sidecar"));
    assert_eq!(got["status"]["phase"], json!("Running"));
}

#[test]
fn server_side_apply_onto_an_empty_object_creates_it() {
    let got = apply_patch(
        PatchType::Apply,
        &PatchKind::Namespace,
        &json!({}),
        br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1","$patch":"delete"}}"#,
        Some("kubectl"),
    )
    .expect("apply succeeds");
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}})
    );
}

#[test]
fn error_statuses_and_reasons() {
    let cases = [
        (
            PatchError::BadRequest {
                message: String::new(),
            },
            400,
            "BadRequest",
        ),
        (
            PatchError::Unprocessable {
                detail: String::new(),
            },
            422,
            "Invalid",
        ),
        (
            PatchError::Invalid {
                message: String::new(),
            },
            422,
            "Invalid",
        ),
        (
            PatchError::Conflict {
                message: String::new(),
            },
            409,
            "Conflict",
        ),
        (
            PatchError::RequestEntityTooLarge {
                message: String::new(),
            },
            413,
            "RequestEntityTooLarge",
        ),
        (
            PatchError::unsupported_media_type(&PatchType::ALL),
            415,
            "UnsupportedMediaType",
        ),
    ];
    for (err, status, reason) in cases {
        assert_eq!(err.http_status(), status, "{err:?}");
        assert_eq!(err.reason(), reason, "{err:?}");
    }
    assert_eq!(
        PatchError::unsupported_media_type(&[PatchType::Json, PatchType::Merge, PatchType::Apply])
            .to_string(),
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

/// JSON values built from keys that exercise the directives and the
/// tagged fields, so random patches reach the interesting code.
fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("$patch".to_owned()),
        Just("$retainKeys".to_owned()),
        Just("$setElementOrder/containers".to_owned()),
        Just("$setElementOrder/conditions".to_owned()),
        Just("$deleteFromPrimitiveList/finalizers".to_owned()),
        Just("$deleteFromPrimitiveList/".to_owned()),
        Just("metadata".to_owned()),
        Just("spec".to_owned()),
        Just("status".to_owned()),
        Just("containers".to_owned()),
        Just("conditions".to_owned()),
        Just("finalizers".to_owned()),
        Just("taints".to_owned()),
        Just("name".to_owned()),
        Just("type".to_owned()),
        Just("env".to_owned()),
        "[a-z]{0,3}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            Just("replace"),
            Just("delete"),
            Just("merge"),
            Just("a"),
            Just("")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_kind() -> impl Strategy<Value = PatchKind> {
    prop_oneof![
        Just(PatchKind::Pod),
        Just(PatchKind::Node),
        Just(PatchKind::Namespace),
        Just(PatchKind::Event),
        Just(PatchKind::Lease),
        Just(PatchKind::Other),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn apply_patch_never_panics_on_json(
        original in arb_json(),
        patch in arb_json(),
        kind in arb_kind(),
    ) {
        let body = serde_json::to_vec(&patch).unwrap_or_default();
        for patch_type in PatchType::ALL {
            let _ = apply_patch(patch_type, &kind, &original, &body, Some("fuzz"));
        }
    }

    #[test]
    fn apply_patch_never_panics_on_bytes(
        original in arb_json(),
        body in prop::collection::vec(any::<u8>(), 0..256),
        kind in arb_kind(),
        manager in prop::option::of(".{0,8}"),
    ) {
        for patch_type in PatchType::ALL {
            let _ = apply_patch(patch_type, &kind, &original, &body, manager.as_deref());
        }
    }

    #[test]
    fn go_stable_sort_is_a_stable_sort(items in prop::collection::vec((0u8..8, any::<u16>()), 0..100)) {
        let mut ours = items.clone();
        go_stable_sort(&mut ours, &|a: &(u8, u16), b: &(u8, u16)| a.0 < b.0);
        let mut std_sorted = items;
        std_sorted.sort_by_key(|x| x.0);
        prop_assert_eq!(ours, std_sorted);
    }

    #[test]
    fn go_stable_sort_survives_an_inconsistent_comparison(
        items in prop::collection::vec(0u8..8, 0..100),
        known in 0u8..8,
    ) {
        // Upstream's comparison: "less" whenever an item is unknown.
        let mut sorted = items.clone();
        go_stable_sort(&mut sorted, &|a: &u8, b: &u8| *a >= known || *b >= known || a < b);
        let mut a = sorted;
        let mut b = items;
        a.sort_unstable();
        b.sort_unstable();
        prop_assert_eq!(a, b);
    }
}
