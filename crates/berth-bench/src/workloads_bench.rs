//! `berth-bench workloads` (issue 19): the workload controllers at scale,
//! end to end through a `berth server --sim-nodes N` child process (the
//! simulated kubelets run inside the server and report a bound pod Running
//! and Ready at once, so the figures are the control plane's: controllers,
//! scheduler, API server, store, and the nodes' status writes).
//!
//! Two phases, each on a fresh server and data directory:
//! - **deployment**: N nodes (1,000), a Deployment created at 0 replicas,
//!   then scaled to R (10,000); seconds from the scale to all R pods Running
//!   and Ready;
//! - **daemonset**: M nodes (5,000), a DaemonSet created; seconds until every
//!   node runs its pod.
//!
//! A watch of the namespace's pods (from before the scale or create) sees
//! every pod, so "no pod created twice" is counted, not assumed: the
//! distinct UIDs and names created, the deletions, and for the DaemonSet the
//! most pods any one node got. The timeline (last create, last bind, last
//! Running and Ready) says where the time went.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use berth_agent::credential::{client_from_kubeconfig, render_kubeconfig};
use berth_controllers::watched_pod::WatchedPod;
use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde::Serialize;

use crate::harness::{
    Memory, berth_binary, cpu_seconds, data_parent, memory_of, start_server_with,
};
use crate::measure::{Machine, load_average};

/// Where the benchmark's workloads live.
const NAMESPACE: &str = "default";

#[derive(Debug, Args)]
pub struct WorkloadsArgs {
    /// Simulated nodes of the Deployment phase.
    #[arg(long, default_value_t = 1_000)]
    deployment_nodes: usize,
    /// The replicas the Deployment is scaled to.
    #[arg(long, default_value_t = 10_000)]
    replicas: usize,
    /// Simulated nodes of the DaemonSet phase.
    #[arg(long, default_value_t = 5_000)]
    daemonset_nodes: usize,
    /// Run only one phase.
    #[arg(long, value_enum)]
    only: Option<Phase>,
    /// How long a phase may take before the benchmark gives up, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout_seconds: u64,
    /// Extra flags for `berth server` (repeat it; e.g. `--server-arg=--concurrent-replicaset-syncs=10`).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// The `berth` binary (default: next to this one).
    #[arg(long)]
    berth_bin: Option<PathBuf>,
    /// Directory under which the servers' temporary data directories are made.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Phase {
    Deployment,
    Daemonset,
}

#[derive(Debug, Serialize)]
pub struct WorkloadsReport {
    bench: &'static str,
    machine: Machine,
    berth_bin: String,
    server_args: Vec<String>,
    deployment: Option<DeploymentFigures>,
    daemonset: Option<DaemonSetFigures>,
    /// Upstream's kube-controller-manager creates pods through a client
    /// limited to `--kube-api-qps` (20/s, burst 30): computed, not measured.
    upstream_kcm_seconds_to_create_replicas_at_20_qps: f64,
}

/// The Deployment phase's figures.
#[derive(Debug, Serialize)]
struct DeploymentFigures {
    nodes: usize,
    replicas: usize,
    /// Seconds from registration of the first node to every node Ready and untainted.
    nodes_ready_seconds: f64,
    /// Seconds from the scale to every replica Running and Ready.
    seconds_to_all_ready: f64,
    goal_seconds: f64,
    goal_met: bool,
    timeline: Timeline,
    pods: PodCounts,
    server: ServerFigures,
    load_average: LoadAverage,
}

/// The DaemonSet phase's figures.
#[derive(Debug, Serialize)]
struct DaemonSetFigures {
    nodes: usize,
    nodes_ready_seconds: f64,
    /// Seconds from the create to every node running its pod.
    seconds_to_every_node_running: f64,
    goal_seconds: f64,
    goal_met: bool,
    timeline: Timeline,
    pods: PodCounts,
    /// The most pods of the DaemonSet any one node was given (1 if none was
    /// created twice).
    max_pods_on_one_node: usize,
    server: ServerFigures,
    load_average: LoadAverage,
}

/// When the last of the pods reached each step, in seconds from the start.
#[derive(Debug, Default, Serialize)]
struct Timeline {
    /// The watch saw the first pod.
    first_created: Option<f64>,
    /// The watch saw the wanted number of pods created.
    all_created: Option<f64>,
    all_bound: Option<f64>,
    all_running_and_ready: Option<f64>,
}

