//! A pod's pod-affinity and pod-anti-affinity terms, parsed once
//! (upstream's `AffinityTerm`, `WeightedAffinityTerm` and the term lists a
//! `PodInfo` precomputes): the label selector, the namespaces the term
//! looks in (its own list, or the pod's namespace when it names neither a
//! list nor a selector), the namespace selector and the topology key.

use std::collections::{BTreeMap, BTreeSet};

use berth_core::labels::{LabelSelector, LabelSelectorError, label_selector_as_selector};
use k8s_openapi::api::core::v1::{Affinity, Pod, PodAffinityTerm, WeightedPodAffinityTerm};

/// One parsed term. `selector` and `namespace_selector` are `None` where
/// upstream's are `labels.Nothing()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityTerm {
    pub namespaces: BTreeSet<String>,
    pub selector: Option<LabelSelector>,
    pub topology_key: String,
    pub namespace_selector: Option<LabelSelector>,
}

/// A preferred term and its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i32,
}

fn pod_labels(pod: &Pod) -> Option<&BTreeMap<String, String>> {
    pod.metadata.labels.as_ref()
}

fn pod_namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("")
}

impl AffinityTerm {
    /// `newAffinityTerm`: the term of `pod`.
    pub fn new(pod: &Pod, term: &PodAffinityTerm) -> Result<Self, LabelSelectorError> {
        let selector = label_selector_as_selector(term.label_selector.as_ref())?;
        let namespace_selector = label_selector_as_selector(term.namespace_selector.as_ref())?;
        let listed = term.namespaces.as_deref().unwrap_or(&[]);
        let namespaces = if listed.is_empty() && term.namespace_selector.is_none() {
            [pod_namespace(pod).to_string()].into()
        } else {
            listed.iter().cloned().collect()
        };
        Ok(AffinityTerm {
            namespaces,
            selector,
            topology_key: term.topology_key.clone(),
            namespace_selector,
        })
    }

    /// `Matches`: `pod` is in one of the term's namespaces (by name, or
    /// by its namespace's labels `ns_labels`) and its labels match.
    pub fn matches(&self, pod: &Pod, ns_labels: Option<&BTreeMap<String, String>>) -> bool {
        let in_namespace = self.namespaces.contains(pod_namespace(pod))
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(ns_labels));
        in_namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(pod_labels(pod)))
    }

    /// `mergeAffinityTermNamespacesIfNotEmpty`: the namespaces a non-empty
    /// namespace selector picks among `namespaces` (name → labels) join
    /// the listed ones, and the selector is dropped.
    pub fn merge_selected_namespaces<'a>(
        &mut self,
        namespaces: impl IntoIterator<Item = (&'a String, &'a BTreeMap<String, String>)>,
    ) {
        let Some(selector) = self.namespace_selector.as_ref().filter(|s| !s.is_empty()) else {
            return;
        };
        for (name, labels) in namespaces {
            if selector.matches(labels) {
                self.namespaces.insert(name.clone());
            }
        }
        self.namespace_selector = None;
    }
}

/// `podMatchesAllAffinityTerms`: `pod` matches every term (and there is
/// at least one). Namespace selectors are not consulted, as upstream.
pub fn matches_all(terms: &[AffinityTerm], pod: &Pod) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, None))
}

/// Every pod-(anti-)affinity term of one pod, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodAffinityTerms {
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
}

fn terms(
    pod: &Pod,
    v1: Option<&Vec<PodAffinityTerm>>,
) -> Result<Vec<AffinityTerm>, LabelSelectorError> {
    v1.into_iter()
        .flatten()
        .map(|t| AffinityTerm::new(pod, t))
        .collect()
}

fn weighted(
    pod: &Pod,
    v1: Option<&Vec<WeightedPodAffinityTerm>>,
) -> Result<Vec<WeightedAffinityTerm>, LabelSelectorError> {
    v1.into_iter()
        .flatten()
        .map(|t| {
            Ok(WeightedAffinityTerm {
                term: AffinityTerm::new(pod, &t.pod_affinity_term)?,
                weight: t.weight,
            })
        })
        .collect()
}

fn affinity(pod: &Pod) -> Option<&Affinity> {
    pod.spec.as_ref().and_then(|s| s.affinity.as_ref())
}

