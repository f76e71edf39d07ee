//! One scheduling cycle (upstream's `schedulePod`): PreFilter, Filter over
//! enough nodes, PreScore, Score with NormalizeScore and plugin weights,
//! then a random pick among the best nodes.
//!
//! - **Which nodes are filtered.** Upstream's `numFeasibleNodesToFind`:
//!   with 100 nodes or more the cycle stops once it has found
//!   `percentageOfNodesToScore` of them feasible (adaptive by default:
//!   `50 - nodes/125` percent, at least 5 %, at least 100 nodes). Each cycle
//!   starts where the last one stopped, so every node gets its turn.
//! - **Filters** run in the profile's order (by default NodeUnschedulable,
//!   NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
//!   PodTopologySpread, InterPodAffinity) and stop at a node's first
//!   rejection.
//! - **Scores** are normalised per plugin to `0..=100` and summed with the
//!   profile's weights (by default TaintToleration 3, NodeAffinity 2,
//!   NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2,
//!   NodeResourcesBalancedAllocation 1, ImageLocality 1).
//! - **Ties** go to a node chosen uniformly at random among the best
//!   (upstream's `selectHost` reservoir sampling).

use std::collections::BTreeSet;
use std::sync::Arc;

use berth_core::splitmix::SplitMix64;
use smallvec::SmallVec;

use crate::cache::Cache;
use crate::framework::{
    Code, CycleState, Diagnosis, FilterPlugin, FitError, MAX_NODE_SCORE, MIN_NODE_SCORE, Memory,
    NodeInfo, NodePod, NodeScore, NodeToStatus, PodInfo, PreFilterPlugin, Snapshot, Status,
};
use crate::plugins::{node_affinity, node_resources_fit, taint_toleration};
pub use crate::profile::{DEFAULT_SCHEDULER_NAME, Profile};

/// Upstream's `minFeasibleNodesToFind`.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream's `minFeasibleNodesPercentageToFind`.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;
/// Upstream's `ErrNoNodesAvailable` message.
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// `numFeasibleNodesToFind`: how many feasible nodes a cycle looks for
/// among `num_all_nodes`; `percentage` 0 means adaptive.
pub fn num_feasible_nodes_to_find(percentage: u32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let mut percentage = percentage as usize;
    if percentage == 0 {
        percentage = 50usize.saturating_sub(num_all_nodes / 125);
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND {
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND;
        }
    }
    let num_nodes = num_all_nodes.saturating_mul(percentage) / 100;
    num_nodes.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Where the pod goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleResult {
    pub node: String,
    /// Nodes filtered (passed or not).
    pub evaluated_nodes: usize,
    pub feasible_nodes: usize,
}

/// Why a cycle found no node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleError {
    /// The cluster has no nodes.
    NoNodes,
    /// Every node was rejected; the message counts the reasons.
    Fit(Box<FitError>),
    /// A plugin failed (upstream's `Error` code).
    Error(Status),
}

impl ScheduleError {
    /// The plugins that rejected the pod: the ones whose events may help.
    pub fn unschedulable_plugins(&self) -> Vec<&'static str> {
        match self {
            ScheduleError::Fit(fit) => fit
                .diagnosis
                .unschedulable_plugins
                .iter()
                .copied()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// An internal error rather than a rejection.
    pub fn is_error(&self) -> bool {
        matches!(self, ScheduleError::Error(_))
    }
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScheduleError::NoNodes => f.write_str(NO_NODES_AVAILABLE),
            ScheduleError::Fit(fit) => fit.fmt(f),
            ScheduleError::Error(status) => f.write_str(&status.message()),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// The tie-breaker among equally scored nodes: berth-core's SplitMix64,
/// seeded by the caller so tests are reproducible.
#[derive(Debug, Clone)]
pub struct TieBreaker(SplitMix64);

impl TieBreaker {
    pub fn new(seed: u64) -> Self {
        TieBreaker(SplitMix64::new(seed))
    }

    /// Uniform in `0..n` (`n` > 0; the modulo bias is below 2^-40 for the
    /// node counts seen here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % (n.max(1) as u64)) as usize
    }
}

/// The scheduling algorithm's state across cycles: where the next
/// cycle starts filtering, and the tie-breaker.
#[derive(Debug, Clone)]
pub struct Cycle {
    next_start_node_index: usize,
    tie_breaker: TieBreaker,
    /// Plugins' counts kept from one cycle to the next.
    memory: Memory,
    /// The list the filtering of a cycle collects rejections in, kept from
    /// one cycle to the next: a cycle may reject thousands of nodes before
    /// it finds enough that fit, and growing a new list for each pod cost
    /// more than the filters that rejected them. Shared with the
    /// diagnosis of a cycle that found no node, which names the nodes by
    /// their index in it.
    rejected: Arc<Rejected>,
    /// Verdicts kept for the next pod of the same spec.
    memo: Memo,
}

/// Nodes (indexes into the cache's) a filter rejected, with why.
type Rejected = Vec<(usize, Status)>;

/// The filters of a profile, resolved for one cycle.
type Filters<'a> = SmallVec<[&'a dyn FilterPlugin; 12]>;

