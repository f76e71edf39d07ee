//! TaintToleration: a node's NoSchedule and NoExecute taints keep off pods
//! that do not tolerate them (Filter), and nodes with fewer untolerated
//! PreferNoSchedule taints score higher (Score). Ported from upstream
//! `plugins/tainttoleration/taint_toleration.go`, including the
//! `TaintTolerationComparisonOperators` gate for `Gt`/`Lt` tolerations.

use berth_core::FeatureGates;
use berth_core::toleration::{
    EFFECT_PREFER_NO_SCHEDULE, find_matching_untolerated_taint, is_do_not_schedule,
    tolerations_tolerate_taint,
};
use k8s_openapi::api::core::v1::{Taint, Toleration};

use std::sync::atomic::{AtomicU8, Ordering};

use crate::framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Snapshot, Status,
    default_normalize_score, score_each,
};
use crate::taint_sets::TaintSetId;

/// The plugin's registry name.
pub const NAME: &str = "TaintToleration";

/// The weight the default scheduler profile gives this plugin's score.
pub const DEFAULT_WEIGHT: i64 = 3;

/// The Filter reason. Recent upstream no longer names the taint in the
/// message (older versions said `node(s) had untolerated taint {key: value}`),
/// so that identical reasons aggregate in the FitError histogram.
pub const ERR_REASON_UNTOLERATED: &str = "node(s) had untolerated taint(s)";

/// Upstream's `ErrReasonNotMatch`, still defined there though unused.
pub const ERR_REASON_NOT_MATCH: &str = "node(s) had taints that the pod didn't tolerate";

/// The CycleState key of the PreScore data.
pub const PRE_SCORE_STATE_KEY: &str = "PreScoreTaintToleration";

/// The TaintToleration plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaintToleration {
    pub gates: FeatureGates,
}

/// What PreScore computes once per pod: the tolerations that can tolerate a
/// PreferNoSchedule taint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreScoreState {
    pub tolerations_prefer_no_schedule: Vec<Toleration>,
}

/// `getAllTolerationPreferNoSchedule`: tolerations whose effect is
/// PreferNoSchedule, or empty (an empty effect matches every effect).
pub fn tolerations_prefer_no_schedule(tolerations: &[Toleration]) -> Vec<Toleration> {
    tolerations
        .iter()
        .filter(|t| {
            let effect = t.effect.as_deref().unwrap_or("");
            effect.is_empty() || effect == EFFECT_PREFER_NO_SCHEDULE
        })
        .cloned()
        .collect()
}

/// `countIntolerableTaintsPreferNoSchedule`: PreferNoSchedule taints none
/// of the tolerations tolerate.
pub fn count_intolerable_taints_prefer_no_schedule(
    taints: &[Taint],
    tolerations: &[Toleration],
    gates: FeatureGates,
) -> usize {
    taints
        .iter()
        .filter(|t| t.effect == EFFECT_PREFER_NO_SCHEDULE)
        .filter(|t| !tolerations_tolerate_taint(tolerations, t, gates))
        .count()
}

