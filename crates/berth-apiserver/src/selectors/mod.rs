//! List/watch filtering: label selectors (`labelSelector=`) and field
//! selectors (`fieldSelector=`), parsed and evaluated exactly as
//! kube-apiserver does, with its error messages (all answered as HTTP 400).
//!
//! - label selectors: berth-core's [`berth_core::labels`] (the
//!   `labels.Parse` syntax and matching), re-exported here.
//! - [`fields`]: the `fields.ParseSelector` syntax and matching.
//! - [`SelectableKind`] and [`selectable_fields`]: which field labels each
//!   served kind accepts (upstream's field label conversion functions in
//!   `pkg/apis/core/v1/conversion.go` and `pkg/apis/apps/v1/conversion.go`,
//!   or the default metadata-only one) and
//!   the field set an object exposes to selectors (the registry strategies'
//!   `ToSelectableFields`), read from the object's v1 JSON.

pub mod fields;

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::Deserialize;
use serde_json::Value;

use crate::json_path::{arr_at, bool_at, i64_at, str_at};

pub use berth_core::labels::{LabelSelector, LabelSelectorError, Operator, Requirement};
pub use fields::{FieldOperator, FieldSelector, FieldSelectorError, FieldTerm};

/// A workload's `spec.selector` (a `metav1.LabelSelector`) in the label
/// query syntax, as `LabelSelectorAsSelector(...).String()` writes it
/// (`app=web,tier in (a,b)`; "" when it selects everything or is absent),
/// or why it does not parse: a Scale's `status.selector`, `kubectl get`'s
/// SELECTOR column.
pub fn spec_selector_query(object: &Value) -> Result<String, String> {
    let Some(selector) = object.pointer("/spec/selector") else {
        return Ok(String::new());
    };
    let selector =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector::deserialize(selector)
            .map_err(|e| e.to_string())?;
    let parsed = berth_core::labels::label_selector_as_selector(Some(&selector))
        .map_err(|e| e.to_string())?;
    Ok(parsed.map(|s| s.to_string()).unwrap_or_default())
}

/// The kinds berth serves field selectors for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelectableKind {
    /// core/v1 Pod.
    Pod,
    /// core/v1 Node.
    Node,
    /// core/v1 Event.
    Event,
    /// core/v1 Namespace.
    Namespace,
    /// apps/v1 ReplicaSet (`status.replicas`).
    ReplicaSet,
    /// core/v1 Secret (`type`).
    Secret,
    /// A kind without field labels of its own (coordination.k8s.io/v1
    /// Lease, and any kind a strategy does not name): upstream's default
    /// conversion, `metadata.name` and `metadata.namespace` only.
    MetadataOnly { namespaced: bool },
}

impl FromStr for SelectableKind {
    type Err = FieldSelectorError;

    /// Accepts the kind (`Pod`) or the resource (`pods`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "Pod" | "pods" => SelectableKind::Pod,
            "Node" | "nodes" => SelectableKind::Node,
            "Event" | "events" => SelectableKind::Event,
            "Namespace" | "namespaces" => SelectableKind::Namespace,
            "ReplicaSet" | "replicasets" => SelectableKind::ReplicaSet,
            "Secret" | "secrets" => SelectableKind::Secret,
            "Lease" | "leases" => SelectableKind::MetadataOnly { namespaced: true },
            _ => return Err(FieldSelectorError::UnsupportedKind(s.to_string())),
        })
    }
}

impl SelectableKind {
    /// Whether objects of this kind live in a namespace (and so expose
    /// `metadata.namespace`).
    pub fn is_namespaced(self) -> bool {
        match self {
            SelectableKind::Node | SelectableKind::Namespace => false,
            SelectableKind::MetadataOnly { namespaced } => namespaced,
            SelectableKind::Pod
            | SelectableKind::Event
            | SelectableKind::ReplicaSet
            | SelectableKind::Secret => true,
        }
    }

