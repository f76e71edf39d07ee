//! The seed pages' walkthrough, done with the real kubectl (v1.37,
//! `common::kubectl`) against a real `berth server` on a free loopback port
//! with a fresh data dir.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::Backend;
use common::kubectl::{Cluster, kubectl_binary};

/// kubectl's output without terminal colours (`cluster-info` colours its
/// lines whatever the output is).
fn without_colours(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn example(path: &str) -> String {
    examples().join(path).to_string_lossy().into_owned()
}

fn taints(cluster: &Cluster, node: &str) -> Vec<Value> {
    cluster.json(&["get", "node", node])["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `berth COMMAND ARGS...` against the cluster, as its admin.
fn berth_command(cluster: &Cluster, command: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_berth"))
        .arg(command)
        .args(args)
        .env("KUBECONFIG", &cluster.server.kubeconfig)
        .output()
        .expect("berth runs")
}

fn has_taint(taints: &[Value], key: &str, value: Option<&str>, effect: &str) -> bool {
    taints
        .iter()
        .any(|t| t["key"] == key && t["effect"] == effect && t["value"].as_str() == value)
}

/// Issue 23, before you taint: `kubectl taint`, `cordon` and `apply` print
/// the server's warnings of what the write will do (on stderr), and with
/// `--dry-run=server` the same warnings come and nothing changes. The
/// controllers are off so that nothing but kubectl changes the cluster.
#[test]
fn taint_cordon_and_apply_warn_and_dry_run_previews_with_real_kubectl() {
    let cluster = Cluster::start_with(
        "warnings",
        Backend::Embedded,
        &[
            "--disable-scheduler",
            "--controllers=-node-lifecycle-controller,-taint-eviction-controller",
        ],
    );
    let nodes = |taints: &str| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n1, labels: {{pool: gpu}}}}\nspec: {{taints: [{taints}]}}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: n2}}\nspec: {{taints: []}}\n"
        )
    };
    cluster.apply(&nodes(""));
    // Without the not-ready taint admission gives a new node.
    let (_, stderr) = cluster.ok_with_stderr(&[
        "taint",
        "nodes",
        "n1",
        "n2",
        "node.kubernetes.io/not-ready:NoSchedule-",
    ]);
    assert!(
        !stderr.contains("Warning"),
        "a removal warns of nothing: {stderr}"
    );
    let pod = |name: &str, spec: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{containers: [{{name: c, image: busybox}}]{spec}}}\n---\n"
        )
    };
    let batch = ", nodeName: n1, tolerations: [{key: dedicated, operator: Exists, effect: NoExecute, tolerationSeconds: 300}]";
    cluster.apply(
        &[
            pod("web-1", ", nodeName: n1"),
            pod("web-2", ", nodeName: n1"),
            pod("batch", batch),
            pod("pinned", ", nodeSelector: {pool: gpu}"),
            pod("anywhere", ""),
        ]
        .concat(),
    );

    // n1's taint keeps `anywhere` off it; cordoning n2 then leaves it
    // nowhere. The applied manifest's new taint only `batch` notices.
    let manifest = cluster.manifest(
        "tainted-nodes.yaml",
        &nodes("{key: dedicated, value: gpu, effect: NoExecute}, {key: extra, value: \"1\", effect: NoExecute}"),
    );
    struct Case<'a> {
        args: Vec<&'a str>,
        warnings: Vec<&'a str>,
        /// Whether the write is in (a dry run leaves it out).
        done: &'a dyn Fn() -> bool,
    }
    let n1_has =
        |key: &str, value: &str| has_taint(&taints(&cluster, "n1"), key, Some(value), "NoExecute");
    let cases = [
        Case {
            args: vec!["taint", "nodes", "n1", "dedicated=gpu:NoExecute"],
            warnings: vec![
                "Warning: 2 pods do not tolerate dedicated=gpu:NoExecute and are evicted now: default/web-1, default/web-2\n",
                "Warning: 1 pod is evicted at ",
                "(tolerationSeconds 300)\n",
                "Warning: 1 pending pod can no longer be scheduled anywhere: default/pinned\n",
            ],
            done: &|| n1_has("dedicated", "gpu"),
        },
        Case {
            args: vec!["cordon", "n2"],
            warnings: vec![
                "Warning: 1 pending pod can no longer be scheduled anywhere: default/anywhere\n",
            ],
            done: &|| {
                cluster.json(&["get", "node", "n2"])["spec"]["unschedulable"]
                    .as_bool()
                    .unwrap_or(false)
            },
        },
        Case {
            args: vec!["apply", "-f", manifest.as_str()],
            warnings: vec![
                "Warning: 1 pod does not tolerate extra=1:NoExecute and is evicted now: default/batch\n",
            ],
            done: &|| n1_has("extra", "1"),
        },
    ];
    for case in &cases {
        for dry_run in [true, false] {
            let mut args = case.args.clone();
            if dry_run {
                args.push("--dry-run=server");
            }
            let (stdout, stderr) = cluster.ok_with_stderr(&args);
            for want in &case.warnings {
                assert!(stderr.contains(want), "{args:?}: {want:?} in {stderr}");
            }
            assert_eq!((case.done)(), !dry_run, "{args:?}: {stdout}");
        }
    }
}

