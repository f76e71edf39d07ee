//! Pods and nodes built a field at a time, as upstream's scheduler tests
//! build them (`pkg/scheduler/testing/wrappers.go`: `st.MakePod()`,
//! `st.MakeNode()`):
//!
//! ```
//! use berth_core::test_util::{make_node, make_pod, taint, tol_secs};
//!
//! let node = make_node().name("n1").label("zone", "a").taints(vec![taint("k", "v", "NoExecute")]).obj();
//! let pod = make_pod()
//!     .name("web")
//!     .namespace("default")
//!     .node("n1")
//!     .toleration(tol_secs("k", "Exists", "", "NoExecute", 60))
//!     .obj();
//! # assert_eq!(pod.spec.and_then(|s| s.node_name).as_deref(), node.metadata.name.as_deref());
//! ```
//!
//! Nothing is set that the test does not set (a fresh wrapper is the empty
//! object), so a test says exactly what its case depends on.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec, PodStatus,
    ResourceRequirements, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The image of the containers [`PodWrapper::req`] adds, as upstream's.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

fn quantities(resources: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    resources
        .iter()
        .map(|(name, quantity)| (name.to_string(), Quantity(quantity.to_string())))
        .collect()
}

/// The metadata setters both wrappers have (name, uid, label, creation
/// time), on `self.0.metadata`.
macro_rules! metadata_setters {
    () => {
        pub fn name(mut self, name: &str) -> Self {
            self.0.metadata.name = Some(name.into());
            self
        }

        pub fn uid(mut self, uid: &str) -> Self {
            self.0.metadata.uid = Some(uid.into());
            self
        }

        pub fn label(mut self, key: &str, value: &str) -> Self {
            self.0
                .metadata
                .labels
                .get_or_insert_default()
                .insert(key.into(), value.into());
            self
        }

        pub fn created_at(mut self, at: Timestamp) -> Self {
            self.0.metadata.creation_timestamp = Some(Time(at));
            self
        }
    };
}

/// Upstream's `st.MakePod()`: an empty pod to build on.
pub fn make_pod() -> PodWrapper {
    PodWrapper(Pod::default())
}

/// A pod under construction; [`PodWrapper::obj`] is the pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodWrapper(pub Pod);

impl PodWrapper {
    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.get_or_insert_default()
    }

    fn status(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_default()
    }

    metadata_setters!();

    pub fn namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self
    }

    /// Being deleted since `at` (`deletionTimestamp`; upstream's
    /// `Terminating()`).
    pub fn terminating(mut self, at: Timestamp) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(at));
        self
    }

    /// Bound to `node` (`spec.nodeName`; upstream's `Node()`).
    pub fn node(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.into());
        self
    }

    /// Adds a container running `image`, named `con<N>` as upstream's
    /// `Container()` names them.
    pub fn container(mut self, image: &str) -> Self {
        let spec = self.spec();
        let name = format!("con{}", spec.containers.len());
        spec.containers.push(Container {
            name,
            image: Some(image.into()),
            ..Container::default()
        });
        self
    }

    /// Adds a container of the pause image requesting `resources`
    /// (upstream's `Req()`).
    pub fn req(mut self, resources: &[(&str, &str)]) -> Self {
        let spec = self.spec();
        let name = format!("con{}", spec.containers.len());
        spec.containers.push(Container {
            name,
            image: Some(PAUSE_IMAGE.into()),
            resources: Some(ResourceRequirements {
                requests: Some(quantities(resources)),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        });
        self
    }

    pub fn toleration(mut self, toleration: Toleration) -> Self {
        self.spec()
            .tolerations
            .get_or_insert_default()
            .push(toleration);
        self
    }

    /// Sets `spec.tolerations` to exactly these (an empty list included).
    pub fn tolerations(mut self, tolerations: Vec<Toleration>) -> Self {
        self.spec().tolerations = Some(tolerations);
        self
    }

    pub fn node_selector(mut self, pairs: &[(&str, &str)]) -> Self {
        self.spec().node_selector = Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        self
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.spec().priority = Some(priority);
        self
    }

    pub fn termination_grace_period(mut self, seconds: i64) -> Self {
        self.spec().termination_grace_period_seconds = Some(seconds);
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.status().phase = Some(phase.into());
        self
    }

    /// Adds a status condition that turned `status` at `at`.
    pub fn condition(mut self, type_: &str, status: &str, at: Timestamp) -> Self {
        self.status()
            .conditions
            .get_or_insert_default()
            .push(PodCondition {
                type_: type_.into(),
                status: status.into(),
                last_transition_time: Some(Time(at)),
                ..PodCondition::default()
            });
        self
    }

    pub fn obj(self) -> Pod {
        self.0
    }
}

/// Upstream's `st.MakeNode()`: an empty node to build on.
pub fn make_node() -> NodeWrapper {
    NodeWrapper(Node::default())
}

/// A node under construction; [`NodeWrapper::obj`] is the node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeWrapper(pub Node);

impl NodeWrapper {
    fn spec(&mut self) -> &mut NodeSpec {
        self.0.spec.get_or_insert_default()
    }

    fn status(&mut self) -> &mut NodeStatus {
        self.0.status.get_or_insert_default()
    }

    metadata_setters!();

    /// Sets `spec.taints` to exactly these (an empty list included).
    pub fn taints(mut self, taints: Vec<Taint>) -> Self {
        self.spec().taints = Some(taints);
        self
    }

    pub fn unschedulable(mut self, unschedulable: bool) -> Self {
        self.spec().unschedulable = Some(unschedulable);
        self
    }

    /// Capacity and allocatable both (upstream's `Capacity()`).
    pub fn capacity(mut self, resources: &[(&str, &str)]) -> Self {
        let status = self.status();
        status.capacity = Some(quantities(resources));
        status.allocatable = Some(quantities(resources));
        self
    }

    /// Allocatable alone.
    pub fn allocatable(mut self, resources: &[(&str, &str)]) -> Self {
        self.status().allocatable = Some(quantities(resources));
        self
    }

    /// Adds a status condition.
    pub fn condition(mut self, type_: &str, status: &str) -> Self {
        self.status()
            .conditions
            .get_or_insert_default()
            .push(NodeCondition {
                type_: type_.into(),
                status: status.into(),
                ..NodeCondition::default()
            });
        self
    }

    /// Adds a status condition with its heartbeat and transition times.
    pub fn condition_at(
        mut self,
        type_: &str,
        status: &str,
        heartbeat: Timestamp,
        transition: Timestamp,
    ) -> Self {
        self.status()
            .conditions
            .get_or_insert_default()
            .push(NodeCondition {
                type_: type_.into(),
                status: status.into(),
                last_heartbeat_time: Some(Time(heartbeat)),
                last_transition_time: Some(Time(transition)),
                ..NodeCondition::default()
            });
        self
    }

    pub fn obj(self) -> Node {
        self.0
    }
}
