//! NodePorts: a pod's host ports must be free on the node (Filter).
//! Ported from upstream `plugins/nodeports/node_ports.go`: a port conflicts
//! with one in use on the same protocol and number when either binds all
//! addresses (`0.0.0.0`, the default) or both bind the same address.

use crate::framework::{
    Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin, PreFilterResult,
    Snapshot, Status,
};
use crate::snapshot::{HostPort, pod_host_ports};

/// The plugin's registry name.
pub const NAME: &str = "NodePorts";

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterNodePorts";

/// The Filter reason.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The NodePorts plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodePorts;

/// PreFilter's per-pod data: the ports the pod wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterState(pub Vec<HostPort>);

/// `fitsPorts`: none of `wanted` conflicts with `used`.
pub fn fits_ports(wanted: &[HostPort], used: &[HostPort]) -> bool {
    !wanted
        .iter()
        .any(|w| used.iter().any(|u| w.conflicts_with(u)))
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn node_local(&self) -> bool {
        true
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status) {
        let ports = pod_host_ports(pod.pod());
        if ports.is_empty() {
            return (None, Status::skip());
        }
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(ports));
        (None, Status::success())
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(wanted) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::error(format!(
                "reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME);
        };
        if fits_ports(&wanted.0, &node.used_ports) {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, ERR_REASON).with_plugin(NAME)
        }
    }
}

#[cfg(test)]
mod tests;
