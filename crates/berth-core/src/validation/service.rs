//! Services: upstream's `ValidateService`, `ValidateServiceUpdate` and
//! `ValidateServiceClusterIPsRelatedFields` (`pkg/apis/core/validation`),
//! but for `metadata` (the API server validates it for every type, with a
//! DNS-1035 label as a Service's name). What depends on the cluster (the
//! IP range, free addresses and node ports, the IP families configured) is
//! the allocation's; see [`crate::service`].

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::ip::{is_valid_cidr, is_valid_ip, parse_ip_sloppy, validate_non_special_ip};
use super::meta::validate_labels;
use super::names::{
    is_dns1123_subdomain, is_qualified_name, is_valid_port_name, is_valid_port_num,
};
use super::ports::validate_named_port;
use super::{ErrorList, FieldError, Path};
use crate::service::predicates::{
    CLUSTER_IP_NONE, externally_accessible, is_headless, needs_health_check, service_type,
};

const SUPPORTED_SESSION_AFFINITY: &[&str] = &["ClientIP", "None"];
const SUPPORTED_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const SUPPORTED_IP_FAMILIES: &[&str] = &["IPv4", "IPv6"];
const SUPPORTED_IP_FAMILY_POLICIES: &[&str] =
    &["PreferDualStack", "RequireDualStack", "SingleStack"];
const SUPPORTED_TRAFFIC_POLICIES: &[&str] = &["Cluster", "Local"];
/// `core.MaxClientIPServiceAffinitySeconds`.
const MAX_CLIENT_IP_AFFINITY_SECONDS: i32 = 86400;

const TOPOLOGY_AWARE_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const LOAD_BALANCER_SOURCE_RANGES: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";

fn spec_path() -> Path {
    Path::new("spec")
}

fn ports(spec: &ServiceSpec) -> &[ServicePort] {
    spec.ports.as_deref().unwrap_or_default()
}

fn cluster_ips(spec: &ServiceSpec) -> &[String] {
    spec.cluster_ips.as_deref().unwrap_or_default()
}

fn families(spec: &ServiceSpec) -> &[String] {
    spec.ip_families.as_deref().unwrap_or_default()
}

