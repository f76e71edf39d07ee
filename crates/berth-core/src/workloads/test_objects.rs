//! Pod and node builders for the workload rules' tests, written the way
//! upstream's tests build their fixtures: a name, then what matters.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Node, NodeSpec, Pod, PodCondition, PodSpec, PodStatus,
    PodTemplateSpec, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::test_util::t;

/// A pod under construction.
pub struct PodBuilder(Pod);

/// A pod named `name` in `default`, with no node, phase or conditions.
pub fn pod(name: &str) -> PodBuilder {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("default".into());
    p.spec = Some(PodSpec::default());
    p.status = Some(PodStatus::default());
    PodBuilder(p)
}

impl PodBuilder {
    fn status(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_with(PodStatus::default)
    }

    /// Bound to `node` (`spec.nodeName`).
    pub fn on(mut self, node: &str) -> Self {
        self.0.spec.get_or_insert_with(PodSpec::default).node_name = Some(node.into());
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.status().phase = Some(phase.into());
        self
    }

    /// Running and Ready since `t(since)`.
    pub fn ready_since(self, since: i64) -> Self {
        self.phase("Running").condition("True", Some(since))
    }

    /// Running, Ready with no transition time.
    pub fn ready_without_time(self) -> Self {
        self.phase("Running").condition("True", None)
    }

    /// One container status per restart count.
    pub fn restarts(mut self, counts: &[i32]) -> Self {
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

    /// Running and not Ready.
    pub fn not_ready(self) -> Self {
        self.phase("Running").condition("False", None)
    }

    fn condition(mut self, status: &str, since: Option<i64>) -> Self {
        self.status().conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: status.into(),
            last_transition_time: since.map(|s| Time(t(s))),
            ..PodCondition::default()
        }]);
        self
    }

    pub fn created_at(mut self, s: i64) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(t(s)));
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.labels, key, value);
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.annotations, key, value);
        self
    }

    /// Being deleted since `t(0)`.
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(t(0)));
        self
    }

    pub fn spec(mut self, f: impl FnOnce(&mut PodSpec)) -> Self {
        f(self.0.spec.get_or_insert_with(PodSpec::default));
        self
    }

    pub fn build(self) -> Pod {
        self.0
    }
}

fn insert(map: &mut Option<BTreeMap<String, String>>, key: &str, value: &str) {
    map.get_or_insert_with(Default::default)
        .insert(key.into(), value.into());
}

/// A node with labels and taints.
pub fn node_with(name: &str, labels: &[(&str, &str)], taints: Vec<Taint>) -> Node {
    let mut n = crate::test_util::node(name, labels);
    n.spec = Some(NodeSpec {
        taints: (!taints.is_empty()).then_some(taints),
        ..NodeSpec::default()
    });
    n
}

/// A label (or annotation) map.
pub fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A pod template labelled `foo=bar` with one container running `image`.
pub fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(label_map(&[("foo", "bar")])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

/// The names of `pods`, for comparing plans.
pub fn names(pods: &[&Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

/// `&str`s as owned strings.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
