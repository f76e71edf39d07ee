//! Upstream-style builders for plugin tests (`pkg/scheduler/testing`'s
//! `MakePod()`, `MakeNode()`, `MakeLabelSelector()`), so upstream's
//! tables read the same here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, NodeSpec, NodeStatus, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity,
    PodSpec, Taint, TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, Time,
};

use crate::framework::NodeInfo;

pub const MATCH_EXPRESSIONS: bool = true;
pub const HONOR: &str = "Honor";
pub const IGNORE: &str = "Ignore";

/// `MakePod()`.
pub fn make_pod() -> PodWrapper {
    PodWrapper(Pod {
        metadata: Default::default(),
        spec: Some(PodSpec::default()),
        status: None,
    })
}

/// `MakeNode()`.
pub fn make_node() -> NodeWrapper {
    NodeWrapper(Node {
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus::default()),
        ..Node::default()
    })
}

/// `MakeLabelSelector()`.
pub fn make_selector() -> SelectorWrapper {
    SelectorWrapper(LabelSelector::default())
}

/// `st.MakeLabelSelector().Exists("foo").Obj()`.
pub fn foo_selector() -> Option<LabelSelector> {
    Some(make_selector().exists("foo").obj())
}

/// `st.MakeLabelSelector().Exists("bar").Obj()`.
pub fn bar_selector() -> Option<LabelSelector> {
    Some(make_selector().exists("bar").obj())
}

/// The `node.kubernetes.io/unschedulable:NoSchedule` taint upstream's
/// topology spread tests put on nodes.
pub fn unschedulable_taint() -> Vec<Taint> {
    vec![Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        effect: "NoSchedule".into(),
        ..Taint::default()
    }]
}

pub struct SelectorWrapper(LabelSelector);

impl SelectorWrapper {
    fn expr(mut self, key: &str, op: &str, values: Vec<&str>) -> Self {
        self.0
            .match_expressions
            .get_or_insert_with(Vec::new)
            .push(LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.into_iter().map(String::from).collect()),
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
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
        self
    }
    pub fn obj(self) -> LabelSelector {
        self.0
    }
}

pub struct PodWrapper(Pod);

