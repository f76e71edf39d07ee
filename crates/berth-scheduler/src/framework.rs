//! The scheduling framework's shape, after upstream `k8s.io/kube-scheduler/framework`
//! and `pkg/scheduler/framework`: plugin statuses, the per-node and per-pod
//! views plugins read, the cycle state they share between extension points,
//! the extension-point traits, upstream's `DefaultNormalizeScore` helper
//! (`pkg/scheduler/framework/plugins/helper/normalize_score.go`) and the
//! `FitError` message users see in `FailedScheduling` events.
//!
//! Upstream signals success with a nil `*Status`; here success is a
//! [`Status`] with [`Code::Success`] and no reasons, which costs no
//! allocation (an empty `Vec` does not allocate), so a Filter that passes a
//! node stays allocation-free.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use smallvec::{SmallVec, smallvec};

pub use crate::resources::{PodUsage, Resource};
pub use crate::snapshot::{NodeInfo, NodePod, PodInfo, Snapshot};

/// A map from a topology value (a node's label value) to what a plugin
/// counts there, looked up for every node a cycle filters or scores: with
/// foldhash rather than std's SipHash, which cost more than the rest of such
/// a lookup. Its keys are node label values, which only node agents and
/// administrators write.
pub type DomainMap<V> = foldhash::HashMap<String, V>;

/// The highest score a Score plugin may give a node after normalisation.
pub const MAX_NODE_SCORE: i64 = 100;
/// The lowest score a Score plugin may give a node after normalisation.
pub const MIN_NODE_SCORE: i64 = 0;

/// What a plugin decided. Mirrors upstream's `fwk.Code` (without `Wait` and
/// `Pending`, which belong to Permit and the queue, not yet ported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    Success,
    /// An internal error: the pod is retried, preemption does not help.
    Error,
    /// The node does not fit now; preempting pods on it might help.
    Unschedulable,
    /// The node does not fit and preemption cannot change that.
    UnschedulableAndUnresolvable,
    /// PreFilter/PreScore: this plugin has nothing to do for the pod, so its
    /// Filter/Score is skipped for the whole cycle.
    Skip,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Skip => "Skip",
        })
    }
}

/// The result of running a plugin: a code, the human-readable reasons (the
/// strings aggregated into [`FitError`]) and the plugin that produced it.
#[derive(Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Reasons,
    /// Set by the framework (or the plugin) so diagnostics can name who
    /// rejected the pod; empty when unknown.
    pub plugin: &'static str,
}

/// A status's reasons. One reason is held inline, and a plugin's fixed
/// reasons are `&'static str`, so rejecting a node allocates nothing: the
/// Filter runs once per node, and most nodes of a large cluster reject
/// most pods.
pub type Reasons = SmallVec<[Cow<'static, str>; 1]>;

impl Clone for Status {
    /// A failed cycle copies a status for each of thousands of nodes, and
    /// nearly all have one reason: that one is pushed without going
    /// through the general collect.
    #[inline]
    fn clone(&self) -> Self {
        let reasons = match self.reasons.as_slice() {
            [one] => {
                let mut reasons = Reasons::new();
                reasons.push(one.clone());
                reasons
            }
            many => many.iter().cloned().collect(),
        };
        Status {
            code: self.code,
            reasons,
            plugin: self.plugin,
        }
    }
}

impl Default for Status {
    fn default() -> Self {
        Status::success()
    }
}

impl Status {
    /// Success, without allocating.
    #[inline]
    pub const fn success() -> Self {
        Status {
            code: Code::Success,
            reasons: SmallVec::new_const(),
            plugin: "",
        }
    }

    /// A status with one reason (`NewStatus(code, reason)`); a
    /// `&'static str` reason costs no allocation.
    #[inline]
    pub fn new(code: Code, reason: impl Into<Cow<'static, str>>) -> Self {
        Status {
            code,
            reasons: smallvec![reason.into()],
            plugin: "",
        }
    }

    /// A status with no reasons (`NewStatus(code)`), e.g. `Skip`.
    pub const fn code_only(code: Code) -> Self {
        Status {
            code,
            reasons: SmallVec::new_const(),
            plugin: "",
        }
    }

    /// A status with several reasons.
    pub fn with_reasons(code: Code, reasons: Vec<String>) -> Self {
        Status {
            code,
            reasons: reasons.into_iter().map(Cow::Owned).collect(),
            plugin: "",
        }
    }

    pub const fn skip() -> Self {
        Status::code_only(Code::Skip)
    }

    /// `AsStatus(err)`: an internal error carrying the error's message.
    pub fn error(message: impl Into<Cow<'static, str>>) -> Self {
        Status::new(Code::Error, message)
    }

    /// Records which plugin produced this status.
    #[inline]
    pub fn with_plugin(mut self, plugin: &'static str) -> Self {
        self.plugin = plugin;
        self
    }

    #[inline]
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    #[inline]
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// `IsRejected`: the node (or pod) was found unschedulable.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable
        )
    }

    /// `Message()`: the reasons joined by ", ".
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message())
    }
}

