//! The process runtime: each container's `command` + `args` runs as a
//! child process of the agent, on the host. No image is pulled; the image
//! name is only reported back. A container without `command` cannot start
//! (there is no image entrypoint to fall back on).
//!
//! - Environment: `PATH` of the agent, `HOSTNAME` (the pod's name), then
//!   the container's `env` entries with a `value` (`valueFrom` is not
//!   supported: such entries are skipped with a warning). `$(VAR)`
//!   references in env values, command and args are expanded as upstream
//!   does ([`crate::expansion`]).
//! - Working directory: `workingDir`, else the pod's directory.
//! - Each container instance runs in its own process group; its stdout
//!   and stderr go through pipes to
//!   `<root>/<ns>_<pod>_<uid>/<container>/<restartCount>.log` (upstream's
//!   `/var/log/pods` layout) as CRI records with the time of each line
//!   ([`crate::cri_log`]). When an instance's main process exits, the rest
//!   of its group is killed and the container is Terminated once its
//!   output is all in the log.
//! - Restart policy Always / OnFailure / Never. The first restart is at
//!   once; later ones wait upstream's crash-loop backoff (10 s doubling to
//!   5 min; back to 10 s once a container has gone 10 min without a
//!   restart), during which the container is Waiting `CrashLoopBackOff`.
//! - Exit code 0 is `Completed`, anything else `Error`; a failed start is
//!   `StartError` with exit code 128; a signal N is exit code 128 + N.
//! - Stopping: SIGTERM to every container's process group, up to the grace
//!   period (a later, shorter one takes over), then SIGKILL.
//!
//! The runtime keeps no state on disk but the logs. When the agent exits
//! its pods' processes are killed with it (dropping a container's task
//! SIGKILLs its group); if the agent itself is SIGKILLed they are orphaned
//! (and one that writes output then gets SIGPIPE). A restarted agent
//! starts its pods anew.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_core::clock::Clock;
use futures::FutureExt;
use futures::future::BoxFuture;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::cri_log::{self, Stream};
use crate::expansion::expand;
use crate::pod_status::{RestartPolicy, pod_phase, whole_seconds};
use crate::subscribers::{Subscribers, lock};
use crate::{
    LogFile, Runtime, RuntimeError, RuntimePodStatus, new_container_status, pod_key, pod_spec,
    pod_uid,
};

/// Upstream kubelet's crash-loop backoff: 10 s, doubling, at most 5 min.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The delay before a container is started again.
///
/// Follows upstream's `flowcontrol.Backoff` as the kubelet uses it: the
/// first restart of a container happens at once; each later one waits the
/// current delay (10 s first), which then doubles up to 5 min; a delay last
/// set more than twice the maximum ago (10 min) is forgotten.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashLoopBackoff {
    /// The delay the next restart waits and when it was set.
    current: Option<(Duration, Timestamp)>,
}

impl CrashLoopBackoff {
    /// How long to wait before restarting a container that exited at
    /// `finished`, and the backoff for the restart after it.
    pub fn next(&mut self, finished: Timestamp) -> Duration {
        let expired = |set: Timestamp| {
            finished.duration_since(set)
                > SignedDuration::try_from(BACKOFF_MAX * 2).unwrap_or_default()
        };
        match self.current {
            Some((delay, set)) if !expired(set) => {
                self.current = Some(((delay * 2).min(BACKOFF_MAX), finished));
                delay
            }
            _ => {
                self.current = Some((BACKOFF_INITIAL, finished));
                Duration::ZERO
            }
        }
    }
}

/// Runs pods' containers as host processes; see the module docs.
#[derive(Debug)]
pub struct ProcessRuntime {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    clock: Clock,
    root: PathBuf,
    pods: Mutex<HashMap<String, Arc<ProcPod>>>,
    subscribers: Subscribers,
}

#[derive(Debug)]
struct ProcPod {
    uid: String,
    /// `namespace/name`.
    key: String,
    dir: PathBuf,
    policy: RestartPolicy,
    start_time: Timestamp,
    /// Container statuses in spec order, and whether the pod is being
    /// stopped for good.
    state: Mutex<PodState>,
    /// `Some(grace)` once the pod is being stopped.
    stop: watch::Sender<Option<Duration>>,
    /// How many container supervisors still run.
    running: watch::Sender<usize>,
}

#[derive(Debug)]
struct PodState {
    containers: Vec<ContainerStatus>,
    stopping: bool,
}

impl ProcessRuntime {
    /// A runtime keeping pod directories and logs under `root` (created
    /// when needed).
    pub fn new(clock: Clock, root: impl Into<PathBuf>) -> ProcessRuntime {
        ProcessRuntime {
            inner: Arc::new(Inner {
                clock,
                root: root.into(),
                pods: Mutex::new(HashMap::new()),
                subscribers: Subscribers::default(),
            }),
        }
    }

