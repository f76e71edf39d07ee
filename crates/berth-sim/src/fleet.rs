//! A scenario's nodes: berth-agent's simulated fleet
//! ([`berth_agent::sim`]), joined to the run's API server in-process.
//!
//! Each scenario node registers with its own labels, taints and capacity,
//! and keeps a fixed heartbeat at a phase drawn from the run's seed, so
//! the same file and seed give the same timeline. Steps reach the nodes
//! as [`NodeCommand`]s: `heartbeat` cuts a node off or brings it back,
//! `condition` sets what it reports.

use std::sync::Arc;
use std::time::Duration;

use berth_agent::config::AgentConfig;
use berth_agent::node_client::{bearer_header, with_default_bearer};
use berth_agent::registration::NodeTemplate;
use berth_agent::sim::{Fleet, FleetHandle, FleetOptions, SimNode, SimStats};
use berth_apiserver::api::ApiServer;
use berth_apiserver::auth::User;
use berth_core::FeatureGates;
use berth_core::clock::Clock;
use berth_runtime::sim::SimRuntime;
use http::HeaderValue;
use k8s_openapi::api::core::v1::NodeSystemInfo;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use tokio_util::sync::CancellationToken;

use crate::scenario::NodeSpec;

pub use berth_agent::sim::{ConditionOverride, NodeCommand};

/// Requests a scenario's fleet has in flight at most.
const MAX_IN_FLIGHT: usize = 64;

/// Simulated nodes joined to an API server without a network: the fleet's
/// shared client (its watches go out as `system:berth:sim`) and each
/// node's own token, registered with the server as the node's credential
/// (`system:node:<name>`, and what the server presents to its kubelet
/// endpoints, [`InProcess::serve_kubelets`]).
pub struct InProcess {
    pub client: kube::Client,
    /// One per name, in the order given.
    pub bearers: Vec<HeaderValue>,
    /// The names and their tokens.
    nodes: Vec<(String, String)>,
}

impl InProcess {
    /// Serves the nodes' kubelet endpoints (logs, figures) to `api` from
    /// the fleet's `runtime`, in process (`berth_apiserver::kubelets`).
    pub fn serve_kubelets(&self, api: &ApiServer, runtime: &Arc<SimRuntime>, clock: &Clock) {
        let router = berth_runtime::sim_kubelet::router(
            runtime.clone(),
            self.nodes.iter().cloned(),
            clock.clone(),
        );
        api.kubelets
            .attach(self.nodes.iter().map(|(name, _)| name.clone()), router);
    }
}

/// Why simulated nodes could not join in-process.
#[derive(Debug, thiserror::Error)]
#[error("a token for simulated nodes: {0}")]
pub struct JoinError(String);

/// A random bearer token (hex).
fn random_token() -> Result<(String, HeaderValue), JoinError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| JoinError(e.to_string()))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let header = bearer_header(&token).ok_or_else(|| JoinError("not a header value".into()))?;
    Ok((token, header))
}

/// Joins nodes named `names` to `api` (see [`InProcess`]).
pub fn join_in_process(api: &Arc<ApiServer>, names: &[String]) -> Result<InProcess, JoinError> {
    let mut bearers = Vec::with_capacity(names.len());
    let mut nodes = Vec::with_capacity(names.len());
    for name in names {
        let (token, header) = random_token()?;
        api.auth.add_node_credential(name, &token);
        bearers.push(header);
        nodes.push((name.clone(), token));
    }
    let (watcher, header) = random_token()?;
    api.auth.add_token(watcher, User::sim_fleet());
    let base = kube::Client::new(berth_apiserver::server::router(api.clone()), "default");
    Ok(InProcess {
        client: with_default_bearer(base, header),
        bearers,
        nodes,
    })
}

/// What a scenario node registers with: its labels, taints and capacity
/// (allocatable the same), and a nodeInfo of its own, the same on every
/// platform.
fn template(spec: &NodeSpec) -> NodeTemplate {
    let capacity: std::collections::BTreeMap<String, Quantity> = spec
        .capacity
        .iter()
        .map(|(resource, quantity)| (resource.clone(), Quantity(quantity.clone())))
        .collect();
    NodeTemplate {
        name: spec.name.clone(),
        labels: spec.labels.clone(),
        taints: spec.taints.clone(),
        allocatable: capacity.clone(),
        capacity,
        addresses: Vec::new(),
        node_info: NodeSystemInfo {
            kubelet_version: "v1.37.0-berth-sim".into(),
            container_runtime_version: "sim://1".into(),
            operating_system: "linux".into(),
            architecture: "amd64".into(),
            os_image: "berth sim".into(),
            ..NodeSystemInfo::default()
        },
        kubelet_port: None,
    }
}

