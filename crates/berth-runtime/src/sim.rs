//! The simulated runtime: a started pod is Running and Ready at once and
//! nothing runs on the host (KWOK's model). Stopping it terminates its
//! containers with exit code 0 (an application that exits cleanly on
//! SIGTERM), so a stopped pod ends Succeeded.
//!
//! An empty `SimRuntime` allocates nothing but itself; each pod costs one
//! map entry with its container statuses. One runtime may serve one
//! simulated node or many (a subscriber then sees UIDs of every node's
//! pods and ignores those it does not know).

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use berth_core::clock::Clock;
use berth_core::node_stats::{
    ContainerStats, NodeStats, PodReference, PodStats, SIMULATED_SYSTEM, Summary, Usage, WINDOW,
    seed_of, simulated_usage,
};
use berth_core::quantity::Quantity;
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus,
    Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::pod_status::{PodPhase, whole_seconds};
use crate::subscribers::{Subscribers, lock};
use crate::{
    LogFile, Runtime, RuntimeError, RuntimePodStatus, new_container_status, pod_key, pod_spec,
    pod_uid,
};

/// Simulated pods, keyed by UID.
#[derive(Debug)]
pub struct SimRuntime {
    clock: Clock,
    pods: Mutex<HashMap<String, SimPod>>,
    /// The UIDs of each node's pods, so that one node's figures
    /// ([`SimRuntime::summary`]) do not read every node's pods.
    by_node: Mutex<HashMap<String, BTreeSet<String>>>,
    subscribers: Subscribers,
}

#[derive(Debug)]
struct SimPod {
    /// `namespace/name`, for log requests.
    key: String,
    namespace: String,
    name: String,
    /// The node it is bound to (`spec.nodeName`).
    node: String,
    /// Each container's image and requests, for its output and figures.
    containers: Vec<SimContainer>,
    status: RuntimePodStatus,
}

#[derive(Debug)]
struct SimContainer {
    name: String,
    image: String,
    requested: Usage,
}

/// A container's cpu and memory requests as a [`Usage`].
fn requested(container: &Container) -> Usage {
    let requests = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref());
    let get = |name: &str| {
        requests
            .and_then(|r| r.get(name))
            .and_then(|q| Quantity::from_k8s(q).ok())
    };
    Usage {
        nano_cores: get("cpu")
            .map(|q| q.milli_value())
            .and_then(|m| u64::try_from(m).ok())
            .unwrap_or(0)
            .saturating_mul(1_000_000),
        memory_bytes: get("memory")
            .map(|q| q.value())
            .and_then(|b| u64::try_from(b).ok())
            .unwrap_or(0),
    }
}

impl SimRuntime {
    pub fn new(clock: Clock) -> SimRuntime {
        SimRuntime {
            clock,
            pods: Mutex::new(HashMap::new()),
            by_node: Mutex::new(HashMap::new()),
            subscribers: Subscribers::default(),
        }
    }