/// Issue 23's live explanation: `berth explain pod` names, for each node,
/// the filter and the taint that reject the pending pod; its `-o json` and
/// the subresource as kubectl reads it (`get --raw`) agree; `--taint` asks
/// "what if" (a taint removed makes the pod and another pending pod
/// schedulable), `berth explain taint` previews evictions and stores
/// nothing; an unknown pod is exit 2 with the server's message.
#[test]
fn berth_explain_pod_names_the_rejecting_taint_and_the_subresource_agrees() {
    let cluster = Cluster::start_with(
        "explain",
        Backend::Embedded,
        &["--controllers=-node-lifecycle-controller,-taint-eviction-controller"],
    );
    let node = |name: &str, taints: &str| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nspec: {{taints: [{taints}]}}\nstatus: {{allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}, capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}}}\n---\n"
        )
    };
    cluster.apply(
        &[
            node("n1", "{key: dedicated, value: gpu, effect: NoSchedule}"),
            node("n2", "{key: maintenance, value: kernel, effect: NoExecute}"),
            node("n3", "{key: team, value: a, effect: NoSchedule}"),
        ]
        .concat(),
    );
    // Admission's not-ready taint off: only the test's taints stay.
    cluster.ok(&[
        "taint",
        "nodes",
        "n1",
        "n2",
        "n3",
        "node.kubernetes.io/not-ready:NoSchedule-",
    ]);
    let pod = |name: &str, spec: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{containers: [{{name: c, image: busybox}}]{spec}}}\n---\n"
        )
    };
    cluster.apply(
        &[
            pod("web", ""),
            pod("api", ""),
            pod(
                "bound",
                ", nodeName: n3, tolerations: [{key: team, operator: Exists}]",
            ),
        ]
        .concat(),
    );
    let berth = |args: &[&str]| berth_command(&cluster, "explain", args);
    let stdout = |out: &std::process::Output| {
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let table = stdout(&berth(&["pod", "web"]));
    assert!(table.starts_with("Pod default/web (pending"), "{table}");
    for (node, taint) in [
        ("n1", "dedicated=gpu:NoSchedule"),
        ("n2", "maintenance=kernel:NoExecute"),
        ("n3", "team=a:NoSchedule"),
    ] {
        let line = table
            .lines()
            .find(|l| l.starts_with(node))
            .unwrap_or_else(|| panic!("{node} in {table}"));
        assert!(
            line.contains("TaintToleration: ") && line.contains(&format!("({taint})")),
            "{line}"
        );
    }
    assert!(
        table.contains("Unschedulable: 0/3 nodes are available"),
        "{table}"
    );

    let from_berth: Value =
        serde_json::from_str(&stdout(&berth(&["pod", "web", "-o", "json"]))).expect("JSON");
    let from_kubectl: Value = serde_json::from_str(&cluster.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/scheduling",
    ]))
    .expect("JSON");
    assert_eq!(from_berth, from_kubectl);
    assert_eq!(from_kubectl["kind"], "PodScheduling");
    for node in from_kubectl["nodes"].as_array().into_iter().flatten() {
        assert_eq!(node["feasible"], false, "{node}");
        assert_eq!(node["rejectedBy"], "TaintToleration", "{node}");
        let decided: Vec<&Value> = node["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["decided"] == true)
            .collect();
        assert_eq!(decided.len(), 1, "{node}");
    }

    // What if n3 lost its taint: both pending pods could go there.
    let what_if: Value = serde_json::from_str(&stdout(&berth(&[
        "pod",
        "web",
        "--taint",
        "n3=team:NoSchedule-",
        "-o",
        "json",
    ])))
    .expect("JSON");
    assert_eq!(what_if["best"], serde_json::json!(["n3"]), "{what_if}");
    assert_eq!(
        what_if["whatIf"]["becomeSchedulable"],
        serde_json::json!(["default/api", "default/web"]),
        "{what_if}"
    );
    let table = stdout(&berth(&["pod", "web", "--taint", "n3=team:NoSchedule-"]));
    assert!(
        table.contains("pending pods that become schedulable: default/api, default/web"),
        "{table}"
    );
    // What if n3 got a NoExecute taint: the pod bound there is evicted.
    let what_if: Value = serde_json::from_str(&stdout(&berth(&[
        "pod",
        "web",
        "--taint",
        "n3=evict=now:NoExecute",
        "-o",
        "json",
    ])))
    .expect("JSON");
    let impact = what_if["whatIf"]["impact"]["n3"].to_string();
    assert!(
        impact.contains(
            "1 pod does not tolerate evict=now:NoExecute and is evicted now: default/bound"
        ),
        "{what_if}"
    );
    let preview = stdout(&berth(&["taint", "n3", "evict=now:NoExecute"]));
    assert!(
        preview.contains(
            "1 pod does not tolerate evict=now:NoExecute and is evicted now: default/bound"
        ),
        "{preview}"
    );
    assert!(!has_taint(
        &taints(&cluster, "n3"),
        "evict",
        Some("now"),
        "NoExecute"
    ));

    // Bad input: the user's to fix, exit 2, the server's message.
    for (args, want) in [
        (vec!["pod", "nope"], "pods \"nope\" not found"),
        (
            vec!["pod", "web", "--taint", "n9=k=v:NoSchedule"],
            "nodes \"n9\" not found",
        ),
        (vec!["pod", "web", "--taint", "n1"], "--taint"),
    ] {
        let out = berth(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    let out = cluster.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/nope/scheduling",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{out:?}"
    );
}

/// `berth taint NODE SPEC --for DURATION` writes the taint and its expiry
/// in one update (the node lifecycle controller removes it then: tested on
/// the virtual clock in berth-controllers and berth-sim), prints the
/// server's warnings as kubectl does, previews with `--dry-run=server`,
/// and refuses bad arguments with exit status 2 before asking the server.
#[test]
fn berth_taint_for_writes_the_taint_and_its_expiry() {
    let cluster = Cluster::start("berth-taint", Backend::Embedded);
    cluster.apply(&std::fs::read_to_string(example("nodes/node1.yaml")).expect("example node"));
    let berth = |args: &[&str]| berth_command(&cluster, "taint", args);
    let out = berth(&[
        "node1",
        "maintenance=kernel:NoSchedule",
        "--for",
        "2h",
        "--dry-run=server",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(!has_taint(
        &taints(&cluster, "node1"),
        "maintenance",
        Some("kernel"),
        "NoSchedule"
    ));
    let before = jiff::Timestamp::now();
    let out = berth(&["node1", "maintenance=kernel:NoSchedule", "--for", "2h"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.starts_with("node/node1 tainted (until "), "{stdout}");
    let node = cluster.json(&["get", "node", "node1"]);
    assert!(has_taint(
        node["spec"]["taints"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default(),
        "maintenance",
        Some("kernel"),
        "NoSchedule"
    ));
    let expiry = node["metadata"]["annotations"]["berth.dev/taint-expiry"]
        .as_str()
        .unwrap_or_default();
    let at: jiff::Timestamp = expiry
        .strip_prefix("maintenance:NoSchedule=")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("annotation {expiry:?}"));
    let hours = at.duration_since(before).as_secs_f64() / 3600.0;
    assert!(
        (1.99..=2.01).contains(&hours),
        "{expiry}: {hours} h from now"
    );
    // Removing the taint takes its expiry with it.
    let out = berth(&["node1", "maintenance:NoSchedule-"]);
    assert!(out.status.success(), "{out:?}");
    let node = cluster.json(&["get", "node", "node1"]);
    assert!(
        node["metadata"]["annotations"]["berth.dev/taint-expiry"].is_null(),
        "{node}"
    );

    for (args, want) in [
        (
            vec!["node1", "k=v:Sometimes"],
            "SPEC: invalid taint effect: Sometimes",
        ),
        (
            vec!["node1", "k=v:NoSchedule", "--for", "soon"],
            "--for: time: invalid duration \"soon\"",
        ),
        (
            vec!["node1", "k:NoSchedule-", "--for", "1h"],
            "--for: no taint is added to expire",
        ),
        (
            vec![
                "node1",
                "k=v:NoSchedule",
                "--kubeconfig",
                "/nonexistent/kubeconfig",
            ],
            "/nonexistent/kubeconfig: ",
        ),
    ] {
        let out = berth(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

#[test]
fn seed_walkthrough_with_real_kubectl_on_the_embedded_store() {
    seed_walkthrough(Backend::Embedded);
}

#[test]
fn seed_walkthrough_with_real_kubectl_on_etcd() {
    seed_walkthrough(Backend::Etcd);
}

#[test]
fn watch_sees_changes_and_drain_evicts_on_the_embedded_store() {
    watch_and_drain(Backend::Embedded);
}

#[test]
fn watch_sees_changes_and_drain_evicts_on_etcd() {
    watch_and_drain(Backend::Etcd);
}

/// `kubectl explain` and `kubectl apply`'s validation read the OpenAPI
/// documents (v3 JSON, and v2 as protobuf for client-side validation);
/// what kubectl prints is what it prints against kube-apiserver.
#[test]
fn explain_and_validation_read_the_openapi_documents() {
    let cluster = Cluster::start("openapi", Backend::Embedded);

    let tolerations = cluster.ok(&["explain", "pod.spec.tolerations"]);
    for want in [
        "KIND:       Pod",
        "FIELD: tolerations <[]Toleration>",
        "If specified, the pod's tolerations.",
        "tolerationSeconds\t<integer>",
        "TolerationSeconds represents the period of time the toleration",
    ] {
        assert!(tolerations.contains(want), "{want:?} in {tolerations}");
    }
    let taints = cluster.ok(&["explain", "node.spec.taints"]);
    for want in [
        "FIELD: taints <[]Taint>",
        "If specified, the node's taints.",
        "effect\t<string> -required-",
    ] {
        assert!(taints.contains(want), "{want:?} in {taints}");
    }
    // The v2 document, which client-go fetches as protobuf.
    let v2 = cluster.ok(&[
        "explain",
        "--output=plaintext-openapiv2",
        "pod.spec.tolerations",
    ]);
    assert!(
        v2.contains("RESOURCE: tolerations <[]Object>")
            && v2.contains("If specified, the pod's tolerations."),
        "{v2}"
    );

    // A valid manifest applies, then a change to it is patched (the patch
    // computed from the v3 schemas), with no protobuf or OpenAPI warnings.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx\n";
    for (image, want) in [
        ("nginx", "pod/web created"),
        ("nginx:2", "pod/web configured"),
    ] {
        let path = cluster.manifest("web.yaml", &pod.replace("nginx", image));
        let out = cluster.kubectl(&["apply", "-f", &path]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.is_empty(), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want);
    }

    struct Refused {
        name: &'static str,
        file: &'static str,
        manifest: &'static str,
        flags: &'static [&'static str],
        /// kubectl's stderr, `{path}` standing for the manifest's path.
        want: &'static str,
    }
    let cases = [
        Refused {
            name: "a misspelled field: the server validates fields (fieldValidation on the \
                   PATCH operation), so kubectl sends Strict and prints the server's error",
            file: "typo.yaml",
            manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  containers:\n  - name: web\n    image: nginx\n    imagee: nginx\n",
            flags: &["--validate=strict"],
            want: "Error from server (BadRequest): error when creating \"{path}\": Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].imagee\"",
        },
        Refused {
            name: "a List is validated client-side, against the v2 document (protobuf)",
            file: "list.yaml",
            manifest: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: listed}\n  spec:\n    containers: [{name: a, image: b, imagee: c}]\n",
            flags: &[],
            want: "error: error validating \"{path}\": error validating data: ValidationError(Pod.spec.containers[0]): unknown field \"imagee\" in io.k8s.api.core.v1.Container; if you choose to ignore these errors, turn validation off with --validate=false",
        },
        Refused {
            name: "a kind the server does not serve: validation skips it, the mapping fails",
            file: "widget.yaml",
            manifest: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
            flags: &[],
            want: "error: resource mapping not found for name: \"w\" namespace: \"\" from \"{path}\": no matches for kind \"Widget\" in version \"example.com/v1\"\nensure CRDs are installed first",
        },
    ];
    for case in cases {
        let path = cluster.manifest(case.file, case.manifest);
        let mut args = vec!["apply", "-f", &path];
        args.extend(case.flags);
        let err = cluster.fails(&args);
        assert_eq!(
            err.trim(),
            case.want.replace("{path}", &path),
            "{}",
            case.name
        );
    }
    // The List, spelled right, applies.
    let list = cluster.manifest(
        "list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: listed}\n  spec:\n    containers: [{name: a, image: b}]\n",
    );
    assert_eq!(
        cluster.ok(&["apply", "-f", &list]).trim(),
        "pod/listed created"
    );
}

/// The first commands of a new user, on the common core types and the
/// access reviews: a namespace, an application's ConfigMap, Secret,
/// Service and Deployment applied whole, `get svc` with an allocated
/// cluster IP, `get all`, `cluster-info`, `auth can-i` (also `--list`) and
/// `auth whoami` for the admin, a node and the join token; the Service's
/// address survives a restart and is never given twice.
#[test]
fn core_types_and_access_reviews_with_real_kubectl() {
    let mut cluster = Cluster::start("core-types", Backend::Embedded);
    assert_eq!(
        cluster.ok(&["create", "ns", "team-a"]).trim(),
        "namespace/team-a created"
    );
    let app = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: team-a\ndata:\n  app.yaml: |\n    port: 8080\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: web-secret\n  namespace: team-a\nstringData:\n  password: hunter2\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: team-a\nspec:\n  selector:\n    app: web\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team-a\nspec:\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1\n";
    assert_eq!(
        cluster.apply(app).trim(),
        "configmap/web-config created\nsecret/web-secret created\nservice/web created\ndeployment.apps/web created"
    );
    // The Secret's stringData is stored as data.
    let secret = cluster.json(&["get", "secret", "web-secret", "-n", "team-a"]);
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert_eq!(secret["type"], "Opaque");

    let services = cluster.ok(&["get", "svc", "-n", "team-a"]);
    let lines: Vec<Vec<&str>> = services
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ],
        "{services}"
    );
    assert_eq!(lines[1][..2], ["web", "ClusterIP"], "{services}");
    assert_eq!(lines[1][3..5], ["<none>", "80/TCP"], "{services}");
    let web_ip = lines[1][2].to_string();
    assert!(
        web_ip.starts_with("10.") && web_ip != "10.96.0.1",
        "{services}"
    );
    // Applied again with a second port: the ports merge by port, the
    // cluster IP stays. (The Secret reads "configured", as upstream's: its
    // stringData is never stored, so kubectl always sends it again.)
    let changed = app.replace(
        "    targetPort: 8080\n",
        "    targetPort: 8080\n  - name: metrics\n    port: 9090\n",
    );
    assert_eq!(
        cluster.apply(&changed).trim(),
        "configmap/web-config unchanged\nsecret/web-secret configured\nservice/web configured\ndeployment.apps/web unchanged"
    );
    let web = cluster.json(&["get", "svc", "web", "-n", "team-a"]);
    assert_eq!(web["spec"]["clusterIP"], web_ip.as_str());
    assert_eq!(
        web["spec"]["ports"],
        serde_json::json!([
            {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
            {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9090}
        ])
    );
    let configs = cluster.ok(&["get", "configmaps", "-n", "team-a"]);
    assert!(configs.contains("web-config"), "{configs}");
    assert!(configs.starts_with("NAME"), "{configs}");
    let accounts = cluster.ok(&["get", "serviceaccounts", "-n", "team-a"]);
    assert!(
        accounts.lines().any(|l| l.starts_with("default ")),
        "{accounts}"
    );

    // kubectl get all: the category's resources berth serves.
    let all = cluster.ok(&["get", "all", "-n", "team-a"]);
    assert!(
        all.lines()
            .any(|l| l.starts_with("NAME") && l.contains("CLUSTER-IP")),
        "{all}"
    );
    assert!(
        all.lines()
            .any(|l| l.starts_with("service/web ") && l.contains(&web_ip)),
        "{all}"
    );
    assert!(
        all.lines().any(|l| l.starts_with("deployment.apps/web ")),
        "{all}"
    );
    let default = cluster.ok(&["get", "all"]);
    let kubernetes = default
        .lines()
        .find(|l| l.starts_with("service/kubernetes "))
        .unwrap_or_else(|| panic!("the kubernetes Service: {default}"));
    assert_eq!(
        kubernetes.split_whitespace().collect::<Vec<_>>()[..5],
        [
            "service/kubernetes",
            "ClusterIP",
            "10.96.0.1",
            "<none>",
            "443/TCP"
        ]
    );

    // kubectl cluster-info
    let info = without_colours(&cluster.ok(&["cluster-info"]));
    assert!(
        info.starts_with(&format!(
            "Kubernetes control plane is running at {}\n",
            cluster.server.url()
        )),
        "{info}"
    );
    assert!(
        info.contains(
            "To further debug and diagnose cluster problems, use 'kubectl cluster-info dump'."
        ),
        "{info}"
    );

    // kubectl auth, as the admin, a node and the join token.
    let join_token = std::fs::read_to_string(cluster.server.data_dir.join("join-token"))
        .expect("the join token in the data dir");
    let join = format!("--token={}", join_token.trim());
    let request = cluster.manifest("credential.json", "{\"nodeName\": \"worker-1\"}");
    let credential: Value = serde_json::from_str(&cluster.ok(&[
        "create",
        "--raw",
        "/berth/v1/node-credential",
        "-f",
        &request,
        &join,
    ]))
    .expect("a node credential");
    let node = format!("--token={}", credential["token"].as_str().unwrap_or(""));

    assert_eq!(
        cluster.ok(&["auth", "can-i", "delete", "nodes"]).trim(),
        "yes"
    );
    let refused = cluster.kubectl(&["auth", "can-i", "delete", "nodes", &node]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&refused.stdout).trim(), "no");
    assert_eq!(
        cluster
            .ok(&["auth", "can-i", "get", "nodes/worker-1", &node])
            .trim(),
        "yes"
    );
    let list = cluster.ok(&["auth", "can-i", "--list"]);
    let rows: Vec<Vec<&str>> = list
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "Resources",
            "Non-Resource",
            "URLs",
            "Resource",
            "Names",
            "Verbs"
        ],
        "{list}"
    );
    assert!(rows.contains(&vec!["*.*", "[]", "[]", "[*]"]), "{list}");
    assert!(
        rows.contains(&vec![
            "selfsubjectaccessreviews.authorization.k8s.io",
            "[]",
            "[]",
            "[create]"
        ]),
        "{list}"
    );
    let node_list = cluster.ok(&["auth", "can-i", "--list", "-n", "kube-node-lease", &node]);
    assert!(
        node_list.lines().any(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells == ["nodes", "[]", "[worker-1]", "[get", "list", "watch]"]
        }),
        "{node_list}"
    );
    assert!(!node_list.contains("*.*"), "{node_list}");

    struct WhoAmI {
        flag: Option<String>,
        username: &'static str,
        groups: &'static str,
    }
    let identities = [
        WhoAmI {
            flag: None,
            username: "admin",
            groups: "[system:masters system:authenticated]",
        },
        WhoAmI {
            flag: Some(node),
            username: "system:node:worker-1",
            groups: "[system:nodes system:authenticated]",
        },
        WhoAmI {
            flag: Some(join),
            username: "system:bootstrap:berth-join",
            groups: "[system:bootstrappers system:authenticated]",
        },
    ];
    for who in identities {
        let mut args = vec!["auth", "whoami"];
        args.extend(who.flag.as_deref());
        let out = cluster.ok(&args);
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0], ["ATTRIBUTE", "VALUE"], "{out}");
        assert_eq!(rows[1], ["Username", who.username], "{out}");
        assert_eq!(rows[2].join(" "), format!("Groups {}", who.groups), "{out}");
    }

    // The address is the store's: a restarted server keeps it and gives
    // the next Service another.
    cluster.restart(Backend::Embedded);
    cluster.apply("apiVersion: v1\nkind: Service\nmetadata:\n  name: api\n  namespace: team-a\nspec:\n  ports: [{port: 443}]\n");
    let web = cluster.json(&["get", "svc", "web", "-n", "team-a"]);
    assert_eq!(web["spec"]["clusterIP"], web_ip.as_str());
    let api = cluster.json(&["get", "svc", "api", "-n", "team-a"]);
    let api_ip = api["spec"]["clusterIP"].as_str().unwrap_or("");
    assert!(
        !api_ip.is_empty() && api_ip != web_ip && api_ip != "10.96.0.1",
        "{api}"
    );
}