/// `ValidateService` without the metadata (but its annotations' rules).
pub fn validate_service(service: &Service) -> ErrorList {
    let empty = ServiceSpec::default();
    let spec = service.spec.as_ref().unwrap_or(&empty);
    let spec_path = spec_path();
    let annotations = service.metadata.annotations.clone().unwrap_or_default();
    let mut errs = ErrorList::new();

    if let (Some(mode), Some(hints)) = (
        annotations.get(TOPOLOGY_MODE),
        annotations.get(TOPOLOGY_AWARE_HINTS),
    ) && mode != hints
    {
        errs.push(FieldError::invalid(
            &Path::new("metadata")
                .child("annotations")
                .key(TOPOLOGY_MODE),
            mode.as_str(),
            format!("must match annotations[{TOPOLOGY_AWARE_HINTS}] when both are specified"),
        ));
    }

    let ty = service_type(service);
    let headless = is_headless(service);
    if ports(spec).is_empty() && !headless && ty != "ExternalName" {
        errs.push(FieldError::required(&spec_path.child("ports"), ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless => {
            errs.push(FieldError::invalid(
                &spec_path.child("clusterIPs").index(0),
                CLUSTER_IP_NONE,
                format!("may not be set to 'None' for {ty} services"),
            ));
        }
        "ExternalName" => errs.extend(validate_external_name(spec, &spec_path)),
        _ => {}
    }

    let mut names = BTreeSet::new();
    let ports_path = spec_path.child("ports");
    let many = ports(spec).len() > 1;
    for (i, port) in ports(spec).iter().enumerate() {
        errs.extend(validate_service_port(
            port,
            many,
            &mut names,
            &ports_path.index(i),
        ));
    }

    if let Some(selector) = &spec.selector {
        errs.extend(validate_labels(
            selector.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &spec_path.child("selector"),
        ));
    }

    errs.extend(validate_session_affinity(spec, &spec_path));
    errs.extend(validate_service_cluster_ips_related_fields(service));

    for (i, ip) in spec.external_ips.iter().flatten().enumerate() {
        let path = spec_path.child("externalIPs").index(i);
        let invalid = is_valid_ip(&path, ip);
        if invalid.is_empty() {
            errs.extend(validate_non_special_ip(&path, ip));
        } else {
            errs.extend(invalid);
        }
    }

    match spec.type_.as_deref() {
        None | Some("") => errs.push(FieldError::required(&spec_path.child("type"), "")),
        Some(ty) if !SUPPORTED_TYPES.contains(&ty) => {
            errs.push(FieldError::not_supported(
                &spec_path.child("type"),
                ty,
                SUPPORTED_TYPES,
            ));
        }
        _ => {}
    }

    if ty == "ClusterIP" {
        for (i, port) in ports(spec).iter().enumerate() {
            if port.node_port.unwrap_or(0) != 0 {
                errs.push(FieldError::forbidden(
                    &ports_path.index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }

    // Node ports and ports are unique per protocol.
    let mut node_ports = BTreeSet::new();
    for (i, port) in ports(spec).iter().enumerate() {
        let node_port = port.node_port.unwrap_or(0);
        if node_port != 0 && !node_ports.insert((port.protocol.clone(), node_port)) {
            errs.push(FieldError::duplicate(
                &ports_path.index(i).child("nodePort"),
                node_port,
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, port) in ports(spec).iter().enumerate() {
        if !seen.insert((port.protocol.clone(), port.port)) {
            errs.push(FieldError::duplicate(
                &ports_path.index(i),
                json!({"port": port.port, "protocol": port.protocol}),
            ));
        }
    }

    errs.extend(validate_source_ranges(
        service,
        spec,
        &annotations,
        &spec_path,
    ));

    if spec.allocate_load_balancer_node_ports.is_some() && ty != "LoadBalancer" {
        errs.push(FieldError::forbidden(
            &spec_path.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if ty == "LoadBalancer" && spec.allocate_load_balancer_node_ports.is_none() {
        // Upstream's path lacks `spec.` here.
        errs.push(FieldError::required(
            &Path::new("allocateLoadBalancerNodePorts"),
            "",
        ));
    }
    errs.extend(validate_load_balancer_class(None, service));
    errs.extend(validate_external_traffic_policy(service, spec, &spec_path));
    errs.extend(validate_internal_traffic_policy(spec, ty, &spec_path));
    if let Some(distribution) = &spec.traffic_distribution
        && distribution != "PreferClose"
    {
        errs.push(FieldError::not_supported(
            &spec_path.child("trafficDistribution"),
            distribution.as_str(),
            &["PreferClose"],
        ));
    }
    errs
}

fn validate_external_name(spec: &ServiceSpec, spec_path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if !cluster_ips(spec).is_empty() {
        errs.push(FieldError::forbidden(
            &spec_path.child("clusterIPs"),
            "may not be set for ExternalName services",
        ));
    }
    if !families(spec).is_empty() {
        errs.push(FieldError::forbidden(
            &spec_path.child("ipFamilies"),
            "may not be set for ExternalName services",
        ));
    }
    if spec.ip_family_policy.is_some() {
        errs.push(FieldError::forbidden(
            &spec_path.child("ipFamilyPolicy"),
            "may not be set for ExternalName services",
        ));
    }
    // The name (a CNAME) may end in a dot, as a fully qualified name does.
    let cname = spec.external_name.as_deref().unwrap_or("");
    let cname = cname.strip_suffix('.').unwrap_or(cname);
    if cname.is_empty() {
        errs.push(FieldError::required(&spec_path.child("externalName"), ""));
    } else {
        for problem in is_dns1123_subdomain(cname) {
            errs.push(FieldError::invalid(
                &spec_path.child("externalName"),
                cname,
                problem,
            ));
        }
    }
    errs
}

/// `validateServicePort`.
fn validate_service_port(
    port: &ServicePort,
    require_name: bool,
    names: &mut BTreeSet<String>,
    path: &Path,
) -> ErrorList {
    let mut errs = validate_named_port(
        port.name.as_deref(),
        require_name,
        port.port,
        port.protocol.as_deref(),
        Some(names),
        path,
    );
    errs.extend(validate_port_num_or_name(
        port.target_port.as_ref(),
        &path.child("targetPort"),
    ));
    if let Some(app_protocol) = &port.app_protocol {
        for problem in is_qualified_name(app_protocol) {
            errs.push(FieldError::invalid(
                &path.child("appProtocol"),
                app_protocol.as_str(),
                problem,
            ));
        }
    }
    errs
}

/// `ValidatePortNumOrName` (a target port is defaulted, never absent here;
/// an absent one reads as port 0).
pub fn validate_port_num_or_name(port: Option<&IntOrString>, path: &Path) -> ErrorList {
    match port {
        Some(IntOrString::String(name)) => is_valid_port_name(name)
            .into_iter()
            .map(|problem| FieldError::invalid(path, name.as_str(), problem))
            .collect(),
        Some(IntOrString::Int(n)) => is_valid_port_num(i64::from(*n))
            .into_iter()
            .map(|problem| FieldError::invalid(path, *n, problem))
            .collect(),
        None => is_valid_port_num(0)
            .into_iter()
            .map(|problem| FieldError::invalid(path, 0, problem))
            .collect(),
    }
}

fn validate_session_affinity(spec: &ServiceSpec, spec_path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = spec_path.child("sessionAffinity");
    let config_path = spec_path.child("sessionAffinityConfig");
    match spec.session_affinity.as_deref().unwrap_or("") {
        "" => errs.push(FieldError::required(&path, "")),
        "ClientIP" => {
            let when = "when session affinity type is ClientIP";
            let client_ip = spec.session_affinity_config.as_ref().map(|c| &c.client_ip);
            match client_ip {
                None => errs.push(FieldError::required(&config_path, when)),
                Some(None) => errs.push(FieldError::required(&config_path.child("clientIP"), when)),
                Some(Some(config)) => {
                    let timeout_path = config_path.child("clientIP").child("timeoutSeconds");
                    match config.timeout_seconds {
                        None => errs.push(FieldError::required(&timeout_path, when)),
                        Some(t) if t <= 0 || t > MAX_CLIENT_IP_AFFINITY_SECONDS => {
                            errs.push(FieldError::invalid(
                                &timeout_path,
                                t,
                                format!(
                                    "must be greater than 0 and less than {MAX_CLIENT_IP_AFFINITY_SECONDS}"
                                ),
                            ));
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        "None" => {
            if spec.session_affinity_config.is_some() {
                errs.push(FieldError::forbidden(
                    &config_path,
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path,
            other,
            SUPPORTED_SESSION_AFFINITY,
        )),
    }
    errs
}

fn validate_source_ranges(
    service: &Service,
    spec: &ServiceSpec,
    annotations: &BTreeMap<String, String>,
    spec_path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let load_balancer = service_type(service) == "LoadBalancer";
    let only_lb = "may only be used when `type` is 'LoadBalancer'";
    let ranges = spec
        .load_balancer_source_ranges
        .as_deref()
        .unwrap_or_default();
    if !ranges.is_empty() {
        // Upstream's path is capitalized here.
        let path = spec_path.child("LoadBalancerSourceRanges");
        if !load_balancer {
            errs.push(FieldError::forbidden(&path, only_lb));
        }
        for (i, range) in ranges.iter().enumerate() {
            errs.extend(is_valid_cidr(&path.index(i), range.trim()));
        }
    } else if let Some(value) = annotations.get(LOAD_BALANCER_SOURCE_RANGES) {
        let path = Path::new("metadata")
            .child("annotations")
            .key(LOAD_BALANCER_SOURCE_RANGES);
        if !load_balancer {
            errs.push(FieldError::forbidden(&path, only_lb));
        }
        let value = value.trim();
        if !value.is_empty() {
            for range in value.split(',') {
                errs.extend(is_valid_cidr(&path, range.trim()));
            }
        }
    }
    errs
}

/// `validateLoadBalancerClassField`: a qualified name, only on a
/// LoadBalancer, and fixed once set while it stays one.
fn validate_load_balancer_class(old: Option<&Service>, service: &Service) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = spec_path().child("loadBalancerClass");
    let class = |s: &Service| s.spec.as_ref().and_then(|s| s.load_balancer_class.clone());
    let load_balancer = service_type(service) == "LoadBalancer";
    if let Some(old) = old
        && service_type(old) == "LoadBalancer"
        && load_balancer
        && class(old) != class(service)
    {
        errs.push(FieldError::invalid(
            &path,
            class(service).map_or(serde_json::Value::Null, serde_json::Value::String),
            "may not change once set",
        ));
    }
    if let Some(class) = class(service) {
        if load_balancer {
            for problem in is_qualified_name(&class) {
                errs.push(FieldError::invalid(&path, class.as_str(), problem));
            }
        } else {
            errs.push(FieldError::forbidden(
                &path,
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
    }
    errs
}

fn validate_external_traffic_policy(
    service: &Service,
    spec: &ServiceSpec,
    spec_path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = spec_path.child("externalTrafficPolicy");
    let policy = spec.external_traffic_policy.as_deref().unwrap_or("");
    if !externally_accessible(service) {
        if !policy.is_empty() {
            errs.push(FieldError::invalid(
                &path,
                policy,
                "may only be set for externally-accessible services",
            ));
        }
    } else if policy.is_empty() {
        errs.push(FieldError::required(&path, ""));
    } else if !SUPPORTED_TRAFFIC_POLICIES.contains(&policy) {
        errs.push(FieldError::not_supported(
            &path,
            policy,
            SUPPORTED_TRAFFIC_POLICIES,
        ));
    }
    let health_path = spec_path.child("healthCheckNodePort");
    let health = spec.health_check_node_port.unwrap_or(0);
    if !needs_health_check(service) {
        if health != 0 {
            errs.push(FieldError::invalid(
                &health_path,
                health,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if health == 0 {
        errs.push(FieldError::required(&health_path, ""));
    } else {
        for problem in is_valid_port_num(i64::from(health)) {
            errs.push(FieldError::invalid(&health_path, health, problem));
        }
    }
    errs
}

fn validate_internal_traffic_policy(spec: &ServiceSpec, ty: &str, spec_path: &Path) -> ErrorList {
    let path = spec_path.child("internalTrafficPolicy");
    match spec.internal_traffic_policy.as_deref() {
        None if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            vec![FieldError::required(&path, "")]
        }
        Some(policy) if !SUPPORTED_TRAFFIC_POLICIES.contains(&policy) => {
            vec![FieldError::not_supported(
                &path,
                policy,
                SUPPORTED_TRAFFIC_POLICIES,
            )]
        }
        _ => ErrorList::new(),
    }
}

/// `ValidateServiceClusterIPsRelatedFields`: `clusterIP` and `clusterIPs`
/// agree, the IPs are IPs (or a lone `None`), at most one per family, and
/// match `ipFamilies`; the families and policy are known values.
pub fn validate_service_cluster_ips_related_fields(service: &Service) -> ErrorList {
    if service_type(service) == "ExternalName" {
        return ErrorList::new();
    }
    let empty = ServiceSpec::default();
    let spec = service.spec.as_ref().unwrap_or(&empty);
    let mut errs = ErrorList::new();
    let ips_path = spec_path().child("clusterIPs");
    let families_path = spec_path().child("ipFamilies");
    let ips = cluster_ips(spec);
    let ips_value = || json!(ips);

    match spec.cluster_ip.as_deref().unwrap_or("") {
        "" if !ips.is_empty() => errs.push(FieldError::invalid(
            &ips_path,
            ips_value(),
            "must be empty when `clusterIP` is not specified",
        )),
        "" => {}
        ip => match ips.first() {
            None => errs.push(FieldError::required(&ips_path, "")),
            Some(first) if first != ip => errs.push(FieldError::invalid(
                &ips_path,
                ips_value(),
                "first value must match `clusterIP`",
            )),
            Some(_) => {}
        },
    }

    let mut seen = BTreeSet::new();
    for (i, family) in families(spec).iter().enumerate() {
        if !SUPPORTED_IP_FAMILIES.contains(&family.as_str()) {
            errs.push(FieldError::not_supported(
                &families_path.index(i),
                family.as_str(),
                SUPPORTED_IP_FAMILIES,
            ));
        }
        if !seen.insert(family.as_str()) {
            errs.push(FieldError::duplicate(
                &families_path.index(i),
                family.as_str(),
            ));
        }
    }

    if let Some(policy) = &spec.ip_family_policy
        && !SUPPORTED_IP_FAMILY_POLICIES.contains(&policy.as_str())
    {
        errs.push(FieldError::not_supported(
            &spec_path().child("ipFamilyPolicy"),
            policy.as_str(),
            SUPPORTED_IP_FAMILY_POLICIES,
        ));
    }

    let mut invalid_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == CLUSTER_IP_NONE {
            if ips.len() > 1 {
                invalid_ips = true;
                errs.push(FieldError::invalid(
                    &ips_path,
                    ips_value(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let problems = is_valid_ip(&ips_path.index(i), ip);
        invalid_ips |= !problems.is_empty();
        errs.extend(problems);
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid(
            &ips_path,
            ips_value(),
            "may only hold up to 2 values",
        ));
    }
    // An invalid address would skew what follows.
    if invalid_ips {
        return errs;
    }
    let is_v6 = |ip: &str| parse_ip_sloppy(ip).is_some_and(|ip| ip.is_ipv6());
    if ips.len() > 1 {
        let v6 = ips.iter().filter(|ip| is_v6(ip)).count();
        if v6 != 1 || ips.len() != 2 {
            errs.push(FieldError::invalid(
                &ips_path,
                ips_value(),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(service) {
        for (i, (ip, family)) in ips.iter().zip(families(spec)).enumerate() {
            if family == "IPv4" && is_v6(ip) {
                errs.push(FieldError::invalid(
                    &ips_path.index(i),
                    ip.as_str(),
                    format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if family == "IPv6" && !is_v6(ip) {
                errs.push(FieldError::invalid(
                    &ips_path.index(i),
                    ip.as_str(),
                    format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    errs
}

/// `ValidateServiceUpdate` without the metadata: the cluster IPs and IP
/// families stay (but for adding or dropping a second one), as does a
/// LoadBalancer's class and health-check node port; then the new object
/// is validated as a whole.
pub fn validate_service_update(new: &Service, old: &Service) -> ErrorList {
    let mut errs = validate_upgrade_downgrade_cluster_ips(old, new);
    errs.extend(validate_upgrade_downgrade_ip_families(old, new));
    errs.extend(validate_load_balancer_class(Some(old), new));
    if needs_health_check(old) && needs_health_check(new) {
        let port = |s: &Service| s.spec.as_ref().and_then(|s| s.health_check_node_port);
        if port(old) != port(new) {
            errs.push(FieldError::forbidden(
                &spec_path().child("healthCheckNodePort"),
                "field is immutable",
            ));
        }
    }
    // validate_service's own load-balancer class check repeats the format
    // and type checks done above with `old`: keep one of each.
    let mut whole = validate_service(new);
    whole.retain(|e| e.field != "spec.loadBalancerClass");
    errs.extend(whole);
    errs
}

fn spec_of(service: &Service) -> &ServiceSpec {
    static EMPTY: std::sync::OnceLock<ServiceSpec> = std::sync::OnceLock::new();
    service
        .spec
        .as_ref()
        .unwrap_or_else(|| EMPTY.get_or_init(ServiceSpec::default))
}

fn single_stack_policy(service: &Service) -> bool {
    spec_of(service).ip_family_policy.as_deref() == Some("SingleStack")
}

fn policy_value(service: &Service) -> serde_json::Value {
    spec_of(service)
        .ip_family_policy
        .clone()
        .map_or(serde_json::Value::Null, serde_json::Value::String)
}

/// `validateUpgradeDowngradeClusterIPs`.
fn validate_upgrade_downgrade_cluster_ips(old: &Service, new: &Service) -> ErrorList {
    let mut errs = ErrorList::new();
    if service_type(new) == "ExternalName" || service_type(old) == "ExternalName" {
        return errs;
    }
    if is_headless(old) && is_headless(new) {
        return errs;
    }
    let path = spec_path().child("clusterIPs");
    let (old_ips, new_ips) = (cluster_ips(spec_of(old)), cluster_ips(spec_of(new)));
    let value = json!(new_ips);
    let changed = "may not change once set";
    match old_ips.len().cmp(&new_ips.len()) {
        std::cmp::Ordering::Equal => {
            for (i, (before, after)) in old_ips.iter().zip(new_ips).enumerate() {
                if before != after {
                    errs.push(FieldError::invalid(&path.index(i), value.clone(), changed));
                }
            }
        }
        std::cmp::Ordering::Greater => {
            if new_ips.is_empty() {
                errs.push(FieldError::invalid(
                    &path.index(0),
                    value.clone(),
                    "primary clusterIP can not be unset",
                ));
            }
            if let (Some(before), Some(after)) = (old_ips.first(), new_ips.first())
                && before != after
            {
                errs.push(FieldError::invalid(&path.index(0), value.clone(), changed));
            }
            if new_ips.len() == 1 && !single_stack_policy(new) {
                errs.push(FieldError::invalid(
                    &spec_path().child("ipFamilyPolicy"),
                    policy_value(new),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        }
        std::cmp::Ordering::Less => {
            if let (Some(before), Some(after)) = (old_ips.first(), new_ips.first())
                && before != after
            {
                errs.push(FieldError::invalid(&path.index(0), value, changed));
            }
        }
    }
    errs
}

/// `validateUpgradeDowngradeIPFamilies`.
fn validate_upgrade_downgrade_ip_families(old: &Service, new: &Service) -> ErrorList {
    let mut errs = ErrorList::new();
    if service_type(new) == "ExternalName" || service_type(old) == "ExternalName" {
        return errs;
    }
    // A headless service may change families, or become or stop being one.
    if is_headless(old) || is_headless(new) {
        return errs;
    }
    let path = spec_path().child("ipFamilies").index(0);
    let (old_families, new_families) = (families(spec_of(old)), families(spec_of(new)));
    let changed = "may not change once set";
    match old_families.len().cmp(&new_families.len()) {
        std::cmp::Ordering::Equal => {
            if old_families != new_families {
                errs.push(FieldError::invalid(&path, json!(new_families), changed));
            }
        }
        std::cmp::Ordering::Greater => {
            if cluster_ips(spec_of(new)).is_empty() {
                errs.push(FieldError::invalid(
                    &path,
                    json!(new_families),
                    "primary ipFamily can not be unset",
                ));
            }
            if new_families
                .first()
                .is_some_and(|f| Some(f) != old_families.first())
            {
                errs.push(FieldError::invalid(
                    &path,
                    json!(cluster_ips(spec_of(new))),
                    changed,
                ));
            }
            if new_families.len() == 1 && !single_stack_policy(new) {
                errs.push(FieldError::invalid(
                    &spec_path().child("ipFamilyPolicy"),
                    policy_value(new),
                    "must be set to 'SingleStack' when releasing the secondary ipFamily",
                ));
            }
        }
        std::cmp::Ordering::Less => {
            if let (Some(before), Some(after)) = (old_families.first(), new_families.first())
                && before != after
            {
                errs.push(FieldError::invalid(
                    &path,
                    json!(cluster_ips(spec_of(new))),
                    changed,
                ));
            }
        }
    }
    errs
}