impl PodAffinityTerms {
    /// The pod's terms; `Ok(None)` when it has no pod affinity or
    /// anti-affinity at all (the common case, which costs nothing).
    pub fn of(pod: &Pod) -> Result<Option<Self>, LabelSelectorError> {
        let Some(a) = affinity(pod) else {
            return Ok(None);
        };
        if a.pod_affinity.is_none() && a.pod_anti_affinity.is_none() {
            return Ok(None);
        }
        let pa = a.pod_affinity.as_ref();
        let anti = a.pod_anti_affinity.as_ref();
        let required = |p: Option<&Vec<PodAffinityTerm>>| terms(pod, p);
        let preferred = |p: Option<&Vec<WeightedPodAffinityTerm>>| weighted(pod, p);
        let required_affinity = required(pa.and_then(|p| {
            p.required_during_scheduling_ignored_during_execution
                .as_ref()
        }));
        let required_anti_affinity = required(anti.and_then(|p| {
            p.required_during_scheduling_ignored_during_execution
                .as_ref()
        }));
        let preferred_affinity = preferred(pa.and_then(|p| {
            p.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        }));
        let preferred_anti_affinity = preferred(anti.and_then(|p| {
            p.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        }));
        // Upstream's `PodInfo.Update`: each list's error under its name,
        // all of them as one `utilerrors.NewAggregate` (the message alone
        // when there is one, else `[a, b]`, repeats dropped).
        let mut errors: Vec<String> = Vec::new();
        let mut note = |list: &str, error: Option<&LabelSelectorError>| {
            if let Some(e) = error {
                let message = format!("{list}: {e}");
                if !errors.contains(&message) {
                    errors.push(message);
                }
            }
        };
        note("requiredAffinityTerms", required_affinity.as_ref().err());
        note(
            "requiredAntiAffinityTerms",
            required_anti_affinity.as_ref().err(),
        );
        note("preferredAffinityTerms", preferred_affinity.as_ref().err());
        note(
            "preferredAntiAffinityTerms",
            preferred_anti_affinity.as_ref().err(),
        );
        match errors.len() {
            0 => {}
            1 => return Err(LabelSelectorError(errors.remove(0))),
            _ => return Err(LabelSelectorError(format!("[{}]", errors.join(", ")))),
        }
        Ok(Some(PodAffinityTerms {
            required_affinity: required_affinity?,
            required_anti_affinity: required_anti_affinity?,
            preferred_affinity: preferred_affinity?,
            preferred_anti_affinity: preferred_anti_affinity?,
        }))
    }

    /// Whether an existing pod with these terms can change another pod's
    /// InterPodAffinity score: preferred terms, or required affinity
    /// (counted with `hardPodAffinityWeight`). Required anti-affinity only
    /// filters.
    pub fn affects_scores(&self) -> bool {
        !self.required_affinity.is_empty()
            || !self.preferred_affinity.is_empty()
            || !self.preferred_anti_affinity.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use berth_core::test_util::{make_pod, make_selector};

    use super::*;

    /// Upstream `PodInfo.Update`'s parse error: each list's error under
    /// the list's name, several as one aggregate.
    #[test]
    fn parse_errors_name_their_term_list_and_aggregate_as_upstream() {
        let bad = || {
            make_selector()
                .r#in("service", vec!["{{.bad-value.}}"])
                .obj()
        };
        let detail = "values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        struct Case {
            name: &'static str,
            pod: Pod,
            want: String,
        }
        let cases = [
            Case {
                name: "one bad required anti-affinity term",
                pod: make_pod()
                    .pod_anti_affinity("zone", bad(), vec![], None)
                    .obj(),
                want: format!("requiredAntiAffinityTerms: {detail}"),
            },
            Case {
                name: "bad required affinity and preferred anti-affinity terms",
                pod: make_pod()
                    .pod_affinity("zone", bad(), vec![], None)
                    .preferred_pod_anti_affinity(1, "zone", bad(), vec![])
                    .obj(),
                want: format!(
                    "[requiredAffinityTerms: {detail}, preferredAntiAffinityTerms: {detail}]"
                ),
            },
        ];
        for case in cases {
            let got = PodAffinityTerms::of(&case.pod).map_err(|e| e.to_string());
            assert_eq!(got, Err(case.want), "{}", case.name);
        }
    }
}
