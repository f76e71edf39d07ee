//! What the API server does to a Service besides validating it, as pure
//! functions over the k8s-openapi type, ported from upstream:
//!
//! - [`set_defaults`]: `SetDefaults_Service` (type `ClusterIP`, session
//!   affinity `None`, port protocol `TCP`, target port = port, traffic
//!   policies, `allocateLoadBalancerNodePorts`);
//! - [`normalize_cluster_ips`], [`patch_allocated_values`],
//!   [`drop_type_dependent_fields`]: the service strategy's and REST
//!   storage's care for `clusterIP`/`clusterIPs` and fields a type change
//!   leaves behind, so a client that omits allocated values keeps them;
//! - [`init_ip_family_fields`]: `ipFamilyPolicy` and `ipFamilies` for a
//!   cluster with one IP family (berth's), with upstream's errors;
//! - [`held_cluster_ips`], [`held_node_ports`]: what a stored Service
//!   holds of the cluster's address and node-port ranges.
//!
//! Which addresses and ports are free is the API server's allocator's
//! (`berth_apiserver::allocators`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ClientIPConfig, Service, ServiceSpec, SessionAffinityConfig};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub(crate) mod predicates;

pub use predicates::*;

use crate::validation::service::validate_service_cluster_ips_related_fields;
use crate::validation::{ErrorList, FieldError, Path};

/// `SetDefaults_Service`.
pub fn set_defaults(service: &mut Service) {
    let spec = service.spec.get_or_insert_with(ServiceSpec::default);
    let affinity = spec
        .session_affinity
        .get_or_insert_with(|| "None".into())
        .clone();
    match affinity.as_str() {
        "None" => spec.session_affinity_config = None,
        "ClientIP" => {
            let timeout = spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .and_then(|c| c.timeout_seconds);
            if timeout.is_none() {
                spec.session_affinity_config = Some(SessionAffinityConfig {
                    client_ip: Some(ClientIPConfig {
                        timeout_seconds: Some(DEFAULT_CLIENT_IP_AFFINITY_SECONDS),
                    }),
                });
            }
        }
        _ => {}
    }
    let ty = spec.type_.get_or_insert_with(|| "ClusterIP".into()).clone();
    for port in spec.ports.iter_mut().flatten() {
        port.protocol.get_or_insert_with(|| "TCP".into());
        let unset = match &port.target_port {
            None => true,
            Some(IntOrString::Int(0)) => true,
            Some(IntOrString::String(s)) => s.is_empty(),
            Some(IntOrString::Int(_)) => false,
        };
        if unset {
            port.target_port = Some(IntOrString::Int(port.port));
        }
    }
    let has_external_ips = spec
        .external_ips
        .as_ref()
        .is_some_and(|ips| !ips.is_empty());
    let accessible = matches!(ty.as_str(), "LoadBalancer" | "NodePort")
        || (ty == "ClusterIP" && has_external_ips);
    if accessible
        && spec
            .external_traffic_policy
            .as_deref()
            .unwrap_or("")
            .is_empty()
    {
        spec.external_traffic_policy = Some("Cluster".into());
    }
    if spec.internal_traffic_policy.is_none()
        && matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP")
    {
        spec.internal_traffic_policy = Some("Cluster".into());
    }
    if ty == "LoadBalancer" && spec.allocate_load_balancer_node_ports.is_none() {
        spec.allocate_load_balancer_node_ports = Some(true);
    }
}

fn spec_mut(service: &mut Service) -> &mut ServiceSpec {
    service.spec.get_or_insert_with(ServiceSpec::default)
}

fn cluster_ip(service: &Service) -> &str {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .unwrap_or("")
}

fn cluster_ips(service: &Service) -> &[String] {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ips.as_deref())
        .unwrap_or_default()
}

fn families(service: &Service) -> &[String] {
    service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.as_deref())
        .unwrap_or_default()
}

fn policy(service: &Service) -> Option<&str> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.ip_family_policy.as_deref())
}

/// `NormalizeClusterIPs`: keeps `clusterIP` and `clusterIPs` in step for
/// a client that sets only the singular field (`old` is the stored Service
/// on update).
pub fn normalize_cluster_ips(new: &mut Service, old: Option<&Service>) {
    let Some(old) = old else {
        // Create: the singular alone fills the plural.
        if !cluster_ip(new).is_empty() && cluster_ips(new).is_empty() {
            let ip = cluster_ip(new).to_string();
            spec_mut(new).cluster_ips = Some(vec![ip]);
        }
        return;
    };
    // An older client patching something else left the plural out.
    if !cluster_ips(old).is_empty()
        && cluster_ips(new).is_empty()
        && cluster_ip(old) == cluster_ip(new)
    {
        spec_mut(new).cluster_ips = Some(cluster_ips(old).to_vec());
    }
    if cluster_ip(old) != cluster_ip(new) {
        let same_plural = cluster_ips(old) == cluster_ips(new);
        if !cluster_ip(old).is_empty() && cluster_ip(new).is_empty() && same_plural {
            spec_mut(new).cluster_ips = None;
        }
        if !cluster_ip(new).is_empty() && same_plural {
            let ip = cluster_ip(new).to_string();
            spec_mut(new).cluster_ips = Some(vec![ip]);
        }
    }
}

