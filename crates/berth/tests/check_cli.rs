//! `berth check` run as a user runs it: the real binary on the seed
//! examples, asserting the answers the seed pages state, and on bad input,
//! asserting exit status 2 and a message naming the file and the problem.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn berth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .current_dir(examples())
        .output()
        .expect("the berth binary runs")
}

/// Runs `berth check -o json` and returns the report.
fn check_json(pod: &str, nodes: &[&str], extra: &[&str]) -> Value {
    let mut args = vec!["check", "-o", "json", "--pod", pod];
    for node in nodes {
        args.extend(["--node", node]);
    }
    args.extend(extra);
    let out = berth(&args);
    // 1 is the answer "fits no node", with the report printed all the same.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "berth {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the output is JSON")
}

/// The exit status answers the question: 0 when the pod fits some node, 1
/// when it fits none (the report still printed, stderr naming the pod),
/// and `--help` says so.
#[test]
fn exit_status_is_1_when_the_pod_fits_no_node() {
    struct Case {
        name: &'static str,
        nodes: &'static [&'static str],
        want: i32,
    }
    let cases = [
        Case {
            name: "a plain node fits",
            nodes: &["nodes/node1.yaml", "nodes/node-plain.yaml"],
            want: 0,
        },
        Case {
            name: "only the tainted node",
            nodes: &["nodes/node1.yaml"],
            want: 1,
        },
    ];
    for case in cases {
        let mut args = vec!["check", "--pod", "pods/pod-with-two-tolerations.yaml"];
        for node in case.nodes {
            args.extend(["--node", node]);
        }
        let out = berth(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(case.want),
            "{}: {stderr}",
            case.name
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("node1"),
            "{}: the report is printed",
            case.name
        );
        if case.want == 1 {
            assert!(
                stderr.contains("fits no node: default/two-tolerations"),
                "{}: {stderr}",
                case.name
            );
        }
    }
    let help = berth(&["check", "--help"]);
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("1 when a pod fits none"),
        "{}",
        String::from_utf8_lossy(&help.stdout)
    );
}

fn node<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("node {name} in {report}"))
}

#[test]
fn pod_with_two_tolerations_cannot_schedule_on_node1_but_keeps_running_there() {
    let report = check_json(
        "pods/pod-with-two-tolerations.yaml",
        &["nodes/node1.yaml", "nodes/node-plain.yaml"],
        &[],
    );
    assert_eq!(report["pod"], "default/two-tolerations");
    let node1 = node(&report, "node1");
    assert_eq!(node1["schedulable"], false);
    assert_eq!(
        node1["reasons"],
        json!(["node(s) had untolerated taint(s)"])
    );
    assert_eq!(
        node1["untoleratedTaints"],
        json!([{"key": "key2", "value": "value2", "effect": "NoSchedule"}])
    );
    // The only untolerated taint is NoSchedule: a running pod stays, and
    // the node agent admits it when bound there directly.
    assert_eq!(node1["ifRunning"], json!({"evict": "never"}));
    assert_eq!(node1["admitIfBound"], true);

    let plain = node(&report, "node-plain");
    assert_eq!(plain["schedulable"], true);
    assert_eq!(plain["reasons"], json!([]));
    assert_eq!(plain["untoleratedTaints"], json!([]));
}

