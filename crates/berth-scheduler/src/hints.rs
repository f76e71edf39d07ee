//! Cluster events and queueing hints, after upstream's
//! `EventsToRegister` / `QueueingHintFn` of each plugin: when something
//! changes in the cluster, which unschedulable pods might now fit?
//!
//! A pod remembers the plugins that rejected it. On an event, each of those
//! plugins that registered for the event's kind is asked; if one says the
//! change may help (upstream's `Queue`), the pod goes back to be tried.
//!
//! | plugin | events | may help when |
//! |---|---|---|
//! | NodeUnschedulable | node added, taint/unschedulable changed | the node is (now) not cordoned |
//! | TaintToleration | node added, taint changed | the pod (now) tolerates the node's NoSchedule/NoExecute taints |
//! | NodeAffinity | node added, labels changed | the node (now) matches the pod's required affinity |
//! | NodeResourcesFit | node added, allocatable changed; assigned pod deleted | the pod fits the empty node, and (on update) some resource it requests grew; any assigned pod's deletion |
//! | NodeName | node added | the node's name is the pod's `spec.nodeName` |
//! | NodePorts | node added; assigned pod deleted | always for a node; a deleted pod held a port the pod wants |
//! | PodTopologySpread | assigned pod added, relabelled or deleted; node added, deleted, labels or taints changed | the pod matches (or stops matching) a constraint's selector; a node with every topology key came, went or changed a key's value or its taints |
//! | InterPodAffinity | assigned pod added, relabelled or deleted; node added or labels changed; namespace labels changed (berth's addition) | upstream's `isSchedulableAfterPodChange` / `isSchedulableAfterNodeChange`; a namespace selector of the pod's terms starts or stops selecting, or the pod's own namespace changed labels |

use berth_core::FeatureGates;
use berth_core::node::{taints, unschedulable};
use berth_core::toleration::{find_matching_untolerated_taint, is_do_not_schedule};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};

use crate::framework::{NodeInfo, PodInfo};
use crate::plugins::NodeResourcesFit;
use crate::plugins::{
    inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_fit,
    node_unschedulable, pod_topology_spread, taint_toleration,
};
use crate::profile::Profile;
use crate::resources::resource_list_to_resource;
use crate::snapshot::{ServedWorkloads, WorkloadSelectors, pod_host_ports};
use berth_core::node_affinity::RequiredNodeAffinity;

/// What changed (upstream's `ActionType` bits for nodes and pods).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ActionType(u32);

impl ActionType {
    pub const ADD: ActionType = ActionType(1);
    pub const DELETE: ActionType = ActionType(1 << 1);
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    /// Taints, and `spec.unschedulable` (a cordon acts as a taint).
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    pub const UPDATE_NODE_CONDITION: ActionType = ActionType(1 << 5);

    pub const fn union(self, other: ActionType) -> ActionType {
        ActionType(self.0 | other.0)
    }