fn seed_walkthrough(backend: Backend) {
    let cluster = Cluster::start("walkthrough", backend);
    assert!(
        cluster
            .ok(&["apply", "-f", &example("nodes/node-plain.yaml")])
            .contains("node/node-plain created")
    );
    cluster.apply("apiVersion: v1\nkind: Node\nmetadata:\n  name: node1\nstatus:\n  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n  capacity: {cpu: '4', memory: 8Gi, pods: '110'}\n");

    // kubectl taint nodes node1 key1=value1:NoSchedule
    assert_eq!(
        cluster
            .ok(&["taint", "nodes", "node1", "key1=value1:NoSchedule"])
            .trim(),
        "node/node1 tainted"
    );
    assert!(has_taint(
        &taints(&cluster, "node1"),
        "key1",
        Some("value1"),
        "NoSchedule"
    ));
    // The same key and effect again needs --overwrite.
    let err = cluster.fails(&["taint", "nodes", "node1", "key1=value2:NoSchedule"]);
    assert!(
        err.contains(
            "node node1 already has key1 taint(s) with same effect(s) and --overwrite is false"
        ),
        "{err}"
    );
    assert_eq!(
        cluster
            .ok(&[
                "taint",
                "nodes",
                "node1",
                "key1=value2:NoSchedule",
                "--overwrite"
            ])
            .trim(),
        "node/node1 modified"
    );
    assert!(has_taint(
        &taints(&cluster, "node1"),
        "key1",
        Some("value2"),
        "NoSchedule"
    ));

    // NoExecute taints get timeAdded from the server.
    cluster.ok(&["taint", "nodes", "node1", "key1=value1:NoExecute"]);
    let yaml = cluster.ok(&["get", "nodes", "node1", "-o", "yaml"]);
    assert!(yaml.contains("effect: NoExecute"), "{yaml}");
    assert!(yaml.contains("timeAdded:"), "{yaml}");
    let no_execute = taints(&cluster, "node1")
        .into_iter()
        .find(|t| t["effect"] == "NoExecute")
        .expect("NoExecute taint");
    assert!(
        no_execute["timeAdded"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let schedule_taint = taints(&cluster, "node1")
        .into_iter()
        .find(|t| t["key"] == "key1" && t["effect"] == "NoSchedule")
        .expect("NoSchedule taint");
    assert!(
        schedule_taint.get("timeAdded").is_none_or(Value::is_null),
        "only NoExecute taints are stamped"
    );

    // describe shows the Taints line.
    let describe = cluster.ok(&["describe", "node", "node1"]);
    assert!(
        describe
            .lines()
            .any(|l| l.starts_with("Taints:") && l.contains("key1=value1:NoExecute")),
        "{describe}"
    );

    // Removal by key and effect, then by key.
    assert_eq!(
        cluster
            .ok(&["taint", "nodes", "node1", "key1:NoSchedule-"])
            .trim(),
        "node/node1 untainted"
    );
    assert!(!has_taint(
        &taints(&cluster, "node1"),
        "key1",
        Some("value2"),
        "NoSchedule"
    ));
    assert!(has_taint(
        &taints(&cluster, "node1"),
        "key1",
        Some("value1"),
        "NoExecute"
    ));
    cluster.ok(&["taint", "nodes", "node1", "key1-"]);
    assert!(!taints(&cluster, "node1").iter().any(|t| t["key"] == "key1"));

    // cordon / uncordon
    assert_eq!(
        cluster.ok(&["cordon", "node1"]).trim(),
        "node/node1 cordoned"
    );
    let nodes = cluster.ok(&["get", "nodes"]);
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with("node1 ") && l.contains("SchedulingDisabled")),
        "{nodes}"
    );
    assert_eq!(
        cluster.json(&["get", "node", "node1"])["spec"]["unschedulable"],
        true
    );
    assert_eq!(
        cluster.ok(&["uncordon", "node1"]).trim(),
        "node/node1 uncordoned"
    );
    assert!(
        cluster.json(&["get", "node", "node1"])["spec"]["unschedulable"].as_bool() != Some(true)
    );

    // The seed's pod: its toleration kept, the 300 s defaults added.
    assert!(
        cluster
            .ok(&["apply", "-f", &example("pods/pod-with-toleration.yaml")])
            .contains("pod/nginx created")
    );
    let pod = cluster.json(&["get", "pod", "nginx"]);
    let tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(tolerations.iter().any(|t| t["key"] == "example-key"
        && t["operator"] == "Exists"
        && t["effect"] == "NoSchedule"));
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.iter().any(|t| t["key"] == key
                && t["effect"] == "NoExecute"
                && t["tolerationSeconds"] == 300),
            "{key} in {tolerations:?}"
        );
    }
    // Applying again changes nothing: kubectl sends the file's tolerations
    // (a list without a merge key), admission adds the defaults back, and
    // the server skips the no-op write.
    let rv = pod["metadata"]["resourceVersion"].clone();
    cluster.ok(&["apply", "-f", &example("pods/pod-with-toleration.yaml")]);
    let again = cluster.json(&["get", "pod", "nginx"]);
    assert_eq!(again["metadata"]["resourceVersion"], rv);
    assert_eq!(again["spec"]["tolerations"], pod["spec"]["tolerations"]);
    let wide = cluster.ok(&["get", "pods", "-o", "wide"]);
    assert!(
        wide.lines().next().is_some_and(|h| h.contains("NODE")),
        "{wide}"
    );

    // The Gt toleration is accepted; a non-integer Gt value is a 422.
    cluster.ok(&[
        "apply",
        "-f",
        &example("pods/pod-with-numeric-toleration.yaml"),
    ]);
    let err = cluster.fails(&["run", "bad", "--image=x", "--overrides", r#"{"spec":{"tolerations":[{"key":"k","operator":"Gt","value":"0950","effect":"NoSchedule"}]}}"#]);
    assert!(err.contains("spec.tolerations[0].value"), "{err}");

    cluster.ok(&["delete", "pod", "nginx-numeric-toleration"]);
}

fn watch_and_drain(backend: Backend) {
    let cluster = Cluster::start("watch-drain", backend);
    cluster.apply("apiVersion: v1\nkind: Node\nmetadata:\n  name: node1\nstatus:\n  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n");
    cluster.ok(&["apply", "-f", &example("pods/pod-with-toleration.yaml")]);

    // kubectl get pods -w: the header and the initial row, then, once those
    // are printed, the change.
    let (mut watch, stdout) = cluster.spawn(&["get", "pods", "-w", "--request-timeout=30s"]);
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let next_line = || {
        lines
            .recv_timeout(Duration::from_secs(20))
            .expect("kubectl get -w prints a line")
    };
    let header = next_line();
    assert!(header.starts_with("NAME"), "{header}");
    let initial = next_line();
    assert!(initial.starts_with("nginx "), "initial row: {initial}");
    cluster.ok(&["label", "pod", "nginx", "seen=yes"]);
    let change = next_line();
    assert!(change.starts_with("nginx "), "the change: {change}");
    let _ = watch.kill();
    let _ = watch.wait();

    // A pod bound to node1; drain evicts it through pods/eviction. The
    // eviction marks it for graceful deletion; with no node agent running
    // here, this test confirms the deletion the way an agent does.
    cluster.apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bound\nspec:\n  nodeName: node1\n  containers: [{name: c, image: busybox}]\n");
    let kubeconfig = cluster.server.kubeconfig.clone();
    let agent = std::thread::spawn(move || {
        confirm_deletions(&kubeconfig, "bound", Duration::from_secs(20))
    });
    let drained = cluster.ok(&[
        "drain",
        "node1",
        "--ignore-daemonsets",
        "--force",
        "--timeout=30s",
    ]);
    assert!(drained.contains("pod/bound evicted"), "{drained}");
    assert!(drained.contains("node/node1 drained"), "{drained}");
    assert!(
        agent.join().expect("agent thread"),
        "the eviction marked the pod for deletion"
    );
    assert_eq!(
        cluster.json(&["get", "node", "node1"])["spec"]["unschedulable"],
        true
    );

    assert!(
        cluster
            .ok(&["delete", "pod", "nginx"])
            .contains("pod \"nginx\" deleted")
    );
    let err = cluster.fails(&["get", "pod", "nginx"]);
    assert!(err.contains("pods \"nginx\" not found"), "{err}");
}

/// Stands in for a node agent: once `pod` is marked for deletion, deletes
/// it with grace period 0. True if it saw the mark.
fn confirm_deletions(kubeconfig: &Path, pod: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let out = Command::new(kubectl_binary())
            .args([
                "get",
                "pod",
                pod,
                "-o",
                "jsonpath={.metadata.deletionTimestamp}",
            ])
            .env("KUBECONFIG", kubeconfig)
            .output();
        if let Ok(out) = out
            && out.status.success()
            && !out.stdout.is_empty()
        {
            let _ = Command::new(kubectl_binary())
                .args(["delete", "pod", pod, "--grace-period=0", "--force"])
                .env("KUBECONFIG", kubeconfig)
                .output();
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// The pod events of a `kubectl get pods -w --output-watch-events -o json`
/// running beside a test, in the order the watch printed them.
struct PodEvents {
    watch: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(String, String, Value)>>>,
}

impl PodEvents {
    fn start(cluster: &Cluster) -> PodEvents {
        let (watch, stdout) = cluster.spawn(&[
            "get",
            "pods",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
            "--request-timeout=300s",
        ]);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for event in serde_json::Deserializer::from_reader(stdout).into_iter::<Value>() {
                let Ok(event) = event else { break };
                let kind = event["type"].as_str().unwrap_or("").to_string();
                let name = event["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                if let Ok(mut seen) = record.lock() {
                    seen.push((kind, name, event["object"].clone()));
                }
            }
        });
        PodEvents { watch, seen }
    }

    /// Where the watch printed `kind` for pod `name`, waiting for it.
    fn position(&self, kind: &str, name: &str) -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let found = self
                .seen
                .lock()
                .ok()
                .and_then(|seen| seen.iter().position(|(k, n, _)| k == kind && n == name));
            if let Some(at) = found {
                return at;
            }
            assert!(Instant::now() < deadline, "no {kind} event for pod {name}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn deleted(&self, name: &str) -> bool {
        self.seen
            .lock()
            .is_ok_and(|seen| seen.iter().any(|(k, n, _)| k == "DELETED" && n == name))
    }
}

impl Drop for PodEvents {
    fn drop(&mut self) {
        let _ = self.watch.kill();
        let _ = self.watch.wait();
    }
}

/// Pod `owner` and pods `dependents` owned by it (blocking its deletion
/// when `block`), the first dependent held by a finalizer of its own when
/// `hold`.
fn owner_with_dependents(
    cluster: &Cluster,
    owner: &str,
    dependents: &[&str],
    block: bool,
    hold: bool,
) {
    cluster.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {owner}\nspec:\n  containers: [{{name: c, image: busybox}}]\n"
    ));
    let uid = cluster.ok(&["get", "pod", owner, "-o", "jsonpath={.metadata.uid}"]);
    for (i, dependent) in dependents.iter().enumerate() {
        let finalizers = if hold && i == 0 {
            "\n  finalizers: [example.com/hold]"
        } else {
            ""
        };
        cluster.apply(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {dependent}{finalizers}\n  ownerReferences:\n  - {{apiVersion: v1, kind: Pod, name: {owner}, uid: {uid}, blockOwnerDeletion: {block}}}\nspec:\n  containers: [{{name: c, image: busybox}}]\n"
        ));
    }
}