#[test]
fn report_has_exactly_the_documented_fields() {
    let report = check_json("pods/pod-plain.yaml", &["nodes/node1.yaml"], &[]);
    let keys = |v: &Value| {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    assert_eq!(keys(&report), ["nodes", "pod"]);
    assert_eq!(
        keys(node(&report, "node1")),
        [
            "admitIfBound",
            "ifRunning",
            "name",
            "reasons",
            "schedulable",
            "taintTolerationScore",
            "untoleratedTaints"
        ]
    );
}

#[test]
fn pod_without_tolerations_is_evicted_now_and_rejected_by_the_agent_on_node1() {
    let report = check_json("pods/pod-plain.yaml", &["nodes/node1.yaml"], &[]);
    let node1 = node(&report, "node1");
    assert_eq!(node1["schedulable"], false);
    assert_eq!(node1["untoleratedTaints"].as_array().map(Vec::len), Some(3));
    assert_eq!(node1["ifRunning"], json!({"evict": "now"}));
    assert_eq!(node1["admitIfBound"], false);
}

#[test]
fn toleration_seconds_delay_the_eviction() {
    let report = check_json(
        "pods/pod-with-toleration-seconds.yaml",
        &["nodes/node1.yaml"],
        &[],
    );
    assert_eq!(
        node(&report, "node1")["ifRunning"],
        json!({"evict": "after", "seconds": 3600})
    );
}

#[test]
fn gt_900_tolerates_the_950_sla_taint() {
    let report = check_json(
        "pods/pod-with-numeric-toleration.yaml",
        &["nodes/node-sla.yaml"],
        &[],
    );
    let sla = node(&report, "node-sla");
    assert_eq!(sla["schedulable"], true);
    assert_eq!(sla["untoleratedTaints"], json!([]));
}

#[test]
fn lt_1000_tolerates_the_950_sla_taint() {
    let report = check_json(
        "pods/pod-with-lt-toleration.yaml",
        &["nodes/node-sla.yaml"],
        &[],
    );
    assert_eq!(node(&report, "node-sla")["schedulable"], true);
}

#[test]
fn gt_stops_matching_when_the_feature_gate_is_off() {
    let report = check_json(
        "pods/pod-with-numeric-toleration.yaml",
        &["nodes/node-sla.yaml"],
        &[
            "--feature-gates",
            "TaintTolerationComparisonOperators=false",
        ],
    );
    let sla = node(&report, "node-sla");
    assert_eq!(sla["schedulable"], false);
    assert_eq!(sla["reasons"], json!(["node(s) had untolerated taint(s)"]));
    assert_eq!(sla["untoleratedTaints"][0]["value"], "950");
}

#[test]
fn example_key_toleration_lets_the_seed_pod_onto_the_tainted_node() {
    let report = check_json(
        "pods/pod-with-toleration.yaml",
        &["nodes/node-example-key.yaml", "nodes/node1.yaml"],
        &[],
    );
    assert_eq!(report["pod"], "default/nginx");
    assert_eq!(node(&report, "node-example-key")["schedulable"], true);
    assert_eq!(node(&report, "node1")["schedulable"], false);
}

#[test]
fn several_node_files_and_lists_are_all_checked() {
    let dir = tempdir();
    let list = dir.join("nodes.yaml");
    std::fs::write(
        &list,
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}, status: {allocatable: {pods: '110'}}}\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"b\"}, \"status\": {\"allocatable\": {\"pods\": \"110\"}}}\n",
    )
    .expect("write");
    let list = list.to_string_lossy().into_owned();
    let report = check_json(
        "pods/pod-with-toleration.yaml",
        &[&list, "nodes/node1.yaml"],
        &[],
    );
    let names: Vec<&str> = report["nodes"]
        .as_array()
        .map(|n| n.iter().filter_map(|n| n["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["a", "b", "node1"]);
}

#[test]
fn text_output_is_a_table_with_a_row_per_node() {
    let out = berth(&[
        "check",
        "--pod",
        "pods/pod-with-two-tolerations.yaml",
        "--node",
        "nodes/node1.yaml",
        "--node",
        "nodes/node-plain.yaml",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "Pod default/two-tolerations: schedulable on 1 of 2 node(s)"
    );
    assert!(lines[1].starts_with("NODE "), "{text}");
    assert!(lines[2].starts_with("node1 "), "{text}");
    assert!(lines[2].contains("key2=value2:NoSchedule"), "{text}");
    assert!(
        lines[2].contains("node(s) had untolerated taint(s)"),
        "{text}"
    );
    assert!(lines[3].starts_with("node-plain "), "{text}");
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "berth-check-test-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Bad input: each case writes a pod file (or names a missing one) and
/// expects exit status 2 and these fragments on stderr.
#[test]
fn bad_input_exits_2_naming_the_file_and_the_problem() {
    let dir = tempdir();
    let cases: &[(&str, Option<&str>, &[&str])] = &[
        ("missing.yaml", None, &["missing.yaml", "No such file"]),
        (
            "broken.yaml",
            Some("kind: [Pod\n"),
            &["broken.yaml", "invalid YAML or JSON"],
        ),
        (
            "node-as-pod.yaml",
            Some("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"),
            &[
                "node-as-pod.yaml",
                "expected kind Pod (v1), found Node (v1)",
            ],
        ),
        (
            "empty.yaml",
            Some(""),
            &["empty.yaml", "no objects in the file"],
        ),
        (
            "bad-type.yaml",
            Some(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: []\n  tolerations: [{key: k, operator: Exists, tolerationSeconds: soon}]\n",
            ),
            &[
                "bad-type.yaml",
                "spec.tolerations[0].tolerationSeconds",
                "invalid type",
            ],
        ),
        (
            "bad-gt.yaml",
            Some(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: []\n  tolerations: [{key: k, operator: Gt, value: '0950', effect: NoSchedule}]\n",
            ),
            &[
                "bad-gt.yaml",
                "Pod \"p\" is invalid",
                "spec.tolerations[0].value: Invalid value: \"0950\"",
            ],
        ),
        (
            "bad-seconds.yaml",
            Some(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: []\n  tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 10}]\n",
            ),
            &[
                "bad-seconds.yaml",
                "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
            ],
        ),
        (
            "bad-quantity.yaml",
            Some(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, resources: {requests: {cpu: lots}}}]\n",
            ),
            &[
                "bad-quantity.yaml",
                "spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\"",
            ],
        ),
        (
            "no-name.yaml",
            Some("apiVersion: v1\nkind: Pod\nspec: {containers: []}\n"),
            &["no-name.yaml", "metadata.name: Required value"],
        ),
    ];
    for (file, content, fragments) in cases {
        let path = dir.join(file);
        if let Some(content) = content {
            std::fs::write(&path, content).expect("write");
        }
        let path = path.to_string_lossy().into_owned();
        let out = berth(&["check", "--pod", &path, "--node", "nodes/node1.yaml"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(out.stdout.is_empty(), "{file}: printed a report");
        assert!(!stderr.contains("panicked"), "{file}: {stderr}");
        for fragment in *fragments {
            assert!(
                stderr.contains(fragment),
                "{file}: missing {fragment:?} in {stderr}"
            );
        }
    }
}

#[test]
fn bad_node_taint_and_bad_flags_exit_2() {
    let dir = tempdir();
    let node = dir.join("bad-node.yaml");
    std::fs::write(
        &node,
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec:\n  taints: [{key: 'bad key', effect: NoSchedule}, {key: k, effect: Sometimes}]\n",
    )
    .expect("write");
    let node = node.to_string_lossy().into_owned();
    let out = berth(&["check", "--pod", "pods/pod-plain.yaml", "--node", &node]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad-node.yaml"), "{stderr}");
    assert!(
        stderr.contains("spec.taints[0].key: Invalid value: \"bad key\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("spec.taints[1].effect: Unsupported value: \"Sometimes\""),
        "{stderr}"
    );

    for flags in [
        &["--feature-gates", "NoSuchGate=true"][..],
        &[
            "--feature-gates",
            "TaintTolerationComparisonOperators=maybe",
        ][..],
        &["-o", "yaml"][..],
    ] {
        let mut args = vec![
            "check",
            "--pod",
            "pods/pod-plain.yaml",
            "--node",
            "nodes/node1.yaml",
        ];
        args.extend(flags);
        let out = berth(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
    }
}
