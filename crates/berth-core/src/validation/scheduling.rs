//! scheduling.k8s.io/v1 PriorityClass rules, `pkg/apis/scheduling/validation`:
//! a `system-` name only for the system classes as they are, a user
//! class's value at most [`HIGHEST_USER_DEFINABLE_PRIORITY`], a supported
//! preemption policy; on update the value and preemption policy stay.
//! (`ValidateObjectMeta` is the API server's, as for every type.)

use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::{ErrorList, FieldError, Path, validate_immutable};
use crate::priority::{
    HIGHEST_USER_DEFINABLE_PRIORITY, PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER,
    SYSTEM_PRIORITY_CLASS_PREFIX, class_value, is_known_system_priority_class,
};

/// `ValidatePriorityClass` but its metadata.
pub fn validate_priority_class(class: &PriorityClass) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = class.metadata.name.as_deref().unwrap_or("");
    if name.starts_with(SYSTEM_PRIORITY_CLASS_PREFIX) {
        let global_default = class.global_default.unwrap_or(false);
        if let Err(why) = is_known_system_priority_class(name, class_value(class), global_default) {
            errs.push(FieldError::forbidden(
                &Path::new("metadata").child("name"),
                format!(
                    "priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: {why}"
                ),
            ));
        }
    } else if class_value(class) > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(FieldError::forbidden(
            &Path::new("value"),
            format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(policy) = &class.preemption_policy {
        errs.extend(validate_preemption_policy(
            policy,
            &Path::new("preemptionPolicy"),
        ));
    }
    errs
}

/// The priority class strategy's `ValidateUpdate`: the new class valid
/// ([`validate_priority_class`]) and `ValidatePriorityClassUpdate`: the
/// value and the preemption policy unchanged.
pub fn validate_priority_class_update(class: &PriorityClass, old: &PriorityClass) -> ErrorList {
    let mut errs = validate_priority_class(class);
    if class_value(class) != class_value(old) {
        errs.push(FieldError::forbidden(
            &Path::new("value"),
            "may not be changed in an update.",
        ));
    }
    errs.extend(validate_immutable(
        &class.preemption_policy,
        &old.preemption_policy,
        &Path::new("preemptionPolicy"),
    ));
    errs
}

/// `ValidatePreemptionPolicy` (pods and priority classes).
pub fn validate_preemption_policy(policy: &str, path: &Path) -> ErrorList {
    match policy {
        PREEMPT_LOWER_PRIORITY | PREEMPT_NEVER => ErrorList::new(),
        "" => vec![FieldError::required(path, "")],
        other => vec![FieldError::not_supported(
            path,
            other,
            &[PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER],
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::{SYSTEM_CRITICAL_PRIORITY, SYSTEM_NODE_CRITICAL};
    use crate::test_util::priority_class as class;
    use crate::validation::ErrorType;

    /// Each error's type and field.
    fn kinds(errs: ErrorList) -> Vec<(ErrorType, String)> {
        errs.into_iter().map(|e| (e.error_type, e.field)).collect()
    }

    /// `TestValidatePriorityClass` (its metadata cases are the API
    /// server's: see the API tests), and the value bound and preemption
    /// policies.
    #[test]
    fn new_priority_classes() {
        struct Case {
            name: &'static str,
            class: PriorityClass,
            want: Vec<(ErrorType, String)>,
        }
        let node_critical = SYSTEM_CRITICAL_PRIORITY + 1000;
        let cases = [
            Case {
                name: "no description",
                class: class("tier1", 100, false, None),
                want: vec![],
            },
            Case {
                name: "system node critical",
                class: class(SYSTEM_NODE_CRITICAL, node_critical, false, None),
                want: vec![],
            },
            Case {
                name: "incorrect system class name",
                class: class(SYSTEM_NODE_CRITICAL, 0, false, None),
                want: vec![(ErrorType::Forbidden, "metadata.name".into())],
            },
            Case {
                name: "incorrect system class value",
                class: class("system-something", node_critical, false, None),
                want: vec![(ErrorType::Forbidden, "metadata.name".into())],
            },
            Case {
                name: "a user class at the highest user value",
                class: class("tier1", HIGHEST_USER_DEFINABLE_PRIORITY, false, None),
                want: vec![],
            },
            Case {
                name: "a user class above the highest user value",
                class: class("tier1", HIGHEST_USER_DEFINABLE_PRIORITY + 1, false, None),
                want: vec![(ErrorType::Forbidden, "value".into())],
            },
            Case {
                name: "a negative value",
                class: class("tier1", -5, false, Some(PREEMPT_NEVER)),
                want: vec![],
            },
            Case {
                name: "an unknown preemption policy",
                class: class("tier1", 5, false, Some("Sometimes")),
                want: vec![(ErrorType::NotSupported, "preemptionPolicy".into())],
            },
            Case {
                name: "an empty preemption policy",
                class: class("tier1", 5, false, Some("")),
                want: vec![(ErrorType::Required, "preemptionPolicy".into())],
            },
        ];
        for Case { name, class, want } in cases {
            assert_eq!(kinds(validate_priority_class(&class)), want, "{name}");
        }
    }

    /// `TestValidatePriorityClassUpdate` (the metadata cases are the API
    /// server's).
    #[test]
    fn updated_priority_classes() {
        struct Case {
            name: &'static str,
            class: PriorityClass,
            want: Vec<(ErrorType, String)>,
        }
        let old = class("tier1", 100, false, Some(PREEMPT_LOWER_PRIORITY));
        let described = |description: &str| PriorityClass {
            description: Some(description.into()),
            ..old.clone()
        };
        let cases = [
            Case {
                name: "no change",
                class: described("Used for the highest priority pods."),
                want: vec![],
            },
            Case {
                name: "change description",
                class: described("A different description."),
                want: vec![],
            },
            Case {
                name: "change globalDefault",
                class: class("tier1", 100, true, Some(PREEMPT_LOWER_PRIORITY)),
                want: vec![],
            },
            Case {
                name: "remove value",
                class: class("tier1", 0, false, Some(PREEMPT_LOWER_PRIORITY)),
                want: vec![(ErrorType::Forbidden, "value".into())],
            },
            Case {
                name: "change value",
                class: class("tier1", 101, false, Some(PREEMPT_LOWER_PRIORITY)),
                want: vec![(ErrorType::Forbidden, "value".into())],
            },
            Case {
                name: "change preemptionPolicy",
                class: class("tier1", 100, false, Some(PREEMPT_NEVER)),
                want: vec![(ErrorType::Invalid, "preemptionPolicy".into())],
            },
        ];
        for Case { name, class, want } in cases {
            assert_eq!(
                kinds(validate_priority_class_update(&class, &old)),
                want,
                "{name}"
            );
        }
    }
}
