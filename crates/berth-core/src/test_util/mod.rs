//! Builders for tests, written the way upstream's tests write them: taints,
//! tolerations and node selectors (an empty string means "not set"),
//! workload pod templates, and pods, nodes and containers built a field at
//! a time ([`make_pod`], [`make_node`], [`make_container`], upstream's
//! `st.MakePod()` / `st.MakeNode()` / `st.MakeContainer()`).
//!
//! Compiled for berth-core's own tests and, through the `test-util`
//! feature, for other crates' tests (enabled as a dev-dependency feature
//! only). Literal strings (`"NoExecute"`, `"Equal"`) rather than the
//! [`crate::toleration`] constants: that module's tests use these builders.

mod wrappers;

pub use wrappers::{
    ContainerWrapper, HONOR, IGNORE, MATCH_EXPRESSIONS, NodeWrapper, PodWrapper, SelectorWrapper,
    make_container, make_node, make_pod, make_selector,
};

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PodSpec, PodTemplateSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A taint; `""` value means no value.
pub fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

/// A toleration without `tolerationSeconds`; each `""` field is left unset.
pub fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: some(key),
        operator: some(op),
        value: some(value),
        effect: some(effect),
        toleration_seconds: None,
    }
}

/// [`tol`] with `tolerationSeconds` set.
pub fn tol_secs(key: &str, op: &str, value: &str, effect: &str, s: i64) -> Toleration {
    Toleration {
        toleration_seconds: Some(s),
        ..tol(key, op, value, effect)
    }
}

/// `s` seconds after a fixed instant (the taint eviction tests' clock).
pub fn t(s: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_800_000_000 + s).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// Upstream's `createNoExecuteTaint(index)`:
/// `testTaint<index>=test<index>:NoExecute`, added at `t(added)`.
pub fn taint_n(index: u32, added: i64) -> Taint {
    Taint {
        time_added: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(
            added,
        ))),
        ..taint(
            &format!("testTaint{index}"),
            &format!("test{index}"),
            "NoExecute",
        )
    }
}

/// Upstream's `addToleration(pod, index, duration)`: a toleration of
/// `taint_n(index, _)` for `seconds` (negative: forever).
pub fn tol_n(index: u32, seconds: i64) -> Toleration {
    let (key, value) = (format!("testTaint{index}"), format!("test{index}"));
    let (op, effect) = ("Equal", "NoExecute");
    if seconds < 0 {
        tol(&key, op, &value, effect)
    } else {
        tol_secs(&key, op, &value, effect, seconds)
    }
}

/// A `NodeSelectorRequirement`; no values means the field is unset.
pub fn expr(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

/// A `NodeSelectorTerm` of label expressions and field expressions.
pub fn term(
    exprs: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: (!exprs.is_empty()).then_some(exprs),
        match_fields: (!fields.is_empty()).then_some(fields),
    }
}

/// A `NodeSelector` of terms.
pub fn selector(terms: Vec<NodeSelectorTerm>) -> NodeSelector {
    NodeSelector {
        node_selector_terms: terms,
    }
}

/// A node with a name (`""`: none) and labels.
pub fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    let mut node = make_node();
    if !name.is_empty() {
        node = node.name(name);
    }
    labels
        .iter()
        .fold(node, |node, (k, v)| node.label(k, v))
        .obj()
}

/// A pod with a `nodeSelector` and a required node affinity.
pub fn pod_with(node_selector: Option<&[(&str, &str)]>, required: Option<NodeSelector>) -> Pod {
    let affinity = required.map(|ns| Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(ns),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    });
    Pod {
        spec: Some(PodSpec {
            node_selector: node_selector.map(|pairs| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            affinity,
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// A label (or annotation) map.
pub fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `&str`s as owned strings.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The names of `pods`, for comparing plans.
pub fn pod_names(pods: &[&Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

/// A workload's pod template (upstream's controller tests'
/// `newPodTemplate`): labelled `foo=bar`, one container `c` running
/// `image`.
pub fn pod_template(image: &str) -> PodTemplateSpec {
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

/// A PriorityClass `name` of `value`, marked the global default or not,
/// with a preemption policy if given.
pub fn priority_class(
    name: &str,
    value: i32,
    global_default: bool,
    policy: Option<&str>,
) -> k8s_openapi::api::scheduling::v1::PriorityClass {
    k8s_openapi::api::scheduling::v1::PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        value: Some(value),
        global_default: Some(global_default),
        preemption_policy: policy.map(str::to_string),
        description: None,
    }
}

/// A PodDisruptionBudget `name` in `default` at generation 1 selecting
/// `match_labels`, with `minAvailable` / `maxUnavailable` as given
/// (upstream's `newMinAvailablePodDisruptionBudget` and kin).
pub fn pdb(
    name: &str,
    match_labels: &[(&str, &str)],
    min_available: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    max_unavailable: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
) -> k8s_openapi::api::policy::v1::PodDisruptionBudget {
    use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(label_map(match_labels)),
                match_expressions: None,
            }),
            min_available,
            max_unavailable,
            unhealthy_pod_eviction_policy: None,
        }),
        status: None,
    }
}
