//! NodeAffinity: a pod runs only on nodes matching its `nodeSelector` AND
//! its required node affinity (Filter), and prefers nodes matching its
//! weighted preferred terms (Score). Ported from upstream
//! `plugins/nodeaffinity/node_affinity.go`; the matching itself lives in
//! [`berth_core::node_affinity`].
//!
//! PreFilter parses the pod's selectors once per cycle, so Filter only
//! matches borrowed data and never allocates. Like upstream, a scheduler
//! profile may add affinity of its own (`addedAffinity`), enforced on every
//! pod.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeAffinity as V1NodeAffinity, Pod};

use crate::framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Snapshot, Status,
    default_normalize_score,
};
use berth_core::node_affinity::{
    NodeSelector, OBJECT_NAME_FIELD, OP_IN, PreferredSchedulingTerms, RequiredNodeAffinity,
};

/// The plugin's registry name.
pub const NAME: &str = "NodeAffinity";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 2;

/// The Filter reason when the pod's own selector or affinity does not match.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";

/// The Filter reason when the profile's `addedAffinity` does not match.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";

/// The PreFilter reason when every term pins the pod to no node name.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeAffinity";
pub const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeAffinity";

/// The plugin's configuration (`NodeAffinityArgs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeAffinityArgs {
    /// Affinity applied to every pod on top of its own.
    pub added_affinity: Option<V1NodeAffinity>,
}

/// The NodeAffinity plugin, with its parsed `addedAffinity`.
#[derive(Debug, Clone, Default)]
pub struct NodeAffinity {
    added_node_selector: Option<NodeSelector>,
    added_pref_sched_terms: Option<PreferredSchedulingTerms>,
}

/// PreFilter's per-pod data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterState {
    pub required: RequiredNodeAffinity,
}

/// PreScore's per-pod data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreScoreState {
    pub preferred: Option<PreferredSchedulingTerms>,
}

