//! A real `berth server` for the end-to-end tests, on either store backend:
//! the embedded store in a fresh data dir, or a private etcd (Debian's
//! etcd-server, `/usr/bin/etcd`) started for this one server on a free
//! loopback port, or an etcd the test shares between several servers.
//! Dropping the [`Server`] stops the server, then its own etcd.
//!
//! Each test binary uses part of this module; [`kubectl`] runs the real
//! kubectl against a server.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use berth_store::testing::EtcdServer;

pub mod component;
pub mod kubectl;

/// Where the server keeps its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded redb store in the data dir.
    Embedded,
    /// A private etcd, passed as `--etcd http://127.0.0.1:PORT`.
    Etcd,
}

/// How long the server gets to answer /readyz.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Server {
    server: Child,
    pub kubeconfig: PathBuf,
    pub data_dir: PathBuf,
    /// The server's stderr, for failure messages.
    log: PathBuf,
    // Dropped after the server is killed (see `Drop`).
    etcd: Option<EtcdServer>,
    /// Leave the data dir when dropped (for a restart on it).
    keep_data_dir: bool,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        // Stop etcd only once its client is gone.
        drop(self.etcd.take());
        if !self.keep_data_dir {
            let _ = std::fs::remove_dir_all(&self.data_dir);
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Sends SIGTERM to a child process.
pub fn sigterm(child: &Child) -> std::io::Result<()> {
    signal(child, rustix::process::Signal::TERM)
}

/// Sends a signal to a child process.
pub fn signal(child: &Child, signal: rustix::process::Signal) -> std::io::Result<()> {
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other("no such process ID"))?;
    Ok(rustix::process::kill_process(pid, signal)?)
}

/// Polls `check` every 100 ms for up to 60 s; panics with `what` if it
/// never holds.
pub fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within 60 s");
}

/// A data dir path of its own for a server named `label`, empty.
fn fresh_data_dir(label: &str) -> PathBuf {
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    let data_dir = std::env::temp_dir().join(format!(
        "berth-e2e-{label}-{}-{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&data_dir);
    data_dir
}

impl Server {
    /// Starts a server and waits until it is ready, from synchronous tests.
    pub fn start_blocking(name: &str, backend: Backend, extra: &[&str]) -> Server {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(Server::start(name, backend, extra))
    }

    /// Starts `berth server --listen 127.0.0.1:0` with a fresh data dir (and
    /// a fresh etcd for [`Backend::Etcd`]) and waits until /readyz answers.
    pub async fn start(name: &str, backend: Backend, extra: &[&str]) -> Server {
        let data_dir = fresh_data_dir(&format!("{name}-{backend:?}"));
        Server::start_in(data_dir, backend, extra).await
    }

    /// Starts `berth server` on `data_dir` as it is (a restart when it
    /// holds a cluster), and waits until /readyz answers.
    pub async fn start_in(data_dir: PathBuf, backend: Backend, extra: &[&str]) -> Server {
        let etcd = match backend {
            Backend::Embedded => None,
            Backend::Etcd => Some(EtcdServer::start().await.unwrap_or_else(|e| {
                panic!("{e} (the etcd-backed tests need Debian's etcd-server)")
            })),
        };
        let endpoints = etcd.as_ref().map(|e| e.endpoint().to_string());
        Server::launch(data_dir, endpoints, etcd, extra).await
    }

    /// Starts a server with a fresh data dir on an etcd the test shares
    /// between servers (`endpoints` comma-separated), and waits until
    /// /readyz answers.
    pub async fn start_on_etcd(name: &str, endpoints: &str, extra: &[&str]) -> Server {
        let data_dir = fresh_data_dir(name);
        Server::launch(data_dir, Some(endpoints.to_string()), None, extra).await
    }

    async fn launch(
        data_dir: PathBuf,
        etcd_endpoints: Option<String>,
        etcd: Option<EtcdServer>,
        extra: &[&str],
    ) -> Server {
        let log = data_dir.with_extension("log");
        let stderr = std::fs::File::create(&log).expect("server log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .args(["server", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data_dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr);
        if let Some(endpoints) = &etcd_endpoints {
            command.args(["--etcd", endpoints]);
        }
        let mut server = command.spawn().expect("berth server starts");
        let stdout = server.stdout.take().expect("stdout");
        // The first line comes once the listener is bound; read it off the
        // runtime's threads.
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        })
        .await
        .expect("reader thread")
        .expect("berth server prints its kubeconfig");
        let Some(kubeconfig) = line.trim().strip_prefix("export KUBECONFIG=") else {
            let _ = server.kill();
            let _ = server.wait();
            panic!(
                "unexpected first line {line:?} from berth server: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        let server = Server {
            kubeconfig: PathBuf::from(kubeconfig),
            server,
            data_dir,
            log,
            etcd,
            keep_data_dir: false,
        };
        server.wait_ready().await;
        server
    }

    /// Sends SIGTERM and waits up to `within` for the server to exit; its
    /// exit status and how long it took. The data dir is kept for a restart.
    pub fn terminate(&mut self, within: Duration) -> (std::process::ExitStatus, Duration) {
        self.keep_data_dir = true;
        let started = Instant::now();
        sigterm(&self.server).expect("SIGTERM to berth server");
        loop {
            if let Some(status) = self.server.try_wait().expect("waiting for berth server") {
                return (status, started.elapsed());
            }
            assert!(
                started.elapsed() < within,
                "berth server still running {within:?} after SIGTERM: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's process ID.
    /// `berth sim fleet` of `nodes` nodes named `prefix` and a number, in a
    /// process of its own, joined with this server's join token and
    /// watching with its admin kubeconfig (its data under the server's).
    pub fn sim_fleet(&self, prefix: &str, nodes: usize) -> Child {
        let join_token =
            std::fs::read_to_string(self.data_dir.join("join-token")).expect("the join token");
        Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(["sim", "fleet", "--name-prefix", prefix])
            .arg("--nodes")
            .arg(nodes.to_string())
            .arg("--server")
            .arg(self.url())
            .arg("--ca-file")
            .arg(self.data_dir.join("ca.crt"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--data-dir")
            .arg(self.data_dir.join(format!("{prefix}fleet")))
            .env("BERTH_JOIN_TOKEN", join_token.trim())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("berth sim fleet starts")
    }

    pub fn pid(&self) -> u32 {
        self.server.id()
    }

    /// The API server URL, as its kubeconfig has it.
    pub fn url(&self) -> String {
        let text = std::fs::read_to_string(&self.kubeconfig).expect("read kubeconfig");
        text.lines()
            .find_map(|l| l.trim().strip_prefix("server:"))
            .map(|s| s.trim().trim_matches('"').to_string())
            .expect("a server URL in the kubeconfig")
    }

    /// What the server wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The file the server's stderr goes to.
    pub fn log_path(&self) -> PathBuf {
        self.log.clone()
    }

    /// Stops the server with SIGKILL, as a crash would, and reaps it.
    pub fn kill(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }

    /// A kube-rs client from the server's kubeconfig.
    pub async fn client(&self) -> kube::Client {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("read the kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("kube config from the server's kubeconfig");
        kube::Client::try_from(config).expect("kube client")
    }

    /// Polls /readyz until it answers 200, within [`READY_TIMEOUT`].
    async fn wait_ready(&self) {
        let client = self.client().await;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .expect("request");
            let answer = client.request_text(request).await;
            match answer {
                Ok(_) => return,
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "server not ready: {e}: {}",
                    self.log()
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