    pub const fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// A change the queue reacts to.
#[derive(Debug, Clone, Copy)]
pub enum ClusterEvent<'a> {
    /// A node was added (`old` is `None`) or updated; `action` says which
    /// of its scheduling properties changed.
    Node {
        action: ActionType,
        old: Option<&'a Node>,
        new: &'a Node,
    },
    /// A pod bound to a node went away (deleted or finished), freeing its
    /// resources.
    AssignedPodDelete { pod: &'a Pod },
    /// A node was deleted.
    NodeDelete { node: &'a Node },
    /// A pod was seen bound to a node for the first time.
    AssignedPodAdd { pod: &'a Pod },
    /// A bound pod's labels changed.
    AssignedPodUpdate { old: &'a Pod, new: &'a Pod },
    /// A namespace was added (`old` None), relabelled, or deleted (`new`
    /// None).
    Namespace {
        old: Option<&'a Namespace>,
        new: Option<&'a Namespace>,
    },
}

/// `nodeSchedulingPropertiesChange`: which scheduling-relevant parts of a
/// node an update touched. Empty means the update cannot matter.
pub fn node_update_actions(old: &Node, new: &Node) -> ActionType {
    let mut action = ActionType::default();
    if unschedulable(old) != unschedulable(new) || taints(old) != taints(new) {
        action = action.union(ActionType::UPDATE_NODE_TAINT);
    }
    let allocatable = |n: &Node| n.status.as_ref().and_then(|s| s.allocatable.clone());
    if allocatable(old) != allocatable(new) {
        action = action.union(ActionType::UPDATE_NODE_ALLOCATABLE);
    }
    if old.metadata.labels != new.metadata.labels {
        action = action.union(ActionType::UPDATE_NODE_LABEL);
    }
    let conditions = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .map(|cs| {
                cs.iter()
                    .map(|c| (c.type_.clone(), c.status.clone()))
                    .collect::<Vec<_>>()
            })
    };
    if conditions(old) != conditions(new) {
        action = action.union(ActionType::UPDATE_NODE_CONDITION);
    }
    action
}

/// The node events `plugin` registered for (its `EventsToRegister`).
pub fn registered_node_actions(plugin: &str) -> ActionType {
    match plugin {
        node_unschedulable::NAME | taint_toleration::NAME => {
            ActionType::ADD.union(ActionType::UPDATE_NODE_TAINT)
        }
        node_affinity::NAME => ActionType::ADD.union(ActionType::UPDATE_NODE_LABEL),
        node_resources_fit::NAME => ActionType::ADD.union(ActionType::UPDATE_NODE_ALLOCATABLE),
        node_name::NAME | node_ports::NAME => ActionType::ADD,
        pod_topology_spread::NAME => ActionType::ADD
            .union(ActionType::UPDATE_NODE_LABEL)
            .union(ActionType::UPDATE_NODE_TAINT),
        inter_pod_affinity::NAME => ActionType::ADD.union(ActionType::UPDATE_NODE_LABEL),
        _ => ActionType::default(),
    }
}

/// Whether `event` may make `pod`, rejected by `plugin` in its last
/// attempt, schedulable (upstream's `QueueingHint`: `Queue` is true).
/// Events the plugin did not register for never help.
pub fn may_help(
    plugin: &str,
    pod: &PodInfo,
    event: &ClusterEvent<'_>,
    gates: FeatureGates,
) -> bool {
    may_help_in(
        plugin,
        pod,
        event,
        &Profile::new("", gates),
        &ServedWorkloads,
    )
}

/// [`may_help`] with the profile's plugin configuration and the
/// workloads' selectors (PodTopologySpread's default constraints).
pub fn may_help_in(
    plugin: &str,
    pod: &PodInfo,
    event: &ClusterEvent<'_>,
    profile: &Profile,
    workloads: &dyn WorkloadSelectors,
) -> bool {
    let gates = profile.gates;
    let spread = &profile.plugins.pod_topology_spread;
    let affinity = &profile.plugins.inter_pod_affinity;
    let waiting = pod.pod();
    match *event {
        ClusterEvent::NodeDelete { node } => {
            plugin == pod_topology_spread::NAME
                && spread.is_schedulable_after_node_change(waiting, Some(node), None, workloads)
        }
        ClusterEvent::AssignedPodAdd { pod: added } => match plugin {
            pod_topology_spread::NAME => {
                spread.is_schedulable_after_pod_change(waiting, None, Some(added), workloads)
            }
            inter_pod_affinity::NAME => {
                affinity.is_schedulable_after_pod_change(waiting, None, Some(added))
            }
            _ => false,
        },
        ClusterEvent::AssignedPodUpdate { old, new } => match plugin {
            pod_topology_spread::NAME => {
                spread.is_schedulable_after_pod_change(waiting, Some(old), Some(new), workloads)
            }
            inter_pod_affinity::NAME => {
                affinity.is_schedulable_after_pod_change(waiting, Some(old), Some(new))
            }
            _ => false,
        },
        ClusterEvent::Namespace { old, new } => {
            plugin == inter_pod_affinity::NAME
                && affinity.is_schedulable_after_namespace_change(waiting, old, new)
        }
        ClusterEvent::Node { action, old, new } => {
            if !registered_node_actions(plugin).intersects(action) {
                return false;
            }
            match plugin {
                node_unschedulable::NAME => {
                    let was = old.is_some_and(|o| !unschedulable(o));
                    !was && !unschedulable(new)
                }
                taint_toleration::NAME => {
                    let untolerated = |n: &Node| {
                        find_matching_untolerated_taint(
                            taints(n),
                            pod.tolerations(),
                            is_do_not_schedule,
                            gates,
                        )
                        .is_some()
                    };
                    let was_untolerated = old.is_none_or(untolerated);
                    was_untolerated && !untolerated(new)
                }
                node_affinity::NAME => {
                    let required = RequiredNodeAffinity::of_pod(pod.pod());
                    required.matches(new) && old.is_none_or(|o| !required.matches(o))
                }
                node_resources_fit::NAME => fits_after_node_change(pod, old, new),
                node_ports::NAME => true,
                pod_topology_spread::NAME => {
                    spread.is_schedulable_after_node_change(waiting, old, Some(new), workloads)
                }
                inter_pod_affinity::NAME => {
                    affinity.is_schedulable_after_node_change(waiting, old, new)
                }
                node_name::NAME => {
                    let name = pod.node_name();
                    name.is_empty() || new.metadata.name.as_deref() == Some(name)
                }
                _ => false,
            }
        }
        ClusterEvent::AssignedPodDelete { pod: deleted } => {
            let bound = deleted
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty());
            match plugin {
                node_resources_fit::NAME => bound,
                node_ports::NAME => bound && ports_freed(waiting, deleted),
                pod_topology_spread::NAME => {
                    spread.is_schedulable_after_pod_change(waiting, Some(deleted), None, workloads)
                }
                inter_pod_affinity::NAME => {
                    affinity.is_schedulable_after_pod_change(waiting, Some(deleted), None)
                }
                _ => false,
            }
        }
    }
}

/// NodePorts' `isSchedulableAfterPodDeleted`: the deleted pod held a
/// port the waiting pod wants.
fn ports_freed(waiting: &Pod, deleted: &Pod) -> bool {
    let freed = pod_host_ports(deleted);
    !freed.is_empty() && !crate::plugins::node_ports::fits_ports(&pod_host_ports(waiting), &freed)
}

/// NodeResourcesFit's node hint: the pod fits the node with nothing on it,
/// and, for an update, some resource the pod requests grew.
fn fits_after_node_change(pod: &PodInfo, old: Option<&Node>, new: &Node) -> bool {
    let fit = NodeResourcesFit::default();
    let state = fit.compute_pre_filter_state(pod);
    let empty = NodeInfo::from(new.clone());
    if !node_resources_fit::fits_request(&state, &empty).is_empty() {
        return false;
    }
    let Some(old) = old else {
        return true;
    };
    let before =
        resource_list_to_resource(old.status.as_ref().and_then(|s| s.allocatable.as_ref()));
    let after = &empty.allocatable;
    let request = crate::resources::pod_requests(pod.pod());
    (request.milli_cpu > 0 && after.milli_cpu > before.milli_cpu)
        || (request.memory > 0 && after.memory > before.memory)
        || (request.ephemeral_storage > 0 && after.ephemeral_storage > before.ephemeral_storage)
        || after.pods > before.pods
        || request
            .scalar_resources
            .iter()
            .any(|(name, v)| *v > 0 && after.scalar(name) > before.scalar(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::{make_node, make_pod, taint, tol as toleration};

    /// Every node's allocatable in these tables.
    const ALLOCATABLE: [(&str, &str); 3] = [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")];

    fn update<'a>(old: &'a Node, new: &'a Node) -> ClusterEvent<'a> {
        ClusterEvent::Node {
            action: node_update_actions(old, new),
            old: Some(old),
            new,
        }
    }

    #[test]
    fn taint_toleration_hint_as_upstream() {
        let gates = FeatureGates::default();
        let plain = PodInfo::from(make_pod().obj());
        let tolerating = PodInfo::from(
            make_pod()
                .toleration(toleration("foo", "Equal", "bar", "NoSchedule"))
                .obj(),
        );
        let tainted = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![taint("foo", "bar", "NoSchedule")])
            .obj();
        let clean = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let other = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![taint("foo", "baz", "NoSchedule")])
            .obj();
        let prefer = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![taint("foo", "bar", "PreferNoSchedule")])
            .obj();
        let add = |n| ClusterEvent::Node {
            action: ActionType::ADD,
            old: None,
            new: n,
        };
        let tt = taint_toleration::NAME;
        struct Case<'a> {
            name: &'static str,
            pod: &'a PodInfo,
            event: ClusterEvent<'a>,
            want: bool,
        }
        let cases = vec![
            Case {
                name: "untolerated node added",
                pod: &plain,
                event: add(&tainted),
                want: false,
            },
            Case {
                name: "untainted node added",
                pod: &plain,
                event: add(&clean),
                want: true,
            },
            Case {
                name: "tolerated node added",
                pod: &tolerating,
                event: add(&tainted),
                want: true,
            },
            Case {
                name: "blocking taint removed",
                pod: &plain,
                event: update(&tainted, &clean),
                want: true,
            },
            Case {
                name: "taint changed to a tolerated one",
                pod: &tolerating,
                event: update(&other, &tainted),
                want: true,
            },
            Case {
                name: "taint changed to another untolerated one",
                pod: &plain,
                event: update(&tainted, &other),
                want: false,
            },
            Case {
                name: "NoSchedule became PreferNoSchedule",
                pod: &plain,
                event: update(&tainted, &prefer),
                want: true,
            },
            Case {
                name: "already tolerated before",
                pod: &tolerating,
                event: update(&clean, &tainted),
                want: false,
            },
        ];
        for Case {
            name,
            pod: p,
            event,
            want,
        } in cases
        {
            assert_eq!(may_help(tt, p, &event, gates), want, "{name}");
        }
    }