/// `getPodPreferredNodeAffinity`: the pod's preferred terms, parsed.
pub fn pod_preferred_node_affinity(pod: &Pod) -> Result<Option<PreferredSchedulingTerms>, String> {
    let terms = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match terms {
        Some(t) => PreferredSchedulingTerms::new(t, "")
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

impl NodeAffinity {
    /// `New`: parses `addedAffinity`, failing on any parse error.
    pub fn new(args: &NodeAffinityArgs) -> Result<Self, String> {
        let mut pl = NodeAffinity::default();
        if let Some(added) = &args.added_affinity {
            if let Some(ns) = &added.required_during_scheduling_ignored_during_execution {
                pl.added_node_selector = Some(NodeSelector::new(ns, "").map_err(|e| {
                    format!(
                        "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {e}"
                    )
                })?);
            }
            if let Some(terms) = added
                .preferred_during_scheduling_ignored_during_execution
                .as_ref()
                .filter(|t| !t.is_empty())
            {
                pl.added_pref_sched_terms =
                    Some(PreferredSchedulingTerms::new(terms, "").map_err(|e| {
                        format!("parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {e}")
                    })?);
            }
        }
        Ok(pl)
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn node_local(&self) -> bool {
        true
    }
}

/// The node names a term pins the pod to with `metadata.name In (...)`
/// fields (ANDed requirements intersect); `None` when the term has none.
fn term_node_names(
    term: &k8s_openapi::api::core::v1::NodeSelectorTerm,
) -> Option<BTreeSet<String>> {
    let mut names: Option<BTreeSet<String>> = None;
    for r in term.match_fields.as_deref().unwrap_or(&[]) {
        if r.key == OBJECT_NAME_FIELD && r.operator == OP_IN {
            let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
            names = Some(match names {
                None => s,
                Some(prev) => prev.intersection(&s).cloned().collect(),
            });
        }
    }
    names
}

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status) {
        let spec = pod.pod().spec.as_ref();
        let required = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            });
        let has_node_selector = spec.is_some_and(|s| s.node_selector.is_some());
        if required.is_none() && self.added_node_selector.is_none() && !has_node_selector {
            // Nothing to check for this pod: take Filter out of the cycle.
            return (None, Status::skip());
        }
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                required: RequiredNodeAffinity::of_pod(pod.pod()),
            },
        );
        let Some(required) = required.filter(|r| !r.node_selector_terms.is_empty()) else {
            return (None, Status::success());
        };
        // If every term pins the pod to node names, only those nodes need
        // filtering: the union over the (ORed) terms.
        let mut node_names: Option<BTreeSet<String>> = None;
        for term in &required.node_selector_terms {
            let Some(names) = term_node_names(term) else {
                // A term without a name constraint admits every node.
                return (None, Status::success());
            };
            node_names.get_or_insert_with(BTreeSet::new).extend(names);
        }
        match node_names {
            Some(names) if names.is_empty() => (
                None,
                Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_CONFLICT)
                    .with_plugin(NAME),
            ),
            Some(names) => (
                Some(PreFilterResult {
                    node_names: Some(names),
                }),
                Status::success(),
            ),
            None => (None, Status::success()),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let n = node.node();
        if let Some(added) = &self.added_node_selector
            && !added.matches(n)
        {
            return Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_ENFORCED)
                .with_plugin(NAME);
        }
        // Parse errors are ignored, as upstream does for backwards
        // compatibility: a broken term simply matches nothing.
        let matched = match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Some(s) => s.required.matches(n),
            // PreFilter did not run: parse here (allocates, but only in
            // this fallback).
            None => RequiredNodeAffinity::of_pod(pod.pod()).matches(n),
        };
        if matched {
            Status::success()
        } else {
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_POD).with_plugin(NAME)
        }
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
        _nodes: &[&NodeInfo],
    ) -> Status {
        let preferred = match pod_preferred_node_affinity(pod.pod()) {
            Ok(p) => p,
            Err(e) => return Status::error(e).with_plugin(NAME),
        };
        if preferred.is_none() && self.added_pref_sched_terms.is_none() {
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { preferred });
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    /// The sum of the weights of the matching preferred terms, the pod's and
    /// the profile's.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let n = node.node();
        let mut count = self
            .added_pref_sched_terms
            .as_ref()
            .map_or(0, |t| t.score(n));
        let from_pod = match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => s.preferred.as_ref().map_or(0, |t| t.score(n)),
            // PreScore did not run: parse here.
            None => pod_preferred_node_affinity(pod.pod())
                .map_err(|e| Status::error(e).with_plugin(NAME))?
                .map_or(0, |t| t.score(n)),
        };
        count = count.saturating_add(from_pod);
        Ok(count)
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::node_affinity::OP_EXISTS;
    use berth_core::test_util::{expr, make_pod, node, pod_with, selector, term};
    use k8s_openapi::api::core::v1::{
        Affinity, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, PreferredSchedulingTerm,
    };

    fn e(key: &str, op: &str, values: &[&str]) -> NodeSelectorTerm {
        term(vec![expr(key, op, values)], vec![])
    }

    fn names(n: &[&str]) -> Option<PreFilterResult> {
        Some(PreFilterResult {
            node_names: Some(n.iter().map(|s| s.to_string()).collect()),
        })
    }

    fn name_in(n: &str) -> NodeSelectorRequirement {
        expr(OBJECT_NAME_FIELD, OP_IN, &[n])
    }

    fn req(terms: Vec<NodeSelectorTerm>) -> Option<k8s_openapi::api::core::v1::NodeSelector> {
        Some(selector(terms))
    }

    fn reject(reason: &'static str) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason).with_plugin(NAME)
    }

    fn added_required(terms: Vec<NodeSelectorTerm>) -> NodeAffinityArgs {
        NodeAffinityArgs {
            added_affinity: Some(V1NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(selector(terms)),
                ..V1NodeAffinity::default()
            }),
        }
    }

    struct FilterCase {
        name: &'static str,
        pod: Pod,
        labels: &'static [(&'static str, &'static str)],
        node_name: &'static str,
        want_status: Status,
        want_pre_filter_status: Status,
        want_pre_filter_result: Option<PreFilterResult>,
        args: NodeAffinityArgs,
        run_pre_filter: bool,
    }

    impl Default for FilterCase {
        fn default() -> Self {
            FilterCase {
                name: "",
                pod: Pod::default(),
                labels: &[],
                node_name: "",
                want_status: Status::success(),
                want_pre_filter_status: Status::success(),
                want_pre_filter_result: None,
                args: NodeAffinityArgs::default(),
                run_pre_filter: true,
            }
        }
    }

    /// Upstream `TestNodeAffinity` (PreFilter and Filter).
    #[test]
    fn node_affinity_filter_as_upstream() {
        let cases = vec![
            FilterCase {
                name: "missing labels",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "same labels",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                labels: &[("foo", "bar")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "node labels are superset",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                labels: &[("foo", "bar"), ("baz", "blah")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "node labels are subset",
                pod: pod_with(Some(&[("foo", "bar"), ("baz", "blah")]), None),
                labels: &[("foo", "bar")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using In operator that matches the existing node",
                pod: pod_with(None, req(vec![e("foo", OP_IN, &["bar", "value2"])])),
                labels: &[("foo", "bar")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using Gt operator that matches the existing node",
                pod: pod_with(None, req(vec![e("kernel-version", "Gt", &["0204"])])),
                labels: &[("kernel-version", "0206")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using NotIn operator that matches the existing node",
                pod: pod_with(None, req(vec![e("mem-type", "NotIn", &["DDR", "DDR2"])])),
                labels: &[("mem-type", "DDR3")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using Exists operator that matches the existing node",
                pod: pod_with(None, req(vec![e("GPU", OP_EXISTS, &[])])),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with affinity that don't match node's labels won't schedule onto the node",
                pod: pod_with(None, req(vec![e("foo", OP_IN, &["value1", "value2"])])),
                labels: &[("foo", "bar")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
                pod: pod_with(
                    None,
                    req(vec![NodeSelectorTerm {
                        match_expressions: Some(vec![]),
                        match_fields: None,
                    }]),
                ),
                labels: &[("foo", "bar")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with no Affinity will schedule onto a node",
                pod: Pod::default(),
                labels: &[("foo", "bar")],
                want_pre_filter_status: Status::skip(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with Affinity but nil NodeSelector will schedule onto a node",
                pod: Pod {
                    spec: Some(PodSpec {
                        affinity: Some(Affinity {
                            node_affinity: Some(V1NodeAffinity::default()),
                            ..Affinity::default()
                        }),
                        ..PodSpec::default()
                    }),
                    ..Pod::default()
                },
                labels: &[("foo", "bar")],
                want_pre_filter_status: Status::skip(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with multiple matchExpressions ANDed that matches the existing node",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![
                            expr("GPU", OP_EXISTS, &[]),
                            expr("GPU", "NotIn", &["AMD", "INTER"]),
                        ],
                        vec![],
                    )]),
                ),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![
                            expr("GPU", OP_EXISTS, &[]),
                            expr("GPU", OP_IN, &["AMD", "INTER"]),
                        ],
                        vec![],
                    )]),
                ),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
                pod: pod_with(
                    None,
                    req(vec![
                        e("foo", OP_IN, &["bar", "value2"]),
                        e("diffkey", OP_IN, &["wrong", "value2"]),
                    ]),
                ),
                labels: &[("foo", "bar")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
                pod: pod_with(Some(&[("foo", "bar")]), req(vec![e("foo", OP_EXISTS, &[])])),
                labels: &[("foo", "bar")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
                pod: pod_with(Some(&[("foo", "bar")]), req(vec![e("foo", OP_EXISTS, &[])])),
                labels: &[("foo", "barrrrrr")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with an invalid value in Affinity term won't be scheduled onto the node",
                pod: pod_with(
                    None,
                    req(vec![e("foo", "NotIn", &["invalid value: ___@#$%^"])]),
                ),
                labels: &[("foo", "bar")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchFields using In operator that matches the existing node",
                pod: pod_with(None, req(vec![term(vec![], vec![name_in("node1")])])),
                node_name: "node1",
                want_pre_filter_result: names(&["node1"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchFields using In operator that does not match the existing node",
                pod: pod_with(None, req(vec![term(vec![], vec![name_in("node1")])])),
                node_name: "node2",
                want_status: reject(ERR_REASON_POD),
                want_pre_filter_result: names(&["node1"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two terms: matchFields does not match, but matchExpressions matches",
                pod: pod_with(
                    None,
                    req(vec![
                        term(vec![], vec![name_in("node1"), name_in("node2")]),
                        e("foo", OP_IN, &["bar"]),
                    ]),
                ),
                node_name: "node2",
                labels: &[("foo", "bar")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with one term: matchFields does not match, but matchExpressions matches",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![expr("foo", OP_IN, &["bar"])],
                        vec![name_in("node1")],
                    )]),
                ),
                node_name: "node2",
                labels: &[("foo", "bar")],
                want_pre_filter_result: names(&["node1"]),
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with one term: both matchFields and matchExpressions match",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![expr("foo", OP_IN, &["bar"])],
                        vec![name_in("node1")],
                    )]),
                ),
                node_name: "node1",
                labels: &[("foo", "bar")],
                want_pre_filter_result: names(&["node1"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two terms: both matchFields and matchExpressions do not match",
                pod: pod_with(
                    None,
                    req(vec![
                        term(vec![], vec![name_in("node1")]),
                        e("foo", OP_IN, &["not-match-to-bar"]),
                    ]),
                ),
                node_name: "node2",
                labels: &[("foo", "bar")],
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two terms of node.Name affinity",
                pod: pod_with(
                    None,
                    req(vec![
                        term(vec![], vec![name_in("node1")]),
                        term(vec![], vec![name_in("node2")]),
                    ]),
                ),
                node_name: "node2",
                want_pre_filter_result: names(&["node1", "node2"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two conflicting mach field requirements",
                pod: pod_with(
                    None,
                    req(vec![term(vec![], vec![name_in("node1"), name_in("node2")])]),
                ),
                node_name: "node2",
                labels: &[("foo", "bar")],
                want_pre_filter_status: reject(ERR_REASON_CONFLICT),
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches added affinity and Pod's node affinity",
                pod: pod_with(None, req(vec![e("zone", OP_IN, &["foo"])])),
                node_name: "node2",
                labels: &[("zone", "foo")],
                args: added_required(vec![term(vec![], vec![name_in("node2")])]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches added affinity but not Pod's node affinity",
                pod: pod_with(None, req(vec![e("zone", OP_IN, &["bar"])])),
                node_name: "node2",
                labels: &[("zone", "foo")],
                args: added_required(vec![term(vec![], vec![name_in("node2")])]),
                want_status: reject(ERR_REASON_POD),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Doesn't match added affinity",
                pod: Pod::default(),
                node_name: "node2",
                labels: &[("zone", "foo")],
                args: added_required(vec![e("zone", OP_IN, &["bar"])]),
                want_status: reject(ERR_REASON_ENFORCED),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches node selector correctly even if PreFilter is not called",
                pod: pod_with(Some(&[("foo", "bar")]), None),
                labels: &[("foo", "bar"), ("baz", "blah")],
                run_pre_filter: false,
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches node affinity correctly even if PreFilter is not called",
                pod: pod_with(
                    None,
                    req(vec![term(
                        vec![
                            expr("GPU", OP_EXISTS, &[]),
                            expr("GPU", "NotIn", &["AMD", "INTER"]),
                        ],
                        vec![],
                    )]),
                ),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                run_pre_filter: false,
                ..FilterCase::default()
            },
        ];
        assert_eq!(cases.len(), 31);
        for c in cases {
            let n = NodeInfo::from(node(c.node_name, c.labels));
            let pod = PodInfo::from(c.pod);
            let plugin = match NodeAffinity::new(&c.args) {
                Ok(p) => p,
                Err(e) => panic!("{}: creating plugin: {e}", c.name),
            };
            let mut state = CycleState::new();
            if c.run_pre_filter {
                let (result, status) = plugin.pre_filter(
                    &mut state,
                    &pod,
                    &Snapshot::of_nodes(std::slice::from_ref(&n)),
                );
                assert_eq!(
                    status, c.want_pre_filter_status,
                    "{}: PreFilter status",
                    c.name
                );
                assert_eq!(
                    result, c.want_pre_filter_result,
                    "{}: PreFilterResult",
                    c.name
                );
            }
            assert_eq!(
                plugin.filter(&state, &pod, &n),
                c.want_status,
                "{}: Filter",
                c.name
            );
        }
    }

    fn pref(weight: i32, exprs: Vec<NodeSelectorRequirement>) -> PreferredSchedulingTerm {
        PreferredSchedulingTerm {
            weight,
            preference: term(exprs, vec![]),
        }
    }

    fn with_preferred(terms: Vec<PreferredSchedulingTerm>) -> V1NodeAffinity {
        V1NodeAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(terms),
            ..V1NodeAffinity::default()
        }
    }

    fn pod_preferring(na: V1NodeAffinity) -> Pod {
        make_pod()
            .affinity(Affinity {
                node_affinity: Some(na),
                ..Affinity::default()
            })
            .obj()
    }

    /// Upstream `TestNodeAffinityPriority` (PreScore, Score, NormalizeScore).
    #[test]
    fn node_affinity_priority_as_upstream() {
        let label1: &[(&str, &str)] = &[("foo", "bar")];
        let label2: &[(&str, &str)] = &[("key", "value")];
        let label3: &[(&str, &str)] = &[("az", "az1")];
        let label4: &[(&str, &str)] = &[("abc", "az11"), ("def", "az22")];
        let label5: &[(&str, &str)] = &[("foo", "bar"), ("key", "value"), ("az", "az1")];
        let affinity1 = || with_preferred(vec![pref(2, vec![expr("foo", OP_IN, &["bar"])])]);
        let affinity2 = || {
            with_preferred(vec![
                pref(2, vec![expr("foo", OP_IN, &["bar"])]),
                pref(4, vec![expr("key", OP_IN, &["value"])]),
                pref(
                    5,
                    vec![
                        expr("foo", OP_IN, &["bar"]),
                        expr("key", OP_IN, &["value"]),
                        expr("az", OP_IN, &["az1"]),
                    ],
                ),
            ])
        };
        let invalid_key_msg = "[0].matchExpressions[0].key: Invalid value: \"invalid key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        struct Case<'a> {
            name: &'static str,
            pod: Pod,
            nodes: Vec<(&'static str, &'a [(&'a str, &'a str)])>,
            want: Vec<(&'static str, i64)>,
            args: NodeAffinityArgs,
            run_pre_score: bool,
            want_pre_score: Status,
        }
        let cases = vec![
            Case {
                name: "all nodes are same priority as NodeAffinity is nil",
                pod: Pod::default(),
                nodes: vec![("node1", label1), ("node2", label2), ("node3", label3)],
                want: vec![("node1", 0), ("node2", 0), ("node3", 0)],
                args: NodeAffinityArgs::default(),
                run_pre_score: false,
                want_pre_score: Status::success(),
            },
            Case {
                name: "Skip is returned in PreScore when NodeAffinity is nil",
                pod: Pod::default(),
                nodes: vec![("node1", label1)],
                want: vec![],
                args: NodeAffinityArgs::default(),
                run_pre_score: true,
                want_pre_score: Status::skip(),
            },
            Case {
                name: "PreScore returns error when an incoming Pod has a broken affinity",
                pod: pod_preferring(with_preferred(vec![pref(
                    2,
                    vec![expr("invalid key", OP_IN, &["bar"])],
                )])),
                nodes: vec![("node1", label1)],
                want: vec![],
                args: NodeAffinityArgs::default(),
                run_pre_score: true,
                want_pre_score: Status::error(invalid_key_msg).with_plugin(NAME),
            },
            Case {
                name: "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
                pod: pod_preferring(affinity1()),
                nodes: vec![("node1", label4), ("node2", label2), ("node3", label3)],
                want: vec![("node1", 0), ("node2", 0), ("node3", 0)],
                args: NodeAffinityArgs::default(),
                run_pre_score: true,
                want_pre_score: Status::success(),
            },
            Case {
                name: "only node1 matches the preferred scheduling requirements of pod",
                pod: pod_preferring(affinity1()),
                nodes: vec![("node1", label1), ("node2", label2), ("node3", label3)],
                want: vec![("node1", MAX_NODE_SCORE), ("node2", 0), ("node3", 0)],
                args: NodeAffinityArgs::default(),
                run_pre_score: true,
                want_pre_score: Status::success(),
            },
            Case {
                name: "all nodes matches the preferred scheduling requirements of pod but with different priorities ",
                pod: pod_preferring(affinity2()),
                nodes: vec![("node1", label1), ("node5", label5), ("node2", label2)],
                want: vec![("node1", 18), ("node5", MAX_NODE_SCORE), ("node2", 36)],
                args: NodeAffinityArgs::default(),
                run_pre_score: true,
                want_pre_score: Status::success(),
            },
            Case {
                name: "added affinity",
                pod: Pod::default(),
                nodes: vec![("node1", label1), ("node2", label2)],
                want: vec![("node1", MAX_NODE_SCORE), ("node2", 0)],
                args: NodeAffinityArgs {
                    added_affinity: Some(affinity1()),
                },
                run_pre_score: true,
                want_pre_score: Status::success(),
            },
            Case {
                name: "added affinity and pod has default affinity",
                pod: pod_preferring(affinity1()),
                nodes: vec![("node1", label1), ("node2", label2), ("node3", label5)],
                want: vec![("node1", 40), ("node2", 60), ("node3", MAX_NODE_SCORE)],
                args: NodeAffinityArgs {
                    added_affinity: Some(with_preferred(vec![pref(
                        3,
                        vec![expr("key", OP_IN, &["value"])],
                    )])),
                },
                run_pre_score: true,
                want_pre_score: Status::success(),
            },
            Case {
                name: "calculate the priorities correctly even if PreScore is not called",
                pod: pod_preferring(affinity2()),
                nodes: vec![("node1", label1), ("node5", label5), ("node2", label2)],
                want: vec![("node1", 18), ("node5", MAX_NODE_SCORE), ("node2", 36)],
                args: NodeAffinityArgs::default(),
                run_pre_score: false,
                want_pre_score: Status::success(),
            },
        ];
        for Case {
            name,
            pod,
            nodes,
            want,
            args,
            run_pre_score,
            want_pre_score,
        } in cases
        {
            let plugin = match NodeAffinity::new(&args) {
                Ok(p) => p,
                Err(e) => panic!("{name}: creating plugin: {e}"),
            };
            let pod = PodInfo::from(pod);
            let nodes: Vec<NodeInfo> = nodes
                .into_iter()
                .map(|(n, l)| NodeInfo::from(node(n, l)))
                .collect();
            let mut state = CycleState::new();
            if run_pre_score {
                let status = plugin.pre_score(
                    &mut state,
                    &pod,
                    &Snapshot::of_nodes(&nodes),
                    &nodes.iter().collect::<Vec<_>>(),
                );
                assert_eq!(status.code, want_pre_score.code, "{name}: PreScore code");
                assert_eq!(
                    status.message(),
                    want_pre_score.message(),
                    "{name}: PreScore message"
                );
                if !status.is_success() {
                    continue;
                }
            }
            let mut scores: Vec<NodeScore> = nodes
                .iter()
                .map(|n| match plugin.score(&state, &pod, n) {
                    Ok(score) => NodeScore {
                        name: n.name().to_string(),
                        score,
                    },
                    Err(s) => panic!("{name}: unexpected error: {s}"),
                })
                .collect();
            assert!(
                plugin
                    .normalize_score(&state, &pod, &mut scores)
                    .is_success()
            );
            let got: Vec<(String, i64)> = scores.into_iter().map(|s| (s.name, s.score)).collect();
            let want: Vec<(String, i64)> =
                want.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn broken_added_affinity_fails_plugin_creation() {
        let err = match NodeAffinity::new(&added_required(vec![e("bad key", OP_IN, &["x"])])) {
            Err(e) => e,
            Ok(p) => panic!("want error, got {p:?}"),
        };
        assert!(
            err.starts_with("parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: \"bad key\""),
            "{err}"
        );
    }
}