    fn start(&self, pod: &Pod) -> Result<(), RuntimeError> {
        let uid = pod_uid(pod)?;
        let spec = pod_spec(pod)?;
        {
            let mut pods = lock(&self.pods);
            if pods.contains_key(uid) {
                return Ok(());
            }
            let now = self.clock.now();
            let started = Time(whole_seconds(now));
            let containers = spec
                .containers
                .iter()
                .map(|c| ContainerStatus {
                    container_id: Some(format!("sim://{uid}/{}", c.name)),
                    ready: true,
                    started: Some(true),
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(started.clone()),
                        }),
                        ..Default::default()
                    }),
                    ..new_container_status(c)
                })
                .collect();
            let node = spec.node_name.clone().unwrap_or_default();
            lock(&self.by_node)
                .entry(node.clone())
                .or_default()
                .insert(uid.to_string());
            pods.insert(
                uid.to_string(),
                SimPod {
                    key: pod_key(pod),
                    namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                    name: pod.metadata.name.clone().unwrap_or_default(),
                    node,
                    containers: spec
                        .containers
                        .iter()
                        .map(|c| SimContainer {
                            name: c.name.clone(),
                            image: c.image.clone().unwrap_or_default(),
                            requested: requested(c),
                        })
                        .collect(),
                    status: RuntimePodStatus {
                        phase: PodPhase::Running,
                        containers,
                        start_time: now,
                    },
                },
            );
        }
        self.subscribers.notify(uid);
        Ok(())
    }

    fn stop(&self, uid: &str) {
        let changed = {
            let mut pods = lock(&self.pods);
            let Some(pod) = pods.get_mut(uid) else {
                return;
            };
            if pod.status.phase.is_terminal() {
                false
            } else {
                let finished = Time(whole_seconds(self.clock.now()));
                for c in &mut pod.status.containers {
                    let started_at = c
                        .state
                        .as_ref()
                        .and_then(|s| s.running.as_ref())
                        .and_then(|r| r.started_at.clone());
                    c.ready = false;
                    c.started = Some(false);
                    c.state = Some(ContainerState {
                        terminated: Some(ContainerStateTerminated {
                            exit_code: 0,
                            reason: Some("Completed".into()),
                            started_at,
                            finished_at: Some(finished.clone()),
                            container_id: c.container_id.clone(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                }
                pod.status.phase = PodPhase::Succeeded;
                true
            }
        };
        if changed {
            self.subscribers.notify(uid);
        }
    }
}

impl SimRuntime {
    /// A node's figures now: each running pod's containers at their
    /// requests with seeded noise ([`simulated_usage`], a new draw every
    /// [`WINDOW`]), and the node's the sum of its pods' and its system's.
    pub fn summary(&self, node: &str) -> Summary {
        let now = self.clock.now();
        let time = crate::cri_log::format_time(now);
        let window = u64::try_from(now.as_second()).unwrap_or(0) / WINDOW.as_secs();
        let uids: Vec<String> = lock(&self.by_node)
            .get(node)
            .map(|uids| uids.iter().cloned().collect())
            .unwrap_or_default();
        let pods = lock(&self.pods);
        let mut total = simulated_usage(SIMULATED_SYSTEM, seed_of(&[node], window));
        let mut stats = Vec::new();
        for uid in &uids {
            let Some(pod) = pods.get(uid).filter(|p| !p.status.phase.is_terminal()) else {
                continue;
            };
            let containers = pod
                .containers
                .iter()
                .map(|c| {
                    let usage =
                        simulated_usage(c.requested, seed_of(&[node, uid, &c.name], window));
                    total = total.plus(usage);
                    let (cpu, memory) = usage.stats(&time);
                    ContainerStats {
                        name: c.name.clone(),
                        cpu: Some(cpu),
                        memory: Some(memory),
                    }
                })
                .collect();
            stats.push(PodStats {
                pod_ref: PodReference {
                    name: pod.name.clone(),
                    namespace: pod.namespace.clone(),
                    uid: uid.clone(),
                },
                containers,
            });
        }
        let (cpu, memory) = total.stats(&time);
        Summary {
            node: NodeStats {
                node_name: node.to_string(),
                cpu: Some(cpu),
                memory: Some(memory),
            },
            pods: stats,
        }
    }

    /// The output of a container of a pod on `node`, as CRI log records: a
    /// few made-up lines from when it started (nothing runs, so nothing
    /// else is written), the same every time. `previous` asks for an
    /// instance before a restart, which a simulated container never has:
    /// the kubelet's error.
    pub fn log(
        &self,
        node: &str,
        namespace: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<Vec<u8>, RuntimeError> {
        let key = format!("{namespace}/{pod}");
        let pods = lock(&self.pods);
        let found = pods
            .values()
            .find(|p| p.key == key && p.node == node)
            .ok_or_else(|| RuntimeError::UnknownPod(key.clone()))?;
        let spec = found
            .containers
            .iter()
            .find(|c| c.name == container)
            .ok_or_else(|| RuntimeError::UnknownContainer {
                pod: key.clone(),
                container: container.to_string(),
            })?;
        if previous {
            return Err(RuntimeError::NoPreviousInstance {
                pod: pod.to_string(),
                container: container.to_string(),
            });
        }
        let started = found.status.start_time;
        let lines = [
            format!(
                "starting {} (container {container} of pod {key}, simulated by berth on node {node})",
                if spec.image.is_empty() {
                    "its image"
                } else {
                    &spec.image
                }
            ),
            "nothing runs on a simulated node: these lines are made up by berth".to_string(),
            "ready".to_string(),
        ];
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let at = started
                .checked_add(jiff::SignedDuration::from_millis(
                    i64::try_from(i).unwrap_or(0) * 150,
                ))
                .unwrap_or(started);
            out.extend(crate::cri_log::encode(
                at,
                crate::cri_log::Stream::Stdout,
                false,
                line.as_bytes(),
            ));
        }
        Ok(out)
    }
}

impl Runtime for SimRuntime {
    fn start_pod(&self, pod: &Pod) -> BoxFuture<'_, Result<(), RuntimeError>> {
        futures::future::ready(self.start(pod)).boxed()
    }

    fn stop_pod(&self, uid: &str, _grace: Duration) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.stop(uid);
        futures::future::ready(Ok(())).boxed()
    }

    fn remove_pod(&self, uid: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        if let Some(pod) = lock(&self.pods).remove(uid) {
            let mut by_node = lock(&self.by_node);
            if let Some(uids) = by_node.get_mut(&pod.node) {
                uids.remove(uid);
                if uids.is_empty() {
                    by_node.remove(&pod.node);
                }
            }
        }
        futures::future::ready(Ok(())).boxed()
    }

    fn pod_status(&self, uid: &str) -> Option<RuntimePodStatus> {
        lock(&self.pods).get(uid).map(|p| p.status.clone())
    }

    fn pod_uids(&self) -> Vec<String> {
        lock(&self.pods).keys().cloned().collect()
    }

    fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        self.subscribers.subscribe()
    }

    /// Simulated containers write nothing: an existing container has an
    /// empty log (`/dev/null`).
    fn log_file(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        _previous: bool,
    ) -> Result<LogFile, RuntimeError> {
        let key = format!("{namespace}/{pod}");
        let pods = lock(&self.pods);
        let found = pods
            .values()
            .find(|p| p.key == key)
            .ok_or_else(|| RuntimeError::UnknownPod(key.clone()))?;
        let running = found
            .status
            .containers
            .iter()
            .find(|c| c.name == container)
            .map(|c| c.ready)
            .ok_or_else(|| RuntimeError::UnknownContainer {
                pod: key,
                container: container.to_string(),
            })?;
        Ok(LogFile {
            path: "/dev/null".into(),
            running,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_container, make_pod};
    use jiff::Timestamp;

    fn start() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// Pod `ns/pod-<uid>` with a busybox container of each name.
    fn busybox_pod(uid: &str, containers: &[&str]) -> Pod {
        let containers = containers
            .iter()
            .map(|name| make_container().name(name).image("busybox").obj())
            .collect();
        make_pod()
            .uid(uid)
            .namespace("ns")
            .name(&format!("pod-{uid}"))
            .containers(containers)
            .obj()
    }

    #[tokio::test(start_paused = true)]
    async fn a_started_pod_is_running_and_ready_at_once() -> Result<(), RuntimeError> {
        let runtime = SimRuntime::new(Clock::virtual_from(start()));
        let mut changes = runtime.subscribe();
        runtime.start_pod(&busybox_pod("u1", &["a", "b"])).await?;
        assert_eq!(changes.recv().await.as_deref(), Some("u1"));
        let status = runtime
            .pod_status("u1")
            .ok_or(RuntimeError::UnknownPod("u1".into()))?;
        assert_eq!(status.phase, PodPhase::Running);
        assert!(status.ready());
        assert_eq!(status.start_time, start());
        assert_eq!(
            status
                .containers
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn starting_twice_changes_nothing() -> Result<(), RuntimeError> {
        let runtime = SimRuntime::new(Clock::virtual_from(start()));
        runtime.start_pod(&busybox_pod("u1", &["a"])).await?;
        let first = runtime.pod_status("u1");
        let mut changes = runtime.subscribe();
        tokio::time::advance(Duration::from_secs(5)).await;
        runtime.start_pod(&busybox_pod("u1", &["a"])).await?;
        assert_eq!(runtime.pod_status("u1"), first);
        assert!(changes.try_recv().is_err());
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_pod_succeeds_and_stays_until_removed() -> Result<(), RuntimeError> {
        let runtime = SimRuntime::new(Clock::virtual_from(start()));
        runtime.start_pod(&busybox_pod("u1", &["a"])).await?;
        runtime.stop_pod("u1", Duration::from_secs(30)).await?;
        let status = runtime
            .pod_status("u1")
            .ok_or(RuntimeError::UnknownPod("u1".into()))?;
        assert_eq!(status.phase, PodPhase::Succeeded);
        assert!(!status.ready());
        let terminated = status.containers[0]
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| (t.exit_code, t.reason.clone()));
        assert_eq!(terminated, Some((0, Some("Completed".into()))));
        assert_eq!(runtime.pod_uids(), ["u1"]);
        runtime.remove_pod("u1").await?;
        assert_eq!(runtime.pod_status("u1"), None);
        assert!(runtime.pod_uids().is_empty());
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_an_unknown_pod_is_not_an_error() -> Result<(), RuntimeError> {
        let runtime = SimRuntime::new(Clock::virtual_from(start()));
        runtime.stop_pod("nope", Duration::ZERO).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_pod_without_uid_is_refused() {
        let runtime = SimRuntime::new(Clock::virtual_from(start()));
        let mut p = busybox_pod("u1", &["a"]);
        p.metadata.uid = None;
        assert!(matches!(
            runtime.start_pod(&p).await,
            Err(RuntimeError::InvalidPod { .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn simulated_logs_are_empty() -> Result<(), RuntimeError> {
        let runtime = SimRuntime::new(Clock::virtual_from(start()));
        runtime.start_pod(&busybox_pod("u1", &["a"])).await?;
        let log = runtime.log_file("ns", "pod-u1", "a", false)?;
        assert_eq!(log.path, std::path::PathBuf::from("/dev/null"));
        assert!(matches!(
            runtime.log_file("ns", "pod-u1", "zzz", false),
            Err(RuntimeError::UnknownContainer { .. })
        ));
        Ok(())
    }
}
