//! Verdicts kept from one cycle to the next for pods of one spec: a
//! node's filter verdict, and preemption's dry run on it, while neither
//! the node nor the pods nominated to it changed.
//!
//! Pods of a workload share one spec and come in runs: a Deployment's
//! replicas, a wave of preemptors. When no node fits one of them, the
//! cycle filters every node and preemption dry-runs hundreds of them;
//! the next pod of the same spec would find the same on every node
//! nothing has touched since. Reusing those verdicts gives the very
//! decisions the full work would (the verdicts are the same, and the
//! random tie-breaks are drawn as before), at the cost of the nodes that
//! did change.
//!
//! A verdict is reused only when all of this holds, else the work is
//! done afresh:
//! - every filter the pod runs (and the PreFilters kept up to date in
//!   preemption) is [`crate::framework::Plugin::node_local`], and no
//!   PreFilter narrowed the candidate nodes: the verdict on a node then
//!   depends on the pod's spec and that node alone;
//! - the pod has the spec and namespace of the pods the verdicts were
//!   made for, with the same filter plugins, on the same cache;
//! - the node's [`NodeInfo::version`] is the one the verdict was made
//!   on, and the pods nominated to the node did not change since (the
//!   nominator's change log says which nodes did; when the log does not
//!   reach back far enough, everything is forgotten);
//! - for a dry run, the disruption budgets did not change either;
//! - the pod is not itself nominated to the node (the pods nominated
//!   there that count for it differ then from those for its peers).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::PodFilters;
use crate::cache::Cache;
use crate::framework::{NodeInfo, PodInfo, Status};
use crate::preemption::{Candidate, Victims};

/// What preemption's dry run found on one node: the victims (indexes into
/// the node's pods) and the candidate they make.
#[derive(Debug, Clone)]
pub(crate) struct DryRun {
    pub victims: Victims,
    pub candidate: Candidate,
}

/// A dry run's outcome on one node: a candidate, or why the node is none.
pub(crate) type DryRunOutcome = Result<DryRun, Status>;

/// The verdicts on one node.
#[derive(Debug, Clone)]
struct NodeVerdicts {
    /// The [`NodeInfo::version`] they were made on.
    version: u64,
    /// The filters' verdict: `None` when the node passed.
    filter: Option<Option<Status>>,
    /// The dry run's, made while the budgets were at `budgets`.
    dry_run: Option<(u64, DryRunOutcome)>,
}

/// The pods the verdicts hold for.
#[derive(Debug, Clone)]
struct Class {
    cache: u64,
    /// The filters the pods run, by the address of each plugin.
    filters: Vec<usize>,
    /// A pod of the class: its spec and namespace are the class's.
    pod: Arc<Pod>,
}

/// The verdicts, by node index of the cache (see the module comment).
#[derive(Debug, Clone, Default)]
pub(crate) struct Memo {
    class: Option<Class>,
    /// The nominator's changes already taken into account.
    nominations_seen: u64,
    nodes: Vec<Option<NodeVerdicts>>,
    /// Set when the last cycle was for a pod of the class, was not on its
    /// own nominated node, and rejected every node of the cache (`.1` of
    /// them) from the start at `.0`, every verdict kept here: the cycle's
    /// rejection list is then the memo's verdicts in that order.
    pub(crate) rejected_all: Option<(usize, usize)>,
    /// Off in tests that compare decisions with and without it.
    disabled: bool,
    /// How many verdicts were reused (filter and dry run): for tests that
    /// must know the memo was exercised.
    reused: u64,
}

impl Memo {
    #[cfg(test)]
    pub(crate) fn disabled() -> Self {
        Memo {
            disabled: true,
            ..Memo::default()
        }
    }

