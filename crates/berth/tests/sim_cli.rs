//! `berth sim` run as a user runs it: the real binary on an example
//! scenario (timeline and report files), on bad scenario files (exit 2, the
//! file, the line and the problem), and the report opened in headless
//! Chromium (Debian's `chromium`; `.ci/run` installs it), which must
//! render a lane per node and take a screenshot.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scenarios() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios")
}

fn berth(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the berth binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_scenario_files_give_the_line_and_the_problem_and_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let head = "nodes:\n  - {name: node1, zone: a}\n";
    let cases: &[(&str, String, &str)] = &[
        (
            "unknown step kind",
            format!("{head}steps:\n  - {{at: 10s, explode: node1}}\nrun: 1m\n"),
            "bad.yaml:4:",
        ),
        (
            "bad taint syntax",
            format!(
                "{head}steps:\n  - {{at: 10s, taint: \"node1 key1=value1:Sometimes\"}}\nrun: 1m\n"
            ),
            "bad.yaml:4:5: invalid taint effect: Sometimes, unsupported taint effect",
        ),
        (
            "bad duration",
            format!(
                "{head}steps:\n  - {{at: 10s, cordon: node1}}\n  - {{at: 1d, cordon: node1}}\nrun: 1m\n"
            ),
            "bad.yaml:5:10: at: time: unknown unit \"d\" in duration \"1d\"",
        ),
        (
            "unknown node",
            format!("{head}steps:\n  - {{at: 10s, cordon: node7}}\nrun: 1m\n"),
            "bad.yaml:4:5: unknown node \"node7\"",
        ),
        (
            "YAML syntax",
            "nodes:\n  - {name: node1\nrun: 1m\n".to_owned(),
            "bad.yaml:",
        ),
        (
            "a step the cluster refuses",
            format!("{head}steps:\n  - {{at: 10s, untaint: \"node1 key1:NoExecute\"}}\nrun: 1m\n"),
            "bad.yaml:4: untaint node1 key1:NoExecute: taint \"key1:NoExecute\" not found",
        ),
        (
            "scale of a kind without /scale",
            format!(
                "{head}steps:\n  - {{at: 10s, scale: daemonset/agent, replicas: 2}}\nrun: 1m\n"
            ),
            "bad.yaml:4:5: scale: daemonsets cannot be scaled",
        ),
        (
            "scale of a Deployment that does not exist",
            format!(
                "{head}steps:\n  - {{at: 10s, scale: deployment/nope, replicas: 2}}\nrun: 1m\n"
            ),
            "bad.yaml:4: scale deployment/nope --replicas=2: deployments.apps \"nope\" not found",
        ),
        (
            "a Deployment the API refuses",
            format!(
                "{head}objects:\n  - {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: web}}, spec: {{selector: {{matchLabels: {{app: web}}}}, template: {{metadata: {{labels: {{app: other}}}}, spec: {{containers: [{{name: c, image: i}}]}}}}}}}}\nrun: 1m\n"
            ),
            "bad.yaml:4: Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value",
        ),
    ];
    for (name, text, want) in cases {
        std::fs::write(dir.path().join("bad.yaml"), text).expect("write");
        let out = berth(&["sim", "--scenario", "bad.yaml"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(want),
            "{name}: want {want:?} in {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{name}: no timeline for a bad file");
    }
    let out = berth(&["sim", "--scenario", "missing.yaml"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// How `berth sim` is told to run a scenario file.
#[derive(Clone, Copy)]
enum Spelling {
    /// `berth sim scenario FILE`.
    Subcommand,
    /// `berth sim --scenario FILE`, from before the subcommands.
    Old,
}

/// Runs an example to files; returns the timeline and the report's path.
fn run_to_files(example: &str, dir: &Path, spelling: Spelling) -> (String, PathBuf) {
    let (timeline, report, _) = run_to_files_summarized(example, dir, spelling);
    (timeline, report)
}

/// [`run_to_files`], and the summary line the run ended with.
fn run_to_files_summarized(
    example: &str,
    dir: &Path,
    spelling: Spelling,
) -> (String, PathBuf, String) {
    let scenario = scenarios().join(example);
    let timeline = dir.join("timeline.jsonl");
    let report = dir.join("report.html");
    let command: &[&str] = match spelling {
        Spelling::Subcommand => &["sim", "scenario"],
        Spelling::Old => &["sim", "--scenario"],
    };
    let out = berth(
        &[
            command[0],
            command[1],
            &scenario.to_string_lossy(),
            "--timeline",
            &timeline.to_string_lossy(),
            "--report",
            &report.to_string_lossy(),
            "--seed",
            "3",
        ],
        dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The summary on stderr, last: virtual time, nodes, evictions, the files.
    let summary = stderr(&out);
    let line = summary.lines().last().unwrap_or_default();
    let (start, end) = (
        format!("berth sim: {} (seed 3): ", scenario.display()),
        format!(
            "; timeline {}, report {}",
            timeline.display(),
            report.display()
        ),
    );
    assert!(
        line.starts_with(&start) && line.ends_with(&end),
        "{summary}"
    );
    let text = std::fs::read_to_string(&timeline).expect("timeline written");
    (text, report, line.to_string())
}

/// The same file and seed give the same bytes, whichever spelling runs it.
#[test]
fn sim_writes_the_timeline_and_the_same_seed_gives_the_same_bytes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (first, _) = run_to_files("zone-partition.yaml", dir.path(), Spelling::Old);
    let (second, report, summary) =
        run_to_files_summarized("zone-partition.yaml", dir.path(), Spelling::Subcommand);
    assert_eq!(first, second);
    // Three nodes of zone b stop at 1m; each pod leaves 300 s after its
    // node's taint, all within the 15 minutes.
    assert!(
        summary.contains(": 15m0s of virtual time, 9 node(s), 3 pod(s) evicted; "),
        "{summary}"
    );
    assert!(first.lines().all(|l| l.starts_with("{\"t\":")));
    assert!(first.contains(r#""event":"ZoneStateChanged","zone":"b","state":"FullDisruption"}"#));
    let html = std::fs::read_to_string(report).expect("report written");
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing to fetch.
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
}

fn chromium(args: &[&str]) -> Output {
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,900",
        ])
        .args(args)
        .output()
        .expect("chromium runs (Debian package `chromium`; .ci/run installs it)")
}

/// The report's URL and its DOM once headless chromium has run its script.
fn rendered_dom(report: &Path) -> (String, String) {
    let url = format!("file://{}", report.display());
    let dom = chromium(&["--dump-dom", &url]);
    assert!(dom.status.success(), "{}", stderr(&dom));
    let text = String::from_utf8_lossy(&dom.stdout).into_owned();
    (url, text)
}

#[test]
fn the_report_renders_its_lanes_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, report) = run_to_files(
        "taint-based-eviction.yaml",
        dir.path(),
        Spelling::Subcommand,
    );
    let (url, dom_text) = rendered_dom(&report);
    // The page's script ran and counted one lane per node.
    assert!(
        dom_text.contains(r#"data-rendered="lanes:3""#),
        "no render marker in the DOM:\n{}",
        &dom_text[..dom_text.len().min(2000)]
    );
    assert!(dom_text.contains("(3 lanes)</title>"));
    for node in ["node1", "node2", "node3"] {
        assert!(dom_text.contains(&format!(r#"<g class="lane" data-node="{node}">"#)));
    }

    let png = dir.path().join("report.png");
    let shot = chromium(&[&format!("--screenshot={}", png.display()), &url]);
    assert!(shot.status.success(), "{}", stderr(&shot));
    let bytes = std::fs::read(&png).expect("a screenshot was written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // A blank 1280x900 page compresses to a few KiB; lanes, bars and
    // tables make it far larger.
    assert!(bytes.len() > 20_000, "screenshot of {} bytes", bytes.len());
}

/// A zone outage's report shows the Deployment's replicas per zone: rows
/// for a, b and c, c's ending when its pods are evicted.
#[test]
fn the_report_shows_a_workloads_replicas_per_zone_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (timeline, report) = run_to_files(
        "deployment-zone-outage.yaml",
        dir.path(),
        Spelling::Subcommand,
    );
    assert!(timeline.contains(r#""event":"ReplicaSetScaled""#));
    assert!(timeline.contains(r#""owner":"Deployment/web","replicas":6}"#));
    let (_, dom_text) = rendered_dom(&report);
    assert!(dom_text.contains(r#"data-rendered="lanes:6""#));
    assert!(dom_text.contains(r#"<g class="workload" data-workload="Deployment/web">"#));
    for zone in ["a", "b", "c"] {
        assert!(
            dom_text.contains(&format!(
                r#"<g class="replica-row" data-row="zone {zone}">"#
            )),
            "no replica row for zone {zone}"
        );
    }
}

#[path = "browser/driver.rs"]
mod driver;

/// Issue 25's report acceptance: every example's report, opened in
/// headless Chromium at 1,400 and 800 px, has no label cut, its
/// scenario's description and the settings at the top, every eviction
/// row names its taint and toleration, the legend lists exactly what is
/// drawn, and nothing scrolls sideways. Screenshots are kept under
/// target/browser-artefacts/report/.
#[test]
fn every_example_report_tells_its_story_with_whole_labels_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut reports = Vec::new();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(scenarios())
        .expect("examples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 10, "{examples:?}");
    for example in &examples {
        let stem = example.file_stem().expect("a name").to_string_lossy();
        let sub = dir.path().join(stem.as_ref());
        std::fs::create_dir_all(&sub).expect("dir");
        let (_, report) = run_to_files(&example.to_string_lossy(), &sub, Spelling::Subcommand);
        reports.push(report);
    }
    let out = driver::artefacts("report");
    let mut args: Vec<&Path> = vec![&out];
    args.extend(reports.iter().map(PathBuf::as_path));
    let results = driver::run("report-check.js", &args);
    let results = results.as_object().expect("an object");
    assert_eq!(results.len(), examples.len() * 2);
    let mut evictions = 0;
    for (name, r) in results {
        assert!(
            r["rendered"]
                .as_str()
                .is_some_and(|s| s.starts_with("lanes:")),
            "{name}: {r}"
        );
        assert_eq!(r["cut"], serde_json::json!([]), "{name}: labels cut");
        assert!(
            r["description"].as_array().is_some_and(|d| !d.is_empty()),
            "{name}: no description"
        );
        for flag in [
            "node-monitor-grace-period",
            "node-eviction-rate",
            "default-unreachable-toleration-seconds",
        ] {
            assert!(r["settings"][flag].is_string(), "{name}: no {flag}");
        }
        for row in r["evictions"].as_array().expect("rows") {
            evictions += 1;
            for field in ["taint", "toleration"] {
                let text = row[field].as_str().unwrap_or("");
                assert!(!text.is_empty() && text != "-", "{name}: {row}: no {field}");
            }
        }
        assert_eq!(r["legendNotDrawn"], serde_json::json!([]), "{name}");
        assert_eq!(r["drawnNotInLegend"], serde_json::json!([]), "{name}");
        assert_eq!(r["horizontalScroll"], false, "{name}: scrolls sideways");
        let shot = std::fs::read(r["screenshot"].as_str().expect("a path")).expect("screenshot");
        assert!(shot.starts_with(b"\x89PNG"), "{name}");
    }
    assert!(
        evictions > 10,
        "only {evictions} eviction rows over the examples"
    );
}
