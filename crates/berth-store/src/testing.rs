//! A private etcd for tests and benchmarks (feature `testing`): one `etcd` process, or a
//! cluster of several members, on free loopback ports with a temporary data directory,
//! killed and removed when dropped.
//!
//! The store's own tests and `berth-bench store` both start etcd this way, so the two measure
//! and check the same configuration; the failover test and `berth-bench failover` start a
//! three-member cluster ([`EtcdServer::start_cluster`]). The binary is `/usr/bin/etcd`
//! (Debian's etcd-server) or `$BERTH_ETCD_BIN`. Nothing here panics: a missing binary or an
//! etcd that never becomes healthy is an [`EtcdStartError`] the caller decides about (the
//! tests fail loudly on it).

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

/// A running private etcd (one member, or a cluster); every member is stopped (killed) and
/// the data directory removed on drop.
pub struct EtcdServer {
    members: Vec<Member>,
    dir: TempDir,
}

/// One etcd process of a private cluster.
struct Member {
    name: String,
    child: Child,
    client_url: String,
}

/// The etcd binary: `$BERTH_ETCD_BIN`, else `/usr/bin/etcd`.
pub fn etcd_binary() -> PathBuf {
    std::env::var_os("BERTH_ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"))
}

/// `n` distinct free loopback ports (all held while choosing, so they differ).
fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

impl EtcdServer {
    /// Starts one etcd with its data in a new temporary directory and waits until it answers.
    pub async fn start() -> Result<Self, EtcdStartError> {
        Self::start_cluster(1).await
    }

    /// Starts a cluster of `members` etcd processes on loopback (one raft group, each member
    /// with its own client and peer port and data directory) and waits until every member
    /// answers a read, which needs the cluster to have elected a leader.
    pub async fn start_cluster(members: usize) -> Result<Self, EtcdStartError> {
        let dir =
            tempfile::tempdir().map_err(|e| EtcdStartError(format!("temporary directory: {e}")))?;
        Self::start_in(dir, members.max(1)).await
    }

    /// Like [`start`](Self::start), with the data in a new temporary directory under `parent`
    /// (to put etcd's WAL on the same file system as something it is compared with).
    pub async fn start_under(parent: &Path) -> Result<Self, EtcdStartError> {
        let dir = tempfile::tempdir_in(parent).map_err(|e| {
            EtcdStartError(format!("temporary directory in {}: {e}", parent.display()))
        })?;
        Self::start_in(dir, 1).await
    }

    async fn start_in(dir: TempDir, count: usize) -> Result<Self, EtcdStartError> {
        let bin = etcd_binary();
        if !bin.exists() {
            return Err(EtcdStartError(format!(
                "etcd binary not found at {} (Debian: apt-get install etcd-server; or set \
                 BERTH_ETCD_BIN)",
                bin.display()
            )));
        }
        let ports = free_ports(2 * count)
            .map_err(|e| EtcdStartError(format!("free loopback ports: {e}")))?;
        let names: Vec<String> = (0..count).map(|i| format!("berth-test-{i}")).collect();
        let peer_urls: Vec<String> = ports[count..]
            .iter()
            .map(|port| format!("http://127.0.0.1:{port}"))
            .collect();
        let initial_cluster = names
            .iter()
            .zip(&peer_urls)
            .map(|(name, url)| format!("{name}={url}"))
            .collect::<Vec<_>>()
            .join(",");
        // From the first spawn on, dropping `server` kills every member started so far, on
        // every error path too.
        let mut server = EtcdServer {
            members: Vec::with_capacity(count),
            dir,
        };
        for (i, name) in names.iter().enumerate() {
            let client_url = format!("http://127.0.0.1:{}", ports[i]);
            let peer_url = &peer_urls[i];
            let log = std::fs::File::create(server.log_path(name))
                .map_err(|e| EtcdStartError(format!("etcd log file: {e}")))?;
            let child = Command::new(&bin)
                .arg(format!("--name={name}"))
                .arg(format!("--data-dir={}", server.member_dir(name).display()))
                .arg(format!("--listen-client-urls={client_url}"))
                .arg(format!("--advertise-client-urls={client_url}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster={initial_cluster}"))
                .arg("--initial-cluster-state=new")
                .arg("--initial-cluster-token=berth-test")
                // Room for a 1.5 MiB value plus the request's own overhead.
                .arg("--max-request-bytes=2097152")
                .arg("--logger=zap")
                .arg("--log-level=error")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| EtcdStartError(format!("running {}: {e}", bin.display())))?;
            server.members.push(Member {
                name: name.clone(),
                child,
                client_url,
            });
        }
        server.wait_healthy().await?;
        Ok(server)
    }

    fn log_path(&self, member: &str) -> PathBuf {
        self.dir.path().join(format!("{member}.log"))
    }

    fn member_dir(&self, member: &str) -> PathBuf {
        self.dir.path().join(member)
    }

    /// Polls until every member answers a read, within [`STARTUP_TIMEOUT`].
    async fn wait_healthy(&mut self) -> Result<(), EtcdStartError> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut healthy = vec![false; self.members.len()];
        loop {
            for (i, healthy) in healthy.iter_mut().enumerate() {
                if let Ok(Some(status)) = self.members[i].child.try_wait() {
                    return Err(EtcdStartError(format!(
                        "etcd member {} exited during startup ({status}): {}",
                        self.members[i].name,
                        self.log()
                    )));
                }
                let member = &self.members[i];
                if *healthy {
                    continue;
                }
                let attempt = tokio::time::timeout(Duration::from_secs(2), async {
                    let store = EtcdStore::connect(&[&member.client_url]).await?;
                    store.current_revision().await
                })
                .await;
                *healthy = matches!(attempt, Ok(Ok(_)));
            }
            if healthy.iter().all(|h| *h) {
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

    /// The first member's client URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.members[0].client_url
    }

    /// Every member's client URL, in member order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The first member's process id (to read its memory use from `/proc`).
    pub fn pid(&self) -> u32 {
        self.members[0].child.id()
    }

    /// The first member's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.member_dir(&self.members[0].name)
    }

    /// What the members wrote to stderr so far (errors only), for failure messages.
    pub fn log(&self) -> String {
        self.members
            .iter()
            .map(|m| {
                let log = std::fs::read_to_string(self.log_path(&m.name)).unwrap_or_default();
                if self.members.len() == 1 {
                    log
                } else {
                    format!("[{}] {log}", m.name)
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A new client of this etcd, over every member.
    pub async fn store(&self) -> crate::Result<EtcdStore> {
        let endpoints = self.endpoints();
        EtcdStore::connect(&endpoints).await
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        // Already exited is fine; the temporary directory is removed after this.
        for member in &mut self.members {
            let _ = member.child.kill();
        }
        for member in &mut self.members {
            let _ = member.child.wait();
        }
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