/// Data plugins compute once per scheduling cycle (in PreFilter or
/// PreScore) and read for every node, keyed like upstream
/// ("PreFilterNodeAffinity", ...). Values are type-checked on read.
///
/// Besides the per-cycle data, a cycle state carries plugins' memory
/// from one cycle to the next ([`CycleState::memory`]): counts a plugin
/// keeps up to date from the snapshot's pod log instead of recounting the
/// cluster for every pod. [`crate::cycle::Cycle`] hands it from cycle to
/// cycle; a fresh state starts with none.
#[derive(Default)]
pub struct CycleState {
    // A handful of entries, read once per node per plugin, so reads must
    // cost a few nanoseconds: entries are found by the value's type (a
    // constant comparison) and then by key, and never hashed.
    data: Vec<Entry>,
    memory: Memory,
}

/// Plugins' state kept across cycles (see [`CycleState`]). It is only
/// ever a shortcut, so a clone starts empty.
#[derive(Default)]
pub struct Memory(Vec<Entry>);

impl Clone for Memory {
    fn clone(&self) -> Self {
        Memory::default()
    }
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.iter().map(|e| e.key)).finish()
    }
}

struct Entry {
    key: &'static str,
    type_id: TypeId,
    value: Box<dyn Any + Send + Sync>,
}

impl fmt::Debug for CycleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.data.iter().map(|e| e.key))
            .finish()
    }
}

impl Entry {
    #[inline]
    fn is(&self, key: &'static str, type_id: TypeId) -> bool {
        self.type_id == type_id && (std::ptr::eq(self.key, key) || self.key == key)
    }
}

impl CycleState {
    pub fn new() -> Self {
        CycleState::default()
    }

    pub fn write<T: Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        self.delete(key);
        self.data.push(Entry {
            key,
            type_id: TypeId::of::<T>(),
            value: Box::new(value),
        });
    }

    /// The value under `key`, if one of type `T` was written.
    #[inline]
    pub fn read<T: Any + Send + Sync>(&self, key: &'static str) -> Option<&T> {
        let entry = self.data.iter().find(|e| e.is(key, TypeId::of::<T>()))?;
        let value: &(dyn Any + Send + Sync) = &*entry.value;
        // SAFETY: `entry.type_id` is `TypeId::of` the type that was boxed
        // (set together in `write`), and it equals `TypeId::of::<T>()`, so
        // the box holds a `T`. This is what `downcast_ref` does, minus the
        // virtual call that asks the box for its type id again, which
        // dominated the cost of a read on the Filter hot path.
        Some(unsafe { &*(value as *const (dyn Any + Send + Sync) as *const T) })
    }

    pub fn delete(&mut self, key: &'static str) {
        self.data
            .retain(|e| !(std::ptr::eq(e.key, key) || e.key == key));
    }

    /// A state that starts with the memory of earlier cycles.
    pub fn with_memory(memory: Memory) -> Self {
        CycleState {
            data: Vec::new(),
            memory,
        }
    }

    /// The memory to hand to the next cycle.
    pub fn into_memory(self) -> Memory {
        self.memory
    }

    /// The value `key` remembers from earlier cycles, created empty the
    /// first time.
    pub fn memory<T: Any + Send + Sync + Default>(&mut self, key: &'static str) -> &mut T {
        let type_id = TypeId::of::<T>();
        let i = match self.memory.0.iter().position(|e| e.is(key, type_id)) {
            Some(i) => i,
            None => {
                self.memory.0.push(Entry {
                    key,
                    type_id,
                    value: Box::new(T::default()),
                });
                self.memory.0.len() - 1
            }
        };
        let value: &mut (dyn Any + Send + Sync) = &mut *self.memory.0[i].value;
        // SAFETY: as in `read`: the entry's type id is that of the boxed
        // value and equals `TypeId::of::<T>()`.
        unsafe { &mut *(value as *mut (dyn Any + Send + Sync) as *mut T) }
    }

    /// Reads a remembered value without creating it.
    #[inline]
    pub fn remembered<T: Any + Send + Sync>(&self, key: &'static str) -> Option<&T> {
        let entry = self
            .memory
            .0
            .iter()
            .find(|e| e.is(key, TypeId::of::<T>()))?;
        let value: &(dyn Any + Send + Sync) = &*entry.value;
        // SAFETY: as in `read`.
        Some(unsafe { &*(value as *const (dyn Any + Send + Sync) as *const T) })
    }
}

