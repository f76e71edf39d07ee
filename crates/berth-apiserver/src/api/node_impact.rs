//! Warnings on a write that adds to a Node's taints or cordons it: which of
//! its pods the taint eviction controller will evict and when, and which
//! pending pods no node takes any more ([`berth_core::taint_impact`]'s
//! rules), as `Warning` headers that kubectl prints and that come with a
//! `dryRun=All` preview too.
//!
//! The pods and nodes come from the watch caches (once they reflect the
//! store's current revision), decoded only as far as
//! the rules read them (names, tolerations, node selection, binding, taints,
//! labels). The work is bounded whatever the cluster holds: only a write
//! that adds a taint that evicts or repels, or a cordon, is looked into;
//! the node's own pods are at most a node's worth (each is decoded once);
//! at most [`PENDING_CHECKED`] pending pods and, for those turned away, at
//! most [`NODES_SEARCHED`] other nodes are decoded, and the warnings say
//! when a bound was reached; the decoding and judging run on the blocking
//! pool. The node lifecycle controller's writes and a
//! node's own are not looked into ([`warns`]): nobody reads their
//! warnings, and in an outage they come by the thousand.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_core::taint_impact::{Impact, NodeChange, Search, without_another_node};
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeSpec, Pod, PodCondition, PodSpec, PodStatus, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;
use serde_json::Value;

use super::server::ApiServer;
use crate::auth::User;
use crate::cache::Cached;
use crate::flow_control::KUBE_CONTROLLER_MANAGER_USER;
use crate::resources::{NODES, PODS};
use crate::warnings;

/// Pending pods decoded at most per write.
pub const PENDING_CHECKED: usize = 1_000;
/// Other nodes decoded at most per write, looking for a place for the
/// pending pods the write turns away (berth's cluster size goal).
pub const NODES_SEARCHED: usize = 5_000;

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MetaPart {
    name: Option<String>,
    namespace: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
}

impl From<MetaPart> for ObjectMeta {
    fn from(m: MetaPart) -> ObjectMeta {
        ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            labels: m.labels,
            creation_timestamp: m.creation_timestamp,
            deletion_timestamp: m.deletion_timestamp,
            ..ObjectMeta::default()
        }
    }
}

/// What the rules read of a pod; the rest of the JSON is skipped unread.
#[derive(Deserialize, Default)]
#[serde(default)]
struct PodPart {
    metadata: MetaPart,
    spec: PodSpecPart,
    status: PodStatusPart,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PodSpecPart {
    tolerations: Option<Vec<Toleration>>,
    node_selector: Option<BTreeMap<String, String>>,
    affinity: Option<Affinity>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PodStatusPart {
    conditions: Option<Vec<PodCondition>>,
}

/// What the rules read of a node.
#[derive(Deserialize, Default)]
#[serde(default)]
struct NodePart {
    metadata: MetaPart,
    spec: NodeSpecPart,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct NodeSpecPart {
    taints: Option<Vec<Taint>>,
    unschedulable: Option<bool>,
}

impl From<PodPart> for Pod {
    fn from(p: PodPart) -> Pod {
        Pod {
            metadata: p.metadata.into(),
            spec: Some(PodSpec {
                tolerations: p.spec.tolerations,
                node_selector: p.spec.node_selector,
                affinity: p.spec.affinity,
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                conditions: p.status.conditions,
                ..PodStatus::default()
            }),
        }
    }
}

impl From<NodePart> for Node {
    fn from(n: NodePart) -> Node {
        Node {
            metadata: n.metadata.into(),
            spec: Some(NodeSpec {
                taints: n.spec.taints,
                unschedulable: n.spec.unschedulable,
                ..NodeSpec::default()
            }),
            status: None,
        }
    }
}

fn pod_of(cached: &Cached) -> Option<Pod> {
    serde_json::from_str::<PodPart>(&cached.json)
        .ok()
        .map(Pod::from)
}

fn node_of(cached: &Cached) -> Option<Node> {
    serde_json::from_str::<NodePart>(&cached.json)
        .ok()
        .map(Node::from)
}

fn node_of_value(value: &Value) -> Option<Node> {
    NodePart::deserialize(value).ok().map(Node::from)
}

/// Whether a write by `user` is looked into: not the node lifecycle
/// controller's, nor a node's.
pub(super) fn warns(user: &User) -> bool {
    user.node_name().is_none() && user.name != KUBE_CONTROLLER_MANAGER_USER
}

fn field<'a>(cached: &'a Cached, name: &str) -> &'a str {
    cached.fields.get(name).map_or("", String::as_str)
}

fn key_of(cached: &Cached) -> String {
    format!("{}/{}", cached.namespace, cached.name)
}

impl ApiServer {
    /// Adds the warnings of replacing Node `old` with `new` (as admission
    /// left it) to the request's.
    pub(super) async fn warn_node_impact(&self, old: &Value, new: &Value) {
        let unchanged = |pointer: &str| old.pointer(pointer) == new.pointer(pointer);
        if unchanged("/spec/taints") && unchanged("/spec/unschedulable") {
            return;
        }
        let (Some(old), Some(new)) = (node_of_value(old), node_of_value(new)) else {
            return;
        };
        for warning in self.node_impact(old, new).await {
            warnings::add(warning);
        }
    }