/// `kubectl delete --cascade=background|orphan|foreground` against an
/// owner with dependents, as the garbage collector carries each out: in
/// the background the owner goes at once and its dependents after; orphan
/// leaves the dependents with their ownerReference removed; in the
/// foreground the dependents go first (a dependent held by a finalizer
/// holds the owner) and the owner after them.
#[test]
fn kubectl_delete_cascade_orphans_or_deletes_dependents_in_order() {
    let cluster = Cluster::start("cascade", Backend::Embedded);
    let events = PodEvents::start(&cluster);

    owner_with_dependents(&cluster, "bg", &["bg-a", "bg-b"], false, false);
    let out = cluster.ok(&["delete", "pod/bg", "--cascade=background"]);
    assert_eq!(out.trim(), "pod \"bg\" deleted from default namespace");
    let owner_gone = events.position("DELETED", "bg");
    for dependent in ["bg-a", "bg-b"] {
        assert!(
            events.position("DELETED", dependent) > owner_gone,
            "background: {dependent} goes after its owner"
        );
    }

    owner_with_dependents(&cluster, "or", &["or-a", "or-b"], true, false);
    let out = cluster.ok(&["delete", "pod/or", "--cascade=orphan"]);
    assert_eq!(out.trim(), "pod \"or\" deleted from default namespace");
    let owner_gone = events.position("DELETED", "or");
    for dependent in ["or-a", "or-b"] {
        let pod = cluster.json(&["get", "pod", dependent]);
        assert!(
            pod["metadata"].get("ownerReferences").is_none(),
            "orphan: {dependent} keeps no reference: {pod}"
        );
        let orphaned = events.seen.lock().ok().and_then(|seen| {
            seen.iter().position(|(k, n, o)| {
                k == "MODIFIED" && n == dependent && o["metadata"].get("ownerReferences").is_none()
            })
        });
        assert!(
            orphaned.is_some_and(|at| at < owner_gone),
            "orphan: {dependent}'s reference goes before its owner"
        );
        assert!(!events.deleted(dependent), "orphan: {dependent} stays");
    }

    owner_with_dependents(&cluster, "fg", &["fg-a", "fg-b"], true, true);
    cluster.ok(&["delete", "pod/fg", "--cascade=foreground", "--wait=false"]);
    let free_dependent_gone = events.position("DELETED", "fg-b");
    // fg-a's own finalizer holds it, and it holds its owner.
    let held = cluster.json(&["get", "pod", "fg-a"]);
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let owner = cluster.json(&["get", "pod", "fg"]);
    assert!(
        owner["metadata"]["deletionTimestamp"].is_string(),
        "{owner}"
    );
    assert_eq!(
        owner["metadata"]["finalizers"],
        serde_json::json!(["foregroundDeletion"])
    );
    assert!(
        !events.deleted("fg"),
        "foreground: the owner waits for its dependents"
    );
    cluster.ok(&[
        "patch",
        "pod",
        "fg-a",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let held_dependent_gone = events.position("DELETED", "fg-a");
    let owner_gone = events.position("DELETED", "fg");
    assert!(
        free_dependent_gone < owner_gone && held_dependent_gone < owner_gone,
        "foreground: dependents go before their owner"
    );
    let err = cluster.fails(&["get", "pod", "fg"]);
    assert!(err.contains("pods \"fg\" not found"), "{err}");
}
