//! Services: upstream's defaults and validation (berth-core's ports), a
//! DNS-1035 label for a name, `status.loadBalancer` set on create, and
//! what a Service holds: its cluster IP from `--service-cluster-ip-range`
//! (or `None`, headless) and its node ports from
//! `--service-node-port-range`, taken before the Service is written and
//! given back when it no longer holds them ([`crate::allocators`]). Nothing
//! proxies to a Service: it is stored, listed and watched.

use std::net::IpAddr;

use berth_core::service::{
    allocates_node_ports, drop_type_dependent_fields, held_cluster_ips, held_node_ports,
    init_ip_family_fields, is_headless, needs_cluster_ip, needs_health_check, needs_node_port,
    normalize_cluster_ips, patch_allocated_values, set_defaults,
};
use berth_core::validation::names::is_dns1035_label;
use berth_core::validation::{
    ErrorList, FieldError, Path, validate_service, validate_service_update,
};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Service;
use serde_json::{Value, json};

use super::{ObjectType, ResourceType, Strategy, typed, typed_validation, untyped};
use crate::allocators::{AllocError, Allocators, Claims, Owner};
use crate::objects::{meta_str, name_of};
use crate::status::ApiError;

type ApiResult<T> = Result<T, ApiError>;

/// The strategy of core/v1 Services.
#[derive(Debug)]
pub struct Services;

fn service_rules(new: &Service, old: Option<&Service>) -> ErrorList {
    match old {
        None => validate_service(new),
        Some(old) => validate_service_update(new, old),
    }
}

fn owner_of(object: &Value) -> Owner {
    Owner {
        namespace: meta_str(object, "namespace").to_string(),
        name: name_of(object).to_string(),
    }
}

impl Strategy for Services {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Service>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn name_problems(&self, name: &str) -> Vec<String> {
        is_dns1035_label(name)
    }

    fn defaults(&self, object: &mut Value) {
        let Ok(mut service) = serde_json::from_value::<Service>(object.clone()) else {
            // Validation reports what does not fit the type.
            return;
        };
        set_defaults(&mut service);
        if let Ok(defaulted) = serde_json::to_value(&service) {
            *object = defaulted;
        }
    }

    fn on_create(&self, object: &mut Value) {
        object["status"] = json!({"loadBalancer": {}});
    }

    typed_validation!(service_rules);

    fn allocate<'a>(
        &'a self,
        rt: &'a ResourceType,
        object: &'a mut Value,
        old: Option<&'a Value>,
        allocators: &'a Allocators,
        now: &'a str,
    ) -> BoxFuture<'a, ApiResult<Claims>> {
        Box::pin(async move {
            let mut service: Service = typed(rt, object)?;
            let old: Option<Service> = old.map(|old| typed(rt, old)).transpose()?;
            set_defaults(&mut service);
            match &old {
                None => normalize_cluster_ips(&mut service, None),
                Some(old) => {
                    // As upstream's update: allocated values the client left
                    // out are kept, then what the new type drops is dropped.
                    patch_allocated_values(&mut service, old);
                    normalize_cluster_ips(&mut service, Some(old));
                    drop_type_dependent_fields(&mut service, old);
                }
            }
            let name = name_of(object).to_string();
            let family = allocators.cluster_ips.cidr().family();
            init_ip_family_fields(&mut service, old.as_ref(), family)
                .map_err(|errors| ApiError::invalid(rt.group, rt.kind, &name, &errors))?;
            let owner = owner_of(object);
            let held_before = old
                .as_ref()
                .map(|old| held(old, &owner))
                .unwrap_or_default();
            let mut taken = Claims::none(owner.clone());
            let result = take(
                &mut service,
                &held_before,
                allocators,
                &owner,
                now,
                &mut taken,
            )
            .await;
            if let Err(error) = result {
                allocators.release(&taken, now).await;
                return Err(error.into_api_error(rt, &name, &service));
            }
            *object = untyped(&service)?;
            Ok(taken)
        })
    }

    fn held(&self, object: &Value) -> Claims {
        let owner = owner_of(object);
        match serde_json::from_value::<Service>(object.clone()) {
            Ok(service) => held(&service, &owner),
            Err(_) => Claims::none(owner),
        }
    }
}

