//! What the controllers read of a Pod, and only that.
//!
//! The taint eviction controller and the pod garbage collector decode
//! every change of every Pod in the cluster (the taint eviction
//! controller's own evictions included, two per evicted pod). A whole
//! `Pod` is mostly what they never look at (containers, volumes, statuses
//! of containers), and decoding it was a good part of the taint eviction
//! controller's CPU in an eviction burst. [`WatchedPod`] is the projection
//! kube documents for this (as `kube::core::Object` does, with Kubernetes'
//! own field types): of the Pod's metadata its identity (name, namespace,
//! UID, resourceVersion), annotations (a watch bookmark's), timestamps,
//! grace period and finalizers, not its labels, owners or managed fields;
//! `spec.nodeName`, `spec.tolerations`, and `status.phase`,
//! `status.reason` and `status.conditions`; serde skips everything else
//! without allocating.
//! In a process with shared watches (`berth server`, `berth controllers`)
//! the projection is taken from the one decoded Pod instead, which costs a
//! copy of those few fields rather than another parse of the JSON.

use std::borrow::Cow;
use std::collections::BTreeMap;

use berth_client::{Change, SharedWatches};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Deserializer};

/// A Pod as the controllers watch it (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct WatchedPod {
    #[serde(default, deserialize_with = "watched_meta")]
    pub metadata: ObjectMeta,
    pub spec: Option<WatchedPodSpec>,
    pub status: Option<WatchedPodStatus>,
}

/// The part of a `PodSpec` the controllers read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchedPodSpec {
    pub node_name: Option<String>,
    pub tolerations: Option<Vec<Toleration>>,
}

/// The part of a `PodStatus` the controllers read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct WatchedPodStatus {
    pub phase: Option<String>,
    pub reason: Option<String>,
    pub conditions: Option<Vec<PodCondition>>,
}

/// Served by the API as Pods are: same group, version, kind and path.
impl kube::Resource for WatchedPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        <Pod as kube::Resource>::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        <Pod as kube::Resource>::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        <Pod as kube::Resource>::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        <Pod as kube::Resource>::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl WatchedPod {
    /// `spec.nodeName`, "" when unbound.
    pub fn node_name(&self) -> &str {
        self.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("")
    }

    /// `status.phase`, "" when unset.
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("")
    }
}

/// The metadata the controllers read (see the module documentation), as
/// serde decodes it: every other field is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatchedMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    finalizers: Option<Vec<String>>,
}

fn watched_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let meta = Option::<WatchedMeta>::deserialize(deserializer)?;
    Ok(meta.map_or_else(ObjectMeta::default, |m| ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        annotations: m.annotations,
        creation_timestamp: m.creation_timestamp,
        deletion_timestamp: m.deletion_timestamp,
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        finalizers: m.finalizers,
        ..ObjectMeta::default()
    }))
}

/// The same fields copied from a decoded Pod's metadata.
fn watched_meta_of(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        annotations: meta.annotations.clone(),
        creation_timestamp: meta.creation_timestamp.clone(),
        deletion_timestamp: meta.deletion_timestamp.clone(),
        deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
        finalizers: meta.finalizers.clone(),
        ..ObjectMeta::default()
    }
}

impl From<&Pod> for WatchedPod {
    fn from(pod: &Pod) -> WatchedPod {
        WatchedPod {
            metadata: watched_meta_of(&pod.metadata),
            spec: pod.spec.as_ref().map(|spec| WatchedPodSpec {
                node_name: spec.node_name.clone(),
                tolerations: spec.tolerations.clone(),
            }),
            status: pod.status.as_ref().map(|status| WatchedPodStatus {
                phase: status.phase.clone(),
                reason: status.reason.clone(),
                conditions: status.conditions.clone(),
            }),
        }
    }
}

/// The Node and Pod changes of a controller that follows both (Pods as
/// [`WatchedPod`]s), from the process's shared watches.
pub fn nodes_and_pods(
    watches: &SharedWatches,
) -> (
    impl Stream<Item = Change<Node>> + Send + use<>,
    impl Stream<Item = Change<WatchedPod>> + Send + use<>,
) {
    (
        watches
            .nodes()
            .changes()
            .map(|change| change.map(|node| Node::clone(&node))),
        watches
            .pods()
            .changes()
            .map(|change| change.map(|pod| WatchedPod::from(pod.as_ref()))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A Pod as the API server sends it decodes to the same facts either
    /// way: the projection drops nothing the controllers read.
    #[test]
    fn a_watched_pod_holds_what_the_whole_pod_holds_for_the_controller() {
        let cases = [
            (
                "bound, tolerating, scheduled",
                json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                        "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z",
                        "labels": {"app": "web"}, "annotations": {"a": "b"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                            "name": "web-1", "uid": "rs1", "controller": true}],
                        "managedFields": [{"manager": "kubectl", "operation": "Update",
                            "apiVersion": "v1", "fieldsType": "FieldsV1",
                            "fieldsV1": {"f:metadata": {}}}],
                        "finalizers": ["example.com/keep"]},
                    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox",
                            "resources": {"limits": {"cpu": "1"}}}],
                        "tolerations": [{"key": "node.kubernetes.io/unreachable",
                            "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
                    "status": {"phase": "Running", "conditions": [{"type": "PodScheduled",
                        "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"}],
                        "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                            "image": "busybox", "imageID": ""}]}}),
            ),
            (
                "terminating, no status",
                json!({"metadata": {"name": "web", "namespace": "default", "uid": "u2",
                        "deletionTimestamp": "2026-01-01T00:01:00Z"},
                    "spec": {"nodeName": "n2", "containers": []}}),
            ),
            (
                "nothing but metadata",
                json!({"metadata": {"name": "bare"}}),
            ),
            (
                "nulls",
                json!({"metadata": {"name": "x"}, "spec": null, "status": null}),
            ),
        ];
        for (case, object) in cases {
            let whole: Pod = serde_json::from_value(object.clone())
                .unwrap_or_else(|e| panic!("{case}: a Pod: {e}"));
            let watched: WatchedPod = serde_json::from_value(object)
                .unwrap_or_else(|e| panic!("{case}: a WatchedPod: {e}"));
            assert_eq!(watched, WatchedPod::from(&whole), "{case}");
            let meta = &watched.metadata;
            assert_eq!(meta.name, whole.metadata.name, "{case}");
            assert_eq!(meta.finalizers, whole.metadata.finalizers, "{case}");
            assert!(
                meta.labels.is_none()
                    && meta.managed_fields.is_none()
                    && meta.owner_references.is_none(),
                "{case}: kept what no controller reads"
            );
        }
    }

    #[test]
    fn a_watched_pod_is_served_where_pods_are() {
        use kube::Resource;
        assert_eq!(
            WatchedPod::url_path(&(), Some("ns")),
            Pod::url_path(&(), Some("ns"))
        );
        assert_eq!(WatchedPod::api_version(&()), "v1");
        assert_eq!(WatchedPod::kind(&()), "Pod");
    }
}