impl Cycle {
    pub fn new(seed: u64) -> Self {
        Cycle {
            next_start_node_index: 0,
            tie_breaker: TieBreaker::new(seed),
            memory: Memory::default(),
            rejected: Arc::new(Rejected::new()),
            memo: Memo::default(),
        }
    }

    /// How many verdicts of earlier cycles were reused (see [`memo`]).
    #[cfg(test)]
    pub(crate) fn reused_verdicts(&self) -> u64 {
        self.memo.reused()
    }

    /// Never reuse a verdict of an earlier cycle (see [`memo`]): for
    /// tests that compare decisions with and without.
    #[cfg(test)]
    pub(crate) fn disable_memo(&mut self) {
        self.memo = Memo::disabled();
    }

    /// The nodes the last cycle's filters rejected (indexes into the
    /// cache's nodes) with why: for tools and tests that compare an
    /// explanation with the cycle, and for the PostFilter after a cycle
    /// that found no node (empty when a PreFilter rejected the pod).
    pub fn last_rejections(&self) -> &[(usize, Status)] {
        &self.rejected
    }

    /// Finds the node for `pod` among the cache's nodes (upstream's
    /// `schedulePod`): the nodes that fit, their scores, the best one.
    pub fn schedule_pod(
        &mut self,
        profile: &Profile,
        pod: &PodInfo,
        cache: &Cache,
    ) -> Result<ScheduleResult, ScheduleError> {
        let all = cache.nodes();
        if all.is_empty() {
            return Err(ScheduleError::NoNodes);
        }
        let snapshot = cache.snapshot();
        let mut state = CycleState::with_memory(std::mem::take(&mut self.memory));
        let result = self.schedule_with(profile, &mut state, pod, cache, &snapshot);
        self.memory = state.into_memory();
        result
    }

    fn schedule_with(
        &mut self,
        profile: &Profile,
        state: &mut CycleState,
        pod: &PodInfo,
        cache: &Cache,
        snapshot: &Snapshot<'_>,
    ) -> Result<ScheduleResult, ScheduleError> {
        let all = snapshot.nodes;
        let fit = self.find_nodes_that_fit_pod(profile, state, pod, cache, snapshot)?;
        let evaluated_nodes = fit.feasible.len() + fit.rejected;
        let feasible_nodes = fit.feasible.len();
        let chosen = if fit.feasible.len() == 1 {
            fit.feasible[0]
        } else {
            let totals = prioritize_nodes(profile, state, pod, snapshot, &fit.feasible)?;
            fit.feasible[select_host(&totals, &mut self.tie_breaker)]
        };
        Ok(ScheduleResult {
            node: all[chosen].name().to_string(),
            evaluated_nodes,
            feasible_nodes,
        })
    }

