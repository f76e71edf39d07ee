//! The row printers of the apps/v1 kinds: ports of `printDeployment`,
//! `printReplicaSet`, `printDaemonSet`, `printStatefulSet` and
//! `printControllerRevision` (`pkg/printers/internalversion/printers.go`),
//! over v1 JSON. Every printer prints the wide cells (the server always
//! does); absent fields read as Go zero values.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::printers::{PrintedRow, age};
use crate::json_path::{arr_at, at, bool_at, i64_at, str_at};
use crate::selectors::spec_selector_query;

/// `layoutContainerCells`: the template's container names and images,
/// comma-separated.
fn container_cells(workload: &Value) -> [Value; 2] {
    let containers = arr_at(workload, &["spec", "template", "spec", "containers"]);
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| str_at(c, &[field]))
            .collect::<Vec<_>>()
            .join(",")
    };
    [json!(join("name")), json!(join("image"))]
}

/// `metav1.FormatLabelSelector`: `<none>` for a selector selecting
/// everything, `<error>` for one that does not parse.
fn format_label_selector(workload: &Value) -> String {
    match spec_selector_query(workload) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(_) => "<error>".to_string(),
    }
}

/// `printDeployment`: NAME READY UP-TO-DATE AVAILABLE AGE, wide
/// CONTAINERS IMAGES SELECTOR.
pub fn print_deployment(deployment: &Value, now: Timestamp) -> PrintedRow {
    let desired = i64_at(deployment, &["spec", "replicas"]);
    let status = |field: &str| i64_at(deployment, &["status", field]);
    let [containers, images] = container_cells(deployment);
    let selector = spec_selector_query(deployment).unwrap_or_else(|_| "<invalid>".to_string());
    PrintedRow::new(vec![
        json!(str_at(deployment, &["metadata", "name"])),
        json!(format!("{}/{desired}", status("readyReplicas"))),
        json!(status("updatedReplicas")),
        json!(status("availableReplicas")),
        json!(age(deployment, now)),
        containers,
        images,
        json!(selector),
    ])
}

/// `printReplicaSet`: NAME DESIRED CURRENT READY AGE, wide CONTAINERS
/// IMAGES SELECTOR.
pub fn print_replica_set(rs: &Value, now: Timestamp) -> PrintedRow {
    let [containers, images] = container_cells(rs);
    PrintedRow::new(vec![
        json!(str_at(rs, &["metadata", "name"])),
        json!(i64_at(rs, &["spec", "replicas"])),
        json!(i64_at(rs, &["status", "replicas"])),
        json!(i64_at(rs, &["status", "readyReplicas"])),
        json!(age(rs, now)),
        containers,
        images,
        json!(format_label_selector(rs)),
    ])
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, `<none>` when empty.
fn format_labels(labels: Option<&Value>) -> String {
    let pairs: Vec<String> = labels
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    }
}

/// `printDaemonSet`: NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE
/// SELECTOR AGE, wide CONTAINERS IMAGES SELECTOR.
pub fn print_daemon_set(ds: &Value, now: Timestamp) -> PrintedRow {
    let status = |field: &str| json!(i64_at(ds, &["status", field]));
    let node_selector = at(ds, &["spec", "template", "spec", "nodeSelector"]);
    let [containers, images] = container_cells(ds);
    PrintedRow::new(vec![
        json!(str_at(ds, &["metadata", "name"])),
        status("desiredNumberScheduled"),
        status("currentNumberScheduled"),
        status("numberReady"),
        status("updatedNumberScheduled"),
        status("numberAvailable"),
        json!(format_labels(node_selector)),
        json!(age(ds, now)),
        containers,
        images,
        json!(format_label_selector(ds)),
    ])
}

/// `printStatefulSet`: NAME READY AGE, wide CONTAINERS IMAGES.
pub fn print_stateful_set(set: &Value, now: Timestamp) -> PrintedRow {
    let [containers, images] = container_cells(set);
    PrintedRow::new(vec![
        json!(str_at(set, &["metadata", "name"])),
        json!(format!(
            "{}/{}",
            i64_at(set, &["status", "readyReplicas"]),
            i64_at(set, &["spec", "replicas"])
        )),
        json!(age(set, now)),
        containers,
        images,
    ])
}