    fn start(&self, pod: &Pod) -> Result<(), RuntimeError> {
        let uid = pod_uid(pod)?;
        let key = pod_key(pod);
        let spec = pod_spec(pod)?;
        if lock(&self.inner.pods).contains_key(uid) {
            return Ok(());
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let dir = self.inner.root.join(format!("{namespace}_{name}_{uid}"));
        for c in &spec.containers {
            let container_dir = dir.join(&c.name);
            std::fs::create_dir_all(&container_dir).map_err(|source| RuntimeError::Io {
                context: format!("creating {}", container_dir.display()),
                source,
            })?;
        }
        let containers = spec
            .containers
            .iter()
            .map(|c| ContainerStatus {
                started: Some(false),
                state: Some(waiting("ContainerCreating", None)),
                ..new_container_status(c)
            })
            .collect();
        let proc_pod = Arc::new(ProcPod {
            uid: uid.to_string(),
            key,
            dir,
            policy: RestartPolicy::parse(spec.restart_policy.as_deref()),
            start_time: self.inner.clock.now(),
            state: Mutex::new(PodState {
                containers,
                stopping: false,
            }),
            stop: watch::Sender::new(None),
            running: watch::Sender::new(spec.containers.len()),
        });
        {
            let mut pods = lock(&self.inner.pods);
            if pods.contains_key(uid) {
                return Ok(());
            }
            pods.insert(uid.to_string(), proc_pod.clone());
        }
        for (index, container) in spec.containers.iter().enumerate() {
            let supervisor = Supervisor {
                inner: self.inner.clone(),
                pod: proc_pod.clone(),
                index,
                container: container.clone(),
                hostname: name.to_string(),
            };
            tokio::spawn(supervisor.run());
        }
        self.inner.subscribers.notify(uid);
        Ok(())
    }

    fn find(&self, uid: &str) -> Option<Arc<ProcPod>> {
        lock(&self.inner.pods).get(uid).cloned()
    }

    async fn stop(&self, uid: &str, grace: Duration) {
        let Some(pod) = self.find(uid) else {
            return;
        };
        lock(&pod.state).stopping = true;
        pod.stop.send_if_modified(|current| match current {
            Some(g) if *g <= grace => false,
            _ => {
                *current = Some(grace);
                true
            }
        });
        let mut running = pod.running.subscribe();
        // The sender lives in `pod`, which we hold: this cannot fail.
        let _ = running.wait_for(|n| *n == 0).await;
        self.inner.subscribers.notify(uid);
    }

    async fn remove(&self, uid: &str) -> Result<(), RuntimeError> {
        self.stop(uid, Duration::ZERO).await;
        let Some(pod) = lock(&self.inner.pods).remove(uid) else {
            return Ok(());
        };
        match tokio::fs::remove_dir_all(&pod.dir).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RuntimeError::Io {
                context: format!("removing {}", pod.dir.display()),
                source: e,
            }),
            _ => Ok(()),
        }
    }
}

impl Runtime for ProcessRuntime {
    fn start_pod(&self, pod: &Pod) -> BoxFuture<'_, Result<(), RuntimeError>> {
        futures::future::ready(self.start(pod)).boxed()
    }

    fn stop_pod(&self, uid: &str, grace: Duration) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let uid = uid.to_string();
        async move {
            self.stop(&uid, grace).await;
            Ok(())
        }
        .boxed()
    }

    fn remove_pod(&self, uid: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let uid = uid.to_string();
        async move { self.remove(&uid).await }.boxed()
    }

    fn pod_status(&self, uid: &str) -> Option<RuntimePodStatus> {
        let pod = self.find(uid)?;
        let state = lock(&pod.state);
        Some(RuntimePodStatus {
            phase: pod_phase(pod.policy, &state.containers, state.stopping),
            containers: state.containers.clone(),
            start_time: pod.start_time,
        })
    }

    fn pod_uids(&self) -> Vec<String> {
        lock(&self.inner.pods).keys().cloned().collect()
    }

    fn processes(&self) -> Vec<crate::ContainerProcess> {
        let pods: Vec<Arc<ProcPod>> = lock(&self.inner.pods).values().cloned().collect();
        let mut out = Vec::new();
        for pod in pods {
            let (namespace, name) = pod.key.split_once('/').unwrap_or(("", &pod.key));
            for c in &lock(&pod.state).containers {
                let running = c.state.as_ref().is_some_and(|s| s.running.is_some());
                let pid = c
                    .container_id
                    .as_deref()
                    .and_then(|id| id.strip_prefix("process://"))
                    .and_then(|pid| pid.parse().ok());
                if let (true, Some(pid)) = (running, pid) {
                    out.push(crate::ContainerProcess {
                        namespace: namespace.to_string(),
                        pod: name.to_string(),
                        uid: pod.uid.clone(),
                        container: c.name.clone(),
                        pid,
                    });
                }
            }
        }
        out
    }

    fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        self.inner.subscribers.subscribe()
    }

    fn log_file(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<LogFile, RuntimeError> {
        let key = format!("{namespace}/{pod}");
        // Of several pods with this name (one deleted, its successor
        // started), the newest.
        let found = lock(&self.inner.pods)
            .values()
            .filter(|p| p.key == key)
            .max_by_key(|p| p.start_time)
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownPod(key.clone()))?;
        let state = lock(&found.state);
        let status = state
            .containers
            .iter()
            .find(|c| c.name == container)
            .ok_or_else(|| RuntimeError::UnknownContainer {
                pod: key.clone(),
                container: container.to_string(),
            })?;
        let running = status.state.as_ref().is_some_and(|s| s.running.is_some());
        let instance = if previous {
            if status.restart_count == 0 {
                return Err(RuntimeError::UnknownContainer {
                    pod: key,
                    container: format!("{container} (previous terminated container)"),
                });
            }
            status.restart_count - 1
        } else {
            status.restart_count
        };
        Ok(LogFile {
            path: log_path(&found.dir, container, instance),
            running: running && !previous,
        })
    }
}

