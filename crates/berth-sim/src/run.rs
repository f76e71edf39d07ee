//! Running a scenario: the cluster on a paused clock, the steps at their
//! virtual times, the timeline out.

use std::sync::Arc;
use std::time::Duration;

use berth_apiserver::api::{ApiConfig, ApiServer};
use berth_apiserver::auth::User;
use berth_apiserver::in_process;
use berth_client::taint::{TaintCommand, TaintError, taint_node};
use berth_core::clock::Clock;
use berth_store::{AnyStore, MemStore};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::components::{Component, ComponentContext, Started};
use crate::recorder::{self, millis_between};
use crate::scenario::{Action, Manifest, Scenario, Step, Target};
use berth_agent::sim::FleetHandle;
use berth_apiserver::resources::ResourceType;

use crate::fleet::{self, ConditionOverride, NodeCommand};
use crate::timeline::{Entry, Millis};

/// Wall time at t=0 of every run: fixed, so runs repeat.
pub const START: &str = "2026-01-01T00:00:00Z";

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("starting the API server: {0}")]
    Api(String),
    #[error("starting the nodes: {0}")]
    Nodes(#[from] fleet::JoinError),
    #[error("registering a node: {0}")]
    Node(#[from] berth_agent::sim::Refused),
    /// A step the cluster refused; a problem of the scenario.
    #[error("{file}:{line}: {message}")]
    Step {
        file: String,
        line: u64,
        message: String,
    },
    /// An object of `objects:` the API server refused.
    #[error("{file}:{line}: {message}")]
    Object {
        file: String,
        line: u64,
        message: String,
    },
    #[error("building the runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

impl SimError {
    /// Whether the scenario is at fault (exit 2) rather than berth.
    pub fn is_scenario_error(&self) -> bool {
        matches!(self, SimError::Step { .. } | SimError::Object { .. })
    }
}

/// What a run produced: the timeline and what the report draws it on.
#[derive(Debug, Clone)]
pub struct Recording {
    pub entries: Vec<Entry>,
    /// Node names and zones, in scenario order.
    pub nodes: Vec<(String, Option<String>)>,
    /// Steps: time and text.
    pub steps: Vec<(Millis, String)>,
    /// Total virtual time.
    pub run: Millis,
    /// Components that ran (the report says which were missing).
    pub components: Vec<String>,
}

pub use berth_core::splitmix::SplitMix64;

/// Mixed into the run's seed for the API server's generated names.
const NAME_SEED_SALT: u64 = 0x6e61_6d65_7365_6564;

/// Runs `scenario` on a fresh current-thread runtime with paused time.
pub fn run_blocking(
    scenario: &Scenario,
    components: &[Box<dyn Component>],
    seed: u64,
) -> Result<Recording, SimError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    runtime.block_on(run(scenario, components, seed))
}

/// Runs `scenario`. Call on a current-thread runtime whose time is paused
/// (as [`run_blocking`] makes one).
pub async fn run(
    scenario: &Scenario,
    components: &[Box<dyn Component>],
    seed: u64,
) -> Result<Recording, SimError> {
    let start: Timestamp = START.parse().unwrap_or(Timestamp::UNIX_EPOCH);
    let clock = Clock::virtual_from(start);
    let mut api_config = ApiConfig::default();
    let admission = &mut api_config.strategy.admission;
    admission.gates = scenario.config.feature_gates;
    admission.default_not_ready_toleration_seconds =
        scenario.config.default_not_ready_toleration_seconds;
    admission.default_unreachable_toleration_seconds =
        scenario.config.default_unreachable_toleration_seconds;
    // Generated names (a ReplicaSet's pods) repeat with the seed; drawn
    // apart from `rng` below so the nodes' phases stay what they were.
    api_config.name_seed = Some(SplitMix64::new(seed ^ NAME_SEED_SALT).next_u64());
    let api = ApiServer::new(AnyStore::Memory(MemStore::new()), clock.clone(), api_config)
        .await
        .map_err(|e| SimError::Api(e.to_string()))?;
    let admin = in_process::client(&api, User::admin(), "default")
        .map_err(|e| SimError::Api(e.to_string()))?;

    let mut recording = recorder::Recording::start(
        &admin,
        clock.clone(),
        start,
        scenario.config.feature_gates,
        scenario.config.unhealthy_zone_threshold as f32,
    )
    .await;

    let mut rng = SplitMix64::new(seed);
    let components_seed = rng.next_u64();
    // t=0: nodes (each with its heartbeat phase drawn from the seed),
    // objects, then the components.
    let phases: Vec<Duration> = scenario
        .nodes
        .iter()
        .map(|_| Duration::from_millis(rng.next_u64() % 10_000))
        .collect();
    let nodes_stop = CancellationToken::new();
    let mut nodes = fleet::start(
        &api,
        &clock,
        &scenario.nodes,
        &phases,
        scenario.config.feature_gates,
        nodes_stop.clone(),
    )?;
    nodes.up().await?;
    let mut cluster = Cluster {
        api: api.clone(),
        admin: admin.clone(),
        clock: clock.clone(),
        nodes,
        started: Vec::new(),
        seed: components_seed,
        starts: 0,
        config: scenario.config.clone(),
    };
    for object in &scenario.objects {
        cluster
            .apply(object)
            .await
            .map_err(|message| SimError::Object {
                file: scenario.file.clone(),
                line: object.line,
                message,
            })?;
    }
    recording.arm_zones();
    for component in components {
        cluster.start(component.as_ref());
    }

    for step in &scenario.steps {
        clock.sleep_until(start + signed(step.at)).await;
        tracing::debug!(at = ?step.at, step = %step.text, "step");
        cluster
            .step(step, components)
            .await
            .map_err(|message| SimError::Step {
                file: scenario.file.clone(),
                line: step.line,
                message: format!("{}: {message}", step.text),
            })?;
    }
    // Past the end by a millisecond, so everything due at the end has
    // happened (time moves only when every task waits).
    clock
        .sleep_until(start + signed(scenario.run) + SignedDuration::from_millis(1))
        .await;
    let end = millis_between(start, start + signed(scenario.run));
    let mut entries = recording.finish().await;
    entries.retain(|e| e.t <= end);
    for started in cluster.started.drain(..) {
        started.1.stop().await;
    }
    nodes_stop.cancel();

    Ok(Recording {
        entries,
        nodes: scenario
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.zone.clone()))
            .collect(),
        steps: scenario
            .steps
            .iter()
            .map(|s| (millis_between(start, start + signed(s.at)), s.text.clone()))
            .collect(),
        run: end,
        components: components.iter().map(|c| c.name().to_owned()).collect(),
    })
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

