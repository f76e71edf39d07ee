//! A berth component (`berth scheduler`, `berth controllers`, `berth sim
//! fleet`, `berth agent`) run as its own process against a server through
//! a kubeconfig, as it would run against any API server. Dropping it sends
//! SIGTERM and reaps it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Component {
    child: Child,
    log: PathBuf,
}

impl Component {
    /// Starts `berth <args...>`, its stderr in a log file beside `dir`.
    pub fn start(dir: &Path, args: &[&str]) -> Component {
        static SERIAL: AtomicUsize = AtomicUsize::new(0);
        let log = dir.with_extension(format!(
            "{}-{}.log",
            args.first().copied().unwrap_or("berth"),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let stderr = std::fs::File::create(&log).expect("component log file");
        let child = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("berth component starts");
        Component { child, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the component wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and waits up to `within` for the exit.
    pub fn terminate(&mut self, within: Duration) -> std::process::ExitStatus {
        super::sigterm(&self.child).expect("SIGTERM to the component");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for the component") {
                return status;
            }
            assert!(
                started.elapsed() < within,
                "component still running {within:?} after SIGTERM: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        if super::sigterm(&self.child).is_err() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Polls `check` until it answers `Some`, within `within`; panics with
/// `what` and `context()` (logs) otherwise.
pub async fn eventually<T, F, Fut>(
    what: &str,
    within: Duration,
    context: impl Fn() -> String,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {within:?}\n{}",
            context()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
