//! The row printers: ports of `pkg/printers/internalversion/printers.go`
//! (`printPod`, `printNode`, `printNamespace`, `printEvent`, `printLease`)
//! and of the default convertor for kinds with no printer, over v1 JSON.
//!
//! Upstream prints internal types converted from v1; the few places where
//! that conversion changes a value (a pod's `podIP`/`podIPs`, an event's
//! `reportingComponent`) are handled where they are read. Absent fields
//! read as Go zero values, so any JSON prints without panicking.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::{Value, json};

use super::duration::translate_timestamp_since;
use crate::json_path::{arr_at, at, bool_at, i64_at, str_at};

/// One printed row: the cells and the row conditions (`Completed` for
/// finished pods; empty otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct PrintedRow {
    /// Cell values, strings or integers, in column order.
    pub cells: Vec<Value>,
    /// `TableRowCondition`s as JSON.
    pub conditions: Vec<Value>,
}

impl PrintedRow {
    pub(crate) fn new(cells: Vec<Value>) -> Self {
        PrintedRow {
            cells,
            conditions: Vec::new(),
        }
    }
}

/// Go's zero `time.Time`, which `metav1.Time.IsZero` treats as unset.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// A `metav1.Time`/`MicroTime` field: `None` when absent, unparseable, or
/// Go's zero time (all print as `<unknown>` upstream).
pub(crate) fn time_at(v: &Value, path: &[&str]) -> Option<Timestamp> {
    let t: Timestamp = str_at(v, path).parse().ok()?;
    (t.as_second() != GO_ZERO_TIME_SECONDS || t.subsec_nanosecond() != 0).then_some(t)
}

/// The AGE cell: the time since `metadata.creationTimestamp`.
pub(crate) fn age(obj: &Value, now: Timestamp) -> String {
    translate_timestamp_since(time_at(obj, &["metadata", "creationTimestamp"]), now)
}

fn or_placeholder(s: &str, placeholder: &str) -> String {
    if s.is_empty() {
        placeholder.to_string()
    } else {
        s.to_string()
    }
}

/// A container state's branch (`running`, `waiting`, `terminated`), if set.
/// Go decodes `null` as an absent pointer, so only objects count.
fn state<'a>(status: &'a Value, state: &str, branch: &str) -> Option<&'a Value> {
    at(status, &[state, branch]).filter(|v| v.is_object())
}

