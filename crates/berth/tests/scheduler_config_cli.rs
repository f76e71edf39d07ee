//! `berth server --config`: a bad `KubeSchedulerConfiguration` stops the
//! server before it starts, with exit status 2 and the file and field
//! named.

use std::process::Command;

#[test]
fn a_bad_scheduler_configuration_exits_2_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().expect("a temp dir");
    struct Case {
        name: &'static str,
        text: &'static str,
        want: &'static str,
    }
    let cases = [
        Case {
            name: "weight out of range",
            text: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: 500\n",
            want: "profiles[0].plugins.score.enabled[0].weight: Invalid value: 500: must be in the range [1, 100]",
        },
        Case {
            name: "not YAML of the kind",
            text: "apiVersion: v1\nkind: Pod\n",
            want: "apiVersion: Unsupported value: \"v1\"",
        },
    ];
    for case in cases {
        let path = dir.path().join("scheduler.yaml");
        std::fs::write(&path, case.text).expect("writing the file");
        let out = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(["server", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--config")
            .arg(&path)
            .output()
            .expect("the berth binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", case.name);
        assert!(
            stderr.contains(&path.display().to_string()),
            "{}: {stderr}",
            case.name
        );
        assert!(stderr.contains(case.want), "{}: {stderr}", case.name);
    }
}