impl PodWrapper {
    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.get_or_insert_with(PodSpec::default)
    }
    fn affinity(&mut self) -> &mut Affinity {
        self.spec().affinity.get_or_insert_with(Affinity::default)
    }
    pub fn name(mut self, name: &str) -> Self {
        self.0.metadata.name = Some(name.into());
        self.0.metadata.uid.get_or_insert_with(|| name.into());
        self
    }
    pub fn namespace(mut self, ns: &str) -> Self {
        self.0.metadata.namespace = Some(ns.into());
        self
    }
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
        self
    }
    pub fn labels(mut self, labels: &[(&str, &str)]) -> Self {
        for (k, v) in labels {
            self = self.label(k, v);
        }
        self
    }
    pub fn node(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.into());
        self
    }
    pub fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        self
    }
    pub fn node_selector(mut self, m: &[(&str, &str)]) -> Self {
        self.spec().node_selector = Some(
            m.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        self
    }
    fn node_affinity(mut self, key: &str, op: &str, values: Vec<&str>, expressions: bool) -> Self {
        let req = NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.into_iter().map(String::from).collect()),
        };
        let term = if expressions {
            NodeSelectorTerm {
                match_expressions: Some(vec![req]),
                match_fields: None,
            }
        } else {
            NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![req]),
            }
        };
        self.affinity().node_affinity = Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![term],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        });
        self
    }
    pub fn node_affinity_in(self, key: &str, values: Vec<&str>, expressions: bool) -> Self {
        self.node_affinity(key, "In", values, expressions)
    }
    #[allow(clippy::too_many_arguments)]
    pub fn spread_constraint(
        mut self,
        max_skew: i32,
        key: &str,
        mode: &str,
        selector: Option<LabelSelector>,
        min_domains: Option<i32>,
        node_affinity_policy: Option<&str>,
        node_taints_policy: Option<&str>,
        match_label_keys: Option<Vec<&str>>,
    ) -> Self {
        self.spec()
            .topology_spread_constraints
            .get_or_insert_with(Vec::new)
            .push(TopologySpreadConstraint {
                max_skew,
                topology_key: key.into(),
                when_unsatisfiable: mode.into(),
                label_selector: selector,
                min_domains,
                node_affinity_policy: node_affinity_policy.map(String::from),
                node_taints_policy: node_taints_policy.map(String::from),
                match_label_keys: match_label_keys
                    .map(|k| k.into_iter().map(String::from).collect()),
            });
        self
    }
    fn term(
        selector: LabelSelector,
        key: &str,
        namespaces: Vec<&str>,
        ns_selector: Option<LabelSelector>,
    ) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(selector),
            topology_key: key.into(),
            namespaces: (!namespaces.is_empty())
                .then(|| namespaces.into_iter().map(String::from).collect()),
            namespace_selector: ns_selector,
            ..PodAffinityTerm::default()
        }
    }
    /// `PodAffinity(topologyKey, selector, kind)` for the required kind,
    /// with namespaces.
    pub fn pod_affinity(
        mut self,
        key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
        ns_selector: Option<LabelSelector>,
    ) -> Self {
        let term = Self::term(selector, key, namespaces, ns_selector);
        self.affinity()
            .pod_affinity
            .get_or_insert_with(PodAffinity::default)
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        self
    }
    pub fn pod_anti_affinity(
        mut self,
        key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
        ns_selector: Option<LabelSelector>,
    ) -> Self {
        let term = Self::term(selector, key, namespaces, ns_selector);
        self.affinity()
            .pod_anti_affinity
            .get_or_insert_with(PodAntiAffinity::default)
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        self
    }
    pub fn preferred_pod_affinity(
        mut self,
        weight: i32,
        key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
    ) -> Self {
        let term = Self::term(selector, key, namespaces, None);
        self.affinity()
            .pod_affinity
            .get_or_insert_with(PodAffinity::default)
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: term,
            });
        self
    }
    pub fn preferred_pod_anti_affinity(
        mut self,
        weight: i32,
        key: &str,
        selector: LabelSelector,
        namespaces: Vec<&str>,
    ) -> Self {
        let term = Self::term(selector, key, namespaces, None);
        self.affinity()
            .pod_anti_affinity
            .get_or_insert_with(PodAntiAffinity::default)
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: term,
            });
        self
    }
    /// `Req`: a container requesting these resources.
    pub fn req(mut self, requests: &[(&str, &str)]) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(Container {
            name: format!("c{n}"),
            resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                requests: Some(
                    requests
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.to_string(),
                                k8s_openapi::apimachinery::pkg::api::resource::Quantity(
                                    v.to_string(),
                                ),
                            )
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Container::default()
        });
        self
    }
    /// A container with this image.
    pub fn container_image(mut self, image: &str) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(Container {
            name: format!("c{n}"),
            image: Some(image.into()),
            ..Container::default()
        });
        self
    }
    /// `HostPort`-style: a container claiming `(ip, protocol, port)`.
    pub fn host_port(mut self, ip: &str, protocol: &str, port: i32) -> Self {
        self.spec().containers.push(Container {
            name: "container".into(),
            ports: Some(vec![ContainerPort {
                host_ip: (!ip.is_empty()).then(|| ip.into()),
                protocol: (!protocol.is_empty()).then(|| protocol.into()),
                host_port: Some(port),
                container_port: port,
                ..ContainerPort::default()
            }]),
            ..Container::default()
        });
        self
    }
    pub fn obj(mut self) -> Pod {
        self.0
            .metadata
            .namespace
            .get_or_insert_with(|| "default".into());
        self.0
    }
}

pub struct NodeWrapper(Node);

impl NodeWrapper {
    pub fn name(mut self, name: &str) -> Self {
        self.0.metadata.name = Some(name.into());
        self
    }
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
        self
    }
    pub fn taints(mut self, taints: Vec<Taint>) -> Self {
        self.0.spec.get_or_insert_with(NodeSpec::default).taints = Some(taints);
        self
    }
    pub fn capacity(mut self, entries: &[(&str, &str)]) -> Self {
        let list: BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity> =
            entries
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity(v.to_string()),
                    )
                })
                .collect();
        let status = self.0.status.get_or_insert_with(NodeStatus::default);
        status.capacity = Some(list.clone());
        status.allocatable = Some(list);
        self
    }
    pub fn obj(self) -> Node {
        self.0
    }
}

/// `cache.NewSnapshot(pods, nodes)`: each node with the pods bound to it.
pub fn node_infos(nodes: &[Node], pods: &[Pod]) -> Vec<NodeInfo> {
    nodes
        .iter()
        .map(|n| {
            let name = n.metadata.name.as_deref();
            NodeInfo::with_pods(
                std::sync::Arc::new(n.clone()),
                pods.iter()
                    .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == name),
            )
        })
        .collect()
}