    /// `findNodesThatFitPod`: PreFilter, then the node the pod was
    /// nominated to by a preemption (`evaluateNominatedNode`: taken at
    /// once if it fits), then the filters over the candidate nodes until
    /// `numFeasibleNodesToFind` of them fit. A pod no node fits is a
    /// [`FitError`] with every rejection counted; the rejections stay in
    /// [`Cycle::last_rejections`] for the PostFilter ([`Cycle::preempt`]).
    fn find_nodes_that_fit_pod(
        &mut self,
        profile: &Profile,
        state: &mut CycleState,
        pod: &PodInfo,
        cache: &Cache,
        snapshot: &Snapshot<'_>,
    ) -> Result<FeasibleNodes, ScheduleError> {
        let all = snapshot.nodes;
        // The last cycle's rejections stay until this one filters: a
        // run of failures of one spec reuses them (rejected_again).
        let filters = match PodFilters::new(profile, state, pod, snapshot) {
            Ok(filters) => filters,
            Err(e) => {
                self.clear_rejected();
                return Err(e);
            }
        };
        let nominated = NominatedPods::for_pod(cache, pod);
        let memo = self.memo.prepare(&filters, pod, cache);
        if let Some(index) = nominated.own_index
            && filters.is_candidate(all[index].name())
            && filter_with_nominated(&filters, state, pod, &all[index], &nominated.on(index))
                .is_none()
        {
            self.clear_rejected();
            return Ok(FeasibleNodes {
                feasible: vec![index],
                rejected: 0,
            });
        }
        // Names of nodes that do not exist are dropped; nodes not named
        // count as rejected by the plugins that narrowed the list.
        let candidates: Option<Vec<usize>> = filters
            .pre
            .allowed
            .as_ref()
            .map(|names| names.iter().filter_map(|n| cache.node_index(n)).collect());
        let (feasible, rejected) = self.find_nodes_that_pass_filters(
            profile,
            &filters,
            state,
            pod,
            all,
            candidates.as_deref(),
            &nominated,
            memo,
        )?;
        let num_rejected = rejected.len();
        self.rejected = Arc::new(rejected);
        if feasible.is_empty() {
            return Err(fit_error(
                all.len(),
                diagnose_rejections(cache, &filters.pre.narrowed_by, &self.rejected),
            ));
        }
        Ok(FeasibleNodes {
            feasible,
            rejected: num_rejected,
        })
    }

    /// No node rejected (yet) in this cycle.
    fn clear_rejected(&mut self) {
        let emptied = self.take_rejected();
        self.rejected = Arc::new(emptied);
    }

    /// The rejection list emptied for a new cycle: the last one's, unless
    /// a diagnosis still holds it.
    fn take_rejected(&mut self) -> Rejected {
        let mut rejected = match Arc::try_unwrap(std::mem::take(&mut self.rejected)) {
            Ok(rejected) => rejected,
            Err(shared) => Rejected::with_capacity(shared.len()),
        };
        rejected.clear();
        rejected
    }