/// What the watch counted of the pods.
#[derive(Debug, Serialize)]
struct PodCounts {
    wanted: usize,
    /// Distinct UIDs the watch saw created (the whole phase plus the settle).
    distinct_uids: usize,
    /// Distinct pod names among them.
    distinct_names: usize,
    /// Pods the watch saw deleted.
    deleted: usize,
    /// `distinct_uids == wanted && distinct_names == wanted && deleted == 0`.
    none_created_twice: bool,
    /// Watch events received (every change of every pod).
    watch_events: u64,
    /// Whether the watch ran without a gap (a gap would make the counts lower bounds).
    watch_unbroken: bool,
}

#[derive(Debug, Serialize)]
struct ServerFigures {
    /// Server CPU seconds over the measured interval (controllers,
    /// scheduler, API server, store and the simulated kubelets).
    cpu_seconds: f64,
    cpu_cores: f64,
    memory: Option<Memory>,
}

/// `/proc/loadavg` before and after the phase (the machine is shared).
#[derive(Debug, Serialize)]
struct LoadAverage {
    before: String,
    after: String,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn run(args: &WorkloadsArgs) -> anyhow::Result<WorkloadsReport> {
    let berth = berth_binary(args.berth_bin.as_deref())?;
    let parent = data_parent(args.data_dir.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let deployment = match args.only {
        None | Some(Phase::Deployment) => {
            Some(runtime.block_on(deployment_phase(args, &berth, &parent))?)
        }
        Some(Phase::Daemonset) => None,
    };
    let daemonset = match args.only {
        None | Some(Phase::Daemonset) => {
            Some(runtime.block_on(daemonset_phase(args, &berth, &parent))?)
        }
        Some(Phase::Deployment) => None,
    };
    Ok(WorkloadsReport {
        bench: "workloads",
        machine: Machine::describe(),
        berth_bin: berth.display().to_string(),
        server_args: args.server_args.clone(),
        deployment,
        daemonset,
        upstream_kcm_seconds_to_create_replicas_at_20_qps: round3(
            (args.replicas.saturating_sub(30)) as f64 / 20.0,
        ),
    })
}

/// A `berth server --sim-nodes N` with an admin client, once every node is
/// Ready and untainted (the node lifecycle controller has lifted the
/// not-ready taint admission puts on a new node).
struct Cluster {
    server: crate::harness::ServerProcess,
    client: kube::Client,
    nodes_ready_seconds: f64,
    _dir: tempfile::TempDir,
}

async fn cluster(
    args: &WorkloadsArgs,
    berth: &Path,
    parent: &Path,
    nodes: usize,
) -> anyhow::Result<Cluster> {
    let dir = tempfile::tempdir_in(parent).context("server data directory")?;
    let count = nodes.to_string();
    let mut flags: Vec<&str> = vec!["--sim-nodes", &count];
    flags.extend(args.server_args.iter().map(String::as_str));
    let server = start_server_with(berth, dir.path(), &flags).await?;
    let ca = std::fs::read(dir.path().join("ca.crt")).context("ca.crt")?;
    let token = std::fs::read_to_string(dir.path().join("admin-token"))
        .context("reading the admin token")?;
    let client = client_from_kubeconfig(&render_kubeconfig(
        &server.url,
        &ca,
        "admin",
        Some(token.trim()),
    ))
    .await?;
    let started = Instant::now();
    let api: Api<Node> = Api::all(client.clone());
    loop {
        let list = api.list(&ListParams::default()).await?;
        let ready = list.items.iter().filter(|n| ready_and_untainted(n)).count();
        if ready >= nodes {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(args.timeout_seconds),
            "only {ready} of {nodes} nodes Ready and untainted after {} s",
            args.timeout_seconds
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let nodes_ready_seconds = round3(started.elapsed().as_secs_f64());
    eprintln!("workloads: {nodes} nodes Ready in {nodes_ready_seconds} s");
    // A node is Ready from its registration; its first status report
    // follows. The phase starts once every node has made it, on a settled
    // cluster.
    let mut up = server.sim_nodes_up.clone();
    let limit = Duration::from_secs(args.timeout_seconds).saturating_sub(started.elapsed());
    tokio::time::timeout(limit, up.wait_for(|up| *up))
        .await
        .context("the simulated nodes did not come up")?
        .context("the server's log ended")?;
    eprintln!(
        "workloads: {nodes} nodes up (first status reports made) in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    Ok(Cluster {
        server,
        client,
        nodes_ready_seconds,
        _dir: dir,
    })
}

fn ready_and_untainted(node: &Node) -> bool {
    let untainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_none_or(Vec::is_empty);
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    untainted && ready
}

fn pod_template(app: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"labels": {"app": app}},
        "spec": {
            "containers": [{
                "name": "c",
                "image": "registry.example/bench:1",
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}
            }]
        }
    })
}

