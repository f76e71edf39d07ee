//! Joining the cluster as a Node: the Node object an agent registers
//! (labels upstream's kubelet sets, `--node-labels`,
//! `--register-with-taints`, capacity, allocatable, addresses, nodeInfo),
//! registration itself, and `--register-node=false`, which waits for an
//! admin to create the Node.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{
    ContainerImage, DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints,
    NodeSpec, NodeStatus, NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use tokio_util::sync::CancellationToken;

use crate::node_client::{ClientError, NodeClient};

/// What a Node is registered with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeTemplate {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub capacity: BTreeMap<String, Quantity>,
    pub allocatable: BTreeMap<String, Quantity>,
    pub addresses: Vec<NodeAddress>,
    pub node_info: NodeSystemInfo,
    /// The agent's HTTPS port for logs (`status.daemonEndpoints`).
    pub kubelet_port: Option<i32>,
}

impl NodeTemplate {
    /// The Node object: upstream's default labels (`kubernetes.io/hostname`,
    /// `kubernetes.io/os`, `kubernetes.io/arch` and their beta twins) under
    /// the template's own, the registration taints, and the status.
    pub fn node(&self) -> Node {
        let os = self.node_info.operating_system.clone();
        let arch = self.node_info.architecture.clone();
        let mut labels = BTreeMap::from([
            ("beta.kubernetes.io/arch".to_string(), arch.clone()),
            ("beta.kubernetes.io/os".to_string(), os.clone()),
            ("kubernetes.io/arch".to_string(), arch),
            ("kubernetes.io/hostname".to_string(), self.name.clone()),
            ("kubernetes.io/os".to_string(), os),
        ]);
        labels.extend(self.labels.clone());
        let mut node = Node::default();
        node.metadata.name = Some(self.name.clone());
        node.metadata.labels = Some(labels);
        node.spec = Some(NodeSpec {
            taints: (!self.taints.is_empty()).then(|| self.taints.clone()),
            ..Default::default()
        });
        node.status = Some(NodeStatus {
            capacity: Some(self.capacity.clone()),
            allocatable: Some(self.allocatable.clone()),
            addresses: Some(self.addresses.clone()),
            node_info: Some(self.node_info.clone()),
            daemon_endpoints: self.daemon_endpoints(),
            images: Some(node_images()),
            ..Default::default()
        });
        node
    }

    /// [`NodeTemplate::node`] with the node's conditions in its status, as
    /// a kubelet's initial Node carries them (upstream's `initialNode` sets
    /// the status before the create): a healthy node is Ready from its
    /// registration, not from its first status write.
    pub fn node_with_conditions(&self, conditions: Vec<NodeCondition>) -> Node {
        let mut node = self.node();
        if let Some(status) = node.status.as_mut() {
            status.conditions = Some(conditions);
        }
        node
    }

    /// `status.daemonEndpoints` when the agent serves logs.
    pub fn daemon_endpoints(&self) -> Option<NodeDaemonEndpoints> {
        self.kubelet_port.map(|port| NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint { port }),
        })
    }
}

/// The images a berth node reports in `status.images` (it runs no
/// container runtime: these are the images a kubelet's node would have
/// pulled for its system pods), so the scheduler's ImageLocality has sizes
/// to weigh.
pub fn node_images() -> Vec<ContainerImage> {
    [
        (&["registry.k8s.io/pause:3.10"][..], 320_368),
        (&["registry.k8s.io/kube-proxy:v1.35.0"][..], 30_573_490),
        (&["registry.k8s.io/coredns/coredns:v1.12.1"][..], 22_384_805),
    ]
    .into_iter()
    .map(|(names, size)| ContainerImage {
        names: Some(names.iter().map(|n| n.to_string()).collect()),
        size_bytes: Some(size),
    })
    .collect()
}

