//! Types berth stores and serves but does nothing with (no controller
//! acts on them; quotas and limit ranges are not enforced):
//! ServiceAccounts, Endpoints, discovery.k8s.io/v1 EndpointSlices,
//! ResourceQuotas (with `/status`), LimitRanges and ReplicationControllers
//! (with `/status`: kube-scheduler lists them for its default spreading;
//! berth runs no controller for them). Each is validated with the rules
//! berth-core ports: metadata for all, the subsets of Endpoints, the
//! addresses of EndpointSlices, the quantities of quotas and limits.

use std::collections::BTreeMap;

use berth_core::validation::{
    ErrorList, Path, validate_endpoint_slice, validate_endpoints, validate_resource_quantities,
};
use k8s_openapi::api::core::v1::{
    Endpoints, LimitRange, ReplicationController, ResourceQuota, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::storage::stored_type;
use super::{ObjectType, Strategy, typed_validation};

/// The strategy of core/v1 ServiceAccounts: metadata only, as upstream's
/// `ValidateServiceAccount`.
#[derive(Debug)]
pub struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<ServiceAccount>()
    }
}

/// The strategy of core/v1 Endpoints.
#[derive(Debug)]
pub struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Endpoints>()
    }

    typed_validation!(|new: &Endpoints, _| validate_endpoints(new));
}

/// The strategy of discovery.k8s.io/v1 EndpointSlices.
#[derive(Debug)]
pub struct EndpointSlices;

impl Strategy for EndpointSlices {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<EndpointSlice>()
    }

    typed_validation!(|new: &EndpointSlice, _| validate_endpoint_slice(new));
}

fn quantities(list: Option<&BTreeMap<String, Quantity>>, path: Path) -> ErrorList {
    list.map(|list| validate_resource_quantities(list, &path))
        .unwrap_or_default()
}

/// The strategy of core/v1 ResourceQuotas: `spec.hard` quantities.
#[derive(Debug)]
pub struct ResourceQuotas;

fn quota_rules(quota: &ResourceQuota) -> ErrorList {
    let spec = quota.spec.as_ref();
    quantities(
        spec.and_then(|s| s.hard.as_ref()),
        Path::new("spec").child("hard"),
    )
}

impl Strategy for ResourceQuotas {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<ResourceQuota>()
    }

    fn has_status(&self) -> bool {
        true
    }

    typed_validation!(|new: &ResourceQuota, _| quota_rules(new));
}

/// The strategy of core/v1 LimitRanges: every limit's quantities.
#[derive(Debug)]
pub struct LimitRanges;

fn limit_range_rules(range: &LimitRange) -> ErrorList {
    let mut errs = ErrorList::new();
    let limits = range
        .spec
        .as_ref()
        .map(|s| s.limits.as_slice())
        .unwrap_or_default();
    for (i, limit) in limits.iter().enumerate() {
        let path = Path::new("spec").child("limits").index(i);
        for (field, list) in [
            ("max", &limit.max),
            ("min", &limit.min),
            ("default", &limit.default),
            ("defaultRequest", &limit.default_request),
            ("maxLimitRequestRatio", &limit.max_limit_request_ratio),
        ] {
            errs.extend(quantities(list.as_ref(), path.child(field)));
        }
    }
    errs
}

impl Strategy for LimitRanges {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<LimitRange>()
    }

    typed_validation!(|new: &LimitRange, _| limit_range_rules(new));
}

stored_type!(
    /// The strategy of core/v1 ReplicationControllers.
    ReplicationControllers, ReplicationController, status: true
);