/// PreFilter may narrow the nodes worth filtering (`PreFilterResult`):
/// `None` means all nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    pub node_names: Option<BTreeSet<String>>,
}

/// One node's score from one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeScore {
    pub name: String,
    pub score: i64,
}

/// Every plugin has a name, used in statuses and configuration.
pub trait Plugin {
    fn name(&self) -> &'static str;

    /// Whether this plugin's PreFilter and Filter read nothing but the
    /// pod's spec and the one node judged (its object and the pods on it):
    /// then a verdict holds for any pod with the same spec for as long as
    /// the node is unchanged, and a cycle may reuse it (see
    /// `cycle::memo`). False unless a plugin says so: PodTopologySpread
    /// and InterPodAffinity count pods on other nodes.
    fn node_local(&self) -> bool {
        false
    }
}

/// Runs once per pod before filtering; may reject the pod outright, narrow
/// the candidate nodes, or return `Skip` to take the plugin's Filter out of
/// the cycle.
pub trait PreFilterPlugin: Plugin {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status);

    /// Upstream's `PreFilterExtensions` (`AddPod` with `delta` 1,
    /// `RemovePod` with -1): what this plugin's PreFilter computed for
    /// `pod` is brought up to date with `existing` added to or removed
    /// from `node`, so that Filter judges the node as if that pod were
    /// (or were not) there. Preemption's dry run calls it for the victims
    /// it takes off a node and the ones it puts back. The default: the
    /// plugin's Filter reads nothing PreFilter counted from other pods.
    fn update_for_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _existing: &NodePod,
        _node: &NodeInfo,
        _delta: i64,
    ) -> Status {
        Status::success()
    }
}

/// Decides whether the pod may run on one node. Called once per node, so
/// implementations must not allocate when the node passes.
pub trait FilterPlugin: Plugin {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
}

/// Runs once per pod before scoring, over the nodes that passed filtering
/// (`nodes`), with the whole cluster at hand (`snapshot`).
pub trait PreScorePlugin: Plugin {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot<'_>,
        nodes: &[&NodeInfo],
    ) -> Status;
}

/// Ranks the nodes that passed filtering; `normalize_score` then maps the
/// raw scores onto `[MIN_NODE_SCORE, MAX_NODE_SCORE]`.
pub trait ScorePlugin: Plugin {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// Scores `nodes` in order, appending to `scores`. The default calls
    /// [`ScorePlugin::score`] for each node; plugins that run for every
    /// pod read their cycle state once here instead of once per node.
    fn score_all(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut Vec<NodeScore>,
    ) -> Result<(), Status> {
        score_each(nodes, scores, |node| self.score(state, pod, node))
    }

    /// `ScoreExtensions().NormalizeScore`; the default leaves scores as they
    /// are, for plugins without the extension.
    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _scores: &mut [NodeScore],
    ) -> Status {
        Status::success()
    }
}

/// Appends `score(node)` for each of `nodes` to `scores` (the loop of a
/// [`ScorePlugin::score_all`]).
#[inline]
pub fn score_each(
    nodes: &[&NodeInfo],
    scores: &mut Vec<NodeScore>,
    mut score: impl FnMut(&NodeInfo) -> Result<i64, Status>,
) -> Result<(), Status> {
    scores.reserve(nodes.len());
    for node in nodes {
        scores.push(NodeScore {
            name: String::new(),
            score: score(node)?,
        });
    }
    Ok(())
}