/// What `service` holds, as claims of `owner`.
fn held(service: &Service, owner: &Owner) -> Claims {
    Claims {
        owner: owner.clone(),
        cluster_ips: held_cluster_ips(service)
            .iter()
            .filter_map(|ip| ip.parse::<IpAddr>().ok())
            .collect(),
        node_ports: held_node_ports(service),
    }
}

/// Why an allocation failed, to be said as upstream says it.
enum Failure {
    /// A cluster IP asked for by number (422 on `spec.clusterIPs`).
    RequestedIp(String, AllocError),
    /// The next free cluster IP (500).
    NextIp(AllocError),
    /// A node port asked for by number (422 on the port's `nodePort`).
    RequestedPort(usize, i32, AllocError),
    /// The next free node port (500).
    NextPort(AllocError),
    /// The health-check node port (500).
    HealthCheck(i32, AllocError),
}

impl From<AllocError> for Failure {
    fn from(error: AllocError) -> Failure {
        Failure::NextPort(error)
    }
}

impl Failure {
    fn into_api_error(self, rt: &ResourceType, name: &str, service: &Service) -> ApiError {
        let invalid = |path: Path, value: Value, detail: String| {
            ApiError::invalid(
                rt.group,
                rt.kind,
                name,
                &vec![FieldError::invalid(&path, value, detail)],
            )
        };
        let refused = |error: &AllocError| {
            matches!(
                error,
                AllocError::NotInRange { .. } | AllocError::Allocated(_)
            )
        };
        match self {
            Failure::RequestedIp(ip, error) if refused(&error) => {
                let ips = service
                    .spec
                    .as_ref()
                    .and_then(|s| s.cluster_ips.clone())
                    .unwrap_or_default();
                invalid(
                    Path::new("spec").child("clusterIPs"),
                    json!(ips),
                    format!("failed to allocate IP {ip}: {error}"),
                )
            }
            Failure::RequestedIp(ip, error) => {
                ApiError::internal(format!("failed to allocate IP {ip}: {error}"))
            }
            Failure::NextIp(error) => {
                ApiError::internal(format!("failed to allocate a serviceIP: {error}"))
            }
            Failure::RequestedPort(index, port, error) if refused(&error) => invalid(
                Path::new("spec")
                    .child("ports")
                    .index(index)
                    .child("nodePort"),
                json!(port),
                error.to_string(),
            ),
            Failure::RequestedPort(_, port, error) => {
                ApiError::internal(format!("failed to allocate node port {port}: {error}"))
            }
            Failure::NextPort(error) => {
                ApiError::internal(format!("failed to allocate a nodePort: {error}"))
            }
            Failure::HealthCheck(0, error) => ApiError::internal(format!(
                "failed to allocate a HealthCheck NodePort 0: {error}"
            )),
            Failure::HealthCheck(port, error) => ApiError::internal(format!(
                "failed to allocate requested HealthCheck NodePort {port}: {error}"
            )),
        }
    }
}

