//! InterPodAffinity: pods go (required) or prefer to go (preferred) where
//! pods matching their affinity terms run, and stay or prefer to stay away
//! from where pods matching their anti-affinity terms run, per topology
//! domain; an existing pod's required anti-affinity keeps matching pods
//! out of its domain too. Filter and Score, with namespaces and namespace
//! selectors (the scheduler's namespace watch) and `hardPodAffinityWeight`
//! (existing pods' required affinity as a preference, weight 1 by default).
//!
//! Ported from upstream `plugins/interpodaffinity` (`filtering.go`,
//! `scoring.go`, `plugin.go`). The Filter's term counts per topology pair
//! are kept across cycles ([`counts`]) and brought up to date from the
//! snapshot's pod log.

pub mod counts;
mod filtering;
mod scoring;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};

use crate::affinity_terms::{AffinityTerm, PodAffinityTerms, matches_all};
use crate::framework::Plugin;

pub use filtering::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
};

/// The plugin's registry name.
pub const NAME: &str = "InterPodAffinity";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 2;

/// Upstream's default `hardPodAffinityWeight`.
pub const DEFAULT_HARD_POD_AFFINITY_WEIGHT: i32 = 1;

/// The plugin and its arguments (`InterPodAffinityArgs`).
#[derive(Debug, Clone, Copy)]
pub struct InterPodAffinity {
    /// The score weight of an existing pod's required affinity term that
    /// the incoming pod matches (0..=100).
    pub hard_pod_affinity_weight: i32,
    /// Score only by the incoming pod's preferred terms.
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity {
            hard_pod_affinity_weight: DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Terms with their namespace selectors resolved against `namespaces`.
pub(crate) fn merged<'a>(
    terms: impl IntoIterator<Item = &'a AffinityTerm>,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<AffinityTerm> {
    terms
        .into_iter()
        .map(|t| {
            let mut t = t.clone();
            t.merge_selected_namespaces(namespaces);
            t
        })
        .collect()
}

fn bound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

fn terms_of(pod: &Pod) -> PodAffinityTerms {
    PodAffinityTerms::of(pod).ok().flatten().unwrap_or_default()
}

impl InterPodAffinity {
    /// `isSchedulableAfterPodChange`.
    pub fn is_schedulable_after_pod_change(
        &self,
        waiting: &Pod,
        old: Option<&Pod>,
        new: Option<&Pod>,
    ) -> bool {
        if let (Some(_), Some(new)) = (old, new)
            && new.metadata.uid.is_some()
            && new.metadata.uid == waiting.metadata.uid
        {
            return true;
        }
        if new.is_some_and(|p| !bound(p)) || old.is_some_and(|p| !bound(p)) {
            return false;
        }
        let own = terms_of(waiting);
        let terms = &own.required_affinity;
        let anti = &own.required_anti_affinity;
        match (old, new) {
            (Some(old), Some(new)) => {
                (!matches_all(terms, old) && matches_all(terms, new))
                    || (matches_all(anti, old) && !matches_all(anti, new))
            }
            (None, Some(added)) => matches_all(terms, added),
            (Some(deleted), None) => {
                matches_all(anti, deleted)
                    || matches_all(&terms_of(deleted).required_anti_affinity, waiting)
            }
            (None, None) => false,
        }
    }

    /// `isSchedulableAfterNodeChange`: a node gained a topology key of an
    /// affinity term or changed its value; or lost/changed one of an
    /// anti-affinity term (any added node may help anti-affinity).
    pub fn is_schedulable_after_node_change(
        &self,
        waiting: &Pod,
        old: Option<&Node>,
        new: &Node,
    ) -> bool {
        let own = terms_of(waiting);
        let label = |n: &Node, k: &str| n.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
        for t in &own.required_affinity {
            let after = label(new, &t.topology_key);
            match old {
                None if after.is_some() => return true,
                None => {}
                Some(old) => {
                    let before = label(old, &t.topology_key);
                    if after.is_some() && before != after {
                        return true;
                    }
                }
            }
        }
        for t in &own.required_anti_affinity {
            let Some(old) = old else {
                return true;
            };
            let before = label(old, &t.topology_key);
            let after = label(new, &t.topology_key);
            if before.is_some() && before != after {
                return true;
            }
        }
        false
    }

    /// berth's addition (upstream registers no namespace event): a
    /// namespace's labels changed, so a namespace selector of the waiting
    /// pod's terms may now select it, or stop selecting it for an
    /// anti-affinity term; and existing pods' terms that select the waiting
    /// pod's namespace by label may no longer do so.
    pub fn is_schedulable_after_namespace_change(
        &self,
        waiting: &Pod,
        old: Option<&Namespace>,
        new: Option<&Namespace>,
    ) -> bool {
        let labels = |ns: Option<&Namespace>| ns.and_then(|n| n.metadata.labels.clone());
        let (before, after) = (labels(old), labels(new));
        if before == after {
            return false;
        }
        let own = terms_of(waiting);
        let selected = |t: &AffinityTerm, l: &Option<BTreeMap<String, String>>| {
            t.namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(l.as_ref()))
        };
        let affinity_gains = own
            .required_affinity
            .iter()
            .any(|t| !selected(t, &before) && selected(t, &after));
        let anti_loses = own
            .required_anti_affinity
            .iter()
            .any(|t| selected(t, &before) && !selected(t, &after));
        let own_namespace = new
            .or(old)
            .is_some_and(|n| n.metadata.name == waiting.metadata.namespace);
        affinity_gains || anti_loses || own_namespace
    }
}

#[cfg(test)]
mod tests;