    /// What replacing Node `old` with `new` (as admission would leave it)
    /// does, as warning lines: for the write's warnings and the what-if of
    /// `pods/{name}/scheduling`.
    pub(super) async fn node_impact(&self, old: Node, new: Node) -> Vec<String> {
        let (now, gates) = (self.now(), self.config.strategy.admission.gates);
        let change = NodeChange {
            old: &old,
            new: &new,
            now,
            gates,
        };
        let (evicts, turns_away) = (change.may_evict(), change.may_turn_away());
        if !evicts && !turns_away {
            return Vec::new();
        }
        // Consistent reads: pods and nodes written just before count.
        let Ok(pods) = self.registry.wait_current(&PODS).await else {
            return Vec::new();
        };
        let node_name = change.node_name().to_string();
        let (candidates, _) = pods
            .list("", |pod| {
                let bound_to = field(pod, "spec.nodeName");
                (evicts && bound_to == node_name)
                    || (turns_away
                        && bound_to.is_empty()
                        && !matches!(field(pod, "status.phase"), "Succeeded" | "Failed"))
            })
            .await;
        let mut others = Vec::new();
        if turns_away && let Ok(nodes) = self.registry.wait_current(&NODES).await {
            others = nodes.list("", |n| n.name != node_name).await.0;
        }
        // Decoding and judging take a millisecond or more with many pods:
        // not on the request's worker.
        let judged = tokio::task::spawn_blocking(move || {
            let change = NodeChange {
                old: &old,
                new: &new,
                now,
                gates,
            };
            judge(&change, &candidates, &others)
        })
        .await;
        judged.unwrap_or_default()
    }
}

/// The warnings of `change`: `candidates` are the node's pods and the
/// pending ones, `others` every other node.
fn judge(change: &NodeChange, candidates: &[Arc<Cached>], others: &[Arc<Cached>]) -> Vec<String> {
    let mut impact = Impact::new(change);
    let mut pending: Vec<(String, Pod)> = Vec::new();
    let mut pending_seen = 0;
    for cached in candidates {
        let bound = !field(cached, "spec.nodeName").is_empty();
        if !bound {
            pending_seen += 1;
            if pending_seen > PENDING_CHECKED {
                continue;
            }
        }
        let Some(pod) = pod_of(cached) else {
            continue;
        };
        if bound {
            impact.add_bound(&key_of(cached), change.bound_pod(&pod));
        } else if pod.metadata.deletion_timestamp.is_none() && change.turns_away(&pod) {
            pending.push((key_of(cached), pod));
        }
    }
    impact.pending_unchecked(pending_seen.saturating_sub(PENDING_CHECKED));
    if !pending.is_empty() {
        let left = without_another_node(
            pending.iter().map(|(key, pod)| (key, pod)).collect(),
            others
                .iter()
                .take(NODES_SEARCHED)
                .filter_map(|cached| node_of(cached)),
            change.gates,
        );
        if others.len() > NODES_SEARCHED {
            impact.searched(Search::Partial {
                checked: NODES_SEARCHED,
                total: others.len(),
            });
        }
        for key in left {
            impact.add_homeless(key);
        }
    }
    impact.warnings()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_and_tools_are_warned_not_the_node_controller_nor_nodes() {
        assert!(warns(&User::admin()));
        assert!(warns(&User::kube_scheduler()));
        assert!(!warns(&User::kube_controller_manager()));
        assert!(!warns(&User::node("n1")));
    }
}
