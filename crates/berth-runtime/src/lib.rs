//! The container runtimes of the berth node agent.
//!
//! The agent (`berth-agent`) decides *which* pods run on its node; a
//! [`Runtime`] runs them and says how they are doing. Two runtimes:
//!
//! - [`sim::SimRuntime`]: simulated nodes. A pod is Running and Ready the
//!   moment it is started; nothing runs on the host. One small map per
//!   runtime, so 150,000 simulated nodes fit in one process.
//! - [`process::ProcessRuntime`]: each container's `command` + `args` runs
//!   as a child process on the host (no images are pulled). Restart policy
//!   with upstream's crash-loop backoff, exit codes, logs per container.
//!
//! [`log_server`] serves the process runtime's logs over HTTPS the way a
//! kubelet does (`/containerLogs/{ns}/{pod}/{container}`), for the API
//! server's `pods/{name}/log`.
//!
//! The contract the agent relies on:
//! - [`Runtime::start_pod`] is idempotent per pod UID: starting a pod the
//!   runtime already has does nothing.
//! - [`Runtime::stop_pod`] resolves when every container of the pod has
//!   exited (SIGTERM, up to `grace`, then SIGKILL); the pod's status then
//!   shows every container terminated and stays until
//!   [`Runtime::remove_pod`].
//! - [`Runtime::subscribe`] delivers the UID of a pod whose status changed
//!   (possibly more than once per change; read [`Runtime::pod_status`] for
//!   the state). Every subscriber receives every notification.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use berth_runtime::{Runtime, sim::SimRuntime, PodPhase};
//! use berth_core::clock::Clock;
//! use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
//!
//! let runtime = SimRuntime::new(Clock::virtual_from("2026-01-01T00:00:00Z".parse().unwrap()));
//! let mut pod = Pod::default();
//! pod.metadata.uid = Some("uid-1".into());
//! pod.spec = Some(PodSpec {
//!     containers: vec![Container { name: "app".into(), ..Default::default() }],
//!     ..Default::default()
//! });
//! runtime.start_pod(&pod).await.unwrap();
//! let status = runtime.pod_status("uid-1").unwrap();
//! assert_eq!(status.phase, PodPhase::Running);
//! assert!(status.ready());
//! # }
//! ```

pub mod cri_log;
pub mod expansion;
pub mod log_server;
pub mod pod_status;
pub mod process;
pub mod sim;
pub mod sim_kubelet;
mod subscribers;

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec};

pub use pod_status::PodPhase;

/// What a runtime can fail at.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The pod object lacks something the runtime needs (UID, spec).
    #[error("pod {pod}: {problem}")]
    InvalidPod { pod: String, problem: String },
    /// The runtime has no pod with this UID.
    #[error("no pod with UID {0} in the runtime")]
    UnknownPod(String),
    /// The runtime has no such container (or no log of it).
    #[error("pod {pod}: no container {container:?}")]
    UnknownContainer { pod: String, container: String },
    /// A log of the instance before the last restart was asked for, and
    /// the container never restarted (the kubelet's words; a 400).
    #[error("previous terminated container {container:?} in pod {pod:?} not found")]
    NoPreviousInstance { pod: String, container: String },
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// A pod as the runtime sees it: the parts of `PodStatus` that come from
/// running containers. [`RuntimePodStatus::apply_to`] turns it into the
/// pod's status (phase, container statuses, conditions).
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimePodStatus {
    /// The pod's phase, from its containers and restart policy (upstream's
    /// `getPhase`).
    pub phase: PodPhase,
    /// One status per container of the spec, in the spec's order.
    pub containers: Vec<ContainerStatus>,
    /// When the runtime accepted the pod (`status.startTime`).
    pub start_time: Timestamp,
}

impl RuntimePodStatus {
    /// Whether the pod is Running with every container ready.
    pub fn ready(&self) -> bool {
        self.phase == PodPhase::Running && self.containers.iter().all(|c| c.ready)
    }
}

/// Where one container instance's log lives, for [`Runtime::log_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub path: PathBuf,
    /// Whether this instance is still running (a follower keeps reading
    /// until it is not).
    pub running: bool,
}

/// A running container's process group, for the agent's figures: the
/// group's processes are the container's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerProcess {
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    pub container: String,
    /// The container's first process, which leads its process group.
    pub pid: i32,
}

/// A container runtime the agent drives. Object safe: the agent holds an
/// `Arc<dyn Runtime>`.
pub trait Runtime: Send + Sync + 'static {
    /// Starts the pod's containers unless the runtime already has this pod
    /// (idempotent per pod UID).
    fn start_pod(&self, pod: &Pod) -> BoxFuture<'_, Result<(), RuntimeError>>;

    /// Stops every container of the pod: SIGTERM, up to `grace`, then
    /// SIGKILL; resolves when every container has exited, and no container
    /// of it is restarted afterwards. Stopping a pod the runtime does not
    /// have is not an error.
    fn stop_pod(&self, uid: &str, grace: Duration) -> BoxFuture<'_, Result<(), RuntimeError>>;

    /// Forgets a stopped pod (its status and logs), once the agent no
    /// longer needs them (the pod object is gone). Stops it first, at once,
    /// if it still runs.
    fn remove_pod(&self, uid: &str) -> BoxFuture<'_, Result<(), RuntimeError>>;

    /// The pod's current status as the runtime sees it; `None` for a pod
    /// the runtime does not have.
    fn pod_status(&self, uid: &str) -> Option<RuntimePodStatus>;

    /// The UIDs of every pod the runtime has (running or stopped, not
    /// removed).
    fn pod_uids(&self) -> Vec<String>;

    /// A stream of UIDs of pods whose runtime status changed.
    fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<String>;

    /// The process groups of running containers on the host (none for a
    /// runtime that runs nothing there).
    fn processes(&self) -> Vec<ContainerProcess> {
        Vec::new()
    }

    /// The log file of a container of a pod identified by namespace and
    /// name (how `kubectl logs` names it): the current instance, or with
    /// `previous` the one before the last restart.
    fn log_file(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<LogFile, RuntimeError>;
}

/// The UID of a pod, or an error naming the pod.
pub(crate) fn pod_uid(pod: &Pod) -> Result<&str, RuntimeError> {
    pod.metadata
        .uid
        .as_deref()
        .filter(|uid| !uid.is_empty())
        .ok_or_else(|| RuntimeError::InvalidPod {
            pod: pod_key(pod),
            problem: "no metadata.uid".into(),
        })
}

/// The spec of a pod, or an error naming the pod.
pub(crate) fn pod_spec(pod: &Pod) -> Result<&PodSpec, RuntimeError> {
    pod.spec.as_ref().ok_or_else(|| RuntimeError::InvalidPod {
        pod: pod_key(pod),
        problem: "no spec".into(),
    })
}

/// A container's status before anything ran: its name and image (no
/// image is pulled, so there is no image ID), no restarts.
pub(crate) fn new_container_status(container: &Container) -> ContainerStatus {
    ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: String::new(),
        ready: false,
        restart_count: 0,
        ..Default::default()
    }
}

/// `namespace/name` of a pod, for messages.
pub(crate) fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or("")
    )
}