fn log_path(pod_dir: &Path, container: &str, instance: i32) -> PathBuf {
    pod_dir.join(container).join(format!("{instance}.log"))
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_string()),
            message,
        }),
        ..Default::default()
    }
}

/// How long a finished instance's output may take to reach its log.
const LOG_DRAIN: Duration = Duration::from_secs(30);

type Spawned = (Child, Pid, Vec<tokio::task::JoinHandle<()>>);

/// Keeps one container running as its restart policy says, until the pod
/// is stopped.
struct Supervisor {
    inner: Arc<Inner>,
    pod: Arc<ProcPod>,
    index: usize,
    container: Container,
    hostname: String,
}

/// How one container instance ended.
struct Exit {
    code: i32,
    reason: &'static str,
    message: Option<String>,
    started: Option<Timestamp>,
    finished: Timestamp,
}

impl Supervisor {
    async fn run(self) {
        let mut stop = self.pod.stop.subscribe();
        let mut backoff = CrashLoopBackoff::default();
        let mut instance = 0;
        loop {
            if stop.borrow().is_some() {
                break;
            }
            let exit = self.run_instance(instance, &mut stop).await;
            let stopping = stop.borrow().is_some();
            let restart = !stopping && self.pod.policy.restarts(exit.code);
            let delay = if restart {
                backoff.next(exit.finished)
            } else {
                Duration::ZERO
            };
            self.record_exit(&exit, restart.then_some(delay));
            if !restart {
                break;
            }
            if !delay.is_zero() {
                tokio::select! {
                    () = self.inner.clock.sleep(delay) => {}
                    _ = stop.wait_for(Option::is_some) => break,
                }
            }
            instance += 1;
        }
        self.settle();
        self.pod.running.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// A container stopped for good is Terminated: one stopped while it
    /// waited to restart keeps how its last run ended; one stopped before
    /// it ever started is `ContainerStatusUnknown` with 137, as upstream's
    /// kubelet reports a container it cannot find when the pod ends.
    fn settle(&self) {
        let now = Time(whole_seconds(self.inner.clock.now()));
        let mut state = lock(&self.pod.state);
        let Some(c) = state.containers.get_mut(self.index) else {
            return;
        };
        if c.state.as_ref().is_some_and(|s| s.waiting.is_none()) {
            return;
        }
        c.state = match c.last_state.take() {
            Some(last) if last.terminated.is_some() => Some(last),
            _ => Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 137,
                    reason: Some("ContainerStatusUnknown".into()),
                    message: Some(
                        "The container could not be located when the pod was terminated".into(),
                    ),
                    finished_at: Some(now),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        };
        drop(state);
        self.inner.subscribers.notify(&self.pod.uid);
    }

    /// Starts instance number `instance`, waits for it to end (stopping it
    /// if the pod is stopped).
    async fn run_instance(
        &self,
        instance: i32,
        stop: &mut watch::Receiver<Option<Duration>>,
    ) -> Exit {
        let spawned = self.spawn(instance);
        let (mut child, pid, copies) = match spawned {
            Ok(spawned) => spawned,
            Err(message) => {
                self.update(|c| c.restart_count = instance);
                return Exit {
                    code: 128,
                    reason: "StartError",
                    message: Some(message),
                    started: None,
                    finished: self.inner.clock.now(),
                };
            }
        };
        // Should this task be dropped (the agent exiting), the group dies.
        let group = GroupGuard(pid);
        let started = self.inner.clock.now();
        self.update(|c| {
            c.restart_count = instance;
            c.ready = true;
            c.started = Some(true);
            c.container_id = Some(format!("process://{pid}"));
            c.state = Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(whole_seconds(started))),
                }),
                ..Default::default()
            });
        });
        let exited = tokio::select! {
            status = child.wait() => Some(status),
            _ = stop.wait_for(Option::is_some) => None,
        };
        let status = match exited {
            Some(status) => status,
            None => terminate(&mut child, pid, stop, &self.inner.clock).await,
        };
        // The main process is gone: so is the rest of its group.
        drop(group);
        let finished = self.inner.clock.now();
        self.drain(copies).await;
        match status {
            Ok(status) => {
                let code = exit_code(status);
                Exit {
                    code,
                    reason: if code == 0 { "Completed" } else { "Error" },
                    message: None,
                    started: Some(started),
                    finished,
                }
            }
            Err(e) => Exit {
                code: 128,
                reason: "Error",
                message: Some(format!("waiting for the process: {e}")),
                started: Some(started),
                finished,
            },
        }
    }

    /// Waits until the instance's output is in its log (the pipes close
    /// when the last process of the group is gone), so that a terminated
    /// container's log is complete; output still held open by a process
    /// that left the group after [`LOG_DRAIN`] is dropped.
    async fn drain(&self, copies: Vec<tokio::task::JoinHandle<()>>) {
        for mut copy in copies {
            tokio::select! {
                _ = &mut copy => {}
                () = self.inner.clock.sleep(LOG_DRAIN) => {
                    tracing::warn!(pod = %self.pod.key, container = %self.container.name,
                        "a process outside the container's group holds its output; the rest is not logged");
                    copy.abort();
                }
            }
        }
    }

    /// The child, its process ID and the tasks copying its output into the
    /// log, or why it could not start.
    fn spawn(&self, instance: i32) -> Result<Spawned, String> {
        let c = &self.container;
        // Each env value may refer to the variables before it; command and
        // args to all of them.
        let mut vars: HashMap<String, String> = HashMap::new();
        let mut env: Vec<(&str, String)> = Vec::new();
        for var in c.env.iter().flatten() {
            if var.value.is_none() && var.value_from.is_some() {
                tracing::warn!(
                    pod = %self.pod.key,
                    container = %c.name,
                    env = %var.name,
                    "env valueFrom is not supported by the process runtime; the variable is not set"
                );
                continue;
            }
            let value = expand(var.value.as_deref().unwrap_or(""), &vars);
            vars.insert(var.name.clone(), value.clone());
            env.push((&var.name, value));
        }
        let mut argv = c
            .command
            .iter()
            .flatten()
            .chain(c.args.iter().flatten())
            .map(|arg| expand(arg, &vars));
        let program = argv
            .next()
            .filter(|_| c.command.as_ref().is_some_and(|cmd| !cmd.is_empty()));
        let Some(program) = program else {
            return Err(format!(
                "container {:?} has no command: berth's process runtime pulls no images and runs the container's command on the host",
                c.name
            ));
        };
        let log = log_path(&self.pod.dir, &c.name, instance);
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| format!("opening the log {}: {e}", log.display()))?;
        let err_log = out
            .try_clone()
            .map_err(|e| format!("opening the log {}: {e}", log.display()))?;
        let mut command = Command::new(&program);
        command
            .args(argv)
            .env_clear()
            .env("HOSTNAME", &self.hostname)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        command.envs(env);
        let dir = c
            .working_dir
            .as_deref()
            .map(PathBuf::from)
            .unwrap_or_else(|| self.pod.dir.clone());
        command.current_dir(dir);
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting {program:?}: {e}"))?;
        let mut copies = Vec::with_capacity(2);
        if let Some(stdout) = child.stdout.take() {
            copies.push(tokio::spawn(cri_log::copy(
                stdout,
                out,
                Stream::Stdout,
                self.inner.clock.clone(),
            )));
        }
        if let Some(stderr) = child.stderr.take() {
            copies.push(tokio::spawn(cri_log::copy(
                stderr,
                err_log,
                Stream::Stderr,
                self.inner.clock.clone(),
            )));
        }
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)
            .ok_or_else(|| format!("starting {program:?}: no process ID"))?;
        Ok((child, pid, copies))
    }

    /// Records how an instance ended; with `restart_in`, the container
    /// waits to be started again.
    fn record_exit(&self, exit: &Exit, restart_in: Option<Duration>) {
        let terminated = ContainerStateTerminated {
            exit_code: exit.code,
            reason: Some(exit.reason.to_string()),
            message: exit.message.clone(),
            started_at: exit.started.map(|t| Time(whole_seconds(t))),
            finished_at: Some(Time(whole_seconds(exit.finished))),
            ..Default::default()
        };
        let pod_name = self
            .pod
            .key
            .split_once('/')
            .map(|(ns, name)| format!("{name}_{ns}"));
        self.update(|c| {
            c.ready = false;
            c.started = Some(false);
            let terminated_state = ContainerState {
                terminated: Some(ContainerStateTerminated {
                    container_id: c.container_id.clone(),
                    ..terminated.clone()
                }),
                ..Default::default()
            };
            match restart_in {
                Some(delay) if !delay.is_zero() => {
                    c.last_state = Some(terminated_state);
                    c.state = Some(waiting(
                        "CrashLoopBackOff",
                        Some(format!(
                            "back-off {}s restarting failed container={} pod={}({})",
                            delay.as_secs(),
                            c.name,
                            pod_name.as_deref().unwrap_or(""),
                            self.pod.uid
                        )),
                    ));
                }
                Some(_) => {
                    c.last_state = Some(terminated_state);
                    c.state = Some(waiting("ContainerCreating", None));
                }
                None => c.state = Some(terminated_state),
            }
        });
    }

    fn update(&self, change: impl FnOnce(&mut ContainerStatus)) {
        {
            let mut state = lock(&self.pod.state);
            if let Some(c) = state.containers.get_mut(self.index) {
                change(c);
            }
        }
        self.inner.subscribers.notify(&self.pod.uid);
    }
}