async fn deployment_phase(
    args: &WorkloadsArgs,
    berth: &Path,
    parent: &Path,
) -> anyhow::Result<DeploymentFigures> {
    let cluster = cluster(args, berth, parent, args.deployment_nodes).await?;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": NAMESPACE},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": pod_template("bench"),
        }
    }))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .context("creating the Deployment")?;
    // The controllers see the Deployment and make its (empty) ReplicaSet.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pods: Api<WatchedPod> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let wanted = args.replicas;
    let mut watch = PodWatch::start(pods, wanted).await?;
    let load_before = load_average();
    let cpu_before = cpu_seconds(cluster.server.pid);
    let started = Instant::now();
    deployments
        .patch(
            "bench",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": args.replicas}})),
        )
        .await
        .context("scaling the Deployment")?;
    let deadline = started + Duration::from_secs(args.timeout_seconds);
    let reached = watch
        .until(deadline, |tally| tally.running_and_ready >= wanted)
        .await?;
    anyhow::ensure!(
        reached,
        "only {} of {wanted} replicas Running and Ready after {} s",
        watch.tally.running_and_ready,
        args.timeout_seconds
    );
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(cluster.server.pid) - cpu_before;
    let memory = memory_of(cluster.server.pid);
    let load_after = load_average();
    eprintln!("workloads: {wanted} replicas Running and Ready in {seconds:.3} s");
    // A pod created twice would come after: let the controllers settle.
    watch.until(Instant::now() + SETTLE, |_| false).await?;
    let timeline = watch.timeline(started);
    let pods = watch.counts();
    let nodes_ready_seconds = cluster.nodes_ready_seconds;
    drop(cluster);
    Ok(DeploymentFigures {
        nodes: args.deployment_nodes,
        replicas: wanted,
        nodes_ready_seconds,
        seconds_to_all_ready: round3(seconds),
        goal_seconds: DEPLOYMENT_GOAL_SECONDS,
        goal_met: seconds <= DEPLOYMENT_GOAL_SECONDS && pods.none_created_twice,
        timeline,
        pods,
        server: ServerFigures::of(cpu, seconds, memory),
        load_average: LoadAverage {
            before: load_before,
            after: load_after,
        },
    })
}

async fn daemonset_phase(
    args: &WorkloadsArgs,
    berth: &Path,
    parent: &Path,
) -> anyhow::Result<DaemonSetFigures> {
    let cluster = cluster(args, berth, parent, args.daemonset_nodes).await?;
    let daemonsets: Api<DaemonSet> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let daemonset: DaemonSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "bench", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": "bench-ds"}},
            "template": pod_template("bench-ds"),
        }
    }))?;
    let pods: Api<WatchedPod> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let wanted = args.daemonset_nodes;
    let mut watch = PodWatch::start(pods, wanted).await?;
    let load_before = load_average();
    let cpu_before = cpu_seconds(cluster.server.pid);
    let started = Instant::now();
    daemonsets
        .create(&PostParams::default(), &daemonset)
        .await
        .context("creating the DaemonSet")?;
    let deadline = started + Duration::from_secs(args.timeout_seconds);
    let reached = watch
        .until(deadline, |tally| tally.nodes_running.len() >= wanted)
        .await?;
    anyhow::ensure!(
        reached,
        "only {} of {wanted} nodes run the DaemonSet's pod after {} s",
        watch.tally.nodes_running.len(),
        args.timeout_seconds
    );
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(cluster.server.pid) - cpu_before;
    let memory = memory_of(cluster.server.pid);
    let load_after = load_average();
    eprintln!("workloads: the DaemonSet runs on all {wanted} nodes in {seconds:.3} s");
    watch.until(Instant::now() + SETTLE, |_| false).await?;
    let timeline = watch.timeline(started);
    let pods = watch.counts();
    let max_pods_on_one_node = watch
        .tally
        .uids_per_node
        .values()
        .copied()
        .max()
        .unwrap_or(0);
    let nodes_ready_seconds = cluster.nodes_ready_seconds;
    drop(cluster);
    Ok(DaemonSetFigures {
        nodes: wanted,
        nodes_ready_seconds,
        seconds_to_every_node_running: round3(seconds),
        goal_seconds: DAEMONSET_GOAL_SECONDS,
        goal_met: seconds <= DAEMONSET_GOAL_SECONDS
            && pods.none_created_twice
            && max_pods_on_one_node == 1,
        timeline,
        pods,
        max_pods_on_one_node,
        server: ServerFigures::of(cpu, seconds, memory),
        load_average: LoadAverage {
            before: load_before,
            after: load_after,
        },
    })
}