/// `DefaultNormalizeScore`: scales scores from `[0, max(scores)]` to
/// `[0, max_priority]`; with `reverse`, subtracts each from `max_priority`
/// so the lowest raw score wins. Scores are assumed non-negative, as
/// upstream assumes. Arithmetic runs in i128 and saturates back to i64, so
/// extreme inputs cannot overflow (Go would wrap silently instead).
pub fn default_normalize_score(
    max_priority: i64,
    reverse: bool,
    scores: &mut [NodeScore],
) -> Status {
    let max_count = scores.iter().map(|s| s.score).fold(0, i64::max);
    if max_count == 0 {
        if reverse {
            for s in scores.iter_mut() {
                s.score = max_priority;
            }
        }
        return Status::success();
    }
    for s in scores.iter_mut() {
        // i64 when the product fits (the usual case: scores up to 100s),
        // i128 otherwise.
        if let Some(product) = max_priority.checked_mul(s.score) {
            let score = product / max_count;
            s.score = if reverse { max_priority - score } else { score };
            continue;
        }
        let mut score = i128::from(max_priority) * i128::from(s.score) / i128::from(max_count);
        if reverse {
            score = i128::from(max_priority) - score;
        }
        s.score = saturate_i64(score);
    }
    Status::success()
}

fn saturate_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// Per-node statuses of a failed cycle (`NodeToStatus`): the nodes examined
/// explicitly, and the status that stands for every node not in the list
/// (nodes a PreFilterResult excluded, for instance). A list in the order
/// the nodes were examined, not a map: a failed cycle over thousands of
/// nodes records them all, and only the message (a histogram of reasons)
/// and tools looking one node up read them. A cycle's own rejections are
/// shared with the cycle, by node index, not copied.
#[derive(Debug, Clone)]
pub struct NodeToStatus {
    examined: Examined,
    pub absent_nodes_status: Status,
}

#[derive(Debug, Clone)]
enum Examined {
    /// Named one by one.
    Named(Vec<(Arc<str>, Status)>),
    /// A cycle's rejections: indexes into `names`, the cache's node names
    /// when the cycle ran.
    Indexed {
        rejected: Arc<Vec<(usize, Status)>>,
        names: Arc<[Arc<str>]>,
    },
}

impl Default for NodeToStatus {
    fn default() -> Self {
        // Upstream's default for absent nodes: they were never candidates,
        // so preemption cannot help them either.
        NodeToStatus::new(
            Vec::new(),
            Status::code_only(Code::UnschedulableAndUnresolvable),
        )
    }
}

impl PartialEq for NodeToStatus {
    fn eq(&self, other: &Self) -> bool {
        self.absent_nodes_status == other.absent_nodes_status && self.iter().eq(other.iter())
    }
}

impl Eq for NodeToStatus {}

impl NodeToStatus {
    pub fn new(nodes: Vec<(Arc<str>, Status)>, absent_nodes_status: Status) -> Self {
        NodeToStatus {
            examined: Examined::Named(nodes),
            absent_nodes_status,
        }
    }

    /// A cycle's `rejected` nodes, indexes into `names`.
    pub fn of_rejections(
        rejected: Arc<Vec<(usize, Status)>>,
        names: Arc<[Arc<str>]>,
        absent_nodes_status: Status,
    ) -> Self {
        NodeToStatus {
            examined: Examined::Indexed { rejected, names },
            absent_nodes_status,
        }
    }