struct Cluster {
    api: Arc<ApiServer>,
    admin: Client,
    clock: Clock,
    nodes: FleetHandle,
    started: Vec<(&'static str, Started)>,
    seed: u64,
    /// Components started so far (each start gets its own seed).
    starts: u64,
    config: crate::config::SimConfig,
}

fn api_message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message,
        other => other.to_string(),
    }
}

impl Cluster {
    fn start(&mut self, component: &dyn Component) {
        self.starts += 1;
        let seed = SplitMix64::new(self.seed ^ self.starts.wrapping_mul(0x9e37_79b9)).next_u64();
        let ctx = ComponentContext {
            api: self.api.clone(),
            clock: self.clock.clone(),
            config: self.config.clone(),
            seed,
            stop: CancellationToken::new(),
        };
        let started = Started::spawn(component, ctx);
        self.started.push((component.name(), started));
    }

    fn dynamic(&self, manifest: &Manifest) -> Api<DynamicObject> {
        self.dynamic_api(manifest.resource, manifest.namespace.as_deref())
    }

    fn dynamic_target(&self, target: &Target) -> Api<DynamicObject> {
        self.dynamic_api(target.resource, target.namespace.as_deref())
    }

    fn dynamic_api(&self, rt: &ResourceType, namespace: Option<&str>) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk(rt.group, rt.version, rt.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, rt.plural);
        match namespace {
            Some(ns) => Api::namespaced_with(self.admin.clone(), ns, &resource),
            None => Api::all_with(self.admin.clone(), &resource),
        }
    }

    /// Server-side apply: creates or updates.
    async fn apply(&self, manifest: &Manifest) -> Result<(), String> {
        let api = self.dynamic(manifest);
        api.patch(
            &manifest.name,
            &PatchParams::apply("berth-sim").force(),
            &Patch::Apply(&manifest.object),
        )
        .await
        .map(|_| ())
        .map_err(api_message)
    }

    async fn step(&mut self, step: &Step, components: &[Box<dyn Component>]) -> Result<(), String> {
        match &step.action {
            Action::Taint {
                nodes,
                spec,
                expires_after,
            } => {
                // (The annotation keeps whole seconds.)
                let expires_at = expires_after.map(|after| self.clock.now() + signed(after));
                for node in nodes {
                    self.taint(node, spec, expires_at).await?;
                }
                Ok(())
            }
            Action::Heartbeat { nodes, stop } => {
                for node in nodes {
                    self.nodes.send(NodeCommand::Pause {
                        node: node.clone(),
                        paused: *stop,
                    });
                }
                Ok(())
            }
            Action::Condition {
                node,
                condition,
                status,
                reason,
                message,
            } => {
                self.nodes.send(NodeCommand::SetCondition {
                    node: node.clone(),
                    condition: ConditionOverride {
                        type_: condition.clone(),
                        status: status.clone(),
                        reason: reason
                            .clone()
                            .unwrap_or_else(|| format!("Scenario{condition}")),
                        message: message
                            .clone()
                            .unwrap_or_else(|| "set by the scenario".to_owned()),
                    },
                });
                Ok(())
            }
            Action::Apply(manifest) => self.apply(manifest).await,
            Action::Delete(target) => self
                .dynamic_target(target)
                .delete(&target.name, &DeleteParams::default())
                .await
                .map(|_| ())
                .map_err(api_message),
            Action::Scale { target, replicas } => {
                let patch = json!({"spec": {"replicas": replicas}});
                self.dynamic_target(target)
                    .patch_scale(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
                    .map_err(api_message)
            }
            Action::Cordon {
                node,
                unschedulable,
            } => {
                let nodes: Api<Node> = Api::all(self.admin.clone());
                let patch = json!({"spec": {"unschedulable": unschedulable}});
                nodes
                    .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
                    .map_err(api_message)
            }
            Action::Restart { component } => {
                let Some(index) = self.started.iter().position(|(n, _)| n == component) else {
                    tracing::warn!(%component, "restart: this build runs no such component");
                    return Ok(());
                };
                let (_, started) = self.started.remove(index);
                started.stop().await;
                if let Some(c) = components.iter().find(|c| c.name() == component) {
                    self.start(c.as_ref());
                }
                Ok(())
            }
        }
    }

    /// `kubectl taint nodes <node> <spec>` (berth-client's), the added
    /// taints expiring at `expires_at` if given.
    async fn taint(
        &self,
        node: &str,
        spec: &berth_core::taint_spec::TaintSpec,
        expires_at: Option<Timestamp>,
    ) -> Result<(), String> {
        let command = TaintCommand {
            spec,
            overwrite: false,
            expires_at,
            dry_run: false,
        };
        match taint_node(&self.admin, node, command).await {
            Ok(_) => Ok(()),
            Err(TaintError::Api(e)) => Err(api_message(e)),
            Err(e) => Err(e.to_string()),
        }
    }
}
