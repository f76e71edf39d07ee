//! Starts a real, private etcd for one test: loopback only, free ports, a temporary data
//! directory, stopped (killed) when dropped. A missing etcd binary fails the test loudly: CI
//! installs it, so its absence is a broken environment, not a reason to skip.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use berth_store::{EtcdStore, Store};
use tempfile::TempDir;

pub struct EtcdServer {
    child: Child,
    dir: TempDir,
    pub endpoint: String,
}

fn etcd_binary() -> PathBuf {
    let bin = std::env::var_os("BERTH_ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"));
    assert!(
        bin.exists(),
        "etcd binary not found at {}: the etcd backend tests need a real etcd \
         (Debian: apt-get install etcd-server; or set BERTH_ETCD_BIN)",
        bin.display()
    );
    bin
}

/// Two distinct free loopback ports (held together while choosing so they differ).
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let b = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    (
        a.local_addr().expect("addr").port(),
        b.local_addr().expect("addr").port(),
    )
}

impl EtcdServer {
    pub async fn start() -> Self {
        let bin = etcd_binary();
        let dir = tempfile::tempdir().expect("temp dir");
        let (client_port, peer_port) = free_ports();
        let client_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("log file");
        let child = Command::new(&bin)
            .arg("--name=berth-test")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=berth-test={peer_url}"))
            // Room for a 1.5 MiB value plus the request's own overhead.
            .arg("--max-request-bytes=2097152")
            .arg("--logger=zap")
            .arg("--log-level=error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let mut server = EtcdServer {
            child,
            dir,
            endpoint: client_url,
        };
        server.wait_healthy().await;
        server
    }

    /// Polls until etcd answers a read, within a bounded time.
    async fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("etcd exited during startup ({status}): {}", self.log());
            }
            let attempt = tokio::time::timeout(Duration::from_secs(2), async {
                let store = EtcdStore::connect(&[&self.endpoint]).await?;
                store.current_revision().await
            })
            .await;
            if let Ok(Ok(_)) = attempt {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd did not become healthy within 30 s: {}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    pub async fn store(&self) -> EtcdStore {
        EtcdStore::connect(&[&self.endpoint])
            .await
            .expect("connect to test etcd")
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
