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
    Affinity, Container, ContainerImage, ContainerPort, ContainerStatus, Node, NodeAffinity,
    NodeCondition, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus,
    Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity, PodCondition, PodSpec, PodStatus,
    ResourceRequirements, Taint, Toleration, TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, OwnerReference, Time,
};

use super::strings;

/// The image of the containers [`PodWrapper::req`] adds, as upstream's.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

fn quantities(resources: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    resources
        .iter()
        .map(|(name, quantity)| (name.to_string(), Quantity(quantity.to_string())))
        .collect()
}

/// The metadata setters both wrappers have (name, uid, labels,
/// annotations, creation time), on `self.0.metadata`.
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

        pub fn labels(self, labels: &[(&str, &str)]) -> Self {
            labels
                .iter()
                .fold(self, |object, (k, v)| object.label(k, v))
        }

        pub fn annotation(mut self, key: &str, value: &str) -> Self {
            self.0
                .metadata
                .annotations
                .get_or_insert_default()
                .insert(key.into(), value.into());
            self
        }

        /// Adds an owner reference (upstream's `OwnerReference()`).
        pub fn owner_reference(mut self, reference: OwnerReference) -> Self {
            self.0
                .metadata
                .owner_references
                .get_or_insert_default()
                .push(reference);
            self
        }

        pub fn created_at(mut self, at: Timestamp) -> Self {
            self.0.metadata.creation_timestamp = Some(Time(at));
            self
        }
    };
}

/// [`PodWrapper::node_affinity_in`]'s `expressions` argument: the
/// requirement goes in `matchExpressions` (else `matchFields`).
pub const MATCH_EXPRESSIONS: bool = true;
/// A topology spread constraint's `nodeAffinityPolicy`/`nodeTaintsPolicy`.
pub const HONOR: &str = "Honor";
/// A topology spread constraint's `nodeAffinityPolicy`/`nodeTaintsPolicy`.
pub const IGNORE: &str = "Ignore";

/// Upstream's `st.MakeLabelSelector()`: an empty label selector to build on.
pub fn make_selector() -> SelectorWrapper {
    SelectorWrapper(LabelSelector::default())
}

/// A label selector under construction; [`SelectorWrapper::obj`] is the
/// selector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SelectorWrapper(pub LabelSelector);

impl SelectorWrapper {
    fn expr(mut self, key: &str, operator: &str, values: Vec<&str>) -> Self {
        self.0
            .match_expressions
            .get_or_insert_default()
            .push(LabelSelectorRequirement {
                key: key.into(),
                operator: operator.into(),
                values: Some(strings(&values)),
            });
        self
    }

    pub fn exists(self, key: &str) -> Self {
        self.expr(key, "Exists", vec![])
    }

    pub fn r#in(self, key: &str, values: Vec<&str>) -> Self {
        self.expr(key, "In", values)
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0
            .match_labels
            .get_or_insert_default()
            .insert(key.into(), value.into());
        self
    }

    pub fn obj(self) -> LabelSelector {
        self.0
    }
}

