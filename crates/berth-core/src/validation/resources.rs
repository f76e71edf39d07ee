//! Resource lists (`requests`, `limits`, `capacity`, `allocatable`): every
//! value must be a quantity upstream's parser accepts. The API server
//! refuses such a body while decoding it; berth reports it as a field
//! error on the entry, with the parser's message.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use super::field::{ErrorList, FieldError, Path};
use crate::quantity::Quantity;

/// Checks each value of a resource list; `path` is the list's own path
/// (`spec.containers[0].resources.requests`), entries are keyed by name.
pub fn validate_resource_quantities(
    list: &BTreeMap<String, K8sQuantity>,
    path: &Path,
) -> ErrorList {
    list.iter()
        .filter_map(|(name, value)| {
            Quantity::from_k8s(value)
                .err()
                .map(|e| FieldError::invalid(&path.key(name), value.0.clone(), e.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resource list's entries and the errors expected for it.
    type Case = (
        &'static [(&'static str, &'static str)],
        &'static [&'static str],
    );

    #[test]
    fn unparseable_quantities_are_field_errors_on_their_entry() {
        let cases: &[Case] = &[
            (
                &[("cpu", "500m"), ("memory", "1Gi"), ("example.com/gpu", "1")],
                &[],
            ),
            (
                &[("cpu", "lots"), ("memory", "1Gi")],
                &[
                    "spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                ],
            ),
            (
                &[("memory", "1ki")],
                &[
                    "spec.containers[0].resources.requests[memory]: Invalid value: \"1ki\": unable to parse quantity's suffix",
                ],
            ),
        ];
        let path = Path::new("spec")
            .child("containers")
            .index(0)
            .child("resources")
            .child("requests");
        for (entries, want) in cases {
            let list = entries
                .iter()
                .map(|(k, v)| (k.to_string(), K8sQuantity(v.to_string())))
                .collect();
            let got: Vec<String> = validate_resource_quantities(&list, &path)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, *want, "{entries:?}");
        }
    }
}