impl ServerFigures {
    fn of(cpu: f64, seconds: f64, memory: Option<Memory>) -> ServerFigures {
        ServerFigures {
            cpu_seconds: round3(cpu),
            cpu_cores: round3(cpu / seconds.max(f64::EPSILON)),
            memory,
        }
    }
}

/// What one pod was when last seen.
#[derive(Debug, Default, Clone, PartialEq)]
struct PodState {
    node: String,
    running: bool,
    ready: bool,
}

impl PodState {
    fn of(pod: &WatchedPod) -> PodState {
        let status = pod.status.as_ref();
        PodState {
            node: pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
            running: status.and_then(|s| s.phase.as_deref()) == Some("Running"),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        }
    }
}

/// The counts the phases wait on, kept as events arrive.
#[derive(Debug, Default)]
struct Tally {
    /// Live pods bound to a node.
    bound: usize,
    /// Live pods Running and Ready.
    running_and_ready: usize,
    /// Live Running pods per node.
    nodes_running: HashMap<String, usize>,
    /// Distinct pods ever bound to each node.
    uids_per_node: HashMap<String, usize>,
}

impl Tally {
    fn remove(&mut self, state: &PodState) {
        if !state.node.is_empty() {
            self.bound -= 1;
        }
        if state.running && state.ready {
            self.running_and_ready -= 1;
        }
        if state.running
            && let Some(count) = self.nodes_running.get_mut(&state.node)
        {
            *count -= 1;
            if *count == 0 {
                self.nodes_running.remove(&state.node);
            }
        }
    }

    fn add(&mut self, state: &PodState) {
        if !state.node.is_empty() {
            self.bound += 1;
        }
        if state.running && state.ready {
            self.running_and_ready += 1;
        }
        if state.running {
            *self.nodes_running.entry(state.node.clone()).or_default() += 1;
        }
    }
}

/// How long the watch goes on after the goal, for a pod created twice to show.
const SETTLE: Duration = Duration::from_secs(2);
/// Issue 19's goals on this 2-core machine.
const DEPLOYMENT_GOAL_SECONDS: f64 = 5.0;
const DAEMONSET_GOAL_SECONDS: f64 = 3.0;

type EventStream = futures::stream::BoxStream<'static, kube::Result<WatchEvent<WatchedPod>>>;

/// A watch of the namespace's pods from a revision taken before the
/// workload is scaled or created, so it sees every pod the controllers make.
struct PodWatch {
    api: Api<WatchedPod>,
    stream: Option<EventStream>,
    revision: String,
    wanted: usize,
    live: HashMap<String, PodState>,
    uids: HashSet<String>,
    names: HashSet<String>,
    deleted: usize,
    events: u64,
    unbroken: bool,
    tally: Tally,
    first_created: Option<Instant>,
    all_created: Option<Instant>,
    all_bound: Option<Instant>,
    all_running_and_ready: Option<Instant>,
}

impl PodWatch {
    async fn start(api: Api<WatchedPod>, wanted: usize) -> anyhow::Result<PodWatch> {
        let first = api
            .list_metadata(&ListParams::default().limit(1))
            .await
            .context("listing one pod for a revision")?;
        anyhow::ensure!(
            first.items.is_empty(),
            "the namespace already has pods; the benchmark needs a fresh server"
        );
        let revision = first
            .metadata
            .resource_version
            .context("the list has no resourceVersion")?;
        Ok(PodWatch {
            api,
            stream: None,
            revision,
            wanted,
            live: HashMap::new(),
            uids: HashSet::new(),
            names: HashSet::new(),
            deleted: 0,
            events: 0,
            unbroken: true,
            tally: Tally::default(),
            first_created: None,
            all_created: None,
            all_bound: None,
            all_running_and_ready: None,
        })
    }