/// A pod affinity term over pods matching `selector` in `namespaces` (none:
/// the pod's own) or the namespaces `namespace_selector` matches.
fn affinity_term(
    topology_key: &str,
    selector: LabelSelector,
    namespaces: Vec<&str>,
    namespace_selector: Option<LabelSelector>,
) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector),
        topology_key: topology_key.into(),
        namespaces: (!namespaces.is_empty()).then(|| strings(&namespaces)),
        namespace_selector,
        ..PodAffinityTerm::default()
    }
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

    fn affinity_mut(&mut self) -> &mut Affinity {
        self.spec().affinity.get_or_insert_default()
    }

    /// Sets `spec.affinity` to exactly this.
    pub fn affinity(mut self, affinity: Affinity) -> Self {
        self.spec().affinity = Some(affinity);
        self
    }

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

    /// A container named `con<N>`, as upstream's `Container()` and
    /// `Req()` name the containers they add.
    fn next_container(&mut self) -> ContainerWrapper {
        make_container().name(&format!("con{}", self.spec().containers.len()))
    }

    /// Adds a container running `image` (upstream's `Container()`).
    pub fn container(mut self, image: &str) -> Self {
        let container = self.next_container().image(image).obj();
        self.spec().containers.push(container);
        self
    }

    /// Adds a container of the pause image requesting `resources`
    /// (upstream's `Req()`).
    pub fn req(mut self, resources: &[(&str, &str)]) -> Self {
        let container = self
            .next_container()
            .image(PAUSE_IMAGE)
            .requests(resources)
            .obj();
        self.spec().containers.push(container);
        self
    }

    /// Sets `spec.containers` to exactly these (upstream's `Containers()`).
    pub fn containers(mut self, containers: Vec<Container>) -> Self {
        self.spec().containers = containers;
        self
    }

    /// Sets `spec.initContainers` to exactly these, an empty list included
    /// (upstream's `InitContainers()`).
    pub fn init_containers(mut self, containers: Vec<Container>) -> Self {
        self.spec().init_containers = Some(containers);
        self
    }

    pub fn restart_policy(mut self, policy: &str) -> Self {
        self.spec().restart_policy = Some(policy.into());
        self
    }

    /// `spec.overhead` (upstream's `Overhead()`).
    pub fn overhead(mut self, resources: &[(&str, &str)]) -> Self {
        self.spec().overhead = Some(quantities(resources));
        self
    }

    /// Pod-level resources (`spec.resources`).
    pub fn resources(mut self, resources: ResourceRequirements) -> Self {
        self.spec().resources = Some(resources);
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

    /// A required node affinity of one term: `key In values`, as a label
    /// expression or (`expressions` false) a field expression (upstream's
    /// `NodeAffinityIn()`).
    pub fn node_affinity_in(mut self, key: &str, values: Vec<&str>, expressions: bool) -> Self {
        let requirement = NodeSelectorRequirement {
            key: key.into(),
            operator: "In".into(),
            values: Some(strings(&values)),
        };
        let term = if expressions {
            NodeSelectorTerm {
                match_expressions: Some(vec![requirement]),
                match_fields: None,
            }
        } else {
            NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![requirement]),
            }
        };
        self.affinity_mut().node_affinity = Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![term],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        });
        self
    }

    /// Adds a topology spread constraint (upstream's `SpreadConstraint()`).
    #[allow(clippy::too_many_arguments)]
    pub fn spread_constraint(
        mut self,
        max_skew: i32,
        topology_key: &str,
        when_unsatisfiable: &str,
        selector: Option<LabelSelector>,
        min_domains: Option<i32>,
        node_affinity_policy: Option<&str>,
        node_taints_policy: Option<&str>,
        match_label_keys: Option<Vec<&str>>,
    ) -> Self {
        self.spec()
            .topology_spread_constraints
            .get_or_insert_default()
            .push(TopologySpreadConstraint {
                max_skew,
                topology_key: topology_key.into(),
                when_unsatisfiable: when_unsatisfiable.into(),
                label_selector: selector,
                min_domains,
                node_affinity_policy: node_affinity_policy.map(String::from),
                node_taints_policy: node_taints_policy.map(String::from),
                match_label_keys: match_label_keys.map(|keys| strings(&keys)),
            });
        self
    }

    /// The pod's required and preferred affinity term lists (`anti`: its
    /// anti-affinity's).
    fn affinity_terms(
        &mut self,
        anti: bool,
    ) -> (
        &mut Option<Vec<PodAffinityTerm>>,
        &mut Option<Vec<WeightedPodAffinityTerm>>,
    ) {
        let affinity = self.affinity_mut();
        if anti {
            let terms = affinity
                .pod_anti_affinity
                .get_or_insert_with(PodAntiAffinity::default);
            (
                &mut terms.required_during_scheduling_ignored_during_execution,
                &mut terms.preferred_during_scheduling_ignored_during_execution,
            )
        } else {
            let terms = affinity
                .pod_affinity
                .get_or_insert_with(PodAffinity::default);
            (
                &mut terms.required_during_scheduling_ignored_during_execution,
                &mut terms.preferred_during_scheduling_ignored_during_execution,
            )
        }
    }

    /// Adds a required pod affinity term (upstream's `PodAffinity()`).
    pub fn pod_affinity(
        mut self,
        topology_key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
        namespace_selector: Option<LabelSelector>,
    ) -> Self {
        let term = affinity_term(topology_key, selector, namespaces, namespace_selector);
        self.affinity_terms(false)
            .0
            .get_or_insert_default()
            .push(term);
        self
    }

    /// Adds a required pod anti-affinity term (upstream's
    /// `PodAntiAffinity()`).
    pub fn pod_anti_affinity(
        mut self,
        topology_key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
        namespace_selector: Option<LabelSelector>,
    ) -> Self {
        let term = affinity_term(topology_key, selector, namespaces, namespace_selector);
        self.affinity_terms(true)
            .0
            .get_or_insert_default()
            .push(term);
        self
    }

    /// Adds a preferred pod affinity term of `weight`.
    pub fn preferred_pod_affinity(
        mut self,
        weight: i32,
        topology_key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
    ) -> Self {
        let pod_affinity_term = affinity_term(topology_key, selector, namespaces, None);
        self.affinity_terms(false)
            .1
            .get_or_insert_default()
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term,
            });
        self
    }

    /// Adds a preferred pod anti-affinity term of `weight`.
    pub fn preferred_pod_anti_affinity(
        mut self,
        weight: i32,
        topology_key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
    ) -> Self {
        let pod_affinity_term = affinity_term(topology_key, selector, namespaces, None);
        self.affinity_terms(true)
            .1
            .get_or_insert_default()
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term,
            });
        self
    }

    /// Adds a container claiming host port `port` on `ip` over `protocol`
    /// (`""`: unset; upstream's `ContainerPort()` with a host port).
    pub fn host_port(mut self, ip: &str, protocol: &str, port: i32) -> Self {
        let mut container = self.next_container().obj();
        container.ports = Some(vec![ContainerPort {
            host_ip: (!ip.is_empty()).then(|| ip.into()),
            protocol: (!protocol.is_empty()).then(|| protocol.into()),
            host_port: Some(port),
            container_port: port,
            ..ContainerPort::default()
        }]);
        self.spec().containers.push(container);
        self
    }

    pub fn host_network(mut self, host_network: bool) -> Self {
        self.spec().host_network = Some(host_network);
        self
    }

    pub fn scheduler_name(mut self, name: &str) -> Self {
        self.spec().scheduler_name = Some(name.into());
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

    /// Adds a status condition that turned `status` at `at` (`None`: no
    /// transition time).
    fn push_condition(mut self, type_: &str, status: &str, at: Option<Timestamp>) -> Self {
        self.status()
            .conditions
            .get_or_insert_default()
            .push(PodCondition {
                type_: type_.into(),
                status: status.into(),
                last_transition_time: at.map(Time),
                ..PodCondition::default()
            });
        self
    }

    /// Adds a status condition that turned `status` at `at`.
    pub fn condition(self, type_: &str, status: &str, at: Timestamp) -> Self {
        self.push_condition(type_, status, Some(at))
    }

    /// Running and Ready since `at`.
    pub fn ready_since(self, at: Timestamp) -> Self {
        self.phase("Running").condition("Ready", "True", at)
    }

    /// Running and Ready, with no transition time.
    pub fn ready(self) -> Self {
        self.phase("Running").push_condition("Ready", "True", None)
    }

    /// Running and not Ready, with no transition time.
    pub fn not_ready(self) -> Self {
        self.phase("Running").push_condition("Ready", "False", None)
    }

    /// One container status per restart count.
    pub fn container_restarts(mut self, counts: &[i32]) -> Self {
        self.status().container_statuses = Some(
            counts
                .iter()
                .map(|&restart_count| ContainerStatus {
                    restart_count,
                    ..ContainerStatus::default()
                })
                .collect(),
        );
        self
    }

    pub fn obj(self) -> Pod {
        self.0
    }

    /// The pod as JSON, for tests that send or store it as a client would.
    pub fn json(self) -> serde_json::Value {
        serde_json::to_value(self.0).expect("a Pod serializes")
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

    /// Adds an image the node holds, under all its names (upstream's
    /// `Images()`, which takes one name per image).
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.status()
            .images
            .get_or_insert_default()
            .push(ContainerImage {
                names: Some(strings(names)),
                size_bytes: Some(size_bytes),
            });
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

    /// The node as JSON, for tests that send or store it as a client would.
    pub fn json(self) -> serde_json::Value {
        serde_json::to_value(self.0).expect("a Node serializes")
    }
}

/// Upstream's `st.MakeContainer()`: an empty container to build on.
pub fn make_container() -> ContainerWrapper {
    ContainerWrapper(Container::default())
}

/// A container under construction; [`ContainerWrapper::obj`] is the
/// container.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerWrapper(pub Container);

impl ContainerWrapper {
    fn resources(&mut self) -> &mut ResourceRequirements {
        self.0.resources.get_or_insert_default()
    }

    pub fn name(mut self, name: &str) -> Self {
        self.0.name = name.into();
        self
    }

    pub fn image(mut self, image: &str) -> Self {
        self.0.image = Some(image.into());
        self
    }

    pub fn command(mut self, command: &[&str]) -> Self {
        self.0.command = Some(strings(command));
        self
    }

    pub fn args(mut self, args: &[&str]) -> Self {
        self.0.args = Some(strings(args));
        self
    }

    /// `resources.requests` (upstream's `ResourceRequests()`).
    pub fn requests(mut self, resources: &[(&str, &str)]) -> Self {
        self.resources().requests = Some(quantities(resources));
        self
    }

    /// `resources.limits` (upstream's `ResourceLimits()`).
    pub fn limits(mut self, resources: &[(&str, &str)]) -> Self {
        self.resources().limits = Some(quantities(resources));
        self
    }

    /// The container's own restart policy (`Always`: a sidecar when it is
    /// an init container).
    pub fn restart_policy(mut self, policy: &str) -> Self {
        self.0.restart_policy = Some(policy.into());
        self
    }

    pub fn obj(self) -> Container {
        self.0
    }
}
