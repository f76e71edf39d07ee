//! The lanes the pod worker's ([`crate::pods::PodWorker`]) events are
//! handled in: one per group of nodes, each in order, side by side (see
//! [`NodeLanes`]).

use std::collections::HashMap;
use std::sync::Arc;

use berth_core::pod::bound_node;

use crate::pod_event::PodEvent;

/// What handles one event of a lane (the pod worker's `handle`); a lane
/// awaits it before it takes its next event.
pub type LaneHandler = Arc<
    dyn Fn(PodEvent) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// Lanes a simulated fleet's pod events are handled in: a node's pods stay
/// in one lane, as one kubelet handles its own pods.
pub const NODE_LANES: usize = 32;

/// The worker's events spread over lanes by node, each lane one task that
/// handles its events in order. A real cluster has a kubelet per node, all
/// at work at once; a fleet of simulated nodes with one loop for all of
/// them would write each pod's status only after the previous pod's was
/// durable (a Deployment of 500 replicas took 5.5 s to be Running, 11 ms a
/// pod). Every event of a pod goes to the lane of its node, so a pod's
/// deletion is never handled before its admission; an agent's one node
/// keeps one lane, as before.
pub(crate) struct NodeLanes {
    lanes: Vec<tokio::sync::mpsc::UnboundedSender<PodEvent>>,
    /// Aborted when dropped: a worker stopped stops its lanes.
    tasks: Vec<tokio_util::task::AbortOnDropHandle<()>>,
    router: LaneRouter,
}

impl NodeLanes {
    pub(crate) fn new(handler: LaneHandler, count: usize) -> NodeLanes {
        let router = LaneRouter::new(count);
        let (lanes, tasks) = (0..router.lanes)
            .map(|_| {
                let (send, mut receive) = tokio::sync::mpsc::unbounded_channel::<PodEvent>();
                let handler = handler.clone();
                let task = tokio::spawn(async move {
                    while let Some(event) = receive.recv().await {
                        handler(event).await;
                    }
                });
                (send, tokio_util::task::AbortOnDropHandle::new(task))
            })
            .unzip();
        NodeLanes {
            lanes,
            tasks,
            router,
        }
    }

    pub(crate) fn send(&mut self, event: PodEvent) {
        let lane = self.router.route(&event);
        if let Some(sender) = self.lanes.get(lane) {
            let _ = sender.send(event);
        }
    }

    /// Lets every lane finish what it was sent.
    pub(crate) async fn close(self) {
        drop(self.lanes);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Which lane an event goes to: a bound pod's by its node, and every later
/// event of that pod (by UID) to the same lane.
#[derive(Debug)]
struct LaneRouter {
    lanes: usize,
    /// The lane of each bound pod seen, by UID (a pod's node never
    /// changes once bound); forgotten when the pod is deleted.
    lane_of_pod: HashMap<String, usize>,
}

impl LaneRouter {
    fn new(lanes: usize) -> LaneRouter {
        LaneRouter {
            lanes: lanes.max(1),
            lane_of_pod: HashMap::new(),
        }
    }

    fn lane_of_node(&self, node: &str) -> usize {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(node);
        usize::try_from(hash % self.lanes as u64).unwrap_or(0)
    }

    fn route(&mut self, event: &PodEvent) -> usize {
        match event {
            PodEvent::Applied(pod) => match (
                pod.metadata.uid.as_deref().filter(|u| !u.is_empty()),
                bound_node(pod),
            ) {
                (Some(uid), Some(node)) => {
                    let lane = self.lane_of_node(node);
                    self.lane_of_pod.insert(uid.to_string(), lane);
                    lane
                }
                // Not bound: nothing for a kubelet to do.
                _ => 0,
            },
            PodEvent::Deleted { uid } => uid
                .as_deref()
                .and_then(|uid| self.lane_of_pod.remove(uid))
                .unwrap_or(0),
            PodEvent::Runtime(uid) => self.lane_of_pod.get(uid).copied().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod lane_tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodSpec};

    fn pod(uid: &str, node: Option<&str>) -> PodEvent {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod.spec = Some(PodSpec {
            node_name: node.map(str::to_string),
            ..PodSpec::default()
        });
        PodEvent::Applied(std::sync::Arc::new(pod))
    }

    fn deleted(uid: &str) -> PodEvent {
        PodEvent::Deleted {
            uid: Some(uid.into()),
        }
    }

    /// Two node names in different lanes of `router`.
    fn two_nodes_apart(router: &LaneRouter) -> (String, String) {
        let first = "node-0".to_string();
        let other = (1..1000)
            .map(|i| format!("node-{i}"))
            .find(|n| router.lane_of_node(n) != router.lane_of_node(&first))
            .expect("some node in another lane");
        (first, other)
    }

    #[test]
    fn every_event_of_a_pod_goes_to_its_nodes_lane() {
        let mut router = LaneRouter::new(NODE_LANES);
        let (a, b) = two_nodes_apart(&router);
        let (lane_a, lane_b) = (router.lane_of_node(&a), router.lane_of_node(&b));
        struct Case {
            name: &'static str,
            event: PodEvent,
            lane: usize,
        }
        let cases = [
            Case {
                name: "a pod bound to a goes to a's lane",
                event: pod("p1", Some(&a)),
                lane: lane_a,
            },
            Case {
                name: "a second pod of a too",
                event: pod("p2", Some(&a)),
                lane: lane_a,
            },
            Case {
                name: "a pod bound to b goes to b's lane",
                event: pod("p3", Some(&b)),
                lane: lane_b,
            },
            Case {
                name: "the runtime's news of p3 follows it",
                event: PodEvent::Runtime("p3".into()),
                lane: lane_b,
            },
            Case {
                name: "p1's deletion comes after its admission, in a's lane",
                event: deleted("p1"),
                lane: lane_a,
            },
            Case {
                name: "a pod deleted is forgotten",
                event: PodEvent::Runtime("p1".into()),
                lane: 0,
            },
            Case {
                name: "an unbound pod: lane 0 (nothing to do)",
                event: pod("p4", None),
                lane: 0,
            },
            Case {
                name: "a pod never seen: lane 0",
                event: deleted("p9"),
                lane: 0,
            },
        ];
        for case in cases {
            assert_eq!(router.route(&case.event), case.lane, "{}", case.name);
        }
    }

    #[test]
    fn one_lane_keeps_every_event_in_order() {
        let mut router = LaneRouter::new(1);
        for event in [pod("p1", Some("n1")), pod("p2", Some("n2")), deleted("p1")] {
            assert_eq!(router.route(&event), 0);
        }
    }
}
