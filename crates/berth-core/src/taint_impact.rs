//! What a write to a node's taints or its cordon will do, said before it is
//! stored: the API server turns it into `Warning` headers on the write (and
//! on its `dryRun=All` preview), so `kubectl taint`, `cordon`, `apply`,
//! `patch` and `edit` print it.
//!
//! Two questions, each answered with the rule the component that acts on
//! the answer follows:
//!
//! - Which pods bound to the node leave, and when: [`crate::eviction`]'s
//!   due time (the taint eviction controller's rule) on the node before and
//!   after the write. A pod whose eviction the write brings forward is
//!   evicted now or at a time; one that tolerates every taint forever
//!   stays.
//! - Which pending pods lose their last place: the scheduler's filters that
//!   a node's taints, cordon and labels decide (TaintToleration,
//!   NodeUnschedulable, NodeAffinity: [`admits`]), on this node before and
//!   after and on every other node. Resources are not counted: a pod the
//!   node's taints turn away cannot go there whatever is free.
//!
//! The answer is bounded whatever the node carries: counts, the first
//! [`NAMES_SHOWN`] pods of each kind by name, at most [`LINES_SHOWN`]
//! lines of evictions of each kind ([`Impact::warnings`]). Finding the pods
//! and the other nodes (and bounding that search) is the caller's.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, Taint};

use crate::eviction::{EvictionDelay, TaintStarts, applies, is_eviction_taint, pod_due_with_cause};
use crate::feature_gates::FeatureGates;
use crate::node::{taints, unschedulable};
use crate::node_affinity::RequiredNodeAffinity;
use crate::taint_spec::format_taint;
use crate::toleration::{cordon_admits, find_matching_untolerated_taint, is_do_not_schedule};

/// Pods named per line; the rest are counted.
pub const NAMES_SHOWN: usize = 3;
/// Lines per kind of eviction (now: one per taint; later: one per time);
/// the rest are folded into one more line.
pub const LINES_SHOWN: usize = 3;

/// A node before and after a write.
#[derive(Debug, Clone, Copy)]
pub struct NodeChange<'a> {
    pub old: &'a Node,
    /// As it would be stored: after admission (NoExecute taints carry
    /// their `timeAdded`).
    pub new: &'a Node,
    pub now: Timestamp,
    pub gates: FeatureGates,
}

/// What a write does to one pod bound to the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundOutcome {
    /// It tolerates every taint of the node forever.
    Stays,
    /// Its eviction, if any, is not brought forward by the write.
    Unaffected,
    /// Evicted at once because of `taint` (`kubectl taint` syntax); `force`:
    /// deleted without a grace period (the out-of-service taint).
    Now { taint: String, force: bool },
    /// Evicted at `at`, `seconds` after the taint that decides it.
    At { at: Timestamp, seconds: i64 },
}

/// A taint of `after` that `before` does not have as it is (key, value,
/// effect and `timeAdded`) and that `wanted` picks.
fn adds_taint(before: &[Taint], after: &[Taint], wanted: impl Fn(&Taint) -> bool) -> bool {
    after
        .iter()
        .filter(|t| wanted(t))
        .any(|t| !before.contains(t))
}

impl NodeChange<'_> {
    /// The node's name.
    pub fn node_name(&self) -> &str {
        self.new.metadata.name.as_deref().unwrap_or("")
    }

    /// Whether the write may evict anyone: it adds or changes a NoExecute
    /// (or out-of-service) taint. Otherwise no bound pod need be looked at.
    pub fn may_evict(&self) -> bool {
        adds_taint(taints(self.old), taints(self.new), is_eviction_taint)
    }

    /// Whether the write may turn pending pods away: it adds or changes a
    /// NoSchedule or NoExecute taint, or cordons the node.
    pub fn may_turn_away(&self) -> bool {
        (unschedulable(self.new) && !unschedulable(self.old))
            || adds_taint(taints(self.old), taints(self.new), is_do_not_schedule)
    }

    /// What the write does to `pod`, bound to the node.
    pub fn bound_pod(&self, pod: &Pod) -> BoundOutcome {
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let starts = TaintStarts::default();
        let before = pod_due_with_cause(pod, self.old, &starts, self.gates)
            .map(|c| c.due)
            .filter(|d| applies(*d, terminating));
        let Some(after) = pod_due_with_cause(pod, self.new, &starts, self.gates) else {
            return BoundOutcome::Stays;
        };
        // Being deleted already: it leaves with its own grace period.
        if !applies(after.due, terminating) {
            return BoundOutcome::Unaffected;
        }
        // Already due (or gone) before the write, or no sooner after it.
        if let Some(before) = before
            && (before.at <= self.now || before.at <= after.due.at)
        {
            return BoundOutcome::Unaffected;
        }
        if after.due.at <= self.now {
            return BoundOutcome::Now {
                taint: format_taint(after.taint),
                force: after.due.force,
            };
        }
        let seconds = match after.delay {
            EvictionDelay::After(seconds) => seconds,
            EvictionDelay::Now | EvictionDelay::Never => 0,
        };
        BoundOutcome::At {
            at: after.due.at,
            seconds,
        }
    }

    /// Whether the node took `pod` (pending) before the write and does not
    /// after it.
    pub fn turns_away(&self, pod: &Pod) -> bool {
        let affinity = RequiredNodeAffinity::of_pod(pod);
        admits_with(self.old, pod, &affinity, self.gates)
            && !admits_with(self.new, pod, &affinity, self.gates)
    }
}

