//! `/ui/api/pods`: every pod as the live page draws it, one short row
//! each, with the resourceVersion of the list to watch `/api/v1/pods`
//! from.
//!
//! Why not the ordinary list: 150,000 pods are about 150 MB of JSON, and
//! the page needs six fields of each. A Table (`as=Table`, what kubectl
//! asks for) carries no namespace or owner with `includeObject=None`, and
//! the whole metadata (managed fields included) with `Metadata`; a
//! `PartialObjectMetadataList` has no node or phase. So, as
//! `/ui/api/evictions` does, the server answers from its watch cache with
//! exactly the page's rows (about 60 bytes a pod); the changes then come
//! from an ordinary watch.

use std::sync::Arc;

use axum::response::Response;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::response::bytes_response;
use super::super::server::ApiServer;
use crate::auth::User;
use crate::cache::Cached;
use crate::resources::PODS;
use crate::status::ApiError;

/// The columns of each row, in order.
pub const COLUMNS: [&str; 7] = [
    "namespace",
    "name",
    "node",
    "phase",
    "owner",
    "deleting",
    "reason",
];

/// The two metadata fields a row needs, in k8s-openapi's types: serde
/// skips the rest of the pod unbuilt (decoding 150,000 whole
/// `ObjectMeta`s, managed fields and all, would cost more than the rest
/// of the answer).
#[derive(Deserialize)]
struct RowFields {
    metadata: RowMetadata,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RowMetadata {
    #[serde(default)]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
}

impl ApiServer {
    pub(super) async fn ui_pods(&self, user: &User) -> Result<Response, ApiError> {
        super::admins_only(user, super::PODS_PATH)?;
        let pods = self.registry.wait_current(&PODS).await?;
        let (all, rv) = pods.list("", |_| true).await;
        let body = tokio::task::spawn_blocking(move || body(&all, rv))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(bytes_response(200, body))
    }
}

/// The answer, written row by row (no tree of 150,000 values built first).
fn body(pods: &[Arc<Cached>], rv: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + pods.len() * 80);
    out.extend_from_slice(b"{\"resourceVersion\":\"");
    out.extend_from_slice(rv.to_string().as_bytes());
    out.extend_from_slice(b"\",\"columns\":");
    out.extend_from_slice(json!(COLUMNS).to_string().as_bytes());
    out.extend_from_slice(b",\"rows\":[");
    for (i, pod) in pods.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(row(pod).to_string().as_bytes());
    }
    out.extend_from_slice(b"]}");
    out
}

/// One pod's row: its node and phase from the cache's selectable fields;
/// its controller and deletion from its metadata; and for a pod with no
/// node, the scheduler's reason (`PodScheduled=False`) from the whole pod
/// (few are pending).
fn row(cached: &Arc<Cached>) -> Value {
    let field = |name: &str| cached.fields.get(name).map_or("", String::as_str);
    let node = field("spec.nodeName");
    let metadata = serde_json::from_str::<RowFields>(&cached.json)
        .map(|m| m.metadata)
        .unwrap_or_default();
    let owner = metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map_or_else(String::new, |o| format!("{}/{}", o.kind, o.name));
    let reason = if node.is_empty() {
        scheduling_reason(&cached.json)
    } else {
        String::new()
    };
    json!([
        cached.namespace,
        cached.name,
        node,
        field("status.phase"),
        owner,
        metadata.deletion_timestamp.is_some(),
        reason,
    ])
}

/// `reason: message` of a pod's `PodScheduled=False` condition, or "".
fn scheduling_reason(json: &str) -> String {
    let Ok(pod) = serde_json::from_str::<Pod>(json) else {
        return String::new();
    };
    pod.status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map_or_else(String::new, |c| {
            format!(
                "{}: {}",
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cached(json: Value) -> Arc<Cached> {
        let fields: BTreeMap<String, String> = [
            ("spec.nodeName", &json["spec"]["nodeName"]),
            ("status.phase", &json["status"]["phase"]),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v.as_str()?.to_owned())))
        .collect();
        Arc::new(Cached {
            namespace: json["metadata"]["namespace"].as_str().unwrap_or("").into(),
            name: json["metadata"]["name"].as_str().unwrap_or("").into(),
            rv: 1,
            json: json.to_string().into(),
            labels: BTreeMap::new(),
            fields,
        })
    }

    /// Each pod's row carries what the page draws: node, phase, the
    /// controlling owner only, deletion, and a pending pod's reason.
    #[test]
    fn a_pods_row_holds_what_the_page_draws() {
        struct Case {
            name: &'static str,
            pod: Value,
            want: Value,
        }
        let cases = vec![
            Case {
                name: "bound pod of a ReplicaSet",
                pod: json!({"metadata": {"namespace": "ns", "name": "web-1", "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u0"},
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": true}]},
                    "spec": {"nodeName": "n1", "containers": []}, "status": {"phase": "Running"}}),
                want: json!(["ns", "web-1", "n1", "Running", "ReplicaSet/web", false, ""]),
            },
            Case {
                name: "pending pod with the scheduler's reason",
                pod: json!({"metadata": {"namespace": "ns", "name": "stuck"}, "spec": {"containers": []},
                    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                        "reason": "Unschedulable", "message": "0/3 nodes are available"}]}}),
                want: json!([
                    "ns",
                    "stuck",
                    "",
                    "Pending",
                    "",
                    false,
                    "Unschedulable: 0/3 nodes are available"
                ]),
            },
            Case {
                name: "deleting pod",
                pod: json!({"metadata": {"namespace": "ns", "name": "gone", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                    "spec": {"nodeName": "n2", "containers": []}, "status": {"phase": "Running"}}),
                want: json!(["ns", "gone", "n2", "Running", "", true, ""]),
            },
        ];
        for Case { name, pod, want } in cases {
            assert_eq!(row(&cached(pod)), want, "{name}");
        }
    }

    #[test]
    fn the_answer_is_json_with_the_lists_resource_version() {
        let pods = [
            cached(
                json!({"metadata": {"namespace": "a", "name": "p\"1"}, "spec": {"nodeName": "n"}}),
            ),
            cached(json!({"metadata": {"namespace": "b", "name": "p2"}})),
        ];
        let parsed: Value = serde_json::from_slice(&body(&pods, 42)).expect("JSON");
        assert_eq!(parsed["resourceVersion"], "42");
        assert_eq!(parsed["columns"], json!(COLUMNS));
        assert_eq!(parsed["rows"][0][1], "p\"1");
        assert_eq!(parsed["rows"][1][0], "b");
        let empty: Value = serde_json::from_slice(&body(&[], 7)).expect("JSON");
        assert_eq!(empty["rows"], json!([]));
    }
}
