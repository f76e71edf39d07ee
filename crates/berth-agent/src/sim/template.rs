//! What a simulated node registers as: KWOK's default node, the names and
//! zones of a generated fleet, and one node's Node from its template.

use k8s_openapi::api::core::v1::NodeAddress;

use super::SimNode;
use crate::registration::NodeTemplate;

/// The zone label simulated nodes carry.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// KWOK's default simulated node: 32 CPUs, 256 GiB, 110 pods.
pub fn default_template() -> NodeTemplate {
    let q = |s: &str| k8s_openapi::apimachinery::pkg::api::resource::Quantity(s.to_string());
    let resources = std::collections::BTreeMap::from([
        ("cpu".to_string(), q("32")),
        ("memory".to_string(), q("256Gi")),
        ("ephemeral-storage".to_string(), q("100Gi")),
        ("pods".to_string(), q("110")),
    ]);
    NodeTemplate {
        capacity: resources.clone(),
        allocatable: resources,
        node_info: k8s_openapi::api::core::v1::NodeSystemInfo {
            architecture: crate::host::go_arch().into(),
            operating_system: "linux".into(),
            container_runtime_version: "berth-sim://0.1.0".into(),
            kubelet_version: crate::host::KUBELET_VERSION.into(),
            os_image: "berth simulated node".into(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The name of simulated node `index` (`sim-000042`).
pub fn sim_node_name(prefix: &str, index: usize) -> String {
    format!("{prefix}{index:06}")
}

/// The zone of simulated node `index` among `zones` (`zone-a`, `zone-b`, ...).
pub fn sim_zone(index: usize, zones: usize) -> String {
    let z = index % zones.max(1);
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    match letters.get(z) {
        Some(&c) if zones <= letters.len() => format!("zone-{}", char::from(c)),
        _ => format!("zone-{z}"),
    }
}

/// The template of node `index` of the fleet: its shared template with
/// its name, its zone label and its addresses. Built when needed rather
/// than kept: a fleet of 150,000 nodes shares one template.
pub(super) fn node_template(node: &SimNode, index: usize) -> NodeTemplate {
    let mut t = NodeTemplate::clone(&node.template);
    t.name = node.name.clone();
    if let Some(zone) = &node.zone {
        t.labels.insert(ZONE_LABEL.to_string(), zone.clone());
    }
    // A fleet that serves its nodes' kubelet endpoints gives their address;
    // else each node gets one of its own, for show.
    if t.addresses.is_empty() {
        t.addresses.push(NodeAddress {
            type_: "InternalIP".into(),
            address: format!(
                "10.{}.{}.{}",
                (index >> 16) & 0xff,
                (index >> 8) & 0xff,
                index & 0xff
            ),
        });
    }
    t.addresses.push(NodeAddress {
        type_: "Hostname".into(),
        address: node.name.clone(),
    });
    t
}