/// `printControllerRevision`: NAME CONTROLLER REVISION AGE; the
/// controller as `formatResourceName` writes it (`statefulset.apps/web`),
/// `<none>` without one.
pub fn print_controller_revision(revision: &Value, now: Timestamp) -> PrintedRow {
    let controller = arr_at(revision, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| bool_at(r, &["controller"]))
        .map(|r| {
            let group = str_at(r, &["apiVersion"])
                .rsplit_once('/')
                .map_or("", |(group, _)| group);
            let kind = str_at(r, &["kind"]);
            let group_kind = if group.is_empty() {
                kind.to_string()
            } else {
                format!("{kind}.{group}")
            };
            let name = str_at(r, &["name"]);
            if group_kind.is_empty() {
                name.to_string()
            } else {
                format!("{}/{name}", group_kind.to_lowercase())
            }
        })
        .unwrap_or_else(|| "<none>".to_string());
    PrintedRow::new(vec![
        json!(str_at(revision, &["metadata", "name"])),
        json!(controller),
        json!(i64_at(revision, &["revision"])),
        json!(age(revision, now)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_now as now;

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx:1.27"},
                                       {"name": "log", "image": "busybox"}]}})
    }

    /// Upstream `TestPrintDeployment`, `TestPrintReplicaSet`,
    /// `TestPrintDaemonSet`, `TestPrintStatefulSet`,
    /// `TestPrintControllerRevision`, as cells (wide included).
    #[test]
    fn workloads_print_upstreams_cells() {
        struct Case {
            name: &'static str,
            print: fn(&Value, Timestamp) -> PrintedRow,
            object: Value,
            want: Value,
        }
        let created = "2024-06-01T11:00:00Z";
        let cases = [
            Case {
                name: "a deployment",
                print: print_deployment,
                object: json!({"metadata": {"name": "test1", "creationTimestamp": created},
                    "spec": {"replicas": 5, "template": template(),
                             "selector": {"matchLabels": {"app": "web"}}},
                    "status": {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1,
                               "readyReplicas": 1, "unavailableReplicas": 4}}),
                want: json!([
                    "test1",
                    "1/5",
                    2,
                    1,
                    "60m",
                    "web,log",
                    "nginx:1.27,busybox",
                    "app=web"
                ]),
            },
            Case {
                name: "a deployment with an expression selector and no status",
                print: print_deployment,
                object: json!({"metadata": {"name": "test2"},
                    "spec": {"replicas": 0, "template": template(),
                             "selector": {"matchExpressions": [
                                 {"key": "tier", "operator": "In", "values": ["b", "a"]},
                                 {"key": "app", "operator": "Exists"}]}}}),
                want: json!([
                    "test2",
                    "0/0",
                    0,
                    0,
                    "<unknown>",
                    "web,log",
                    "nginx:1.27,busybox",
                    "app,tier in (a,b)"
                ]),
            },
            Case {
                name: "a replica set",
                print: print_replica_set,
                object: json!({"metadata": {"name": "test1", "creationTimestamp": created},
                    "spec": {"replicas": 5, "template": template(),
                             "selector": {"matchLabels": {"app": "web"}}},
                    "status": {"replicas": 5, "readyReplicas": 2}}),
                want: json!([
                    "test1",
                    5,
                    5,
                    2,
                    "60m",
                    "web,log",
                    "nginx:1.27,busybox",
                    "app=web"
                ]),
            },
            Case {
                name: "a replica set selecting everything",
                print: print_replica_set,
                object: json!({"metadata": {"name": "all"}, "spec": {"selector": {}}}),
                want: json!(["all", 0, 0, 0, "<unknown>", "", "", "<none>"]),
            },
            Case {
                name: "a daemon set",
                print: print_daemon_set,
                object: json!({"metadata": {"name": "test1", "creationTimestamp": created},
                    "spec": {"template": {"spec": {"nodeSelector": {"zone": "a", "disk": "ssd"},
                                                   "containers": [{"name": "agent", "image": "agent:1"}]}},
                             "selector": {"matchLabels": {"app": "agent"}}},
                    "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 3,
                               "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 0}}),
                want: json!([
                    "test1",
                    3,
                    2,
                    1,
                    2,
                    0,
                    "disk=ssd,zone=a",
                    "60m",
                    "agent",
                    "agent:1",
                    "app=agent"
                ]),
            },
            Case {
                name: "a daemon set without a node selector",
                print: print_daemon_set,
                object: json!({"metadata": {"name": "test2"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}}),
                want: json!(["test2", 0, 0, 0, 0, 0, "<none>", "<unknown>", "", "", "a=b"]),
            },
            Case {
                name: "a stateful set",
                print: print_stateful_set,
                object: json!({"metadata": {"name": "test1", "creationTimestamp": created},
                    "spec": {"replicas": 5, "template": template()},
                    "status": {"replicas": 5, "readyReplicas": 2}}),
                want: json!(["test1", "2/5", "60m", "web,log", "nginx:1.27,busybox"]),
            },
            Case {
                name: "a controller revision of a stateful set",
                print: print_controller_revision,
                object: json!({"metadata": {"name": "test1", "creationTimestamp": created,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": "not-the-controller", "uid": "a"},
                        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "b",
                         "controller": true}]},
                    "revision": 3}),
                want: json!(["test1", "statefulset.apps/web", 3, "60m"]),
            },
            Case {
                name: "a controller revision without a controller",
                print: print_controller_revision,
                object: json!({"metadata": {"name": "test2"}, "revision": 1}),
                want: json!(["test2", "<none>", 1, "<unknown>"]),
            },
        ];
        for case in cases {
            let row = (case.print)(&case.object, now());
            assert_eq!(json!(row.cells), case.want, "{}", case.name);
        }
    }
}
