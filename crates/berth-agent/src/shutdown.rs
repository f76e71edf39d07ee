//! Graceful node shutdown, as upstream's node shutdown manager
//! (`pkg/kubelet/nodeshutdown`): pods are grouped into the phases of
//! `shutdownGracePeriodByPodPriority` (or the regular and critical phases
//! migrated from `shutdownGracePeriod` / `shutdownGracePeriodCriticalPods`),
//! lowest priority first; each phase's pods are stopped together with the
//! phase's grace period (or their own `terminationGracePeriodSeconds` if
//! shorter), and the next phase starts when they have all stopped or the
//! phase's period is over. Empty phases are skipped without waiting. Pods
//! end Failed with upstream's reason and message and a `DisruptionTarget`
//! condition.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::config::ShutdownGracePeriodByPodPriority;

/// The reason a pod ends with after graceful node shutdown. SPEC section 6
/// and the seed docs' note ("`kubectl get pods` shows the status of the
/// evicted pods as `Shutdown`") fix it as `Shutdown`, which is what
/// kubectl's STATUS column prints from `status.reason`. (Upstream's kubelet
/// writes `Terminated` since v1.22; the spec, not the kubelet, is berth's
/// reference where they differ.)
pub const NODE_SHUTDOWN_REASON: &str = "Shutdown";
/// Upstream's `nodeShutdownMessage`.
pub const NODE_SHUTDOWN_MESSAGE: &str = "Pod was terminated in response to imminent node shutdown.";
/// The `DisruptionTarget` condition's reason (`PodReasonTerminationByKubelet`).
pub const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";

/// One phase of shutdown: its priority floor, its period and its pods.
#[derive(Debug, Clone, PartialEq)]
pub struct ShutdownGroup<'p> {
    pub priority: i32,
    pub period: Duration,
    pub pods: Vec<&'p Pod>,
}

/// Upstream's `groupByPriority`: `phases` sorted by priority (lowest
/// first); a pod goes to the highest phase whose priority is at most its
/// own (below the lowest: the lowest; above the highest: the highest).
pub fn group_by_priority<'p>(
    phases: &[ShutdownGracePeriodByPodPriority],
    pods: &[&'p Pod],
) -> Vec<ShutdownGroup<'p>> {
    let mut groups: Vec<ShutdownGroup<'p>> = phases
        .iter()
        .map(|p| ShutdownGroup {
            priority: p.priority,
            period: Duration::from_secs(
                u64::try_from(p.shutdown_grace_period_seconds).unwrap_or(0),
            ),
            pods: Vec::new(),
        })
        .collect();
    if groups.is_empty() {
        return groups;
    }
    for pod in pods {
        let priority = berth_core::priority::pod_priority(pod);
        let mut index = groups.partition_point(|g| g.priority < priority);
        if index == groups.len() {
            index = groups.len() - 1;
        } else if index > 0 && groups[index].priority > priority {
            index -= 1;
        }
        groups[index].pods.push(pod);
    }
    groups
}

/// The grace period a pod gets in a phase: the phase's, or the pod's own
/// `terminationGracePeriodSeconds` when that is not longer.
pub fn pod_grace(pod: &Pod, phase_period: Duration) -> Duration {
    match pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
    {
        Some(own) if own >= 0 && Duration::from_secs(own.unsigned_abs()) <= phase_period => {
            Duration::from_secs(own.unsigned_abs())
        }
        _ => phase_period,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SYSTEM_CRITICAL_PRIORITY;
    use berth_core::test_util::make_pod;

    fn with_priority(name: &str, priority: i32) -> Pod {
        make_pod().name(name).priority(priority).obj()
    }

    fn unprioritized(name: &str) -> Pod {
        make_pod().name(name).obj()
    }

    fn phase(priority: i32, seconds: i64) -> ShutdownGracePeriodByPodPriority {
        ShutdownGracePeriodByPodPriority {
            priority,
            shutdown_grace_period_seconds: seconds,
        }
    }

    fn names(groups: &[ShutdownGroup]) -> Vec<Vec<String>> {
        groups
            .iter()
            .map(|g| {
                g.pods
                    .iter()
                    .filter_map(|p| p.metadata.name.clone())
                    .collect()
            })
            .collect()
    }

    /// Upstream's `Test_groupByPriority` table.
    #[test]
    fn pods_go_to_the_highest_phase_at_or_below_their_priority() {
        let phases = [phase(1, 10), phase(2, 20), phase(3, 30), phase(4, 40)];
        let pods = [
            with_priority("0", 0),
            with_priority("1", 1),
            with_priority("2", 2),
            with_priority("3", 3),
            with_priority("4", 4),
            with_priority("5", 5),
            unprioritized("none"),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        let groups = group_by_priority(&phases, &refs);
        assert_eq!(
            names(&groups),
            vec![
                vec!["0".to_string(), "1".into(), "none".into()],
                vec!["2".into()],
                vec!["3".into()],
                vec!["4".into(), "5".into()],
            ]
        );
        assert_eq!(groups[3].period, Duration::from_secs(40));
    }

    #[test]
    fn between_two_phases_a_pod_takes_the_lower() {
        let phases = [phase(0, 20), phase(SYSTEM_CRITICAL_PRIORITY, 10)];
        let pods = [
            with_priority("regular", 1000),
            with_priority("critical", SYSTEM_CRITICAL_PRIORITY),
            with_priority("node-critical", SYSTEM_CRITICAL_PRIORITY + 1000),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        assert_eq!(
            names(&group_by_priority(&phases, &refs)),
            vec![
                vec!["regular".to_string()],
                vec!["critical".to_string(), "node-critical".into()]
            ]
        );
    }

    #[test]
    fn no_phases_means_no_groups() {
        let p = unprioritized("a");
        assert!(group_by_priority(&[], &[&p]).is_empty());
    }

    #[test]
    fn a_pod_keeps_a_shorter_grace_period_of_its_own() {
        let short = make_pod().name("short").termination_grace_period(3).obj();
        let long = make_pod().name("long").termination_grace_period(60).obj();
        assert_eq!(
            pod_grace(&short, Duration::from_secs(10)),
            Duration::from_secs(3)
        );
        assert_eq!(
            pod_grace(&long, Duration::from_secs(10)),
            Duration::from_secs(10)
        );
        assert_eq!(
            pod_grace(&unprioritized("unset"), Duration::from_secs(10)),
            Duration::from_secs(10)
        );
    }
}
