//! Which taints a node's conditions call for (upstream
//! `nodeConditionToTaintKeyStatusMap`, `taintKeyToNodeConditionMap`,
//! `doNoScheduleTaintingPass`) and how the controller edits a taint list
//! (`SwapNodeControllerTaint`, `TaintSetDiff`), touching no other taint.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use berth_core::node::taints as node_taints;
use berth_core::toleration::{EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE};

pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const TAINT_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
pub const TAINT_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
pub const TAINT_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
pub const TAINT_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

pub const CONDITION_READY: &str = "Ready";
pub const CONDITION_MEMORY_PRESSURE: &str = "MemoryPressure";
pub const CONDITION_DISK_PRESSURE: &str = "DiskPressure";
pub const CONDITION_PID_PRESSURE: &str = "PIDPressure";
pub const CONDITION_NETWORK_UNAVAILABLE: &str = "NetworkUnavailable";

/// `nodeConditionToTaintKeyStatusMap`: (condition type, status) → taint key.
pub const CONDITION_TO_TAINT: &[(&str, &str, &str)] = &[
    (CONDITION_READY, "False", TAINT_NOT_READY),
    (CONDITION_READY, "Unknown", TAINT_UNREACHABLE),
    (CONDITION_MEMORY_PRESSURE, "True", TAINT_MEMORY_PRESSURE),
    (CONDITION_DISK_PRESSURE, "True", TAINT_DISK_PRESSURE),
    (
        CONDITION_NETWORK_UNAVAILABLE,
        "True",
        TAINT_NETWORK_UNAVAILABLE,
    ),
    (CONDITION_PID_PRESSURE, "True", TAINT_PID_PRESSURE),
];

/// `taintKeyToNodeConditionMap`: the taint keys the controller owns, with
/// the condition each mirrors.
pub const TAINT_TO_CONDITION: &[(&str, &str)] = &[
    (TAINT_NOT_READY, CONDITION_READY),
    (TAINT_UNREACHABLE, CONDITION_READY),
    (TAINT_NETWORK_UNAVAILABLE, CONDITION_NETWORK_UNAVAILABLE),
    (TAINT_MEMORY_PRESSURE, CONDITION_MEMORY_PRESSURE),
    (TAINT_DISK_PRESSURE, CONDITION_DISK_PRESSURE),
    (TAINT_PID_PRESSURE, CONDITION_PID_PRESSURE),
];

/// The taint key a condition in a status calls for, if any.
pub fn taint_key_for_condition(condition_type: &str, status: &str) -> Option<&'static str> {
    CONDITION_TO_TAINT
        .iter()
        .find(|(t, s, _)| *t == condition_type && *s == status)
        .map(|(_, _, key)| *key)
}

/// A taint with key and effect and nothing else (upstream's templates).
pub fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.to_string(),
        effect: effect.to_string(),
        ..Taint::default()
    }
}

/// `Taint.MatchTaint`: the same key and effect.
pub fn same_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

pub fn has_taint(taints: &[Taint], key: &str, effect: &str) -> bool {
    taints.iter().any(|t| t.key == key && t.effect == effect)
}

/// The condition of a type in a node's status.
pub fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == type_))
}

/// The NoSchedule taints the node's conditions and `spec.unschedulable`
/// call for, in condition order (`doNoScheduleTaintingPass`).
pub fn desired_no_schedule_taints(node: &Node) -> Vec<Taint> {
    let mut taints = Vec::new();
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[]);
    for c in conditions {
        if let Some(key) = taint_key_for_condition(&c.type_, &c.status) {
            taints.push(taint(key, EFFECT_NO_SCHEDULE));
        }
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        taints.push(taint(TAINT_UNSCHEDULABLE, EFFECT_NO_SCHEDULE));
    }
    taints
}

/// Taints to add and to remove.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaintChange {
    pub add: Vec<Taint>,
    pub remove: Vec<Taint>,
}

impl TaintChange {
    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.remove.is_empty()
    }
}

/// `TaintSetDiff`: what to add to `current` and remove from it to get `want`.
pub fn taint_set_diff(want: &[Taint], current: &[Taint]) -> TaintChange {
    TaintChange {
        add: want
            .iter()
            .filter(|w| !current.iter().any(|c| same_taint(c, w)))
            .cloned()
            .collect(),
        remove: current
            .iter()
            .filter(|c| !want.iter().any(|w| same_taint(c, w)))
            .cloned()
            .collect(),
    }
}

