//! What a Service is, read off its spec: its type, whether it is
//! headless, reachable from outside, in need of a cluster IP, node ports
//! or a health-check node port; the IP families. The rest of `service`
//! and the validation both read these.

use k8s_openapi::api::core::v1::Service;

/// `clusterIP: None`: a headless Service.
pub const CLUSTER_IP_NONE: &str = "None";
/// `v1.DefaultClientIPServiceAffinitySeconds`: three hours.
pub const DEFAULT_CLIENT_IP_AFFINITY_SECONDS: i32 = 10800;

/// An IP family, as `ipFamilies` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    V4,
    V6,
}

impl IpFamily {
    pub fn name(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    pub(crate) fn other(self) -> IpFamily {
        match self {
            IpFamily::V4 => IpFamily::V6,
            IpFamily::V6 => IpFamily::V4,
        }
    }

    pub(crate) fn of(ip: &str) -> IpFamily {
        if ip.contains(':') {
            IpFamily::V6
        } else {
            IpFamily::V4
        }
    }
}

/// `spec.type`, "" when unset.
pub fn service_type(service: &Service) -> &str {
    service
        .spec
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("")
}

/// A headless Service: `clusterIPs` is exactly `["None"]`.
pub fn is_headless(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ips.as_deref())
        .is_some_and(|ips| ips == [CLUSTER_IP_NONE])
}

/// `service.ExternallyAccessible`: reachable from outside the cluster (a
/// LoadBalancer or NodePort, or a ClusterIP with external IPs).
pub fn externally_accessible(service: &Service) -> bool {
    let external_ips = service
        .spec
        .as_ref()
        .and_then(|s| s.external_ips.as_ref())
        .is_some_and(|ips| !ips.is_empty());
    match service_type(service) {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => external_ips,
        _ => false,
    }
}

/// `service.NeedsHealthCheck`: a LoadBalancer with
/// `externalTrafficPolicy: Local` gets a health-check node port.
pub fn needs_health_check(service: &Service) -> bool {
    service_type(service) == "LoadBalancer"
        && service
            .spec
            .as_ref()
            .and_then(|s| s.external_traffic_policy.as_deref())
            == Some("Local")
}

/// Every type but ExternalName has cluster IPs (or `None`).
pub fn needs_cluster_ip(service: &Service) -> bool {
    service_type(service) != "ExternalName"
}

/// NodePort and LoadBalancer Services have node ports.
pub fn needs_node_port(service: &Service) -> bool {
    matches!(service_type(service), "NodePort" | "LoadBalancer")
}

/// Whether node ports are allocated where none was asked for (a
/// LoadBalancer may turn that off with `allocateLoadBalancerNodePorts`).
pub fn allocates_node_ports(service: &Service) -> bool {
    match service_type(service) {
        "NodePort" => true,
        "LoadBalancer" => service
            .spec
            .as_ref()
            .and_then(|s| s.allocate_load_balancer_node_ports)
            .unwrap_or(true),
        _ => false,
    }
}
