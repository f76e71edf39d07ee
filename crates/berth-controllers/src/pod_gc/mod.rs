//! The pod garbage collector (upstream `pkg/controller/podgc`): every 20 s
//! of the Clock, a pass ([`collect`]) over the controller's copies of the
//! pods and nodes (berth-client's watches) deletes the pods no kubelet will
//! ever finish: those bound to a Node that no longer exists (after
//! upstream's 40 s quarantine and a check at the API), terminating pods on
//! an out-of-service node, terminating pods never bound, and terminated
//! pods beyond `--terminated-pod-gc-threshold`.

pub mod collect;

use std::time::Duration;

use berth_client::{Change, SharedWatches};
use berth_core::clock::Clock;
use berth_core::object_key::ObjectKey;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;

use crate::metrics::ControllerMetrics;
use crate::pod_writes;
use crate::watched_pod::{WatchedPod, nodes_and_pods};
use collect::{PodGc, PodGcApi};

/// Upstream's controller name, also the `--controllers` name.
pub const CONTROLLER_NAME: &str = "pod-garbage-collector-controller";

/// Settings of the pod garbage collector.
#[derive(Debug, Clone)]
pub struct PodGcConfig {
    /// `--terminated-pod-gc-threshold`: terminated pods kept at most; 0 or
    /// less keeps them all.
    pub terminated_pod_threshold: i64,
    /// How often a pass runs (upstream's `gcCheckPeriod`).
    pub check_period: Duration,
    /// How long a missing node waits before the API is asked for it
    /// (upstream's `quarantineTime`).
    pub quarantine_time: Duration,
}

impl Default for PodGcConfig {
    fn default() -> Self {
        PodGcConfig {
            terminated_pod_threshold: 12500,
            check_period: Duration::from_secs(20),
            quarantine_time: Duration::from_secs(40),
        }
    }
}

/// See the module documentation.
pub struct PodGcController {
    watches: SharedWatches,
    client: kube::Client,
    clock: Clock,
    config: PodGcConfig,
    metrics: ControllerMetrics,
}

impl PodGcController {
    pub fn new(
        watches: SharedWatches,
        clock: Clock,
        config: PodGcConfig,
        metrics: ControllerMetrics,
    ) -> PodGcController {
        let client = watches.client().clone();
        PodGcController {
            watches,
            client,
            clock,
            config,
            metrics,
        }
    }

    /// Runs until dropped: passes start once both watches have listed,
    /// then every check period.
    pub async fn run(self) {
        tracing::info!(controller = CONTROLLER_NAME, "Starting controller");
        let (nodes, pods) = nodes_and_pods(&self.watches);
        let mut nodes = std::pin::pin!(nodes);
        let mut pods = std::pin::pin!(pods);
        let mut state = PodGc::new(
            self.config.terminated_pod_threshold,
            self.config.quarantine_time,
        );
        let api = KubeApi {
            client: self.client.clone(),
            clock: self.clock.clone(),
        };
        let period =
            SignedDuration::try_from(self.config.check_period).unwrap_or(SignedDuration::MAX);
        let (mut nodes_synced, mut pods_synced) = (false, false);
        let mut next_pass: Option<Timestamp> = None;
        loop {
            let wake = self.clock.sleep_until_some(next_pass);
            tokio::select! {
                biased;
                Some(change) = nodes.next() => match change {
                    Change::Upsert(node) => {
                        state.nodes.insert(node.metadata.name.clone().unwrap_or_default(), node);
                    }
                    Change::Delete(gone) => {
                        state.nodes.remove(&gone.key.name);
                    }
                    Change::Synced => nodes_synced = true,
                },
                Some(change) = pods.next() => match change {
                    Change::Upsert(pod) => {
                        state.pods.insert(ObjectKey::of_meta(&pod.metadata), pod);
                    }
                    Change::Delete(gone) => {
                        state.pods.remove(&gone.key);
                    }
                    Change::Synced => pods_synced = true,
                },
                () = wake => {
                    let now = self.clock.now();
                    state.gc(&api, now, &self.metrics).await;
                    next_pass = Some(now.saturating_add(period).unwrap_or(Timestamp::MAX));
                }
            }
            if next_pass.is_none() && nodes_synced && pods_synced {
                next_pass = Some(self.clock.now());
            }
        }
    }
}

/// The pass's API calls through the controller's client.
struct KubeApi {
    client: kube::Client,
    clock: Clock,
}

impl PodGcApi for KubeApi {
    async fn node_exists(&self, name: &str) -> Result<bool, kube::Error> {
        match Api::<Node>::all(self.client.clone())
            .get_metadata(name)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Upstream's `PatchPodStatus` with phase `Failed` and the condition
    /// (conditions merge by type).
    async fn mark_failed(
        &self,
        pod: &WatchedPod,
        condition: Option<&PodCondition>,
    ) -> Result<bool, kube::Error> {
        let mut status = serde_json::json!({"phase": "Failed"});
        if let Some(condition) = condition {
            let mut condition = condition.clone();
            condition.last_transition_time = Some(Time(self.clock.now()));
            status["conditions"] = serde_json::json!([condition]);
        }
        pod_writes::patch_status(&self.client, pod_of(pod), status).await
    }

    async fn force_delete(&self, pod: &WatchedPod) -> Result<bool, kube::Error> {
        pod_writes::delete(&self.client, pod_of(pod), Some(0)).await
    }
}

/// The pod's namespace, name and UID.
fn pod_of(pod: &WatchedPod) -> (&str, &str, &str) {
    let meta = &pod.metadata;
    (
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
        meta.uid.as_deref().unwrap_or(""),
    )
}
