//! Upstream's suggested FlowSchemas: which priority level a request runs
//! at, and which flow (the unit of fairness inside the level) it is of.

use crate::auth::{GROUP_AUTHENTICATED, GROUP_MASTERS, GROUP_NODES, User};
use crate::request_info::RequestInfo;

use super::PriorityLevel;

/// Which FlowSchema matched, its level, the flow (the fairness unit) and
/// the lane inside the level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub flow_schema: &'static str,
    pub level: PriorityLevel,
    pub flow: String,
    pub lane: Lane,
}

/// Which of a level's two lanes a request waits in: the first lane's
/// requests go before the other's, which keep a bounded share of the seats
/// (see the module documentation). Only a node's Lease requests are in the
/// first lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    First,
    Other,
}

/// The users of berth's own scheduler and controllers, as upstream's.
pub const KUBE_SCHEDULER_USER: &str = "system:kube-scheduler";
pub const KUBE_CONTROLLER_MANAGER_USER: &str = "system:kube-controller-manager";

/// Upstream's suggested FlowSchemas, by matching precedence (the service
/// account schemas match nobody here: berth has no service accounts).
pub fn classify(user: &User, info: &RequestInfo) -> Classification {
    let by_user = || user.name.clone();
    let by_namespace = || info.namespace.clone();
    let class = |flow_schema, level, flow| Classification {
        flow_schema,
        level,
        flow,
        lane: Lane::Other,
    };
    if user.in_group(GROUP_MASTERS) {
        return class("exempt", PriorityLevel::Exempt, String::new());
    }
    if !info.is_resource_request && matches!(info.path.as_str(), "/healthz" | "/livez" | "/readyz")
    {
        return class("probes", PriorityLevel::Exempt, String::new());
    }
    let is_component = matches!(
        user.name.as_str(),
        KUBE_SCHEDULER_USER | KUBE_CONTROLLER_MANAGER_USER
    );
    let is_lease = info.is_resource_request
        && info.api_group == "coordination.k8s.io"
        && info.resource == "leases";
    if is_component && is_lease && matches!(info.verb.as_str(), "get" | "create" | "update") {
        return class(
            "system-leader-election",
            PriorityLevel::LeaderElection,
            by_user(),
        );
    }
    if user.in_group(GROUP_NODES) {
        let is_node = info.is_resource_request
            && info.api_group.is_empty()
            && info.resource == "nodes"
            && matches!(info.subresource.as_str(), "" | "status");
        return if is_lease {
            Classification {
                lane: Lane::First,
                ..class("system-node-high", PriorityLevel::NodeHigh, by_user())
            }
        } else if is_node {
            class("system-node-high", PriorityLevel::NodeHigh, by_user())
        } else {
            class("system-nodes", PriorityLevel::System, by_user())
        };
    }
    match user.name.as_str() {
        KUBE_CONTROLLER_MANAGER_USER => class(
            "kube-controller-manager",
            PriorityLevel::WorkloadHigh,
            by_namespace(),
        ),
        KUBE_SCHEDULER_USER => class(
            "kube-scheduler",
            PriorityLevel::WorkloadHigh,
            by_namespace(),
        ),
        _ if user.in_group(GROUP_AUTHENTICATED) => {
            class("global-default", PriorityLevel::GlobalDefault, by_user())
        }
        _ => class("catch-all", PriorityLevel::CatchAll, by_user()),
    }
}
