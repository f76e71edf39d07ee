//! Upstream's `admission_test.go` tables: `TestPodAdmission`,
//! `TestPriorityClassAdmission`, `TestDefaultPriority`.

use berth_core::priority::{
    PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, SYSTEM_CLUSTER_CRITICAL, SYSTEM_CRITICAL_PRIORITY,
};
use berth_core::test_util::priority_class as class;
use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::*;

fn default1() -> PriorityClass {
    class("default1", 1000, true, None)
}
fn default2() -> PriorityClass {
    class("default2", 2000, true, None)
}
fn nondefault1() -> PriorityClass {
    class("nondefault1", 2000, false, None)
}
fn system_cluster_critical() -> PriorityClass {
    class(
        SYSTEM_CLUSTER_CRITICAL,
        SYSTEM_CRITICAL_PRIORITY,
        true,
        None,
    )
}
fn never_policy_class() -> PriorityClass {
    class("nopreemptionpolicy", 2000, true, Some(PREEMPT_NEVER))
}
fn lower_policy_class() -> PriorityClass {
    class(
        "nopreemptionpolicy",
        2000,
        true,
        Some(PREEMPT_LOWER_PRIORITY),
    )
}

fn request<'a>(
    class_name: &'a str,
    priority: Option<i64>,
    preemption_policy: Option<&'a str>,
) -> PodPriorityRequest<'a> {
    PodPriorityRequest {
        class_name,
        priority,
        preemption_policy,
    }
}