/// The later of two optional times (`lastRestartDate.Before(&t)` updates).
fn later(current: Option<Timestamp>, candidate: Option<Timestamp>) -> Option<Timestamp> {
    match (current, candidate) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn last_termination(status: &Value) -> Option<Timestamp> {
    state(status, "lastState", "terminated").and_then(|t| time_at(t, &["finishedAt"]))
}

fn has_condition(pod: &Value, ty: &str, status: &str) -> bool {
    arr_at(pod, &["status", "conditions"])
        .iter()
        .any(|c| str_at(c, &["type"]) == ty && str_at(c, &["status"]) == status)
}

/// `isPodInitializedConditionTrue`: the first `Initialized` condition decides.
fn pod_initialized(pod: &Value) -> bool {
    arr_at(pod, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Initialized")
        .is_some_and(|c| str_at(c, &["status"]) == "True")
}

/// `printPod`. `wide` adds IP, NODE, NOMINATED NODE and READINESS GATES.
pub fn print_pod(pod: &Value, wide: bool, now: Timestamp) -> PrintedRow {
    let spec_init = arr_at(pod, &["spec", "initContainers"]);
    let mut total = arr_at(pod, &["spec", "containers"]).len();
    let mut ready = 0usize;
    let mut restarts: i64 = 0;
    let mut restartable_restarts: i64 = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_restart: Option<Timestamp> = None;

    let phase = str_at(pod, &["status", "phase"]);
    let mut reason = or_placeholder(str_at(pod, &["status", "reason"]), phase);

    if arr_at(pod, &["status", "conditions"]).iter().any(|c| {
        str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".to_string();
    }

    let mut conditions = Vec::new();
    match phase {
        "Succeeded" => conditions.push(json!({"type": "Completed", "status": "True",
            "reason": "Succeeded", "message": "The pod has completed successfully."})),
        "Failed" => conditions.push(json!({"type": "Completed", "status": "True",
            "reason": "Failed", "message": "The pod failed."})),
        _ => {}
    }

    // Sidecars (init containers with restartPolicy Always) count as
    // containers of the pod. Upstream indexes init containers by name (a
    // later duplicate wins); a status naming no spec container is not
    // restartable (the map lookup gives nil).
    let mut restartable_by_name: BTreeMap<&str, bool> = BTreeMap::new();
    for c in spec_init {
        let always = str_at(c, &["restartPolicy"]) == "Always";
        if always {
            total += 1;
        }
        restartable_by_name.insert(str_at(c, &["name"]), always);
    }
    let is_restartable = |status: &Value| {
        restartable_by_name
            .get(str_at(status, &["name"]))
            .copied()
            .unwrap_or(false)
    };

    let mut initializing = false;
    for (i, status) in arr_at(pod, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let count = i64_at(status, &["restartCount"]);
        restarts += count;
        last_restart = later(last_restart, last_termination(status));
        let restartable = is_restartable(status);
        if restartable {
            restartable_restarts += count;
            last_restartable_restart = later(last_restartable_restart, last_termination(status));
        }
        let terminated = state(status, "state", "terminated");
        let waiting = state(status, "state", "waiting");
        if terminated.is_some_and(|t| i64_at(t, &["exitCode"]) == 0) {
            continue;
        }
        if restartable && bool_at(status, &["started"]) {
            if bool_at(status, &["ready"]) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            let r = str_at(t, &["reason"]);
            reason = if !r.is_empty() {
                format!("Init:{r}")
            } else if i64_at(t, &["signal"]) != 0 {
                format!("Init:Signal:{}", i64_at(t, &["signal"]))
            } else {
                format!("Init:ExitCode:{}", i64_at(t, &["exitCode"]))
            };
        } else if let Some(r) = waiting
            .map(|w| str_at(w, &["reason"]))
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{r}");
        } else {
            reason = format!("Init:{}/{}", i, spec_init.len());
        }
        initializing = true;
        break;
    }

    if !initializing || pod_initialized(pod) {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for status in arr_at(pod, &["status", "containerStatuses"]).iter().rev() {
            restarts += i64_at(status, &["restartCount"]);
            last_restart = later(last_restart, last_termination(status));
            let waiting_reason = state(status, "state", "waiting").map(|w| str_at(w, &["reason"]));
            let terminated = state(status, "state", "terminated");
            if let Some(r) = waiting_reason.filter(|r| !r.is_empty()) {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                let r = str_at(t, &["reason"]);
                reason = if !r.is_empty() {
                    r.to_string()
                } else if i64_at(t, &["signal"]) != 0 {
                    format!("Signal:{}", i64_at(t, &["signal"]))
                } else {
                    format!("ExitCode:{}", i64_at(t, &["exitCode"]))
                };
            } else if bool_at(status, &["ready"]) && state(status, "state", "running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        // A pod with a completed container and a running one is not done.
        if reason == "Completed" && has_running {
            reason = if has_condition(pod, "Ready", "True") {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    let deleting = at(pod, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    if deleting && str_at(pod, &["status", "reason"]) == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".to_string();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => {
            format!(
                "{restarts} ({} ago)",
                translate_timestamp_since(Some(t), now)
            )
        }
        _ => restarts.to_string(),
    };

    let mut cells = vec![
        json!(str_at(pod, &["metadata", "name"])),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        json!(age(pod, now)),
    ];
    if wide {
        let gates = arr_at(pod, &["spec", "readinessGates"]);
        let readiness_gates = if gates.is_empty() {
            "<none>".to_string()
        } else {
            let conds = arr_at(pod, &["status", "conditions"]);
            let true_count = gates
                .iter()
                .filter(|g| {
                    let ty = str_at(g, &["conditionType"]);
                    // The first condition of the gate's type decides.
                    conds
                        .iter()
                        .find(|c| str_at(c, &["type"]) == ty)
                        .is_some_and(|c| str_at(c, &["status"]) == "True")
                })
                .count();
            format!("{true_count}/{}", gates.len())
        };
        cells.extend([
            json!(or_placeholder(crate::selectors::pod_ip(pod), "<none>")),
            json!(or_placeholder(str_at(pod, &["spec", "nodeName"]), "<none>")),
            json!(or_placeholder(
                str_at(pod, &["status", "nominatedNodeName"]),
                "<none>"
            )),
            json!(readiness_gates),
        ]);
    }
    PrintedRow { cells, conditions }
}

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` keys and the
/// `kubernetes.io/role` value, sorted and unique.
fn node_roles(node: &Value) -> Vec<String> {
    let mut roles = BTreeSet::new();
    if let Some(labels) = at(node, &["metadata", "labels"]).and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    roles.into_iter().collect()
}

fn node_address(node: &Value, ty: &str) -> String {
    arr_at(node, &["status", "addresses"])
        .iter()
        .find(|a| str_at(a, &["type"]) == ty)
        .map(|a| str_at(a, &["address"]).to_string())
        .unwrap_or_else(|| "<none>".to_string())
}

/// `printNode`. `wide` adds INTERNAL-IP, EXTERNAL-IP, OS-IMAGE,
/// KERNEL-VERSION and CONTAINER-RUNTIME.
pub fn print_node(node: &Value, wide: bool, now: Timestamp) -> PrintedRow {
    // Upstream fills a map by type, so the last Ready condition wins.
    let ready = arr_at(node, &["status", "conditions"])
        .iter()
        .rfind(|c| str_at(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if str_at(c, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if bool_at(node, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    let roles = node_roles(node).join(",");
    let info = |f: &str| str_at(node, &["status", "nodeInfo", f]);
    let mut cells = vec![
        json!(str_at(node, &["metadata", "name"])),
        json!(status.join(",")),
        json!(or_placeholder(&roles, "<none>")),
        json!(age(node, now)),
        json!(info("kubeletVersion")),
    ];
    if wide {
        cells.extend([
            json!(node_address(node, "InternalIP")),
            json!(node_address(node, "ExternalIP")),
            json!(or_placeholder(info("osImage"), "<unknown>")),
            json!(or_placeholder(info("kernelVersion"), "<unknown>")),
            json!(or_placeholder(info("containerRuntimeVersion"), "<unknown>")),
        ]);
    }
    PrintedRow::new(cells)
}

/// `printNamespace`.
pub fn print_namespace(ns: &Value, now: Timestamp) -> PrintedRow {
    PrintedRow::new(vec![
        json!(str_at(ns, &["metadata", "name"])),
        json!(str_at(ns, &["status", "phase"])),
        json!(age(ns, now)),
    ])
}

/// `printLease`.
pub fn print_lease(lease: &Value, now: Timestamp) -> PrintedRow {
    PrintedRow::new(vec![
        json!(str_at(lease, &["metadata", "name"])),
        json!(str_at(lease, &["spec", "holderIdentity"])),
        json!(age(lease, now)),
    ])
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

/// `printEvent`. `wide` inserts SUBOBJECT and SOURCE before MESSAGE and
/// appends FIRST SEEN, COUNT and NAME.
pub fn print_event(ev: &Value, wide: bool, now: Timestamp) -> PrintedRow {
    let first_ts = time_at(ev, &["firstTimestamp"]);
    let first = match first_ts {
        Some(t) => translate_timestamp_since(Some(t), now),
        None => translate_timestamp_since(time_at(ev, &["eventTime"]), now),
    };
    let mut last = match time_at(ev, &["lastTimestamp"]) {
        Some(t) => translate_timestamp_since(Some(t), now),
        None => first.clone(),
    };
    let mut count = i64_at(ev, &["count"]);
    match at(ev, &["series"]).filter(|s| s.is_object()) {
        Some(series) => {
            last = translate_timestamp_since(time_at(series, &["lastObservedTime"]), now);
            count = i64_at(series, &["count"]);
        }
        // Singleton events don't have a count set in the new API.
        None if count == 0 => count = 1,
        None => {}
    }
    let kind = str_at(ev, &["involvedObject", "kind"]).to_lowercase();
    let name = str_at(ev, &["involvedObject", "name"]);
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let message = str_at(ev, &["message"]).trim();
    let ty = str_at(ev, &["type"]);
    let reason = str_at(ev, &["reason"]);
    let cells = if wide {
        // `formatEventSource`: component (or reportingComponent), then
        // ", host" (or reportingInstance) when there is one.
        let component = first_non_empty(
            str_at(ev, &["source", "component"]),
            str_at(ev, &["reportingComponent"]),
        );
        let instance = first_non_empty(
            str_at(ev, &["source", "host"]),
            str_at(ev, &["reportingInstance"]),
        );
        let source = if instance.is_empty() {
            component.to_string()
        } else {
            format!("{component}, {instance}")
        };
        vec![
            json!(last),
            json!(ty),
            json!(reason),
            json!(target),
            json!(str_at(ev, &["involvedObject", "fieldPath"])),
            json!(source),
            json!(message),
            json!(first),
            json!(count),
            json!(str_at(ev, &["metadata", "name"])),
        ]
    } else {
        vec![
            json!(last),
            json!(ty),
            json!(reason),
            json!(target),
            json!(message),
        ]
    };
    PrintedRow::new(cells)
}

/// The default table convertor's row: the name and the creation time in
/// RFC 3339, UTC (Go's zero time when unset).
pub fn print_default(obj: &Value) -> PrintedRow {
    let created = time_at(obj, &["metadata", "creationTimestamp"])
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
    PrintedRow::new(vec![
        json!(str_at(obj, &["metadata", "name"])),
        json!(created),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;

    use crate::table::test_now as now;

    /// `now - secs` as the RFC 3339 string the API would store.
    fn ago(secs: i64) -> String {
        (now() - SignedDuration::from_secs(secs)).to_string()
    }

    fn cells(row: &PrintedRow) -> Vec<String> {
        row.cells
            .iter()
            .map(|c| match c {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    }

    /// Raw JSON rather than test_util's builders: the printers read
    /// untyped objects, and some cases are partial (a condition with no
    /// type) in ways a typed Node cannot hold.
    fn node(name: &str, spec: Value, status: Value, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": spec, "status": status})
    }

    #[test]
    fn node_status_column_follows_ready_condition_and_cordon() {
        // Upstream TestPrintNodeStatus.
        let ready = |s: &str| json!({"conditions": [{"type": "Ready", "status": s}]});
        let cordoned = json!({"unschedulable": true});
        let cases = [
            (node("foo1", json!({}), ready("True"), json!({})), "Ready"),
            (
                node("foo2", cordoned.clone(), ready("True"), json!({})),
                "Ready,SchedulingDisabled",
            ),
            (
                node(
                    "foo3",
                    json!({}),
                    json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "True"}]}),
                    json!({}),
                ),
                "Ready",
            ),
            (
                node("foo4", json!({}), ready("False"), json!({})),
                "NotReady",
            ),
            (
                node("foo5", cordoned.clone(), ready("False"), json!({})),
                "NotReady,SchedulingDisabled",
            ),
            (
                node(
                    "foo6",
                    json!({}),
                    json!({"conditions": [{"type": "InvalidValue", "status": "True"}]}),
                    json!({}),
                ),
                "Unknown",
            ),
            (
                node("foo7", json!({}), json!({"conditions": [{}]}), json!({})),
                "Unknown",
            ),
            (
                node(
                    "foo8",
                    cordoned.clone(),
                    json!({"conditions": [{"type": "InvalidValue", "status": "True"}]}),
                    json!({}),
                ),
                "Unknown,SchedulingDisabled",
            ),
            (
                node("foo9", cordoned, json!({"conditions": [{}]}), json!({})),
                "Unknown,SchedulingDisabled",
            ),
        ];
        for (n, status) in cases {
            let name = str_at(&n, &["metadata", "name"]).to_string();
            let row = print_node(&n, false, now());
            assert_eq!(
                cells(&row),
                [name.as_str(), status, "<none>", "<unknown>", ""],
                "{name}"
            );
        }
    }

    #[test]
    fn node_roles_come_from_role_labels() {
        // Upstream TestPrintNodeRole.
        let cases = [
            (json!({}), "<none>"),
            (
                json!({"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "",
                       "node-role.kubernetes.io/proxy": "", "kubernetes.io/role": "node"}),
                "control-plane,master,node,proxy",
            ),
            (json!({"kubernetes.io/role": "node"}), "node"),
            (
                json!({"node-role.kubernetes.io/": "", "kubernetes.io/role": ""}),
                "<none>",
            ),
        ];
        for (labels, roles) in cases {
            let row = print_node(&node("n", json!({}), json!({}), labels), false, now());
            assert_eq!(cells(&row)[2], roles);
        }
    }

    #[test]
    fn wide_node_columns_show_addresses_and_node_info() {
        // Upstream TestPrintNodeOSImage, TestPrintNodeKernelVersion,
        // TestPrintNodeContainerRuntimeVersion, TestPrintNodeExternalIP and
        // TestPrintNodeInternalIP.
        let ext = |a: &str| json!({"type": "ExternalIP", "address": a});
        let int = |a: &str| json!({"type": "InternalIP", "address": a});
        let cases = [
            (
                json!({"nodeInfo": {"osImage": "fake-os-image"}, "addresses": [ext("1.1.1.1")]}),
                [
                    "<none>",
                    "1.1.1.1",
                    "fake-os-image",
                    "<unknown>",
                    "<unknown>",
                ],
            ),
            (
                json!({"nodeInfo": {"kernelVersion": "fake-kernel-version"}, "addresses": [ext("1.1.1.1")]}),
                [
                    "<none>",
                    "1.1.1.1",
                    "<unknown>",
                    "fake-kernel-version",
                    "<unknown>",
                ],
            ),
            (
                json!({"nodeInfo": {"containerRuntimeVersion": "foo://1.2.3"}, "addresses": [ext("1.1.1.1")]}),
                ["<none>", "1.1.1.1", "<unknown>", "<unknown>", "foo://1.2.3"],
            ),
            (
                json!({"nodeInfo": {}, "addresses": [ext("1.1.1.1")]}),
                ["<none>", "1.1.1.1", "<unknown>", "<unknown>", "<unknown>"],
            ),
            (
                json!({"addresses": [int("1.1.1.1")]}),
                ["1.1.1.1", "<none>", "<unknown>", "<unknown>", "<unknown>"],
            ),
            (
                json!({"addresses": [ext("2.2.2.2"), int("3.3.3.3"), ext("4.4.4.4")]}),
                ["3.3.3.3", "2.2.2.2", "<unknown>", "<unknown>", "<unknown>"],
            ),
            (
                json!({"addresses": [int("2.2.2.2"), ext("3.3.3.3"), int("4.4.4.4")]}),
                ["2.2.2.2", "3.3.3.3", "<unknown>", "<unknown>", "<unknown>"],
            ),
        ];
        for (status, want) in cases {
            let row = print_node(
                &node("foo", json!({}), status.clone(), json!({})),
                true,
                now(),
            );
            let got = cells(&row);
            assert_eq!(got[..5], ["foo", "Unknown", "<none>", "<unknown>", ""]);
            assert_eq!(got[5..], want, "{status}");
        }
    }

    #[test]
    fn node_name_and_age_print_as_given() {
        // Upstream TestPrintNodeName, plus an age.
        let n = json!({"metadata": {"name": "127.0.0.1", "creationTimestamp": ago(3 * 86400)},
                       "status": {"nodeInfo": {"kubeletVersion": "v1.37.0"}}});
        assert_eq!(
            cells(&print_node(&n, false, now())),
            ["127.0.0.1", "Unknown", "<none>", "3d", "v1.37.0"]
        );
        assert_eq!(
            cells(&print_node(&json!({}), false, now())),
            ["", "Unknown", "<none>", "<unknown>", ""]
        );
    }

    /// Raw JSON rather than test_util's builders: the printers read
    /// untyped objects, and the cases' containers have no names, which a
    /// typed Pod cannot hold.
    fn pod(name: &str, spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec, "status": status})
    }

    fn containers(n: usize) -> Value {
        Value::Array((0..n).map(|_| json!({})).collect())
    }

    fn running(ready: bool, restarts: i64) -> Value {
        json!({"ready": ready, "restartCount": restarts, "state": {"running": {}}})
    }

    fn restarted(ready: bool, restarts: i64, state: Value, finished_secs_ago: i64) -> Value {
        json!({"ready": ready, "restartCount": restarts, "state": state,
               "lastState": {"terminated": {"finishedAt": ago(finished_secs_ago)}}})
    }

    const SUCCEEDED: &str = r#"{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}"#;
    const FAILED: &str =
        r#"{"type":"Completed","status":"True","reason":"Failed","message":"The pod failed."}"#;

    fn conditions(row: &PrintedRow) -> Vec<Value> {
        row.conditions.clone()
    }

    /// The expected row conditions, from their JSON text.
    fn expect(cond: Option<&str>) -> Vec<Value> {
        cond.into_iter()
            .map(|s| serde_json::from_str(s).unwrap_or_default())
            .collect()
    }

    #[test]
    fn pod_status_ready_and_restarts_follow_print_pod() {
        // Upstream TestPrintPod.
        let deleted = json!({"name": "x", "deletionTimestamp": ago(10)});
        let with_meta = |mut p: Value, name: &str| {
            p["metadata"] = deleted.clone();
            p["metadata"]["name"] = json!(name);
            p
        };
        let day = 86_400;
        let cases: Vec<(Value, [&str; 4], Option<&str>)> = vec![
            (
                pod(
                    "test1",
                    json!({"containers": containers(2)}),
                    json!({"phase": "podPhase",
                    "containerStatuses": [running(true, 3), {"restartCount": 3}]}),
                ),
                ["test1", "1/2", "podPhase", "6"],
                None,
            ),
            (
                pod(
                    "test2",
                    json!({"containers": containers(2)}),
                    json!({"phase": "podPhase",
                    "containerStatuses": [running(true, 3),
                        {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}),
                ),
                ["test2", "1/2", "ContainerWaitingReason", "6"],
                None,
            ),
            (
                pod(
                    "test3",
                    json!({"containers": containers(2)}),
                    json!({"phase": "podPhase",
                    "containerStatuses": [
                        {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
                        {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3}]}),
                ),
                ["test3", "0/2", "ContainerWaitingReason", "6"],
                None,
            ),
            (
                pod(
                    "test4",
                    json!({"containers": containers(2)}),
                    json!({"phase": "podPhase",
                    "containerStatuses": [running(true, 3), {"ready": true, "restartCount": 3}]}),
                ),
                ["test4", "1/2", "podPhase", "6"],
                None,
            ),
            (
                pod(
                    "test5",
                    json!({"containers": containers(2)}),
                    json!({"reason": "podReason", "phase": "podPhase",
                    "containerStatuses": [running(true, 3), {"ready": true, "restartCount": 3}]}),
                ),
                ["test5", "1/2", "podReason", "6"],
                None,
            ),
            (
                pod(
                    "test6",
                    json!({"containers": containers(2)}),
                    json!({"phase": "Running",
                    "containerStatuses": [
                        {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                        running(true, 3)]}),
                ),
                ["test6", "1/2", "NotReady", "6"],
                None,
            ),
            (
                pod(
                    "test6",
                    json!({"containers": containers(2)}),
                    json!({"phase": "Running",
                    "containerStatuses": [
                        {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                        running(true, 3)],
                    "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": ago(0)}]}),
                ),
                ["test6", "1/2", "Running", "6"],
                None,
            ),
            (
                pod(
                    "test7",
                    json!({"initContainers": containers(1), "containers": containers(1)}),
                    json!({"phase": "podPhase",
                    "initContainerStatuses": [restarted(false, 3, json!({"running": {}}), 10)],
                    "containerStatuses": [{"ready": false, "restartCount": 0, "state": {"waiting": {}}}]}),
                ),
                ["test7", "0/1", "Init:0/1", "3 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test8",
                    json!({"initContainers": containers(2), "containers": containers(1)}),
                    json!({"phase": "podPhase",
                    "initContainerStatuses": [restarted(false, 3, json!({"running": {}}), 10),
                        {"ready": false, "state": {"waiting": {}}}],
                    "containerStatuses": [{"ready": false, "state": {"waiting": {}}}]}),
                ),
                ["test8", "0/1", "Init:0/2", "3 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test9",
                    json!({"initContainers": containers(2), "containers": containers(1)}),
                    json!({"phase": "podPhase",
                    "initContainerStatuses": [{"ready": false, "state": {"terminated": {}}},
                        restarted(false, 3, json!({"running": {}}), 10)],
                    "containerStatuses": [{"ready": false, "state": {"waiting": {}}}]}),
                ),
                ["test9", "0/1", "Init:1/2", "3 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test10",
                    json!({"initContainers": containers(2), "containers": containers(1)}),
                    json!({"phase": "podPhase",
                    "initContainerStatuses": [restarted(false, 2, json!({"terminated": {}}), 120),
                        restarted(false, 3, json!({"running": {}}), 10)],
                    "containerStatuses": [{"ready": false, "state": {"waiting": {}}}]}),
                ),
                ["test10", "0/1", "Init:1/2", "5 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test11",
                    json!({"initContainers": containers(1), "containers": containers(1)}),
                    json!({"phase": "Running",
                    "initContainerStatuses": [restarted(false, 2, json!({"terminated": {}}), 120)],
                    "containerStatuses": [restarted(false, 4, json!({"running": {}}), 20)]}),
                ),
                ["test11", "0/1", "Running", "4 (20s ago)"],
                None,
            ),
            (
                pod(
                    "test12",
                    json!({"containers": containers(1)}),
                    json!({"phase": "Running",
                    "containerStatuses": [restarted(true, 3, json!({"running": {}}), 5 * day)]}),
                ),
                ["test12", "1/1", "Running", "3 (5d ago)"],
                None,
            ),
            (
                pod(
                    "test13",
                    json!({"containers": containers(2)}),
                    json!({"phase": "Running",
                    "containerStatuses": [running(true, 0), restarted(true, 3, json!({"running": {}}), 10 * day)]}),
                ),
                ["test13", "2/2", "Running", "3 (10d ago)"],
                None,
            ),
            (
                pod(
                    "test14",
                    json!({"containers": containers(2)}),
                    json!({"phase": "Running",
                    "containerStatuses": [restarted(true, 6, json!({"running": {}}), 5 * day),
                        restarted(true, 3, json!({"running": {}}), 20 * day)]}),
                ),
                ["test14", "2/2", "Running", "9 (5d ago)"],
                None,
            ),
            (
                pod(
                    "test15",
                    json!({"containers": containers(2)}),
                    json!({"phase": "podPhase",
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
                ),
                ["test15", "0/2", "SchedulingGated", "0"],
                None,
            ),
            (
                pod(
                    "test16",
                    json!({"containers": containers(1)}),
                    json!({"phase": "Succeeded",
                    "containerStatuses": [{"ready": false, "restartCount": 0,
                        "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
                ),
                ["test16", "0/1", "Completed", "0"],
                Some(SUCCEEDED),
            ),
            (
                pod(
                    "test17",
                    json!({"containers": containers(1)}),
                    json!({"phase": "Failed",
                    "containerStatuses": [{"ready": false, "restartCount": 0,
                        "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
                ),
                ["test17", "0/1", "Error", "0"],
                Some(FAILED),
            ),
            (
                with_meta(
                    pod(
                        "",
                        json!({"containers": containers(1)}),
                        json!({"phase": "Succeeded",
                    "containerStatuses": [{"ready": false, "restartCount": 0,
                        "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
                    ),
                    "test18",
                ),
                ["test18", "0/1", "Completed", "0"],
                Some(SUCCEEDED),
            ),
            (
                with_meta(
                    pod(
                        "",
                        json!({"containers": containers(1)}),
                        json!({"phase": "Running",
                    "containerStatuses": [running(false, 0)]}),
                    ),
                    "test19",
                ),
                ["test19", "0/1", "Terminating", "0"],
                None,
            ),
            (
                with_meta(
                    pod(
                        "",
                        json!({"containers": containers(1)}),
                        json!({"phase": "Pending"}),
                    ),
                    "test20",
                ),
                ["test20", "0/1", "Terminating", "0"],
                None,
            ),
        ];
        for (p, want, cond) in cases {
            let row = print_pod(&p, false, now());
            let got = cells(&row);
            assert_eq!(got[..4], want, "{p}");
            assert_eq!(got[4], "<unknown>");
            assert_eq!(conditions(&row), expect(cond), "{p}");
        }
    }

    #[test]
    fn pod_restartable_init_containers_count_as_containers() {
        // Upstream TestPrintPodWithRestartableInitContainer.
        let sidecars = json!({"initContainers": [
            {"name": "restartable-init-1", "restartPolicy": "Always"},
            {"name": "restartable-init-2", "restartPolicy": "Always"}], "containers": containers(1)});
        let init = |name: &str, v: Value| {
            let mut v = v;
            v["name"] = json!(name);
            v
        };
        let cases: Vec<(Value, [&str; 4], Option<&str>)> = vec![
            (
                pod(
                    "test1",
                    sidecars.clone(),
                    json!({"phase": "Pending",
                    "initContainerStatuses": [
                        init("restartable-init-1", json!({"ready": false, "restartCount": 3, "state": {"running": {}},
                            "started": false, "lastState": {"terminated": {"finishedAt": ago(10)}}})),
                        init("restartable-init-2", json!({"ready": false, "state": {"waiting": {}}, "started": false}))],
                    "containerStatuses": [{"ready": false, "restartCount": 0, "state": {"waiting": {}}}],
                    "conditions": [{"type": "Initialized", "status": "False"}]}),
                ),
                ["test1", "0/3", "Init:0/2", "3 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test1",
                    sidecars.clone(),
                    json!({"phase": "Pending",
                    "initContainerStatuses": [
                        init("restartable-init-1", json!({"ready": false, "restartCount": 3, "state": {"running": {}},
                            "started": true, "lastState": {"terminated": {"finishedAt": ago(10)}}})),
                        init("restartable-init-2", json!({"ready": false, "state": {"running": {}}, "started": false}))],
                    "containerStatuses": [{"ready": false, "restartCount": 0, "state": {"waiting": {}}}],
                    "conditions": [{"type": "Initialized", "status": "False"}]}),
                ),
                ["test1", "0/3", "Init:1/2", "3 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test2",
                    sidecars.clone(),
                    json!({"phase": "Running",
                    "initContainerStatuses": [
                        init("restartable-init-1", json!({"ready": false, "restartCount": 3, "state": {"running": {}},
                            "started": true, "lastState": {"terminated": {"finishedAt": ago(10)}}})),
                        init("restartable-init-2", json!({"ready": false, "state": {"running": {}}, "started": true}))],
                    "containerStatuses": [restarted(true, 4, json!({"running": {}}), 20)],
                    "conditions": [{"type": "Initialized", "status": "True"}]}),
                ),
                ["test2", "1/3", "Running", "7 (10s ago)"],
                None,
            ),
            (
                pod(
                    "test3",
                    sidecars.clone(),
                    json!({"phase": "Succeeded",
                    "initContainerStatuses": [
                        init("restartable-init-1", json!({"ready": false, "restartCount": 3,
                            "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                            "started": false, "lastState": {"terminated": {"finishedAt": ago(10)}}})),
                        init("restartable-init-2", json!({"ready": false,
                            "state": {"terminated": {"reason": "Error", "exitCode": 137}}, "started": false}))],
                    "containerStatuses": [restarted(false, 4, json!({"terminated": {"reason": "Completed", "exitCode": 0}}), 20)],
                    "conditions": [{"type": "Initialized", "status": "True"}]}),
                ),
                ["test3", "0/3", "Completed", "7 (10s ago)"],
                Some(SUCCEEDED),
            ),
            (
                pod(
                    "test4",
                    json!({"initContainers": [{"name": "init1", "image": "initimage"},
                        {"name": "sidecar1", "image": "sidecarimage", "restartPolicy": "Always"}],
                        "containers": [{"name": "container1", "image": "containerimage"}]}),
                    json!({"phase": "Running",
                        "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
                        "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}]}),
                ),
                ["test4", "0/2", "Init:0/2", "0"],
                None,
            ),
        ];
        for (p, want, cond) in cases {
            let row = print_pod(&p, false, now());
            assert_eq!(cells(&row)[..4], want, "{p}");
            assert_eq!(conditions(&row), expect(cond));
        }
    }

    #[test]
    fn wide_pod_columns_show_ip_node_nomination_and_gates() {
        // Upstream TestPrintPodwide.
        let gates = json!([{"conditionType": "condition1"}, {"conditionType": "condition2"},
                           {"conditionType": "condition3"}]);
        let conds = json!([{"type": "condition1", "status": "False"}, {"type": "condition2", "status": "True"}]);
        let statuses = json!([running(true, 3), {"restartCount": 3}]);
        let cases = [
            (
                pod(
                    "test1",
                    json!({"containers": containers(2), "nodeName": "test1", "readinessGates": gates}),
                    json!({"conditions": conds, "phase": "podPhase", "podIPs": [{"ip": "1.1.1.1"}],
                           "containerStatuses": statuses, "nominatedNodeName": "node1"}),
                ),
                [
                    "test1",
                    "1/2",
                    "podPhase",
                    "6",
                    "<unknown>",
                    "1.1.1.1",
                    "test1",
                    "node1",
                    "1/3",
                ],
            ),
            (
                pod(
                    "test1",
                    json!({"containers": containers(2), "nodeName": "test1", "readinessGates": gates}),
                    json!({"conditions": conds, "phase": "podPhase",
                           "podIPs": [{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
                           "containerStatuses": statuses, "nominatedNodeName": "node1"}),
                ),
                [
                    "test1",
                    "1/2",
                    "podPhase",
                    "6",
                    "<unknown>",
                    "1.1.1.1",
                    "test1",
                    "node1",
                    "1/3",
                ],
            ),
            (
                pod(
                    "test2",
                    json!({"containers": containers(2), "nodeName": ""}),
                    json!({"phase": "podPhase", "containerStatuses": [running(true, 3),
                        {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}),
                ),
                [
                    "test2",
                    "1/2",
                    "ContainerWaitingReason",
                    "6",
                    "<unknown>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>",
                ],
            ),
        ];
        for (p, want) in cases {
            assert_eq!(cells(&print_pod(&p, true, now())), want);
        }
    }

    #[test]
    fn pod_row_conditions_mark_finished_pods() {
        // Upstream TestPrintPodConditions.
        let statuses = json!([running(true, 3), {"restartCount": 3}]);
        for (phase, cond) in [
            ("Running", None),
            ("Succeeded", Some(SUCCEEDED)),
            ("Failed", Some(FAILED)),
        ] {
            let p = pod(
                "test1",
                json!({"containers": containers(2)}),
                json!({"phase": phase, "containerStatuses": statuses}),
            );
            let row = print_pod(&p, false, now());
            assert_eq!(cells(&row), ["test1", "1/2", phase, "6", "<unknown>"]);
            assert_eq!(conditions(&row), expect(cond));
        }
    }

    #[test]
    fn pod_edge_cases_print_like_upstream() {
        let cases = [
            // Signals and exit codes of terminated containers without a reason.
            (
                json!({"phase": "Running", "containerStatuses": [{"state": {"terminated": {"signal": 9, "exitCode": 137}}}]}),
                "Signal:9",
            ),
            (
                json!({"phase": "Running", "containerStatuses": [{"state": {"terminated": {"exitCode": 2}}}]}),
                "ExitCode:2",
            ),
            (
                json!({"phase": "Pending", "initContainerStatuses": [{"state": {"terminated": {"exitCode": 3}}}]}),
                "Init:ExitCode:3",
            ),
            (
                json!({"phase": "Pending", "initContainerStatuses": [{"state": {"terminated": {"signal": 15, "exitCode": 1}}}]}),
                "Init:Signal:15",
            ),
            (
                json!({"phase": "Pending", "initContainerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
                "Init:CrashLoopBackOff",
            ),
            (
                json!({"phase": "Pending", "initContainerStatuses": [{"state": {"waiting": {"reason": "PodInitializing"}}}]}),
                "Init:0/0",
            ),
        ];
        for (status, reason) in cases {
            let row = print_pod(&pod("p", json!({}), status.clone()), false, now());
            assert_eq!(cells(&row)[2], reason, "{status}");
        }
        // A deleted pod on a lost node is Unknown.
        let lost = json!({"metadata": {"name": "p", "deletionTimestamp": ago(1)},
                          "status": {"phase": "Running", "reason": "NodeLost"}});
        assert_eq!(cells(&print_pod(&lost, false, now()))[2], "Unknown");
        // The singular podIP stands in for an empty podIPs (v1 conversion).
        let legacy = pod("p", json!({}), json!({"podIP": "10.0.0.7"}));
        assert_eq!(cells(&print_pod(&legacy, true, now()))[5], "10.0.0.7");
        // Age of a pod created 70 minutes ago.
        let aged = json!({"metadata": {"name": "p", "creationTimestamp": ago(70 * 60)}});
        assert_eq!(cells(&print_pod(&aged, false, now()))[4], "70m");
    }

    #[test]
    fn garbage_json_prints_without_panicking() {
        for v in [
            json!(null),
            json!(3),
            json!("x"),
            json!([]),
            json!({"status": {"containerStatuses": 4}}),
            json!({"metadata": {"creationTimestamp": "not a time", "labels": []}, "spec": {"initContainers": [1, null]},
                         "status": {"initContainerStatuses": [null, {"state": null}], "conditions": "x"}}),
        ] {
            for wide in [false, true] {
                let _ = print_pod(&v, wide, now());
                let _ = print_node(&v, wide, now());
                let _ = print_event(&v, wide, now());
            }
            let _ = print_namespace(&v, now());
            let _ = print_lease(&v, now());
            let _ = print_default(&v);
        }
    }

    #[test]
    fn events_namespaces_leases_and_default_rows() {
        let ev = json!({
            "metadata": {"name": "web.17a", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
            "reason": "Pulled", "message": "  Image pulled \n", "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(300), "lastTimestamp": ago(30), "count": 4
        });
        assert_eq!(
            cells(&print_event(&ev, false, now())),
            ["30s", "Normal", "Pulled", "pod/web", "Image pulled"]
        );
        assert_eq!(
            cells(&print_event(&ev, true, now())),
            [
                "30s",
                "Normal",
                "Pulled",
                "pod/web",
                "spec.containers{app}",
                "kubelet, node-1",
                "Image pulled",
                "5m",
                "4",
                "web.17a"
            ]
        );
        // New-style event: eventTime, series, reportingComponent/Instance.
        let ev = json!({
            "metadata": {"name": "n"}, "involvedObject": {"kind": "Node"}, "type": "Warning",
            "eventTime": "2024-06-01T11:59:00.123456Z", "reportingComponent": "berth-scheduler",
            "reportingInstance": "berth-0", "series": {"count": 7, "lastObservedTime": ago(5)}
        });
        let got = cells(&print_event(&ev, true, now()));
        assert_eq!(
            got,
            [
                "5s",
                "Warning",
                "",
                "node",
                "",
                "berth-scheduler, berth-0",
                "",
                "59s",
                "7",
                "n"
            ]
        );
        // Singleton events without a count show 1; no times at all is unknown.
        let got = cells(&print_event(
            &json!({"involvedObject": {"kind": "Pod"}}),
            true,
            now(),
        ));
        assert_eq!(got[0], "<unknown>");
        assert_eq!(got[7], "<unknown>");
        assert_eq!(got[8], "1");

        let ns = json!({"metadata": {"name": "default", "creationTimestamp": ago(49 * 3600)}, "status": {"phase": "Active"}});
        assert_eq!(
            cells(&print_namespace(&ns, now())),
            ["default", "Active", "2d1h"]
        );
        let lease = json!({"metadata": {"name": "n1", "creationTimestamp": ago(190)}, "spec": {"holderIdentity": "n1"}});
        assert_eq!(cells(&print_lease(&lease, now())), ["n1", "n1", "3m10s"]);
        assert_eq!(
            cells(&print_lease(&json!({"metadata": {"name": "l"}}), now())),
            ["l", "", "<unknown>"]
        );

        let cm =
            json!({"metadata": {"name": "cfg", "creationTimestamp": "2024-05-01T10:00:00+02:00"}});
        assert_eq!(cells(&print_default(&cm)), ["cfg", "2024-05-01T08:00:00Z"]);
        assert_eq!(
            cells(&print_default(&json!({}))),
            ["", "0001-01-01T00:00:00Z"]
        );
    }
}