/// `patchAllocatedValues`: an update that leaves out what the server
/// allocated (the cluster IPs, node ports, the health-check node port)
/// keeps the stored values, as long as the Service still needs them.
pub fn patch_allocated_values(new: &mut Service, old: &Service) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if cluster_ip(new).is_empty() {
            let ip = cluster_ip(old).to_string();
            spec_mut(new).cluster_ip = Some(ip).filter(|ip| !ip.is_empty());
        }
        if cluster_ips(new).is_empty() && !cluster_ips(old).is_empty() {
            spec_mut(new).cluster_ips = Some(cluster_ips(old).to_vec());
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let used = |s: &Service| -> BTreeSet<i32> {
            s.spec
                .iter()
                .flat_map(|s| s.ports.iter().flatten())
                .filter_map(|p| p.node_port)
                .filter(|p| *p != 0)
                .collect()
        };
        let in_both: BTreeSet<i32> = used(old).intersection(&used(new)).copied().collect();
        let by_name: BTreeMap<String, i32> = old
            .spec
            .iter()
            .flat_map(|s| s.ports.iter().flatten())
            .map(|p| (p.name.clone().unwrap_or_default(), p.node_port.unwrap_or(0)))
            .collect();
        for port in spec_mut(new).ports.iter_mut().flatten() {
            if port.node_port.unwrap_or(0) == 0 {
                let name = port.name.clone().unwrap_or_default();
                if let Some(&old_port) = by_name.get(&name)
                    && old_port != 0
                    && !in_both.contains(&old_port)
                {
                    port.node_port = Some(old_port);
                }
            }
        }
    }
    if needs_health_check(old) && needs_health_check(new) {
        let port = |s: &Service| {
            s.spec
                .as_ref()
                .and_then(|s| s.health_check_node_port)
                .unwrap_or(0)
        };
        if port(new) == 0 {
            spec_mut(new).health_check_node_port = Some(port(old)).filter(|p| *p != 0);
        }
    }
}

/// `dropTypeDependentFields`: on update, what the new type no longer uses
/// and the client did not change is dropped (and so released).
pub fn drop_type_dependent_fields(new: &mut Service, old: &Service) {
    let old_spec = old.spec.clone().unwrap_or_default();
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        let spec = spec_mut(new);
        if spec.cluster_ip == old_spec.cluster_ip && spec.cluster_ips == old_spec.cluster_ips {
            spec.cluster_ip = None;
            spec.cluster_ips = None;
        }
        if spec.ip_families == old_spec.ip_families {
            spec.ip_families = None;
        }
        if spec.ip_family_policy == old_spec.ip_family_policy {
            spec.ip_family_policy = None;
        }
    }
    let node_ports = |s: &ServiceSpec| -> Vec<Option<i32>> {
        s.ports.iter().flatten().map(|p| p.node_port).collect()
    };
    if needs_node_port(old) && !needs_node_port(new) {
        let spec = spec_mut(new);
        if node_ports(spec) == node_ports(&old_spec) {
            for port in spec.ports.iter_mut().flatten() {
                port.node_port = None;
            }
        }
    }
    if needs_health_check(old) && !needs_health_check(new) {
        let spec = spec_mut(new);
        if spec.health_check_node_port == old_spec.health_check_node_port {
            spec.health_check_node_port = None;
        }
    }
    let new_type = service_type(new).to_string();
    if service_type(old) == "LoadBalancer" && new_type != "LoadBalancer" {
        let spec = spec_mut(new);
        if spec.allocate_load_balancer_node_ports.is_some()
            && spec.allocate_load_balancer_node_ports == old_spec.allocate_load_balancer_node_ports
        {
            spec.allocate_load_balancer_node_ports = None;
        }
        if spec.load_balancer_class == old_spec.load_balancer_class {
            spec.load_balancer_class = None;
        }
    }
    if externally_accessible(old) && !externally_accessible(new) {
        let spec = spec_mut(new);
        if spec.external_traffic_policy == old_spec.external_traffic_policy {
            spec.external_traffic_policy = None;
        }
    }
    if new_type != "LoadBalancer"
        && let Some(status) = new.status.as_mut()
    {
        status.load_balancer = Some(Default::default());
    }
}

fn invalid_policy(service: &Service, detail: &str) -> FieldError {
    FieldError::invalid(
        &Path::new("spec").child("ipFamilyPolicy"),
        policy(service).map_or(serde_json::Value::Null, |p| p.into()),
        detail,
    )
}