/// The NoSchedule change for a node: only the controller's own keys
/// (condition taints and unschedulable) are compared; other taints are left
/// alone.
pub fn no_schedule_change(node: &Node) -> TaintChange {
    let owned: Vec<Taint> = node_taints(node)
        .iter()
        .filter(|t| {
            t.effect == EFFECT_NO_SCHEDULE
                && (t.key == TAINT_UNSCHEDULABLE
                    || TAINT_TO_CONDITION.iter().any(|(k, _)| *k == t.key))
        })
        .cloned()
        .collect();
    taint_set_diff(&desired_no_schedule_taints(node), &owned)
}

/// `SwapNodeControllerTaint` on a taint list: removes `change.remove`, adds
/// `change.add` (stamped `timeAdded = now`) unless a taint of the same key
/// and effect is there already, which is kept as it is: its `timeAdded` is
/// what pods' eviction times count from. `None` when nothing changes.
pub fn apply_change(taints: &[Taint], change: &TaintChange, now: Timestamp) -> Option<Vec<Taint>> {
    let mut out: Vec<Taint> = taints
        .iter()
        .filter(|t| !change.remove.iter().any(|r| same_taint(r, t)))
        .cloned()
        .collect();
    for add in &change.add {
        if !out.iter().any(|t| same_taint(t, add)) {
            let mut add = add.clone();
            if add.effect == EFFECT_NO_EXECUTE && add.time_added.is_none() {
                // Whole seconds, as the API serializes it.
                add.time_added = Some(Time(Timestamp::from_second(now.as_second()).unwrap_or(now)));
            }
            out.push(add);
        }
    }
    if out.len() == taints.len() && out.iter().zip(taints).all(|(a, b)| a == b) {
        None
    } else {
        Some(out)
    }
}

/// The not-ready/unreachable NoExecute swap for a Ready status
/// (`doNoExecuteTaintingPass`): False → not-ready in, unreachable out;
/// Unknown → the reverse; anything else → nothing.
pub fn no_execute_swap(ready_status: &str) -> Option<TaintChange> {
    let (add, remove) = match ready_status {
        "False" => (TAINT_NOT_READY, TAINT_UNREACHABLE),
        "Unknown" => (TAINT_UNREACHABLE, TAINT_NOT_READY),
        _ => return None,
    };
    Some(TaintChange {
        add: vec![taint(add, EFFECT_NO_EXECUTE)],
        remove: vec![taint(remove, EFFECT_NO_EXECUTE)],
    })
}