    /// Reads events until `done` holds (true) or `deadline` passes (false).
    async fn until(
        &mut self,
        deadline: Instant,
        done: impl Fn(&Tally) -> bool,
    ) -> anyhow::Result<bool> {
        loop {
            if done(&self.tally) {
                return Ok(true);
            }
            let stream = match &mut self.stream {
                Some(stream) => stream,
                None => {
                    let params = WatchParams::default().timeout(290);
                    let stream = self.api.watch(&params, &self.revision).await?.boxed();
                    self.stream.insert(stream)
                }
            };
            let event = match tokio::time::timeout_at(deadline.into(), stream.next()).await {
                Err(_) => return Ok(false),
                Ok(event) => event,
            };
            match event {
                None => self.stream = None,
                Some(Ok(event)) => self.apply(event)?,
                Some(Err(e)) => {
                    eprintln!("workloads: pod watch: {e}");
                    self.unbroken = false;
                    self.stream = None;
                }
            }
        }
    }

    fn apply(&mut self, event: WatchEvent<WatchedPod>) -> anyhow::Result<()> {
        self.events += 1;
        let now = Instant::now();
        match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                self.note_revision(&pod);
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                if self.uids.insert(uid.clone()) {
                    self.names
                        .insert(pod.metadata.name.clone().unwrap_or_default());
                    self.first_created.get_or_insert(now);
                }
                let state = PodState::of(&pod);
                let before = self.live.get(&uid).cloned();
                if before.as_ref() == Some(&state) {
                    return Ok(());
                }
                if let Some(before) = &before {
                    self.tally.remove(before);
                }
                if !state.node.is_empty() && before.as_ref().is_none_or(|b| b.node != state.node) {
                    *self
                        .tally
                        .uids_per_node
                        .entry(state.node.clone())
                        .or_default() += 1;
                }
                self.tally.add(&state);
                self.live.insert(uid, state);
            }
            WatchEvent::Deleted(pod) => {
                self.note_revision(&pod);
                if let Some(before) = self
                    .live
                    .remove(&pod.metadata.uid.clone().unwrap_or_default())
                {
                    self.tally.remove(&before);
                }
                self.deleted += 1;
            }
            WatchEvent::Bookmark(bookmark) => {
                self.revision = bookmark.metadata.resource_version;
            }
            WatchEvent::Error(e) => {
                // 410 Gone: the revision left the server's history; resume
                // with "" (every live pod again as ADDED, deduplicated by
                // UID; a pod created and deleted meanwhile is missed, so
                // the counts become lower bounds).
                eprintln!("workloads: pod watch: {e}");
                self.unbroken = false;
                self.stream = None;
                if e.code == 410 {
                    self.revision = String::new();
                }
            }
        }
        self.mark(now);
        Ok(())
    }

    fn note_revision(&mut self, pod: &WatchedPod) {
        if let Some(rv) = &pod.metadata.resource_version {
            self.revision.clone_from(rv);
        }
    }

    /// Records when each of the timeline's counts first reached `wanted`.
    fn mark(&mut self, now: Instant) {
        let wanted = self.wanted;
        if self.uids.len() >= wanted {
            self.all_created.get_or_insert(now);
        }
        if self.tally.bound >= wanted {
            self.all_bound.get_or_insert(now);
        }
        if self.tally.running_and_ready >= wanted {
            self.all_running_and_ready.get_or_insert(now);
        }
    }

    fn timeline(&self, started: Instant) -> Timeline {
        let at = |t: Option<Instant>| t.map(|t| round3(t.duration_since(started).as_secs_f64()));
        Timeline {
            first_created: at(self.first_created),
            all_created: at(self.all_created),
            all_bound: at(self.all_bound),
            all_running_and_ready: at(self.all_running_and_ready),
        }
    }

    fn counts(&self) -> PodCounts {
        PodCounts {
            wanted: self.wanted,
            distinct_uids: self.uids.len(),
            distinct_names: self.names.len(),
            deleted: self.deleted,
            none_created_twice: self.uids.len() == self.wanted
                && self.names.len() == self.wanted
                && self.deleted == 0,
            watch_events: self.events,
            watch_unbroken: self.unbroken,
        }
    }
}
