//! The official Kubernetes Python client (PyPI `kubernetes`, which CI
//! installs) against a real `berth server`: runs `tests/python/smoke.py`
//! with the server's kubeconfig.
//!
//! The client is required: a machine without it fails this test with a
//! message saying how to install it, rather than skipping it.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Backend, Server};

fn require_python_client() {
    let found = Command::new("python3")
        .args(["-c", "import kubernetes"])
        .output();
    match found {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "the kubernetes Python client is missing: install it with `python3 -m pip install \
             kubernetes` (CI does): {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("python3 not found ({e}); then `python3 -m pip install kubernetes`"),
    }
}

#[test]
fn python_client_creates_selects_patches_watches_and_deletes() {
    require_python_client();
    let server = Server::start_blocking("python", Backend::Embedded, &[]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/smoke.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&server.kubeconfig)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "smoke.py failed ({}): {stdout}{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    assert_eq!(stdout.lines().last(), Some("OK"), "{stdout}");
}
