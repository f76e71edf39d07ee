//! Pod priority as upstream defines it (`pkg/apis/scheduling`): the two
//! system PriorityClasses every cluster has, the values user classes may
//! take, the `system-` name prefix they may not use, and a pod's priority
//! as the scheduler, the agent's shutdown order and preemption read it
//! (`corev1helpers.PodPriority`).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The priority of `system-cluster-critical`; `system-node-critical` is
/// 1,000 above it.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// The highest value a user's PriorityClass may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

/// A pod's priority when it names no class and no class is the global
/// default.
pub const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: i32 = 0;

/// Class names starting with this are reserved for the system classes.
pub const SYSTEM_PRIORITY_CLASS_PREFIX: &str = "system-";

pub const SYSTEM_NODE_CRITICAL: &str = "system-node-critical";
pub const SYSTEM_CLUSTER_CRITICAL: &str = "system-cluster-critical";

/// `PreemptLowerPriority`: the default preemption policy of a class.
pub const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";
/// `Never`: a pod of such a class never preempts.
pub const PREEMPT_NEVER: &str = "Never";

/// One of upstream's `SystemPriorityClasses()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemPriorityClass {
    pub name: &'static str,
    pub value: i32,
    pub description: &'static str,
}

/// The classes the API server creates at start and protects.
pub const SYSTEM_PRIORITY_CLASSES: [SystemPriorityClass; 2] = [
    SystemPriorityClass {
        name: SYSTEM_NODE_CRITICAL,
        value: SYSTEM_CRITICAL_PRIORITY + 1000,
        description: "Used for system critical pods that must not be moved from their current node.",
    },
    SystemPriorityClass {
        name: SYSTEM_CLUSTER_CRITICAL,
        value: SYSTEM_CRITICAL_PRIORITY,
        description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    },
];

impl SystemPriorityClass {
    /// The class as the API server stores it at start (defaults applied).
    pub fn object(&self) -> PriorityClass {
        PriorityClass {
            metadata: ObjectMeta {
                name: Some(self.name.to_string()),
                ..ObjectMeta::default()
            },
            value: Some(self.value),
            description: Some(self.description.to_string()),
            global_default: None,
            preemption_policy: Some(PREEMPT_LOWER_PRIORITY.to_string()),
        }
    }
}

/// The system class named `name`, if it is one.
pub fn system_priority_class(name: &str) -> Option<&'static SystemPriorityClass> {
    SYSTEM_PRIORITY_CLASSES.iter().find(|c| c.name == name)
}

/// Upstream `IsKnownSystemPriorityClass`: whether a class of this name,
/// value and globalDefault is one of the system classes; the error says
/// what differs.
pub fn is_known_system_priority_class(
    name: &str,
    value: i32,
    global_default: bool,
) -> Result<(), String> {
    let Some(known) = system_priority_class(name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if known.value != value {
        return Err(format!(
            "value of {} PriorityClass must be {}",
            known.name, known.value
        ));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {} PriorityClass must be false",
            known.name
        ));
    }
    Ok(())
}

/// A class's value; absent is Go's zero.
pub fn class_value(class: &PriorityClass) -> i32 {
    class.value.unwrap_or(0)
}

/// `corev1helpers.PodPriority`: `spec.priority`, or 0 for a pod admitted
/// before priority existed.
pub fn pod_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Whether the pod may preempt others: its `spec.preemptionPolicy` is not
/// `Never` (upstream's `PodEligibleToPreemptOthers`, first check).
pub fn may_preempt(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.preemption_policy.as_deref())
        != Some(PREEMPT_NEVER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_system_classes_must_match_name_value_and_default() {
        struct Case {
            name: &'static str,
            class: (&'static str, i32, bool),
            want: Result<(), &'static str>,
        }
        let cases = [
            Case {
                name: "system-node-critical as created",
                class: (SYSTEM_NODE_CRITICAL, 2_000_001_000, false),
                want: Ok(()),
            },
            Case {
                name: "system-cluster-critical as created",
                class: (SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, false),
                want: Ok(()),
            },
            Case {
                name: "a system class with another value",
                class: (SYSTEM_NODE_CRITICAL, 0, false),
                want: Err("value of system-node-critical PriorityClass must be 2000001000"),
            },
            Case {
                name: "a system class as global default",
                class: (SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, true),
                want: Err("globalDefault of system-cluster-critical PriorityClass must be false"),
            },
            Case {
                name: "an unknown system- name",
                class: ("system-something", 2_000_001_000, false),
                want: Err("system-something is not a known system priority class"),
            },
        ];
        for Case { name, class, want } in cases {
            let got = is_known_system_priority_class(class.0, class.1, class.2);
            assert_eq!(got, want.map_err(str::to_string), "{name}");
        }
    }

    #[test]
    fn pods_without_priority_count_as_zero_and_never_pods_do_not_preempt() {
        let mut pod = Pod::default();
        assert_eq!(pod_priority(&pod), 0);
        assert!(may_preempt(&pod));
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.priority = Some(7);
        spec.preemption_policy = Some(PREEMPT_NEVER.into());
        assert_eq!(pod_priority(&pod), 7);
        assert!(!may_preempt(&pod));
    }
}