/// Takes what `service` needs and does not hold yet (`held`: what the
/// stored Service holds), filling it in; `taken` gathers what was taken.
async fn take(
    service: &mut Service,
    held: &Claims,
    allocators: &Allocators,
    owner: &Owner,
    now: &str,
    taken: &mut Claims,
) -> Result<(), Failure> {
    if needs_cluster_ip(service) && !is_headless(service) {
        let spec = service.spec.get_or_insert_with(Default::default);
        let wanted = spec.cluster_ip.clone().unwrap_or_default();
        let ip = if wanted.is_empty() {
            let ip = allocators
                .cluster_ips
                .allocate_next(owner, now)
                .await
                .map_err(Failure::NextIp)?;
            taken.cluster_ips.insert(ip);
            Some(ip)
        } else {
            match wanted.parse::<IpAddr>() {
                Ok(ip) if held.cluster_ips.contains(&ip) => None,
                Ok(ip) => {
                    allocators
                        .cluster_ips
                        .allocate(ip, owner, now)
                        .await
                        .map_err(|e| Failure::RequestedIp(wanted.clone(), e))?;
                    taken.cluster_ips.insert(ip);
                    None
                }
                // Validation said so before; an address that does not
                // parse here is not one to allocate.
                Err(_) => None,
            }
        };
        if let Some(ip) = ip {
            spec.cluster_ip = Some(ip.to_string());
            spec.cluster_ips = Some(vec![ip.to_string()]);
        }
    }
    if !needs_node_port(service) && !needs_health_check(service) {
        return Ok(());
    }
    let plan = allocators
        .node_ports
        .update(|ports| plan_node_ports(service, held, ports), now)
        .await?;
    let spec = service.spec.get_or_insert_with(Default::default);
    for (port, assigned) in spec.ports.iter_mut().flatten().zip(&plan.ports) {
        if let Some(assigned) = assigned {
            port.node_port = Some(*assigned);
        }
    }
    if let Some(health) = plan.health_check {
        spec.health_check_node_port = Some(health);
    }
    taken.node_ports.extend(plan.taken);
    Ok(())
}

/// The node ports a Service gets in one change of the bitmap.
struct PortPlan {
    /// Per port: the node port it gets, if any.
    ports: Vec<Option<i32>>,
    health_check: Option<i32>,
    taken: Vec<i32>,
}

/// `initNodePorts`/`updateNodePorts` and the health-check node port:
/// ports asked for by number are taken unless held already, ports of one
/// service port number (TCP and UDP) share one node port, the others get
/// free ones (not on a LoadBalancer that does not want them).
fn plan_node_ports(
    service: &Service,
    held: &Claims,
    ports: &mut crate::allocators::node_ports::PortSet,
) -> Result<PortPlan, Failure> {
    let mut plan = PortPlan {
        ports: Vec::new(),
        health_check: None,
        taken: Vec::new(),
    };
    let spec = service.spec.clone().unwrap_or_default();
    let mut by_service_port: std::collections::BTreeMap<i32, i32> = Default::default();
    if needs_node_port(service) {
        for (index, port) in spec.ports.iter().flatten().enumerate() {
            let requested = port.node_port.unwrap_or(0);
            let assigned = if requested != 0 {
                if !held.node_ports.contains(&requested) && !plan.taken.contains(&requested) {
                    ports
                        .allocate(requested)
                        .map_err(|e| Failure::RequestedPort(index, requested, e))?;
                    plan.taken.push(requested);
                }
                requested
            } else if let Some(shared) = by_service_port.get(&port.port) {
                *shared
            } else if allocates_node_ports(service) {
                let next = ports.allocate_next().map_err(Failure::NextPort)?;
                plan.taken.push(next);
                next
            } else {
                plan.ports.push(None);
                continue;
            };
            by_service_port.entry(port.port).or_insert(assigned);
            plan.ports.push(Some(assigned));
        }
    }
    if needs_health_check(service) {
        let requested = spec.health_check_node_port.unwrap_or(0);
        if requested == 0 {
            let next = ports
                .allocate_next()
                .map_err(|e| Failure::HealthCheck(0, e))?;
            plan.taken.push(next);
            plan.health_check = Some(next);
        } else if !held.node_ports.contains(&requested) {
            ports
                .allocate(requested)
                .map_err(|e| Failure::HealthCheck(requested, e))?;
            plan.taken.push(requested);
        }
    }
    Ok(plan)
}