/// Parses `--node-labels k=v,k2=v2`.
pub fn parse_node_labels(flag: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    for pair in flag.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("invalid label {pair:?}: expected key=value"))?;
        let mut problems = berth_core::validation::names::is_qualified_name(key);
        problems.extend(berth_core::validation::names::is_valid_label_value(value));
        if !problems.is_empty() {
            return Err(format!("invalid label {pair:?}: {}", problems.join("; ")));
        }
        labels.insert(key.to_string(), value.to_string());
    }
    Ok(labels)
}

/// Registers `node` (upstream's `registerWithAPIServer`): creates it; if
/// it exists already (a restart), uses the stored one. Retries transport
/// failures every 7 s as upstream does, until `stop`.
pub async fn register(
    client: &NodeClient,
    node: &Node,
    clock: &Clock,
    stop: &CancellationToken,
) -> Result<Node, ClientError> {
    let name = node.metadata.name.as_deref().unwrap_or_default();
    loop {
        let attempt = match client.create_node(node).await {
            Ok(created) => Ok(created),
            Err(e) if e.is_conflict() => client.get_node().await,
            Err(e) => Err(e),
        };
        match attempt {
            Ok(node) => return Ok(node),
            Err(e) if e.code().is_some_and(|c| c == 403 || c == 422) => return Err(e),
            Err(e) => {
                tracing::warn!(node = %name, error = %e, "registering the node failed; retrying");
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return client.get_node().await,
            _ = clock.sleep(Duration::from_secs(7)) => {}
        }
    }
}

/// `--register-node=false`: waits until an admin has created the Node.
pub async fn wait_for_node(
    client: &NodeClient,
    clock: &Clock,
    stop: &CancellationToken,
) -> Result<Node, ClientError> {
    let mut logged = false;
    loop {
        match client.get_node().await {
            Ok(node) => return Ok(node),
            Err(e) if e.is_not_found() => {
                if !logged {
                    tracing::info!(node = %client.node_name(), "waiting for an admin to create the Node");
                    logged = true;
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the node failed"),
        }
        tokio::select! {
            _ = stop.cancelled() => return client.get_node().await,
            _ = clock.sleep(Duration::from_secs(1)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_labels_parse_and_validate() {
        type Labels<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(&str, Option<Labels>)] = &[
            ("", Some(&[])),
            (
                "a=b,topology.kubernetes.io/zone=z1",
                Some(&[("a", "b"), ("topology.kubernetes.io/zone", "z1")]),
            ),
            ("a=", Some(&[("a", "")])),
            ("novalue", None),
            ("bad key=x", None),
            ("a=bad value", None),
        ];
        for (flag, want) in cases {
            let got = parse_node_labels(flag).ok();
            let want = want.map(|w| {
                w.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            });
            assert_eq!(got, want, "{flag}");
        }
    }

    #[test]
    fn the_node_carries_default_labels_under_its_own_and_its_taints() {
        let template = NodeTemplate {
            name: "n1".into(),
            labels: BTreeMap::from([
                ("kubernetes.io/hostname".into(), "custom".into()),
                ("a".into(), "b".into()),
            ]),
            taints: vec![Taint {
                key: "dedicated".into(),
                value: Some("groupName".into()),
                effect: "NoSchedule".into(),
                time_added: None,
            }],
            node_info: NodeSystemInfo {
                operating_system: "linux".into(),
                architecture: "amd64".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let node = template.node();
        let labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["kubernetes.io/hostname"], "custom");
        assert_eq!(labels["a"], "b");
        let taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
        assert_eq!(taints.len(), 1);
    }

    #[test]
    fn the_node_reports_its_images_with_sizes() {
        let node = NodeTemplate::default().node();
        let images = node.status.and_then(|s| s.images).unwrap_or_default();
        assert!(!images.is_empty());
        assert!(images.iter().all(|i| i.size_bytes.is_some_and(|s| s > 0)
            && i.names.as_ref().is_some_and(|n| !n.is_empty())));
    }
}
