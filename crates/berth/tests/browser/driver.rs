//! Runs a browser script of this folder (playwright-core driving Debian's
//! `chromium`) and parses the JSON it prints. The scripts' npm packages
//! are installed here from the committed `package-lock.json` when missing
//! (`.ci/run` installs them too); a missing browser or node fails the
//! test, never skips it.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Where screenshots go: a test artefact folder under target/.
pub fn artefacts(test: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("browser-artefacts").join(test);
    std::fs::create_dir_all(&dir).expect("artefact folder");
    dir
}

fn ensure_packages() {
    if dir().join("node_modules/playwright-core").is_dir() {
        return;
    }
    let out = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir())
        .output()
        .expect("npm runs (Debian package npm)");
    assert!(
        out.status.success(),
        "npm ci in {} failed:\n{}",
        dir().display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `node SCRIPT ARGS...`, its standard output as JSON.
pub fn run(script: &str, args: &[&Path]) -> serde_json::Value {
    ensure_packages();
    let out = Command::new("node")
        .arg(dir().join(script))
        .args(args)
        .output()
        .expect("node runs (Debian package nodejs)");
    assert!(
        out.status.success(),
        "{script} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