/// Starts the scenario's nodes on `clock`; `phases` (one per node) are
/// their heartbeats' offsets, `gates` their admission's. Its
/// [`FleetHandle::up`] says when every node is registered and Ready.
pub fn start(
    api: &Arc<ApiServer>,
    clock: &Clock,
    specs: &[NodeSpec],
    phases: &[Duration],
    gates: FeatureGates,
    stop: CancellationToken,
) -> Result<FleetHandle, JoinError> {
    let names: Vec<String> = specs.iter().map(|spec| spec.name.clone()).collect();
    let joined = join_in_process(api, &names)?;
    let runtime = Arc::new(SimRuntime::new(clock.clone()));
    joined.serve_kubelets(api, &runtime, clock);
    let nodes = specs
        .iter()
        .zip(joined.bearers)
        .zip(phases)
        .map(|((spec, bearer), phase)| SimNode {
            name: spec.name.clone(),
            zone: None,
            bearer: Some(bearer),
            template: Arc::new(template(spec)),
            phase: Some(*phase),
        })
        .collect();
    let fleet = Fleet {
        client: joined.client,
        nodes,
        runtime,
        clock: clock.clone(),
        options: FleetOptions {
            config: AgentConfig::default(),
            gates,
            max_in_flight: MAX_IN_FLIGHT,
        },
        stats: Arc::new(SimStats::default()),
        // The scenario's own pod watch: its timeline replays exactly.
        pods: None,
    };
    let (handle, _task) = fleet.spawn(stop);
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use berth_testing::{TestServer, mark_unknown, node_as_created, nodes_revision};
    use k8s_openapi::api::core::v1::{Node, NodeCondition};
    use kube::Api;

    fn ready(node: &Node) -> Option<NodeCondition> {
        node.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .cloned()
    }

    /// A fleet of one node, `node1`, up on `server`, and what stops it.
    async fn one_node_up(
        server: &TestServer,
    ) -> (berth_agent::sim::FleetHandle, CancellationToken) {
        let spec = NodeSpec {
            name: "node1".into(),
            zone: None,
            labels: BTreeMap::new(),
            taints: Vec::new(),
            capacity: BTreeMap::new(),
        };
        let stop = CancellationToken::new();
        let mut fleet = start(
            &server.api,
            &server.clock,
            &[spec],
            &[Duration::from_secs(3)],
            FeatureGates::default(),
            stop.clone(),
        )
        .expect("fleet");
        fleet.up().await.expect("the node is up");
        (fleet, stop)
    }

    /// A simulated node registers as a kubelet does, with its conditions in
    /// the Node it creates: the Node's first version is already Ready, not
    /// only after its first status write.
    #[tokio::test(start_paused = true)]
    async fn a_node_is_ready_in_the_node_it_registers() {
        let server = TestServer::start().await;
        let before = nodes_revision(&server).await;
        let (_fleet, stop) = one_node_up(&server).await;
        let first = node_as_created(&server, &before, "node1").await;
        let registered = ready(&first).expect("the created Node has a Ready condition");
        assert_eq!(registered.status, "True", "{registered:?}");
        stop.cancel();
    }

    /// The node lifecycle controller set the node's conditions Unknown
    /// (written here by hand) while the node kept running: it reports
    /// Ready again within one status period (10 s), with a new transition
    /// time, not at its 5-minute report.
    #[tokio::test(start_paused = true)]
    async fn a_node_marked_unknown_reports_ready_within_one_status_period() {
        let server = TestServer::start().await;
        let clock = &server.clock;
        let (_fleet, stop) = one_node_up(&server).await;
        let nodes: Api<Node> = Api::all(server.admin.clone());
        clock.sleep(Duration::from_secs(60)).await;
        let marked = mark_unknown(&server, "node1").await;
        clock.sleep(Duration::from_secs(10)).await;
        let back = ready(&nodes.get("node1").await.expect("node")).expect("Ready");
        assert_eq!(back.status, "True", "{back:?}");
        assert!(
            back.last_transition_time
                .as_ref()
                .is_some_and(|t| t.0 > marked),
            "a new transition: {back:?}"
        );
        stop.cancel();
    }
}