/// `markNodeAsReachable`: both NoExecute health taints out.
pub fn lift_no_execute_health_taints() -> TaintChange {
    TaintChange {
        add: vec![],
        remove: vec![
            taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE),
            taint(TAINT_NOT_READY, EFFECT_NO_EXECUTE),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{NodeWrapper, make_node};

    /// A node with these conditions and taints.
    fn node_with(conditions: &[(&str, &str)], taints: Vec<Taint>) -> NodeWrapper {
        conditions
            .iter()
            .fold(make_node(), |node, (type_, status)| {
                node.condition(type_, status)
            })
            .taints(taints)
    }

    fn keys(taints: &[Taint]) -> Vec<String> {
        taints
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect()
    }

    /// Upstream `nodeConditionToTaintKeyStatusMap`, row by row.
    #[test]
    fn condition_to_taint_key_map() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("Ready", "False", Some(TAINT_NOT_READY)),
            ("Ready", "Unknown", Some(TAINT_UNREACHABLE)),
            ("Ready", "True", None),
            ("MemoryPressure", "True", Some(TAINT_MEMORY_PRESSURE)),
            ("MemoryPressure", "False", None),
            ("MemoryPressure", "Unknown", None),
            ("DiskPressure", "True", Some(TAINT_DISK_PRESSURE)),
            ("PIDPressure", "True", Some(TAINT_PID_PRESSURE)),
            (
                "NetworkUnavailable",
                "True",
                Some(TAINT_NETWORK_UNAVAILABLE),
            ),
            ("NetworkUnavailable", "False", None),
            ("SomethingElse", "True", None),
        ];
        for (t, s, want) in cases {
            assert_eq!(taint_key_for_condition(t, s), *want, "{t}={s}");
        }
        for (key, condition) in TAINT_TO_CONDITION {
            assert!(
                CONDITION_TO_TAINT
                    .iter()
                    .any(|(c, _, k)| c == condition && k == key),
                "{key} maps back to {condition}"
            );
        }
    }

    /// Upstream `TestTaintsNodeByCondition`: condition taints and the
    /// unschedulable taint follow the node; other taints are left alone.
    #[test]
    fn no_schedule_taints_follow_conditions() {
        let other = taint("dedicated", EFFECT_NO_SCHEDULE);
        struct Case {
            name: &'static str,
            node: Node,
            /// Taints to add and to remove, as `key:Effect`.
            add: Vec<&'static str>,
            remove: Vec<&'static str>,
        }
        let cases = vec![
            Case {
                name: "ready node, nothing to do",
                node: node_with(&[("Ready", "True")], vec![]).obj(),
                add: vec![],
                remove: vec![],
            },
            Case {
                name: "NetworkUnavailable is true",
                node: node_with(&[("Ready", "True"), ("NetworkUnavailable", "True")], vec![]).obj(),
                add: vec!["node.kubernetes.io/network-unavailable:NoSchedule"],
                remove: vec![],
            },
            Case {
                name: "NetworkUnavailable and MemoryPressure are true",
                node: node_with(
                    &[
                        ("Ready", "True"),
                        ("NetworkUnavailable", "True"),
                        ("MemoryPressure", "True"),
                    ],
                    vec![],
                )
                .obj(),
                add: vec![
                    "node.kubernetes.io/network-unavailable:NoSchedule",
                    "node.kubernetes.io/memory-pressure:NoSchedule",
                ],
                remove: vec![],
            },
            Case {
                name: "Ready is false",
                node: node_with(&[("Ready", "False")], vec![]).obj(),
                add: vec!["node.kubernetes.io/not-ready:NoSchedule"],
                remove: vec![],
            },
            Case {
                name: "Ready is unknown, stale not-ready taint is swapped",
                node: node_with(
                    &[("Ready", "Unknown")],
                    vec![taint(TAINT_NOT_READY, EFFECT_NO_SCHEDULE)],
                )
                .obj(),
                add: vec!["node.kubernetes.io/unreachable:NoSchedule"],
                remove: vec!["node.kubernetes.io/not-ready:NoSchedule"],
            },
            Case {
                name: "memory pressure cleared",
                node: node_with(
                    &[("Ready", "True"), ("MemoryPressure", "False")],
                    vec![
                        taint(TAINT_MEMORY_PRESSURE, EFFECT_NO_SCHEDULE),
                        other.clone(),
                    ],
                )
                .obj(),
                add: vec![],
                remove: vec!["node.kubernetes.io/memory-pressure:NoSchedule"],
            },
            Case {
                name: "cordoned",
                node: node_with(&[("Ready", "True")], vec![other.clone()])
                    .unschedulable(true)
                    .obj(),
                add: vec!["node.kubernetes.io/unschedulable:NoSchedule"],
                remove: vec![],
            },
            Case {
                name: "uncordoned",
                node: node_with(
                    &[("Ready", "True")],
                    vec![taint(TAINT_UNSCHEDULABLE, EFFECT_NO_SCHEDULE)],
                )
                .obj(),
                add: vec![],
                remove: vec!["node.kubernetes.io/unschedulable:NoSchedule"],
            },
            Case {
                name: "NoExecute health taints are not this pass's business",
                node: node_with(
                    &[("Ready", "True")],
                    vec![taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE)],
                )
                .obj(),
                add: vec![],
                remove: vec![],
            },
        ];
        for case in cases {
            let change = no_schedule_change(&case.node);
            assert_eq!(keys(&change.add), case.add, "{}: add", case.name);
            assert_eq!(keys(&change.remove), case.remove, "{}: remove", case.name);
        }
    }

    #[test]
    fn swapping_keeps_an_existing_taint_and_its_time() {
        let t1 = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let t2 = Timestamp::from_second(1_800_000_100).unwrap_or(Timestamp::UNIX_EPOCH);
        let mut unreachable = taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE);
        unreachable.time_added = Some(Time(t1));
        let other = taint("x", EFFECT_NO_EXECUTE);
        let swap = no_execute_swap("Unknown").unwrap_or_default();
        assert_eq!(
            apply_change(&[other.clone(), unreachable.clone()], &swap, t2),
            None,
            "already unreachable: nothing changes, timeAdded kept"
        );
        let added = apply_change(
            &[other.clone(), taint(TAINT_NOT_READY, EFFECT_NO_EXECUTE)],
            &swap,
            t2,
        )
        .unwrap_or_default();
        assert_eq!(
            keys(&added),
            ["x:NoExecute", "node.kubernetes.io/unreachable:NoExecute"]
        );
        assert_eq!(added[1].time_added, Some(Time(t2)));
        assert_eq!(no_execute_swap("True"), None);
        let lifted = apply_change(&added, &lift_no_execute_health_taints(), t2);
        assert_eq!(
            lifted.map(|t| keys(&t)),
            Some(vec!["x:NoExecute".to_string()])
        );
    }
}