    /// The nodes examined with their statuses, in the order examined.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Status)> {
        let (named, indexed) = match &self.examined {
            Examined::Named(nodes) => (Some(nodes), None),
            Examined::Indexed { rejected, names } => (None, Some((rejected, names))),
        };
        let named = named
            .into_iter()
            .flatten()
            .map(|(name, status)| (&**name, status));
        let indexed = indexed.into_iter().flat_map(|(rejected, names)| {
            rejected
                .iter()
                .map(|(i, status)| (names.get(*i).map_or("", |n| &**n), status))
        });
        named.chain(indexed)
    }

    /// The statuses of the nodes examined (what the message counts).
    pub fn statuses(&self) -> impl Iterator<Item = &Status> {
        let (named, indexed) = match &self.examined {
            Examined::Named(nodes) => (Some(nodes), None),
            Examined::Indexed { rejected, .. } => (None, Some(rejected)),
        };
        named
            .into_iter()
            .flatten()
            .map(|(_, status)| status)
            .chain(indexed.into_iter().flat_map(|r| r.iter().map(|(_, s)| s)))
    }

    /// The status recorded for node `name`, if it was examined.
    pub fn get(&self, name: &str) -> Option<&Status> {
        self.iter()
            .find(|(node, _)| *node == name)
            .map(|(_, status)| status)
    }

    pub fn len(&self) -> usize {
        match &self.examined {
            Examined::Named(nodes) => nodes.len(),
            Examined::Indexed { rejected, .. } => rejected.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a cycle found no node (`Diagnosis`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnosis {
    pub node_to_status: NodeToStatus,
    pub unschedulable_plugins: BTreeSet<&'static str>,
    /// Set when a PreFilter plugin rejected the pod for all nodes.
    pub pre_filter_msg: String,
    /// Set by PostFilter (preemption), appended verbatim.
    pub post_filter_msg: String,
}

/// The pod fits no node. Its `Display` is upstream's `FitError.Error()`:
/// `"0/N nodes are available: <PreFilterMsg>. <sorted reason histogram>. <PostFilterMsg>"`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FitError {
    pub num_all_nodes: usize,
    pub diagnosis: Diagnosis,
}

/// Upstream's `NoNodeAvailableMsg`, with the count filled in.
fn no_node_available_msg(n: usize) -> String {
    format!("0/{n} nodes are available")
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut msg = no_node_available_msg(self.num_all_nodes);
        msg.push(':');
        let d = &self.diagnosis;
        if !d.pre_filter_msg.is_empty() {
            msg.push_str(&format!(" {}.", d.pre_filter_msg));
        } else {
            // When PreFilter rejected the pod, the framework copies its
            // status onto every node; counting those would only repeat the
            // PreFilter message, so the histogram is built only otherwise.
            let mut reasons: HashMap<&str, usize> = HashMap::new();
            // Thousands of nodes rejected for one reason come in runs:
            // a run is counted, then added to the map once.
            let mut run: Option<(&str, usize)> = None;
            for status in d.node_to_status.statuses() {
                for reason in &status.reasons {
                    let reason: &str = reason.as_ref();
                    match &mut run {
                        Some((current, n)) if *current == reason => *n += 1,
                        _ => {
                            if let Some((current, n)) = run.replace((reason, 1)) {
                                *reasons.entry(current).or_default() += n;
                            }
                        }
                    }
                }
            }
            if let Some((current, n)) = run {
                *reasons.entry(current).or_default() += n;
            }
            let absent = self.num_all_nodes.saturating_sub(d.node_to_status.len());
            if absent > 0 {
                for reason in &d.node_to_status.absent_nodes_status.reasons {
                    *reasons.entry(reason.as_ref()).or_default() += absent;
                }
            }
            // Upstream sorts the formatted "N reason" strings as strings,
            // so "10 x" sorts before "2 x"; kept for identical messages.
            let mut histogram: Vec<String> =
                reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            histogram.sort();
            if !histogram.is_empty() {
                msg.push_str(&format!(" {}.", histogram.join(", ")));
            }
        }
        if !d.post_filter_msg.is_empty() {
            msg.push_str(&format!(" {}", d.post_filter_msg));
        }
        f.write_str(&msg)
    }
}

impl std::error::Error for FitError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream `TestDefaultNormalizeScore` (plugins/helper).
    #[test]
    fn default_normalize_score_as_upstream() {
        let cases: &[(bool, &[i64], &[i64])] = &[
            (false, &[1, 2, 3, 4], &[25, 50, 75, 100]),
            (true, &[1, 2, 3, 4], &[75, 50, 25, 0]),
            (false, &[1000, 10, 20, 30], &[100, 1, 2, 3]),
            (true, &[1000, 10, 20, 30], &[0, 99, 98, 97]),
            (false, &[1, 1, 1, 1], &[100, 100, 100, 100]),
            (false, &[1000, 1, 1, 1], &[100, 0, 0, 0]),
            (true, &[0, 1, 1, 1], &[100, 0, 0, 0]),
            (false, &[0, 0, 0, 0], &[0, 0, 0, 0]),
            (true, &[0, 0, 0, 0], &[100, 100, 100, 100]),
        ];
        for (i, (reverse, input, want)) in cases.iter().enumerate() {
            let mut scores: Vec<NodeScore> = input
                .iter()
                .map(|&score| NodeScore {
                    name: String::new(),
                    score,
                })
                .collect();
            let status = default_normalize_score(MAX_NODE_SCORE, *reverse, &mut scores);
            assert!(status.is_success(), "case {i}");
            let got: Vec<i64> = scores.iter().map(|s| s.score).collect();
            assert_eq!(&got, want, "case {i}");
        }
    }

    #[test]
    fn default_normalize_score_saturates_instead_of_overflowing() {
        let mut scores = vec![
            NodeScore {
                name: "a".into(),
                score: i64::MAX,
            },
            NodeScore {
                name: "b".into(),
                score: 1,
            },
        ];
        default_normalize_score(i64::MAX, true, &mut scores);
        assert_eq!(scores[0].score, 0);
        assert_eq!(scores[1].score, i64::MAX - 1);
    }

    fn unschedulable(reason: &'static str) -> Status {
        Status::new(Code::Unschedulable, reason)
    }

    fn node_statuses(entries: &[(&str, &'static str)]) -> NodeToStatus {
        NodeToStatus::new(
            entries
                .iter()
                .map(|(n, r)| (Arc::from(*n), unschedulable(r)))
                .collect(),
            Status::code_only(Code::UnschedulableAndUnresolvable),
        )
    }

    /// Upstream `TestFitError_Error` (pkg/scheduler/framework/types_test.go).
    #[test]
    fn fit_error_message_as_upstream() {
        const PRE: &str = "Node(s) failed PreFilter plugin FalsePreFilter";
        const F1: &str = "Node(s) failed Filter plugin FalseFilter-1";
        const F2: &str = "Node(s) failed Filter plugin FalseFilter-2";
        const POST: &str = "Error running PostFilter plugin FailedPostFilter";
        struct Case {
            name: &'static str,
            num_all_nodes: usize,
            diagnosis: Diagnosis,
            want: &'static str,
        }
        let cases = vec![
            Case {
                name: "nodes failed Prefilter plugin",
                num_all_nodes: 3,
                diagnosis: Diagnosis {
                    pre_filter_msg: PRE.into(),
                    node_to_status: node_statuses(&[
                        ("node1", PRE),
                        ("node2", PRE),
                        ("node3", PRE),
                    ]),
                    ..Diagnosis::default()
                },
                want: "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
            },
            Case {
                name: "nodes failed Prefilter plugin and the preemption also failed",
                num_all_nodes: 3,
                diagnosis: Diagnosis {
                    pre_filter_msg: PRE.into(),
                    node_to_status: node_statuses(&[
                        ("node1", PRE),
                        ("node2", PRE),
                        ("node3", PRE),
                    ]),
                    post_filter_msg: POST.into(),
                    ..Diagnosis::default()
                },
                want: "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. Error running PostFilter plugin FailedPostFilter",
            },
            Case {
                name: "nodes failed one Filter plugin with an empty PostFilterMsg",
                num_all_nodes: 3,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses(&[("node1", F1), ("node2", F1), ("node3", F1)]),
                    ..Diagnosis::default()
                },
                want: "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
            },
            Case {
                name: "nodes failed one Filter plugin with a non-empty PostFilterMsg",
                num_all_nodes: 3,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses(&[("node1", F1), ("node2", F1), ("node3", F1)]),
                    post_filter_msg: POST.into(),
                    ..Diagnosis::default()
                },
                want: "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter",
            },
            Case {
                name: "nodes failed two Filter plugins with an empty PostFilterMsg",
                num_all_nodes: 3,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses(&[("node1", F1), ("node2", F1), ("node3", F2)]),
                    ..Diagnosis::default()
                },
                want: "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1.",
            },
            Case {
                name: "nodes failed two Filter plugins with a non-empty PostFilterMsg",
                num_all_nodes: 3,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses(&[("node1", F1), ("node2", F1), ("node3", F2)]),
                    post_filter_msg: POST.into(),
                    ..Diagnosis::default()
                },
                want: "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter",
            },
            Case {
                name: "failed to Permit on node",
                num_all_nodes: 1,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses(&[(
                        "node1",
                        "Node failed Permit plugin Permit-1",
                    )]),
                    ..Diagnosis::default()
                },
                want: "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
            },
            Case {
                name: "failed to Reserve on node",
                num_all_nodes: 1,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses(&[(
                        "node1",
                        "Node failed Reserve plugin Reserve-1",
                    )]),
                    ..Diagnosis::default()
                },
                want: "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
            },
        ];
        for Case {
            name,
            num_all_nodes,
            diagnosis,
            want,
        } in cases
        {
            let err = FitError {
                num_all_nodes,
                diagnosis,
            };
            assert_eq!(err.to_string(), want, "{name}");
        }
    }

    #[test]
    fn fit_error_counts_absent_nodes_with_the_absent_status() {
        let err = FitError {
            num_all_nodes: 5,
            diagnosis: Diagnosis {
                node_to_status: NodeToStatus::new(
                    [(
                        Arc::from("node1"),
                        unschedulable("node(s) were unschedulable"),
                    )]
                    .into(),
                    Status::new(
                        Code::UnschedulableAndUnresolvable,
                        "node(s) didn't match Pod's node affinity/selector",
                    ),
                ),
                ..Diagnosis::default()
            },
        };
        assert_eq!(
            err.to_string(),
            "0/5 nodes are available: 1 node(s) were unschedulable, 4 node(s) didn't match Pod's node affinity/selector."
        );
    }

    #[test]
    fn fit_error_sorts_the_histogram_as_strings_like_upstream() {
        let mut nodes = Vec::new();
        for i in 0..10 {
            nodes.push((Arc::from(format!("a{i}")), unschedulable("x")));
        }
        for i in 0..2 {
            nodes.push((Arc::from(format!("b{i}")), unschedulable("y")));
        }
        let err = FitError {
            num_all_nodes: 12,
            diagnosis: Diagnosis {
                node_to_status: NodeToStatus::new(nodes, Status::success()),
                ..Diagnosis::default()
            },
        };
        assert_eq!(err.to_string(), "0/12 nodes are available: 10 x, 2 y.");
    }

    /// The histogram counts a reason once per node that gave it, whether
    /// the nodes come in runs of one reason, interleaved, or with several
    /// reasons each.
    #[test]
    fn the_histogram_counts_runs_and_interleaved_reasons_alike() {
        let both = || Status::with_reasons(Code::Unschedulable, vec!["x".into(), "y".into()]);
        let statuses = [
            unschedulable("x"),
            unschedulable("x"),
            unschedulable("y"),
            unschedulable("x"),
            both(),
            both(),
            unschedulable("y"),
        ];
        let nodes = statuses
            .into_iter()
            .enumerate()
            .map(|(i, s)| (Arc::from(format!("n{i}")), s))
            .collect();
        let err = FitError {
            num_all_nodes: 9,
            diagnosis: Diagnosis {
                node_to_status: NodeToStatus::new(
                    nodes,
                    Status::new(Code::UnschedulableAndUnresolvable, "z"),
                ),
                ..Diagnosis::default()
            },
        };
        assert_eq!(err.to_string(), "0/9 nodes are available: 2 z, 4 y, 5 x.");
    }

    #[test]
    fn success_and_single_static_reason_statuses_do_not_allocate() {
        let s = Status::success();
        assert!(s.is_success());
        assert!(s.reasons.is_empty() && !s.reasons.spilled());
        let rejected = Status::new(Code::UnschedulableAndUnresolvable, "static reason");
        assert!(!rejected.reasons.spilled());
        assert!(matches!(
            rejected.reasons[0],
            Cow::Borrowed("static reason")
        ));
        assert!(!Status::skip().is_success());
        assert!(Status::new(Code::Unschedulable, "r").is_rejected());
        assert_eq!(
            Status::with_reasons(Code::Error, vec!["a".into(), "b".into()]).message(),
            "a, b"
        );
    }

    #[test]
    fn cycle_state_reads_back_only_the_written_type() {
        let mut state = CycleState::new();
        state.write("k", 7_u32);
        assert_eq!(state.read::<u32>("k"), Some(&7));
        assert_eq!(state.read::<i64>("k"), None);
        assert_eq!(state.read::<u32>("missing"), None);
        state.delete("k");
        assert_eq!(state.read::<u32>("k"), None);
    }
}
