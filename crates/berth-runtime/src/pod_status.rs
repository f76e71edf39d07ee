//! From a runtime's view of a pod to the pod's `status`: phase, container
//! statuses and the kubelet's conditions (upstream
//! `pkg/kubelet/status/generate.go`).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::RuntimePodStatus;

/// `status.phase` of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl PodPhase {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
        }
    }

    /// Succeeded or Failed: the pod's containers will not run again.
    pub fn is_terminal(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// A pod's `spec.restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RestartPolicy {
    #[default]
    Always,
    OnFailure,
    Never,
}

impl RestartPolicy {
    /// From the spec's string; anything else is the default, Always.
    pub fn parse(policy: Option<&str>) -> RestartPolicy {
        match policy {
            Some("OnFailure") => RestartPolicy::OnFailure,
            Some("Never") => RestartPolicy::Never,
            _ => RestartPolicy::Always,
        }
    }

    /// Whether a container that exited with `exit_code` is started again.
    pub fn restarts(self, exit_code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => exit_code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// The phase of a pod from its container statuses (upstream kubelet
/// `getPhase`, regular containers). `terminal`: the pod is being stopped
/// for good (deleted, evicted, node shutdown), so once every container has
/// exited the pod is Succeeded or Failed whatever its restart policy.
pub fn pod_phase(
    policy: RestartPolicy,
    containers: &[ContainerStatus],
    terminal: bool,
) -> PodPhase {
    let (mut waiting, mut running, mut stopped, mut succeeded, mut unknown) = (0, 0, 0, 0, 0);
    for c in containers {
        let state = c.state.as_ref();
        if state.is_some_and(|s| s.running.is_some()) {
            running += 1;
        } else if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if state.is_some_and(|s| s.waiting.is_some()) {
            if c.last_state
                .as_ref()
                .is_some_and(|s| s.terminated.is_some())
            {
                stopped += 1;
            } else {
                waiting += 1;
            }
        } else {
            unknown += 1;
        }
    }
    if waiting > 0 {
        PodPhase::Pending
    } else if running > 0 {
        PodPhase::Running
    } else if stopped > 0 && unknown == 0 {
        if terminal || policy != RestartPolicy::Always {
            if stopped == succeeded {
                return PodPhase::Succeeded;
            }
            if terminal || policy == RestartPolicy::Never {
                return PodPhase::Failed;
            }
        }
        PodPhase::Running
    } else {
        PodPhase::Pending
    }
}

/// Condition types the kubelet owns.
pub const POD_READY_TO_START_CONTAINERS: &str = "PodReadyToStartContainers";
pub const INITIALIZED: &str = "Initialized";
pub const CONTAINERS_READY: &str = "ContainersReady";
pub const READY: &str = "Ready";

impl RuntimePodStatus {
    /// Writes this view into a pod's status: phase, `startTime`,
    /// `containerStatuses` and the conditions PodReadyToStartContainers,
    /// Initialized, ContainersReady and Ready. A condition whose status does
    /// not change keeps its `lastTransitionTime`; conditions owned by
    /// others (PodScheduled, DisruptionTarget) are left alone.
    pub fn apply_to(&self, status: &mut PodStatus, now: Timestamp) {
        status.phase = Some(self.phase.as_str().to_string());
        if status.start_time.is_none() {
            status.start_time = Some(Time(whole_seconds(self.start_time)));
        }
        status.container_statuses = Some(self.containers.clone());
        let (ready_status, reason, message) = containers_ready(self.phase, &self.containers);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        let sandbox = if self.phase.is_terminal() {
            "False"
        } else {
            "True"
        };
        set_condition(
            conditions,
            POD_READY_TO_START_CONTAINERS,
            sandbox,
            None,
            None,
            now,
        );
        set_condition(conditions, INITIALIZED, "True", None, None, now);
        for kind in [CONTAINERS_READY, READY] {
            set_condition(
                conditions,
                kind,
                ready_status,
                reason,
                message.as_deref(),
                now,
            );
        }
    }
}

/// Upstream `GenerateContainersReadyCondition`: status, reason, message.
fn containers_ready(
    phase: PodPhase,
    containers: &[ContainerStatus],
) -> (&'static str, Option<&'static str>, Option<String>) {
    match phase {
        PodPhase::Succeeded => return ("False", Some("PodCompleted"), None),
        PodPhase::Failed => return ("False", Some("PodFailed"), None),
        PodPhase::Pending | PodPhase::Running => {}
    }
    let unready: Vec<&str> = containers
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    if unready.is_empty() {
        ("True", None, None)
    } else {
        (
            "False",
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        )
    }
}

fn set_condition(
    conditions: &mut Vec<PodCondition>,
    kind: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: Timestamp,
) {
    let transition = Time(whole_seconds(now));
    match conditions.iter_mut().find(|c| c.type_ == kind) {
        Some(existing) => {
            if existing.status != status {
                existing.status = status.to_string();
                existing.last_transition_time = Some(transition);
            }
            existing.reason = reason.map(str::to_string);
            existing.message = message.map(str::to_string);
        }
        None => conditions.push(PodCondition {
            type_: kind.to_string(),
            status: status.to_string(),
            reason: reason.map(str::to_string),
            message: message.map(str::to_string),
            last_transition_time: Some(transition),
            ..Default::default()
        }),
    }
}

/// API times have whole seconds.
pub(crate) fn whole_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated};

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn container(name: &str, ready: bool) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            ready,
            ..Default::default()
        }
    }

    fn state(kind: &str, exit_code: i32) -> Option<ContainerState> {
        Some(match kind {
            "running" => ContainerState {
                running: Some(Default::default()),
                ..Default::default()
            },
            "terminated" => ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code,
                    ..Default::default()
                }),
                ..Default::default()
            },
            _ => ContainerState {
                waiting: Some(Default::default()),
                ..Default::default()
            },
        })
    }

    /// A container: current state, exit code if terminated, and whether
    /// an earlier instance terminated (a crash-looping container waits).
    fn c(kind: &str, exit_code: i32, restarted: bool) -> ContainerStatus {
        ContainerStatus {
            state: state(kind, exit_code),
            last_state: if restarted {
                state("terminated", 1)
            } else {
                None
            },
            ..Default::default()
        }
    }

    #[test]
    fn phase_follows_upstream_get_phase() {
        use PodPhase::*;
        use RestartPolicy::*;
        struct Case<'a> {
            name: &'a str,
            policy: RestartPolicy,
            containers: Vec<ContainerStatus>,
            terminal: bool,
            want: PodPhase,
        }
        let cases = vec![
            Case {
                name: "a new container waits",
                policy: Always,
                containers: vec![c("waiting", 0, false)],
                terminal: false,
                want: Pending,
            },
            Case {
                name: "one running",
                policy: Never,
                containers: vec![c("running", 0, false), c("terminated", 1, false)],
                terminal: false,
                want: Running,
            },
            Case {
                name: "all succeeded, Never",
                policy: Never,
                containers: vec![c("terminated", 0, false)],
                terminal: false,
                want: Succeeded,
            },
            Case {
                name: "one failed, Never",
                policy: Never,
                containers: vec![c("terminated", 0, false), c("terminated", 2, false)],
                terminal: false,
                want: Failed,
            },
            Case {
                name: "all succeeded, OnFailure",
                policy: OnFailure,
                containers: vec![c("terminated", 0, false)],
                terminal: false,
                want: Succeeded,
            },
            Case {
                name: "failed and restarting, OnFailure",
                policy: OnFailure,
                containers: vec![c("terminated", 1, false)],
                terminal: false,
                want: Running,
            },
            Case {
                name: "crash loop backoff, OnFailure",
                policy: OnFailure,
                containers: vec![c("waiting", 0, true)],
                terminal: false,
                want: Running,
            },
            Case {
                name: "all exited, Always, restarting",
                policy: Always,
                containers: vec![c("terminated", 0, false)],
                terminal: false,
                want: Running,
            },
            Case {
                name: "crash loop backoff, Always",
                policy: Always,
                containers: vec![c("waiting", 0, true)],
                terminal: false,
                want: Running,
            },
            Case {
                name: "stopped for good, all 0",
                policy: Always,
                containers: vec![c("terminated", 0, false)],
                terminal: true,
                want: Succeeded,
            },
            Case {
                name: "stopped for good, SIGTERM exit",
                policy: Always,
                containers: vec![c("terminated", 143, false)],
                terminal: true,
                want: Failed,
            },
            Case {
                name: "stopped for good, OnFailure failed",
                policy: OnFailure,
                containers: vec![c("terminated", 137, false)],
                terminal: true,
                want: Failed,
            },
            Case {
                name: "no state at all",
                policy: Always,
                containers: vec![ContainerStatus::default()],
                terminal: false,
                want: Pending,
            },
        ];
        for Case {
            name,
            policy,
            containers,
            terminal,
            want,
        } in cases
        {
            assert_eq!(pod_phase(policy, &containers, terminal), want, "{name}");
        }
    }

    #[test]
    fn restart_policy_parses_and_decides_restarts() {
        assert_eq!(RestartPolicy::parse(None), RestartPolicy::Always);
        assert_eq!(RestartPolicy::parse(Some("Never")), RestartPolicy::Never);
        assert!(RestartPolicy::parse(Some("OnFailure")).restarts(1));
        assert!(!RestartPolicy::parse(Some("OnFailure")).restarts(0));
        assert!(RestartPolicy::Always.restarts(0));
        assert!(!RestartPolicy::Never.restarts(1));
    }

    fn view(phase: PodPhase, containers: Vec<ContainerStatus>) -> RuntimePodStatus {
        RuntimePodStatus {
            phase,
            containers,
            start_time: at(0),
        }
    }

    fn condition<'a>(status: &'a PodStatus, kind: &str) -> &'a PodCondition {
        status
            .conditions
            .as_ref()
            .and_then(|cs| cs.iter().find(|c| c.type_ == kind))
            .unwrap_or_else(|| panic!("no {kind} condition"))
    }

    #[test]
    fn ready_containers_make_the_pod_ready() {
        let mut status = PodStatus::default();
        view(PodPhase::Running, vec![container("a", true)]).apply_to(&mut status, at(1));
        assert_eq!(status.phase.as_deref(), Some("Running"));
        for kind in [
            POD_READY_TO_START_CONTAINERS,
            INITIALIZED,
            CONTAINERS_READY,
            READY,
        ] {
            assert_eq!(condition(&status, kind).status, "True", "{kind}");
        }
        assert_eq!(status.start_time, Some(Time(at(0))));
    }

    #[test]
    fn unready_containers_are_named_in_the_message() {
        let cases = [
            (
                PodPhase::Running,
                vec![
                    container("a", false),
                    container("b", true),
                    container("c", false),
                ],
                "False",
                Some("ContainersNotReady"),
                Some("containers with unready status: [a c]"),
            ),
            (
                PodPhase::Succeeded,
                vec![container("a", false)],
                "False",
                Some("PodCompleted"),
                None,
            ),
            (
                PodPhase::Failed,
                vec![container("a", false)],
                "False",
                Some("PodFailed"),
                None,
            ),
            (
                PodPhase::Pending,
                vec![container("a", false)],
                "False",
                Some("ContainersNotReady"),
                Some("containers with unready status: [a]"),
            ),
        ];
        for (phase, containers, want_status, want_reason, want_message) in cases {
            let mut status = PodStatus::default();
            view(phase, containers).apply_to(&mut status, at(1));
            for kind in [CONTAINERS_READY, READY] {
                let c = condition(&status, kind);
                assert_eq!(c.status, want_status, "{phase:?} {kind}");
                assert_eq!(c.reason.as_deref(), want_reason, "{phase:?} {kind}");
                assert_eq!(c.message.as_deref(), want_message, "{phase:?} {kind}");
            }
        }
    }

    #[test]
    fn an_unchanged_condition_keeps_its_transition_time() {
        let mut status = PodStatus::default();
        view(PodPhase::Running, vec![container("a", true)]).apply_to(&mut status, at(1));
        view(PodPhase::Running, vec![container("a", true)]).apply_to(&mut status, at(9));
        assert_eq!(
            condition(&status, READY).last_transition_time,
            Some(Time(at(1)))
        );
        view(PodPhase::Running, vec![container("a", false)]).apply_to(&mut status, at(20));
        assert_eq!(
            condition(&status, READY).last_transition_time,
            Some(Time(at(20)))
        );
        assert_eq!(
            condition(&status, INITIALIZED).last_transition_time,
            Some(Time(at(1)))
        );
    }

    #[test]
    fn conditions_of_others_are_left_alone() {
        let mut status = PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        view(PodPhase::Running, vec![container("a", true)]).apply_to(&mut status, at(1));
        assert_eq!(condition(&status, "PodScheduled").status, "True");
        assert_eq!(status.conditions.as_ref().map(Vec::len), Some(5));
    }
}
