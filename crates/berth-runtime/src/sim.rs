//! The simulated runtime: a started pod is Running and Ready at once and
//! nothing runs on the host (KWOK's model). Stopping it terminates its
//! containers with exit code 0 (an application that exits cleanly on
//! SIGTERM), so a stopped pod ends Succeeded.
//!
//! An empty `SimRuntime` allocates nothing but itself; each pod costs one
//! map entry with its container statuses. One runtime may serve one
//! simulated node or many (a subscriber then sees UIDs of every node's
//! pods and ignores those it does not know).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use berth_core::clock::Clock;
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, Pod,
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
    subscribers: Subscribers,
}

#[derive(Debug)]
struct SimPod {
    /// `namespace/name`, for log requests.
    key: String,
    status: RuntimePodStatus,
}

impl SimRuntime {
    pub fn new(clock: Clock) -> SimRuntime {
        SimRuntime {
            clock,
            pods: Mutex::new(HashMap::new()),
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
            pods.insert(
                uid.to_string(),
                SimPod {
                    key: pod_key(pod),
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

impl Runtime for SimRuntime {
    fn start_pod(&self, pod: &Pod) -> BoxFuture<'_, Result<(), RuntimeError>> {
        futures::future::ready(self.start(pod)).boxed()
    }

    fn stop_pod(&self, uid: &str, _grace: Duration) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.stop(uid);
        futures::future::ready(Ok(())).boxed()
    }

    fn remove_pod(&self, uid: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        lock(&self.pods).remove(uid);
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
