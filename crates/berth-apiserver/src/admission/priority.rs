//! Upstream's `Priority` admission plugin (`plugin/pkg/admission/priority`),
//! over the PriorityClasses the caller read (upstream reads an informer's
//! lister): a new pod's `priorityClassName` resolves to `spec.priority` and
//! `spec.preemptionPolicy` (no name: the global default class, the one of
//! lowest value if a race left several, else priority 0); a missing class,
//! or a priority or policy the pod sets that differs from the one
//! computed, is refused. A PriorityClass may be the global default only if
//! no other one is.

use berth_core::priority::{
    DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY, class_value,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::Operation;

/// What a new pod asks of priority, as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodPriorityRequest<'a> {
    /// `spec.priorityClassName`, "" when unset.
    pub class_name: &'a str,
    /// `spec.priority`, if the client set it.
    pub priority: Option<i64>,
    /// `spec.preemptionPolicy`, if the client set it.
    pub preemption_policy: Option<&'a str>,
}

/// What the plugin writes into a new pod's spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPriority {
    /// `spec.priorityClassName`: the named class, or the global default's
    /// name ("" when there is none).
    pub class_name: String,
    pub priority: i32,
    pub preemption_policy: Option<String>,
}

/// `admitPod` on create: the pod's priority fields, or the 403 message.
pub fn admit_new_pod(
    request: PodPriorityRequest,
    classes: &[PriorityClass],
) -> Result<PodPriority, String> {
    let (class_name, priority, policy) = if request.class_name.is_empty() {
        match default_priority_class(classes) {
            Some(class) => (
                class.metadata.name.clone().unwrap_or_default(),
                class_value(class),
                class.preemption_policy.clone(),
            ),
            None => (
                String::new(),
                DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
                Some(PREEMPT_LOWER_PRIORITY.to_string()),
            ),
        }
    } else {
        let class = classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(request.class_name))
            .ok_or_else(|| {
                format!(
                    "no PriorityClass with name {} was found",
                    request.class_name
                )
            })?;
        (
            request.class_name.to_string(),
            class_value(class),
            class.preemption_policy.clone(),
        )
    };
    if let Some(sent) = request.priority
        && sent != i64::from(priority)
    {
        return Err(format!(
            "the integer value of priority ({sent}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        ));
    }
    if let (Some(sent), Some(computed)) = (request.preemption_policy, policy.as_deref())
        && sent != computed
    {
        return Err(format!(
            "the string value of PreemptionPolicy ({sent}) must not be provided in pod spec; priority admission controller computed {computed} from the given PriorityClass name"
        ));
    }
    Ok(PodPriority {
        class_name,
        priority,
        preemption_policy: policy.or_else(|| request.preemption_policy.map(str::to_string)),
    })
}

/// `getDefaultPriorityClass`: of the classes marked `globalDefault`, the
/// one of lowest value.
pub fn default_priority_class(classes: &[PriorityClass]) -> Option<&PriorityClass> {
    classes
        .iter()
        .filter(|c| c.global_default == Some(true))
        .min_by_key(|c| class_value(c))
}

/// `validatePriorityClass`: a class becomes the global default only if no
/// other class is one. The 403 message otherwise.
pub fn validate_global_default(
    operation: Operation,
    class: &PriorityClass,
    classes: &[PriorityClass],
) -> Result<(), String> {
    if class.global_default != Some(true) {
        return Ok(());
    }
    let Some(existing) = default_priority_class(classes) else {
        return Ok(());
    };
    let existing_name = existing.metadata.name.as_deref().unwrap_or("");
    let other = match operation {
        Operation::Create => true,
        Operation::Update => class.metadata.name.as_deref() != Some(existing_name),
        Operation::Delete | Operation::Connect => false,
    };
    if other {
        return Err(format!(
            "PriorityClass {existing_name} is already marked as default. Only one default can exist"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
