//! A private etcd for tests and benchmarks (feature `testing`): one `etcd` process on free
//! loopback ports with a temporary data directory, killed and removed when dropped.
//!
//! The store's own tests and `berth-bench store` both start etcd this way, so the two measure
//! and check the same configuration. The binary is `/usr/bin/etcd` (Debian's etcd-server) or
//! `$BERTH_ETCD_BIN`. Nothing here panics: a missing binary or an etcd that never becomes
//! healthy is an [`EtcdStartError`] the caller decides about (the tests fail loudly on it).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::{EtcdStore, Store};

/// How long etcd gets to answer its first read.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a private etcd could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start a private etcd: {0}")]
pub struct EtcdStartError(String);

/// A running private etcd; stopped (killed) and its data directory removed on drop.
pub struct EtcdServer {
    child: Child,
    dir: TempDir,
    endpoint: String,
}

/// The etcd binary: `$BERTH_ETCD_BIN`, else `/usr/bin/etcd`.
pub fn etcd_binary() -> PathBuf {
    std::env::var_os("BERTH_ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"))
}

/// Two distinct free loopback ports (both held while choosing, so they differ).
fn free_ports() -> std::io::Result<(u16, u16)> {
    let a = TcpListener::bind("127.0.0.1:0")?;
    let b = TcpListener::bind("127.0.0.1:0")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

impl EtcdServer {
    /// Starts etcd with its data in a new temporary directory and waits until it answers.
    pub async fn start() -> Result<Self, EtcdStartError> {
        let dir =
            tempfile::tempdir().map_err(|e| EtcdStartError(format!("temporary directory: {e}")))?;
        Self::start_in(dir).await
    }

    /// Like [`start`](Self::start), with the data in a new temporary directory under `parent`
    /// (to put etcd's WAL on the same file system as something it is compared with).
    pub async fn start_under(parent: &Path) -> Result<Self, EtcdStartError> {
        let dir = tempfile::tempdir_in(parent).map_err(|e| {
            EtcdStartError(format!("temporary directory in {}: {e}", parent.display()))
        })?;
        Self::start_in(dir).await
    }

    async fn start_in(dir: TempDir) -> Result<Self, EtcdStartError> {
        let bin = etcd_binary();
        if !bin.exists() {
            return Err(EtcdStartError(format!(
                "etcd binary not found at {} (Debian: apt-get install etcd-server; or set \
                 BERTH_ETCD_BIN)",
                bin.display()
            )));
        }
        let (client_port, peer_port) =
            free_ports().map_err(|e| EtcdStartError(format!("free loopback ports: {e}")))?;
        let client_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let log = std::fs::File::create(dir.path().join("etcd.log"))
            .map_err(|e| EtcdStartError(format!("etcd log file: {e}")))?;
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
            .map_err(|e| EtcdStartError(format!("running {}: {e}", bin.display())))?;
        // From here on, dropping `server` kills the child, on every error path too.
        let mut server = EtcdServer {
            child,
            dir,
            endpoint: client_url,
        };
        server.wait_healthy().await?;
        Ok(server)
    }

    /// Polls until etcd answers a read, within [`STARTUP_TIMEOUT`].
    async fn wait_healthy(&mut self) -> Result<(), EtcdStartError> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(EtcdStartError(format!(
                    "etcd exited during startup ({status}): {}",
                    self.log()
                )));
            }
            let attempt = tokio::time::timeout(Duration::from_secs(2), async {
                let store = EtcdStore::connect(&[&self.endpoint]).await?;
                store.current_revision().await
            })
            .await;
            if let Ok(Ok(_)) = attempt {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(EtcdStartError(format!(
                    "etcd did not become healthy within {} s: {}",
                    STARTUP_TIMEOUT.as_secs(),
                    self.log()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The client URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The etcd process id (to read its memory use from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The etcd data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// What etcd wrote to stderr so far (errors only), for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// A new client of this etcd.
    pub async fn store(&self) -> crate::Result<EtcdStore> {
        EtcdStore::connect(&[&self.endpoint]).await
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        // Already exited is fine; the temporary directory is removed after this.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small tmpfs mounted on a temporary directory, for disk-full tests: unmounted and removed
/// when dropped. Mounting needs root (as the tests and CI run); anything else is an error the
/// caller reports (the tests fail rather than skip).
pub struct SmallDisk {
    dir: Option<TempDir>,
}

impl SmallDisk {
    /// Mounts a tmpfs of `bytes` bytes.
    pub fn mount(bytes: u64) -> Result<SmallDisk, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "cannot mount a {bytes}-byte tmpfs on {} (the disk-full tests need root): {}",
                dir.path().display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(SmallDisk { dir: Some(dir) })
    }

    pub fn path(&self) -> &Path {
        self.dir
            .as_ref()
            .map_or(Path::new("/nonexistent"), |d| d.path())
    }

    /// Writes a file of zeros at `path` until the disk is full (or `limit` bytes are written).
    pub fn fill(path: &Path, limit: u64) -> std::io::Result<u64> {
        use std::io::Write;
        let mut file = std::fs::File::create(path)?;
        let block = vec![0u8; 64 * 1024];
        let mut written = 0;
        while written < limit {
            match file.write(&block) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => return Err(e),
            }
        }
        let _ = file.sync_all();
        Ok(written)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = Command::new("umount").arg("-l").arg(dir.path()).status();
            drop(dir);
        }
    }
}