    /// `findNodesThatPassFilters`: runs the filters from where the last
    /// cycle stopped (so every node gets its turn) until enough nodes fit;
    /// the feasible node indexes, and the rejected ones with why.
    // The hot loop's inputs, each borrowed from a different owner (the
    // profile, the cycle state, the cache); a struct of them would only
    // be built to be taken apart here.
    #[allow(clippy::too_many_arguments)]
    fn find_nodes_that_pass_filters(
        &mut self,
        profile: &Profile,
        filters: &PodFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        all: &[NodeInfo],
        candidates: Option<&[usize]>,
        nominated: &NominatedPods<'_>,
        memo: bool,
    ) -> Result<(Vec<usize>, Rejected), ScheduleError> {
        let num_candidates = candidates.map_or(all.len(), <[usize]>::len);
        let node_at = |i: usize| -> usize { candidates.map_or(i, |c| c[i]) };
        let to_find =
            num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, num_candidates);
        let start = self.next_start_node_index % num_candidates.max(1);
        let every_node_again = memo
            && candidates.is_none()
            && nominated.own_index.is_none()
            && self.memo.rejected_all == Some((start, all.len()));
        self.memo.rejected_all = None;
        if every_node_again
            && let Some(rejected) =
                self.rejected_again(filters, state, pod, all, start, nominated)?
        {
            self.memo.rejected_all = Some((start, all.len()));
            return Ok((Vec::new(), rejected));
        }
        let mut feasible: Vec<usize> = Vec::with_capacity(to_find.min(num_candidates));
        let mut rejected = self.take_rejected();
        let mut processed = 0;
        for step in 0..num_candidates {
            if feasible.len() >= to_find {
                break;
            }
            processed += 1;
            let index = node_at((start + step) % num_candidates);
            let node = &all[index];
            let reuse = memo && nominated.own_index != Some(index);
            let kept = if reuse {
                self.memo.filter(index, node).cloned()
            } else {
                None
            };
            let status = match kept {
                Some(verdict) => verdict,
                None => {
                    let verdict = nominated.filter(filters, state, pod, node, index);
                    if reuse && verdict.as_ref().is_none_or(|s| s.code != Code::Error) {
                        self.memo.keep_filter(index, node, verdict.clone());
                    }
                    verdict
                }
            };
            match status {
                None => feasible.push(index),
                Some(status) if status.code == Code::Error => {
                    return Err(ScheduleError::Error(status));
                }
                Some(status) => rejected.push((index, status)),
            }
        }
        self.next_start_node_index = (start + processed) % all.len().max(1);
        if memo && candidates.is_none() && nominated.own_index.is_none() && feasible.is_empty() {
            self.memo.rejected_all = Some((start, all.len()));
        }
        Ok((feasible, rejected))
    }

    /// The last cycle, for a pod of the same spec, rejected every node
    /// from the same start, each verdict kept in the memo: its rejection
    /// list stands for this cycle's but where a verdict had to be made
    /// again, which is put in its place. `None` when a node fits now (the
    /// cycle is then run in full) or the list is still shared.
    fn rejected_again(
        &mut self,
        filters: &PodFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        all: &[NodeInfo],
        start: usize,
        nominated: &NominatedPods<'_>,
    ) -> Result<Option<Rejected>, ScheduleError> {
        let mut shared = std::mem::take(&mut self.rejected);
        let Some(rejected) = Arc::get_mut(&mut shared).filter(|r| r.len() == all.len()) else {
            self.rejected = shared;
            return Ok(None);
        };
        for (step, index) in (start..all.len()).chain(0..start).enumerate() {
            let node = &all[index];
            if self.memo.filter(index, node).is_some() {
                continue;
            }
            let verdict = nominated.filter(filters, state, pod, node, index);
            match verdict {
                Some(status) if status.code == Code::Error => {
                    self.rejected = shared;
                    return Err(ScheduleError::Error(status));
                }
                Some(status) => {
                    self.memo.keep_filter(index, node, Some(status.clone()));
                    if let Some(entry) = rejected.get_mut(step) {
                        *entry = (index, status);
                    }
                }
                None => {
                    self.memo.keep_filter(index, node, None);
                    self.rejected = shared;
                    return Ok(None);
                }
            }
        }
        Ok(Arc::try_unwrap(shared).ok())
    }
}

/// A profile's filters for one pod, after its PreFilter plugins ran: what a
/// cycle asks of each node. Public so that tools and tests can ask about
/// given nodes exactly as a cycle would.
pub struct PodFilters<'p> {
    filters: Filters<'p>,
    /// The filters that run on each node: those whose PreFilter did not
    /// Skip, in the profile's order. Worked out once per pod, so the loop
    /// over thousands of nodes does not pass over the skipped ones.
    active: Filters<'p>,
    pre: PreFilterOutcome,
    /// The PreFilter plugins that ran and did not Skip: whose state
    /// [`PodFilters::update_for_pod`] keeps up to date.
    extended: SmallVec<[&'p dyn PreFilterPlugin; 8]>,
}

impl<'p> PodFilters<'p> {
    /// `RunPreFilterPlugins` for `pod`: an error when a PreFilter rejects
    /// the pod outright or fails.
    pub fn new(
        profile: &'p Profile,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
    ) -> Result<Self, ScheduleError> {
        let filters: Filters<'p> = profile
            .filters
            .iter()
            .filter_map(|n| profile.plugins.filter(n))
            .collect();
        let mut extended = SmallVec::new();
        let pre = run_pre_filter_plugins(profile, &filters, state, pod, snapshot, &mut extended)?;
        let active = filters
            .iter()
            .zip(&pre.skip)
            .filter(|(_, skipped)| !**skipped)
            .map(|(plugin, _)| *plugin)
            .collect();
        Ok(PodFilters {
            filters,
            active,
            pre,
            extended,
        })
    }