/// `TestPodAdmission` (mirror pods are pods like any other here), and the
/// messages of upstream's refusals.
#[test]
fn new_pods_get_their_class_priority_and_policy() {
    struct Case {
        name: &'static str,
        classes: Vec<PriorityClass>,
        pod: PodPriorityRequest<'static>,
        want: Result<(i32, Option<&'static str>), &'static str>,
    }
    let cases = [
        Case {
            name: "Pod with priority class",
            classes: vec![default1(), nondefault1()],
            pod: request("default1", None, None),
            want: Ok((1000, None)),
        },
        Case {
            name: "Pod without priority class",
            classes: vec![default1()],
            pod: request("", None, None),
            want: Ok((1000, None)),
        },
        Case {
            name: "pod without priority class and no existing priority class",
            classes: vec![],
            pod: request("", None, None),
            want: Ok((0, Some(PREEMPT_LOWER_PRIORITY))),
        },
        Case {
            name: "pod without priority class and no default class",
            classes: vec![nondefault1()],
            pod: request("", None, None),
            want: Ok((0, Some(PREEMPT_LOWER_PRIORITY))),
        },
        Case {
            name: "pod with a system priority class",
            classes: vec![system_cluster_critical()],
            pod: request(SYSTEM_CLUSTER_CRITICAL, None, None),
            want: Ok((SYSTEM_CRITICAL_PRIORITY, None)),
        },
        Case {
            name: "Pod with non-existing priority class",
            classes: vec![default1(), nondefault1()],
            pod: request("non-existing", None, None),
            want: Err("no PriorityClass with name non-existing was found"),
        },
        Case {
            name: "pod with integer priority",
            classes: vec![],
            pod: request("default1", Some(1000), None),
            want: Err("no PriorityClass with name default1 was found"),
        },
        Case {
            name: "pod with integer priority differing from its class",
            classes: vec![default1()],
            pod: request("default1", Some(5), None),
            want: Err(
                "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name",
            ),
        },
        Case {
            name: "pod with integer priority and no class",
            classes: vec![],
            pod: request("", Some(1000), None),
            want: Err(
                "the integer value of priority (1000) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name",
            ),
        },
        Case {
            name: "pod with system critical priority in non-system namespace",
            classes: vec![system_cluster_critical()],
            pod: request(SYSTEM_CLUSTER_CRITICAL, None, None),
            want: Ok((SYSTEM_CRITICAL_PRIORITY, None)),
        },
        Case {
            name: "pod with priority that matches computed priority",
            classes: vec![nondefault1()],
            pod: request("", Some(0), None),
            want: Ok((0, Some(PREEMPT_LOWER_PRIORITY))),
        },
        Case {
            name: "pod with priority that matches default priority",
            classes: vec![default2()],
            pod: request("", Some(2000), None),
            want: Ok((2000, None)),
        },
        Case {
            name: "pod with priority that matches resolved priority",
            classes: vec![system_cluster_critical()],
            pod: request(
                SYSTEM_CLUSTER_CRITICAL,
                Some(i64::from(SYSTEM_CRITICAL_PRIORITY)),
                None,
            ),
            want: Ok((SYSTEM_CRITICAL_PRIORITY, None)),
        },
        Case {
            name: "pod with nil preemption policy",
            classes: vec![never_policy_class()],
            pod: request("nopreemptionpolicy", Some(2000), None),
            want: Ok((2000, Some(PREEMPT_NEVER))),
        },
        Case {
            name: "pod with preemption policy that matches resolved preemption policy",
            classes: vec![lower_policy_class()],
            pod: request(
                "nopreemptionpolicy",
                Some(2000),
                Some(PREEMPT_LOWER_PRIORITY),
            ),
            want: Ok((2000, Some(PREEMPT_LOWER_PRIORITY))),
        },
        Case {
            name: "pod with preemption policy that doesn't match resolved preemption policy",
            classes: vec![lower_policy_class()],
            pod: request("nopreemptionpolicy", Some(2000), Some(PREEMPT_NEVER)),
            want: Err(
                "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name",
            ),
        },
        Case {
            name: "pod asking never without a class",
            classes: vec![],
            pod: request("", None, Some(PREEMPT_NEVER)),
            want: Err(
                "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name",
            ),
        },
    ];
    for Case {
        name,
        classes,
        pod,
        want,
    } in cases
    {
        let got = admit_new_pod(pod, &classes).map(|p| (p.priority, p.preemption_policy));
        let want = want
            .map(|(priority, policy)| (priority, policy.map(str::to_string)))
            .map_err(str::to_string);
        assert_eq!(got, want, "{name}");
    }
}

/// `TestPriorityClassAdmission`, and an update of the default itself.
#[test]
fn only_one_class_is_the_global_default() {
    struct Case {
        name: &'static str,
        existing: Vec<PriorityClass>,
        operation: Operation,
        class: PriorityClass,
        want: Result<(), &'static str>,
    }
    let cases = [
        Case {
            name: "one default class",
            existing: vec![],
            operation: Operation::Create,
            class: default1(),
            want: Ok(()),
        },
        Case {
            name: "more than one default classes",
            existing: vec![default1()],
            operation: Operation::Create,
            class: default2(),
            want: Err(
                "PriorityClass default1 is already marked as default. Only one default can exist",
            ),
        },
        Case {
            name: "the default class updated stays the default",
            existing: vec![default1()],
            operation: Operation::Update,
            class: default1(),
            want: Ok(()),
        },
        Case {
            name: "another class marked default on update",
            existing: vec![default1(), nondefault1()],
            operation: Operation::Update,
            class: class("nondefault1", 2000, true, None),
            want: Err(
                "PriorityClass default1 is already marked as default. Only one default can exist",
            ),
        },
        Case {
            name: "a class that is not default",
            existing: vec![default1()],
            operation: Operation::Create,
            class: nondefault1(),
            want: Ok(()),
        },
    ];
    for Case {
        name,
        existing,
        operation,
        class,
        want,
    } in cases
    {
        let got = validate_global_default(operation, &class, &existing);
        assert_eq!(got, want.map_err(str::to_string), "{name}");
    }
}

/// `TestDefaultPriority`: the default is the global default class of
/// lowest value; none without one.
#[test]
fn default_priority_is_the_lowest_global_default() {
    struct Case {
        name: &'static str,
        classes: Vec<PriorityClass>,
        want: Option<(&'static str, i32)>,
    }
    let mut updated_default1 = default1();
    updated_default1.global_default = Some(false);
    let cases = [
        Case {
            name: "simple resolution with a default class",
            classes: vec![default1()],
            want: Some(("default1", 1000)),
        },
        Case {
            name: "add a default class",
            classes: vec![nondefault1(), default1()],
            want: Some(("default1", 1000)),
        },
        Case {
            name: "multiple default classes resolves to the minimum value among them",
            classes: vec![default2(), default1()],
            want: Some(("default1", 1000)),
        },
        Case {
            name: "delete default priority class",
            classes: vec![],
            want: None,
        },
        Case {
            name: "update default class and remove its global default",
            classes: vec![updated_default1],
            want: None,
        },
    ];
    for Case {
        name,
        classes,
        want,
    } in cases
    {
        let got = default_priority_class(&classes)
            .map(|c| (c.metadata.name.as_deref().unwrap_or(""), class_value(c)));
        assert_eq!(got, want, "{name}");
        let admitted = admit_new_pod(request("", None, None), &classes).map(|p| p.class_name);
        assert_eq!(
            admitted,
            Ok(want.map(|(n, _)| n).unwrap_or("").to_string()),
            "{name}: the pod names the default class"
        );
    }
}