    /// The field labels the API server accepts for this kind, in upstream's
    /// order (`spec.host`, a pod alias, excluded).
    pub fn supported_field_labels(self) -> &'static [&'static str] {
        match self {
            SelectableKind::Pod => &[
                "metadata.name",
                "metadata.namespace",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            ],
            SelectableKind::Node => &["metadata.name", "spec.unschedulable"],
            SelectableKind::Event => &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
                "metadata.namespace",
                "metadata.name",
            ],
            SelectableKind::Namespace => &["status.phase", "metadata.name"],
            SelectableKind::ReplicaSet => {
                &["metadata.name", "metadata.namespace", "status.replicas"]
            }
            SelectableKind::Secret => &["type", "metadata.namespace", "metadata.name"],
            SelectableKind::MetadataOnly { .. } => &["metadata.name", "metadata.namespace"],
        }
    }

    /// The kind's field label conversion: the (possibly renamed) label, or
    /// upstream's error for an unsupported one.
    pub fn convert_field_label(self, label: &str) -> Result<&str, FieldSelectorError> {
        // Old v1 clients send `spec.host`; upstream maps it to the new name.
        if self == SelectableKind::Pod && label == "spec.host" {
            return Ok("spec.nodeName");
        }
        if self.supported_field_labels().contains(&label) {
            return Ok(label);
        }
        Err(match self {
            // Without a conversion function of its own (Lease), upstream's
            // default one words the error differently.
            SelectableKind::MetadataOnly { .. } => {
                FieldSelectorError::UnknownDefaultLabel(label.to_string())
            }
            _ => FieldSelectorError::UnsupportedLabel(label.to_string()),
        })
    }

    /// The field set an object of this kind exposes to field selectors.
    ///
    /// Mirrors upstream's `ToSelectableFields` for the kind, reading the v1
    /// JSON leniently (absent fields are Go zero values). Some accepted
    /// labels are deliberately absent, as upstream: `status.podIPs` for pods
    /// (so it only ever equals ""), while namespaces also expose the legacy
    /// `name` field that no selector can name.
    pub fn selectable_fields(self, object: &Value) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut put = |k: &str, v: &str| {
            out.insert(k.to_string(), v.to_string());
        };
        put("metadata.name", str_at(object, &["metadata", "name"]));
        if self.is_namespaced() {
            put(
                "metadata.namespace",
                str_at(object, &["metadata", "namespace"]),
            );
        }
        match self {
            SelectableKind::Pod => {
                put("spec.nodeName", str_at(object, &["spec", "nodeName"]));
                put(
                    "spec.restartPolicy",
                    str_at(object, &["spec", "restartPolicy"]),
                );
                put(
                    "spec.schedulerName",
                    str_at(object, &["spec", "schedulerName"]),
                );
                // v1's deprecated `serviceAccount` fills the internal field
                // when `serviceAccountName` is empty (v1 -> internal conversion).
                let mut sa = str_at(object, &["spec", "serviceAccountName"]);
                if sa.is_empty() {
                    sa = str_at(object, &["spec", "serviceAccount"]);
                }
                put("spec.serviceAccountName", sa);
                let host_network = bool_at(object, &["spec", "hostNetwork"]);
                put(
                    "spec.hostNetwork",
                    if host_network { "true" } else { "false" },
                );
                put("status.phase", str_at(object, &["status", "phase"]));
                put("status.podIP", pod_ip(object));
                put(
                    "status.nominatedNodeName",
                    str_at(object, &["status", "nominatedNodeName"]),
                );
            }
            SelectableKind::Node => {
                let unschedulable = bool_at(object, &["spec", "unschedulable"]);
                put(
                    "spec.unschedulable",
                    if unschedulable { "true" } else { "false" },
                );
            }
            SelectableKind::Event => {
                for f in [
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "apiVersion",
                    "resourceVersion",
                    "fieldPath",
                ] {
                    put(
                        &format!("involvedObject.{f}"),
                        str_at(object, &["involvedObject", f]),
                    );
                }
                put("reason", str_at(object, &["reason"]));
                // v1 calls `reportingController` `reportingComponent`.
                let reporting = str_at(object, &["reportingComponent"]);
                put("reportingComponent", reporting);
                let mut source = str_at(object, &["source", "component"]);
                if source.is_empty() {
                    source = reporting;
                }
                put("source", source);
                put("type", str_at(object, &["type"]));
            }
            SelectableKind::Namespace => {
                put("status.phase", str_at(object, &["status", "phase"]));
                // "This is a bug, but we need to support it for backward
                // compatibility." (upstream)
                put("name", str_at(object, &["metadata", "name"]));
            }
            SelectableKind::ReplicaSet => {
                let replicas = i64_at(object, &["status", "replicas"]);
                put("status.replicas", &replicas.to_string());
            }
            SelectableKind::Secret => put("type", str_at(object, &["type"])),
            SelectableKind::MetadataOnly { .. } => {}
        }
        out
    }
}