    /// Upstream `TestIsSchedulableAfterNodeChange` (tainttoleration), the
    /// cases with well-typed objects (Rust has no ill-typed ones).
    #[test]
    fn taint_toleration_is_schedulable_after_node_change_as_upstream() {
        let gates = FeatureGates::default();
        let pod1 = PodInfo::from(
            make_pod()
                .toleration(toleration("dedicated", "Equal", "user2", "NoSchedule"))
                .obj(),
        );
        let user1 = make_node()
            .name("nodeA")
            .allocatable(&ALLOCATABLE)
            .taints(vec![taint("dedicated", "user1", "NoSchedule")])
            .obj();
        let user2 = make_node()
            .name("nodeA")
            .allocatable(&ALLOCATABLE)
            .taints(vec![taint("dedicated", "user2", "NoSchedule")])
            .obj();
        let user1_and_3 = make_node()
            .name("nodeA")
            .allocatable(&ALLOCATABLE)
            .taints(vec![
                taint("dedicated", "user1", "NoSchedule"),
                taint("dedicated", "user3", "NoSchedule"),
            ])
            .obj();
        let add = |n| ClusterEvent::Node {
            action: ActionType::ADD,
            old: None,
            new: n,
        };
        let cases: Vec<(&str, ClusterEvent<'_>, bool)> = vec![
            (
                "skip-queue-on-untoleratedtaint-node-added",
                add(&user1),
                false,
            ),
            ("queue-on-toleratedtaint-node-added", add(&user2), true),
            ("skip-unrelated-change", update(&user1, &user1_and_3), false),
            ("queue-on-taint-change", update(&user1, &user2), true),
        ];
        for (name, event, want) in cases {
            assert_eq!(
                may_help(taint_toleration::NAME, &pod1, &event, gates),
                want,
                "{name}"
            );
        }
    }