    /// `RunPreFilterExtensionAddPod` (`delta` 1) / `RemovePod` (-1): the
    /// PreFilter state of every plugin that did not Skip brought up to
    /// date with `existing` added to or removed from `node`. `None` when
    /// all succeeded, else the first failure.
    pub fn update_for_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        existing: &NodePod,
        node: &NodeInfo,
        delta: i64,
    ) -> Option<Status> {
        for plugin in &self.extended {
            let status = plugin.update_for_pod(state, pod, existing, node, delta);
            if !status.is_success() {
                let verb = if delta > 0 { "AddPod" } else { "RemovePod" };
                return Some(Status::error(format!(
                    "running {verb} on PreFilter plugin {:?}: {}",
                    plugin.name(),
                    status.message()
                )));
            }
        }
        None
    }

    /// `RunFilterPlugins` on one node: `None` when every filter passes,
    /// else the first rejection (or error), marked with its plugin. Nodes
    /// a PreFilter narrowed the candidates away from are not told apart
    /// here (the cycle does not filter them).
    #[inline]
    pub fn run(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Option<Status> {
        run_filters(&self.active, state, pod, node)
    }

    /// Every filter's own verdict on one node, in the profile's order (a
    /// cycle stops at the first rejection, [`PodFilters::run`]; an
    /// explanation shows them all): a filter its PreFilter skipped is
    /// [`Status::skip`].
    pub fn each(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Vec<Status> {
        self.filters
            .iter()
            .zip(&self.pre.skip)
            .map(|(plugin, skipped)| {
                if *skipped {
                    Status::skip().with_plugin(plugin.name())
                } else {
                    plugin.filter(state, pod, node).with_plugin(plugin.name())
                }
            })
            .collect()
    }

    /// Whether every filter that runs, and every PreFilter kept up to
    /// date, reads only the pod's spec and the node judged, with no
    /// candidate narrowing: what [`memo`] needs to reuse a verdict.
    pub(crate) fn node_local(&self) -> bool {
        self.pre.allowed.is_none()
            && self.active.iter().all(|p| p.node_local())
            && self.extended.iter().all(|p| p.node_local())
    }

    /// The plugin objects this pod's verdicts come from (the filters that
    /// run, then the PreFilters kept up to date), by address.
    pub(crate) fn plugin_addresses(&self) -> impl Iterator<Item = usize> {
        let filters = self
            .active
            .iter()
            .map(|p| std::ptr::from_ref::<dyn FilterPlugin>(*p).cast::<()>() as usize);
        let pre_filters = self
            .extended
            .iter()
            .map(|p| std::ptr::from_ref::<dyn PreFilterPlugin>(*p).cast::<()>() as usize);
        filters.chain(pre_filters)
    }

    /// Whether a cycle filters the node at all: a PreFilter may have
    /// narrowed the candidates to named nodes.
    pub fn is_candidate(&self, node_name: &str) -> bool {
        self.pre
            .allowed
            .as_ref()
            .is_none_or(|names| names.contains(node_name))
    }

    /// The status a cycle gives a node the PreFilters left out
    /// ([`PodFilters::is_candidate`] false).
    pub fn not_a_candidate(&self) -> Status {
        narrowed_away(&self.pre.narrowed_by)
    }
}

/// What a cycle's filtering found.
struct FeasibleNodes {
    /// Indexes into the cache's nodes.
    feasible: Vec<usize>,
    /// How many nodes were filtered and rejected.
    rejected: usize,
}

/// What the PreFilter plugins decided for the whole cycle.
struct PreFilterOutcome {
    /// Filters whose PreFilter said Skip, by position in the filters.
    skip: SmallVec<[bool; 12]>,
    /// The node names the plugins narrowed the candidates to (`None`: all).
    allowed: Option<BTreeSet<String>>,
    /// The plugins that narrowed them.
    narrowed_by: Vec<&'static str>,
}

/// `RunPreFilterPlugins`: each PreFilter in order; a rejection or an error
/// ends the cycle, a Skip takes the plugin's Filter out of it, a
/// `PreFilterResult` narrows the candidate nodes (the intersection of all).
fn run_pre_filter_plugins<'p>(
    profile: &'p Profile,
    filters: &[&dyn FilterPlugin],
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot<'_>,
    extended: &mut SmallVec<[&'p dyn PreFilterPlugin; 8]>,
) -> Result<PreFilterOutcome, ScheduleError> {
    let all = snapshot.nodes;
    let mut outcome = PreFilterOutcome {
        skip: SmallVec::from_elem(false, filters.len()),
        allowed: None,
        narrowed_by: Vec::new(),
    };
    for plugin in profile
        .pre_filters
        .iter()
        .filter_map(|n| profile.plugins.pre_filter(n))
    {
        let (result, status) = plugin.pre_filter(state, pod, snapshot);
        if status.is_skip() {
            if let Some(i) = filters.iter().position(|f| f.name() == plugin.name()) {
                outcome.skip[i] = true;
            }
            continue;
        }
        if status.code == Code::Error {
            return Err(ScheduleError::Error(Status::error(format!(
                "running PreFilter plugin {:?}: {}",
                plugin.name(),
                status.message()
            ))));
        }
        if !status.is_success() {
            let status = status.with_plugin(plugin.name());
            let diagnosis = Diagnosis {
                pre_filter_msg: status.message(),
                unschedulable_plugins: [plugin.name()].into(),
                node_to_status: NodeToStatus::new(Vec::new(), status),
                ..Diagnosis::default()
            };
            return Err(fit_error(all.len(), diagnosis));
        }
        extended.push(plugin);
        if let Some(names) = result.and_then(|r| r.node_names) {
            outcome.narrowed_by.push(plugin.name());
            outcome.allowed = Some(match outcome.allowed {
                None => names,
                Some(prev) => prev.intersection(&names).cloned().collect(),
            });
        }
    }
    if outcome.allowed.as_ref().is_some_and(BTreeSet::is_empty) {
        let narrowed_by = &outcome.narrowed_by;
        let msg = if narrowed_by.len() == 1 {
            format!("node(s) didn't satisfy plugin {}", narrowed_by[0])
        } else {
            format!(
                "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                narrowed_by.join(" ")
            )
        };
        let diagnosis = Diagnosis {
            pre_filter_msg: msg.clone(),
            unschedulable_plugins: narrowed_by.iter().copied().collect(),
            node_to_status: NodeToStatus::new(
                Vec::new(),
                Status::new(Code::UnschedulableAndUnresolvable, msg),
            ),
            ..Diagnosis::default()
        };
        return Err(fit_error(all.len(), diagnosis));
    }
    Ok(outcome)
}

/// The diagnosis of a cycle that found no feasible node: each rejected
/// node's status (the cycle's own list, shared), the plugins that rejected
/// any, and for the nodes a PreFilter left out, the plugins that narrowed
/// the candidates.
fn diagnose_rejections(
    cache: &Cache,
    narrowed_by: &[&'static str],
    rejected: &Arc<Rejected>,
) -> Diagnosis {
    let mut diagnosis = Diagnosis::default();
    diagnosis
        .unschedulable_plugins
        .extend(narrowed_by.iter().copied());
    // Runs of nodes rejected by the same plugin are the rule.
    let mut last: Option<&str> = None;
    for (_, status) in rejected.iter() {
        if last != Some(status.plugin) {
            diagnosis.unschedulable_plugins.insert(status.plugin);
            last = Some(status.plugin);
        }
    }
    diagnosis.node_to_status = NodeToStatus::of_rejections(
        rejected.clone(),
        cache.node_names(),
        narrowed_away(narrowed_by),
    );
    diagnosis
}

/// The status of the nodes the PreFilters `narrowed_by` left out.
fn narrowed_away(narrowed_by: &[&'static str]) -> Status {
    if narrowed_by.is_empty() {
        Status::code_only(Code::UnschedulableAndUnresolvable)
    } else {
        Status::new(
            Code::UnschedulableAndUnresolvable,
            format!(
                "node(s) didn't satisfy plugin(s) [{}]",
                narrowed_by.join(" ")
            ),
        )
    }
}

/// `prioritizeNodes`: the weighted sum of every score plugin's normalised
/// scores per node (in the order of `feasible`).
fn prioritize_nodes(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot<'_>,
    feasible: &[usize],
) -> Result<Vec<i64>, ScheduleError> {
    let all = snapshot.nodes;
    let feasible_infos: Vec<&NodeInfo> = feasible.iter().map(|&i| &all[i]).collect();
    let mut totals = vec![0i64; feasible.len()];
    score_nodes(profile, state, pod, snapshot, &feasible_infos, |scored| {
        for (total, s) in totals.iter_mut().zip(scored.normalized) {
            *total = total.saturating_add(s.score.saturating_mul(scored.weight));
        }
    })?;
    Ok(totals)
}

/// One score plugin's scores of the nodes, in the order of the nodes.
pub struct PluginScores<'a> {
    pub plugin: &'static str,
    pub weight: i64,
    /// As Score gave them, before NormalizeScore.
    pub raw: &'a [i64],
    /// After NormalizeScore (`0..=100`), before the weight.
    pub normalized: &'a [NodeScore],
}

/// For each score plugin of the profile in order: PreScore (a Skip leaves
/// the plugin out), Score on every node, NormalizeScore (checked to be
/// within `0..=100`); then `each` with the plugin's scores, in the order of
/// `nodes`. What upstream logs per plugin and node at -v=10.
pub fn score_nodes(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot<'_>,
    nodes: &[&NodeInfo],
    mut each: impl FnMut(PluginScores<'_>),
) -> Result<(), ScheduleError> {
    let mut scores: Vec<NodeScore> = Vec::with_capacity(nodes.len());
    let mut raw: Vec<i64> = Vec::with_capacity(nodes.len());
    for &(name, weight) in &profile.scores {
        let Some((scorer, pre_scorer)) = profile.plugins.score(name) else {
            continue;
        };
        if profile.pre_scores.contains(&name) {
            let status = pre_scorer.pre_score(state, pod, snapshot, nodes);
            if status.is_skip() {
                continue;
            }
            if !status.is_success() {
                return Err(plugin_error("PreScore", scorer.name(), &status));
            }
        }
        scores.clear();
        scorer
            .score_all(state, pod, nodes, &mut scores)
            .map_err(|s| plugin_error("Score", scorer.name(), &s))?;
        raw.clear();
        raw.extend(scores.iter().map(|s| s.score));
        let status = scorer.normalize_score(state, pod, &mut scores);
        if !status.is_success() {
            return Err(plugin_error("NormalizeScore", scorer.name(), &status));
        }
        if let Some(s) = scores
            .iter()
            .find(|s| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&s.score))
        {
            return Err(ScheduleError::Error(Status::error(format!(
                "plugin {:?} returns an invalid score {}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                scorer.name(),
                s.score
            ))));
        }
        each(PluginScores {
            plugin: scorer.name(),
            weight,
            raw: &raw,
            normalized: &scores,
        });
    }
    Ok(())
}

/// An internal error of one plugin at one extension point.
fn plugin_error(point: &str, plugin: &str, status: &Status) -> ScheduleError {
    ScheduleError::Error(Status::error(format!(
        "running {point} plugin {plugin:?}: {}",
        status.message()
    )))
}

/// `selectHost`: the index of a highest total, uniformly at random among
/// equal ones (reservoir sampling). `totals` must not be empty.
pub fn select_host(totals: &[i64], tie_breaker: &mut TieBreaker) -> usize {
    let mut best = i64::MIN;
    let mut count = 0;
    let mut chosen = 0;
    for (i, &t) in totals.iter().enumerate() {
        if t > best {
            best = t;
            count = 1;
            chosen = i;
        } else if t == best {
            count += 1;
            if tie_breaker.below(count) == 0 {
                chosen = i;
            }
        }
    }
    chosen
}

/// The pods nominated to nodes that count there for one pod
/// (`addGetNominatedPods`): those of equal or higher priority, the pod
/// itself aside, looked up per node; and the node the pod itself was
/// nominated to.
pub(crate) struct NominatedPods<'c> {
    cache: &'c Cache,
    /// The pod being scheduled: its own nomination does not count.
    key: String,
    priority: i32,
    own_node: Option<&'c str>,
    /// Where `own_node` is in the cache's nodes.
    own_index: Option<usize>,
}

impl<'c> NominatedPods<'c> {
    pub(crate) fn for_pod(cache: &'c Cache, pod: &PodInfo) -> Self {
        let nominator = cache.nominator();
        let key = if nominator.is_empty() {
            String::new()
        } else {
            crate::pod_key::pod_key(pod.pod())
        };
        let own_node = nominator.node_of(&key);
        NominatedPods {
            cache,
            own_index: own_node.and_then(|n| cache.node_index(n)),
            own_node,
            key,
            priority: berth_core::priority::pod_priority(pod.pod()),
        }
    }

    fn is_empty(&self) -> bool {
        let nominator = self.cache.nominator();
        nominator.is_empty() || (nominator.len() == 1 && self.own_node.is_some())
    }

    /// The filters' verdict on `node` (at `index`) with the pods
    /// nominated there counted (`RunFilterPluginsWithNominatedPods`);
    /// without a nomination anywhere, no lookup per node.
    fn filter(
        &self,
        filters: &PodFilters<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        index: usize,
    ) -> Option<Status> {
        if self.is_empty() {
            filters.run(state, pod, node)
        } else {
            filter_with_nominated(filters, state, pod, node, &self.on(index))
        }
    }

    /// The pods nominated to the node at `index` that count for the pod.
    pub(crate) fn on(&self, index: usize) -> SmallVec<[&'c PodInfo; 2]> {
        let nominator = self.cache.nominator();
        if nominator.is_empty() {
            return SmallVec::new();
        }
        let Some(node) = self.cache.nodes().get(index) else {
            return SmallVec::new();
        };
        nominator
            .on_node(node.name())
            .filter(|(key, nominated)| *key != self.key && nominated.priority >= self.priority)
            .map(|(_, nominated)| &nominated.pod)
            .collect()
    }
}

/// `RunFilterPluginsWithNominatedPods`: with pods nominated to the node
/// (of equal or higher priority), the filters run twice, once with those
/// pods counted on it and once without, and the node must pass both (a
/// nominated pod may yet land elsewhere, and an affinity to it must not
/// be counted on). Without nominated pods, one run.
pub(crate) fn filter_with_nominated(
    filters: &PodFilters<'_>,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    nominated: &[&PodInfo],
) -> Option<Status> {
    if nominated.is_empty() {
        return filters.run(state, pod, node);
    }
    let mut with = node.clone();
    for other in nominated {
        with.add_pod_info(other);
    }
    filters
        .run(state, pod, &with)
        .or_else(|| filters.run(state, pod, node))
}

/// `RunFilterPlugins`: `None` when every filter passes, else the first
/// rejection (or error), marked with its plugin.
#[inline]
fn run_filters(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Option<Status> {
    for plugin in filters {
        let status = plugin.filter(state, pod, node);
        if status.is_success() {
            continue;
        }
        if status.code == Code::Error {
            return Some(
                Status::error(format!(
                    "running {:?} filter plugin: {}",
                    plugin.name(),
                    status.message()
                ))
                .with_plugin(plugin.name()),
            );
        }
        return Some(status.with_plugin(plugin.name()));
    }
    None
}

fn fit_error(num_all_nodes: usize, diagnosis: Diagnosis) -> ScheduleError {
    ScheduleError::Fit(Box::new(FitError {
        num_all_nodes,
        diagnosis,
    }))
}

/// The default profile's filters, in order, for tests and diagnostics.
pub const FILTER_ORDER: [&str; 8] = [
    crate::plugins::node_unschedulable::NAME,
    crate::plugins::node_name::NAME,
    taint_toleration::NAME,
    node_affinity::NAME,
    crate::plugins::node_ports::NAME,
    node_resources_fit::NAME,
    crate::plugins::pod_topology_spread::NAME,
    crate::plugins::inter_pod_affinity::NAME,
];

pub(crate) mod memo;
mod preempt;
use memo::Memo;
pub use preempt::{
    MIN_CANDIDATE_NODES_ABSOLUTE, MIN_CANDIDATE_NODES_PERCENTAGE, NO_VICTIMS, NOT_HELPFUL,
    Preemption, num_candidates,
};

#[cfg(test)]
pub(crate) mod tests;