    /// Readies the memo for `pod`'s cycle: `true` when its verdicts may be
    /// used and kept for this pod (the conditions of the module comment
    /// on the pod and its filters), with what changed since the last
    /// cycle forgotten.
    pub(crate) fn prepare(
        &mut self,
        filters: &PodFilters<'_>,
        pod: &PodInfo,
        cache: &Cache,
    ) -> bool {
        if self.disabled || !filters.node_local() {
            return false;
        }
        let same_class = self.class.as_ref().is_some_and(|c| {
            c.cache == cache.snapshot().version.cache
                && c.filters.iter().copied().eq(filters.plugin_addresses())
                && c.pod.metadata.namespace == pod.pod().metadata.namespace
                && c.pod.spec == pod.pod().spec
        });
        let nominator = cache.nominator();
        if !same_class {
            self.class = Some(Class {
                cache: cache.snapshot().version.cache,
                filters: filters.plugin_addresses().collect(),
                pod: pod.pod_arc().clone(),
            });
            self.forget_all(nominator.changes());
        } else if self.nominations_seen != nominator.changes() {
            match nominator.changed_since(self.nominations_seen) {
                Some(nodes) => {
                    for node in nodes {
                        if let Some(verdicts) =
                            cache.node_index(node).and_then(|i| self.nodes.get_mut(i))
                        {
                            *verdicts = None;
                        }
                    }
                    self.nominations_seen = nominator.changes();
                }
                None => self.forget_all(nominator.changes()),
            }
        }
        self.nodes.resize(cache.nodes().len(), None);
        true
    }

    fn forget_all(&mut self, nominations_seen: u64) {
        self.nodes.clear();
        self.rejected_all = None;
        self.nominations_seen = nominations_seen;
    }

    fn on(&self, index: usize, node: &NodeInfo) -> Option<&NodeVerdicts> {
        self.nodes
            .get(index)?
            .as_ref()
            .filter(|v| v.version == node.version())
    }

    fn on_mut(&mut self, index: usize, node: &NodeInfo) -> Option<&mut NodeVerdicts> {
        let slot = self.nodes.get_mut(index)?;
        if slot.as_ref().is_none_or(|v| v.version != node.version()) {
            *slot = Some(NodeVerdicts {
                version: node.version(),
                filter: None,
                dry_run: None,
            });
        }
        slot.as_mut()
    }

    /// The filters' verdict on the node at `index`, if one is kept.
    pub(crate) fn filter(&mut self, index: usize, node: &NodeInfo) -> Option<&Option<Status>> {
        self.on(index, node)?.filter.as_ref()?;
        self.reused += 1;
        self.on(index, node)?.filter.as_ref()
    }

    /// How many verdicts were reused so far.
    #[cfg(test)]
    pub(crate) fn reused(&self) -> u64 {
        self.reused
    }

    pub(crate) fn keep_filter(&mut self, index: usize, node: &NodeInfo, verdict: Option<Status>) {
        if let Some(v) = self.on_mut(index, node) {
            v.filter = Some(verdict);
        }
    }

    /// The dry run's outcome on the node at `index` with the budgets at
    /// `budgets`, if one is kept.
    pub(crate) fn dry_run(
        &mut self,
        index: usize,
        node: &NodeInfo,
        budgets: u64,
    ) -> Option<&DryRunOutcome> {
        self.peek_dry_run(index, node, budgets)?;
        self.reused += 1;
        self.peek_dry_run(index, node, budgets)
    }

    /// The dry run's outcome kept for the node at `index`, as
    /// [`Memo::dry_run`] but not counted as reused (the same outcome
    /// read again).
    pub(crate) fn peek_dry_run(
        &self,
        index: usize,
        node: &NodeInfo,
        budgets: u64,
    ) -> Option<&DryRunOutcome> {
        match &self.on(index, node)?.dry_run {
            Some((at, outcome)) if *at == budgets => Some(outcome),
            _ => None,
        }
    }

    pub(crate) fn keep_dry_run(
        &mut self,
        index: usize,
        node: &NodeInfo,
        budgets: u64,
        outcome: DryRunOutcome,
    ) {
        if let Some(v) = self.on_mut(index, node) {
            v.dry_run = Some((budgets, outcome));
        }
    }
}