/// `initIPFamilyFields` for a cluster whose Service addresses are of one
/// family, `cluster`: a policy is inferred when none is given (the stored
/// one on update; `RequireDualStack` for a headless Service without a
/// selector; else `SingleStack`), families are inferred from the cluster
/// IPs or the cluster's, and what this cluster cannot give (a second
/// family, a family it lacks) is a field error.
pub fn init_ip_family_fields(
    new: &mut Service,
    old: Option<&Service>,
    cluster: IpFamily,
) -> Result<(), ErrorList> {
    if !needs_cluster_ip(new) {
        return Ok(());
    }
    if policy(new).is_none() {
        let inferred = match old.and_then(policy) {
            Some(old_policy) => old_policy.to_string(),
            None if cluster_ip(new) == CLUSTER_IP_NONE && no_selector(new) => {
                "RequireDualStack".into()
            }
            None => "SingleStack".into(),
        };
        spec_mut(new).ip_family_policy = Some(inferred);
    }
    let pre = validate_service_cluster_ips_related_fields(new);
    if !pre.is_empty() {
        return Err(pre);
    }
    let mut errs = ErrorList::new();
    if let Some(old) = old {
        if policy(new) == Some("SingleStack") {
            // Dropping to single-stack keeps the primary.
            if cluster_ips(old) == cluster_ips(new)
                && let Some(ips) = spec_mut(new).cluster_ips.as_mut()
            {
                ips.truncate(1);
            }
            if families(old) == families(new)
                && let Some(families) = spec_mut(new).ip_families.as_mut()
            {
                families.truncate(1);
            }
        } else {
            if cluster_ips(new).len() < cluster_ips(old).len() {
                errs.push(invalid_policy(
                    new,
                    "must be 'SingleStack' to release the secondary cluster IP",
                ));
            }
            if families(new).len() < families(old).len() {
                errs.push(invalid_policy(
                    new,
                    "must be 'SingleStack' to release the secondary IP family",
                ));
            }
        }
    }
    if policy(new) == Some("SingleStack") {
        if cluster_ips(new).len() == 2 {
            errs.push(invalid_policy(
                new,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families(new).len() == 2 {
            errs.push(invalid_policy(
                new,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    // Families follow the cluster IPs given.
    let ips: Vec<String> = cluster_ips(new).to_vec();
    for (i, ip) in ips.iter().enumerate() {
        if ip == CLUSTER_IP_NONE {
            break;
        }
        let family = IpFamily::of(ip);
        if i >= families(new).len() {
            if family == cluster {
                spec_mut(new)
                    .ip_families
                    .get_or_insert_with(Vec::new)
                    .push(family.name().into());
            } else {
                errs.push(FieldError::invalid(
                    &Path::new("spec").child("clusterIPs").index(i),
                    serde_json::json!(ips),
                    format!("{} is not configured on this cluster", family.name()),
                ));
            }
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    // Headless and selectorless: any families, even ones the cluster lacks.
    if cluster_ip(new) == CLUSTER_IP_NONE && no_selector(new) {
        let families = spec_mut(new).ip_families.get_or_insert_with(Vec::new);
        if families.is_empty() {
            families.push(cluster.name().into());
        }
        let single = policy(new) == Some("SingleStack");
        let spec = spec_mut(new);
        let families = spec.ip_families.get_or_insert_with(Vec::new);
        if families.len() < 2 && !single {
            let first = if families[0] == "IPv6" {
                IpFamily::V6
            } else {
                IpFamily::V4
            };
            families.push(first.other().name().into());
        }
        return Ok(());
    }
    if policy(new) == Some("RequireDualStack") {
        errs.push(invalid_policy(
            new,
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families(new).iter().enumerate() {
        if family != cluster.name() {
            errs.push(FieldError::invalid(
                &Path::new("spec").child("ipFamilies").index(i),
                family.as_str(),
                "not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if families(new).is_empty() {
        spec_mut(new).ip_families = Some(vec![cluster.name().into()]);
    }
    Ok(())
}

fn no_selector(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_none_or(BTreeMap::is_empty)
}

/// The cluster IPs a stored Service holds (none for ExternalName or
/// headless ones).
pub fn held_cluster_ips(service: &Service) -> Vec<String> {
    if !needs_cluster_ip(service) {
        return Vec::new();
    }
    cluster_ips(service)
        .iter()
        .filter(|ip| !ip.is_empty() && *ip != CLUSTER_IP_NONE)
        .cloned()
        .collect()
}

/// The node ports a stored Service holds: its ports' and its health
/// check's, each once (a TCP and a UDP port share one).
pub fn held_node_ports(service: &Service) -> BTreeSet<i32> {
    let mut held = BTreeSet::new();
    if needs_node_port(service) {
        held.extend(
            service
                .spec
                .iter()
                .flat_map(|s| s.ports.iter().flatten())
                .filter_map(|p| p.node_port)
                .filter(|p| *p != 0),
        );
    }
    if needs_health_check(service)
        && let Some(port) = service.spec.as_ref().and_then(|s| s.health_check_node_port)
        && port != 0
    {
        held.insert(port);
    }
    held
}