fn node_taints(node: &NodeInfo) -> &[Taint] {
    node.node()
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

impl TaintToleration {
    pub fn new(gates: FeatureGates) -> Self {
        TaintToleration { gates }
    }
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn node_local(&self) -> bool {
        true
    }
}

/// The CycleState key of the per-pod verdict cache.
pub const PRE_FILTER_STATE_KEY: &str = "PreFilterTaintToleration";

/// How many interned taint lists a pod's verdict cache covers; nodes whose
/// list lies beyond are judged directly (still correct, only slower).
pub const VERDICT_CACHE_SLOTS: usize = 1024;

const UNDECIDED: u8 = 0;
const TOLERATED: u8 = 1;
const UNTOLERATED: u8 = 2;

/// berth's addition to upstream's plugin: per pod, the verdict for each
/// interned taint list ([`crate::taint_sets`]), filled the first time a
/// node with that list is filtered. Atomics let nodes be filtered in
/// parallel; a race only computes a verdict twice, to the same value.
#[derive(Debug)]
pub struct VerdictCache(Vec<AtomicU8>);

impl VerdictCache {
    fn new() -> Self {
        VerdictCache(
            (0..VERDICT_CACHE_SLOTS)
                .map(|_| AtomicU8::new(UNDECIDED))
                .collect(),
        )
    }
}

impl TaintToleration {
    fn tolerates_all(&self, pod: &PodInfo, taints: &[Taint]) -> bool {
        find_matching_untolerated_taint(taints, pod.tolerations(), is_do_not_schedule, self.gates)
            .is_none()
    }

    #[inline]
    fn verdict(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> bool {
        if node.taint_set == TaintSetId::UNTAINTED {
            return true;
        }
        let slot = node.taint_set.index().and_then(|i| {
            state
                .read::<VerdictCache>(PRE_FILTER_STATE_KEY)
                .and_then(|cache| cache.0.get(i))
        });
        let Some(slot) = slot else {
            return self.tolerates_all(pod, node_taints(node));
        };
        match slot.load(Ordering::Relaxed) {
            TOLERATED => true,
            UNTOLERATED => false,
            _ => {
                let tolerated = self.tolerates_all(pod, node_taints(node));
                slot.store(
                    if tolerated { TOLERATED } else { UNTOLERATED },
                    Ordering::Relaxed,
                );
                tolerated
            }
        }
    }
}

impl PreFilterPlugin for TaintToleration {
    /// Upstream's plugin has no PreFilter; berth's sets up the verdict
    /// cache here, so Filter costs a table lookup per node.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(PRE_FILTER_STATE_KEY, VerdictCache::new());
        (None, Status::success())
    }
}

impl FilterPlugin for TaintToleration {
    #[inline]
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if self.verdict(state, pod, node) {
            Status::success()
        } else {
            // Preempting pods never removes a taint.
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_UNTOLERATED)
                .with_plugin(NAME)
        }
    }
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot<'_>,
        _nodes: &[&NodeInfo],
    ) -> Status {
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                tolerations_prefer_no_schedule: tolerations_prefer_no_schedule(pod.tolerations()),
            },
        );
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    /// The raw score is the number of untolerated PreferNoSchedule taints;
    /// NormalizeScore reverses it so fewer is better.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut scores = Vec::with_capacity(1);
        self.score_all(state, pod, &[node], &mut scores)?;
        Ok(scores.first().map_or(0, |s| s.score))
    }

    fn score_all(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut Vec<NodeScore>,
    ) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(Status::error(format!(
                "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
            .with_plugin(NAME));
        };
        score_each(nodes, scores, |node| {
            if node.taint_set == TaintSetId::UNTAINTED {
                // No taints: nothing to count, and no need to read the node.
                return Ok(0);
            }
            let count = count_intolerable_taints_prefer_no_schedule(
                node_taints(node),
                &s.tolerations_prefer_no_schedule,
                self.gates,
            );
            Ok(i64::try_from(count).unwrap_or(i64::MAX))
        })
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taint_sets::TaintSets;
    use berth_core::test_util::{make_node, make_pod, taint, tol};
    use berth_core::toleration::{EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE};
    use k8s_openapi::api::core::v1::{Node, Pod};
    use proptest::prelude::*;

    const NS: &str = EFFECT_NO_SCHEDULE;
    const PNS: &str = EFFECT_PREFER_NO_SCHEDULE;
    const NE: &str = EFFECT_NO_EXECUTE;
    const SLA: &str = "node.kubernetes.io/sla";
    const OFF: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: false,
        max_unavailable_stateful_set: true,
    };
    const ON: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: true,
        max_unavailable_stateful_set: true,
    };

    fn node_with_taints(name: &str, taints: Vec<Taint>) -> NodeInfo {
        NodeInfo::from(make_node().name(name).taints(taints).obj())
    }

    fn pod_with_tolerations(tolerations: Vec<Toleration>) -> PodInfo {
        PodInfo::from(make_pod().tolerations(tolerations).obj())
    }

    fn untolerated() -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_UNTOLERATED).with_plugin(NAME)
    }

    fn run_score(plugin: TaintToleration, pod: &PodInfo, nodes: &[NodeInfo]) -> Vec<(String, i64)> {
        let mut state = CycleState::new();
        assert!(
            plugin
                .pre_score(
                    &mut state,
                    pod,
                    &Snapshot::of_nodes(nodes),
                    &nodes.iter().collect::<Vec<_>>()
                )
                .is_success()
        );
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .map(|n| match plugin.score(&state, pod, n) {
                Ok(score) => NodeScore {
                    name: n.name().to_string(),
                    score,
                },
                Err(status) => panic!("unexpected error: {status}"),
            })
            .collect();
        assert!(
            plugin
                .normalize_score(&state, pod, &mut scores)
                .is_success()
        );
        scores.into_iter().map(|s| (s.name, s.score)).collect()
    }

    /// Upstream `TestTaintTolerationScore`, plus berth rows for Gt/Lt.
    #[test]
    fn taint_toleration_score_as_upstream() {
        struct Case {
            name: &'static str,
            gates: FeatureGates,
            pod: PodInfo,
            nodes: Vec<NodeInfo>,
            want: Vec<(&'static str, i64)>,
        }
        let cases = vec![
            Case {
                name: "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Equal", "bar", PNS)]),
                nodes: vec![
                    node_with_taints("nodeA", vec![taint("foo", "bar", PNS)]),
                    node_with_taints("nodeB", vec![taint("foo", "blah", PNS)]),
                ],
                want: vec![("nodeA", MAX_NODE_SCORE), ("nodeB", 0)],
            },
            Case {
                name: "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable taints a node has",
                gates: OFF,
                pod: pod_with_tolerations(vec![
                    tol("cpu-type", "Equal", "arm64", PNS),
                    tol("disk-type", "Equal", "ssd", PNS),
                ]),
                nodes: vec![
                    node_with_taints("nodeA", vec![]),
                    node_with_taints("nodeB", vec![taint("cpu-type", "arm64", PNS)]),
                    node_with_taints(
                        "nodeC",
                        vec![
                            taint("cpu-type", "arm64", PNS),
                            taint("disk-type", "ssd", PNS),
                        ],
                    ),
                ],
                want: vec![
                    ("nodeA", MAX_NODE_SCORE),
                    ("nodeB", MAX_NODE_SCORE),
                    ("nodeC", MAX_NODE_SCORE),
                ],
            },
            Case {
                name: "the more intolerable taints a node has, the lower score it gets.",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Equal", "bar", PNS)]),
                nodes: vec![
                    node_with_taints("nodeA", vec![]),
                    node_with_taints("nodeB", vec![taint("cpu-type", "arm64", PNS)]),
                    node_with_taints(
                        "nodeC",
                        vec![
                            taint("cpu-type", "arm64", PNS),
                            taint("disk-type", "ssd", PNS),
                        ],
                    ),
                ],
                want: vec![("nodeA", MAX_NODE_SCORE), ("nodeB", 50), ("nodeC", 0)],
            },
            Case {
                name: "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority function",
                gates: OFF,
                pod: pod_with_tolerations(vec![
                    tol("cpu-type", "Equal", "arm64", NS),
                    tol("disk-type", "Equal", "ssd", NS),
                ]),
                nodes: vec![
                    node_with_taints("nodeA", vec![]),
                    node_with_taints("nodeB", vec![taint("cpu-type", "arm64", NS)]),
                    node_with_taints(
                        "nodeC",
                        vec![
                            taint("cpu-type", "arm64", PNS),
                            taint("disk-type", "ssd", PNS),
                        ],
                    ),
                ],
                want: vec![
                    ("nodeA", MAX_NODE_SCORE),
                    ("nodeB", MAX_NODE_SCORE),
                    ("nodeC", 0),
                ],
            },
            Case {
                name: "Default behaviour No taints and tolerations, lands on node with no taints",
                gates: OFF,
                pod: pod_with_tolerations(vec![]),
                nodes: vec![
                    node_with_taints("nodeA", vec![]),
                    node_with_taints("nodeB", vec![taint("cpu-type", "arm64", PNS)]),
                ],
                want: vec![("nodeA", MAX_NODE_SCORE), ("nodeB", 0)],
            },
            // berth additions: empty-effect tolerations count, Gt/Lt behind the gate.
            Case {
                name: "a toleration with an empty effect tolerates PreferNoSchedule taints",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Exists", "", "")]),
                nodes: vec![
                    node_with_taints("nodeA", vec![taint("foo", "x", PNS)]),
                    node_with_taints("nodeB", vec![taint("bar", "x", PNS)]),
                ],
                want: vec![("nodeA", MAX_NODE_SCORE), ("nodeB", 0)],
            },
            Case {
                name: "Gt toleration tolerates a PreferNoSchedule taint above the threshold with the gate on",
                gates: ON,
                pod: pod_with_tolerations(vec![tol(SLA, "Gt", "750", PNS)]),
                nodes: vec![
                    node_with_taints("nodeA", vec![taint(SLA, "950", PNS)]),
                    node_with_taints("nodeB", vec![taint(SLA, "500", PNS)]),
                ],
                want: vec![("nodeA", MAX_NODE_SCORE), ("nodeB", 0)],
            },
            Case {
                name: "Gt toleration tolerates nothing with the gate off",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol(SLA, "Gt", "750", PNS)]),
                nodes: vec![
                    node_with_taints("nodeA", vec![taint(SLA, "950", PNS)]),
                    node_with_taints("nodeB", vec![]),
                ],
                want: vec![("nodeA", 0), ("nodeB", MAX_NODE_SCORE)],
            },
        ];
        for Case {
            name,
            gates,
            pod,
            nodes,
            want,
        } in cases
        {
            let got = run_score(TaintToleration::new(gates), &pod, &nodes);
            let want: Vec<(String, i64)> =
                want.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// Upstream `TestTaintTolerationFilter` with the current reason, plus
    /// berth rows for NoExecute and the Gt/Lt operators on both gate settings.
    #[test]
    fn taint_toleration_filter_as_upstream() {
        struct Case {
            name: &'static str,
            gates: FeatureGates,
            pod: PodInfo,
            node: NodeInfo,
            want: Status,
        }
        let cases = vec![
            Case {
                name: "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
                gates: OFF,
                pod: pod_with_tolerations(vec![]),
                node: node_with_taints("nodeA", vec![taint("dedicated", "user1", NS)]),
                want: untolerated(),
            },
            Case {
                name: "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("dedicated", "", "user1", NS)]),
                node: node_with_taints("nodeA", vec![taint("dedicated", "user1", NS)]),
                want: Status::success(),
            },
            Case {
                name: "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("dedicated", "Equal", "user2", NS)]),
                node: node_with_taints("nodeA", vec![taint("dedicated", "user1", NS)]),
                want: untolerated(),
            },
            Case {
                name: "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Exists", "", NS)]),
                node: node_with_taints("nodeA", vec![taint("foo", "bar", NS)]),
                want: Status::success(),
            },
            Case {
                name: "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![
                    tol("dedicated", "Equal", "user2", NS),
                    tol("foo", "Exists", "", NS),
                ]),
                node: node_with_taints(
                    "nodeA",
                    vec![taint("dedicated", "user2", NS), taint("foo", "bar", NS)],
                ),
                want: Status::success(),
            },
            Case {
                name: "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Equal", "bar", PNS)]),
                node: node_with_taints("nodeA", vec![taint("foo", "bar", NS)]),
                want: untolerated(),
            },
            Case {
                name: "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Equal", "bar", "")]),
                node: node_with_taints("nodeA", vec![taint("foo", "bar", NS)]),
                want: Status::success(),
            },
            Case {
                name: "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("dedicated", "Equal", "user2", NS)]),
                node: node_with_taints("nodeA", vec![taint("dedicated", "user1", PNS)]),
                want: Status::success(),
            },
            Case {
                name: "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![]),
                node: node_with_taints("nodeA", vec![taint("dedicated", "user1", PNS)]),
                want: Status::success(),
            },
            // berth additions.
            Case {
                name: "an untolerated NoExecute taint rejects the node",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol("foo", "Exists", "", NS)]),
                node: node_with_taints("nodeA", vec![taint("foo", "bar", NE)]),
                want: untolerated(),
            },
            Case {
                name: "a node without taints accepts any pod",
                gates: OFF,
                pod: PodInfo::from(Pod::default()),
                node: NodeInfo::from(Node::default()),
                want: Status::success(),
            },
            Case {
                name: "Gt toleration with the taint value above the threshold, gate on",
                gates: ON,
                pod: pod_with_tolerations(vec![tol(SLA, "Gt", "750", NS)]),
                node: node_with_taints("nodeA", vec![taint(SLA, "950", NS)]),
                want: Status::success(),
            },
            Case {
                name: "Gt toleration with the taint value below the threshold, gate on",
                gates: ON,
                pod: pod_with_tolerations(vec![tol(SLA, "Gt", "950", NS)]),
                node: node_with_taints("nodeA", vec![taint(SLA, "800", NS)]),
                want: untolerated(),
            },
            Case {
                name: "Lt toleration with the taint value below the threshold, gate on",
                gates: ON,
                pod: pod_with_tolerations(vec![tol(SLA, "Lt", "950", NS)]),
                node: node_with_taints("nodeA", vec![taint(SLA, "800", NS)]),
                want: Status::success(),
            },
            Case {
                name: "Lt toleration with the taint value above the threshold, gate on",
                gates: ON,
                pod: pod_with_tolerations(vec![tol(SLA, "Lt", "800", NS)]),
                node: node_with_taints("nodeA", vec![taint(SLA, "950", NS)]),
                want: untolerated(),
            },
            Case {
                name: "Gt toleration that would match, gate off",
                gates: OFF,
                pod: pod_with_tolerations(vec![tol(SLA, "Gt", "750", NS)]),
                node: node_with_taints("nodeA", vec![taint(SLA, "950", NS)]),
                want: untolerated(),
            },
            Case {
                name: "Gt toleration with a non-numeric taint value, gate on",
                gates: ON,
                pod: pod_with_tolerations(vec![tol(SLA, "Gt", "750", NS)]),
                node: node_with_taints("nodeA", vec![taint(SLA, "high", NS)]),
                want: untolerated(),
            },
        ];
        for Case {
            name,
            gates,
            pod,
            node,
            want,
        } in cases
        {
            let plugin = TaintToleration::new(gates);
            let got = plugin.filter(&CycleState::new(), &pod, &node);
            assert_eq!(got, want, "{name}");
            // berth's cached path: interned node, PreFilter, then a first
            // (computing) and a second (cached) Filter give the same answer.
            let mut sets = TaintSets::new();
            let interned = NodeInfo::interned(node.node_arc().clone(), &mut sets);
            let mut state = CycleState::new();
            let (_, pre) = plugin.pre_filter(
                &mut state,
                &pod,
                &Snapshot::of_nodes(std::slice::from_ref(&interned)),
            );
            assert!(pre.is_success(), "{name}");
            for round in ["computed", "cached"] {
                assert_eq!(
                    plugin.filter(&state, &pod, &interned),
                    want,
                    "{name} ({round})"
                );
            }
        }
    }

    fn any_taint() -> impl Strategy<Value = Taint> {
        (
            prop::sample::select(vec!["a", "b", "c"]),
            prop::sample::select(vec!["", "1", "2", "950"]),
            prop::sample::select(vec![NS, "PreferNoSchedule", NE]),
        )
            .prop_map(|(k, v, e)| taint(k, v, e))
    }

    fn any_toleration() -> impl Strategy<Value = Toleration> {
        (
            prop::sample::select(vec!["", "a", "b"]),
            prop::sample::select(vec!["", "Equal", "Exists", "Gt", "Lt"]),
            prop::sample::select(vec!["", "1", "2", "900"]),
            prop::sample::select(vec!["", NS, NE]),
        )
            .prop_map(|(k, o, v, e)| tol(k, o, v, e))
    }

    proptest! {
        /// Many nodes sharing few taint lists: the interned, cached Filter
        /// agrees with upstream's per-node Filter on every node.
        #[test]
        fn cached_filter_agrees_with_the_direct_filter(
            lists in prop::collection::vec(prop::collection::vec(any_taint(), 0..3), 1..5),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 1..40),
            tolerations in prop::collection::vec(any_toleration(), 0..3),
        ) {
            let plugin = TaintToleration::new(ON);
            let pod = pod_with_tolerations(tolerations);
            let mut sets = TaintSets::new();
            let nodes: Vec<NodeInfo> = picks
                .iter()
                .enumerate()
                .map(|(i, pick)| {
                    let node = node_with_taints(&format!("n{i}"), pick.get(&lists).clone());
                    NodeInfo::interned(node.node_arc().clone(), &mut sets)
                })
                .collect();
            let mut state = CycleState::new();
            let _ = plugin.pre_filter(&mut state, &pod, &Snapshot::of_nodes(&nodes));
            for node in &nodes {
                let direct = plugin.filter(&CycleState::new(), &pod, &NodeInfo::new(node.node_arc().clone()));
                prop_assert_eq!(plugin.filter(&state, &pod, node), direct);
            }
        }
    }

    #[test]
    fn score_without_pre_score_is_an_error_not_a_panic() {
        let pod = pod_with_tolerations(vec![]);
        let node = node_with_taints("n", vec![]);
        let err = match TaintToleration::default().score(&CycleState::new(), &pod, &node) {
            Err(status) => status,
            Ok(s) => panic!("want error, got score {s}"),
        };
        assert_eq!(err.code, Code::Error);
        assert_eq!(
            err.message(),
            "failed to read \"PreScoreTaintToleration\" from cycleState: not found"
        );
    }

    #[test]
    fn pre_score_keeps_only_prefer_no_schedule_and_empty_effect_tolerations() {
        let kept = tolerations_prefer_no_schedule(&[
            tol("a", "Exists", "", NS),
            tol("b", "Exists", "", PNS),
            tol("c", "Exists", "", ""),
            tol("d", "Exists", "", NE),
        ]);
        let keys: Vec<&str> = kept.iter().filter_map(|t| t.key.as_deref()).collect();
        assert_eq!(keys, vec!["b", "c"]);
    }
}