/// SIGTERM to the group, wait up to the grace period (which a later stop
/// may shorten), then SIGKILL.
async fn terminate(
    child: &mut Child,
    pid: Pid,
    stop: &mut watch::Receiver<Option<Duration>>,
    clock: &Clock,
) -> std::io::Result<ExitStatus> {
    signal_group(pid, Signal::TERM);
    let term_sent = clock.now();
    loop {
        let grace = stop.borrow_and_update().unwrap_or_default();
        let deadline = add(term_sent, grace);
        tokio::select! {
            status = child.wait() => return status,
            () = clock.sleep_until(deadline) => break,
            changed = stop.changed() => if changed.is_err() { break },
        }
    }
    signal_group(pid, Signal::KILL);
    child.wait().await
}

/// SIGKILLs a container instance's process group when dropped: when its
/// main process has ended, or when the supervising task is dropped.
struct GroupGuard(Pid);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, Signal::KILL);
    }
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

fn signal_group(pid: Pid, signal: Signal) {
    if let Err(e) = kill_process_group(pid, signal)
        && e != rustix::io::Errno::SRCH
    {
        tracing::warn!(pid = pid.as_raw_nonzero().get(), ?signal, error = %e, "signalling a container's process group");
    }
}

/// The container's exit code: the process's, or 128 + the signal that
/// ended it.
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PodPhase;
    use berth_core::test_util::{make_container, make_pod};
    use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector};
    use tokio::sync::mpsc::UnboundedReceiver;

    fn start() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// A runtime on `clock` over a fresh directory, and its notifications.
    fn runtime_on(
        clock: Clock,
    ) -> Result<(tempfile::TempDir, ProcessRuntime, UnboundedReceiver<String>), RuntimeError> {
        let root = tempdir()?;
        let runtime = ProcessRuntime::new(clock, root.path());
        let changes = runtime.subscribe();
        Ok((root, runtime, changes))
    }

    fn status_of(runtime: &ProcessRuntime, uid: &str) -> Result<RuntimePodStatus, RuntimeError> {
        runtime
            .pod_status(uid)
            .ok_or_else(|| RuntimeError::UnknownPod(uid.into()))
    }

    fn tempdir() -> Result<tempfile::TempDir, RuntimeError> {
        tempfile::tempdir().map_err(|source| RuntimeError::Io {
            context: "making a temporary dir".into(),
            source,
        })
    }

    fn at(seconds: i64) -> Timestamp {
        start() + SignedDuration::from_secs(seconds)
    }

    /// Pod `ns/pod-<uid>` whose one container `main` runs `sh -c script`.
    fn shell_pod(uid: &str, policy: &str, script: &str) -> Pod {
        let main = make_container()
            .name("main")
            .image("busybox")
            .command(&["sh", "-c"])
            .args(&[script]);
        make_pod()
            .uid(uid)
            .namespace("ns")
            .name(&format!("pod-{uid}"))
            .restart_policy(policy)
            .containers(vec![main.obj()])
            .obj()
    }

    fn main_container(pod: &mut Pod) -> &mut Container {
        let spec = pod.spec.get_or_insert_with(Default::default);
        if spec.containers.is_empty() {
            spec.containers.push(Container::default());
        }
        &mut spec.containers[0]
    }

    /// Waits for notifications until the pod's status satisfies `done`.
    async fn wait_for(
        runtime: &ProcessRuntime,
        changes: &mut UnboundedReceiver<String>,
        uid: &str,
        done: impl Fn(&RuntimePodStatus) -> bool,
    ) -> RuntimePodStatus {
        loop {
            if let Some(status) = runtime.pod_status(uid)
                && done(&status)
            {
                return status;
            }
            if changes.recv().await.is_none() {
                panic!("the runtime went away");
            }
        }
    }

    fn terminated(status: &RuntimePodStatus) -> Option<&ContainerStateTerminated> {
        status.containers[0].state.as_ref()?.terminated.as_ref()
    }

    /// The output in a log of CRI records, stdout and stderr interleaved.
    fn read(path: &Path) -> String {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut out = Vec::new();
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let record = cri_log::parse(line)
                .unwrap_or_else(|| panic!("not a CRI record: {}", String::from_utf8_lossy(line)));
            out.extend_from_slice(record.content);
            if !record.partial {
                out.push(b'\n');
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn output_is_logged_as_cri_records_with_its_stream() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::real())?;
        runtime
            .start_pod(&shell_pod("u1", "Never", "echo out; echo err >&2"))
            .await?;
        wait_for(&runtime, &mut changes, "u1", |s| s.phase.is_terminal()).await;
        let log = runtime.log_file("ns", "pod-u1", "main", false)?;
        let bytes = std::fs::read(&log.path).map_err(|source| RuntimeError::Io {
            context: "reading the log".into(),
            source,
        })?;
        let mut records: Vec<(cri_log::Stream, String)> = bytes
            .split(|b| *b == b'\n')
            .filter_map(cri_log::parse)
            .map(|r| (r.stream, String::from_utf8_lossy(r.content).into_owned()))
            .collect();
        // The two streams are copied concurrently: compare as a set.
        records.sort_by_key(|(_, text)| text.clone());
        assert_eq!(
            records,
            [
                (cri_log::Stream::Stderr, "err".to_string()),
                (cri_log::Stream::Stdout, "out".to_string()),
            ]
        );
        Ok(())
    }

    /// A named pipe the test reads to learn that a process got somewhere.
    fn fifo(dir: &Path) -> PathBuf {
        let path = dir.join("ready");
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        path
    }

    async fn read_fifo(path: PathBuf) -> String {
        tokio::task::spawn_blocking(move || std::fs::read_to_string(path))
            .await
            .map_or_else(|e| e.to_string(), |r| r.unwrap_or_else(|e| e.to_string()))
    }

    #[tokio::test]
    async fn a_container_runs_its_command_with_args_env_and_working_dir_and_its_output_is_logged()
    -> Result<(), RuntimeError> {
        let root = tempdir()?;
        let work = tempdir()?;
        let runtime = ProcessRuntime::new(Clock::real(), root.path());
        let mut changes = runtime.subscribe();
        let mut p = shell_pod(
            "u1",
            "Never",
            r#"echo "$GREETING $1 from $HOSTNAME"; pwd; echo "from=[$FROM]"; echo "$TWICE $2""#,
        );
        let c = main_container(&mut p);
        c.args.get_or_insert_with(Vec::new).extend([
            "sh".into(),
            "world".into(),
            "$(GREETING)!".into(),
        ]);
        c.working_dir = Some(work.path().display().to_string());
        c.env = Some(vec![
            EnvVar {
                name: "GREETING".into(),
                value: Some("hello".into()),
                ..Default::default()
            },
            EnvVar {
                name: "TWICE".into(),
                value: Some("$(GREETING)$(GREETING) $(NOPE) $$(GREETING)".into()),
                ..Default::default()
            },
            EnvVar {
                name: "FROM".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: "metadata.name".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ]);
        runtime.start_pod(&p).await?;
        let status = wait_for(&runtime, &mut changes, "u1", |s| s.phase.is_terminal()).await;
        assert_eq!(status.phase, PodPhase::Succeeded);
        let log = runtime.log_file("ns", "pod-u1", "main", false)?;
        assert!(!log.running);
        assert_eq!(
            read(&log.path),
            format!(
                "hello world from pod-u1\n{}\nfrom=[]\nhellohello $(NOPE) $(GREETING) hello!\n",
                work.path().display()
            )
        );
        Ok(())
    }

    #[tokio::test]
    async fn exit_codes_decide_reason_and_phase() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::real())?;
        let cases = [
            ("exit 0", 0, "Completed", PodPhase::Succeeded),
            ("exit 3", 3, "Error", PodPhase::Failed),
            // `$$` is upstream's escape for `$`: the shell sees `$$`.
            ("kill -KILL $$$$", 137, "Error", PodPhase::Failed),
        ];
        for (i, (script, code, reason, phase)) in cases.into_iter().enumerate() {
            let uid = format!("u{i}");
            runtime.start_pod(&shell_pod(&uid, "Never", script)).await?;
            let status = wait_for(&runtime, &mut changes, &uid, |s| s.phase.is_terminal()).await;
            assert_eq!(status.phase, phase, "{script}");
            let t = terminated(&status).map(|t| (t.exit_code, t.reason.clone()));
            assert_eq!(t, Some((code, Some(reason.to_string()))), "{script}");
            assert_eq!(status.containers[0].restart_count, 0, "{script}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_container_without_command_fails_to_start() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::real())?;
        let mut p = shell_pod("u1", "Never", "");
        main_container(&mut p).command = None;
        runtime.start_pod(&p).await?;
        let status = wait_for(&runtime, &mut changes, "u1", |s| s.phase.is_terminal()).await;
        assert_eq!(status.phase, PodPhase::Failed);
        let t = terminated(&status).cloned().unwrap_or_default();
        assert_eq!(
            (t.exit_code, t.reason.as_deref()),
            (128, Some("StartError"))
        );
        assert!(t.message.unwrap_or_default().contains("pulls no images"));
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn on_failure_restarts_after_crash_loop_backoff_until_success() -> Result<(), RuntimeError>
    {
        let (_root, runtime, mut changes) = runtime_on(Clock::virtual_from(start()))?;
        // Fails twice, then succeeds (the count lives in the working dir).
        let script = r#"n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo run $n; [ $n -ge 3 ]"#;
        runtime
            .start_pod(&shell_pod("u1", "OnFailure", script))
            .await?;
        let backing_off = wait_for(&runtime, &mut changes, "u1", |s| {
            s.containers[0]
                .state
                .as_ref()
                .and_then(|st| st.waiting.as_ref())
                .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
        })
        .await;
        assert_eq!(backing_off.phase, PodPhase::Running);
        assert_eq!(backing_off.containers[0].restart_count, 1);
        let waiting = backing_off.containers[0]
            .state
            .as_ref()
            .and_then(|s| s.waiting.clone())
            .unwrap_or_default();
        assert_eq!(
            waiting.message.as_deref(),
            Some("back-off 10s restarting failed container=main pod=pod-u1_ns(u1)")
        );
        let last = backing_off.containers[0]
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code);
        assert_eq!(last, Some(1));
        let done = wait_for(&runtime, &mut changes, "u1", |s| s.phase.is_terminal()).await;
        assert_eq!(done.phase, PodPhase::Succeeded);
        assert_eq!(done.containers[0].restart_count, 2);
        // The third run started after the 10 s backoff, in virtual time.
        let started = terminated(&done).and_then(|t| t.started_at.clone());
        assert!(
            started.as_ref().is_some_and(|t| t.0 >= at(10)),
            "{started:?}"
        );
        let previous = runtime.log_file("ns", "pod-u1", "main", true)?;
        assert_eq!(read(&previous.path), "run 2\n");
        assert_eq!(
            read(&runtime.log_file("ns", "pod-u1", "main", false)?.path),
            "run 3\n"
        );
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn always_restarts_even_after_success_until_stopped() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::virtual_from(start()))?;
        runtime
            .start_pod(&shell_pod("u1", "Always", "exit 0"))
            .await?;
        let restarted = wait_for(&runtime, &mut changes, "u1", |s| {
            s.containers[0].restart_count >= 3
        })
        .await;
        assert_eq!(restarted.phase, PodPhase::Running);
        runtime.stop_pod("u1", Duration::from_secs(30)).await?;
        let stopped = status_of(&runtime, "u1")?;
        assert!(stopped.phase.is_terminal(), "{:?}", stopped.phase);
        let count = stopped.containers[0].restart_count;
        // Nothing restarts a stopped pod.
        tokio::time::advance(Duration::from_secs(3600)).await;
        let later = status_of(&runtime, "u1")?;
        assert_eq!(later.containers[0].restart_count, count);
        Ok(())
    }

    #[tokio::test]
    async fn stop_sends_sigterm_and_a_process_that_handles_it_exits_cleanly()
    -> Result<(), RuntimeError> {
        let root = tempdir()?;
        let ready = fifo(root.path());
        let runtime = ProcessRuntime::new(Clock::real(), root.path());
        let script = format!(
            "trap 'echo got TERM; exit 0' TERM; echo ready > {}; while true; do sleep 1; done",
            ready.display()
        );
        runtime
            .start_pod(&shell_pod("u1", "Always", &script))
            .await?;
        assert_eq!(read_fifo(ready).await, "ready\n");
        // A long grace period: the process exits on SIGTERM well before.
        runtime.stop_pod("u1", Duration::from_secs(600)).await?;
        let status = status_of(&runtime, "u1")?;
        assert_eq!(status.phase, PodPhase::Succeeded);
        assert_eq!(terminated(&status).map(|t| t.exit_code), Some(0));
        let log = runtime.log_file("ns", "pod-u1", "main", false)?;
        assert!(read(&log.path).contains("got TERM"));
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn stop_kills_a_process_that_ignores_sigterm_after_the_grace_period()
    -> Result<(), RuntimeError> {
        let root = tempdir()?;
        let ready = fifo(root.path());
        let runtime = ProcessRuntime::new(Clock::virtual_from(start()), root.path());
        let script = format!(
            "trap '' TERM; echo ready > {}; while true; do sleep 1; done",
            ready.display()
        );
        runtime
            .start_pod(&shell_pod("u1", "Always", &script))
            .await?;
        assert_eq!(read_fifo(ready).await, "ready\n");
        let clock = Clock::virtual_from(start());
        let before = clock.now();
        runtime.stop_pod("u1", Duration::from_secs(30)).await?;
        let status = status_of(&runtime, "u1")?;
        assert_eq!(status.phase, PodPhase::Failed);
        assert_eq!(terminated(&status).map(|t| t.exit_code), Some(137));
        assert!(clock.now().duration_since(before) >= SignedDuration::from_secs(30));
        Ok(())
    }

    #[tokio::test]
    async fn remove_stops_the_pod_and_deletes_its_logs() -> Result<(), RuntimeError> {
        let root = tempdir()?;
        let runtime = ProcessRuntime::new(Clock::real(), root.path());
        runtime
            .start_pod(&shell_pod("u1", "Always", "exec sleep 1000"))
            .await?;
        let log = runtime.log_file("ns", "pod-u1", "main", false)?;
        runtime.remove_pod("u1").await?;
        assert_eq!(runtime.pod_status("u1"), None);
        assert!(runtime.pod_uids().is_empty());
        assert!(!log.path.exists());
        assert!(matches!(
            runtime.log_file("ns", "pod-u1", "main", false),
            Err(RuntimeError::UnknownPod(_))
        ));
        Ok(())
    }

    #[tokio::test]
    async fn starting_a_pod_twice_runs_it_once() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::real())?;
        let p = shell_pod("u1", "Never", "echo once");
        runtime.start_pod(&p).await?;
        runtime.start_pod(&p).await?;
        wait_for(&runtime, &mut changes, "u1", |s| s.phase.is_terminal()).await;
        let log = runtime.log_file("ns", "pod-u1", "main", false)?;
        assert_eq!(read(&log.path), "once\n");
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_pod_stopped_while_backing_off_ends_with_its_last_exit() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::virtual_from(start()))?;
        runtime
            .start_pod(&shell_pod("u1", "OnFailure", "exit 1"))
            .await?;
        wait_for(&runtime, &mut changes, "u1", |s| {
            s.containers[0]
                .state
                .as_ref()
                .and_then(|st| st.waiting.as_ref())
                .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
        })
        .await;
        runtime.stop_pod("u1", Duration::from_secs(30)).await?;
        let status = status_of(&runtime, "u1")?;
        assert_eq!(status.phase, PodPhase::Failed);
        let t = terminated(&status).map(|t| (t.exit_code, t.reason.clone()));
        assert_eq!(t, Some((1, Some("Error".into()))));
        assert_eq!(status.containers[0].last_state, None);
        Ok(())
    }

    #[tokio::test]
    async fn a_pod_stopped_before_its_container_started_ends_with_status_unknown()
    -> Result<(), RuntimeError> {
        let root = tempdir()?;
        let runtime = ProcessRuntime::new(Clock::real(), root.path());
        // On this single-threaded runtime the container's supervisor has
        // not run yet when the stop comes.
        runtime
            .start_pod(&shell_pod("u1", "Always", "exec sleep 1000"))
            .await?;
        runtime.stop_pod("u1", Duration::from_secs(30)).await?;
        let status = status_of(&runtime, "u1")?;
        assert_eq!(status.phase, PodPhase::Failed);
        let t = terminated(&status).map(|t| (t.exit_code, t.reason.clone()));
        assert_eq!(t, Some((137, Some("ContainerStatusUnknown".into()))));
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn failed_starts_count_as_restarts() -> Result<(), RuntimeError> {
        let (_root, runtime, mut changes) = runtime_on(Clock::virtual_from(start()))?;
        let mut p = shell_pod("u1", "Always", "");
        main_container(&mut p).working_dir = Some("/no/such/dir".into());
        runtime.start_pod(&p).await?;
        let status = wait_for(&runtime, &mut changes, "u1", |s| {
            s.containers[0].restart_count >= 2
        })
        .await;
        let last = status.containers[0]
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| (t.exit_code, t.reason.clone()));
        assert_eq!(last, Some((128, Some("StartError".into()))));
        runtime.remove_pod("u1").await?;
        Ok(())
    }

    /// Waits until process `pid` has exited: its pidfd becomes readable.
    fn exited(pid: Pid) -> std::io::Result<()> {
        use rustix::event::{PollFd, PollFlags, poll};
        let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
        poll(&mut [PollFd::new(&fd, PollFlags::IN)], None)?;
        Ok(())
    }

    #[test]
    fn when_the_agent_exits_its_pods_processes_die_with_it() -> Result<(), RuntimeError> {
        let io = |source| RuntimeError::Io {
            context: "test runtime".into(),
            source,
        };
        let root = tempdir()?;
        let ready = fifo(root.path());
        let runtime = ProcessRuntime::new(Clock::real(), root.path().join("pods"));
        // The shell and a background child, in one process group.
        let script = format!("sleep 1000 & echo $$$$ $! > {}; wait", ready.display());
        let agent = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io)?;
        let p = shell_pod("u1", "Always", &script);
        agent.block_on(async { runtime.start_pod(&p).await })?;
        let line = agent.block_on(read_fifo(ready));
        let pids: Vec<Pid> = line
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter_map(Pid::from_raw)
            .collect();
        assert_eq!(pids.len(), 2, "{line:?}");
        // The agent's runtime goes away with the container's task in it.
        drop(agent);
        for pid in pids {
            match exited(pid) {
                // Already reaped: gone.
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error()) => {}
                other => other.map_err(io)?,
            }
        }
        Ok(())
    }

    #[test]
    fn crash_loop_backoff_doubles_to_five_minutes_and_resets_after_ten() {
        let mut backoff = CrashLoopBackoff::default();
        let mut t = 0;
        let mut delays = Vec::new();
        for _ in 0..8 {
            let d = backoff.next(at(t));
            delays.push(d.as_secs());
            t += i64::try_from(d.as_secs()).unwrap_or(0) + 1;
        }
        assert_eq!(delays, [0, 10, 20, 40, 80, 160, 300, 300]);
        // Ten minutes and a bit without a crash: back to an immediate restart.
        assert_eq!(backoff.next(at(t + 601)), Duration::ZERO);
        assert_eq!(backoff.next(at(t + 602)), BACKOFF_INITIAL);
    }
}