/// Whether the scheduler's filters that a node's taints, cordon and labels
/// decide let `pod` onto `node`: NodeUnschedulable, TaintToleration and
/// NodeAffinity (required terms and `nodeSelector`).
pub fn admits(node: &Node, pod: &Pod, gates: FeatureGates) -> bool {
    admits_with(node, pod, &RequiredNodeAffinity::of_pod(pod), gates)
}

fn admits_with(
    node: &Node,
    pod: &Pod,
    affinity: &RequiredNodeAffinity,
    gates: FeatureGates,
) -> bool {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    cordon_admits(unschedulable(node), tolerations, gates)
        && find_matching_untolerated_taint(taints(node), tolerations, is_do_not_schedule, gates)
            .is_none()
        && affinity.matches(node)
}

/// The pods of `pods` that none of `nodes` [`admits`], each given with a
/// tag of the caller's (its name, say), which is what comes back. Pods that
/// ask the same of a node (tolerations, `nodeSelector`, node affinity: a
/// workload's pods) are judged once per node; each node is looked at once,
/// and the search ends as soon as every pod has a place. The caller bounds
/// `nodes`.
pub fn without_another_node<T>(
    pods: Vec<(T, &Pod)>,
    nodes: impl IntoIterator<Item = Node>,
    gates: FeatureGates,
) -> Vec<T> {
    struct Alike<'p, T> {
        pod: &'p Pod,
        affinity: RequiredNodeAffinity,
        tags: Vec<T>,
    }
    let mut left: Vec<Alike<T>> = Vec::new();
    for (tag, pod) in pods {
        match left.iter_mut().find(|a| same_placement(a.pod, pod)) {
            Some(alike) => alike.tags.push(tag),
            None => left.push(Alike {
                pod,
                affinity: RequiredNodeAffinity::of_pod(pod),
                tags: vec![tag],
            }),
        }
    }
    let mut nodes = nodes.into_iter();
    while !left.is_empty() {
        let Some(node) = nodes.next() else {
            break;
        };
        left.retain(|a| !admits_with(&node, a.pod, &a.affinity, gates));
    }
    left.into_iter().flat_map(|a| a.tags).collect()
}

/// Whether two pods ask the same of a node's taints, cordon and labels.
fn same_placement(a: &Pod, b: &Pod) -> bool {
    let (a, b) = (a.spec.as_ref(), b.spec.as_ref());
    a.map(|s| &s.tolerations) == b.map(|s| &s.tolerations)
        && a.map(|s| &s.node_selector) == b.map(|s| &s.node_selector)
        && a.and_then(|s| s.affinity.as_ref())
            .map(|a| &a.node_affinity)
            == b.and_then(|s| s.affinity.as_ref())
                .map(|a| &a.node_affinity)
}

/// How many pods, and the first few by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Names {
    count: usize,
    /// The [`NAMES_SHOWN`] smallest, in order.
    first: Vec<String>,
}

impl Names {
    fn add(&mut self, name: &str) {
        self.count += 1;
        let at = self.first.partition_point(|n| n.as_str() < name);
        if at < NAMES_SHOWN {
            self.first.insert(at, name.to_string());
            self.first.truncate(NAMES_SHOWN);
        }
    }

    /// `a, b, c, ... (+9)`.
    fn list(&self) -> String {
        let mut text = self.first.join(", ");
        let more = self.count - self.first.len();
        if more > 0 {
            text.push_str(&format!(", ... (+{more})"));
        }
        text
    }
}