/// The internal `status.podIPs[0].ip`, which v1 -> internal conversion
/// fills from the singular `status.podIP` when the list is empty.
pub(crate) fn pod_ip(pod: &Value) -> &str {
    match arr_at(pod, &["status", "podIPs"]).first() {
        Some(first) => str_at(first, &["ip"]),
        None => str_at(pod, &["status", "podIP"]),
    }
}

/// The field set of `object`, a v1 object of `kind` (kind name such as
/// `Pod`, or resource name such as `pods`).
pub fn selectable_fields(
    kind: &str,
    object: &Value,
) -> Result<BTreeMap<String, String>, FieldSelectorError> {
    Ok(kind.parse::<SelectableKind>()?.selectable_fields(object))
}

/// Parses `selector` and checks it against `kind`'s supported labels: the
/// selector to evaluate against [`selectable_fields`], or the API server's
/// 400 message.
pub fn parse_field_selector_for(
    kind: &str,
    selector: &str,
) -> Result<FieldSelector, FieldSelectorError> {
    let kind = kind.parse::<SelectableKind>()?;
    FieldSelector::parse(selector)?.for_kind(kind)
}

/// The labels of a v1 object (`metadata.labels`), for [`LabelSelector::matches`].
/// Non-string values are skipped: the API server never stores them.
pub fn object_labels(object: &Value) -> BTreeMap<String, String> {
    crate::json_path::at(object, &["metadata", "labels"])
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn pod_fields_follow_to_selectable_fields() {
        let pod = json!({
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "serviceAccount": "legacy-sa", "hostNetwork": true},
            "status": {"phase": "Running", "podIP": "10.0.0.9",
                       "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "nominatedNodeName": "n2"}
        });
        let got = selectable_fields("Pod", &pod);
        assert_eq!(
            got,
            Ok(fields(&[
                ("metadata.name", "web"),
                ("metadata.namespace", "prod"),
                ("spec.nodeName", "n1"),
                ("spec.restartPolicy", "Always"),
                ("spec.schedulerName", "default-scheduler"),
                ("spec.serviceAccountName", "legacy-sa"),
                ("spec.hostNetwork", "true"),
                ("status.phase", "Running"),
                ("status.podIP", "10.0.0.1"),
                ("status.nominatedNodeName", "n2"),
            ]))
        );
    }

    #[test]
    fn pod_fields_default_to_go_zero_values() {
        let got = selectable_fields("pods", &json!({"status": {"podIP": "10.1.1.1"}}));
        let got = got.unwrap_or_default();
        assert_eq!(
            got.get("spec.hostNetwork").map(String::as_str),
            Some("false")
        );
        assert_eq!(
            got.get("status.podIP").map(String::as_str),
            Some("10.1.1.1")
        );
        assert_eq!(got.get("metadata.name").map(String::as_str), Some(""));
    }

    #[test]
    fn node_event_namespace_and_lease_fields() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
        assert_eq!(
            selectable_fields("Node", &node),
            Ok(fields(&[
                ("metadata.name", "n1"),
                ("spec.unschedulable", "true")
            ]))
        );
        let event = json!({
            "metadata": {"name": "e1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1",
                               "apiVersion": "v1", "resourceVersion": "42", "fieldPath": "spec.containers{c}"},
            "reason": "Started", "reportingComponent": "kubelet", "type": "Normal"
        });
        assert_eq!(
            selectable_fields("Event", &event),
            Ok(fields(&[
                ("involvedObject.kind", "Pod"),
                ("involvedObject.namespace", "default"),
                ("involvedObject.name", "web"),
                ("involvedObject.uid", "u1"),
                ("involvedObject.apiVersion", "v1"),
                ("involvedObject.resourceVersion", "42"),
                ("involvedObject.fieldPath", "spec.containers{c}"),
                ("reason", "Started"),
                ("reportingComponent", "kubelet"),
                ("source", "kubelet"),
                ("type", "Normal"),
                ("metadata.name", "e1"),
                ("metadata.namespace", "default"),
            ]))
        );
        let ns = json!({"metadata": {"name": "kube-system"}, "status": {"phase": "Active"}});
        assert_eq!(
            selectable_fields("Namespace", &ns),
            Ok(fields(&[
                ("metadata.name", "kube-system"),
                ("name", "kube-system"),
                ("status.phase", "Active"),
            ]))
        );
        let rs =
            json!({"metadata": {"name": "web-1", "namespace": "d"}, "status": {"replicas": 3}});
        assert_eq!(
            selectable_fields("ReplicaSet", &rs),
            Ok(fields(&[
                ("metadata.name", "web-1"),
                ("metadata.namespace", "d"),
                ("status.replicas", "3"),
            ]))
        );
        let lease = json!({"metadata": {"name": "l", "namespace": "kube-node-lease"}});
        assert_eq!(
            selectable_fields("Lease", &lease),
            Ok(fields(&[
                ("metadata.name", "l"),
                ("metadata.namespace", "kube-node-lease")
            ]))
        );
    }

    #[test]
    fn unsupported_field_labels_get_upstream_errors() {
        let cases = [
            (
                "Pod",
                "spec.containers",
                "field label not supported: spec.containers",
            ),
            (
                "Node",
                "metadata.namespace",
                "field label not supported: metadata.namespace",
            ),
            ("Namespace", "name", "field label not supported: name"),
            ("Event", "message", "field label not supported: message"),
            (
                "ReplicaSet",
                "spec.replicas",
                "field label not supported: spec.replicas",
            ),
            (
                "Lease",
                "spec.holderIdentity",
                "\"spec.holderIdentity\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            ),
            (
                "ConfigMap",
                "metadata.name",
                "field selectors are not supported for kind \"ConfigMap\"",
            ),
        ];
        for (kind, label, want) in cases {
            match parse_field_selector_for(kind, &format!("{label}=x")) {
                Ok(sel) => panic!("{kind} {label}: accepted as {sel}"),
                Err(e) => assert_eq!(e.to_string(), want, "{kind} {label}"),
            }
        }
    }

    #[test]
    fn every_supported_label_is_accepted_and_spec_host_is_renamed() {
        for kind in [
            SelectableKind::Pod,
            SelectableKind::Node,
            SelectableKind::Event,
            SelectableKind::Namespace,
            SelectableKind::ReplicaSet,
            SelectableKind::MetadataOnly { namespaced: true },
        ] {
            for label in kind.supported_field_labels() {
                assert_eq!(kind.convert_field_label(label), Ok(*label));
            }
        }
        let sel = parse_field_selector_for("Pod", "spec.host=n1").map(|s| s.to_string());
        assert_eq!(sel, Ok("spec.nodeName=n1".to_string()));
    }

    #[test]
    fn field_selector_filters_pods_by_node_and_phase() {
        let pod = json!({"metadata": {"name": "a", "namespace": "d"},
                         "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let fields = selectable_fields("Pod", &pod).unwrap_or_default();
        let check = |s: &str| parse_field_selector_for("Pod", s).map(|sel| sel.matches(&fields));
        assert_eq!(check("spec.nodeName=n1,status.phase!=Failed"), Ok(true));
        assert_eq!(check("spec.nodeName=n2"), Ok(false));
        assert_eq!(check("spec.nodeName="), Ok(false));
        // Accepted, but never in the field set: only matches the empty value.
        assert_eq!(check("status.podIPs=10.0.0.1"), Ok(false));
        assert_eq!(check("status.podIPs="), Ok(true));
    }

    #[test]
    fn object_labels_reads_string_labels_only() {
        let obj = json!({"metadata": {"labels": {"app": "web", "bad": 3}}});
        let labels = object_labels(&obj);
        assert_eq!(labels.len(), 1);
        let sel = LabelSelector::parse("app in (web,api),!tier");
        assert_eq!(sel.map(|s| s.matches(&labels)), Ok(true));
        assert!(object_labels(&json!(null)).is_empty());
    }
}