    /// Upstream `TestIsSchedulableAfterNodeChange` (nodeunschedulable).
    #[test]
    fn node_unschedulable_is_schedulable_after_node_change_as_upstream() {
        let gates = FeatureGates::default();
        let p = PodInfo::from(make_pod().obj());
        let schedulable = make_node()
            .name("node-1")
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let unschedulable_node = make_node()
            .name("node-1")
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .unschedulable(true)
            .obj();
        let add = |n| ClusterEvent::Node {
            action: ActionType::ADD,
            old: None,
            new: n,
        };
        let cases: Vec<(&str, ClusterEvent<'_>, bool)> = vec![
            (
                "skip-queue-on-unschedulable-node-added",
                add(&unschedulable_node),
                false,
            ),
            ("queue-on-schedulable-node-added", add(&schedulable), true),
            (
                "skip-unrelated-change",
                update(&schedulable, &unschedulable_node),
                false,
            ),
            (
                "queue-on-unschedulable-field-change",
                update(&unschedulable_node, &schedulable),
                true,
            ),
        ];
        for (name, event, want) in cases {
            assert_eq!(
                may_help(node_unschedulable::NAME, &p, &event, gates),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn events_a_plugin_did_not_register_for_never_help() {
        let gates = FeatureGates::default();
        let plain = PodInfo::from(make_pod().obj());
        let a = make_node()
            .name("n")
            .labels(&[("zone", "a")])
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let b = make_node()
            .name("n")
            .labels(&[("zone", "b")])
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let event = update(&a, &b);
        assert!(!may_help(taint_toleration::NAME, &plain, &event, gates));
        assert!(!may_help(node_unschedulable::NAME, &plain, &event, gates));
        // NodeAffinity registered for label changes, but a pod without
        // affinity matched the node before too.
        assert!(!may_help(node_affinity::NAME, &plain, &event, gates));
    }

    #[test]
    fn node_unschedulable_hint_fires_on_uncordon() {
        let gates = FeatureGates::default();
        let plain = PodInfo::from(make_pod().obj());
        let cordoned = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .unschedulable(true)
            .obj();
        let open = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let nu = node_unschedulable::NAME;
        assert!(may_help(nu, &plain, &update(&cordoned, &open), gates));
        assert!(!may_help(nu, &plain, &update(&open, &cordoned), gates));
    }

    #[test]
    fn node_affinity_hint_fires_when_labels_start_matching() {
        let gates = FeatureGates::default();
        let selecting = PodInfo::from(make_pod().node_selector(&[("zone", "a")]).obj());
        let a = make_node()
            .name("n")
            .labels(&[("zone", "a")])
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let b = make_node()
            .name("n")
            .labels(&[("zone", "b")])
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let na = node_affinity::NAME;
        assert!(may_help(na, &selecting, &update(&b, &a), gates));
        assert!(!may_help(na, &selecting, &update(&a, &b), gates));
        assert!(!may_help(na, &selecting, &update(&a, &a), gates));
    }

    #[test]
    fn node_resources_fit_hint_needs_room_and_growth() {
        let gates = FeatureGates::default();
        let big = PodInfo::from(make_pod().name("big").req(&[("cpu", "6")]).obj());
        let small = make_node()
            .name("n")
            .allocatable(&ALLOCATABLE)
            .taints(vec![])
            .obj();
        let large = make_node()
            .name("n")
            .allocatable(&[("cpu", "8"), ("memory", "8Gi"), ("pods", "110")])
            .taints(vec![])
            .obj();
        let fit = node_resources_fit::NAME;
        assert!(may_help(fit, &big, &update(&small, &large), gates));
        assert!(!may_help(fit, &big, &update(&large, &small), gates));
        let added = ClusterEvent::Node {
            action: ActionType::ADD,
            old: None,
            new: &small,
        };
        assert!(!may_help(fit, &big, &added, gates));
        let bound = make_pod().node("n").obj();
        let deleted = ClusterEvent::AssignedPodDelete { pod: &bound };
        assert!(may_help(fit, &big, &deleted, gates));
        assert!(!may_help(taint_toleration::NAME, &big, &deleted, gates));
    }
}