/// How far the search for another node for the turned-away pods went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Every other node was looked at.
    Complete,
    /// Only `checked` of the `total` other nodes were (the caller's bound).
    Partial { checked: usize, total: usize },
}

/// What a write does, gathered pod by pod, then said as warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct Impact {
    node: String,
    now: Timestamp,
    /// By the deciding taint, and whether the pods go without grace.
    evicted_now: BTreeMap<(String, bool), Names>,
    /// Pod counts by due time and the seconds that decide it.
    evicted_later: BTreeMap<(Timestamp, i64), usize>,
    staying: usize,
    homeless: Names,
    search: Search,
    pending_unchecked: usize,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn verb<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// A time of the same UTC day as `now` as `10:45:00Z`, any other in full.
fn clock_time(at: Timestamp, now: Timestamp) -> String {
    const DAY: i64 = 86_400;
    let same_day = at.as_second().div_euclid(DAY) == now.as_second().div_euclid(DAY);
    let format = if same_day {
        "%H:%M:%SZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    at.strftime(format).to_string()
}

impl Impact {
    pub fn new(change: &NodeChange) -> Impact {
        Impact {
            node: change.node_name().to_string(),
            now: change.now,
            evicted_now: BTreeMap::new(),
            evicted_later: BTreeMap::new(),
            staying: 0,
            homeless: Names::default(),
            search: Search::Complete,
            pending_unchecked: 0,
        }
    }

    /// A bound pod (`namespace/name`) and what the write does to it.
    pub fn add_bound(&mut self, pod: &str, outcome: BoundOutcome) {
        match outcome {
            BoundOutcome::Stays => self.staying += 1,
            BoundOutcome::Unaffected => {}
            BoundOutcome::Now { taint, force } => {
                self.evicted_now.entry((taint, force)).or_default().add(pod)
            }
            BoundOutcome::At { at, seconds } => {
                *self.evicted_later.entry((at, seconds)).or_default() += 1
            }
        }
    }

    /// A pending pod the write turns away that no other node takes.
    pub fn add_homeless(&mut self, pod: &str) {
        self.homeless.add(pod);
    }

    /// How far the search for other nodes went.
    pub fn searched(&mut self, search: Search) {
        self.search = search;
    }

    /// Pending pods beyond the caller's bound, not looked at.
    pub fn pending_unchecked(&mut self, count: usize) {
        self.pending_unchecked = count;
    }

    fn evicted(&self) -> usize {
        self.evicted_now.values().map(|n| n.count).sum::<usize>()
            + self.evicted_later.values().sum::<usize>()
    }

    /// The warnings, a few lines at most.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut now_groups = self.evicted_now.iter();
        for ((taint, force), names) in now_groups.by_ref().take(LINES_SHOWN) {
            let n = names.count;
            let how = if *force {
                "deleted now without a grace period"
            } else {
                "evicted now"
            };
            lines.push(format!(
                "{} {} not tolerate {taint} and {} {how}: {}",
                plural(n, "pod", "pods"),
                verb(n, "does", "do"),
                verb(n, "is", "are"),
                names.list()
            ));
        }
        let more_now: usize = now_groups.map(|(_, names)| names.count).sum();
        if more_now > 0 {
            lines.push(format!(
                "{more_now} more {} evicted now",
                verb(more_now, "pod is", "pods are")
            ));
        }
        let mut later_groups = self.evicted_later.iter();
        for ((at, seconds), n) in later_groups.by_ref().take(LINES_SHOWN) {
            lines.push(format!(
                "{} {} evicted at {} (tolerationSeconds {seconds})",
                plural(*n, "pod", "pods"),
                verb(*n, "is", "are"),
                clock_time(*at, self.now)
            ));
        }
        let rest: Vec<_> = later_groups.collect();
        if let Some(((last, _), _)) = rest.last() {
            let n: usize = rest.iter().map(|(_, n)| **n).sum();
            lines.push(format!(
                "{n} more {} evicted later, the last at {}",
                verb(n, "pod is", "pods are"),
                clock_time(*last, self.now)
            ));
        }
        if self.staying > 0 && self.evicted() > 0 {
            lines.push(format!(
                "{} on {} {} its taints and {}",
                plural(self.staying, "other pod", "other pods"),
                self.node,
                verb(self.staying, "tolerates", "tolerate"),
                verb(self.staying, "stays", "stay")
            ));
        }
        let n = self.homeless.count;
        if n > 0 {
            let where_ = match self.search {
                Search::Complete => "can no longer be scheduled anywhere".to_string(),
                Search::Partial { checked, total } => format!(
                    "can no longer be scheduled on {} nor on any of the {checked} other nodes checked (of {total})",
                    self.node
                ),
            };
            lines.push(format!(
                "{} {where_}: {}",
                plural(n, "pending pod", "pending pods"),
                self.homeless.list()
            ));
        }
        if self.pending_unchecked > 0 {
            lines.push(format!(
                "{} more pending {} not checked",
                self.pending_unchecked,
                verb(self.pending_unchecked, "pod was", "pods were")
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{make_node, make_pod, t, taint, tol, tol_secs};
    use crate::toleration::{EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, OP_EQUAL, OP_EXISTS};
    use crate::well_known_taints::{TAINT_NODE_OUT_OF_SERVICE, TAINT_NODE_UNSCHEDULABLE};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const NE: &str = EFFECT_NO_EXECUTE;
    const NS: &str = EFFECT_NO_SCHEDULE;
    const GATES: FeatureGates = FeatureGates {
        taint_toleration_comparison_operators: true,
        max_unavailable_stateful_set: true,
    };

    fn added_at(mut taint: Taint, seconds: i64) -> Taint {
        taint.time_added = Some(Time(t(seconds)));
        taint
    }

    fn node(taints: Vec<Taint>) -> Node {
        make_node().name("n1").taints(taints).obj()
    }

    /// A pod bound at t(0).
    fn bound(name: &str, tolerations: Vec<k8s_openapi::api::core::v1::Toleration>) -> Pod {
        make_pod()
            .name(name)
            .node("n1")
            .tolerations(tolerations)
            .condition("PodScheduled", "True", t(0))
            .obj()
    }

    #[test]
    fn a_bound_pod_is_told_what_the_eviction_controller_will_do() {
        let gpu = || taint("dedicated", "gpu", NE);
        struct Case {
            name: &'static str,
            before: Vec<Taint>,
            after: Vec<Taint>,
            pod: Pod,
            want: BoundOutcome,
        }
        let cases = vec![
            Case {
                name: "untolerated new NoExecute taint: now",
                before: vec![],
                after: vec![added_at(gpu(), 100)],
                pod: bound("p", vec![]),
                want: BoundOutcome::Now {
                    taint: "dedicated=gpu:NoExecute".into(),
                    force: false,
                },
            },
            Case {
                name: "tolerated for 300 s: at the taint's time plus 300 s",
                before: vec![],
                after: vec![added_at(gpu(), 100)],
                pod: bound("p", vec![tol_secs("dedicated", OP_EXISTS, "", NE, 300)]),
                want: BoundOutcome::At {
                    at: t(400),
                    seconds: 300,
                },
            },
            Case {
                name: "tolerated forever: stays",
                before: vec![],
                after: vec![added_at(gpu(), 100)],
                pod: bound("p", vec![tol("dedicated", OP_EQUAL, "gpu", NE)]),
                want: BoundOutcome::Stays,
            },
            Case {
                name: "a NoSchedule taint evicts nobody",
                before: vec![],
                after: vec![taint("dedicated", "gpu", NS)],
                pod: bound("p", vec![]),
                want: BoundOutcome::Stays,
            },
            Case {
                name: "already due under the old taints: not this write's doing",
                before: vec![added_at(taint("old", "", NE), 50)],
                after: vec![added_at(taint("old", "", NE), 50), added_at(gpu(), 100)],
                pod: bound("p", vec![]),
                want: BoundOutcome::Unaffected,
            },
            Case {
                name: "an earlier eviction stays the earlier one",
                before: vec![added_at(taint("old", "", NE), 50)],
                after: vec![added_at(taint("old", "", NE), 50), added_at(gpu(), 100)],
                pod: bound(
                    "p",
                    vec![
                        tol_secs("old", OP_EXISTS, "", NE, 60),
                        tol_secs("dedicated", OP_EXISTS, "", NE, 600),
                    ],
                ),
                want: BoundOutcome::Unaffected,
            },
            Case {
                name: "a shorter toleration brings the eviction forward",
                before: vec![added_at(taint("old", "", NE), 50)],
                after: vec![added_at(taint("old", "", NE), 50), added_at(gpu(), 100)],
                pod: bound(
                    "p",
                    vec![
                        tol_secs("old", OP_EXISTS, "", NE, 3600),
                        tol_secs("dedicated", OP_EXISTS, "", NE, 60),
                    ],
                ),
                want: BoundOutcome::At {
                    at: t(160),
                    seconds: 60,
                },
            },
            Case {
                name: "an untolerated out-of-service taint deletes without grace",
                before: vec![],
                after: vec![taint(TAINT_NODE_OUT_OF_SERVICE, "nodeshutdown", NS)],
                pod: bound("p", vec![]),
                want: BoundOutcome::Now {
                    taint: format!("{TAINT_NODE_OUT_OF_SERVICE}=nodeshutdown:NoSchedule"),
                    force: true,
                },
            },
            Case {
                name: "a terminating pod is left to its grace period",
                before: vec![],
                after: vec![added_at(gpu(), 100)],
                pod: make_pod().name("p").node("n1").terminating(t(90)).obj(),
                want: BoundOutcome::Unaffected,
            },
        ];
        for case in cases {
            let (old, new) = (node(case.before), node(case.after));
            let change = NodeChange {
                old: &old,
                new: &new,
                now: t(100),
                gates: GATES,
            };
            assert_eq!(change.bound_pod(&case.pod), case.want, "{}", case.name);
        }
    }

    #[test]
    fn a_write_is_looked_into_only_when_it_adds_something() {
        struct Case {
            name: &'static str,
            old: Node,
            new: Node,
            may_evict: bool,
            may_turn_away: bool,
        }
        let ne = added_at(taint("k", "v", NE), 5);
        let cases = vec![
            Case {
                name: "a new NoExecute taint",
                old: node(vec![]),
                new: node(vec![ne.clone()]),
                may_evict: true,
                may_turn_away: true,
            },
            Case {
                name: "the same taints",
                old: node(vec![ne.clone()]),
                new: node(vec![ne.clone()]),
                may_evict: false,
                may_turn_away: false,
            },
            Case {
                name: "a taint removed",
                old: node(vec![ne.clone()]),
                new: node(vec![]),
                may_evict: false,
                may_turn_away: false,
            },
            Case {
                name: "a new NoSchedule taint",
                old: node(vec![]),
                new: node(vec![taint("k", "v", NS)]),
                may_evict: false,
                may_turn_away: true,
            },
            Case {
                name: "a PreferNoSchedule taint",
                old: node(vec![]),
                new: node(vec![taint("k", "v", "PreferNoSchedule")]),
                may_evict: false,
                may_turn_away: false,
            },
            Case {
                name: "cordoned",
                old: node(vec![]),
                new: make_node().name("n1").unschedulable(true).obj(),
                may_evict: false,
                may_turn_away: true,
            },
        ];
        for case in cases {
            let change = NodeChange {
                old: &case.old,
                new: &case.new,
                now: t(10),
                gates: GATES,
            };
            assert_eq!(change.may_evict(), case.may_evict, "{}", case.name);
            assert_eq!(change.may_turn_away(), case.may_turn_away, "{}", case.name);
        }
    }

    #[test]
    fn pending_pods_are_turned_away_by_taints_cordon_and_kept_by_selectors() {
        let plain = make_pod().name("plain").obj();
        let tolerates_cordon = make_pod()
            .name("daemon")
            .tolerations(vec![tol(TAINT_NODE_UNSCHEDULABLE, OP_EXISTS, "", NS)])
            .obj();
        let elsewhere = make_pod()
            .name("elsewhere")
            .node_selector(&[("pool", "other")])
            .obj();
        let n1 = make_node().name("n1").label("pool", "a").obj();
        let cordoned = make_node()
            .name("n1")
            .label("pool", "a")
            .unschedulable(true)
            .obj();
        let tainted = make_node()
            .name("n1")
            .label("pool", "a")
            .taints(vec![taint("k", "", NS)])
            .obj();
        for (new, pod, want) in [
            (&cordoned, &plain, true),
            (&cordoned, &tolerates_cordon, false),
            (&cordoned, &elsewhere, false),
            (&tainted, &plain, true),
            (&tainted, &tolerates_cordon, true),
        ] {
            let change = NodeChange {
                old: &n1,
                new,
                now: t(0),
                gates: GATES,
            };
            assert_eq!(
                change.turns_away(pod),
                want,
                "{:?} on {:?}",
                pod.metadata.name,
                new.spec
            );
        }
    }

    #[test]
    fn another_node_is_searched_for_until_every_pod_has_one() {
        let pinned = make_pod()
            .name("pinned")
            .node_selector(&[("pool", "a")])
            .obj();
        let free = make_pod().name("free").obj();
        let others = || {
            vec![
                make_node()
                    .name("n2")
                    .label("pool", "b")
                    .taints(vec![taint("x", "", NE)])
                    .obj(),
                make_node().name("n3").label("pool", "b").obj(),
            ]
        };
        let pinned_too = make_pod()
            .name("pinned-too")
            .node_selector(&[("pool", "a")])
            .obj();
        let pods = vec![
            ("pinned", &pinned),
            ("free", &free),
            ("pinned-too", &pinned_too),
        ];
        let left = without_another_node(pods, others(), GATES);
        assert_eq!(left, ["pinned", "pinned-too"]);
        // Nothing left to place: the nodes are not looked at.
        let none: Vec<&str> =
            without_another_node(Vec::new(), std::iter::from_fn(|| panic!("not read")), GATES);
        assert!(none.is_empty());
    }

    #[test]
    fn warnings_are_a_few_lines_with_counts_and_the_first_names() {
        let change_node = node(vec![]);
        let change = NodeChange {
            old: &change_node,
            new: &change_node,
            now: "2026-01-01T10:40:00Z"
                .parse()
                .unwrap_or(Timestamp::UNIX_EPOCH),
            gates: GATES,
        };
        let at = |s: &str| s.parse::<Timestamp>().unwrap_or(Timestamp::UNIX_EPOCH);
        let mut impact = Impact::new(&change);
        for i in (1..=12).rev() {
            impact.add_bound(
                &format!("default/web-{i:02}"),
                BoundOutcome::Now {
                    taint: "dedicated=gpu:NoExecute".into(),
                    force: false,
                },
            );
        }
        for _ in 0..3 {
            impact.add_bound(
                "default/api",
                BoundOutcome::At {
                    at: at("2026-01-01T10:45:00Z"),
                    seconds: 300,
                },
            );
        }
        for (i, when) in [
            "2026-01-01T11:00:00Z",
            "2026-01-01T12:00:00Z",
            "2026-01-01T13:00:00Z",
            "2026-01-02T13:00:00Z",
        ]
        .iter()
        .enumerate()
        {
            impact.add_bound(
                &format!("default/slow-{i}"),
                BoundOutcome::At {
                    at: at(when),
                    seconds: 1000 + i as i64,
                },
            );
        }
        impact.add_bound("default/daemon", BoundOutcome::Stays);
        impact.add_bound("default/old", BoundOutcome::Unaffected);
        impact.add_homeless("default/pending-b");
        impact.add_homeless("default/pending-a");
        assert_eq!(
            impact.warnings(),
            [
                "12 pods do not tolerate dedicated=gpu:NoExecute and are evicted now: default/web-01, default/web-02, default/web-03, ... (+9)",
                "3 pods are evicted at 10:45:00Z (tolerationSeconds 300)",
                "1 pod is evicted at 11:00:00Z (tolerationSeconds 1000)",
                "1 pod is evicted at 12:00:00Z (tolerationSeconds 1001)",
                "2 more pods are evicted later, the last at 2026-01-02T13:00:00Z",
                "1 other pod on n1 tolerates its taints and stays",
                "2 pending pods can no longer be scheduled anywhere: default/pending-a, default/pending-b",
            ]
        );
    }

    #[test]
    fn a_bounded_search_says_how_far_it_went() {
        let n1 = node(vec![]);
        let change = NodeChange {
            old: &n1,
            new: &n1,
            now: t(0),
            gates: GATES,
        };
        let mut impact = Impact::new(&change);
        impact.add_bound(
            "ns/p",
            BoundOutcome::Now {
                taint: "node.kubernetes.io/out-of-service:NoExecute".into(),
                force: true,
            },
        );
        impact.add_homeless("ns/q");
        impact.searched(Search::Partial {
            checked: 5000,
            total: 7000,
        });
        impact.pending_unchecked(20);
        assert_eq!(
            impact.warnings(),
            [
                "1 pod does not tolerate node.kubernetes.io/out-of-service:NoExecute and is deleted now without a grace period: ns/p",
                "1 pending pod can no longer be scheduled on n1 nor on any of the 5000 other nodes checked (of 7000): ns/q",
                "20 more pending pods were not checked",
            ]
        );
        assert!(Impact::new(&change).warnings().is_empty(), "nothing to say");
    }
}
